# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A CoreOS live ISO, read through its ISO 9660 directory records alone, and its one edit: live kernel arguments
appended in place (the hybrid MBR/GPT, El Torito and every other byte stay as they are; the ISO is never rebuilt);
the initramfs streams of its Ignition embed area and of a PXE initrd; what iso_info says of either.

* ``coreos/igninfo.json``: ``{"file", "offset"?, "length"?}`` names the Ignition embed area (offset and length 0 or
  missing: the whole file). ``coreos/kargs.json``: ``{"default", "size", "files": [{"path", "offset", "pad"?,
  "end"?}]}``; each region holds ``kargs + end + pad...`` -- coreos/coreos-installer
  src/live/embed.rs@bee4500186302e3773afe969ecabb441f2d77279 (``KargEmbedInfo``).
* node-joiner (4.17-4.21) cuts every extension longer than 3 characters before it rebuilds the ISO with Rock Ridge
  and without Joliet, so its ISOs hold ``coreos/igninfo.jso`` and ``coreos/kargs.jso`` -- openshift/installer
  pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6 (``normalizeFilesExtension``).

A path component matches a record by its Rock Ridge (or Joliet) name, then by its ISO 9660 name (version and
trailing dot ignored, Level 1 8.3 form too), each also with the extension cut to 3 characters. That is how
coreos-installer finds ``COREOS/IGNINFO.JSO`` -- src/iso9660.rs@bee4500186302e3773afe969ecabb441f2d77279 reads
the volume descriptors and directory records only, so nothing else in the image can make a lookup fail.

Why not pycdlib (1.22.0, the newest): it refuses what node-joiner writes. node-joiner rebuilds the ISO with
go-diskfs (openshift/assisted-image-service pkg/isoeditor/isoutil.go@03e7d0df40cc180b529ebe57be0632f49bf7e9eb),
which since v1.4.1 writes the Rock Ridge PX serial number as one little-endian uint64 (diskfs/go-diskfs
filesystem/iso9660/rockridge.go@5fa33cdab5b6560db5cd07ad9a9177bd12e6abc6, unchanged @58541aa8f559, the version
installer master uses) and, on x86_64, a second ``isolinux/BOOT.CAT;1`` record for its own El Torito catalog
(finalize.go, same commits). On an image laid out that way
(tests/unit/plugins/module_utils/fixtures/iso/go_diskfs_writer.py), ``PyCdlib().open_fp`` raised
``PyCdlibInvalidISO: PX record big and little-endian file serial number do not agree``; with the serial written
both-endian, ``PyCdlibInvalidInput: Failed adding duplicate name to parent``.

Initramfs streams as the Linux initramfs loader reads them: cpio "newc" archives, each optionally gzip or xz
compressed, concatenated with NUL padding; the Ignition config in an ISO's embed area or appended to a PXE initrd.

