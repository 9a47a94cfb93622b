"""day1_facts against every lab variant, compared with the variant's seed files.

Variant ``nodejoiner-testdata`` is node-joiner's own integration-test cluster (openshift/installer
cmd/node-joiner/testdata/setup/default, e.g. 0010_infrastructure.yaml@79576e9b618d3097d6fb27e78789c4e8204220c3):
no Network config, ClusterOperators, MachineConfigPools or worker-user-data-managed, and an install-config whose
base domain disagrees with the API URL. node-joiner adds nodes to it; so must day1_facts accept it.
"""

import base64
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO, is_discovery, run_module, run_playbook
from lab.seeds import load_seed

VARIANTS = [
    "default",
    "old",
    "proxy",
    "disconnected",
    "ipv6",
    "dualstack",
    "arm64",
    "none",
    "degraded",
    "v417",
    "v418",
    "v419",
    "v420",
    "v421",
]
MODULE = "openshift_agent.day2.day1_facts"
MARKER = "LAB-PULL-SECRET-MARKER-7f3a9c"


def seed_object(seed, kind, name, namespace=None):
    for obj in seed:
        meta = obj.get("metadata", {})
        if obj.get("kind") == kind and meta.get("name") == name and meta.get("namespace") == namespace:
            return obj
    return None


def seed_objects(seed, kind):
    return [obj for obj in seed if obj.get("kind") == kind]


