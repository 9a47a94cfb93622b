"""Pods of the lab: behaviours by image, exec over WebSocket (v4/v5), log, node-joiner faults."""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import time
import urllib.parse

import pytest
import websocket
import yaml

from conftest import labctl, Lab
from lab import iso as lab_iso
from lab.ignition import files_by_path, read_env_file
from lab.waiting import wait_for

NODES_CONFIG = {
    "hosts": [{
        "hostname": "extra-worker-0", "role": "worker",
        "interfaces": [{"name": "eth0", "macAddress": "52:54:00:6f:00:14"}],
        "networkConfig": {"interfaces": [{"name": "eth0", "type": "ethernet", "state": "up",
                                          "mac-address": "52:54:00:6f:00:14",
                                          "ipv4": {"enabled": True, "dhcp": False,
                                                   "address": [{"ip": "127.0.111.20", "prefix-length": 24}]}}]},
    }],
}
NODE_JOINER_CMD = ("cp /config/nodes-config.yaml /assets; HOME=/assets node-joiner add-nodes --dir=/assets "
                   "--log-level=debug; sleep 600")


def installer_image(lab) -> str:
    cm = lab.api("GET", "/api/v1/namespaces/openshift-config/configmaps/installer-images").json()
    return json.loads(cm["data"]["images.json"])["installer"]


def release_image(lab) -> str:
    return lab.api("GET", "/apis/config.openshift.io/v1/clusterversions/version").json()["status"]["desired"]["image"]


def new_namespace(lab) -> str:
    created = lab.api("POST", "/api/v1/namespaces", body={"metadata": {"generateName": "pods-test-"}})
    assert created.status_code == 201, created.text
    return created.json()["metadata"]["name"]


def create_pod(lab, ns, image, command=NODE_JOINER_CMD, name="node-joiner", with_config=True):
    if with_config:
        response = lab.api("POST", f"/api/v1/namespaces/{ns}/configmaps", body={
            "metadata": {"name": "nodes-config"}, "data": {"nodes-config.yaml": yaml.safe_dump(NODES_CONFIG)}})
        assert response.status_code == 201, response.text
    pod = {"metadata": {"name": name}, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": name, "image": image, "command": ["/bin/bash", "-c", command],
                        "volumeMounts": [{"name": "nodes-config", "mountPath": "/config"},
                                         {"name": "assets", "mountPath": "/assets"}]}],
        "volumes": [{"name": "nodes-config", "configMap": {"name": "nodes-config"}},
                    {"name": "assets", "emptyDir": {}}]}}
    response = lab.api("POST", f"/api/v1/namespaces/{ns}/pods", body=pod)
    assert response.status_code == 201, response.text


def pod_status(lab, ns, name="node-joiner") -> dict:
    return lab.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}").json()["status"]


