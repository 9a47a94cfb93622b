# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's health as the ClusterOperators, the worker MachineConfigPool and the Nodes report it.

node-joiner never reads these objects (so they never make a cluster unsupported); an unhealthy cluster is worth
knowing before adding workers to it.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.objects import (
    condition,
    condition_true,
    dig,
)


def _operators(clusteroperators: Any, problems: list[str]) -> dict[str, Any]:
    operators: dict[str, Any] = {"total": 0, "degraded": [], "unavailable": [], "progressing": []}
    for operator in dig(clusteroperators, "items", default=[]):
        name = dig(operator, "metadata", "name")
        operators["total"] += 1
        if condition_true(operator, "Degraded"):
            message = condition(operator, "Degraded").get("message", "")
            operators["degraded"].append({"name": name, "message": message})
            problems.append("ClusterOperator %s is Degraded: %s" % (name, message))
        if condition(operator, "Available") and not condition_true(operator, "Available"):
            message = condition(operator, "Available").get("message", "")
            operators["unavailable"].append({"name": name, "message": message})
            problems.append("ClusterOperator %s is not Available: %s" % (name, message))
        if condition_true(operator, "Progressing"):
            message = condition(operator, "Progressing").get("message", "")
            operators["progressing"].append({"name": name, "message": message})
    return operators


def _worker_pool(worker_pool: Any, problems: list[str]) -> dict[str, Any] | None:
    if not worker_pool:
        return None
    pool = {
        "updated": condition_true(worker_pool, "Updated"),
        "updating": condition_true(worker_pool, "Updating"),
        "degraded": condition_true(worker_pool, "Degraded"),
        "machine_count": dig(worker_pool, "status", "machineCount"),
        "ready_machine_count": dig(worker_pool, "status", "readyMachineCount"),
        "message": condition(worker_pool, "Degraded").get("message", ""),
    }
    if pool["degraded"]:
        problems.append("MachineConfigPool worker is Degraded: %s" % pool["message"])
    return pool


def health(
    clusteroperators: Any, worker_pool: Any, nodes: list[dict[str, Any]], readable: dict[str, bool]
) -> dict[str, Any]:
    """``healthy``, one line per problem, the operators' and the worker pool's state.

    ``nodes`` are node summaries; ``readable`` says which objects the identity could read: one it may not read
    leaves the health unknown, which is a problem too.
    """
    problems: list[str] = []
    operators = _operators(clusteroperators, problems)
    pool = _worker_pool(worker_pool, problems)
    # A worker that has never been Ready since it registered is joining (a run interrupted during the approval):
    # the join step finishes it; it says nothing about the cluster's health.
    joining = sorted(node["name"] for node in nodes if _joining(node))
    problems.extend(
        "Node %s is not Ready" % node["name"] for node in nodes if not node["ready"] and node["name"] not in joining
    )
    problems.extend(
        "health unknown: cannot read %s" % key
        for key in ("clusteroperators", "worker_pool")
        if not readable.get(key, True)
    )
    return {
        "healthy": not problems,
        "problems": problems,
        "joining": joining,
        "cluster_operators": operators,
        "worker_pool": pool,
    }


def _joining(node: dict[str, Any]) -> bool:
    roles = set(node.get("roles") or [])
    return (
        bool(node.get("joining"))
        and not node.get("ready")
        and not node.get("master")
        and not (roles & {"master", "control-plane"})
    )
