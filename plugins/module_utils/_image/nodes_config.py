# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""New workers -> node-joiner ``nodes-config.yaml``, one per CPU architecture, and the nodes-config as it may be
shown.

Every check runs before anything is written or any pod started, and all problems are reported together
(``InventoryError.problems``), each naming the host, the field, the value and the fix. The rendering is canonical
(fixed key order, hosts sorted by hostname) so that its digest only changes when the content does: that is what
makes rebuilding the ISO idempotent.

A nodes-config holds no pull secret and no token; an ``sshKey`` is a public key. What could be secret comes from a
raw nmstate ``network_config``: 802.1X ``password`` and ``private-key-password``, MACsec ``mka-cak``, IPsec ``psk``
(nmstate's own names), and a password in a URL of the form ``scheme://user:password@`` (``bootArtifactsBaseURL``,
any string). :func:`redacted` replaces those values by REDACTED; :func:`secret_values` lists them, so that the
module can hide them everywhere.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import NETADDR_IMPORT_ERROR
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems, given, secret_name
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import hosts as definition

try:
    import yaml
except ImportError:
    yaml = None  # type: ignore[assignment]
    YAML_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    YAML_IMPORT_ERROR = None

# The canonical key order: nodes-config, host, then nmstate's identifying keys first; any other key follows
# alphabetically.
KEY_ORDER = (  # noqa: SIM905 (a text reads better than 36 quoted names)
    "cpuArchitecture sshKey bootArtifactsBaseURL hosts hostname role rootDeviceHints interfaces networkConfig "
    "name macAddress type state mac-address vlan base-iface id ipv4 ipv6 enabled dhcp autoconf address ip "
    "prefix-length dns-resolver routes config server search destination next-hop-address next-hop-interface "
    "metric table-id"
).split()
_KEY_RANK = {key: rank for rank, key in enumerate(KEY_ORDER)}
REDACTED = "<redacted>"
# (Which keys' values are secret: problems.secret_name.)
# A URL's password: scheme://user:password@host (up to the last @ before the path: a password may hold a literal @)
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/@:\s]*:)(?P<password>[^/\s]+)(?=@)")


def missing_libraries() -> list[tuple[str, str]]:
    """(library name, import traceback) of each Python library this code needs but cannot import."""
    missing = [("netaddr", NETADDR_IMPORT_ERROR)] if NETADDR_IMPORT_ERROR else []
    return missing + ([("PyYAML", YAML_IMPORT_ERROR)] if YAML_IMPORT_ERROR else [])


def check_hosts(
    hosts: list[dict[str, Any]],
    default_architecture: str | None,
    allow_loopback: bool,
    platform: str | None = None,
    problems: Problems | None = None,
) -> list[definition.CheckedHost]:
    """Run every check, each problem into ``problems``; return the checked hosts. ``hosts``: host records, their
    types as the argument spec (``_image.hosts.HOST_OPTIONS``) validated them. ``platform``: Infrastructure
    spec.platformSpec.type."""
    problems = Problems() if problems is None else problems
    cluster_arch = definition.normalize_architecture(default_architecture)
    if cluster_arch is None:
        fix = f"pass the control plane's architecture, one of: {', '.join(sorted(definition.ARCHITECTURE_ALIASES))}"
        problems.add("(cluster)", "default_architecture", default_architecture, "is not a known architecture", fix)
    if not hosts:
        fix = "put at least one host into the new-workers group"
        problems.add("(inventory)", "hosts", hosts, "is not a non-empty list of hosts", fix)
    labels = [host.get("name") or f"#{index}" for index, host in enumerate(hosts)]  # (the position of a nameless)
    checked = [
        definition.HostChecker(host, label, cluster_arch, allow_loopback, problems.for_host(label), platform).check()
        for host, label in zip(hosts, labels)
    ]
    # Hostnames, MACs and addresses each belong to one host definition, and to one place in it.
    owners: dict[tuple[str, str], tuple[int, str]] = {}
    for index, host in enumerate(checked):
        identities = [("name", "name", host.hostname)] if host.hostname else []
        identities += [(field, "MAC", mac) for field, mac in host.macs]
        identities += [(owned.field, "address", str(owned.address)) for owned in host.addresses]
        seen, report = set(), problems.for_host(host.label)
        for field, kind, value in identities:
            owner_index, owner_label = owners.setdefault((kind, value), (index, host.label))
            if owner_index != index:
                what = f"is already used by host {owner_label} (hosts[{owner_index}])"
                report(field, value, what, f"give every host its own {kind}")
            if (kind, value) in seen:
                report(field, value, "appears twice in this host", f"give each interface its own {kind}")
            seen.add((kind, value))
    return checked


