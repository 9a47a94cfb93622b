"""playbooks/add_workers.yml --check (and --diff) against fresh labs: rc 0, nothing written, the predictions shown.

A fresh setup: no work directory (the default one, under a fresh HOME), no Secret openshift-config/agent-auth-token.
Nothing may be written to the cluster (the lab's request log: no write; a SelfSubjectAccessReview or
SelfSubjectRulesReview is a question, not a write of state) or to disk; the run says that the ISO would be built,
which hosts would be booted (by hand, or through which BMC), which hosts would be followed at which address and
which pending CSRs would be approved now.
"""

import json
import time
from pathlib import Path

import yaml
from conftest import REPO, lab_env, labctl, run_playbook

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"


def run_check(lab, tmp_path, *extra, json_output=True):
    """--check with a fresh HOME and the default work directory; (rc, output, {task name: [results]})."""
    home = tmp_path / "home"
    home.mkdir()
    env = dict(lab_env(lab), HOME=str(home))
    if json_output:
        env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    rc, output = run_playbook(PLAYBOOK, "-i", lab.inventory, "--check", *extra, env=env)
    assert not (home / "openshift-day2").exists(), "check mode created the work directory"
    return rc, output, task_results(output) if json_output else {}


def task_results(output):
    """{task name: [result of each item, or the one result]} from the ansible.posix.json callback's output."""
    document = json.loads(output[output.index("{") :])
    results = {}
    for task in document["plays"][0]["tasks"]:
        result = task["hosts"].get("localhost")
        if result is not None:
            name = task["task"]["name"].split(" : ", 1)[-1]  # without the role's name
            results.setdefault(name, []).extend(result.get("results") or [result])
    return results


def messages(results, name):
    found = []
    for result in results.get(name) or []:
        msg = result.get("msg")
        found += msg if isinstance(msg, list) else [msg] if msg else []
    return found


def secret_exists(lab, name="agent-auth-token"):
    return any(o["kind"] == "Secret" and o["metadata"]["name"] == name for o in lab.dump()["objects"])


