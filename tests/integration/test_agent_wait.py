"""agent_wait against the lab's simulated hosts booted at the console, every fail-fast case, the port environment.

The boot through Redfish BMCs is in test_agent_wait_redfish.py.

Each lab here runs its hosts' agents and kubelets on free ports (``--agent-port 0 --kubelet-port 0``, read
back from lab.json), so the tests never collide with another lab on the default 8090/10250. The default lab is
4.21; variants v417 to v421 check the token and header of those releases.

No wait depends on the machine's speed: a test waits for an event of the lab (a host's status, its request count,
its reboot), and the module's own timeouts (``boot_timeout``, ``install_timeout``) are ceilings far above what a
loaded machine needs, except where a timeout is what the test is about. What happened is read from the lab's
records (the host's status, events, agent requests, kubelet handshakes) wherever they say it.
"""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import labctl, run_module
from lab.waiting import wait_until

MODULE = "openshift_agent.day2.agent_wait"
INSTALL_SECONDS = 10
# Ceilings for waits that end on an event: generous for a loaded 2-core machine, never reached when all is well.
CEILING = 120
BOOT_TIMEOUT, INSTALL_TIMEOUT = 300, 400
OTHER_CLUSTER = "0b9c1e55-2f4e-4d7e-8a3c-9d2b6e1f4a70"
NTP_MESSAGE = "Host couldn't synchronize with any NTP server"
# What a day-2 worker's agent reports, in order; the service stores Rebooting as Done.
DAY2_STAGES = ["Starting installation", "Installing", "Writing image to disk", "Waiting for control plane", "Done"]
ALREADY_REBOOTED = (
    "the kubelet aborts TLS with alert internal_error (its serving certificate is not approved yet): the host "
    "already rebooted from its disk"
)


@pytest.fixture(scope="module")
def lab(lab_factory, tmp_path_factory):
    started = lab_factory(
        "--hosts", "3", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", str(INSTALL_SECONDS)
    )
    started.iso = str(tmp_path_factory.mktemp("iso") / "node.x86_64.iso")
    labctl("build-iso", "--state", str(started.state), "--out", started.iso)
    return started


@pytest.fixture
def versioned_lab(lab_factory, tmp_path):
    """A one-host lab of a release (``--variant``) and an ISO for it; stopped when the test ends."""
    started = []

    def start(variant):
        lab = lab_factory(
            "--variant", variant, "--hosts", "1", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6"
        )
        started.append(lab)
        lab.iso = str(tmp_path / "node.iso")
        build_iso(lab, lab.iso)
        return lab

    yield start
    for lab in started:
        labctl("stop", "--state", str(lab.state), check=False)


@pytest.fixture(autouse=True)
def no_faults(lab):
    lab.control("DELETE", "/faults")
    yield
    lab.control("DELETE", "/faults")


def hosts_of(lab, *names):
    by_name = {h["name"]: h for h in lab.info["hosts"]}
    return [
        {"name": name, "address": by_name[name]["ip"], "mac_address": by_name[name]["mac_address"]} for name in names
    ]


def boot(lab, *names, iso=None, install_seconds=None):
    body = {"iso": iso or lab.iso, "hosts": list(names)}
    if install_seconds:
        body["install_seconds"] = install_seconds
    return lab.control("POST", "/hosts/boot", body)


def params_for(lab, names, **args):
    params = {
        "kubeconfig": lab.kubeconfig,
        "hosts": hosts_of(lab, *names),
        "agent_port": lab.info["agent_port"],
        "kubelet_port": lab.info["kubelet_port"],
        "wait_sleep": 1,
        "request_timeout": 2,
        "boot_timeout": BOOT_TIMEOUT,
        "install_timeout": INSTALL_TIMEOUT,
        # These tests count and inspect this controller's own requests to the agents; the cluster's monitor
        # (follow_from auto or cluster) asks them too: tests/integration/test_follow_from_cluster.py.
        "follow_from": "controller",
    }
    params.update(args)
    return params


def agent_wait(lab, names, **args):
    return run_module(MODULE, params_for(lab, names, **args))[0]


def build_iso(lab, out, **body):
    """An ISO from the lab's node-joiner, through the control API: returns its tokens too (the CLI hides them)."""
    return lab.control("POST", "/build-iso", dict(body, out=str(out)))


