# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Node object says, read in one place for the whole collection (facts, image, join), and the cluster's
health as the ClusterOperators, the worker MachineConfigPool and the Nodes report it.

node-joiner never reads the operators or the pools (so they never make a cluster unsupported); an unhealthy
cluster is worth knowing before adding workers to it.
"""

from __future__ import annotations

from collections.abc import Container
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
CONTROL_PLANE_ROLES = ("master", "control-plane")


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


def is_control_plane(node: dict[str, Any]) -> bool:
    """Whether a node summary has a control-plane role (``master`` or ``control-plane``)."""
    return bool(set(CONTROL_PLANE_ROLES) & set(node.get("roles") or []))


def master_architectures(summaries: list[dict[str, Any]]) -> list[str]:
    """The architecture each master-labelled Node reports, in the order of ``summaries`` (:func:`node_summary`
    results in the API's list order): node-joiner builds for the first; more than one is a mixed control plane."""
    return [summary["architecture"] for summary in summaries if summary.get("master") and summary.get("architecture")]


# The ClusterOperators a new worker needs: those of the control plane take its registration and sign its CSRs
# (kube-apiserver, etcd, kube-controller-manager), run the DaemonSet controller and place the DaemonSet pods
# (kube-controller-manager, kube-scheduler); machine-config serves its Ignition config (port 22623) and configures
# it, network makes it Ready, dns runs on it. One of them Degraded or not Available is a health problem; any other
# operator's state is a warning.
CONTROL_PLANE_OPERATORS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
NEEDED_OPERATORS = (*CONTROL_PLANE_OPERATORS, "dns", "machine-config", "network")
# What the facts list of the ClusterOperators: (key, condition, listed when it is True or when it is not, problem).
_OPERATOR_STATES = (
    ("degraded", "Degraded", True, "ClusterOperator %s is Degraded: %s"),
    ("unavailable", "Available", False, "ClusterOperator %s is not Available: %s"),
    ("progressing", "Progressing", True, ""),
)
ALLOW = "set day2_allow_upgrading=true to add them"
HEALTH_READS = ("clusteroperators", "worker_pool")  # the objects day1_facts reads for the health alone
Json = dict[str, Any]


def health(objects: Json, nodes: list[Json], unreadable: Container[str], warnings: list[str]) -> Json:
    """``healthy``, one line per problem, the operators' and the worker pool's state; the state of an operator new
    workers do not need goes to ``warnings``.

    ``objects`` are those read (``clusteroperators``, ``worker_pool``); ``nodes`` are node summaries; ``unreadable``
    names the objects the identity may not read: one of them leaves the health unknown, a problem too.
    """
    problems: list[str] = []
    items = dig(objects.get("clusteroperators"), "items", default=[])
    operators: dict[str, Any] = {"total": len(items), **{key: [] for key, *_rest in _OPERATOR_STATES}}
    for operator in items:
        name = dig(operator, "metadata", "name")
        for key, kind, when_true, problem in _OPERATOR_STATES:
            state = condition(operator, kind)
            said = state.get("message", "")
            if state and (state.get("status") == "True") is when_true:  # Available: False or Unknown
                operators[key].append({"name": name, "message": said})
                if problem:  # an operator new workers need is a health problem, any other one a warning
                    (problems if name in NEEDED_OPERATORS else warnings).append(problem % (name, said))
    pool = pool_state(objects.get("worker_pool"))
    if pool and pool["degraded"]:
        problems.append(f"MachineConfigPool worker is Degraded: {pool['message']}")
    # A worker that has never been Ready since it registered is joining (a run interrupted during the approval):
    # the join step finishes it; it says nothing about the cluster's health.
    joining = sorted(node["name"] for node in nodes if _joining(node))
    problems += [f"Node {n['name']} is not Ready" for n in nodes if not n["ready"] and n["name"] not in joining]
    problems += [f"health unknown: cannot read {key}" for key in HEALTH_READS if key in unreadable]
    return {
        "healthy": not problems,
        "problems": problems,
        "joining": joining,
        "cluster_operators": operators,
        "worker_pool": pool,
    }


def pool_state(pool: Any) -> Json | None:
    """The worker MachineConfigPool: its conditions and counts, its rendered configs (``configuration``: what its
    nodes run, ``target``: what they are to run) and ``served``, what the machine-config server gives a new node:
    ``target`` once a node has it, else ``configuration`` (openshift/machine-config-operator
    pkg/server/cluster_server.go@db84d8368ef78e50f3bc0961dcf2b27a7975e053 ``GetConfig``, the same in 4.17:
    @3bdd678e83da52e0754b393b82435eea968af3ed). ``message``: why it is degraded, else why it is updating."""
    if not pool:
        return None
    state = {key.lower(): condition_true(pool, key) for key in ("Updated", "Updating", "Degraded")}
    for key, field in (("machine", "machineCount"), ("ready", "readyMachineCount"), ("updated", "updatedMachineCount")):
        state[key + "_machine_count"] = dig(pool, "status", field, default=0)
    said = [condition(pool, kind).get("message") for kind in ("NodeDegraded", "RenderDegraded", "Degraded", "Updating")]
    target, current = dig(pool, "spec", "configuration", "name"), dig(pool, "status", "configuration", "name")
    served = target if state["updated_machine_count"] else current
    paused, message = bool(dig(pool, "spec", "paused")), next(filter(None, said), "")
    return dict(state, paused=paused, configuration=current, target=target, served=served, message=message)


def updates(facts: Json) -> tuple[list[str], list[str]]:
    """The updates under way, each with its fix, as ``(refused unless day2_allow_upgrading, warned)``: an upgrade in
    progress (the facts' ``progressing``: ClusterVersion Progressing=True or history[0] Partial, what ``oc adm
    upgrade`` calls "already upgrading") and a paused worker pool with a rendered config pending are refused; a pool
    paused with nothing pending, or updating, is a warning."""
    version, pool, refused, warned = facts.get("version"), facts["health"]["worker_pool"] or {}, [], []
    if facts.get("progressing"):
        refused.append(
            f"an upgrade to {version} is in progress (ClusterVersion {facts['progressing']}): node-joiner would build "
            f"the new workers from {version} (status.history[0], not Completed) into a cluster still partly older, "
            "and the machine-config operator would drain and reboot them again as it rolls out. Fix: wait until `oc "
            f'adm upgrade` says "Cluster version is {version}" and run again, or {ALLOW} during the upgrade'
        )
    served, target, paused = pool.get("served"), pool.get("target"), pool.get("paused")
    later = f", then {target} when the pool is {'unpaused' if paused else 'done'} (one more reboot)"
    later = later if served != target else ""
    if paused and target != pool.get("configuration"):
        refused.append(
            f"MachineConfigPool worker is paused with rendered config {target} pending: new workers would get "
            f"{served}{later}. Fix: unpause it (oc patch machineconfigpool worker --type merge -p "
            f'\'{{"spec":{{"paused":false}}}}\'), wait until it is Updated and run again, or {ALLOW} on {served}'
        )
    elif paused or pool.get("updating"):
        doing = "paused" if paused else f"updating ({pool['message']})"
        warned.append(f"MachineConfigPool worker is {doing}: new workers get {served}{later}")
    return refused, warned


def _joining(node: dict[str, Any]) -> bool:
    return bool(node.get("joining")) and not (node.get("ready") or node.get("master") or is_control_plane(node))