def expected_from_seed(variant):
    """What the facts must say, derived from the seed files themselves."""
    seed = load_seed(variant)
    cv = seed_object(seed, "ClusterVersion", "version")
    infra = seed_object(seed, "Infrastructure", "cluster")
    install_config = yaml.safe_load(
        seed_object(seed, "ConfigMap", "cluster-config-v1", "kube-system")["data"]["install-config"]
    )
    pull = seed_object(seed, "Secret", "pull-secret", "openshift-config")
    pull_json = (
        pull.get("data", {}).get(".dockerconfigjson")
        or base64.b64encode(pull.get("stringData", {}).get(".dockerconfigjson", "").encode()).decode()
    )
    nodes = sorted(seed_objects(seed, "Node"), key=lambda n: n["metadata"]["name"])
    masters = [n for n in nodes if "node-role.kubernetes.io/master" in n["metadata"].get("labels", {})]
    ptype = infra["spec"]["platformSpec"]["type"]
    pstatus = infra["status"].get("platformStatus", {}).get(ptype.lower(), {})
    proxy = seed_object(seed, "Proxy", "cluster")
    mirrors = sum(len(o["spec"].get("imageDigestMirrors", [])) for o in seed_objects(seed, "ImageDigestMirrorSet"))
    mirrors += sum(
        len(o["spec"].get("repositoryDigestMirrors", [])) for o in seed_objects(seed, "ImageContentSourcePolicy")
    )
    stream = json.loads(
        seed_object(seed, "ConfigMap", "coreos-bootimages", "openshift-machine-config-operator")["data"]["stream"]
    )
    degraded_cos = [
        o["metadata"]["name"]
        for o in seed_objects(seed, "ClusterOperator")
        if any(c["type"] == "Degraded" and c["status"] == "True" for c in o["status"]["conditions"])
    ]
    return {
        "cluster_id": cv["spec"]["clusterID"],
        "version": cv["status"]["desired"]["version"],
        "release_image": cv["status"]["desired"]["image"],
        "name": install_config["metadata"]["name"],
        "base_domain": install_config["baseDomain"],
        "api_url": infra["status"]["apiServerURL"],
        "api_int_url": infra["status"]["apiServerInternalURI"],
        "platform": ptype,
        "api_vips": pstatus.get("apiServerInternalIPs", []),
        "ingress_vips": pstatus.get("ingressIPs", []),
        "machine_networks": [m["cidr"] for m in install_config["networking"]["machineNetwork"]],
        "architecture": masters[0]["status"]["nodeInfo"]["architecture"],
        "node_names": [n["metadata"]["name"] for n in nodes],
        "node_ips": {
            n["metadata"]["name"]: [a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP"]
            for n in nodes
        },
        "registries": sorted(json.loads(base64.b64decode(pull_json))["auths"]),
        "https_proxy": (proxy.get("status") or {}).get("httpsProxy", ""),
        "mirror_count": mirrors,
        "boot_arches": sorted(stream["architectures"]),
        "degraded_cos": degraded_cos,
    }


@pytest.fixture(scope="module")
def labs(lab_factory):
    cache = {}

    def get(variant):
        if variant not in cache:
            cache[variant] = lab_factory("--variant", variant, "--hosts", "0")
        return cache[variant]

    return get


@pytest.mark.parametrize("variant", VARIANTS)
def test_facts_match_the_seed(labs, variant):
    lab = labs(variant)
    result, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
    assert not result.get("failed"), output
    facts = result["ansible_facts"]["day1_cluster"]
    want = expected_from_seed(variant)
    for key in (
        "cluster_id",
        "version",
        "release_image",
        "name",
        "base_domain",
        "api_url",
        "api_int_url",
        "platform",
        "api_vips",
        "ingress_vips",
        "machine_networks",
        "architecture",
    ):
        assert facts[key] == want[key], key
    assert [n["name"] for n in facts["nodes"]] == want["node_names"]
    assert {n["name"]: n["internal_ips"] for n in facts["nodes"]} == want["node_ips"]
    assert facts["pull_secret"] == {"present": True, "registries": want["registries"]}
    assert facts["proxy"]["https_proxy"] == want["https_proxy"]
    assert len(facts["mirrors"]) == want["mirror_count"]
    assert sorted(facts["boot_images"]) == want["boot_arches"]
    assert facts["worker_ignition"]["url"] == "https://api-int.%s.%s:22623/config/worker" % (
        want["name"],
        want["base_domain"],
    )
    assert MARKER not in output
    assert facts["ingress_domain"] == "apps.%s.%s" % (want["name"], want["base_domain"])
    assert facts["warnings"] == [], facts["warnings"]
    if variant == "old":
        assert facts["supported"] is False
        assert any(want["version"] in r and "4.17" in r for r in facts["unsupported_reasons"])
    elif variant == "degraded":
        assert facts["health"]["healthy"] is False
        for name in want["degraded_cos"]:
            assert any(name in p and "Degraded" in p for p in facts["health"]["problems"])
        assert any("MachineConfigPool worker is Degraded" in p for p in facts["health"]["problems"])
    else:
        assert facts["supported"] is True, facts["unsupported_reasons"]
        assert facts["health"]["healthy"] is True, facts["health"]["problems"]


def test_api_calls_are_few_counted_and_read_only(labs):
    lab = labs("default")
    run_module(MODULE, {"kubeconfig": lab.kubeconfig})  # warm the client's discovery cache
    lab.reset_log()
    result, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
    assert not result.get("failed"), output
    requests = [r for r in lab.requests() if not is_discovery(r["path"])]
    assert all(r["method"] == "GET" for r in requests), requests
    assert len(requests) == result["api_calls"] == 18


def test_check_mode_is_a_normal_read(labs):
    lab = labs("default")
    normal, _output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
    lab.reset_log()
    checked, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig}, check_mode=True)
    assert checked["changed"] is False, output
    assert checked["ansible_facts"] == normal["ansible_facts"]
    assert lab.writes() == []


def test_environment_and_token_auth(labs):
    lab = labs("default")
    result, output = run_module(MODULE, {}, env={"K8S_AUTH_KUBECONFIG": lab.kubeconfig})
    assert result["ansible_facts"]["day1_cluster"]["name"] == "lab", output
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig).read_text())
    token = kubeconfig["users"][0]["user"]["token"]
    args = {
        "host": kubeconfig["clusters"][0]["cluster"]["server"],
        "api_key": token,
        "ca_cert": str(lab.state / "ca.crt"),
    }
    result, output = run_module(MODULE, args)
    assert result["ansible_facts"]["day1_cluster"]["name"] == "lab", output
    assert token not in output


