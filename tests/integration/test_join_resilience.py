"""The join step (openshift_agent.day2.csr_approve) against the lab's hosts, kubelets and rogue CSRs.

Spoofs (a client CSR for an expected host filed at "Rebooting", a replay of the kubelet's pending CSR, a second
key after the approval), one host that never boots, and SIGKILL of ansible-playbook during the install wait and
during the approval followed by a re-run. Every assertion about what happened is made on the lab's records
(approvals log, kubelets, rogue CSRs, Nodes).
"""

import os
import signal
import subprocess
import threading

from conftest import REPO, VENV_BIN, ansible_env, lab_env, labctl, run_playbook
from lab.waiting import wait_until

BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"

PLAY = """\
- hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/openshift_agent.day2.day2: {{kubeconfig: "{kubeconfig}"}}
  tasks:
    - name: Join the hosts (the join step of the role)
      ansible.builtin.include_role:
        name: openshift_agent.day2.day2
        tasks_from: join
      vars:
        day2_plan: {{hosts: {hosts}, joined: []}}
        day2_wait_sleep: 1
        day2_settle_seconds: {settle}
        day2_boot_timeout: {boot_timeout}
        day2_join_timeout: 90
        day2_install_timeout: 120
"""


def start_lab(lab_factory, hosts, install_seconds=6):
    lab = lab_factory(
        "--hosts", str(hosts), "--install-seconds", str(install_seconds), "--agent-port", "0", "--kubelet-port", "0"
    )
    iso = lab.state / "node.iso"
    labctl("build-iso", "--state", str(lab.state), "--out", str(iso))
    lab.iso = iso
    return lab


def boot(lab, names, install_seconds=None):
    body = {"iso": str(lab.iso), "hosts": list(names)}
    if install_seconds:
        body["install_seconds"] = install_seconds
    lab.control("POST", "/hosts/boot", body)


def write_play(lab, tmp_path, settle=2, boot_timeout=120):
    hosts = lab.info["hosts"]
    path = tmp_path / "join.yml"
    path.write_text(
        PLAY.format(
            kubeconfig=lab.kubeconfig,
            hosts=[
                {"name": h["name"], "address": h["ip"], "addresses": [h["ip"]], "mac_address": h["mac_address"]}
                for h in hosts
            ],
            settle=settle,
            boot_timeout=boot_timeout,
        )
    )
    return path


def run_join(lab, play):
    return run_playbook(play, "-i", "localhost,", env=lab_env(lab), timeout=300)


def in_background(lab, play):
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(zip(("rc", "output"), run_join(lab, play))))
    thread.start()
    return thread, outcome


def spawn(lab, play):
    """ansible-playbook in its own process group (to be killed with all its workers)."""
    command = [str(VENV_BIN / "ansible-playbook"), str(play), "-i", "localhost,"]
    return subprocess.Popen(
        command,
        env=ansible_env(**lab_env(lab)),
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_tree(process):
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def objects(dump, kind):
    return {obj["metadata"]["name"]: obj for obj in dump["objects"] if obj["kind"] == kind}


def ready(dump, name):
    node = objects(dump, "Node").get(name)
    return bool(node) and any(
        c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])
    )


def approved(dump):
    return [entry["csr"] for entry in dump["approvals"]]


def host_stage(lab, name):
    return next((host.get("stage") for host in lab.control("GET", "/hosts") if host["name"] == name), None)


def kubelet_csrs(lab, name, signer=CLIENT_SIGNER, approved_only=False):
    """The CSRs the host's kubelet filed for ``signer`` (names), from the lab's kubelet record."""
    filed = (lab.control("GET", "/kubelets").get(name) or {}).get("csrs", [])
    return [c["name"] for c in filed if c["signer"] == signer and (c["approved"] or not approved_only)]


def any_approval(lab):
    return any(c["approved"] for kubelet in lab.control("GET", "/kubelets").values() for c in kubelet["csrs"])


def assert_no_duplicates_and_only_genuine(dump, names):
    made = approved(dump)
    assert len(made) == len(set(made)), made
    rogue = {entry["name"] for entry in dump["rogue_csrs"] if entry["kind"] != "replay-client"}
    assert not rogue & set(made), (rogue, made)
    filed = {c["name"] for name in names for c in dump["kubelets"].get(name, {}).get("csrs", [])}
    replays = {entry["name"] for entry in dump["rogue_csrs"] if entry["kind"] == "replay-client"}
    assert set(made) <= filed | replays, (made, filed)


def test_a_client_csr_spoofed_at_rebooting_is_never_approved(lab_factory, tmp_path):
    lab = start_lab(lab_factory, 2)
    play = write_play(lab, tmp_path)
    thread, outcome = in_background(lab, play)
    # Rebooting lasts 15 % of the install: 6 s here, while the live ISO's agent still answers.
    boot(lab, ["extra-worker-0"], install_seconds=40)
    boot(lab, ["extra-worker-1"])
    wait_until("extra-worker-0 at Rebooting", lambda: host_stage(lab, "extra-worker-0") == "Done", timeout=90)
    spoof = lab.control("POST", "/rogue-csr", {"kind": "spoof-client", "host": "extra-worker-0"})[0]
    thread.join(240)
    assert outcome["rc"] == 0, outcome["output"][-4000:]
    dump = lab.dump()
    assert ready(dump, "extra-worker-0") and ready(dump, "extra-worker-1")
    assert spoof["name"] not in approved(dump)
    assert not objects(dump, "CertificateSigningRequest")[spoof["name"]]["status"].get("conditions")
    assert_no_duplicates_and_only_genuine(dump, ["extra-worker-0", "extra-worker-1"])
    # Progress is printed as it happens, with the host's name and a timestamp.
    assert "extra-worker-0: installing; agent: " in outcome["output"]
    assert "extra-worker-0: approved its client certificate request" in outcome["output"]
    assert "summary extra-worker-1: joined" in outcome["output"]


