# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the Ignition embed area of a CoreOS live ISO, and append to its kernel arguments in place.

The ISO is never rebuilt: files are located read-only (iso9660.py; extent x 2048 is the byte offset), and the one
edit overwrites only the kernel-argument regions, so the hybrid MBR/GPT and El Torito records stay byte-identical.
Where the areas are: iso_layout.py (node-joiner's ``igninfo.jso`` and ``kargs.jso`` as well as the base ISO's
``.json`` names).

Errors are :class:`IsoError` subclasses whose messages name the file and what was expected.
"""

from __future__ import annotations

import os
from typing import IO, Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.cpio import unpack_initramfs
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import (
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
    IsoLayout,
    current_kargs,
    read_exact,
    read_layout,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.kargs import format_kargs_region, merge_kargs


def extract_config(data: bytes, kinds: list[str] | None = None) -> bytes | None:
    """The bytes of ``config.ign`` in an embed area, or None when it holds none (all zero, or no such member).

    ``kinds`` (a list) collects the compression of each archive (``gzip``, ``xz``, ``none``).
    """
    files = unpack_initramfs(data, kinds)
    if not files or CONFIG_NAME not in files:
        return None
    return files[CONFIG_NAME].data


def _read_config(fp: IO[bytes], layout: IsoLayout, name: str, kinds: list[str]) -> bytes | None:
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


def inspect_iso(iso_path: str) -> dict[str, Any]:
    """Everything a caller wants to know about an add-nodes ISO, as plain data.

    ``ignition`` holds secrets (pull secret, tokens): callers must not log it. ``summary`` never does.
    """
    kinds: list[str] = []
    with open(iso_path, "rb") as fp:
        layout = read_layout(fp, iso_path)
        raw = _read_config(fp, layout, iso_path, kinds)
        kargs = current_kargs(fp, layout, iso_path) if layout.kargs else None
    ignition = None
    summary = None
    if raw is not None:
        try:
            ignition = parse_ignition(raw)
            summary = summarize_add_nodes_ignition(ignition)
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


def append_kernel_arguments(iso_path: str, kargs: str) -> bool:
    """Append each argument of ``kargs`` not already there to the live kernel arguments of the ISO, in place.

    For a temporary copy the caller owns: every region is checked before the first byte is written, but a crash
    midway leaves a partial edit. Returns whether anything changed (appending the same again changes nothing).
    """
    with open(iso_path, "r+b") as fp:
        layout = read_layout(fp, iso_path)
        if layout.kargs is None:
            raise IsoLayoutError("%s: %s not found; cannot set kernel arguments" % (iso_path, KARGS_NAMES))
        merged = merge_kargs(current_kargs(fp, layout, iso_path), kargs)
        patches = []
        for region in layout.kargs.regions:
            where = "%s: kargs area in %s" % (iso_path, region.path)
            try:
                data = format_kargs_region(merged, region.length, region.pad, region.end)
            except IsoError as exc:
                raise type(exc)("%s: %s" % (where, exc))
            if data != read_exact(fp, region.offset, region.length, where):
                patches.append((region.offset, data))
        for offset, data in patches:
            fp.seek(offset)
            fp.write(data)
        fp.flush()
        os.fsync(fp.fileno())
    return bool(patches)
