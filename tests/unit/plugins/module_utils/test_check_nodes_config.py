# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""oc's nodes-config.yaml as the new workers (day2_nodes_config): read as node-joiner reads it but with unknown
fields refused, the same records and checks as inventory hosts, a host defined twice refused, sshKey and
bootArtifactsBaseURL mapped onto the settings."""

import pathlib

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.agent_config import (
    image_settings,
    read_agent_config,
    read_nodes_config,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_check_agent_config import (
    document as agent_document,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_check_agent_config import (
    host as agent_host,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_workers_check import (
    CLUSTER,
    good,
)

EXAMPLE = pathlib.Path(__file__).resolve().parents[4] / "playbooks" / "nodes-config.example.yaml"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKlab lab@example"
# The example of the OpenShift documentation, as it is written there (odd indentation included), with usable MACs
# and addresses of the unit tests' cluster: openshift/openshift-docs modules/adding-node-iso-yaml.adoc
# @ddd2c957a17ea2ae24e08897502eae66e47ee983.
DOCS_EXAMPLE = """\
hosts:
- hostname: extra-worker-1
  rootDeviceHints:
   deviceName: /dev/sda
  interfaces:
   - macAddress: 52:54:00:6f:00:21
     name: eth0
  networkConfig:
   interfaces:
     - name: eth0
       type: ethernet
       state: up
       mac-address: 52:54:00:6f:00:21
       ipv4:
         enabled: true
         address:
           - ip: 192.168.111.21
             prefix-length: 24
         dhcp: false
- hostname: extra-worker-2
  rootDeviceHints:
   deviceName: /dev/sda
  interfaces:
   - macAddress: 52:54:00:6f:00:22
     name: eth0
  networkConfig:
   interfaces:
     - name: eth0
       type: ethernet
       state: up
       mac-address: 52:54:00:6f:00:22
       ipv4:
         enabled: true
         address:
           - ip: 192.168.111.22
             prefix-length: 24
         dhcp: false
