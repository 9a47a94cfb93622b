"""agent_wait against the lab's simulated hosts booted at the console, every fail-fast case, the port environment.

The boot through Redfish BMCs is in test_agent_wait_redfish.py.

Each lab here runs its hosts' agents and kubelets on free ports (``--agent-port 0 --kubelet-port 0``, read
back from lab.json), so the tests never collide with another lab on the default 8090/10250. The default lab is
4.21; variants v417 and v418 check the token and header of those releases.
"""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import labctl, run_module
from lab.waiting import wait_for

MODULE = "openshift_agent.day2.agent_wait"
INSTALL_SECONDS = 10
OTHER_CLUSTER = "0b9c1e55-2f4e-4d7e-8a3c-9d2b6e1f4a70"
NTP_MESSAGE = "Host couldn't synchronize with any NTP server"
# What a day-2 worker's agent reports, in order; the service stores Rebooting as Done.
DAY2_STAGES = ["Starting installation", "Installing", "Writing image to disk", "Waiting for control plane", "Done"]


@pytest.fixture(scope="module")
def lab(lab_factory, tmp_path_factory):
    started = lab_factory(
        "--hosts", "3", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", str(INSTALL_SECONDS)
    )
    started.iso = str(tmp_path_factory.mktemp("iso") / "node.x86_64.iso")
    labctl("build-iso", "--state", str(started.state), "--out", started.iso)
    return started


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


def agent_wait(lab, names, **args):
    params = {
        "kubeconfig": lab.kubeconfig,
        "hosts": hosts_of(lab, *names),
        "agent_port": lab.info["agent_port"],
        "kubelet_port": lab.info["kubelet_port"],
        "wait_sleep": 1,
        "request_timeout": 2,
        "wait_timeout": 45,
    }
    params.update(args)
    return run_module(MODULE, params)[0]


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


def _rebooted(state):
    return state if state["phase"] == "rebooted" else None


def test_three_hosts_booted_at_the_console_reach_rebooted(lab):
    names = ["extra-worker-0", "extra-worker-1", "extra-worker-2"]
    boot(lab, *names)
    result = agent_wait(lab, names)
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    assert result["auth_header"] == "Watcher-Authorization"
    assert result["token_info"] == {
        "source": "secret",
        "key": "watcherAuthToken",
        "persona": "watcherAuth",
        "expires": result["token_info"]["expires"],
        "cluster_version": "4.21.1",
        "first_header": "Watcher-Authorization",
    }
    for name in names:
        host = result["hosts"][name]
        assert host["reached"] and host["phase"] == "rebooted"
        assert host["auth_header"] == "Watcher-Authorization"
        assert stages_in_order(host["timeline"])[-1] == "Done"
        assert host["status"] == "added-to-existing-cluster" and host["rebooted_after"]
        writing = [e for e in host["timeline"] if e["stage"] == "Writing image to disk"]
        assert writing, host["timeline"]
        assert all(isinstance(e["percentage"], int) for e in writing)
        assert any("reached installation stage Writing image to disk: " in (e["event"] or "") for e in writing)
        # The lab host really goes through the whole install (agent_wait may stop at stage Rebooting).
        state = wait_for(lambda name=name: _rebooted(host_state(lab, name)), timeout=10)
        assert state["kubelet"]
        assert "Host %s: reached installation stage Writing image to disk: 100%%" % name in state["events"]
    # At most two requests per host and poll (a TLS probe of the kubelet counts as one); the header was right
    # at once, so no third one.
    assert result["requests"] <= 2 * len(names) * result["polls"]
    assert result["duration"] <= INSTALL_SECONDS + 2 * 1 + 3


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
    boot(lab, "extra-worker-0", "extra-worker-1", iso=str(tmp_path / "node.x86_64.iso"))
    result = agent_wait(lab, ["extra-worker-0", "extra-worker-1"])
    assert not result.get("failed"), result.get("msg")
    assert all(host["reached"] for host in result["hosts"].values())