def test_a_replay_of_the_pending_genuine_csr_does_not_strand_the_kubelet(lab_factory, tmp_path):
    lab = start_lab(lab_factory, 1)
    play = write_play(lab, tmp_path, settle=6)
    thread, outcome = in_background(lab, play)
    boot(lab, ["extra-worker-0"])
    genuine = wait_until("the kubelet's client CSR", lambda: kubelet_csrs(lab, "extra-worker-0"), timeout=60)[0]
    replay = lab.control("POST", "/rogue-csr", {"kind": "replay-client", "host": "extra-worker-0"})[0]
    thread.join(240)
    assert outcome["rc"] == 0, outcome["output"][-4000:]
    dump = lab.dump()
    assert ready(dump, "extra-worker-0")
    # Both carry the kubelet's key: both are approved, the genuine one included.
    assert {genuine, replay["name"]} <= set(approved(dump))
    assert_no_duplicates_and_only_genuine(dump, ["extra-worker-0"])


def test_a_second_key_after_the_approval_stops_the_host_naming_the_rogue(lab_factory, tmp_path):
    lab = start_lab(lab_factory, 1)
    labctl("fault", "--state", str(lab.state), "kubelet_ready_delay=20")
    play = write_play(lab, tmp_path)
    thread, outcome = in_background(lab, play)
    boot(lab, ["extra-worker-0"])

    genuine = wait_until(
        "the client CSR approved", lambda: kubelet_csrs(lab, "extra-worker-0", approved_only=True), timeout=90
    )
    spoof = lab.control("POST", "/rogue-csr", {"kind": "spoof-client", "host": "extra-worker-0"})[0]
    thread.join(240)
    output = outcome["output"]
    assert outcome["rc"] != 0, output[-4000:]
    assert spoof["name"] not in approved(lab.dump())
    rogue_part = output.split("a second public key for extra-worker-0:", 1)[1].split("while the kubelet's key", 1)[0]
    assert spoof["name"] in rogue_part and "requested by %s" % BOOTSTRAPPER in rogue_part
    assert not any(name in rogue_part for name in genuine), (genuine, rogue_part)
    assert "oc delete csr %s" % spoof["name"] in output


def test_one_host_that_never_boots_fails_named_and_the_others_join(lab_factory, tmp_path):
    lab = start_lab(lab_factory, 2)
    play = write_play(lab, tmp_path, boot_timeout=25)
    rogues = lab.control("POST", "/rogue-csr", {"kind": "all", "host": "extra-worker-0"})
    boot(lab, ["extra-worker-0"])
    rc, output = run_join(lab, play)
    assert rc != 0
    assert "extra-worker-1: nothing answered within day2_boot_timeout (25 s)" in output, output[-4000:]
    dump = lab.dump()
    assert ready(dump, "extra-worker-0") and not ready(dump, "extra-worker-1")
    assert not {r["name"] for r in rogues} & set(approved(dump))

    # Booting the late host and running again completes it; nothing is approved twice.
    boot(lab, ["extra-worker-1"])
    rc, output = run_join(lab, play)
    assert rc == 0, output[-4000:]
    dump = lab.dump()
    assert ready(dump, "extra-worker-0") and ready(dump, "extra-worker-1")
    assert len(approved(dump)) == 4
    assert_no_duplicates_and_only_genuine(dump, ["extra-worker-0", "extra-worker-1"])


def test_sigkill_during_the_install_wait_and_the_approval_then_a_rerun_completes(lab_factory, tmp_path):
    lab = start_lab(lab_factory, 2, install_seconds=10)
    play = write_play(lab, tmp_path)
    names = ["extra-worker-0", "extra-worker-1"]

    first = spawn(lab, play)
    boot(lab, names)
    wait_until("an install under way", lambda: host_stage(lab, names[0]) in ("Installing", "Writing image to disk"))
    kill_tree(first)

    # Slow Ready keeps the hosts half-joined when the second run is killed after its first approval.
    labctl("fault", "--state", str(lab.state), "kubelet_ready_delay=8")
    second = spawn(lab, play)
    wait_until("a first approval", lambda: any_approval(lab), timeout=120, interval=0.2)
    kill_tree(second)
    labctl("fault", "--state", str(lab.state), "--clear")

    rc, output = run_join(lab, play)
    assert rc == 0, output[-4000:]
    dump = lab.dump()
    assert all(ready(dump, name) for name in names)
    assert len(approved(dump)) == 4
    assert_no_duplicates_and_only_genuine(dump, names)
    # Each host got exactly one client and one serving certificate (no second approval after the interrupt).
    for name in names:
        mine = [c for c in dump["kubelets"][name]["csrs"] if c["name"] in approved(dump)]
        assert sorted(c["signer"] for c in mine) == sorted([CLIENT_SIGNER, "kubernetes.io/kubelet-serving"]), mine
