"""csr_approve against the lab's kubelets (tests/lab/lab/kubelet.py) and rogue CSRs (tests/lab/lab/rogue.py).

Every assertion about what happened is made on the lab's own records (approvals log, request log, kubelet
state, rogue list, Nodes), not on what the module printed. One test takes the whole path (boot from an ISO,
agent_wait until rebooted); the others use ``labctl reboot-done`` ("the host has rebooted into the installed
system") so that each case is quick and independent of the simulated agents.
"""

import json
import threading
import time

from conftest import labctl, run_module
from lab.waiting import wait_until

MODULE = "openshift_agent.day2.csr_approve"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
APPROVAL_SUFFIX = "/approval"


def module_args(lab, names, **extra):
    hosts = {host["name"]: host for host in lab.info["hosts"]}
    # wait_sleep bounds how late a Node turning Ready is seen (Nodes are read at every wake-up).
    args = {
        "kubeconfig": lab.kubeconfig,
        "wait_timeout": 45,
        "wait_sleep": 2,
        "nodes": [{"name": name, "addresses": [hosts[name]["ip"]]} for name in names],
    }
    args.update(extra)
    return args


def names_of(lab, count):
    return [host["name"] for host in lab.info["hosts"][:count]]


def objects(dump, kind):
    return {obj["metadata"]["name"]: obj for obj in dump["objects"] if obj["kind"] == kind}


def is_ready(node):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))


def pending(csr):
    return not (csr.get("status") or {}).get("conditions")


def own_csrs(dump, host):
    """{signer: [names]} of the CSRs the host's kubelet filed, in filing order."""
    filed = {}
    for entry in dump["kubelets"][host]["csrs"]:
        filed.setdefault(entry["signer"], []).append(entry["name"])
    return filed


def approved_names(dump):
    return [approval["csr"] for approval in dump["approvals"]]


def reboot_done(lab, names):
    labctl("reboot-done", "--state", str(lab.state), *names)


def filed_counts(lab, names):
    kubelets = lab.control("GET", "/kubelets")
    return [len(kubelets.get(name, {}).get("csrs", [])) for name in names]


def run_while_rogues_fire(lab, names, make_hosts_reboot):
    """csr_approve runs; once it has started, `labctl rogue-csr all` fires, then the hosts reboot."""
    outcome = {}
    runner = threading.Thread(
        target=lambda: outcome.update(
            zip(("result", "output"), run_module(MODULE, module_args(lab, names, wait_timeout=60)))
        )
    )
    runner.start()
    # Its first CSR list shows it started (a watch is only logged when it ends).
    wait_until(
        "the module's CSR list",
        lambda: any(
            r["path"].split("?")[0].endswith("/certificatesigningrequests")
            and "watch=true" not in r["path"]
            and r["user"] == "system:admin"
            for r in lab.requests()
        ),
    )
    rogues = json.loads(labctl("rogue-csr", "--state", str(lab.state), "all").stdout)
    make_hosts_reboot()
    runner.join(120)
    return outcome["result"], outcome["output"], rogues


def assert_exactly_the_hosts_joined(lab, names, result, output, rogues):
    assert not result.get("failed"), output
    assert result["changed"] is True
    dump = lab.dump()
    nodes = objects(dump, "Node")
    assert all(is_ready(nodes[name]) for name in names)
    approved = approved_names(dump)
    assert len(approved) == 2 * len(names)
    for name in names:
        filed = own_csrs(dump, name)
        mine = [csr for csr in approved if csr in filed[CLIENT_SIGNER] + filed.get(SERVING_SIGNER, [])]
        assert len(mine) == 2, (name, filed, approved)
        assert len(set(mine) & set(filed[CLIENT_SIGNER])) == 1 and len(set(mine) & set(filed[SERVING_SIGNER])) == 1
    assert sorted(entry["name"] for entry in result["approved"]) == sorted(approved)

    csrs = objects(dump, "CertificateSigningRequest")
    skipped = {entry["name"]: entry for entry in result["skipped_csrs"]}
    assert {entry["name"] for entry in dump["rogue_csrs"]} == {entry["name"] for entry in rogues}
    assert len(rogues) == 13
    for rogue in rogues:
        assert pending(csrs[rogue["name"]]), rogue
        assert rogue["name"] in skipped, (rogue, sorted(skipped))
        assert skipped[rogue["name"]]["reason"] and skipped[rogue["name"]]["message"], skipped[rogue["name"]]
    # The approvals carry the collection's reason and message.
    condition = dump["approvals"][0]["conditions"][-1]
    assert condition["reason"] == "OpenshiftAgentDay2Approved" and "openshift_agent.day2" in condition["message"]


def test_rogue_csrs_filed_during_the_run_are_never_approved(lab_factory):
    lab = lab_factory("--hosts", "3")
    names = names_of(lab, 3)
    result, output, rogues = run_while_rogues_fire(lab, names, lambda: reboot_done(lab, names))
    assert_exactly_the_hosts_joined(lab, names, result, output, rogues)


