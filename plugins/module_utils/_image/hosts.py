# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The keys of a new-worker host definition, defined once, as Ansible argument-spec options.

``IMAGE_HOST_OPTIONS`` are what the image step reads (day2_iso's ``hosts`` suboptions), ``BOOT_HOST_OPTIONS``
what the boot step reads, ``JOIN_HOST_OPTIONS`` what the join step puts on the new Node. ansible-core checks and
converts them: ``vlan_id`` and the prefix lengths given as text (``-e`` extra vars) become integers, a
comma-separated ``dns_servers`` survey answer becomes a list. The image keys are documented in the doc fragment
``openshift_agent.day2.hosts`` (a unit test keeps the two equal), all of them in docs/user-guide.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

INTERFACE_OPTIONS: dict[str, dict[str, Any]] = {
    "name": {"type": "str"},
    # macAddress is the nodes-config spelling: accepted from people who copy from there.
    "mac_address": {"type": "str", "aliases": ["macAddress"]},
}

IMAGE_HOST_OPTIONS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "mac_address": {"type": "str"},
    "interfaces": {"type": "list", "elements": "dict", "options": INTERFACE_OPTIONS},
    "interface": {"type": "str"},
    "ip": {"type": "str"},
    "prefix_length": {"type": "int"},
    "gateway": {"type": "str"},
    "dns_servers": {"type": "list", "elements": "str"},
    "vlan_id": {"type": "int"},
    "ipv6": {"type": "str"},
    "ipv6_prefix_length": {"type": "int"},
    "ipv6_gateway": {"type": "str"},
    "network_config": {"type": "dict"},
    "root_device_hints": {"type": "dict"},
    "cpu_architecture": {"type": "str"},
}

BOOT_HOST_OPTIONS: dict[str, dict[str, Any]] = {
    "bmc_address": {"type": "str"},
    "bmc_username": {"type": "str"},
    "bmc_password": {"type": "str", "no_log": True},
    "bmc_verify_certs": {"type": "bool"},
}

# What the join step puts on each new Node (checked by _check/labels.py, applied by _join/node_marks.py).
JOIN_HOST_OPTIONS: dict[str, dict[str, Any]] = {
    "node_labels": {"type": "dict"},
    "node_taints": {"type": "list", "elements": "raw"},
}

# nodes-config.yaml names architectures like RPM; Nodes report Go names (status.nodeInfo.architecture).
ARCHITECTURE_ALIASES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
}

ALLOW_LOOPBACK_VARIABLE = "OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK"


def known_host_keys() -> tuple[str, ...]:
    """The host keys an inventory host may set (image, boot and join): every key but ``name``, which is the host's
    inventory name. For the unknown-key checks of inventory hosts."""
    return (
        tuple(key for key in IMAGE_HOST_OPTIONS if key != "name") + tuple(BOOT_HOST_OPTIONS) + tuple(JOIN_HOST_OPTIONS)
    )


def secret_host_keys() -> tuple[str, ...]:
    """The host keys whose values are never shown (``no_log``)."""
    options = dict(IMAGE_HOST_OPTIONS, **BOOT_HOST_OPTIONS)
    return tuple(key for key, option in options.items() if option.get("no_log"))


def loopback_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """Whether host addresses in 127.0.0.0/8 are accepted: only when OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1.

    This exists for the lab, whose simulated hosts all live on one machine; real hosts never have such addresses,
    so it is no module option.
    """
    return (os.environ if environ is None else environ).get(ALLOW_LOOPBACK_VARIABLE) == "1"


def normalize_architecture(name: Any) -> str | None:
    """RPM architecture name for a Go or RPM name, or None when unknown."""
    if not isinstance(name, str):
        return None
    return ARCHITECTURE_ALIASES.get(name.strip().lower())
