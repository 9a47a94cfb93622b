# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every bad host definition is refused with a message naming the host, the field and the fix."""

import copy

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_OPTIONS
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import build_nodes_configs

GOOD_HOST = {
    "name": "extra-worker-0",
    "mac_address": "00:02:46:e3:9e:7c",
    "ip": "192.168.111.90",
    "prefix_length": 24,
    "gateway": "192.168.111.1",
    "dns_servers": ["192.168.111.1"],
}

RAW_HOST = {
    "name": "extra-worker-0",
    "interfaces": [{"name": "eth0", "mac_address": "00:02:46:e3:9e:7c"}],
    "network_config": {
        "interfaces": [
            {
                "name": "eth0",
                "type": "ethernet",
                "state": "up",
                "mac-address": "00:02:46:e3:9e:7c",
                "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "192.168.111.90", "prefix-length": 24}]},
            }
        ],
        "dns-resolver": {"config": {"server": ["192.168.111.1"]}},
        "routes": {
            "config": [
                {
                    "destination": "0.0.0.0/0",
                    "next-hop-address": "192.168.111.1",
                    "next-hop-interface": "eth0",
                    "table-id": 254,
                }
            ]
        },
    },
}

_DROP = object()
# The checks take hosts as day2_iso's and workers_check's argument spec validated them (a wrong type is refused there,
# see test_inventory_spec.py).
SPEC = {"hosts": {"type": "list", "elements": "dict", "options": HOST_OPTIONS}}


def _host(base=None, **changes):
    host = copy.deepcopy(base or GOOD_HOST)
    for key, value in changes.items():
        if value is _DROP:
            host.pop(key, None)
        else:
            host[key] = value
    return host


def _raw(mutate):
    host = copy.deepcopy(RAW_HOST)
    mutate(host)
    return host


