# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import json

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._cluster_facts import (
    READS,
    FactsError,
    build_facts,
    parse_version,
    pull_secret_registries,
)

MARKER = "SECRET-MARKER-UNIT"


def b64(value):
    return base64.b64encode(value.encode()).decode()


def condition(ctype, status, message=""):
    return {"type": ctype, "status": status, "message": message}


def node(name, role, ip, arch="amd64", ready="True"):
    return {
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/%s" % role: "", "kubernetes.io/arch": arch}},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"architecture": arch},
            "conditions": [condition("Ready", ready)],
        },
    }


INSTALL_CONFIG = {
    "apiVersion": "v1",
    "metadata": {"name": "unit"},
    "baseDomain": "example.test",
    "networking": {
        "machineNetwork": [{"cidr": "192.0.2.0/24"}],
        "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
        "serviceNetwork": ["172.30.0.0/16"],
        "networkType": "OVNKubernetes",
    },
    "sshKey": "ssh-ed25519 AAAAinstallconfig",
    "imageDigestSources": [{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.test/ocp"]}],
}

POINTER = {
    "ignition": {
        "version": "3.2.0",
        "config": {"merge": [{"source": "https://api-int.unit.example.test:22623/config/worker"}]},
        "security": {"tls": {"certificateAuthorities": [{"source": "data:text/plain;base64,LS0t"}]}},
    }
}

STREAM = {
    "stream": "rhcos-4.18",
    "architectures": {
        "x86_64": {
            "artifacts": {
                "metal": {
                    "release": "418.94.1",
                    "formats": {
                        "iso": {"disk": {"location": "https://example.test/live.x86_64.iso", "sha256": "aa"}},
                        "pxe": {
                            "kernel": {"location": "https://example.test/k", "sha256": "k1"},
                            "initramfs": {"location": "https://example.test/i", "sha256": "i1"},
                            "rootfs": {"location": "https://example.test/r", "sha256": "r1"},
                        },
                    },
                }
            }
        }
    },
}


def objects(**overrides):
    base = {
        "clusterversion": {
            "spec": {"clusterID": "cid-1"},
            "status": {
                "desired": {"version": "4.18.3", "image": "quay.io/release@sha256:1"},
                "history": [{"version": "4.18.3", "state": "Completed", "image": "quay.io/release@sha256:1"}],
            },
        },
        "infrastructure": {
            "spec": {"platformSpec": {"type": "BareMetal"}},
            "status": {
                "apiServerURL": "https://api.unit.example.test:6443",
                "apiServerInternalURI": "https://api-int.unit.example.test:6443",
                "infrastructureName": "unit-abcde",
                "platformStatus": {
                    "type": "BareMetal",
                    "baremetal": {"apiServerInternalIPs": ["192.0.2.5"], "ingressIPs": ["192.0.2.4"]},
                },
            },
        },
        "network": {
            "status": {
                "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                "serviceNetwork": ["172.30.0.0/16"],
                "networkType": "OVNKubernetes",
            }
        },
        "proxy": {"spec": {}, "status": {}},
        "install_config": {"data": {"install-config": yaml.safe_dump(INSTALL_CONFIG)}},
        "pull_secret": {
            "data": {".dockerconfigjson": b64(json.dumps({"auths": {"quay.io": {"auth": MARKER}, "registry.test": {"auth": MARKER}}}))}
        },
        "user_ca_bundle": None,
        "nodes": {"items": [node("master-1", "master", "192.0.2.11"), node("master-0", "master", "192.0.2.10")]},
        "idms": {"items": []},
        "icsp": {"items": []},
        "bootimages": {"data": {"stream": json.dumps(STREAM)}},
        "worker_user_data": {"data": {"userData": b64(json.dumps(POINTER))}},
        "mc_ssh": {"spec": {"config": {"passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAmc"]}]}}}},
        "mc_fips": {"spec": {"fips": False}},
        "mc_chrony": {"spec": {"config": {"storage": {"files": [{"path": "/etc/chrony.conf"}]}}}},
        "clusteroperators": {
            "items": [
                {"metadata": {"name": "dns"}, "status": {"conditions": [condition("Available", "True"), condition("Degraded", "False")]}}
            ]
        },
        "worker_pool": {"status": {"conditions": [condition("Updated", "True"), condition("Degraded", "False")]}},
    }
    base.update(overrides)
    return base


