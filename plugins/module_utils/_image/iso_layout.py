# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a CoreOS live ISO keeps its Ignition embed area and kernel-argument areas.

* ``coreos/igninfo.json``: ``{"file", "offset"?, "length"?}`` names the embed area; offset and length both 0
  (or missing) mean the whole file. The area holds a gzip, xz or plain cpio newc archive with ``config.ign``
  followed by zeros; an all-zero area means "no embedded config" (the base RHCOS ISO).
* ``coreos/kargs.json``: ``{"default", "files": [{"path", "offset", "pad"?, "end"?}], "size"}``; every region holds
  ``kargs + end + pad * (size - len(kargs) - 1)``.

node-joiner (4.17-4.21) cuts every extension longer than 3 characters, so its ISOs hold ``coreos/igninfo.jso`` and
``coreos/kargs.jso`` (Rock Ridge; primary ``COREOS/IGNINFO.JSO;1``, no Joliet) -- openshift/installer
pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6; the area it writes is a gzip cpio
padded with zeros -- openshift/assisted-image-service pkg/isoeditor/stream.go@a55e383a69c5e0ba00d4ca875e8d2b9ed520efcc.
Every name is looked up in both spellings (see _iso9660), as coreos-installer finds ``COREOS/IGNINFO.JSO`` and
``COREOS/KARGS.JSO`` -- coreos/coreos-installer src/live/embed.rs@bee4500186302e3773afe969ecabb441f2d77279.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from typing import IO, Any, NamedTuple

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import (
    IsoLayoutError,
    KargsMismatchError,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso9660 import IsoImage, Region
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.kargs import (
    DEFAULT_KARGS_END,
    DEFAULT_KARGS_PAD,
    KARGS_MAX_SIZE,
    parse_kargs_region,
)

IGNINFO_PATH = "coreos/igninfo.json"
KARGS_PATH = "coreos/kargs.json"
IGNINFO_NAMES = "coreos/igninfo.json (igninfo.jso in a node-joiner ISO)"
KARGS_NAMES = "coreos/kargs.json (kargs.jso in a node-joiner ISO)"


class KargsRegion(NamedTuple):
    path: str
    offset: int
    length: int
    pad: str
    end: str


class KargsLayout(NamedTuple):
    default: str
    size: int
    regions: tuple[KargsRegion, ...]
    stored_path: str | None


class IsoLayout(NamedTuple):
    embed_file: str
    embed_area: Region
    kargs: KargsLayout | None
    igninfo_path: str | None
    volume_id: str | None
    architecture: str | None


# What marks the boot layout of each architecture in an RHCOS live ISO -- coreos/coreos-assembler
# src/cmd-buildextend-live@0152fcab918f3ab72e19ad3abeff622f9bf026fc: s390x boots images/cdboot.img with
# generic.ins, x86_64 has isolinux (BIOS), ppc64le is made by grub2-mkrescue (boot/grub, no EFI image).
PE_MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64"}
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 21: "ppc64le", 22: "s390x"}


def _read_json(image: IsoImage, path: str, names: str) -> tuple[dict[str, Any] | None, str | None]:
    region = image.file_region(path)
    if region is None:
        return None, None
    raw = image.read(region.offset, region.length, path)
    stored = image.stored_name(path)
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise IsoLayoutError("%s: %s is not valid JSON: %s" % (image.label, stored, exc))
    if not isinstance(value, dict):
        raise IsoLayoutError("%s: %s must hold a JSON object (%s)" % (image.label, stored, names))
    return value, stored


