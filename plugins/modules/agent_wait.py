#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# The documentation of the action plugin plugins/action/agent_wait.py (the loop is plugins/module_utils/_join/).

DOCUMENTATION = r"""
module: agent_wait
short_description: Follow the agent of every new host up to a point, printing every host's progress as it happens
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Follows the agent (assisted-service) that runs on every host booted from the day-2 ISO, all hosts concurrently,
    until every host has got as far as O(until); each host on its own, printing every change of its status, stage
    and percentage with a timestamp as it happens. It is one face of the install-and-join loop whose other face is
    M(openshift_agent.day2.csr_approve).
  - The agent API is plain HTTP on port O(agent_port) of each host (C(http://<address>:8090/api/assisted-install/v2)).
    A poll makes at most two requests, C(GET /clusters) (C(with_hosts=true) the first time, C(GET /clusters/{id})
    afterwards) and C(GET /events); a third one in the poll where the other header is tried (O(token)).
  - After the host writes its disk it reboots and the agent goes away. Whenever the agent does not answer, one TLS
    handshake with the kubelet port tells whether the installed system runs; a handshake that completes or that the
    kubelet aborts with the alert C(internal_error) (a new node has no serving certificate until its CSR is approved)
    counts as rebooted, also for a host that rebooted before this run started.
  - A host that cannot get further fails at once, named, with its state and the agent's own messages; the other hosts
    go on. The task fails at the end when more than O(max_failed_hosts) hosts failed.
  - The Kubernetes API is only used to read the default O(token) (one GET).
notes:
  - "Fail-fast conditions: a host in status C(error) or C(cancelled) (or at install stage C(Failed)); a host in
    C(installing-pending-user-action) (it booted the ISO again after writing the disk: eject the virtual media or
    fix the boot order); the agent's cluster in status C(error), C(cancelled) or C(installing-pending-user-action);
    a validation that has been failing for longer than O(validation_grace) on a host that has not started
    installing; the agent refusing the token in both headers."
  - Connection refused, reset or timed out are tolerated at any time (a host may still be booting or rebooting);
    the result records since when a host has not answered.
  - It is an action plugin and always runs on the controller. Hosts are polled by up to 32 threads, so waiting for
    50 hosts takes as long as waiting for one. The guide is C(docs/agent-wait.md).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.follow
  - openshift_agent.day2.attributes
options:
  until:
    description:
      - How far every host must get.
      - V(discovered) - the agent answers and knows its host.
      - V(validated) - the host's validations pass (status C(known) or later).
      - V(installing) - the installation started (C(preparing-for-installation), C(installing) and later).
      - V(rebooted) - the disk is written and the host reboots from it (install stage C(Rebooting) or later, status
        C(added-to-existing-cluster) or C(installed)), or the agent is gone and the kubelet port answers TLS.
      - Every stage and status of the agent's API (4.17 to 4.21) is mapped; one this module does not know is shown
        as the agent sent it and counts as V(discovered).
    type: str
    choices: [discovered, validated, installing, rebooted]
    default: rebooted
  wait:
    description:
      - Whether to wait until every host got as far as O(until). With V(false) every host is polled once and the
        snapshot is returned (hosts not there yet do not fail the task; the fail-fast conditions still do).
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Returns at once which hosts would be followed where (RV(would_follow)). It sends no request at all (every
        request to an agent carries the token) and reads no token, so it works before the image step has created
        Secret C(openshift-config/agent-auth-token).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0 (only to read the default O(token))
seealso:
  - module: openshift_agent.day2.csr_approve
  - module: openshift_agent.day2.day2_iso
  - name: Adding worker nodes to an on-premise cluster (oc adm node-image)
    description: The OpenShift documentation of the day-2 workflow whose monitor this module replaces.
    link: https://docs.openshift.com/container-platform/latest/nodes/nodes/nodes-nodes-adding-node-iso.html
"""

EXAMPLES = r"""
- name: Wait until every booted host's agent answers and its validations pass
  openshift_agent.day2.agent_wait:
    hosts:
      - {name: extra-worker-0, address: 192.168.111.90, mac_address: "00:02:46:e3:9e:7c"}
      - {name: extra-worker-1, address: 192.168.111.91}
    until: validated
    boot_timeout: 1800
  register: booted

- name: Show where each host stands
  ansible.builtin.debug:
    msg: "{{ item.key }}: {{ item.value.reached }} ({{ item.value.agent.status }})"
  loop: "{{ booted.hosts | dict2items }}"

- name: One look at every host, without waiting (where does each stand?)
  openshift_agent.day2.agent_wait:
    hosts: "{{ new_hosts }}"
    wait: false
  register: snapshot
"""

RETURN = r"""
hosts:
  description:
    - Per host by name, C(state) (the loop's phase - C(waiting), C(installing), C(rebooted), C(failed)), C(reached)
      (the furthest of the O(until) values, or C(waiting)), C(problem) (why it failed), C(phases) (seconds in each
      phase), C(phase_started), C(summary) (the line printed at the end) and C(agent) - C(status), C(status_info),
      C(stage), C(percentage), C(cluster_status), C(failing_validations) (C(id), C(message), C(since)),
      C(last_event), C(last_answer), C(auth_header) (the header its agent took the token in), C(auth_refused) (the
      refusal of the header tried first when the other one worked), C(kubelet) (C(handshake) or C(internal_error)),
      C(unreachable_since) and C(timeline) (one entry per change, oldest first).
  returned: always
  type: dict
  sample:
    extra-worker-0:
      state: installing
      reached: validated
      agent: {status: known, stage: null, percentage: null, auth_header: Watcher-Authorization}
reached:
  description: The hosts that got as far as O(until).
  returned: success and failure
  type: list
  elements: str
failed_hosts:
  description: The hosts that failed (each one's reason is in RV(hosts)).
  returned: success and failure
  type: list
  elements: str
duration:
  description: Seconds the run took.
  returned: success and failure
  type: float
rounds:
  description: Poll rounds.
  returned: success and failure
  type: int
token_info:
  description: Where the token came from (C(source), C(key)), its C(persona), C(expires) and C(first_header). Never
    its value.
  returned: success
  type: dict
would_follow:
  description: Check mode, per host its C(name), C(agent_url), C(kubelet) (C(host:port)), C(addresses) and C(until).
  returned: check mode
  type: list
  elements: dict
"""