def test_booted_hosts_followed_to_rebooted_join_while_rogues_fire(lab_factory, tmp_path):
    """The whole path: boot 3 hosts from a lab-built ISO, agent_wait until rebooted, then csr_approve."""
    lab = lab_factory("--hosts", "3", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "4")
    names = names_of(lab, 3)
    iso = str(tmp_path / "node.x86_64.iso")
    labctl("build-iso", "--state", str(lab.state), "--out", iso)
    lab.control("POST", "/hosts/boot", {"iso": iso, "hosts": names})
    hosts = [{"name": h["name"], "address": h["ip"], "mac_address": h["mac_address"]} for h in lab.info["hosts"]]
    followed, output = run_module(
        "openshift_agent.day2.agent_wait",
        {
            "kubeconfig": lab.kubeconfig,
            "hosts": hosts,
            "until": "rebooted",
            "agent_port": lab.info["agent_port"],
            "kubelet_port": lab.info["kubelet_port"],
            "wait_sleep": 1,
            "request_timeout": 2,
            "wait_timeout": 45,
        },
    )
    assert not followed.get("failed"), output
    # The kubelets filed their client CSRs on reboot, so csr_approve approves at once; holding Ready back
    # for a few seconds keeps it running while the rogues arrive.
    lab.control("POST", "/faults", {"kubelet_ready_delay": 4})
    result, output, rogues = run_while_rogues_fire(lab, names, lambda: None)
    assert_exactly_the_hosts_joined(lab, names, result, output, rogues)
    assert all(lab.control("GET", "/kubelets")[name]["reboots"] == 1 for name in names)


def test_an_existing_node_of_the_same_name_blocks_only_that_host(lab_factory):
    lab = lab_factory("--hosts", "2")
    names = names_of(lab, 2)
    # A Node of the first host's name is still registered (an old worker that was never removed).
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": names[0]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    admin_create_node(lab, node)
    reboot_done(lab, names)
    wait_until("both client CSRs", lambda: all(filed_counts(lab, names)))
    result, output = run_module(MODULE, module_args(lab, names))
    assert result.get("failed"), output
    assert "node already exists" in result["msg"] and "replace_worker.yml" in result["msg"], result["msg"]

    dump = lab.dump()
    blocked_client = own_csrs(dump, names[0])[CLIENT_SIGNER]
    skipped = {entry["name"]: entry for entry in result["skipped_csrs"]}
    assert all(skipped[name]["reason"] == "node-exists" for name in blocked_client)
    assert all("replace_worker.yml" in skipped[name]["message"] for name in blocked_client)
    assert not set(blocked_client) & set(approved_names(dump))
    assert is_ready(objects(dump, "Node")[names[1]])
    by_name = {state["name"]: state for state in result["nodes"]}
    assert by_name[names[0]]["state"] == "blocked" and by_name[names[1]]["state"] == "ready"


