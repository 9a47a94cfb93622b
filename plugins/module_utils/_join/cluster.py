# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the loop reads and writes in the cluster: the CSRs and Nodes, an approval after a fresh read, and the one
merge patch that gives a Node its labels and taints. Every request goes through the collection's ApiClient (its
retry policy); what to approve is decided by the engine and the policy (``engine.decide``, ``csr.py``)."""

from __future__ import annotations

import datetime
import email.utils
import time
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import csr as policy

APPROVED_BY = "openshift_agent.day2.csr_approve"
APPROVAL_REASON = "OpenshiftAgentDay2Approved"
Json = dict[str, Any]
CSRS = k8s.group_target("certificates.k8s.io", "v1", "certificatesigningrequests")
MERGE_PATCH = "application/merge-patch+json"  # RFC 7386, as kubectl patch --type merge sends it
# What reading the API server's Date header raises: a failed request, no or a garbled header.
DATE_ERRORS: tuple[type[BaseException], ...] = (*k8s.API_ERRORS, AttributeError, TypeError, ValueError, IndexError)


def _taint(taint: Json) -> tuple[str, str, str]:
    return (str(taint.get("key") or ""), str(taint.get("value") or ""), str(taint.get("effect") or ""))


def node_patch(node: Json, labels: dict[str, str], taints: list[Json]) -> Json | None:
    """The merge patch that gives ``node`` its labels and taints, or None when it has them. For every taint key
    given, the Node's taints of that key become exactly the given ones; taints of other keys (the lifecycle
    controller's node.kubernetes.io/not-ready) are kept. A merge patch replaces a list whole, so it carries the
    Node's resourceVersion: should a controller change the taints in between, the API server answers 409 and the
    Node is read again."""
    metadata = node.get("metadata") or {}
    have = metadata.get("labels") or {}
    missing = {key: value for key, value in labels.items() if have.get(key) != value}
    patch: Json = {"metadata": {"labels": missing}} if missing else {}
    current = (node.get("spec") or {}).get("taints") or []
    keys = {str(t.get("key")) for t in taints}
    wanted = sorted({_taint(t) for t in taints})
    if taints and sorted(_taint(t) for t in current if str(t.get("key")) in keys) != wanted:
        written = [dict({"key": k, "effect": e}, **({"value": v} if v else {})) for k, v, e in map(_taint, taints)]
        patch["spec"] = {"taints": [t for t in current if str(t.get("key")) not in keys] + written}
        if metadata.get("resourceVersion"):
            patch.setdefault("metadata", {})["resourceVersion"] = metadata["resourceVersion"]
    return patch or None


class Cluster:
    """The CSRs and Nodes of the cluster, through the collection's ApiClient (its retry policy)."""

    def __init__(self, client: k8s.ApiClient, dynamic_client: Any = None) -> None:
        self.client, self._dynamic = client, dynamic_client

    def csrs(self) -> list[Json]:
        return (self.client.request("GET", CSRS) or {}).get("items") or []

    def nodes(self) -> dict[str, Json]:
        items = (self.client.request("GET", k8s.core_target("nodes")) or {}).get("items") or []
        return {str((node.get("metadata") or {}).get("name")): node for node in items}

    def approve(self, listed: Json, message: str, moment: datetime.datetime) -> bool:
        """Approve a CSR after a fresh read: never one that is no longer pending, or another object of that name."""
        name = str(listed["metadata"]["name"])
        approval = k8s.Target(f"{CSRS.path}/{name}/approval", "update", f"{CSRS.resource}/approval", CSRS.group, name)
        condition = {
            "type": "Approved",
            "status": "True",
            "reason": APPROVAL_REASON,
            "message": message,
            "lastUpdateTime": format_rfc3339(moment),
        }
        sent: list[str] = []

        def change(fresh: Json) -> tuple[str, k8s.Target, Any] | None:
            sent.clear()  # only the write of the last try counts: one refused with 409 approved nothing
            if fresh.get("spec") != listed.get("spec") or policy.parse_csr(fresh).state != policy.PENDING:
                return None
            sent.append(name)
            status = dict(fresh.get("status") or {})
            status["conditions"] = [*list(status.get("conditions") or []), condition]
            return "PUT", approval, dict(fresh, status=status)

        fresh = k8s.group_target(CSRS.group, "v1", CSRS.resource, name)
        return self.client.update_fresh(fresh, change) is not None and bool(sent)

    def mark(self, name: str, labels: dict[str, str], taints: list[Json]) -> bool:
        """Give Node ``name`` its labels and taints (one merge patch, read again after a conflict); True when sent."""
        sent: list[str] = []

        def change(node: Json) -> tuple[str, k8s.Target, Any] | None:
            patch = node_patch(node, labels, taints)
            sent[:] = [name] if patch else []  # only the write of the last try counts
            return None if patch is None else ("PATCH", k8s.core_target("nodes", name, verb="patch"), patch)

        self.client.update_fresh(k8s.core_target("nodes", name), change, content_type=MERGE_PATCH)
        return bool(sent)

    def server_offset(self) -> float | None:
        """Seconds the API server's clock is ahead of this one (the Date header of GET /version, to about a
        second), or None: CSR creation times are the server's clock."""
        try:
            before = time.time()
            response = self._dynamic.request("GET", "/version", serialize=False)
            after = time.time()
            headers = getattr(response, "headers", None) or {}
            date = email.utils.parsedate_to_datetime(headers.get("Date") or headers.get("date") or "")
        except DATE_ERRORS:
            return None
        return date.timestamp() + 0.5 - (before + after) / 2  # the header has whole seconds
