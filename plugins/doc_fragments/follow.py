# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# The options of the install-and-join loop that agent_wait and csr_approve share (their argument spec is
# plugins/module_utils/_join/engine.py FOLLOW_OPTIONS; a unit test keeps the two equal).


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  hosts:
    description:
      - The new hosts, as M(openshift_agent.day2.workers_check) returns them in C(hosts); every key but these is
        ignored.
      - C(name), the Node name (compared in lower case, as the kubelet registers it; no wildcards), and C(address),
        where the host's agent and kubelet answer, are required; C(mac_address) finds the host in its agent's
        answer; C(addresses), its inventory addresses (default C([address])), the IP addresses its serving
        certificate may carry besides those its own Node reports that O(cluster) allows; C(labels) and C(taints),
        what its Node carries (M(openshift_agent.day2.csr_approve)); C(state) C(joined) for a host that joined in
        an earlier run (only its labels and taints are converged).
    type: list
    elements: dict
    required: true
  cluster:
    description:
      - The day-1 facts of M(openshift_agent.day2.day1_facts). C(version) chooses the header of a token whose
        claims do not say it. For M(openshift_agent.day2.csr_approve), C(machine_networks), C(api_vips) and
        C(ingress_vips) say which addresses a host's own Node reports may go into its serving certificate (one
        inside a machine network, no VIP and no other Node's, docs/csr-approval.md). Without them a serving
        certificate carries only inventory addresses. Nothing else is read from the cluster for it.
    type: dict
    default: {}
  wait_sleep:
    description: Seconds between two rounds of the loop (agents polled; for csr_approve, CSRs and Nodes read once).
    type: int
    default: 5
  boot_timeout:
    description: Seconds after which a host of which nothing answered (neither its agent nor its kubelet) fails; the
      others go on.
    type: int
    default: 1800
  install_timeout:
    description: Seconds after which a host whose agent answered but that has not got as far as asked fails.
    type: int
    default: 5400
  validation_grace:
    description:
      - How long a validation may keep failing before the host fails, on a host that has not started installing
        (some pass late on a healthy host, C(ntp-synced) while the clock syncs). Seconds, or C(90s), C(10m), C(1h).
    type: raw
    default: 600
  max_failed_hosts:
    description: How many hosts may fail while the task still succeeds; the others always finish first.
    type: int
    default: 0
  request_timeout:
    description: Seconds to wait for one answer of an agent or a kubelet port.
    type: int
    default: 5
  agent_port:
    description:
      - TCP port of the agent API on every host; default E(OPENSHIFT_AGENT_DAY2_AGENT_PORT) when set, else 8090.
        Only a test bed needs another port.
    type: int
  kubelet_port:
    description:
      - TCP port of the kubelet on every host; default E(OPENSHIFT_AGENT_DAY2_KUBELET_PORT) when set, else 10250.
        Only a test bed needs another port.
    type: int
  token:
    description:
      - The agent token (a JWT node-joiner writes into the ISO and into Secret C(openshift-config/agent-auth-token)).
      - "Default is read from that Secret, every C(*AuthToken) key, the watcher token (C(watcherAuthToken), claim
        C(auth_scheme=watcherAuth), 4.18 and later) preferred, else the 4.17 C(agentAuthToken) (claim
        C(infra_env_id)): the one the last ISO was built with."
      - The token goes in C(Watcher-Authorization) for the watcher persona, in C(Authorization) for a 4.17 token;
        one whose claims say neither follows O(cluster) C(version). When an agent refuses it, the request is sent
        once more in the other header and the header that worked is kept.
    type: str
  first_header:
    description: The header the token is sent in first; C(auto) follows the token and the release (O(token)).
    type: str
    default: auto
    choices: [auto, Watcher-Authorization, Authorization]
  follow_from:
    description:
      - Where each host is followed from. C(controller) asks every host's agent and kubelet from this controller.
      - C(cluster) asks them from inside the cluster, as C(oc adm node-image monitor) does (4.17 and later). A pod
        of the node-joiner image runs C(node-joiner monitor-add-nodes) with the hosts' addresses in a namespace,
        service account and ClusterRole of its own, and its log is read through the API server each round, so only
        the API server needs to be reachable from this controller. node-joiner reads the agent token inside the
        cluster; the token is in no pod spec, command line or log. The pod's namespace and role are deleted at the
        end (also when the run is stopped; a run killed outright leaves them for the next
        M(openshift_agent.day2.day2_iso) run to remove).
      - C(auto) asks from this controller and, for the hosts it does not reach, from the cluster; the summary line of
        each host says when it was followed from the cluster. When this identity may not run the pod, C(auto)
        follows from this controller alone, with a warning.
      - The approval gate is the same either way. A host's client CSR is approved once its kubelet answers (to this
        controller or to the monitor) and the settle period passed.
    type: str
    default: auto
    choices: [auto, controller, cluster]
  node_joiner_image:
    description:
      - The node-joiner image for the monitor pod (O(follow_from)). Default is where oc of the cluster's release looks,
        ConfigMap C(openshift-config/installer-images) (4.18 and later), else the release payload's
        C(baremetal-installer) image, read by a pod of the release image; so nothing is pulled from outside the
        cluster's own mirrors.
    type: str
"""
