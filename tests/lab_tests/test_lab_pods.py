"""Pods of the default lab: behaviours by image, exec over WebSocket (v4/v5), log, node-joiner and exec faults.

The node-joiner pod on each release lab is in test_lab_pods_releases.py."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest
import requests
import websocket
from lab import iso as lab_iso
from lab.ignition import files_by_path, read_env_file
from lab.waiting import wait_for
from pod_helpers import (
    NODE_JOINER_CMD,
    create_pod,
    exec_ws,
    image_tags,
    installer_image,
    new_namespace,
    pod_status,
    release_stream,
    wait_report,
)


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
    ns, stream = release_stream(lab)
    assert stream["kind"] == "ImageStream" and image_tags(stream)["baremetal-installer"] == installer_image(lab)
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
    log = lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log")
    assert log.status_code == 400 and "is waiting to start: trying and failing to pull image" in log.json()["message"]
    said = [(e["type"], e["reason"], e["message"]) for e in events_of(lab, ns)]
    assert said[:3] == [
        ("Normal", "Pulling", 'Pulling image "quay.io/example/not-there:1.0"'),
        ("Warning", "Failed", 'Failed to pull image "quay.io/example/not-there:1.0": ' + waiting["message"]),
        ("Normal", "BackOff", 'Back-off pulling image "quay.io/example/not-there:1.0"'),
    ]
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def events_of(lab, ns, name="node-joiner"):
    """The pod's Events, oldest first, each as the kubelet's recorder writes it."""
    items = lab.api("GET", f"/api/v1/namespaces/{ns}/events").json()["items"]
    mine = [e for e in items if e["involvedObject"]["name"] == name]
    for event in mine:
        assert event["metadata"]["name"].startswith(name + ".") and event["count"] == 1
        assert event["involvedObject"]["kind"] == "Pod" and event["involvedObject"]["uid"]
        assert event["source"] == {"component": "kubelet", "host": "master-0"}
    return mine


def test_an_invalid_image_name_waits_at_once_with_invalid_image_name(lab, no_faults):
    ns = new_namespace(lab)
    create_pod(lab, ns, "Quay.io/Example/Bad Name:1")
    waiting = wait_for(lambda: pod_status(lab, ns).get("containerStatuses", [{}])[0].get("state", {}).get("waiting"))
    message = (
        'Failed to apply default image tag "Quay.io/Example/Bad Name:1": couldn\'t parse image name '
        '"Quay.io/Example/Bad Name:1": invalid reference format'
    )
    assert waiting == {"reason": "InvalidImageName", "message": message}
    assert [(e["type"], e["reason"], e["message"]) for e in events_of(lab, ns)] == [
        ("Warning", "InspectFailed", message)
    ]
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


@pytest.mark.parametrize(
    "death, reason, message",
    [
        ("oom", None, None),
        ("evicted", "Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 62Mi. "),
        ("evicted_emptydir", "Evicted", 'Usage of EmptyDir volume "assets" exceeds the limit "4Gi". '),
    ],
)
def test_a_node_joiner_container_dies_as_the_kubelet_says(lab, no_faults, death, reason, message):
    """OOMKilled: the container terminated (137, OOMKilled), the pod Failed, no Event. Evicted: the pod Failed with
    reason Evicted, the message, a DisruptionTarget condition and a Warning Event. Either way mid-run: the log
    stops at extract-image and exec is refused as into any completed pod."""
    lab.control("POST", "/faults", {"nodejoiner": death})
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab))

    def failed():
        status = pod_status(lab, ns)
        return status if status["phase"] == "Failed" else None

    status = wait_for(failed, timeout=30)
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 137 and terminated["reason"] == ("OOMKilled" if death == "oom" else "Error")
    assert status.get("reason") == reason and (message is None or status["message"].startswith(message))
    warnings = [(e["reason"], e["message"]) for e in events_of(lab, ns) if e["type"] == "Warning"]
    assert warnings == ([] if death == "oom" else [("Evicted", status["message"])])
    disruption = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert disruption == ([] if death == "oom" else [dict(disruption[0], status="True", reason="TerminationByKubelet")])
    with pytest.raises(websocket.WebSocketBadStatusException) as caught:
        exec_ws(lab, ns, "node-joiner", ["cat", "/assets/report.json"])
    assert caught.value.status_code == 400
    log = lab.api("GET", f"/api/v1/namespaces/{ns}/pods/node-joiner/log").text
    assert "Extracting base ISO from release payload" in log and "level=fatal" not in log
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
    for body in (
        {"nodejoiner": "sometimes"},
        {"nodejoiner": "killed"},
        {"exec_cut_after_bytes": "x"},
        {"exec_corrupt": "0"},
    ):
        with pytest.raises(requests.HTTPError) as refused:
            lab.control("POST", "/faults", body)
        assert refused.value.response.status_code == 400, body
        assert next(iter(body)) in refused.value.response.json()["error"], body


def test_pxe_pod_writes_boot_artifacts(lab, no_faults):
    ns = new_namespace(lab)
    create_pod(lab, ns, installer_image(lab), command=NODE_JOINER_CMD.replace("add-nodes", "add-nodes --pxe"))
    report = wait_report(lab, ns)
    assert report["result"] == {"exit_code": 0} and report["stages"][-1]["id"] == "generate-pxe"
    _p, out, _s = exec_ws(lab, ns, "node-joiner", ["ls", "/assets/boot-artifacts"])
    assert out[1].decode().split() == ["node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz"]
    lab.api("DELETE", f"/api/v1/namespaces/{ns}")


def test_pod_files_over_https_need_a_token(lab, joined):
    ns, _report = joined
    url = lab.control("GET", "/pod-files")["url"] + f"/files/{ns}/node-joiner/assets/node.x86_64.iso"
    assert requests.get(url, verify=lab.ca, timeout=30).status_code == 401
    got = requests.get(url, verify=lab.ca, headers={"Authorization": f"Bearer {lab.tokens['admin']}"}, timeout=30)
    _p, out, _s = exec_ws(lab, ns, "node-joiner", ["cat", "/assets/node.x86_64.iso"])
    assert got.status_code == 200 and got.content == out[1]
