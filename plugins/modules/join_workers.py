# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: join_workers
short_description: Follow every new host's install and approve its CSRs, each host on its own, resumable
version_added: 0.3.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - One loop on the controller follows every host's agent (as M(openshift_agent.day2.agent_wait) does) and approves
    its kubelet's CSRs (with the checks of M(openshift_agent.day2.csr_approve)), every host independently, and prints
    every change of a host's phase, agent status, stage and percentage, and every approval, with a timestamp, at
    default verbosity. It ends with one summary line per host (time per phase, final state, approvals made).
  - "A host's client CSR is approved only once the host has demonstrably rebooted into the installed system: its
    kubelet answers on the kubelet port (a TLS handshake, or the alert C(internal_error) a kubelet without a serving
    certificate sends), then O(settle_seconds) pass. CSRs created before the live ISO's agent last answered are not
    the installed system's and are never approved."
  - Every pending client CSR of the host that carries the same public key is approved, so a byte-for-byte copy of the
    kubelet's CSR cannot strand the kubelet's own. A second public key for a host, before or after an approval, stops
    that host at once; the message names the CSR with the other key and its requestor (C(spec.username)) and says
    what to do. When no CSR was approved yet and two keys are pending, both are named and none is approved.
  - The serving CSR is approved once the client certificate is (same checks as M(openshift_agent.day2.csr_approve)).
  - Hosts progress independently; a host that never answers (neither agent nor kubelet) fails after
    O(boot_timeout) and the others go on. The run fails at the end when more than O(max_failed_hosts) hosts failed.
  - "Resume: every host is taken where it stands. Installing (its agent answers), rebooted (its kubelet answers),
    half-joined (its Node exists, not Ready, or a client CSR of it is approved), joined (its Node is Ready). A CSR is
    read again just before it is approved and never approved twice."
  - docs/csr-approval.md explains the rules and the window that remains.
notes:
  - It is an action plugin; it always runs on the controller. The agent token is read from the cluster and never
    shown.
  - Check mode asks no agent and approves nothing; it returns RV(would_follow) and, read from the cluster,
    RV(would_approve).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
