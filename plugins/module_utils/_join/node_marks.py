# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The labels and taints a new worker's Node should carry, as the one patch that gives them, or None.

The preflight (``_check.labels``) checked them and returns them per join node (``labels``: {key: value},
``taints``: [{key, value?, effect}]). The join loop calls ``node_patch`` with each round's copy of the Node as soon
as it is registered - the kubelet creates it before its certificates are approved, so the marks are there before
the Node is Ready, before the scheduler places anything on it - and sends the result, when not None, as
``PATCH /api/v1/nodes/<name>`` with ``Content-Type: application/merge-patch+json``. The next round's copy then has
them and the answer is None: a re-run changes nothing.

- Labels: the given keys get the given values; other labels are left alone.
- Taints: for every key given, the Node's taints of that key become exactly the given ones (a changed effect or
  value replaces the old taint); taints of other keys (``node.kubernetes.io/not-ready``, which the node lifecycle
  controller adds and removes) are kept. A JSON merge patch replaces a list whole, so the patch carries the
  Node's ``resourceVersion`` read in the same round: should a controller change the taints in between, the API
  server answers 409 Conflict instead of undoing that change; read the Node again and call ``node_patch`` again.
"""

from __future__ import annotations

from typing import Any


def _taint(taint: dict[str, Any]) -> tuple[str, str, str]:
    return (str(taint.get("key") or ""), str(taint.get("value") or ""), str(taint.get("effect") or ""))


def _written(taint: dict[str, Any]) -> dict[str, Any]:
    """A taint as the patch writes it: key, value when not empty, effect; a kept taint as the Node has it."""
    key, value, effect = _taint(taint)
    return dict({"key": key, "effect": effect}, **({"value": value} if value else {}))


def desired_taints(current: list[dict[str, Any]], taints: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The Node's whole taint list with ``taints`` in place, or None when it has them already."""
    keys = {str(taint.get("key")) for taint in taints}
    mine = sorted(_taint(taint) for taint in current if str(taint.get("key")) in keys)
    if mine == sorted({_taint(taint) for taint in taints}):
        return None
    kept = [taint for taint in current if str(taint.get("key")) not in keys]
    return kept + [_written(taint) for taint in taints]


def node_patch(node: dict[str, Any], labels: dict[str, str] | None, taints: list[dict[str, Any]] | None) -> Any:
    """The merge patch that gives ``node`` (a Node object as read) ``labels`` and ``taints``, or None when it has
    them. Neither given: None."""
    metadata = node.get("metadata") or {}
    have = metadata.get("labels") or {}
    patch: dict[str, Any] = {}
    missing = {key: value for key, value in (labels or {}).items() if have.get(key) != value}
    if missing:
        patch["metadata"] = {"labels": missing}
    wanted = desired_taints((node.get("spec") or {}).get("taints") or [], taints) if taints else None
    if wanted is not None:
        patch["spec"] = {"taints": wanted}
        if metadata.get("resourceVersion"):
            patch.setdefault("metadata", {})["resourceVersion"] = metadata["resourceVersion"]
    return patch or None


def marks_of(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{node name: {labels, taints}} of the join nodes that carry any (the ``nodes`` option of join_workers)."""
    found = {}
    for node in nodes or []:
        labels, taints = node.get("labels") or {}, node.get("taints") or []
        if labels or taints:
            found[str(node.get("name") or "").lower()] = {"labels": dict(labels), "taints": list(taints)}
    return found


def describe_marks(marks: dict[str, Any]) -> str:
    """``labels a=b, c=; taints k=v:NoSchedule`` for a progress line."""
    labels = ", ".join("%s=%s" % (key, value) for key, value in sorted((marks.get("labels") or {}).items()))
    taints = ", ".join(
        "%s%s:%s" % (t.get("key"), "=%s" % t["value"] if t.get("value") else "", t.get("effect"))
        for t in marks.get("taints") or []
    )
    return "; ".join(
        part for part in ("labels " + labels if labels else "", "taints " + taints if taints else "") if part
    )