def test_readonly_identity_can_read(labs):
    lab = labs("default")
    result, output = run_module(MODULE, {"kubeconfig": str(lab.state / "kubeconfig-readonly")})
    assert result["ansible_facts"]["day1_cluster"]["supported"] is True, output


def test_identity_without_read_access_names_the_resource(labs):
    lab = labs("default")
    result, output = run_module(MODULE, {"kubeconfig": str(lab.state / "kubeconfig-bootstrapper")})
    assert result["failed"] is True, output
    assert "403" in result["msg"] and "clusterversions" in result["msg"] and "get" in result["msg"], result["msg"]


def test_forbidden_needed_object_makes_cluster_unsupported(labs):
    lab = labs("default")
    lab.control("POST", "/faults", {"deny": "get:secrets"})
    try:
        result, output = run_module(MODULE, {"kubeconfig": str(lab.state / "kubeconfig-readonly")})
    finally:
        lab.control("DELETE", "/faults")
    facts = result["ansible_facts"]["day1_cluster"]
    assert facts["supported"] is False, output
    assert any("cannot read the pull secret" in r and "secrets" in r for r in facts["unsupported_reasons"])
    # worker-user-data-managed is a Secret too, but node-joiner does without it: a warning
    assert not any("worker-user-data-managed" in r for r in facts["unsupported_reasons"])
    assert any(
        w.startswith("cannot read Secret openshift-machine-api/worker-user-data-managed: worker_ignition is unknown")
        and "403" in w
        for w in facts["warnings"]
    ), facts["warnings"]


def test_wrong_token_is_401(labs):
    lab = labs("default")
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig).read_text())
    args = {
        "host": kubeconfig["clusters"][0]["cluster"]["server"],
        "api_key": "not-a-token",
        "ca_cert": str(lab.state / "ca.crt"),
    }
    result, _output = run_module(MODULE, args)
    assert result["failed"] is True and "401" in result["msg"]


def test_unreachable_api_says_so(tmp_path, labs):
    lab = labs("default")
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig).read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    result, _output = run_module(MODULE, {"kubeconfig": str(path)})
    assert result["failed"] is True and "cannot reach the API server https://127.0.0.1:1" in result["msg"]


def test_a_missing_kubeconfig_or_context_is_a_clean_failure(tmp_path, labs):
    """kubernetes.core's CoreException becomes a failure that names the kubeconfig, the context and the fix."""
    missing = str(tmp_path / "no-kubeconfig")
    result, output = run_module(MODULE, {"kubeconfig": missing})
    assert result["failed"] is True and "Traceback" not in output, output
    assert result["msg"].startswith("day1_facts: cannot load the kubeconfig %s with its current-context: " % missing)
    assert "auth/kubeconfig" in result["msg"]
    lab = labs("default")
    result, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig, "context": "no-such-context"})
    assert result["failed"] is True and "Traceback" not in output, output
    assert "with context no-such-context: " in result["msg"] and "oc config get-contexts" in result["msg"]


def test_malformed_install_config_is_a_warning(lab_factory):
    from kubernetes import client, config

    lab = lab_factory("--hosts", "0")
    api = client.CoreV1Api(config.new_client_from_config(lab.kubeconfig))
    api.patch_namespaced_config_map(
        "cluster-config-v1", "kube-system", {"data": {"install-config": "metadata: [unclosed"}}
    )
    result, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
    assert not result.get("failed"), output
    facts = result["ansible_facts"]["day1_cluster"]
    assert facts["supported"] is True and (facts["name"], facts["base_domain"]) == ("lab", "day2.example.test")
    warning = "ConfigMap kube-system/cluster-config-v1 key 'install-config' is not valid YAML"
    assert any(w.startswith(warning) for w in facts["warnings"])
    assert any(warning in w for w in result["warnings"])  # also a module warning