options:
  hosts:
    description: The hosts to follow, C(name), C(address) (where the agent and the kubelet answer), C(mac_address).
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - Per host (by C(name)), the C(addresses) its serving certificate may carry, as the C(nodes) of
        M(openshift_agent.day2.csr_approve). A host not listed may carry only its O(hosts) C(address).
    type: list
    elements: dict
    default: []
  settle_seconds:
    description:
      - Seconds between the moment a host's kubelet answers and its first approval. A kubelet files its client CSR as
        it starts, before its port answers, so a second key filed around the reboot shows up within this time and
        stops the host instead of being raced.
    type: int
    default: 10
  boot_timeout:
    description: Seconds after which a host of which nothing answered (agent, kubelet) fails; the others go on.
    type: int
    default: 1800
  install_timeout:
    description: Seconds after which a host whose agent answered but that has not rebooted fails.
    type: int
    default: 5400
  join_timeout:
    description: Seconds after a host rebooted after which it fails when it is not Ready.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between two rounds (agents polled, CSRs and Nodes read once).
    type: int
    default: 5
  validation_grace:
    description: How long a failing validation may last before the host fails (seconds or a duration like C(10m)).
    type: raw
    default: 600
  clock_skew:
    description:
      - Seconds of tolerance when a CSR's creation time (API server clock) is compared with the last answer of the
        host's agent (this clock, corrected by the API server's C(Date) header).
    type: int
    default: 2
  max_failed_hosts:
    description: How many hosts may fail while the run still succeeds; the others always finish first.
    type: int
    default: 0
  request_timeout:
    description: Seconds to wait for one answer of an agent or a kubelet port.
    type: int
    default: 5
  agent_port:
    description: The agent's port; default E(OPENSHIFT_AGENT_DAY2_AGENT_PORT), else 8090.
    type: int
  kubelet_port:
    description: The kubelet's port; default E(OPENSHIFT_AGENT_DAY2_KUBELET_PORT), else 10250.
    type: int
  token:
    description: The agent token; default the one of Secret C(openshift-config/agent-auth-token).
    type: str
  first_header:
    description: The header the token is sent in first (C(auto) follows the token and the release).
    type: str
    default: auto
    choices: [auto, Watcher-Authorization, Authorization]
  eject:
    description:
      - Per host booted through Redfish virtual media in this run (the boot role's C(boot_ejects)), how to eject its
        virtual CD. The CD is ejected with C(community.general.redfish_command) C(VirtualMediaEject) once the host's
        disk is written (its agent reports C(Rebooting), or its installed system answers), not before, as ejecting
        earlier breaks the write. The BMC password is read from the host's variable C(bmc_password).
      - A refused eject is a warning naming the BMC (a later reboot could start the installer again).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The host.
        type: str
        required: true
      baseuri:
        description: The BMC's host and port.
        type: str
        required: true
      username:
        description: The BMC user.
        type: str
        required: true
      category:
        description: Where the virtual media are, C(Systems) or C(Manager).
        type: str
        default: Systems
        choices: [Systems, Manager]
      resource_id:
        description: The system's (or manager's) id; empty for the only one.
        type: str
        default: ""
      image_url:
        description: The URL inserted (it may hold the served ISO's secret path; never shown).
        type: str
        required: true
      validate_certs:
        description: Verify the BMC's certificate.
        type: bool
        default: true
      ca_path:
        description: CA bundle for the BMC's certificate.
        type: str
        default: ""
      timeout:
        description: Seconds per Redfish request.
        type: int
        default: 30
  installed_after:
    description:
      - Per host name, an RFC 3339 time before which none of its CSRs can be of its current installation, so they
        are neither approved nor taken as its kubelet's key. playbooks/replace_worker.yml gives the replaced
        host the time its old Node was deleted (the old installation's CSRs stay in the cluster for up to an hour).
      - Without it, the bound is the last answer of the host's live-ISO agent in this run, if any.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description:
      - Asks no agent (its requests carry the agent token, whose Secret may not exist yet) and writes nothing;
        returns RV(would_follow) and the pending CSRs the policy accepts now (RV(would_approve)), read from the
        cluster.
  diff_mode:
    support: none
    description: Not supported.
"""

EXAMPLES = r"""
- name: Follow the installs and join the hosts, each on its own
  openshift_agent.day2.join_workers:
    hosts: "{{ preflight_workers.install_hosts }}"
    nodes: "{{ preflight_workers.join_nodes }}"
    boot_timeout: 1800
    max_failed_hosts: 0
  register: joined

- name: Hosts that joined
  ansible.builtin.debug:
    msg: "{{ joined.joined }}"
"""

RETURN = r"""
hosts:
  description:
    - Per host, C(state) (C(joined), C(failed), or the phase it was in), C(failed_in), C(problem), C(phases) (seconds
      spent in each phase this run saw), C(phase_started), C(rebooted_by) (what showed the reboot), C(approved)
      (the CSRs approved for it in this run), C(summary) (the line printed at the end) and C(agent) (last
      status, stage, percentage, the header the token was taken in).
  returned: success and failure
  type: dict
approved:
  description: Every CSR this run approved, C(name), C(node), C(kind) (client or serving), C(approved_at).
  returned: success and failure
  type: list
  elements: dict
joined:
  description: The hosts whose Node is Ready.
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
server_clock_offset:
  description: Seconds the API server's clock is ahead of the controller's.
  returned: success and failure
  type: float
would_follow:
  description: Check mode, per host its C(name), C(agent_url), C(kubelet) and C(addresses).
  returned: check mode
  type: list
  elements: dict
would_approve:
  description:
    - Check mode, the pending CSRs of the hosts that the approval policy accepts now (C(name), C(node),
      C(signer), C(created), as M(openshift_agent.day2.csr_approve) returns them). A run approves a host's
      client CSRs only once its kubelet answers and the settle period passed.
  returned: check mode
  type: list
  elements: dict
"""
