"""How fast csr_approve approves: time from each CSR's filing to its approval, 50 hosts, wait_sleep 10.

Starts a lab with N hosts, runs ``openshift_agent.day2.csr_approve`` (wait_for=ready, wait_sleep=10) against it,
and once the module has started lets the hosts reboot in waves (``labctl reboot-done``), so the CSRs arrive
while the module waits, as on a real cluster. Latency per CSR = the moment the Approved condition appeared
in the lab's store minus the moment the kubelet's create call returned (both from the lab's kubelet state,
millisecond resolution; creationTimestamp has only seconds). Prints p50/p95/max per signer and overall as
JSON; exit code 1 when the overall p95 misses the goal.

    .venv/bin/python tests/benchmarks/csr_latency_bench.py [--hosts 50] [--wave 5] [--wave-gap 0.5]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABCTL = os.path.join(REPO, "tests", "lab", "labctl")
VENV_BIN = os.path.join(REPO, ".venv", "bin")
GOAL_P95_SECONDS = 2.0


def labctl(*args):
    return subprocess.run([LABCTL, *args], capture_output=True, text=True, check=True, timeout=120).stdout


def control(lab, method, path):
    request = urllib.request.Request(lab["control_url"] + path, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def run_module(lab_dir, hosts, wait_sleep, timeout):
    args = {
        "kubeconfig": os.path.join(lab_dir, "kubeconfig"),
        "wait_sleep": wait_sleep,
        "wait_timeout": timeout,
        "nodes": [{"name": h["name"], "addresses": [h["ip"]]} for h in hosts],
    }
    env = dict(
        os.environ,
        PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
    )
    proc = subprocess.run(
        [
            os.path.join(VENV_BIN, "ansible"),
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
        timeout=timeout + 120,
        check=False,
    )
    document = json.loads(proc.stdout[proc.stdout.find("{") :])
    return document["plays"][0]["tasks"][0]["hosts"]["localhost"]


def parse_ms(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(latencies):
    return {
        "count": len(latencies),
        "p50": round(percentile(latencies, 0.50), 3),
        "p95": round(percentile(latencies, 0.95), 3),
        "max": round(max(latencies), 3),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--wait-sleep", type=int, default=10)
    parser.add_argument("--wave", type=int, default=5, help="hosts rebooting together")
    parser.add_argument("--wave-gap", type=float, default=0.5, help="seconds between waves")
    options = parser.parse_args(argv)

    state = tempfile.mkdtemp(prefix="csr-bench-")
    labctl("start", "--state", state, "--hosts", str(options.hosts))
    try:
        with open(os.path.join(state, "lab.json"), encoding="utf-8") as handle:
            lab = json.load(handle)
        hosts = lab["hosts"]
        outcome = {}
        runner = threading.Thread(
            target=lambda: outcome.update(result=run_module(state, hosts, options.wait_sleep, 300))
        )
        runner.start()
        while not any(
            r["path"].split("?")[0].endswith("/certificatesigningrequests") for r in control(lab, "GET", "/requests")
        ):
            time.sleep(0.05)
        for start in range(0, len(hosts), options.wave):
            labctl("reboot-done", "--state", state, *[h["name"] for h in hosts[start : start + options.wave]])
            time.sleep(options.wave_gap)
        runner.join()
        result = outcome["result"]
        kubelets = control(lab, "GET", "/kubelets")
    finally:
        labctl("stop", "--state", state)

    by_signer = {}
    for kubelet in kubelets.values():
        for csr in kubelet["csrs"]:
            if csr["approved"]:
                by_signer.setdefault(csr["signer"], []).append(parse_ms(csr["approved"]) - parse_ms(csr["filed"]))
    everything = [value for values in by_signer.values() for value in values]
    report = {
        "hosts": options.hosts,
        "wait_sleep": options.wait_sleep,
        "module_failed": bool(result.get("failed")),
        "module_duration": result.get("duration"),
        "approved": len(result.get("approved", [])),
        "watch_restarts": result.get("watch_restarts"),
        "latency_seconds": dict(
            {signer: summary(values) for signer, values in sorted(by_signer.items())},
            all=summary(everything) if everything else None,
        ),
        "goal_p95_seconds": GOAL_P95_SECONDS,
    }
    print(json.dumps(report, indent=2))
    ok = (
        not result.get("failed")
        and len(everything) == 2 * options.hosts
        and summary(everything)["p95"] <= GOAL_P95_SECONDS
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
