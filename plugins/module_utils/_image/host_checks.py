# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks of one new-worker host definition, and what they produce for nodes-config.yaml.

The types of the keys are ansible-core's to check (see hosts.py); these checks are about the values. Every problem
is reported through the caller's ``report(field, value, what, fix)``; nothing stops at the first.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.host_values import (
    check_root_device_hints,
    hostname_problem,
    is_number,
    number_instead_of_mac,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    ARCHITECTURE_ALIASES,
    normalize_architecture,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nmstate import (
    DEFAULT_ROUTE,
    MAX_INTERFACE_NAME,
    Interface,
    OwnedAddress,
    Report,
    check_address_in_subnet,
    check_dns_server,
    check_gateway,
    check_host_address,
    check_prefix,
    check_raw_network_config,
    check_vlan_id,
    generated_network_config,
    interface_name_problem,
    mac_problem,
    normalize_mac,
    raw_routes,
    subnet_of,
    vlan_interface_name,
)

# The simple variables that a raw network_config replaces. ip and ipv6 may stay: they name the address the
# install is followed at, which must be one of network_config's static addresses.
SIMPLE_NETWORK_KEYS = (
    "prefix_length",
    "gateway",
    "dns_servers",
    "vlan_id",
    "ipv6_prefix_length",
    "ipv6_gateway",
)
FOLLOWED_ADDRESS_KEYS = (("ip", 4), ("ipv6", 6))
DEFAULT_INTERFACE = "eth0"

# The collection's own rule (node-joiner has no such check): s390x and ppc64le workers only join clusters of
# their own architecture. Their platform rule (platform none only) is in nodes_config.
SINGLE_ARCHITECTURE_ONLY = ("ppc64le", "s390x")


def given(value: Any) -> bool:
    """AWX surveys send "" for an unanswered optional question: treat it like an unset variable."""
    return value is not None and value != "" and value != [] and value != {}


@dataclasses.dataclass
class CheckedHost:
    """What the checks of one host produced, ready to render."""

    hostname: Any
    label: str  # how problems name the host, even when hostname is invalid
    index: int = 0  # position in the hosts list
    architecture: str | None = None
    root_device_hints: dict[str, Any] | None = None
    interfaces: list[Interface] = dataclasses.field(default_factory=list)
    macs: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (field, MAC), for the uniqueness check
    network_config: dict[str, Any] | None = None
    addresses: list[OwnedAddress] = dataclasses.field(default_factory=list)  # the addresses the host will own
    routed: set[int] = dataclasses.field(default_factory=set)  # the IP versions with a default gateway

    def render(self) -> dict[str, Any]:
        host: dict[str, Any] = {"hostname": self.hostname, "role": "worker"}
        if self.root_device_hints:
            host["rootDeviceHints"] = self.root_device_hints
        host["interfaces"] = [{"name": name, "macAddress": mac} for name, mac in self.interfaces]
        host["networkConfig"] = self.network_config
        return host


