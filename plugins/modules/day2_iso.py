#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


DOCUMENTATION = r"""
module: day2_iso
short_description: Build the day-2 worker ISO (or PXE files) with node-joiner in the cluster
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Turns inventory hosts into C(nodes-config.yaml), runs the cluster's own node-joiner in a temporary pod (what
    C(oc adm node-image create) does) and streams the resulting C(node.<arch>.iso) (or the PXE boot artifacts) back
    to O(dest), verified against a sha256 computed in the pod. Needs neither C(oc) nor C(rsync) on the controller.
  - Every host is checked before anything is written to the cluster; all problems are reported at once, each naming
    the host, the field, the value and the fix.
  - One ISO per CPU architecture present in O(hosts). Workers of the control plane's architecture are always allowed;
    amd64 and arm64 may be mixed both ways; s390x and ppc64le only on a cluster of the same architecture whose
    platform (Infrastructure C(cluster) C(spec.platformSpec.type)) is C(None), as node-joiner requires
    (C(CPU architecture "s390x" only supports platform "none")).
  - The node-joiner image is O(node_joiner_image) when given; otherwise the C(installer) image of ConfigMap
    C(openshift-config/installer-images) (as C(oc adm node-image) 4.18 and later look it up); otherwise the release
    payload's C(baremetal-installer) image, read by a short pod that runs the release image itself.
  - The run creates a namespace C(openshift-node-joiner-*) with a service account, a ClusterRole and
    ClusterRoleBinding (owned by the namespace), the C(nodes-config) ConfigMap and the pod, all labelled
    C(app.kubernetes.io/managed-by=openshift_agent.day2), with the cluster proxy in the pod's environment. The
    ClusterRole has the rules C(oc adm node-image) of the cluster's release grants. All of it is deleted at the end,
    on failure too, unless O(keep_on_failure) is set. A clean-up that fails fails the module, naming the objects
    left (RV(left)), even when the artifact was built.
  - Nothing is left behind. Every run first removes the partial files (C(.*.part), C(.*.tmp)) interrupted runs
    left in O(dest) and the node-joiner objects of earlier runs that are over, found by their labels - namespaces,
    ClusterRoles and ClusterRoleBindings (RV(leftovers_removed)). The namespace names the process of its run
    (annotation C(openshift-agent.day2/owner)); a run still going on this controller is left alone, one of
    another controller is removed once it is older than any run lasts (twice O(pod_start_timeout) plus four
    times O(build_timeout)). If such an object cannot be removed the module fails naming it, before anything is built.
  - SIGTERM or SIGHUP (a stopped playbook) during a build or a transfer deletes the run's objects and the partial
    file, then the module fails; after SIGKILL the next run removes them.
  - Transient API failures (no answer, 429 with its C(Retry-After), 500, 502, 503, 504) are retried with bounded
    exponential backoff - reads, deletes and exec upgrades always, creates only after looking for the object (by
    name, or by labels for the generated namespace name) so that nothing is created twice.
  - Completion is read as C(oc) does it - from 4.18 the C(end_time) of node-joiner's C(report.json), then its
    C(result.exit_code); on 4.17 the C(exit_code) file. Unlike C(oc), a run that failed before its first report stage
    (a nodes-config refused at load, such as an invalid O(ssh_key) - its report gets a result but never an
    C(end_time)) fails at once with node-joiner's own error, and so does a node-joiner whose pod log shows it exited
    without a result (a fatal line, a panic). The pod's C(sleep 600) is never waited out.
  - A pod that dies or cannot start is named by its real cause, read from its status and its Events as the kubelet
    writes them, with the setting to change where one exists - killed by the OOM killer (C(OOMKilled); neither
    C(oc adm node-image) nor this module sets a memory limit, so it names the node that ran out of memory, or the
    limit the cluster set), evicted (the resource the node lacked, or the C(4Gi) sizeLimit of C(/assets)), an image
    that cannot be pulled (the image, its registry and the kubelet's error; O(node_joiner_image)), any other end of
    its container (exit code, reason, message, as C(oc) words it). C(ErrImagePull) and C(ImagePullBackOff) are waited
    out up to O(pod_start_timeout), as C(oc) waits; C(InvalidImageName) and every other pull error fail at once.
  - The fetched ISO is read once before it is renamed into place (node-joiner's C(coreos/igninfo.jso) and
    C(kargs.jso) names as well as C(.json)). The module fails if its cluster ID is not the cluster's; the result
    tells its hosts and kernel arguments. O(live_kernel_arguments) are written into the ISO's kernel-argument areas
    without rebuilding the ISO.
  - A JSON sidecar (C(<artifact>.json)) records the digest of the inputs, the sha256 of every file written, the
    agent token expiry, the sha256 of each agent token the artifact carries and the nodes-config it was built from
    (secrets redacted, for C(--diff)); it holds no secret. Expiry and tokens are the artifact's own (the ISO's or the
    PXE initrd's) - the earlier of its C(add-nodes.env) and its tokens' C(exp) claim, because node-joiner 4.17 writes a
    fresh 48 hours into C(add-nodes.env) when it reuses an older token; for a config ISO, those of Secret
    C(openshift-config/agent-auth-token) after node-joiner ran. A re-run with the same inputs, intact files, a token
    valid for at least O(min_token_validity) and a Secret C(openshift-config/agent-auth-token) that still holds the
    tokens the artifact carries reports C(changed=false) and sends no write request to the cluster. A Secret deleted
    or regenerated since (its tokens are then not the ones the hosts booted from the artifact take) rebuilds it, and
    RV(artifacts[].reason) says so. A sidecar of an older release of the collection is not read, so the artifact is
    rebuilt once.
  - O(dest) must be a directory of the user that runs the module, not writable by group or others, and none of the
    files it writes or reads there (C(node.*), C(agentconfig.*), C(boot-artifacts/), C(iso-serve.*)) may be a
    symbolic link; otherwise it fails before anything is written, naming each problem and its fix. Sidecars and
    checksums are read without following a symlink; files are written to a new temporary file renamed into place.
  - The ISO carries the cluster pull secret and the agent auth token; it is written with mode C(0600). Keep it as you
    would keep the pull secret. It stops working when its token expires (48 hours after it was issued).
notes:
  - The identity needs to create and delete namespaces, service accounts, ClusterRoles, ClusterRoleBindings,
    ConfigMaps and pods, and to create C(pods/exec) and get C(pods/log) in the run's namespace (cluster-admin has all
    of it). Before deciding anything it reads ClusterVersion, Infrastructure, Proxy and Nodes (four GETs, in this
    order), unless O(cluster) gives their facts; a build also reads ConfigMap C(openshift-config/installer-images)
    (4.18 and later, as C(oc adm node-image) does), Secret C(openshift-config/agent-auth-token) to decide a reuse
    (and after node-joiner ran, for a config ISO), and the Events of its namespace when a pod dies or cannot start
    (a 403 there leaves the pod's status to tell).
  - Failures include the node-joiner report stages and the tail of the pod log.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
  - openshift_agent.day2.hosts
options:
  cluster:
    description:
      - The day-1 cluster's facts, C(ansible_facts.day1_cluster) as M(openshift_agent.day2.day1_facts) returns them
        (the C(image) step of the day2 role passes C(day2_cluster)). Its C(cluster_id), C(version), C(release_image),
        C(architecture), C(platform) and C(proxy_status) are used, and ClusterVersion, Infrastructure, Proxy and the
        Nodes are not read again.
      - Unset, day2_iso reads those four objects itself, the way day1_facts reads them.
      - The Secret C(openshift-config/agent-auth-token), the objects of earlier runs and node-joiner's own run are
        always read fresh.
    type: dict
  hosts:
    description:
      - The new workers. Each item is the host's inventory variables (see the user guide) plus C(name), the host name,
        or a host record as M(openshift_agent.day2.workers_check) returns it (the image step of the day2 role passes
        those).
      - The keys are listed below; an unknown key is an error that names it, so a typo such as C(mac_adress) does not
        silently give a DHCP host. A record's BMC keys and the keys the check worked out are accepted;
        C(bmc_password) is no key (a record never holds it).
    type: list
    elements: dict
    required: true
  dest:
    description:
      - Directory the artifacts are written to. It must exist, except in check mode (the preflight step of the day2
        role creates it, which check mode skips).
      - It must belong to the user that runs the module and not be writable by group or others, and the artifacts and
        sidecars in it must not be symbolic links (they hold the pull secret and the agent token).
    type: path
    required: true
  pxe:
    description:
      - Build PXE boot artifacts (into O(dest)C(/boot-artifacts/<arch>/)) instead of an ISO.
      - Needs OpenShift 4.18 or later (node-joiner 4.17 has no C(--pxe)); refused on 4.17 before anything is created.
    type: bool
    default: false
  output:
    description:
      - What to build when O(pxe=false). C(node-iso) is the bootable C(node.<arch>.iso).
      - C(config-iso) is the configuration-only C(agentconfig.noarch.iso) (node-joiner C(--config-iso), which
        C(oc adm node-image) does not offer), for hosts cloned from an OpenShift appliance disk image. They already
        carry the agent and the release images, and read their configuration from this image when it is attached.
        Written into O(dest) whatever the architecture; the hosts must then share one architecture.
      - C(config-iso) needs OpenShift 4.18 or later and is refused on 4.17 before anything is created; it cannot be
        combined with O(pxe=true). It holds the pull secret and the agent tokens, like the node ISO.
    type: str
    choices: [node-iso, config-iso]
    default: node-iso
  boot_artifacts_base_url:
    description:
      - URL the PXE artifacts will be served from (written into the iPXE script). Only with O(pxe=true).
      - node-joiner reads it for PXE files only, on every platform, so it is refused without O(pxe=true) before the
        cluster is read. On platform External (Oracle Cloud) too - its day-2 node ISO is a full one from 4.18, and
        node-joiner 4.17's minimal ISO fetches RHCOS's own rootfs (RV(artifacts[].rootfs_url)).
    type: str
  ssh_key:
    description: Public SSH key for user C(core) on the new hosts during the install. Default is the cluster's.
    type: str
  node_joiner_image:
    description: Use this node-joiner image instead of looking it up (for example a mirrored one).
    type: str
  force:
    description: Rebuild even when the existing artifacts could be reused.
    type: bool
    default: false
  min_token_validity:
    description:
      - Rebuild when the agent token in the existing artifact is valid for less than this long. Seconds, or a
        duration like C(24h), C(90m).
    type: str
    default: 24h
  live_kernel_arguments:
    description:
      - Kernel arguments appended to the ISO's live kernel arguments, for example C(console=ttyS0,115200n8).
      - Refused before anything is created for the x86_64 minimal ISO node-joiner 4.17 builds on platform External - it
        keeps the full ISO's C(coreos/kargs.jso), whose isolinux.cfg area the minimal ISO's edits moved, so no tool
        can edit its kernel arguments safely.
    type: str
  pod_start_timeout:
    description: Seconds to wait for a pod to start; image pull errors are retried until then.
    type: int
    default: 900
  build_timeout:
    description: Seconds to wait for node-joiner to finish once its pod runs.
    type: int
    default: 1800
  wait_sleep:
    description: Seconds between two looks at the pod and its report.
    type: int
    default: 5
  keep_on_failure:
    description:
      - Keep the namespace and its objects when the run fails, for debugging. Delete it yourself afterwards, or
        let the next run of this module remove it. A run stopped by a signal is always cleaned up.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Checks the hosts, reads the cluster (the four GETs of the notes, unless O(cluster) is given), renders
        C(nodes-config.yaml) and decides for each architecture whether its artifact would be reused or built
        (RV(would_build)), without writing to the cluster or to disk. A missing O(dest) is no error in check mode.
      - RV(artifacts) then has an entry for every architecture; one that would be built has its C(path), its
        C(reason) and no C(files).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details:
      - For each artifact built (or that would be built), the rendered C(nodes-config.yaml) against the one recorded
        in the sidecar of the existing artifact (empty when there is none or it predates this record).
      - Secrets are redacted, in the diff as in RV(nodes_configs) and the sidecar - a nodes-config holds no pull
        secret or token, but a raw nmstate C(network_config) may hold a password (802.1X, MACsec C(mka-cak), IPsec
        C(psk)) and a URL may hold one (C(user:password@)); those values are shown as C(<redacted>) and hidden from
        the module's output. The C(sshKey) is a public key and is shown.
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - netaddr
  - PyYAML
seealso:
  - module: openshift_agent.day2.day1_facts
  - module: openshift_agent.day2.iso_info
"""

