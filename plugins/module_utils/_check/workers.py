# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check step: every new worker's settings against themselves and the cluster, before anything is written.

Input: each host's variables, sorted (``_check.variables``), the boot settings and the day-1 facts of
``day1_facts``. Output: what every later step takes (the image hosts, the boot hosts, the hosts to follow, the
nodes to approve), the hosts that already joined, and the variables left alone. Every problem of every host is
reported at once, each naming the host, the field, the value and the fix; nothing is returned when there is one.
"""

from __future__ import annotations

import difflib
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.addresses import (
    ClusterAddresses,
    is_control_plane,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.agent_config import in_file_words
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.arch import check_payload_architectures
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.boot import check_bmc, check_boot_settings
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.identity import check_identity
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.labels import (
    check_labels,
    check_taints,
    merged_marks,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import HostVariables
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.host_checks import CheckedHost
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    BOOT_HOST_OPTIONS,
    IMAGE_HOST_OPTIONS,
    JOIN_HOST_OPTIONS,
    loopback_allowed,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import check_hosts

HOST_OPTIONS: dict[str, dict[str, Any]] = dict(IMAGE_HOST_OPTIONS, **BOOT_HOST_OPTIONS, **JOIN_HOST_OPTIONS)
PLAY_VARIABLE_FIX = (
    "the roles read it from the play, not from the new workers: set it for group all, in the play or with -e"
)


def _unset(value: Any) -> bool:
    """AWX surveys send "" for an unanswered optional question: it means unset, like an absent variable."""
    return value is None or value == ""


def _settings(host: HostVariables, problems: Problems) -> dict[str, Any] | None:
    """The host's settings checked and converted as the modules' argument specs do (``"24"`` becomes 24)."""
    given = {key: value for key, value in host.settings.items() if not _unset(value)}
    validated = ArgumentSpecValidator(HOST_OPTIONS).validate(dict(given, name=host.name))
    messages = validated.error_messages  # (the errors object is true even when it holds none)
    for message in messages:
        # ansible-core's messages name the key in quotes; which one is found from the settings given.
        key = next((k for k in sorted(given, key=len, reverse=True) if "'%s'" % k in message), "(host)")
        shown = "(not shown)" if HOST_OPTIONS.get(key, {}).get("no_log") else given.get(key)
        problems.add(
            host.name,
            key,
            shown,
            "cannot be used: %s" % message,
            "give it in the documented type (see the host keys of the user guide)",
        )
    return None if messages else validated.validated_parameters


def _report_names(host: HostVariables, problems: Problems) -> None:
    for name, why in host.unreadable:
        problems.add(
            host.name,
            name,
            "(cannot be templated)",
            "cannot be templated: %s" % why,
            "define the variables it uses (or write a literal value)",
        )
    for name, known, value in host.typos:
        problems.add(
            host.name, name, value, "is not a host variable of this collection", 'did you mean "%s"? Rename it' % known
        )
    for name, value in host.misplaced:
        problems.add(host.name, name, value, "is a play variable of this collection", PLAY_VARIABLE_FIX)


def _image_host(name: str, settings: dict[str, Any]) -> dict[str, Any]:  # (the join keys are not the image's)
    return {key: value for key, value in settings.items() if key in IMAGE_HOST_OPTIONS and value is not None}


def _addresses(settings: dict[str, Any], checked: CheckedHost | None) -> list[str]:
    """The host's addresses, the followed one first: ip (ipv6), else network_config's first static address; then
    its other static addresses (a node's serving certificate may name any of them)."""
    found = [settings[key] for key in ("ip", "ipv6") if settings.get(key)]
    for owned in checked.addresses if checked else []:
        if str(owned.address) not in found:
            found.append(str(owned.address))
    return found


def _first_mac(settings: dict[str, Any]) -> str | None:
    if settings.get("mac_address"):
        return settings["mac_address"]
    interfaces = settings.get("interfaces") or []
    return (interfaces[0] or {}).get("mac_address") if interfaces else None


def _joined(name: str, addresses: list[str], node: dict[str, Any] | None) -> bool:
    """A Ready worker Node of that name that has the host's address: the host joined already (a re-run)."""
    if not node or not node.get("ready") or is_control_plane(node):
        return False
    return bool(set(addresses) & set(node.get("internal_ips") or []))


def _half_joined(name: str, addresses: list[str], node: dict[str, Any] | None) -> bool:
    """A worker Node of that name, with the host's address (or none yet), not Ready and never Ready since it
    registered (``joining`` when the facts tell): an earlier run stopped while the host joined; the join step
    takes it from there."""
    if not node or node.get("ready") or is_control_plane(node) or node.get("joining") is False:
        return False
    ips = set(node.get("internal_ips") or [])
    return not ips or bool(set(addresses) & ips)


def _check_name(name: str, node: dict[str, Any] | None, problems: Problems) -> None:
    if node is None:
        return
    if is_control_plane(node):
        problems.add(
            name,
            "name",
            name,
            "is a control-plane node of the cluster (roles %s)" % ", ".join(node.get("roles") or []),
            "node-joiner adds workers only: take it out of the new workers' group",
        )
    else:
        problems.add(
            name,
            "name",
            name,
            "is already a Node of the cluster (not Ready, or with another address)",
            "to replace a failed worker run playbooks/replace_worker.yml; otherwise rename the host",
        )


def _unfollowed(name: str, settings: dict[str, Any], problems: Problems, source: str = "") -> None:
    raw = bool(settings.get("network_config"))
    if source:  # an agent-config host: its file has no ip key
        problems.add(
            name,
            "networkConfig",
            None,
            "has no static address, so there is no address to follow the install at",
            "give the host a static address in networkConfig, or define it in the inventory (with ip) instead",
        )
        return
    problems.add(
        name,
        "ip",
        None,
        "is not set%s" % (" and network_config has no static address" if raw else ""),
        "set ip (the address the host gets, also with DHCP): the install is followed at that address",
    )


def _merge_sources(
    hosts: list[HostVariables], agent_hosts: list[HostVariables], group: str, problems: Problems
) -> list[HostVariables]:
    """The inventory's hosts and the agent-config's, a host in both refused."""
    inventory = {host.name.lower() for host in hosts}
    merged = list(hosts)
    for host in agent_hosts:
        if host.name.lower() in inventory:
            problems.add(
                host.name,
                "hostname",
                host.name,
                "is defined twice: in inventory group %s and in %s" % (group, host.source),
                "keep the host in one of the two",
            )
        else:
            merged.append(host)
    return merged


def check_workers(
    hosts: list[HostVariables],
    cluster: dict[str, Any],
    replace_node: str = "",
    group: str = "new_workers",
    boot_method: str = "manual",
    iso_url: str = "",
    serve_iso: bool = False,
    groups: list[str] | None = None,
    agent_hosts: list[HostVariables] | None = None,
    play: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Check the hosts against themselves and the cluster; return what every later step takes. ``groups``: the
    inventory's group names (a misspelt group is named). ``agent_hosts``: the hosts of a day-1 agent-config
    (``_check.agent_config``). ``play``: the play's ``cluster_name``, ``base_domain``, ``openshift_version`` (the
    cluster meant), ``node_labels`` and ``node_taints`` (every host's, under its own).

    Raises InventoryError (a Day2Error) with every problem found.
    """
    problems = Problems()
    play = play or {}
    check_identity(cluster, play.get("cluster_name"), play.get("base_domain"), play.get("openshift_version"), problems)
    play_labels = check_labels(play.get("node_labels"), problems.for_host("(play)"), "day2_node_labels")
    play_taints = check_taints(play.get("node_taints"), problems.for_host("(play)"), "day2_node_taints")
    sources = {host.name: host.source for host in agent_hosts or []}
    hosts = _merge_sources(hosts, agent_hosts or [], group, problems)
    if not hosts and play.get("agent_config"):
        problems.add(
            "(inventory)",
            "group",
            group,
            "has no hosts, and %s names no new worker" % play["agent_config"],
            "list the new workers in the agent-config's hosts or in the group",
        )
        raise InventoryError(problems.items)
    if not hosts:
        close = difflib.get_close_matches(group, [name for name in groups or [] if name != group], n=1)
        problems.add(
            "(inventory)",
            "group",
            group,
            "has no hosts" if group in (groups or [group]) else "is not a group of the inventory",
            ('did you mean "%s"? Set day2_hosts_group to it, or ' % close[0] if close else "")
            + "put the new workers in the group (see playbooks/inventory.example.yml)",
        )
        raise InventoryError(problems.items)
    redfish = check_boot_settings(boot_method, iso_url, problems, serve_iso)
    cluster_addresses = ClusterAddresses(cluster, replace_node)
    nodes = {node.get("name"): node for node in cluster.get("nodes") or []}
    settings_of: dict[str, dict[str, Any]] = {}
    marks: dict[str, dict[str, Any]] = {}
    for host in hosts:
        _report_names(host, problems)
        settings = _settings(host, problems)
        if settings is not None:
            settings_of[host.name] = settings
            labels, taints = merged_marks(
                settings.get("node_labels"),
                settings.get("node_taints"),
                play_labels,
                play_taints,
                problems.for_host(host.name),
            )
            marks[host.name] = dict({"labels": labels} if labels else {}, **({"taints": taints} if taints else {}))
    checked, image_problems = check_hosts(
        [_image_host(name, settings) for name, settings in sorted(settings_of.items())],
        cluster.get("rpm_architecture") or cluster.get("architecture") or "x86_64",
        allow_loopback=loopback_allowed(),
        platform=cluster.get("platform"),
    )
    problems.items.extend(image_problems)
    check_payload_architectures(checked, cluster, problems)  # another architecture needs a multi payload
    checked_of = {host.hostname: host for host in checked}
    addresses = {name: _addresses(settings, checked_of.get(name)) for name, settings in settings_of.items()}
    joined = sorted(
        name for name in settings_of if name != replace_node and _joined(name, addresses[name], nodes.get(name))
    )
    boot_hosts = []
    halfway: list[str] = []
    for name, settings in sorted(settings_of.items()):
        if not addresses[name]:
            _unfollowed(name, settings, problems, sources.get(name, ""))
        if name in joined:
            continue
        half_joined = name != replace_node and _half_joined(name, addresses[name], nodes.get(name))
        if half_joined:
            halfway.append(name)
        elif name != replace_node:
            _check_name(name, nodes.get(name), problems)
        if name in checked_of:
            cluster_addresses.check(checked_of[name], problems)
        if half_joined:
            continue  # installed already: not booted again (that would reinstall it), followed and joined
        endpoint = check_bmc(name, settings, problems) if redfish else {}
        boot_hosts.append(
            dict(
                {
                    "name": name,
                    "bmc_address": settings.get("bmc_address"),
                    "bmc_username": settings.get("bmc_username"),
                    "bmc_password_set": bool(settings.get("bmc_password")),
                    "bmc_verify_certs": settings.get("bmc_verify_certs"),
                },
                **endpoint,
            )
        )
    if problems.items:
        raise InventoryError(
            [in_file_words(p, sources[p["host"]]) if p["host"] in sources else p for p in problems.items]
        )
    pending = {name: settings for name, settings in settings_of.items() if name not in joined}
    return {
        "image_hosts": [_image_host(name, settings) for name, settings in sorted(pending.items())],
        "boot_hosts": boot_hosts,
        "install_hosts": [
            {"name": name, "address": addresses[name][0], "mac_address": _first_mac(settings)}
            for name, settings in sorted(pending.items())
        ],
        "join_nodes": [dict({"name": name, "addresses": addresses[name]}, **marks[name]) for name in sorted(pending)],
        "node_marks": [dict({"name": name}, **marks[name]) for name in sorted(settings_of) if marks[name]],
        "agent_config_hosts": sorted(name for name in sources if name in settings_of),
        "joined": joined,
        "half_joined": halfway,
        "ignored": {host.name: host.foreign for host in hosts if host.foreign},
    }
