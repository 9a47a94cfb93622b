# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check step: sorting a host's variables, and every host against the others and the cluster."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import sort_variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import known_host_keys

CLUSTER = {
    "architecture": "amd64",
    "rpm_architecture": "x86_64",
    "platform": "BareMetal",
    "machine_networks": ["192.168.111.0/24"],
    "nodes": [
        {"name": "master-0", "roles": ["control-plane", "master"], "internal_ips": ["192.168.111.10"], "ready": True},
        {"name": "worker-old", "roles": ["worker"], "internal_ips": ["192.168.111.30"], "ready": False},
        {"name": "extra-worker-9", "roles": ["worker"], "internal_ips": ["192.168.111.29"], "ready": True},
    ],
}
SHARED = {"kubeconfig", "day2_workdir", "ansible_connection", "ntp_servers"}


def host(name, **variables):
    base = {"ansible_host": "x", "inventory_hostname": name, "group_names": ["new_workers"], "kubeconfig": "/k"}
    base.update(variables)
    return sort_variables(name, base, base.__getitem__, known_host_keys(), SHARED)


def good(name="extra-worker-0", last=20, **extra):
    settings = {
        "mac_address": "52:54:00:6f:00:%02x" % last,
        "ip": "192.168.111.%d" % last,
        "prefix_length": "24",
        "gateway": "192.168.111.1",
        "dns_servers": "192.168.111.1",
    }
    settings.update(extra)
    return host(name, **settings)


def problems_of(*hosts, cluster=None, **kwargs):
    with pytest.raises(InventoryError) as caught:
        check_workers(list(hosts), CLUSTER if cluster is None else cluster, **kwargs)
    return caught.value.problems


def test_variables_are_sorted_into_settings_typos_and_foreign_ones():
    found = host("w", ip="192.168.111.20", gatway="x", dns_server="y", rack="r12", kubeconfig="/k", ansible_user="u")
    assert found.settings == {"ip": "192.168.111.20"}
    assert found.typos == [("dns_server", "dns_servers", "y"), ("gatway", "gateway", "x")]
    assert found.foreign == ["rack"]


