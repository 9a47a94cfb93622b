# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of single values of a host definition: its node name, its root device hints, a MAC YAML made a number.

Every problem is reported through the caller's ``report(field, value, what, fix)``.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Report

# Names NetworkManager and the kubelet treat as "no hostname set"; a node must not carry them.
FORBIDDEN_HOSTNAMES = (
    "localhost",
    "localhost.localdomain",
    "localhost4",
    "localhost6",
    "localhost4.localdomain4",
    "localhost6.localdomain6",
)
MAX_HOSTNAME = 253
MAX_LABEL = 63
_LABEL_PATTERN = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_HCTL_PATTERN = re.compile(r"^[0-9]+:[0-9]+:[0-9]+:[0-9]+$")

# YAML 1.1 (PyYAML, Ansible's inventory) reads 10:20:30:40:50:59 as the base-60 integer 8041827059: an unquoted
# MAC of decimal digits only, whose first octet is 10-99 and whose other octets are 00-59.
SEXAGESIMAL_MAC_FIRST = (10, 99)
MAC_OCTETS = 6

ROOT_DEVICE_HINT_KEYS = (
    "deviceName",
    "hctl",
    "model",
    "vendor",
    "serialNumber",
    "minSizeGigabytes",
    "wwn",
    "rotational",
)
FORBIDDEN_ROOT_DEVICE_HINTS = {
    "wwnWithExtension": "the agent's disk inventory does not report it, so node-joiner refuses it",
    "wwnVendorExtension": "the agent's disk inventory does not report it, so node-joiner refuses it",
}


def hostname_problem(name: Any) -> str | None:
    """Why a name cannot be a node name (Kubernetes DNS-1123 subdomain), or None."""
    if not isinstance(name, str) or not name:
        return "is not a non-empty string"
    if name != name.lower():
        return "contains upper-case letters (node names are lower case)"
    if len(name) > MAX_HOSTNAME:
        return "is longer than %d characters" % MAX_HOSTNAME
    if name in FORBIDDEN_HOSTNAMES:
        return "is a localhost name, which leaves the node without a usable name"
    for label in name.split("."):
        if len(label) > MAX_LABEL:
            return "has a label longer than %d characters (%s...)" % (MAX_LABEL, label[:20])
        if not _LABEL_PATTERN.match(label):
            return (
                "has the label %s, which is not letters, digits and '-' starting and ending with "
                "a letter or digit" % json.dumps(label)
            )
    return None


def is_number(value: Any) -> bool:
    """An integer, or the text of one (ansible-core's argument spec turns an integer given for a text into text)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())


def sexagesimal_mac(value: Any) -> str | None:
    """The MAC an unquoted all-digit MAC was before YAML 1.1 read it as a base-60 number, or None."""
    number = int(value)
    octets = []
    for _octet in range(MAC_OCTETS - 1):
        number, octet = divmod(number, 60)
        octets.append(octet)
    if not SEXAGESIMAL_MAC_FIRST[0] <= number <= SEXAGESIMAL_MAC_FIRST[1]:
        return None
    return ":".join("%02d" % octet for octet in [number, *reversed(octets)])


def number_instead_of_mac(field: str, value: Any) -> tuple[str, str]:
    """(what, fix) for a MAC that is a number: YAML 1.1 reads an unquoted all-digit MAC as a base-60 integer."""
    key = field.rsplit(".", 1)[-1]
    mac = sexagesimal_mac(value)
    if mac is None:
        return (
            "is a number, not a MAC address (YAML reads an unquoted MAC of digits only as a base-60 number; this one "
            "cannot be turned back into the MAC)",
            'write the MAC in quotes, e.g. %s: "00:02:46:e3:9e:7c"' % key,
        )
    return (
        "is the number YAML made of the unquoted MAC %s (YAML 1.1 reads digits separated by ':' as a base-60 number)"
        % mac,
        'quote it: %s: "%s"' % (key, mac),
    )


def check_root_device_hints(report: Report, hints: dict[Any, Any]) -> None:
    """Report every hint node-joiner (and the agent) would not take."""
    for key in sorted(hints, key=str):
        _check_hint(report, key, hints[key])


def _check_hint(report: Report, key: Any, value: Any) -> None:
    field = "root_device_hints.%s" % key
    if key in FORBIDDEN_ROOT_DEVICE_HINTS:
        report(
            field,
            value,
            "is not supported: %s" % FORBIDDEN_ROOT_DEVICE_HINTS[key],
            "use wwn, serialNumber or deviceName instead",
        )
    elif key not in ROOT_DEVICE_HINT_KEYS:
        squashed = str(key).replace("_", "").replace("-", "").lower()
        close = [hint for hint in ROOT_DEVICE_HINT_KEYS if hint.lower() == squashed]
        close = close or difflib.get_close_matches(str(key), ROOT_DEVICE_HINT_KEYS, n=1)
        fix = ('did you mean "%s"?' % close[0]) if close else "use one of: %s" % ", ".join(ROOT_DEVICE_HINT_KEYS)
        report(field, value, "is not a root device hint", fix)
    elif key == "rotational":
        if not isinstance(value, bool):
            report(field, value, "is not a boolean", "write true or false (unquoted)")
    elif key == "minSizeGigabytes":
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            report(field, value, "is not a positive integer", "write the size in GB, e.g. 100")
    elif not isinstance(value, str) or not value.strip():
        report(field, value, "is not a non-empty string", "write the hint as text")
    elif key == "deviceName" and not value.startswith("/dev/"):
        report(
            field,
            value,
            "does not start with /dev/",
            "write the device path, e.g. /dev/sda or /dev/disk/by-path/...",
        )
    elif key == "hctl" and not _HCTL_PATTERN.match(value):
        report(field, value, "is not Host:Channel:Target:Lun", "write four numbers like 0:0:0:0")
