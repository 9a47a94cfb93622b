"""The variants ``upgrading`` and ``paused``: ClusterVersion, ClusterOperator and MachineConfigPool as the
cluster-version and machine-config operators write them, consistent with the seeded Nodes.

Sources (docs/lab-fidelity.md): openshift/cluster-version-operator pkg/cvo/status.go@
d37e5a056d5a9c74c2ac2d5551ef39f573c9824a (``mergeOperatorHistory``, ``updateClusterVersionStatus``);
openshift/machine-config-operator pkg/controller/node/status.go@db84d8368ef78e50f3bc0961dcf2b27a7975e053
(``calculateStatus``: machine counts from the Nodes' machineconfiguration.openshift.io annotations, Updated and
Updating) and pkg/operator/status.go@db84d836 (``syncProgressingStatus``).
"""

from __future__ import annotations

import re

from lab import seeds

MCD = "machineconfiguration.openshift.io/"


def conditions(obj: dict) -> dict:
    return {c["type"]: c for c in obj["status"]["conditions"]}


def pool_counts(objects: list, pool: dict) -> dict:
    """machineCount, updatedMachineCount, readyMachineCount and unavailableMachineCount of ``pool`` worked out from
    its Nodes as calculateStatus does (pkg/controller/common/layered_node_state.go@db84d836): updated = current and
    desired config the pool's spec, state Done; ready = Ready and schedulable (``CheckNodeReady``); readyMachineCount
    counts the updated ready ones; unavailable = not ready, or not Done (``IsUnavailableForUpdate``)."""
    selector = pool["spec"]["nodeSelector"]["matchLabels"]
    nodes = [o for o in objects if o["kind"] == "Node" and selector.items() <= o["metadata"]["labels"].items()]
    target = pool["spec"]["configuration"]["name"]

    def updated(node):
        notes = node["metadata"]["annotations"]
        return notes[MCD + "currentConfig"] == notes[MCD + "desiredConfig"] == target and notes[MCD + "state"] == "Done"

    def ready(node):
        return conditions(node)["Ready"]["status"] == "True" and not node["spec"].get("unschedulable", False)

    def unavailable(node):
        notes = node["metadata"]["annotations"]
        done = notes[MCD + "currentConfig"] == notes[MCD + "desiredConfig"] and notes[MCD + "state"] == "Done"
        return not ready(node) or not done

    return {
        "machineCount": len(nodes),
        "updatedMachineCount": sum(map(updated, nodes)),
        "readyMachineCount": sum(1 for node in nodes if updated(node) and ready(node)),
        "unavailableMachineCount": sum(map(unavailable, nodes)),
    }


def test_upgrading_is_an_upgrade_the_cvo_is_waiting_on_machine_config_for():
    objects = seeds.load_seed("upgrading")
    version = seeds.find(objects, "ClusterVersion", "version")
    status = version["status"]
    first, previous = status["history"][0], status["history"][1]
    assert (first["state"], first["version"], first["completionTime"]) == ("Partial", "4.21.1", None)
    assert (first["image"], first["version"]) == (status["desired"]["image"], status["desired"]["version"])
    assert version["spec"]["desiredUpdate"]["image"] == first["image"]
    assert previous["state"] == "Completed" and previous["completionTime"] <= first["startedTime"]
    found = conditions(version)
    assert re.fullmatch(
        r"Working towards 4\.21\.1: (\d+) of (\d+) done \(\d+% complete\), waiting on machine-config",
        found["Progressing"]["message"],
    )
    assert (found["Progressing"]["status"], found["Progressing"]["reason"]) == ("True", "ClusterOperatorUpdating")
    assert found["Failing"]["status"] == "False"
    assert (found["Available"]["status"], found["Available"]["message"]) == ("True", "Done applying 4.20.4")
    operators = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterOperator"}
    machine_config = operators.pop("machine-config")
    assert conditions(machine_config)["Progressing"]["status"] == "True"
    assert conditions(machine_config)["Progressing"]["message"] == "Working towards 4.21.1"
    assert machine_config["status"]["versions"] == [{"name": "operator", "version": "4.20.4"}]
    for operator in operators.values():  # run levels below 80: done
        assert operator["status"]["versions"] == [{"name": "operator", "version": "4.21.1"}]
        assert conditions(operator)["Progressing"]["status"] == "False"
    # run level 90 (the installer-images manifest) is not applied yet: still 4.20.4's node-joiner image
    installer = seeds.find(objects, "ConfigMap", "installer-images", "openshift-config")
    assert installer == seeds.find(seeds.load_seed("v420"), "ConfigMap", "installer-images", "openshift-config")


def test_upgrading_pools_roll_out_the_new_rendered_configs_node_by_node():
    objects = seeds.load_seed("upgrading")
    for name in ("master", "worker"):
        pool = seeds.find(objects, "MachineConfigPool", name)
        spec, status = pool["spec"]["configuration"]["name"], pool["status"]["configuration"]["name"]
        assert spec != status and not pool["spec"]["paused"]
        found = conditions(pool)
        assert (found["Updated"]["status"], found["Updating"]["status"]) == ("False", "True")
        assert found["Updating"]["message"] == f"All nodes are updating to MachineConfig {spec}"
        assert all(found[kind]["status"] == "False" for kind in ("Degraded", "NodeDegraded", "RenderDegraded"))
        counts = pool_counts(objects, pool)
        assert {key: pool["status"][key] for key in counts} == counts
        assert counts["unavailableMachineCount"] > 0 and counts["updatedMachineCount"] < counts["machineCount"]


def test_paused_pool_has_a_rendered_config_pending_that_no_node_has():
    objects = seeds.load_seed("paused")
    pool = seeds.find(objects, "MachineConfigPool", "worker")
    spec, status = pool["spec"]["configuration"]["name"], pool["status"]["configuration"]["name"]
    assert pool["spec"]["paused"] is True and spec != status
    found = conditions(pool)
    assert (found["Updated"]["status"], found["Updating"]["status"]) == ("False", "False")
    assert found["Updating"]["message"] == f"Pool is paused; will not update to MachineConfig {spec}"
    counts = pool_counts(objects, pool)
    assert {key: pool["status"][key] for key in counts} == counts
    assert counts == {"machineCount": 2, "updatedMachineCount": 0, "readyMachineCount": 0, "unavailableMachineCount": 0}
    workers = [o for o in objects if "node-role.kubernetes.io/worker" in o["metadata"].get("labels", {})]
    assert {w["metadata"]["annotations"][MCD + "desiredConfig"] for w in workers} == {status}
    # nothing else is being updated: the ClusterVersion and the master pool are the default's
    default = seeds.load_seed("default")
    assert seeds.find(objects, "ClusterVersion", "version") == seeds.find(default, "ClusterVersion", "version")
    assert seeds.find(objects, "MachineConfigPool", "master") == seeds.find(default, "MachineConfigPool", "master")
