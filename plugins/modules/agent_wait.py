#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


DOCUMENTATION = r"""
module: agent_wait
short_description: Follow the agent of every new host through validation, installation and reboot
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Polls the agent (assisted-service) that runs on every host booted from the day-2 ISO, all hosts concurrently,
    and waits until every host has reached the stage named by O(until).
  - Fails at once, not at the timeout, when a host cannot get further, with the host, its state and the agent's own
    messages. See O(validation_grace) and the notes for the conditions.
  - Returns per host the status, install stage and percentage, failing validations, the newest agent event and a
    timeline of every change it saw, so that a playbook or an AWX job can show and act on where each host is.
  - The agent API is plain HTTP on port O(agent_port) of each host
    (C(http://<address>:8090/api/assisted-install/v2)). The token goes in the header the host's release reads,
    C(Authorization) on 4.17 and C(Watcher-Authorization) from 4.18 (see O(token)); when an agent refuses it, the
    request is sent once more in the other header, and the header that worked is kept (RV(auth_header)).
  - Per host and poll at most two requests are made, C(GET /clusters) (C(with_hosts=true) the first time,
    C(GET /clusters/{id}) afterwards) and C(GET /events?infra_env_id=...); a third one in the poll where the
    other header is tried.
  - After the host writes its disk it reboots and the agent goes away. Whenever the agent does not answer, one
    TLS handshake with the kubelet port O(kubelet_port) tells whether the installed system runs; a handshake
    that completes or that the kubelet aborts with the alert C(internal_error) (a new node has no serving
    certificate until its CSR is approved) counts as rebooted. This also recognises a host that rebooted before
    this run started.
  - The Kubernetes API of the cluster is only used to read the default O(token) and the cluster's version (two
    GET requests), with the usual kubernetes.core authentication options.
notes:
  - "Fail-fast conditions: a host in status C(error) (or at install stage C(Failed)); a host in
    C(installing-pending-user-action) (it booted the ISO again after writing the disk: eject the virtual media or fix
    the boot order); the agent's cluster in status C(error) or C(installing-pending-user-action); a validation that
    has been failing for longer than O(validation_grace) on a host that has not started installing; a host in
    status C(cancelled) or its cluster in C(cancelled); the agent refusing the token in both headers (HTTP 401,
    403, or 500 C(malformed auth_scheme claim)). The message quotes the agent for each header, names the token's
    source and persona, and the fix: rebuild the ISO with M(openshift_agent.day2.day2_iso) and
    O(openshift_agent.day2.day2_iso#module:force=true) when the token expired or the ISO comes from another
    build, or pass the watcher token of the ISO the host runs."
  - "Connection refused, reset or timed out are tolerated at any time: a host may still be booting, or rebooting.
    The result records since when a host has not answered (RV(hosts.unreachable_since))."
  - "On timeout the message gives each late host's last state; a host whose agent never answered at all is named
    as such, with the usual causes: not booted, booted a wrong ISO (another cluster, MAC not in the ISO, expired
    token), or not reachable at the address and port."
  - "The kubelet check does not verify the certificate (a new node serves none, or a self-signed one, until its
    serving CSR is approved); no data is exchanged. The agent API has no TLS, so O(validate_certs) and the other
    kubernetes.core options apply to the Kubernetes API only."
  - "Hosts are polled by up to 32 threads, one round every O(wait_sleep) seconds, so waiting for 50 hosts takes as
    long as waiting for one. A host that has reached O(until) is no longer polled."
  - "A guide with a troubleshooting section for each failure is in the collection's C(docs/agent-wait.md)."
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
options:
  hosts:
    description:
      - The new hosts to follow.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - The host name, as in the inventory and C(nodes-config.yaml). Used as the key of RV(hosts), and to find
            the host in the agent's answer (C(requested_hostname) or the inventory hostname).
        type: str
        required: true
      address:
        description:
          - The IP address (or DNS name) where the host's agent and kubelet are reachable.
        type: str
        required: true
      mac_address:
        description:
          - A MAC address of the host. When given, the host is also recognised by it in the agent's inventory.
        type: str
  until:
    description:
      - How far every host must get.
      - V(discovered) - the agent answers and knows its host.
      - V(validated) - the host's validations pass (status C(known) or later).
      - V(installing) - the installation started (C(preparing-for-installation), C(installing) and later).
      - V(rebooted) - the disk is written and the host reboots from it - install stage C(Rebooting) or later
        (C(Waiting for ignition), C(Configuring), C(Joined), C(Done); the agent stores a day-2 worker's
        C(Rebooting) as C(Done)), or status C(added-to-existing-cluster) or C(installed), or the agent not
        answering and the kubelet port answering TLS (see the description).
      - Every stage and status of the agent's API (4.17 to 4.21) is mapped; one this module does not know is shown
        as the agent sent it and counts as V(discovered).
    type: str
    choices: [discovered, validated, installing, rebooted]
    default: rebooted
  wait:
    description:
      - Whether to wait until every host reached O(until).
      - With V(false), every host is polled once and the snapshot is returned; hosts that have not reached O(until)
        do not fail the task, but the fail-fast conditions still do. A role can loop on it with C(until:) and show
        progress on every iteration.
    type: bool
    default: true
  wait_timeout:
    description:
      - How many seconds to wait in total before failing with each late host's state.
    type: int
    default: 3600
  wait_sleep:
    description:
      - Seconds between the starts of two poll rounds.
    type: int
    default: 5
  agent_port:
    description:
      - TCP port of the agent API on every host.
      - When not given, the environment variable E(OPENSHIFT_AGENT_DAY2_AGENT_PORT) of the module's process is used
        if set, else the default. Only a test bed needs another port than the agent's own.
    type: int
    default: 8090
  kubelet_port:
    description:
      - TCP port of the kubelet on every host, probed with a TLS handshake once the agent is gone.
      - When not given, the environment variable E(OPENSHIFT_AGENT_DAY2_KUBELET_PORT) of the module's process is
        used if set, else the default. Only a test bed needs another port than the kubelet's own.
    type: int
    default: 10250
  request_timeout:
    description:
      - Seconds to wait for the answer to one request (connect and read).
    type: int
    default: 5
  validation_grace:
    description:
      - How long a validation may keep failing before the host is failed, on a host that has not started installing.
      - Some validations pass late on a healthy host (for example C(ntp-synced) while the clock syncs).
      - Seconds, or a duration such as V(90s), V(10m), V(1h).
    type: raw
    default: 600
  token:
    description:
      - The agent token (a JWT node-joiner writes into the ISO and into Secret C(openshift-config/agent-auth-token)).
      - Default is read from that Secret with the kubernetes.core authentication options - every C(*AuthToken)
        key, the watcher token (C(watcherAuthToken), claim C(auth_scheme=watcherAuth), 4.18 and later) preferred,
        else the 4.17 C(agentAuthToken) (claim C(infra_env_id)). It is the one the last ISO was built with, as long
        as no ISO was built since. The cluster's ClusterVersion is read too, to know the release.
      - "The first header is chosen by the token's claims: the watcher persona goes in C(Watcher-Authorization),
        a 4.17 token (C(infra_env_id)) and the user or agent persona in C(Authorization). A token whose claims
        cannot be read follows the cluster's release when it was read from the cluster, and starts with
        C(Watcher-Authorization) (the header of 4.18 and later) when it is given here. Either way the other
        header is tried once when the agent refuses the first."
    type: str
  first_header:
    description:
      - The header to send the token in first.
      - V(auto) chooses by the token's claims and the cluster's release (see O(token)).
      - Set it when you know better, for example for an agent of another release than the cluster's; the other
        header is still tried once when the agent refuses this one, and the refusal is reported in
        RV(hosts.auth_refused).
    type: str
    choices: [auto, Watcher-Authorization, Authorization]
    default: auto
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Checks the options and returns at once which hosts would be followed, at which agent URL and kubelet
        address, until which stage (RV(would_follow)); RV(hosts) has every host in phase C(waiting).
      - It sends no request at all - every request to an agent carries the token - and does not read the token,
        so it works before the image step has created Secret C(openshift-config/agent-auth-token).
        RV(token_info) only says where the token would come from.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0 (only to read the default O(token))
seealso:
  - module: openshift_agent.day2.day2_iso
  - name: Adding worker nodes to an on-premise cluster (oc adm node-image)
    description: The OpenShift documentation of the day-2 workflow whose monitor this module replaces.
    link: https://docs.openshift.com/container-platform/latest/nodes/nodes/nodes-nodes-adding-node-iso.html
"""

