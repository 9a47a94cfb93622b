# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OpenShift documentation's agent-config network examples, as the docs write them, accepted in both forms: the
inventory's (``interfaces`` and ``network_config``) and a day-1 agent-config.yaml's (``day2_agent_config``). Raw
nmstate is read the way nmstate reads it: a bond's ports and a VLAN's base that network_config does not define are
NICs of ``interfaces``, known by their MACs.

- openshift/openshift-docs modules/agent-install-sample-config-bonds-vlans.adoc
  @d3bb386c4933672076ad77e729544f54bb77397b (a VLAN on a bond; the NICs only as the bond's ports);
- openshift/openshift-docs modules/agent-install-sample-config-bond-sriov.adoc
  @0b60d86aade9cd4539bed3d225ff42df3dddb596 (a bond of SR-IOV virtual functions, ``sriov:<PF>:<VF>``);
- a static IPv4/IPv6 host of several NICs, written as the docs write the simpler examples.
"""

import copy

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.agent_config import read_agent_config
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_workers_check import host

# bonds-vlans: the docs' placeholders filled in (<vlan_interface_name> bond0.300, <bond_interface_name> bond0,
# <mac_address> the first NIC's, <bond_mode> active-backup, <mii_monitoring_frequency> 150, <gateway> 10.10.10.1,
# <next_hop_interface> bond0.300); the hostname that of a worker.
BONDS_VLANS = """
hostname: worker-0
interfaces:
 - name: enp0s4
   macAddress: 00:21:50:90:c0:10
 - name: enp0s5
   macAddress: 00:21:50:90:c0:20
networkConfig:
  interfaces:
    - name: bond0.300
      type: vlan
      state: up
      vlan:
        base-iface: bond0
        id: 300
      ipv4:
        enabled: true
        address:
          - ip: 10.10.10.14
            prefix-length: 24
        dhcp: false
    - name: bond0
      type: bond
      state: up
      mac-address: 00:21:50:90:c0:10
      ipv4:
        enabled: false
      ipv6:
        enabled: false
      link-aggregation:
        mode: active-backup
        options:
          miimon: "150"
        port:
         - enp0s4
         - enp0s5
  dns-resolver:
    config:
      server:
        - 10.10.10.11
        - 10.10.10.12
  routes:
    config:
      - destination: 0.0.0.0/0
        next-hop-address: 10.10.10.1
        next-hop-interface: bond0.300
        table-id: 254
"""
# bond-sriov, as the docs write it (dns-resolver and routes indented under bond0 there too).
BOND_SRIOV = """
hostname: worker-1
interfaces:
  - name: eno1
    macAddress: 0c:42:a1:55:f3:06
  - name: eno2
    macAddress: 0c:42:a1:55:f3:07
networkConfig:
  interfaces:
    - name: eno1
      type: ethernet
      state: up
      mac-address: 0c:42:a1:55:f3:06
      ipv4:
        enabled: true
        dhcp: false
      ethernet:
        sr-iov:
          total-vfs: 2
      ipv6:
        enabled: false
    - name: sriov:eno1:0
      type: ethernet
      state: up
      ipv4:
        enabled: false
      ipv6:
        enabled: false
        dhcp: false
    - name: sriov:eno1:1
      type: ethernet
      state: down
    - name: eno2
      type: ethernet
      state: up
      mac-address: 0c:42:a1:55:f3:07
      ipv4:
        enabled: true
      ethernet:
        sr-iov:
          total-vfs: 2
      ipv6:
        enabled: false
    - name: sriov:eno2:0
      type: ethernet
      state: up
      ipv4:
        enabled: false
      ipv6:
        enabled: false
    - name: sriov:eno2:1
      type: ethernet
      state: down
    - name: bond0
      type: bond
      state: up
      min-tx-rate: 100
      max-tx-rate: 200
      link-aggregation:
        mode: active-backup
        options:
          primary: sriov:eno1:0
        port:
          - sriov:eno1:0
          - sriov:eno2:0
      ipv4:
        address:
          - ip: 10.19.16.57
            prefix-length: 23
        dhcp: false
        enabled: true
      ipv6:
        enabled: false
      dns-resolver:
        config:
          server:
            - 10.11.5.160
            - 10.2.70.215
      routes:
        config:
          - destination: 0.0.0.0/0
            next-hop-address: 10.19.17.254
            next-hop-interface: bond0
            table-id: 254
"""
DUAL_STACK = """
hostname: worker-2
interfaces:
  - name: eno1
    macAddress: 00:ef:44:21:e6:a5
  - name: eno2
    macAddress: 00:ef:44:21:e6:a6
networkConfig:
  interfaces:
    - name: eno1
      type: ethernet
      state: up
      mac-address: 00:ef:44:21:e6:a5
      ipv4:
        enabled: true
        address:
          - ip: 10.10.10.16
            prefix-length: 24
        dhcp: false
      ipv6:
        enabled: true
        address:
          - ip: fd2e:6f44:5dd8:c956::16
            prefix-length: 64
        dhcp: false
        autoconf: false
    - name: eno2
      type: ethernet
      state: up
      mac-address: 00:ef:44:21:e6:a6
      ipv4:
        enabled: false
      ipv6:
        enabled: false
  dns-resolver:
    config:
      server:
        - 10.10.10.1
        - fd2e:6f44:5dd8:c956::1
  routes:
    config:
      - destination: 0.0.0.0/0
        next-hop-address: 10.10.10.254
        next-hop-interface: eno1
        table-id: 254
      - destination: ::/0
        next-hop-address: fd2e:6f44:5dd8:c956::fe
        next-hop-interface: eno1
        table-id: 254
"""
EXAMPLES = {"bonds-vlans": BONDS_VLANS, "bond-sriov": BOND_SRIOV, "dual-stack": DUAL_STACK}
CLUSTER = {
    "architecture": "amd64",
    "machine_networks": ["10.10.10.0/24", "10.19.16.0/23", "fd2e:6f44:5dd8:c956::/64"],
    "nodes": [{"name": "master-0", "roles": ["master"], "internal_ips": ["10.10.10.10"], "ready": True}],
}
ADDRESSES = {
    "bonds-vlans": ["10.10.10.14"],
    "bond-sriov": ["10.19.16.57"],
    "dual-stack": ["10.10.10.16", "fd2e:6f44:5dd8:c956::16"],
}


def inventory_form(entry):
    """The agent-config host as inventory host variables (what a user writes in host_vars)."""
    nics = [{"name": nic["name"], "mac_address": nic["macAddress"]} for nic in entry["interfaces"]]
    return host(entry["hostname"], interfaces=nics, network_config=copy.deepcopy(entry["networkConfig"]))


def file_form(tmp_path, entry):
    path = tmp_path / "agent-config.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1beta1", "kind": "AgentConfig", "hosts": [entry]}))
    problems = Problems()
    hosts, _ignored = read_agent_config(str(path), None, problems)
    assert problems.items == []
    return hosts, str(path)


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_docs_examples_are_accepted_in_the_inventory_form(example):
    entry = yaml.safe_load(EXAMPLES[example])
    (record,) = check_workers([inventory_form(entry)], CLUSTER)["hosts"]
    assert record["addresses"] == ADDRESSES[example] and record["network_config"] == entry["networkConfig"]


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_docs_examples_are_accepted_in_the_agent_config_form(tmp_path, example):
    entry = yaml.safe_load(EXAMPLES[example])
    hosts, path = file_form(tmp_path, entry)
    (record,) = check_workers([], CLUSTER, agent_hosts=hosts, play={"agent_config": path})["hosts"]
    assert record["addresses"] == ADDRESSES[example] and record["source"] == path


def test_a_bond_port_or_vlan_base_that_is_no_nic_is_refused_in_the_files_words(tmp_path):
    entry = yaml.safe_load(BONDS_VLANS)
    entry["networkConfig"]["interfaces"][1]["link-aggregation"]["port"][1] = "enp0s6"  # a NIC not in interfaces
    entry["networkConfig"]["interfaces"][0]["vlan"]["base-iface"] = "bond1"  # defined nowhere
    with pytest.raises(InventoryError) as caught:
        check_workers([inventory_form(entry)], CLUSTER)
    found = {(p["field"], p["value"]): p["message"] for p in caught.value.problems}
    assert sorted(found) == [
        ("interfaces", "enp0s5"),  # declared, used nowhere now
        ("network_config.interfaces[0].vlan.base-iface", "bond1"),
        ("network_config.interfaces[1].link-aggregation.port[1]", "enp0s6"),
    ]
    port = found[("network_config.interfaces[1].link-aggregation.port[1]", "enp0s6")]
    assert "is neither an interface of network_config nor a NIC of interfaces" in port
    assert "add {name: enp0s6, mac_address: <its MAC>} to interfaces" in port
    hosts, path = file_form(tmp_path, entry)
    with pytest.raises(InventoryError) as caught:
        check_workers([], CLUSTER, agent_hosts=hosts, play={"agent_config": path})
    fields = sorted(p["field"] for p in caught.value.problems)
    assert fields == [
        "interfaces",
        "networkConfig.interfaces[0].vlan.base-iface",
        "networkConfig.interfaces[1].link-aggregation.port[1]",
    ]


def test_a_malformed_sriov_name_is_still_refused():
    entry = yaml.safe_load(BOND_SRIOV)
    entry["networkConfig"]["interfaces"][1]["name"] = "sriov:eno1"  # no VF id
    with pytest.raises(InventoryError) as caught:
        check_workers([inventory_form(entry)], CLUSTER)
    first = caught.value.problems[0]
    assert (first["field"], first["value"]) == ("network_config.interfaces[1].name", "sriov:eno1")
