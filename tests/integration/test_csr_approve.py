"""csr_approve against the lab's hosts, kubelets (tests/lab/lab/kubelet.py) and rogue CSRs (tests/lab/lab/rogue.py).

csr_approve approves a host's client CSRs only once its kubelet answers on the kubelet port and the settle period
has passed, so the hosts here boot a lab-built ISO and install (their agents and kubelets on free ports): a lab
host's kubelet port answers only after its reboot from disk (``labctl reboot-done`` starts a kubelet without one,
which only check mode, asking nothing of a host, can use).

Every assertion about what happened is made on the lab's own records (approvals log, request log, kubelet state,
rogue list, CSRs and Nodes), not on what the module printed. Waits end on events of the lab; the module's timeouts
are ceilings far above what a loaded machine needs, except ``join_timeout`` where it is what the test is about.
"""

import calendar
import json
import threading
import time

import pytest
from conftest import labctl, run_module
from lab.waiting import wait_until

MODULE = "openshift_agent.day2.csr_approve"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
APPROVAL_SUFFIX = "/approval"
CSR_LIST = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
ADMIN = "system:admin"  # the lab kubeconfig's user: the module's requests
CEILING = 120  # seconds; for waits that end on an event of the lab
INFRA_LABEL = "node-role.kubernetes.io/infra"
INFRA_TAINT = {"key": "node-role.kubernetes.io/infra", "value": "reserved", "effect": "NoSchedule"}


@pytest.fixture
def start_lab(lab_factory):
    """Start a lab whose hosts' agents and kubelets listen on free ports, with an ISO for them; it is stopped when
    the test ends."""
    started = []

    def start(hosts, *extra, install_seconds=6):
        lab = lab_factory(
            "--hosts",
            str(hosts),
            "--agent-port",
            "0",
            "--kubelet-port",
            "0",
            "--install-seconds",
            str(install_seconds),
            *extra,
        )
        started.append(lab)
        lab.iso = str(lab.state / "node.x86_64.iso")
        labctl("build-iso", "--state", str(lab.state), "--out", lab.iso)
        return lab

    yield start
    for lab in started:
        labctl("stop", "--state", str(lab.state), check=False)


def boot(lab, names, install_seconds=None):
    body = {"iso": lab.iso, "hosts": list(names)}
    if install_seconds:
        body["install_seconds"] = install_seconds
    lab.control("POST", "/hosts/boot", body)


def hosts_of(lab, names):
    by_name = {host["name"]: host for host in lab.info["hosts"]}
    return [
        {
            "name": name,
            "address": by_name[name]["ip"],
            "addresses": [by_name[name]["ip"]],
            "mac_address": by_name[name]["mac_address"],
        }
        for name in names
    ]


