# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster states that make adding workers unsafe (refused unless allow_upgrading) or risky (warned): an
upgrade in progress, the worker MachineConfigPool paused, updating or degraded, the ClusterOperators new workers
need. The objects are written as the cluster-version and machine-config operators write them."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import build_facts
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import NEEDED_OPERATORS
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.facts_fixtures import (
    condition,
    objects,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_workers_check import CLUSTER, good

OLD, NEW = "rendered-worker-0ld", "rendered-worker-n3w"
WORKING = "Working towards 4.18.3: 762 of 955 done (79% complete), waiting on machine-config"


def upgrading(progressing="True", state="Partial"):
    """ClusterVersion during an upgrade to 4.18.3 from 4.17.20 (pkg/cvo/status.go: history[0] the target)."""
    version = objects()["clusterversion"]
    version["status"]["history"] = [
        {"version": "4.18.3", "state": state, "image": "quay.io/release@sha256:1"},
        {"version": "4.17.20", "state": "Completed", "image": "quay.io/release@sha256:0"},
    ]
    version["status"]["conditions"] = [
        condition("Available", "True", "Done applying 4.17.20"),
        condition("Progressing", progressing, WORKING if progressing == "True" else "Cluster version is 4.18.3"),
    ]
    return version


def pool(paused=False, target=NEW, current=OLD, machines=2, updated=0, *conditions):
    """MachineConfigPool worker as calculateStatus writes it (pkg/controller/node/status.go)."""
    updating = (
        condition("Updating", "False", f"Pool is paused; will not update to MachineConfig {target}")
        if paused and target != current
        else condition("Updating", "True", f"All nodes are updating to MachineConfig {target}")
        if target != current
        else condition("Updating", "False")
    )
    return {
        "spec": {"paused": paused, "configuration": {"name": target}},
        "status": {
            "configuration": {"name": current},
            "machineCount": machines,
            "updatedMachineCount": updated,
            "readyMachineCount": updated,
            "conditions": [condition("Updated", "True" if target == current else "False"), updating, *conditions],
        },
    }


def operator(name, available="True", degraded="False", message=""):
    conditions = [condition("Available", available, message), condition("Degraded", degraded, message)]
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


def test_a_steady_cluster_has_no_state_to_name():
    facts = build_facts(objects(worker_pool=pool(target=OLD)))
    assert facts["progressing"] is None and facts["unsafe_reasons"] == [] and facts["warnings"] == []
    assert facts["health"]["worker_pool"]["served"] == OLD


def test_an_upgrade_in_progress_is_refused_with_its_fix_unless_allowed():
    facts = build_facts(objects(clusterversion=upgrading()))
    assert facts["progressing"] == f"Progressing=True: {WORKING}"
    (reason,) = facts["unsafe_reasons"]
    assert reason.startswith(f"an upgrade to 4.18.3 is in progress (ClusterVersion Progressing=True: {WORKING}): ")
    assert 'wait until `oc adm upgrade` says "Cluster version is 4.18.3"' in reason
    assert reason.endswith("or set day2_allow_upgrading=true to add them during the upgrade")
    assert reason in facts["warnings"] and facts["health"]["healthy"] is True
    allowed = build_facts(objects(clusterversion=upgrading()), allow_upgrading=True)
    assert allowed["unsafe_reasons"] == [] and reason in allowed["warnings"]


def test_a_partial_history_is_an_upgrade_even_without_progressing():
    facts = build_facts(objects(clusterversion=upgrading(progressing="False")))
    assert facts["progressing"] == "status.history[0] 4.18.3 is Partial"
    assert facts["unsafe_reasons"][0].startswith("an upgrade to 4.18.3 is in progress (ClusterVersion status.history")
    done = build_facts(objects(clusterversion=upgrading(progressing="False", state="Completed")))
    assert done["progressing"] is None and done["unsafe_reasons"] == []


def test_a_paused_pool_with_a_rendered_config_pending_is_refused_unless_allowed():
    facts = build_facts(objects(worker_pool=pool(paused=True)))
    (reason,) = facts["unsafe_reasons"]
    assert reason.startswith(f"MachineConfigPool worker is paused with rendered config {NEW} pending: ")
    # the machine-config server serves status.configuration while no node has spec.configuration (GetConfig)
    assert f"new workers would get {OLD}, then {NEW} when the pool is unpaused (one more reboot)" in reason
    assert """oc patch machineconfigpool worker --type merge -p '{"spec":{"paused":false}}'""" in reason
    assert reason.endswith(f"or set day2_allow_upgrading=true to add them on {OLD}")
    state = facts["health"]["worker_pool"]
    assert {key: state[key] for key in ("paused", "configuration", "target", "served", "updated_machine_count")} == {
        "paused": True,
        "configuration": OLD,
        "target": NEW,
        "served": OLD,
        "updated_machine_count": 0,
    }
    assert state["message"] == f"Pool is paused; will not update to MachineConfig {NEW}"
    assert build_facts(objects(worker_pool=pool(paused=True)), allow_upgrading=True)["unsafe_reasons"] == []


def test_a_pool_paused_after_a_node_updated_gives_new_workers_the_pending_config():
    (reason,) = build_facts(objects(worker_pool=pool(True, NEW, OLD, 2, 1)))["unsafe_reasons"]
    assert f"new workers would get {NEW}. Fix:" in reason


def test_a_pool_paused_with_nothing_pending_is_a_warning():
    facts = build_facts(objects(worker_pool=pool(paused=True, target=OLD)))
    assert facts["unsafe_reasons"] == [] and facts["health"]["healthy"] is True
    assert facts["warnings"] == [f"MachineConfigPool worker is paused: new workers get {OLD}"]


@pytest.mark.parametrize(
    "updated, gets",
    [(0, f"new workers get {OLD}, then {NEW} when the pool is done (one more reboot)"), (1, f"new workers get {NEW}")],
)
def test_an_updating_pool_is_a_warning_saying_what_new_workers_get(updated, gets):
    facts = build_facts(objects(worker_pool=pool(False, NEW, OLD, 2, updated)))
    assert facts["unsafe_reasons"] == [] and facts["health"]["healthy"] is True
    assert facts["warnings"] == [
        f"MachineConfigPool worker is updating (All nodes are updating to MachineConfig {NEW}): {gets}"
    ]


def test_an_upgrade_with_the_pool_updating_is_refused_and_warned():
    facts = build_facts(objects(clusterversion=upgrading(), worker_pool=pool()))
    assert len(facts["unsafe_reasons"]) == 1 and len(facts["warnings"]) == 2


@pytest.mark.parametrize(
    "conditions, says",
    [
        (
            [
                condition("NodeDegraded", "True", 'Node w0 is reporting: "unexpected on-disk state"'),
                condition("Degraded", "True", 'Node w0 is reporting: "unexpected on-disk state"'),
            ],
            'MachineConfigPool worker is Degraded: Node w0 is reporting: "unexpected on-disk state"',
        ),
        (
            [condition("RenderDegraded", "True", "Failed to render configuration"), condition("Degraded", "True")],
            "MachineConfigPool worker is Degraded: Failed to render configuration",
        ),
    ],
)
def test_a_degraded_pool_is_a_health_problem_naming_why(conditions, says):
    facts = build_facts(objects(worker_pool=pool(False, OLD, OLD, 2, 2, *conditions)))
    assert facts["health"]["problems"] == [says] and facts["unsafe_reasons"] == []


def test_only_the_operators_new_workers_need_are_health_problems():
    assert set(NEEDED_OPERATORS) == {
        "dns",
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "machine-config",
        "network",
    }
    items = [
        operator("machine-config", degraded="True", message="Unable to apply 4.18.3"),
        operator("network", available="False", message="DaemonSet ovnkube-node is not available"),
        operator("insights", degraded="True", message="Unable to report"),
        operator("console", available="Unknown"),
    ]
    facts = build_facts(objects(clusteroperators={"items": items}))
    assert facts["health"]["problems"] == [
        "ClusterOperator machine-config is Degraded: Unable to apply 4.18.3",
        "ClusterOperator network is not Available: DaemonSet ovnkube-node is not available",
    ]
    assert facts["warnings"] == [
        "ClusterOperator insights is Degraded: Unable to report",
        "ClusterOperator console is not Available: ",
    ]
    assert [o["name"] for o in facts["health"]["cluster_operators"]["degraded"]] == ["machine-config", "insights"]


def test_the_check_step_refuses_a_cluster_being_updated_before_its_health():
    facts = build_facts(objects(clusterversion=upgrading(), worker_pool=pool(paused=True)))
    unhealthy = {"healthy": False, "problems": ["Node m is not Ready"]}
    with pytest.raises(Day2Error) as caught:
        check_workers([good()], dict(CLUSTER, name="lab", unsafe_reasons=facts["unsafe_reasons"], health=unhealthy))
    message = caught.value.message
    assert message.startswith("Cluster lab is being updated: an upgrade to 4.18.3 is in progress")
    assert "; MachineConfigPool worker is paused with rendered config" in message and "not Ready" not in message
    allowed = build_facts(objects(clusterversion=upgrading(), worker_pool=pool(paused=True)), allow_upgrading=True)
    plan = check_workers(
        [good()], dict(CLUSTER, unsafe_reasons=allowed["unsafe_reasons"], warnings=allowed["warnings"])
    )
    warned = plan["summary"][-1]
    assert warned.startswith("Cluster warnings: an upgrade to 4.18.3 is in progress") and "paused with" in warned
