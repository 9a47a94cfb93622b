"""The lab's own reader of live ISOs, PXE initrds and cpio archives (base RHCOS layout and node layout).

Deliberately independent of the collection (which has its own reader): it walks ISO9660 directory records and
decodes the cpio archives itself, so a bug shared by both cannot hide.

Two layouts are read:

- the **base** RHCOS live ISO (``lab.isobase``): Rock Ridge names ``coreos/igninfo.json``,
  ``coreos/kargs.json``, primary (ISO9660 level 1) names ``COREOS/IGNINFO.JSO``, ``COREOS/KARGS.JSO``;
- the **node** ISO node-joiner writes (``lab.nodeiso``): every extension longer than 3 characters cut on disk
  before the rebuild, so the Rock Ridge names are ``igninfo.jso`` and ``kargs.jso`` as well.

The Ignition embed area is found as coreos-installer finds it: the primary name ``COREOS/IGNINFO.JSO``, whose
``file`` is looked up upper-cased; without it, the whole ``IMAGES/IGNITION.IMG``
(coreos/coreos-installer src/live/embed.rs@bee4500186302e3773afe969ecabb441f2d77279). The area may hold a gzip
or xz cpio archive, NUL padded.
"""

import gzip
import io
import json
import lzma
import zlib

from . import isobase

# The base ISO's facts and builder, importable from here too.
SECTOR, VOLUME_ID, ARCHES = isobase.SECTOR, isobase.VOLUME_ID, isobase.ARCHES
EMBED_AREA_SIZE, KARGS_AREA_SIZE, DEFAULT_KARGS = (
    isobase.EMBED_AREA_SIZE,
    isobase.KARGS_AREA_SIZE,
    isobase.DEFAULT_KARGS,
)
build_base_iso = isobase.build_base_iso

XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
CPIO_NEWC_MAGIC = b"070701"
COPY_CHUNK = 4 * 1024 * 1024
IGNINFO_PRIMARY = "COREOS/IGNINFO.JSO"
KARGS_PRIMARY = "COREOS/KARGS.JSO"
DEFAULT_EMBED_PRIMARY = "IMAGES/IGNITION.IMG"


class IsoFormatError(Exception):
    """The file is not an ISO9660 image in the expected layout."""


# --------------------------------------------------------------------------- cpio


def cpio_newc(files):
    """A cpio "newc" archive as cavaliercoder/go-cpio writes it (the library isoeditor and node-joiner use).

    ``files``: ``{name: bytes}`` (sorted, mode 0644) or a list of ``(name, bytes, mode)`` kept in order.
    A mode without file-type bits gets the regular-file type, each entry has inode 0, one link and mtime 0,
    as go-cpio writes them (cavaliercoder/go-cpio writer.go@925f9528c45e5b74f52963bd11f1988ad99a95a5).
    """
    entries = sorted((name, data, 0o644) for name, data in files.items()) if isinstance(files, dict) else files
    out = io.BytesIO()
    for name, data, mode in entries:
        if not mode & 0o170000:
            mode |= 0o100000
        _cpio_entry(out, name, mode, 1, data)
    _cpio_entry(out, "TRAILER!!!", 0, 1, b"")
    return out.getvalue()