def test_a_good_inventory_gives_every_step_its_input():
    second = good("extra-worker-1", 21, bmc_address="redfish://bmc", bmc_password="pw")
    result = check_workers([good(), second], CLUSTER)
    assert [h["name"] for h in result["image_hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert result["image_hosts"][0]["prefix_length"] == 24  # converted as the argument spec does
    assert result["image_hosts"][0]["dns_servers"] == ["192.168.111.1"]
    assert "bmc_password" not in str(result["image_hosts"]) and "pw" not in str(result)
    assert result["boot_hosts"][1] == {
        "name": "extra-worker-1",
        "bmc_address": "redfish://bmc",
        "bmc_username": None,
        "bmc_password_set": True,
        "bmc_verify_certs": None,
    }
    assert result["install_hosts"][0] == {
        "name": "extra-worker-0",
        "address": "192.168.111.20",
        "mac_address": "52:54:00:6f:00:14",
    }
    assert result["join_nodes"][1] == {"name": "extra-worker-1", "addresses": ["192.168.111.21"]}
    assert result["joined"] == [] and result["ignored"] == {}


def test_an_awx_empty_answer_means_unset():
    result = check_workers([good(vlan_id="", ipv6="", root_device_hints="")], CLUSTER)
    assert "vlan_id" not in result["image_hosts"][0]


def test_a_typo_is_refused_naming_the_key_it_resembles_and_never_a_secret():
    problems = problems_of(good(gatway="192.168.111.1", bmc_pasword="secret"))
    messages = [p["message"] for p in problems]
    assert (
        'host extra-worker-0: field "gatway" value "192.168.111.1" is not a host variable of this collection; '
        'did you mean "gateway"? Rename it' in messages
    )
    assert any('did you mean "bmc_password"' in m for m in messages)
    assert "secret" not in str(problems)


def test_a_value_of_the_wrong_type_names_host_field_and_value():
    problems = problems_of(good(prefix_length="twenty-four"))
    assert problems[0]["host"] == "extra-worker-0" and problems[0]["field"] == "prefix_length"
    assert problems[0]["value"] == "twenty-four"


def test_an_address_is_required_to_follow_the_install():
    problems = problems_of(host("extra-worker-0", mac_address="52:54:00:6f:00:14"))
    assert [p["field"] for p in problems] == ["ip"]


def test_a_ready_node_with_the_hosts_address_joined_already():
    result = check_workers([good("extra-worker-9", 29), good()], CLUSTER)
    assert result["joined"] == ["extra-worker-9"]
    assert [h["name"] for h in result["image_hosts"]] == ["extra-worker-0"]


def test_names_and_addresses_of_existing_nodes_are_refused():
    problems = problems_of(good("worker-old", 31), good("master-0", 22), good("extra-worker-0", 30))
    messages = "\n".join(p["message"] for p in problems)
    assert 'host worker-old: field "name" value "worker-old" is already a Node of the cluster' in messages
    assert "replace_worker.yml" in messages
    assert 'host master-0: field "name" value "master-0" is a control-plane node of the cluster' in messages
    assert 'host extra-worker-0: field "ip" value "192.168.111.30" already belongs to Node worker-old' in messages


def test_the_replaced_node_may_keep_its_name_and_address():
    result = check_workers([good("worker-old", 30)], CLUSTER, replace_node="worker-old")
    assert [h["name"] for h in result["image_hosts"]] == ["worker-old"]


def test_an_address_outside_the_machine_networks_is_refused():
    problems = problems_of(good(ip="10.0.0.5", gateway="10.0.0.1"))
    assert any(p["field"] == "ip" and "machine networks" in p["message"] for p in problems)


def test_the_image_checks_run_on_every_host_at_once():
    problems = problems_of(good(gateway="10.9.9.9"), good("extra-worker-1", 21, mac_address="52:54:00:6f:00:14"))
    fields = sorted((p["host"], p["field"]) for p in problems)
    assert ("extra-worker-0", "gateway") in fields and ("extra-worker-1", "mac_address") in fields


def test_an_empty_group_is_refused():
    problems = problems_of(group="new_workers")
    assert problems[0]["message"].startswith('inventory: field "group" value "new_workers" has no hosts')


def test_the_user_guide_documents_exactly_the_host_keys():
    import pathlib
    import re

    guide = (pathlib.Path(__file__).resolve().parents[4] / "docs" / "user-guide.md").read_text()
    section = guide[guide.index("## 3. The inventory") : guide.index("## 4. The workflow")]
    documented = re.findall(r"^\| `([a-z_0-9]+)` \|", section, re.M)
    assert documented == list(known_host_keys())


# --- issue 10: one pass before any write ------------------------------------------------------------------------

RAW_CONFIG = {
    "interfaces": [
        {
            "name": "eth0",
            "type": "ethernet",
            "state": "up",
            "mac-address": "52:54:00:6f:00:14",
            "ipv4": {
                "enabled": True,
                "dhcp": False,
                "address": [
                    {"ip": "192.168.111.20", "prefix-length": 24},
                    {"ip": "192.168.111.40", "prefix-length": 24},
                ],
            },
        }
    ],
    "routes": {
        "config": [{"destination": "0.0.0.0/0", "next-hop-address": "192.168.111.1", "next-hop-interface": "eth0"}]
    },
}


def raw(name="extra-worker-0", **extra):
    return host(
        name, interfaces=[{"name": "eth0", "mac_address": "52:54:00:6f:00:14"}], network_config=RAW_CONFIG, **extra
    )


def test_a_ready_control_plane_node_with_the_hosts_address_is_refused_not_joined():
    problems = problems_of(good("master-0", 10))
    assert [(p["host"], p["field"]) for p in problems] == [("master-0", "name")]
    assert "is a control-plane node of the cluster (roles control-plane, master)" in problems[0]["message"]


def test_the_raw_form_follows_the_first_static_address_or_the_ip_given():
    result = check_workers([raw()], CLUSTER)
    assert result["install_hosts"][0]["address"] == "192.168.111.20"
    assert result["join_nodes"][0]["addresses"] == ["192.168.111.20", "192.168.111.40"]
    result = check_workers([raw(ip="192.168.111.40")], CLUSTER)
    assert result["install_hosts"][0]["address"] == "192.168.111.40"
    assert result["image_hosts"][0]["ip"] == "192.168.111.40"
    problems = problems_of(raw(ip="192.168.111.41"))
    assert [(p["field"], p["value"]) for p in problems] == [("ip", "192.168.111.41")]


def test_the_raw_forms_addresses_are_checked_against_the_cluster():
    config = {
        "interfaces": [
            dict(
                RAW_CONFIG["interfaces"][0],
                ipv4={"enabled": True, "dhcp": False, "address": [{"ip": "192.168.111.10", "prefix-length": 24}]},
            )
        ]
    }
    problems = problems_of(
        host("extra-worker-0", interfaces=[{"name": "eth0", "mac_address": "52:54:00:6f:00:14"}], network_config=config)
    )
    assert [(p["field"], p["value"]) for p in problems] == [
        ("network_config.interfaces[0].ipv4.address[0].ip", "192.168.111.10")
    ]
    assert "already belongs to Node master-0 (a control-plane node)" in problems[0]["message"]


def test_a_raw_form_without_a_static_address_needs_ip():
    config = {"interfaces": [dict(RAW_CONFIG["interfaces"][0], ipv4={"enabled": True, "dhcp": True})]}
    problems = problems_of(
        host("extra-worker-0", interfaces=[{"name": "eth0", "mac_address": "52:54:00:6f:00:14"}], network_config=config)
    )
    assert [(p["field"], p["value"]) for p in problems] == [("ip", None)]
    assert "network_config has no static address" in problems[0]["message"]


def test_misplaced_play_variables_and_typos_are_refused_with_their_values():
    problems = problems_of(good(day2_boot_method="redfish", dns_server="192.168.111.1"))
    assert [(p["field"], p["value"]) for p in problems] == [
        ("dns_server", "192.168.111.1"),
        ("day2_boot_method", "redfish"),
    ]
    assert "is a play variable of this collection; the roles read it from the play" in problems[1]["message"]


def test_redfish_needs_every_bmc_setting_and_gives_the_endpoint():
    bmc = {"bmc_address": "redfish-virtualmedia://bmc/redfish/v1/Systems/1", "bmc_username": "u", "bmc_password": "pw"}
    result = check_workers([good(**bmc)], CLUSTER, boot_method="redfish", iso_url="http://h/node.iso")
    assert result["boot_hosts"][0]["bmc_base_url"] == "https://bmc"
    assert result["boot_hosts"][0]["bmc_system_path"] == "/redfish/v1/Systems/1"
    assert "pw" not in str(result["boot_hosts"])
    problems = problems_of(good(bmc_address="ipmi://bmc"), boot_method="redfish", iso_url="")
    assert [(p["host"], p["field"]) for p in problems] == [
        ("(play)", "iso_url"),
        ("extra-worker-0", "bmc_address"),
        ("extra-worker-0", "bmc_username"),
        ("extra-worker-0", "bmc_password"),
    ]
    # Manual boot does not use the BMC settings: they are not required.
    assert check_workers([good(bmc_address="ipmi://bmc")], CLUSTER)["boot_hosts"][0]["bmc_address"] == "ipmi://bmc"


def test_a_wrong_boot_method_names_the_value_and_the_choices():
    problems = problems_of(good(), boot_method="pxe")
    assert problems[0]["message"].startswith('play: field "boot_method" value "pxe" is not a boot method')
    assert "one of: manual, redfish" in problems[0]["message"]


def test_addresses_against_the_vips_and_the_machine_networks_prefix():
    cluster = dict(CLUSTER, api_vips=["192.168.111.5"], ingress_vips=["192.168.111.4"])
    problems = problems_of(good(last=5), good("extra-worker-1", 21, prefix_length="25"), cluster=cluster)
    assert [(p["host"], p["field"], p["value"]) for p in problems] == [
        ("extra-worker-0", "ip", "192.168.111.5"),
        ("extra-worker-1", "prefix_length", 25),
    ]


def test_a_host_key_that_cannot_be_templated_is_a_problem_of_its_own():
    def read(key):
        if key == "gateway":
            raise Day2Error("'lab_router' is undefined")
        return {"mac_address": "52:54:00:6f:00:14", "ip": "192.168.111.20", "prefix_length": 24}[key]

    found = sort_variables(
        "extra-worker-0", ["mac_address", "ip", "prefix_length", "gateway"], read, known_host_keys(), set()
    )
    problems = problems_of(found)
    assert [(p["field"], p["value"]) for p in problems] == [("gateway", "(cannot be templated)")]
    assert "cannot be templated: 'lab_router' is undefined" in problems[0]["message"]


def test_a_group_that_is_not_in_the_inventory_names_the_close_one():
    problems = problems_of(group="new_worker", groups=["all", "ungrouped", "new_workers"])
    assert problems[0]["message"].startswith(
        'inventory: field "group" value "new_worker" is not a group of the inventory'
    )
    assert 'did you mean "new_workers"? Set day2_hosts_group to it' in problems[0]["message"]
    problems = problems_of(group="spare", groups=["all", "spare"])
    assert "has no hosts" in problems[0]["message"]
