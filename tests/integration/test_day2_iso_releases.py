"""day2_iso against lab clusters of other releases and variants: 4.16 refused, 4.17's exit_code and no --pxe, the
run's objects (proxy, labels, restricted pod spec, the ClusterRole of the release)."""

import base64
import json
import os
import subprocess
import time
import uuid
from datetime import datetime, timezone

import yaml
from conftest import REPO, run_module
from lab import authtoken
from lab import jwt as lab_jwt
from test_day2_iso import BAD_SSH_KEY, ISO_SIZE, SSH_KEY_ERROR, cluster_writes, day2_iso, leftovers


def test_cluster_older_than_4_17_is_refused(lab_factory, tmp_path):
    old = lab_factory("--variant", "old", "--hosts", "3")
    old.reset_log()
    result = day2_iso(old, tmp_path)
    assert result["failed"] and "4.16.30 is older than 4.17" in result["msg"]
    assert cluster_writes(old) == [] and os.listdir(tmp_path) == []


def test_4_17_cluster_signals_through_exit_code_only(lab_factory, tmp_path):
    v417 = lab_factory("--variant", "v417", "--hosts", "3", "--iso-size", str(ISO_SIZE))
    result = day2_iso(v417, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert result["artifacts"][0]["stages"] == []
    assert len(result["artifacts"][0]["hosts"]) == 3
    assert leftovers(v417) == []
    # no --pxe on 4.17: refused before anything is created
    v417.reset_log()
    os.makedirs(tmp_path / "pxe")
    refused = day2_iso(v417, tmp_path / "pxe", pxe=True)
    assert refused["failed"] and "pxe: true needs OpenShift 4.18 or later, but this cluster runs 4.17" in refused["msg"]
    assert cluster_writes(v417) == [] and os.listdir(tmp_path / "pxe") == []
    # node-joiner refuses the nodes-config at load: exit_code 1, its error in the fatal line only, read at once
    os.makedirs(tmp_path / "ssh")
    refused = day2_iso(v417, tmp_path / "ssh", ssh_key=BAD_SSH_KEY, wait_sleep=5, build_timeout=1800)
    assert refused["failed"] and "node-joiner failed: " in refused["msg"] and SSH_KEY_ERROR in refused["msg"]
    assert leftovers(v417) == [] and os.listdir(tmp_path / "ssh") == []
    # a failure: exit_code 1 and the fatal line; the ClusterRole as oc 4.17 grants it (kept to be read)
    v417.control("POST", "/faults", {"nodejoiner": "bad_host_config"})
    os.makedirs(tmp_path / "x")
    failed = day2_iso(v417, tmp_path / "x", keep_on_failure=True)
    assert failed["failed"] and "Invalid IPv4 network prefix length" in failed["msg"] and "level=fatal" in failed["msg"]
    role = next(
        o for o in v417.dump()["objects"] if o["kind"] == "ClusterRole" and o["metadata"]["name"] == failed["namespace"]
    )
    resources = {(r["apiGroups"][0], name) for r in role["rules"] for name in r["resources"]}
    assert ("config.openshift.io", "imagecontentpolicies") in resources
    assert ("operator.openshift.io", "imagecontentsourcepolicies") not in resources
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "python"),
            "-c",
            (
                "import kubernetes.config as c, kubernetes.client as k; c.load_kube_config(%r); "
                "k.CoreV1Api().delete_namespace(%r)"
            )
            % (v417.kubeconfig, failed["namespace"]),
        ],
        check=True,
    )
    assert leftovers(v417) == []


def test_run_objects_carry_the_proxy_the_labels_and_the_restricted_pod_spec(lab_factory, tmp_path):
    """Kept after a failure so their specs can be read: what the run creates, as oc adm node-image create makes it."""
    proxied = lab_factory("--variant", "proxy", "--hosts", "3")
    proxied.control("POST", "/faults", {"nodejoiner": "bad_host_config"})
    result = day2_iso(proxied, tmp_path, keep_on_failure=True)
    namespace = result["namespace"]
    objects = proxied.dump()["objects"]
    proxy_status = next(o for o in objects if o["kind"] == "Proxy")["status"]
    mine = [o for o in objects if o["metadata"]["name"] == namespace or o["metadata"].get("namespace") == namespace]
    by_kind = {o["kind"]: o for o in mine if o["kind"] != "Secret"}
    assert sorted(by_kind) == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Namespace", "Pod", "ServiceAccount"]
    for obj in by_kind.values():
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "openshift_agent.day2", obj["kind"]
    assert by_kind["Namespace"]["metadata"]["annotations"]["openshift.io/node-selector"] == ""
    pod = by_kind["Pod"]["spec"]
    container = pod["containers"][0]
    assert {e["name"]: e["value"] for e in container["env"]} == {
        "HTTP_PROXY": proxy_status["httpProxy"],
        "HTTPS_PROXY": proxy_status["httpsProxy"],
        "NO_PROXY": proxy_status["noProxy"],
    }
    assert pod["restartPolicy"] == "Never" and pod["serviceAccountName"] == "node-joiner"
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "assets", "emptyDir": {"sizeLimit": "4Gi"}} in pod["volumes"]
    assert {"name": "nodes-config", "mountPath": "/config"} in container["volumeMounts"]
    assert "node-joiner add-nodes --dir=/assets" in container["command"][-1]
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): r["verbs"] for r in by_kind["ClusterRole"]["rules"]}
    assert rules[("",), ("secrets",)] == ["get", "list", "create", "update"]
    # 4.21 (the lab's default): oc grants the ICSP rule in operator.openshift.io (OCPBUGS-61491)
    assert rules[("operator.openshift.io",), ("imagecontentsourcepolicies",)] == ["get", "list"]
    assert yaml.safe_load(by_kind["ConfigMap"]["data"]["nodes-config.yaml"])["hosts"][0]["hostname"] == "extra-worker-0"


