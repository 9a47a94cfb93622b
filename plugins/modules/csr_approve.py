#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


DOCUMENTATION = r"""
module: csr_approve
short_description: Approve exactly the certificate requests of new workers and wait until their Nodes are Ready
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Approves the kubelet client and serving certificate signing requests (CSRs) of the hosts named in O(nodes), and
    nothing else, then waits until every host has its certificates (O(wait_for=approved)) or its Node is Ready
    (O(wait_for=ready)). Workers added with node-joiner have no Machine object, so the cluster's machine approver
    does not approve their CSRs.
  - Every CSR of the cluster is checked by the collection's approval policy (signer, requesting identity, groups,
    subject, SANs against the host's addresses, usages, signature, key type, one bootstrap key per host, creation time
    against C(not_before)). What is checked and why is in C(docs/csr-approval.md).
  - New CSRs are seen through a watch on the CSR list and approved within about a second of their creation. When the
    watch breaks (connection cut, C(410 Gone), error event) the module polls every O(wait_sleep) seconds and starts a
    new watch after a fresh list. Nodes are read again at every wake-up, at least every O(wait_sleep) seconds.
  - Approval goes through the C(approval) subresource with reason C(OpenshiftAgentDay2Approved) and a message naming
    this collection and the expected node. A C(409 Conflict) is retried after a fresh read. A CSR is never denied;
    one the policy refuses may belong to someone else, so it is only reported in RV(skipped_csrs).
  - There is no wildcard and no "approve all" switch. Approving every pending CSR hands a node identity to anyone
    who holds the bootstrap credential, which is in the worker Ignition config.
  - A host whose client CSRs carry different public keys (possible spoofing), or whose name is already taken by an
    existing Node, blocks only itself. It is reported in RV(skipped_csrs) and, for spoofing, in the warnings; the other
    hosts go on. When all other hosts are done, the module fails with a message for each blocked host.
  - The flood guard stops the run, approving nothing more, when more pending CSRs name the expected hosts within
    one hour than kubelets would file, that is more than max(10, 4 x number of hosts), or O(max_pending).
notes:
  - "The identity needs C(get), C(list) and C(watch) on C(certificatesigningrequests), C(update) on
    C(certificatesigningrequests/approval), C(approve) on C(signers) named
    C(kubernetes.io/kube-apiserver-client-kubelet) and C(kubernetes.io/kubelet-serving), and C(list) on C(nodes).
    C(docs/csr-approval.md) has the ClusterRole. Without C(watch) the module polls and warns."
  - Set C(not_before) for every host (the C(join) role passes the time C(agent_wait) saw the host reboot). It keeps
    stale CSRs of an earlier attempt from being approved and tells an old Node of the same name from the new one.
  - The module reads all CSRs and Nodes and writes only approvals. Waiting changes nothing; C(changed) is true
    exactly when a CSR was approved.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
options:
  nodes:
    description:
      - The hosts that are joining. Only CSRs naming one of them can be approved.
      - Names are compared in lower case, as the kubelet registers them. Names with C(*) or C(?) are refused.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The Node name the host registers (its lower-case host name).
        type: str
        required: true
      addresses:
        description: The IP addresses of the host. Every IP SAN of its serving CSR must be one of them.
        type: list
        elements: str
        required: true
      dns_names:
        description: DNS names, besides O(nodes[].name), that its serving certificate may carry.
        type: list
        elements: str
        default: []
      not_before:
        description:
          - RFC 3339 time (for example C(2024-05-01T12:00:00Z)) before which no genuine CSR of this host can exist,
            such as when C(agent_wait) saw it reboot. CSRs created earlier (minus O(clock_skew)) are skipped, and a
            Node of this name created earlier is not taken for the new host.
        type: str
  wait_for:
    description:
      - C(approved) returns when every host has an approved client CSR and an approved serving CSR (approvals of
        earlier runs count, so a re-run changes nothing). A host whose Node of this run is already Ready also counts,
        because approved CSRs are garbage collected after an hour.
      - C(ready) returns when the Node of every host exists and is Ready.
    type: str
    choices: [approved, ready]
    default: ready
  wait_timeout:
    description: Seconds to wait in total. On timeout the module fails with the state of every host that is not done.
    type: int
    default: 1800
  wait_sleep:
    description:
      - Seconds between polls when the watch is broken, and the longest time between two readings of the Nodes.
    type: int
    default: 10
  max_pending:
    description:
      - Flood guard limit. When more pending CSRs naming the expected hosts were created within the last hour, the
        module approves nothing more and fails.
      - Default max(10, 4 x number of hosts). A kubelet has at most one client and one serving CSR pending and files
        a new one only after about an hour, so four per host allows one retry of each. The value can only lower
        this limit.
    type: int
  clock_skew:
    description: Seconds the API server's clock and this controller's clock may disagree when CSRs are compared with
      O(nodes[].not_before).
    type: int
    default: 60
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Reads the CSRs and Nodes once, approves nothing and returns RV(would_approve). It does not wait, since
        nothing it would wait for can happen without approvals. C(changed) predicts whether a run would approve.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - cryptography >= 3.4
  - netaddr >= 0.10.0
seealso:
  - module: kubernetes.core.k8s_info
  - name: Kubernetes certificate signing requests
    description: The CSR API, its signers and the approval subresource this module uses.
    link: https://kubernetes.io/docs/reference/access-authn-authz/certificate-signing-requests/
"""

