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
    on failure too, unless O(keep_on_failure) is set.
  - Completion is read as C(oc) does it - from 4.18 the C(end_time) of node-joiner's C(report.json), then its
    C(result.exit_code); on 4.17 the C(exit_code) file, failing at once when the pod log shows that node-joiner
    stopped without writing it.
  - The written ISO is inspected (node-joiner's C(coreos/igninfo.jso) and C(kargs.jso) names as well as C(.json));
    the module fails if its cluster ID is not the cluster's. O(live_kernel_arguments)
    are written into the ISO's kernel-argument areas without rebuilding the ISO.
  - A JSON sidecar (C(<artifact>.json)) records the digest of the inputs, the sha256 and the agent token expiry read
    from the ISO. A re-run with the same inputs, intact files and a token valid for at least O(min_token_validity)
    reports C(changed=false) and sends no write request to the cluster.
  - The ISO carries the cluster pull secret and the agent auth token; it is written with mode C(0600). Keep it as you
    would keep the pull secret. It stops working when its token expires (48 hours after it was issued).
notes:
  - The identity needs to create and delete namespaces, service accounts, ClusterRoles, ClusterRoleBindings,
    ConfigMaps and pods, and to create C(pods/exec) and get C(pods/log) in the run's namespace (cluster-admin has all
    of it). Before deciding anything it reads ClusterVersion, Proxy, Infrastructure and Nodes (four GETs); a build
    also reads ConfigMap C(openshift-config/installer-images), and a PXE build Secret
    C(openshift-config/agent-auth-token) when the initrd does not tell the token expiry.
  - Failures include the node-joiner report stages and the tail of the pod log.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - openshift_agent.day2.attributes
options:
  hosts:
    description:
      - The new workers. Each item is the host's inventory variables (see the user guide) plus C(name), the host name.
      - "Accepted keys: C(name), C(mac_address), C(interfaces), C(interface), C(ip), C(prefix_length), C(gateway),
        C(dns_servers), C(vlan_id), C(ipv6), C(ipv6_prefix_length), C(ipv6_gateway), C(network_config),
        C(root_device_hints), C(cpu_architecture), C(bmc_address), C(bmc_username), C(bmc_password),
        C(bmc_verify_certs). Unknown keys are an error that names them."
    type: list
    elements: dict
    required: true
  dest:
    description: Directory the artifacts are written to. It must exist.
    type: path
    required: true
  pxe:
    description:
      - Build PXE boot artifacts (into O(dest)C(/boot-artifacts/<arch>/)) instead of an ISO.
      - Needs OpenShift 4.18 or later (node-joiner 4.17 has no C(--pxe)); refused on 4.17 before anything is created.
    type: bool
    default: false
  boot_artifacts_base_url:
    description: URL the PXE artifacts will be served from (written into the iPXE script). Only with O(pxe=true).
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
    description: Kernel arguments appended to the ISO's live kernel arguments, for example C(console=ttyS0,115200n8).
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
    description: Keep the namespace and its objects when the run fails, for debugging. Delete it yourself afterwards.
    type: bool
    default: false
  allow_loopback:
    description: Accept host addresses in 127.0.0.0/8. Only for the lab; real hosts never have such addresses.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Checks the hosts, renders C(nodes-config.yaml), decides whether a build is needed and writes nothing anywhere.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
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
# The node_image role builds `hosts` from the inventory group new_workers; called directly:
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

- name: Show where the ISO is
  ansible.builtin.debug:
    msg: "{{ iso.artifacts | map(attribute='path') | list }}"
"""

RETURN = r"""
artifacts:
  description: One entry per architecture.
  returned: always
  type: list
  elements: dict
  contains:
    architecture:
      description: RPM architecture (C(x86_64), C(aarch64), ...).
      type: str
    path:
      description: The ISO, or the PXE artifacts directory.
      type: str
    files:
      description: Every file written (the ISO, or each PXE artifact), with C(path), C(sha256) and C(size).
      type: list
      elements: dict
    reused:
      description: Whether the existing artifact was kept.
      type: bool
    reason:
      description: Why it was built or reused.
      type: str
    sidecar:
      description: Path of the JSON sidecar.
      type: str
    inputs_digest:
      description: sha256 of the inputs (nodes-config, release image, cluster ID, options).
      type: str
    token_expiry:
      description: When the agent token in the artifact expires (RFC 3339).
      type: str
    cluster_id:
      description: Cluster ID found in the ISO (ISO only).
      type: str
    cluster_name:
      description: Cluster name found in the ISO (ISO only).
      type: str
    api_dns_name:
      description: API DNS name found in the ISO (ISO only).
      type: str
    hosts:
      description: Hosts found in the ISO, with C(hostname) and C(mac_addresses) (ISO only).
      type: list
      elements: dict
    kernel_arguments:
      description: The ISO's live kernel arguments (ISO only).
      type: str
    stages:
      description:
        - The node-joiner report stages of this build, sub-stages included (C(id), C(description), C(status) one of
          C(done), C(running), C(failed), C(start_time), C(end_time), and C(result) when node-joiner set one).
        - Empty on 4.17 clusters, whose node-joiner writes no report.
      type: list
      elements: dict
