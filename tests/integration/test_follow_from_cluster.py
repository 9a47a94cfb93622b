"""add_workers.yml when this controller cannot reach the new hosts: the installs are followed from inside the cluster
(node-joiner monitor-add-nodes in a pod, read through the API server), with the same approval gate."""

import os
import signal
import subprocess
import time

import pytest
from conftest import VENV_BIN, ansible_env, lab_env, run_playbook
from test_add_workers import PLAYBOOK, assert_ready_nodes, console_boots_when_media_are_ready, playbook_args

CLUSTER_NODES = {"127.0.111.10", "127.0.111.11", "127.0.111.12"}
FIREWALLED = ("--firewalled-hosts", "--monitor-interval", "1", "--agent-port", "0", "--kubelet-port", "0")


def leftovers(lab):
    """Every object of a node-joiner or monitor run still in the cluster."""
    kinds = ("Namespace", "ClusterRole", "ClusterRoleBinding", "Pod")
    return [
        f"{o['kind']}/{o['metadata']['name']}"
        for o in lab.dump()["objects"]
        if o["kind"] in kinds and o["metadata"].get("name", "").startswith(("openshift-node-joiner-", "node-joiner"))
    ]


def connections(lab):
    return lab.dump()["host_connections"]


@pytest.mark.parametrize("variant", ["default", "v418", "v417"])
def test_firewalled_hosts_join_followed_from_inside_the_cluster(lab_factory, tmp_path, variant):
    lab = lab_factory("--variant", variant, "--hosts", "3", "--install-seconds", "12", *FIREWALLED)
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir, log = tmp_path / "work", tmp_path / "ansible.log"
    # The person at the console boots the hosts when the run tells them to, so the join step sees every install.
    console = console_boots_when_media_are_ready(lab, workdir, hosts, told=log)
    env = dict(lab_env(lab), ANSIBLE_LOG_PATH=str(log))
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=env)
    (tmp_path / "output.txt").write_text(output)
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    assert_ready_nodes(lab, hosts)
    assert "Boot each of these hosts" in output  # the boot step's look from the cluster heard nothing yet
    assert "else from inside the cluster (node-joiner monitor-add-nodes in openshift-node-joiner-" in output
    for name in hosts:  # the same live progress: the agent's stages, then the kubelet, then the approvals
        assert f"{name}: installing; agent: installing-in-progress at Writing image to disk" in output, name
        assert f"{name}: approved its client certificate request" in output
        assert f"{name}: approved its serving certificate request" in output
        assert f"summary {name}: joined (" in output
    assert output.count("; followed from the cluster") >= len(hosts)
    seen = connections(lab)
    admitted = [c for c in seen if c["admitted"]]
    assert {c["source"] for c in admitted} <= CLUSTER_NODES and {c["port"] for c in admitted} == {"agent", "kubelet"}
    assert all(c["source"] not in CLUSTER_NODES for c in seen if not c["admitted"])  # the controller's tries
    assert leftovers(lab) == []


def test_follow_from_cluster_never_connects_from_the_controller(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--install-seconds", "6", "--monitor-interval", "1", "--agent-port", "0")
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    extra = ("-e", "day2_follow_from=cluster")
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir, *extra), env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    assert_ready_nodes(lab, hosts)
    seen = connections(lab)
    assert seen and {c["source"] for c in seen} <= CLUSTER_NODES, seen
    assert leftovers(lab) == []


def test_a_run_killed_while_following_from_the_cluster_leaves_nothing_after_a_rerun(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--install-seconds", "20", *FIREWALLED)
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    command = [str(VENV_BIN / "ansible-playbook"), str(PLAYBOOK), *playbook_args(lab, workdir)]
    log = tmp_path / "first.log"
    with log.open("w") as out:
        first = subprocess.Popen(
            command, env=ansible_env(**lab_env(lab)), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 300
    while "at Writing image to disk" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "at Writing image to disk" in log.read_text(), log.read_text()[-4000:]
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    console.join(timeout=5)

    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
    (tmp_path / "output.txt").write_text(output)
    assert rc == 0, output[-6000:]
    assert "Boot each of these hosts" not in output  # they were installing: nobody is told to boot them again
    # where each stands, as the cluster's monitor told the boot step's look: installing, or past its reboot
    assert all(f"{name} is installing already" in output or f"{name} is rebooted already" in output for name in hosts)
    assert_ready_nodes(lab, hosts)
    deadline = time.monotonic() + 60  # the killed run's loop notices it is orphaned within a round and cleans up
    while leftovers(lab) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(lab) == []