NODEJOINER = "nodejoiner-testdata"


def test_node_joiners_own_test_cluster_is_supported(labs):
    """Name and domain from the API URL (install-config says test.nodejoiner.org), the rest from the seed."""
    lab = labs(NODEJOINER)
    result, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
    assert not result.get("failed"), output
    facts = result["ansible_facts"]["day1_cluster"]
    assert facts["supported"] is True, facts["unsupported_reasons"]
    assert (facts["name"], facts["base_domain"]) == ("ostest", "test.metalkube.org")
    assert facts["api_dns_name"] == "api.ostest.test.metalkube.org"
    assert facts["cluster_id"] == "c37c9544-4320-4380-9d8b-0753a4d9ea57"
    assert facts["version"] == "4.25.0"
    assert facts["platform"] == "BareMetal"
    assert (facts["architecture"], facts["rpm_architecture"]) == ("amd64", "x86_64")
    assert facts["ssh_key"] == "my-sshKey" and facts["fips"] is True
    assert facts["ingress_domain"] == "apps.ostest.test.metalkube.org"
    assert [m["mirrors"] for m in facts["mirrors"]] == [["registry.example.com:5000/ocp4/openshift4"]]
    assert facts["pull_secret"]["registries"] == ["quay.io"]
    warnings = facts["warnings"]
    assert any(
        "names the cluster ostest.test.nodejoiner.org" in w and "says ostest.test.metalkube.org" in w for w in warnings
    ), warnings
    for missing in (
        "Network.config.openshift.io cluster does not exist",
        "Secret openshift-machine-api/worker-user-data-managed does not exist",
        "the resource clusteroperators.config.openshift.io does not exist",
        "MachineConfigPool worker does not exist",
    ):
        assert any(w.startswith(missing) for w in warnings), (missing, warnings)
    assert len(warnings) == 5, warnings
    assert sorted(result["warnings"]) == sorted("day1_facts: %s" % w for w in warnings)


def test_summary_playbook_never_leaks_the_pull_secret(labs):
    lab = labs("default")
    rc, output = run_playbook(
        REPO / "playbooks" / "cluster_summary.yml", "-vvv", "-e", "kubeconfig=%s" % lab.kubeconfig
    )
    assert rc == 0, output
    assert "Cluster        lab.day2.example.test" in output
    assert MARKER not in output
    assert not re.search(r"dockerconfigjson\W+\w{20,}", output)


# ----- transient API errors ------------------------------------------------------------------------
TRANSIENT = (429, 500, 503, "reset")


@pytest.mark.parametrize(
    "fault", [{"api_error_rate": "0.1"}, {"api_reset_rate": "0.3"}, {"api_throttle_rate": "0.2"}], ids=str
)
def test_transient_api_errors_are_retried_and_the_facts_are_the_same(labs, fault):
    """500/503, resets and 429 (Retry-After: 1) are tried again: the facts equal those of a run without faults.
    Up to three runs, until a few faulted requests were seen (the lab rolls the dice per request)."""
    lab = labs("default")
    clean, _output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
    faulted = 0
    try:
        for _run in range(3):
            lab.control("POST", "/faults", fault)
            lab.reset_log()
            result, output = run_module(MODULE, {"kubeconfig": lab.kubeconfig})
            assert not result.get("failed"), output
            assert result["ansible_facts"] == clean["ansible_facts"]
            faulted += sum(1 for r in lab.requests() if r["status"] in TRANSIENT)
            if faulted >= 3:
                break
    finally:
        lab.control("DELETE", "/faults")
    assert faulted >= 1, "no request was faulted: the test proved nothing"