def seed_417_token(lab, exp):
    """Secret openshift-config/agent-auth-token as node-joiner 4.17 writes it, its one token expiring at ``exp``."""
    key = lab_jwt.new_key()
    token = authtoken.mint(key, {"infra_env_id": str(uuid.uuid4()), "exp": exp})
    public_b64 = base64.b64encode(lab_jwt.public_pem(key).encode()).decode()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": "agent-auth-token", "namespace": "openshift-config", "annotations": {"updatedAt": ""}},
        "data": {name: base64.b64encode(value.encode()).decode() for name, value in
                 (("agentAuthToken", token), ("authTokenPublicKey", public_b64))},
    }  # fmt: skip
    code = (
        "import json, kubernetes.config as c, kubernetes.client as k; c.load_kube_config(%r); "
        "k.CoreV1Api().create_namespaced_secret('openshift-config', json.loads(%r))"
    ) % (lab.kubeconfig, json.dumps(secret))
    subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c", code], check=True)


def test_4_17_a_reused_token_whose_expiry_node_joiner_did_not_update_is_judged_by_its_exp(lab_factory, tmp_path):
    """node-joiner 4.17 reuses a token with more than 24 h left but writes a fresh 48 h into add-nodes.env."""
    v417 = lab_factory("--variant", "v417", "--hosts", "3", "--iso-size", str(ISO_SIZE))
    exp = int(time.time()) + 25 * 3600
    seed_417_token(v417, exp)
    claim = datetime.fromtimestamp(exp, tz=timezone.utc)
    first = day2_iso(v417, tmp_path)
    assert not first.get("failed"), first.get("msg")
    iso = tmp_path / "node.x86_64.iso"
    assert first["artifacts"][0]["token_expiry"] == claim.strftime("%Y-%m-%dT%H:%M:%SZ")
    # the ISO's add-nodes.env says 48 h (the lab's 4.17 node-joiner, as upstream's); iso_info goes by the claim
    info = run_module("openshift_agent.day2.iso_info", {"path": str(iso)})[0]
    assert info["token_expiry"] == claim.strftime("%Y-%m-%dT%H:%M:%SZ") and 24.9 < info["valid_for"] <= 25
    stated = info["token_expiry_source"].split("AGENT_AUTH_TOKEN_EXPIRY=")[1].rstrip(")")
    assert info["token_expiry_source"].startswith("exp claim of the tokens in /etc/assisted/rendezvous-host.env")
    left = (datetime.strptime(stated, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) - claim).total_seconds()
    assert 23 * 3600 <= left < 23.1 * 3600  # 48 h from the build, 25 h from the seed
    # 25 h left: kept with the default 24 h, rebuilt for 30 h, and the reason says when the token expires
    assert day2_iso(v417, tmp_path)["changed"] is False
    again = day2_iso(v417, tmp_path, min_token_validity="30h")
    reason = again["artifacts"][0]["reason"]
    assert again["changed"] is True and again["artifacts"][0]["reused"] is False
    assert "expires at %s," % claim.isoformat() in reason and "less than min_token_validity (30h00m)" in reason
    # the sidecar records the ISO's own expiry; one that recorded add-nodes.env's 48 h (version 2, as day2_iso
    # wrote it before) does not keep the ISO: it is not read at all
    sidecar = tmp_path / "node.x86_64.iso.json"
    record = json.loads(sidecar.read_text())
    assert record["token_expiry"] == claim.strftime("%Y-%m-%dT%H:%M:%SZ") and record["version"] == 3
    sidecar.write_text(json.dumps(dict(record, token_expiry=stated, version=2)))
    third = day2_iso(v417, tmp_path, min_token_validity="24h")
    assert third["changed"] is True and "has no readable sidecar" in third["artifacts"][0]["reason"]
    assert leftovers(v417) == []