nodes_configs:
  description: The rendered C(nodes-config.yaml) per architecture.
  returned: always
  type: dict
  sample: {x86_64: "cpuArchitecture: x86_64\nhosts:\n- hostname: extra-worker-0\n..."}
would_build:
  description: In check mode, the architectures that would be built, with C(architecture) and C(reason).
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
import os
import time
import uuid

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError, connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.build import (
    Builder,
    Day2IsoError,
    check_architecture_pairs,
    check_pxe_supported,
    cleanup_note,
    host_items,
    read_cluster,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso import IsoError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import (
    InventoryError,
    build_nodes_configs,
    missing_libraries,
    render_nodes_config,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.run import NodeJoinerRun, RunError


def argument_spec():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        hosts={"type": "list", "elements": "dict", "required": True},
        dest={"type": "path", "required": True},
        pxe={"type": "bool", "default": False},
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
        allow_loopback={"type": "bool", "default": False},
    )
    return spec


def run_module(module):
    params = module.params
    started = time.monotonic()
    result = {"changed": False, "artifacts": [], "nodes_configs": {}}
    for name, trace in missing_libraries():
        module.fail_json(msg=missing_required_lib(name), exception=trace)
    if params["pxe"] is False and params["boot_artifacts_base_url"]:
        raise Day2IsoError("boot_artifacts_base_url is only used with pxe=true")
    try:
        parse_duration(params["min_token_validity"])
    except ValueError as error:
        raise Day2IsoError("min_token_validity: %s" % error)
    if not os.path.isdir(params["dest"]):
        raise Day2IsoError("dest %s is not an existing directory: create it first" % params["dest"])
    hosts = host_items(module, params["hosts"])

    client, api = connect(module)
    cluster = read_cluster(api)
    check_pxe_supported(params["pxe"], cluster)
    try:
        configs = build_nodes_configs(
            hosts,
            cluster["architecture"],
            ssh_key=params["ssh_key"],
            boot_artifacts_base_url=params["boot_artifacts_base_url"],
            allow_loopback=params["allow_loopback"],
            platform=cluster["platform"],
        )
    except InventoryError as error:
        raise Day2IsoError("invalid hosts, nothing was written:\n%s" % error, problems=error.problems)
    check_architecture_pairs(configs, cluster["architecture"])

    builder = Builder(module, api, cluster)
    plans = {}
    for arch, config in sorted(configs.items()):
        text = render_nodes_config(config)
        result["nodes_configs"][arch] = text
        plans[arch] = dict(builder.plan(arch, text), nodes_config=text)

    to_build = [arch for arch in sorted(plans) if not plans[arch]["reuse"]]
    result["changed"] = bool(to_build)
    if module.check_mode:
        result["would_build"] = [{"architecture": a, "reason": plans[a]["reason"]} for a in to_build]
        result["artifacts"] = [builder.reused_result(a, plans[a]) for a in sorted(plans) if plans[a]["reuse"]]
        result["duration"] = round(time.monotonic() - started, 3)
        return result

    for arch in sorted(plans):
        plan = plans[arch]
        if plan["reuse"]:
            result["artifacts"].append(builder.reused_result(arch, plan))
            continue
        run = NodeJoinerRun(
            api,
            client.client.configuration,
            uuid.uuid4().hex[:12],
            proxy=cluster["proxy"],
            wait_sleep=params["wait_sleep"],
            pod_start_timeout=params["pod_start_timeout"],
            build_timeout=params["build_timeout"],
            keep_on_failure=params["keep_on_failure"],
            cluster_minor=cluster["version_tuple"],
        )
        try:
            with run:
                result["namespace"] = run.ns_name
                image = builder.find_image(run)
                result["node_joiner_image"] = image
                artifact = builder.build(arch, plan["nodes_config"], plan["digest"], run, image)
                artifact["reason"] = plan["reason"]
                result["artifacts"].append(artifact)
        except RunError as error:
            raise Day2IsoError(
                nj.describe_failure("%s%s" % (error, cleanup_note(run)), error.stages, error.log_tail),
                stages=error.stages,
                log_tail=error.log_tail,
                namespace=run.ns_name,
            )
        except Day2IsoError as error:
            raise Day2IsoError("%s%s" % (error, cleanup_note(run)), namespace=run.ns_name, **error.extra)
        except (ApiAccessError, IsoError) as error:
            raise Day2IsoError("%s%s" % (error, cleanup_note(run)), namespace=run.ns_name)
    result["duration"] = round(time.monotonic() - started, 3)
    return result


def main():
    module = AnsibleK8SModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        result = run_module(module)
    except Day2IsoError as error:
        module.fail_json(msg="day2_iso: %s" % error, **error.extra)
    except (ApiAccessError, CoreException, IsoError) as error:
        module.fail_json(msg="day2_iso: %s" % error)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
