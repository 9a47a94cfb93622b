# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_facts.cluster.build_facts: what day1_facts says of a cluster, and whether node-joiner would accept it."""

import copy
import json

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.releases import parse_version
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import (
    NEEDED,
    OPTIONAL,
    READS,
    REQUIRED,
    USUAL,
    build_facts,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.settings import pull_secret
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.facts_fixtures import (
    INSTALL_CONFIG,
    MARKER,
    b64,
    condition,
    node,
    objects,
)


def test_reads_are_all_get_or_list_and_unique():
    keys = [key for key, _target, _role in READS]
    assert len(keys) == len(set(keys)) == 18
    assert all(target.verb in ("get", "list") for _key, target, _role in READS)
    roles = {key: role for key, _target, role in READS}
    assert sorted(k for k, r in roles.items() if r == REQUIRED) == ["clusterversion", "infrastructure", "nodes"]
    assert sorted(k for k, r in roles.items() if r == NEEDED) == ["proxy", "pull_secret"]
    usual = sorted(k for k, r in roles.items() if r == USUAL)
    assert usual == ["icsp", "idms", "mc_chrony", "mc_fips", "user_ca_bundle"]
    assert len([k for k, r in roles.items() if r == OPTIONAL]) == 8


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
    assert facts["ingress_domain"] == "apps.unit.example.test"
    assert facts["warnings"] == []


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


@pytest.mark.parametrize(
    "platform, reason",
    [
        ("BareMetal", None),
        ("None", None),
        ("VSphere", None),
        ("External", None),
        (
            "Nutanix",
            'platform Nutanix cannot take nodes from node-joiner: platform: Unsupported value: "nutanix": '
            'supported values: "baremetal", "vsphere", "none", "external"',
        ),
        ("AWS", 'platform: Unsupported value: "aws"'),
        (
            "Kubevirt",
            "platform Kubevirt (Infrastructure cluster spec.platformSpec.type): node-joiner cannot add nodes "
            "to it (unable to convert platform type Kubevirt)",
        ),
        ("", "Infrastructure cluster has no spec.platformSpec.type"),
    ],
)
def test_platforms_as_node_joiner_accepts_them(platform, reason):
    objs = objects()
    objs["infrastructure"]["spec"]["platformSpec"]["type"] = platform
    facts = build_facts(objs)
    assert facts["supported"] is (reason is None)
    if reason:
        assert any(reason in r for r in facts["unsupported_reasons"]), facts["unsupported_reasons"]


@pytest.mark.parametrize(
    "arch, platform, supported",
    [
        ("ppc64le", "None", True),
        ("s390x", "None", True),
        ("ppc64le", "BareMetal", False),
        ("s390x", "External", False),
        ("arm64", "BareMetal", True),
    ],
)
def test_ppc64le_and_s390x_only_on_platform_none(arch, platform, supported):
    objs = objects(nodes={"items": [node("m0", "master", "192.0.2.10", arch=arch)]})
    objs["infrastructure"]["spec"]["platformSpec"]["type"] = platform
    facts = build_facts(objs)
    assert facts["supported"] is supported
    if not supported:
        assert facts["unsupported_reasons"] == [
            'platform: Invalid value: "%s": CPU architecture "%s" only supports platform "none".'
            % (platform.lower(), arch)
        ]


def test_platform_none_has_no_vips():
    objs = objects()
    objs["infrastructure"]["spec"]["platformSpec"]["type"] = "None"
    objs["infrastructure"]["status"]["platformStatus"] = {"type": "None"}
    facts = build_facts(objs)
    assert facts["api_vips"] == [] and facts["ingress_vips"] == []


def test_degraded_operator_and_pool_are_health_problems():
    objs = objects()
    objs["clusteroperators"]["items"][0]["status"]["conditions"][1] = condition("Degraded", "True", "DNS down")
    objs["worker_pool"]["status"]["conditions"] = [
        condition("Updated", "False"),
        condition("Degraded", "True", "node x failed"),
    ]
    health = build_facts(objs)["health"]
    assert health["healthy"] is False
    assert "ClusterOperator dns is Degraded: DNS down" in health["problems"]
    assert "MachineConfigPool worker is Degraded: node x failed" in health["problems"]


def test_mirrors_from_idms_and_fallback_to_install_config_when_forbidden():
    objs = objects(
        idms={
            "items": [
                {
                    "metadata": {"name": "m"},
                    "spec": {"imageDigestMirrors": [{"source": "quay.io/a", "mirrors": ["m.test/a"]}]},
                }
            ]
        }
    )
    assert build_facts(objs)["mirrors"] == [
        {"source": "quay.io/a", "mirrors": ["m.test/a"], "origin": "ImageDigestMirrorSet/m"}
    ]
    facts = build_facts(objects(idms=None), unreadable={"idms": "403"})
    assert facts["mirrors"][0]["origin"] == "install-config/imageDigestSources"
    assert facts["supported"] is True


def test_missing_node_joiner_inputs_make_it_unsupported():
    facts = build_facts(objects(proxy=None, pull_secret=None), unreadable={"pull_secret": "permission denied"})
    assert facts["unsupported_reasons"] == [
        "the cluster proxy (Proxy.config.openshift.io cluster) does not exist; node-joiner cannot work without it",
        "cannot read the pull secret (Secret openshift-config/pull-secret): permission denied",
    ]


@pytest.mark.parametrize(
    "key, fragment",
    [
        ("network", "Network.config.openshift.io cluster does not exist: cluster_networks, service_networks"),
        ("ingress", "Ingress.config.openshift.io cluster does not exist: ingress_domain is unknown"),
        ("install_config", "ConfigMap kube-system/cluster-config-v1 (install-config) does not exist: name and base"),
        ("bootimages", "coreos-bootimages does not exist: boot_images is empty"),
        ("worker_user_data", "worker-user-data-managed does not exist: worker_ignition is unknown"),
        ("mc_ssh", "MachineConfig 99-worker-ssh does not exist: ssh_key comes from install-config"),
        ("clusteroperators", "clusteroperators.config.openshift.io does not exist: the operators' health is unknown"),
        ("worker_pool", "MachineConfigPool worker does not exist: its health is unknown"),
    ],
)
def test_a_missing_optional_object_is_a_warning_not_a_refusal(key, fragment):
    facts = build_facts(objects(**{key: None}))
    assert facts["supported"] is True, facts["unsupported_reasons"]
    assert [w for w in facts["warnings"] if fragment in w], facts["warnings"]
    assert facts["health"]["healthy"] is True


@pytest.mark.parametrize("key", ["user_ca_bundle", "mc_fips", "mc_chrony", "idms", "icsp"])
def test_a_usual_absence_says_nothing_but_a_forbidden_read_warns(key):
    assert build_facts(objects(**{key: None}))["warnings"] == []
    facts = build_facts(objects(**{key: None}), unreadable={key: "403 Forbidden"})
    assert len(facts["warnings"]) == 1 and facts["warnings"][0].startswith("cannot read ")
    assert facts["warnings"][0].endswith("(403 Forbidden)") and facts["supported"] is True


def test_forbidden_health_objects_are_health_problems():
    facts = build_facts(objects(worker_pool=None), unreadable={"worker_pool": "403"})
    assert "health unknown: cannot read worker_pool" in facts["health"]["problems"]


def test_mixed_control_plane_architectures_are_a_warning():
    objs = objects(
        nodes={"items": [node("m1", "master", "192.0.2.11", arch="arm64"), node("m0", "master", "192.0.2.10")]}
    )
    facts = build_facts(objs)
    assert facts["supported"] is True and facts["architecture"] == "arm64"  # the first in the list, as node-joiner
    assert any("several architectures (amd64, arm64): node-joiner takes arm64" in w for w in facts["warnings"])


def test_only_the_master_label_gives_the_architecture():
    objs = objects(nodes={"items": [node("cp0", "control-plane", "192.0.2.10"), node("w0", "worker", "192.0.2.20")]})
    facts = build_facts(objs)
    assert facts["architecture"] is None and facts["supported"] is False
    assert any(
        r.startswith("unable to determine target cluster architecture: no Node labelled node-role.kubernetes.io/master")
        for r in facts["unsupported_reasons"]
    )


def test_arm64_cluster_without_boot_image_for_it_is_a_warning():
    objs = objects(nodes={"items": [node("m0", "master", "192.0.2.10", arch="arm64")]})
    facts = build_facts(objs)
    assert facts["rpm_architecture"] == "aarch64" and facts["supported"] is True
    assert any("no RHCOS boot image for the control-plane architecture aarch64" in w for w in facts["warnings"])


def test_name_and_base_domain_come_from_the_api_host():
    objs = objects(
        install_config={"data": {"install-config": yaml.safe_dump(dict(INSTALL_CONFIG, baseDomain="other.test"))}}
    )
    facts = build_facts(objs)
    assert (facts["name"], facts["base_domain"]) == ("unit", "example.test")
    assert facts["warnings"] == [
        "install-config (ConfigMap kube-system/cluster-config-v1) names the cluster unit.other.test, but the API URL "
        "https://api.unit.example.test:6443 says unit.example.test: node-joiner uses the API URL, so do these facts"
    ]


def test_an_api_host_not_of_the_api_name_form_is_refused_and_install_config_names_the_cluster():
    objs = objects()
    objs["infrastructure"]["status"]["apiServerURL"] = "https://openshift.example.test:6443"
    facts = build_facts(objs)
    assert (facts["name"], facts["base_domain"]) == ("unit", "example.test")
    assert facts["unsupported_reasons"] == [
        "the API host openshift.example.test (Infrastructure status.apiServerURL) is not api.<cluster name>.<domain>: "
        "node-joiner derives the cluster name from it"
    ]
    del objs["infrastructure"]["status"]["apiServerURL"]
    assert "has no status.apiServerURL" in build_facts(objs)["unsupported_reasons"][0]


def test_version_falls_back_to_the_history():
    objs = objects()
    objs["clusterversion"]["status"]["desired"] = {}
    facts = build_facts(objs)
    assert (facts["version"], facts["release_image"]) == ("4.18.3", "quay.io/release@sha256:1")
    objs["clusterversion"]["status"]["history"] = []
    assert "cluster version unknown" in build_facts(objs)["unsupported_reasons"][0]


def test_apps_domain_wins_over_the_domain():
    facts = build_facts(objects(ingress={"spec": {"domain": "apps.unit.example.test", "appsDomain": "apps.test"}}))
    assert facts["ingress_domain"] == "apps.test"


def test_not_ready_node_is_a_health_problem():
    objs = objects(
        nodes={"items": [node("m0", "master", "192.0.2.10"), node("w0", "worker", "192.0.2.20", ready="False")]}
    )
    assert "Node w0 is not Ready" in build_facts(objs)["health"]["problems"]


def test_proxy_status_wins_over_spec():
    objs = objects(
        proxy={
            "spec": {"httpProxy": "http://spec:3128"},
            "status": {"httpProxy": "http://status:3128", "noProxy": ".cluster.local"},
        }
    )
    proxy = build_facts(objs)["proxy"]
    assert proxy == {
        "enabled": True,
        "http_proxy": "http://status:3128",
        "https_proxy": "",
        "no_proxy": ".cluster.local",
    }


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "has no key 'install-config'"),
        (": : not yaml : [", "key 'install-config' is not valid YAML (while"),
        ("just a string", "key 'install-config' is not a YAML mapping"),
    ],
)
def test_malformed_install_config_is_a_warning(text, problem):
    facts = build_facts(objects(install_config={"data": {"install-config": text}}))
    assert facts["supported"] is True and facts["name"] == "unit"
    assert facts["machine_networks"] == []
    assert [w for w in facts["warnings"] if w.startswith("ConfigMap kube-system/cluster-config-v1 %s" % problem)]