def module_args(lab, names, **extra):
    args = {
        "kubeconfig": lab.kubeconfig,
        "hosts": hosts_of(lab, names),
        "agent_port": lab.info["agent_port"],
        "kubelet_port": lab.info["kubelet_port"],
        "wait_sleep": 1,
        "request_timeout": 2,
        "settle_seconds": 2,
        # Ceilings: every run here ends when its hosts joined or failed for the reason the test is about.
        "boot_timeout": 300,
        "install_timeout": 400,
        "join_timeout": 300,
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


def kubelets_csrs(dump, hosts):
    """Every CSR the kubelets of ``hosts`` filed."""
    return {entry["name"] for host in hosts for entry in dump["kubelets"][host]["csrs"]}


def approved_names(dump):
    return [approval["csr"] for approval in dump["approvals"]]


def reboot_done(lab, names):
    labctl("reboot-done", "--state", str(lab.state), *names)


def filed_counts(lab, names, signer=CLIENT_SIGNER):
    """How many CSRs of ``signer`` each host's kubelet has filed so far (the lab's kubelet record)."""
    kubelets = lab.control("GET", "/kubelets")
    return [len([c for c in kubelets.get(name, {}).get("csrs", []) if c["signer"] == signer]) for name in names]


def module_listed_csrs(lab):
    """The module's first CSR list is in the lab's request log: its loop is running."""
    return any(r["path"].split("?")[0] == CSR_LIST and r["user"] == ADMIN for r in lab.requests())


def in_background(lab, args, check_mode=False):
    outcome = {}
    runner = threading.Thread(
        target=lambda: outcome.update(zip(("result", "output"), run_module(MODULE, args, check_mode=check_mode)))
    )
    runner.start()
    return runner, outcome


def finish(runner, outcome):
    runner.join(600)
    assert not runner.is_alive(), "csr_approve did not end"
    assert "result" in outcome, "csr_approve gave no result (the thread's exception is above)"
    return outcome["result"], outcome["output"]


def assert_exactly_the_hosts_joined(lab, names, result, output, rogues):
    assert not result.get("failed"), output[-6000:]
    assert result["changed"] is True
    assert result["joined"] == sorted(names) and result["failed_hosts"] == []
    dump = lab.dump()
    nodes = objects(dump, "Node")
    assert all(is_ready(nodes[name]) for name in names)
    approved = approved_names(dump)
    assert len(approved) == len(set(approved)) == 2 * len(names), approved
    for name in names:
        filed = own_csrs(dump, name)
        # One client CSR (the kubelet files one an hour) and one serving CSR, both the kubelet's own.
        assert set(approved) & set(filed[CLIENT_SIGNER]) == set(filed[CLIENT_SIGNER]) and len(filed[CLIENT_SIGNER]) == 1
        assert len(set(approved) & set(filed[SERVING_SIGNER])) == 1, (name, filed, approved)
    assert sorted(entry["name"] for entry in result["approved"]) == sorted(approved)

    csrs = objects(dump, "CertificateSigningRequest")
    assert {entry["name"] for entry in dump["rogue_csrs"]} == {entry["name"] for entry in rogues}
    assert len(rogues) == 13
    for rogue in rogues:
        assert pending(csrs[rogue["name"]]), rogue  # neither approved nor denied: it may be someone else's
        assert rogue["name"] not in approved, rogue
    # Every approval is the module's, with the collection's reason and message.
    for approval in dump["approvals"]:
        assert approval["user"] == ADMIN
        condition = approval["conditions"][-1]
        assert condition["reason"] == "OpenshiftAgentDay2Approved", condition
        assert condition["message"].startswith("Approved by openshift_agent.day2.csr_approve: "), condition


def test_rogue_csrs_filed_during_the_run_are_never_approved(start_lab):
    """csr_approve runs before the hosts boot; once its loop reads the CSRs, every rogue kind is filed, then the
    hosts boot, install, reboot and join."""
    lab = start_lab(3)
    names = names_of(lab, 3)
    args = module_args(lab, names)
    # One host with labels and a taint: they are on its Node as soon as it registers, before it is Ready.
    args["hosts"][2].update(labels={INFRA_LABEL: ""}, taints=[INFRA_TAINT])
    runner, outcome = in_background(lab, args)
    wait_until("the module's CSR list", lambda: module_listed_csrs(lab), timeout=CEILING)
    rogues = json.loads(labctl("rogue-csr", "--state", str(lab.state), "all").stdout)
    boot(lab, names)
    result, output = finish(runner, outcome)
    assert_exactly_the_hosts_joined(lab, names, result, output, rogues)
    dump = lab.dump()
    nodes = objects(dump, "Node")
    assert nodes[names[2]]["metadata"]["labels"][INFRA_LABEL] == ""
    assert INFRA_TAINT in nodes[names[2]]["spec"]["taints"], nodes[names[2]]["spec"]
    assert all(INFRA_LABEL not in nodes[name]["metadata"]["labels"] for name in names[:2])
    assert all(INFRA_TAINT not in (nodes[name]["spec"].get("taints") or []) for name in names[:2])
    log = [(r["method"], r["path"].split("?")[0], r["user"]) for r in dump["requests"]]
    marked = log.index(("PATCH", "/api/v1/nodes/%s" % names[2], ADMIN))
    # The kubelet patches its Node status once: to report Ready.
    ready = min(i for i, entry in enumerate(log) if entry[1] == "/api/v1/nodes/%s/status" % names[2])
    assert marked < ready
    # Each host was followed through its install to the reboot, then approved once its kubelet answered.
    for name in names:
        host = result["hosts"][name]
        assert host["rebooted_by"] == "its kubelet answers (internal_error)", host
        assert host["agent"]["last_answer"] and host["state"] == "joined"


def test_booted_hosts_followed_to_rebooted_join_while_rogues_fire(start_lab):
    """The whole path: boot 3 hosts from a lab-built ISO, agent_wait until rebooted, then csr_approve; the rogues
    are filed as soon as its loop has read the CSRs, so (on any but a stalled machine) within the settle period
    (the default 10 s) before the first approval, when a second key would stop a host: ill-formed CSRs do not."""
    lab = start_lab(3, install_seconds=4)
    names = names_of(lab, 3)
    boot(lab, names)
    followed, output = run_module(
        "openshift_agent.day2.agent_wait",
        {
            "kubeconfig": lab.kubeconfig,
            "hosts": hosts_of(lab, names),
            "until": "rebooted",
            "agent_port": lab.info["agent_port"],
            "kubelet_port": lab.info["kubelet_port"],
            "wait_sleep": 1,
            "request_timeout": 2,
            "boot_timeout": 300,
            "install_timeout": 400,
        },
    )
    assert not followed.get("failed"), output
    assert followed["reached"] == names
    # Holding Ready back keeps csr_approve running while the rogues arrive, whichever moment they come.
    lab.control("POST", "/faults", {"kubelet_ready_delay": 4})
    runner, outcome = in_background(lab, module_args(lab, names, settle_seconds=10))
    wait_until("the module's CSR list", lambda: module_listed_csrs(lab), timeout=CEILING)
    rogues = json.loads(labctl("rogue-csr", "--state", str(lab.state), "all").stdout)
    result, output = finish(runner, outcome)
    assert_exactly_the_hosts_joined(lab, names, result, output, rogues)
    assert all(lab.control("GET", "/kubelets")[name]["reboots"] == 1 for name in names)
    # No approval before the settle period: at least 10 s between a host's reboot being seen and its first
    # approval in the lab's log (both times in whole seconds, so 9 s apart at least as written).
    approved_at = {approval["csr"]: approval["time"] for approval in lab.dump()["approvals"]}
    for name in names:
        host = result["hosts"][name]
        assert host["phases"]["settling"] >= 10, host["phases"]
        first = min(approved_at[entry["name"]] for entry in host["approved"])
        assert seconds_between(host["phase_started"]["rebooted"], first) >= 9, (host["phase_started"], first)


def seconds_between(earlier, later):
    def parse(text):
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))

    return parse(later) - parse(earlier)


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