def stages_in_order(timeline):
    """The distinct stages of a timeline; they must follow the day-2 worker order."""
    seen = []
    for entry in timeline:
        if entry["stage"] and (not seen or seen[-1] != entry["stage"]):
            seen.append(entry["stage"])
    assert seen == [stage for stage in DAY2_STAGES if stage in seen], seen
    return seen


def host_state(lab, name):
    return next(h for h in lab.control("GET", "/hosts") if h["name"] == name)


def rebooted(lab, name):
    """The lab's record of the host once it has rebooted from its disk and its agent is gone (None before)."""
    state = host_state(lab, name)
    return state if state["phase"] == "rebooted" and not state["agent_up"] else None


def first_entry(timeline, **fields):
    return next(e for e in timeline if all(e[key] == value for key, value in fields.items()))


def test_three_hosts_booted_at_the_console_reach_rebooted(lab):
    names = ["extra-worker-0", "extra-worker-1", "extra-worker-2"]
    # 24 s installs: every stage lasts at least 1.2 s against 1 s polls, Writing image to disk 8 s.
    boot(lab, *names, install_seconds=24)
    result = agent_wait(lab, names)
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    assert result["reached"] == names and result["failed_hosts"] == []
    assert result["token_info"] == {
        "source": "secret",
        "key": "watcherAuthToken",
        "persona": "watcherAuth",
        "expires": result["token_info"]["expires"],
        "first_header": "Watcher-Authorization",
    }
    assert result["token_info"]["expires"].endswith("Z")
    for name in names:
        host = result["hosts"][name]
        agent = host["agent"]
        assert host["reached"] == "rebooted" and host["problem"] is None and host["failed_in"] is None
        assert agent["auth_header"] == "Watcher-Authorization" and agent["auth_refused"] is None
        stages = stages_in_order(agent["timeline"])
        if stages[-1] == "Done":  # seen at Done while the agent still answered
            assert agent["status"] == "added-to-existing-cluster" and agent["last_answer"]
            assert host["state"] == "installing" and agent["kubelet"] is None
        else:  # the reboot came between two polls: the installed system's kubelet told it
            assert agent["kubelet"] == "internal_error" and host["state"] == "rebooted", agent["timeline"]
        writing = [e for e in agent["timeline"] if e["stage"] == "Writing image to disk"]
        assert writing, agent["timeline"]
        assert all(isinstance(e["percentage"], int) for e in writing)
        assert any("reached installation stage Writing image to disk: " in (e["event"] or "") for e in writing)
        # The lab host really goes through the whole install (agent_wait may stop at stage Done).
        state = wait_until("%s rebooted" % name, lambda name=name: rebooted(lab, name), timeout=CEILING)
        assert state["kubelet"]
        assert "Host: %s, reached installation stage Writing image to disk: 100%%" % name in state["events"]
        # At most two requests per host and round (the lab counts every request its agent got); the header was
        # right at once, so no third one.
        assert 0 < state["requests"] <= 2 * result["rounds"], (state["requests"], result["rounds"])


def test_the_iso_day2_iso_builds_boots_and_is_followed(lab, tmp_path):
    import yaml

    with open(lab.inventory) as stream:
        inventory = yaml.safe_load(stream)["all"]["children"]["new_workers"]["hosts"]
    built, _output = run_module(
        "openshift_agent.day2.day2_iso",
        {
            "kubeconfig": lab.kubeconfig,
            "dest": str(tmp_path),
            "wait_sleep": 1,
            "hosts": [dict(hostvars, name=name) for name, hostvars in inventory.items()],
        },
    )
    assert not built.get("failed"), built.get("msg")
    iso = str(tmp_path / "node.x86_64.iso")
    boot(lab, "extra-worker-0", "extra-worker-1", iso=iso)
    result = agent_wait(lab, ["extra-worker-0", "extra-worker-1"])
    assert not result.get("failed"), result.get("msg")
    assert result["reached"] == ["extra-worker-0", "extra-worker-1"]
    assert all(host["reached"] == "rebooted" for host in result["hosts"].values())
    assert all(host_state(lab, name)["iso"] == iso for name in ("extra-worker-0", "extra-worker-1"))