EXAMPLES = r"""
- name: Approve the new workers' CSRs and wait until their Nodes are Ready
  openshift_agent.day2.csr_approve:
    nodes:
      - name: extra-worker-0
        addresses: [192.168.111.90]
        not_before: "2024-05-01T12:00:00Z"
      - name: extra-worker-1
        addresses: [192.168.111.91, "fd00::91"]
        dns_names: [extra-worker-1.example.com]
    wait_timeout: 3600
  register: joined

- name: Only approve (for example when readiness is checked elsewhere)
  openshift_agent.day2.csr_approve:
    nodes: "{{ day2_nodes }}"
    wait_for: approved

- name: Show what would be approved, approving nothing
  openshift_agent.day2.csr_approve:
    nodes: "{{ day2_nodes }}"
  check_mode: true
  register: preview

- name: List the CSRs that were not approved, and why
  ansible.builtin.debug:
    msg: "{{ joined.skipped_csrs | map(attribute='name') | zip(joined.skipped_csrs | map(attribute='reason')) | list }}"
"""

RETURN = r"""
approved:
  description: CSRs approved by this run, in the order they were approved.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: CSR name.
      type: str
      sample: csr-8vnps
    node:
      description: The expected host it belongs to.
      type: str
      sample: extra-worker-0
    signer:
      description: C(kubernetes.io/kube-apiserver-client-kubelet) or C(kubernetes.io/kubelet-serving).
      type: str
    created:
      description: The CSR's creationTimestamp.
      type: str
      sample: "2024-05-01T12:03:10Z"
    approved_at:
      description: When this run approved it (controller clock, UTC).
      type: str
      sample: "2024-05-01T12:03:11Z"
skipped_csrs:
  description:
    - Every pending kubelet CSR seen during the run and not approved, one entry per CSR with the latest reason.
      Once this run approved a host, C(node-exists) and C(node-already-approved) do not replace a reason reported
      before for the same CSR (for example C(superseded)).
    - Named C(skipped_csrs) because Ansible reserves the result key C(skipped).
    - Reason codes (for example C(unknown-node), C(san-not-expected), C(possible-spoofing), C(node-exists),
      C(superseded), C(node-already-approved)) are listed in C(docs/csr-approval.md).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: CSR name.
      type: str
    node:
      description: The host its subject CN names, or null when it names none.
      type: str
    signer:
      description: Signer name.
      type: str
    reason:
      description: Short reason code.
      type: str
      sample: san-not-expected
    message:
      description: What was expected and what was found.
      type: str
    created:
      description: The CSR's creationTimestamp.
      type: str
would_approve:
  description: In check mode, the CSRs a run would approve now (name, node, signer, created).
  returned: check mode
  type: list
  elements: dict
nodes:
  description: State of every expected host at the end.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Host (Node) name.
      type: str
    exists:
      description: Whether a Node of that name exists.
      type: bool
    ready:
      description: Whether that Node's Ready condition is True.
      type: bool
    addresses:
      description: The Node's IP addresses (empty when it does not exist).
      type: list
      elements: str
    expected_addresses:
      description: The addresses given in O(nodes[].addresses).
      type: list
      elements: str
    created:
      description: The Node's creationTimestamp, or null.
      type: str
    client_csr:
      description: The approved client CSR of this host (this run or an earlier one), or null.
      type: str
    serving_csr:
      description: The approved serving CSR of this host, or null.
      type: str
    state:
      description: C(ready), C(waiting-for-client-csr), C(waiting-for-serving-csr), C(waiting-for-ready) or C(blocked).
      type: str
    problem:
      description: Why the host is blocked (possible spoofing, node already exists), or null.
      type: str
duration:
  description: Seconds the module ran.
  returned: always
  type: float
  sample: 94.2
watch_restarts:
  description: How often the CSR watch broke and the module fell back to polling.
  returned: always
  type: int
  sample: 0
"""

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import fail, finish
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import approver
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.node_state import WAIT_FOR_CHOICES


def argument_spec():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        nodes={
            "type": "list",
            "elements": "dict",
            "required": True,
            "options": {
                "name": {"type": "str", "required": True},
                "addresses": {"type": "list", "elements": "str", "required": True},
                "dns_names": {"type": "list", "elements": "str", "default": []},
                "not_before": {"type": "str"},
            },
        },
        wait_for={"type": "str", "choices": list(WAIT_FOR_CHOICES), "default": "ready"},
        wait_timeout={"type": "int", "default": 1800},
        wait_sleep={"type": "int", "default": 10},
        max_pending={"type": "int"},
        clock_skew={"type": "int", "default": 60},
    )
    return spec


def main():
    module = AnsibleK8SModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        result = approver.run(module)
    except Day2Error as error:
        fail(module, "csr_approve", error)
    finish(module, result)


if __name__ == "__main__":
    main()