A newc entry is a 110-byte ASCII header (magic ``070701``, or ``070702`` with a checksum, then 13 eight-digit hex
fields), the NUL-terminated name padded to 4 bytes, then the data padded to 4 bytes; ``TRAILER!!!`` ends an archive.
node-joiner's PXE initrd ``node.<arch>-initrd.img`` is the base ``images/pxeboot/initrd.img`` with the Ignition
archive appended -- openshift/installer pkg/asset/agent/image/agentpxefiles.go@84c3bbc9d011c5339af99235decb0f31bea501a7.
"""

from __future__ import annotations

import collections
import datetime
import json
import lzma
import os
import re
import struct
import zlib
from collections.abc import Iterator
from typing import IO, Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import clock
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import ignition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import IsoLayoutError

SECTOR = 2048
IGNINFO_NAMES = "coreos/igninfo.json (igninfo.jso in a node-joiner ISO)"
KARGS_NAMES = "coreos/kargs.json (kargs.jso in a node-joiner ISO)"
KARGS_MAX_SIZE = 2048  # coreos-installer refuses larger kargs areas: a bigger one means a corrupt kargs.json
EXPECTED = "a node ISO (node.<arch>.iso), the RHCOS live ISO or a PXE initrd (node.<arch>-initrd.img)"
_INITRD_NAME_RE = re.compile(r"^(?:node|agent)\.([a-z0-9_]+)-initrd\.img$")
# How an RHCOS live ISO of each architecture boots -- coreos/coreos-assembler
# src/cmd-buildextend-live@0152fcab918f3ab72e19ad3abeff622f9bf026fc: s390x boots images/cdboot.img with
# generic.ins, x86_64 has isolinux (BIOS), ppc64le is made by grub2-mkrescue (boot/grub, no EFI image); else the
# kernel's header tells (ELF, PE/EFI stub, gzip-compressed arm64 Image).
BOOT_MARKERS = {"images/cdboot.img": "s390x", "generic.ins": "s390x", "isolinux/isolinux.bin": "x86_64"}
BOOT_MARKERS["ppc/bootinfo.txt"] = "ppc64le"
PE_MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64"}
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 21: "ppc64le", 22: "s390x"}
NEWC_MAGICS = (b"070701", b"070702")
GZIP_MAGIC, XZ_MAGIC = b"\x1f\x8b", b"\xfd7zXZ\x00"
OTHER_MAGICS = ((b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bzip2"), (b"\x02\x21\x4c\x18", "lz4"), (b"\x89LZO", "lzo"))
# How far back from the end of a PXE initrd to look for the appended archive, and how many starts to try.
APPENDED_WINDOW, APPENDED_CANDIDATES = 16 << 20, 256


# A directory record: its Rock Ridge or Joliet name, its ISO 9660 identifier (no ";1", no trailing dot), its tree.
Record = collections.namedtuple("Record", "name primary is_dir joliet offset length")
KargsRegion = collections.namedtuple("KargsRegion", "path offset length pad end")  # one kernel-argument area


# Where the embed area (offset, length) and the kernel-argument regions (none without kargs.json) are; the names
# the ISO spells igninfo.json and kargs.json with, kargs.json "default", the arguments the regions hold now (kargs),
# the architecture it boots and where a minimal ISO fetches its rootfs.
Layout = collections.namedtuple(
    "Layout",
    "embed_file embed_area igninfo_path regions kargs_default kargs_path kargs volume_id boot_architecture rootfs_url",
)
# A minimal ISO (node-joiner 4.17's on platform External) has no rootfs: grub.cfg's kernel arguments say where the host
# fetches it -- openshift/installer vendor/github.com/openshift/assisted-image-service/pkg/isoeditor/rhcos.go@
# 006d45739349721f1371d3013792d9b8407e9842 (fixGrubConfig: the grub.cfg paths, 'coreos.live.rootfs_url=<url>').
GRUB_PATHS = ("EFI/redhat/grub.cfg", "EFI/fedora/grub.cfg", "boot/grub/grub.cfg", "EFI/centos/grub.cfg")
# The vendored isoeditor quotes the whole argument ('coreos.live.rootfs_url=<url>'), the newer one the URL ("<url>").
_ROOTFS_URL = re.compile(r"""coreos\.live\.rootfs_url=(?:"([^"]*)"|([^\s'"]+))""")


def _le32(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<I", data, offset)[0])


def cut_extension(name: str) -> str:
    """``name`` with an extension longer than 3 characters cut to 3, as node-joiner renames files."""
    base, dot, ext = name.rpartition(".")
    return base + "." + ext[:3] if dot and base and len(ext) > 3 else name


def level1_name(name: str) -> str:
    """The ISO 9660 Level 1 (upper-case 8.3) form of a name."""
    base, _dot, ext = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    base, ext = (re.sub(r"[^A-Z0-9_]", "_", part.upper()) for part in (base, ext))
    return base[:8] + ("." + ext[:3] if ext else "")


class IsoImage:
    """The ISO 9660 image open (binary, readable) as ``handle``; ``path`` names it in errors."""

    def __init__(self, handle: IO[bytes], path: str = "ISO") -> None:
        self.handle, self.path, self.joliet = handle, path, False
        self.volume_id: str | None = None
        self._roots: list[Record] = []  # the primary tree's root, then the Joliet tree's
        for sector in range(16, 80):
            handle.seek(sector * SECTOR)
            vd = handle.read(SECTOR).ljust(SECTOR, b"\0")
            if vd[1:6] != b"CD001" or vd[0] == 255:
                break
            root = Record("", "", True, vd[0] == 2, _le32(vd, 158) * SECTOR, _le32(vd, 166))
            if vd[0] == 1 and self.volume_id is None:
                self.volume_id = vd[40:72].decode("ascii", "replace").strip(" \0")  # go-diskfs pads with NULs
                self._roots.insert(0, root)
            elif vd[0] == 2 and not self.joliet and any(escape in vd[88:120] for escape in (b"%/@", b"%/C", b"%/E")):
                self._roots.append(root)
                self.joliet = True
        if self.volume_id is None:
            raise IsoLayoutError("%s: not an ISO 9660 image (no primary volume descriptor at byte 32768)" % path)
        self.volume_id = self.volume_id or None
        area = self.read_bytes(self._roots[0].offset, 256, "root directory")
        area = area[34 : area[0]]  # the System Use area of the root's ".": a SUSP "SP" there means Rock Ridge
        self._susp_skip = area[6] if area[:2] == b"SP" and area[4:6] == b"\xbe\xef" else None
        self.rock_ridge = self._susp_skip is not None

    def read_bytes(self, offset: int, length: int, what: str) -> bytes:
        self.handle.seek(offset)
        data = self.handle.read(length)
        if len(data) != length:
            raise IsoLayoutError("%s: %s: the image ends before byte %d" % (self.path, what, offset + length))
        return data

    def listdir(self, directory: Record) -> Iterator[Record]:
        """The records of ``directory``, "." and ".." left out."""
        data, pos = self.read_bytes(directory.offset, min(directory.length, 64 << 20), "directory"), 0
        while pos < len(data):
            size = data[pos]
            if size == 0:  # records never cross a sector: the rest of this one is padding
                pos = (pos // SECTOR + 1) * SECTOR
                continue
            if not 34 <= size <= len(data) - pos:
                raise IsoLayoutError("%s: corrupt directory record at byte %d" % (self.path, directory.offset + pos))
            raw, pos = data[pos : pos + size], pos + size
            ident = raw[33 : 33 + raw[32]]
            if ident not in (b"\0", b"\1"):
                text = ident.decode("utf-16-be" if directory.joliet else "ascii", "replace").split(";")[0]
                name, primary = (text, None) if directory.joliet else (self._rock_ridge_name(raw), text.rstrip("."))
                yield Record(name, primary, bool(raw[25] & 2), directory.joliet, _le32(raw, 2) * SECTOR, _le32(raw, 10))

    def _rock_ridge_name(self, record: bytes) -> str | None:
        """The "NM" name in a record's System Use area, continuation ("CE") areas followed; None without one."""
        if self._susp_skip is None:
            return None
        parts, areas = [], [record[33 + record[32] + (1 - record[32] % 2) + self._susp_skip :]]
        while areas and len(areas) < 32:
            area, pos = areas.pop(), 0
            while pos + 4 <= len(area) and 4 <= area[pos + 2] <= len(area) - pos:
                signature, size = area[pos : pos + 2], area[pos + 2]
                if signature == b"NM" and size >= 5 and not area[pos + 4] & 0x06:
                    parts.append(area[pos + 5 : pos + size])
                elif signature == b"CE" and size >= 28:
                    where = _le32(area, pos + 4) * SECTOR + _le32(area, pos + 12)
                    areas.append(self.read_bytes(where, _le32(area, pos + 20), "Rock Ridge continuation area"))
                pos = len(area) if signature == b"ST" else pos + size
        return b"".join(parts).decode("utf-8", "replace") if parts else None

    def find(self, path: str) -> tuple[Record | None, str | None]:
        """The record of ``path`` (``coreos/igninfo.json``, ``/COREOS/IGNINFO.JSO;1``...) and its stored spelling:
        Rock Ridge or Joliet names first, then ISO 9660 names; ``(None, None)`` when there is none."""
        parts = [part.split(";")[0] for part in path.strip("/").split("/") if part]
        for by_primary in (False, True):
            for root in self._roots if parts else ():
                current: Record | None = root
                names = []
                for part in parts:
                    wanted = [part, cut_extension(part)]
                    wanted = [name.upper() for name in wanted] + [level1_name(part)] if by_primary else wanted
                    listing = list(self.listdir(current)) if current is not None and current.is_dir else []
                    keys = [(record.primary or "").upper() if by_primary else record.name for record in listing]
                    current = next((listing[keys.index(name)] for name in wanted if name in keys), None)
                    names.append((current and (current.primary if by_primary else current.name)) or "")
                if current is not None:
                    return current, "/".join(names)
        return None, None

    def exists(self, path: str) -> bool:
        return self.find(path)[0] is not None

    def extent(self, path: str) -> tuple[int, int] | None:
        """``(byte offset, length)`` of the file ``path``, None when there is none; IsoLayoutError for a directory."""
        record = self.find(path)[0]
        if record is not None and record.is_dir:
            raise IsoLayoutError("%s: %s is a directory, expected a file" % (self.path, path))
        return None if record is None else (record.offset, record.length)

    def read(self, path: str) -> bytes | None:
        """The bytes of the file ``path``, or None when there is none."""
        extent = self.extent(path)
        return None if extent is None else self.read_bytes(extent[0], extent[1], path)


