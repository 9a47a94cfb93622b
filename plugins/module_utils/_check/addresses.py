# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every address of the new workers (static, or a DHCP host's ``ip``) against the cluster: its machine networks,
their prefix (a DHCP address has none to check), the API and ingress VIPs and the existing Nodes' addresses.
(Against each other: ``_image.nodes_config``'s uniqueness check.)

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
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems, Report
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import is_control_plane
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import CheckedHost, OwnedAddress

VIP_KINDS = (("api_vips", "API VIP"), ("ingress_vips", "ingress VIP"))


def prefix_field(field: str) -> str:
    """The field that gives the prefix of the address of ``field``."""
    simple = {"ip": "prefix_length", "ipv6": "ipv6_prefix_length"}
    return simple.get(field) or (field[: -len(".ip")] + ".prefix-length" if field.endswith(".ip") else field)


class ClusterAddresses:
    """What the cluster's addresses are: machine networks (day1_facts: CIDR texts or install-config entries
    {cidr: ...}), VIPs, and the Nodes that hold each address."""

    def __init__(self, cluster: dict[str, Any], replace_node: str = "") -> None:
        cidrs = [net.get("cidr") if isinstance(net, dict) else net for net in cluster.get("machine_networks") or []]
        for cidr in (cidr for cidr in cidrs if parse_network(cidr) is None):
            what = "is not a CIDR such as 192.168.111.0/24; the cluster's install-config or Network config says so"
            raise Day2Error(f"cluster: field machine_networks value {cidr!r} {what}: fix it there")
        self.networks = [parse_network(cidr) for cidr in cidrs]
        vips = [(parse_ip(vip), key, kind) for key, kind in VIP_KINDS for vip in cluster.get(key) or []]
        self.vips = {str(vip): f"{kind} ({key} of day1_facts)" for vip, key, kind in vips if vip is not None}
        self.owners: dict[str, list[dict[str, Any]]] = {}
        for node in (node for node in cluster.get("nodes") or [] if node.get("name") != replace_node):
            # (the replaced Node is deleted before the host joins again)
            for address in (parse_ip(ip) for ip in node.get("internal_ips") or []):
                if address is not None:
                    self.owners.setdefault(str(address), []).append(node)

    def check(self, host: CheckedHost, problems: Problems) -> None:
        report = problems.for_host(host.label)
        for owned in host.addresses:
            self._machine_network(host, owned, report)
            shown = str(owned.address)
            if shown in self.vips:
                fix = "give the host an address of its own: the VIP moves between the cluster's nodes"
                report(owned.field, shown, f"is the cluster's {self.vips[shown]}", fix)
            owners = [node for node in self.owners.get(shown, []) if node.get("name") != host.hostname]
            names = [f"{n.get('name')}{' (a control-plane node)' if is_control_plane(n) else ''}" for n in owners]
            if names:
                what = f"already belongs to Node {', '.join(names)}"
                report(owned.field, shown, what, "give the host a free address")

    def _machine_network(self, host: CheckedHost, owned: OwnedAddress, report: Report) -> None:
        address, version = owned.address, owned.address.version
        same_version = [net for net in self.networks if net.version == version]
        containing = sorted((net for net in same_version if address in net), key=lambda net: net.prefixlen)
        if not containing:
            shown = ", ".join(str(net.cidr) for net in same_version) or f"none of IPv{version}"
            fix = "use an address in a machine network: the node must reach the API server and the other nodes there"
            report(owned.field, str(address), f"is outside the cluster's machine networks ({shown})", fix)
            return
        network = containing[-1]
        if owned.prefix is None or owned.prefix == network.prefixlen or (not self.vips and version in host.routed):
            return  # (without VIPs: a routed part of the machine network, behind its gateway)
        why = "without a default gateway the rest of the machine network is unreachable"
        if self.vips:
            why = "the cluster's VIPs (keepalived) need every node on the machine network itself"
        what = f"does not match the machine network {network.cidr} that holds {address} (prefix {network.prefixlen})"
        fix = f"set the prefix length to {network.prefixlen}"
        report(prefix_field(owned.field), owned.prefix, f"{what}: {why}", fix)
