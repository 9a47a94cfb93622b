# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which hosts a node image is for, and whether it still works: the logic of the iso_info module.

Reads a node ISO (``node.<arch>.iso``), the base RHCOS live ISO it was made from, or the PXE initrd
``node.<arch>-initrd.img``, which is the base ``images/pxeboot/initrd.img`` with the Ignition archive appended --
openshift/installer pkg/asset/agent/image/agentpxefiles.go@84c3bbc9d011c5339af99235decb0f31bea501a7. Never
returns a secret (the embedded config holds the pull secret and the agent tokens).
"""

from __future__ import annotations

import datetime
import os
import re
import stat
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import (
    format_rfc3339,
    parse_duration,
    parse_rfc3339,
    utcnow,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.cpio import (
    APPENDED_SEARCH_WINDOW,
    GZIP_MAGIC,
    NEWC_MAGIC,
    XZ_MAGIC,
    find_appended_archive,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import (
    IgnitionContentError,
    IsoError,
    IsoLayoutError,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import (
    CONFIG_NAME,
    parse_ignition,
    summarize_add_nodes_ignition,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso import inspect_iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso9660 import (
    FIRST_DESCRIPTOR_SECTOR,
    SECTOR_SIZE,
)

LAYOUT_NODE_ISO = "node-iso"
LAYOUT_BASE_ISO = "base-iso"
LAYOUT_PXE_INITRD = "pxe-initrd"
_INITRD_NAME_RE = re.compile(r"^(?:node|agent)\.([a-z0-9_]+)-initrd\.img$")
EXPECTED = "a node ISO (node.<arch>.iso), the RHCOS live ISO or a PXE initrd (node.<arch>-initrd.img)"


def _kind(path: str) -> str:
    """``iso`` or ``initrd`` from the file's first bytes; IsoLayoutError naming the file otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise IsoLayoutError("%s: cannot read it (%s); expected %s" % (path, exc.strerror, EXPECTED))
    if stat.S_ISDIR(mode):
        raise IsoLayoutError("%s is a directory; expected %s" % (path, EXPECTED))
    with open(path, "rb") as handle:
        head = handle.read(8)
        handle.seek(FIRST_DESCRIPTOR_SECTOR * SECTOR_SIZE + 1)
        descriptor = handle.read(5)
    if descriptor == b"CD001":
        return "iso"
    if head.startswith(GZIP_MAGIC) or head.startswith(XZ_MAGIC) or head.startswith(NEWC_MAGIC):
        return "initrd"
    raise IsoLayoutError(
        '%s is neither an ISO 9660 image (no "CD001" volume descriptor at byte %d) nor an initrd '
        "(no gzip, xz or cpio data at its start: %r); expected %s"
        % (path, FIRST_DESCRIPTOR_SECTOR * SECTOR_SIZE + 1, head, EXPECTED)
    )


def read_pxe_initrd(path: str) -> tuple[dict[str, Any], list[str]]:
    """``(ignition dict, compression kinds)`` of the Ignition archive appended to a PXE initrd."""
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        start = max(0, size - APPENDED_SEARCH_WINDOW)
        handle.seek(start)
        tail = handle.read()
    found = find_appended_archive(tail, CONFIG_NAME)
    if found is None:
        raise IsoLayoutError(
            "%s: no Ignition archive (gzip or xz cpio holding %s) appended at the end of this initrd; "
            "expected a PXE initrd made by node-joiner --pxe (node.<arch>-initrd.img)" % (path, CONFIG_NAME)
        )
    files, kinds, _offset = found
    try:
        return parse_ignition(files[CONFIG_NAME].data), kinds
    except IgnitionContentError as exc:
        raise IgnitionContentError("%s: appended archive: %s" % (path, exc))


def _validity(expiry_text: str | None, now: datetime.datetime, min_validity: float) -> tuple[bool, float | None]:
    """``(valid, valid_for hours)`` of a token expiring at ``expiry_text``; ``(False, None)`` when unknown."""
    expiry = parse_rfc3339(expiry_text) if expiry_text else None
    if expiry is None:
        return False, None
    left = (expiry - now).total_seconds()
    return left >= min_validity and left > 0, round(left / 3600.0, 2)


def _hosts(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "hostname": host["hostname"],
            "mac_addresses": list(host["mac_addresses"]),
            "role": host.get("role"),
            "interfaces": [dict(item) for item in host.get("interfaces") or []],
        }
        for host in summary.get("hosts") or []
    ]