def build_nodes_configs(
    hosts: list[dict[str, Any]],
    default_architecture: str | None,
    ssh_key: str | None = None,
    boot_artifacts_base_url: str | None = None,
    allow_loopback: bool = False,
    platform: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Return {rpm architecture: nodes-config dict} for the hosts, or raise InventoryError.

    default_architecture is the control plane's (Go or RPM name); hosts without cpu_architecture get it.
    allow_loopback accepts 127.0.0.0/8 host addresses (hosts.loopback_allowed: the lab's). platform is the
    cluster's Infrastructure spec.platformSpec.type (None: not checked).
    """
    problems, url = Problems(), boot_artifacts_base_url
    checked = check_hosts(hosts, default_architecture, allow_loopback, platform, problems)
    if given(url) and not (isinstance(url, str) and re.match(r"^https?://[^\s/]+", url)):
        fix = "give the URL the PXE artifacts will be served from"
        problems.add("(parameters)", "boot_artifacts_base_url", url, "is not an http(s) URL", fix)
    problems.raise_any()
    shared: dict[str, Any] = {"sshKey": str(ssh_key).strip()} if given(ssh_key) else {}
    shared.update({"bootArtifactsBaseURL": url} if given(url) else {})
    configs: dict[str, dict[str, Any]] = {}
    for host in sorted(checked, key=lambda item: item.hostname):
        arch = str(host.architecture)  # known: an unknown one was a problem
        configs.setdefault(arch, dict({"cpuArchitecture": arch}, **shared, hosts=[]))["hosts"].append(host.render())
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


def render_nodes_config(nodes_config: dict[str, Any]) -> str:
    """The YAML text of a nodes-config dict; equal content always gives equal text.

    Colon-bearing strings (MACs, IPv6) are quoted: a YAML 1.1 reader, as in Go, could otherwise take an all-digit
    MAC for a base-60 number. (The dumper is built here because PyYAML may be missing when this file is imported.)
    """

    class CanonicalDumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: Any, value: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if ":" in value else None)

    CanonicalDumper.add_representer(str, represent_str)
    options: dict[str, Any] = {"default_flow_style": False, "sort_keys": False, "allow_unicode": True, "width": 1 << 16}
    return yaml.dump(_canonical(nodes_config), Dumper=CanonicalDumper, **options)


# --- secrets ------------------------------------------------------------------------------------


def _walk(value: Any, found: list[str], secret: bool = False) -> Any:
    """``value`` with every secret replaced by REDACTED; each secret value, as text, added to ``found``."""
    if isinstance(value, dict):
        hidden = {key for key, item in value.items() if secret_name(key) and item not in (None, "")}
        walked = {key: _walk(item, found, secret or key in hidden) for key, item in value.items()}
        return {key: REDACTED if key in hidden else item for key, item in walked.items()}
    if isinstance(value, list):
        return [_walk(item, found, secret) for item in value]
    if secret or not isinstance(value, str):
        found.extend([str(value)] if secret and value not in (None, "") else [])
        return value
    found.extend(match.group("password") for match in _URL_PASSWORD.finditer(value))
    return _URL_PASSWORD.sub(lambda match: match.group("head") + REDACTED, value)


def secret_values(value: Any) -> list[str]:
    """Every secret value in ``value`` (a nodes-config or any part of it), as text."""
    found: list[str] = []
    _walk(value, found)
    return found


def redacted(value: Any) -> Any:
    """A copy of ``value`` with every secret value replaced by REDACTED."""
    return _walk(value, [])
