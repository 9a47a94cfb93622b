"""A cluster being updated, against the lab's variants ``upgrading`` and ``paused`` (docs/lab.md): day1_facts names
the state from the objects as the cluster-version and machine-config operators write them, and
playbooks/add_workers.yml refuses it before any write, naming the state and the fix; with day2_allow_upgrading the
run goes on to Ready nodes and the plan warns."""

import pytest
from conftest import REPO, lab_env, run_module, run_playbook
from lab.seeds import find, load_seed
from test_add_workers import console_boots_when_iso_is_ready, playbook_args

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
ALLOW = "set day2_allow_upgrading=true to add them"
CASES = {
    "upgrading": (
        "Cluster lab is being updated: an upgrade to 4.21.1 is in progress (ClusterVersion Progressing=True: "
        "Working towards 4.21.1: 762 of 955 done (79% complete), waiting on machine-config)",
        'Fix: wait until `oc adm upgrade` says "Cluster version is 4.21.1" and run again, or %s during the '
        "upgrade" % ALLOW,
    ),
    "paused": (
        "Cluster lab is being updated: MachineConfigPool worker is paused with rendered config "
        "rendered-worker-c41d8e07b2f95a3d6e18b7c0a9f2d463 pending: new workers would get "
        "rendered-worker-87eba76e7f3164534045ba922e7770fb, then rendered-worker-c41d8e07b2f95a3d6e18b7c0a9f2d463 "
        "when the pool is unpaused (one more reboot)",
        'Fix: unpause it (oc patch machineconfigpool worker --type merge -p \'{"spec":{"paused":false}}\'), wait '
        "until it is Updated and run again, or %s on rendered-worker-87eba76e7f3164534045ba922e7770fb" % ALLOW,
    ),
}


@pytest.fixture(scope="module")
def labs(lab_factory):
    cache = {}

    def get(variant):
        if variant not in cache:
            args = ("--hosts", "1", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")
            cache[variant] = lab_factory("--variant", variant, *args)
        return cache[variant]

    return get


@pytest.mark.parametrize("variant", sorted(CASES))
def test_day1_facts_name_the_state_from_the_seeded_objects(labs, variant):
    lab = labs(variant)
    seed = load_seed(variant)
    result, output = run_module("openshift_agent.day2.day1_facts", {"kubeconfig": lab.kubeconfig})
    assert not result.get("failed"), output
    facts = result["ansible_facts"]["day1_cluster"]
    version = find(seed, "ClusterVersion", "version")
    progressing = next(c for c in version["status"]["conditions"] if c["type"] == "Progressing")
    assert facts["progressing"] == ("Progressing=True: %s" % progressing["message"] if variant == "upgrading" else None)
    pool = find(seed, "MachineConfigPool", "worker")
    state = facts["health"]["worker_pool"]
    assert (state["target"], state["configuration"]) == (
        pool["spec"]["configuration"]["name"],
        pool["status"]["configuration"]["name"],
    )
    assert state["paused"] is pool["spec"]["paused"] and state["updated_machine_count"] == 0
    assert state["served"] == pool["status"]["configuration"]["name"]  # no node has the target yet
    assert facts["health"]["healthy"] is True, facts["health"]["problems"]
    refused, fix = CASES[variant]
    (reason,) = facts["unsafe_reasons"]
    assert refused.split(": ", 1)[1] in reason and reason.endswith(fix)
    assert reason in facts["warnings"] and "day1_facts: %s" % reason in result["warnings"]
    allowed, _output = run_module(
        "openshift_agent.day2.day1_facts", {"kubeconfig": lab.kubeconfig, "allow_upgrading": True}
    )
    assert allowed["ansible_facts"]["day1_cluster"]["unsafe_reasons"] == []
    assert reason in allowed["ansible_facts"]["day1_cluster"]["warnings"]


@pytest.mark.parametrize("variant", sorted(CASES))
def test_add_workers_refuses_before_any_write_and_goes_on_when_allowed(labs, variant, tmp_path):
    lab = labs(variant)
    workdir = tmp_path / "work"
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
    assert rc != 0, output[-4000:]
    refused, fix = CASES[variant]
    flat = " ".join(output.split())  # Ansible wraps long messages
    assert refused in flat and fix in flat, output[-4000:]
    assert lab.writes() == [], "written before the refusal: %s" % lab.writes()
    assert not workdir.exists()

    hosts = [h["name"] for h in lab.info["hosts"]]
    console = console_boots_when_iso_is_ready(lab, workdir, hosts)
    rc, output = run_playbook(
        PLAYBOOK, *playbook_args(lab, workdir, "-e", "day2_allow_upgrading=true"), env=lab_env(lab)
    )
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    flat = " ".join(output.split())
    assert "Cluster warnings: " + refused.split(": ", 1)[1] in flat, output[-6000:]
    nodes = {o["metadata"]["name"]: o for o in lab.dump()["objects"] if o["kind"] == "Node"}
    for name in hosts:
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
