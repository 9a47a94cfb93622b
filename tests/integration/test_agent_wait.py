"""agent_wait against the lab's simulated hosts: boot by console and by Redfish, every fail-fast case.

Each lab here runs its hosts' agents and kubelets on free ports (``--agent-port 0 --kubelet-port 0``, read
back from lab.json), so the tests never collide with another lab on the default 8090/10250.
"""

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import labctl, run_module, run_playbook
from lab.waiting import wait_for

MODULE = "openshift_agent.day2.agent_wait"
INSTALL_SECONDS = 10
OTHER_CLUSTER = "0b9c1e55-2f4e-4d7e-8a3c-9d2b6e1f4a70"
NTP_MESSAGE = "Host couldn't synchronize with any NTP server"


@pytest.fixture(scope="module")
def lab(lab_factory, tmp_path_factory):
    started = lab_factory("--hosts", "3", "--agent-port", "0", "--kubelet-port", "0",
                          "--install-seconds", str(INSTALL_SECONDS))
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
    return [{"name": name, "address": by_name[name]["ip"], "mac_address": by_name[name]["mac_address"]}
            for name in names]


def boot(lab, *names, iso=None, install_seconds=None):
    body = {"iso": iso or lab.iso, "hosts": list(names)}
    if install_seconds:
        body["install_seconds"] = install_seconds
    return lab.control("POST", "/hosts/boot", body)


def agent_wait(lab, names, **args):
    params = {"kubeconfig": lab.kubeconfig, "hosts": hosts_of(lab, *names), "agent_port": lab.info["agent_port"],
              "kubelet_port": lab.info["kubelet_port"], "wait_sleep": 1, "request_timeout": 2, "wait_timeout": 45}
    params.update(args)
    return run_module(MODULE, params)[0]


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
    for name in names:
        host = result["hosts"][name]
        assert host["reached"] and host["phase"] == "rebooted"
        writing = [e for e in host["timeline"] if e["stage"] == "Writing image to disk"]
        assert writing, host["timeline"]
        assert all(isinstance(e["percentage"], int) for e in writing)
        assert any("reached installation stage Writing image to disk: " in (e["event"] or "") for e in writing)
        # The lab host really goes through the whole install (agent_wait may stop at stage Rebooting).
        state = wait_for(lambda: _rebooted(host_state(lab, name)), timeout=10)
        assert state["kubelet"]
        assert "Host %s: reached installation stage Writing image to disk: 100%%" % name in state["events"]
    # At most two requests per host and poll (a TLS probe of the kubelet counts as one).
    assert result["requests"] <= 2 * len(names) * result["polls"]
    assert result["duration"] <= INSTALL_SECONDS + 2 * 1 + 3


def test_the_iso_day2_iso_builds_boots_and_is_followed(lab, tmp_path):
    import yaml

    inventory = yaml.safe_load(open(lab.inventory))["all"]["children"]["new_workers"]["hosts"]
    built, _output = run_module("openshift_agent.day2.day2_iso", {
        "kubeconfig": lab.kubeconfig, "dest": str(tmp_path), "allow_loopback": True, "wait_sleep": 1,
        "hosts": [dict(hostvars, name=name) for name, hostvars in inventory.items()]})
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
        time.sleep(2)
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
    assert result["msg"].startswith("agent_wait: host extra-worker-1 (127.0.111.21) failed: status error at stage Failed")
    assert "installation stage Writing image to disk failed" in result["msg"]
    assert result["hosts"]["extra-worker-1"]["status"] == "error"
    # At once: long before the timeout, right after the host reached that stage.
    assert result["duration"] < INSTALL_SECONDS + 3


def test_wrong_boot_order_fails_with_the_fix(lab):
    lab.control("POST", "/faults", {"wrong_boot_order": "extra-worker-2:1"})
    boot(lab, "extra-worker-2")
    result = agent_wait(lab, ["extra-worker-2"])
    assert result["failed"] is True
    assert "is in status installing-pending-user-action at stage Rebooting" in result["msg"]
    assert "eject the virtual media or fix the boot order" in result["msg"]
    assert "please reboot and fix boot order to boot from disk" in result["msg"]
    host = result["hosts"]["extra-worker-2"]
    assert host["status"] == "installing-pending-user-action" and host["stage"] == "Rebooting"
    # The lab never showed a plain Rebooting stage before the pending user action.
    assert all(e["status"] == "installing-pending-user-action" for e in host["timeline"] if e["stage"] == "Rebooting")


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
    assert any(e["event"] and e["event"].startswith("Host extra-worker-0:") for e in timeline[silent[0] + 1:])
    assert result["hosts"]["extra-worker-0"]["unreachable_since"] is None
    assert result["hosts"]["extra-worker-0"]["reached"] is True


SECRET_PATH = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"