def test_a_failing_ntp_validation_fails_after_the_grace_with_the_agents_message(lab):
    lab.control("POST", "/faults", {"validation_failing": "extra-worker-0:ntp-synced"})
    boot(lab, "extra-worker-0")
    result = agent_wait(lab, ["extra-worker-0"], validation_grace="4s")
    assert result["failed"] is True
    assert "host extra-worker-0 (127.0.111.20): validation ntp-synced has been failing since" in result["msg"]
    assert NTP_MESSAGE in result["msg"] and "validation_grace 4 s" in result["msg"]
    host = result["hosts"]["extra-worker-0"]
    assert host["status"] == "insufficient"
    assert host["failing_validations"][0]["id"] == "ntp-synced"
    assert host["failing_validations"][0]["message"] == NTP_MESSAGE
    assert 4 <= result["duration"] < 15


def test_a_validation_that_recovers_within_the_grace_does_not_fail(lab):
    lab.control("POST", "/faults", {"validation_failing": "extra-worker-1:ntp-synced"})
    boot(lab, "extra-worker-1")
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent_wait, lab, ["extra-worker-1"], until="validated", validation_grace="30s")
        wait_for(lambda: host_state(lab, "extra-worker-1")["status"] == "insufficient")
        # Two polls (two requests each) of agent_wait while the host is insufficient: however long ansible took
        # to start, the module has seen the failing validation before it passes.
        polled = host_state(lab, "extra-worker-1")["requests"]
        wait_for(lambda: host_state(lab, "extra-worker-1")["requests"] >= polled + 4, timeout=30)
        lab.control("DELETE", "/faults?name=validation_failing")
        result = running.result(timeout=60)
    assert not result.get("failed"), result.get("msg")
    statuses = [e["status"] for e in result["hosts"]["extra-worker-1"]["timeline"]]
    assert "insufficient" in statuses and statuses[-1] != "insufficient"


def test_an_install_error_fails_at_once_with_the_stage_and_the_message(lab):
    lab.control("POST", "/faults", {"install_error": "extra-worker-1:Writing image to disk"})
    boot(lab, "extra-worker-1")
    result = agent_wait(lab, ["extra-worker-1"], wait_timeout=120)
    assert result["failed"] is True
    # The agent reports stage Failed; the service keeps the last stage reached and puts the host in error
    # (status_info "Failed - ...").
    assert result["msg"].startswith("agent_wait: host extra-worker-1 (127.0.111.21) failed: status error at stage ")
    assert ": Failed - installation stage Writing image to disk failed" in result["msg"]
    assert result["hosts"]["extra-worker-1"]["status"] == "error"
    # At once: long before the timeout, right after the host reached that stage.
    assert result["duration"] < INSTALL_SECONDS + 3


def test_wrong_boot_order_fails_with_the_fix(lab):
    lab.control("POST", "/faults", {"wrong_boot_order": "extra-worker-2:1"})
    boot(lab, "extra-worker-2")
    result = agent_wait(lab, ["extra-worker-2"])
    assert result["failed"] is True
    assert "is in status installing-pending-user-action at stage Done" in result["msg"]
    assert "eject the virtual media or fix the boot order" in result["msg"]
    assert "please reboot and fix boot order to boot from disk" in result["msg"]
    host = result["hosts"]["extra-worker-2"]
    assert host["status"] == "installing-pending-user-action" and host["stage"] == "Done"
    # The lab never showed stage Done without the pending user action.
    assert all(e["status"] == "installing-pending-user-action" for e in host["timeline"] if e["stage"] == "Done")


