#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
    amd64 and arm64 may be mixed both ways; s390x and ppc64le only on a cluster of the same architecture.
  - The node-joiner image is O(node_joiner_image) when given; otherwise the C(installer) image of ConfigMap
    C(installer-images) (namespace C(openshift-config), then C(openshift)); otherwise the release payload's
    C(baremetal-installer) image, read by a short pod that runs the release image itself.
  - The run creates a namespace C(openshift-node-joiner-*) with a service account, a ClusterRole and
    ClusterRoleBinding (owned by the namespace), the C(nodes-config) ConfigMap and the pod, all labelled
    C(app.kubernetes.io/managed-by=openshift_agent.day2), with the cluster proxy in the pod's environment. All of it is
    deleted at the end, on failure too, unless O(keep_on_failure) is set.
  - The written ISO is inspected; the module fails if its cluster ID is not the cluster's. O(live_kernel_arguments)
    are written into the ISO's kernel-argument areas without rebuilding the ISO.
  - A JSON sidecar (C(<artifact>.json)) records the digest of the inputs, the sha256 and the agent token expiry read
    from the ISO. A re-run with the same inputs, intact files and a token valid for at least O(min_token_validity)
    reports C(changed=false) and sends no write request to the cluster.
  - The ISO carries the cluster pull secret and the agent auth token; it is written with mode C(0600). Keep it as you
    would keep the pull secret. It stops working when its token expires (48 hours after it was issued).
notes:
  - The identity needs to create and delete namespaces, service accounts, ClusterRoles, ClusterRoleBindings,
    ConfigMaps and pods, and to create C(pods/exec) and get C(pods/log) in the run's namespace (cluster-admin has all
    of it). It also reads ClusterVersion, Proxy, Nodes and ConfigMap C(installer-images).
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
    description: Build PXE boot artifacts (into O(dest)C(/boot-artifacts/<arch>/)) instead of an ISO.
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
  - pycdlib
  - netaddr
  - PyYAML
seealso:
  - module: openshift_agent.day2.day1_facts
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

import base64
import copy
import os
import time
import uuid

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