def test_a_failing_ntp_validation_fails_after_the_grace_with_the_agents_message(lab):
    lab.control("POST", "/faults", {"validation_failing": "extra-worker-0:ntp-synced"})
    boot(lab, "extra-worker-0")
    result = agent_wait(lab, ["extra-worker-0"], validation_grace="4s")
    assert result["failed"] is True
    assert result["failed_hosts"] == ["extra-worker-0"] and result["reached"] == []
    assert result["msg"].startswith(
        "agent_wait: 1 of 1 host(s) failed (day2_max_failed_hosts is 0), 0 reached rebooted: extra-worker-0: "
    )
    host = result["hosts"]["extra-worker-0"]
    problem = host["problem"]
    assert problem.startswith("host extra-worker-0 (127.0.111.20): validation ntp-synced has been failing since")
    assert NTP_MESSAGE in problem and "validation_grace 4 s" in problem and problem in result["msg"]
    assert host["state"] == "failed" and host["failed_in"] == "installing"
    agent = host["agent"]
    assert agent["status"] == "insufficient" and host["reached"] == "discovered"
    assert agent["failing_validations"][0]["id"] == "ntp-synced"
    assert agent["failing_validations"][0]["message"] == NTP_MESSAGE
    # After the grace, not before (counted from when the validation was first seen failing).
    since = agent["failing_validations"][0]["since"]
    assert result["duration"] >= 4 and host["phase_started"]["failed"] > since
    # The host never got further: it still waits for the validation in the lab.
    assert host_state(lab, "extra-worker-0")["status"] == "insufficient"


def test_a_validation_that_recovers_within_the_grace_does_not_fail(lab):
    lab.control("POST", "/faults", {"validation_failing": "extra-worker-1:ntp-synced"})
    boot(lab, "extra-worker-1")
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent_wait, lab, ["extra-worker-1"], until="validated", validation_grace="10m")
        wait_until(
            "insufficient", lambda: host_state(lab, "extra-worker-1")["status"] == "insufficient", timeout=CEILING
        )
        # Two polls (two requests each) of agent_wait while the host is insufficient: however long ansible took
        # to start, the module has seen the failing validation before it passes.
        polled = host_state(lab, "extra-worker-1")["requests"]
        wait_until("two polls", lambda: host_state(lab, "extra-worker-1")["requests"] >= polled + 4, timeout=CEILING)
        lab.control("DELETE", "/faults?name=validation_failing")
        result = running.result(timeout=600)
    assert not result.get("failed"), result.get("msg")
    assert result["reached"] == ["extra-worker-1"]
    agent = result["hosts"]["extra-worker-1"]["agent"]
    statuses = [e["status"] for e in agent["timeline"]]
    assert "insufficient" in statuses and statuses[-1] != "insufficient"
    assert agent["failing_validations"] == [] and result["hosts"]["extra-worker-1"]["reached"] != "discovered"


def test_an_install_error_fails_its_host_at_once_with_the_stage_and_the_message(lab):
    lab.control("POST", "/faults", {"install_error": "extra-worker-1:Writing image to disk"})
    boot(lab, "extra-worker-0", "extra-worker-1")
    result = agent_wait(lab, ["extra-worker-0", "extra-worker-1"])
    assert result["failed"] is True
    assert result["failed_hosts"] == ["extra-worker-1"]
    # The other host went on to the end.
    assert result["reached"] == ["extra-worker-0"] and result["hosts"]["extra-worker-0"]["problem"] is None
    assert result["msg"].startswith(
        "agent_wait: 1 of 2 host(s) failed (day2_max_failed_hosts is 0), 1 reached rebooted"
    )
    host = result["hosts"]["extra-worker-1"]
    # The agent reports stage Failed; the service keeps the last stage reached and puts the host in error
    # (status_info "Failed - ...").
    assert host["problem"].startswith("host extra-worker-1 (127.0.111.21) failed: status error at stage ")
    assert ": Failed - installation stage Writing image to disk failed" in host["problem"]
    assert host["problem"] in result["msg"]
    assert host["agent"]["status"] == "error" and host["agent"]["stage"] == "Writing image to disk"
    # At once: in the very poll that saw the error.
    seen = first_entry(host["agent"]["timeline"], status="error")
    assert host["phase_started"]["failed"] == seen["time"]
    assert host_state(lab, "extra-worker-1")["status"] == "error"


