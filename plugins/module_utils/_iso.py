# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read and edit the Ignition embed area and kernel-argument areas of a CoreOS live ISO.

The ISO is never rebuilt: files are located read-only with pycdlib (extent LBA x 2048 is
the byte offset), and an edit copies the ISO and overwrites only the embed area and the
kargs regions, so the hybrid MBR/GPT and El Torito records stay byte-identical.

Layout (FACTS.md section 3):

* ``coreos/igninfo.json``: ``{"file", "offset"?, "length"?}`` names the embed area, which
  holds an xz (CRC32), gzip or plain cpio newc archive with ``config.ign``; the rest is
  zero, and an all-zero area means "no embedded config".
* ``coreos/kargs.json``: ``{"default", "files": [{"path", "offset", "pad"?, "end"?}],
  "size"}``; every region holds ``kargs + end + pad * (size - len(kargs) - 1)``.

Errors are :class:`IsoError` subclasses whose messages name the file and what was expected.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import collections
import errno
import gzip
import json
import lzma
import os
import re
import tempfile
import traceback
import zlib

from urllib.parse import unquote_to_bytes

try:
    import pycdlib
    from pycdlib.pycdlibexception import PyCdlibException
except ImportError:
    pycdlib = None
    PyCdlibException = Exception
    PYCDLIB_IMPORT_ERROR = traceback.format_exc()
else:
    PYCDLIB_IMPORT_ERROR = None

from ansible_collections.openshift_agent.day2.plugins.module_utils._cpio import (
    NEWC_CRC_MAGIC,
    NEWC_MAGIC,
    REGULAR_FILE_MODE,
    CpioError,
    build_archive,
    read_archive,
)

SECTOR_SIZE = 2048
IGNINFO_PATH = "coreos/igninfo.json"
KARGS_PATH = "coreos/kargs.json"
CONFIG_NAME = "config.ign"
# coreos-installer refuses kargs areas larger than this; a bigger value means a corrupt kargs.json.
KARGS_MAX_SIZE = 2048
DEFAULT_KARGS_PAD = "#"
DEFAULT_KARGS_END = "\n"
DEFAULT_ISO_MODE = 0o600

XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
_OTHER_COMPRESSIONS = (
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\x02\x21\x4c\x18", "lz4"),
    (b"\x89LZO", "lzo"),
)

ADD_NODES_ENV_PATH = "/etc/assisted/add-nodes.env"
NETWORK_DIR = "/etc/assisted/network/"
# The agent installer also writes one file per host named after its MAC and holding its hostname.
HOSTNAMES_DIR = "/etc/assisted/hostnames/"

_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5,19}$")
_HOST_FILE_RE = re.compile("^" + re.escape(NETWORK_DIR) + r"(host(\d+))/([^/]+)$")


class IsoError(Exception):
    """Base class of every error raised by this module."""


class IsoLayoutError(IsoError):
    """The ISO is not a CoreOS live ISO we can read or edit (missing file, bad JSON, bad offsets)."""


class EmbedAreaError(IsoError):
    """The Ignition embed area holds data that cannot be decoded."""


class CapacityError(IsoError):
    """New content does not fit into its area."""


class KargsMismatchError(IsoError):
    """The kernel-argument regions of one ISO do not hold the same arguments."""


class IgnitionContentError(IsoError):
    """The Ignition config is not JSON, or a file in it cannot be decoded."""


Region = collections.namedtuple("Region", ["offset", "length"])
KargsRegion = collections.namedtuple("KargsRegion", ["path", "offset", "length", "pad", "end"])
KargsLayout = collections.namedtuple("KargsLayout", ["default", "size", "regions"])
IsoLayout = collections.namedtuple("IsoLayout", ["embed_file", "embed_area", "kargs"])
Patch = collections.namedtuple("Patch", ["what", "offset", "data", "changed"])
EditResult = collections.namedtuple("EditResult", ["changed", "edits"])


# --- locating files in the ISO --------------------------------------------------------------

def _open_pycdlib(fp, name):
    if pycdlib is None:
        raise IsoError("the pycdlib Python library is required to read ISO images: %s"
                       % PYCDLIB_IMPORT_ERROR)
    iso = pycdlib.PyCdlib()
    try:
        iso.open_fp(fp)
    except PyCdlibException as exc:
        raise IsoLayoutError("%s: not a readable ISO9660 image: %s" % (name, exc))
    return iso


