# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nmstate for day-2 hosts: generated from simple variables, and checks of addresses and raw nmstate.

node-joiner turns nmstate into NetworkManager keyfiles with ``nmstatectl gc`` inside its pod, so a
mistake is otherwise found only after the ISO build (or on the booted host). Everything here reports
through a ``report(field, value, what, fix)`` callable bound to one host, so that all the problems of
an inventory are collected in one run instead of failing on the first.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import (
    netaddr,
    normalize_mac,
    parse_ip,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Report

# report(field, value, what is wrong, how to fix it): records one problem of one host.
# An interface as (name, normalized MAC).
Interface = tuple[str, str]


class OwnedAddress(NamedTuple):
    """A static address a host will own: the field that gives it, the netaddr.IPAddress and its prefix length."""

    field: str
    address: Any
    prefix: int


MAIN_ROUTE_TABLE = 254
DEFAULT_ROUTE = {4: "0.0.0.0/0", 6: "::/0"}
EXAMPLE_ADDRESS = {4: "192.168.111.90", 6: "fd00:1101::90"}
MAX_PREFIX = {4: 32, 6: 128}
# Linux IFNAMSIZ is 16 bytes including the terminating NUL.
MAX_INTERFACE_NAME = 15
VLAN_ID_RANGE = (1, 4094)

# --- scalar parsing ---------------------------------------------------------------------------


def parse_int(value: Any) -> int | None:
    """Return value as an int, accepting decimal strings (``-e`` extra vars are strings); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r"^[0-9]+$", value.strip()):
        return int(value.strip())
    return None


def mac_problem(mac: str) -> str | None:
    """Why a normalized MAC cannot identify a host NIC, or None."""
    if mac == "00:00:00:00:00:00":
        return "is all zeros"
    if int(mac[:2], 16) & 1:
        return "is a multicast address (lowest bit of the first octet set)"
    return None


def interface_name_problem(name: Any) -> str | None:
    """Why a text cannot be a Linux interface name, or None."""
    if not isinstance(name, str) or not name:
        return "is not a non-empty string"
    if len(name) > MAX_INTERFACE_NAME:
        return "is longer than %d characters (Linux limit)" % MAX_INTERFACE_NAME
    if name in (".", "..") or re.search(r"[\s/:]", name):
        return "contains whitespace, '/' or ':' or is '.'/'..'"
    return None


def _reserved_reason(address: Any, allow_loopback: bool) -> str | None:
    if address.value == 0:
        return "is the unspecified address"
    if address.is_multicast():
        return "is a multicast address"
    if address.is_loopback() and not allow_loopback:
        return "is a loopback address"
    if address.is_link_local():
        return "is a link-local address"
    if address.version == 4 and address == netaddr.IPAddress("255.255.255.255"):
        return "is the limited broadcast address"
    return None


# --- address checks -------------------------------------------------------------------------


def _address_of_version(report: Report, field: str, value: Any, version: int) -> Any:
    """``value`` as a netaddr.IPAddress of IP ``version``, or None after reporting."""
    address = parse_ip(value, version)
    if address is None:
        report(
            field,
            value,
            "is not an IPv%d address" % version,
            "write a plain address such as %s" % EXAMPLE_ADDRESS[version],
        )
    return address


def check_host_address(report: Report, field: str, value: Any, version: int, allow_loopback: bool) -> Any:
    """Check an address a host will own; return the IPAddress or None after reporting."""
    address = _address_of_version(report, field, value, version)
    if address is None:
        return None
    reason = _reserved_reason(address, allow_loopback)
    if reason:
        report(field, value, reason, "use a unicast address of the host's network")
        return None
    return address


def check_prefix(report: Report, field: str, value: Any, version: int) -> int | None:
    """Check a prefix length; return it as an int or None after reporting."""
    prefix = parse_int(value)
    if prefix is None or not 1 <= prefix <= MAX_PREFIX[version]:
        report(
            field, value, "is not an IPv%d prefix length" % version, "use an integer from 1 to %d" % MAX_PREFIX[version]
        )
        return None
    return prefix


def subnet_of(address: Any, prefix: int) -> Any:
    return netaddr.IPNetwork("%s/%d" % (address, prefix))


def check_address_in_subnet(report: Report, field: str, value: Any, address: Any, prefix: int) -> None:
    """Report an address that is the network (or IPv4 broadcast) address of its own subnet."""
    subnet = subnet_of(address, prefix)
    # /31 and /32 (IPv4), /127 and /128 (IPv6) have no network or broadcast address to avoid.
    if prefix >= MAX_PREFIX[address.version] - 1:
        return
    if address == subnet.network:
        report(field, value, "is the network address of %s" % subnet.cidr, "use a host address inside the subnet")
    elif address.version == 4 and address == subnet.broadcast:
        report(field, value, "is the broadcast address of %s" % subnet.cidr, "use a host address inside the subnet")


def check_gateway(report: Report, field: str, value: Any, address: Any, prefix: int, subnet_fields: str) -> Any:
    """Check a default gateway against the host's own address and prefix."""
    version = address.version
    gateway = _address_of_version(report, field, value, version)
    if gateway is None:
        return None
    if gateway.value == 0 or gateway.is_multicast():
        report(field, value, "is not a unicast address", "set the address of the router")
        return None
    if gateway == address:
        report(field, value, "is the host's own address", "set the address of the router")
        return None
    # IPv6 routers are commonly reached through their link-local address.
    if version == 6 and gateway.is_link_local():
        return gateway
    subnet = subnet_of(address, prefix)
    if gateway not in subnet:
        report(field, value, "is not inside %s (%s)" % (subnet.cidr, subnet_fields), "set a gateway in that subnet")
        return None
    check_address_in_subnet(report, field, value, gateway, prefix)
    return gateway


def check_dns_server(report: Report, field: str, value: Any) -> Any:
    server = parse_ip(value)
    if server is None or server.value == 0 or server.is_multicast():
        report(field, value, "is not a unicast IP address", "list DNS servers as IP addresses")
        return None
    return server


def check_vlan_id(report: Report, field: str, value: Any) -> int | None:
    vlan_id = parse_int(value)
    if vlan_id is None or not VLAN_ID_RANGE[0] <= vlan_id <= VLAN_ID_RANGE[1]:
        report(field, value, "is not a VLAN ID", "use an integer from %d to %d" % VLAN_ID_RANGE)
        return None
    return vlan_id


# --- generation from simple variables -------------------------------------------------------


def vlan_interface_name(base: str, vlan_id: int) -> str:
    return "%s.%d" % (base, vlan_id)


def _ip_settings(ipv4: dict[str, Any] | None, ipv6: dict[str, Any] | None) -> dict[str, Any]:
    """nmstate ipv4/ipv6 sections for the interface carrying the host's addresses.

    ipv4 and ipv6 are None or dicts with ``ip`` and ``prefix``; neither means DHCP (IPv4).
    """
    if ipv4 is None and ipv6 is None:
        return {"ipv4": {"enabled": True, "dhcp": True}}
    settings: dict[str, Any] = {}
    if ipv4 is None:
        # Without this an IPv6-only host would also wait for a DHCPv4 lease that never comes.
        settings["ipv4"] = {"enabled": False}
    for family, config in (("ipv4", ipv4), ("ipv6", ipv6)):
        if config is not None:
            settings[family] = {
                "enabled": True,
                "dhcp": False,
                "address": [{"ip": config["ip"], "prefix-length": config["prefix"]}],
            }
    return settings


def _without_addresses() -> dict[str, Any]:
    return {"ipv4": {"enabled": False}, "ipv6": {"enabled": False}}


def generated_network_config(
    interfaces: list[Interface],
    primary: str,
    vlan_id: int | None,
    ipv4: dict[str, Any] | None,
    ipv6: dict[str, Any] | None,
    dns_servers: list[str],
) -> dict[str, Any]:
    """nmstate for a host described by simple variables.

    interfaces: list of (name, mac) pairs; primary: the name of the one that carries the addresses
    (directly, or through a VLAN on top of it when vlan_id is set); the others are brought up
    without addresses. ipv4/ipv6: None or {"ip", "prefix", "gateway"} (gateway may be None).
    """
    address_interface = primary if vlan_id is None else vlan_interface_name(primary, vlan_id)
    nm_interfaces: list[dict[str, Any]] = []
    for name, mac in interfaces:
        entry: dict[str, Any] = {"name": name, "type": "ethernet", "state": "up", "mac-address": mac}
        if name == address_interface:
            entry.update(_ip_settings(ipv4, ipv6))
        else:
            entry.update(_without_addresses())
        nm_interfaces.append(entry)
    if vlan_id is not None:
        vlan: dict[str, Any] = {
            "name": address_interface,
            "type": "vlan",
            "state": "up",
            "vlan": {"base-iface": primary, "id": vlan_id},
        }
        vlan.update(_ip_settings(ipv4, ipv6))
        nm_interfaces.append(vlan)

    config: dict[str, Any] = {"interfaces": nm_interfaces}
    if dns_servers:
        config["dns-resolver"] = {"config": {"server": list(dns_servers)}}
    routes: list[dict[str, Any]] = []
    for version, family in ((4, ipv4), (6, ipv6)):
        if family is not None and family.get("gateway"):
            routes.append(
                {
                    "destination": DEFAULT_ROUTE[version],
                    "next-hop-address": family["gateway"],
                    "next-hop-interface": address_interface,
                    "table-id": MAIN_ROUTE_TABLE,
                }
            )
    if routes:
        config["routes"] = {"config": routes}
    return config


# --- checks of raw nmstate ------------------------------------------------------------------


def _is_mapping_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def check_raw_network_config(
    report: Report, config: Any, declared: dict[str, str], allow_loopback: bool
) -> list[OwnedAddress]:
    """Check a user-written nmstate document against the host's declared interfaces.

    declared: {name: normalized mac} from the host's ``interfaces``. Returns the static addresses found
    (OwnedAddress), for the uniqueness and cluster checks.
    """
    field = "network_config"
    if not isinstance(config, dict):
        report(field, config, "is not a mapping", "write nmstate YAML with an 'interfaces' list")
        return []
    nm_interfaces = config.get("interfaces")
    if not _is_mapping_list(nm_interfaces) or not nm_interfaces:
        report(
            field + ".interfaces",
            nm_interfaces,
            "is not a non-empty list of interfaces",
            "list the host's interfaces in nmstate form (name, type, state)",
        )
        return []

    names = set()
    addresses = []
    for index, entry in enumerate(nm_interfaces):
        entry_field = "%s.interfaces[%d]" % (field, index)
        name = entry.get("name")
        problem = interface_name_problem(name)
        if problem:
            report(entry_field + ".name", name, problem, "name every interface")
            continue
        names.add(name)
        _check_raw_interface_mac(report, entry_field, entry, declared)
        addresses.extend(_check_raw_addresses(report, entry_field, entry, allow_loopback))

    for name in sorted(set(declared) - names):
        report(
            "interfaces",
            name,
            "is not an interface of network_config",
            "add it to network_config.interfaces or remove it from interfaces",
        )
    _check_raw_dns(report, field, config)
    _check_raw_routes(report, field, config, names)
    return addresses


def _check_raw_interface_mac(report: Report, entry_field: str, entry: dict[str, Any], declared: dict[str, str]) -> None:
    if entry.get("type") != "ethernet" or "mac-address" not in entry:
        return
    mac = normalize_mac(entry["mac-address"])
    if mac is None:
        report(
            entry_field + ".mac-address",
            entry["mac-address"],
            "is not a MAC address",
            "write it as six hex octets like 00:02:46:e3:9e:7c",
        )
    elif entry["name"] not in declared:
        report(
            entry_field + ".name",
            entry["name"],
            "is not listed in interfaces",
            "add {name: %s, mac_address: %s} to interfaces" % (entry["name"], mac),
        )
    elif declared[entry["name"]] != mac:
        report(
            entry_field + ".mac-address",
            entry["mac-address"],
            "differs from the MAC %s given for %s in interfaces" % (declared[entry["name"]], entry["name"]),
            "make the two MACs the same",
        )


def _check_raw_addresses(
    report: Report, entry_field: str, entry: dict[str, Any], allow_loopback: bool
) -> list[OwnedAddress]:
    found = []
    for version in (4, 6):
        family_field = "%s.ipv%d" % (entry_field, version)
        family = entry.get("ipv%d" % version)
        if family is None:
            continue
        if not isinstance(family, dict):
            report(family_field, family, "is not a mapping", "write {enabled: true, dhcp: false, address: [...]}")
            continue
        address_list = family.get("address", [])
        if not _is_mapping_list(address_list):
            report(
                family_field + ".address",
                address_list,
                "is not a list of {ip, prefix-length}",
                "write address: [{ip: %s, prefix-length: N}]" % EXAMPLE_ADDRESS[version],
            )
            continue
        for index, item in enumerate(address_list):
            item_field = "%s.address[%d]" % (family_field, index)
            address = check_host_address(report, item_field + ".ip", item.get("ip"), version, allow_loopback)
            prefix = check_prefix(report, item_field + ".prefix-length", item.get("prefix-length"), version)
            if address is not None and prefix is not None:
                check_address_in_subnet(report, item_field + ".ip", item.get("ip"), address, prefix)
                found.append(OwnedAddress(item_field + ".ip", address, prefix))
    return found


def _check_raw_dns(report: Report, field: str, config: dict[str, Any]) -> None:
    resolver = config.get("dns-resolver")
    if resolver is None:
        return
    servers = resolver.get("config", {}).get("server", []) if isinstance(resolver, dict) else None
    if not isinstance(servers, list):
        report(
            field + ".dns-resolver",
            resolver,
            "is not {config: {server: [...]}}",
            "list DNS servers under dns-resolver.config.server",
        )
        return
    for index, server in enumerate(servers):
        check_dns_server(report, "%s.dns-resolver.config.server[%d]" % (field, index), server)


def raw_routes(config: Any) -> list[dict[str, Any]]:
    """The routes of an nmstate document that are mappings (what a mistake leaves usable)."""
    routes = config.get("routes") if isinstance(config, dict) else None
    route_list = routes.get("config") if isinstance(routes, dict) else None
    return [route for route in route_list if isinstance(route, dict)] if isinstance(route_list, list) else []


def _check_raw_routes(report: Report, field: str, config: dict[str, Any], interface_names: set[str]) -> None:
    routes = config.get("routes")
    if routes is None:
        return
    route_list = routes.get("config", []) if isinstance(routes, dict) else None
    if route_list is None or not _is_mapping_list(route_list):
        report(field + ".routes", routes, "is not {config: [...]}", "list routes under routes.config")
        return
    for index, route in enumerate(route_list):
        route_field = "%s.routes.config[%d]" % (field, index)
        destination = route.get("destination")
        if not _is_cidr(destination):
            report(
                route_field + ".destination",
                destination,
                "is not a network in CIDR form",
                "write e.g. 0.0.0.0/0 or ::/0",
            )
        next_hop = route.get("next-hop-address")
        if next_hop is not None and parse_ip(next_hop) is None:
            report(route_field + ".next-hop-address", next_hop, "is not an IP address", "set the address of the router")
        interface = route.get("next-hop-interface")
        if interface is not None and interface not in interface_names:
            report(
                route_field + ".next-hop-interface",
                interface,
                "is not an interface of network_config",
                "use one of: %s" % ", ".join(sorted(interface_names)),
            )


def _is_cidr(value: Any) -> bool:
    if not isinstance(value, str) or "/" not in value:
        return False
    address, prefix = value.split("/", 1)
    ip = parse_ip(address)
    length = parse_int(prefix)
    return ip is not None and length is not None and 0 <= length <= MAX_PREFIX[ip.version]
