"""The simulated hosts booted from the lab's own add-nodes ISO (labctl build-iso) on the default lab: ISO checks at
boot, the agent API with the ISO's key, the install state machine, the kubelet port after reboot, and host faults.
Per-release behaviour is in test_lab_agent.py, the Redfish boot in test_lab_redfish.py."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time
import types

import pytest
import requests
from conftest import labctl, running_lab
from lab import hosts as hosts_mod
from lab import ignition as ignition_mod
from lab import iso as iso_mod
from lab import versions
from lab.hosts.boot import static_addresses
from lab.hosts.progress import REBOOTING_DAY2
from lab.seeds import find, load_seed
from lab.waiting import wait_for

API = "/api/assisted-install/v2"
CLUSTER_ID = find(load_seed("default"), "ClusterVersion", "version")["spec"]["clusterID"]
HOST0 = {"name": "extra-worker-0", "ip": "127.0.111.20", "mac_address": "52:54:00:6f:00:14"}
pytestmark = pytest.mark.usefixtures("no_faults")  # with this module's lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("hosts-lab"))
    start = ("--hosts", "2", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "3")
    with running_lab(state, *start) as started:
        started.iso = started.build_iso(tmp_path_factory.mktemp("iso") / "node.iso")
        secret = started.api("GET", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token").json()
        cluster_version = started.api("GET", "/apis/config.openshift.io/v1/clusterversions/version").json()
        started.profile = versions.for_version(versions.cluster_version(cluster_version))
        # What the installer's monitor sends: 4.17 the agent token in Authorization, 4.18+ the watcher token in
        # Watcher-Authorization.
        started.header = "Watcher-Authorization" if started.profile.watcher_scheme else "Authorization"
        key = "watcherAuthToken" if started.profile.watcher_scheme else "agentAuthToken"
        started.token = base64.b64decode(secret["data"][key]).decode()
        yield started


def boot(lab, name="extra-worker-0", iso=None, **extra):
    body = dict({"iso": iso or lab.iso, "hosts": [name]}, **extra)
    return lab.control("POST", "/hosts/boot", body)[0]


def state_of(lab, name="extra-worker-0"):
    return lab.host_state(name)


def agent(lab, path, token=None, ip="127.0.111.20", **params):
    headers = {} if token is False else {lab.header: token or lab.token}
    return requests.get(f"http://{ip}:{lab.info['agent_port']}{API}{path}", headers=headers, params=params, timeout=5)


def host_of(lab):
    clusters = agent(lab, "/clusters", with_hosts="true").json()
    return clusters[0]["hosts"][0] if clusters[0]["hosts"] else None


def refused(ip, port):
    try:
        socket.create_connection((ip, port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


# ----- fault values and the ISO checks ------------------------------------------------------------------
def test_per_host_fault_values():
    parse = hosts_mod.per_host(str)
    assert parse("ntp-synced") == ((None, "ntp-synced"),)
    assert parse("extra-worker-1:20, extra-worker-2:5") == (("extra-worker-1", "20"), ("extra-worker-2", "5"))
    faults = {"x": parse("a:1,2")}
    assert hosts_mod.fault_values(faults, "x", "a") == ["1", "2"]
    assert hosts_mod.fault_values(faults, "x", "b") == ["2"]


@pytest.mark.parametrize(
    "fault, message",
    [
        ({"validation_failing": "not-a-validation"}, "unknown validation"),
        ({"install_error": "extra-worker-0:Painting"}, "unknown install stage"),
        ({"agent_unreachable": "-3"}, "cannot be negative"),
    ],
)
def test_bad_fault_values_are_refused(lab, fault, message):
    response = requests.post(lab.control_url + "/faults", json=fault, timeout=5)
    assert response.status_code == 400 and message in response.json()["error"]


def test_iso_checks_at_boot(lab, tmp_path):
    good = hosts_mod.read_boot_config(lab.iso, HOST0, CLUSTER_ID)
    assert good.hostname == "extra-worker-0" and lab.token in good.tokens.values()
    assert good.expiry_variable == lab.profile.expiry_variable
    only_one = lab.build_iso(tmp_path / "one.iso", "extra-worker-1")
    with pytest.raises(hosts_mod.WrongIso, match="MAC 52:54:00:6f:00:14 is not in the ISO"):
        hosts_mod.read_boot_config(only_one, HOST0, CLUSTER_ID)
    foreign = lab.build_iso(tmp_path / "foreign.iso", "--cluster-id", "11111111-2222-3333-4444-555555555555")
    with pytest.raises(hosts_mod.WrongIso, match="the ISO is for cluster 11111111-2222-3333-4444-555555555555"):
        hosts_mod.read_boot_config(foreign, HOST0, CLUSTER_ID)
    # Booted, each of them leaves the host at "wrong ISO" with its agent silent.
    for iso in (only_one, foreign):
        state = boot(lab, iso=iso)
        assert state["phase"] == "wrong-iso" and state["boot_error"]
        assert refused("127.0.111.20", lab.info["agent_port"])


def test_the_host_takes_its_static_address_or_its_dhcp_reservations(lab, tmp_path):
    """Static: the keyfiles of the host* directory naming its MAC (pre-network-manager-config.sh); none: DHCP, whose
    reservation gives the host the address the lab was started with."""
    static = hosts_mod.read_boot_config(lab.iso, HOST0, CLUSTER_ID)
    assert static.static_addresses == ["127.0.111.20"]
    dhcp_iso = lab.build_iso(tmp_path / "dhcp.iso", "--dhcp", "extra-worker-0")
    dhcp = hosts_mod.read_boot_config(dhcp_iso, HOST0, CLUSTER_ID)
    host1 = dict(HOST0, name="extra-worker-1", mac_address="52:54:00:6f:00:15")
    assert dhcp.static_addresses == [] and hosts_mod.read_boot_config(dhcp_iso, host1, CLUSTER_ID).static_addresses == [
        "127.0.111.21"
    ]
    assert boot(lab, iso=lab.iso)["network"] == {"method": "static", "addresses": ["127.0.111.20"]}
    state = boot(lab, iso=dhcp_iso, install_seconds=1)
    assert state["phase"] == "agent" and state["network"] == {"method": "dhcp", "addresses": ["127.0.111.20"]}
    wait_for(lambda: state_of(lab)["agent_up"])
    assert agent(lab, "/infra-envs").status_code == 200  # reached at the reserved address


def test_media_giving_the_host_another_static_address_leave_it_unreachable():
    files = {
        "/etc/assisted/network/host0/eth0.nmconnection": b"[ipv4]\nmethod=manual\naddress1=127.0.111.99/24,gw\n",
        "/etc/assisted/network/host0/mac_interface.ini": b"52:54:00:6F:00:14=eth0",
        "/etc/assisted/network/host1/eth0.nmconnection": b"[ipv4]\nmethod=auto\n",
        "/etc/assisted/network/host1/mac_interface.ini": b"52:54:00:6f:00:15=eth0",
    }
    assert static_addresses(files, "52:54:00:6f:00:14") == ["127.0.111.99"]  # (MACs in any case)
    assert static_addresses(files, "52:54:00:6f:00:15") == []  # method=auto: DHCP
    host = types.SimpleNamespace(
        ip="127.0.111.20",
        mac="52:54:00:6f:00:14",
        config=types.SimpleNamespace(static_addresses=["127.0.111.99"]),
        ctx=types.SimpleNamespace(lab_hosts=types.SimpleNamespace(reservations={})),
    )
    with pytest.raises(
        hosts_mod.WrongIso, match=r"the static addresses 127\.0\.111\.99 .* but this host lives at 127\.0\.111\.20"
    ):
        hosts_mod.SimHost._take_address(host)
    host.config.static_addresses = []
    with pytest.raises(hosts_mod.WrongIso, match="no static address and no DHCP lease"):
        hosts_mod.SimHost._take_address(host)


def iso_tokens(path):
    files = ignition_mod.files_by_path(iso_mod.read_embedded_ignition(path))
    env = {}
    for name in ("/usr/local/share/assisted-service/assisted-service.env", "/etc/assisted/rendezvous-host.env"):
        env.update(ignition_mod.read_env_file(files[name]))
    return {name: value for name, value in env.items() if name.endswith("_TOKEN")}


def test_an_iso_whose_tokens_expired_answers_401_and_never_installs(lab, tmp_path):
    expired = lab.build_iso(tmp_path / "expired.iso", "--expired-token")
    state = boot(lab, iso=expired, install_seconds=1)
    assert state["phase"] == "agent" and state["booted_from"] == "iso"
    wait_for(lambda: state_of(lab)["agent_up"])
    for name, token in iso_tokens(expired).items():
        response = agent(lab, "/clusters", token=token)
        assert (response.status_code, response.json()) == (
            401,
            {"code": 401, "message": "Failed to parse token: Token is expired\n"},
        ), name
    wait_for(lambda: state_of(lab)["boot_error"])
    time.sleep(1.2)
    state = state_of(lab)
    assert "request is refused: 401 Failed to parse token: Token is expired" in state["boot_error"]
    assert state["status"] is None and state["phase"] == "agent"
    # The expired-token ISO did not touch the cluster's Secret.
    secret = lab.api("GET", "/api/v1/namespaces/openshift-config/secrets/agent-auth-token").json()
    key = "watcherAuthToken" if lab.profile.watcher_scheme else "agentAuthToken"
    assert base64.b64decode(secret["data"][key]).decode() == lab.token


# ----- the agent API ----------------------------------------------------------------------------------
def test_the_agent_checks_tokens_with_the_isos_key(lab, tmp_path):
    from lab import jwt

    boot(lab, install_seconds=30)
    wait_for(lambda: state_of(lab)["agent_up"])
    assert agent(lab, "/infra-envs").status_code == 200
    missing = agent(lab, "/infra-envs", token=False)
    assert (missing.status_code, missing.json()) == (
        401,
        {"code": 401, "message": "unauthenticated for invalid credentials"},
    )
    garbage = agent(lab, "/clusters", token="not.a.jwt")
    assert garbage.status_code == 401 and garbage.json()["message"].startswith("Failed to parse token: ")
    # The Secret's key is not what the agent checks: a token minted with a new key the Secret now names is
    # refused, the ISO's token still accepted.
    path = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"
    saved = lab.api("GET", path).json()["data"]["authTokenPublicKey"]
    key = jwt.new_key()
    public = base64.b64encode(base64.b64encode(jwt.public_pem(key).encode())).decode()
    patch = {"data": {"authTokenPublicKey": public}}
    assert lab.api("PATCH", path, body=patch, content_type="application/merge-patch+json").status_code == 200
    try:
        claims = dict(jwt.unverified_claims(lab.token), exp=int(time.time()) + 60)
        other = agent(lab, "/infra-envs", token=jwt.mint_claims(key, claims))
        assert (other.status_code, other.json()["message"]) == (
            401,
            "Failed to parse token: crypto/ecdsa: verification error\n",
        )
        assert agent(lab, "/infra-envs").status_code == 200
    finally:
        restore = {"data": {"authTokenPublicKey": saved}}
        lab.api("PATCH", path, body=restore, content_type="application/merge-patch+json")


def test_the_install_walks_the_state_machine_then_the_kubelet_port_alerts(lab):
    boot(lab, install_seconds=3)
    seen = []

    def finished():
        try:
            host = host_of(lab)
        except requests.ConnectionError:
            return state_of(lab)["phase"] == "rebooted"
        if host:
            snapshot = (host["status"], host["progress"]["current_stage"], host["progress"]["progress_info"])
            if not seen or seen[-1] != snapshot:
                seen.append(snapshot)
        return False

    wait_for(finished)
    statuses = [status for status, _stage, _info in seen]
    order = ["discovering", "known", "installing", "installing-in-progress", "added-to-existing-cluster"]
    assert [s for s in order if s in statuses] == sorted(set(statuses), key=order.index)
    assert statuses[0] == "discovering" and "installing-in-progress" in statuses
    writing = [info for _status, stage, info in seen if stage == "Writing image to disk" and info]
    assert writing and all(info.endswith("%") for info in writing)
    events = state_of(lab)["events"]
    assert events[0] == "Host extra-worker-0: Successfully registered"
    assert "Host extra-worker-0: updated status from discovering to known (Host is ready to be installed)" in events
    for percent in hosts_mod.WRITE_STEPS:
        assert f"Host: extra-worker-0, reached installation stage Writing image to disk: {percent}%" in events
    assert events.index("Host: extra-worker-0, reached installation stage Rebooting") > events.index(
        "Host: extra-worker-0, reached installation stage Writing image to disk: 100%"
    )
    assert (
        f"Host extra-worker-0: updated status from installing-in-progress to added-to-existing-cluster "
        f"({REBOOTING_DAY2})"
    ) in events
    # The agent is gone; the kubelet port answers, but aborts TLS until its serving certificate is issued.
    assert refused("127.0.111.20", lab.info["agent_port"])
    context = ssl.create_default_context(cafile=lab.ca)
    context.check_hostname = False
    with (
        socket.create_connection(("127.0.111.20", lab.info["kubelet_port"]), timeout=5) as raw,
        pytest.raises(ssl.SSLError, match="TLSV1_ALERT_INTERNAL_ERROR"),
    ):
        context.wrap_socket(raw)


def test_events_and_clusters_by_id(lab):
    boot(lab, install_seconds=30)
    wait_for(lambda: host_of(lab) if state_of(lab)["agent_up"] else None)
    cluster = agent(lab, "/clusters").json()[0]
    assert "hosts" not in cluster and cluster["kind"] == "AddHostsCluster"
    assert cluster["openshift_cluster_id"] == CLUSTER_ID
    one = agent(lab, "/clusters/" + cluster["id"]).json()
    host = one["hosts"][0]
    assert host["requested_hostname"] == "extra-worker-0" and host["kind"] == "AddToExistingClusterHost"
    assert json.loads(host["inventory"])["interfaces"][0]["mac_address"] == "52:54:00:6f:00:14"
    assert agent(lab, "/clusters/00000000-0000-0000-0000-000000000000").status_code == 404
    events = agent(lab, "/events", infra_env_id=host["infra_env_id"]).json()
    assert events and all(e["host_id"] == host["id"] for e in events)
    assert agent(lab, "/events", cluster_id=cluster["id"]).json() == events
    assert agent(lab, "/infra-envs").json()[0]["id"] == host["infra_env_id"]


# ----- host faults ------------------------------------------------------------------------------------
def validations(host):
    return {v["id"]: v for group in json.loads(host["validations_info"]).values() for v in group}


def test_a_failing_validation_keeps_the_host_insufficient_until_cleared(lab):
    lab.control("POST", "/faults", {"validation_failing": "extra-worker-0:ntp-synced"})
    boot(lab, install_seconds=3)
    host = wait_for(
        lambda: (h := host_of(lab) if state_of(lab)["agent_up"] else None) and h["status"] == "insufficient" and h
    )
    failing = validations(host)["ntp-synced"]
    assert failing == {
        "id": "ntp-synced",
        "status": "failure",
        "message": "Host couldn't synchronize with any NTP server",
    }
    assert host["status_info"] == (
        "Host cannot be installed due to following failing validation(s): Host couldn't synchronize with any NTP server"
    )
    assert validations(host)["has-min-memory"]["status"] == "success"
    time.sleep(1.5)
    assert host_of(lab)["status"] == "insufficient"
    lab.control("DELETE", "/faults?name=validation_failing")
    wait_for(lambda: host_of(lab)["status"] not in ("insufficient",))
    assert validations(host_of(lab))["ntp-synced"]["status"] == "success"


@pytest.mark.parametrize("stage", ["Installing", "Writing image to disk", "Waiting for control plane"])
def test_an_install_error_at_a_stage(lab, stage):
    lab.control("POST", "/faults", {"install_error": stage})
    boot(lab, install_seconds=3)
    host = wait_for(lambda: state_of(lab)["agent_up"] and (h := host_of(lab)) and h["status"] == "error" and h)
    # The agent reports Failed: the service keeps the last stage and its percentage, status error.
    assert host["progress"]["current_stage"] == stage
    assert host["status_info"].startswith(f"Failed - installation stage {stage} failed: ")
    time.sleep(1)
    assert host_of(lab)["status"] == "error"  # it stays there
    failed = f"Host: extra-worker-0, reached installation stage Failed: installation stage {stage} failed: "
    assert any(event.startswith(failed) for event in state_of(lab)["events"])


def test_an_install_error_at_rebooting_leaves_the_host_in_its_live_system(lab):
    lab.control("POST", "/faults", {"install_error": "extra-worker-0:Rebooting"})
    boot(lab, install_seconds=2)
    host = wait_for(
        lambda: state_of(lab)["agent_up"] and (h := host_of(lab)) and h["progress"]["current_stage"] == "Done" and h
    )
    # The service refuses Failed once the host is added-to-existing-cluster; the host just never reboots.
    assert host["status"] == "added-to-existing-cluster"
    time.sleep(1)
    assert state_of(lab)["phase"] == "agent" and host_of(lab)["status"] == "added-to-existing-cluster"


def test_wrong_boot_order_ends_in_pending_user_action_at_stage_done(lab):
    lab.control("POST", "/faults", {"wrong_boot_order": "1"})
    boot(lab, install_seconds=3)
    seen = []

    def pending():
        if not state_of(lab)["agent_up"]:
            return None
        host = host_of(lab)
        seen.append((host["status"], host["progress"]["current_stage"]))
        return host["status"] == "installing-pending-user-action" and host

    host = wait_for(pending)
    assert (host["progress"]["current_stage"], host["progress"]["installation_percentage"]) == ("Done", 100)
    assert host["status_info"].startswith(
        "Expected the host to boot from disk, but it booted the installation "
        "image - please reboot and fix boot order to boot from disk "
    )
    assert ("added-to-existing-cluster", "Done") not in seen
    time.sleep(1)
    assert host_of(lab)["status"] == "installing-pending-user-action"
    assert state_of(lab)["phase"] == "agent"


def test_token_rejected(lab):
    boot(lab, install_seconds=30)
    wait_for(lambda: state_of(lab)["agent_up"])
    lab.control("POST", "/faults", {"token_rejected": "extra-worker-0:1"})
    response = agent(lab, "/clusters")
    assert response.status_code == 401 and response.json() == {
        "code": 401,
        "message": "Failed to parse token: crypto/ecdsa: verification error\n",
    }
    lab.control("DELETE", "/faults?name=token_rejected")
    assert agent(lab, "/clusters").status_code == 200


def test_agent_unreachable_for_a_while(lab):
    boot(lab, install_seconds=30)
    wait_for(lambda: state_of(lab)["agent_up"])
    lab.control("POST", "/faults", {"agent_unreachable": "extra-worker-0:1.5"})
    wait_for(lambda: refused("127.0.111.20", lab.info["agent_port"]), timeout=2)
    wait_for(lambda: not refused("127.0.111.20", lab.info["agent_port"]), timeout=5)
    assert agent(lab, "/infra-envs").status_code == 200


def test_a_taken_agent_port_is_reported(lab):
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.111.21", lab.info["agent_port"]))
        squatter.listen()
        boot(lab, "extra-worker-1")
        state = wait_for(lambda: (s := state_of(lab, "extra-worker-1"))["boot_error"] and s, timeout=5)
    assert state["boot_error"].startswith(f"the agent cannot listen on 127.0.111.21:{lab.info['agent_port']}")
    assert state["agent_up"] is False


def test_dump_has_the_hosts(lab):
    dump = json.loads(labctl("dump", "--state", lab.state).stdout)
    assert [h["name"] for h in dump["hosts"]] == ["extra-worker-0", "extra-worker-1"]
    assert {"phase", "status", "stage", "events", "requests", "agent_url"} <= set(dump["hosts"][0])


def test_labctl_boot_unknown_host_is_an_error(lab):
    result = labctl("boot", "--state", lab.state, "--iso", lab.iso, "no-such-host", check=False)
    assert result.returncode == 1 and "no host 'no-such-host'" in result.stderr
