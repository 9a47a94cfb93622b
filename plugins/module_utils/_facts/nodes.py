# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Node object says, read in one place for the whole collection (facts, image, join)."""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.objects import condition, condition_true

ROLE_PREFIX = "node-role.kubernetes.io/"
# A Node whose Ready condition has not changed since about its registration was never Ready: a node still joining
# (its kubelet reports Ready=False from its first status on); one that was Ready and failed changed it later.
JOINING_SLACK_SECONDS = 120
# node-joiner takes the architecture of the first Node labelled master (the control-plane label is not read) --
# openshift/installer pkg/asset/agent/joiner/clusterinfo.go@ead4c47ae829a90629f8c39693ed0bf61e24412f.
MASTER_LABEL = ROLE_PREFIX + "master"


def node_summary(node: dict[str, Any]) -> dict[str, Any]:
    """Name, roles, addresses, architecture, readiness and creation time of a Node object."""
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    labels = metadata.get("labels") or {}
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, dict)]
    return {
        "name": metadata.get("name"),
        "roles": sorted(
            key[len(ROLE_PREFIX) :] for key in labels if key.startswith(ROLE_PREFIX) and key[len(ROLE_PREFIX) :]
        ),
        "internal_ips": [a.get("address") for a in addresses if a.get("type") == "InternalIP"],
        "addresses": [
            a.get("address") for a in addresses if str(a.get("type", "")).endswith("IP") and a.get("address")
        ],
        "hostname": next((a.get("address") for a in addresses if a.get("type") == "Hostname"), None),
        "architecture": (status.get("nodeInfo") or {}).get("architecture"),
        "ready": condition_true(node, "Ready"),
        "joining": never_ready(node),
        "created": metadata.get("creationTimestamp"),
        "master": MASTER_LABEL in labels,
    }


def never_ready(node: dict[str, Any]) -> bool:
    """A Node that has not been Ready since it registered (a host half way through joining)."""
    ready = condition(node, "Ready")
    if ready.get("status") == "True":
        return False
    if not ready:
        return True
    try:
        created = parse_rfc3339((node.get("metadata") or {}).get("creationTimestamp"))
        changed = parse_rfc3339(ready.get("lastTransitionTime"))
    except ValueError:
        return False
    if created is None or changed is None:
        return False
    return (changed - created).total_seconds() <= JOINING_SLACK_SECONDS


def _master_architectures(summaries: list[dict[str, Any]]) -> list[str]:
    return [summary["architecture"] for summary in summaries if summary.get("master") and summary.get("architecture")]


def master_architecture(summaries: list[dict[str, Any]]) -> str | None:
    """The architecture of the first master-labelled Node (what node-joiner builds for), or None.

    ``summaries`` are :func:`node_summary` results in the API's list order (node-joiner takes the first).
    """
    architectures = _master_architectures(summaries)
    return architectures[0] if architectures else None


def master_architectures(summaries: list[dict[str, Any]]) -> list[str]:
    """Every architecture the master-labelled Nodes report, sorted; more than one is a mixed control plane."""
    return sorted(set(_master_architectures(summaries)))
