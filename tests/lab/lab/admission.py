"""What kube-apiserver does to an object on its way in, per kind (defaults, server-set fields, subresources)."""

from __future__ import annotations

import base64
import copy

from . import kinds
from .errors import invalid


def normalize(kind, obj: dict) -> dict:
    """Server-side conversions every write gets: a Secret's ``stringData`` is folded into ``data``."""
    if kind is kinds.SECRET:
        string_data = obj.pop("stringData", None) or {}
        data = obj.setdefault("data", {}) or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(value.encode()).decode()
        obj["data"] = data
        obj.setdefault("type", "Opaque")
    return obj


def prepare_create(kind, obj: dict, identity) -> dict:
    obj = normalize(kind, copy.deepcopy(obj))
    if kind is kinds.NAMESPACE:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    elif kind is kinds.POD:
        spec = obj.setdefault("spec", {})
        if not spec.get("containers"):
            raise invalid(kind, obj.get("metadata", {}).get("name"), "spec.containers: Required value")
        spec.setdefault("restartPolicy", "Always")
        # A new pod waits for a scheduler and a kubelet: the pods behaviour (lab/pods.py) moves it on.
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif kind is kinds.CSR:
        spec = obj.setdefault("spec", {})
        name = obj.get("metadata", {}).get("name")
        for required in ("request", "signerName"):
            if not spec.get(required):
                raise invalid(kind, name, f"spec.{required}: Required value")
        if not spec.get("usages"):
            raise invalid(kind, name, "spec.usages: Required value")
        # Like the real server: who filed the CSR comes from authentication, never from the body.
        spec["username"] = identity.name
        spec["groups"] = list(identity.groups)
        spec["uid"] = identity.uid
        spec.pop("extra", None)
        obj["status"] = {}
    return obj


def prepare_update(kind, current: dict, new: dict, subresource: str | None) -> dict:
    """The object to store for a PUT/PATCH of the main resource or its ``status``/``approval`` subresource.

    The caller's ``metadata.resourceVersion`` is kept so the store can refuse stale writes.
    """
    wanted_rv = (new.get("metadata") or {}).get("resourceVersion")
    if subresource in ("status", "approval"):
        result = copy.deepcopy(current)
        if subresource == "status":
            result["status"] = copy.deepcopy(new.get("status") or {})
        else:
            result.setdefault("status", {})["conditions"] = copy.deepcopy((new.get("status") or {}).get("conditions"))
            if result["status"]["conditions"] is None:
                del result["status"]["conditions"]
    else:
        result = normalize(kind, copy.deepcopy(new))
        if "status" in kind.subresources:
            # The main resource ignores status changes when a status subresource exists.
            if "status" in current:
                result["status"] = copy.deepcopy(current["status"])
            else:
                result.pop("status", None)
        if kind is kinds.CSR:
            result["spec"] = copy.deepcopy(current["spec"])  # spec is immutable
    meta = result.setdefault("metadata", {})
    meta["name"] = current["metadata"]["name"]
    if "namespace" in current["metadata"]:
        meta["namespace"] = current["metadata"]["namespace"]
    if wanted_rv:
        meta["resourceVersion"] = wanted_rv
    else:
        meta.pop("resourceVersion", None)
    return result