EXAMPLES = r"""
- name: Wait until all new workers rebooted from disk (token read from the cluster)
  openshift_agent.day2.agent_wait:
    hosts:
      - {name: extra-worker-0, address: 192.168.111.90, mac_address: "00:02:46:e3:9e:7c"}
      - {name: extra-worker-1, address: 192.168.111.91}
    wait_timeout: 5400
  register: install

- name: Show each host's install timeline
  ansible.builtin.debug:
    msg: "{{ item.key }}: {{ item.value.timeline | map(attribute='stage') | unique | join(' -> ') }}"
  loop: "{{ install.hosts | dict2items }}"

- name: Wait for the hosts of a list; a failing ntp-synced validation fails the task after 20 minutes, not 10
  openshift_agent.day2.agent_wait:
    hosts: "{{ new_hosts }}"
    validation_grace: 20m

- name: Loop visibly until every host is installing, one snapshot per iteration
  openshift_agent.day2.agent_wait:
    hosts: "{{ new_hosts }}"
    until: installing
    wait: false
  register: snapshot
  until: snapshot.hosts.values() | selectattr('reached') | list | length == new_hosts | length
  retries: 120
  delay: 10

- name: Use an explicit token, for example from the day2_iso result
  openshift_agent.day2.agent_wait:
    hosts: "{{ new_hosts }}"
    token: "{{ agent_token }}"
    until: validated
"""