def _message(result: dict[str, Any], min_validity: float) -> str:
    name = os.path.basename(result["file"])
    if result["layout"] == LAYOUT_BASE_ISO:
        return "%s is a CoreOS live ISO without an embedded config: it is for no cluster and no host" % name
    hosts = ", ".join(h["hostname"] or "/".join(h["mac_addresses"]) for h in result["hosts"]) or "no host"
    head = "%s is for cluster %s (%s), hosts %s" % (name, result["cluster_name"], result["cluster_id"], hosts)
    if result["token_expiry"] is None:
        return head + "; its token expiry is unknown, so it cannot be trusted to work"
    if result["valid_for"] <= 0:
        return head + "; its token expired at %s: build a new image" % result["token_expiry"]
    state = "works" if result["valid"] else "does NOT work"
    return head + "; its token expires at %s (in %.1f hours): it %s for at least %s" % (
        result["token_expiry"],
        result["valid_for"],
        state,
        _duration(min_validity),
    )


def _duration(seconds: float) -> str:
    return "%dh%02dm" % (seconds // 3600, (seconds % 3600) // 60) if seconds else "now"


def describe_image(path: str, now: datetime.datetime, min_validity: float = 0) -> dict[str, Any]:
    """What the image at ``path`` is for and whether it works for ``min_validity`` more seconds, without secrets.

    Raises IsoError subclasses (naming the file and what was expected) for anything that is not a node ISO, an
    RHCOS live ISO or a node-joiner PXE initrd.
    """
    kind = _kind(path)
    result: dict[str, Any] = {"file": path, "kernel_arguments": None, "volume_id": None, "iso_files": None}
    boot_arch = None
    if kind == "iso":
        info = inspect_iso(path)
        result.update(
            kernel_arguments=info["kargs"],
            volume_id=info["volume_id"],
            iso_files=info["iso_files"],
            compression=info["embed_area"]["compression"] or None,
        )
        ignition = info["ignition"]
        boot_arch = info["boot_architecture"]
    else:
        ignition, kinds = read_pxe_initrd(path)
        result["compression"] = kinds
        match = _INITRD_NAME_RE.match(os.path.basename(path))
        boot_arch = match.group(1) if match else None
    summary = summarize_add_nodes_ignition(ignition) if ignition is not None else None
    if summary is not None and not summary["add_nodes"]:
        raise IsoLayoutError(
            "%s holds an Ignition config without /etc/assisted/add-nodes.env: not an add-nodes image "
            "from node-joiner (a day-1 agent ISO or a custom config?); expected %s" % (path, EXPECTED)
        )
    summary = summary or {}
    result["layout"] = (
        LAYOUT_BASE_ISO if ignition is None else (LAYOUT_NODE_ISO if kind == "iso" else LAYOUT_PXE_INITRD)
    )
    for key in (
        "cluster_id",
        "cluster_name",
        "api_dns_name",
        "token_expiry",
        "token_expiry_source",
        "openshift_version",
        "release_image",
    ):
        result[key] = summary.get(key)
    result["hosts"] = _hosts(summary)
    result["architecture"] = summary.get("architecture") or boot_arch
    result["architecture_source"] = summary.get("architecture_source") or (
        None if boot_arch is None else ("boot layout" if kind == "iso" else "file name")
    )
    result["valid"], result["valid_for"] = _validity(result["token_expiry"], now, min_validity)
    result["min_validity"] = round(min_validity / 3600.0, 2)
    result["checked_at"] = format_rfc3339(now)
    result["message"] = _message(result, min_validity)
    return result


def iso_info(path: str, min_validity: Any = "0", now: datetime.datetime | None = None) -> dict[str, Any]:
    """The iso_info module's result for ``path``; ``min_validity`` is seconds or a duration like ``24h``.

    Raises InputError for a bad ``min_validity`` and IsoError subclasses for the image, each with ``file`` in its
    partial result.
    """
    try:
        seconds = parse_duration(min_validity)
    except ValueError as exc:
        raise InputError("min_validity: %s" % exc, {"file": path})
    try:
        return dict(describe_image(path, now or utcnow(), seconds), changed=False)
    except OSError as exc:
        raise IsoLayoutError(
            "%s: cannot read it (%s); expected %s" % (path, exc.strerror or exc, EXPECTED), {"file": path}
        )
    except IsoError as exc:
        raise type(exc)(exc.message, dict(exc.result, file=path))
