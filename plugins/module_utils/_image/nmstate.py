# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nmstate for day-2 hosts: generated from the simple keys, and the checks of addresses and of raw nmstate.

node-joiner turns nmstate into NetworkManager keyfiles with ``nmstatectl gc`` inside its pod, so a mistake is
otherwise found only after the ISO build (or on the booted host). Everything here reports through a
``report(field, value, what, fix)`` callable bound to one host, so that all the problems of an inventory are
collected in one run instead of failing on the first.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import netaddr, normalize_mac, parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Report

Interface = tuple[str, str]  # (name, normalized MAC)
Family = Optional[dict[str, Any]]  # the static settings of one IP version: {ip, prefix, gateway}, or None


class OwnedAddress(NamedTuple):
    """An address a host will own: the field that gives it, the netaddr.IPAddress and its prefix length (None: the
    address of a DHCP reservation)."""

    field: str
    address: Any
    prefix: int | None


MAIN_ROUTE_TABLE = 254
DEFAULT_ROUTE = {4: "0.0.0.0/0", 6: "::/0"}
EXAMPLE_ADDRESS = {4: "192.168.111.90", 6: "fd00:1101::90"}
MAX_PREFIX = {4: 32, 6: 128}
MAX_INTERFACE_NAME = 15  # Linux IFNAMSIZ is 16 bytes including the terminating NUL
VLAN_ID_RANGE = (1, 4094)
ROUTE_KEYS = ("destination", "next-hop-address", "next-hop-interface")
SRIOV_VF = re.compile(r"^sriov:[^\s/:]+:[0-9]+$")  # nmstate's name of a NIC's SR-IOV virtual function
NOT_MAC_FIX = "write six hex octets like 00:02:46:e3:9e:7c"
LOOPBACK = "is a loopback address"
LAB_FIX = (
    "this cluster's machine network is a loopback network, as a test lab's is: set "
    "OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1 in the controller's environment to let the lab's hosts through (a real "
    "host needs a unicast address of its network)"
)

# --- single values -----------------------------------------------------------------------------


def parse_int(value: Any) -> int | None:
    """Return value as an int, accepting decimal strings (``-e`` extra vars are strings); else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and re.match(r"^\s*[0-9]+\s*$", value) else None


def check_number(report: Report, field: str, value: Any, low: int, high: int, what: str) -> int | None:
    """``value`` as an int from ``low`` to ``high``; None after reporting that it is not ``what``."""
    number = parse_int(value)
    if number is None or not low <= number <= high:
        report(field, value, f"is not {what}", f"use an integer from {low} to {high}")
        return None
    return number


def check_prefix(report: Report, field: str, value: Any, version: int) -> int | None:
    return check_number(report, field, value, 1, MAX_PREFIX[version], f"an IPv{version} prefix length")


def mac_problem(mac: str) -> str | None:
    """Why a normalized MAC cannot identify a host NIC, or None."""
    if mac == "00:00:00:00:00:00":
        return "is all zeros"
    return "is a multicast address (lowest bit of the first octet set)" if int(mac[:2], 16) & 1 else None


def interface_name_problem(name: Any) -> str | None:
    """Why a text cannot be a Linux interface name, or None."""
    if not isinstance(name, str) or not name:
        return "is not a non-empty string"
    if len(name) > MAX_INTERFACE_NAME:
        return f"is longer than {MAX_INTERFACE_NAME} characters (Linux limit)"
    bad = name in (".", "..") or re.search(r"[\s/:]", name)
    return "contains whitespace, '/' or ':' or is '.'/'..'" if bad else None


def check_address(report: Report, field: str, value: Any, version: int) -> Any:
    """``value`` as a netaddr.IPAddress of IP ``version``, or None after reporting."""
    address = parse_ip(value, version)
    if address is None:
        fix = f"write a plain address such as {EXAMPLE_ADDRESS[version]}"
        report(field, value, f"is not an IPv{version} address", fix)
    return address


def check_host_address(report: Report, field: str, value: Any, version: int, allow_loopback: bool) -> Any:
    """Check an address a host will own; return the IPAddress or None after reporting."""
    address = check_address(report, field, value, version)
    if address is None:
        return None
    reasons = (
        (address.value == 0, "is the unspecified address"),
        (address.is_multicast(), "is a multicast address"),
        (address.is_loopback() and not allow_loopback, LOOPBACK),
        (address.is_link_local(), "is a link-local address"),
        (address.version == 4 and address.value == 0xFFFFFFFF, "is the limited broadcast address"),
    )
    reason = next((why for found, why in reasons if found), None)
    if reason:
        report(field, value, reason, "use a unicast address of the host's network")
    return None if reason else address


def lab_hint(problem: dict[str, Any]) -> dict[str, Any]:
    """A loopback refusal in a cluster whose own machine network is loopback (a test lab such as tests/lab, whose
    hosts all live on one machine): its fix is the lab's switch, not "use a unicast address"."""
    head, found, _fix = str(problem["message"]).partition(f" {LOOPBACK}; ")
    return dict(problem, message=f"{head} {LOOPBACK}; {LAB_FIX}") if found else problem