EXAMPLES = r"""
# After day1_facts (the day2 role does this): the cluster is not read again.
- name: Read the cluster once
  openshift_agent.day2.day1_facts:

- name: Build the ISO with those facts
  openshift_agent.day2.day2_iso:
    cluster: "{{ ansible_facts.day1_cluster }}"
    dest: /var/lib/day2
    hosts:
      - name: extra-worker-0
        mac_address: "00:02:46:e3:9e:7c"
        ip: 192.168.111.90
        prefix_length: 24

# The image step of the day2 role passes the host records of workers_check; called directly:
- name: Build with explicit host definitions and a serial console
  openshift_agent.day2.day2_iso:
    dest: /var/lib/day2
    live_kernel_arguments: console=ttyS0,115200n8
    hosts:
      - name: extra-worker-0
        mac_address: "00:02:46:e3:9e:7c"
        ip: 192.168.111.90
        prefix_length: 24
        gateway: 192.168.111.1
        dns_servers: [192.168.111.1]
        root_device_hints:
          deviceName: /dev/sda
  register: iso

# An appliance cluster (day1_facts cluster_kind appliance), hosts cloned from the appliance disk image:
- name: Build the configuration-only image to attach to them
  openshift_agent.day2.day2_iso:
    dest: /var/lib/day2
    output: config-iso
    hosts:
      - name: extra-worker-1
        mac_address: "00:02:46:e3:9e:7d"
  register: config_iso

- name: Show where the ISO is
  ansible.builtin.debug:
    msg: "{{ iso.artifacts | map(attribute='path') | list }}"
"""