def test_reads_are_all_get_or_list_and_unique():
    keys = [key for key, _target, _required in READS]
    assert len(keys) == len(set(keys)) == 17
    assert all(target.verb in ("get", "list") for _key, target, _required in READS)


def test_healthy_baremetal_cluster():
    facts = build_facts(objects())
    assert facts["supported"] is True, facts["unsupported_reasons"]
    assert facts["cluster_id"] == "cid-1"
    assert (facts["name"], facts["base_domain"]) == ("unit", "example.test")
    assert facts["api_dns_name"] == "api.unit.example.test"
    assert facts["version"] == "4.18.3"
    assert (facts["architecture"], facts["rpm_architecture"]) == ("amd64", "x86_64")
    assert facts["platform"] == "BareMetal"
    assert facts["api_vips"] == ["192.0.2.5"] and facts["ingress_vips"] == ["192.0.2.4"]
    assert facts["machine_networks"] == ["192.0.2.0/24"]
    assert facts["cluster_networks"] == [{"cidr": "10.128.0.0/14", "host_prefix": 23}]
    assert facts["ssh_key"] == "ssh-ed25519 AAAAmc"
    assert facts["worker_ignition"]["url"].endswith(":22623/config/worker")
    assert facts["worker_ignition"]["has_ca"] is True
    assert facts["boot_images"]["x86_64"]["iso"] == {"location": "https://example.test/live.x86_64.iso", "sha256": "aa"}
    assert facts["boot_images"]["x86_64"]["pxe"]["rootfs"]["sha256"] == "r1"
    assert [n["name"] for n in facts["nodes"]] == ["master-0", "master-1"]
    assert facts["nodes"][0]["roles"] == ["master"] and facts["nodes"][0]["internal_ips"] == ["192.0.2.10"]
    assert facts["health"]["healthy"] is True
    assert facts["chrony_configured"] is True


def test_pull_secret_contents_never_in_facts():
    facts = build_facts(objects())
    assert facts["pull_secret"] == {"present": True, "registries": ["quay.io", "registry.test"]}
    assert MARKER not in json.dumps(facts)


def test_old_version_is_unsupported():
    objs = objects()
    objs["clusterversion"]["status"]["desired"]["version"] = "4.16.20"
    facts = build_facts(objs)
    assert facts["supported"] is False
    assert any("4.16.20 is older than 4.17" in r for r in facts["unsupported_reasons"])


@pytest.mark.parametrize("platform, supported", [
    ("BareMetal", True), ("None", True), ("VSphere", True), ("Nutanix", True), ("AWS", False), ("External", False),
])
def test_platforms(platform, supported):
    objs = objects()
    objs["infrastructure"]["spec"]["platformSpec"]["type"] = platform
    assert build_facts(objs)["supported"] is supported


def test_platform_none_has_no_vips():
    objs = objects()
    objs["infrastructure"]["spec"]["platformSpec"]["type"] = "None"
    objs["infrastructure"]["status"]["platformStatus"] = {"type": "None"}
    facts = build_facts(objs)
    assert facts["api_vips"] == [] and facts["ingress_vips"] == []


def test_degraded_operator_and_pool_are_health_problems():
    objs = objects()
    objs["clusteroperators"]["items"][0]["status"]["conditions"][1] = condition("Degraded", "True", "DNS down")
    objs["worker_pool"]["status"]["conditions"] = [condition("Updated", "False"), condition("Degraded", "True", "node x failed")]
    health = build_facts(objs)["health"]
    assert health["healthy"] is False
    assert "ClusterOperator dns is Degraded: DNS down" in health["problems"]
    assert "MachineConfigPool worker is Degraded: node x failed" in health["problems"]


