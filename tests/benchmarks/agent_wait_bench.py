"""Scale benchmark of agent_wait: N hosts installing at once cost no more wall time than one.

For each N it starts a lab with N hosts and ``--install-seconds`` (default 60), builds one add-nodes ISO with
the lab's node-joiner, boots every host with it, and runs ``openshift_agent.day2.agent_wait until=rebooted``
through ``ansible localhost -m``. It prints, per N: wall time from the boot to the end of the module,
controller CPU seconds (user + system of the ansible process tree, from getrusage of children),
requests per host (the module's count, and the lab's count of agent requests), and whether the wall time
meets the acceptance bound ``install + 2 x wait_sleep``.

    .venv/bin/python tests/benchmarks/agent_wait_bench.py            # N = 1, 10, 50
    .venv/bin/python tests/benchmarks/agent_wait_bench.py --hosts 50 --install-seconds 60 --wait-sleep 5
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABCTL = os.path.join(REPO, "tests", "lab", "labctl")
BIN = os.path.join(REPO, ".venv", "bin")


def labctl(*args):
    return subprocess.run([LABCTL, *args], check=True, capture_output=True, text=True).stdout


def control(lab, method, path, body=None):
    request = urllib.request.Request(
        lab["control_url"] + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def ansible_env():
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_PYTHON_INTERPRETER=os.path.join(BIN, "python"),
    )
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_one(count, install_seconds, wait_sleep, workdir):
    state = os.path.join(workdir, "lab-%d" % count)
    lab = json.loads(
        labctl(
            "start",
            "--state",
            state,
            "--hosts",
            str(count),
            "--agent-port",
            "0",
            "--kubelet-port",
            "0",
            "--install-seconds",
            str(install_seconds),
        )
    )
    try:
        iso = os.path.join(workdir, "node-%d.iso" % count)
        labctl("build-iso", "--state", state, "--out", iso)
        hosts = [{"name": h["name"], "address": h["ip"], "mac_address": h["mac_address"]} for h in lab["hosts"]]
        args = {
            "kubeconfig": os.path.join(state, "kubeconfig"),
            "hosts": hosts,
            "agent_port": lab["agent_port"],
            "kubelet_port": lab["kubelet_port"],
            "wait_sleep": wait_sleep,
            "wait_timeout": int(install_seconds * 3),
        }
        cpu_before = children_cpu()
        started = time.monotonic()
        control(lab, "POST", "/hosts/boot", {"iso": iso, "hosts": [h["name"] for h in hosts]})
        proc = subprocess.run(
            [
                os.path.join(BIN, "ansible"),
                "localhost",
                "-m",
                "openshift_agent.day2.agent_wait",
                "-a",
                json.dumps(args),
            ],
            capture_output=True,
            text=True,
            env=ansible_env(),
            cwd=REPO,
            check=False,
        )
        wall = time.monotonic() - started
        cpu = children_cpu() - cpu_before
        document = json.loads(proc.stdout[proc.stdout.find("{") :])
        result = document["plays"][0]["tasks"][0]["hosts"]["localhost"]
        if result.get("failed"):
            raise SystemExit("agent_wait failed for N=%d: %s" % (count, result.get("msg")))
        agent_requests = [h["requests"] for h in control(lab, "GET", "/hosts")]
    finally:
        labctl("stop", "--state", state)
    bound = install_seconds + 2 * wait_sleep
    return {
        "hosts": count,
        "wall_s": round(wall, 1),
        "module_duration_s": result["duration"],
        "controller_cpu_s": round(cpu, 2),
        "polls": result["polls"],
        "requests_per_host": round(result["requests"] / float(count), 1),
        "agent_requests_per_host_max": max(agent_requests),
        "bound_s": bound,
        "within_bound": wall <= bound,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, action="append", help="N (repeatable; default 1, 10 and 50)")
    parser.add_argument("--install-seconds", type=float, default=60.0)
    parser.add_argument("--wait-sleep", type=int, default=5)
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="agent-wait-bench-") as workdir:
        for count in options.hosts or [1, 10, 50]:
            row = run_one(count, options.install_seconds, options.wait_sleep, workdir)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n%6s %8s %10s %8s %6s %14s %12s" % ("hosts", "wall s", "cpu s", "bound s", "polls", "req/host", "within"))
    for row in rows:
        print(
            "%6d %8.1f %10.2f %8.0f %6d %14.1f %12s"
            % (
                row["hosts"],
                row["wall_s"],
                row["controller_cpu_s"],
                row["bound_s"],
                row["polls"],
                row["requests_per_host"],
                row["within_bound"],
            )
        )
    return 0 if all(row["within_bound"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