def test_no_client_csr_is_approved_for_a_host_whose_node_already_exists_and_the_others_join(start_lab):
    """workers_check refuses such a host before anything is written; csr_approve, called on its own, still never
    hands an existing Node's identity to a new client CSR: that host fails at join_timeout, the other joins."""
    lab = start_lab(2)
    names = names_of(lab, 2)
    # A Node of the first host's name is still registered (an old worker that was never removed).
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": names[0]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    admin_create_node(lab, node)
    boot(lab, names)
    wait_until("both client CSRs", lambda: all(filed_counts(lab, names)), timeout=CEILING)
    # join_timeout is what this test is about: the blocked host fails when it runs out.
    result, output = run_module(MODULE, module_args(lab, names, join_timeout=15))
    assert result.get("failed"), output[-6000:]
    assert result["failed_hosts"] == [names[0]] and result["joined"] == [names[1]]
    assert result["msg"].startswith("csr_approve: 1 of 2 host(s) failed (day2_max_failed_hosts is 0), 1 joined: ")
    problem = result["hosts"][names[0]]["problem"]
    assert problem.startswith("not Ready within 15 s after it rebooted (") and "its Node registered" in problem, problem
    assert "not Ready yet; waiting for its serving certificate request" in problem, problem

    dump = lab.dump()
    blocked = own_csrs(dump, names[0])
    assert blocked[CLIENT_SIGNER] and SERVING_SIGNER not in blocked  # no client certificate, so no serving CSR
    assert not set(blocked[CLIENT_SIGNER]) & set(approved_names(dump))
    csrs = objects(dump, "CertificateSigningRequest")
    assert all(pending(csrs[name]) for name in blocked[CLIENT_SIGNER])
    assert not is_ready(objects(dump, "Node")[names[0]])
    assert is_ready(objects(dump, "Node")[names[1]])
    assert set(approved_names(dump)) == kubelets_csrs(dump, [names[1]])