def test_wrong_boot_order_fails_that_host_with_the_fix_and_max_failed_hosts_lets_the_task_succeed(lab):
    lab.control("POST", "/faults", {"wrong_boot_order": "extra-worker-2:1"})
    boot(lab, "extra-worker-0", "extra-worker-2")
    result = agent_wait(lab, ["extra-worker-0", "extra-worker-2"], max_failed_hosts=1)
    assert not result.get("failed"), result.get("msg")
    assert result["failed_hosts"] == ["extra-worker-2"] and "extra-worker-0" in result["reached"]
    assert any("1 host(s) failed, within day2_max_failed_hosts (1): extra-worker-2" in w for w in result["warnings"]), (
        result["warnings"]
    )
    host = result["hosts"]["extra-worker-2"]
    assert "is in status installing-pending-user-action at stage Done" in host["problem"]
    assert "eject the virtual media or fix the boot order" in host["problem"]
    assert "please reboot and fix boot order to boot from disk" in host["problem"]
    agent = host["agent"]
    assert agent["status"] == "installing-pending-user-action" and agent["stage"] == "Done"
    # The lab never showed stage Done without the pending user action.
    assert all(e["status"] == "installing-pending-user-action" for e in agent["timeline"] if e["stage"] == "Done")
    assert host["phase_started"]["failed"] == first_entry(agent["timeline"], stage="Done")["time"]
    state = host_state(lab, "extra-worker-2")
    assert state["status"] == "installing-pending-user-action" and state["phase"] == "agent"
    # A host that failed did not get as far as asked: it is not among the hosts that reached it.
    assert result["reached"] == ["extra-worker-0"], result["reached"]


def test_the_agent_unreachable_for_20_s_mid_install_then_the_run_succeeds(lab):
    # A 60 s install: installing-in-progress from 18 s, the reboot at 51 s, so the agent answers again for long
    # after the 20 s outage, however late the fault is set.
    boot(lab, "extra-worker-0", install_seconds=60)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent_wait, lab, ["extra-worker-0"])
        wait_until(
            "installing-in-progress",
            lambda: host_state(lab, "extra-worker-0")["status"] == "installing-in-progress",
            timeout=CEILING,
        )
        lab.control("POST", "/faults", {"agent_unreachable": "extra-worker-0:20"})
        wait_until("the outage", lambda: not host_state(lab, "extra-worker-0")["agent_up"], timeout=CEILING)
        wait_until("the agent back", lambda: host_state(lab, "extra-worker-0")["agent_up"], timeout=CEILING)
        back_at = host_state(lab, "extra-worker-0")["requests"]
        result = running.result(timeout=600)
    assert not result.get("failed"), result.get("msg")
    host = result["hosts"]["extra-worker-0"]
    timeline = host["agent"]["timeline"]
    silent = [i for i, e in enumerate(timeline) if e["event"] == "the agent does not answer"]
    assert silent, timeline
    # The agent answered again after the outage (not only the kubelet).
    events = ("Host extra-worker-0:", "Host: extra-worker-0,")  # a status change, a progress report
    assert any(e["event"] and e["event"].startswith(events) for e in timeline[silent[0] + 1 :])
    assert host_state(lab, "extra-worker-0")["requests"] > back_at
    assert host["agent"]["unreachable_since"] is None
    assert host["reached"] == "rebooted" and result["reached"] == ["extra-worker-0"]


REFUSAL_FIX = "Rebuild the ISO with day2_iso (force: true) and boot it again when the token expired"