def _field(info: dict[str, Any], key: str, ok: Any, want: str, where: str) -> Any:
    """``info[key]`` when ``ok(value)``, else IsoLayoutError naming the file, the field, what it must be, its value."""
    if not ok(info.get(key)):
        raise IsoLayoutError('%s: "%s" must be %s, got %r' % (where, key, want, info.get(key)))
    return info.get(key)


def _count(low: int, high: int = 1 << 62) -> Any:
    return lambda value: isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _json(image: IsoImage, path: str) -> tuple[dict[str, Any] | None, str]:
    raw, stored = image.read(path), image.find(path)[1] or path
    try:
        value = None if raw is None else json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise IsoLayoutError(f"{image.path}: {stored} is not valid JSON: {exc}")
    if raw is not None and not isinstance(value, dict):
        raise IsoLayoutError(f"{image.path}: {stored} must hold a JSON object")
    return value, stored


def _kargs(image: IsoImage) -> tuple[tuple[KargsRegion, ...], str | None, str | None]:
    info, stored = _json(image, "coreos/kargs.json")
    if info is None:
        return (), None, None
    where = "%s: %s" % (image.path, stored)
    default = _field(info, "default", lambda value: isinstance(value, str), "a string", where)
    size = _field(info, "size", _count(1, KARGS_MAX_SIZE), "an integer from 1 to %d" % KARGS_MAX_SIZE, where)
    if len(default.encode()) > size:
        raise IsoLayoutError("%s: default kargs larger than the area (%d bytes)" % (where, size))
    regions = []
    for entry in _field(info, "files", lambda value: isinstance(value, list) and value, "a non-empty list", where):
        entry = dict({"pad": "#", "end": "\n"}, **entry) if isinstance(entry, dict) else {"path": entry}
        path = _field(entry, "path", lambda value: isinstance(value, str), "a file", where)
        offset = _field(entry, "offset", _count(0), "a byte offset", where)
        for key in ("pad", "end"):
            _field(entry, key, lambda value: isinstance(value, str) and len(value) == 1, "one character", where)
        extent = image.extent(path)
        if extent is None or offset + size > extent[1]:
            problem = "not found" if extent is None else "too short: its kargs area at %d runs past its end" % offset
            raise IsoLayoutError("%s: kargs file %s named by %s %s" % (image.path, path, stored, problem))
        regions.append(KargsRegion(path, extent[0] + offset, size, entry["pad"], entry["end"]))
    return tuple(regions), default, stored


