# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""New-worker inventory → node-joiner ``nodes-config.yaml``, one per CPU architecture.

Every check runs before anything is written or any pod started, and all problems are reported
together (``InventoryError.problems``), each naming the host, the field, the value and the fix.
The rendering is canonical (fixed key order, hosts sorted by hostname) so that its digest only
changes when the content does: that is what makes rebuilding the ISO idempotent.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import NETADDR_IMPORT_ERROR
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import (
    InventoryError,
    Problems,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.host_checks import (
    CheckedHost,
    HostChecker,
    given,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    ARCHITECTURE_ALIASES,
    normalize_architecture,
)

try:
    import yaml
except ImportError:
    yaml = None  # type: ignore[assignment]
    YAML_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    YAML_IMPORT_ERROR = None

# ppc64le and s390x hosts only join clusters of platform none. node-joiner's cluster inspection applies the
# agent installer's rule to infrastructure/cluster spec.platformSpec.type and the workers' architecture --
# openshift/installer pkg/asset/agent/installconfig.go@006d45739349721f1371d3013792d9b8407e9842
# (ValidateSupportedPlatforms), pkg/asset/agent/joiner/clusterinfo.go@c143649564e2b4c776faf2f7a3cc14f77cab7c6c.
NONE_PLATFORM_ONLY = ("ppc64le", "s390x")

NODES_CONFIG_KEY_ORDER = ("cpuArchitecture", "sshKey", "bootArtifactsBaseURL", "hosts")
HOST_KEY_ORDER = ("hostname", "role", "rootDeviceHints", "interfaces", "networkConfig")
# nmstate reads best with the identifying keys first; any other key follows alphabetically.
NMSTATE_KEY_ORDER = (
    "name",
    "macAddress",
    "type",
    "state",
    "mac-address",
    "vlan",
    "base-iface",
    "id",
    "ipv4",
    "ipv6",
    "enabled",
    "dhcp",
    "autoconf",
    "address",
    "ip",
    "prefix-length",
    "dns-resolver",
    "routes",
    "config",
    "server",
    "search",
    "destination",
    "next-hop-address",
    "next-hop-interface",
    "metric",
    "table-id",
)
_KEY_RANK: dict[str, int] = {}
for _order in (NODES_CONFIG_KEY_ORDER, HOST_KEY_ORDER, NMSTATE_KEY_ORDER):
    for _key in _order:
        _KEY_RANK.setdefault(_key, len(_KEY_RANK))


def missing_libraries() -> list[tuple[str, str]]:
    """(library name, import traceback) of each Python library this code needs but cannot import."""
    missing = []
    if NETADDR_IMPORT_ERROR:
        missing.append(("netaddr", NETADDR_IMPORT_ERROR))
    if YAML_IMPORT_ERROR:
        missing.append(("PyYAML", YAML_IMPORT_ERROR))
    return missing


def _check_platform(host: dict[str, Any], checked_host: CheckedHost, platform: str | None, problems: Problems) -> None:
    architecture = checked_host.architecture
    if not given(platform) or str(platform).lower() == "none" or architecture not in NONE_PLATFORM_ONLY:
        return
    value = host.get("cpu_architecture") if given(host.get("cpu_architecture")) else None
    inherited = "" if value is not None else " (the control plane's, as cpu_architecture is not set)"
    problems.add(
        checked_host.label,
        "cpu_architecture",
        value,
        'cannot join this %s cluster: CPU architecture "%s"%s only supports platform "none"'
        % (platform, architecture, inherited),
        "use x86_64 or aarch64 hardware for this worker; %s workers only join clusters installed with "
        "platform none" % architecture,
    )


def check_hosts(
    hosts: Any, default_architecture: str | None, allow_loopback: bool, platform: str | None = None
) -> tuple[list[CheckedHost], list[dict[str, Any]]]:
    """Run every check; return (checked hosts, problems). ``platform``: Infrastructure spec.platformSpec.type."""
    problems = Problems()
    cluster_architecture = normalize_architecture(default_architecture)
    if cluster_architecture is None:
        problems.add(
            "(cluster)",
            "default_architecture",
            default_architecture,
            "is not a known architecture",
            "pass the control plane's architecture, one of: %s" % ", ".join(sorted(ARCHITECTURE_ALIASES)),
        )
    if not isinstance(hosts, list) or not hosts:
        problems.add(
            "(inventory)",
            "hosts",
            hosts,
            "is not a non-empty list of hosts",
            "put at least one host into the new-workers group",
        )
        return [], problems.items

    checked = []
    for index, host in enumerate(hosts):
        if not isinstance(host, dict):
            problems.add(
                "#%d" % index,
                "(host)",
                host,
                "is not a mapping of host variables",
                "give each host as a mapping with at least name and mac_address",
            )
            continue
        name = host.get("name")
        label = name if isinstance(name, str) and name else "#%d" % index
        checked_host = HostChecker(host, label, cluster_architecture, allow_loopback, problems.for_host(label)).check()
        checked_host.index = index
        _check_platform(host, checked_host, platform, problems)
        checked.append(checked_host)
    _check_unique(checked, problems)
    return checked, problems.items


def _check_unique(checked: list[CheckedHost], problems: Problems) -> None:
    """Hostnames, MACs and addresses must each belong to exactly one host definition."""
    owners: dict[tuple[str, str], tuple[int, str]] = {}
    for host in checked:
        for field, kind, value in _identities(host):
            owner_index, owner_label = owners.setdefault((kind, value), (host.index, host.label))
            if owner_index != host.index:
                problems.add(
                    host.label,
                    field,
                    value,
                    "is already used by host %s (hosts[%d])" % (owner_label, owner_index),
                    "give every host its own %s" % kind,
                )
        _check_unique_within(host, problems)


def _identities(host: CheckedHost) -> list[tuple[str, str, str]]:
    """(field, kind, value) of everything that must not be shared between hosts."""
    found = [("name", "name", host.hostname)] if host.hostname else []
    found.extend((field, "MAC", mac) for field, mac in host.macs)
    found.extend((owned.field, "address", str(owned.address)) for owned in host.addresses)
    return found


def _check_unique_within(host: CheckedHost, problems: Problems) -> None:
    seen = set()
    for field, kind, value in _identities(host):
        if (kind, value) in seen:
            problems.add(
                host.label, field, value, "appears twice in this host", "give each interface its own %s" % kind
            )
        seen.add((kind, value))


def build_nodes_configs(
    hosts: Any,
    default_architecture: str | None,
    ssh_key: str | None = None,
    boot_artifacts_base_url: str | None = None,
    allow_loopback: bool = False,
    platform: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Return {rpm architecture: nodes-config dict} for the hosts, or raise InventoryError.

    default_architecture is the control plane's (Go or RPM name); hosts without cpu_architecture
    get it. allow_loopback accepts 127.0.0.0/8 host addresses (hosts.loopback_allowed: the lab's).
    platform is the cluster's Infrastructure spec.platformSpec.type (None: not checked).
    """
    checked, problems = check_hosts(hosts, default_architecture, allow_loopback, platform)
    extra = Problems()
    if given(boot_artifacts_base_url) and not (
        isinstance(boot_artifacts_base_url, str) and re.match(r"^https?://[^\s/]+", boot_artifacts_base_url)
    ):
        extra.add(
            "(parameters)",
            "boot_artifacts_base_url",
            boot_artifacts_base_url,
            "is not an http(s) URL",
            "give the URL the PXE artifacts will be served from",
        )
    if given(ssh_key) and not isinstance(ssh_key, str):
        extra.add("(parameters)", "ssh_key", ssh_key, "is not a string", "give one public key line")
    if problems or extra.items:
        raise InventoryError(problems + extra.items)

    configs: dict[str, dict[str, Any]] = {}
    for host in sorted(checked, key=lambda item: item.hostname):
        architecture = str(host.architecture)  # known: an unknown one was a problem
        config = configs.get(architecture)
        if config is None:
            config = configs[architecture] = {"cpuArchitecture": architecture}
            if given(ssh_key):
                config["sshKey"] = str(ssh_key).strip()
            if given(boot_artifacts_base_url):
                config["bootArtifactsBaseURL"] = boot_artifacts_base_url
            config["hosts"] = []
        config["hosts"].append(host.render())
    return configs


# --- canonical rendering ------------------------------------------------------------------------


def _canonical(value: Any) -> Any:
    """Copy of value with every mapping's keys in the canonical order (plain dicts keep it)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: (_KEY_RANK.get(key, len(_KEY_RANK)), str(key)))
        return {key: _canonical(value[key]) for key in keys}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    return value


_DUMPER: list[Any] = []


def _canonical_dumper() -> Any:
    """SafeDumper that quotes colon-bearing strings (MACs, IPv6): a YAML 1.1 reader, as in Go,
    could otherwise take an all-digit MAC for a base-60 number. Built on first use because
    PyYAML may be missing when this file is imported."""
    if not _DUMPER:

        class CanonicalDumper(yaml.SafeDumper):
            pass

        def represent_str(dumper: Any, value: str) -> Any:
            style = '"' if ":" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        CanonicalDumper.add_representer(str, represent_str)
        _DUMPER.append(CanonicalDumper)
    return _DUMPER[0]


def render_nodes_config(nodes_config: dict[str, Any]) -> str:
    """The YAML text of a nodes-config dict; equal content always gives equal text."""
    return yaml.dump(
        _canonical(nodes_config),
        Dumper=_canonical_dumper(),
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=1 << 16,
    )