def test_the_agent_unreachable_for_20_s_mid_install_then_the_run_succeeds(lab):
    boot(lab, "extra-worker-0", install_seconds=36)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent_wait, lab, ["extra-worker-0"], wait_timeout=55)
        wait_for(lambda: host_state(lab, "extra-worker-0")["status"] == "installing-in-progress")
        lab.control("POST", "/faults", {"agent_unreachable": "extra-worker-0:20"})
        result = running.result(timeout=90)
    assert not result.get("failed"), result.get("msg")
    timeline = result["hosts"]["extra-worker-0"]["timeline"]
    silent = [i for i, e in enumerate(timeline) if e["event"] == "the agent does not answer"]
    assert silent, timeline
    # The agent answered again after the outage (not only the kubelet).
    assert any(e["event"] and e["event"].startswith("Host extra-worker-0:") for e in timeline[silent[0] + 1 :])
    assert result["hosts"]["extra-worker-0"]["unreachable_since"] is None
    assert result["hosts"]["extra-worker-0"]["reached"] is True


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
            "not signed by the key of the ISO the host runs",
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
    result = agent_wait(lab, ["extra-worker-1"], **args)
    assert result["failed"] is True
    assert result["msg"].startswith(
        "agent_wait: host extra-worker-1 (127.0.111.21): the agent at 127.0.111.21:%d "
        "refused the token: " % lab.info["agent_port"]
    )
    for refusal in refusals:
        assert refusal in result["msg"], result["msg"]
    assert cause in result["msg"] and REFUSAL_FIX in result["msg"]
    if how == "expired token":
        assert "token is expired" in result["msg"].lower()
    assert result["duration"] < 10 and result["requests"] <= 3
    assert result["auth_header"] is None and result["hosts"]["extra-worker-1"]["auth_header"] is None
    assert args.get("token", "no token given") not in json.dumps(result)


def test_the_ports_come_from_the_environment_when_the_task_does_not_give_them(lab):
    """OPENSHIFT_AGENT_DAY2_AGENT_PORT and _KUBELET_PORT reach the module through ansible's environment."""
    boot(lab, "extra-worker-1", install_seconds=4)
    ports = {
        "OPENSHIFT_AGENT_DAY2_AGENT_PORT": str(lab.info["agent_port"]),
        "OPENSHIFT_AGENT_DAY2_KUBELET_PORT": str(lab.info["kubelet_port"]),
    }
    params = {"kubeconfig": lab.kubeconfig, "hosts": hosts_of(lab, "extra-worker-1"), "wait_sleep": 1}
    result = run_module(MODULE, dict(params, wait_timeout=30), env=ports)[0]
    assert not result.get("failed"), result.get("msg")
    assert result["hosts"]["extra-worker-1"]["answered"] is True  # the agent on the port from the environment
    wait_for(lambda: not host_state(lab, "extra-worker-1")["agent_up"], timeout=10)
    again = run_module(MODULE, dict(params, wait=False), env=ports)[0]
    assert not again.get("failed"), again.get("msg")
    assert again["hosts"]["extra-worker-1"]["kubelet"] == "internal_error"  # the kubelet on its port from there


def test_a_fresh_run_recognises_a_host_that_already_rebooted(lab):
    """The agent is gone with the reboot and no CSR is approved: the kubelet aborts TLS with internal_error."""
    boot(lab, "extra-worker-0")
    state = wait_for(lambda: _rebooted(host_state(lab, "extra-worker-0")), timeout=INSTALL_SECONDS + 20)
    wait_for(lambda: not host_state(lab, "extra-worker-0")["agent_up"], timeout=10)
    result = agent_wait(lab, ["extra-worker-0"], wait_timeout=10)
    assert not result.get("failed"), result.get("msg")
    host = result["hosts"]["extra-worker-0"]
    assert host["reached"] and host["answered"] is False and host["kubelet"] == "internal_error"
    assert host["rebooted_after"] is None and host["auth_header"] is None
    assert host["timeline"][-1]["event"] == (
        "the agent does not answer and the kubelet aborts TLS with alert internal_error (its serving certificate "
        "is not approved yet): the host already rebooted from its disk"
    )
    assert result["polls"] == 1 and result["requests"] == 2  # one refused request, one TLS handshake
    assert state["kubelet"]