RETURN = r"""
hosts:
  description: State of every host, by name.
  returned: always
  type: dict
  contains:
    address:
      description: The address that was polled.
      type: str
      sample: 192.168.111.90
    answered:
      description: Whether the agent ever answered (even with an error).
      type: bool
    phase:
      description: The furthest of the O(until) values this host reached, or C(waiting).
      type: str
      sample: installing
    reached:
      description: Whether the host reached O(until).
      type: bool
    status:
      description: The agent's host C(status), null before the agent knew its host.
      type: str
      sample: installing-in-progress
    status_info:
      description: The agent's host C(status_info).
      type: str
      sample: Installation is in progress
    stage:
      description: The install stage (C(progress.current_stage)).
      type: str
      sample: Writing image to disk
    percentage:
      description: C(progress.installation_percentage).
      type: int
      sample: 40
    cluster_status:
      description: C(status) of the agent's cluster.
      type: str
      sample: adding-hosts
    failing_validations:
      description: Validations in status C(failure) at the last poll.
      type: list
      elements: dict
      contains:
        id:
          description: Validation id.
          type: str
          sample: ntp-synced
        message:
          description: The agent's message.
          type: str
          sample: Host couldn't synchronize with any NTP server
        since:
          description: When this module first saw it failing (RFC 3339, UTC).
          type: str
          sample: "2025-01-20T10:04:05Z"
    last_event:
      description: Message of the newest agent event.
      type: str
      sample: "Host extra-worker-0: reached installation stage Writing image to disk: 40%"
    auth_header:
      description: The header this host's agent accepted the token in, null before it accepted it.
      type: str
      sample: Watcher-Authorization
    auth_refused:
      description:
        - The refusal of the header tried first when the agent then accepted the other one (C(header), C(status),
          C(message), as the agent answered), null when the first header was accepted or nothing was accepted.
      type: dict
      sample: {header: Authorization, status: 403, message: authClaim watcherAuth is unauthorized to access}
    rebooted_after:
      description:
        - When the agent (it runs from the live ISO) was last seen before the host rebooted (RFC 3339, UTC) - the
          installed system and its CSRs come later; null before C(rebooted), or when this run never heard the agent
          (the host had rebooted already). The C(join) role passes it to M(openshift_agent.day2.csr_approve).
      type: str
    kubelet:
      description:
        - How the kubelet port answered when the agent did not - C(handshake) (TLS completed) or
          C(internal_error) (TLS aborted with that alert - no approved serving certificate yet) - null when it
          was never seen answering.
      type: str
      sample: internal_error
    timeline:
      description:
        - One entry each time status, stage, percentage or event changed, oldest first.
        - C(event) is the newest agent event, or what this module saw when the agent did not answer
          (C(the agent does not answer), C(the agent is gone and the kubelet answers TLS...),
          C(the agent refused the token)).
      type: list
      elements: dict
      sample:
        - {time: "2025-01-20T10:04:05Z", status: known, stage: null, percentage: null, event: "Host is ready"}
        - {time: "2025-01-20T10:06:15Z", status: installing-in-progress, stage: Writing image to disk,
           percentage: 40, event: "reached installation stage Writing image to disk: 40%"}
    unreachable_since:
      description: Since when the agent has not answered (RFC 3339, UTC), null while it answers.
      type: str
would_follow:
  description: In check mode, the hosts that would be followed.
  returned: check mode
  type: list
  elements: dict
  contains:
    name:
      description: The host name.
      type: str
    address:
      description: Its address.
      type: str
    agent_url:
      description: The agent API that would be polled.
      type: str
      sample: http://192.168.111.90:8090/api/assisted-install/v2
    kubelet:
      description: The kubelet address (C(host:port)) probed once the agent is gone.
      type: str
      sample: 192.168.111.90:10250
    until:
      description: How far the host would be followed (O(until)).
      type: str
duration:
  description: Seconds spent.
  returned: always
  type: float
  sample: 1312.4
polls:
  description: Number of poll rounds.
  returned: always
  type: int
  sample: 263
requests:
  description: Number of HTTP requests sent to agents plus TLS handshakes with kubelets.
  returned: always
  type: int
  sample: 520
auth_header:
  description:
    - The header the agents accepted the token in (C(Authorization) or C(Watcher-Authorization)); the last one
      that worked when hosts differ (see RV(hosts.auth_header)); null when no agent accepted it.
  returned: always
  type: str
  sample: Watcher-Authorization
token_info:
  description: Where the token came from and what it is. Never its value.
  returned: always
  type: dict
  contains:
    source:
      description: C(secret) (read from the cluster, key C(key)) or C(option) (O(token)).
      type: str
    key:
      description: The Secret key it was read from, null when given.
      type: str
    persona:
      description: Its C(auth_scheme) claim (4.18 and later), null for a 4.17 token or unreadable claims.
      type: str
      sample: watcherAuth
    expires:
      description: Its C(exp) claim (RFC 3339, UTC), null when unknown.
      type: str
    cluster_version:
      description: The cluster's version from ClusterVersion, null when the token was given or it could not be read.
      type: str
      sample: 4.18.3
    first_header:
      description: The header tried first.
      type: str
"""