def _lookup_record(iso, path):
    """Return the directory record of ``path`` (Rock Ridge, then Joliet, then ISO9660 name)."""
    absolute = "/" + path.strip("/")
    attempts = [("rr_path", absolute), ("joliet_path", absolute),
                ("iso_path", absolute.upper() + ";1")]
    for key, value in attempts:
        try:
            return iso.get_record(**{key: value})
        except PyCdlibException:
            continue
    return None


def _find_file(iso, path, name):
    """Return ``Region(offset, size)`` of file ``path``, or None if the ISO has no such file."""
    record = _lookup_record(iso, path)
    if record is None:
        return None
    if not record.is_file():
        raise IsoLayoutError("%s: %s is a directory, expected a file" % (name, path))
    return Region(record.extent_location() * SECTOR_SIZE, record.get_data_length())


def _read_exact(fp, offset, length, what):
    fp.seek(offset)
    data = fp.read(length)
    if len(data) != length:
        raise IsoLayoutError("%s: %d bytes expected at offset %d, the image ends first"
                             % (what, length, offset))
    return data


def _read_json(fp, iso, path, name):
    region = _find_file(iso, path, name)
    if region is None:
        return None
    raw = _read_exact(fp, region.offset, region.length, "%s: %s" % (name, path))
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise IsoLayoutError("%s: %s is not valid JSON: %s" % (name, path, exc))
    if not isinstance(value, dict):
        raise IsoLayoutError("%s: %s must hold a JSON object" % (name, path))
    return value


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _embed_area(fp, iso, name):
    info = _read_json(fp, iso, IGNINFO_PATH, name)
    if info is None:
        raise IsoLayoutError("%s: %s not found; not a CoreOS live ISO with an Ignition embed area"
                             % (name, IGNINFO_PATH))
    embed_file = info.get("file")
    offset = info.get("offset", 0)
    if not isinstance(embed_file, str) or not embed_file:
        raise IsoLayoutError("%s: %s: \"file\" must be a non-empty string" % (name, IGNINFO_PATH))
    if not _is_int(offset) or offset < 0:
        raise IsoLayoutError("%s: %s: \"offset\" must be a non-negative integer" % (name, IGNINFO_PATH))
    region = _find_file(iso, embed_file, name)
    if region is None:
        raise IsoLayoutError("%s: embed area file %s named by %s not found"
                             % (name, embed_file, IGNINFO_PATH))
    length = info.get("length", region.length - offset)
    if not _is_int(length) or length <= 0 or offset + length > region.length:
        raise IsoLayoutError("%s: %s: area offset %r length %r does not fit in %s (%d bytes)"
                             % (name, IGNINFO_PATH, offset, length, embed_file, region.length))
    return embed_file, Region(region.offset + offset, length)


def _single_char(value, default, field, name):
    if value is None:
        return default
    if not isinstance(value, str) or len(value) != 1:
        raise IsoLayoutError("%s: %s: \"%s\" must be a single character, got %r"
                             % (name, KARGS_PATH, field, value))
    return value


def _kargs_layout(fp, iso, name):
    info = _read_json(fp, iso, KARGS_PATH, name)
    if info is None:
        return None
    default, size, files = info.get("default"), info.get("size"), info.get("files")
    if not isinstance(default, str):
        raise IsoLayoutError("%s: %s: \"default\" must be a string" % (name, KARGS_PATH))
    if not _is_int(size) or not 0 < size <= KARGS_MAX_SIZE:
        raise IsoLayoutError("%s: %s: \"size\" must be an integer from 1 to %d, got %r"
                             % (name, KARGS_PATH, KARGS_MAX_SIZE, size))
    if len(default.encode("utf-8")) > size:
        raise IsoLayoutError("%s: %s: default kargs (%d bytes) larger than the area (%d bytes)"
                             % (name, KARGS_PATH, len(default.encode("utf-8")), size))
    if not isinstance(files, list) or not files:
        raise IsoLayoutError("%s: %s: \"files\" must be a non-empty list" % (name, KARGS_PATH))
    regions = []
    for entry in files:
        path = entry.get("path") if isinstance(entry, dict) else None
        offset = entry.get("offset") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not _is_int(offset) or offset < 0:
            raise IsoLayoutError("%s: %s: each file needs a \"path\" and a non-negative \"offset\", got %r"
                                 % (name, KARGS_PATH, entry))
        region = _find_file(iso, path, name)
        if region is None:
            raise IsoLayoutError("%s: kargs file %s named by %s not found" % (name, path, KARGS_PATH))
        if offset + size > region.length:
            raise IsoLayoutError("%s: %s: kargs area at offset %d (%d bytes) runs past the end of %s (%d bytes)"
                                 % (name, KARGS_PATH, offset, size, path, region.length))
        regions.append(KargsRegion(path, region.offset + offset, size,
                                   _single_char(entry.get("pad"), DEFAULT_KARGS_PAD, "pad", name),
                                   _single_char(entry.get("end"), DEFAULT_KARGS_END, "end", name)))
    return KargsLayout(default, size, tuple(regions))