from ansible_collections.openshift_agent.day2.plugins.module_utils import _node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._artifacts import (
    file_sha256,
    inputs_digest,
    jwt_expiry,
    read_sidecar,
    reuse_decision,
    sidecar_path,
    write_sidecar,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._clock import (
    format_rfc3339,
    parse_duration,
    parse_rfc3339,
    utcnow,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._cluster_facts import (
    GO_TO_RPM_ARCH,
    MIN_VERSION,
    control_plane_arch,
    node_summary,
    parse_version,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._inventory import (
    SECRET_HOST_KEYS,
    InventoryError,
    build_nodes_configs,
    missing_libraries,
    render_nodes_config,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._iso import IsoError, edit_iso_in_place, inspect_iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._k8s import (
    ApiAccessError,
    connect,
    core_target,
    group_target,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._node_joiner_run import NodeJoinerRun, RunError

PXE_DIR = "boot-artifacts"


class Day2IsoError(Exception):
    def __init__(self, message, **extra):
        super(Day2IsoError, self).__init__(message)
        self.extra = extra


def read_cluster(api):
    """ClusterVersion, Proxy and the control plane's architecture."""
    cv = api.get(group_target("config.openshift.io", "v1", "clusterversions", "version"))
    if not cv:
        raise Day2IsoError("ClusterVersion 'version' does not exist: is the kubeconfig pointing at an OpenShift cluster?")
    desired = (cv.get("status") or {}).get("desired") or {}
    version = desired.get("version")
    parsed = parse_version(version)
    if parsed is None or parsed < MIN_VERSION:
        raise Day2IsoError(
            "cluster version %s is older than %d.%d: node-joiner cannot add nodes to it. Upgrade the cluster first."
            % (version, MIN_VERSION[0], MIN_VERSION[1]))
    proxy = api.get(group_target("config.openshift.io", "v1", "proxies", "cluster"))
    nodes = [node_summary(n) for n in (api.get(core_target("nodes")) or {}).get("items") or []]
    arch, arches = control_plane_arch(nodes)
    if len(arches) != 1:
        raise Day2IsoError("cannot tell the control plane's architecture (control-plane nodes report %s)" % (arches or "none"))
    return {
        "cluster_id": (cv.get("spec") or {}).get("clusterID"),
        "version": version,
        "version_tuple": parsed,
        "release_image": desired.get("image"),
        "proxy": proxy,
        "architecture": GO_TO_RPM_ARCH.get(arch, arch),
    }


def check_architecture_pairs(configs, cluster_arch):
    mixable = ("x86_64", "aarch64")
    for arch in configs:
        if arch == cluster_arch:
            continue
        if arch in mixable and cluster_arch in mixable:
            continue
        hosts = ", ".join(h["hostname"] for h in configs[arch]["hosts"])
        raise Day2IsoError(
            "hosts %s: field \"cpu_architecture\" value %r cannot join a %s cluster: only amd64 and arm64 workers "
            "may be mixed (with a multi-architecture release payload); s390x and ppc64le only join clusters of the "
            "same architecture. Fix cpu_architecture." % (hosts, arch, cluster_arch))


class Builder:
    def __init__(self, module, api, cluster):
        self.module = module
        self.params = module.params
        self.api = api
        self.cluster = cluster
        self.now = utcnow()
        self.min_validity = parse_duration(self.params["min_token_validity"])

    # --- planning -----------------------------------------------------------------------

    def artifact_path(self, arch):
        if self.params["pxe"]:
            return os.path.join(self.params["dest"], PXE_DIR, arch)
        return os.path.join(self.params["dest"], nj.iso_name(arch))

    def plan(self, arch, nodes_config_yaml):
        inputs = {
            "nodes_config": nodes_config_yaml,
            "release_image": self.cluster["release_image"],
            "cluster_id": self.cluster["cluster_id"],
            "pxe": self.params["pxe"],
            "boot_artifacts_base_url": self.params["boot_artifacts_base_url"],
            "live_kernel_arguments": self.params["live_kernel_arguments"],
            "node_joiner_image": self.params["node_joiner_image"],
        }
        digest = inputs_digest(inputs)
        path = self.artifact_path(arch)
        if self.params["force"]:
            return {"digest": digest, "reuse": False, "reason": "force is set"}
        if self.params["pxe"]:
            record = read_sidecar(path)
            files = [os.path.join(path, f["name"]) for f in (record or {}).get("files", [])]
            reuse, reason = self.reuse_pxe(record, files, digest)
        else:
            reuse, reason = reuse_decision([path], digest, self.now, self.min_validity, self.iso_token_expiry)
        return {"digest": digest, "reuse": reuse, "reason": reason}

    def reuse_pxe(self, record, files, digest):
        if record is None:
            return False, "no PXE artifacts recorded yet"
        if record.get("inputs_digest") != digest:
            return False, "the inputs changed since the PXE artifacts were built"
        for entry, path in zip(record.get("files", []), files):
            if not os.path.exists(path) or file_sha256(path) != entry.get("sha256"):
                return False, "%s is missing or was modified" % path
        try:
            expiry = parse_rfc3339(record.get("token_expiry"))
        except ValueError:
            expiry = None
        if expiry is None or (expiry - self.now).total_seconds() < self.min_validity:
            return False, "the agent token of the PXE artifacts expires too soon (%s)" % record.get("token_expiry")
        return True, "inputs unchanged, files intact, token valid until %s" % record.get("token_expiry")

    @staticmethod
    def iso_token_expiry(path):
        try:
            summary = inspect_iso(path)["summary"] or {}
            return parse_rfc3339(summary.get("token_expiry"))
        except (IsoError, ValueError, OSError):
            return None

    # --- building -----------------------------------------------------------------------

    def find_image(self, run):
        if self.params["node_joiner_image"]:
            return self.params["node_joiner_image"]
        for namespace in nj.INSTALLER_IMAGES_NAMESPACES:
            image = nj.installer_image_from_configmap(self.api.get(core_target("configmaps", "installer-images", namespace)))
            if image:
                return image
        return run.image_from_release(self.cluster["release_image"])

    def build(self, arch, nodes_config_yaml, digest, run, image):
        run.start_build(image, nodes_config_yaml, self.params["pxe"])
        exit_code_only = self.cluster["version_tuple"] < (4, 18)
        report, exit_code = run.wait_report(exit_code_only=exit_code_only)
        stages = nj.summarize_stages(report)
        if exit_code != 0:
            raise RunError(nj.failure_message(report) if report else "node-joiner exited with code %s" % exit_code,
                           stages=stages, log_tail=run.pod_log_tail(nj.POD))
        if self.params["pxe"]:
            return self.fetch_pxe(arch, digest, run, stages)
        return self.fetch_iso(arch, digest, run, stages)

    def finish_iso(self, temp_path):
        """Check what the ISO says and add the live kernel arguments, before it is renamed into place."""
        summary = (inspect_iso(temp_path)["summary"] or {})
        if summary.get("cluster_id") != self.cluster["cluster_id"]:
            raise Day2IsoError("the ISO node-joiner built names cluster %r, not this cluster %r: refusing it"
                               % (summary.get("cluster_id"), self.cluster["cluster_id"]))
        if self.params["live_kernel_arguments"]:
            edit_iso_in_place(temp_path, append_kargs=self.params["live_kernel_arguments"])

    def fetch_iso(self, arch, digest, run, stages):
        path = self.artifact_path(arch)
        run.fetch("%s/%s" % (nj.ASSETS, nj.iso_name(arch)), path, finish=self.finish_iso)
        sha = file_sha256(path)
        info = inspect_iso(path)
        summary = info["summary"] or {}
        record = {
            "inputs_digest": digest,
            "sha256": sha,
            "token_expiry": summary.get("token_expiry"),
            "cluster_id": summary.get("cluster_id"),
            "built_at": format_rfc3339(utcnow()),
        }
        sidecar = write_sidecar(path, record)
        return self.iso_result(arch, path, sidecar, digest, False, "built", stages, info, sha)

    def iso_result(self, arch, path, sidecar, digest, reused, reason, stages, info=None, sha=None):
        info = info or inspect_iso(path)
        summary = info["summary"] or {}
        sha = sha or (read_sidecar(path) or {}).get("sha256")
        return {
            "architecture": arch,
            "path": path,
            "files": [{"path": path, "sha256": sha, "size": os.path.getsize(path)}],
            "reused": reused,
            "reason": reason,
            "sidecar": sidecar,
            "inputs_digest": digest,
            "token_expiry": summary.get("token_expiry"),
            "cluster_id": summary.get("cluster_id"),
            "cluster_name": summary.get("cluster_name"),
            "api_dns_name": summary.get("api_dns_name"),
            "hosts": [{"hostname": h.get("hostname"), "mac_addresses": h.get("mac_addresses")}
                      for h in summary.get("hosts") or []],
            "kernel_arguments": info.get("kargs"),
            "stages": stages,
        }

    def fetch_pxe(self, arch, digest, run, stages):
        directory = self.artifact_path(arch)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        files = []
        for name in run.list_dir(nj.ASSETS + "/" + PXE_DIR):
            path = os.path.join(directory, name)
            size, sha = run.fetch("%s/%s/%s" % (nj.ASSETS, PXE_DIR, name), path)
            files.append({"name": name, "path": path, "sha256": sha, "size": size})
        secret = self.api.get(core_target("secrets", "agent-auth-token", "openshift-config"))
        token_expiry = None
        try:
            token = base64.b64decode(((secret or {}).get("data") or {}).get("agentAuthToken", "")).decode("utf-8", "replace")
        except ValueError:  # a damaged Secret: the expiry is unknown and the next run rebuilds
            token = ""
        expiry = jwt_expiry(token)
        token_expiry = format_rfc3339(expiry) if expiry else None
        record = {"inputs_digest": digest, "files": files, "token_expiry": token_expiry,
                  "built_at": format_rfc3339(utcnow())}
        sidecar = write_sidecar(directory, record)
        return {"architecture": arch, "path": directory, "files": [dict((k, f[k]) for k in ("path", "sha256", "size")) for f in files],
                "reused": False, "reason": "built", "sidecar": sidecar, "inputs_digest": digest,
                "token_expiry": token_expiry, "stages": stages}

    def reused_result(self, arch, plan):
        if self.params["pxe"]:
            record = read_sidecar(self.artifact_path(arch)) or {}
            return {"architecture": arch, "path": self.artifact_path(arch),
                    "files": [dict((k, f[k]) for k in ("path", "sha256", "size")) for f in record.get("files", [])],
                    "reused": True, "reason": plan["reason"], "sidecar": sidecar_path(self.artifact_path(arch)),
                    "inputs_digest": plan["digest"], "token_expiry": record.get("token_expiry"), "stages": []}
        path = self.artifact_path(arch)
        return self.iso_result(arch, path, sidecar_path(path), plan["digest"], True, plan["reason"], [])


def argument_spec():
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        hosts=dict(type="list", elements="dict", required=True),
        dest=dict(type="path", required=True),
        pxe=dict(type="bool", default=False),
        boot_artifacts_base_url=dict(type="str"),
        ssh_key=dict(type="str", no_log=False),
        node_joiner_image=dict(type="str"),
        force=dict(type="bool", default=False),
        min_token_validity=dict(type="str", default="24h", no_log=False),
        live_kernel_arguments=dict(type="str"),
        pod_start_timeout=dict(type="int", default=900),
        build_timeout=dict(type="int", default=1800),
        wait_sleep=dict(type="int", default=5),
        keep_on_failure=dict(type="bool", default=False),
        allow_loopback=dict(type="bool", default=False),
    )
    return spec


def host_items(module, hosts):
    """Host dicts as the inventory code takes them; their secrets are hidden from every message and result."""
    for host in hosts:
        if not isinstance(host, dict) or not host.get("name"):
            raise Day2IsoError("hosts: every item needs a 'name' (the host name); got %r" % (
                sorted(host) if isinstance(host, dict) else host,))
        for key in SECRET_HOST_KEYS:
            if host.get(key):
                # AnsibleK8SModule wraps AnsibleModule, which owns the no_log values.
                module._module.no_log_values.add(str(host[key]))  # pylint: disable=protected-access
    return hosts


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
    try:
        configs = build_nodes_configs(hosts, cluster["architecture"], ssh_key=params["ssh_key"],
                                      boot_artifacts_base_url=params["boot_artifacts_base_url"],
                                      allow_loopback=params["allow_loopback"])
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
        run = NodeJoinerRun(api, client.client.configuration, uuid.uuid4().hex[:12], proxy=cluster["proxy"],
                            wait_sleep=params["wait_sleep"], pod_start_timeout=params["pod_start_timeout"],
                            build_timeout=params["build_timeout"], keep_on_failure=params["keep_on_failure"])
        try:
            with run:
                result["namespace"] = run.ns_name
                image = builder.find_image(run)
                result["node_joiner_image"] = image
                artifact = builder.build(arch, plan["nodes_config"], plan["digest"], run, image)
                artifact["reason"] = plan["reason"]
                result["artifacts"].append(artifact)
        except RunError as error:
            raise Day2IsoError(nj.describe_failure("%s%s" % (error, cleanup_note(run)), error.stages, error.log_tail),
                               stages=error.stages, log_tail=error.log_tail, namespace=run.ns_name)
        except Day2IsoError as error:
            raise Day2IsoError("%s%s" % (error, cleanup_note(run)), namespace=run.ns_name, **error.extra)
        except (ApiAccessError, IsoError) as error:
            raise Day2IsoError("%s%s" % (error, cleanup_note(run)), namespace=run.ns_name)
    result["duration"] = round(time.monotonic() - started, 3)
    return result


def cleanup_note(run):
    if run.kept:
        return " (keep_on_failure: namespace %s and its ClusterRole/ClusterRoleBinding were kept; delete them when done)" % run.ns_name
    if run.cleaned_up:
        return " (namespace %s and everything in it were deleted)" % run.ns_name
    if run.cleanup_failures:
        return " (clean-up of namespace %s incomplete, delete what is left by hand: %s)" % (
            run.ns_name, "; ".join(run.cleanup_failures))
    return ""


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
