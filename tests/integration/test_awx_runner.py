"""add_workers.yml the way AWX and Automation Controller run it: through ansible-runner, with a private data
directory (inventory, ``env/envvars`` holding what the built-in "OpenShift or Kubernetes API Bearer Token"
credential injects, ``env/extravars``), no TTY, and every line of output a job event.

The per-host progress lines must be job events while the join task runs, not only at its end, and no secret may
reach an event or any other artifact of the job.
"""

import datetime
import json
import re
import subprocess
from pathlib import Path

import yaml
from conftest import REPO, VENV_BIN, ansible_env, lab_env
from test_add_workers import console_boots_when_media_are_ready
from test_secrets import markers, run_secrets, scan_text

JOIN_TASK = "Follow every install and join every host (progress is printed as it happens)"
PROGRESS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (extra-worker-\d): ")


def created(event):
    return datetime.datetime.fromisoformat(event["created"].replace("Z", "+00:00"))


def private_data_dir(lab, root, workdir):
    """The directory AWX writes for a job: inventory, credentials as environment variables, extra vars."""
    inventory = yaml.safe_load(Path(lab.inventory).read_text())
    inventory["all"]["children"]["new_workers"].pop("vars", None)  # no kubeconfig: the credential logs in
    (root / "inventory").mkdir(parents=True)
    (root / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (root / "env").mkdir()
    (root / "project").mkdir()
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig).read_text())
    envvars = {
        "K8S_AUTH_HOST": lab.info["api_url"],
        "K8S_AUTH_API_KEY": kubeconfig["users"][0]["user"]["token"],
        "K8S_AUTH_VERIFY_SSL": "True",
        "K8S_AUTH_SSL_CA_CERT": str(lab.state / "ca.crt"),
    }
    # What the execution environment holds in AWX: the collection installed, and the lab's ports.
    env = ansible_env(**lab_env(lab))
    for key in ("PATH", "ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_PYTHON_INTERPRETER"):
        envvars[key] = env[key]
    for key in (
        "OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK",
        "OPENSHIFT_AGENT_DAY2_AGENT_PORT",
        "OPENSHIFT_AGENT_DAY2_KUBELET_PORT",
    ):
        envvars[key] = env[key]
    (root / "env" / "envvars").write_text(yaml.safe_dump(envvars))
    (root / "env" / "extravars").write_text(yaml.safe_dump({"day2_workdir": str(workdir), "day2_wait_sleep": 1}))
    return envvars


def test_add_workers_through_ansible_runner_as_awx_runs_it(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--install-seconds", "15", "--agent-port", "0", "--kubelet-port", "0")
    root, workdir = tmp_path / "job", tmp_path / "work"
    envvars = private_data_dir(lab, root, workdir)
    hosts = [h["name"] for h in lab.info["hosts"]]
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    environment = {key: value for key, value in ansible_env().items() if not key.startswith("ANSIBLE_")}
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-runner"), "run", str(root), "-p", "openshift_agent.day2.add_workers", "--ident", "1"],
        capture_output=True,
        text=True,
        timeout=1200,
        env=environment,
        cwd=str(REPO),
        check=False,
    )
    console.join(timeout=5)
    artifacts = root / "artifacts" / "1"
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert (artifacts / "rc").read_text().strip() == "0", (artifacts / "stdout").read_text()[-6000:]
    events = sorted(
        (json.loads(path.read_text()) for path in (artifacts / "job_events").glob("*.json")),
        key=lambda event: event["counter"],
    )
    start = next(e for e in events if e["event"] == "playbook_on_task_start" and e["event_data"]["task"] == JOIN_TASK)
    end = next(
        e
        for e in events
        if e["event"] == "runner_on_ok" and e["event_data"].get("task_uuid") == start["event_data"]["task_uuid"]
    )
    progress = [e for e in events if start["counter"] < e["counter"] < end["counter"] and PROGRESS.search(e["stdout"])]
    assert {PROGRESS.search(e["stdout"]).group(1) for e in progress} == set(hosts), [e["stdout"] for e in progress]
    # Emitted as they happened: the first progress event is many seconds older than the task's end (installs take
    # 15 s), so AWX shows them live, not in one batch at the end.
    assert (created(end) - created(progress[0])).total_seconds() >= 5, (progress[0]["created"], end["created"])
    recap = next(e for e in events if e["event"] == "playbook_on_stats")
    assert recap["event_data"]["failures"] == {} and recap["event_data"]["ok"], recap["event_data"]
    # No secret in any event, in stdout, or in any other artifact of the job. One exception is runner's own:
    # artifacts/<ident>/command records the job's environment (the credential's token with it) in a 0600 file, for
    # every job whatever the playbook does (ansible_runner/runner.py); the rest of that file is scanned too.
    secrets = run_secrets(lab, "no BMC in this run")
    secrets["credential token"] = envvars["K8S_AUTH_API_KEY"]
    marks = markers(secrets)
    found = []
    for path in sorted(artifacts.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if path == artifacts / "command":
                assert path.stat().st_mode & 0o777 == 0o600
                data = json.dumps(dict(json.loads(data), env=None)).encode()
            found += scan_text(str(path.relative_to(root)), data, marks)
    assert found == [], found
    nodes = {o["metadata"]["name"]: o for o in lab.dump()["objects"] if o["kind"] == "Node"}
    for name in hosts:
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
