# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A new worker's definition: the keys of a host record, defined once, and the checks of one host's values.

``HOST_OPTIONS`` is the spec of a host record, as Ansible argument-spec options: the keys a user gives (inventory,
agent-config.yaml, a module's ``hosts``) and those workers_check works out (``DERIVED_KEYS``). Every step takes
the same records. ansible-core checks and converts the types (``prefix_length: "24"`` becomes 24, a
comma-separated ``dns_servers`` survey answer a list); :class:`HostChecker` checks the values and builds the
host's nodes-config entry. The doc fragment ``openshift_agent.day2.hosts`` documents the spec (a unit test keeps
the two equal), docs/user-guide.md the keys a user gives (``HOST_KEYS``).

Its network, as nmstate: generated from the simple keys, and the checks of addresses and of raw nmstate.

node-joiner turns nmstate into NetworkManager keyfiles with ``nmstatectl gc`` inside its pod, so a mistake is
otherwise found only after the ISO build (or on the booted host). Everything here reports through a
``report(field, value, what, fix)`` callable bound to one host, so that all the problems of an inventory are
collected in one run instead of failing on the first.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import netaddr, normalize_mac, parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Report, given

# macAddress is the nodes-config spelling: accepted from people who copy from there.
INTERFACE_OPTIONS = {"name": {"type": "str"}, "mac_address": {"type": "str", "aliases": ["macAddress"]}}
HOST_OPTIONS: dict[str, dict[str, Any]] = {
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
    "node_labels": {"type": "dict"},  # checked by _check/labels.py, put on the Node by the join step
    "node_taints": {"type": "list", "elements": "raw"},
    "bmc_address": {"type": "str"},
    "bmc_username": {"type": "str"},
    "bmc_verify_certs": {"type": "bool"},
    # Worked out by workers_check (_check/workers.py):
    "address": {"type": "str"},
    "addresses": {"type": "list", "elements": "str"},
    "state": {"type": "str", "choices": ["new", "half-joined", "replace"]},
    "labels": {"type": "dict"},
    "taints": {"type": "list", "elements": "dict"},
    "source": {"type": "str"},
    "bmc": {"type": "dict"},
}
DERIVED_KEYS = ("address", "addresses", "state", "labels", "taints", "source", "bmc")
# What a user gives: the record's own keys and the BMC password, which is read where it is used and never
# put into a record. For the unknown-key checks and the user guide's table.
INPUT_OPTIONS = dict(
    {key: option for key, option in HOST_OPTIONS.items() if key not in DERIVED_KEYS},
    bmc_password={"type": "str", "no_log": True},
)
HOST_KEYS = tuple(key for key in INPUT_OPTIONS if key != "name")  # the name is the inventory name
SECRET_HOST_KEYS = tuple(key for key, option in INPUT_OPTIONS.items() if option.get("no_log"))

