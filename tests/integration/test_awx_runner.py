"""add_workers.yml the way AWX and Automation Controller run a job, with the collection installed from the release
tarball (tests/integration/conftest.py ``installed``) as an execution environment holds it.

AWX (ansible/awx awx/main/tasks/jobs.py@01096141cdd36680b980661e6ae083f7c23bf2fa ``BaseTask.run``) writes a private
data directory (the inventory, ``env/extravars``, ``env/settings``), injects the credentials into the job's
environment (the built-in "OpenShift or Kubernetes API Bearer Token" sets ``K8S_AUTH_HOST``, ``K8S_AUTH_API_KEY``,
``K8S_AUTH_VERIFY_SSL`` and ``K8S_AUTH_SSL_CA_CERT``) and hands ansible-runner ``envvars`` and
``suppress_env_files: True`` as parameters, so that runner writes no ``env/envvars`` file. The job then runs in three
parts (awx/main/tasks/receptor.py@062c49c6d7e62410137c78d79fe495fae6c53579 ``AWXReceptorJob``): ``transmit``
streams the directory and the parameters, ``ansible-runner worker --private-data-dir=DIR --delete`` runs the
playbook on the execution node with no TTY, and ``process`` turns the worker's stream into job events on the
control node. Receptor only carries the stream; here a file and a pipe do.

The per-host progress lines must be job events while the join task runs, not only at its end. No secret may reach a
job event, the job's command line, any file AWX or runner leaves in the private data directory, or any artifact, with
one exception that is runner's and not the collection's: ``artifacts/<ident>/command`` records the environment the job
was given (ansible/ansible-runner src/ansible_runner/runner.py@2097e81c113588daf17eb402dfefd09e79179b27
``Runner.run`` writes ``{"command", "cwd", "env"}`` for every job, whatever ``suppress_env_files`` says: that option
only keeps ``dump_artifacts`` from writing ``env/``), so its ``env`` holds the credential's token as AWX injected it.
The test checks that this is all it holds of a secret; AWX removes the directory when the job ends.
"""

import datetime
import json
import os
import re
import subprocess
import threading
from pathlib import Path

import ansible_runner
import yaml
from conftest import VENV_BIN, lab_env
from test_add_workers import console_boots_when_media_are_ready
from test_secrets import markers, run_secrets, scan_text

JOIN_TASK = "Follow every install and join every host (progress is printed as it happens)"
PLAYBOOK = "openshift_agent.day2.add_workers"
PROGRESS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (extra-worker-\d): ")
CREDENTIAL = ("K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_VERIFY_SSL", "K8S_AUTH_SSL_CA_CERT")


def created(event):
    return datetime.datetime.fromisoformat(event["created"].replace("Z", "+00:00"))


def private_file(path, text):
    """A file as AWX writes one into the private data directory (``write_private_data_file``: mode 0600)."""
    path.touch(mode=0o600)
    path.write_text(text)


def awx_job(user, lab, private, workdir):
    """The private data directory AWX writes for a job, and the parameters it hands ansible-runner."""
    for sub in ("inventory", "env", "project"):
        (private / sub).mkdir(parents=True, mode=0o700)
    inventory = yaml.safe_load(Path(lab.inventory).read_text())
    inventory["all"]["children"]["new_workers"].pop("vars", None)  # no kubeconfig: the credential logs in
    private_file(private / "inventory" / "hosts.yml", yaml.safe_dump(inventory))
    private_file(private / "env" / "extravars", yaml.safe_dump({"day2_workdir": str(workdir), "day2_wait_sleep": 1}))
    # AWX's runner settings (AWX_RUNNER_SUPPRESS_OUTPUT_FILE defaults to true: the job's output is its events).
    private_file(
        private / "env" / "settings", json.dumps({"suppress_ansible_output": True, "suppress_output_file": True})
    )
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig).read_text())
    token = kubeconfig["users"][0]["user"]["token"]
    envvars = dict(zip(CREDENTIAL, (lab.info["api_url"], token, "True", str(lab.state / "ca.crt"))))
    # What the execution environment holds: the collection installed from the tarball and its dependencies, the
    # Python with the collection's requirements, and (the lab only) the loopback switch and the lab's ports.
    envvars.update(
        ANSIBLE_COLLECTIONS_PATH=user.env()["ANSIBLE_COLLECTIONS_PATH"],
        ANSIBLE_PYTHON_INTERPRETER=str(VENV_BIN / "python"),
        OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK="1",
        **lab_env(lab),
    )
    params = {
        "ident": 1,
        "private_data_dir": str(private),
        "playbook": PLAYBOOK,
        "inventory": str(private / "inventory" / "hosts.yml"),
        "suppress_env_files": True,
        "envvars": envvars,
    }
    return params, token