def _as_int(value: Any) -> int | None:
    """``value`` when it is a JSON integer (not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _embed_area(image: IsoImage) -> tuple[str, Region, str | None]:
    info, stored = _read_json(image, IGNINFO_PATH, IGNINFO_NAMES)
    name = image.label
    if info is None:
        raise IsoLayoutError(
            "%s: %s not found; not a CoreOS live ISO with an Ignition embed area" % (name, IGNINFO_NAMES)
        )
    embed_file = info.get("file")
    offset = _as_int(info.get("offset") or 0)
    if not isinstance(embed_file, str) or not embed_file:
        raise IsoLayoutError('%s: %s: "file" must be a non-empty string' % (name, stored))
    if offset is None or offset < 0:
        raise IsoLayoutError('%s: %s: "offset" must be a non-negative integer' % (name, stored))
    region = image.file_region(embed_file)
    if region is None:
        raise IsoLayoutError("%s: embed area file %s named by %s not found" % (name, embed_file, stored))
    length = _as_int(info.get("length") or region.length - offset)
    if length is None or length <= 0 or offset + length > region.length:
        raise IsoLayoutError(
            "%s: %s: area offset %r length %r does not fit in %s (%d bytes)"
            % (name, stored, offset, length, embed_file, region.length)
        )
    return embed_file, Region(region.offset + offset, length), stored


def _single_char(value: Any, default: str, field: str, name: str, stored: str | None) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or len(value) != 1:
        raise IsoLayoutError('%s: %s: "%s" must be a single character, got %r' % (name, stored, field, value))
    return value


def _kargs_layout(image: IsoImage) -> KargsLayout | None:
    info, stored = _read_json(image, KARGS_PATH, KARGS_NAMES)
    name = image.label
    if info is None:
        return None
    default, size, files = info.get("default"), _as_int(info.get("size")), info.get("files")
    if not isinstance(default, str):
        raise IsoLayoutError('%s: %s: "default" must be a string' % (name, stored))
    if size is None or not 0 < size <= KARGS_MAX_SIZE:
        raise IsoLayoutError(
            '%s: %s: "size" must be an integer from 1 to %d, got %r' % (name, stored, KARGS_MAX_SIZE, info.get("size"))
        )
    if len(default.encode("utf-8")) > size:
        raise IsoLayoutError(
            "%s: %s: default kargs (%d bytes) larger than the area (%d bytes)"
            % (name, stored, len(default.encode("utf-8")), size)
        )
    if not isinstance(files, list) or not files:
        raise IsoLayoutError('%s: %s: "files" must be a non-empty list' % (name, stored))
    regions: list[KargsRegion] = []
    for entry in files:
        path = entry.get("path") if isinstance(entry, dict) else None
        offset = _as_int(entry.get("offset")) if isinstance(entry, dict) else None
        if not isinstance(path, str) or offset is None or offset < 0:
            raise IsoLayoutError(
                '%s: %s: each file needs a "path" and a non-negative "offset", got %r' % (name, stored, entry)
            )
        region = image.file_region(path)
        if region is None:
            raise IsoLayoutError("%s: kargs file %s named by %s not found" % (name, path, stored))
        if offset + size > region.length:
            raise IsoLayoutError(
                "%s: %s: kargs area at offset %d (%d bytes) runs past the end of %s (%d bytes)"
                % (name, stored, offset, size, path, region.length)
            )
        regions.append(
            KargsRegion(
                path,
                region.offset + offset,
                size,
                _single_char(entry.get("pad"), DEFAULT_KARGS_PAD, "pad", name, stored),
                _single_char(entry.get("end"), DEFAULT_KARGS_END, "end", name, stored),
            )
        )
    return KargsLayout(default, size, tuple(regions), stored)


def _kernel_architecture(image: IsoImage) -> str | None:
    """Architecture of images/pxeboot/vmlinuz from its header (PE/EFI stub, ELF, gzip-compressed arm64 Image)."""
    region = image.file_region("images/pxeboot/vmlinuz")
    if region is None or region.length < 64:
        return None
    head = image.read(region.offset, min(region.length, 65536), "images/pxeboot/vmlinuz")
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
        except zlib.error:
            return None
    if head[0x38:0x3C] == b"ARMd":
        return "aarch64"
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        return ELF_MACHINES.get(struct.unpack_from("<H" if head[5:6] == b"\x01" else ">H", head, 18)[0])
    if head[:2] == b"MZ" and len(head) >= 0x40:
        pe = struct.unpack_from("<I", head, 0x3C)[0]
        if pe > 0 and pe + 6 <= len(head) and head[pe : pe + 4] == b"PE\0\0":
            return PE_MACHINES.get(struct.unpack_from("<H", head, pe + 4)[0])
    return None


def boot_architecture(image: IsoImage) -> str | None:
    """The architecture the ISO boots, from its boot layout and kernel header; None when it cannot tell."""
    if image.exists("images/cdboot.img") or image.exists("generic.ins"):
        return "s390x"
    if image.exists("isolinux/isolinux.bin"):
        return "x86_64"
    if image.exists("ppc/bootinfo.txt") or (
        image.exists("boot/grub/grub.cfg") and not image.exists("images/efiboot.img")
    ):
        return "ppc64le"
    return _kernel_architecture(image)


def read_layout(fp: IO[bytes], name: str = "ISO") -> IsoLayout:
    """Locate the embed area and kargs regions of the ISO open (binary, readable) as ``fp``.

    ``name`` is used in error messages. ``kargs`` is None when the ISO has no kargs.json.
    """
    image = IsoImage(fp, name)
    embed_file, area, igninfo_path = _embed_area(image)
    kargs = _kargs_layout(image)
    fp.seek(0, os.SEEK_END)
    image_size = fp.tell()
    regions: list[tuple[Any, str]] = [(area, embed_file)]
    regions += [(region, region.path) for region in (kargs.regions if kargs else ())]
    for region, path in regions:
        if region.offset + region.length > image_size:
            raise IsoLayoutError(
                "%s: area of %s ends at byte %d, past the end of the image (%d bytes)"
                % (name, path, region.offset + region.length, image_size)
            )
    _check_no_overlap(regions, name)
    return IsoLayout(embed_file, area, kargs, igninfo_path, image.volume_id, boot_architecture(image))


def _check_no_overlap(regions: list[tuple[Any, str]], name: str) -> None:
    ordered = sorted(regions, key=lambda item: item[0].offset)
    for (first, first_path), (second, second_path) in zip(ordered, ordered[1:]):
        if first.offset + first.length > second.offset:
            raise IsoLayoutError("%s: the areas in %s and %s overlap" % (name, first_path, second_path))


def read_exact(fp: IO[bytes], offset: int, length: int, what: str) -> bytes:
    fp.seek(offset)
    data = fp.read(length)
    if len(data) != length:
        raise IsoLayoutError("%s: %d bytes expected at offset %d, the image ends first" % (what, length, offset))
    return data


def current_kargs(fp: IO[bytes], layout: IsoLayout, name: str = "ISO") -> str:
    """Kernel arguments of the ISO open as ``fp``; every region must hold the same ones."""
    if layout.kargs is None:
        raise IsoLayoutError("%s: %s not found; this ISO has no kernel-argument areas" % (name, KARGS_NAMES))
    found = []
    for region in layout.kargs.regions:
        raw = read_exact(fp, region.offset, region.length, "%s: kargs area in %s" % (name, region.path))
        try:
            found.append((region.path, parse_kargs_region(raw, region.pad, region.end)))
        except IsoLayoutError as exc:
            raise IsoLayoutError("%s: %s: %s" % (name, region.path, exc))
    first_path, first = found[0]
    for path, kargs in found[1:]:
        if kargs != first:
            raise KargsMismatchError(
                "%s: kargs areas disagree: %s has %r but %s has %r" % (name, first_path, first, path, kargs)
            )
    return first
