"""``node-joiner monitor-add-nodes`` in a pod (what ``oc adm node-image monitor`` runs) and ``--firewalled-hosts``."""

from __future__ import annotations

import http.client
import json
import re

import pytest
from conftest import labctl, running_lab
from lab.waiting import wait_for
from pod_helpers import new_namespace, pod_status

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
MONITOR = "HOME=/assets node-joiner monitor-add-nodes --dir=/assets {}"


def create_monitor(lab, ns, *addresses):
    """The pod of oc adm node-image monitor: an emptyDir at /assets, no ConfigMap."""
    # 4.17 has no installer-images ConfigMap: any baremetal-installer image runs node-joiner in the lab
    image = "quay.io/openshift-release-dev/ocp-v4.0-art-dev:baremetal-installer"
    container = {"name": "node-joiner-monitor", "image": image}
    container["command"] = ["/bin/bash", "-c", MONITOR.format(" ".join(addresses))]
    container["volumeMounts"] = [{"name": "assets", "mountPath": "/assets"}]
    spec = {"restartPolicy": "Never", "containers": [container], "volumes": [{"name": "assets", "emptyDir": {}}]}
    response = lab.api("POST", f"/api/v1/namespaces/{ns}/pods", body={"metadata": {"name": "monitor"}, "spec": spec})
    assert response.status_code == 201, response.text


def approve_pending(lab, signers):
    for csr in lab.api("GET", CSRS).json()["items"]:
        if not (csr.get("status") or {}).get("conditions") and csr["spec"]["signerName"] in signers:
            csr["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "t"}]}
            lab.api("PUT", f"{CSRS}/{csr['metadata']['name']}/approval", body=csr)


def log(lab, ns):
    return lab.api("GET", f"/api/v1/namespaces/{ns}/pods/monitor/log").text


def messages(text):
    return [re.sub(r"^time=\S+ level=(\w+) msg=", r"\1 ", line) for line in text.splitlines()]


@pytest.mark.parametrize("variant,prefix", [("default", "Node {ip}: Node {ip}: "), ("v417", "Node {ip}: ")])
def test_the_monitor_follows_a_firewalled_host_from_the_cluster_until_ready(tmp_path, variant, prefix):
    start = ("--hosts", "1", "--install-seconds", "3", "--firewalled-hosts", "--monitor-interval", "0.3")
    with running_lab(str(tmp_path / "state"), *start, "--variant", variant, "--agent-port", "0") as lab:
        host = lab.info["hosts"][0]
        ip = host["ip"]
        lab.control("POST", "/hosts/boot", {"iso": lab.build_iso(tmp_path / "node.iso"), "hosts": [host["name"]]})
        ns = new_namespace(lab)
        create_monitor(lab, ns, ip)

        # The controller (this process) is refused by the host's firewall before a byte is read.
        connection = http.client.HTTPConnection(ip, lab.info["agent_port"], timeout=5)
        with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
            connection.request("GET", "/api/assisted-install/v2/infra-envs")
            connection.getresponse()

        def ready():  # a CSR is approved once the monitor said it is pending
            text = log(lab, ns)
            seen = {
                "First CSR": "kubernetes.io/kube-apiserver-client-kubelet",
                "Second CSR": "kubernetes.io/kubelet-serving",
            }
            approve_pending(lab, [signer for words, signer in seen.items() if words in text])
            return pod_status(lab, ns, "monitor").get("phase") == "Succeeded"

        wait_for(ready, timeout=60)
        lines = messages(log(lab, ns))
        node = prefix.format(ip=ip)
        assert lines[0] == f"info Monitoring IPs: [{ip}]"
        for expected in ("Assisted Service API is available", "Kubelet is running", "Node joined cluster"):
            assert f"info Node {ip}: {expected}" in lines
        assert lines[-1] == f"info Node {ip}: Node is Ready"
        assert f"info {node}Cluster is adding hosts" in lines
        assert any(re.match(rf"info Node {ip}: Host: extra-worker-0, reached installation stage", li) for li in lines)
        assert f"info Node {ip}: First CSR Pending approval" in lines
        assert f"info Node {ip}: Second CSR Pending approval" in lines

        seen = json.loads(labctl("dump", "--state", lab.state).stdout)["host_connections"]
        assert {c["source"] for c in seen if c["admitted"]} == {"127.0.111.10"}
        assert {c["port"] for c in seen if c["admitted"]} == {"agent", "kubelet"}
        assert [c for c in seen if not c["admitted"]] == [
            {"time": c["time"], "host": "extra-worker-0", "port": "agent", "source": "127.0.0.1", "admitted": False}
            for c in seen
            if not c["admitted"]
        ]


def test_the_monitor_fails_at_once_without_the_token_secret(lab):
    lab.api("DELETE", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token")
    ns = new_namespace(lab)
    create_monitor(lab, ns, "127.0.111.20")
    wait_for(lambda: pod_status(lab, ns, "monitor").get("phase") == "Failed", timeout=30)
    assert messages(log(lab, ns)) == ['fatal secrets "agent-auth-token" not found']