def admin_create_node(lab, node):
    """Create a Node as the admin, over the API like `oc create` would."""
    import ssl
    import urllib.request

    import yaml

    with open(lab.kubeconfig, encoding="utf-8") as stream:
        kubeconfig = yaml.safe_load(stream)
    token = kubeconfig["users"][0]["user"]["token"]
    context = ssl.create_default_context(cafile=str(lab.state / "ca.crt"))
    request = urllib.request.Request(
        lab.info["api_url"] + "/api/v1/nodes",
        data=json.dumps(node).encode(),
        method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        assert response.status == 201


def test_a_late_run_finds_duplicates_and_approves_one_per_node_and_signer(lab_factory):
    lab = lab_factory("--hosts", "3", "--csr-refile-seconds", "3")
    names = names_of(lab, 3)
    reboot_done(lab, names)
    # Every kubelet has filed its client CSR again at least once before the run starts.
    wait_until("re-filed client CSRs", lambda: min(filed_counts(lab, names)) >= 2, timeout=15)
    result, output = run_module(MODULE, module_args(lab, names))
    assert not result.get("failed"), output

    dump = lab.dump()
    approved = approved_names(dump)
    assert len(approved) == 6
    nodes = objects(dump, "Node")
    reasons = {entry["name"]: entry["reason"] for entry in result["skipped_csrs"]}
    for name in names:
        assert is_ready(nodes[name])
        filed = own_csrs(dump, name)
        clients = filed[CLIENT_SIGNER]
        approved_clients = [csr for csr in clients if csr in approved]
        assert len(clients) >= 2 and len(approved_clients) == 1, (clients, approved)
        assert len([csr for csr in filed[SERVING_SIGNER] if csr in approved]) == 1
        # The run found the duplicates: the older ones were left alone as superseded.
        duplicates = [csr for csr in clients if csr not in approved_clients]
        assert any(reasons.get(csr) == "superseded" for csr in duplicates), (
            duplicates,
            reasons,
            dump["kubelets"][name],
            result["approved"],
        )
        assert all(reasons.get(csr) in ("superseded", "node-already-approved", "node-exists") for csr in duplicates)


def test_a_spoofed_client_csr_blocks_its_host_and_the_others_join(lab_factory):
    lab = lab_factory("--hosts", "3")
    names = names_of(lab, 3)
    spoof = json.loads(labctl("rogue-csr", "--state", str(lab.state), "spoof-client", names[1]).stdout)[0]
    reboot_done(lab, names)
    wait_until("the client CSRs", lambda: all(filed_counts(lab, names)))
    result, output = run_module(MODULE, module_args(lab, names))
    assert result.get("failed"), output
    assert "possible spoofing" in result["msg"] and names[1] in result["msg"]

    dump = lab.dump()
    approved = approved_names(dump)
    spoofed_host = own_csrs(dump, names[1])[CLIENT_SIGNER]
    assert not (set(spoofed_host) | {spoof["name"]}) & set(approved)
    reasons = {entry["name"]: entry["reason"] for entry in result["skipped_csrs"]}
    assert reasons[spoof["name"]] == "possible-spoofing"
    assert all(reasons[name] == "possible-spoofing" for name in spoofed_host)
    assert any("possible spoofing" in warning and spoof["name"] in warning for warning in result.get("warnings", []))
    nodes = objects(dump, "Node")
    assert names[1] not in nodes
    assert all(is_ready(nodes[name]) for name in (names[0], names[2]))
    assert len(approved) == 4


def test_check_mode_approves_nothing(lab_factory):
    lab = lab_factory("--hosts", "2")
    names = names_of(lab, 2)
    reboot_done(lab, names)
    wait_until("the client CSRs", lambda: all(filed_counts(lab, names)))
    lab.reset_log()
    result, output = run_module(MODULE, module_args(lab, names), check_mode=True)
    assert not result.get("failed"), output
    assert result["changed"] is True
    dump = lab.dump()
    assert sorted(entry["name"] for entry in result["would_approve"]) == sorted(
        own_csrs(dump, name)[CLIENT_SIGNER][0] for name in names
    )
    assert result["approved"] == []
    assert not [r for r in lab.requests() if r["path"].split("?")[0].endswith(APPROVAL_SUFFIX)]
    assert [r for r in lab.requests() if r["method"] not in ("GET", "HEAD")] == []
    assert dump["approvals"] == []


def test_api_errors_and_cut_watches_during_the_run_still_approve_exactly_the_hosts(lab_factory):
    lab = lab_factory("--hosts", "3")
    names = names_of(lab, 3)
    outcome = {}
    runner = threading.Thread(
        target=lambda: outcome.update(
            zip(("result", "output"), run_module(MODULE, module_args(lab, names, wait_timeout=60)))
        )
    )
    runner.start()
    wait_until(
        "the module's CSR list",
        lambda: any(r["path"].split("?")[0].endswith("/certificatesigningrequests") for r in lab.requests()),
    )
    # From now on 1 request in 5 fails with 500/503 (the kubelets' too) and every watch is cut after 1 s.
    lab.control("POST", "/faults", {"api_error_rate": 0.2, "watch_cut_seconds": 1})
    reboot_done(lab, names)
    runner.join(120)
    lab.control("DELETE", "/faults")
    result, output = outcome["result"], outcome["output"]
    assert not result.get("failed"), output
    assert result["watch_restarts"] >= 1

    dump = lab.dump()
    assert any(r["status"] in (500, 503) for r in dump["requests"])
    nodes = objects(dump, "Node")
    assert all(is_ready(nodes[name]) for name in names)
    approved = approved_names(dump)
    assert len(approved) == 6
    for name in names:
        filed = own_csrs(dump, name)
        assert len([csr for csr in approved if csr in filed[CLIENT_SIGNER]]) == 1
        assert len([csr for csr in approved if csr in filed[SERVING_SIGNER]]) == 1


def test_csrs_from_before_not_before_are_left_and_the_refiled_one_is_approved(lab_factory):
    lab = lab_factory("--hosts", "1", "--csr-refile-seconds", "3")
    names = names_of(lab, 1)
    reboot_done(lab, names)
    wait_until("the first client CSR", lambda: all(filed_counts(lab, names)))
    # As if agent_wait had seen this reboot only now: the CSR already filed cannot be the new host's.
    time.sleep(1.1)
    not_before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args = module_args(lab, names, clock_skew=0)
    args["nodes"][0]["not_before"] = not_before
    result, output = run_module(MODULE, args)
    assert not result.get("failed"), output

    dump = lab.dump()
    first, *refiled = own_csrs(dump, names[0])[CLIENT_SIGNER]
    reasons = {entry["name"]: entry["reason"] for entry in result["skipped_csrs"]}
    assert reasons[first] == "before-not-before"
    assert first not in approved_names(dump)
    assert [csr for csr in refiled if csr in approved_names(dump)], (refiled, approved_names(dump))
    assert is_ready(objects(dump, "Node")[names[0]])