def boot_architecture(image: IsoImage) -> str | None:
    """The architecture the ISO boots (see BOOT_MARKERS); None when it cannot tell."""
    found = [architecture for marker, architecture in BOOT_MARKERS.items() if image.exists(marker)]
    if found or (image.exists("boot/grub/grub.cfg") and not image.exists("images/efiboot.img")):
        return found[0] if found else "ppc64le"
    extent = image.extent("images/pxeboot/vmlinuz") or (0, 0)
    head = image.read_bytes(extent[0], min(extent[1], 65536), "kernel")
    try:
        head = (zlib.decompressobj(31).decompress(head, 4096) if head[:2] == b"\x1f\x8b" else head) + bytes(64)
    except zlib.error:
        return None
    pe = _le32(head, 0x3C) if head[:2] == b"MZ" else 0
    if head[0x38:0x3C] == b"ARMd" or head[:4] == b"\x7fELF":
        return "aarch64" if head[:4] != b"\x7fELF" else ELF_MACHINES.get(head[18] if head[5] == 1 else head[19])
    return PE_MACHINES.get(struct.unpack("<H", head[pe + 4 : pe + 6])[0]) if head[pe : pe + 4] == b"PE\0\0" else None


def rootfs_url(image: IsoImage) -> str | None:
    """Where a minimal ISO's host fetches its rootfs (the first grub.cfg's ``coreos.live.rootfs_url``), else None."""
    grub = next((raw for raw in map(image.read, GRUB_PATHS) if raw is not None), b"")
    match = _ROOTFS_URL.search(grub.decode("utf-8", "replace"))
    return next(group for group in match.groups() if group is not None) if match else None


