# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day2_iso module's work: read the cluster, plan (reuse or build), run node-joiner, fetch and check artifacts.

What differs by release, as ``oc adm node-image create`` of that release does it (sources in _node_joiner and
_node_joiner_run): the ClusterRole rules, the completion signal (report.json from 4.18, exit_code before) and
``--pxe`` (4.18+ only: node-joiner 4.17 knows --kubeconfig, --dir and --log-level --
openshift/installer cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c).
"""

import os

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import (
    format_rfc3339,
    parse_duration,
    parse_rfc3339,
    utcnow,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import core_target, group_target
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import GO_TO_RPM_ARCH
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.support import (
    MIN_VERSION,
    master_architecture,
    parse_version,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import summarize_add_nodes_ignition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.info import read_pxe_initrd
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso import (
    IsoError,
    edit_iso_in_place,
    inspect_iso,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import SECRET_HOST_KEYS
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.run import RunError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.sidecar import (
    file_sha256,
    inputs_digest,
    read_sidecar,
    reuse_decision,
    sidecar_path,
    write_sidecar,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import (
    SECRET_NAME,
    SECRET_NAMESPACE,
    secret_expiry,
)

PXE_DIR = "boot-artifacts"
# node-joiner's --pxe came with 4.18 (installer PR #9097); oc 4.17 has no --pxe either.
PXE_SINCE = (4, 18)


class Day2IsoError(Day2Error):
    def __init__(self, message, **extra):
        super().__init__(message)
        self.extra = extra


def read_cluster(api):
    """ClusterVersion, Proxy, Infrastructure (platform) and the control plane's architecture: five GETs."""
    cv = api.get(group_target("config.openshift.io", "v1", "clusterversions", "version"))
    if not cv:
        raise Day2IsoError(
            "ClusterVersion 'version' does not exist: is the kubeconfig pointing at an OpenShift cluster?"
        )
    desired = (cv.get("status") or {}).get("desired") or {}
    version = desired.get("version")
    parsed = parse_version(version)
    if parsed is None or parsed < MIN_VERSION:
        raise Day2IsoError(
            "cluster version %s is older than %d.%d: node-joiner cannot add nodes to it. Upgrade the cluster first."
            % (version, MIN_VERSION[0], MIN_VERSION[1])
        )
    proxy = api.get(group_target("config.openshift.io", "v1", "proxies", "cluster"))
    infrastructure = api.get(group_target("config.openshift.io", "v1", "infrastructures", "cluster")) or {}
    # node-joiner takes the architecture of the first master-labelled Node (see _cluster_support)
    arch, _arches = master_architecture((api.get(core_target("nodes")) or {}).get("items"))
    if not arch:
        raise Day2IsoError(
            "cannot tell the control plane's architecture: no Node labelled "
            "node-role.kubernetes.io/master reports status.nodeInfo.architecture"
        )
    return {
        "cluster_id": (cv.get("spec") or {}).get("clusterID"),
        "version": version,
        "version_tuple": parsed,
        "release_image": desired.get("image"),
        "proxy": proxy,
        "architecture": GO_TO_RPM_ARCH.get(arch, arch),
        # what node-joiner checks the workers' architecture against (see _inventory.NONE_PLATFORM_ONLY)
        "platform": ((infrastructure.get("spec") or {}).get("platformSpec") or {}).get("type"),
    }


def check_pxe_supported(pxe, cluster):
    """Refuse pxe on a cluster whose node-joiner has no --pxe, before anything is created."""
    if pxe and cluster["version_tuple"] < PXE_SINCE:
        raise Day2IsoError(
            "pxe: true needs OpenShift %d.%d or later, but this cluster runs %s: its node-joiner has no --pxe flag "
            '(it would stop with "Error: unknown flag: --pxe"). Set pxe: false and boot the hosts from the ISO, '
            "or upgrade the cluster first. Nothing was created." % (PXE_SINCE[0], PXE_SINCE[1], cluster["version"])
        )