def test_malformed_stream_and_pointer_are_warnings():
    facts = build_facts(
        objects(bootimages={"data": {"stream": "{nope"}}, worker_user_data={"data": {"userData": b64("not json")}})
    )
    assert facts["supported"] is True and facts["boot_images"] == {}
    assert any("coreos-bootimages key 'stream' is not a JSON object" in w for w in facts["warnings"])
    assert any("worker-user-data-managed key 'userData' is not an Ignition JSON" in w for w in facts["warnings"])


def test_ssh_key_falls_back_to_install_config():
    assert build_facts(objects(mc_ssh=None))["ssh_key"] == "ssh-ed25519 AAAAinstallconfig"


def test_helpers():
    assert parse_version("4.17.0-rc.1") == (4, 17)
    assert parse_version("garbage") is None
    assert pull_secret({"data": {".dockerconfigjson": "!!notbase64"}}) == {"present": True, "registries": []}


def test_facts_do_not_alias_inputs():
    objs = objects()
    before = copy.deepcopy(objs)
    build_facts(objs)
    assert objs == before


def upstream_minimal_cluster():
    """The objects of openshift/installer cmd/node-joiner/testdata/setup/default (the node-joiner integration test
    seed, e.g. 0010_infrastructure.yaml@79576e9b618d3097d6fb27e78789c4e8204220c3): no Network, ClusterOperators,
    MachineConfigPools, worker-user-data-managed, user-ca-bundle or chrony MachineConfig."""
    release = "registry.test/release@sha256:ab"
    return {
        "clusterversion": {
            "spec": {"clusterID": "c37c9544-4320-4380-9d8b-0753a4d9ea57"},
            "status": {
                "desired": {"image": release, "version": "4.25.0"},
                "history": [{"state": "Completed", "version": "4.25.0", "image": release}],
            },
        },
        "infrastructure": {
            "spec": {"platformSpec": {"type": "BareMetal"}},
            "status": {"apiServerURL": "https://api.ostest.test.metalkube.org:6443"},
        },
        "ingress": {"spec": {"domain": "apps.ostest.test.metalkube.org"}},
        "proxy": {"spec": {"trustedCA": {"name": ""}}, "status": {}},
        "install_config": {
            "data": {
                "install-config": "apiVersion: v1\nmetadata:\n  name: ostest\n"
                "baseDomain: test.nodejoiner.org\nsshKey: my-sshKey\n"
            }
        },
        "pull_secret": {"data": {".dockerconfigjson": b64(json.dumps({"auths": {"quay.io": {"auth": MARKER}}}))}},
        "nodes": {
            "items": [
                {
                    "metadata": {"name": "master-0", "labels": {"node-role.kubernetes.io/master": ""}},
                    "status": {"nodeInfo": {"architecture": "amd64"}},
                }
            ]
        },
        "idms": {
            "items": [
                {
                    "metadata": {"name": "image-digest-mirror"},
                    "spec": {
                        "imageDigestMirrors": [
                            {
                                "source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
                                "mirrors": ["registry.example.com:5000/ocp4/openshift4"],
                            }
                        ]
                    },
                }
            ]
        },
        "bootimages": {
            "data": {
                "stream": json.dumps(
                    {
                        "stream": "stable",
                        "architectures": {
                            "x86_64": {
                                "artifacts": {
                                    "metal": {
                                        "release": "39.20231101.3.0",
                                        "formats": {"iso": {"disk": {"location": "<not-used>", "sha256": "0c19"}}},
                                    }
                                }
                            }
                        },
                    }
                )
            }
        },
        "mc_ssh": {
            "spec": {
                "config": {
                    "ignition": {"version": "3.2.0"},
                    "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["my-sshKey"]}]},
                }
            }
        },
        "mc_fips": {"spec": {"fips": True}},
    }