class HostChecker:
    """Checks one host definition and builds its nmstate, reporting every problem found."""

    def __init__(
        self,
        host: dict[str, Any],
        label: str,
        default_architecture: str | None,
        allow_loopback: bool,
        report: Report,
    ) -> None:
        self.host = host
        self.report = report
        self.allow_loopback = allow_loopback
        self.default_architecture = default_architecture
        self.result = CheckedHost(host.get("name"), label)

    def check(self) -> CheckedHost:
        problem = hostname_problem(self.host.get("name"))
        if problem:
            self.report("name", self.host.get("name"), problem, "use a lower-case DNS name such as extra-worker-0")
        self.result.architecture = self._architecture()
        self.result.root_device_hints = self._root_device_hints()
        self.result.interfaces = self._interfaces()
        if given(self.host.get("network_config")):
            self._raw_network()
        else:
            self._simple_network()
        return self.result

    def _architecture(self) -> str | None:
        value = self.host.get("cpu_architecture")
        if not given(value):
            return self.default_architecture
        architecture = normalize_architecture(value)
        if architecture is None:
            self.report(
                "cpu_architecture",
                value,
                "is not a known architecture",
                "use one of: %s" % ", ".join(sorted(ARCHITECTURE_ALIASES)),
            )
            return self.default_architecture
        cluster = self.default_architecture
        if (
            cluster
            and architecture != cluster
            and (architecture in SINGLE_ARCHITECTURE_ONLY or cluster in SINGLE_ARCHITECTURE_ONLY)
        ):
            self.report(
                "cpu_architecture",
                value,
                "cannot join a %s cluster (s390x and ppc64le only join clusters of their own architecture)" % cluster,
                "use %s hardware for this worker" % cluster,
            )
        return architecture

    # --- root device hints -------------------------------------------------------------------

    def _root_device_hints(self) -> dict[str, Any] | None:
        hints = self.host.get("root_device_hints")
        if not given(hints):
            return None
        if not isinstance(hints, dict):
            self.report("root_device_hints", hints, "is not a mapping", "write e.g. {deviceName: /dev/sda}")
            return None
        check_root_device_hints(self.report, hints)
        return dict(hints)

    # --- interfaces ----------------------------------------------------------------------------

    def _interfaces(self) -> list[Interface]:
        """The host's (name, mac) list from interfaces, or from interface + mac_address."""
        listed = self.host.get("interfaces")
        mac_address = self.host.get("mac_address")
        if given(listed) and given(mac_address):
            self.report(
                "mac_address",
                mac_address,
                "is set together with interfaces",
                "give the MAC either in mac_address or in interfaces, not both",
            )
        if given(listed):
            return self._listed_interfaces(listed)
        if not given(mac_address):
            self.report(
                "mac_address",
                mac_address,
                "is not set",
                "set mac_address (or interfaces) so the ISO can recognise this host",
            )
            return []
        name = self.host.get("interface") if given(self.host.get("interface")) else DEFAULT_INTERFACE
        mac = self._checked_mac("mac_address", mac_address)
        problem = interface_name_problem(name)
        if problem:
            self.report("interface", name, problem, "use the NIC's name, e.g. eth0")
        return [(str(name), mac)] if mac else []

    def _listed_interfaces(self, listed: Any) -> list[Interface]:
        if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
            self.report(
                "interfaces",
                listed,
                "is not a list of {name, mac_address}",
                "write interfaces: [{name: eth0, mac_address: 00:02:46:e3:9e:7c}]",
            )
            return []
        result = []
        names = set()
        for index, item in enumerate(listed):
            field = "interfaces[%d]" % index
            name = item.get("name")
            problem = interface_name_problem(name)
            if problem:
                self.report(field + ".name", name, problem, "use the NIC's name, e.g. eth0")
                continue
            if name in names:
                self.report(field + ".name", name, "is listed twice", "list each interface once")
                continue
            names.add(name)
            mac = self._checked_mac(field + ".mac_address", item.get("mac_address"))
            if mac:
                result.append((name, mac))
        return result

    def _checked_mac(self, field: str, value: Any) -> str | None:
        mac = normalize_mac(value)
        if mac is not None:
            self.result.macs.append((field, mac))
        if mac is None:
            if is_number(value):
                self.report(field, value, *number_instead_of_mac(field, value))
            else:
                self.report(field, value, "is not a MAC address", "write six hex octets like 00:02:46:e3:9e:7c")
            return None
        problem = mac_problem(mac)
        if problem:
            self.report(field, value, problem, "use the NIC's burned-in unicast MAC")
            return None
        return mac

    # --- network -------------------------------------------------------------------------------

    def _raw_network(self) -> None:
        for key in SIMPLE_NETWORK_KEYS:
            if given(self.host.get(key)):
                self.report(
                    key,
                    self.host.get(key),
                    "is set together with network_config",
                    "put the setting into network_config or drop network_config",
                )
        declared = dict(self.result.interfaces)
        self.result.addresses = check_raw_network_config(
            self.report, self.host["network_config"], declared, self.allow_loopback
        )
        self.result.network_config = copy.deepcopy(self.host["network_config"])
        self._raw_default_routes()
        for key, version in FOLLOWED_ADDRESS_KEYS:
            if given(self.host.get(key)):
                self._followed_static_address(key, version)

    def _raw_default_routes(self) -> None:
        """A default route's next hop must be inside a static subnet of its IP version (IPv6: or link-local)."""
        for index, route in enumerate(raw_routes(self.host["network_config"])):
            next_hop = parse_ip(route.get("next-hop-address"))
            if next_hop is None or route.get("destination") != DEFAULT_ROUTE[next_hop.version]:
                continue
            subnets = [
                subnet_of(owned.address, owned.prefix)
                for owned in self.result.addresses
                if owned.address.version == next_hop.version
            ]
            if any(next_hop in subnet for subnet in subnets) or (next_hop.version == 6 and next_hop.is_link_local()):
                self.result.routed.add(next_hop.version)
            elif subnets:
                self.report(
                    "network_config.routes.config[%d].next-hop-address" % index,
                    route.get("next-hop-address"),
                    "is not inside a static subnet of network_config (%s)"
                    % ", ".join(str(subnet.cidr) for subnet in subnets),
                    "set the address of the router of the host's subnet",
                )

    def _followed_static_address(self, key: str, version: int) -> None:
        """With network_config, ip (ipv6) names the static address the install is followed at: one of its own."""
        value = self.host[key]
        statics = [str(owned.address) for owned in self.result.addresses if owned.address.version == version]
        address = parse_ip(value, version)
        if address is not None and str(address) in statics:
            return
        self.report(
            key,
            value,
            "is not a static IPv%d address of network_config (%s)" % (version, ", ".join(statics) or "it has none"),
            "set %s to the static address the host will have, or drop %s to follow the first static address of "
            "network_config" % (key, key),
        )

    def _simple_network(self) -> None:
        names = [name for name, _mac in self.result.interfaces]
        primary = str(self.host.get("interface") or "")
        if not primary:
            primary = names[0] if given(self.host.get("interfaces")) and names else DEFAULT_INTERFACE
        elif names and primary not in names:
            self.report(
                "interface",
                primary,
                "is not one of interfaces (%s)" % ", ".join(names),
                "name the interface that carries the addresses",
            )
        vlan_id = None
        if given(self.host.get("vlan_id")):
            vlan_id = check_vlan_id(self.report, "vlan_id", self.host["vlan_id"])
            if vlan_id is not None and len(vlan_interface_name(primary, vlan_id)) > MAX_INTERFACE_NAME:
                self.report(
                    "vlan_id",
                    self.host["vlan_id"],
                    "makes the VLAN interface name %s longer than %d characters"
                    % (vlan_interface_name(primary, vlan_id), MAX_INTERFACE_NAME),
                    "use a shorter base interface name",
                )
                vlan_id = None
        ipv4 = self._family(4, "ip", "prefix_length", "gateway")
        ipv6 = self._family(6, "ipv6", "ipv6_prefix_length", "ipv6_gateway")
        dns_servers = self._dns_servers()
        self.result.network_config = generated_network_config(
            self.result.interfaces, primary, vlan_id, ipv4, ipv6, dns_servers
        )

    def _family(self, version: int, ip_key: str, prefix_key: str, gateway_key: str) -> dict[str, Any] | None:
        """Static settings of one IP version as {ip, prefix, gateway}, or None (unset or invalid)."""
        value, prefix_value, gateway_value = (
            self.host.get(ip_key),
            self.host.get(prefix_key),
            self.host.get(gateway_key),
        )
        if not given(value):
            for key, other in ((prefix_key, prefix_value), (gateway_key, gateway_value)):
                if given(other):
                    self.report(
                        key,
                        other,
                        "is set but %s is not (the host would use DHCP)" % ip_key,
                        "set %s too, or remove %s" % (ip_key, key),
                    )
            return None
        if isinstance(value, str) and "/" in value:
            self.report(
                ip_key, value, "contains a prefix", "write the address alone and put the prefix into %s" % prefix_key
            )
            return None
        address = check_host_address(self.report, ip_key, value, version, self.allow_loopback)
        if not given(prefix_value):
            self.report(
                prefix_key,
                prefix_value,
                "is not set but %s is" % ip_key,
                "set the prefix length of the host's subnet, e.g. %d" % (24 if version == 4 else 64),
            )
            return None
        prefix = check_prefix(self.report, prefix_key, prefix_value, version)
        if address is None or prefix is None:
            return None
        check_address_in_subnet(self.report, ip_key, value, address, prefix)
        self.result.addresses.append(OwnedAddress(ip_key, address, prefix))
        gateway = None
        if given(gateway_value):
            gateway = check_gateway(
                self.report, gateway_key, gateway_value, address, prefix, "%s/%s" % (ip_key, prefix_key)
            )
            if gateway is not None:
                self.result.routed.add(version)
        return {"ip": str(address), "prefix": prefix, "gateway": None if gateway is None else str(gateway)}

    def _dns_servers(self) -> list[str]:
        value = self.host.get("dns_servers")
        if not given(value):
            return []
        if isinstance(value, str):
            # A flat survey answer: "192.168.111.1, 192.168.111.2".
            servers = [item for item in re.split(r"[\s,]+", value) if item]
        elif isinstance(value, list):
            servers = value
        else:
            self.report("dns_servers", value, "is not a list of IP addresses", "write dns_servers: [192.168.111.1]")
            return []
        checked = []
        for index, server in enumerate(servers):
            if isinstance(server, str) and not server.strip():
                continue  # an unanswered survey question ("" becomes [""]) or a trailing comma
            address = check_dns_server(self.report, "dns_servers[%d]" % index, server)
            if address is not None:
                checked.append(str(address))
        return checked
