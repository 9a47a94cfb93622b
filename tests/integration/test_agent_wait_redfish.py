"""agent_wait in a playbook against the lab's Redfish BMCs: virtual media, power on, then the wait.

The lab runs its hosts' agents and kubelets on free ports (``--agent-port 0 --kubelet-port 0``, read back from
lab.json), passed to the play as variables. The wait ends when the hosts have rebooted; ``boot_timeout`` and
``install_timeout`` are only ceilings, far above what a loaded machine needs (the lab's BMCs apply a power change
1 to 11 s after it is asked for). What the hosts booted and how far they got is read from the lab's records.
"""

import subprocess
import sys

from conftest import labctl, run_playbook
from lab.waiting import wait_until

CEILING = 120  # seconds; for waits that end on an event of the lab


def host_state(lab, name):
    return next(h for h in lab.control("GET", "/hosts") if h["name"] == name)


def _rebooted(state):
    return state if state["phase"] == "rebooted" else None


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
        url: "{{ bmc }}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"
        method: POST
        user: "{{ hostvars[item].bmc_username }}"
        password: "{{ hostvars[item].bmc_password }}"
        force_basic_auth: true
        ca_path: "{{ bmc_ca }}"
        body_format: json
        body: {Image: "{{ iso_url }}", Inserted: true, WriteProtected: true}
        status_code: [200, 202, 204]
      vars:
        bmc: "{{ hostvars[item].bmc_address | regex_replace('^redfish-virtualmedia\\\\+', '') }}"
      loop: "{{ workers }}"
      no_log: true

    - name: Power each host on
      ansible.builtin.uri:
        url: "{{ bmc }}/Actions/ComputerSystem.Reset"
        method: POST
        user: "{{ hostvars[item].bmc_username }}"
        password: "{{ hostvars[item].bmc_password }}"
        force_basic_auth: true
        ca_path: "{{ bmc_ca }}"
        body_format: json
        body: {ResetType: "On"}
        status_code: [200, 202, 204]
      vars:
        bmc: "{{ hostvars[item].bmc_address | regex_replace('^redfish-virtualmedia\\\\+', '') }}"
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
        boot_timeout: 300
        install_timeout: 400
      register: install

    - name: Show where each host got
      ansible.builtin.debug:
        msg: >-
          {{ item.key }}: {{ item.value.reached }}
          {{ item.value.agent.timeline | map(attribute='stage') | select | unique | list }}
      loop: "{{ install.hosts | dict2items }}"

    - name: Every host reached rebooted, none failed
      ansible.builtin.assert:
        that:
          - install.reached == workers | sort
          - install.failed_hosts == []
"""


def test_two_hosts_booted_through_redfish_reach_rebooted(lab_factory, tmp_path):
    redfish_lab = lab_factory(
        "--hosts", "2", "--redfish", "--agent-port", "0", "--kubelet-port", "0", "--install-seconds", "6"
    )
    served = tmp_path / "www"
    served.mkdir()
    labctl("build-iso", "--state", str(redfish_lab.state), "--out", str(served / "node.x86_64.iso"))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(served)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        playbook = tmp_path / "redfish.yml"
        playbook.write_text(REDFISH_PLAYBOOK)
        wait_until("the ISO server", lambda: _answers(port), timeout=CEILING)
        rc, output = run_playbook(
            playbook,
            "-i",
            redfish_lab.inventory,
            "-e",
            "iso_url=http://127.0.0.1:%d/node.x86_64.iso" % port,
            "-e",
            "bmc_ca=%s" % redfish_lab.info["redfish"]["ca_path"],
            "-e",
            "agent_port=%d" % redfish_lab.info["agent_port"],
            "-e",
            "kubelet_port=%d" % redfish_lab.info["kubelet_port"],
            timeout=900,
        )
    finally:
        server.terminate()
        server.wait()
    assert rc == 0, output
    assert redfish_lab.info["redfish"]["password"] not in output
    for name in ("extra-worker-0", "extra-worker-1"):
        state = wait_until(
            "%s rebooted" % name, lambda name=name: _rebooted(host_state(redfish_lab, name)), timeout=CEILING
        )
        assert state["booted_by"] == "redfish" and state["iso"].endswith("/redfish/%s.iso" % name)
        assert "Host: %s, reached installation stage Rebooting" % name in state["events"]
    assert "extra-worker-0: rebooted [" in output and "extra-worker-1: rebooted [" in output


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
