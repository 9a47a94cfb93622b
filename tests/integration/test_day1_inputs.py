"""Day-1 inputs on day 2, against the lab: the example day-1 agent-config.yaml used as it is (its workers join),
mixed with an inventory host; the cluster meant checked; labels and taints on the Nodes when the run ends, and a
re-run that changes nothing, then converges a changed label. The refusals are rows of bad_inputs.yml."""

import json
import re

import yaml
from conftest import REPO, lab_env, run_playbook
from test_add_workers import console_boots_when_media_are_ready, playbook_args

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
EXAMPLE = "playbooks/agent-config.example.yaml"  # relative, as a user gives it: from the current directory
INFRA = "node-role.kubernetes.io/infra"
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def nodes_of(lab):
    return {o["metadata"]["name"]: o for o in lab.dump()["objects"] if o["kind"] == "Node"}


def changed(output):
    found = re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", output)
    assert found, output[-3000:]
    return int(found.group(1))


def test_the_example_agent_config_mixed_with_the_inventory_labels_and_taints(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "3", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")
    names = [host["name"] for host in lab.info["hosts"]]
    example = {host["hostname"] for host in yaml.safe_load((REPO / EXAMPLE).read_text())["hosts"]}
    assert example == {"extra-worker-0", "extra-worker-1"}
    # extra-worker-2 comes from the inventory, with its own labels and taints
    third = {k: v for k, v in lab.info["hosts"][2].items() if k != "name"}
    third.update(node_labels={INFRA: None}, node_taints=["dedicated=infra:NoSchedule"])
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "vars": {"kubeconfig": lab.kubeconfig},
                    "children": {"new_workers": {"hosts": {"extra-worker-2": third}}},
                }
            }
        )
    )
    workdir = tmp_path / "work"
    args = playbook_args(lab, workdir)
    args[args.index(lab.inventory)] = str(inventory)
    meant = {
        "day2_agent_config": EXAMPLE,
        "day2_cluster_name": "lab",
        "day2_base_domain": "day2.example.test",
        "day2_openshift_version": "4.21",
        "day2_node_labels": {"example.com/rack": "r1"},
    }
    console = console_boots_when_media_are_ready(lab, workdir, names)
    rc, output = run_playbook(PLAYBOOK, *args, "-e", json.dumps(meant), env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    plan = " ".join(output.split())  # (the callback may wrap long lines)
    assert "Of them from the day-1 agent-config %s: extra-worker-0, extra-worker-1" % EXAMPLE in plan, output[-6000:]

    nodes = nodes_of(lab)
    for name in names:
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
        assert nodes[name]["metadata"]["labels"]["example.com/rack"] == "r1", name
        assert nodes[name]["metadata"]["labels"]["node-role.kubernetes.io/worker"] == ""  # the kubelet's kept
    assert nodes["extra-worker-2"]["metadata"]["labels"][INFRA] == ""
    assert INFRA not in nodes["extra-worker-0"]["metadata"]["labels"]
    assert nodes["extra-worker-2"]["spec"]["taints"] == [TAINT]
    assert not nodes["extra-worker-0"]["spec"].get("taints")

    # Again: every host joined, every mark is there: nothing changes.
    rc, output = run_playbook(PLAYBOOK, *args, "-e", json.dumps(meant), env=lab_env(lab))
    assert rc == 0, output[-4000:]
    assert "Already joined: extra-worker-0, extra-worker-1, extra-worker-2" in output
    assert changed(output) == 0, output[-4000:]
    again = nodes_of(lab)
    assert [again[n]["metadata"]["labels"] for n in names] == [nodes[n]["metadata"]["labels"] for n in names]
    assert again["extra-worker-2"]["spec"]["taints"] == [TAINT]

    # A changed label and taint converge on the Nodes that joined already.
    meant["day2_node_labels"] = {"example.com/rack": "r2"}
    meant["day2_node_taints"] = ["dedicated=infra:NoExecute"]
    rc, output = run_playbook(PLAYBOOK, *args, "-e", json.dumps(meant), env=lab_env(lab))
    assert rc == 0, output[-4000:]
    assert changed(output) == 1, output[-4000:]  # the one patch task
    converged = nodes_of(lab)
    assert {converged[n]["metadata"]["labels"]["example.com/rack"] for n in names} == {"r2"}
    assert converged["extra-worker-0"]["spec"]["taints"] == [dict(TAINT, effect="NoExecute")]
    assert converged["extra-worker-2"]["spec"]["taints"] == [TAINT]  # its own taint of that key goes over the play's
