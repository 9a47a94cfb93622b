#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


DOCUMENTATION = r"""
module: day1_facts
short_description: Read what a running OpenShift cluster needs to accept day-2 worker nodes
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Reads the objects that C(node-joiner) (what C(oc adm node-image create) runs) reads from a running cluster
    installed with the agent-based installer, and returns them as facts in C(ansible_facts.day1_cluster).
  - Identity, version, platform, architecture, networks, proxy, mirrors, SSH key, RHCOS boot images, the worker
    Ignition endpoint, the existing nodes and the cluster's health.
  - The facts are the input of the later steps; M(openshift_agent.day2.day2_iso) takes them as its option
    O(openshift_agent.day2.day2_iso#module:cluster) and then does not read the cluster again.
  - Decides whether the cluster can take day-2 workers (C(supported)) the way node-joiner decides it, and says why
    not (C(unsupported_reasons)). Objects node-joiner does without are read and used when they exist; when they
    are missing the facts say so in C(warnings) (also shown as module warnings), never as a reason to refuse.
  - "Names the cluster states in which adding workers is unsafe or only risky (see the notes): an upgrade in progress
    and a paused worker pool with a rendered config pending are listed in C(unsafe_reasons) unless
    O(allow_upgrading=true); they and the risky states are always in C(warnings)."
  - Only reads. It makes exactly 18 GET requests on the resources listed in the notes (the kubernetes client may add
    its own discovery requests the first time it meets an API server; it caches them in a temporary file).
  - Secret contents are never returned. For the pull secret only its presence and the registries it covers are
    returned.
notes:
  - Transient API failures (no answer, 429 with its C(Retry-After), 500, 502, 503, 504) are retried with bounded
    exponential backoff, discovery included; only a read that still fails then counts as unreadable.
  - "The 18 requests: ClusterVersion C(version); Infrastructure, Network, Proxy and Ingress C(cluster); ConfigMaps
    C(kube-system/cluster-config-v1), C(openshift-config/user-ca-bundle),
    C(openshift-machine-config-operator/coreos-bootimages); Secrets C(openshift-config/pull-secret) and
    C(openshift-machine-api/worker-user-data-managed); the Node list; the ImageDigestMirrorSet and
    ImageContentSourcePolicy lists; MachineConfigs C(99-worker-ssh), C(99-worker-fips) and
    C(50-workers-chrony-configuration); the ClusterOperator list; MachineConfigPool C(worker)."
  - "What node-joiner needs: ClusterVersion, Infrastructure (platform and API URL) and the Node list (a Node
    labelled C(node-role.kubernetes.io/master) and its architecture) - missing, the module fails: this is not an
    OpenShift cluster; Proxy and the pull secret - missing, C(supported) is false. Everything else is optional
    (Network, install-config, Ingress, coreos-bootimages, worker-user-data-managed, user-ca-bundle, the
    MachineConfigs, ClusterOperators, the worker MachineConfigPool): a missing one is a warning, except those
    whose absence is a normal setting (no user-ca-bundle, no 99-worker-fips or chrony MachineConfig, no mirror
    sets)."
  - "As node-joiner does: the cluster name and base domain come from the API host C(api.<name>.<base domain>)
    (install-config only when the API URL has no such form; a disagreeing install-config is a warning); the
    version from ClusterVersion C(status.desired), else C(status.history[0]); the platform from Infrastructure
    C(spec.platformSpec.type) - accepted are BareMetal, VSphere, None and External, and ppc64le or s390x control
    planes only on None; Nutanix and the cloud platforms are refused with node-joiner's words."
  - The identity needs C(get) on the named objects and C(list) on the lists, as the C(cluster-reader) role grants,
    plus C(get) on the two Secrets. A missing permission on ClusterVersion, Infrastructure or Nodes fails the
    module with the resource and the verb; on Proxy or the pull secret it is reported in C(unsupported_reasons);
    on ClusterOperators or the worker pool in C(health.problems); elsewhere in C(warnings). Without permission on
    the mirror sets, the SSH or the FIPS MachineConfig, their values are taken from the install-config, as
    node-joiner does.
  - "The cluster kind comes from the mirror sets already read, with no request of its own: a mirror on
    C(api-int.<name>.<base domain>:22625) means C(registry-less) (the control-plane nodes serve the release
    payload); a mirror on C(registry.appliance.openshift.com:22625) (older builds C(registry.appliance.com)) means
    C(appliance) (every node runs that registry for itself); anything else is C(standard). For the two special
    kinds a warning tells what new hosts need and how to get it (see the day2_iso guide)."
  - "The cluster's state, judged before any write (neither node-joiner nor C(oc adm node-image) checks it: node-joiner
    takes the release of ClusterVersion C(status.history[0]), C(oc) that of C(status.desired), upgrade or not).
    An upgrade in progress - ClusterVersion C(Progressing=True) (C(Working towards <version>: ...)) or
    C(status.history[0].state) C(Partial), what C(oc adm upgrade) calls already upgrading - is unsafe: the new
    workers would be built from the release being rolled out into a cluster still partly older, and drained and
    rebooted again by the machine-config operator. A paused worker MachineConfigPool whose C(spec.configuration) is
    not its C(status.configuration) (a rendered config pending) is unsafe too: the machine-config server gives a
    new node the old one (it serves C(spec.configuration) only once a node has it), and the pool reboots it into the
    pending one when it is unpaused. Both are C(unsafe_reasons), with their fix, unless O(allow_upgrading=true)."
  - "Risky only, so warnings: a paused pool with nothing pending (no MachineConfig change reaches the new workers
    until it is unpaused), an updating pool (the new workers get what the machine-config server serves, and may be
    updated once more), a ClusterOperator new workers do not need that is Degraded or not Available. Health
    problems (C(health.problems)): a Degraded worker pool (C(Degraded), C(NodeDegraded), C(RenderDegraded)), a
    ClusterOperator new workers need (C(kube-apiserver), C(etcd), C(kube-controller-manager), C(kube-scheduler),
    C(machine-config), C(network), C(dns)) Degraded or not Available, a NotReady Node."
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
  - openshift_agent.day2.attributes.READ_ONLY
  - openshift_agent.day2.attributes.FACTS
options:
  allow_upgrading:
    description:
      - List an upgrade in progress and a paused worker pool with a rendered config pending in C(warnings) only,
        not in C(unsafe_reasons) (the role's C(day2_allow_upgrading)).
    type: bool
    default: false
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - PyYAML >= 5.4
seealso:
  - module: kubernetes.core.k8s_cluster_info
  - name: Adding worker nodes to an on-premise cluster (oc adm node-image)
    description: The OpenShift documentation of the day-2 node-joiner workflow this collection automates.
    link: https://docs.openshift.com/container-platform/latest/nodes/nodes/nodes-nodes-adding-node-iso.html
"""

