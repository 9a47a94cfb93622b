"""Shared helpers of the pod tests: node-joiner and release pods created over the API, exec over a raw WebSocket."""

from __future__ import annotations

import json
import ssl
import urllib.parse

import websocket
import yaml
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


def release_stream(lab) -> tuple:
    """Run the release image as oc does (``cat /release-manifests/image-references``) in a new namespace, check
    that it completed; ``(namespace, the ImageStream it printed)``."""
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
    return ns, json.loads(lab.api("GET", f"/api/v1/namespaces/{ns}/pods/release/log").text)


def image_tags(stream: dict) -> dict:
    return {tag["name"]: tag["from"]["name"] for tag in stream["spec"]["tags"]}


def payload_installer(lab) -> str:
    """The release payload's baremetal-installer image, as oc finds it without ConfigMap installer-images."""
    _ns, stream = release_stream(lab)
    return image_tags(stream)["baremetal-installer"]


def cat(lab, ns, path):
    """The bytes of ``path`` in the node-joiner pod, or None when ``cat`` fails."""
    _p, out, status = exec_ws(lab, ns, "node-joiner", ["cat", path])
    return out[1] if status and status["status"] == "Success" else None


def cat_ls(lab, ns):
    _p, out, _status = exec_ws(lab, ns, "node-joiner", ["ls", "/assets"])
    return out[1].decode().split()