def test_check_on_a_fresh_lab_writes_nothing_and_says_what_would_happen(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--agent-port", "0", "--kubelet-port", "0")
    assert not secret_exists(lab)
    lab.reset_log()
    started = time.monotonic()
    rc, output, results = run_check(lab, tmp_path)
    assert rc == 0, output[-6000:]
    assert time.monotonic() - started < 120
    assert lab.writes() == [] and not secret_exists(lab)

    (image,) = results["Build the ISO with node-joiner in the cluster (reused when still valid)"]
    iso = str(tmp_path / "home" / "openshift-day2" / "node.x86_64.iso")
    assert image["would_build"] == [{"architecture": "x86_64", "path": iso, "reason": "%s does not exist" % iso}]
    assert messages(results, "Report the image") == ["x86_64: %s (would be built: %s does not exist)" % (iso, iso)]
    boot = messages(results, "Boot each host (by hand, or through its BMC)")
    assert boot[0].startswith("Check mode: nothing is built or booted") and "The ISO: %s" % iso in boot
    assert boot[0].endswith(": extra-worker-0, extra-worker-1"), boot

    (join,) = results["Follow every install and join every host (progress is printed as it happens)"]
    assert [(h["name"], h["agent_url"]) for h in join["would_follow"]] == [
        ("extra-worker-%d" % index, "http://127.0.111.2%d:%d/api/assisted-install/v2" % (index, lab.info["agent_port"]))
        for index in range(2)
    ]
    assert join["would_approve"] == [] and join["changed"] is False
    follow = messages(results, "Report every new node, or in check mode what a run would do")
    assert follow == [
        "Check mode: extra-worker-%d would be followed at http://127.0.111.2%d:%d/api/assisted-install/v2 (then its "
        "kubelet at 127.0.111.2%d:%d), else from inside the cluster until its Node is Ready; would approve none yet "
        "(no CSR of this host is pending); its serving certificate may carry 127.0.111.2%d and its Node's other "
        "addresses in the machine "
        "networks" % (index, index, lab.info["agent_port"], index, lab.info["kubelet_port"], index)
        for index in range(2)
    ]


def test_check_predicts_the_pending_csrs_it_would_approve(lab_factory, tmp_path):
    """The hosts have rebooted and their kubelets filed client CSRs: check mode names them and approves none."""
    lab = lab_factory("--hosts", "2", "--agent-port", "0", "--kubelet-port", "0")
    labctl("reboot-done", "--state", str(lab.state), "extra-worker-0", "extra-worker-1")
    deadline = time.monotonic() + 60
    pending = {}
    while len(pending) < 2 and time.monotonic() < deadline:
        pending = {
            o["metadata"]["name"]: o["spec"]["username"]
            for o in lab.dump()["objects"]
            if o["kind"] == "CertificateSigningRequest" and not o.get("status", {}).get("conditions")
        }
        time.sleep(0.5)
    assert len(pending) == 2, pending
    lab.reset_log()
    rc, output, results = run_check(lab, tmp_path)
    assert rc == 0, output[-6000:]
    assert lab.writes() == [] and lab.dump()["approvals"] == []
    (join,) = results["Follow every install and join every host (progress is printed as it happens)"]
    assert sorted((c["name"], c["node"]) for c in join["would_approve"]) == sorted(
        (name, "extra-worker-%d" % index) for index, name in enumerate(sorted(pending, key=pending.get))
    )
    report = " ".join(messages(results, "Report every new node, or in check mode what a run would do"))
    for name in pending:
        assert "would approve now, once its kubelet answers: %s" % name in report


def approve_as_admin(lab, names):
    """Approve CSRs the way an admin's kubectl would (the kubernetes client, not the collection)."""
    from kubernetes import client, config

    certificates = client.CertificatesV1Api(config.new_client_from_config(lab.kubeconfig))
    for name in names:
        csr = certificates.read_certificate_signing_request(name)
        condition = client.V1CertificateSigningRequestCondition(
            type="Approved", status="True", reason="AdminApproved", message="approved by the test"
        )
        csr.status.conditions = [*(csr.status.conditions or []), condition]
        certificates.replace_certificate_signing_request_approval(name, csr)


def pending_csrs(lab, signer):
    return {
        o["metadata"]["name"]: o["spec"]["username"]
        for o in lab.dump()["objects"]
        if o["kind"] == "CertificateSigningRequest"
        and o["spec"]["signerName"] == signer
        and not o.get("status", {}).get("conditions")
    }


def test_the_check_names_exactly_the_csrs_the_run_then_approves(lab_factory, tmp_path):
    """Same lab state, --check and then the real run: the approvals the check predicts are the ones made. The hosts
    are half-joined (client certificates issued by an admin, Nodes NotReady, serving CSRs pending), and a rogue CSR
    for one of them is pending too: neither run may take it."""
    lab = lab_factory("--hosts", "2", "--agent-port", "0", "--kubelet-port", "0")
    labctl("reboot-done", "--state", str(lab.state), "extra-worker-0", "extra-worker-1")
    client_signer, serving_signer = "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"
    deadline = time.monotonic() + 120
    while len(pending_csrs(lab, client_signer)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    approve_as_admin(lab, pending_csrs(lab, client_signer))
    while len(pending_csrs(lab, serving_signer)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    labctl("rogue-csr", "--state", str(lab.state), "serving-foreign-ip")
    serving = set(pending_csrs(lab, serving_signer))
    assert len(serving) == 3, serving  # the two kubelets' and the rogue one

    lab.reset_log()
    before = {a["csr"] for a in lab.dump()["approvals"]}  # the admin's
    rc, output, results = run_check(lab, tmp_path)
    assert rc == 0, output[-6000:]
    assert lab.writes() == [] and {a["csr"] for a in lab.dump()["approvals"]} == before
    (join,) = results["Follow every install and join every host (progress is printed as it happens)"]
    predicted = {c["name"] for c in join["would_approve"]}
    assert len(predicted) == 2 and predicted < serving, (predicted, serving)

    rc, output = run_playbook(
        PLAYBOOK,
        "-i",
        lab.inventory,
        "--tags",
        "join",
        "-e",
        "day2_wait_sleep=1",
        "-e",
        "day2_workdir=%s" % (tmp_path / "work"),
        env=lab_env(lab),
    )
    assert rc == 0, output[-6000:]
    made = {a["csr"] for a in lab.dump()["approvals"]} - before
    assert made == predicted, (made, predicted)


def test_check_with_redfish_reads_the_bmcs_and_boots_nothing(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0")
    lab.reset_log()
    iso_url = "http://127.0.0.1:9/node.x86_64.iso"
    rc, output, results = run_check(lab, tmp_path, "-e", "day2_boot_method=redfish", "-e", "day2_iso_url=%s" % iso_url)
    assert rc == 0, output[-6000:]
    assert lab.writes() == []
    said = messages(results, "Boot each host (by hand, or through its BMC)")
    systems = lab.info["redfish"]["systems"]
    for name, message in zip(("extra-worker-0", "extra-worker-1"), said):
        bmc = "%s/redfish/v1/Systems/%s" % (lab.info["redfish"]["url"], systems[name])
        assert message.startswith("Check mode: %s would be booted through its BMC %s (power Off)" % (name, bmc))
        assert "given the ISO %s" % iso_url in message and message.endswith("then On.")
    hosts = lab.control("GET", "/hosts")
    assert not any(h.get("booted_by") for h in hosts), hosts
    assert lab.info["redfish"]["password"] not in output


def test_diff_shows_the_nodes_config_before_and_after(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "1")
    lab.reset_log()
    rc, output, _results = run_check(lab, tmp_path, "--diff", json_output=False)
    assert rc == 0, output[-6000:]
    assert "nodes-config.yaml for x86_64" in output and "(no nodes-config recorded)" in output
    assert "+- hostname: extra-worker-0" in output or "+  - hostname: extra-worker-0" in output, output[-4000:]
    assert lab.writes() == []

    # Build the ISO for real (image step only), then change a host: the diff shows what changes.
    workdir = tmp_path / "work"
    rc, output = run_playbook(
        PLAYBOOK, "-i", lab.inventory, "--tags", "image", "-e", "day2_workdir=%s" % workdir, env=lab_env(lab)
    )
    assert rc == 0, output[-6000:]
    assert "127.0.111.1" in json.loads((workdir / "node.x86_64.iso.json").read_text())["nodes_config"]
    inventory = yaml.safe_load(Path(lab.inventory).read_text())
    inventory["all"]["children"]["new_workers"]["hosts"]["extra-worker-0"]["dns_servers"] = ["127.0.111.53"]
    changed = tmp_path / "inventory.yml"
    changed.write_text(yaml.safe_dump(inventory))
    lab.reset_log()
    rc, output = run_playbook(
        PLAYBOOK,
        "-i",
        str(changed),
        "--check",
        "--diff",
        "--tags",
        "image",
        "-e",
        "day2_workdir=%s" % workdir,
        env=lab_env(lab),
    )
    assert rc == 0, output[-6000:]
    assert "node.x86_64.iso.json (nodes-config of %s)" % (workdir / "node.x86_64.iso") in output
    removed = [line for line in output.splitlines() if line.startswith("-") and "127.0.111.1" in line]
    added = [line for line in output.splitlines() if line.startswith("+") and "127.0.111.53" in line]
    assert removed and added, output[-4000:]
    assert lab.writes() == []

    # Unchanged inputs: the ISO is reused, there is no diff.
    rc, output = run_playbook(
        PLAYBOOK,
        "-i",
        lab.inventory,
        "--check",
        "--diff",
        "--tags",
        "image",
        "-e",
        "day2_workdir=%s" % workdir,
        env=lab_env(lab),
    )
    assert rc == 0, output[-6000:]
    assert "nodes-config.yaml for" not in output and "reused: inputs unchanged" in output


def test_check_with_a_served_iso_says_where_it_would_listen_in_a_sentence(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "1", "--redfish", "--agent-port", "0", "--kubelet-port", "0")
    lab.reset_log()
    extra = ("-e", "day2_boot_method=redfish", "-e", "day2_serve_address=127.0.0.1:0")
    rc, output, results = run_check(lab, tmp_path, *extra)
    assert rc == 0, output[-6000:]
    assert lab.writes() == []
    plan = messages(results, "Report the plan (and what each BMC answered)")
    assert (
        "ISO: served by this controller over plain HTTP (set day2_serve_tls_cert for HTTPS), listening on "
        "127.0.0.1:0 only (day2_serve_address), at a secret path. It holds the pull secret: only the BMC network "
        "should reach that address" in plan
    ), plan
    (said,) = messages(results, "Say where the ISO is served")
    iso = tmp_path / "home" / "openshift-day2" / "node.x86_64.iso"
    assert said == (
        "Check mode: nothing is served. A run would serve %s over HTTP at 127.0.0.1, on a free port, listening on that "
        "address only. The ISO holds the pull secret: only the BMC network should reach that address." % iso
    )