@pytest.mark.parametrize(
    "how, refusals, cause",
    [
        (
            "wrong token",
            [
                "in Watcher-Authorization: HTTP 401 on GET /clusters: Failed to parse token:",
                "in Authorization: HTTP 401 on GET /clusters: Failed to parse token:",
            ],
            "the host runs an ISO signed with another key than the cluster's current token",
        ),
        (
            "expired token",
            ["in Watcher-Authorization: HTTP 401", "in Authorization: HTTP 401"],
            "the token has expired",
        ),
        ("token rejected by the agent", ["in Watcher-Authorization: HTTP 401", "in Authorization: HTTP 401"], ""),
        (
            "agent persona",
            [
                "in Authorization: HTTP 403 on GET /clusters: authClaim agentAuth is unauthorized to access",
                "in Watcher-Authorization: HTTP 403 on GET /clusters: authClaim agentAuth is unauthorized",
            ],
            "a token of persona agentAuth cannot follow the install: the agent wants the watcher token",
        ),
    ],
)
def test_a_token_refused_in_both_headers_fails_fast_with_the_fix(lab, tmp_path, how, refusals, cause):
    args, iso = {}, None
    if how == "wrong token":
        args["token"] = "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjF9.c2ln"
    elif how == "expired token":
        built = build_iso(lab, tmp_path / "expired.iso", expired_token=True)
        iso, args["token"] = built["iso"], built["token"]
    elif how == "agent persona":
        args["token"] = build_iso(lab, tmp_path / "again.iso")["tokens"]["agent"]
    else:
        lab.control("POST", "/faults", {"token_rejected": "1"})
    boot(lab, "extra-worker-1", iso=iso)
    result, output = run_module(MODULE, params_for(lab, ["extra-worker-1"], **args))
    assert result["failed"] is True
    assert result["failed_hosts"] == ["extra-worker-1"]
    host = result["hosts"]["extra-worker-1"]
    problem = host["problem"]
    assert problem.startswith(
        "host extra-worker-1 (127.0.111.21): the agent at 127.0.111.21:%d refused the token: " % lab.info["agent_port"]
    )
    assert result["msg"].startswith("agent_wait: 1 of 1 host(s) failed") and problem in result["msg"]
    for refusal in refusals:
        assert refusal in problem, problem
    assert cause in problem and REFUSAL_FIX in problem
    if how == "expired token":
        assert "token is expired" in problem.lower()
    # Fast: in the first poll the agent answered, both headers tried once each (the lab counts its requests).
    assert host_state(lab, "extra-worker-1")["requests"] <= 3
    refused = [e for e in host["agent"]["timeline"] if e["event"] == "the agent refused the token"]
    assert len(refused) == 1 and host["phase_started"]["failed"] == refused[0]["time"], host["agent"]["timeline"]
    assert host["agent"]["auth_header"] is None and host["agent"]["auth_refused"] is None
    if "token" in args:
        assert args["token"] not in json.dumps(result) and args["token"] not in output


def test_the_ports_come_from_the_environment_when_the_task_does_not_give_them(lab):
    """OPENSHIFT_AGENT_DAY2_AGENT_PORT and _KUBELET_PORT reach the module through ansible's environment: one host's
    agent answers on the agent port, another host has rebooted and only its kubelet port answers."""
    boot(lab, "extra-worker-2", install_seconds=4)
    rebooted_state = wait_until("extra-worker-2 rebooted", lambda: rebooted(lab, "extra-worker-2"), timeout=CEILING)
    # An install far longer than any run: the agent answers whenever the module asks.
    boot(lab, "extra-worker-1", install_seconds=600)
    wait_until("the agent of extra-worker-1 up", lambda: host_state(lab, "extra-worker-1")["agent_up"], timeout=CEILING)
    ports = {
        "OPENSHIFT_AGENT_DAY2_AGENT_PORT": str(lab.info["agent_port"]),
        "OPENSHIFT_AGENT_DAY2_KUBELET_PORT": str(lab.info["kubelet_port"]),
    }
    # The wait ends on the hosts' answers; boot_timeout and install_timeout are only ceilings.
    params = {
        "kubeconfig": lab.kubeconfig,
        "hosts": hosts_of(lab, "extra-worker-1", "extra-worker-2"),
        "wait_sleep": 1,
        "until": "discovered",
        "boot_timeout": BOOT_TIMEOUT,
        "install_timeout": INSTALL_TIMEOUT,
        "follow_from": "controller",
    }
    result = run_module(MODULE, params, env=ports)[0]
    assert not result.get("failed"), result.get("msg")
    assert result["reached"] == ["extra-worker-1", "extra-worker-2"]
    # The agent on the port from the environment answered: the lab counted the requests it got.
    agent = result["hosts"]["extra-worker-1"]["agent"]
    assert agent["answered"] is True and agent["last_answer"] and agent["kubelet"] is None
    assert host_state(lab, "extra-worker-1")["requests"] > 0
    # The kubelet on its port from there: the module's handshake is in the lab's record.
    agent = result["hosts"]["extra-worker-2"]["agent"]
    assert agent["answered"] is False and agent["kubelet"] == "internal_error"
    after = host_state(lab, "extra-worker-2")
    assert after["kubelet"]["alerts"] == rebooted_state["kubelet"]["alerts"] + 1


