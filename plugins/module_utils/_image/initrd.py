# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Initramfs streams as the Linux initramfs loader reads them: cpio "newc" archives, each optionally gzip or xz
compressed, concatenated with NUL padding; the Ignition config in an ISO's embed area or appended to a PXE initrd.

A newc entry is a 110-byte ASCII header (magic ``070701``, or ``070702`` with a checksum, then 13 eight-digit hex
fields), the NUL-terminated name padded to 4 bytes, then the data padded to 4 bytes; ``TRAILER!!!`` ends an archive.
node-joiner's PXE initrd ``node.<arch>-initrd.img`` is the base ``images/pxeboot/initrd.img`` with the Ignition
archive appended -- openshift/installer pkg/asset/agent/image/agentpxefiles.go@84c3bbc9d011c5339af99235decb0f31bea501a7.
"""

from __future__ import annotations

import lzma
import os
import re
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import errors
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import CONFIG_NAME, parse_ignition

NEWC_MAGICS = (b"070701", b"070702")
GZIP_MAGIC, XZ_MAGIC = b"\x1f\x8b", b"\xfd7zXZ\x00"
OTHER_MAGICS = ((b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bzip2"), (b"\x02\x21\x4c\x18", "lz4"), (b"\x89LZO", "lzo"))
# How far back from the end of a PXE initrd to look for the appended archive, and how many starts to try.
APPENDED_WINDOW, APPENDED_CANDIDATES = 16 << 20, 256


class CpioEntry(NamedTuple):
    name: str
    mode: int
    data: bytes


class CpioError(errors.EmbedAreaError):
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
            raise errors.EmbedAreaError(f"compressed stream nested inside a compressed stream at offset {pos}")
        if kind:
            decoder: Any = lzma.LZMADecompressor(lzma.FORMAT_XZ) if kind == "xz" else zlib.decompressobj(16 + 15)
            try:
                payload = decoder.decompress(data[pos:])
            except (lzma.LZMAError, zlib.error, EOFError) as exc:
                raise errors.EmbedAreaError(f"corrupt {kind} stream at offset {pos}: {exc}")
            if not decoder.eof:
                raise errors.EmbedAreaError(f"truncated {kind} stream at offset {pos}")
            yield from iter_initramfs(payload, nested=True)
            pos = len(data) - len(decoder.unused_data)
        elif data[pos : pos + 6] in NEWC_MAGICS:
            if pos % 4:  # newc padding counts from the start of the stream: the kernel refuses this too
                raise errors.EmbedAreaError(f"cpio archive at offset {pos} is not 4-byte aligned")
            entries, pos = read_archive(data, pos)
            yield from entries
        else:
            other = next((kind for magic, kind in OTHER_MAGICS if data.startswith(magic, pos)), None)
            what = f"unsupported {other} stream" if other else f"unrecognised data {data[pos : pos + 8]!r}"
            raise errors.EmbedAreaError(f"{what} at offset {pos} (expected an xz, gzip or cpio newc archive)")
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
    return files[CONFIG_NAME].data if CONFIG_NAME in files else None


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
                return parse_ignition(raw), kinds
        except errors.IgnitionContentError as exc:
            raise errors.IgnitionContentError(f"{path}: appended archive: {exc}")
        except errors.EmbedAreaError:
            continue
    raise errors.IsoLayoutError(
        f"{path}: no Ignition archive (gzip or xz cpio holding {CONFIG_NAME}) appended at the end of this initrd; "
        "expected a PXE initrd made by node-joiner --pxe (node.<arch>-initrd.img)"
    )
