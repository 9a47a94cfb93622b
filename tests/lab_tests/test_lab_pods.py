"""Pods of the lab: behaviours by image, exec over WebSocket (v4/v5), log, node-joiner faults."""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import time
import urllib.parse

import pytest
import requests
import websocket
import yaml
from conftest import Lab, labctl
from lab import iso as lab_iso
from lab.ignition import files_by_path, read_env_file
from lab.waiting import wait_for

NODES_CONFIG = {
    "hosts": [
        {
            "hostname": "extra-worker-0",
            "role": "worker",
            "interfaces": [{"name": "eth0", "macAddress": "52:54:00:6f:00:14"}],
            "networkConfig": {
                "interfaces": [
                    {
                        "name": "eth0",
                        "type": "ethernet",
                        "state": "up",
                        "mac-address": "52:54:00:6f:00:14",
                        "ipv4": {
                            "enabled": True,
                            "dhcp": False,
                            "address": [{"ip": "127.0.111.20", "prefix-length": 24}],
                        },
                    }
                ]
            },
        }
    ],
}
NODE_JOINER_CMD = (
    "cp /config/nodes-config.yaml /assets; HOME=/assets node-joiner add-nodes --dir=/assets "
    "--log-level=debug; sleep 600"
)


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
        response = lab.api(
            "POST",
            f"/api/v1/namespaces/{ns}/configmaps",
            body={"metadata": {"name": "nodes-config"}, "data": {"nodes-config.yaml": yaml.safe_dump(NODES_CONFIG)}},
        )
        assert response.status_code == 201, response.text
    pod = {
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": name,
                    "image": image,
                    "command": ["/bin/bash", "-c", command],
                    "volumeMounts": [
                        {"name": "nodes-config", "mountPath": "/config"},
                        {"name": "assets", "mountPath": "/assets"},
                    ],
                }
            ],
            "volumes": [
                {"name": "nodes-config", "configMap": {"name": "nodes-config"}},
                {"name": "assets", "emptyDir": {}},
            ],
        },
    }
    response = lab.api("POST", f"/api/v1/namespaces/{ns}/pods", body=pod)
    assert response.status_code == 201, response.text


def pod_status(lab, ns, name="node-joiner") -> dict:
    return lab.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}").json()["status"]


def exec_ws(lab, ns, pod, command, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"), token=None):
    """Run ``command`` over a raw WebSocket; return (protocol, {channel: bytes}, status dict or None)."""
    query = urllib.parse.urlencode([("command", c) for c in command] + [("stdout", "true"), ("stderr", "true")])
    url = lab.api_url.replace("https://", "wss://") + f"/api/v1/namespaces/{ns}/pods/{pod}/exec?{query}"
    ws = websocket.create_connection(
        url,
        subprotocols=list(protocols),
        sslopt={"ca_certs": lab.ca},
        header=[f"Authorization: Bearer {token or lab.tokens['admin']}"],
        timeout=30,
    )
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
    proto, out, status = exec_ws(
        lab, ns, "node-joiner", ["cat", "/assets/missing"], protocols=("v4.channel.k8s.io", "v5.channel.k8s.io")
    )
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
    create_pod(
        lab,
        ns,
        release_image(lab),
        command="cat /release-manifests/image-references",
        name="release",
        with_config=False,
    )
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


@pytest.mark.parametrize(
    "fault,message",
    [
        ("bad_host_config", "Invalid IPv4 network prefix length"),
        ("download_failure", "no such host"),
    ],
)
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
        with pytest.raises(requests.HTTPError) as refused:
            lab.control("POST", "/faults", body)
        assert refused.value.response.status_code == 400, body
        assert next(iter(body)) in refused.value.response.json()["error"], body


def payload_installer(lab) -> str:
    """The release payload's baremetal-installer image, as oc finds it without ConfigMap installer-images."""
    ns = new_namespace(lab)
    create_pod(
        lab,
        ns,
        release_image(lab),
        command="cat /release-manifests/image-references",
        name="release",
        with_config=False,
    )
    wait_for(lambda: pod_status(lab, ns, "release")["phase"] == "Succeeded")
    stream = json.loads(lab.api("GET", f"/api/v1/namespaces/{ns}/pods/release/log").text)
    return {t["name"]: t["from"]["name"] for t in stream["spec"]["tags"]}["baremetal-installer"]


def cat(lab, ns, path):
    _p, out, status = exec_ws(lab, ns, "node-joiner", ["cat", path])
    return out[1] if status and status["status"] == "Success" else None


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
    state = str(tmp_path / variant)
    labctl("start", "--state", state, "--variant", variant, "--hosts", "0")
    try:
        lab = Lab(state)
        configmap = lab.api("GET", "/api/v1/namespaces/openshift-config/configmaps/installer-images")
        assert configmap.status_code == (200 if has_configmap else 404)
        image = installer_image(lab) if has_configmap else payload_installer(lab)
        ns = new_namespace(lab)
        create_pod(lab, ns, image)
        assert wait_for(lambda: cat(lab, ns, "/assets/exit_code"), timeout=60) == b"0"
        assert (cat(lab, ns, "/assets/report.json") is not None) is has_report
        listing = cat_ls(lab, ns)
        assert ("agentconfig.noarch.iso" in listing) is (variant == "v417") and "node.x86_64.iso" in listing
        secret = lab.api("GET", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token").json()
        assert sorted(secret["data"]) == keys
    finally:
        labctl("stop", "--state", state)


def cat_ls(lab, ns):
    _p, out, _status = exec_ws(lab, ns, "node-joiner", ["ls", "/assets"])
    return out[1].decode().split()


def test_an_unknown_flag_on_417_leaves_no_exit_code_and_logs_cobras_error(tmp_path):
    state = str(tmp_path / "v417")
    labctl("start", "--state", state, "--variant", "v417", "--hosts", "0")
    try:
        lab = Lab(state)
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
    finally:
        labctl("stop", "--state", state)


def test_pxe_pod_writes_boot_artifacts(lab, no_faults):
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab), command=NODE_JOINER_CMD.replace("add-nodes", "add-nodes --pxe"))
    report = wait_report(lab, ns)
    assert report["result"] == {"exit_code": 0} and report["stages"][-1]["id"] == "generate-pxe"
    _p, out, _s = exec_ws(lab, ns, "node-joiner", ["ls", "/assets/boot-artifacts"])
    assert out[1].decode().split() == ["node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz"]
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_nodejoiner_testdata_variant_serves_exactly_its_objects(tmp_path):
    from lab import seeds

    state = str(tmp_path / "testdata")
    labctl("start", "--state", state, "--variant", "nodejoiner-testdata", "--hosts", "0")
    try:
        lab = Lab(state)
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