def test_mirrors_from_idms_and_fallback_to_install_config_when_forbidden():
    objs = objects(idms={"items": [{"metadata": {"name": "m"}, "spec": {"imageDigestMirrors": [{"source": "quay.io/a", "mirrors": ["m.test/a"]}]}}]})
    assert build_facts(objs)["mirrors"] == [{"source": "quay.io/a", "mirrors": ["m.test/a"], "origin": "ImageDigestMirrorSet/m"}]
    facts = build_facts(objects(idms=None), unreadable={"idms": "403"})
    assert facts["mirrors"][0]["origin"] == "install-config/imageDigestSources"
    assert facts["supported"] is True


def test_missing_node_joiner_inputs_make_it_unsupported():
    facts = build_facts(objects(bootimages=None, pull_secret=None), unreadable={"pull_secret": "permission denied"})
    reasons = " | ".join(facts["unsupported_reasons"])
    assert "cannot read the pull secret" in reasons and "permission denied" in reasons
    assert "coreos-bootimages) does not exist" in reasons


def test_mixed_control_plane_architectures_are_reported():
    objs = objects(nodes={"items": [node("m0", "master", "192.0.2.10"), node("m1", "master", "192.0.2.11", arch="arm64")]})
    facts = build_facts(objs)
    assert any("several architectures" in r for r in facts["unsupported_reasons"])


def test_arm64_cluster_without_boot_image_for_it():
    objs = objects(nodes={"items": [node("m0", "master", "192.0.2.10", arch="arm64")]})
    facts = build_facts(objs)
    assert facts["rpm_architecture"] == "aarch64"
    assert any("no RHCOS boot image for the control-plane architecture aarch64" in r for r in facts["unsupported_reasons"])


def test_not_ready_node_is_a_health_problem():
    objs = objects(nodes={"items": [node("m0", "master", "192.0.2.10"), node("w0", "worker", "192.0.2.20", ready="False")]})
    assert "Node w0 is not Ready" in build_facts(objs)["health"]["problems"]


def test_proxy_status_wins_over_spec():
    objs = objects(proxy={"spec": {"httpProxy": "http://spec:3128"}, "status": {"httpProxy": "http://status:3128", "noProxy": ".cluster.local"}})
    proxy = build_facts(objs)["proxy"]
    assert proxy == {"enabled": True, "http_proxy": "http://status:3128", "https_proxy": "", "no_proxy": ".cluster.local"}


@pytest.mark.parametrize("text", ["", ": : not yaml : [", "just a string", yaml.safe_dump({"metadata": {"name": "x"}})])
def test_malformed_install_config_fails_clearly(text):
    with pytest.raises(FactsError, match="cluster-config-v1"):
        build_facts(objects(install_config={"data": {"install-config": text}}))


def test_malformed_stream_and_pointer_fail_clearly():
    with pytest.raises(FactsError, match="coreos-bootimages"):
        build_facts(objects(bootimages={"data": {"stream": "{nope"}}))
    with pytest.raises(FactsError, match="worker-user-data-managed"):
        build_facts(objects(worker_user_data={"data": {"userData": b64("not json")}}))


def test_ssh_key_falls_back_to_install_config():
    assert build_facts(objects(mc_ssh=None))["ssh_key"] == "ssh-ed25519 AAAAinstallconfig"


def test_helpers():
    assert parse_version("4.17.0-rc.1") == (4, 17)
    assert parse_version("garbage") is None
    assert pull_secret_registries({"data": {".dockerconfigjson": "!!notbase64"}}) == []


def test_facts_do_not_alias_inputs():
    objs = objects()
    before = copy.deepcopy(objs)
    build_facts(objs)
    assert objs == before
