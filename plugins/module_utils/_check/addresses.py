# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every static address of the new workers against the cluster: its machine networks, their prefix, the API and
ingress VIPs and the existing Nodes' addresses. (Against each other: ``_image.nodes_config``'s uniqueness check.)

The prefix rule: a host address in a machine network must carry that network's prefix length, so the host's
subnet is the machine network, where the other nodes and the VIPs are on-link. Where the cluster has VIPs
(on-premise load balancing: keepalived moves the API VIP among the control-plane nodes and the ingress VIP among
the workers, this one included), a different prefix is a mistake. Without VIPs (platform none or external, a load
balancer of your own) a host may sit in a routed part of the machine network: a different prefix is accepted when
the host has a default gateway of that IP version.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip, parse_network
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.host_checks import CheckedHost
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nmstate import OwnedAddress

CONTROL_PLANE_ROLES = ("master", "control-plane")
VIP_KINDS = (("api_vips", "API VIP"), ("ingress_vips", "ingress VIP"))


def machine_networks(cluster: dict[str, Any]) -> list[Any]:
    """The cluster's machine networks (day1_facts: CIDR texts or install-config entries {cidr: ...})."""
    networks = []
    for network in cluster.get("machine_networks") or []:
        cidr = network.get("cidr") if isinstance(network, dict) else network
        parsed = parse_network(cidr)
        if parsed is None:
            raise Day2Error(
                "cluster: field machine_networks value %r is not a CIDR such as 192.168.111.0/24; the cluster's "
                "install-config or Network config says so: fix it there" % (cidr,)
            )
        networks.append(parsed)
    return networks


def prefix_field(field: str) -> str:
    """The field that gives the prefix of the address of ``field``."""
    if field in ("ip", "ipv6"):
        return "prefix_length" if field == "ip" else "ipv6_prefix_length"
    return field[: -len(".ip")] + ".prefix-length" if field.endswith(".ip") else field


def is_control_plane(node: dict[str, Any]) -> bool:
    return bool(set(CONTROL_PLANE_ROLES) & set(node.get("roles") or []))


class ClusterAddresses:
    """What the cluster's addresses are: machine networks, VIPs, and the Nodes that hold each address."""

    def __init__(self, cluster: dict[str, Any], replace_node: str = "") -> None:
        self.networks = machine_networks(cluster)
        self.vips: dict[str, tuple[str, str]] = {}  # address -> (field of day1_facts, kind)
        for key, kind in VIP_KINDS:
            for vip in cluster.get(key) or []:
                parsed = parse_ip(vip)
                if parsed is not None:
                    self.vips[str(parsed)] = (key, kind)
        self.owners: dict[str, list[dict[str, Any]]] = {}
        for node in cluster.get("nodes") or []:
            if node.get("name") == replace_node:
                continue  # its Node is deleted before the host joins again
            for address in node.get("internal_ips") or []:
                parsed = parse_ip(address)
                if parsed is not None:
                    self.owners.setdefault(str(parsed), []).append(node)

    def check(self, host: CheckedHost, problems: Problems) -> None:
        for owned in host.addresses:
            self._machine_network(host, owned, problems)
            self._vip(host, owned, problems)
            self._nodes(host, owned, problems)

    def _machine_network(self, host: CheckedHost, owned: OwnedAddress, problems: Problems) -> None:
        same_version = [net for net in self.networks if net.version == owned.address.version]
        containing = sorted((net for net in same_version if owned.address in net), key=lambda net: net.prefixlen)
        if not containing:
            shown = ", ".join(str(net.cidr) for net in same_version) or "none of IPv%d" % owned.address.version
            problems.add(
                host.label,
                owned.field,
                str(owned.address),
                "is outside the cluster's machine networks (%s)" % shown,
                "use an address in a machine network: the node must reach the API server and the other nodes there",
            )
            return
        network = containing[-1]
        if owned.prefix == network.prefixlen:
            return
        if not self.vips and owned.address.version in host.routed:
            return  # a routed part of the machine network, behind its gateway (no VIP has to reach this host)
        why = (
            "the cluster's VIPs (keepalived) need every node on the machine network itself"
            if self.vips
            else "without a default gateway the rest of the machine network is unreachable"
        )
        problems.add(
            host.label,
            prefix_field(owned.field),
            owned.prefix,
            "does not match the machine network %s that holds %s (prefix %d): %s"
            % (network.cidr, owned.address, network.prefixlen, why),
            "set the prefix length to %d" % network.prefixlen,
        )

    def _vip(self, host: CheckedHost, owned: OwnedAddress, problems: Problems) -> None:
        vip = self.vips.get(str(owned.address))
        if vip:
            problems.add(
                host.label,
                owned.field,
                str(owned.address),
                "is the cluster's %s (%s of day1_facts)" % (vip[1], vip[0]),
                "give the host an address of its own: the VIP moves between the cluster's nodes",
            )

    def _nodes(self, host: CheckedHost, owned: OwnedAddress, problems: Problems) -> None:
        owners = [node for node in self.owners.get(str(owned.address), []) if node.get("name") != host.hostname]
        if owners:
            names = ", ".join(
                "%s%s" % (node.get("name"), " (a control-plane node)" if is_control_plane(node) else "")
                for node in owners
            )
            problems.add(
                host.label,
                owned.field,
                str(owned.address),
                "already belongs to Node %s" % names,
                "give the host a free address",
            )
