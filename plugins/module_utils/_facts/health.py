# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Node object says, read in one place for the whole collection (facts, image, join), and the cluster's
health as the ClusterOperators, the worker MachineConfigPool and the Nodes report it.

node-joiner never reads the operators or the pools (so they never make a cluster unsupported); an unhealthy
cluster is worth knowing before adding workers to it.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import condition, condition_true, dig

ROLE_PREFIX = "node-role.kubernetes.io/"
# A Node whose Ready condition has not changed since about its registration was never Ready: a node still joining
# (its kubelet reports Ready=False from its first status on); one that was Ready and failed changed it later.
JOINING_SLACK_SECONDS = 120
# node-joiner takes the architecture of the first Node labelled master (the control-plane label is not read) --
# openshift/installer pkg/asset/agent/joiner/clusterinfo.go@ead4c47ae829a90629f8c39693ed0bf61e24412f.
MASTER_LABEL = ROLE_PREFIX + "master"
_CONTROL = {"master", "control-plane"}


def node_summary(node: dict[str, Any]) -> dict[str, Any]:
    """Name, roles, addresses, architecture, readiness and creation time of a Node object."""
    labels = dig(node, "metadata", "labels", default={})
    addresses = [a for a in dig(node, "status", "addresses", default=[]) if isinstance(a, dict)]
    return {
        "name": dig(node, "metadata", "name"),
        "roles": sorted(
            key[len(ROLE_PREFIX) :] for key in labels if key.startswith(ROLE_PREFIX) and key != ROLE_PREFIX
        ),
        "internal_ips": [a.get("address") for a in addresses if a.get("type") == "InternalIP"],
        "addresses": [a["address"] for a in addresses if str(a.get("type", "")).endswith("IP") and a.get("address")],
        "hostname": next((a.get("address") for a in addresses if a.get("type") == "Hostname"), None),
        "architecture": dig(node, "status", "nodeInfo", "architecture"),
        "ready": condition_true(node, "Ready"),
        "joining": never_ready(node),
        "created": dig(node, "metadata", "creationTimestamp"),
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
        created = parse_rfc3339(dig(node, "metadata", "creationTimestamp"))
        changed = parse_rfc3339(ready.get("lastTransitionTime"))
    except ValueError:
        return False
    return created is not None and changed is not None and (changed - created).total_seconds() <= JOINING_SLACK_SECONDS


def master_architectures(summaries: list[dict[str, Any]]) -> list[str]:
    """The architecture each master-labelled Node reports, in the order of ``summaries`` (:func:`node_summary`
    results in the API's list order): node-joiner builds for the first; more than one is a mixed control plane."""
    return [summary["architecture"] for summary in summaries if summary.get("master") and summary.get("architecture")]


# What the facts list of the ClusterOperators: (key, condition, listed when it is True or when it is not, problem).
_OPERATOR_STATES = (
    ("degraded", "Degraded", True, "ClusterOperator %s is Degraded: %s"),
    ("unavailable", "Available", False, "ClusterOperator %s is not Available: %s"),
    ("progressing", "Progressing", True, ""),
)


def health(
    clusteroperators: Any, worker_pool: Any, nodes: list[dict[str, Any]], readable: dict[str, bool]
) -> dict[str, Any]:
    """``healthy``, one line per problem, the operators' and the worker pool's state.

    ``nodes`` are node summaries; ``readable`` says which objects the identity could read: one it may not read
    leaves the health unknown, which is a problem too.
    """
    problems: list[str] = []
    items = dig(clusteroperators, "items", default=[])
    operators: dict[str, Any] = {"total": len(items), **{key: [] for key, *_rest in _OPERATOR_STATES}}
    for operator in items:
        name = dig(operator, "metadata", "name")
        for key, kind, when_true, problem in _OPERATOR_STATES:
            state = condition(operator, kind)
            if state and (state.get("status") == "True") is when_true:  # Available: False or Unknown
                operators[key].append({"name": name, "message": state.get("message", "")})
                problems += [problem % (name, state.get("message", ""))] if problem else []
    pool = None
    if worker_pool:
        pool = {key.lower(): condition_true(worker_pool, key) for key in ("Updated", "Updating", "Degraded")}
        pool.update(
            machine_count=dig(worker_pool, "status", "machineCount"),
            ready_machine_count=dig(worker_pool, "status", "readyMachineCount"),
            message=condition(worker_pool, "Degraded").get("message", ""),
        )
        if pool["degraded"]:
            problems.append(f"MachineConfigPool worker is Degraded: {pool['message']}")
    # A worker that has never been Ready since it registered is joining (a run interrupted during the approval):
    # the join step finishes it; it says nothing about the cluster's health.
    joining = sorted(node["name"] for node in nodes if _joining(node))
    problems += [f"Node {n['name']} is not Ready" for n in nodes if not n["ready"] and n["name"] not in joining]
    problems += [
        f"health unknown: cannot read {key}"
        for key in ("clusteroperators", "worker_pool")
        if not readable.get(key, True)
    ]
    return {
        "healthy": not problems,
        "problems": problems,
        "joining": joining,
        "cluster_operators": operators,
        "worker_pool": pool,
    }


def _joining(node: dict[str, Any]) -> bool:
    roles = set(node.get("roles") or [])
    return bool(node.get("joining")) and not node.get("ready") and not node.get("master") and not roles & _CONTROL
