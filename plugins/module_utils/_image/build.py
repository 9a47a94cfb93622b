# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day2_iso module's work: check the parameters and hosts, read the cluster, plan (reuse or build) each
architecture's artifact, run node-joiner in the cluster, fetch and check what it wrote.

What differs by release, as ``oc adm node-image create`` of that release does it (sources in node_joiner.py and
run.py): the ClusterRole rules, the completion signal (report.json from 4.18, exit_code before) and ``--pxe``
(4.18+ only: node-joiner 4.17 knows --kubeconfig, --dir and --log-level --
openshift/installer cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c).
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any, Callable

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration, utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.interrupt import Terminated, signals_raise
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    ApiClient,
    connect,
    core_target,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import hide
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import read_objects
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.nodes import (
    MASTER_LABEL,
    master_architecture,
    node_summary,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.support import MIN_VERSION, parse_version
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import leftovers
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.artifacts import (
    CONFIG_ISO,
    CONFIG_ISO_OUTPUT,
    PXE_DIR,
    Artifacts,
    Plan,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    loopback_allowed,
    normalize_architecture,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import (
    InventoryError,
    build_nodes_configs,
    missing_libraries,
    render_nodes_config,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.redact import redacted, secret_values
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.run import NodeJoinerRun, RunError

# node-joiner's --pxe came with 4.18 (installer PR #9097); oc 4.17 has no --pxe either.
PXE_SINCE = (4, 18)
# --config-iso came with 4.18 too (installer PR #9214): openshift/installer
# pkg/nodejoiner/addnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2. The 4.17 one writes a config ISO only as a
# side effect of every node-ISO run (addnodes.go@1b10d1c09e8015e354af740458d30ceafd2ffb80), with no flag to ask.
CONFIG_ISO_SINCE = (4, 18)
# The objects read before anything is decided (_facts.cluster.READS, read in that order: four GETs of
# ClusterVersion version, Infrastructure cluster, Proxy cluster and the Node list).
CLUSTER_READS = ("clusterversion", "infrastructure", "proxy", "nodes")
# amd64 and arm64 workers may join each other's clusters (with a multi-architecture release payload).
MIXABLE_ARCHITECTURES = ("x86_64", "aarch64")


def run(module: Any) -> dict[str, Any]:
    """Do what day2_iso's parameters ask; return the module's result. Raises Day2Error with the partial result.

    SIGTERM or SIGHUP stop it cleanly: what the run created is deleted (interrupt.py), then it fails."""
    with signals_raise():
        try:
            return _run(module)
        except Terminated as stop:
            raise Day2Error(
                "day2_iso was stopped by %s before it built anything; nothing of it is left. Run it again." % stop.name
            ) from None


def _run(module: Any) -> dict[str, Any]:
    params = module.params
    started = time.monotonic()
    min_validity = check_parameters(params, module.check_mode)
    client, api = connect(module)
    cluster = read_cluster(api)
    check_pxe_supported(params["pxe"], cluster)
    check_config_iso_supported(params, cluster)
    configs = nodes_configs(params, cluster)
    if params.get("output") == CONFIG_ISO_OUTPUT and len(configs) > 1:
        raise InputError(
            "output: config-iso writes one %s for all hosts, but the hosts have several architectures (%s): "
            "run day2_iso once per architecture. Nothing was created." % (CONFIG_ISO, ", ".join(sorted(configs)))
        )
    # A raw nmstate may hold a secret (an 802.1X password...): shown and recorded redacted, hidden everywhere.
    hide(module, *secret_values(configs))
    artifacts = Artifacts(params, api, cluster, utcnow(), min_validity)
    result: dict[str, Any] = {"changed": False, "artifacts": [], "nodes_configs": {}}
    result.update(earlier_runs(params, api, module.check_mode, module.warn))
    plans = []
    for arch, config in sorted(configs.items()):
        result["nodes_configs"][arch] = render_nodes_config(redacted(config))
        plans.append(artifacts.plan(arch, render_nodes_config(config), result["nodes_configs"][arch]))
    result["changed"] = not all(plan.reuse for plan in plans)
    if module._diff and result["changed"]:
        result["diff"] = [artifacts.diff(plan) for plan in plans if not plan.reuse]
    if module.check_mode:
        result["would_build"] = [
            {"architecture": p.architecture, "path": artifacts.path(p.architecture), "reason": p.reason}
            for p in plans
            if not p.reuse
        ]
        result["artifacts"] = [artifacts.reused(plan) if plan.reuse else artifacts.planned(plan) for plan in plans]
    else:
        for plan in plans:
            if plan.reuse:
                result["artifacts"].append(artifacts.reused(plan))
            else:
                result["artifacts"].append(_build(params, client, api, cluster, artifacts, plan, result))
    result["duration"] = round(time.monotonic() - started, 3)
    return result


def _build(
    params: dict[str, Any],
    client: Any,
    api: ApiClient,
    cluster: dict[str, Any],
    artifacts: Artifacts,
    plan: Plan,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Build one artifact in a node-joiner run of its own; a failure says what was cleaned up."""
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
        owner=leftovers.owner_tag(),
    )
    try:
        with run:
            result["namespace"] = run.ns_name
            result["node_joiner_image"] = node_joiner_image(params, api, cluster, run)
            artifact = artifacts.build(plan, run, result["node_joiner_image"])
    except Day2Error as error:
        message = error.message + cleanup_note(run)
        if isinstance(error, RunError):
            message = nj.describe_failure(message, error.stages, error.log_tail)
        raise Day2Error(message, {**_so_far(result), "namespace": run.ns_name, **error.result})
    except Terminated as stop:
        raise Day2Error(
            "day2_iso was stopped by %s while it built the %s artifact%s; no partial file was left. Run it again."
            % (stop.name, plan.architecture, cleanup_note(run) or " (nothing was created yet)"),
            {**_so_far(result), "namespace": run.ns_name, "left": run.left},
        ) from None
    if run.left:
        # The artifact is fine, but the run's objects (a ClusterRole that may write Secrets) are not gone.
        raise Day2Error(
            "the %s artifact was built (%s), but the clean-up of its node-joiner run failed: %s. Delete %s by hand "
            "(oc delete %s), or run day2_iso again: it removes what earlier runs left."
            % (
                plan.architecture,
                artifact["path"],
                "; ".join(run.cleanup_failures),
                ", ".join(run.left),
                " ".join(name.lower().replace("/", " ", 1) for name in run.left),
            ),
            {
                **_so_far(result),
                "namespace": run.ns_name,
                "left": run.left,
                "artifacts": [*result["artifacts"], artifact],
            },
        )
    return artifact


def _so_far(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key != "changed"}


def earlier_runs(
    params: dict[str, Any], api: ApiClient, check_mode: bool, warn: Callable[[str], Any]
) -> dict[str, Any]:
    """Remove what earlier runs left (leftovers.py): partial files in dest, then node-joiner objects in the
    cluster; in check mode only say what would be removed. Returns the result keys ``leftovers_removed`` (or
    ``leftovers_found``) and ``partial_files_removed``. A removal that fails is a LeftoverError naming the objects.
    """
    if check_mode:
        partial: list[str] = []
    else:
        partial = leftovers.remove_partial_files(params["dest"], PXE_DIR)
    # No run lasts longer than this (its pods' starts, the build, the copies); older objects of another host's
    # run are over.
    max_age = 2 * params["pod_start_timeout"] + 4 * params["build_timeout"]
    try:
        found = leftovers.find(api, utcnow(), max_age)
    except ApiAccessError as error:
        if error.status != 403:
            raise
        warn(
            "cannot look for node-joiner objects that earlier runs left: %s. Grant 'list' on namespaces, "
            "clusterroles and clusterrolebindings (docs/rbac.md), or look by hand: oc get ns,clusterrole,"
            "clusterrolebinding -l %s=%s" % (error.message, nj.MANAGED_BY_LABEL, nj.MANAGED_BY)
        )
        found = []
    names = ["%s/%s" % item for item in found]
    if check_mode:
        return {"leftovers_found": names, "partial_files_removed": partial}
    return {"leftovers_removed": leftovers.remove(api, found), "partial_files_removed": partial}


def check_parameters(params: dict[str, Any], check_mode: bool = False) -> int:
    """Refuse parameters that cannot work, before the cluster is read; return min_token_validity in seconds.

    In check mode a missing ``dest`` is fine: the run before this module (the preflight role) would create it.
    """
    for name, trace in missing_libraries():
        raise Day2Error(missing_required_lib(name), {"exception": trace})
    if params["pxe"] and params.get("output") == CONFIG_ISO_OUTPUT:
        # node-joiner itself stops with "invalid configuration found" (addnodes.go@de45fedd...).
        raise InputError("pxe: true and output: config-iso exclude each other: choose one")
    if not params["pxe"] and params["boot_artifacts_base_url"]:
        raise InputError("boot_artifacts_base_url is only used with pxe=true: set pxe: true or drop it")
    try:
        min_validity = parse_duration(params["min_token_validity"])
    except ValueError as error:
        raise InputError("min_token_validity: %s" % error)
    if not os.path.isdir(params["dest"]) and not (check_mode and not os.path.lexists(params["dest"])):
        raise InputError("dest %s is not an existing directory: create it first" % params["dest"])
    return min_validity


def read_cluster(api: ApiClient) -> dict[str, Any]:
    """Release, proxy, platform and control-plane architecture of the cluster: the four GETs of CLUSTER_READS."""
    objects, unreadable = read_objects(api, list(CLUSTER_READS))
    if unreadable:
        raise Day2Error(
            "cannot read what node-joiner needs: %s"
            % "; ".join("%s: %s" % (key, reason) for key, reason in sorted(unreadable.items()))
        )
    cv = objects["clusterversion"]
    desired = (cv.get("status") or {}).get("desired") or {}
    version = desired.get("version")
    parsed = parse_version(version)
    if parsed is None or parsed < MIN_VERSION:
        raise Day2Error(
            "cluster version %s is older than %d.%d: node-joiner cannot add nodes to it. Upgrade the cluster first."
            % (version, MIN_VERSION[0], MIN_VERSION[1])
        )
    nodes = [node_summary(item) for item in (objects["nodes"] or {}).get("items") or []]
    architecture = master_architecture(nodes)
    if not architecture:
        raise Day2Error(
            "cannot tell the control plane's architecture: no Node labelled %s reports "
            "status.nodeInfo.architecture" % MASTER_LABEL
        )
    infrastructure = objects["infrastructure"] or {}
    return {
        "cluster_id": (cv.get("spec") or {}).get("clusterID"),
        "version": version,
        "version_tuple": parsed,
        "release_image": desired.get("image"),
        "proxy": objects["proxy"],
        "architecture": normalize_architecture(architecture) or architecture,
        # what node-joiner checks the workers' architecture against (see nodes_config.NONE_PLATFORM_ONLY)
        "platform": ((infrastructure.get("spec") or {}).get("platformSpec") or {}).get("type"),
    }


def check_pxe_supported(pxe: bool, cluster: dict[str, Any]) -> None:
    """Refuse pxe on a cluster whose node-joiner has no --pxe, before anything is created."""
    if pxe and cluster["version_tuple"] < PXE_SINCE:
        raise InputError(
            "pxe: true needs OpenShift %d.%d or later, but this cluster runs %s: its node-joiner has no --pxe flag "
            '(it would stop with "Error: unknown flag: --pxe"). Set pxe: false and boot the hosts from the ISO, '
            "or upgrade the cluster first. Nothing was created." % (PXE_SINCE[0], PXE_SINCE[1], cluster["version"])
        )


def check_config_iso_supported(params: dict[str, Any], cluster: dict[str, Any]) -> None:
    """Refuse output: config-iso on a cluster whose node-joiner has no --config-iso, before anything is created."""
    if params.get("output") == CONFIG_ISO_OUTPUT and cluster["version_tuple"] < CONFIG_ISO_SINCE:
        raise InputError(
            "output: config-iso needs OpenShift %d.%d or later, but this cluster runs %s: its node-joiner has no "
            '--config-iso flag (it would stop with "Error: unknown flag: --config-iso"). Set output: node-iso, or '
            "upgrade the cluster first. Nothing was created."
            % (CONFIG_ISO_SINCE[0], CONFIG_ISO_SINCE[1], cluster["version"])
        )


def nodes_configs(params: dict[str, Any], cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The nodes-config of each architecture of the hosts; every problem of the hosts at once, as an InputError."""
    try:
        configs = build_nodes_configs(
            params["hosts"],
            cluster["architecture"],
            ssh_key=params["ssh_key"],
            boot_artifacts_base_url=params["boot_artifacts_base_url"],
            allow_loopback=loopback_allowed(),
            platform=cluster["platform"],
        )
    except InventoryError as error:
        raise InputError("invalid hosts, nothing was written:\n%s" % error.message, error.result)
    check_architecture_pairs(configs, cluster["architecture"])
    return configs


def check_architecture_pairs(configs: dict[str, dict[str, Any]], cluster_arch: str) -> None:
    for arch in configs:
        if arch == cluster_arch or (arch in MIXABLE_ARCHITECTURES and cluster_arch in MIXABLE_ARCHITECTURES):
            continue
        hosts = ", ".join(h["hostname"] for h in configs[arch]["hosts"])
        raise InputError(
            'hosts %s: field "cpu_architecture" value %r cannot join a %s cluster: only amd64 and arm64 workers '
            "may be mixed (with a multi-architecture release payload); s390x and ppc64le only join clusters of the "
            "same architecture. Fix cpu_architecture." % (hosts, arch, cluster_arch)
        )


def node_joiner_image(params: dict[str, Any], api: ApiClient, cluster: dict[str, Any], run: NodeJoinerRun) -> str:
    """node_joiner_image; else ConfigMap openshift-config/installer-images; else the release's (a pod reads it)."""
    if params["node_joiner_image"]:
        return params["node_joiner_image"]
    configmap = api.get(core_target("configmaps", nj.INSTALLER_IMAGES_CONFIGMAP, nj.INSTALLER_IMAGES_NAMESPACE))
    return nj.installer_image_from_configmap(configmap) or run.image_from_release(cluster["release_image"])


def cleanup_note(run: NodeJoinerRun) -> str:
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