def read_layout(fp, name="ISO"):
    """Locate the embed area and kargs regions of the ISO open (binary, readable) as ``fp``.

    ``name`` is used in error messages. ``kargs`` is None when the ISO has no kargs.json.
    """
    iso = _open_pycdlib(fp, name)
    try:
        embed_file, area = _embed_area(fp, iso, name)
        kargs = _kargs_layout(fp, iso, name)
    finally:
        iso.close()
    fp.seek(0, os.SEEK_END)
    image_size = fp.tell()
    regions = [(area, embed_file)] + [(r, r.path) for r in (kargs.regions if kargs else ())]
    for region, path in regions:
        if region.offset + region.length > image_size:
            raise IsoLayoutError("%s: area of %s ends at byte %d, past the end of the image (%d bytes)"
                                 % (name, path, region.offset + region.length, image_size))
    _check_no_overlap(regions, name)
    return IsoLayout(embed_file, area, kargs)


def _check_no_overlap(regions, name):
    ordered = sorted(regions, key=lambda item: item[0].offset)
    for (first, first_path), (second, second_path) in zip(ordered, ordered[1:]):
        if first.offset + first.length > second.offset:
            raise IsoLayoutError("%s: the areas in %s and %s overlap" % (name, first_path, second_path))


# --- embed area payload: compressed cpio archives -------------------------------------------

def _decompress(data, pos):
    """Decompress the xz or gzip stream at ``pos``; return ``(payload, bytes consumed)``."""
    if data.startswith(XZ_MAGIC, pos):
        decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        kind, error = "xz", lzma.LZMAError
    else:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        kind, error = "gzip", zlib.error
    chunk = data[pos:]
    try:
        payload = decompressor.decompress(chunk)
    except (error, EOFError) as exc:
        raise EmbedAreaError("corrupt %s stream at offset %d: %s" % (kind, pos, exc))
    if not decompressor.eof:
        raise EmbedAreaError("truncated %s stream at offset %d" % (kind, pos))
    return payload, len(chunk) - len(decompressor.unused_data)


def _skip_nul(data, pos):
    return len(data) - len(data[pos:].lstrip(b"\0"))


def _iter_entries(data, allow_compressed=True):
    """Yield the cpio entries of every archive in ``data``, in order.

    Archives may be concatenated, each optionally compressed, with NUL padding between and
    after them, as the kernel's initramfs loader accepts.
    """
    pos = _skip_nul(data, 0)
    while pos < len(data):
        if data.startswith(XZ_MAGIC, pos) or data.startswith(GZIP_MAGIC, pos):
            if not allow_compressed:
                raise EmbedAreaError("compressed stream nested inside a compressed stream at offset %d" % pos)
            payload, used = _decompress(data, pos)
            yield from _iter_entries(payload, allow_compressed=False)
            pos += used
        elif data[pos:pos + 6] in (NEWC_MAGIC, NEWC_CRC_MAGIC):
            if pos % 4:
                # cpio padding is relative to the start of the stream; the kernel rejects this too.
                raise EmbedAreaError("cpio archive at offset %d is not 4-byte aligned" % pos)
            try:
                entries, pos = read_archive(data, pos)
            except CpioError as exc:
                raise EmbedAreaError(str(exc))
            yield from entries
        else:
            for magic, kind in _OTHER_COMPRESSIONS:
                if data.startswith(magic, pos):
                    raise EmbedAreaError("unsupported %s stream at offset %d (expected xz or gzip)" % (kind, pos))
            raise EmbedAreaError("unrecognised data %r at offset %d (expected an xz, gzip or cpio newc archive)"
                                 % (bytes(data[pos:pos + 8]), pos))
        pos = _skip_nul(data, pos)