import copy

from ansible.module_utils.basic import env_fallback
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import fail, finish
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.states import TARGETS
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.wait import FIRST_HEADER_CHOICES, run

ARGUMENT_SPEC = {
    "hosts": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": {
            "name": {"type": "str", "required": True},
            "address": {"type": "str", "required": True},
            "mac_address": {"type": "str"},
        },
    },
    "until": {"type": "str", "choices": list(TARGETS), "default": "rebooted"},
    "wait": {"type": "bool", "default": True},
    "wait_timeout": {"type": "int", "default": 3600},
    "wait_sleep": {"type": "int", "default": 5},
    "agent_port": {"type": "int", "default": 8090, "fallback": (env_fallback, ["OPENSHIFT_AGENT_DAY2_AGENT_PORT"])},
    "kubelet_port": {
        "type": "int",
        "default": 10250,
        "fallback": (env_fallback, ["OPENSHIFT_AGENT_DAY2_KUBELET_PORT"]),
    },
    "request_timeout": {"type": "int", "default": 5},
    "validation_grace": {"type": "raw", "default": 600},
    "token": {"type": "str", "no_log": True},
    "first_header": {"type": "str", "choices": list(FIRST_HEADER_CHOICES), "default": "auto"},
}


def main():
    argument_spec = copy.deepcopy(AUTH_ARG_SPEC)
    argument_spec.update(ARGUMENT_SPEC)
    # The kubernetes library is only required to read the default token (see _install.wait.choose_token).
    module = AnsibleK8SModule(argument_spec=argument_spec, supports_check_mode=True, check_k8s=False)
    try:
        result = run(module)
    except Day2Error as error:
        fail(module, "agent_wait", error)
    finish(module, result)


if __name__ == "__main__":
    main()