def test_a_fresh_run_recognises_a_host_that_already_rebooted(lab):
    """The agent is gone with the reboot and no CSR is approved: the kubelet aborts TLS with internal_error."""
    boot(lab, "extra-worker-0")
    state = wait_until("extra-worker-0 rebooted", lambda: rebooted(lab, "extra-worker-0"), timeout=CEILING)
    requests, alerts = state["requests"], state["kubelet"]["alerts"]
    result = agent_wait(lab, ["extra-worker-0"])
    assert not result.get("failed"), result.get("msg")
    assert result["reached"] == ["extra-worker-0"]
    host = result["hosts"]["extra-worker-0"]
    agent = host["agent"]
    assert host["reached"] == "rebooted" and host["state"] == "rebooted"
    assert host["rebooted_by"] == "its kubelet answers (internal_error)"
    assert agent["answered"] is False and agent["kubelet"] == "internal_error"
    assert agent["last_answer"] is None and agent["auth_header"] is None
    assert agent["timeline"][-1]["event"] == ALREADY_REBOOTED
    # One round: one refused connection to the agent (no request reached it) and one TLS handshake.
    assert result["rounds"] == 1
    after = host_state(lab, "extra-worker-0")
    assert after["requests"] == requests and after["kubelet"]["alerts"] == alerts + 1

    # The boot step's look (wait: false): one poll of each host; a host of which nothing answers (powered off)
    # does not fail the task, it is only not there yet.
    lab.control("POST", "/hosts/power-off", {"hosts": ["extra-worker-1"]})
    look = agent_wait(lab, ["extra-worker-0", "extra-worker-1"], wait=False)
    assert not look.get("failed"), look.get("msg")
    assert look["rounds"] == 1 and look["reached"] == ["extra-worker-0"] and look["failed_hosts"] == []
    assert look["hosts"]["extra-worker-0"]["reached"] == "rebooted"
    off = look["hosts"]["extra-worker-1"]
    assert off["reached"] == "waiting" and off["state"] == "waiting" and off["problem"] is None
    assert off["agent"]["answered"] is False and off["agent"]["unreachable_since"]
    assert host_state(lab, "extra-worker-0")["kubelet"]["alerts"] == alerts + 2


@pytest.mark.parametrize(
    "variant, header, key, persona",
    [
        ("v417", "Authorization", "agentAuthToken", None),
        ("v418", "Watcher-Authorization", "watcherAuthToken", "watcherAuth"),
    ],
)
def test_each_release_gets_its_token_in_its_header(versioned_lab, variant, header, key, persona):
    versioned = versioned_lab(variant)
    boot(versioned, "extra-worker-0")
    result = agent_wait(versioned, ["extra-worker-0"])
    assert not result.get("failed"), result.get("msg")
    info = result["token_info"]
    assert (info["source"], info["key"], info["persona"], info["first_header"]) == ("secret", key, persona, header)
    agent = result["hosts"]["extra-worker-0"]["agent"]
    assert agent["auth_header"] == header and agent["auth_refused"] is None
    assert not [e for e in agent["timeline"] if "refused" in (e["event"] or "")], agent["timeline"]
    # Seen at Done, or (the reboot came between two polls) through the kubelet once the agent was gone.
    assert stages_in_order(agent["timeline"])[-1] == "Done" or agent["kubelet"] == "internal_error", agent["timeline"]
    # The first header was right: never a third request in a round (the lab counts every request its agent got).
    state = host_state(versioned, "extra-worker-0")
    assert state["openshift"] == "%s.%s" % (variant[1], variant[2:])
    assert 0 < state["requests"] <= 2 * result["rounds"], (state["requests"], result["rounds"])