@pytest.mark.parametrize(
    "variant, header, key, persona",
    [
        ("v417", "Authorization", "agentAuthToken", None),
        ("v418", "Watcher-Authorization", "watcherAuthToken", "watcherAuth"),
    ],
)
def test_each_release_gets_its_token_in_its_header(lab_factory, tmp_path, variant, header, key, persona):
    versioned = lab_factory(
        "--variant", variant, "--hosts", "1", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6"
    )
    build_iso(versioned, tmp_path / "node.iso")
    boot(versioned, "extra-worker-0", iso=str(tmp_path / "node.iso"))
    result = agent_wait(versioned, ["extra-worker-0"])
    assert not result.get("failed"), result.get("msg")
    info = result["token_info"]
    assert (info["source"], info["key"], info["persona"], info["first_header"]) == ("secret", key, persona, header)
    assert info["cluster_version"].startswith(variant[1] + "." + variant[2:])
    host = result["hosts"]["extra-worker-0"]
    assert result["auth_header"] == host["auth_header"] == header
    # Seen at Done, or (the reboot came between two polls) through the kubelet once the agent was gone.
    assert stages_in_order(host["timeline"])[-1] == "Done" or host["kubelet"] == "internal_error", host["timeline"]
    assert result["requests"] <= 2 * result["polls"]  # the first header was right: never a third request


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
    lab_factory, tmp_path, variant, wrong, right, status, message
):
    versioned = lab_factory(
        "--variant", variant, "--hosts", "1", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6"
    )
    build_iso(versioned, tmp_path / "node.iso")
    # A long install and until=discovered: the agent must still be there to answer, however loaded the machine.
    boot(versioned, "extra-worker-0", iso=str(tmp_path / "node.iso"), install_seconds=60)
    result = agent_wait(versioned, ["extra-worker-0"], first_header=wrong, until="discovered")
    assert not result.get("failed"), result.get("msg")
    host = result["hosts"]["extra-worker-0"]
    assert result["token_info"]["first_header"] == wrong
    assert result["auth_header"] == host["auth_header"] == right
    assert host["auth_refused"] == {"header": wrong, "status": status, "message": message}
    assert any(
        e["event"]
        == "the agent refused the token in %s (HTTP %d: %s); it accepted it in %s" % (wrong, status, message, right)
        for e in host["timeline"]
    ), host["timeline"]
    assert host["reached"]


def test_a_host_booted_with_an_iso_for_another_cluster_never_answers(lab, tmp_path):
    foreign = str(tmp_path / "foreign.iso")
    labctl("build-iso", "--state", str(lab.state), "--out", foreign, "--cluster-id", OTHER_CLUSTER)
    boot(lab, "extra-worker-2", iso=foreign)
    state = host_state(lab, "extra-worker-2")
    assert state["phase"] == "wrong-iso" and OTHER_CLUSTER in state["boot_error"]
    result = agent_wait(lab, ["extra-worker-2"], wait_timeout=4)
    assert result["failed"] is True
    assert result["msg"].startswith("agent_wait: timed out after 4 s waiting for 1 of 1 host(s) to reach rebooted")
    assert "extra-worker-2: never answered: not booted, booted a wrong ISO (another cluster" in result["msg"]
    assert result["hosts"]["extra-worker-2"]["answered"] is False


def test_an_unreachable_api_server_is_a_clear_error_when_reading_the_token(lab, tmp_path):
    broken = tmp_path / "kubeconfig"
    with open(lab.kubeconfig) as stream:
        broken.write_text(stream.read().replace(lab.info["api_url"], "https://127.0.0.1:1"))
    result = agent_wait(lab, ["extra-worker-0"], kubeconfig=str(broken))
    assert result["failed"] is True
    assert "cannot reach the API server" in result["msg"]


# ----- Redfish --------------------------------------------------------------------------------------
