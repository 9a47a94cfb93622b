"""Nothing left behind: day2_iso stopped (SIGTERM) or killed (SIGKILL) as a whole process tree during the build
and during the transfer, a clean-up the API server refuses, and the run after each of them.

SIGTERM: the module deletes its namespace and ClusterRole/ClusterRoleBinding and its partial file before it
exits. SIGKILL: nothing can run, so the next run finds the objects by their labels (the dead process named in the
namespace) and the `.part` file by its name, and removes them before it builds.
"""

import contextlib
import json
import os
import signal
import subprocess
import time

import pytest
import yaml
from conftest import VENV_BIN, ansible_env
from test_day2_iso import ISO_SIZE, day2_iso, lab_hosts, leftovers

PLAY_TIMEOUT = 120


@pytest.fixture(scope="module")
def lab(lab_factory):
    return lab_factory("--hosts", "2", "--iso-size", str(ISO_SIZE))


def partial_files(dest):
    return sorted(name for name in os.listdir(dest) if name.endswith(".part"))


def objects_of_runs(lab):
    """Every object of a node-joiner run still in the lab (pods and config maps too), Kind/namespace/name."""
    return sorted(
        "%s/%s/%s" % (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in lab.dump()["objects"]
        if (o["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "openshift_agent.day2"
        and o["kind"] not in ("Event",)
    )


def start_playbook(lab, dest, tmp_path):
    """ansible-playbook running day2_iso, in a session of its own (its process group is the whole tree)."""
    args = {
        "kubeconfig": lab.kubeconfig,
        "hosts": lab_hosts(lab),
        "dest": str(dest),
        "wait_sleep": 1,
        "pod_start_timeout": 20,
        "build_timeout": 60,
    }
    playbook = tmp_path / "build.yml"
    playbook.write_text(
        yaml.safe_dump(
            [{"hosts": "localhost", "gather_facts": False, "tasks": [{"openshift_agent.day2.day2_iso": args}]}]
        )
    )
    return subprocess.Popen(
        [str(VENV_BIN / "ansible-playbook"), str(playbook)],
        env=ansible_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(what, condition, timeout=PLAY_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("timed out waiting for %s" % what)


def processes():
    """{pid: (parent pid, command line)} of every process."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except (OSError, ValueError, IndexError):
                continue
            found[int(entry)] = (parent, command)
    return found


def tree(root):
    """{pid: command} of ``root`` and all its descendants (ansible's workers start sessions of their own)."""
    table = processes()
    pids, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _command) in table.items() if ppid == parent and pid not in pids]
        pids.update(children)
        frontier += children
    return {pid: table[pid][1] for pid in pids if pid in table}


def kill_tree(proc, signum):
    """Send ``signum`` to every process of the playbook's tree at once; wait until all of them are gone."""
    members = tree(proc.pid)
    assert any("AnsiballZ_day2_iso" in command for command in members.values()), members
    for pid in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    proc.wait(timeout=PLAY_TIMEOUT)

    def gone():
        return not any(os.path.exists("/proc/%d" % pid) and not _zombie(pid) for pid in members)

    wait_for("the module process to end", gone)
    return proc.stdout.read().decode("utf-8", "replace")


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def building(lab):
    return any(
        o["kind"] == "Pod" and o["metadata"]["name"] == "node-joiner" and o.get("status", {}).get("phase") == "Running"
        for o in lab.dump()["objects"]
    )


def hang_build(lab):
    lab.control("POST", "/faults", {"nodejoiner": "timeout"})


def slow_transfer(lab):
    lab.control("POST", "/faults", {"exec_bytes_per_second": str(ISO_SIZE // 8)})  # about 8 s for the ISO


def rerun_removes(lab, dest, left):
    """The next run removes what was left and builds; nothing stays."""
    lab.control("DELETE", "/faults")
    result = day2_iso(lab, dest)
    assert not result.get("failed"), result.get("msg")
    assert sorted(result["leftovers_removed"]) == sorted(left)
    assert leftovers(lab) == [] and objects_of_runs(lab) == [] and partial_files(dest) == []
    assert os.path.exists(os.path.join(dest, "node.x86_64.iso"))
    return result


def test_sigterm_during_the_build_cleans_up_before_exiting(clean, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    hang_build(clean)
    proc = start_playbook(clean, dest, tmp_path)
    wait_for("node-joiner to run", lambda: building(clean))
    assert leftovers(clean) != []
    kill_tree(proc, signal.SIGTERM)
    assert leftovers(clean) == [] and objects_of_runs(clean) == []
    assert os.listdir(dest) == []


def test_sigkill_during_the_build_is_cleaned_up_by_the_next_run(clean, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    hang_build(clean)
    proc = start_playbook(clean, dest, tmp_path)
    wait_for("node-joiner to run", lambda: building(clean))
    kill_tree(proc, signal.SIGKILL)
    left = leftovers(clean)
    kinds = sorted(name.split("/")[0] for name in left)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Namespace"], left
    rerun_removes(clean, dest, left)


def test_sigterm_during_the_transfer_removes_the_partial_file(clean, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    slow_transfer(clean)
    proc = start_playbook(clean, dest, tmp_path)
    wait_for("the transfer to start", lambda: partial_files(dest))
    kill_tree(proc, signal.SIGTERM)
    assert os.listdir(dest) == [] and leftovers(clean) == [] and objects_of_runs(clean) == []


def test_sigkill_during_the_transfer_next_run_removes_the_partial_file(clean, tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    slow_transfer(clean)
    proc = start_playbook(clean, dest, tmp_path)
    part = wait_for("the transfer to start", lambda: partial_files(dest))
    kill_tree(proc, signal.SIGKILL)
    assert partial_files(dest) == part
    left = leftovers(clean)
    result = rerun_removes(clean, dest, left)
    assert result["partial_files_removed"] == [str(dest / part[0])]


def test_a_refused_namespace_delete_fails_naming_it_and_the_next_run_removes_it(clean, tmp_path):
    clean.control("POST", "/faults", {"deny": "all:delete:namespaces"})
    result = day2_iso(clean, tmp_path)
    assert result.get("failed"), result
    namespace = result["namespace"]
    assert "Namespace/%s" % namespace in result["msg"] and "clean-up of its node-joiner run failed" in result["msg"]
    assert "oc delete namespace %s" % namespace in result["msg"]
    assert result["left"] == ["Namespace/%s" % namespace]
    assert os.path.exists(tmp_path / "node.x86_64.iso")  # the artifact itself is fine

    # the next run cannot remove it either: a failure naming it, nothing built
    result = day2_iso(clean, tmp_path, live_kernel_arguments=["quiet"])
    assert result.get("failed") and result["leftovers"] == ["Namespace/%s" % namespace], json.dumps(result)
    assert "cannot remove what earlier node-joiner runs left" in result["msg"] and namespace in result["msg"]

    clean.control("DELETE", "/faults")
    result = day2_iso(clean, tmp_path)
    assert not result.get("failed"), result.get("msg")
    assert result["leftovers_removed"] == ["Namespace/%s" % namespace] and leftovers(clean) == []
