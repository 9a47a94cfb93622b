# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read and edit the Ignition embed area and kernel-argument areas of a CoreOS live ISO.

The ISO is never rebuilt: files are located read-only (_iso9660; extent x 2048 is the byte offset), and an
edit copies the ISO and overwrites only the embed area and the kargs regions, so the hybrid MBR/GPT and El
Torito records stay byte-identical. Where the areas are: _iso_layout (node-joiner's ``igninfo.jso`` and
``kargs.jso`` as well as the base ISO's ``.json`` names).

Errors are :class:`IsoError` subclasses whose messages name the file and what was expected.
"""

import collections
import errno
import json
import lzma
import os
import tempfile

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.cpio import (
    REGULAR_FILE_MODE,
    build_archive,
    unpack_initramfs,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import (
    CapacityError,
    EmbedAreaError,
    IgnitionContentError,
    IsoError,
    IsoLayoutError,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import (
    CONFIG_NAME,
    parse_ignition,
    summarize_add_nodes_ignition,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso_layout import (
    KARGS_NAMES,
    current_kargs,
    read_exact,
    read_layout,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.kargs import format_kargs_region, merge_kargs

DEFAULT_ISO_MODE = 0o600

Patch = collections.namedtuple("Patch", ["what", "offset", "data", "changed"])
EditResult = collections.namedtuple("EditResult", ["changed", "edits"])


# --- embed area payload ------------------------------------------------------------------------


def unpack_embed_area(data, kinds=None):
    """Return ``{name: CpioEntry}`` of the files in an embed area, or None if it is all zero.

    ``kinds`` (a list) collects the compression of each archive (``gzip``, ``xz``, ``none``).
    """
    return unpack_initramfs(data, kinds)


def extract_config(data, kinds=None):
    """Return the bytes of ``config.ign`` in an embed area, or None when it holds none."""
    files = unpack_embed_area(data, kinds)
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
        raise CapacityError(
            "compressed Ignition archive is %d bytes, the embed area holds only %d" % (len(payload), capacity)
        )
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


# --- reading an ISO ---------------------------------------------------------------------------


def read_config_from(fp, layout, name, kinds=None):
    """Raw ``config.ign`` bytes of the embed area of ``layout``, or None when the area holds none."""
    area = read_exact(
        fp, layout.embed_area.offset, layout.embed_area.length, "%s: embed area %s" % (name, layout.embed_file)
    )
    try:
        return extract_config(area, kinds)
    except EmbedAreaError as exc:
        raise EmbedAreaError(
            "%s: embed area %s (offset %d, %d bytes): %s"
            % (name, layout.embed_file, layout.embed_area.offset, layout.embed_area.length, exc)
        )


def read_embedded_config(iso_path):
    """Raw ``config.ign`` bytes embedded in the ISO at ``iso_path``, or None."""
    with open(iso_path, "rb") as fp:
        return read_config_from(fp, read_layout(fp, iso_path), iso_path)


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

    ``ignition`` holds secrets (pull secret, tokens): callers must not log it. ``summary`` never does.
    """
    kinds = []
    with open(iso_path, "rb") as fp:
        layout = read_layout(fp, iso_path)
        raw = read_config_from(fp, layout, iso_path, kinds)
        kargs = current_kargs(fp, layout, iso_path) if layout.kargs else None
    ignition = None
    if raw is not None:
        try:
            ignition = parse_ignition(raw)
        except IgnitionContentError as exc:
            raise IgnitionContentError("%s: %s" % (iso_path, exc))
    try:
        summary = summarize_add_nodes_ignition(ignition) if ignition is not None else None
    except IgnitionContentError as exc:
        raise IgnitionContentError("%s: %s" % (iso_path, exc))
    return {
        "ignition": ignition,
        "summary": summary,
        "kargs": kargs,
        "kargs_default": layout.kargs.default if layout.kargs else None,
        "embed_area": {
            "file": layout.embed_file,
            "offset": layout.embed_area.offset,
            "length": layout.embed_area.length,
            "compression": kinds,
        },
        "iso_files": {"igninfo": layout.igninfo_path, "kargs": layout.kargs.stored_path if layout.kargs else None},
        "volume_id": layout.volume_id,
        "boot_architecture": layout.architecture,
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
        old = read_exact(fp, area.offset, area.length, "%s: embed area %s" % (name, layout.embed_file))
        patches.append(Patch("ignition " + layout.embed_file, area.offset, data, data != old))
    if kargs is not None or append_kargs:
        if layout.kargs is None:
            raise IsoLayoutError("%s: %s not found; cannot set kernel arguments" % (name, KARGS_NAMES))
        new_kargs = kargs.strip() if kargs is not None else current_kargs(fp, layout, name)
        if append_kargs:
            new_kargs = merge_kargs(new_kargs, append_kargs)
        for region in layout.kargs.regions:
            try:
                data = format_kargs_region(new_kargs, region.length, region.pad, region.end)
            except IsoError as exc:
                raise type(exc)("%s: kargs area in %s: %s" % (name, region.path, exc))
            old = read_exact(fp, region.offset, region.length, "%s: kargs area in %s" % (name, region.path))
            patches.append(Patch("kargs " + region.path, region.offset, data, data != old))
    return patches


def _edit_result(patches):
    return EditResult(
        any(p.changed for p in patches),
        [{"what": p.what, "offset": p.offset, "length": len(p.data), "changed": p.changed} for p in patches],
    )


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
    getattr(errno, name)
    for name in ("ENOSYS", "EXDEV", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF")
    if hasattr(errno, name)
)


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
        fd, temp_path = tempfile.mkstemp(prefix=".%s." % os.path.basename(destination), suffix=".tmp", dir=directory)
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