# The wrong header first, per release, and the status code the release's agent answers it with: 4.17 has no
# watcherAuth scheme (401, nothing applies); 4.18+ authorizes by persona (403 for the watcher token in Authorization).
WRONG_FIRST = [
    ("v417", "Watcher-Authorization", "Authorization", 401, "unauthenticated for invalid credentials"),
    ("v418", "Authorization", "Watcher-Authorization", 403, "authClaim watcherAuth is unauthorized to access"),
    ("v419", "Authorization", "Watcher-Authorization", 403, "authClaim watcherAuth is unauthorized to access"),
    ("v420", "Authorization", "Watcher-Authorization", 403, "authClaim watcherAuth is unauthorized to access"),
    ("v421", "Authorization", "Watcher-Authorization", 403, "authClaim watcherAuth is unauthorized to access"),
]


@pytest.mark.parametrize("variant, wrong, right, status, message", WRONG_FIRST)
def test_the_wrong_header_first_gets_the_releases_answer_and_agent_wait_recovers(
    versioned_lab, variant, wrong, right, status, message
):
    versioned = versioned_lab(variant)
    # A long install and until=discovered: the agent must still be there to answer, however loaded the machine.
    boot(versioned, "extra-worker-0", install_seconds=120)
    result = agent_wait(versioned, ["extra-worker-0"], first_header=wrong, until="discovered")
    assert not result.get("failed"), result.get("msg")
    assert result["reached"] == ["extra-worker-0"]
    agent = result["hosts"]["extra-worker-0"]["agent"]
    assert result["token_info"]["first_header"] == wrong
    assert agent["auth_header"] == right
    assert agent["auth_refused"] == {"header": wrong, "status": status, "message": message}
    assert any(
        e["event"]
        == "the agent refused the token in %s (HTTP %d: %s); it accepted it in %s" % (wrong, status, message, right)
        for e in agent["timeline"]
    ), agent["timeline"]
    assert agent["answered"] is True and result["hosts"]["extra-worker-0"]["reached"] != "waiting"
    # One switch: the refused request is the only one beyond two per round (the lab counts every request).
    assert host_state(versioned, "extra-worker-0")["requests"] <= 2 * result["rounds"] + 1


def test_a_host_booted_with_an_iso_for_another_cluster_never_answers(lab, tmp_path):
    foreign = str(tmp_path / "foreign.iso")
    labctl("build-iso", "--state", str(lab.state), "--out", foreign, "--cluster-id", OTHER_CLUSTER)
    boot(lab, "extra-worker-2", iso=foreign)
    state = host_state(lab, "extra-worker-2")
    assert state["phase"] == "wrong-iso" and OTHER_CLUSTER in state["boot_error"]
    # The boot timeout is what this test is about: nothing answers, so the host fails when it runs out.
    result = agent_wait(lab, ["extra-worker-2"], boot_timeout=4)
    assert result["failed"] is True
    assert result["failed_hosts"] == ["extra-worker-2"]
    assert result["msg"].startswith(
        "agent_wait: 1 of 1 host(s) failed (day2_max_failed_hosts is 0), 0 reached rebooted"
    )
    problem = result["hosts"]["extra-worker-2"]["problem"]
    assert problem.startswith("nothing answered within day2_boot_timeout (4 s): never answered: not booted, booted a ")
    assert "wrong ISO (another cluster" in problem and "127.0.111.22:%d" % lab.info["agent_port"] in problem
    assert "its kubelet port %d did not answer either" % lab.info["kubelet_port"] in problem
    assert result["hosts"]["extra-worker-2"]["agent"]["answered"] is False
    assert result["duration"] >= 4
    after = host_state(lab, "extra-worker-2")
    assert after["phase"] == "wrong-iso" and after["requests"] == 0


def test_an_unreachable_api_server_is_a_clear_error_when_reading_the_token(lab, tmp_path):
    broken = tmp_path / "kubeconfig"
    with open(lab.kubeconfig) as stream:
        broken.write_text(stream.read().replace(lab.info["api_url"], "https://127.0.0.1:1"))
    boot(lab, "extra-worker-0", install_seconds=120)
    wait_until("the agent up", lambda: host_state(lab, "extra-worker-0")["agent_up"], timeout=CEILING)
    result = agent_wait(lab, ["extra-worker-0"], kubeconfig=str(broken))
    assert result["failed"] is True
    assert result["msg"].startswith("agent_wait: ") and "cannot reach the API server" in result["msg"]
    # Nothing was asked of the agent: without the token there is nothing to ask it with.
    assert host_state(lab, "extra-worker-0")["requests"] == 0