def _set_nm(path, value):
    """Mutator setting a nested network_config value; path is a list of keys/indexes."""

    def mutate(host):
        target = host["network_config"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


# (case id, host definition, field that must be named, text the message must contain)
BAD_HOSTS = [
    ("upper-case-name", _host(name="Extra-Worker-0"), "name", "upper-case"),
    ("underscore-name", _host(name="extra_worker_0"), "name", "label"),
    ("leading-hyphen-name", _host(name="-worker"), "name", "label"),
    ("long-label", _host(name="w" * 64), "name", "longer than 63"),
    ("long-name", _host(name=".".join(["w" * 60] * 5)), "name", "longer than 253"),
    ("empty-label", _host(name="worker..example"), "name", "label"),
    ("localhost-name", _host(name="localhost"), "name", "localhost"),
    ("missing-mac", _host(mac_address=_DROP), "mac_address", "is not set"),
    ("short-mac", _host(mac_address="00:02:46:e3:9e"), "mac_address", "not a MAC"),
    ("mixed-separator-mac", _host(mac_address="00:02-46:e3:9e:7c"), "mac_address", "not a MAC"),
    ("multicast-mac", _host(mac_address="01:00:5e:00:00:01"), "mac_address", "multicast"),
    ("zero-mac", _host(mac_address="00:00:00:00:00:00"), "mac_address", "all zeros"),
    (
        "mac-and-interfaces",
        _host(interfaces=[{"name": "eth0", "mac_address": "00:02:46:e3:9e:7d"}]),
        "mac_address",
        "not both",
    ),
    (
        "interface-name-too-long",
        _host(mac_address=_DROP, interfaces=[{"name": "a-very-long-nic-name", "mac_address": "00:02:46:e3:9e:7c"}]),
        "interfaces[0].name",
        "longer than 15",
    ),
    (
        "interface-listed-twice",
        _host(
            mac_address=_DROP,
            interfaces=[
                {"name": "eth0", "mac_address": "00:02:46:e3:9e:7c"},
                {"name": "eth0", "mac_address": "00:02:46:e3:9e:7d"},
            ],
        ),
        "interfaces[1].name",
        "listed twice",
    ),
    (
        "interfaces-bad-mac",
        _host(mac_address=_DROP, interfaces=[{"name": "eth0", "mac_address": "zz"}]),
        "interfaces[0].mac_address",
        "not a MAC",
    ),
    (
        "primary-not-in-interfaces",
        _host(mac_address=_DROP, interface="eth1", interfaces=[{"name": "eth0", "mac_address": "00:02:46:e3:9e:7c"}]),
        "interface",
        "not one of interfaces",
    ),
    ("interface-with-slash", _host(interface="eth/0"), "interface", "'/'"),
    ("ip-out-of-range", _host(ip="192.168.111.300"), "ip", "not an IPv4 address"),
    ("ip-short-form", _host(ip="10.1"), "ip", "not an IPv4 address"),
    ("ip-with-prefix", _host(ip="192.168.111.90/24"), "ip", "prefix_length"),
    ("ip-network-address", _host(ip="192.168.111.0"), "ip", "network address"),
    ("ip-broadcast", _host(ip="192.168.111.255"), "ip", "broadcast"),
    ("ip-multicast", _host(ip="224.0.0.5"), "ip", "multicast"),
    ("ip-loopback", _host(ip="127.0.111.20", gateway="127.0.111.1"), "ip", "loopback"),
    ("ip-link-local", _host(ip="169.254.1.5", prefix_length=16, gateway=_DROP), "ip", "link-local"),
    ("ip-is-ipv6", _host(ip="fd00::5"), "ip", "not an IPv4 address"),
    ("prefix-missing", _host(prefix_length=_DROP), "prefix_length", "is not set"),
    ("prefix-too-long", _host(prefix_length=33), "prefix_length", "1 to 32"),
    ("prefix-zero", _host(prefix_length=0), "prefix_length", "1 to 32"),
    ("prefix-bool", _host(prefix_length=True), "prefix_length", "1 to 32"),
    ("gateway-outside", _host(gateway="10.0.0.1"), "gateway", "not inside 192.168.111.0/24"),
    ("gateway-is-ip", _host(gateway="192.168.111.90"), "gateway", "own address"),
    ("gateway-invalid", _host(gateway="router"), "gateway", "not an IPv4 address"),
    ("gateway-broadcast", _host(gateway="192.168.111.255"), "gateway", "broadcast"),
    ("gateway-without-ip", _host(ip=_DROP, prefix_length=_DROP), "gateway", "DHCP"),
    ("dns-not-ip", _host(dns_servers=["192.168.111.1", "dns.example.com"]), "dns_servers[1]", "not a unicast IP"),
    ("vlan-zero", _host(vlan_id=0), "vlan_id", "1 to 4094"),
    ("vlan-too-big", _host(vlan_id=4095), "vlan_id", "1 to 4094"),
    ("vlan-name-too-long", _host(interface="enp175s0f1np1", vlan_id=100), "vlan_id", "longer than 15"),
    ("ipv6-invalid", _host(ipv6="fd00::zz", ipv6_prefix_length=64), "ipv6", "not an IPv6 address"),
    ("ipv6-prefix-too-long", _host(ipv6="fd00::5", ipv6_prefix_length=129), "ipv6_prefix_length", "1 to 128"),
    ("ipv6-subnet-router-anycast", _host(ipv6="fd00::", ipv6_prefix_length=64), "ipv6", "network address"),
    (
        "ipv6-gateway-outside",
        _host(ipv6="fd00::5", ipv6_prefix_length=64, ipv6_gateway="fd01::1"),
        "ipv6_gateway",
        "not inside fd00::/64",
    ),
    (
        "hint-unknown",
        _host(root_device_hints={"devicename": "/dev/sda"}),
        "root_device_hints.devicename",
        'did you mean "deviceName"',
    ),
    (
        "hint-wwn-with-extension",
        _host(root_device_hints={"wwnWithExtension": "0x5000"}),
        "root_device_hints.wwnWithExtension",
        "not supported: the agent",
    ),
    (
        "hint-wwn-vendor-extension",
        _host(root_device_hints={"wwnVendorExtension": "0x5000"}),
        "root_device_hints.wwnVendorExtension",
        "not supported: the agent",
    ),
    ("hint-device-not-dev", _host(root_device_hints={"deviceName": "sda"}), "root_device_hints.deviceName", "/dev/"),
    ("hint-hctl-format", _host(root_device_hints={"hctl": "0:0:0"}), "root_device_hints.hctl", "Host:Channel"),
    (
        "hint-size-zero",
        _host(root_device_hints={"minSizeGigabytes": 0}),
        "root_device_hints.minSizeGigabytes",
        "positive integer",
    ),
    (
        "hint-size-string",
        _host(root_device_hints={"minSizeGigabytes": "100"}),
        "root_device_hints.minSizeGigabytes",
        "positive integer",
    ),
    ("hint-rotational-text", _host(root_device_hints={"rotational": "yes"}), "root_device_hints.rotational", "boolean"),
    ("hint-empty-model", _host(root_device_hints={"model": " "}), "root_device_hints.model", "non-empty"),
    ("unknown-architecture", _host(cpu_architecture="i386"), "cpu_architecture", "not a known architecture"),
    ("s390x-on-x86-cluster", _host(cpu_architecture="s390x"), "cpu_architecture", "cannot join a x86_64 cluster"),
    ("raw-with-simple-prefix", _host(RAW_HOST, prefix_length=24), "prefix_length", "together with network_config"),
    ("raw-ip-not-in-nmstate", _host(RAW_HOST, ip="192.168.111.91"), "ip", "not a static IPv4 address of"),
    ("raw-ipv6-none-in-nmstate", _host(RAW_HOST, ipv6="fd00::5"), "ipv6", "(it has none)"),
    ("raw-no-interfaces", _raw(_set_nm(["interfaces"], [])), "network_config.interfaces", "non-empty list"),
    (
        "raw-mac-differs",
        _raw(_set_nm(["interfaces", 0, "mac-address"], "00:02:46:e3:9e:7d")),
        "network_config.interfaces[0].mac-address",
        "differs from the MAC",
    ),
    (
        "raw-interface-not-declared",
        _raw(_set_nm(["interfaces", 0, "name"], "eth1")),
        "network_config.interfaces[0].name",
        "not listed in interfaces",
    ),
    (
        "raw-declared-missing",
        _host(RAW_HOST, interfaces=RAW_HOST["interfaces"] + [{"name": "eth1", "mac_address": "00:02:46:e3:9e:7d"}]),
        "interfaces",
        "not an interface of network_config",
    ),
    (
        "raw-bad-address",
        _raw(_set_nm(["interfaces", 0, "ipv4", "address", 0, "ip"], "192.168.111.256")),
        "network_config.interfaces[0].ipv4.address[0].ip",
        "not an IPv4 address",
    ),
    (
        "raw-bad-prefix",
        _raw(_set_nm(["interfaces", 0, "ipv4", "address", 0, "prefix-length"], 40)),
        "network_config.interfaces[0].ipv4.address[0].prefix-length",
        "1 to 32",
    ),
    (
        "raw-bad-dns",
        _raw(_set_nm(["dns-resolver", "config", "server", 0], "ns1")),
        "network_config.dns-resolver.config.server[0]",
        "not a unicast IP",
    ),
    (
        "raw-route-unknown-interface",
        _raw(_set_nm(["routes", "config", 0, "next-hop-interface"], "bond0")),
        "network_config.routes.config[0].next-hop-interface",
        "not an interface of network_config",
    ),
    (
        "raw-route-bad-destination",
        _raw(_set_nm(["routes", "config", 0, "destination"], "default")),
        "network_config.routes.config[0].destination",
        "CIDR",
    ),
    (
        "raw-route-bad-next-hop",
        _raw(_set_nm(["routes", "config", 0, "next-hop-address"], "gw")),
        "network_config.routes.config[0].next-hop-address",
        "not an IP address",
    ),
]


def _problems_of(hosts, **kwargs):
    with pytest.raises(InventoryError) as caught:
        build_nodes_configs(hosts, "amd64", **kwargs)
    return caught.value.problems


def inventory_problems(hosts, default_architecture, **kwargs):
    """Every problem of ``hosts`` ([] when build_nodes_configs accepts them)."""
    try:
        build_nodes_configs(hosts, default_architecture, **kwargs)
    except InventoryError as error:
        return error.problems
    return []


def test_table_has_enough_distinct_cases():
    ids = [case[0] for case in BAD_HOSTS]
    assert len(ids) == len(set(ids)) >= 35


@pytest.mark.parametrize("host, field, text", [case[1:] for case in BAD_HOSTS], ids=[case[0] for case in BAD_HOSTS])
def test_bad_host_is_refused_naming_host_and_field(host, field, text):
    problems = _problems_of([host])
    label = host["name"]
    matching = [problem for problem in problems if problem["field"] == field]
    assert matching, "no problem for field %s in %s" % (field, problems)
    problem = matching[0]
    assert problem["host"] == label
    assert problem["message"].startswith('host %s: field "%s" value ' % (label, field))
    assert text in problem["message"]
    # The value is named in the message and the fix follows after "; ".
    assert "; " in problem["message"]


def test_message_format_from_the_brief():
    problems = _problems_of([_host(name="extra-worker-1", gateway="10.0.0.1")])
    assert [problem["message"] for problem in problems] == [
        'host extra-worker-1: field "gateway" value "10.0.0.1" is not inside 192.168.111.0/24 '
        "(ip/prefix_length); set a gateway in that subnet"
    ]
    assert problems[0]["value"] == "10.0.0.1"


def test_every_problem_is_collected_not_just_the_first():
    bad = _host(name="w1", ip="192.168.111.0", gateway="10.0.0.1", vlan_id=5000)
    other = _host(name="W2", mac_address="zz")
    problems = _problems_of([bad, other])
    found = {(problem["host"], problem["field"]) for problem in problems}
    assert found >= {
        ("w1", "ip"),
        ("w1", "gateway"),
        ("w1", "vlan_id"),
        ("W2", "name"),
        ("W2", "mac_address"),
    }


def test_error_text_lists_every_problem():
    with pytest.raises(InventoryError) as caught:
        build_nodes_configs([_host(ip="bad"), _host(name="w2", mac_address="zz")], "amd64")
    text = str(caught.value)
    assert text.startswith("2 problem(s)")
    for problem in caught.value.problems:
        assert problem["message"] in text


def test_host_without_usable_name_is_named_by_position():
    problems = _problems_of([GOOD_HOST, _host(name="", mac_address="00:02:46:e3:9e:7d", ip="192.168.111.91")])
    assert [(problem["host"], problem["field"]) for problem in problems] == [("#1", "name")]


def test_at_least_one_host():
    hosts = []
    problems = _problems_of(hosts)
    assert [(problem["host"], problem["field"]) for problem in problems] == [("(inventory)", "hosts")]


def test_unknown_default_architecture():
    with pytest.raises(InventoryError) as caught:
        build_nodes_configs([GOOD_HOST], "sparc")
    assert [(p["host"], p["field"]) for p in caught.value.problems] == [("(cluster)", "default_architecture")]


def test_ppc64le_cluster_refuses_other_architecture():
    with pytest.raises(InventoryError) as caught:
        build_nodes_configs([_host(cpu_architecture="x86_64")], "ppc64le")
    assert [(p["host"], p["field"]) for p in caught.value.problems] == [("extra-worker-0", "cpu_architecture")]


def test_bad_boot_artifacts_url():
    problems = _problems_of([GOOD_HOST], boot_artifacts_base_url="ftp://pxe.example.com/")
    assert [(p["host"], p["field"]) for p in problems] == [("(parameters)", "boot_artifacts_base_url")]


# --- values shared between hosts --------------------------------------------------------------

SECOND = _host(name="extra-worker-1", mac_address="00:02:46:e3:9e:7d", ip="192.168.111.91")


@pytest.mark.parametrize(
    "second, field",
    [
        (_host(SECOND, name="extra-worker-0"), "name"),
        (_host(SECOND, mac_address="00:02:46:E3:9E:7C"), "mac_address"),
        (_host(SECOND, mac_address="00-02-46-e3-9e-7c"), "mac_address"),
        (_host(SECOND, ip="192.168.111.90"), "ip"),
        (
            _host(
                _host(
                    RAW_HOST, name="extra-worker-1", interfaces=[{"name": "eth0", "mac_address": "00:02:46:e3:9e:7d"}]
                ),
                network_config=_host(RAW_HOST)["network_config"],
            ),
            "network_config.interfaces[0].ipv4.address[0].ip",
        ),
    ],
    ids=["hostname", "mac-case-insensitive", "mac-dash-notation", "ipv4", "raw-nmstate-ipv4"],
)
def test_values_must_be_unique_across_hosts(second, field):
    if field.startswith("network_config"):
        # keep the nmstate MAC consistent with the second host's interfaces
        second["network_config"]["interfaces"][0]["mac-address"] = "00:02:46:e3:9e:7d"
    problems = _problems_of([GOOD_HOST, second])
    assert len(problems) == 1, problems
    assert problems[0]["host"] == second["name"]
    assert problems[0]["field"] == field
    assert "already used by host extra-worker-0 (hosts[0])" in problems[0]["message"]


def test_ipv6_uniqueness_ignores_notation():
    first = _host(ipv6="fd00:1101::90", ipv6_prefix_length=64)
    second = _host(SECOND, ipv6="fd00:1101:0:0::0090", ipv6_prefix_length=64)
    problems = _problems_of([first, second])
    assert [(p["host"], p["field"], p["value"]) for p in problems] == [("extra-worker-1", "ipv6", "fd00:1101::90")]


def test_mac_twice_in_one_host():
    host = _host(
        mac_address=_DROP,
        interfaces=[
            {"name": "eth0", "mac_address": "00:02:46:e3:9e:7c"},
            {"name": "eth1", "mac_address": "00:02:46:E3:9E:7C"},
        ],
    )
    problems = _problems_of([host])
    assert [(p["host"], p["field"]) for p in problems] == [("extra-worker-0", "interfaces[1].mac_address")]
    assert "appears twice in this host" in problems[0]["message"]


# --- accepted on purpose ----------------------------------------------------------------------


def test_good_inventory_has_no_problems():
    raw = _host(RAW_HOST, name="extra-worker-2", interfaces=[{"name": "eth0", "mac_address": "00:02:46:e3:9e:7e"}])
    raw["network_config"]["interfaces"][0]["mac-address"] = "00:02:46:E3:9E:7E"
    raw["network_config"]["interfaces"][0]["ipv4"]["address"][0]["ip"] = "192.168.111.92"
    assert inventory_problems([GOOD_HOST, SECOND, raw], "x86_64") == []


def test_loopback_addresses_allowed_for_the_lab():
    lab = _host(ip="127.0.111.20", gateway="127.0.111.1", dns_servers=["127.0.111.1"])
    assert inventory_problems([lab], "amd64") != []
    assert inventory_problems([lab], "amd64", allow_loopback=True) == []


def test_the_boot_keys_are_not_read_here():
    """The checks read the image keys only: a caller that passes the BMC keys too gets no problem for them."""
    host = _host(bmc_address="redfish-virtualmedia://127.0.0.1:8000/redfish/v1/Systems/1", bmc_password="s3cret!")
    problems = _problems_of([dict(host, ip="bad")])
    assert [p["field"] for p in problems] == ["ip"]
    assert "s3cret!" not in str(problems)


@pytest.mark.parametrize("servers", [[""], ["192.168.111.1", ""], "192.168.111.1,", ""])
def test_unanswered_or_trailing_dns_servers_are_no_problem(servers):
    (host,) = (
        ArgumentSpecValidator(SPEC).validate({"hosts": [_host(dns_servers=servers)]}).validated_parameters["hosts"]
    )
    assert inventory_problems([host], "amd64") == []


def test_ipv6_link_local_gateway_is_accepted():
    host = _host(ipv6="fd00::5", ipv6_prefix_length=64, ipv6_gateway="fe80::1")
    assert inventory_problems([host], "amd64") == []


@pytest.mark.parametrize("prefix, address", [(31, "192.168.111.0"), (32, "192.168.111.255")])
def test_point_to_point_prefixes_have_no_network_address(prefix, address):
    host = _host(ip=address, prefix_length=prefix, gateway=_DROP)
    assert inventory_problems([host], "amd64") == []


# --- machine networks -------------------------------------------------------------------------


# --- ppc64le and s390x only on platform none (the agent installer's rule, applied by node-joiner) ------


@pytest.mark.parametrize("platform", ["BareMetal", "VSphere", "External"])
def test_s390x_worker_needs_platform_none(platform):
    host = dict(GOOD_HOST, cpu_architecture="s390x")
    problems = inventory_problems([host], "s390x", platform=platform)
    assert [(p["host"], p["field"], p["value"]) for p in problems] == [("extra-worker-0", "cpu_architecture", "s390x")]
    message = problems[0]["message"]
    assert 'CPU architecture "s390x" only supports platform "none"' in message
    assert "cannot join this %s cluster" % platform in message and "use x86_64 or aarch64 hardware" in message


def test_inherited_ppc64le_is_named_as_the_control_planes():
    problems = inventory_problems([GOOD_HOST], "ppc64le", platform="BareMetal")
    assert problems[0]["value"] is None
    assert 'CPU architecture "ppc64le" (the control plane\'s, as cpu_architecture is not set)' in problems[0]["message"]
    with pytest.raises(InventoryError, match='only supports platform "none"'):
        build_nodes_configs([GOOD_HOST], "ppc64le", platform="BareMetal")


@pytest.mark.parametrize("platform", ["None", "none", None, ""])
def test_platform_none_or_unknown_takes_s390x(platform):
    assert inventory_problems([dict(GOOD_HOST, cpu_architecture="s390x")], "s390x", platform=platform) == []
    assert inventory_problems([GOOD_HOST], "x86_64", platform="BareMetal") == []


# --- a MAC YAML made a number; a raw default route --------------------------------------------------------------


@pytest.mark.parametrize(
    "value,mac",
    [
        (41135085296, "52:54:00:12:34:56"),  # 52:54:00:12:34:56 unquoted
        ("41135085296", "52:54:00:12:34:56"),  # the same after ansible-core's argument spec made it text
        (8041827059, "10:20:30:40:50:59"),
    ],
)
def test_a_mac_yaml_made_a_number_gets_the_quote_it_hint(value, mac):
    problems = inventory_problems([_host(mac_address=value)], "x86_64")
    assert [(p["field"], p["value"]) for p in problems] == [("mac_address", value)]
    assert "is the number YAML made of the unquoted MAC %s" % mac in problems[0]["message"]
    assert problems[0]["message"].endswith('quote it: mac_address: "%s"' % mac)


def test_a_number_that_no_mac_made_says_so():
    problems = inventory_problems([_host(interfaces=[{"name": "eth0", "mac_address": 7}], mac_address=_DROP)], "x86_64")
    assert [p["field"] for p in problems] == ["interfaces[0].mac_address"]
    assert "cannot be turned back into the MAC" in problems[0]["message"]
    assert 'write the MAC in quotes, e.g. mac_address: "00:02:46:e3:9e:7c"' in problems[0]["message"]


def test_a_raw_default_route_must_leave_through_a_static_subnet():
    bad = _raw(_set_nm(["routes", "config", 0, "next-hop-address"], "192.168.112.1"))
    problems = inventory_problems([bad], "x86_64")
    assert [(p["field"], p["value"]) for p in problems] == [
        ("network_config.routes.config[0].next-hop-address", "192.168.112.1")
    ]
    assert "is not inside a static subnet of network_config (192.168.111.0/24)" in problems[0]["message"]
    good = _raw(
        _set_nm(
            ["routes", "config", 0],
            {"destination": "::/0", "next-hop-address": "fe80::1", "next-hop-interface": "eth0"},
        )
    )
    assert inventory_problems([good], "x86_64") == []


def test_root_device_hint_in_snake_case_names_the_camel_case_one():
    problems = inventory_problems([_host(root_device_hints={"serial_number": "S1"})], "x86_64")
    assert problems[0]["message"].endswith('did you mean "serialNumber"?')
