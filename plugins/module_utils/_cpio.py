# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reader and writer for the cpio "newc" format (the one the Linux initramfs loader reads).

An entry is a 110-byte ASCII header (magic ``070701`` then 13 eight-digit hex fields), the
NUL-terminated name padded so header+name ends on a 4-byte boundary, then the data padded
to 4 bytes. An entry named ``TRAILER!!!`` ends the archive.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections

NEWC_MAGIC = b"070701"
# "070702" is the same layout with a checksum in the last field; the kernel accepts both.
NEWC_CRC_MAGIC = b"070702"
TRAILER_NAME = "TRAILER!!!"
HEADER_SIZE = 110
REGULAR_FILE_MODE = 0o100644

_FIELDS = (
    "ino", "mode", "uid", "gid", "nlink", "mtime", "filesize",
    "devmajor", "devminor", "rdevmajor", "rdevminor", "namesize", "check",
)

CpioEntry = collections.namedtuple("CpioEntry", ["name", "mode", "data"])


class CpioError(ValueError):
    """The bytes are not a well-formed newc archive."""


def _align4(n):
    return (n + 3) & ~3


def _header(fields):
    values = [fields.get(name, 0) for name in _FIELDS]
    return NEWC_MAGIC + b"".join(b"%08X" % value for value in values)


def _entry_bytes(ino, name, mode, data, mtime):
    encoded_name = name.encode("utf-8") + b"\0"
    head = _header({
        "ino": ino, "mode": mode, "nlink": 1, "mtime": mtime,
        "filesize": len(data), "namesize": len(encoded_name),
    }) + encoded_name
    head += b"\0" * (_align4(len(head)) - len(head))
    return head + data + b"\0" * (_align4(len(data)) - len(data))


def build_archive(files, mtime=0):
    """Return a newc archive holding ``files``.

    ``files`` is an iterable of ``(name, data)`` or ``(name, data, mode)``; the mode defaults
    to a regular file 0644. ``mtime`` defaults to 0 so the same input gives the same bytes
    (an unchanged ISO edit can then be recognised by comparing bytes).
    """
    parts = []
    ino = 0
    for item in files:
        name, data = item[0], bytes(item[1])
        mode = item[2] if len(item) > 2 else REGULAR_FILE_MODE
        if not name or name == TRAILER_NAME:
            raise CpioError("invalid cpio entry name %r" % (name,))
        ino += 1
        parts.append(_entry_bytes(ino, name, mode, data, mtime))
    parts.append(_entry_bytes(0, TRAILER_NAME, 0, b"", 0))
    return b"".join(parts)


def _parse_header(buf, pos):
    raw = bytes(buf[pos:pos + HEADER_SIZE])
    if len(raw) < HEADER_SIZE:
        raise CpioError("truncated cpio header at offset %d" % pos)
    magic = raw[:6]
    if magic not in (NEWC_MAGIC, NEWC_CRC_MAGIC):
        raise CpioError("bad cpio magic %r at offset %d (expected 070701 newc)" % (magic, pos))
    fields = {}
    for index, name in enumerate(_FIELDS):
        text = raw[6 + 8 * index:14 + 8 * index]
        try:
            fields[name] = int(text, 16)
        except ValueError:
            raise CpioError("non-hex cpio header field %s=%r at offset %d" % (name, text, pos))
    return fields


def read_archive(buf, pos=0):
    """Parse one newc archive starting at ``pos``.

    Returns ``(entries, end)`` where ``entries`` is a list of :class:`CpioEntry` (trailer
    excluded, names as stored) and ``end`` is the offset just after the trailer entry.
    """
    entries = []
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
            raise CpioError("cpio entry %r at offset %d: %d data bytes expected, archive ends first"
                            % (name, pos, fields["filesize"]))
        pos = _align4(data_end)
        if name == TRAILER_NAME:
            return entries, min(pos, len(buf))
        entries.append(CpioEntry(name, fields["mode"], bytes(buf[data_start:data_end])))
