# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark (c): stream a ~1 GiB ISO out of a lab pod through exec, verified, against an HTTPS GET.

Starts a lab with a base ISO of --size-mib, runs one simulated node-joiner pod, then times:

* exec: the collection's own copy path (NodeJoinerRun.fetch: ``sha256sum`` in the pod, ``cat`` streamed
  over the exec WebSocket into a 0600 temp file, sha256 compared, fsync, rename);
* GET: an HTTPS GET of the same file from the same lab process (its pod-files server, same TLS
  setup and token), written to a file with fsync and hashed on the fly (Python requests), and the same
  GET with curl followed by sync and sha256sum (no Python in the data path).

Prints both and the throughput ratio GET time / exec time (goal >= 0.5).

Run from the repository root:  .venv/bin/python tests/benchmarks/iso_stream_bench.py [--size-mib 1024]
"""

import argparse
import functools
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types

import requests
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABCTL = os.path.join(REPO_ROOT, "tests", "lab", "labctl")
NODES_CONFIG = {
    "hosts": [
        {
            "hostname": "extra-worker-0",
            "role": "worker",
            "interfaces": [{"name": "eth0", "macAddress": "52:54:00:6f:00:14"}],
        }
    ]
}


def import_collection(workdir):
    namespace = os.path.join(workdir, "collections", "ansible_collections", "openshift_agent")
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, "day2"))
    sys.path.insert(0, os.path.join(workdir, "collections"))
    from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner

    return node_joiner


def start_node_joiner_pod(core, image):
    namespace = core.create_namespace({"metadata": {"generateName": "bench-"}}).metadata.name
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "nodes-config"}, "data": {"nodes-config.yaml": yaml.safe_dump(NODES_CONFIG)}}
    )
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "node-joiner"},
            "spec": {
                "containers": [
                    {
                        "name": "node-joiner",
                        "image": image,
                        "command": ["/bin/bash", "-c", "node-joiner add-nodes --dir=/assets; sleep 600"],
                        "volumeMounts": [{"name": "nodes-config", "mountPath": "/config"}],
                    }
                ],
                "volumes": [{"name": "nodes-config", "configMap": {"name": "nodes-config"}}],
            },
        },
    )
    return namespace


def timed(func):
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def https_get(url, token, ca, dest):
    digest = hashlib.sha256()
    with requests.get(url, headers={"Authorization": "Bearer " + token}, verify=ca, stream=True, timeout=600) as got:
        got.raise_for_status()
        with open(dest, "wb") as out:
            for chunk in got.iter_content(chunk_size=1 << 20):
                out.write(chunk)
                digest.update(chunk)
            out.flush()
            os.fsync(out.fileno())
    return digest.hexdigest()


def curl_get(url, token, ca, dest):
    """The same GET with curl (C, no Python in the data path) and sha256sum, as a second baseline."""
    subprocess.run(
        ["curl", "-sSf", "--cacert", ca, "-H", "Authorization: Bearer " + token, "-o", dest, url], check=True
    )
    subprocess.run(["sync", dest], check=True)
    return subprocess.run(["sha256sum", dest], check=True, capture_output=True, text=True).stdout.split()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=1024, help="size of the lab's base ISO (default 1024)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each transfer (default 3)")
    parser.add_argument("--workdir", help="directory for the lab state and the copies (default: a temp dir)")
    args = parser.parse_args()

    from kubernetes import client, config

    workdir = tempfile.mkdtemp(prefix="iso-stream-bench-", dir=args.workdir)
    state = os.path.join(workdir, "lab")
    try:
        run_module_utils = import_collection(workdir)
        started = time.perf_counter()
        subprocess.run(
            [
                LABCTL,
                "start",
                "--state",
                state,
                "--hosts",
                "1",
                "--iso-size",
                str(args.size_mib << 20),
                "--nodejoiner-stage-delay",
                "0",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        configuration = client.Configuration()
        config.load_kube_config(os.path.join(state, "kubeconfig"), client_configuration=configuration)
        core = client.CoreV1Api(client.ApiClient(configuration))
        images = json.loads(core.read_namespaced_config_map("installer-images", "openshift-config").data["images.json"])
        namespace = start_node_joiner_pod(core, images["installer"])

        run = run_module_utils.NodeJoinerRun(types.SimpleNamespace(configuration=configuration), "bench")
        run.namespace = {"metadata": {"name": namespace}}
        while run.exec(["cat", "/assets/exit_code"]).stdout.strip() != b"0":
            time.sleep(0.5)  # the first run builds and caches the base ISO with xorriso
        print("lab up and ISO built in %.1f s" % (time.perf_counter() - started))

        with open(os.path.join(state, "lab.json")) as handle:
            control_url = json.load(handle)["control_url"]
        files_url = requests.get(control_url + "/pod-files", timeout=30).json()["url"]
        url = "%s/files/%s/node-joiner/assets/node.x86_64.iso" % (files_url, namespace)
        token = (
            configuration.api_key["BearerToken"].split(" ", 1)[1]
            if "BearerToken" in configuration.api_key
            else configuration.api_key["authorization"].split(" ", 1)[1]
        )

        exec_times, get_times, curl_times = [], [], []
        use_curl = shutil.which("curl") is not None
        for _run in range(args.runs):
            exec_dest = os.path.join(workdir, "exec.iso")
            seconds, (size, exec_sha) = timed(functools.partial(run.fetch, "/assets/node.x86_64.iso", exec_dest))
            exec_times.append(seconds)
            os.unlink(exec_dest)
            get_dest = os.path.join(workdir, "get.iso")
            seconds, get_sha = timed(functools.partial(https_get, url, token, configuration.ssl_ca_cert, get_dest))
            get_times.append(seconds)
            os.unlink(get_dest)
            assert exec_sha == get_sha
            if use_curl:
                curl_dest = os.path.join(workdir, "curl.iso")
                seconds, curl_sha = timed(functools.partial(curl_get, url, token, configuration.ssl_ca_cert, curl_dest))
                curl_times.append(seconds)
                os.unlink(curl_dest)
                assert curl_sha == exec_sha
        exec_s, get_s = statistics.median(exec_times), statistics.median(get_times)
        mib = size / 2**20
        print(
            "(c) exec stream with verification (sha256sum in the pod + cat + local sha256 + fsync + rename): "
            "%.2f s = %.0f MiB/s  [%.0f MiB, median of %d]" % (exec_s, mib / exec_s, mib, len(exec_times))
        )
        print(
            "    HTTPS GET of the same file from the lab process (hashed, fsync): %.2f s = %.0f MiB/s"
            % (get_s, mib / get_s)
        )
        print("    ratio (exec throughput / GET throughput) = %.2f  (goal >= 0.5)" % (get_s / exec_s))
        if curl_times:
            curl_s = statistics.median(curl_times)
            print(
                "    curl GET + sync + sha256sum of the same file: %.2f s = %.0f MiB/s -> ratio exec/curl = %.2f"
                % (curl_s, mib / curl_s, curl_s / exec_s)
            )
    finally:
        subprocess.run([LABCTL, "stop", "--state", state], check=False, stdout=subprocess.DEVNULL)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