def read_layout(handle: IO[bytes], path: str = "ISO", strict: bool = True) -> Layout:
    """Locate the embed area and the kernel-argument regions of the ISO open as ``handle``; read the arguments.

    Regions that disagree raise KargsMismatchError, unless not ``strict`` (a reader): the arguments are then None.
    node-joiner 4.17's minimal ISO of platform External on x86_64 is such an ISO: its kargs.jso still describes the full
    ISO's areas, which the minimal ISO's edits moved in isolinux.cfg (see rootfs_url) -- openshift/installer
    pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6 (kargs.json is renamed before).
    """
    image = IsoImage(handle, path)
    info, stored = _json(image, "coreos/igninfo.json")
    if info is None:
        raise IsoLayoutError("%s: %s not found: no Ignition embed area" % (path, IGNINFO_NAMES))
    where = "%s: %s" % (path, stored)
    embed_file = _field(info, "file", lambda value: isinstance(value, str) and value, "a file of the ISO", where)
    offset = _field(dict({"offset": 0}, **info), "offset", _count(0), "a non-negative integer", where)
    extent = image.extent(embed_file)
    if extent is None:
        raise IsoLayoutError("%s: embed area file %s named by %s not found" % (path, embed_file, stored))
    room = extent[1] - offset  # "length" 0 or missing: the whole file
    length = _field(dict(info, length=info.get("length") or room), "length", _count(1, room), "1 to %d" % room, where)
    kargs, default, kargs_path = _kargs(image)
    handle.seek(0, os.SEEK_END)
    areas = sorted([(extent[0] + offset, length, embed_file)] + [(r.offset, r.length, r.path) for r in kargs])
    for (start, span, name), (after, _span, next_name) in zip(areas, [*areas[1:], (handle.tell(), 0, "")]):
        if start + span > after:  # the edit would write into another area, or past the end of the image
            raise IsoLayoutError("%s: the area of %s runs into %s" % (path, name, next_name or "the end of the image"))
    found = []
    for region in kargs:  # every region holds the same arguments
        handle.seek(region.offset)
        try:
            found.append((region.path, parse_kargs_region(handle.read(region.length), region.pad, region.end)))
        except IsoLayoutError as exc:
            raise IsoLayoutError("%s: %s: %s" % (path, region.path, exc))
        if found[-1][1] != found[0][1] and strict:
            disagree = "%s: kargs disagree: %s has %r, %s has %r" % (path, *found[0], *found[-1])
            raise ignition.KargsMismatchError(disagree)
    current = found[0][1] if len({kargs for _path, kargs in found}) == 1 else None  # (none, or they disagree)
    area, arch, url = (extent[0] + offset, length), boot_architecture(image), rootfs_url(image)
    return Layout(embed_file, area, stored, kargs, default, kargs_path, current, image.volume_id, arch, url)


def parse_kargs_region(raw: bytes, pad: str = "#", end: str = "\n") -> str:
    """Kernel arguments stored in one region: trailing pad, then the end marker, then blanks stripped."""
    try:
        return raw.decode("utf-8").rstrip(pad).rstrip(end).strip()
    except UnicodeDecodeError as exc:
        raise IsoLayoutError("kargs area is not UTF-8 text: %s" % exc)


