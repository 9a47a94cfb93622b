"""Faithful Nodes (lab/nodes.py) and the pods a worker runs, eviction and pod GC (lab/workloads.py).

A worker joins through the simulated kubelet (``reboot-done``, CSRs approved here with the admin token); its
Node and pods are then read with the typed ``kubernetes`` client, which refuses any object its OpenAPI schema
does not allow (a Node without ``nodeInfo.bootID``, a container status without ``imageID``...).
"""

from __future__ import annotations

import pytest
from conftest import running_lab
from kubernetes import client, config
from kubernetes.client.models import V1Node
from kubernetes.client.rest import ApiException
from lab import seeds
from lab.waiting import wait_until

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
NODE_INFO = (
    "architecture",
    "boot_id",
    "container_runtime_version",
    "kernel_version",
    "kube_proxy_version",
    "kubelet_version",
    "machine_id",
    "operating_system",
    "os_image",
    "system_uuid",
)


@pytest.fixture(scope="module")
def wlab(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("workloads-lab"))
    with running_lab(state, "--hosts", "3", "--host-arch", "extra-worker-2=aarch64") as started:
        yield started


def core(lab, user="kubeconfig") -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=f"{lab.state}/{user}"))


def approve_pending(lab) -> list:
    """Approve every pending CSR (only the rebooted hosts' kubelets file any here); the names approved."""
    approved = []
    for csr in lab.api("GET", CSRS).json()["items"]:
        if (csr.get("status") or {}).get("conditions"):
            continue
        csr.setdefault("status", {})["conditions"] = [
            {"type": "Approved", "status": "True", "reason": "Test", "message": "approved by test_lab_workloads"}
        ]
        response = lab.api("PUT", f"{CSRS}/{csr['metadata']['name']}/approval", body=csr)
        assert response.status_code == 200, response.text
        approved.append(csr["metadata"]["name"])
    return approved


def join(lab, name: str) -> dict:
    """Reboot ``name`` into the installed system and approve its CSRs until its Node is Ready."""
    lab.control("POST", "/reboot-done", {"hosts": [name]})

    def ready():
        approve_pending(lab)
        node = lab.api("GET", f"/api/v1/nodes/{name}")
        if node.status_code != 200:
            return None
        conditions = node.json()["status"].get("conditions") or []
        return node.json() if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None

    return wait_until(f"{name} Ready", ready, timeout=30)


def pods_on(lab, name: str) -> list:
    return wait_until(
        f"pods on {name}",
        lambda: core(lab).list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items or None,
    )


def test_seeded_nodes_pass_the_typed_client_schema():
    # nodejoiner-testdata replays upstream's node-joiner test fixtures verbatim (a master-0 with only an
    # architecture), which the typed client is never pointed at.
    for variant in [v for v in seeds.variants() if v != "nodejoiner-testdata"]:
        for obj in seeds.load_seed(variant):
            if obj.get("kind") == "Node":
                V1Node.from_dict(obj)  # raises on a missing required field


def test_a_joined_worker_reports_what_a_kubelet_reports_and_runs_pods(wlab):
    join(wlab, "extra-worker-0")
    node = core(wlab).read_node("extra-worker-0")  # the typed client refuses an incomplete Node
    info = node.status.node_info
    assert all(getattr(info, field) is not None for field in NODE_INFO)
    assert info.boot_id and info.machine_id and info.system_uuid and info.kube_proxy_version == ""
    assert info.architecture == "amd64" and info.kernel_version.endswith(".x86_64")
    assert info.kubelet_version == "v1.34.2" and info.os_image.startswith("Red Hat Enterprise Linux CoreOS")
    assert node.status.daemon_endpoints.kubelet_endpoint.port == wlab.info["kubelet_port"]
    assert [c.type for c in node.status.conditions] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert node.status.conditions[-1].status == "True" and node.status.conditions[-1].reason == "KubeletReady"
    assert set(node.status.capacity) >= {"cpu", "memory", "pods", "ephemeral-storage"}
    assert node.status.allocatable["cpu"] == "3500m" and node.status.capacity["cpu"] == "4"

    pods = pods_on(wlab, "extra-worker-0")
    owners = sorted((p.metadata.owner_references[0].kind, p.metadata.namespace) for p in pods)
    assert owners == [
        ("DaemonSet", "openshift-dns"),
        ("DaemonSet", "openshift-machine-config-operator"),
        ("ReplicaSet", "openshift-ingress"),
        ("ReplicaSet", "openshift-monitoring"),
    ]
    assert all(p.status.phase == "Running" and p.status.container_statuses[0].ready for p in pods)
    with_empty_dir = [p.metadata.name for p in pods if any(v.empty_dir is not None for v in p.spec.volumes or [])]
    assert len(with_empty_dir) == 1 and with_empty_dir[0].startswith("thanos-querier-7c9f6d8b55-")