EXAMPLES = r"""
- name: Read the day-1 cluster with the current kubeconfig
  openshift_agent.day2.day1_facts:

- name: Read it with an explicit kubeconfig and refuse clusters that cannot take day-2 workers
  openshift_agent.day2.day1_facts:
    kubeconfig: /home/admin/auth/kubeconfig
  register: day1

- name: Stop when the cluster is not supported
  ansible.builtin.assert:
    that: ansible_facts.day1_cluster.supported
    fail_msg: "{{ ansible_facts.day1_cluster.unsupported_reasons | join('; ') }}"

- name: Use a bearer token, as an AWX "OpenShift or Kubernetes API Bearer Token" credential provides
  openshift_agent.day2.day1_facts:
    host: https://api.mycluster.example.com:6443
    api_key: "{{ openshift_token }}"
    ca_cert: /etc/pki/mycluster-ca.crt
"""

RETURN = r"""
ansible_facts:
  description: Facts about the day-1 cluster.
  returned: success
  type: dict
  contains:
    day1_cluster:
      description: What node-joiner reads from the cluster, interpreted.
      returned: success
      type: dict
      contains:
        cluster_id:
          description: ClusterVersion C(spec.clusterID).
          type: str
          sample: 1b7e7a38-0c0e-4a59-8a3f-5d5a4f2a6c11
        name:
          description:
            Cluster name, from the API host C(api.<name>.<base domain>) (else install-config C(metadata.name)).
          type: str
          sample: mycluster
        base_domain:
          description: Base DNS domain, from the API host (else install-config C(baseDomain)).
          type: str
          sample: example.com
        ingress_domain:
          description: The apps domain (Ingress C(cluster) C(spec.appsDomain), else C(spec.domain)), null when unknown.
          type: str
          sample: apps.mycluster.example.com
        infrastructure_name:
          description: Infrastructure C(status.infrastructureName).
          type: str
          sample: mycluster-7xk2p
        api_url:
          description: External API URL (Infrastructure C(status.apiServerURL)).
          type: str
          sample: https://api.mycluster.example.com:6443
        server_url:
          description:
            - The API server URL this controller talks to (the kubeconfig's or O(host)), which may differ from
              RV(ansible_facts.day1_cluster.api_url) (a load balancer, a tunnel); the plan says whether a proxy is used
              for it.
          type: str
          sample: https://api.mycluster.example.com:6443
        api_int_url:
          description: Internal API URL (Infrastructure C(status.apiServerInternalURI)).
          type: str
          sample: https://api-int.mycluster.example.com:6443
        api_dns_name:
          description: Host name of the external API URL.
          type: str
          sample: api.mycluster.example.com
        version:
          description: Cluster version (ClusterVersion C(status.desired.version), else C(status.history[0].version)).
          type: str
          sample: 4.18.3
        release_image:
          description:
            Release payload pull spec (ClusterVersion C(status.desired.image), else C(status.history[0].image)).
          type: str
          sample: quay.io/openshift-release-dev/ocp-release@sha256:0123...
        release_architecture:
          description:
            - ClusterVersion C(status.desired.architecture) - C(Multi) for a multi-architecture release payload, else
              empty. Workers of another architecture than the control plane's need C(Multi) (the check step refuses
              them otherwise).
          type: str
          sample: Multi
        progressing:
          description:
            - An update in progress as ClusterVersion says it, null when there is none - C(Progressing=True) and its
              message, else C(status.history[0] <version> is Partial).
          type: str
          sample: "Progressing=True: Working towards 4.21.1: 762 of 955 done (79% complete), waiting on machine-config"
        version_history:
          description: ClusterVersion C(status.history), newest first.
          type: list
          elements: dict
          contains:
            version:
              description: Version.
              type: str
            state:
              description: C(Completed) or C(Partial).
              type: str
            image:
              description: Release image of that version.
              type: str
        architecture:
          description:
            - Architecture of the first Node labelled C(node-role.kubernetes.io/master), as Go names it (C(amd64),
              C(arm64), C(ppc64le), C(s390x)); what node-joiner builds the ISO for unless a host sets its own.
          type: str
          sample: amd64
        rpm_architecture:
          description: The same architecture as RPM names it (C(x86_64), C(aarch64), ...), as ISO names use it.
          type: str
          sample: x86_64
        platform:
          description: Infrastructure C(spec.platformSpec.type).
          type: str
          sample: BareMetal
        api_vips:
          description: API virtual IPs (baremetal-like platforms), empty otherwise.
          type: list
          elements: str
          sample: [192.168.111.5]
        ingress_vips:
          description: Ingress virtual IPs (baremetal-like platforms), empty otherwise.
          type: list
          elements: str
          sample: [192.168.111.4]
        machine_networks:
          description: Machine network CIDRs (install-config C(networking.machineNetwork)).
          type: list
          elements: str
          sample: [192.168.111.0/24]
        cluster_networks:
          description: Pod networks.
          type: list
          elements: dict
          contains:
            cidr:
              description: CIDR.
              type: str
            host_prefix:
              description: Prefix length of each node's slice.
              type: int
        service_networks:
          description: Service network CIDRs.
          type: list
          elements: str
          sample: [172.30.0.0/16]
        network_type:
          description: Cluster network plugin.
          type: str
          sample: OVNKubernetes
        proxy:
          description: Cluster-wide proxy (Proxy C(status), else C(spec), else install-config).
          type: dict
          contains:
            enabled:
              description: Whether an HTTP or HTTPS proxy is set.
              type: bool
            http_proxy:
              description: HTTP proxy URL or empty.
              type: str
            https_proxy:
              description: HTTPS proxy URL or empty.
              type: str
            no_proxy:
              description: Comma-separated exclusions or empty.
              type: str
        proxy_status:
          description:
            - Proxy C(cluster) C(status) alone, what C(oc adm node-image) puts into the node-joiner pod's environment
              (M(openshift_agent.day2.day2_iso) does the same with these facts).
          type: dict
          contains:
            http_proxy:
              description: C(status.httpProxy) or empty.
              type: str
            https_proxy:
              description: C(status.httpsProxy) or empty.
              type: str
            no_proxy:
              description: C(status.noProxy) or empty.
              type: str
        cluster_kind:
          description:
            - C(standard), C(appliance) (installed from the OpenShift appliance disk image, release images from the
              registry each node runs) or C(registry-less) (the control-plane nodes serve the release payload on
              api-int port 22625).
          type: str
          choices: [standard, appliance, registry-less]
          sample: appliance
        internal_registries:
          description:
            - The internal registry endpoints (host:port) new hosts pull release images from; empty for C(standard).
          type: list
          elements: str
          sample: [registry.appliance.openshift.com:22625]
        mirrors:
          description: Image mirrors (ImageDigestMirrorSets and ImageContentSourcePolicies, else install-config).
          type: list
          elements: dict
          contains:
            source:
              description: Source repository.
              type: str
            mirrors:
              description: Mirror repositories.
              type: list
              elements: str
            origin:
              description: Where the entry comes from, for example C(ImageDigestMirrorSet/mirror-set).
              type: str
        ssh_key:
          description: Public SSH key(s) of user C(core) (MachineConfig C(99-worker-ssh), else install-config).
          type: str
        fips:
          description: Whether FIPS mode is on (MachineConfig C(99-worker-fips)).
          type: bool
        chrony_configured:
          description: Whether MachineConfig C(50-workers-chrony-configuration) writes C(/etc/chrony.conf).
          type: bool
        pull_secret:
          description: Pull secret presence and coverage. The credentials are never returned.
          type: dict
          contains:
            present:
              description: Whether Secret C(openshift-config/pull-secret) has C(.dockerconfigjson).
              type: bool
            registries:
              description: Registries the pull secret has credentials for.
              type: list
              elements: str
              sample: [quay.io, registry.redhat.io]
        user_ca_bundle:
          description: Whether ConfigMap C(openshift-config/user-ca-bundle) holds an additional CA bundle.
          type: bool
        boot_images:
          description: RHCOS boot images per RPM architecture, from ConfigMap C(coreos-bootimages).
          type: dict
          sample:
            x86_64:
              release: 418.94.202410090804-0
              iso: {location: "https://.../rhcos-live.x86_64.iso", sha256: "4a..."}
              pxe:
                kernel: {location: "https://.../rhcos-live-kernel-x86_64", sha256: "1b..."}
                initramfs: {location: "https://.../rhcos-live-initramfs.x86_64.img", sha256: "2c..."}
                rootfs: {location: "https://.../rhcos-live-rootfs.x86_64.img", sha256: "3d..."}
        worker_ignition:
          description: The worker Ignition endpoint from Secret C(openshift-machine-api/worker-user-data-managed).
          type: dict
          contains:
            url:
              description: The machine-config server URL new workers fetch their config from.
              type: str
              sample: https://api-int.mycluster.example.com:22623/config/worker
            has_ca:
              description: Whether the pointer config carries the machine-config server CA.
              type: bool
            ignition_version:
              description: Ignition spec version of the pointer config.
              type: str
        nodes:
          description: Existing nodes, sorted by name.
          type: list
          elements: dict
          contains:
            name:
              description: Node name.
              type: str
            roles:
              description: Roles from the C(node-role.kubernetes.io/*) labels.
              type: list
              elements: str
            internal_ips:
              description: InternalIP addresses.
              type: list
              elements: str
            hostname:
              description: Hostname address.
              type: str
            architecture:
              description: C(status.nodeInfo.architecture).
              type: str
            ready:
              description: Whether the Ready condition is True.
              type: bool
        health:
          description: Cluster health as seen by ClusterOperators, the worker MachineConfigPool and the Nodes.
          type: dict
          contains:
            healthy:
              description: True when C(problems) is empty.
              type: bool
            problems:
              description: One readable line per problem.
              type: list
              elements: str
            cluster_operators:
              description: Counts and lists of degraded, unavailable and progressing operators (name, message).
              type: dict
            worker_pool:
              description:
                - MachineConfigPool C(worker) state, or null when it does not exist - C(updated), C(updating),
                  C(degraded) (its conditions), C(paused), C(machine_count), C(ready_machine_count),
                  C(updated_machine_count), C(configuration) (C(status.configuration), what its nodes run), C(target)
                  (C(spec.configuration)), C(served) (what the machine-config server gives a new node - C(target) once
                  a node has it, else C(configuration)), C(message) (why it is degraded, else its Updating message).
              type: dict
        supported:
          description: Whether this cluster can take day-2 workers through node-joiner.
          type: bool
        unsupported_reasons:
          description: Why not; empty when C(supported).
          type: list
          elements: str
          sample: ["cluster version 4.16.20 is older than 4.17, the first release whose node-joiner can add nodes"]
        unsafe_reasons:
          description:
            - Why adding workers now is unsafe, each with its fix - an upgrade in progress, a paused worker pool with
              a rendered config pending; empty with O(allow_upgrading=true). The role refuses the cluster when it is
              not empty.
          type: list
          elements: str
          sample: ["an upgrade to 4.21.1 is in progress (ClusterVersion Progressing=True: Working towards 4.21.1: ...):
            ... Fix: wait until `oc adm upgrade` says \"Cluster version is 4.21.1\" and run again, or set
            day2_allow_upgrading=true to add them during the upgrade"]
        warnings:
          description: Optional objects that are missing or cannot be read and what that leaves unknown,
            disagreements between sources, and the cluster states that make adding workers unsafe or risky (see the
            notes). None of them makes the cluster unsupported.
          type: list
          elements: str
          sample: ["Network.config.openshift.io cluster does not exist: cluster_networks, service_networks and
            network_type come from install-config or stay empty; node-joiner does not read it"]
api_calls:
  description: Number of API requests this module made for its reads (discovery requests of the client excluded).
  returned: success
  type: int
  sample: 18
"""

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import run_step
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts import cluster


def main():
    spec = dict(copy.deepcopy(AUTH_ARG_SPEC), allow_upgrading={"type": "bool", "default": False})
    module = AnsibleK8SModule(argument_spec=spec, supports_check_mode=True)
    run_step(module, "day1_facts", cluster.gather)


if __name__ == "__main__":
    main()