def test_a_late_run_approves_every_copy_of_the_kubelets_client_csr_and_one_serving_csr(start_lab):
    """The hosts rebooted long before the run; their kubelets filed their client CSR again and again (same key).
    Every pending copy is approved, so none strands the kubelet; one serving CSR per host."""
    # A re-file every 10 s: at least two copies before the run, far fewer than the flood guard's 10 for 2 hosts
    # however long the run takes to start (it would take 40 s more).
    lab = start_lab(2, "--csr-refile-seconds", "10")
    names = names_of(lab, 2)
    boot(lab, names)
    wait_until("re-filed client CSRs", lambda: min(filed_counts(lab, names)) >= 2, timeout=CEILING)
    before = {name: own_csrs(lab.dump(), name)[CLIENT_SIGNER] for name in names}
    result, output = run_module(MODULE, module_args(lab, names))
    assert not result.get("failed"), output[-6000:]
    assert result["joined"] == names

    dump = lab.dump()
    approved = approved_names(dump)
    assert len(approved) == len(set(approved))
    nodes = objects(dump, "Node")
    for name in names:
        assert is_ready(nodes[name])
        filed = own_csrs(dump, name)
        # Every copy filed before the run is approved (the kubelet's key, each one).
        assert len(before[name]) >= 2 and set(before[name]) <= set(approved), (before[name], approved)
        assert len([csr for csr in filed[SERVING_SIGNER] if csr in approved]) == 1, (filed, approved)
        mine = [entry["name"] for entry in result["approved"] if entry["node"] == name and entry["kind"] == "client"]
        assert set(mine) >= set(before[name])
    # Nothing but the kubelets' own CSRs.
    assert set(approved) <= kubelets_csrs(dump, names)


def test_a_spoofed_client_csr_stops_its_host_and_the_others_join(start_lab):
    """A second key among a host's pending client CSRs: which is the kubelet's cannot be told, so none is approved
    and that host stops, naming both; the other hosts join."""
    lab = start_lab(3)
    names = names_of(lab, 3)
    boot(lab, names)
    wait_until("the client CSRs", lambda: all(filed_counts(lab, names)), timeout=CEILING)
    spoof = json.loads(labctl("rogue-csr", "--state", str(lab.state), "spoof-client", names[1]).stdout)[0]
    result, output = run_module(MODULE, module_args(lab, names))
    assert result.get("failed"), output[-6000:]
    assert result["failed_hosts"] == [names[1]] and result["joined"] == [names[0], names[2]]
    problem = result["hosts"][names[1]]["problem"]
    assert problem.startswith("the pending client CSRs of %s carry 2 different public keys: " % names[1]), problem
    assert problem in result["msg"]

    dump = lab.dump()
    approved = approved_names(dump)
    spoofed_host = own_csrs(dump, names[1])[CLIENT_SIGNER]
    assert spoof["name"] in problem and all(name in problem for name in spoofed_host)
    assert not (set(spoofed_host) | {spoof["name"]}) & set(approved)
    csrs = objects(dump, "CertificateSigningRequest")
    assert pending(csrs[spoof["name"]]) and all(pending(csrs[name]) for name in spoofed_host)
    nodes = objects(dump, "Node")
    assert names[1] not in nodes
    assert all(is_ready(nodes[name]) for name in (names[0], names[2]))
    assert len(approved) == 4
    assert set(approved) <= kubelets_csrs(dump, [names[0], names[2]])


