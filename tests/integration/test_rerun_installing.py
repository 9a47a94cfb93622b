"""A run interrupted while the hosts write their disks ("Writing image to disk"), then run again: nobody is told to
boot the installing hosts again, and through Redfish no installing host is booted again (the BMCs' calls show it);
the second run follows the installs to Ready Nodes."""

import contextlib
import os
import signal
import subprocess

from conftest import REPO, VENV_BIN, ansible_env, lab_env, run_playbook
from lab.waiting import wait_until
from test_add_workers import PLAYBOOK, console_boots_when_media_are_ready, playbook_args
from test_boot_redfish import redfish_args
from test_dhcp_and_nodes_config import ready_nodes
from test_join_resilience import host_stage
from test_leftovers import tree

HOSTS = ("extra-worker-0", "extra-worker-1")
WRITING = "Writing image to disk"
INSTALLING = {"Starting installation", "Installing", WRITING}
START = ("--hosts", "2", "--install-seconds", "60", "--agent-port", "0", "--kubelet-port", "0")


def interrupt_while_writing(lab, args, log):
    """Run the playbook until a host writes its disk (the other one installing too), then kill its whole process
    tree."""
    with open(log, "wb") as output:
        proc = subprocess.Popen(
            [str(VENV_BIN / "ansible-playbook"), str(PLAYBOOK), *args],
            cwd=str(REPO),
            env=ansible_env(PYTHONUNBUFFERED="1", **lab_env(lab)),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def moment():
            stages = [host_stage(lab, name) for name in HOSTS]
            return WRITING in stages and set(stages) <= INSTALLING

        wait_until("a host writing its disk, the other installing", moment, timeout=300, interval=0.1)
    finally:
        for pid in tree(proc.pid):  # (ansible's workers start sessions of their own)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)


def assert_followed_not_booted(output, lab):
    said = " ".join(output.split())
    assert "Boot each of these hosts" not in said, said[-4000:]
    for name in HOSTS:
        assert "%s is installing already (agent: installing" % name in said, said[-4000:]
    assert "not booted again, its install is followed" in said
    assert ready_nodes(lab) >= set(HOSTS), said[-4000:]


def test_a_rerun_while_the_disks_are_written_tells_nobody_to_boot_them(lab_factory, tmp_path):
    lab = lab_factory(*START)
    workdir = tmp_path / "work"
    # A person at the console boots the hosts when the first run says so.
    console_boots_when_media_are_ready(lab, workdir, list(HOSTS), told=tmp_path / "first.log")
    interrupt_while_writing(lab, playbook_args(lab, workdir), tmp_path / "first.log")
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab), timeout=600)
    assert rc == 0, output[-6000:]
    assert_followed_not_booted(output, lab)


def test_a_rerun_through_redfish_does_not_boot_an_installing_host_again(lab_factory, tmp_path):
    lab = lab_factory("--redfish", *START)
    workdir = tmp_path / "work"
    interrupt_while_writing(lab, redfish_args(lab, workdir), tmp_path / "first.log")
    emulator = lab.state / "redfish" / "emulator.log"
    calls = ("VirtualMedia.InsertMedia", "ComputerSystem.Reset")
    before = {call: emulator.read_text().count(call) for call in calls}
    assert before["VirtualMedia.InsertMedia"] >= len(HOSTS), before  # the first run booted both
    rc, output = run_playbook(PLAYBOOK, *redfish_args(lab, workdir), env=lab_env(lab), timeout=600)
    assert rc == 0, output[-6000:]
    assert_followed_not_booted(output, lab)
    assert {call: emulator.read_text().count(call) for call in calls} == before  # no insert, no power action
