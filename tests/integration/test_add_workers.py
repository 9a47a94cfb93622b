"""The whole playbook, playbooks/add_workers.yml, against the lab: 3 hosts from nothing to Ready nodes."""

import json
import subprocess
import threading
import time

from conftest import LABCTL, REPO, run_playbook

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"


def console_boots_when_iso_is_ready(lab, workdir, hosts, timeout=300):
    """A person at the console: boots every host once the ISO is complete (its sidecar is written last)."""

    def boot():
        sidecar = workdir / "node.x86_64.iso.json"
        deadline = time.monotonic() + timeout
        while not sidecar.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        subprocess.run([str(LABCTL), "boot", "--state", str(lab.state), "--iso", str(workdir / "node.x86_64.iso"), *hosts],
                       capture_output=True, timeout=60, check=False)

    thread = threading.Thread(target=boot, daemon=True)
    thread.start()
    return thread


def playbook_args(lab, workdir):
    ports = ["-e", "join_agent_port=%d" % lab.info["agent_port"], "-e", "join_kubelet_port=%d" % lab.info["kubelet_port"]]
    return ["-i", lab.inventory, "-e", "day2_workdir=%s" % workdir, "-e", "day2_allow_loopback=true",
            "-e", "node_image_wait_sleep=1", "-e", "join_agent_wait_sleep=1", "-e", "join_csr_wait_sleep=2"] + ports


def test_add_workers_from_nothing_to_ready_and_again(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "3", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_iso_is_ready(lab, workdir, hosts)
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]

    state = lab.dump()
    nodes = {o["metadata"]["name"]: o for o in state["objects"] if o["kind"] == "Node"}
    for name in hosts:
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
    csrs = {o["metadata"]["name"]: o for o in state["objects"] if o["kind"] == "CertificateSigningRequest"}
    approved = [a["csr"] for a in state["approvals"]]
    assert len(approved) == 6 == len(set(approved))
    owners = sorted(csrs[name]["spec"]["username"] for name in approved)
    # two per host: the bootstrapper's client CSR and the node's own serving CSR
    assert owners.count("system:serviceaccount:openshift-machine-config-operator:node-bootstrapper") == 3
    assert sorted(u for u in owners if u.startswith("system:node:")) == sorted("system:node:%s" % h for h in hosts)
    assert "LAB-PULL-SECRET-MARKER-7f3a9c" not in output
    assert oct((workdir / "node.x86_64.iso").stat().st_mode & 0o777) == "0o600"

    # Running it again is safe: every host is already a Ready node, nothing is written to the cluster.
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir))
    assert rc == 0, output[-4000:]
    assert "already a Ready node" in output
    assert lab.writes() == []
    assert len(lab.dump()["approvals"]) == 6


def test_add_workers_refuses_bad_inventory_before_writing(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2")
    inventory = tmp_path / "inventory.json"
    hosts = {h["name"]: {k: v for k, v in h.items() if k != "name"} for h in lab.info["hosts"]}
    hosts["extra-worker-1"]["gateway"] = "10.9.9.9"
    hosts["extra-worker-1"]["mac_address"] = hosts["extra-worker-0"]["mac_address"]
    inventory.write_text(json.dumps({"all": {"children": {"new_workers": {"hosts": hosts, "vars": {"kubeconfig": lab.kubeconfig}}}}}))
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, "-i", str(inventory), "-e", "day2_workdir=%s" % (tmp_path / "work"),
                              "-e", "day2_allow_loopback=true")
    assert rc != 0
    assert 'host extra-worker-1: field "gateway" value "10.9.9.9"' in output
    assert "mac_address" in output and hosts["extra-worker-0"]["mac_address"] in output
    assert lab.writes() == []


def test_add_workers_boots_through_redfish(lab_factory, tmp_path):
    import functools
    import http.server
    import socketserver

    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6")
    workdir = tmp_path / "work"
    workdir.mkdir(mode=0o700)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(workdir))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rc, output = run_playbook(
            PLAYBOOK, *playbook_args(lab, workdir), "-vvv", "-e", "day2_boot_method=redfish",
            "-e", "day2_iso_url=http://127.0.0.1:%d/node.x86_64.iso" % server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
    assert rc == 0, output[-6000:]
    assert lab.info["redfish"]["password"] not in output
    hosts = {h["name"]: h for h in lab.control("GET", "/hosts")}
    assert all(h.get("booted_by") == "redfish" for h in hosts.values()), hosts
    nodes = [o for o in lab.dump()["objects"] if o["kind"] == "Node" and o["metadata"]["name"].startswith("extra-worker")]
    assert len(nodes) == 2
