"""The whole playbook, playbooks/add_workers.yml, against the lab: 3 hosts from nothing to Ready nodes."""

import json
import subprocess
import threading
import time

import pytest
from conftest import LABCTL, REPO, lab_env, run_playbook

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"


def console_boots_when_media_are_ready(lab, workdir, hosts, pxe=False, timeout=300, told=None):
    """A person at the console: boots every host once the ISO (or the PXE files) is complete.

    The sidecar of an artifact is written last, so its presence means the artifact is whole. Given ``told``, the
    run's log file, the person waits for the boot instruction too, as a user who follows the playbook does.
    """
    media = workdir / ("boot-artifacts/x86_64" if pxe else "node.x86_64.iso")

    def ready():
        sidecar = media.parent / (media.name + ".json")
        if not sidecar.exists():
            return False
        return told is None or (told.exists() and "Boot each of these hosts" in told.read_text(errors="replace"))

    def boot():
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.2)
        subprocess.run(
            [str(LABCTL), "boot", "--state", str(lab.state), "--pxe" if pxe else "--iso", str(media), *hosts],
            capture_output=True,
            timeout=60,
            check=False,
        )

    thread = threading.Thread(target=boot, daemon=True)
    thread.start()
    return thread


def console_boots_when_iso_is_ready(lab, workdir, hosts, timeout=300):
    return console_boots_when_media_are_ready(lab, workdir, hosts, timeout=timeout)


def playbook_args(lab, workdir, *extra):
    return [
        "-i",
        lab.inventory,
        "-e",
        "day2_workdir=%s" % workdir,
        "-e",
        "day2_wait_sleep=1",
        *extra,
    ]


def test_add_workers_from_nothing_to_ready_and_again(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "3", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0")
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_iso_is_ready(lab, workdir, hosts)
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
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
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
    assert rc == 0, output[-4000:]
    assert "Already joined: %s" % ", ".join(sorted(hosts)) in output
    assert "Boot each of these hosts" not in output and " changed=0 " in output, output[-4000:]
    assert all("%s: joined (" % name in output for name in hosts), output[-4000:]
    assert lab.writes() == []
    assert len(lab.dump()["approvals"]) == 6


def test_add_workers_refuses_bad_inventory_before_writing(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2")
    inventory = tmp_path / "inventory.json"
    hosts = {h["name"]: {k: v for k, v in h.items() if k != "name"} for h in lab.info["hosts"]}
    hosts["extra-worker-1"]["gateway"] = "10.9.9.9"
    hosts["extra-worker-1"]["mac_address"] = hosts["extra-worker-0"]["mac_address"]
    inventory.write_text(
        json.dumps({"all": {"children": {"new_workers": {"hosts": hosts, "vars": {"kubeconfig": lab.kubeconfig}}}}})
    )
    lab.reset_log()
    rc, output = run_playbook(PLAYBOOK, "-i", str(inventory), "-e", "day2_workdir=%s" % (tmp_path / "work"))
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
            PLAYBOOK,
            *playbook_args(lab, workdir),
            "-vvv",
            "-e",
            "day2_boot_method=redfish",
            "-e",
            "day2_iso_url=http://127.0.0.1:%d/node.x86_64.iso" % server.server_address[1],
            env=lab_env(lab),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert rc == 0, output[-6000:]
    assert lab.info["redfish"]["password"] not in output
    hosts = {h["name"]: h for h in lab.control("GET", "/hosts")}
    assert all(h.get("booted_by") == "redfish" for h in hosts.values()), hosts
    nodes = [
        o for o in lab.dump()["objects"] if o["kind"] == "Node" and o["metadata"]["name"].startswith("extra-worker")
    ]
    assert len(nodes) == 2


def assert_ready_nodes(lab, hosts):
    state = lab.dump()
    nodes = {o["metadata"]["name"]: o for o in state["objects"] if o["kind"] == "Node"}
    for name in hosts:
        ready = [c for c in nodes[name]["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
    approved = [a["csr"] for a in state["approvals"]]
    assert len(approved) == 2 * len(hosts) == len(set(approved))


# The header each release's agent takes (docs/versions.md): 4.17 has no watcherAuth scheme.
RELEASES = [
    ("v417", "Authorization"),
    ("v418", "Watcher-Authorization"),
    ("v419", "Watcher-Authorization"),
    ("v420", "Watcher-Authorization"),
    ("v421", "Watcher-Authorization"),
]


@pytest.mark.parametrize("variant,header", RELEASES)
def test_add_workers_on_every_release(lab_factory, tmp_path, variant, header):
    """The console path on each release 4.17-4.21: ISO with .jso names and gzip config, the release's token and
    header, its completion signal (exit_code or report.json), three hosts Ready."""
    lab = lab_factory(
        "--variant", variant, "--hosts", "3", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0"
    )
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_media_are_ready(lab, workdir, hosts)
    rc, output = run_playbook(PLAYBOOK, *playbook_args(lab, workdir), env=lab_env(lab))
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    assert_ready_nodes(lab, hosts)
    assert "token in %s" % header in output, output[-3000:]
    assert "LAB-PULL-SECRET-MARKER-7f3a9c" not in output


@pytest.mark.parametrize("variant", ["v418", "v421"])
def test_add_workers_with_pxe(lab_factory, tmp_path, variant):
    """PXE where the release has it (node-joiner --pxe from 4.18): the hosts boot the initrd day2_iso fetched."""
    lab = lab_factory(
        "--variant", variant, "--hosts", "3", "--install-seconds", "6", "--agent-port", "0", "--kubelet-port", "0"
    )
    hosts = [h["name"] for h in lab.info["hosts"]]
    workdir = tmp_path / "work"
    console = console_boots_when_media_are_ready(lab, workdir, hosts, pxe=True)
    rc, output = run_playbook(
        PLAYBOOK,
        *playbook_args(lab, workdir),
        "-e",
        "day2_pxe=true",
        "-e",
        "day2_boot_artifacts_base_url=http://127.0.0.1:8088/boot",
        env=lab_env(lab),
    )
    console.join(timeout=5)
    assert rc == 0, output[-6000:]
    assert_ready_nodes(lab, hosts)
    names = sorted(p.name for p in (workdir / "boot-artifacts" / "x86_64").iterdir())
    assert names == ["node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz", "node.x86_64.ipxe"]


def test_add_workers_refuses_pxe_on_4_17_before_writing(lab_factory, tmp_path):
    lab = lab_factory("--variant", "v417", "--hosts", "1")
    lab.reset_log()
    rc, output = run_playbook(
        PLAYBOOK,
        *playbook_args(lab, tmp_path / "work"),
        "-e",
        "day2_pxe=true",
        "-e",
        "day2_boot_artifacts_base_url=http://127.0.0.1:8088/boot",
    )
    assert rc != 0
    assert "4.18" in output and "pxe" in output.lower(), output[-3000:]
    assert lab.writes() == []


def test_the_labs_loopback_hosts_are_refused_naming_the_labs_switch(lab_factory, tmp_path):
    """Without OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK the lab's hosts are refused before any write; the cluster's own
    machine network is loopback, so the fix named is the lab's switch, not "use a unicast address"."""
    lab = lab_factory("--hosts", "1")
    lab.reset_log()
    rc, output = run_playbook(
        PLAYBOOK, *playbook_args(lab, tmp_path / "work"), env={"OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK": "0"}
    )
    flat = " ".join(output.split())
    assert rc != 0 and 'field "ip" value "127.0.111.20" is a loopback address' in flat, flat[-3000:]
    assert "set OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1 in the controller's environment" in flat
    assert lab.writes() == []