def format_kargs_region(kargs: str, size: int, pad: str = "#", end: str = "\n") -> bytes:
    """Region bytes for ``kargs``: ``kargs + end``, then ``pad`` up to ``size`` bytes."""
    text, end_bytes, pad_bytes = kargs.strip().encode("utf-8"), end.encode("utf-8"), pad.encode("utf-8")
    fill, room = size - len(text) - len(end_bytes), size - len(end_bytes)
    if fill < 0:
        raise ignition.CapacityError(f"kernel arguments are {len(text)} bytes, the kargs area holds at most {room}")
    if fill % len(pad_bytes):
        raise IsoLayoutError("kargs pad character %r does not evenly fill the area" % pad)
    return text + end_bytes + pad_bytes * (fill // len(pad_bytes))


def split_kargs(kargs: str) -> list[str]:
    """A kernel command line split into arguments; double quotes protect spaces, as in the kernel."""
    return re.findall(r'(?:"[^"]*"?|[^\s"])+', kargs)


def merge_kargs(current: str, additions: str) -> str:
    """``current`` with each argument of ``additions`` it lacks appended (merging again changes nothing)."""
    args = split_kargs(current)
    return " ".join(args + [arg for arg in dict.fromkeys(split_kargs(additions)) if arg not in args])


def append_kernel_arguments(path: str, kargs: str) -> bool:
    """Append each argument of ``kargs`` not already there to the live kernel arguments of the ISO, in place.

    For a copy the caller owns: every region is checked before the first byte is written, but a crash midway leaves
    a partial edit. Returns whether anything changed (appending the same again changes nothing).
    """
    with open(path, "r+b") as handle:
        layout = read_layout(handle, path)
        if layout.kargs is None:
            raise IsoLayoutError("%s: %s not found; cannot set kernel arguments" % (path, KARGS_NAMES))
        merged, patches = merge_kargs(layout.kargs, kargs), []
        for region in layout.regions:
            try:
                data = format_kargs_region(merged, region.length, region.pad, region.end)
            except ignition.IsoError as exc:
                raise type(exc)("%s: kargs area in %s: %s" % (path, region.path, exc))
            handle.seek(region.offset)
            patches += [] if data == handle.read(region.length) else [(region.offset, data)]
        for offset, data in patches:
            handle.seek(offset)
            handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return bool(patches)


# --- initramfs streams: an ISO's embed area, a PXE initrd -------------------------------------------------------


CpioEntry = collections.namedtuple("CpioEntry", "name mode data")  # one member of a newc archive


class CpioError(ignition.EmbedAreaError):
    """The bytes are not a well-formed newc archive."""


def read_archive(buf: bytes, pos: int = 0) -> tuple[list[CpioEntry], int]:
    """``(entries without the trailer, offset after the trailer)`` of the newc archive at ``pos``."""
    entries: list[CpioEntry] = []
    while True:
        header = buf[pos : pos + 110]
        if len(header) < 110 or header[:6] not in NEWC_MAGICS:
            problem = "truncated cpio header" if len(header) < 110 else f"bad cpio magic {header[:6]!r}"
            raise CpioError(f"{problem} at offset {pos} (expected 070701 newc)")
        try:
            fields = [int(header[6 + 8 * index : 14 + 8 * index], 16) for index in range(13)]
        except ValueError:
            raise CpioError(f"non-hex cpio header field at offset {pos}: {header[6:]!r}")
        name_end, size = pos + 110 + fields[11], fields[6]
        if fields[11] == 0 or name_end > len(buf) or buf[name_end - 1] != 0:
            raise CpioError(f"cpio entry name at offset {pos} is truncated, empty or not NUL-terminated")
        name, start = buf[pos + 110 : name_end - 1].decode("utf-8", "surrogateescape"), (name_end + 3) & ~3
        if start + size > len(buf):
            raise CpioError(f"cpio entry {name!r} at {pos}: {size} data bytes expected, the archive ends first")
        pos = (start + size + 3) & ~3
        if name == "TRAILER!!!":
            return entries, min(pos, len(buf))
        entries.append(CpioEntry(name, fields[1], bytes(buf[start : start + size])))


def iter_initramfs(data: bytes, kinds: list[str] | None = None, nested: bool = False) -> Iterator[CpioEntry]:
    """The entries of every archive in ``data``, in order; ``kinds`` collects ``gzip``, ``xz`` or ``none`` for each."""
    pos = len(data) - len(data.lstrip(b"\0"))
    while pos < len(data):
        kind = "xz" if data.startswith(XZ_MAGIC, pos) else "gzip" if data.startswith(GZIP_MAGIC, pos) else None
        if kind and nested:
            raise ignition.EmbedAreaError(f"compressed stream nested inside a compressed stream at offset {pos}")
        if kind:
            decoder: Any = lzma.LZMADecompressor(lzma.FORMAT_XZ) if kind == "xz" else zlib.decompressobj(16 + 15)
            try:
                payload = decoder.decompress(data[pos:])
            except (lzma.LZMAError, zlib.error, EOFError) as exc:
                raise ignition.EmbedAreaError(f"corrupt {kind} stream at offset {pos}: {exc}")
            if not decoder.eof:
                raise ignition.EmbedAreaError(f"truncated {kind} stream at offset {pos}")
            yield from iter_initramfs(payload, nested=True)
            pos = len(data) - len(decoder.unused_data)
        elif data[pos : pos + 6] in NEWC_MAGICS:
            if pos % 4:  # newc padding counts from the start of the stream: the kernel refuses this too
                raise ignition.EmbedAreaError(f"cpio archive at offset {pos} is not 4-byte aligned")
            entries, pos = read_archive(data, pos)
            yield from entries
        else:
            other = next((kind for magic, kind in OTHER_MAGICS if data.startswith(magic, pos)), None)
            what = f"unsupported {other} stream" if other else f"unrecognised data {data[pos : pos + 8]!r}"
            raise ignition.EmbedAreaError(f"{what} at offset {pos} (expected an xz, gzip or cpio newc archive)")
        if kinds is not None and not nested:
            kinds.append(kind or "none")
        pos = len(data) - len(data[pos:].lstrip(b"\0"))


def unpack_initramfs(data: bytes, kinds: list[str] | None = None) -> dict[str, CpioEntry] | None:
    """``{name: entry}`` of an initramfs stream (a later archive wins, as when the kernel unpacks), None if all zero."""
    entries = iter_initramfs(bytes(data), kinds) if bytes(data).strip(b"\0") else None
    return None if entries is None else {re.sub(r"^(\./)*/*", "", entry.name): entry for entry in entries}


def extract_config(area: bytes, kinds: list[str] | None = None) -> bytes | None:
    """The bytes of ``config.ign`` in an embed area; None when it holds none (all zero, or no such member)."""
    files = unpack_initramfs(area, kinds) or {}
    return files[ignition.CONFIG_NAME].data if ignition.CONFIG_NAME in files else None


def read_pxe_initrd(path: str) -> tuple[dict[str, Any], list[str]]:
    """``(ignition, compression kinds)`` of the Ignition archive appended last to the PXE initrd at ``path``.

    Every place an archive could start is tried from the end backwards: the first that decodes to the end (NUL
    padding aside) and holds ``config.ign`` is the one.
    """
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - APPENDED_WINDOW))
        tail = handle.read()
    magics = (re.escape(magic) for magic in (GZIP_MAGIC + b"\x08", XZ_MAGIC, NEWC_MAGICS[0]))
    starts = sorted({match.start() for match in re.finditer(b"|".join(magics), tail)}, reverse=True)
    for start in starts[:APPENDED_CANDIDATES]:
        kinds: list[str] = []
        try:
            raw = extract_config(tail[start:], kinds)
            if raw is not None:
                return ignition.parse_ignition(raw), kinds
        except ignition.IgnitionContentError as exc:
            raise ignition.IgnitionContentError(f"{path}: appended archive: {exc}")
        except ignition.EmbedAreaError:
            continue
    raise IsoLayoutError(
        f"{path}: no Ignition archive (gzip or xz cpio holding {ignition.CONFIG_NAME}) appended at the end of this "
        "initrd; expected a PXE initrd made by node-joiner --pxe (node.<arch>-initrd.img)"
    )