ALLOW_LOOPBACK_VARIABLE = "OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK"
# nodes-config.yaml names architectures like RPM; Nodes report Go names (status.nodeInfo.architecture).
ARCHITECTURE_ALIASES = dict(
    {name: name for name in ("x86_64", "aarch64", "ppc64le", "s390x")}, amd64="x86_64", arm64="aarch64"
)
# s390x and ppc64le workers only join clusters of their own architecture (the collection's own rule: node-joiner
# has no such check), and only clusters of platform none: node-joiner's cluster inspection applies the agent
# installer's rule to infrastructure/cluster spec.platformSpec.type and the workers' architecture --
# openshift/installer pkg/asset/agent/installconfig.go@006d45739349721f1371d3013792d9b8407e9842
# (ValidateSupportedPlatforms), pkg/asset/agent/joiner/clusterinfo.go@c143649564e2b4c776faf2f7a3cc14f77cab7c6c.
NONE_PLATFORM_ONLY = ("ppc64le", "s390x")
# The simple keys a raw network_config replaces. ip and ipv6 may stay: they name the address the install is
# followed at, which must be one of network_config's static addresses.
SIMPLE_NETWORK_KEYS = ("prefix_length", "gateway", "dns_servers", "vlan_id", "ipv6_prefix_length", "ipv6_gateway")
# A host with none of these (and no network_config) is a DHCP host: no networkConfig goes into its nodes-config entry,
# as in node-joiner's own add-nodes test (openshift/installer cmd/node-joiner/testdata/add-nodes.txt@
# 5e705f0f658f4030865683bee11bc0e45bf61cfb); the live system then copies no keyfile ("None of host directories are a
# match for the current host": data/data/agent/files/usr/local/bin/pre-network-manager-config.sh@
# 68a2973d6030b51cc29715581831f008bd0b1406) and NetworkManager asks DHCP. Its ip is the address its reservation gives.
STATIC_NETWORK_KEYS = (*SIMPLE_NETWORK_KEYS, "ipv6")
DEFAULT_INTERFACE = "eth0"
FAMILY_KEYS = {4: ("ip", "prefix_length", "gateway"), 6: ("ipv6", "ipv6_prefix_length", "ipv6_gateway")}
# Names NetworkManager and the kubelet treat as "no hostname set"; a node must not carry them.
LOCALHOST = re.compile(r"^localhost(\.localdomain|4(\.localdomain4)?|6(\.localdomain6)?)?$")
MAX_HOSTNAME, MAX_LABEL = 253, 63
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_HCTL = re.compile(r"^[0-9]+:[0-9]+:[0-9]+:[0-9]+$")
ROOT_DEVICE_HINTS = ("deviceName", "hctl", "model", "vendor", "serialNumber", "minSizeGigabytes", "wwn", "rotational")
UNREPORTED_HINTS = ("wwnWithExtension", "wwnVendorExtension")  # the agent's disk inventory has no such field
# YAML 1.1 (PyYAML, Ansible's inventory) reads 10:20:30:40:50:59 as the base-60 integer 8041827059: an unquoted
# MAC of decimal digits only, whose first octet is 10-99 and whose other octets are 00-59.
SEXAGESIMAL_MAC_FIRST = (10, 99)
NOT_A_MAC_NUMBER = (
    "is a number, not a MAC address (YAML reads an unquoted MAC of digits only as a base-60 number; this one cannot "
    "be turned back into the MAC)"
)

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


def loopback_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """Whether host addresses in 127.0.0.0/8 are accepted: only when OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1.

    This exists for the lab, whose simulated hosts all live on one machine; real hosts never have such addresses,
    so it is no module option.
    """
    return (os.environ if environ is None else environ).get(ALLOW_LOOPBACK_VARIABLE) == "1"


def normalize_architecture(name: Any) -> str | None:
    """RPM architecture name for a Go or RPM name, or None when unknown."""
    return ARCHITECTURE_ALIASES.get(name.strip().lower()) if isinstance(name, str) else None


def hostname_problem(name: Any) -> str | None:
    """Why a name cannot be a node name (Kubernetes DNS-1123 subdomain), or None."""
    if not isinstance(name, str) or not name:
        return "is not a non-empty string"
    if name != name.lower():
        return "contains upper-case letters (node names are lower case)"
    if len(name) > MAX_HOSTNAME:
        return f"is longer than {MAX_HOSTNAME} characters"
    if LOCALHOST.match(name):
        return "is a localhost name, which leaves the node without a usable name"
    long = [label for label in name.split(".") if len(label) > MAX_LABEL]
    bad = [label for label in name.split(".") if not _LABEL.match(label)]
    if long:
        return f"has a label longer than {MAX_LABEL} characters ({long[0][:20]}...)"
    rule = "which is not letters, digits and '-' starting and ending with a letter or digit"
    return f"has the label {json.dumps(bad[0])}, {rule}" if bad else None