def test_check_mode_approves_nothing_and_asks_no_agent(start_lab):
    """The hosts' agents answer (a long install) and their kubelets have filed client CSRs (``reboot-done``): check
    mode names the CSRs a run would approve, writes nothing and sends no request to an agent."""
    lab = start_lab(2)
    names = names_of(lab, 2)
    boot(lab, names, install_seconds=600)
    wait_until("the agents up", lambda: all(h["agent_up"] for h in lab.control("GET", "/hosts")), timeout=CEILING)
    reboot_done(lab, names)
    wait_until("the client CSRs", lambda: all(filed_counts(lab, names)), timeout=CEILING)
    lab.reset_log()
    asked = {host["name"]: host["requests"] for host in lab.control("GET", "/hosts")}
    result, output = run_module(MODULE, module_args(lab, names), check_mode=True)
    assert not result.get("failed"), output
    assert result["changed"] is True
    dump = lab.dump()
    own = {name: own_csrs(dump, name)[CLIENT_SIGNER] for name in names}
    assert sorted((entry["name"], entry["node"]) for entry in result["would_approve"]) == sorted(
        (csr, name) for name in names for csr in own[name]
    )
    assert all(entry["signer"] == CLIENT_SIGNER and entry["created"] for entry in result["would_approve"])
    assert [(h["name"], h["addresses"]) for h in result["would_follow"]] == [
        (h["name"], h["addresses"]) for h in hosts_of(lab, names)
    ]
    for name, line in zip(names, result["msg"]):
        assert line.startswith("Check mode: %s would be followed at " % name), line
        assert "would approve now, once its kubelet answers: %s" % ", ".join(own[name]) in line, line
    assert not result.get("approved")
    # Nothing written, nothing approved, no agent asked (the lab's records).
    assert not [r for r in lab.requests() if r["path"].split("?")[0].endswith(APPROVAL_SUFFIX)]
    assert [r for r in lab.requests() if r["method"] not in ("GET", "HEAD")] == []
    assert dump["approvals"] == []
    assert all(pending(csr) for csr in objects(dump, "CertificateSigningRequest").values())
    assert {host["name"]: host["requests"] for host in lab.control("GET", "/hosts")} == asked


def test_api_errors_during_the_run_still_approve_exactly_the_hosts(start_lab):
    lab = start_lab(3)
    names = names_of(lab, 3)
    runner, outcome = in_background(lab, module_args(lab, names))
    wait_until("the module's CSR list", lambda: module_listed_csrs(lab), timeout=CEILING)
    # From now on 1 request in 5 fails with 500/503 (the kubelets' too). The hosts boot once the module has had
    # its share, so the errors hit its loop, and go on hitting the approvals.
    lab.control("POST", "/faults", {"api_error_rate": 0.2})
    wait_until(
        "an API error answered to the module",
        lambda: any(r["user"] == ADMIN and r["status"] in (500, 503) for r in lab.requests()),
        timeout=CEILING,
    )
    boot(lab, names)
    result, output = finish(runner, outcome)
    lab.control("DELETE", "/faults")
    assert not result.get("failed"), output[-6000:]
    assert result["joined"] == names

    dump = lab.dump()
    assert any(r["user"] == ADMIN and r["status"] in (500, 503) for r in dump["requests"])
    nodes = objects(dump, "Node")
    assert all(is_ready(nodes[name]) for name in names)
    approved = approved_names(dump)
    assert len(approved) == len(set(approved)) == 6
    for name in names:
        filed = own_csrs(dump, name)
        assert len([csr for csr in approved if csr in filed[CLIENT_SIGNER]]) == 1
        assert len([csr for csr in approved if csr in filed[SERVING_SIGNER]]) == 1


def test_csrs_from_before_installed_after_are_left_and_the_refiled_one_is_approved(start_lab):
    # A re-file every 5 s: the flood guard (10 for one host) is 50 s of re-files away.
    lab = start_lab(1, "--csr-refile-seconds", "5")
    names = names_of(lab, 1)
    boot(lab, names)
    wait_until("the first client CSR", lambda: all(filed_counts(lab, names)), timeout=CEILING)
    # As if the host had been reinstalled only now: the CSR already filed cannot be the new installation's.
    # (CSR creation times have whole seconds: the next second is after it.)
    time.sleep(1.1)
    installed_after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    first = own_csrs(lab.dump(), names[0])[CLIENT_SIGNER][0]
    result, output = run_module(
        MODULE, module_args(lab, names, clock_skew=0, installed_after={names[0]: installed_after})
    )
    assert not result.get("failed"), output[-6000:]
    assert result["joined"] == names

    dump = lab.dump()
    csrs = objects(dump, "CertificateSigningRequest")
    clients = own_csrs(dump, names[0])[CLIENT_SIGNER]
    assert clients[0] == first
    assert csrs[first]["metadata"]["creationTimestamp"] < installed_after
    assert first not in approved_names(dump) and pending(csrs[first])
    refiled = [csr for csr in clients[1:] if csr in approved_names(dump)]
    assert refiled, (clients, approved_names(dump))
    assert all(csrs[csr]["metadata"]["creationTimestamp"] >= installed_after for csr in refiled)
    assert is_ready(objects(dump, "Node")[names[0]])