def _cpio_entry(out, name, mode, links, data):
    encoded = name.encode() + b"\0"
    fields = (0, mode, 0, 0, links, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
    out.write(CPIO_NEWC_MAGIC + b"".join(b"%08X" % v for v in fields))
    out.write(encoded)
    out.write(bytes(-(110 + len(encoded)) % 4))
    out.write(data)
    out.write(bytes(-len(data) % 4))


def parse_cpio_newc(data, modes=None):
    """Return ({name: bytes} of the regular files, bytes left after the trailer).

    ``modes``: a dict that receives ``{name: mode}`` of every file entry.
    """
    files = {}
    pos = 0
    while True:
        header = data[pos : pos + 110]
        if len(header) < 110 or header[:6] != CPIO_NEWC_MAGIC:
            raise IsoFormatError("bad cpio newc header at offset %d" % pos)
        fields = [int(header[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        name_start = pos + 110
        name = data[name_start : name_start + namesize - 1].decode()
        data_start = name_start + namesize + (-(110 + namesize) % 4)
        pos = data_start + filesize + (-filesize % 4)
        if name == "TRAILER!!!":
            return files, data[pos:]
        if mode & 0o170000 in (0o100000, 0):  # no type bits: a regular file to every reader
            key = name[2:] if name.startswith("./") else name
            files[key] = data[data_start : data_start + filesize]
            if modes is not None:
                modes[key] = mode
        # directories and symlinks carry nothing the lab reads


def _decompress_one(data):
    """Decompress the leading xz or gzip stream; return (payload, rest)."""
    if data.startswith(XZ_MAGIC):
        dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    elif data.startswith(GZIP_MAGIC):
        dec = zlib.decompressobj(wbits=31)
    else:
        raise IsoFormatError("unknown compression (magic %r)" % data[:6])
    payload = dec.decompress(data)
    if not dec.eof:
        raise IsoFormatError("truncated compressed stream")
    return payload, dec.unused_data


def read_initrd_files(data, modes=None):
    """All files of a (possibly concatenated, compressed or NUL-padded) initrd image.

    Later archives override earlier ones, as in the kernel's initramfs unpacking. A PXE initrd of
    node-joiner is the live initrd with the Ignition archive appended, so this reads it too.
    """
    files = {}
    while True:
        data = data.lstrip(b"\0")
        if not data:
            return files
        if data.startswith(CPIO_NEWC_MAGIC):
            found, data = parse_cpio_newc(data, modes)
        else:
            payload, data = _decompress_one(data)
            found = {}
            while payload.lstrip(b"\0"):
                more, payload = parse_cpio_newc(payload.lstrip(b"\0"), modes)
                found.update(more)
        files.update(found)


def ignition_archive(ignition, compression="gzip"):
    """The compressed cpio holding ``config.ign`` (mode 0100644), zero-padded to a multiple of 4 bytes.

    gzip is what node-joiner writes (openshift/assisted-image-service
    pkg/isoeditor/ignition.go@39bd9999768d3a3341915e0b5a135f12c8c4ed79, ``IgnitionContent.Archive``; later
    versions move the gzip, cpio and pad into ``generateCompressedCPIO`` of isoutil.go, which ``Archive`` calls:
    ignition.go and isoutil.go@a55e383a69c5e0ba00d4ca875e8d2b9ed520efcc); xz (CRC32 check, the only one the kernel
    knows) is what ``coreos-installer iso ignition embed`` writes.
    """
    config = ignition if isinstance(ignition, bytes) else json.dumps(ignition, separators=(",", ":")).encode()
    archive = cpio_newc([("config.ign", config, 0o100644)])
    if compression == "xz":
        packed = lzma.compress(archive, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    elif compression == "gzip":
        packed = gzip.compress(archive, mtime=0)
    else:
        raise ValueError("compression must be 'xz' or 'gzip', not %r" % compression)
    return packed + bytes(-len(packed) % 4)


def read_pxe_ignition(initrd_path):
    """The Ignition config appended to a PXE initrd (a dict), or None when it carries none."""
    with open(initrd_path, "rb") as f:
        files = read_initrd_files(f.read())
    return json.loads(files["config.ign"]) if "config.ign" in files else None


# --------------------------------------------------------------------------- ISO9660 reader


def _both_endian32(record, offset):
    return int.from_bytes(record[offset : offset + 4], "little")


def _dir_records(f, extent, length):
    """Yield (primary name, Rock Ridge name or None, is_dir, extent, size) of one directory's records."""
    f.seek(extent * SECTOR)
    data = f.read(length)
    pos = 0
    while pos < len(data):
        rec_len = data[pos]
        if rec_len == 0:
            # Records never straddle a sector: the rest of this sector is padding.
            pos = (pos // SECTOR + 1) * SECTOR
            continue
        rec = data[pos : pos + rec_len]
        name_len = rec[32]
        raw_name = rec[33 : 33 + name_len]
        pos += rec_len
        if raw_name in (b"\0", b"\1"):
            continue
        # The system use area follows the name, padded to an even offset.
        system_use = rec[33 + name_len + (1 - name_len % 2) :]
        # Like coreos-installer: strip the ";1" version, then a trailing dot.
        primary = raw_name.decode("ascii", "replace").split(";")[0].rstrip(".")
        yield (
            primary,
            _rock_ridge_name(system_use),
            bool(rec[25] & 0x02),
            _both_endian32(rec, 2),
            _both_endian32(rec, 10),
        )


def _rock_ridge_name(system_use):
    """The Rock Ridge (RRIP "NM") name in a system use area, or None."""
    parts = []
    pos = 0
    while pos + 4 <= len(system_use):
        sig, length = system_use[pos : pos + 2], system_use[pos + 2]
        if length < 4:
            break
        if sig == b"NM":
            flags = system_use[pos + 4]
            parts.append(system_use[pos + 5 : pos + length])
            if not flags & 0x01:  # no CONTINUE flag: the name is complete
                return b"".join(parts).decode("utf-8", "replace")
        pos += length
    return None


def _root(f, iso_path):
    f.seek(16 * SECTOR)
    pvd = f.read(SECTOR)
    if pvd[0:1] != b"\x01" or pvd[1:6] != b"CD001":
        raise IsoFormatError("%s: no ISO9660 primary volume descriptor at sector 16" % iso_path)
    root = pvd[156 : 156 + 34]
    return _both_endian32(root, 2), _both_endian32(root, 10), pvd


def volume_id(iso_path):
    """The volume identifier (32 bytes at offset 32808, spaces trimmed), as isoeditor reads it."""
    with open(iso_path, "rb") as f:
        return _root(f, iso_path)[2][40:72].decode("ascii", "replace").strip()


def locate_file(iso_path, path, primary=False):
    """Return (byte offset, size) of a file inside the ISO, or None if absent.

    By default a path component matches a record's Rock Ridge name or its primary name, case-insensitively;
    with ``primary=True`` only the primary name matches, exactly (coreos-installer's lookup).
    """
    with open(iso_path, "rb") as f:
        extent, size, _pvd = _root(f, iso_path)
        is_dir = True
        for part in [p for p in path.strip("/").split("/") if p]:
            if not is_dir:
                return None
            for name, rr_name, child_is_dir, child_extent, child_size in _dir_records(f, extent, size):
                if (name == part) if primary else part.lower() in (name.lower(), (rr_name or "").lower()):
                    extent, size, is_dir = child_extent, child_size, child_is_dir
                    break
            else:
                return None
        if is_dir:
            return None
        return extent * SECTOR, size


def list_dir(iso_path, path="/"):
    """``[(primary name, Rock Ridge name or None, is_dir)]`` of one directory of the ISO."""
    with open(iso_path, "rb") as f:
        extent, size, _pvd = _root(f, iso_path)
        for part in [p for p in path.strip("/").split("/") if p]:
            for name, rr_name, child_is_dir, child_extent, child_size in _dir_records(f, extent, size):
                if child_is_dir and part.lower() in (name.lower(), (rr_name or "").lower()):
                    extent, size = child_extent, child_size
                    break
            else:
                raise IsoFormatError("%s: no directory %s" % (iso_path, path))
        return [(name, rr_name, is_dir) for name, rr_name, is_dir, _e, _s in _dir_records(f, extent, size)]


def read_file(iso_path, path, primary=False):
    """The bytes of a (small) file inside the ISO, or None if absent."""
    where = locate_file(iso_path, path, primary)
    if where is None:
        return None
    with open(iso_path, "rb") as f:
        f.seek(where[0])
        return f.read(where[1])


def copy_file_out(iso_path, path, dest):
    """Stream a file out of the ISO to ``dest`` without loading it into memory."""
    where = locate_file(iso_path, path)
    if where is None:
        raise IsoFormatError("%s: no %s in the image" % (iso_path, path))
    offset, remaining = where
    with open(iso_path, "rb") as src, open(dest, "wb") as out:
        src.seek(offset)
        while remaining:
            chunk = src.read(min(COPY_CHUNK, remaining))
            if not chunk:
                raise IsoFormatError("%s: %s extends past the end of the image" % (iso_path, path))
            out.write(chunk)
            remaining -= len(chunk)


def embed_area(iso_path):
    """Return (byte offset, length) of the Ignition embed area, found as coreos-installer finds it."""
    info_raw = read_file(iso_path, IGNINFO_PRIMARY, primary=True)
    info = json.loads(info_raw) if info_raw is not None else {"file": DEFAULT_EMBED_PRIMARY}
    where = locate_file(iso_path, info["file"].upper(), primary=True)
    if where is None:
        raise IsoFormatError(
            "%s: no %s (named by %s), not a CoreOS live ISO"
            % (iso_path, info["file"].upper(), IGNINFO_PRIMARY if info_raw is not None else "default")
        )
    offset = info.get("offset") or 0
    length = info.get("length") or where[1] - offset
    return where[0] + offset, length


def read_embedded_ignition(iso_path):
    """The Ignition config embedded in the ISO as a dict, or None when the area is all zeros."""
    offset, length = embed_area(iso_path)
    with open(iso_path, "rb") as f:
        f.seek(offset)
        area = f.read(length)
    if not area.strip(b"\0"):
        return None
    files = read_initrd_files(area)
    if "config.ign" not in files:
        raise IsoFormatError("%s: the embed area holds no config.ign (files: %s)" % (iso_path, sorted(files)))
    return json.loads(files["config.ign"])


def read_kargs(iso_path):
    """Map each file of ``COREOS/KARGS.JSO`` to the kernel arguments found in its area."""
    raw = read_file(iso_path, KARGS_PRIMARY, primary=True)
    if raw is None:
        raise IsoFormatError("%s: no %s" % (iso_path, KARGS_PRIMARY))
    spec = json.loads(raw)
    found = {}
    with open(iso_path, "rb") as f:
        for entry in spec["files"]:
            start = locate_file(iso_path, entry["path"].upper(), primary=True)[0] + entry["offset"]
            f.seek(start)
            region = f.read(spec["size"]).decode()
            found[entry["path"]] = region.split(entry.get("end", "\n"), 1)[0]
    return found


def read_config_iso(iso_path):
    """``({path: bytes}, {path: mode})`` of the files in an ``agentconfig.noarch.iso`` (its ``config.gz``)."""
    raw = read_file(iso_path, "config.gz")
    if raw is None:
        raise IsoFormatError("%s: no config.gz" % iso_path)
    modes = {}
    return read_initrd_files(raw, modes), modes
