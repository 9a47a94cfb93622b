"""The engine of the resilience matrix: one Row is one case; ``play_case`` runs it and asserts what every case owes.

A case starts its own lab, has a person at the console boot the hosts as soon as the ISO is complete, sets its
faults, runs playbooks/add_workers.yml (in the background when something must happen during the run: a fault
switched on at some moment, a rogue CSR filed, the whole process tree stopped), checks the row's documented
outcome, and then what every case must leave: nothing of node-joiner in the cluster, no ``.part`` file in the
work directory, no hostile CSR approved, no CSR approved twice, the hosts Ready where the outcome is completion.
Every wait is bounded and every subprocess has a timeout.
"""

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field

from conftest import REPO, VENV_BIN, ansible_env, lab_env, labctl
from lab.waiting import wait_until
from test_add_workers import console_boots_when_media_are_ready, playbook_args
from test_day2_iso import MARKER, leftovers
from test_join_resilience import approved, assert_no_duplicates_and_only_genuine, host_stage, ready
from test_leftovers import objects_of_runs, tree

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
RUN_TIMEOUT = 240  # one playbook run, at most
TRIGGER_TIMEOUT = 120  # waiting for the moment of a fault, a spoof or an interrupt

# Short waits everywhere: the lab installs in seconds.
FAST = {
    "day2_settle_seconds": 2,
    "day2_validation_grace": 4,
    "day2_boot_timeout": 60,
    "day2_install_timeout": 150,
    "day2_join_timeout": 90,
    "day2_pod_start_timeout": 30,
    "day2_build_timeout": 60,
}


@dataclass(frozen=True)
class Row:
    """One case of the matrix.

    ``outcome`` is the documented outcome (docs/resilience.md); ``names`` the texts the failure must contain
    (empty: the run completes). ``before`` acts on the lab before the run, ``during`` (a list of (trigger, action))
    while it runs; ``interrupt`` is (phase trigger, signal) and means: stop the whole process tree at that moment,
    then run again, which must complete. ``rerun`` runs again after a failure with the faults cleared (it must
    complete). ``boot`` is how many hosts the console boots (default all); ``ready`` the hosts that must be Ready
    after a failure.
    """

    case: str
    outcome: str
    names: tuple = ()
    hosts: int = 1
    install_seconds: int = 4
    lab_args: tuple = ()
    before: tuple = ()  # callables lab -> None
    during: tuple = ()  # (trigger(lab, workdir) -> truthy, action(lab) -> None)
    interrupt: tuple = ()  # (trigger, signal number)
    extra: dict = field(default_factory=dict)
    boot: int = -1
    rerun: bool = False
    ready: tuple = ()
    shows: tuple = ()  # texts the output must show (the fault took effect)
    hides: tuple = ()  # texts it must not show
    spent: tuple = ()  # faults that clear themselves once they struck: gone at the end
    answered: tuple = ()  # one of these request-log statuses must be there (the API fault struck)


# ----- lab actions and triggers ---------------------------------------------------------------------


def fault(**values):
    """An action switching faults on (values as labctl takes them)."""

    def switch(lab):
        labctl("fault", "--state", str(lab.state), *("%s=%s" % item for item in values.items()))

    return switch


def clear_faults(lab):
    labctl("fault", "--state", str(lab.state), "--clear")


def rogue(kind, host="extra-worker-0"):
    """Files rogue CSRs of ``kind`` naming ``host`` (labctl rogue-csr; the control API when time matters)."""

    def file(lab):
        lab.control("POST", "/rogue-csr", {"kind": kind, "host": host})

    return file


def rogue_cli(kind, host="extra-worker-0"):
    def file(lab):
        labctl("rogue-csr", "--state", str(lab.state), kind, host)

    return file


def at_stage(*stages, host="extra-worker-0"):
    return lambda lab, _workdir: host_stage(lab, host) in stages


def rebooting(host="extra-worker-0"):
    """The agent reported "Rebooting" and the host has not come back from disk yet (its kubelet is not up)."""

    def moment(lab, _workdir):
        record = next((h for h in lab.control("GET", "/hosts") if h["name"] == host), {})
        if record.get("phase") == "rebooted" or record.get("kubelet"):
            raise AssertionError("%s rebooted before the spoof could be filed at Rebooting" % host)
        return record.get("stage") in ("Rebooting", "Done")

    return moment


INSTALLING = at_stage("Installing", "Writing image to disk")


def media_ready(_lab, workdir):
    return (workdir / "node.x86_64.iso.json").exists()


def building(lab, _workdir):
    return any(
        o["kind"] == "Pod" and o["metadata"]["name"] == "node-joiner" and o.get("status", {}).get("phase") == "Running"
        for o in lab.dump()["objects"]
    )


def partial_files(workdir):
    return sorted(str(path) for path in workdir.rglob("*.part")) if workdir.exists() else []


def transferring(_lab, workdir):
    return partial_files(workdir)


def kubelet_filed(host="extra-worker-0", approved_only=False):
    def filed(lab, _workdir):
        csrs = (lab.control("GET", "/kubelets").get(host) or {}).get("csrs", [])
        return [c for c in csrs if c["signer"].endswith("-client-kubelet") and (c["approved"] or not approved_only)]

    return filed


def any_approval(lab, _workdir):
    return bool(lab.dump()["approvals"])


# ----- running ---------------------------------------------------------------------------------------