def subnet_of(address: Any, prefix: int) -> Any:
    return netaddr.IPNetwork(f"{address}/{prefix}")


def check_address_in_subnet(report: Report, field: str, value: Any, address: Any, prefix: int) -> None:
    """Report an address that is the network (or IPv4 broadcast) address of its own subnet; /31 and /32 (IPv4),
    /127 and /128 (IPv6) have none."""
    subnet = subnet_of(address, prefix)
    broadcast = address.version == 4 and address == subnet.broadcast
    if prefix < MAX_PREFIX[address.version] - 1 and (address == subnet.network or broadcast):
        what = f"is the {'broadcast' if broadcast else 'network'} address of {subnet.cidr}"
        report(field, value, what, "use a host address inside the subnet")


def check_gateway(report: Report, field: str, value: Any, address: Any, prefix: int, subnet_fields: str) -> Any:
    """Check a default gateway against the host's own address and prefix."""
    gateway, subnet = check_address(report, field, value, address.version), subnet_of(address, prefix)
    if gateway is None or (gateway.version == 6 and gateway.is_link_local()):
        return gateway  # IPv6 routers are commonly reached through their link-local address
    if gateway.value == 0 or gateway.is_multicast() or gateway == address:
        what = "is the host's own address" if gateway == address else "is not a unicast address"
        report(field, value, what, "set the address of the router")
        return None
    if gateway not in subnet:
        report(field, value, f"is not inside {subnet.cidr} ({subnet_fields})", "set a gateway in that subnet")
        return None
    check_address_in_subnet(report, field, value, gateway, prefix)
    return gateway


def check_dns_server(report: Report, field: str, value: Any) -> Any:
    server = parse_ip(value)
    if server is not None and server.value != 0 and not server.is_multicast():
        return server
    report(field, value, "is not a unicast IP address", "list DNS servers as IP addresses")
    return None


# --- generated from the simple keys ---------------------------------------------------------------


def _ip_settings(ipv4: Family, ipv6: Family) -> dict[str, Any]:
    """nmstate ipv4/ipv6 sections of the interface carrying the host's addresses ({ip, prefix} or None each;
    neither means DHCP). Without ipv4 disabled an IPv6-only host would also wait for a DHCPv4 lease that never
    comes."""
    if ipv4 is None and ipv6 is None:
        return {"ipv4": {"enabled": True, "dhcp": True}}
    static = {
        name: {"enabled": True, "dhcp": False, "address": [{"ip": family["ip"], "prefix-length": family["prefix"]}]}
        for name, family in (("ipv4", ipv4), ("ipv6", ipv6))
        if family is not None
    }
    return dict({"ipv4": {"enabled": False}}, **static)


def generated_network_config(
    interfaces: list[Interface], primary: str, vlan_id: int | None, ipv4: Family, ipv6: Family, dns_servers: list[str]
) -> dict[str, Any]:
    """nmstate for a host described by the simple keys.

    ``primary`` carries the addresses (directly, or through a VLAN on top of it when ``vlan_id`` is set); the other
    interfaces are brought up without addresses. ipv4/ipv6: None or {"ip", "prefix", "gateway"} (gateway may be
    None).
    """
    carrier = primary if vlan_id is None else f"{primary}.{vlan_id}"
    nm_interfaces = []
    for name, mac in interfaces:
        # Only the carrier has addresses; a fresh mapping each, so that the YAML has no aliases.
        ip = _ip_settings(ipv4, ipv6) if name == carrier else {"ipv4": {"enabled": False}, "ipv6": {"enabled": False}}
        nm_interfaces.append(dict({"name": name, "type": "ethernet", "state": "up", "mac-address": mac}, **ip))
    if vlan_id is not None:
        vlan = {"name": carrier, "type": "vlan", "state": "up", "vlan": {"base-iface": primary, "id": vlan_id}}
        nm_interfaces.append(dict(vlan, **_ip_settings(ipv4, ipv6)))
    config: dict[str, Any] = {"interfaces": nm_interfaces}
    if dns_servers:
        config["dns-resolver"] = {"config": {"server": list(dns_servers)}}
    routes = [
        {"destination": DEFAULT_ROUTE[version], "next-hop-address": family["gateway"], "next-hop-interface": carrier}
        for version, family in ((4, ipv4), (6, ipv6))
        if family is not None and family.get("gateway")
    ]
    if routes:
        config["routes"] = {"config": [dict(route, **{"table-id": MAIN_ROUTE_TABLE}) for route in routes]}
    return config