def exec_ws(lab, ns, pod, command, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"), token=None):
    """Run ``command`` over a raw WebSocket; return (protocol, {channel: bytes}, status dict or None)."""
    query = urllib.parse.urlencode([("command", c) for c in command] + [("stdout", "true"), ("stderr", "true")])
    url = lab.api_url.replace("https://", "wss://") + f"/api/v1/namespaces/{ns}/pods/{pod}/exec?{query}"
    ws = websocket.create_connection(url, subprotocols=list(protocols), sslopt={"ca_certs": lab.ca},
                                     header=[f"Authorization: Bearer {token or lab.tokens['admin']}"], timeout=30)
    channels = {1: b"", 2: b""}
    status = None
    try:
        while True:
            opcode, data = ws.recv_data(control_frame=False)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                break
            assert opcode == websocket.ABNF.OPCODE_BINARY
            if data[0] == 3:
                status = json.loads(data[1:])
            else:
                channels[data[0]] += data[1:]
    except (websocket.WebSocketConnectionClosedException, ConnectionError, ssl.SSLError):
        pass
    finally:
        protocol = ws.subprotocol
        ws.close()
    return protocol, channels, status


def wait_report(lab, ns):
    def finished():
        _proto, out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/report.json"])
        if status and status["status"] == "Success":
            report = json.loads(out[1])
            return report if report.get("result") else None
        return None
    return wait_for(finished, timeout=60)


@pytest.fixture
def joined(lab, no_faults):
    """A namespace with a finished node-joiner pod."""
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab))
    wait_for(lambda: pod_status(lab, ns)["phase"] == "Running")
    report = wait_report(lab, ns)
    yield ns, report
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_node_joiner_pod_runs_builds_the_iso_and_keeps_running(lab, joined, tmp_path):
    ns, report = joined
    assert report["result"] == {"exit_code": 0}
    assert [s["id"] for s in report["stages"]][-1] == "generate-iso"
    status = pod_status(lab, ns)
    assert status["phase"] == "Running" and status["podIP"] and status["startTime"]
    assert status["containerStatuses"][0]["state"]["running"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"

    _p, out, st = exec_ws(lab, ns, "node-joiner", ["sha256sum", "/assets/node.x86_64.iso"])
    assert st == {"metadata": {}, "status": "Success"}
    expected = out[1].split()[0].decode()
    _p, out, st = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
    assert hashlib.sha256(out[1]).hexdigest() == expected
    iso = tmp_path / "node.iso"
    iso.write_bytes(out[1])
    files = files_by_path(lab_iso.read_embedded_ignition(str(iso)))
    env = read_env_file(files["/etc/assisted/add-nodes.env"].decode())
    cluster_id = lab.api("GET", "/apis/config.openshift.io/v1/clusterversions/version").json()["spec"]["clusterID"]
    assert env["CLUSTER_ID"] == cluster_id
    assert any(b"52:54:00:6f:00:14" in content for content in files.values())


def test_exec_protocol_choice_channels_and_exit_status(lab, joined):
    ns, _report = joined
    proto, out, status = exec_ws(lab, ns, "node-joiner", ["ls", "/assets"])
    assert proto == "v5.channel.k8s.io"
    assert b"node.x86_64.iso" in out[1] and status["status"] == "Success"
    proto, out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/missing"],
                                 protocols=("v4.channel.k8s.io", "v5.channel.k8s.io"))
    assert proto == "v4.channel.k8s.io"
    assert out[2] == b"cat: /assets/missing: No such file or directory\n"
    assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "1"}]


def test_exec_needs_create_on_pods_exec_and_a_websocket(lab, joined):
    ns, _report = joined
    with pytest.raises(websocket.WebSocketBadStatusException) as caught:
        exec_ws(lab, ns, "node-joiner", ["ls"], token=lab.tokens["readonly"])
    assert caught.value.status_code == 403
    plain = lab.api("POST", f"/api/v1/namespaces/{ns}/pods/node-joiner/exec?command=ls")
    assert plain.status_code == 400 and "Upgrade request required" in plain.json()["message"]


def test_log_with_tail_lines(lab, joined):
    ns, _report = joined
    full = lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log")
    assert full.status_code == 200 and full.headers["Content-Type"].startswith("text/plain")
    assert "Generated ISO at /assets/node.x86_64.iso" in full.text
    tail = lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log?tailLines=2").text
    assert tail.splitlines() == full.text.splitlines()[-2:]


def test_release_image_pod_prints_image_references_and_succeeds(lab, no_faults):
    ns = new_namespace(lab)
    create_pod(lab, ns, release_image(lab), command="cat /release-manifests/image-references",
               name="release", with_config=False)
    wait_for(lambda: pod_status(lab, ns, "release")["phase"] == "Succeeded")
    terminated = pod_status(lab, ns, "release")["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    stream = json.loads(lab.api("GET", f"/api/v1/namespaces/{ns}/pods/release/log").text)
    tags = {t["name"]: t["from"]["name"] for t in stream["spec"]["tags"]}
    assert stream["kind"] == "ImageStream" and tags["baremetal-installer"] == installer_image(lab)
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_unknown_image_stays_pending_with_pull_errors(lab, no_faults):
    ns = new_namespace(lab)
    create_pod(lab, ns, "quay.io/example/not-there:1.0")
    waiting = wait_for(lambda: pod_status(lab, ns).get("containerStatuses", [{}])[0].get("state", {}).get("waiting"))
    assert waiting["reason"] == "ErrImagePull" and "manifest unknown" in waiting["message"]
    wait_for(lambda: pod_status(lab, ns)["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff")
    assert pod_status(lab, ns)["phase"] == "Pending"
    with pytest.raises(websocket.WebSocketBadStatusException) as caught:
        exec_ws(lab, ns, "node-joiner", ["ls"])
    assert caught.value.status_code == 400
    assert lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log").status_code == 400
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_deleting_the_namespace_removes_the_pod_and_its_files(lab, no_faults):
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab))
    wait_report(lab, ns)
    roots = [p for p in os.listdir("/tmp") if p.startswith(f"lab-pod-{ns}-")]
    assert len(roots) == 1
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")
    assert lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner").status_code == 404
    wait_for(lambda: not os.path.exists(os.path.join("/tmp", roots[0])))


