# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check step: the cluster, the cluster meant, sorting a host's variables, every host against the others and the
cluster, and the host records and plan it returns."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import sort_variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import (
    check_identity,
    check_payload,
    check_workers,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import cluster_version
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_KEYS, CheckedHost
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import build_nodes_configs

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
COLLECTION_PACKAGE = "ansible_collections.openshift_agent.day2"


def host(name, **variables):
    base = {"ansible_host": "x", "inventory_hostname": name, "group_names": ["new_workers"], "kubeconfig": "/k"}
    base.update(variables)
    return sort_variables(name, base, base.__getitem__, HOST_KEYS, SHARED)


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
    assert [(p["field"], p["value"]) for p in found.problems] == [("dns_server", "y"), ("gatway", "x")]
    assert 'did you mean "dns_servers"' in found.problems[0]["message"]
    assert found.foreign == ["rack"]


def test_a_good_inventory_gives_one_record_per_host():
    second = good("extra-worker-1", 21, bmc_address="redfish://bmc", bmc_password="pw", rack="r1")
    result = check_workers([good(), second], CLUSTER)
    assert [h["name"] for h in result["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    first = result["hosts"][0]
    assert first["prefix_length"] == 24  # converted as the argument spec does
    assert first["dns_servers"] == ["192.168.111.1"]
    assert first["address"] == "192.168.111.20" and first["addresses"] == ["192.168.111.20"]
    assert (first["state"], first["source"], first["bmc"], first["labels"], first["taints"]) == (
        "new",
        "inventory",
        None,
        {},
        [],
    )
    assert "bmc_password" not in str(result["hosts"]) and "pw" not in str(result)
    assert result["hosts"][1]["bmc_address"] == "redfish://bmc"
    assert result["joined"] == [] and result["ignored"] == {"extra-worker-1": ["rack"]}
    assert result["hosts"][0]["mac_address"] == "52:54:00:6f:00:14"
    assert result["hosts"][1]["addresses"] == ["192.168.111.21"]


def test_the_plan_summary_is_the_lines_the_preflight_step_prints():
    cluster = dict(CLUSTER, name="lab", base_domain="example.test", version="4.21.1", ingress_domain="apps.lab")
    cluster["warnings"] = ["a warning", "another"]
    result = check_workers([good(rack="r1"), good("extra-worker-9", 29)], cluster, play={"node_labels": {"a": "b"}})
    assert result["summary"] == [
        "Cluster lab.example.test 4.21.1 (BareMetal, amd64), apps apps.lab",
        "New workers: extra-worker-0 (boot: manual)",
        "Of them from the day-1 agent-config (none given): none",
        "Of them from the nodes-config (none given): none",
        'Labels and taints: [{"name": "extra-worker-0", "labels": {"a": "b"}}, '
        '{"name": "extra-worker-9", "labels": {"a": "b"}}]',
        "Already joined: extra-worker-9",
        'Variables left alone (not host keys of this collection): {"extra-worker-0": ["rack"]}',
        "Cluster warnings: a warning; another",
    ]
    half = dict(CLUSTER, nodes=[{"name": "extra-worker-0", "roles": ["worker"], "internal_ips": [], "ready": False}])
    result = check_workers([good(), good("extra-worker-1", 21)], half)
    assert result["summary"][1] == "New workers: extra-worker-0 (half-joined), extra-worker-1 (boot: manual)"
    assert [h["state"] for h in result["hosts"]] == ["half-joined", "new"]
    assert result["hosts"][0]["bmc"] is None


@pytest.mark.parametrize(
    "cluster, require_healthy, says",
    [
        (
            {"name": "lab", "supported": False, "unsupported_reasons": ["platform AWS", "no nodes"]},
            False,
            "Cluster lab cannot take day-2 workers: platform AWS; no nodes",
        ),
        (
            {"name": "lab", "supported": True, "health": {"healthy": False, "problems": ["Node m is not Ready", "x"]}},
            True,
            "Cluster lab is not healthy: Node m is not Ready; x. Fix it first, or set day2_require_healthy=false to go "
            "on anyway.",
        ),
    ],
)
def test_a_cluster_that_cannot_take_workers_is_refused_first(cluster, require_healthy, says):
    with pytest.raises(Day2Error) as caught:
        check_workers([good(gatway="x")], dict(CLUSTER, **cluster), require_healthy=require_healthy)
    assert caught.value.message == says and not isinstance(caught.value, InventoryError)
    unhealthy = dict(CLUSTER, health={"healthy": False, "problems": ["x"]})
    assert check_workers([good()], unhealthy, require_healthy=False)["hosts"]


def test_an_awx_empty_answer_means_unset():
    result = check_workers([good(vlan_id="", ipv6="", root_device_hints="")], CLUSTER)
    assert "vlan_id" not in result["hosts"][0] and "ipv6" not in result["hosts"][0]


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
    assert [(p["host"], p["field"], p["value"]) for p in problems] == [("extra-worker-0", "ip", None)]
    assert "there is no address the install is followed at" in problems[0]["message"]
    assert "the one its DHCP reservation gives (mac_address and ip are all a DHCP host needs)" in problems[0]["message"]


def test_a_dhcp_host_is_followed_at_its_reserved_ip_and_checked_against_the_cluster():
    result = check_workers(
        [host("extra-worker-0", mac_address="52:54:00:6f:00:14", ip="192.168.111.20"), good("extra-worker-1", 21)],
        CLUSTER,
    )
    dhcp = result["hosts"][0]
    assert (dhcp["address"], dhcp["addresses"], dhcp.get("prefix_length")) == (
        "192.168.111.20",
        ["192.168.111.20"],
        None,
    )
    cluster = dict(CLUSTER, api_vips=["192.168.111.5"])
    problems = problems_of(
        host("extra-worker-0", mac_address="52:54:00:6f:00:14", ip="10.0.0.5"),
        host("extra-worker-1", mac_address="52:54:00:6f:00:15", ip="192.168.111.5"),
        host("extra-worker-2", mac_address="52:54:00:6f:00:16", ip="192.168.111.10"),
        host("extra-worker-3", mac_address="52:54:00:6f:00:17", ip="192.168.111.40"),
        host("extra-worker-4", mac_address="52:54:00:6f:00:18", ip="192.168.111.40"),
        cluster=cluster,
    )
    says = {(p["host"], p["field"]): p["message"] for p in problems}
    assert "outside the cluster's machine networks (192.168.111.0/24)" in says[("extra-worker-0", "ip")]
    assert "is the cluster's API VIP" in says[("extra-worker-1", "ip")]
    assert "already belongs to Node master-0" in says[("extra-worker-2", "ip")]
    assert "is already used by host extra-worker-3" in says[("extra-worker-4", "ip")]
    assert not any(p["field"] == "prefix_length" for p in problems)  # a DHCP address has no prefix to match


@pytest.mark.parametrize(
    "extra, field, says",
    [
        ({"ip": "192.168.111.20/24"}, "ip", "alone for a DHCP reservation"),
        (
            {"ip": "192.168.111.20", "gateway": "192.168.111.1"},
            "prefix_length",
            "a DHCP host gives mac_address and ip only",
        ),
        ({"ip": "192.168.111.20", "vlan_id": 10}, "prefix_length", "is not set but ip is"),
        ({"ipv6": "fd00::20"}, "ipv6_prefix_length", "is not set but ipv6 is"),
    ],
)
def test_any_static_key_makes_the_network_static(extra, field, says):
    problems = problems_of(host("extra-worker-0", mac_address="52:54:00:6f:00:14", **extra))
    assert any(p["field"] == field and says in p["message"] for p in problems), problems


def test_a_ready_node_with_the_hosts_address_joined_already():
    result = check_workers([good("extra-worker-9", 29), good()], CLUSTER)
    assert [h["name"] for h in result["joined"]] == ["extra-worker-9"] and result["joined"][0]["state"] == "joined"
    assert [h["name"] for h in result["hosts"]] == ["extra-worker-0"]


def test_names_and_addresses_of_existing_nodes_are_refused():
    problems = problems_of(good("worker-old", 31), good("master-0", 22), good("extra-worker-0", 30))
    messages = "\n".join(p["message"] for p in problems)
    assert 'host worker-old: field "name" value "worker-old" is already a Node of the cluster' in messages
    assert "replace_worker.yml" in messages
    assert 'host master-0: field "name" value "master-0" is a control-plane node of the cluster' in messages
    assert 'host extra-worker-0: field "ip" value "192.168.111.30" already belongs to Node worker-old' in messages


def test_the_replaced_node_may_keep_its_name_and_address():
    result = check_workers([good("worker-old", 30)], CLUSTER, replace_node="worker-old")
    assert [(h["name"], h["state"]) for h in result["hosts"]] == [("worker-old", "replace")]


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
    import re

    guide = (pathlib.Path(__file__).resolve().parents[4] / "docs" / "user-guide.md").read_text()
    section = guide[guide.index("## 3. The inventory") : guide.index("## 4. The workflow")]
    documented = re.findall(r"^\| `([a-z_0-9]+)` \|", section, re.M)
    assert documented == list(HOST_KEYS)


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
    assert result["hosts"][0]["address"] == "192.168.111.20"
    assert result["hosts"][0]["addresses"] == ["192.168.111.20", "192.168.111.40"]
    result = check_workers([raw(ip="192.168.111.40")], CLUSTER)
    assert result["hosts"][0]["address"] == "192.168.111.40" and result["hosts"][0]["ip"] == "192.168.111.40"
    assert result["hosts"][0]["addresses"] == ["192.168.111.40", "192.168.111.20"]
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
    assert [(p["field"], p["value"]) for p in problems] == [  # (in the order of their names)
        ("day2_boot_method", "redfish"),
        ("dns_server", "192.168.111.1"),
    ]
    assert "is a play variable of this collection; the roles read it from the play" in problems[0]["message"]
    assert 'is not a host variable of this collection; did you mean "dns_servers"' in problems[1]["message"]


def test_redfish_needs_every_bmc_setting_and_gives_the_endpoint():
    bmc = {"bmc_address": "redfish-virtualmedia://bmc/redfish/v1/Systems/1", "bmc_username": "u", "bmc_password": "pw"}
    result = check_workers([good(**bmc)], CLUSTER, boot_method="redfish", iso_url="http://h/node.iso")
    endpoint = {"bmc_base_url": "https://bmc", "bmc_system_path": "/redfish/v1/Systems/1"}
    assert result["hosts"][0]["bmc"] == endpoint and result["hosts"][0]["bmc_username"] == "u"
    assert result["hosts"][0]["bmc"]["bmc_base_url"] == "https://bmc"
    assert result["hosts"][0]["bmc"]["bmc_system_path"] == "/redfish/v1/Systems/1"
    assert "pw" not in str(result)
    assert result["boot"] == {"method": "redfish", "iso_url": "http://h/node.iso", "serve_iso": False}
    served = check_workers([good(**bmc)], CLUSTER, boot_method="redfish")  # day2_serve_iso unset, no URL: served
    assert served["boot"] == {"method": "redfish", "iso_url": "", "serve_iso": True}
    problems = problems_of(good(bmc_address="ipmi://bmc"), boot_method="redfish", iso_url="", serve_iso=False)
    assert [(p["host"], p["field"]) for p in problems] == [
        ("(play)", "day2_iso_url"),
        ("extra-worker-0", "bmc_address"),
        ("extra-worker-0", "bmc_username"),
        ("extra-worker-0", "bmc_password"),
    ]
    # Manual boot does not use the BMC settings: they are not required.
    manual = check_workers([good(bmc_address="ipmi://bmc")], CLUSTER)
    assert manual["hosts"][0]["bmc_address"] == "ipmi://bmc" and manual["hosts"][0]["bmc"] is None


def test_a_wrong_boot_method_names_the_value_and_the_choices():
    problems = problems_of(good(), boot_method="pxe")
    assert problems[0]["message"].startswith('play: field "day2_boot_method" value "pxe" is not a boot method')
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

    found = sort_variables("extra-worker-0", ["mac_address", "ip", "prefix_length", "gateway"], read, HOST_KEYS, set())
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


# --- the cluster meant ------------------------------------------------------------------------------------------

IDENTITY = {
    "name": "ostest",
    "base_domain": "test.metalkube.org",
    "version": "4.21.3",
    "api_url": "https://api.ostest.test.metalkube.org:6443",
}


def identity_problems(name="", domain="", version=""):
    found = Problems()
    check_identity(IDENTITY, {"cluster_name": name, "base_domain": domain, "openshift_version": version}, found)
    return found.items


@pytest.mark.parametrize(
    "name, domain, version",
    [
        ("", "", ""),
        (None, None, None),
        ("ostest", "", ""),
        ("OSTEST", "test.metalkube.org.", "4.21"),
        ("", "", "4.21.3"),
    ],
)
def test_the_cluster_meant(name, domain, version):
    assert identity_problems(name, domain, version) == []


def test_another_name_is_refused_naming_both():
    (problem,) = identity_problems(name="prod")
    assert problem["host"] == "(play)" and problem["field"] == "day2_cluster_name" and problem["value"] == "prod"
    assert problem["message"].startswith('play: field "day2_cluster_name" value "prod" is not the cluster')
    assert '"ostest"' in problem["message"] and "api.ostest.test.metalkube.org" in problem["message"]


def test_another_domain_and_version():
    found = identity_problems(domain="example.com", version="4.20")
    assert [p["field"] for p in found] == ["day2_base_domain", "day2_openshift_version"]
    assert '"test.metalkube.org"' in found[0]["message"] and "runs 4.21.3" in found[1]["message"]
    assert "runs 4.21.3" in identity_problems(version="4.21.2")[0]["message"]
    assert identity_problems(version="4.2") and identity_problems(version="4")


@pytest.mark.parametrize(
    "version, says", [("4.21.x", "is not a version x.y or x.y.z"), (4.2, "is a number"), ("v4.21", "x.y")]
)
def test_a_malformed_version(version, says):
    (problem,) = identity_problems(version=version)
    assert says in problem["message"]


def test_the_cluster_meant_is_checked_with_the_hosts():
    problems = problems_of(good(gatway="x"), play={"cluster_name": "prod"})
    assert [(p["host"], p["field"]) for p in problems] == [
        ("(play)", "day2_cluster_name"),
        ("extra-worker-0", "gatway"),
    ]


# --- workers of another architecture need a multi-architecture release payload ------------------------------------

RELEASE = "quay.io/openshift-release-dev/ocp-release@sha256:4a7a"
SINGLE = {"architecture": "amd64", "rpm_architecture": "x86_64", "release_architecture": "", "release_image": RELEASE}
MULTI = dict(SINGLE, release_architecture="Multi")


def checked(name, arch):
    return CheckedHost(hostname=name, label=name, architecture=arch)


def payload_problems(hosts, cluster):
    found = Problems()
    check_payload(hosts, cluster, found)
    return found.items


def test_another_architecture_on_a_single_architecture_payload_names_host_architecture_and_why():
    found = payload_problems([checked("extra-worker-0", "x86_64"), checked("extra-worker-1", "aarch64")], SINGLE)
    assert [(p["host"], p["field"], p["value"]) for p in found] == [("extra-worker-1", "cpu_architecture", "aarch64")]
    message = found[0]["message"]
    assert message.startswith('host extra-worker-1: field "cpu_architecture" value "aarch64" ')
    for words in ("control plane's architecture (x86_64)", RELEASE, "single-architecture", "not Multi", "aarch64 ISO"):
        assert words in message
    assert "use x86_64 hardware" in message and "oc adm upgrade --to-multi-arch" in message


def test_a_multi_architecture_payload_takes_both_and_the_same_architecture_always_passes():
    assert payload_problems([checked("a", "x86_64"), checked("b", "aarch64")], MULTI) == []
    assert payload_problems([checked("a", "x86_64"), checked("b", None)], SINGLE) == []
    arm = dict(SINGLE, architecture="arm64", rpm_architecture="aarch64")
    assert [p["host"] for p in payload_problems([checked("a", "x86_64"), checked("b", "aarch64")], arm)] == ["a"]


@pytest.mark.parametrize("arch", ["s390x", "ppc64le"])
def test_pairs_the_host_checks_refuse_are_not_reported_twice(arch):
    assert payload_problems([checked("a", arch)], SINGLE) == []


def test_facts_without_the_payload_architecture_are_not_guessed():
    old = {key: value for key, value in SINGLE.items() if key != "release_architecture"}
    assert payload_problems([checked("b", "aarch64")], old) == []


def test_the_facts_carry_clusterversion_desired_architecture():
    multi = {"status": {"desired": {"version": "4.21.1", "image": RELEASE, "architecture": "Multi"}}}
    single = {"status": {"desired": {"version": "4.21.1", "image": RELEASE}}}
    assert cluster_version(multi)["release_architecture"] == "Multi"
    assert cluster_version(single)["release_architecture"] == ""


def test_the_check_step_refuses_the_host_before_anything_is_written():
    variables = {
        "inventory_hostname": "extra-worker-1",
        "group_names": ["new_workers"],
        "mac_address": "52:54:00:6f:00:21",
        "ip": "192.168.111.21",
        "prefix_length": 24,
        "cpu_architecture": "arm64",
    }
    hosts = [sort_variables("extra-worker-1", variables, variables.__getitem__, HOST_KEYS, set())]
    cluster = dict(SINGLE, machine_networks=["192.168.111.0/24"], nodes=[])
    with pytest.raises(InventoryError) as caught:
        check_workers(hosts, cluster)
    assert [(p["host"], p["value"]) for p in caught.value.problems] == [("extra-worker-1", "aarch64")]
    assert check_workers(hosts, dict(cluster, release_architecture="Multi"))["hosts"][0]["name"] == "extra-worker-1"


# --- cohesion: the check runs on the controller with the check code alone ------------------------------------------


def test_the_check_step_imports_neither_the_pod_exec_nor_the_iso_reader():
    # What the action plugin imports from module_utils (the plugin itself needs ansible's controller code, which
    # ansible-test's module_utils units do not have), each in a fresh interpreter together.
    here = pathlib.Path(__file__).resolve().parents  # .../ansible_collections/openshift_agent/day2/tests/unit/...
    action = ast.parse((here[4] / "plugins" / "action" / "workers_check.py").read_text())
    imports = [
        ast.unparse(node)
        for node in action.body
        if isinstance(node, ast.ImportFrom) and ".module_utils." in node.module
    ]
    assert any("module_utils._check.workers import check_workers" in line for line in imports), imports
    code = "\n".join(["import sys", *imports, "print(chr(10).join(sys.modules))"])
    roots = [str(here[7])] if here[6].name == "ansible_collections" else []  # (ansible-test imports it by a finder)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(roots + [path for path in sys.path if path]))
    loaded = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert loaded.returncode == 0, loaded.stderr
    ours = [name for name in loaded.stdout.split() if name.startswith(COLLECTION_PACKAGE + ".plugins.module_utils.")]
    assert COLLECTION_PACKAGE + ".plugins.module_utils._check.workers" in ours
    heavy = r"\._image\.(pod_exec|iso\w*|cpio|initrd|ignition|info|build|node_joiner|run|artifacts)$"
    heavy += r"|\._(join|install)\b|\._boot\.serve"  # (_boot.redfish holds the BMC address rules, pure)
    assert [name for name in ours if re.search(heavy, name)] == []


def test_the_example_inventory_says_what_is_true():
    """playbooks/inventory.example.yml: a static host and a DHCP one, both good; the DHCP one renders no network."""
    example = pathlib.Path(__file__).resolve().parents[4] / "playbooks" / "inventory.example.yml"
    listed = yaml.safe_load(example.read_text())["all"]["children"]["new_workers"]["hosts"]
    result = check_workers([host(name, **variables) for name, variables in listed.items()], CLUSTER)
    records = {record["name"]: record for record in result["hosts"]}
    assert records["extra-worker-1"]["address"] == listed["extra-worker-1"]["ip"]
    configs = build_nodes_configs(result["hosts"], "x86_64")
    entries = {entry["hostname"]: entry for entry in configs["x86_64"]["hosts"]}
    assert "networkConfig" not in entries["extra-worker-1"] and "networkConfig" in entries["extra-worker-0"]


def test_the_plan_says_how_a_served_iso_is_served():
    bmc = {"bmc_address": "redfish-virtualmedia://bmc/redfish/v1/Systems/1", "bmc_username": "u", "bmc_password": "pw"}
    summary = check_workers([good(**bmc)], CLUSTER, boot_method="redfish")["summary"]
    assert summary[-1] == (
        "ISO: served by this controller over plain HTTP (set day2_serve_tls_cert for HTTPS), listening on this "
        "controller's address that routes to the BMCs (bmc) only (day2_serve_address), at a secret path. It holds the "
        "pull secret: only the BMC network should reach that address"
    )
    serve = {"address": "192.168.111.1:8080", "tls_cert": "/etc/day2/tls.crt"}
    summary = check_workers([good(**bmc)], CLUSTER, boot_method="redfish", serve=serve)["summary"]
    assert summary[-1].startswith("ISO: served by this controller over HTTPS, listening on 192.168.111.1:8080 only")
    assert not any(line.startswith("ISO:") for line in check_workers([good()], CLUSTER)["summary"])


@pytest.mark.parametrize("network", ["127.0.111.0/24", "192.168.111.0/24"])
def test_a_loopback_address_is_refused_with_the_lab_switch_only_where_the_cluster_is_a_lab(monkeypatch, network):
    monkeypatch.delenv("OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK", raising=False)
    lab = good(ip="127.0.111.20", gateway="127.0.111.1", dns_servers="127.0.111.1")
    problems = problems_of(lab, cluster=dict(CLUSTER, machine_networks=[network]))
    loopback = [p["message"] for p in problems if "is a loopback address" in p["message"]]
    assert len(loopback) == 1, problems
    if network.startswith("127."):  # the lab's machine network: the switch first, no "use a unicast address"
        assert loopback[0].endswith(
            "is a loopback address; this cluster's machine network is a loopback network, as a test lab's is: set "
            "OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1 in the controller's environment to let the lab's hosts through (a "
            "real host needs a unicast address of its network)"
        )
    else:
        assert loopback[0].endswith("is a loopback address; use a unicast address of the host's network")


def test_a_limit_takes_the_hosts_it_selected_and_refuses_one_that_selects_none(tmp_path):
    result = check_workers([good()], CLUSTER, limit="extra-worker-0", left_out=["extra-worker-1"])
    assert [h["name"] for h in result["hosts"]] == ["extra-worker-0"]
    assert result["summary"][-1] == "Limit extra-worker-0: left out extra-worker-1"
    # A limit selects inventory hosts: the files' hosts are left out (and named).
    spare = sort_variables("spare-0", {"mac_address": "52:54:00:6f:00:30"}, {}.get, HOST_KEYS, SHARED)
    spare.source = str(tmp_path / "agent-config.yaml")
    result = check_workers([good()], CLUSTER, limit="extra-worker-0", agent_hosts=[spare])
    assert result["summary"][-1] == "Limit extra-worker-0: left out spare-0"
    (problem,) = problems_of(limit="bastions", left_out=["extra-worker-0", "extra-worker-1"])
    assert (problem["host"], problem["field"], problem["value"]) == ("(inventory)", "limit", "bastions")
    assert problem["message"] == (
        'inventory: field "limit" value "bastions" selects no new worker of group new_workers (it holds '
        "extra-worker-0, extra-worker-1); limit the run to hosts of group new_workers (or to the group itself), or "
        "run it without --limit"
    )