# --- what an image holds: inspect_iso (day2_iso reads its ISO back with it) and the iso_info module -------------


def inspect_iso(path: str) -> dict[str, Any]:
    """Everything about an add-nodes (or base) ISO as plain data; ``ignition`` holds secrets: never log it."""
    kinds: list[str] = []
    with open(path, "rb") as handle:
        layout = read_layout(handle, path, strict=False)
        (offset, length), name = layout.embed_area, layout.embed_file
        handle.seek(offset)
        try:
            raw = extract_config(handle.read(length), kinds)
            config = None if raw is None else ignition.parse_ignition(raw)
        except (ignition.EmbedAreaError, ignition.IgnitionContentError) as exc:
            raise type(exc)("%s: embed area %s (offset %d, %d bytes): %s" % (path, name, offset, length, exc))
    own = ("kargs", "kargs_default", "volume_id", "boot_architecture", "rootfs_url")
    return dict(
        {key: getattr(layout, key) for key in own},
        ignition=config,
        summary=None if config is None else ignition.summarize_add_nodes_ignition(config),
        embed_area={"file": name, "offset": offset, "length": length, "compression": kinds},
        iso_files={"igninfo": layout.igninfo_path, "kargs": layout.kargs_path},
    )


def _describe(path: str) -> dict[str, Any]:
    """What the image at ``path`` is and is for, without secrets (see iso_info)."""
    with open(path, "rb") as handle:
        head, _skip, descriptor = handle.read(8), handle.seek(16 * SECTOR + 1), handle.read(5)
    info: dict[str, Any] = {"kargs": None, "volume_id": None, "iso_files": None}
    if descriptor == b"CD001":
        info = inspect_iso(path)
        config, arch, kinds = info["ignition"], info["boot_architecture"], info["embed_area"]["compression"]
    elif head.startswith((GZIP_MAGIC, XZ_MAGIC, *NEWC_MAGICS)):
        (config, kinds), arch = read_pxe_initrd(path), "".join(_INITRD_NAME_RE.findall(os.path.basename(path)))
    else:
        what = 'neither an ISO 9660 image (no "CD001" at byte %d) nor an initrd (no gzip, xz or cpio data at its start'
        raise IsoLayoutError(("%s is " + what + ": %r); expected %s") % (path, 16 * SECTOR + 1, head, EXPECTED))
    result = ignition.summarize_add_nodes_ignition(config or {})
    if not result.pop("add_nodes") and config is not None:
        what = "holds an Ignition config without /etc/assisted/add-nodes.env: not an add-nodes image from node-joiner"
        raise IsoLayoutError("%s %s (a day-1 agent ISO or a custom config?); expected %s" % (path, what, EXPECTED))
    source = arch and ("boot layout" if info["iso_files"] else "file name")
    result.update(architecture=result["architecture"] or arch or None, compression=kinds or None, file=path)
    result.update(architecture_source=result["architecture_source"] or source or None, kernel_arguments=info["kargs"])
    result.update(volume_id=info["volume_id"], iso_files=info["iso_files"], rootfs_url=info.get("rootfs_url"))
    result["layout"] = "base-iso" if config is None else "node-iso" if info["iso_files"] else "pxe-initrd"
    return result