def test_upstream_minimal_node_joiner_cluster_is_supported_with_warnings():
    facts = build_facts(upstream_minimal_cluster())
    assert facts["supported"] is True, facts["unsupported_reasons"]
    assert (facts["name"], facts["base_domain"]) == ("ostest", "test.metalkube.org")
    assert facts["cluster_id"] == "c37c9544-4320-4380-9d8b-0753a4d9ea57" and facts["version"] == "4.25.0"
    assert (facts["platform"], facts["architecture"], facts["rpm_architecture"]) == ("BareMetal", "amd64", "x86_64")
    assert (facts["ssh_key"], facts["fips"], facts["chrony_configured"]) == ("my-sshKey", True, False)
    assert facts["ingress_domain"] == "apps.ostest.test.metalkube.org"
    assert facts["mirrors"][0]["mirrors"] == ["registry.example.com:5000/ocp4/openshift4"]
    assert facts["proxy"]["enabled"] is False and facts["api_int_url"] is None
    assert [w.split(" does not exist")[0] if " does not exist" in w else w[:40] for w in facts["warnings"]] == [
        "Network.config.openshift.io cluster",
        "Secret openshift-machine-api/worker-user-data-managed",
        "the resource clusteroperators.config.openshift.io",
        "MachineConfigPool worker",
        "install-config (ConfigMap kube-system/cl",
    ]
    assert "names the cluster ostest.test.nodejoiner.org" in facts["warnings"][-1]
    # master-0 reports no conditions: not Ready, which is health, not support
    assert facts["health"]["problems"] == ["Node master-0 is not Ready"]
    assert MARKER not in json.dumps(facts)
