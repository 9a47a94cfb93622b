"""What runs on a worker once it joined, and what drain and Node deletion do to it (docs/lab.md, "Worker pods").

- **Placement** (the scheduler, the DaemonSet controller and the kubelet together): when a worker Node becomes
  Ready, one pod of every seeded DaemonSet and ReplicaSet is put on it (``spec.nodeName``), Running and Ready,
  owned by its DaemonSet or ReplicaSet (``ownerReferences`` with ``controller: true``), so a drain has a
  DaemonSet pod to leave, ReplicaSet pods to evict and one with an ``emptyDir`` volume. A Node object is placed
  once (by uid): a worker that is deleted and joins again under the same name gets new pods.
- **Eviction** (``POST .../pods/NAME/eviction`` with a ``policy/v1`` or ``v1beta1`` ``Eviction``, authorized as
  ``create`` on ``pods/eviction``): 400 when the body's name is not the URL's, 404 for a missing pod, else the
  pod is deleted and the answer is ``201`` with a ``Success`` Status (kubernetes/kubernetes
  pkg/registry/core/pod/storage/eviction.go@01aa0f3f6052c9866dcb69054d8924fa8c96e3cb; the lab has no
  PodDisruptionBudgets, so no eviction is refused with 429).
- **Pod GC** (kube-controller-manager's pod garbage collector deletes the pods bound to a Node that no longer
  exists, kubernetes/kubernetes pkg/controller/podgc/gc_controller.go@9448d85d8b5c7ccc1226de5a0cc9f3ae75cbb576):
  when a Node is deleted, its pods go, without the collector's quarantine of 40 s.

No controller recreates an evicted or deleted pod elsewhere (the lab has no other schedulable worker).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import secrets

from aiohttp import web

from . import kinds
from .discovery import json_response
from .errors import ApiError, bad_request
from .nodes import now_rfc3339

LOG = logging.getLogger(__name__)

DAEMONSET = kinds.by_kind("apps/v1", "DaemonSet")
REPLICASET = kinds.by_kind("apps/v1", "ReplicaSet")
EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
WORKER_ROLE = "node-role.kubernetes.io/worker"


def is_ready(node: dict) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _internal_ip(node: dict) -> str:
    addresses = (node.get("status") or {}).get("addresses") or []
    return next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "")


def _pod_ip(owner: dict, node_ip: str) -> str:
    """Host-network pods have the node's address; the others one of the cluster network (10.128.0.0/14)."""
    if ((owner["spec"].get("template") or {}).get("spec") or {}).get("hostNetwork"):
        return node_ip
    return "10.%d.%d.%d" % (128 + secrets.randbelow(4), secrets.randbelow(256), 2 + secrets.randbelow(250))


def pod_for(owner_kind, owner: dict, node: dict) -> dict:
    """A Running, Ready pod of ``owner`` (a DaemonSet or ReplicaSet object) on ``node``."""
    template = copy.deepcopy(owner["spec"].get("template") or {})
    spec = template.get("spec") or {}
    meta = owner["metadata"]
    now = now_rfc3339()
    node_ip = _internal_ip(node)
    pod_ip = _pod_ip(owner, node_ip)
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    if owner_kind is DAEMONSET:
        labels["controller-revision-hash"] = "6b8d9f7c5d"
        labels["pod-template-generation"] = "1"
    spec.update(
        nodeName=node["metadata"]["name"],
        restartPolicy=spec.get("restartPolicy", "Always"),
        dnsPolicy=spec.get("dnsPolicy", "ClusterFirst"),
        schedulerName="default-scheduler",
        serviceAccountName=spec.get("serviceAccountName", "default"),
        terminationGracePeriodSeconds=spec.get("terminationGracePeriodSeconds", 30),
    )
    containers = spec.get("containers") or []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": meta["name"] + "-",
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": owner_kind.api_version,
                    "kind": owner_kind.kind,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": node_ip,
            "hostIPs": [{"ip": node_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": now,
            "qosClass": "BestEffort",
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container.get("image", ""),
                    "imageID": container.get("image", ""),
                    "containerID": "cri-o://" + secrets.token_hex(32),
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
                for container in containers
            ],
        },
    }


class Workloads:
    """Places the seeded DaemonSets' and ReplicaSets' pods on every worker that becomes Ready; deletes the pods of
    a deleted Node."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.placed: set = set()  # uids of the Node objects that got their pods

    def on_change(self, event_type: str, kind, obj: dict) -> None:
        if kind is not kinds.NODE:
            return
        meta = obj["metadata"]
        loop = asyncio.get_running_loop()
        if event_type == "DELETED":
            self.placed.discard(meta.get("uid"))
            loop.call_soon(self.collect, meta["name"])  # not from inside the store's write
        elif WORKER_ROLE in (meta.get("labels") or {}) and is_ready(obj) and meta.get("uid") not in self.placed:
            self.placed.add(meta.get("uid"))
            loop.call_soon(self.place, meta["name"])

    def place(self, name: str) -> list:
        store = self.ctx.store
        node = store.find(kinds.NODE, None, name)
        if node is None:
            return []
        created = []
        for owner_kind in (DAEMONSET, REPLICASET):
            for owner in store.list(owner_kind)[0]:
                try:
                    created.append(store.create(kinds.POD, pod_for(owner_kind, owner, node)))
                except ApiError as error:  # e.g. its namespace was deleted: the rest still run
                    LOG.warning("no %s pod on %s: %s", owner["metadata"]["name"], name, error.message)
        LOG.info("node %s runs %d pods", name, len(created))
        return created

    def collect(self, name: str) -> None:
        """The pod garbage collector: the pods bound to a Node that does not exist are deleted."""
        store = self.ctx.store
        if store.find(kinds.NODE, None, name) is not None:
            return
        for pod in store.list(kinds.POD, field_selector=f"spec.nodeName={name}")[0]:
            meta = pod["metadata"]
            if store.find(kinds.POD, meta["namespace"], meta["name"]) is not None:
                store.delete(kinds.POD, meta["namespace"], meta["name"])


async def evict(request: web.Request, ctx, target) -> web.Response:
    """``POST pods/NAME/eviction``: the pod is deleted (no PodDisruptionBudget can refuse it here)."""
    if request.method != "POST":
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    try:
        body = await request.json()
    except ValueError:
        raise bad_request("the body of the request could not be decoded as an Eviction") from None
    if not isinstance(body, dict) or body.get("kind") not in (None, "Eviction"):
        raise bad_request("not a Eviction object: %s" % type(body).__name__)
    if body.get("apiVersion") not in (None, *EVICTION_VERSIONS):
        raise bad_request(f"the API version in the data ({body.get('apiVersion')}) is not one of policy/v1, v1beta1")
    if (body.get("metadata") or {}).get("name") != target.name:
        raise bad_request("name in URL does not match name in Eviction object")
    ctx.store.get(kinds.POD, target.namespace, target.name)  # 404 for a missing pod
    ctx.store.delete(kinds.POD, target.namespace, target.name)
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}, 201)


async def setup(ctx) -> None:
    workloads = Workloads(ctx)
    ctx.workloads = workloads
    ctx.store.add_listener(workloads.on_change)
