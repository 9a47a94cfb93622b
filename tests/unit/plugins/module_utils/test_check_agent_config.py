# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A day-1 agent-config.yaml as the new workers: the same records, the same checks, its mistakes in its words."""

import pathlib

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.agent_config import read_agent_config
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_workers_check import CLUSTER, good

EXAMPLE = pathlib.Path(__file__).resolve().parents[4] / "playbooks" / "agent-config.example.yaml"


def nmstate(ip, mac="52:54:00:6f:00:14"):
    return {
        "interfaces": [
            {
                "name": "eth0",
                "type": "ethernet",
                "state": "up",
                "mac-address": mac,
                "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": ip, "prefix-length": 24}]},
            }
        ],
        "dns-resolver": {"config": {"server": ["192.168.111.1"]}},
        "routes": {
            "config": [{"destination": "0.0.0.0/0", "next-hop-address": "192.168.111.1", "next-hop-interface": "eth0"}]
        },
    }


def host(name="extra-worker-0", last=20, **extra):
    mac = "52:54:00:6f:00:%02x" % last
    entry = {
        "hostname": name,
        "role": "worker",
        "interfaces": [{"name": "eth0", "macAddress": mac}],
        "networkConfig": nmstate("192.168.111.%d" % last, mac),
        "rootDeviceHints": {"deviceName": "/dev/sda"},
    }
    entry.update(extra)
    return entry


def document(*hosts, **fields):
    return dict(
        {"apiVersion": "v1beta1", "kind": "AgentConfig", "metadata": {"name": "ostest"}, "hosts": list(hosts)}, **fields
    )


def read(tmp_path, doc, text=None):
    path = tmp_path / "agent-config.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(doc))
    problems = Problems()
    hosts, ignored = read_agent_config(str(path), None, problems)
    return hosts, ignored, problems.items, str(path)


def test_hosts_become_inventory_records_and_pass_the_same_checks(tmp_path):
    bmc = {
        "address": "redfish-virtualmedia://192.168.111.201/redfish/v1/Systems/1",
        "username": "admin",
        "password": "secret",
        "disableCertificateVerification": True,
    }
    doc = document(host(), host("extra-worker-1", 21, bmc=bmc, role=None), rendezvousIP="192.168.111.80")
    hosts, ignored, problems, path = read(tmp_path, doc)
    assert problems == [] and ignored == ["rendezvousIP"]
    first = hosts[0].settings
    assert first["interfaces"] == [{"name": "eth0", "mac_address": "52:54:00:6f:00:14"}]
    assert first["root_device_hints"] == {"deviceName": "/dev/sda"} and first["network_config"]["interfaces"]
    assert hosts[1].settings["bmc_verify_certs"] is False and hosts[1].settings["bmc_password"] == "secret"
    result = check_workers([], CLUSTER, agent_hosts=hosts, play={"agent_config": path, "node_labels": {"zone": "a"}})
    assert result["agent_config_hosts"] == ["extra-worker-0", "extra-worker-1"]
    assert [h["source"] for h in result["hosts"]] == [path, path]
    assert [n["addresses"] for n in result["hosts"]] == [["192.168.111.20"], ["192.168.111.21"]]
    first = result["hosts"][0]
    assert (first["name"], first["address"], first["interfaces"][0]["mac_address"]) == (
        "extra-worker-0",
        "192.168.111.20",
        "52:54:00:6f:00:14",
    )
    assert result["hosts"][0]["labels"] == {"zone": "a"}
    assert result["hosts"][0]["network_config"] == doc["hosts"][0]["networkConfig"]
    assert result["hosts"][1]["bmc_verify_certs"] is False and "secret" not in str(result)


def test_mixed_with_inventory_hosts_and_a_host_in_both_is_refused(tmp_path):
    hosts, _ignored, _problems, path = read(tmp_path, document(host("extra-worker-1", 21)))
    result = check_workers([good()], CLUSTER, agent_hosts=hosts, play={"agent_config": path})
    assert [(h["name"], h["source"]) for h in result["hosts"]] == [
        ("extra-worker-0", "inventory"),
        ("extra-worker-1", path),
    ]
    hosts, _ignored, _problems, path = read(tmp_path, document(host()))
    with pytest.raises(InventoryError) as caught:
        check_workers([good()], CLUSTER, agent_hosts=hosts, play={"agent_config": path})
    (problem,) = caught.value.problems
    assert problem["host"] == "extra-worker-0" and problem["field"] == "hostname"
    assert "defined twice: in inventory group new_workers and in %s" % path in problem["message"]


def test_a_master_is_refused_and_other_mistakes_named(tmp_path):
    doc = document(
        host(role="master"), host("extra-worker-1", 21, role="infra", rootDevicehints={}), {"role": "worker"}
    )
    _hosts, _ignored, problems, _path = read(tmp_path, doc)
    by = {(p["host"], p["field"]): p["message"] for p in problems}
    assert "node-joiner adds workers only" in by[("extra-worker-0", "role")]
    assert "is not a role" in by[("extra-worker-1", "role")]
    assert "is not set" in by[("(agent-config)", "hosts[2].hostname")]
    # Go matches names regardless of case: rootDevicehints is rootDeviceHints; a real unknown field is refused
    doc = document(host(rootDevicehints={"deviceName": "/dev/sdb"}, rootDeviceHints=None, labels={"a": "b"}))
    hosts, _ignored, problems, _path = read(tmp_path, doc)
    assert [(p["field"], "is not a field" in p["message"]) for p in problems] == [("labels", True)]
    assert hosts[0].settings["root_device_hints"] == {"deviceName": "/dev/sdb"}


