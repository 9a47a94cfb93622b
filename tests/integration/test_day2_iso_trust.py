"""What the image step trusts: a work directory prepared by another user is refused before anything is written, and
an ISO is reused only while the cluster still holds the token it carries.

The tests run as root (make test): the hostile directory is given to uid 65534 with os.chown.
"""

import os
import subprocess
import threading
import time

import pytest
from conftest import LABCTL, REPO, lab_env, run_playbook
from test_add_workers import PLAYBOOK, assert_ready_nodes, playbook_args
from test_day2_iso import cluster_writes, day2_iso

OTHER = 65534  # nobody
SECRET = "Secret openshift-config/agent-auth-token"


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("--hosts", "2", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")


def hostile(tmp_path):
    """A work directory of another user, world-writable, whose ISO and sidecar are symlinks to a file of theirs."""
    victim = tmp_path / "their-file"
    victim.write_text("theirs\n")
    work = tmp_path / "work"
    work.mkdir()
    for name in ("node.x86_64.iso", "node.x86_64.iso.json"):
        (work / name).symlink_to(victim)
        os.lchown(work / name, OTHER, OTHER)
    os.chown(work, OTHER, OTHER)
    os.chmod(work, 0o777)
    return work, victim


def assert_untouched(work, victim):
    assert victim.read_text() == "theirs\n" and oct(os.stat(work).st_mode & 0o777) == "0o777"
    assert os.stat(work).st_uid == OTHER
    assert sorted(os.listdir(work)) == ["node.x86_64.iso", "node.x86_64.iso.json"]
    assert all(os.path.islink(work / name) for name in os.listdir(work))


def test_day2_iso_refuses_a_hostile_work_directory_before_any_write(lab, tmp_path):
    work, victim = hostile(tmp_path)
    lab.reset_log()
    result = day2_iso(lab, work)
    assert result["failed"] and cluster_writes(lab) == []
    message = result["msg"]
    assert f'parameters: field "dest" value "{work}" is owned by user nobody (uid {OTHER}), not by root' in message
    assert "can be written by others (mode 0777)" in message and f"chmod 0700 {work}" in message
    for name in ("node.x86_64.iso", "node.x86_64.iso.json"):
        assert f"holds {work / name}, a symbolic link (to {victim})" in message and f"rm {work / name}" in message
    assert message.endswith("Nothing was written.") and len(result["problems"]) == 4
    assert_untouched(work, victim)


def test_preflight_refuses_it_before_the_image_step_and_before_it_creates_the_directory(lab, tmp_path):
    work, victim = hostile(tmp_path)
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, work), env=lab_env(lab))
    assert rc != 0 and f'play: field "day2_workdir" value "{work}" is owned by user nobody' in output, output[-3000:]
    assert "Check the cluster, every new worker's variables and the settings" in output
    assert "Create the work directory" not in output and "Build the ISO" not in output
    assert lab.writes() == []
    assert_untouched(work, victim)


def console_boots_the_rebuilt_iso(lab, workdir, hosts, built_before):
    """A person at the console who boots the hosts once the ISO was rebuilt (a new sidecar renamed into place)."""
    sidecar = workdir / "node.x86_64.iso.json"

    def boot():
        deadline = time.monotonic() + 600
        while os.stat(sidecar).st_ino == built_before and time.monotonic() < deadline:
            time.sleep(0.2)
        command = [str(LABCTL), "boot", "--state", str(lab.state), "--iso", str(workdir / "node.x86_64.iso"), *hosts]
        subprocess.run(command, capture_output=True, timeout=60, check=False)

    thread = threading.Thread(target=boot, daemon=True)
    thread.start()
    return thread


def delete_the_token_secret(lab):
    code = (
        "import kubernetes.config as c, kubernetes.client as k; c.load_kube_config(%r); "
        "k.CoreV1Api().delete_namespaced_secret('agent-auth-token', 'openshift-config')"
    ) % lab.kubeconfig
    subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c", code], check=True)


def test_a_token_secret_deleted_between_two_runs_rebuilds_the_iso_and_the_hosts_join(lab, tmp_path):
    """A "regenerate the tokens" step between the image step and the rest: the ISO carries a token the cluster no
    longer has, so the next run builds a new one (and says why) and the hosts booted from it join."""
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir, "--tags", "image"), env=lab_env(lab))
    assert rc == 0 and "(built: " in output, output[-3000:]
    first = os.stat(workdir / "node.x86_64.iso.json").st_ino
    delete_the_token_secret(lab)
    console = console_boots_the_rebuilt_iso(lab, workdir, hosts, first)
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    reported = " ".join(output.split())  # the report task's message, as the YAML callback wraps it
    assert f"(built: {SECRET} is gone (deleted since {workdir / 'node.x86_64.iso'} was built)" in reported, reported
    assert os.stat(workdir / "node.x86_64.iso.json").st_ino != first
    assert_ready_nodes(lab, hosts)


def test_hosts_booted_from_the_iso_before_the_tokens_were_regenerated_are_named_with_what_to_do(lab_factory, tmp_path):
    """The hosts booted the first ISO, then the token Secret was deleted: the run builds a new ISO, and its join step
    says that the hosts run an ISO of another key, which token the run sent and that they must be booted again."""
    lab = lab_factory("--hosts", "1", "--install-seconds", "600", "--agent-port", "0", "--kubelet-port", "0")
    host = lab.info["hosts"][0]["name"]
    workdir = tmp_path / "work"
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir, "--tags", "image"), env=lab_env(lab))
    assert rc == 0, output[-3000:]
    old = tmp_path / "old.iso"
    os.link(workdir / "node.x86_64.iso", old)
    subprocess.run([str(LABCTL), "boot", "--state", str(lab.state), "--iso", str(old), host], check=True, timeout=60)
    delete_the_token_secret(lab)
    extra = ("-e", "day2_boot_timeout=30", "-e", "day2_follow_from=controller")
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir, *extra), env=lab_env(lab))
    assert rc != 0, output[-6000:]
    reported = " ".join(output.split())
    assert f"{SECRET} is gone" in reported  # the image step built a new ISO, and said why
    assert "refused the token" in reported and "sha256 " in reported
    assert f"an ISO built before {SECRET} was deleted or replaced" in reported
    assert "Boot the host again from the ISO this run built or reused" in reported
