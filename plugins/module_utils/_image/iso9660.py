# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small, tolerant, read-only ISO 9660 reader: where a file's bytes are, found by any of its names.

Only the volume descriptors and the directory records are read (like coreos-installer's own parser), so
images written by other tools (go-diskfs in node-joiner, genisoimage, xorriso) are read alike and nothing
else about them (El Torito, path tables, hybrid tables) can make the lookup fail.

A path component is matched, in this order, by:

* its Rock Ridge name (primary tree) or Joliet name, exactly;
* the same name with its extension cut to 3 characters: node-joiner renames every file whose extension
  is longer than that (``coreos/igninfo.json`` becomes ``coreos/igninfo.jso``) before it rebuilds the ISO
  with Rock Ridge and without Joliet -- openshift/installer
  pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6 (``normalizeFilesExtension``);
* its ISO 9660 primary (Level 1, upper-case 8.3) name, version (``;1``) and trailing dot ignored, which is
  how coreos-installer looks up ``COREOS/IGNINFO.JSO`` and ``COREOS/KARGS.JSO`` -- coreos/coreos-installer
  src/live/embed.rs@bee4500186302e3773afe969ecabb441f2d77279 and
  src/iso9660.rs@bee4500186302e3773afe969ecabb441f2d77279.
"""

from __future__ import annotations

import re
import struct
from typing import IO, NamedTuple

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import IsoLayoutError

SECTOR_SIZE = 2048
FIRST_DESCRIPTOR_SECTOR = 16
MAX_DESCRIPTORS = 64
JOLIET_ESCAPES = (b"%/@", b"%/C", b"%/E")
MAX_DIRECTORY_BYTES = 64 << 20
MAX_CONTINUATIONS = 32
LEVEL1_BASE, LEVEL1_EXT = 8, 3


class Record(NamedTuple):
    """A directory record: ``name`` is the Rock Ridge name (primary tree) or Joliet name, None when it has none;
    ``primary`` the ISO 9660 identifier without its version and trailing dot (primary tree only)."""

    name: str | None
    primary: str | None
    is_dir: bool
    extent: int
    size: int


class Region(NamedTuple):
    offset: int
    length: int


_LEVEL1_INVALID = re.compile(r"[^A-Z0-9_]")


def _le32(data: bytes, offset: int) -> int:
    return int(struct.unpack_from("<I", data, offset)[0])


def truncated_extension(name: str) -> str:
    """``name`` with an extension longer than 3 characters cut to 3 (node-joiner's renaming), else ``name``."""
    base, dot, ext = name.rpartition(".")
    if not dot or not base or len(ext) <= LEVEL1_EXT:
        return name
    return base + "." + ext[:LEVEL1_EXT]


def level1_name(name: str) -> str:
    """The ISO 9660 Level 1 (upper-case 8.3) form of a file or directory name."""
    base, dot, ext = name.rpartition(".")
    if not dot or not base:
        base, ext = name, ""
    base = _LEVEL1_INVALID.sub("_", base.upper())[:LEVEL1_BASE]
    ext = _LEVEL1_INVALID.sub("_", ext.upper())[:LEVEL1_EXT]
    return base + ("." + ext if ext else "")


def _primary_identifier(raw: bytes) -> str:
    return raw.decode("ascii", "replace").split(";", 1)[0].rstrip(".")


class IsoImage:
    """The directory trees of the ISO 9660 image open (binary, readable) as ``fp``; ``label`` names it in errors."""

    def __init__(self, fp: IO[bytes], label: str = "ISO") -> None:
        self.fp = fp
        self.label = label
        self.block_size = SECTOR_SIZE
        self.volume_id: str | None = None
        self.has_joliet = False
        self.has_rock_ridge = False
        self._listings: dict[tuple[bool, int], list[Record]] = {}
        self._roots: list[tuple[bool, Record]] = []  # (joliet?, root Record)
        self._susp_skip: int | None = None
        self._read_descriptors()

    # --- raw access --------------------------------------------------------------------------

    def read(self, offset: int, length: int, what: str) -> bytes:
        self.fp.seek(offset)
        data = self.fp.read(length)
        if len(data) != length:
            raise IsoLayoutError(
                "%s: %s: %d bytes expected at offset %d, the image ends first" % (self.label, what, length, offset)
            )
        return data

    def _read_descriptors(self) -> None:
        primary: bytes | None = None
        joliet: bytes | None = None
        for index in range(MAX_DESCRIPTORS):
            offset = (FIRST_DESCRIPTOR_SECTOR + index) * SECTOR_SIZE
            self.fp.seek(offset)
            data = self.fp.read(SECTOR_SIZE)
            if len(data) < SECTOR_SIZE or data[1:6] != b"CD001":
                if index == 0:
                    raise IsoLayoutError(
                        '%s: not an ISO 9660 image (no volume descriptor "CD001" at byte %d)' % (self.label, offset)
                    )
                break
            kind = bytearray(data[:1])[0]
            if kind == 255:
                break
            if kind == 1 and primary is None:
                primary = data
            elif kind == 2 and joliet is None and any(esc in data[88:120] for esc in JOLIET_ESCAPES):
                joliet = data
        if primary is None:
            raise IsoLayoutError("%s: not an ISO 9660 image (no primary volume descriptor)" % self.label)
        self.block_size = struct.unpack_from("<H", primary, 128)[0] or SECTOR_SIZE
        self.volume_id = primary[40:72].decode("ascii", "replace").strip() or None
        root = self._root(primary)
        self._roots.append((False, root))
        self._susp_skip = self._detect_susp(root)
        if joliet is not None:
            self.has_joliet = True
            self._roots.append((True, self._root(joliet)))

    def _root(self, descriptor: bytes) -> Record:
        record = descriptor[156:190]
        return Record("", "", True, _le32(record, 2), _le32(record, 10))

    def _detect_susp(self, root: Record) -> int | None:
        """The SUSP "SP" entry of the root's "." record says Rock Ridge is used, and how many bytes to skip."""
        first = self.read(root.extent * self.block_size, min(root.size, self.block_size), "root directory")
        length = bytearray(first[:1])[0]
        if length < 34:
            return None
        name_length = bytearray(first[32:33])[0]
        area = first[33 + name_length + (1 - name_length % 2) : length]
        if area[:2] == b"SP" and len(area) >= 7 and area[4:6] == b"\xbe\xef":
            self.has_rock_ridge = True
            return bytearray(area[6:7])[0]
        return None

    # --- directories -------------------------------------------------------------------------

    def listdir(self, directory: Record, joliet: bool = False) -> list[Record]:
        """The Records of the directory ``directory`` (a Record), "." and ".." left out."""
        key = (joliet, directory.extent)
        if key not in self._listings:
            self._listings[key] = self._parse_directory(directory, joliet)
        return self._listings[key]

    def _parse_directory(self, directory: Record, joliet: bool) -> list[Record]:
        size = min(directory.size, MAX_DIRECTORY_BYTES)
        data = self.read(directory.extent * self.block_size, size, "directory at block %d" % directory.extent)
        records: list[Record] = []
        pos = 0
        while pos < len(data):
            length = bytearray(data[pos : pos + 1])[0]
            if length == 0:  # records never cross a sector: the rest of this one is padding
                pos = (pos // self.block_size + 1) * self.block_size
                continue
            if length < 34 or pos + length > len(data):
                raise IsoLayoutError(
                    "%s: corrupt directory record at byte %d of the directory at block %d"
                    % (self.label, pos, directory.extent)
                )
            record = data[pos : pos + length]
            pos += length
            name_length = bytearray(record[32:33])[0]
            identifier = record[33 : 33 + name_length]
            if identifier in (b"\0", b"\1"):
                continue
            is_dir = bool(bytearray(record[25:26])[0] & 0x02)
            name: str | None = None
            primary: str | None = None
            if joliet:
                name = identifier.decode("utf-16-be", "replace").split(";", 1)[0]
            else:
                primary = _primary_identifier(identifier)
                if self._susp_skip is not None:
                    start = 33 + name_length + (1 - name_length % 2) + self._susp_skip
                    name = self._rock_ridge_name(record[start:])
            records.append(Record(name, primary, is_dir, _le32(record, 2), _le32(record, 10)))
        return records

    def _rock_ridge_name(self, area: bytes) -> str | None:
        """The Rock Ridge "NM" name in a System Use area, following "CE" continuation areas."""
        parts: list[bytes] = []
        areas = [area]
        hops = 0
        while areas:
            current = areas.pop(0)
            pos = 0
            while pos + 4 <= len(current):
                signature, length = current[pos : pos + 2], bytearray(current[pos + 2 : pos + 3])[0]
                if length < 4 or pos + length > len(current) or signature == b"ST":
                    break
                entry = current[pos : pos + length]
                if signature == b"NM" and length >= 5 and not bytearray(entry[4:5])[0] & 0x06:
                    parts.append(entry[5:])
                elif signature == b"CE" and length >= 28 and hops < MAX_CONTINUATIONS:
                    hops += 1
                    areas.append(
                        self.read(
                            _le32(entry, 4) * self.block_size + _le32(entry, 12),
                            _le32(entry, 20),
                            "Rock Ridge continuation area",
                        )
                    )
                pos += length
        return b"".join(parts).decode("utf-8", "replace") if parts else None

    # --- lookup ------------------------------------------------------------------------------

    @staticmethod
    def _match(records: list[Record], component: str, by_primary: bool) -> Record | None:
        exact = [component, truncated_extension(component)]
        if not by_primary:
            for wanted in exact:
                for record in records:
                    if record.name == wanted:
                        return record
            return None
        primaries = set([level1_name(component)] + [name.upper() for name in exact])
        for record in records:
            if record.primary is not None and record.primary.upper() in primaries:
                return record
        return None

    def _walk(self, path: str) -> tuple[Record | None, str | None]:
        """``(Record, names as stored)`` of ``path``: Rock Ridge or Joliet names first, then primary names."""
        components = [part.split(";", 1)[0] for part in path.strip("/").split("/") if part]
        if not components:
            return None, None
        for by_primary in (False, True):
            for joliet, root in self._roots:
                current: Record | None = root
                names: list[str] = []
                for component in components:
                    if current is None or not current.is_dir:
                        current = None
                        break
                    current = self._match(self.listdir(current, joliet), component, by_primary)
                    if current is None:
                        break
                    names.append((current.primary if by_primary else current.name) or "")
                if current is not None:
                    return current, "/".join(names)
        return None, None

    def find(self, path: str) -> Record | None:
        """The Record of ``path`` (``coreos/igninfo.json``, ``/COREOS/IGNINFO.JSO;1``...), or None."""
        return self._walk(path)[0]

    def file_region(self, path: str) -> Region | None:
        """``Region(offset, length)`` of the file ``path``, or None when there is no such file.

        Raises IsoLayoutError when ``path`` is a directory.
        """
        record = self.find(path)
        if record is None:
            return None
        if record.is_dir:
            raise IsoLayoutError("%s: %s is a directory, expected a file" % (self.label, path))
        return Region(record.extent * self.block_size, record.size)

    def exists(self, path: str) -> bool:
        return self.find(path) is not None

    def stored_name(self, path: str) -> str | None:
        """The path as the image spells it (Rock Ridge or Joliet names, else primary names), or None."""
        return self._walk(path)[1]