def extra_vars(row):
    args = []
    for key, value in dict(FAST, **row.extra).items():
        args += ["-e", "%s=%s" % (key, value)]
    return args


def spawn(lab, workdir, row, log):
    """ansible-playbook in a session of its own (so that the whole tree can be stopped), output to ``log``."""
    command = [str(VENV_BIN / "ansible-playbook"), str(PLAYBOOK), *playbook_args(lab, workdir), *extra_vars(row)]
    with open(log, "ab") as handle:
        return subprocess.Popen(
            command,
            env=ansible_env(**lab_env(lab)),
            cwd=str(REPO),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def finish(proc, log):
    try:
        rc = proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        stop_tree(proc, signal.SIGKILL)
        raise AssertionError("the playbook did not end within %d s:\n%s" % (RUN_TIMEOUT, log.read_text()[-4000:]))
    return rc, log.read_text()


def stop_tree(proc, signum):
    """``signum`` to ansible-playbook's process group and to every descendant (workers start sessions of their
    own), all at once; returns once every one of them is gone."""
    members = tree(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signum)
    for pid in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    proc.wait(timeout=60)
    wait_until("the playbook's processes to end", lambda: not any(_alive(pid) for pid in members), timeout=60)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def act_during(lab, workdir, during, errors):
    """Each (trigger, action) in turn, in a thread; an exception is kept for the test to raise."""

    def work():
        try:
            for trigger, action in during:
                wait_until(
                    "the moment of %s" % getattr(action, "__name__", action),
                    lambda trigger=trigger: trigger(lab, workdir),
                    timeout=TRIGGER_TIMEOUT,
                    interval=0.1,
                )
                action(lab)
        except Exception as error:  # handed to the test
            errors.append(error)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def run_once(lab, workdir, row, log, during=()):
    errors = []
    helper = act_during(lab, workdir, during, errors) if during else None
    rc, output = finish(spawn(lab, workdir, row, log), log)
    if helper:
        helper.join(timeout=30)
    if errors:
        raise errors[0]
    return rc, output


def play_case(start_lab, tmp_path, row):
    """Run one row; return (rc, output of the last run, lab)."""
    lab = start_lab(
        "--hosts",
        str(row.hosts),
        "--install-seconds",
        str(row.install_seconds),
        "--agent-port",
        "0",
        "--kubelet-port",
        "0",
        *row.lab_args,
    )
    names = [h["name"] for h in lab.info["hosts"]]
    booted = names if row.boot < 0 else names[: row.boot]
    workdir = tmp_path / "work"
    console_boots_when_media_are_ready(lab, workdir, booted, timeout=2 * RUN_TIMEOUT)
    for action in row.before:
        action(lab)

    if row.interrupt:
        trigger, signum = row.interrupt
        proc = spawn(lab, workdir, row, tmp_path / "interrupted.log")
        try:
            wait_until("the moment to interrupt", lambda: trigger(lab, workdir), timeout=TRIGGER_TIMEOUT, interval=0.1)
        finally:
            stop_tree(proc, signum)
        if signum == signal.SIGTERM and trigger in (building, transferring):
            # SIGTERM during a build or a transfer cleans up before the module exits.
            assert_nothing_left(lab, workdir)
        elif trigger is building:  # SIGKILL: nothing can clean up; the re-run must
            assert leftovers(lab), "SIGKILL during the build left nothing: the interrupt came too late"
        elif trigger is transferring:
            assert partial_files(workdir), "SIGKILL during the transfer left no .part file: it came too late"
        clear_faults(lab)

    rc, output = run_once(lab, workdir, row, tmp_path / "run.log", row.during)
    if row.rerun:
        assert rc != 0, output[-4000:]
        assert_names(output, row.names)
        clear_faults(lab)
        rc, output = run_once(lab, workdir, row, tmp_path / "rerun.log")

    completes = not row.names or row.rerun
    if completes:
        assert rc == 0, output[-6000:]
    else:
        assert rc != 0, output[-4000:]
        assert_names(output, row.names)
    assert MARKER not in output, "the pull secret leaked into the output"
    assert_names(output, row.shows)
    shown = [text for text in row.hides if text in output]
    assert not shown, "the output shows %s" % shown

    assert_nothing_left(lab, workdir)
    dump = lab.dump()
    assert not set(row.spent) & set(dump["faults"]), "faults that never struck: %s" % dump["faults"]
    if row.answered:
        statuses = {str(request["status"]) for request in dump["requests"]}
        assert statuses & set(row.answered), "the API fault never struck: %s" % sorted(statuses)
    assert_no_duplicates_and_only_genuine(dump, names)
    hostile = {entry["name"] for entry in dump["rogue_csrs"] if entry["kind"] != "replay-client"}
    assert not hostile & set(approved(dump)), "hostile CSRs approved: %s" % sorted(hostile & set(approved(dump)))
    must_be_ready = booted if completes else list(row.ready)
    not_ready = [name for name in must_be_ready if not ready(dump, name)]
    assert not not_ready, "not Ready: %s" % not_ready
    return rc, output, lab


def assert_names(output, names):
    missing = [text for text in names if text not in output]
    assert not missing, "the failure does not name %s:\n%s" % (missing, output[-4000:])


def assert_nothing_left(lab, workdir):
    assert leftovers(lab) == [], leftovers(lab)
    assert objects_of_runs(lab) == [], objects_of_runs(lab)
    assert partial_files(workdir) == [], partial_files(workdir)
