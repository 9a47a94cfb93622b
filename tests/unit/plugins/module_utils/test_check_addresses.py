# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every static address against the cluster: machine networks and their prefix, the VIPs, the Nodes."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.addresses import (
    ClusterAddresses,
    prefix_field,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import check_hosts

HOST = {
    "name": "extra-worker-0",
    "mac_address": "00:02:46:e3:9e:7c",
    "ip": "192.168.111.90",
    "prefix_length": 24,
    "gateway": "192.168.111.1",
}
RAW = {
    "name": "extra-worker-1",
    "interfaces": [{"name": "eth0", "mac_address": "00:02:46:e3:9e:7d"}],
    "network_config": {
        "interfaces": [
            {
                "name": "eth0",
                "type": "ethernet",
                "state": "up",
                "mac-address": "00:02:46:e3:9e:7d",
                "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "192.168.111.91", "prefix-length": 25}]},
            }
        ]
    },
}
CLUSTER = {
    "machine_networks": ["192.168.111.0/24"],
    "api_vips": ["192.168.111.5"],
    "ingress_vips": ["192.168.111.4"],
    "nodes": [
        {"name": "master-0", "roles": ["control-plane", "master"], "internal_ips": ["192.168.111.10"]},
        {"name": "worker-3", "roles": ["worker"], "internal_ips": ["192.168.111.33"]},
    ],
}


def problems_of(hosts, cluster=None, replace_node=""):
    problems = Problems()
    checked = check_hosts(hosts, "x86_64", allow_loopback=False, problems=problems)
    assert problems.items == []
    addresses = ClusterAddresses(CLUSTER if cluster is None else cluster, replace_node)
    for host in checked:
        addresses.check(host, problems)
    return [(p["host"], p["field"], p["value"]) for p in problems.items], [p["message"] for p in problems.items]


def test_a_host_that_fits_the_cluster_passes():
    assert problems_of([HOST]) == ([], [])


def test_addresses_outside_every_machine_network_are_refused():
    dual = dict(HOST, ip="10.0.0.5", gateway="10.0.0.1", ipv6="fd00::5", ipv6_prefix_length=64)
    found, messages = problems_of([dual])
    assert found == [("extra-worker-0", "ip", "10.0.0.5"), ("extra-worker-0", "ipv6", "fd00::5")]
    assert "outside the cluster's machine networks (192.168.111.0/24)" in messages[0]
    assert "none of IPv6" in messages[1]
    assert problems_of([dual], dict(CLUSTER, machine_networks=[{"cidr": "10.0.0.0/24"}, "fd00::/64"])) == ([], [])


@pytest.mark.parametrize("prefix", [22, 25])
def test_a_prefix_other_than_the_machine_networks_is_refused_where_the_cluster_has_vips(prefix):
    gateway = "192.168.108.1" if prefix == 22 else "192.168.111.1"
    found, messages = problems_of([dict(HOST, prefix_length=prefix, gateway=gateway)])
    assert found == [("extra-worker-0", "prefix_length", prefix)]
    assert "does not match the machine network 192.168.111.0/24" in messages[0]
    assert "VIPs (keepalived)" in messages[0] and messages[0].endswith("set the prefix length to 24")


def test_without_vips_a_routed_part_of_the_machine_network_is_accepted():
    cluster = dict(CLUSTER, machine_networks=["192.168.108.0/22"], api_vips=[], ingress_vips=[])
    assert problems_of([HOST], cluster) == ([], [])
    found, messages = problems_of([dict(HOST, gateway=None)], cluster)
    assert found == [("extra-worker-0", "prefix_length", 24)]
    assert "without a default gateway the rest of the machine network is unreachable" in messages[0]


def test_the_prefix_of_a_raw_address_is_named_by_its_own_field():
    found, _messages = problems_of([RAW])
    assert found == [("extra-worker-1", "network_config.interfaces[0].ipv4.address[0].prefix-length", 25)]
    assert prefix_field("ipv6") == "ipv6_prefix_length" and prefix_field("ip") == "prefix_length"


def test_an_address_equal_to_a_vip_is_refused():
    found, messages = problems_of([dict(HOST, ip="192.168.111.5"), dict(RAW, name="w1")])
    assert ("extra-worker-0", "ip", "192.168.111.5") in found
    assert any("is the cluster's API VIP (api_vips of day1_facts)" in m for m in messages)
    found, messages = problems_of([dict(HOST, ip="192.168.111.4")])
    assert found == [("extra-worker-0", "ip", "192.168.111.4")] and "ingress VIP" in messages[0]


def test_an_address_of_a_node_names_the_node_and_whether_it_is_control_plane():
    found, messages = problems_of(
        [dict(HOST, ip="192.168.111.10"), dict(HOST, name="w2", ip="192.168.111.33", mac_address="00:02:46:e3:9e:7e")]
    )
    assert found == [("extra-worker-0", "ip", "192.168.111.10"), ("w2", "ip", "192.168.111.33")]
    assert messages[0].endswith("already belongs to Node master-0 (a control-plane node); give the host a free address")
    assert "already belongs to Node worker-3;" in messages[1]


def test_the_replaced_node_and_the_host_itself_do_not_own_its_address():
    replaced = dict(HOST, name="worker-3", ip="192.168.111.33")
    assert problems_of([replaced], replace_node="worker-3") == ([], [])
    assert problems_of([replaced]) == ([], [])  # its own Node (the name check is the check step's)


@pytest.mark.parametrize("network", ["not-a-network", {"cidr": None}, "192.168.111.1"])
def test_a_machine_network_must_be_a_cidr(network):
    with pytest.raises(Day2Error, match="is not a CIDR"):
        ClusterAddresses(dict(CLUSTER, machine_networks=[network]))
