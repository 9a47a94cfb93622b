"""The node-joiner pod on a lab of each release (4.17 to 4.21) and on the nodejoiner-testdata variant: where the
image comes from, what the run writes, the agent-auth-token Secret, and 4.17's refusal of --pxe."""

from __future__ import annotations

import json
import time

import pytest
from conftest import running_lab
from lab import seeds
from lab.waiting import wait_for
from pod_helpers import (
    NODE_JOINER_CMD,
    cat,
    cat_ls,
    create_pod,
    installer_image,
    new_namespace,
    payload_installer,
    pod_status,
    wait_report,
)

# variant -> (installer-images ConfigMap, report.json, Secret data keys)
PER_RELEASE = {
    "v417": (False, False, ["agentAuthToken", "authTokenPublicKey"]),
    "v418": (False, True, ["agentAuthToken", "authTokenPublicKey", "userAuthToken", "watcherAuthToken"]),
    "v419": (True, True, ["agentAuthToken", "authTokenPublicKey", "userAuthToken", "watcherAuthToken"]),
    "v420": (True, True, ["agentAuthToken", "authTokenPublicKey", "userAuthToken", "watcherAuthToken"]),
    "v421": (True, True, ["agentAuthToken", "authTokenPublicKey", "userAuthToken", "watcherAuthToken"]),
}


@pytest.mark.parametrize("variant", sorted(PER_RELEASE))
def test_node_joiner_pod_per_release(tmp_path, variant):
    has_configmap, has_report, keys = PER_RELEASE[variant]
    with running_lab(str(tmp_path / variant), "--variant", variant, "--hosts", "0") as lab:
        configmap = lab.api("GET", "/api/v1/namespaces/openshift-config/configmaps/installer-images")
        assert configmap.status_code == (200 if has_configmap else 404)
        image = installer_image(lab) if has_configmap else payload_installer(lab)
        ns = new_namespace(lab)
        create_pod(lab, ns, image)
        assert wait_for(lambda: cat(lab, ns, "/assets/exit_code"), timeout=60) == b"0"
        assert (cat(lab, ns, "/assets/report.json") is not None) is has_report
        listing = cat_ls(lab, ns)
        assert "agentconfig.noarch.iso" not in listing and "node.x86_64.iso" in listing  # AgentImage only
        secret = lab.api("GET", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token").json()
        assert sorted(secret["data"]) == keys


def test_an_unknown_flag_on_417_leaves_no_exit_code_and_logs_cobras_error(tmp_path):
    with running_lab(str(tmp_path / "v417"), "--variant", "v417", "--hosts", "0") as lab:
        ns = new_namespace(lab)
        create_pod(lab, ns, payload_installer(lab), command=NODE_JOINER_CMD.replace("add-nodes", "add-nodes --pxe"))
        wait_for(lambda: pod_status(lab, ns)["phase"] == "Running")
        log = wait_for(lambda: lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log").text or None)
        assert log.startswith("Error: unknown flag: --pxe\nUsage:\n  node-joiner add-nodes [flags]\n")
        assert "Global Flags:" in log and 'level=fatal msg="unknown flag: --pxe"' in log
        time.sleep(0.5)
        assert cat(lab, ns, "/assets/exit_code") is None and cat(lab, ns, "/assets/report.json") is None
        assert cat_ls(lab, ns) == ["nodes-config.yaml"]
        assert pod_status(lab, ns)["phase"] == "Running"  # the container goes on with `sleep`


def test_nodejoiner_testdata_variant_serves_exactly_its_objects(tmp_path):
    with running_lab(str(tmp_path / "testdata"), "--variant", "nodejoiner-testdata", "--hosts", "0") as lab:
        seeded = seeds.load_seed("nodejoiner-testdata")
        for obj in seeded:
            group_version = obj["apiVersion"]
            base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            plural = {
                "Namespace": "namespaces",
                "Node": "nodes",
                "Secret": "secrets",
                "ConfigMap": "configmaps",
                "Proxy": "proxies",
                "Ingress": "ingresses",
            }.get(obj["kind"], obj["kind"].lower() + "s")
            namespace = obj["metadata"].get("namespace")
            path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
            listed = lab.api("GET", path).json()["items"]
            expected = [
                o["metadata"]["name"]
                for o in seeded
                if o["kind"] == obj["kind"] and o["metadata"].get("namespace") == namespace
            ]
            if obj["kind"] == "Namespace":
                expected += ["default", "kube-node-lease", "kube-public", "kube-system"]
            assert sorted(o["metadata"]["name"] for o in listed) == sorted(expected), path
        assert lab.api("GET", "/apis/config.openshift.io/v1/networks/cluster").status_code == 404
        assert lab.api("GET", "/apis/config.openshift.io/v1/clusteroperators").status_code == 404
        assert lab.api("GET", "/api/v1/secrets").json()["items"][0]["metadata"]["name"] == "pull-secret"
        ns = new_namespace(lab)
        create_pod(lab, ns, "registry.example.test/ocp/node-joiner:4.25.0")
        report = wait_report(lab, ns)
        assert report["result"] == {"exit_code": 0}
        assert json.loads(report["stages"][0]["result"])["Version"] == "4.25.0"