"""


def read(tmp_path, text):
    path = tmp_path / "nodes-config.yaml"
    path.write_text(text)
    problems = Problems()
    hosts, settings = read_nodes_config(str(path), None, problems)
    return hosts, settings, problems.items, str(path)


def check(tmp_path, text, inventory=(), agent=None):
    hosts, _settings, problems, path = read(tmp_path, text)
    assert problems == []
    play = {"nodes_config": path}
    agent_hosts = []
    if agent is not None:
        agent_path = tmp_path / "agent-config.yaml"
        agent_path.write_text(yaml.safe_dump(agent))
        agent_hosts, _ignored = read_agent_config(str(agent_path), None, Problems())
        play["agent_config"] = str(agent_path)
    return check_workers(list(inventory), CLUSTER, nodes_hosts=hosts, agent_hosts=agent_hosts, play=play), path


def test_the_documentations_example_gives_the_same_records_as_an_inventory_would(tmp_path):
    result, path = check(tmp_path, DOCS_EXAMPLE, inventory=[good()])
    assert result["nodes_config_hosts"] == ["extra-worker-1", "extra-worker-2"] and result["agent_config_hosts"] == []
    assert [(h["name"], h["source"], h["address"]) for h in result["hosts"]] == [
        ("extra-worker-0", "inventory", "192.168.111.20"),
        ("extra-worker-1", path, "192.168.111.21"),
        ("extra-worker-2", path, "192.168.111.22"),
    ]
    second = result["hosts"][1]
    assert second["interfaces"] == [{"name": "eth0", "mac_address": "52:54:00:6f:00:21"}]
    assert second["root_device_hints"] == {"deviceName": "/dev/sda"}
    assert second["network_config"] == yaml.safe_load(DOCS_EXAMPLE)["hosts"][0]["networkConfig"]
    assert "Of them from the nodes-config %s: extra-worker-1, extra-worker-2" % path in result["summary"]


def test_the_file_wide_fields_become_the_hosts_architecture_and_the_image_settings(tmp_path):
    text = "cpuArchitecture: aarch64\nsshKey: %s\nbootArtifactsBaseURL: http://pxe.example/day2\n" % KEY
    text += "apiVersion: v1\nkind: NodesConfig\nmetadata: {name: x}\n" + DOCS_EXAMPLE
    hosts, settings, problems, _path = read(tmp_path, text)
    assert problems == [] and {h.settings["cpu_architecture"] for h in hosts} == {"aarch64"}
    assert settings == {"ssh_key": KEY, "boot_artifacts_base_url": "http://pxe.example/day2"}


def test_an_unknown_field_is_refused_and_names_go_by_case_as_in_go(tmp_path):
    text = DOCS_EXAMPLE.replace("  networkConfig:", "  netwrokConfig:", 1).replace("rootDeviceHints", "rootdevicehints")
    text += "additionalNTPSources: [0.pool.ntp.org]\nhost: []\n"
    hosts, _settings, problems, path = read(tmp_path, text)
    found = {(p["host"], p["field"]): p["message"] for p in problems}
    assert sorted(found) == [
        ("(nodes-config)", "additionalNTPSources"),
        ("(nodes-config)", "host"),
        ("extra-worker-1", "netwrokConfig"),
    ]
    assert "node-joiner would drop it unseen" in found[("extra-worker-1", "netwrokConfig")]
    assert "remove it from %s" % path in found[("(nodes-config)", "host")]
    assert hosts[0].settings["root_device_hints"] == {"deviceName": "/dev/sda"}  # (rootdevicehints: the same field)


def test_a_master_and_a_host_without_a_static_address_are_refused_in_the_files_words(tmp_path):
    doc = yaml.safe_load(DOCS_EXAMPLE)
    doc["hosts"][0]["role"] = "master"
    del doc["hosts"][1]["networkConfig"]  # a DHCP host: the file has no ip to follow it at
    doc["hosts"].append({"hostname": "extra-worker-3", "interfaces": [{"name": "eth0", "macAddress": "52:54:00:6f"}]})
    hosts, _settings, problems, path = read(tmp_path, yaml.safe_dump(doc))
    assert [(p["host"], p["field"]) for p in problems] == [("extra-worker-1", "role")]
    assert "node-joiner adds workers only" in problems[0]["message"] and "day2_nodes_config" in problems[0]["message"]
    with pytest.raises(InventoryError) as caught:
        check_workers([good()], CLUSTER, nodes_hosts=hosts, play={"nodes_config": path})
    found = {(p["host"], p["field"]): p["message"] for p in caught.value.problems}
    dhcp = found[("extra-worker-2", "networkConfig")]
    assert "has no static address" in dhcp and "define it in the inventory instead" in dhcp
    assert "mac_address and ip, the address its DHCP reservation gives" in dhcp and dhcp.endswith("(in %s)" % path)
    assert 'field "interfaces[0].macAddress"' in found[("extra-worker-3", "interfaces[0].macAddress")]


@pytest.mark.parametrize("same", ["name", "mac"])
def test_a_host_in_the_file_and_in_the_inventory_is_refused(tmp_path, same):
    inventory = (
        good("extra-worker-1", 21) if same == "name" else good("extra-worker-8", 23, mac_address="52:54:00:6f:00:21")
    )
    hosts, _settings, _problems, path = read(tmp_path, DOCS_EXAMPLE)
    with pytest.raises(InventoryError) as caught:
        check_workers([inventory], CLUSTER, nodes_hosts=hosts, play={"nodes_config": path})
    (problem,) = caught.value.problems
    assert problem["host"] == "extra-worker-1"
    where = "in inventory group new_workers and in %s" % path
    if same == "name":
        assert problem["field"] == "hostname" and "is defined twice: " + where in problem["message"]
    else:
        assert (problem["field"], problem["value"]) == ("interfaces", "52:54:00:6f:00:21")
        assert "is the MAC of extra-worker-8: %s (the same host defined twice)" % where in problem["message"]


def test_a_host_in_the_file_and_in_the_agent_config_is_refused(tmp_path):
    agent = agent_document(agent_host("extra-worker-1", 21))
    with pytest.raises(InventoryError) as caught:
        check(tmp_path, DOCS_EXAMPLE, agent=agent)
    (problem,) = caught.value.problems
    assert problem["field"] == "hostname" and "is defined twice: in %s" % (tmp_path / "agent-config.yaml") in str(
        problem["message"]
    )


def test_the_image_settings_come_from_the_setting_or_the_file_and_a_conflict_is_refused():
    none = {"ssh_key": "", "boot_artifacts_base_url": ""}
    url = "https://pxe.example/day2"
    problems = Problems()
    assert image_settings({}, none, "n.yaml", problems) == none
    assert image_settings({"ssh_key": KEY}, none, "n.yaml", problems) == dict(none, ssh_key=KEY)
    assert image_settings({"ssh_key": KEY}, dict(none, ssh_key=KEY + "\n"), "n.yaml", problems)["ssh_key"] == KEY
    assert image_settings({"boot_artifacts_base_url": url}, none, "n.yaml", problems)["boot_artifacts_base_url"] == url
    assert problems.items == []
    secret = "https://user:pxe-Secret-1@pxe.example/day2"
    image_settings(
        {"ssh_key": "ssh-rsa AAAA other", "boot_artifacts_base_url": secret},
        dict(none, **{"ssh_key": KEY, "boot_artifacts_base_url": url}),
        "n.yaml",
        problems,
    )
    image_settings({"boot_artifacts_base_url": "ftp://pxe.example"}, none, "n.yaml", problems)
    found = {(p["field"], p["value"]): p["message"] for p in problems.items}
    assert "differs from day2_ssh_key (%s), which is set too" % KEY in found[("sshKey", "ssh-rsa AAAA other")]
    assert "set it in one place: in n.yaml or as day2_ssh_key" in found[("sshKey", "ssh-rsa AAAA other")]
    assert "is not an http:// or https:// URL" in found[("bootArtifactsBaseURL", "ftp://pxe.example")]
    assert "pxe-Secret-1" not in str(problems.items)
    assert {p["host"] for p in problems.items} == {"(nodes-config)"}


def test_not_a_nodes_config(tmp_path):
    for text, says in (("a: [", "is not YAML"), ("- x\n", "is not a mapping"), ("hosts: {a: b}\n", "is not a list")):
        _hosts, _settings, problems, _path = read(tmp_path, text)
        assert says in problems[0]["message"], problems
    problems = Problems()
    assert read_nodes_config("", None, problems) == ([], {}) and problems.items == []
    assert read_nodes_config(str(tmp_path / "missing.yaml"), None, problems) == ([], {})
    assert problems.items[0]["field"] == "day2_nodes_config" and "cannot be read" in problems.items[0]["message"]


def test_the_example_is_a_good_nodes_config():
    problems = Problems()
    hosts, settings = read_nodes_config(str(EXAMPLE), None, problems)
    assert problems.items == [] and settings == {} and [h.name for h in hosts] == ["extra-worker-0", "extra-worker-1"]
    assert all(h.settings.get("network_config") and h.settings.get("root_device_hints") for h in hosts)
