"""In-process tests of what a new worker's kubelet reports as its addresses (lab/nodes.py ``node_addresses``), from
what its boot media say of IPv6 (lab/hosts/boot.py ``ipv6_autoconf``), and of the fault that adds one, without a lab
process."""

from __future__ import annotations

import pytest
from lab import agentmanifests, kubelet, nodes, seeds
from lab.faults import Faults
from lab.hosts.boot import ipv6_autoconf
from lab.hosts.faults import fault_values
from lab.store import Store

MAC = "52:54:00:6f:00:20"
HOST = {"name": "extra-worker-0", "ip": "127.0.111.20", "mac_address": MAC}
SLAAC = "fd2e:6f44:5dd8:c956:5054:ff:fe6f:20"  # fd2e:6f44:5dd8:c956::/64 + the modified EUI-64 of MAC


def store_of(variant):
    store = Store()
    seeds.load_into(store, variant)
    return store


def media_files(ipv6=None, mac=MAC):
    """The files node-joiner writes for one host whose nmstate has this ipv6 section (None: none)."""
    interface = {"name": "eth0", "type": "ethernet", "state": "up", "mac-address": mac}
    interface["ipv4"] = {"enabled": True, "dhcp": False, "address": [{"ip": "127.0.111.20", "prefix-length": 24}]}
    if ipv6 is not None:
        interface["ipv6"] = ipv6
    host = {"interfaces": [{"name": "eth0", "macAddress": mac}], "networkConfig": {"interfaces": [interface]}}
    return {path: content.encode() for path, content, _mode in agentmanifests.network_files([host])}


def test_the_media_say_whether_the_nic_autoconfigures_ipv6():
    assert ipv6_autoconf(media_files({"enabled": True, "dhcp": True, "autoconf": True}), MAC) is True
    assert ipv6_autoconf(media_files(), MAC) is False  # no ipv6 section: nmstate disables IPv6
    assert ipv6_autoconf(media_files({"enabled": False}), MAC) is False
    static = {"enabled": True, "dhcp": False, "address": [{"ip": "fd2e:6f44:5dd8:c956::20", "prefix-length": 64}]}
    assert ipv6_autoconf(media_files(static), MAC) is False
    # no keyfile for this MAC (a host without networkConfig): NetworkManager's default connection, DHCP and SLAAC
    assert ipv6_autoconf(media_files(mac="52:54:00:6f:00:21"), MAC) is True
    assert ipv6_autoconf({}, MAC) is True


def test_a_dual_stack_kubelet_given_only_ip_reports_its_slaac_address_too():
    store = store_of("dualstack")
    assert nodes.node_addresses(store, dict(HOST, ipv6_autoconf=True)) == [
        {"type": "InternalIP", "address": "127.0.111.20"},
        {"type": "InternalIP", "address": SLAAC},
        {"type": "Hostname", "address": "extra-worker-0"},
    ]
    assert [a["address"] for a in nodes.node_addresses(store, HOST)] == ["127.0.111.20", "extra-worker-0"]
    given = dict(HOST, ipv6="fd2e:6f44:5dd8:c956::20", ipv6_autoconf=True)  # its inventory ipv6 is its node IP
    assert [a["address"] for a in nodes.node_addresses(store, given)][:2] == ["127.0.111.20", "fd2e:6f44:5dd8:c956::20"]


@pytest.mark.parametrize("variant", ["default", "ipv6", "none"])
def test_a_single_stack_cluster_gives_one_node_ip(variant):
    """nodeip-configuration picks an address per API VIP: one family only (none on platform none)."""
    addresses = nodes.node_addresses(store_of(variant), dict(HOST, ipv6_autoconf=True))
    assert addresses == [
        {"type": "InternalIP", "address": "127.0.111.20"},
        {"type": "Hostname", "address": "extra-worker-0"},
    ]


def test_the_extra_address_fault_adds_an_internal_ip_for_the_host_named():
    assert kubelet.SAN_TYPES[1] == ("InternalIP", "ExternalIP")  # (importing lab.kubelet registers the fault)
    faults = Faults()
    faults.set("kubelet_extra_address", "extra-worker-0:198.51.100.20,extra-worker-1:fd00::21")
    assert fault_values(faults, "kubelet_extra_address", "extra-worker-0") == ["198.51.100.20"]
    assert fault_values(faults, "kubelet_extra_address", "extra-worker-1") == ["fd00::21"]
    extra = fault_values(faults, "kubelet_extra_address", "extra-worker-0")
    addresses = nodes.node_addresses(store_of("dualstack"), dict(HOST, ipv6_autoconf=True), extra)
    assert [a["address"] for a in addresses] == ["127.0.111.20", SLAAC, "198.51.100.20", "extra-worker-0"]
    with pytest.raises(ValueError, match="is not an IP address"):
        faults.set("kubelet_extra_address", "fd00::21")  # an IPv6 address needs HOST: before it
