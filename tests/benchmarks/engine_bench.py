"""Scale benchmark of the install-and-join loop (csr_approve, agent_wait's engine) and of the whole playbook.

engine: for each N a lab with N hosts and ``--install-seconds`` (the baseline: what a host takes from boot to
reboot), one add-nodes ISO built with the lab's node-joiner, every host booted at once, then
``openshift_agent.day2.csr_approve`` through ``ansible localhost -m`` follows every install and approves every CSR
until every Node is Ready. Printed per N, beside the install time of the same run: the wall time from the boot to
the module's end, the controller's CPU seconds and peak RSS (the ansible process tree, getrusage of children),
the rounds of the loop and the requests per host per round (the lab's count of agent requests and of API requests).

playbook: ``playbooks/add_workers.yml`` end to end at N hosts (build, manual boot by a console thread once the ISO is
whole, follow, approve), its wall time beside the same install time.

    .venv/bin/python tests/benchmarks/engine_bench.py                        # engine N = 1, 50, 200; playbook N = 200
    .venv/bin/python tests/benchmarks/engine_bench.py --hosts 5 --playbook-hosts 5 --install-seconds 10   # quick
The goal: at N = 200 the wall time is at most the install time plus 60 s, and RSS does not grow with N beyond a
few MB. Exit status 1 when a run misses the time goal.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABCTL = os.path.join(REPO, "tests", "lab", "labctl")
BIN = os.path.join(REPO, ".venv", "bin")
GOAL_SLACK_SECONDS = 60


def labctl(*args):
    return subprocess.run([LABCTL, *args], check=True, capture_output=True, text=True).stdout


def control(lab, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(lab["control_url"].rstrip("/") + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=120) as response:
        text = response.read()
    return json.loads(text) if text else None


def environment(lab):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_PYTHON_INTERPRETER=os.path.join(BIN, "python"),
        OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK="1",
        OPENSHIFT_AGENT_DAY2_AGENT_PORT=str(lab["agent_port"]),
        OPENSHIFT_AGENT_DAY2_KUBELET_PORT=str(lab["kubelet_port"]),
    )
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    return env


def children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def start_lab(state, count, install_seconds):
    return json.loads(
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


def run_engine(count, install_seconds, wait_sleep, workdir):
    state = os.path.join(workdir, "engine-%d" % count)
    lab = start_lab(state, count, install_seconds)
    try:
        iso = os.path.join(workdir, "node-%d.iso" % count)
        labctl("build-iso", "--state", state, "--out", iso)
        hosts = [
            {"name": h["name"], "address": h["ip"], "addresses": [h["ip"]], "mac_address": h["mac_address"]}
            for h in lab["hosts"]
        ]
        args = {"kubeconfig": os.path.join(state, "kubeconfig"), "hosts": hosts, "wait_sleep": wait_sleep}
        control(lab, "POST", "/reset-log", {})
        cpu_before, _rss = children()
        started = time.monotonic()
        control(lab, "POST", "/hosts/boot", {"iso": iso, "hosts": [h["name"] for h in hosts]})
        env = dict(environment(lab), ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
        proc = subprocess.run(
            [
                os.path.join(BIN, "ansible"),
                "localhost",
                "-m",
                "openshift_agent.day2.csr_approve",
                "-a",
                json.dumps(args),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
        )
        wall = time.monotonic() - started
        cpu_after, rss = children()
        document = json.loads(proc.stdout[proc.stdout.find("{") :])
        result = document["plays"][0]["tasks"][0]["hosts"]["localhost"]
        if result.get("failed"):
            raise SystemExit("csr_approve failed for N=%d: %s" % (count, result.get("msg")))
        agent_requests = sum(h["requests"] for h in control(lab, "GET", "/hosts"))
        api_requests = len(control(lab, "GET", "/requests"))
    finally:
        labctl("stop", "--state", state)
    rounds = result["rounds"]
    return {
        "what": "engine",
        "hosts": count,
        "install_s": install_seconds,
        "wall_s": round(wall, 1),
        "over_install_s": round(wall - install_seconds, 1),
        "cpu_s": round(cpu_after - cpu_before, 2),
        "peak_rss_mib": round(rss, 1),
        "rounds": rounds,
        "agent_req_per_host_round": round(agent_requests / float(count * rounds), 2),
        "api_req_per_round": round(api_requests / float(rounds), 2),
        "joined": len(result["joined"]),
        "within_goal": wall <= install_seconds + GOAL_SLACK_SECONDS,
    }


def run_playbook(count, install_seconds, workdir):
    state = os.path.join(workdir, "playbook-%d" % count)
    lab = start_lab(state, count, install_seconds)
    try:
        work = os.path.join(workdir, "work-%d" % count)
        iso = os.path.join(work, "node.x86_64.iso")
        names = [h["name"] for h in lab["hosts"]]
        booted = {}

        def console():  # a person at the console: boots every host once the ISO is whole (its sidecar is written last)
            while not os.path.exists(iso + ".json"):
                time.sleep(0.2)
            booted["at"] = time.monotonic()
            labctl("boot", "--state", state, "--iso", iso, *names)

        thread = threading.Thread(target=console, daemon=True)
        cpu_before, _rss = children()
        started = time.monotonic()
        thread.start()
        proc = subprocess.run(
            [
                os.path.join(BIN, "ansible-playbook"),
                os.path.join(REPO, "playbooks", "add_workers.yml"),
                "-i",
                os.path.join(state, "inventory.yml"),
                "-e",
                "day2_workdir=%s" % work,
            ],
            capture_output=True,
            text=True,
            env=environment(lab),
            cwd=REPO,
            check=False,
        )
        ended = time.monotonic()
        cpu_after, rss = children()
        if proc.returncode != 0:
            raise SystemExit("add_workers.yml failed for N=%d:\n%s" % (count, proc.stdout[-4000:]))
    finally:
        labctl("stop", "--state", state)
    from_boot = ended - booted["at"]
    return {
        "what": "add_workers.yml",
        "hosts": count,
        "install_s": install_seconds,
        "wall_s": round(ended - started, 1),
        "from_boot_s": round(from_boot, 1),
        "over_install_s": round(from_boot - install_seconds, 1),
        "cpu_s": round(cpu_after - cpu_before, 2),
        "peak_rss_mib": round(rss, 1),
        "within_goal": from_boot <= install_seconds + GOAL_SLACK_SECONDS,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, action="append", help="engine N (repeatable; default 1, 50, 200)")
    parser.add_argument("--playbook-hosts", type=int, default=200, help="the playbook's N (0: skip)")
    parser.add_argument("--install-seconds", type=float, default=15.0)
    parser.add_argument("--wait-sleep", type=int, default=5)
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="engine-bench-") as workdir:
        for count in options.hosts or [1, 50, 200]:
            rows.append(run_engine(count, options.install_seconds, options.wait_sleep, workdir))
            print(json.dumps(rows[-1]), flush=True)
        if options.playbook_hosts:
            rows.append(run_playbook(options.playbook_hosts, options.install_seconds, workdir))
            print(json.dumps(rows[-1]), flush=True)
    print(
        "\n%-16s %5s %9s %8s %9s %7s %9s %7s %14s %12s"
        % ("what", "hosts", "install s", "wall s", "over s", "cpu s", "rss MiB", "rounds", "agent req/h/r", "api req/r")
    )
    for row in rows:
        print(
            "%-16s %5d %9.0f %8.1f %9.1f %7.2f %9.1f %7s %14s %12s"
            % (
                row["what"],
                row["hosts"],
                row["install_s"],
                row.get("from_boot_s", row["wall_s"]),
                row["over_install_s"],
                row["cpu_s"],
                row["peak_rss_mib"],
                row.get("rounds", "-"),
                row.get("agent_req_per_host_round", "-"),
                row.get("api_req_per_round", "-"),
            )
        )
    return 0 if all(row["within_goal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