def _normalize_member_name(name):
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def unpack_embed_area(data):
    """Return ``{name: CpioEntry}`` of the files in an embed area, or None if it is all zero.

    Later archives override earlier ones, as when the kernel unpacks them in order.
    """
    data = bytes(data)
    if data.count(b"\0") == len(data):
        return None
    files = collections.OrderedDict()
    for entry in _iter_entries(data):
        files[_normalize_member_name(entry.name)] = entry
    return files


def extract_config(data):
    """Return the bytes of ``config.ign`` in an embed area, or None when it holds none."""
    files = unpack_embed_area(data)
    if not files or CONFIG_NAME not in files:
        return None
    return files[CONFIG_NAME].data


def pack_embed_area(files, capacity):
    """Build an embed area of exactly ``capacity`` bytes: xz (CRC32) cpio of ``files``, zero-padded.

    ``files`` is a list of ``(name, data)`` or ``(name, data, mode)``.
    """
    # The kernel's XZ decoder supports CRC32 but not CRC64, Python's default check.
    payload = lzma.compress(build_archive(files), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    if len(payload) > capacity:
        raise CapacityError("compressed Ignition archive is %d bytes, the embed area holds only %d"
                            % (len(payload), capacity))
    return payload + b"\0" * (capacity - len(payload))


def config_bytes(ignition):
    """Serialise an Ignition config given as dict, JSON text or JSON bytes; check it is a JSON object."""
    if isinstance(ignition, dict):
        return json.dumps(ignition, separators=(",", ":")).encode("utf-8")
    raw = ignition.encode("utf-8") if isinstance(ignition, str) else bytes(ignition)
    parse_ignition(raw)
    return raw


def pack_ignition(ignition, capacity):
    """Embed area of ``capacity`` bytes holding only ``config.ign`` (mode 0644)."""
    return pack_embed_area([(CONFIG_NAME, config_bytes(ignition), REGULAR_FILE_MODE)], capacity)


def parse_ignition(raw):
    """Parse ``config.ign`` bytes into a dict."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise IgnitionContentError("%s is not valid JSON: %s" % (CONFIG_NAME, exc))
    if not isinstance(value, dict):
        raise IgnitionContentError("%s must hold a JSON object, got %s" % (CONFIG_NAME, type(value).__name__))
    return value


# --- kernel arguments -----------------------------------------------------------------------

def parse_kargs_region(raw, pad=DEFAULT_KARGS_PAD, end=DEFAULT_KARGS_END):
    """Kernel arguments stored in one region: strip trailing pad, then the end marker, then blanks."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IsoLayoutError("kargs area is not UTF-8 text: %s" % exc)
    return text.rstrip(pad).rstrip(end).strip()


def format_kargs_region(kargs, size, pad=DEFAULT_KARGS_PAD, end=DEFAULT_KARGS_END):
    """Region bytes for ``kargs``: ``kargs + end`` then ``pad`` up to ``size`` bytes."""
    text = kargs.strip().encode("utf-8")
    end_bytes, pad_bytes = end.encode("utf-8"), pad.encode("utf-8")
    if len(text) + len(end_bytes) > size:
        raise CapacityError("kernel arguments are %d bytes, the kargs area holds at most %d"
                            % (len(text), size - len(end_bytes)))
    fill = size - len(text) - len(end_bytes)
    if fill % len(pad_bytes):
        raise IsoLayoutError("kargs pad character %r does not evenly fill the area" % pad)
    return text + end_bytes + pad_bytes * (fill // len(pad_bytes))


def split_kargs(kargs):
    """Split a kernel command line into arguments; double quotes protect spaces, as in the kernel."""
    args, current, quoted, started = [], [], False, False
    for char in kargs:
        if char == '"':
            quoted = not quoted
        if char.isspace() and not quoted:
            if started:
                args.append("".join(current))
            current, started = [], False
            continue
        current.append(char)
        started = True
    if started:
        args.append("".join(current))
    return args


def merge_kargs(current, additions):
    """Append each argument of ``additions`` (string or list) not already present in ``current``.

    Idempotent: merging the same additions again returns the same string.
    """
    if isinstance(additions, str):
        additions = [additions]
    args = split_kargs(current)
    for addition in additions:
        for arg in split_kargs(addition):
            if arg not in args:
                args.append(arg)
    return " ".join(args)


def current_kargs(fp, layout, name="ISO"):
    """Kernel arguments of the ISO open as ``fp``; every region must hold the same ones."""
    if layout.kargs is None:
        raise IsoLayoutError("%s: %s not found; this ISO has no kernel-argument areas" % (name, KARGS_PATH))
    found = []
    for region in layout.kargs.regions:
        raw = _read_exact(fp, region.offset, region.length, "%s: kargs area in %s" % (name, region.path))
        try:
            found.append((region.path, parse_kargs_region(raw, region.pad, region.end)))
        except IsoLayoutError as exc:
            raise IsoLayoutError("%s: %s: %s" % (name, region.path, exc))
    first_path, first = found[0]
    for path, kargs in found[1:]:
        if kargs != first:
            raise KargsMismatchError("%s: kargs areas disagree: %s has %r but %s has %r"
                                     % (name, first_path, first, path, kargs))
    return first


# --- reading an ISO ---------------------------------------------------------------------------

def _read_config_from(fp, layout, name):
    area = _read_exact(fp, layout.embed_area.offset, layout.embed_area.length,
                       "%s: embed area %s" % (name, layout.embed_file))
    try:
        return extract_config(area)
    except EmbedAreaError as exc:
        raise EmbedAreaError("%s: embed area %s (offset %d, %d bytes): %s"
                             % (name, layout.embed_file, layout.embed_area.offset,
                                layout.embed_area.length, exc))


def read_embedded_config(iso_path):
    """Raw ``config.ign`` bytes embedded in the ISO at ``iso_path``, or None."""
    with open(iso_path, "rb") as fp:
        return _read_config_from(fp, read_layout(fp, iso_path), iso_path)


def read_embedded_ignition(iso_path):
    """The embedded Ignition config of the ISO at ``iso_path`` as a dict, or None."""
    raw = read_embedded_config(iso_path)
    if raw is None:
        return None
    try:
        return parse_ignition(raw)
    except IgnitionContentError as exc:
        raise IgnitionContentError("%s: %s" % (iso_path, exc))


def read_kargs(iso_path):
    """Current kernel arguments of the ISO at ``iso_path``."""
    with open(iso_path, "rb") as fp:
        return current_kargs(fp, read_layout(fp, iso_path), iso_path)


def inspect_iso(iso_path):
    """Everything a caller wants to know about an add-nodes ISO, as plain data.

    ``ignition`` holds secrets (pull secret, tokens): callers must not log it.
    """
    with open(iso_path, "rb") as fp:
        layout = read_layout(fp, iso_path)
        raw = _read_config_from(fp, layout, iso_path)
        kargs = current_kargs(fp, layout, iso_path) if layout.kargs else None
    ignition = None
    if raw is not None:
        try:
            ignition = parse_ignition(raw)
        except IgnitionContentError as exc:
            raise IgnitionContentError("%s: %s" % (iso_path, exc))
    return {
        "ignition": ignition,
        "summary": summarize_add_nodes_ignition(ignition) if ignition is not None else None,
        "kargs": kargs,
        "kargs_default": layout.kargs.default if layout.kargs else None,
        "embed_area": {"file": layout.embed_file, "offset": layout.embed_area.offset,
                       "length": layout.embed_area.length},
    }


# --- editing an ISO ---------------------------------------------------------------------------

def plan_edit(fp, ignition=None, kargs=None, append_kargs=None, name="ISO"):
    """Compute the byte patches for an edit of the ISO open as ``fp``; write nothing.

    ``ignition``: new config (dict, JSON text or bytes), None keeps the current one.
    ``kargs``: replacement kernel arguments, None keeps the current ones.
    ``append_kargs``: arguments (string or list) added to the current (or replacement)
    kernel arguments unless already present.
    Every size check happens here, before any file is written.
    """
    layout = read_layout(fp, name)
    patches = []
    if ignition is not None:
        area = layout.embed_area
        try:
            data = pack_ignition(ignition, area.length)
        except (CapacityError, IgnitionContentError) as exc:
            raise type(exc)("%s: embed area %s: %s" % (name, layout.embed_file, exc))
        old = _read_exact(fp, area.offset, area.length, "%s: embed area %s" % (name, layout.embed_file))
        patches.append(Patch("ignition " + layout.embed_file, area.offset, data, data != old))
    if kargs is not None or append_kargs:
        if layout.kargs is None:
            raise IsoLayoutError("%s: %s not found; cannot set kernel arguments" % (name, KARGS_PATH))
        new_kargs = kargs.strip() if kargs is not None else current_kargs(fp, layout, name)
        if append_kargs:
            new_kargs = merge_kargs(new_kargs, append_kargs)
        for region in layout.kargs.regions:
            try:
                data = format_kargs_region(new_kargs, region.length, region.pad, region.end)
            except IsoError as exc:
                raise type(exc)("%s: kargs area in %s: %s" % (name, region.path, exc))
            old = _read_exact(fp, region.offset, region.length, "%s: kargs area in %s" % (name, region.path))
            patches.append(Patch("kargs " + region.path, region.offset, data, data != old))
    return patches


def _edit_result(patches):
    return EditResult(any(p.changed for p in patches),
                      [{"what": p.what, "offset": p.offset, "length": len(p.data), "changed": p.changed}
                       for p in patches])


def _pwrite_all(fd, data, offset):
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def apply_patches(fd, patches):
    """Write ``patches`` into the open file descriptor ``fd`` and flush them to disk."""
    for patch in patches:
        _pwrite_all(fd, patch.data, patch.offset)
    os.fsync(fd)


# errno values meaning "this copy method does not work here", as opposed to a real I/O error.
_COPY_UNSUPPORTED = frozenset(
    getattr(errno, name) for name in ("ENOSYS", "EXDEV", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF")
    if hasattr(errno, name))


def _copy_chunk_copy_file_range(src, dst, offset, count):
    return os.copy_file_range(src, dst, count, offset, offset)


def _copy_chunk_sendfile(src, dst, offset, count):
    os.lseek(dst, offset, os.SEEK_SET)
    return os.sendfile(dst, src, offset, count)


def _copy_chunk_read_write(src, dst, offset, count):
    data = os.pread(src, min(count, 1 << 20), offset)
    _pwrite_all(dst, data, offset)
    return len(data)


def _copy_file_contents(src, dst, size):
    """Copy ``size`` bytes between file descriptors, in the kernel when it can (reflink, sendfile)."""
    copiers = [_copy_chunk_read_write]
    if hasattr(os, "sendfile"):
        copiers.insert(0, _copy_chunk_sendfile)
    if hasattr(os, "copy_file_range"):
        copiers.insert(0, _copy_chunk_copy_file_range)
    for copier in copiers:
        offset = 0
        try:
            while offset < size:
                copied = copier(src, dst, offset, min(size - offset, 1 << 30))
                if copied == 0:
                    raise IsoError("source ISO shrank while it was being copied (%d of %d bytes)" % (offset, size))
                offset += copied
            return
        except OSError as exc:
            if exc.errno not in _COPY_UNSUPPORTED or copier is _copy_chunk_read_write:
                raise


def _fsync_directory(directory):
    # Makes the rename durable; some platforms cannot open directories, which is harmless.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_edited_iso(source, destination, ignition=None, kargs=None, append_kargs=None, mode=DEFAULT_ISO_MODE):
    """Write a copy of ``source`` with a new Ignition config and/or kernel arguments to ``destination``.

    The copy goes to a temporary file in the destination directory, only the edited areas are
    overwritten, and the file is fsynced and renamed over ``destination``; on any error the
    temporary file is removed and ``destination`` is untouched. ``mode`` defaults to 0600
    because the embedded config carries secrets. Returns an :class:`EditResult` whose
    ``changed`` says whether the content differs from ``source``.
    """
    directory = os.path.dirname(os.path.abspath(destination))
    with open(source, "rb") as src:
        patches = plan_edit(src, ignition, kargs, append_kargs, name=source)
        size = os.fstat(src.fileno()).st_size
        fd, temp_path = tempfile.mkstemp(prefix=".%s." % os.path.basename(destination), suffix=".tmp",
                                         dir=directory)
        try:
            try:
                os.fchmod(fd, mode)
                _copy_file_contents(src.fileno(), fd, size)
                apply_patches(fd, patches)
            finally:
                os.close(fd)
            os.replace(temp_path, destination)
        except BaseException:
            try:
                os.unlink(temp_path)
            except OSError:
                pass
            raise
    _fsync_directory(directory)
    return _edit_result(patches)


def edit_iso_in_place(path, ignition=None, kargs=None, append_kargs=None):
    """Edit the ISO at ``path`` directly: for a temporary copy the caller already owns.

    All checks run before the first byte is written, but a crash midway leaves a partial edit.
    """
    with open(path, "r+b") as fp:
        patches = plan_edit(fp, ignition, kargs, append_kargs, name=path)
        fp.flush()
        apply_patches(fp.fileno(), patches)
    return _edit_result(patches)


# --- what an add-nodes ignition says --------------------------------------------------------

def decode_data_url(source, compression=None):
    """Bytes of an Ignition ``data:`` URL (base64 or percent-encoded), gunzipped if compressed."""
    if not isinstance(source, str) or not source.startswith("data:") or "," not in source:
        raise IgnitionContentError("expected a data: URL, got %r" % (source[:40] if isinstance(source, str) else source))
    header, payload = source[5:].split(",", 1)
    try:
        if header.split(";")[-1] == "base64":
            data = base64.b64decode(unquote_to_bytes(payload), validate=True)
        else:
            data = unquote_to_bytes(payload)
    except (ValueError, TypeError) as exc:
        raise IgnitionContentError("undecodable data URL: %s" % exc)
    if compression in (None, ""):
        return data
    if compression != "gzip":
        raise IgnitionContentError("unsupported compression %r (Ignition knows gzip)" % compression)
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise IgnitionContentError("corrupt gzip data URL: %s" % exc)


def _ignition_files(ignition):
    """``{path: file entry}`` of ``storage.files``; a later entry for a path wins."""
    files = {}
    storage = ignition.get("storage") or {}
    for entry in storage.get("files") or []:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            files[entry["path"]] = entry
    return files


def _file_text(files, path):
    entry = files.get(path)
    if entry is None:
        return None
    contents = entry.get("contents") or {}
    source = contents.get("source")
    if source is None:
        return ""
    try:
        return decode_data_url(source, contents.get("compression")).decode("utf-8")
    except (IgnitionContentError, UnicodeDecodeError) as exc:
        raise IgnitionContentError("ignition file %s: %s" % (path, exc))


def parse_env_file(text):
    """``KEY=VALUE`` lines (optionally ``export``ed, optionally quoted) into a dict."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def parse_mac_interface_ini(text):
    """``[(mac, interface)]`` from a ``mac_interface.ini`` (lines ``MAC=ifname``)."""
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;[" or "=" not in line:
            continue
        left, right = (part.strip() for part in line.split("=", 1))
        if not _MAC_RE.match(left) and _MAC_RE.match(right):
            left, right = right, left
        if not _MAC_RE.match(left):
            raise IgnitionContentError("mac_interface.ini line %r has no MAC address" % line)
        pairs.append((left.lower(), right))
    return pairs


def _hosts(files):
    hostnames_by_mac = {}
    for path in files:
        if path.startswith(HOSTNAMES_DIR):
            hostnames_by_mac[path[len(HOSTNAMES_DIR):].lower()] = _file_text(files, path).strip()
    hosts = {}
    for path in files:
        match = _HOST_FILE_RE.match(path)
        if not match:
            continue
        host = hosts.setdefault(int(match.group(2)), {
            "name": match.group(1), "interfaces": [], "mac_addresses": [], "hostname": None})
        if match.group(3) == "mac_interface.ini":
            for mac, interface in parse_mac_interface_ini(_file_text(files, path)):
                host["interfaces"].append({"mac_address": mac, "name": interface})
                host["mac_addresses"].append(mac)
        elif match.group(3) == "hostname":
            host["hostname"] = _file_text(files, path).strip() or None
    for host in hosts.values():
        for mac in host["mac_addresses"]:
            if host["hostname"] is None and hostnames_by_mac.get(mac):
                host["hostname"] = hostnames_by_mac[mac]
    return [hosts[index] for index in sorted(hosts)]


def summarize_add_nodes_ignition(ignition):
    """Cluster identity, token expiry and hosts of an add-nodes Ignition config (a dict).

    Values missing from the config are None. ``hosts`` lists ``{name: hostN, interfaces:
    [{mac_address, name}], mac_addresses, hostname}`` in host order.
    """
    files = _ignition_files(ignition)
    env_text = _file_text(files, ADD_NODES_ENV_PATH)
    env = parse_env_file(env_text) if env_text is not None else {}
    return {
        "cluster_id": env.get("CLUSTER_ID"),
        "cluster_name": env.get("CLUSTER_NAME"),
        "api_dns_name": env.get("CLUSTER_API_VIP_DNS_NAME"),
        "auth_token_expiry": env.get("AUTH_TOKEN_EXPIRY"),
        "hosts": _hosts(files),
    }