def lab_api(lab, method, path, body=None, content_type="application/json"):
    import ssl
    import urllib.request

    import yaml

    token = yaml.safe_load(open(lab.kubeconfig))["users"][0]["user"]["token"]
    request = urllib.request.Request(lab.info["api_url"] + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": content_type})
    context = ssl.create_default_context(cafile=str(lab.state / "ca.crt"))
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.load(response)


@pytest.fixture
def expired_token(lab):
    """A token that expired a minute ago, signed by a key the Secret names (then the Secret is restored)."""
    import base64

    from lab import jwt

    key = jwt.new_key()
    saved = lab_api(lab, "GET", SECRET_PATH)["data"]["authTokenPublicKey"]
    public = base64.b64encode(base64.b64encode(jwt.public_pem(key).encode())).decode()
    lab_api(lab, "PATCH", SECRET_PATH, {"data": {"authTokenPublicKey": public}}, "application/merge-patch+json")
    yield jwt.mint(key, "infra-env", time.time() - 60)
    lab_api(lab, "PATCH", SECRET_PATH, {"data": {"authTokenPublicKey": saved}}, "application/merge-patch+json")


@pytest.mark.parametrize("how", ["wrong token", "expired token", "token rejected by the agent"])
def test_a_rejected_token_fails_with_the_rebuild_advice(lab, how, request):
    args = {}
    if how == "wrong token":
        args["token"] = "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjF9.c2ln"
    elif how == "expired token":
        args["token"] = request.getfixturevalue("expired_token")
    else:
        lab.control("POST", "/faults", {"token_rejected": "1"})
    boot(lab, "extra-worker-1")
    result = agent_wait(lab, ["extra-worker-1"], **args)
    assert result["failed"] is True
    assert "rejected the token (HTTP 401" in result["msg"]
    if how == "expired token":
        assert "token is expired" in result["msg"]
    assert "rebuild the ISO with day2_iso (force: true)" in result["msg"]
    assert result["duration"] < 10
    assert args.get("token", "no token given") not in json.dumps(result)


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
    broken.write_text(open(lab.kubeconfig).read().replace(lab.info["api_url"], "https://127.0.0.1:1"))
    result = agent_wait(lab, ["extra-worker-0"], kubeconfig=str(broken))
    assert result["failed"] is True
    assert "cannot reach the API server" in result["msg"]


# ----- Redfish --------------------------------------------------------------------------------------
REDFISH_PLAYBOOK = """
- name: Boot the new workers from virtual media with plain Redfish calls, then follow them
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    workers: "{{ groups['new_workers'] }}"
  tasks:
    - name: Insert the ISO into each host's virtual CD
      ansible.builtin.uri:
        url: "{{ hostvars[item].bmc_address | regex_replace('^redfish-virtualmedia\\\\+', '') }}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"
        method: POST
        user: "{{ hostvars[item].bmc_username }}"
        password: "{{ hostvars[item].bmc_password }}"
        force_basic_auth: true
        body_format: json
        body: {Image: "{{ iso_url }}", Inserted: true, WriteProtected: true}
        status_code: [200, 202, 204]
      loop: "{{ workers }}"
      no_log: true

    - name: Power each host on
      ansible.builtin.uri:
        url: "{{ hostvars[item].bmc_address | regex_replace('^redfish-virtualmedia\\\\+', '') }}/Actions/ComputerSystem.Reset"
        method: POST
        user: "{{ hostvars[item].bmc_username }}"
        password: "{{ hostvars[item].bmc_password }}"
        force_basic_auth: true
        body_format: json
        body: {ResetType: "On"}
        status_code: [200, 202, 204]
      loop: "{{ workers }}"
      no_log: true

    - name: List the new workers for agent_wait
      ansible.builtin.set_fact:
        new_hosts: "{{ new_hosts | default([]) + [{'name': item, 'address': hostvars[item].ip,
                       'mac_address': hostvars[item].mac_address}] }}"
      loop: "{{ workers }}"

    - name: Follow every new worker until it rebooted from disk
      openshift_agent.day2.agent_wait:
        kubeconfig: "{{ hostvars[workers[0]].kubeconfig }}"
        hosts: "{{ new_hosts }}"
        agent_port: "{{ agent_port | int }}"
        kubelet_port: "{{ kubelet_port | int }}"
        wait_sleep: 1
        wait_timeout: 50
      register: install

    - name: Show where each host got
      ansible.builtin.debug:
        msg: "{{ item.key }}: {{ item.value.phase }} {{ item.value.timeline | map(attribute='stage') | unique | list }}"
      loop: "{{ install.hosts | dict2items }}"
"""


def test_two_hosts_booted_through_redfish_reach_rebooted(lab_factory, tmp_path):
    redfish_lab = lab_factory("--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0",
                              "--install-seconds", "6")
    served = tmp_path / "www"
    served.mkdir()
    labctl("build-iso", "--state", str(redfish_lab.state), "--out", str(served / "node.x86_64.iso"))
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(served)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        playbook = tmp_path / "redfish.yml"
        playbook.write_text(REDFISH_PLAYBOOK)
        wait_for(lambda: _answers(port), timeout=10)
        rc, output = run_playbook(
            playbook, "-i", redfish_lab.inventory, "-e", "iso_url=http://127.0.0.1:%d/node.x86_64.iso" % port,
            "-e", "agent_port=%d" % redfish_lab.info["agent_port"],
            "-e", "kubelet_port=%d" % redfish_lab.info["kubelet_port"], timeout=120)
    finally:
        server.terminate()
        server.wait()
    assert rc == 0, output
    assert redfish_lab.info["redfish"]["password"] not in output
    for name in ("extra-worker-0", "extra-worker-1"):
        state = wait_for(lambda: _rebooted(host_state(redfish_lab, name)), timeout=10)
        assert state["booted_by"] == "redfish" and state["iso"].endswith("/redfish/%s.iso" % name)
    assert "extra-worker-0: rebooted" in output and "extra-worker-1: rebooted" in output


def free_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(port):
    import urllib.request

    try:
        urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=1).close()
        return True
    except OSError:
        return False
