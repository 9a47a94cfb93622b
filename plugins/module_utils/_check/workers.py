# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check step: every new worker's settings against themselves and the cluster, before anything is written.

Input: each host's variables, sorted (``_check.variables``), and the day-1 facts of ``day1_facts``. Output: what
every later step takes (the image hosts, the boot hosts, the hosts to follow, the nodes to approve), the hosts
that already joined, and the variables left alone. Every problem of every host is reported at once, each naming
the host, the field, the value and the fix; nothing is returned when there is one.
"""

from __future__ import annotations

from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import HostVariables
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    BOOT_HOST_OPTIONS,
    IMAGE_HOST_OPTIONS,
    loopback_allowed,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import (
    addresses_outside_machine_networks,
    build_nodes_configs,
)

HOST_OPTIONS: dict[str, dict[str, Any]] = dict(IMAGE_HOST_OPTIONS, **BOOT_HOST_OPTIONS)


def _unset(value: Any) -> bool:
    """AWX surveys send "" for an unanswered optional question: it means unset, like an absent variable."""
    return value is None or value == ""


def _settings(host: HostVariables, problems: Problems) -> dict[str, Any]:
    """The host's settings checked and converted as the modules' argument specs do (``"24"`` becomes 24)."""
    given = {key: value for key, value in host.settings.items() if not _unset(value)}
    validated = ArgumentSpecValidator(HOST_OPTIONS).validate(dict(given, name=host.name))
    messages = validated.error_messages  # (the errors object is true even when it holds none)
    for message in messages:
        # ansible-core's messages name the key in quotes; which one is found from the settings given.
        key = next((k for k in sorted(given, key=len, reverse=True) if "'%s'" % k in message), "(host)")
        shown = "(not shown)" if HOST_OPTIONS.get(key, {}).get("no_log") else given.get(key)
        problems.add(host.name, key, shown, "cannot be used: %s" % message, "give it in the documented type")
    return {} if messages else validated.validated_parameters


def _node_by_name(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node.get("name"): node for node in cluster.get("nodes") or []}


def _addresses(settings: dict[str, Any]) -> list[str]:
    return [settings[key] for key in ("ip", "ipv6") if settings.get(key)]


def _joined(name: str, settings: dict[str, Any], node: dict[str, Any] | None) -> bool:
    """A Ready Node of that name that has the host's address: the host joined already (a re-run leaves it)."""
    if not node or not node.get("ready"):
        return False
    addresses = _addresses(settings)
    return not addresses or bool(set(addresses) & set(node.get("internal_ips") or []))


def _check_against_nodes(
    name: str, settings: dict[str, Any], nodes: dict[str, dict[str, Any]], replace_node: str, problems: Problems
) -> None:
    node = nodes.get(name)
    if node is not None and name != replace_node:
        if {"master", "control-plane"} & set(node.get("roles") or []):
            problems.add(
                name,
                "name",
                name,
                "is a control-plane node of the cluster",
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
    for address in _addresses(settings):
        owners = [
            other["name"]
            for other in nodes.values()
            if other["name"] not in (name, replace_node) and address in (other.get("internal_ips") or [])
        ]
        if owners:
            field = "ip" if settings.get("ip") == address else "ipv6"
            problems.add(
                name, field, address, "already belongs to Node %s" % ", ".join(owners), "give the host a free address"
            )


def _image_host(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in settings.items() if key in IMAGE_HOST_OPTIONS and value is not None}


def _first_mac(settings: dict[str, Any]) -> str | None:
    if settings.get("mac_address"):
        return settings["mac_address"]
    interfaces = settings.get("interfaces") or []
    return (interfaces[0] or {}).get("mac_address") if interfaces else None


def check_workers(
    hosts: list[HostVariables], cluster: dict[str, Any], replace_node: str = "", group: str = "new_workers"
) -> dict[str, Any]:
    """Check the hosts against themselves and the cluster; return what every later step takes.

    Raises InventoryError (a Day2Error) with every problem found.
    """
    problems = Problems()
    if not hosts:
        problems.add(
            "(inventory)",
            "group",
            group,
            "has no hosts",
            "put the new workers in the group (see playbooks/inventory.example.yml)",
        )
        raise InventoryError(problems.items)
    nodes = _node_by_name(cluster)
    checked: dict[str, dict[str, Any]] = {}
    for host in hosts:
        for name, known in host.typos:
            problems.add(
                host.name,
                name,
                "(not shown)",
                "is not a host variable of this collection",
                'did you mean "%s"? Rename it' % known,
            )
        settings = _settings(host, problems)
        if not _addresses(dict(host.settings)):
            problems.add(
                host.name,
                "ip",
                None,
                "is not set",
                "set ip (the address the host gets, also with DHCP): the install is followed at that address",
            )
        if not settings:
            continue
        if not _joined(host.name, settings, nodes.get(host.name)) or host.name == replace_node:
            _check_against_nodes(host.name, settings, nodes, replace_node, problems)
        checked[host.name] = settings
    joined = sorted(
        name for name, settings in checked.items() if name != replace_node and _joined(name, settings, nodes.get(name))
    )
    pending = {name: settings for name, settings in checked.items() if name not in joined}
    image_hosts = [_image_host(name, settings) for name, settings in sorted(pending.items())]
    if image_hosts:
        try:
            build_nodes_configs(
                image_hosts,
                cluster.get("rpm_architecture") or cluster.get("architecture") or "x86_64",
                platform=cluster.get("platform"),
                allow_loopback=loopback_allowed(),
            )
        except InventoryError as error:
            problems.items.extend(error.problems)
        problems.items.extend(addresses_outside_machine_networks(image_hosts, cluster.get("machine_networks") or []))
    if problems.items:
        raise InventoryError(problems.items)
    return {
        "image_hosts": image_hosts,
        "boot_hosts": [
            {
                "name": name,
                "bmc_address": settings.get("bmc_address"),
                "bmc_username": settings.get("bmc_username"),
                "bmc_password_set": bool(settings.get("bmc_password")),
                "bmc_verify_certs": settings.get("bmc_verify_certs"),
            }
            for name, settings in sorted(pending.items())
        ],
        "install_hosts": [
            {"name": name, "address": _addresses(settings)[0], "mac_address": _first_mac(settings)}
            for name, settings in sorted(pending.items())
        ],
        "join_nodes": [{"name": name, "addresses": _addresses(settings)} for name, settings in sorted(pending.items())],
        "joined": joined,
        "ignored": {host.name: host.foreign for host in hosts if host.foreign},
    }
