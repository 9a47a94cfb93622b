"""The two scenarios end to end against the lab: replace a worker (playbooks/replace_worker.yml) and a
mixed-architecture run of playbooks/add_workers.yml (one x86_64 and one aarch64 host).

Each lab has few hosts and a short install, so the module stays within a couple of minutes on a 2-core machine.
"""

import subprocess
import threading
import time

from conftest import LABCTL, REPO, lab_env, run_playbook
from test_add_workers import playbook_args

ADD = REPO / "playbooks" / "add_workers.yml"
REPLACE = REPO / "playbooks" / "replace_worker.yml"
FAST = ("--install-seconds", "3", "--agent-port", "0", "--kubelet-port", "0")


def console_boots(lab, boots, timeout=300):
    """A person at the console: boots each host from its ISO once that ISO is complete (its sidecar is written
    last). ``boots``: [(ISO path, [host, ...]), ...]."""

    def boot(iso, hosts):
        sidecar = iso.parent / (iso.name + ".json")
        deadline = time.monotonic() + timeout
        while not sidecar.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        subprocess.run(
            [str(LABCTL), "boot", "--state", str(lab.state), "--iso", str(iso), *hosts],
            capture_output=True,
            timeout=60,
            check=False,
        )

    threads = [threading.Thread(target=boot, args=(iso, hosts), daemon=True) for iso, hosts in boots]
    for thread in threads:
        thread.start()
    return threads


def objects(lab, kind):
    return [o for o in lab.dump()["objects"] if o["kind"] == kind]


def node(lab, name):
    return next((o for o in objects(lab, "Node") if o["metadata"]["name"] == name), None)


def is_ready(obj):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"].get("conditions") or [])


def pods_on(lab, name):
    return {p["metadata"]["name"]: p for p in objects(lab, "Pod") if p["spec"].get("nodeName") == name}


def wait_for_pods(lab, name, count, timeout=20):
    deadline = time.monotonic() + timeout
    while len(pods_on(lab, name)) != count and time.monotonic() < deadline:
        time.sleep(0.2)
    return pods_on(lab, name)


def add_workers(lab, workdir, boots):
    threads = console_boots(lab, boots)
    rc, output = run_playbook(ADD, *playbook_args(lab, workdir), env=lab_env(lab))
    for thread in threads:
        thread.join(timeout=5)
    return rc, output


def test_replace_worker_drains_deletes_rebuilds_and_the_host_joins_again_under_its_name(lab_factory, tmp_path):
    # An install long enough for the join step to hear the new installation's agent (as a real install of
    # minutes is): the CSRs of the old installation, still in the cluster, are then told from the new kubelet's.
    lab = lab_factory("--hosts", "1", "--install-seconds", "12", "--agent-port", "0", "--kubelet-port", "0")
    first = tmp_path / "first"
    rc, output = add_workers(lab, first, [(first / "node.x86_64.iso", ["extra-worker-0"])])
    assert rc == 0, output[-6000:]
    old = node(lab, "extra-worker-0")
    assert old is not None and is_ready(old)
    old_pods = wait_for_pods(lab, "extra-worker-0", 4)
    kinds = sorted(p["metadata"]["ownerReferences"][0]["kind"] for p in old_pods.values())
    assert kinds == ["DaemonSet", "DaemonSet", "ReplicaSet", "ReplicaSet"]
    approvals_before = len(lab.dump()["approvals"])
    # The worker fails: powered off, its kubelet no longer answers (its Node would turn NotReady).
    lab.control("POST", "/hosts/power-off", {"hosts": ["extra-worker-0"]})

    # The replacement: a new disk (a new ISO of a new work directory), booted once the playbook built it.
    second = tmp_path / "second"
    lab.reset_log()
    threads = console_boots(lab, [(second / "node.x86_64.iso", ["extra-worker-0"])])
    rc, output = run_playbook(
        REPLACE, *playbook_args(lab, second, "-e", "day2_replace_node=extra-worker-0"), env=lab_env(lab)
    )
    for thread in threads:
        thread.join(timeout=5)
    assert rc == 0, output[-6000:]

    requests = lab.requests()
    methods = [(r["method"], r["path"].split("?", 1)[0]) for r in requests]
    # drain: cordon (PATCH of the Node), the ReplicaSet pods deleted (DaemonSet pods are left to the pod GC),
    # then the Node deleted -- all before the new ISO's node-joiner namespace exists
    cordon = methods.index(("PATCH", "/api/v1/nodes/extra-worker-0"))
    deletes = [i for i, (m, p) in enumerate(methods) if m == "DELETE" and "/pods/" in p]
    node_delete = methods.index(("DELETE", "/api/v1/nodes/extra-worker-0"))
    first_namespace = next(i for i, (m, p) in enumerate(methods) if m == "POST" and p == "/api/v1/namespaces")
    assert cordon < min(deletes) and max(deletes) < node_delete < first_namespace
    deleted = sorted(methods[i][1].rsplit("/", 1)[1] for i in deletes)
    replicaset_pods = sorted(
        n for n, p in old_pods.items() if p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    )
    assert deleted == replicaset_pods

    new = node(lab, "extra-worker-0")
    assert new is not None and is_ready(new) and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert not new["spec"].get("unschedulable")
    # the same machine (system UUID), a new installation (machine-id) and boot
    info, old_info = new["status"]["nodeInfo"], old["status"]["nodeInfo"]
    assert info["systemUUID"] == old_info["systemUUID"]
    assert info["machineID"] != old_info["machineID"] and info["bootID"] != old_info["bootID"]
    new_pods = wait_for_pods(lab, "extra-worker-0", 4)
    assert not set(new_pods) & set(old_pods)  # the old pods are gone (drained, or collected with the Node)
    approvals = lab.dump()["approvals"]
    assert len(approvals) == approvals_before + 2 and len({a["csr"] for a in approvals}) == len(approvals)


def test_mixed_architectures_on_a_multi_payload_build_two_isos_and_both_join(lab_factory, tmp_path):
    lab = lab_factory("--variant", "multiarch", "--hosts", "2", "--host-arch", "extra-worker-1=aarch64", *FAST)
    work = tmp_path / "work"
    rc, output = add_workers(
        lab, work, [(work / "node.x86_64.iso", ["extra-worker-0"]), (work / "node.aarch64.iso", ["extra-worker-1"])]
    )
    assert rc == 0, output[-6000:]
    assert (work / "node.x86_64.iso").is_file() and (work / "node.aarch64.iso").is_file()
    for name, arch in (("extra-worker-0", "amd64"), ("extra-worker-1", "arm64")):
        joined = node(lab, name)
        assert joined is not None and is_ready(joined), name
        assert joined["status"]["nodeInfo"]["architecture"] == arch
        assert joined["metadata"]["labels"]["kubernetes.io/arch"] == arch


def test_mixed_architectures_on_a_single_architecture_payload_are_refused_before_any_write(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--host-arch", "extra-worker-1=aarch64", *FAST)
    lab.reset_log()
    rc, output = run_playbook(ADD, *playbook_args(lab, tmp_path / "work"), env=lab_env(lab))
    assert rc != 0
    assert 'host extra-worker-1: field "cpu_architecture" value "aarch64"' in output
    assert "single-architecture" in output and "oc adm upgrade --to-multi-arch" in output
    assert "extra-worker-0: field" not in output
    assert lab.writes() == []
    assert not (tmp_path / "work").exists()