def run_as_awx(params, root, timeout=1200):
    """transmit | ansible-runner worker --delete | process, as AWXReceptorJob chains them.

    Returns the processor's result, the worker's directory, and the events and statuses AWX's handlers receive."""
    stream = root / "transmit"
    with open(stream, "wb") as out:
        ansible_runner.interface.run(streamer="transmit", _output=out, **params)
    worker_dir = root / "worker"
    # The execution node's own environment: nothing of ansible's or of the credential (the job's envvars carry them).
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "K8S_AUTH_", "OPENSHIFT_"))}
    environment["PATH"] = "%s:%s" % (VENV_BIN, environment.get("PATH", ""))
    events, statuses = [], []
    with open(stream, "rb") as source:
        worker = subprocess.Popen(
            [str(VENV_BIN / "ansible-runner"), "worker", "--private-data-dir", str(worker_dir), "--delete"],
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            cwd=str(root),
        )
        watchdog = threading.Timer(timeout, worker.kill)
        watchdog.start()
        try:
            result = ansible_runner.interface.run(
                streamer="process",
                quiet=True,
                _input=worker.stdout,
                event_handler=lambda event: events.append(event) or True,
                status_handler=lambda status, runner_config: statuses.append(status),
                **params,
            )
            worker.wait(timeout=60)
        finally:
            watchdog.cancel()
    return result, worker_dir, events, statuses


def test_add_workers_as_awx_runs_it_from_the_tarball_with_no_secret_left(installed, lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--install-seconds", "15", "--agent-port", "0", "--kubelet-port", "0")
    private, workdir = tmp_path / "awx", tmp_path / "work"
    params, token = awx_job(installed, lab, private, workdir)
    hosts = [h["name"] for h in lab.info["hosts"]]
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    result, worker_dir, events, statuses = run_as_awx(params, tmp_path)
    console.join(timeout=5)
    artifacts = private / "artifacts" / "1"
    job_output = "".join(e.get("stdout", "") for e in sorted(events, key=lambda e: e["counter"]))
    # The processor knows the status; the rc is the worker's, streamed back with the artifacts.
    assert result.status == "successful" and (artifacts / "rc").read_text() == "0", job_output[-6000:]
    assert [s["status"] for s in statuses][-1] == "successful"
    assert not worker_dir.exists()  # --delete: the execution node keeps nothing of the job
    assert not (private / "env" / "envvars").exists()  # suppress_env_files: runner wrote no env/ file

    # The run used the installed tarball: its roles and playbooks are where ansible-galaxy put them.
    assert any(str(installed.path) in json.dumps(e.get("event_data", {})) for e in events), "not the installed tarball"

    written = sorted(
        (json.loads(path.read_text()) for path in (artifacts / "job_events").glob("*.json")),
        key=lambda event: event["counter"],
    )
    assert [e["uuid"] for e in written] == [e["uuid"] for e in sorted(events, key=lambda e: e["counter"])]
    start = next(e for e in written if e["event"] == "playbook_on_task_start" and e["event_data"]["task"] == JOIN_TASK)
    end = next(
        e
        for e in written
        if e["event"] == "runner_on_ok" and e["event_data"].get("task_uuid") == start["event_data"]["task_uuid"]
    )
    progress = [e for e in written if start["counter"] < e["counter"] < end["counter"] and PROGRESS.search(e["stdout"])]
    assert {PROGRESS.search(e["stdout"]).group(1) for e in progress} == set(hosts), [e["stdout"] for e in progress]
    # Emitted as they happened: the first progress event is many seconds older than the task's end (installs take
    # 15 s), so AWX shows them live, not in one batch at the end.
    assert (created(end) - created(progress[0])).total_seconds() >= 5, (progress[0]["created"], end["created"])
    recap = next(e for e in written if e["event"] == "playbook_on_stats")
    assert recap["event_data"]["failures"] == {} and recap["event_data"]["ok"], recap["event_data"]

    secrets = run_secrets(lab, "no BMC in this run")
    secrets["credential token"] = token
    marks = markers(secrets)
    # Every job event as AWX receives it, and the job's command line (AWX's job_args).
    found = [f for e in events for f in scan_text("event %s" % e.get("counter"), json.dumps(e).encode(), marks)]
    starting = next(s for s in statuses if s["status"] == "starting")
    found += scan_text("command line", json.dumps(starting["command"]).encode(), marks)
    # Every file left in the private data directory (artifacts/ included). Runner's record of the job's environment,
    # the env of artifacts/1/command, holds the credential's token as AWX injected it, and nothing else secret.
    command = json.loads((artifacts / "command").read_text())
    environment = command.pop("env")
    assert {k for k, v in environment.items() if scan_text(k, v.encode(), marks)} == {"K8S_AUTH_API_KEY"}, environment
    assert environment["K8S_AUTH_API_KEY"] == token and (artifacts / "command").stat().st_mode & 0o777 == 0o600
    for path in sorted(private.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = json.dumps(command).encode() if path == artifacts / "command" else path.read_bytes()
            found += scan_text(str(path.relative_to(private)), data, marks)
    assert found == [], found
    nodes = {o["metadata"]["name"]: o for o in lab.dump()["objects"] if o["kind"] == "Node"}
    for name in hosts:
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
