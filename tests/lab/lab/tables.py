"""Server-side printing (``meta.k8s.io/v1`` Table), so ``kubectl get`` shows the columns a real cluster shows."""

from __future__ import annotations

from datetime import datetime, timezone

from . import kinds


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def age(timestamp: str | None) -> str:
    """kubectl's short duration: 45s, 12m, 5h, 3d."""
    if not timestamp:
        return "<unknown>"
    created = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    seconds = max(0, int((datetime.now(timezone.utc) - created).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _condition(obj: dict, kind: str) -> dict:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") == kind), {})


def _node_row(obj: dict) -> list:
    ready = _condition(obj, "Ready").get("status") == "True"
    status = "Ready" if ready else "NotReady"
    if obj.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = sorted(key.split("/", 1)[1] for key in labels if key.startswith("node-role.kubernetes.io/"))
    addresses = {a.get("type"): a.get("address") for a in obj.get("status", {}).get("addresses") or []}
    info = obj.get("status", {}).get("nodeInfo") or {}
    return [
        status,
        ",".join(roles) or "<none>",
        age(obj["metadata"].get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP", "<none>"),
        info.get("osImage", "<unknown>"),
    ]


def _csr_row(obj: dict) -> list:
    conditions = [c.get("type") for c in obj.get("status", {}).get("conditions") or []]
    if obj.get("status", {}).get("certificate"):
        conditions.append("Issued")
    spec = obj.get("spec", {})
    return [
        age(obj["metadata"].get("creationTimestamp")),
        spec.get("signerName", ""),
        spec.get("username", ""),
        "<none>",
        ",".join(conditions) or "Pending",
    ]


def _pod_row(obj: dict) -> list:
    statuses = obj.get("status", {}).get("containerStatuses") or []
    containers = obj.get("spec", {}).get("containers") or []
    ready = sum(1 for status in statuses if status.get("ready"))
    waiting = next(
        (s["state"]["waiting"].get("reason") for s in statuses if (s.get("state") or {}).get("waiting")), None
    )
    restarts = sum(status.get("restartCount", 0) for status in statuses)
    phase = waiting or obj.get("status", {}).get("phase", "Pending")
    return [f"{ready}/{len(containers)}", phase, restarts, age(obj["metadata"].get("creationTimestamp"))]


def _operator_row(obj: dict) -> list:
    versions = obj.get("status", {}).get("versions") or []
    version = next((v.get("version") for v in versions if v.get("name") == "operator"), "")
    available = _condition(obj, "Available")
    return [
        version,
        available.get("status", ""),
        _condition(obj, "Progressing").get("status", ""),
        _condition(obj, "Degraded").get("status", ""),
        age(available.get("lastTransitionTime")),
        available.get("message", ""),
    ]


def _clusterversion_row(obj: dict) -> list:
    available = _condition(obj, "Available")
    progressing = _condition(obj, "Progressing")
    return [
        obj.get("status", {}).get("desired", {}).get("version", ""),
        available.get("status", ""),
        progressing.get("status", ""),
        age(progressing.get("lastTransitionTime")),
        progressing.get("message", ""),
    ]


def _columns(*names) -> list:
    columns = []
    for name in names:
        priority = 1 if name.endswith("*") else 0
        name = name.rstrip("*")
        columns.append(
            {
                "name": name,
                "type": "integer" if name == "Restarts" else "string",
                "format": "name" if name == "Name" else "",
                "description": name,
                "priority": priority,
            }
        )
    return columns


# Kind -> (columns after Name, row function) — the columns kube-apiserver / the CRDs print.
_PRINTERS = {
    ("v1", "Node"): (_columns("Status", "Roles", "Age", "Version", "Internal-IP*", "OS-Image*"), _node_row),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): (
        _columns("Age", "SignerName", "Requestor", "RequestedDuration", "Condition"),
        _csr_row,
    ),
    ("v1", "Pod"): (_columns("Ready", "Status", "Restarts", "Age"), _pod_row),
    ("config.openshift.io/v1", "ClusterOperator"): (
        _columns("Version", "Available", "Progressing", "Degraded", "Since", "Message"),
        _operator_row,
    ),
    ("config.openshift.io/v1", "ClusterVersion"): (
        _columns("Version", "Available", "Progressing", "Since", "Status"),
        _clusterversion_row,
    ),
    ("v1", "Namespace"): (
        _columns("Status", "Age"),
        lambda obj: [obj.get("status", {}).get("phase", ""), age(obj["metadata"].get("creationTimestamp"))],
    ),
}
_DEFAULT = (_columns("Age"), lambda obj: [age(obj["metadata"].get("creationTimestamp"))])


def table(kind: kinds.Kind, items: list, resource_version: str, include_object: str | None) -> dict:
    columns, row = _PRINTERS.get((kind.api_version, kind.kind), _DEFAULT)
    rows = []
    for obj in items:
        entry = {"cells": [obj["metadata"]["name"], *row(obj)]}
        if include_object == "Object":
            entry["object"] = obj
        elif include_object != "None":
            entry["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": _columns("Name") + columns,
        "rows": rows,
    }