# --- raw nmstate ----------------------------------------------------------------------------------


def _mappings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _links(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """(field, name) of the interfaces an nmstate interface is built on: a bond's ports (``link-aggregation.port``,
    nmstate's older ``slaves``) and a VLAN's base (``vlan.base-iface``)."""
    bond, vlan = entry.get("link-aggregation"), entry.get("vlan")
    key = next((k for k in ("port", "slaves") if isinstance(bond, dict) and k in bond), "port")
    ports = bond.get(key) if isinstance(bond, dict) else None
    found = [(f"link-aggregation.{key}[{i}]", port) for i, port in enumerate(ports if isinstance(ports, list) else [])]
    return found + ([("vlan.base-iface", vlan.get("base-iface"))] if isinstance(vlan, dict) else [])


def check_raw_network_config(
    report: Report, config: dict[str, Any], declared: dict[str, str], allow_loopback: bool
) -> tuple[list[OwnedAddress], set[int]]:
    """Check a user-written nmstate document against the host's ``interfaces`` (``declared``: {name: MAC}); return
    its static addresses (for the uniqueness and cluster checks) and the IP versions it has a default route of.

    As nmstate reads it: a bond's port or a VLAN's base that network_config does not define is an ethernet NIC
    (``nmstatectl gc``, which node-joiner runs, assumes so: nmstate/nmstate rust/src/lib/gen_conf.rs
    @edd553814e12045210ff482e2113f1085a3fa16f ``set_missing_port_to_eth``), here one of ``interfaces``, known by its
    MAC. ``sriov:<PF>:<VF>`` names a virtual function of a NIC (``SrIovConfig::VF_NAMING_PREFIX``, rust/src/lib/ifaces/
    sriov.rs@d224862382cf68c43c1f3633ae1701cea4e1b1a5)."""
    nm_interfaces = config.get("interfaces")
    if not _mappings(nm_interfaces) or not nm_interfaces:
        fix = "list the host's interfaces in nmstate form (name, type, state)"
        report("network_config.interfaces", nm_interfaces, "is not a non-empty list of interfaces", fix)
        return [], set()
    names, links, addresses = set(), [], []
    for index, entry in enumerate(nm_interfaces):
        field, name = f"network_config.interfaces[{index}]", entry.get("name")
        problem = None if SRIOV_VF.match(str(name)) else interface_name_problem(name)
        if problem:
            report(field + ".name", name, problem, "name every interface")
            continue
        names.add(name)
        links += [(f"{field}.{where}", link) for where, link in _links(entry)]
        _check_raw_mac(report, field, entry, declared)
        addresses += _raw_addresses(report, field, entry, allow_loopback)
    for field, link in links:
        if link not in names and link not in declared:
            fix = f"add {{name: {link}, mac_address: <its MAC>}} to interfaces (or define it in network_config)"
            report(field, link, "is neither an interface of network_config nor a NIC of interfaces", fix)
    for name in sorted(set(declared) - names - {link for _field, link in links}):
        fix = "add it to network_config.interfaces (or as a bond's port or a VLAN's base) or remove it from interfaces"
        report("interfaces", name, "is not an interface of network_config", fix)
    resolver = config.get("dns-resolver") or {}
    resolver_config = resolver.get("config", {}) if isinstance(resolver, dict) else None
    servers = resolver_config.get("server", []) if isinstance(resolver_config, dict) else None
    if not isinstance(servers, list):
        fix = "list DNS servers under dns-resolver.config.server"
        report("network_config.dns-resolver", resolver, "is not {config: {server: [...]}}", fix)
    for index, server in enumerate(servers if isinstance(servers, list) else []):
        check_dns_server(report, f"network_config.dns-resolver.config.server[{index}]", server)
    return addresses, _check_raw_routes(report, config, names, addresses)


def _check_raw_mac(report: Report, field: str, entry: dict[str, Any], declared: dict[str, str]) -> None:
    if entry.get("type") != "ethernet" or "mac-address" not in entry:
        return
    name, given_mac = entry["name"], entry["mac-address"]
    mac = normalize_mac(given_mac)
    if mac is None:
        report(field + ".mac-address", given_mac, "is not a MAC address", NOT_MAC_FIX)
    elif name not in declared:
        fix = f"add {{name: {name}, mac_address: {mac}}} to interfaces"
        report(field + ".name", name, "is not listed in interfaces", fix)
    elif declared[name] != mac:
        what = f"differs from the MAC {declared[name]} given for {name} in interfaces"
        report(field + ".mac-address", given_mac, what, "make the two MACs the same")


def _raw_addresses(report: Report, field: str, entry: dict[str, Any], allow_loopback: bool) -> list[OwnedAddress]:
    found = []
    for version in (4, 6):
        family_field, family = f"{field}.ipv{version}", entry.get(f"ipv{version}")
        listed = family.get("address", []) if isinstance(family, dict) else []
        if family is not None and not isinstance(family, dict):
            report(family_field, family, "is not a mapping", "write {enabled: true, dhcp: false, address: [...]}")
        elif not _mappings(listed):
            fix = f"write address: [{{ip: {EXAMPLE_ADDRESS[version]}, prefix-length: N}}]"
            report(family_field + ".address", listed, "is not a list of {ip, prefix-length}", fix)
        for index, item in enumerate(listed if _mappings(listed) else []):
            where = f"{family_field}.address[{index}]"
            address = check_host_address(report, where + ".ip", item.get("ip"), version, allow_loopback)
            prefix = check_prefix(report, where + ".prefix-length", item.get("prefix-length"), version)
            if address is not None and prefix is not None:
                check_address_in_subnet(report, where + ".ip", item.get("ip"), address, prefix)
                found.append(OwnedAddress(where + ".ip", address, prefix))
    return found


def _check_raw_routes(report: Report, config: dict[str, Any], names: set[str], owned: list[OwnedAddress]) -> set[int]:
    """Check the routes; return the IP versions of the default routes that leave through a router of a static
    subnet of theirs (IPv6: or a link-local one), which makes a routed host address acceptable."""
    routes, routed = config.get("routes"), set()
    listed = routes.get("config", []) if isinstance(routes, dict) else None
    if routes is not None and not _mappings(listed):
        report("network_config.routes", routes, "is not {config: [...]}", "list routes under routes.config")
    for index, route in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(route, dict):
            continue
        field, (destination, next_hop, interface) = f"network_config.routes.config[{index}]", map(route.get, ROUTE_KEYS)
        if not _is_cidr(destination):
            report(field + ".destination", destination, "is not a network in CIDR form", "write e.g. 0.0.0.0/0 or ::/0")
        hop = parse_ip(next_hop)
        if next_hop is not None and hop is None:
            report(field + ".next-hop-address", next_hop, "is not an IP address", "set the address of the router")
        if interface is not None and interface not in names:
            fix = f"use one of: {', '.join(sorted(names))}"
            report(field + ".next-hop-interface", interface, "is not an interface of network_config", fix)
        if hop is None or destination != DEFAULT_ROUTE[hop.version]:
            continue
        subnets = [
            subnet_of(a, prefix) for _field, a, prefix in owned if a.version == hop.version and prefix is not None
        ]
        if any(hop in subnet for subnet in subnets) or (hop.version == 6 and hop.is_link_local()):
            routed.add(hop.version)
        elif subnets:
            what = f"is not inside a static subnet of network_config ({', '.join(str(s.cidr) for s in subnets)})"
            report(field + ".next-hop-address", next_hop, what, "set the address of the router of the host's subnet")
    return routed


def _is_cidr(value: Any) -> bool:
    address, slash, prefix = value.partition("/") if isinstance(value, str) else ("", "", "")
    ip, length = parse_ip(address), parse_int(prefix)
    return bool(slash) and ip is not None and length is not None and length <= MAX_PREFIX[ip.version]