@pytest.mark.parametrize("fault,message", [
    ("bad_host_config", "Invalid IPv4 network prefix length"),
    ("download_failure", "no such host"),
])
def test_node_joiner_failure_switches(lab, no_faults, fault, message):
    lab.control("POST", "/faults", {"nodejoiner": fault})
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab))
    report = wait_report(lab, ns)
    assert report["result"]["exit_code"] == 1 and message in report["result"]["error_message"]
    log = lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log").text
    assert "level=fatal" in log
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_node_joiner_timeout_hangs_at_extract_image(lab, no_faults):
    lab.control("POST", "/faults", {"nodejoiner": "timeout"})
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab))

    def at_extract():
        _p, out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/report.json"])
        if status and status["status"] == "Success":
            report = json.loads(out[1])
            subs = report.get("stages", [{}])[-1].get("sub_stages", [])
            return subs and subs[-1]["id"] == "fetch-base-iso.extract-image" and report
        return None
    report = wait_for(at_extract)
    time.sleep(0.5)
    _p, out, _s = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/report.json"])
    assert json.loads(out[1])["result"] is None and report["result"] is None
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_exec_faults_cut_then_corrupt_once_each(lab, joined):
    ns, _report = joined
    _p, whole, _s = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
    lab.control("POST", "/faults", {"exec_cut_after_bytes": "100000x2"})
    for cut in (1, 2):
        _p, out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
        assert status is None and len(out[1]) == 100000, f"cut {cut}"
    assert "exec_cut_after_bytes" not in lab.control("GET", "/state")["faults"]
    lab.control("POST", "/faults", {"exec_corrupt": "1"})
    _p, out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
    assert status["status"] == "Success" and len(out[1]) == len(whole[1]) and out[1] != whole[1]
    _p, out, _s = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
    assert out[1] == whole[1]


def test_fault_values_are_checked(lab, no_faults):
    for body in ({"nodejoiner": "sometimes"}, {"exec_cut_after_bytes": "x"}, {"exec_corrupt": "0"}):
        with pytest.raises(Exception):
            lab.control("POST", "/faults", body)


def test_v417_variant_writes_only_exit_code(tmp_path):
    state = str(tmp_path / "v417")
    labctl("start", "--state", state, "--variant", "v417", "--hosts", "0")
    try:
        lab = Lab(state)
        ns = new_namespace(lab)
        create_pod(lab, ns, installer_image(lab))

        def exit_code():
            _p, out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/exit_code"])
            return status and status["status"] == "Success" and out[1]
        assert wait_for(exit_code, timeout=60) == b"0"
        _p, _out, status = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/report.json"])
        assert status["status"] == "Failure"
    finally:
        labctl("stop", "--state", state)


def test_pod_files_over_https_need_a_token(lab, joined):
    import requests

    ns, _report = joined
    url = lab.control("GET", "/pod-files")["url"] + f"/files/{ns}/node-joiner/assets/node.x86_64.iso"
    assert requests.get(url, verify=lab.ca, timeout=30).status_code == 401
    got = requests.get(url, verify=lab.ca, headers={"Authorization": f"Bearer {lab.tokens['admin']}"}, timeout=30)
    _p, out, _s = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
    assert got.status_code == 200 and got.content == out[1]