def check_architecture_pairs(configs, cluster_arch):
    mixable = ("x86_64", "aarch64")
    for arch in configs:
        if arch == cluster_arch:
            continue
        if arch in mixable and cluster_arch in mixable:
            continue
        hosts = ", ".join(h["hostname"] for h in configs[arch]["hosts"])
        raise Day2IsoError(
            'hosts %s: field "cpu_architecture" value %r cannot join a %s cluster: only amd64 and arm64 workers '
            "may be mixed (with a multi-architecture release payload); s390x and ppc64le only join clusters of the "
            "same architecture. Fix cpu_architecture." % (hosts, arch, cluster_arch)
        )


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
        configmap = self.api.get(
            core_target("configmaps", nj.INSTALLER_IMAGES_CONFIGMAP, nj.INSTALLER_IMAGES_NAMESPACE)
        )
        image = nj.installer_image_from_configmap(configmap)
        if image:
            return image
        return run.image_from_release(self.cluster["release_image"])

    def build(self, arch, nodes_config_yaml, digest, run, image):
        run.start_build(image, nodes_config_yaml, self.params["pxe"])
        exit_code_only = self.cluster["version_tuple"] < (4, 18)
        report, exit_code = run.wait_report(exit_code_only=exit_code_only)
        stages = nj.summarize_stages(report)
        if exit_code != 0:
            message = nj.failure_message(report) if report else "node-joiner exited with code %s" % exit_code
            raise RunError(message, stages=stages, log_tail=run.pod_log_tail(nj.POD))
        if self.params["pxe"]:
            return self.fetch_pxe(arch, digest, run, stages)
        return self.fetch_iso(arch, digest, run, stages)

    def finish_iso(self, temp_path):
        """Check what the ISO says and add the live kernel arguments, before it is renamed into place."""
        summary = inspect_iso(temp_path)["summary"] or {}
        if summary.get("cluster_id") != self.cluster["cluster_id"]:
            raise Day2IsoError(
                "the ISO node-joiner built names cluster %r, not this cluster %r: refusing it"
                % (summary.get("cluster_id"), self.cluster["cluster_id"])
            )
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
            "hosts": [
                {"hostname": h.get("hostname"), "mac_addresses": h.get("mac_addresses")}
                for h in summary.get("hosts") or []
            ],
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
        token_expiry = initrd_token_expiry([f["path"] for f in files]) or pxe_token_expiry(
            self.api.get(core_target("secrets", SECRET_NAME, SECRET_NAMESPACE))
        )
        record = {
            "inputs_digest": digest,
            "files": files,
            "token_expiry": token_expiry,
            "built_at": format_rfc3339(utcnow()),
        }
        sidecar = write_sidecar(directory, record)
        return {
            "architecture": arch,
            "path": directory,
            "files": [{k: f[k] for k in ("path", "sha256", "size")} for f in files],
            "reused": False,
            "reason": "built",
            "sidecar": sidecar,
            "inputs_digest": digest,
            "token_expiry": token_expiry,
            "stages": stages,
        }

    def reused_result(self, arch, plan):
        if self.params["pxe"]:
            record = read_sidecar(self.artifact_path(arch)) or {}
            return {
                "architecture": arch,
                "path": self.artifact_path(arch),
                "files": [{k: f[k] for k in ("path", "sha256", "size")} for f in record.get("files", [])],
                "reused": True,
                "reason": plan["reason"],
                "sidecar": sidecar_path(self.artifact_path(arch)),
                "inputs_digest": plan["digest"],
                "token_expiry": record.get("token_expiry"),
                "stages": [],
            }
        path = self.artifact_path(arch)
        return self.iso_result(arch, path, sidecar_path(path), plan["digest"], True, plan["reason"], [])


def host_items(module, hosts):
    """Host dicts as the inventory code takes them; their secrets are hidden from every message and result."""
    for host in hosts:
        if not isinstance(host, dict) or not host.get("name"):
            raise Day2IsoError(
                "hosts: every item needs a 'name' (the host name); got %r"
                % (sorted(host) if isinstance(host, dict) else host,)
            )
        for key in SECRET_HOST_KEYS:
            if host.get(key):
                # AnsibleK8SModule wraps AnsibleModule, which owns the no_log values.
                module._module.no_log_values.add(str(host[key]))  # pylint: disable=protected-access
    return hosts


def initrd_token_expiry(paths):
    """The token expiry the PXE initrd among ``paths`` carries (read from the file itself), or None."""
    for path in paths:
        if path.endswith("-initrd.img"):
            try:
                ignition, _kinds = read_pxe_initrd(path)
                return summarize_add_nodes_ignition(ignition)["token_expiry"]
            except (IsoError, OSError):
                return None
    return None


def pxe_token_expiry(secret):
    """When the tokens node-joiner put into the PXE files expire (those of the Secret it used), RFC 3339, or None.

    A damaged Secret means an unknown expiry: the next run rebuilds.
    """
    expiry = secret_expiry(secret)
    return format_rfc3339(expiry) if expiry else None


def cleanup_note(run):
    if run.kept:
        return (
            " (keep_on_failure: namespace %s and its ClusterRole/ClusterRoleBinding were kept; delete them when done)"
            % run.ns_name
        )
    if run.cleaned_up:
        return " (namespace %s and everything in it were deleted)" % run.ns_name
    if run.cleanup_failures:
        return " (clean-up of namespace %s incomplete, delete what is left by hand: %s)" % (
            run.ns_name,
            "; ".join(run.cleanup_failures),
        )
    return ""