def test_a_worker_of_another_architecture_reports_it(wlab):
    join(wlab, "extra-worker-2")
    info = core(wlab).read_node("extra-worker-2").status.node_info
    assert info.architecture == "arm64" and info.kernel_version.endswith(".aarch64")
    labels = core(wlab).read_node("extra-worker-2").metadata.labels
    assert labels["kubernetes.io/arch"] == "arm64"


def test_eviction_deletes_the_pod_and_checks_its_request(wlab):
    join(wlab, "extra-worker-1")
    pods = pods_on(wlab, "extra-worker-1")
    router = next(p for p in pods if p.metadata.namespace == "openshift-ingress")
    name, namespace = router.metadata.name, router.metadata.namespace
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}

    wrong = wlab.api("POST", path, body=dict(body, metadata={"name": "other"}))
    assert wrong.status_code == 400 and "name in URL does not match name in Eviction object" in wrong.text
    refused = wlab.api("POST", path, as_user="readonly", body=body)
    assert refused.status_code == 403 and 'cannot create resource "pods/eviction"' in refused.json()["message"]

    evicted = core(wlab).create_namespaced_pod_eviction(
        name, namespace, client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    )
    assert evicted is not None
    assert wlab.api("GET", f"/api/v1/namespaces/{namespace}/pods/{name}").status_code == 404
    assert wlab.api("POST", path, body=body).status_code == 404
    with pytest.raises(ApiException) as missing:
        core(wlab).create_namespaced_pod_eviction(
            name, namespace, client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
        )
    assert missing.value.status == 404

    resources = wlab.api("GET", "/api/v1").json()["resources"]
    eviction = next(r for r in resources if r["name"] == "pods/eviction")
    assert (eviction["kind"], eviction["group"], eviction["version"], eviction["verbs"]) == (
        "Eviction",
        "policy",
        "v1",
        ["create"],
    )


def test_a_deleted_node_loses_its_pods_and_a_new_node_of_the_name_gets_new_ones(wlab):
    # pytest-xdist may run this test in a worker of its own, with a lab of its own: join the worker here unless an
    # earlier test of this lab did.
    joined = wlab.api("GET", "/api/v1/nodes/extra-worker-0")
    node = joined.json() if joined.status_code == 200 else join(wlab, "extra-worker-0")
    before = {p.metadata.name for p in pods_on(wlab, "extra-worker-0")}
    assert len(before) == 4
    core(wlab).delete_node("extra-worker-0")
    wait_until(
        "the pod GC",
        lambda: not core(wlab).list_pod_for_all_namespaces(field_selector="spec.nodeName=extra-worker-0").items,
    )
    assert wlab.api("GET", "/apis/apps/v1/namespaces/openshift-dns/daemonsets/node-resolver").status_code == 200

    # A Node of the same name that is Ready again (a replaced worker) is a new object: it gets new pods.
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        node["metadata"].pop(key)
    assert wlab.api("POST", "/api/v1/nodes", body=node).status_code == 201
    after = {p.metadata.name for p in pods_on(wlab, "extra-worker-0")}
    assert len(after) == 4 and not after & before
