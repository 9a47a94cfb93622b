# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reader of the cpio "newc" format (the one the Linux initramfs loader reads), and of initramfs streams: cpio
archives, each optionally xz or gzip compressed, concatenated with NUL padding.

An entry is a 110-byte ASCII header (magic ``070701`` then 13 eight-digit hex fields), the
NUL-terminated name padded so header+name ends on a 4-byte boundary, then the data padded
to 4 bytes. An entry named ``TRAILER!!!`` ends the archive.
"""

from __future__ import annotations

import collections
import lzma
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import EmbedAreaError

NEWC_MAGIC = b"070701"
# "070702" is the same layout with a checksum in the last field; the kernel accepts both.
NEWC_CRC_MAGIC = b"070702"
TRAILER_NAME = "TRAILER!!!"
HEADER_SIZE = 110

_FIELDS = (
    "ino",
    "mode",
    "uid",
    "gid",
    "nlink",
    "mtime",
    "filesize",
    "devmajor",
    "devminor",
    "rdevmajor",
    "rdevminor",
    "namesize",
    "check",
)


class CpioEntry(NamedTuple):
    name: str
    mode: int
    data: bytes


class CpioError(EmbedAreaError):
    """The bytes are not a well-formed newc archive."""


def _align4(n: int) -> int:
    return (n + 3) & ~3


def _parse_header(buf: bytes, pos: int) -> dict[str, int]:
    raw = bytes(buf[pos : pos + HEADER_SIZE])
    if len(raw) < HEADER_SIZE:
        raise CpioError("truncated cpio header at offset %d" % pos)
    magic = raw[:6]
    if magic not in (NEWC_MAGIC, NEWC_CRC_MAGIC):
        raise CpioError("bad cpio magic %r at offset %d (expected 070701 newc)" % (magic, pos))
    fields: dict[str, int] = {}
    for index, name in enumerate(_FIELDS):
        text = raw[6 + 8 * index : 14 + 8 * index]
        try:
            fields[name] = int(text, 16)
        except ValueError:
            raise CpioError("non-hex cpio header field %s=%r at offset %d" % (name, text, pos))
    return fields


def read_archive(buf: bytes, pos: int = 0) -> tuple[list[CpioEntry], int]:
    """Parse one newc archive starting at ``pos``.

    Returns ``(entries, end)`` where ``entries`` is a list of :class:`CpioEntry` (trailer
    excluded, names as stored) and ``end`` is the offset just after the trailer entry.
    """
    entries: list[CpioEntry] = []
    while True:
        fields = _parse_header(buf, pos)
        name_start = pos + HEADER_SIZE
        name_end = name_start + fields["namesize"]
        if fields["namesize"] == 0 or name_end > len(buf):
            raise CpioError("truncated or empty cpio entry name at offset %d" % pos)
        raw_name = bytes(buf[name_start:name_end])
        if not raw_name.endswith(b"\0"):
            raise CpioError("cpio entry name at offset %d is not NUL-terminated" % pos)
        name = raw_name[:-1].decode("utf-8", "surrogateescape")
        data_start = _align4(name_end)
        data_end = data_start + fields["filesize"]
        if data_end > len(buf):
            raise CpioError(
                "cpio entry %r at offset %d: %d data bytes expected, archive ends first"
                % (name, pos, fields["filesize"])
            )
        pos = _align4(data_end)
        if name == TRAILER_NAME:
            return entries, min(pos, len(buf))
        entries.append(CpioEntry(name, fields["mode"], bytes(buf[data_start:data_end])))


# --- initramfs streams ------------------------------------------------------------------------

XZ_MAGIC = b"\xfd7zXZ\x00"
GZIP_MAGIC = b"\x1f\x8b"
_OTHER_COMPRESSIONS = (
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\x02\x21\x4c\x18", "lz4"),
    (b"\x89LZO", "lzo"),
)
# How far back from the end of an initrd to look for an appended archive, and how many starts to try.
APPENDED_SEARCH_WINDOW = 16 << 20
APPENDED_MAX_CANDIDATES = 256


def _decompress(data: bytes, pos: int) -> tuple[bytes, int, str]:
    """Decompress the xz or gzip stream at ``pos``; return ``(payload, bytes consumed, kind)``."""
    decompressor: lzma.LZMADecompressor | zlib._Decompress
    error: type[Exception]
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
    return payload, len(chunk) - len(decompressor.unused_data), kind


def _skip_nul(data: bytes, pos: int) -> int:
    return len(data) - len(data[pos:].lstrip(b"\0"))


def iter_initramfs(data: bytes, kinds: list[str] | None = None, allow_compressed: bool = True) -> Iterator[CpioEntry]:
    """Yield the cpio entries of every archive in ``data``, in order.

    Archives may be concatenated, each optionally xz or gzip compressed, with NUL padding between and
    after them, as the kernel's initramfs loader accepts. ``kinds`` (a list) collects the compression of
    each archive met (``xz``, ``gzip`` or ``none``). Raises EmbedAreaError on anything else.
    """
    pos = _skip_nul(data, 0)
    while pos < len(data):
        if data.startswith(XZ_MAGIC, pos) or data.startswith(GZIP_MAGIC, pos):
            if not allow_compressed:
                raise EmbedAreaError("compressed stream nested inside a compressed stream at offset %d" % pos)
            payload, used, kind = _decompress(data, pos)
            if kinds is not None:
                kinds.append(kind)
            yield from iter_initramfs(payload, allow_compressed=False)
            pos += used
        elif data[pos : pos + 6] in (NEWC_MAGIC, NEWC_CRC_MAGIC):
            if pos % 4:
                # cpio padding is relative to the start of the stream; the kernel rejects this too.
                raise EmbedAreaError("cpio archive at offset %d is not 4-byte aligned" % pos)
            entries, pos = read_archive(data, pos)
            if kinds is not None and allow_compressed:
                kinds.append("none")
            yield from entries
        else:
            for magic, kind in _OTHER_COMPRESSIONS:
                if data.startswith(magic, pos):
                    raise EmbedAreaError("unsupported %s stream at offset %d (expected xz or gzip)" % (kind, pos))
            raise EmbedAreaError(
                "unrecognised data %r at offset %d (expected an xz, gzip or cpio newc archive)"
                % (bytes(data[pos : pos + 8]), pos)
            )
        pos = _skip_nul(data, pos)


def normalize_member_name(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def unpack_initramfs(data: bytes, kinds: list[str] | None = None) -> dict[str, CpioEntry] | None:
    """``{name: CpioEntry}`` of the files in an initramfs stream, or None if it is all zero.

    Later archives override earlier ones, as when the kernel unpacks them in order.
    """
    data = bytes(data)
    if data.count(b"\0") == len(data):
        return None
    files: dict[str, CpioEntry] = collections.OrderedDict()
    for entry in iter_initramfs(data, kinds):
        files[normalize_member_name(entry.name)] = entry
    return files


def _candidate_starts(data: bytes) -> list[int]:
    starts: set[int] = set()
    for magic in (GZIP_MAGIC + b"\x08", XZ_MAGIC, NEWC_MAGIC):
        pos = len(data)
        while len(starts) < APPENDED_MAX_CANDIDATES * 3:
            pos = data.rfind(magic, 0, pos)
            if pos < 0:
                break
            starts.add(pos)
    return sorted(starts, reverse=True)[:APPENDED_MAX_CANDIDATES]


def find_appended_archive(tail: bytes, member: str) -> tuple[dict[str, CpioEntry], list[str], int] | None:
    """The archive appended last to an initrd whose end is ``tail``, if it holds ``member``.

    Tries every place an archive could start, from the end backwards, and returns
    ``({name: CpioEntry}, [compression kinds], start offset in tail)`` for the first one that decodes
    up to the end (NUL padding aside) and holds ``member``; None when there is none.
    """
    for start in _candidate_starts(tail):
        kinds: list[str] = []
        try:
            files = unpack_initramfs(tail[start:], kinds)
        except EmbedAreaError:
            continue
        if files and member in files:
            return files, kinds, start
    return None