def number_instead_of_mac(field: str, value: Any) -> tuple[str, str]:
    """(what, fix) for a MAC that is a number: YAML 1.1 reads an unquoted all-digit MAC as a base-60 integer."""
    key, number = field.rsplit(".", 1)[-1], int(value)
    octets = [number // 60**power % 60 for power in range(4, -1, -1)]  # the base-60 digits, the first one apart
    number //= 60**5
    if not SEXAGESIMAL_MAC_FIRST[0] <= number <= SEXAGESIMAL_MAC_FIRST[1]:
        return NOT_A_MAC_NUMBER, f'write the MAC in quotes, e.g. {key}: "00:02:46:e3:9e:7c"'
    mac = ":".join(f"{octet:02d}" for octet in [number, *octets])
    what = "is the number YAML made of the unquoted MAC %s (YAML 1.1 reads digits separated by ':' as a base-60 number)"
    return what % mac, f'quote it: {key}: "{mac}"'


def check_root_device_hint(report: Report, key: Any, value: Any) -> None:
    """Report a hint node-joiner (and the agent) would not take."""
    squashed, text = str(key).replace("_", "").replace("-", "").lower(), isinstance(value, str) and value.strip()
    close = [hint for hint in ROOT_DEVICE_HINTS if hint.lower() == squashed]
    close = close or difflib.get_close_matches(str(key), ROOT_DEVICE_HINTS, n=1)
    rules = (
        (key in UNREPORTED_HINTS, "is not supported: the agent's disk inventory does not report it, so node-joiner "
         "refuses it", "use wwn, serialNumber or deviceName instead"),
        (key not in ROOT_DEVICE_HINTS, "is not a root device hint",
         f'did you mean "{close[0]}"?' if close else f"use one of: {', '.join(ROOT_DEVICE_HINTS)}"),
        (key == "rotational" and not isinstance(value, bool), "is not a boolean", "write true or false (unquoted)"),
        (key == "minSizeGigabytes" and (isinstance(value, bool) or not isinstance(value, int) or value <= 0),
         "is not a positive integer", "write the size in GB, e.g. 100"),
        (key not in ("rotational", "minSizeGigabytes") and not text, "is not a non-empty string",
         "write the hint as text"),
        (key == "deviceName" and not str(value).startswith("/dev/"), "does not start with /dev/",
         "write the device path, e.g. /dev/sda or /dev/disk/by-path/..."),
        (key == "hctl" and not _HCTL.match(str(value)), "is not Host:Channel:Target:Lun",
         "write four numbers like 0:0:0:0"),
    )  # fmt: skip
    for what, fix in [rule[1:] for rule in rules if rule[0]][:1]:  # (the first that applies)
        report(f"root_device_hints.{key}", value, what, fix)


@dataclasses.dataclass
class CheckedHost:
    """What the checks of one host produced, ready to render."""

    hostname: Any
    label: str  # how problems name the host, even when hostname is invalid
    architecture: str | None = None
    root_device_hints: dict[str, Any] | None = None
    interfaces: list[Interface] = dataclasses.field(default_factory=list)
    macs: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (field, MAC), for the uniqueness check
    network_config: dict[str, Any] | None = None
    addresses: list[OwnedAddress] = dataclasses.field(default_factory=list)  # the host's static addresses
    routed: set[int] = dataclasses.field(default_factory=set)  # the IP versions with a default gateway

    def render(self) -> dict[str, Any]:
        interfaces = [{"name": name, "macAddress": mac} for name, mac in self.interfaces]
        host: dict[str, Any] = {"hostname": self.hostname, "role": "worker", "rootDeviceHints": self.root_device_hints}
        host.update(interfaces=interfaces, networkConfig=self.network_config)
        # Without root device hints (None, never {}), or a networkConfig (a DHCP host), the key is left out.
        return {key: value for key, value in host.items() if value is not None}


@dataclasses.dataclass
class HostChecker:
    """Checks one host definition and builds its nmstate, reporting every problem found. ``platform``: the
    cluster's Infrastructure spec.platformSpec.type (None: not checked)."""

    host: dict[str, Any]
    label: str
    cluster_architecture: str | None
    allow_loopback: bool
    report: Report
    platform: str | None = None
    result: CheckedHost = dataclasses.field(init=False)

    def check(self) -> CheckedHost:
        self.result = CheckedHost(self.host.get("name"), self.label)
        problem = hostname_problem(self.host.get("name"))
        if problem:
            self.report("name", self.host.get("name"), problem, "use a lower-case DNS name such as extra-worker-0")
        self.result.architecture = self._architecture()
        hints = self.host.get("root_device_hints") or {}
        for key in sorted(hints, key=str):
            check_root_device_hint(self.report, key, hints[key])
        self.result.root_device_hints = dict(hints) if hints else None
        self.result.interfaces = self._interfaces()
        if given(self.host.get("network_config")):
            self._raw_network()
        elif any(given(self.host.get(key)) for key in STATIC_NETWORK_KEYS):
            self._simple_network()
        else:
            self._dhcp()
        return self.result

    def _architecture(self) -> str | None:
        value, cluster = self.host.get("cpu_architecture"), self.cluster_architecture
        architecture = normalize_architecture(value) if given(value) else cluster
        if architecture is None and given(value):
            known = ", ".join(sorted(ARCHITECTURE_ALIASES))
            self.report("cpu_architecture", value, "is not a known architecture", f"use one of: {known}")
            architecture = cluster
        elif given(value) and cluster and architecture != cluster and {architecture, cluster} & set(NONE_PLATFORM_ONLY):
            what = f"cannot join a {cluster} cluster (s390x and ppc64le only join clusters of their own architecture)"
            self.report("cpu_architecture", value, what, f"use {cluster} hardware for this worker")
        if given(self.platform) and str(self.platform).lower() != "none" and architecture in NONE_PLATFORM_ONLY:
            inherited = "" if given(value) else " (the control plane's, as cpu_architecture is not set)"
            what = f'cannot join this {self.platform} cluster: CPU architecture "{architecture}"{inherited} only '
            what += 'supports platform "none"'
            fix = f"use x86_64 or aarch64 hardware for this worker; {architecture} workers only join clusters "
            fix += "installed with platform none"
            self.report("cpu_architecture", value if given(value) else None, what, fix)
        return architecture

    # --- interfaces ----------------------------------------------------------------------------

    def _interfaces(self) -> list[Interface]:
        """The host's (name, mac) list from interfaces, or from interface + mac_address."""
        listed, mac_address = self.host.get("interfaces"), self.host.get("mac_address")
        one_nic = not given(listed)
        if not one_nic and given(mac_address):
            fix = "give the MAC either in mac_address or in interfaces, not both"
            self.report("mac_address", mac_address, "is set together with interfaces", fix)
        if one_nic and not given(mac_address):
            fix = "set mac_address (or interfaces) so the ISO can recognise this host"
            self.report("mac_address", mac_address, "is not set", fix)
        elif one_nic:  # one NIC: interface (eth0 by default) and mac_address
            listed = [{"name": self.host.get("interface") or DEFAULT_INTERFACE, "mac_address": mac_address}]
        result: list[Interface] = []
        names = set()
        for index, item in enumerate(listed or []):
            prefix, name = "" if one_nic else f"interfaces[{index}].", item.get("name")
            name_field = "interface" if one_nic else prefix + "name"
            problem = interface_name_problem(name)
            if problem:
                self.report(name_field, name, problem, "use the NIC's name, e.g. eth0")
            elif name in names:
                self.report(name_field, name, "is listed twice", "list each interface once")
            else:
                names.add(name)
                mac = self._checked_mac(prefix + "mac_address", item.get("mac_address"))
                result += [(name, mac)] if mac else []
        return result

    def _checked_mac(self, field: str, value: Any) -> str | None:
        mac = normalize_mac(value)
        problem = mac_problem(mac) if mac else None
        self.result.macs += [(field, mac)] if mac else []
        if problem:
            self.report(field, value, problem, "use the NIC's burned-in unicast MAC")
        elif not mac and str(value).strip().isdigit():  # (as an integer, or the text the argument spec made of it)
            self.report(field, value, *number_instead_of_mac(field, value))
        elif not mac:
            self.report(field, value, "is not a MAC address", NOT_MAC_FIX)
        return None if problem or not mac else mac

    # --- network -------------------------------------------------------------------------------

    def _raw_network(self) -> None:
        config, fix = self.host["network_config"], "put the setting into network_config or drop network_config"
        for key in (key for key in SIMPLE_NETWORK_KEYS if given(self.host.get(key))):
            self.report(key, self.host[key], "is set together with network_config", fix)
        found = check_raw_network_config(self.report, config, dict(self.result.interfaces), self.allow_loopback)
        self.result.addresses, self.result.routed = found
        self.result.network_config = copy.deepcopy(config)
        # ip (ipv6) names the static address the install is followed at: one of network_config's own.
        for key, version in (("ip", 4), ("ipv6", 6)):
            value = self.host.get(key)
            statics = [str(owned.address) for owned in self.result.addresses if owned.address.version == version]
            if given(value) and str(parse_ip(value, version)) not in statics:
                what = f"is not a static IPv{version} address of network_config ({', '.join(statics) or 'it has none'})"
                fix = f"set {key} to the static address the host will have, or drop {key} to follow the first static "
                self.report(key, value, what, fix + "address of network_config")

    def _primary(self) -> str:
        """The interface that carries the addresses: ``interface``, else the first of interfaces (or eth0)."""
        names = [name for name, _mac in self.result.interfaces]
        primary = str(self.host.get("interface") or "")
        if not primary:
            primary = names[0] if given(self.host.get("interfaces")) and names else DEFAULT_INTERFACE
        elif names and primary not in names:
            what = f"is not one of interfaces ({', '.join(names)})"
            self.report("interface", primary, what, "name the interface that carries the addresses")
        return primary

    def _dhcp(self) -> None:
        """No static network: no networkConfig; ``ip``, when given, is the address the DHCP reservation gives (where
        the install is followed), checked as a host address (it has no prefix: the prefix rule does not apply)."""
        self._primary()
        value = self.host.get("ip")
        if isinstance(value, str) and "/" in value:
            fix = "write the address alone: with prefix_length for a static address, alone for a DHCP reservation"
            self.report("ip", value, "contains a prefix", fix)
        elif given(value):
            address = check_host_address(self.report, "ip", value, 4, self.allow_loopback)
            self.result.addresses += [OwnedAddress("ip", address, None)] if address is not None else []

    def _simple_network(self) -> None:
        primary = self._primary()
        vlan_id, given_vlan = None, self.host.get("vlan_id")
        if given(given_vlan):
            vlan_id = check_number(self.report, "vlan_id", given_vlan, *VLAN_ID_RANGE, "a VLAN ID")
            if vlan_id is not None and len(f"{primary}.{vlan_id}") > MAX_INTERFACE_NAME:
                what = f"makes the VLAN interface name {primary}.{vlan_id} longer than {MAX_INTERFACE_NAME} characters"
                self.report("vlan_id", given_vlan, what, "use a shorter base interface name")
                vlan_id = None
        ipv4, ipv6 = self._family(4), self._family(6)
        # (an empty DNS server: an unanswered survey question, "" becomes [""], or a trailing comma)
        servers = [(index, server) for index, server in enumerate(self.host.get("dns_servers") or []) if server.strip()]
        checked = [check_dns_server(self.report, f"dns_servers[{index}]", value) for index, value in servers]
        dns = [str(address) for address in checked if address is not None]
        self.result.network_config = generated_network_config(self.result.interfaces, primary, vlan_id, ipv4, ipv6, dns)

    def _family(self, version: int) -> Family:
        """Static settings of one IP version as {ip, prefix, gateway}, or None (unset or invalid)."""
        ip_key, prefix_key, gateway_key = FAMILY_KEYS[version]
        value, prefix_value, gateway_value = (self.host.get(key) for key in FAMILY_KEYS[version])
        if not given(value):
            for key, other in ((prefix_key, prefix_value), (gateway_key, gateway_value)):
                if given(other):
                    what = f"is set but {ip_key} is not (the host would use DHCP)"
                    self.report(key, other, what, f"set {ip_key} too, or remove {key}")
            return None
        if isinstance(value, str) and "/" in value:
            fix = f"write the address alone and put the prefix into {prefix_key}"
            self.report(ip_key, value, "contains a prefix", fix)
            return None
        address = check_host_address(self.report, ip_key, value, version, self.allow_loopback)
        if not given(prefix_value):
            fix = f"set the prefix length of the host's subnet, e.g. {24 if version == 4 else 64} (a DHCP host gives "
            fix += "mac_address and ip only)"
            self.report(prefix_key, prefix_value, f"is not set but {ip_key} is", fix)
            return None
        prefix = check_prefix(self.report, prefix_key, prefix_value, version)
        if address is None or prefix is None:
            return None
        check_address_in_subnet(self.report, ip_key, value, address, prefix)
        self.result.addresses.append(OwnedAddress(ip_key, address, prefix))
        at = f"{ip_key}/{prefix_key}"
        gateway = given(gateway_value) and check_gateway(self.report, gateway_key, gateway_value, address, prefix, at)
        self.result.routed.update([version] if gateway else [])
        return {"ip": str(address), "prefix": prefix, "gateway": str(gateway) if gateway else None}


# --- the network, as nmstate: single values -------------------------------------------------------------------------


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


def check_address_in_subnet(report: Report, field: str, value: Any, address: Any, prefix: int) -> None:
    """Report an address that is the network (or IPv4 broadcast) address of its own subnet; /31 and /32 (IPv4),
    /127 and /128 (IPv6) have none."""
    subnet = netaddr.IPNetwork(f"{address}/{prefix}")
    broadcast = address.version == 4 and address == subnet.broadcast
    if prefix < MAX_PREFIX[address.version] - 1 and (address == subnet.network or broadcast):
        what = f"is the {'broadcast' if broadcast else 'network'} address of {subnet.cidr}"
        report(field, value, what, "use a host address inside the subnet")


def check_gateway(report: Report, field: str, value: Any, address: Any, prefix: int, subnet_fields: str) -> Any:
    """Check a default gateway against the host's own address and prefix."""
    gateway, subnet = check_address(report, field, value, address.version), netaddr.IPNetwork(f"{address}/{prefix}")
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


# --- nmstate generated from the simple keys -------------------------------------------------------------------------


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


# --- raw nmstate ----------------------------------------------------------------------------------------------------


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
            netaddr.IPNetwork(f"{a}/{prefix}") for _field, a, prefix in owned if a.version == hop.version and prefix
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