def test_problems_of_the_checks_use_the_files_words(tmp_path):
    bad = host(networkConfig=nmstate("10.0.0.5"), interfaces=[{"name": "eth0", "macAddress": "52:54:00:6f:00"}])
    hosts, _ignored, _problems, path = read(tmp_path, document(bad))
    with pytest.raises(InventoryError) as caught:
        check_workers([], CLUSTER, agent_hosts=hosts, play={"agent_config": path})
    fields = {p["field"]: p["message"] for p in caught.value.problems}
    assert 'host extra-worker-0: field "interfaces[0].macAddress"' in fields["interfaces[0].macAddress"]
    assert fields["interfaces[0].macAddress"].endswith("(in %s)" % path)
    assert any(field.startswith("networkConfig") for field in fields), fields


def test_an_unquoted_all_digit_mac_stays_the_mac_as_the_installer_reads_it(tmp_path):
    text = yaml.safe_dump(document(host())).replace("52:54:00:6f:00:14", "10:20:30:40:50:59")
    assert "'10:20:30:40:50:59'" not in text and "10:20:30:40:50:59" in text  # unquoted in the file
    hosts, _ignored, problems, _path = read(tmp_path, None, text)
    assert problems == [] and hosts[0].settings["interfaces"][0]["mac_address"] == "10:20:30:40:50:59"


@pytest.mark.parametrize(
    "text, says",
    [
        ("kind: InstallConfig\napiVersion: v1\n", "is not an agent-config.yaml"),
        ("a: [", "is not YAML"),
        ("- x\n", "is not a mapping"),
    ],
)
def test_not_an_agent_config(tmp_path, text, says):
    _hosts, _ignored, problems, _path = read(tmp_path, None, text)
    assert problems[0]["field"] == "day2_agent_config" and says in problems[0]["message"]
    problems = Problems()
    assert read_agent_config(str(tmp_path / "missing.yaml"), None, problems) == ([], [])
    assert "cannot be read" in problems.items[0]["message"]


def test_no_worker_anywhere(tmp_path):
    with pytest.raises(InventoryError) as caught:
        check_workers([], CLUSTER, agent_hosts=[], play={"agent_config": "x.yaml"})
    assert "x.yaml names no new worker" in caught.value.problems[0]["message"]


def test_the_example_is_a_good_agent_config():
    problems = Problems()
    (
        hosts,
        _ignored,
    ) = read_agent_config(str(EXAMPLE), None, problems)
    assert problems.items == [] and len(hosts) >= 2 and all(h.settings.get("network_config") for h in hosts)


def test_a_relative_path_is_taken_from_the_current_directory_else_the_playbooks(tmp_path, monkeypatch):
    (tmp_path / "agent-config.yaml").write_text(yaml.safe_dump(document(host())))
    monkeypatch.chdir(tmp_path.parent)
    problems = Problems()
    assert read_agent_config("", None, problems) == ([], []) and problems.items == []
    hosts, _ignored = read_agent_config("agent-config.yaml", str(tmp_path), problems)
    assert [h.name for h in hosts] == ["extra-worker-0"] and problems.items == []
    hosts, _ignored = read_agent_config(tmp_path.name + "/agent-config.yaml", "/nonexistent", problems)
    assert [h.name for h in hosts] == ["extra-worker-0"] and problems.items == []


def test_a_file_host_whose_mac_clashes_has_its_other_problems_named_in_the_same_round(tmp_path):
    """A MAC of an inventory host in the file, and an address outside the machine networks: both at once."""
    clash = host("extra-worker-1", 21, networkConfig=nmstate("10.0.0.21", "52:54:00:6f:00:14"))
    clash["interfaces"] = [{"name": "eth0", "macAddress": "52:54:00:6f:00:14"}]
    hosts, _ignored, _problems, path = read(tmp_path, document(clash))
    with pytest.raises(InventoryError) as caught:
        check_workers([good()], CLUSTER, agent_hosts=hosts, play={"agent_config": path})
    found = [(p["host"], p["field"], p["value"]) for p in caught.value.problems]
    assert found[0] == ("extra-worker-1", "interfaces", "52:54:00:6f:00:14")  # named once, as the same host twice
    assert ("extra-worker-1", "networkConfig.interfaces[0].ipv4.address[0].ip", "10.0.0.21") in found
    assert [p for p in found if p[2] == "52:54:00:6f:00:14"] == [found[0]]
    assert "is the MAC of extra-worker-0: in inventory group new_workers and in %s" % path in str(caught.value)
    assert "is outside the cluster's machine networks" in str(caught.value)