RETURN = r"""
artifacts:
  description:
    - One entry per architecture.
    - In check mode an artifact that would be built has its C(path), C(reason), C(sidecar) and C(inputs_digest),
      C(reused=false), and no C(files), C(token_expiry) or ISO details (see RV(would_build)).
  returned: always
  type: list
  elements: dict
  contains:
    architecture:
      description: RPM architecture (C(x86_64), C(aarch64), ...).
      type: str
    path:
      description: The ISO (C(agentconfig.noarch.iso) with O(output=config-iso)), or the PXE artifacts directory.
      type: str
    files:
      description: Every file written (the ISO, or each PXE artifact), with C(path), C(sha256) and C(size).
      type: list
      elements: dict
    rootfs:
      description: The rootfs among the PXE files (C(node.<arch>-rootfs.img), to be served at the base URL); else null.
      type: str
    rootfs_url:
      description:
        - Where hosts booted from a minimal ISO fetch their rootfs, read from the ISO's C(coreos.live.rootfs_url) - the
          RHCOS stream's, for the minimal ISO node-joiner 4.17 builds on platform External; null for a full ISO, which
          holds its rootfs (node ISO only).
      type: str
    reused:
      description: Whether the existing artifact was kept.
      type: bool
    reason:
      description:
        - Why it was built or reused. A rebuild says what was wrong with the artifact, for example that Secret
          C(openshift-config/agent-auth-token) is gone or holds other tokens than the artifact carries.
      type: str
    sidecar:
      description: Path of the JSON sidecar.
      type: str
    inputs_digest:
      description: sha256 of the inputs (nodes-config, release image, cluster ID, options).
      type: str
    token_expiry:
      description: When the agent token in the artifact expires (RFC 3339); of a reused node ISO, the earlier of the
        sidecar's record and the ISO's own.
      type: str
    cluster_id:
      description: Cluster ID found in the ISO (node ISO only).
      type: str
    cluster_name:
      description: Cluster name found in the ISO (node ISO only).
      type: str
    api_dns_name:
      description: API DNS name found in the ISO (node ISO only).
      type: str
    hosts:
      description: Hosts found in the ISO, with C(hostname) and C(mac_addresses) (node ISO only).
      type: list
      elements: dict
    kernel_arguments:
      description:
        - The ISO's live kernel arguments (node ISO only).
        - Null for the x86_64 minimal ISO of node-joiner 4.17 on platform External, whose kernel-argument areas
          disagree.
      type: str
    stages:
      description:
        - The node-joiner report stages of this build, sub-stages included (C(id), C(description), C(status) one of
          C(done), C(running), C(failed), C(start_time), C(end_time), and C(result) when node-joiner set one).
        - Empty on 4.17 clusters, whose node-joiner writes no report.
      type: list
      elements: dict
nodes_configs:
  description: The rendered C(nodes-config.yaml) per architecture, secret values shown as C(<redacted>).
  returned: always
  type: dict
  sample: {x86_64: "cpuArchitecture: x86_64\nhosts:\n- hostname: extra-worker-0\n..."}
would_build:
  description: In check mode, the architectures that would be built, with C(architecture), C(path) and C(reason).
  returned: check mode
  type: list
  elements: dict
node_joiner_image:
  description: The node-joiner image used (not set when nothing was built).
  returned: when a build ran
  type: str
namespace:
  description: The namespace of the run (kept only with keep_on_failure and a failure).
  returned: when a build ran
  type: str
leftovers_removed:
  description: The node-joiner objects of earlier runs this run removed first, as C(Kind/name).
  returned: success, not in check mode
  type: list
  elements: str
leftovers_found:
  description: In check mode, the node-joiner objects of earlier runs a real run would remove (C(Kind/name)).
  returned: check mode
  type: list
  elements: str
leftovers:
  description: The objects of earlier runs that could not be removed (C(Kind/name)); nothing was built.
  returned: failure
  type: list
  elements: str
left:
  description: The objects of this run its clean-up could not delete (C(Kind/name)).
  returned: failure
  type: list
  elements: str
partial_files_removed:
  description: Partial files of interrupted runs removed from O(dest) (paths; none in check mode).
  returned: when the cluster was read
  type: list
  elements: str
stages:
  description: On failure, the node-joiner report stages so far (same shape as in RV(artifacts)).
  returned: failure
  type: list
  elements: dict
log_tail:
  description: On failure, the last lines of the node-joiner pod log.
  returned: failure
  type: str
problems:
  description: On invalid hosts, every problem with C(host), C(field), C(value) and C(message).
  returned: failure
  type: list
  elements: dict
duration:
  description: Seconds the module took.
  returned: always
  type: float
"""

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import run_step
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_OPTIONS


def argument_spec():
    return dict(
        copy.deepcopy(AUTH_ARG_SPEC),
        cluster={"type": "dict"},
        hosts={"type": "list", "elements": "dict", "required": True, "options": copy.deepcopy(HOST_OPTIONS)},
        dest={"type": "path", "required": True},
        pxe={"type": "bool", "default": False},
        output={"type": "str", "choices": ["node-iso", "config-iso"], "default": "node-iso"},
        boot_artifacts_base_url={"type": "str"},
        ssh_key={"type": "str", "no_log": False},
        node_joiner_image={"type": "str"},
        force={"type": "bool", "default": False},
        min_token_validity={"type": "str", "default": "24h", "no_log": False},
        live_kernel_arguments={"type": "str"},
        pod_start_timeout={"type": "int", "default": 900},
        build_timeout={"type": "int", "default": 1800},
        wait_sleep={"type": "int", "default": 5},
        keep_on_failure={"type": "bool", "default": False},
    )


def main():
    module = AnsibleK8SModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_step(module, "day2_iso", build.run)


if __name__ == "__main__":
    main()