def _message(result: dict[str, Any], left: float | None, wanted: float) -> str:
    name = os.path.basename(result["file"])
    if result["layout"] == "base-iso":
        return "%s is a CoreOS live ISO without an embedded config: it is for no cluster and no host" % name
    hosts = ", ".join(h["hostname"] or "/".join(h["mac_addresses"]) for h in result["hosts"]) or "no host"
    message = "%s is for cluster %s (%s), hosts %s" % (name, result["cluster_name"], result["cluster_id"], hosts)
    if left is None:
        return message + "; its token expiry is unknown, so it cannot be trusted to work"
    if left <= 0:
        return message + "; its token expired at %s: build a new image" % result["token_expiry"]
    message += "; its token expires at %s (in %.1f hours): " % (result["token_expiry"], result["valid_for"])
    at_least = "%dh%02dm" % (wanted // 3600, wanted % 3600 // 60) if wanted else "now"
    return message + "it %s for at least %s" % ("works" if result["valid"] else "does NOT work", at_least)


def iso_info(path: str, min_validity: Any = "0", now: datetime.datetime | None = None) -> dict[str, Any]:
    """The iso_info module's result: which cluster and hosts the image at ``path`` is for, and whether its token
    still works for ``min_validity`` (seconds or a duration like ``24h``) from ``now``, without secrets.

    Raises InputError for a bad ``min_validity``, IsoError subclasses (naming the file and what was expected) for
    anything that is not a node ISO, an RHCOS live ISO or a node-joiner PXE initrd; each with ``file`` in its result.
    """
    try:
        wanted = clock.parse_duration(min_validity)
    except ValueError as exc:
        raise InputError("min_validity: %s" % exc, {"file": path})
    try:
        result = _describe(path)
    except OSError as exc:  # a directory too: "Is a directory"
        raise IsoLayoutError(f"{path}: cannot read it ({exc.strerror or exc}); expected {EXPECTED}", {"file": path})
    except ignition.IsoError as exc:
        raise type(exc)(exc.message, dict(exc.result, file=path))
    now = now or clock.utcnow()
    expiry = clock.parse_rfc3339(result["token_expiry"]) if result["token_expiry"] else None
    left = None if expiry is None else (expiry - now).total_seconds()
    valid_for = None if left is None else round(left / 3600.0, 2)
    result.update(valid=left is not None and left >= wanted and left > 0, valid_for=valid_for, changed=False)
    result.update(min_validity=round(wanted / 3600.0, 2), checked_at=clock.format_rfc3339(now))
    return dict(result, message=_message(result, left, wanted))
