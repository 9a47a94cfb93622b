#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# The documentation of the action plugin plugins/action/csr_approve.py (the loop is plugins/module_utils/_join/).

DOCUMENTATION = r"""
module: csr_approve
short_description: Approve exactly the new workers' CSRs, each as soon as it rebooted, until their Nodes are Ready
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - One loop on the controller follows every new host's install (its agent, as M(openshift_agent.day2.agent_wait)
    does) as the evidence for approving its kubelet's CSRs, every host independently, until its Node is Ready. It
    prints every change of a host's phase, agent status, stage and percentage, and every approval, with a timestamp,
    and ends with one summary line per host. Workers added with node-joiner have no Machine object, so the
    cluster's machine approver does not approve their CSRs.
  - "A host's client CSR is approved only once the host has demonstrably rebooted into the installed system: its
    kubelet answers on the kubelet port (a TLS handshake, or the alert C(internal_error) a kubelet without a serving
    certificate sends), then O(settle_seconds) pass. CSRs created before the live ISO's agent last answered are not
    the installed system's and are never approved."
  - Every pending client CSR of the host with the kubelet's public key is approved, so a copy of the kubelet's CSR
    cannot strand the kubelet's own. A second public key for a host, before or after an approval, stops that host
    at once, naming the CSR with the other key and its requestor. Then its serving CSR is approved when every check
    passes (signer, requestor, groups, subject, usages, signature, key type, age, SANs); docs/csr-approval.md says
    what is checked and why. A CSR is never denied (it may be someone else's).
  - "An IP SAN of a serving CSR is an address of the host's inventory record (O(hosts) C(addresses)) or one its
    own Node reports in C(status.addresses) (a second NIC, the IPv6 address of a dual-stack host given only C(ip))
    that is inside a machine network of O(cluster), no API or ingress VIP and no other Node's or new host's. DNS
    SANs are the node name only. A refused CSR stays pending; the host's progress line and RV(hosts) C(refused)
    name it, the SAN and why, and a host whose Node is Ready without its serving certificate joins with a warning."
  - The labels and taints of a host are set on its Node as soon as it registers, before it is Ready (one merge patch;
    for every taint key given, the Node's taints of that key become exactly the given ones); a host given with
    C(state=joined) only gets its labels and taints converged.
  - A host that never answers fails after O(boot_timeout), the others go on; the task fails at the end when more than
    O(max_failed_hosts) failed. The flood guard stops every approval when more pending CSRs name the hosts within an
    hour than kubelets file (more than max(10, 4 x hosts)).
  - "Resume: every host is taken where it stands (installing, rebooted, half-joined: its Node exists or a client CSR
    of it is approved, joined). A CSR is read again just before it is approved and never approved twice."
notes:
  - It is an action plugin and always runs on the controller. The agent token is read from the cluster and never
    shown; without it (the Secret is gone) the agents are not asked and a host counts as rebooted when its kubelet
    answers.
  - "The identity needs get and list on certificatesigningrequests and nodes, update on
    certificatesigningrequests/approval, approve on signers kubernetes.io/kube-apiserver-client-kubelet and
    kubernetes.io/kubelet-serving, patch on nodes (labels and taints), get on the Secret
    openshift-config/agent-auth-token (docs/rbac.md)."
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.follow
  - openshift_agent.day2.attributes
options:
  settle_seconds:
    description:
      - Seconds between the moment a host's kubelet answers and its first approval. A kubelet files its client CSR as
        it starts, before its port answers, so a second key filed around the reboot shows up within this time and
        stops the host instead of being raced.
    type: int
    default: 10
  join_timeout:
    description: Seconds after a host rebooted after which it fails when its Node is not Ready.
    type: int
    default: 1800
  clock_skew:
    description:
      - Seconds of tolerance when a CSR's creation time (API server clock) is compared with the last answer of the
        host's agent (this clock, corrected by the API server's C(Date) header).
    type: int
    default: 2
  installed_after:
    description:
      - Per host name, an RFC 3339 time before which none of its CSRs can be of its current installation, so they are
        neither approved nor taken as its kubelet's key. playbooks/replace_worker.yml gives the replaced host the time
        its old Node was deleted (the old installation's CSRs stay in the cluster for up to an hour).
      - Without it, the bound is the last answer of the host's live-ISO agent in this run, if any.
    type: dict
    default: {}
  eject:
    description:
      - The hosts of O(hosts) booted through their BMC in this run (what M(openshift_agent.day2.boot_hosts) returns in
        C(booted)). Each one's virtual CD is ejected through its BMC once its disk is written (its agent reports
        C(Rebooting), or its installed system answers), not before, as ejecting earlier breaks the write; then its
        next boot is made the disk (a pending one-time boot from CD is replaced) and both are read back. The BMC
        settings come from the host record (C(bmc_base_url), C(bmc_system_path), C(bmc_username),
        C(bmc_verify_certs)), its password from its variable C(bmc_password) at that moment. A refused eject is a
        warning naming the host and the BMC.
    type: list
    elements: str
    default: []
  bmc_verify_certs:
    description: Verify the BMCs' TLS certificates (a host's C(bmc_verify_certs) wins).
    type: bool
    default: true
  bmc_ca_path:
    description: CA file (PEM) that verifies the BMCs' certificates; empty for the system's CAs.
    type: str
    default: ""
  redfish_timeout:
    description: Seconds for each Redfish request.
    type: int
    default: 60
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Asks no agent (its requests carry the agent token, whose Secret may not exist yet) and writes nothing. Reads
        the CSRs and Nodes once and returns which pending CSRs the approval decision accepts now (RV(would_approve)),
        the same decision a run makes (a run approves a host's client CSRs once its kubelet answered and the settle
        period passed), and whom it would follow where (RV(would_follow)).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - cryptography >= 3.4
  - netaddr >= 0.10.0
seealso:
  - module: openshift_agent.day2.agent_wait
  - name: Kubernetes certificate signing requests
    description: The CSR API, its signers and the approval subresource this module uses.
    link: https://kubernetes.io/docs/reference/access-authn-authz/certificate-signing-requests/
"""

EXAMPLES = r"""
- name: Follow the installs and join the hosts, each on its own
  openshift_agent.day2.csr_approve:
    hosts:
      - {name: extra-worker-0, address: 192.168.111.90, mac_address: "00:02:46:e3:9e:7c"}
      - {name: extra-worker-1, address: 192.168.111.91, addresses: [192.168.111.91, "fd00::91"],
         labels: {node-role.kubernetes.io/infra: ""}}
    boot_timeout: 1800
  register: joined

- name: Hosts that joined
  ansible.builtin.debug:
    msg: "{{ joined.joined }}"
"""

RETURN = r"""
hosts:
  description:
    - Per host by name, C(state) (C(joined), C(failed), or the phase it was in - C(waiting), C(installing),
      C(rebooted), C(settling), C(half-joined)), C(failed_in), C(problem), C(phases) (seconds spent in each phase
      this run saw), C(phase_started), C(rebooted_by) (what showed the reboot), C(approved) (the CSRs approved for it
      in this run), C(refused) (its CSRs the policy refused when it was last looked at, name to reason and message,
      e.g. a serving CSR with a SAN outside the machine networks), C(summary) (the line printed at the end) and
      C(agent) (as M(openshift_agent.day2.agent_wait) returns it).
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
    - Check mode, the pending CSRs the approval decision accepts now, C(name), C(node), C(signer), C(created).
  returned: check mode
  type: list
  elements: dict
"""
