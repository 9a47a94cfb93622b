# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day2_iso module's work: check the parameters and hosts, take the cluster's facts (given, or read as
day1_facts reads them), plan (reuse or build) each architecture's artifact, run node-joiner in the cluster, fetch
and check what it wrote.

What differs by release (the ClusterRole rules, the completion signal, ``--pxe`` and ``--config-iso``, where the
node-joiner image is looked up) is read from the release table, ``_common.releases``.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import releases
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration, utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError, ApiClient, connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Terminated, hide, signals_raise
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import image_facts
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import MASTER_LABEL
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import artifacts as art
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import hosts, nodes_config, workdir
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj

# The facts (ansible_facts.day1_cluster) day2_iso decides with: the option ``cluster``, else image_facts().
CLUSTER_KEYS = ("cluster_id", "version", "release_image", "architecture", "platform", "proxy_status")
# Options that need a release whose node-joiner has the flag: (option, releases field, flag, what to do instead).
FLAGS = (
    ("pxe: true", "pxe", "--pxe", "Set pxe: false and boot the hosts from the ISO"),
    ("output: config-iso", "config_iso", "--config-iso", "Set output: node-iso"),
)


def run(module: Any) -> dict[str, Any]:
    """Do what day2_iso's parameters ask; return the module's result. Raises Day2Error with the partial result.

    SIGTERM or SIGHUP stop it cleanly: what the run created is deleted (module.signals_raise), then it fails."""
    with signals_raise():
        try:
            return _run(module)
        except Terminated as stop:
            raise Day2Error(
                f"day2_iso was stopped by {stop.name} before it built anything; nothing of it is left. Run it again."
            ) from None


def _run(module: Any) -> dict[str, Any]:
    params, started = module.params, time.monotonic()
    min_validity = check_parameters(params, module.check_mode)
    api = connect(module)[1]
    cluster, row = cluster_facts(params.get("cluster"), api)
    check_release(params, cluster, row)
    configs = nodes_configs(params, cluster)
    check_platform(params, cluster, row, sorted(configs))
    # A raw nmstate may hold a secret (an 802.1X password...): shown and recorded redacted, hidden everywhere.
    hide(module, *nodes_config.secret_values(configs))
    artifacts = art.Artifacts(params, api, cluster, utcnow(), min_validity)
    result: dict[str, Any] = {"artifacts": [], "nodes_configs": {}}
    result.update(earlier_runs(module, api))
    plans = []
    for arch, config in sorted(configs.items()):
        result["nodes_configs"][arch] = nodes_config.render_nodes_config(nodes_config.redacted(config))
        plans.append(artifacts.plan(arch, nodes_config.render_nodes_config(config), result["nodes_configs"][arch]))
    changed = not all(plan.reuse for plan in plans)
    if module._diff and changed:
        result["diff"] = [artifacts.diff(plan) for plan in plans if not plan.reuse]
    for plan in plans:
        if plan.reuse or module.check_mode:
            result["artifacts"].append(artifacts.reused(plan) if plan.reuse else artifacts.planned(plan))
        else:
            result["artifacts"].append(_build(row, artifacts, plan, result))
    if module.check_mode:
        keys = ("architecture", "path", "reason")
        result["would_build"] = [{key: a[key] for key in keys} for a in result["artifacts"] if not a["reused"]]
    return dict(result, changed=changed, duration=round(time.monotonic() - started, 3))


def _build(row: releases.Release, artifacts: art.Artifacts, plan: art.Plan, result: dict[str, Any]) -> dict[str, Any]:
    """Build one artifact in a node-joiner run of its own; a failure says what was cleaned up. ``result`` is the
    module's so far, the partial result of a failure."""
    params, api, cluster = artifacts.params, artifacts.api, artifacts.cluster
    options = {key: params[key] for key in ("wait_sleep", "pod_start_timeout", "build_timeout", "keep_on_failure")}
    run = nj.NodeJoinerRun(api, uuid.uuid4().hex[:12], row, cluster["proxy_status"], nj.owner_tag(), **options)

    def failed(message: str, **more: Any) -> Day2Error:
        return Day2Error(message, {**result, "namespace": run.ns_name, **more})

    try:
        with run:
            result["namespace"] = run.ns_name
            result["node_joiner_image"] = run.node_joiner_image(params["node_joiner_image"], cluster["release_image"])
            artifact = artifacts.build(plan, run, result["node_joiner_image"])
    except Day2Error as error:  # a RunError's result carries the stages and the log tail
        details = (error.result.get("stages") or [], error.result.get("log_tail"))
        raise failed(nj.describe_failure(error.message + cleanup_note(run), *details), **error.result)
    except Terminated as stop:
        raise failed(
            f"day2_iso was stopped by {stop.name} while it built the {plan.architecture} artifact"
            f"{cleanup_note(run) or ' (nothing was created yet)'}; no partial file was left. Run it again.",
            left=run.left,
        ) from None
    if run.left:
        # The artifact is fine, but the run's objects (a ClusterRole that may write Secrets) are not gone.
        raise failed(
            f"the {plan.architecture} artifact was built ({artifact['path']}), but the clean-up of its node-joiner run "
            f"failed: {'; '.join(run.cleanup_failures)}. Delete {', '.join(run.left)} by hand (oc delete "
            f"{nj.delete_command(run.left)}), or run day2_iso again: it removes what earlier runs left.",
            left=run.left,
            artifacts=[*result["artifacts"], artifact],
        )
    return artifact


def earlier_runs(module: Any, api: ApiClient) -> dict[str, Any]:
    """Remove what earlier runs left (node_joiner.py): partial files in dest, then node-joiner objects in the
    cluster; in check mode only say what would be removed. Returns the result keys ``leftovers_removed`` (or
    ``leftovers_found``) and ``partial_files_removed``. A removal that fails is a LeftoverError naming the objects.
    """
    params, check_mode = module.params, module.check_mode
    partial = [] if check_mode else nj.remove_partial_files(params["dest"], art.PXE_DIR)
    # No run lasts longer than this (its pods' starts, the build, the copies); older objects of another host's
    # run are over.
    max_age = 2 * params["pod_start_timeout"] + 4 * params["build_timeout"]
    try:
        found = nj.find_leftovers(api, utcnow(), max_age)
    except ApiAccessError as error:
        if error.status != 403:
            raise
        module.warn(
            f"cannot look for node-joiner objects that earlier runs left: {error.message}. Grant 'list' on "
            "namespaces, clusterroles and clusterrolebindings (docs/rbac.md), or look by hand: oc get "
            f"ns,clusterrole,clusterrolebinding -l {nj.MANAGED_BY_LABEL}={nj.MANAGED_BY}"
        )
        found = []
    if check_mode:
        return {"leftovers_found": [f"{kind}/{name}" for kind, name in found], "partial_files_removed": partial}
    return {"leftovers_removed": nj.remove_leftovers(api, found), "partial_files_removed": partial}


def check_parameters(params: dict[str, Any], check_mode: bool = False) -> int:
    """Refuse parameters that cannot work, before the cluster is read; return min_token_validity in seconds.

    In check mode a missing ``dest`` is fine: the day2 role's preflight step creates it, which check mode skips.
    """
    for name, trace in nodes_config.missing_libraries():
        raise Day2Error(missing_required_lib(name), {"exception": trace})
    if params["pxe"] and params.get("output") == art.CONFIG_ISO_OUTPUT:
        # node-joiner itself stops with "invalid configuration found" (addnodes.go@de45fedd...).
        raise InputError("pxe: true and output: config-iso exclude each other: choose one")
    if not params["pxe"] and params["boot_artifacts_base_url"]:
        # On External too: its day-2 node ISO is a full one from 4.18; 4.17's minimal one fetches RHCOS's own rootfs
        # (releases.minimal_iso_on_external), and a 4.17 nodes-config has no bootArtifactsBaseURL (PXE came in 4.18).
        raise InputError(
            f"boot_artifacts_base_url {params['boot_artifacts_base_url']!r} is used by node-joiner only for PXE files, "
            "on every platform (a day-2 node ISO holds its rootfs, or on 4.17's platform External fetches RHCOS's "
            "own): set pxe: true or drop it"
        )
    try:
        min_validity = parse_duration(params["min_token_validity"])
    except ValueError as error:
        raise InputError(f"min_token_validity: {error}")
    if not os.path.isdir(params["dest"]) and not (check_mode and not os.path.lexists(params["dest"])):
        raise InputError(f"dest {params['dest']} is not an existing directory: create it first")
    refused = workdir.check(params["dest"], "(parameters)", "dest").items
    if refused:
        raise InputError(
            "\n".join([*(item["message"] for item in refused), "Nothing was written."]), {"problems": refused}
        )
    return min_validity


def cluster_facts(given: dict[str, Any] | None, api: ApiClient) -> tuple[dict[str, Any], releases.Release]:
    """The facts day2_iso decides with and the row of the cluster's release: ``given`` (the option ``cluster``,
    day1_facts' ``ansible_facts.day1_cluster``), else read now as day1_facts reads them (four GETs)."""
    missing = [key for key in CLUSTER_KEYS if given is not None and key not in given]
    if missing:
        raise InputError(
            f"cluster: the facts given lack {', '.join(missing)}: pass ansible_facts.day1_cluster as day1_facts of "
            "this collection returns it, or leave cluster unset to read the cluster"
        )
    facts = image_facts(api) if given is None else given
    row = releases.release(facts["version"])
    if not facts["architecture"]:
        raise Day2Error(
            f"cannot tell the control plane's architecture: no Node labelled {MASTER_LABEL} reports "
            "status.nodeInfo.architecture"
        )
    # Of the control plane; the hosts' own are checked against it (hosts.HostChecker: only amd64 and arm64 mix).
    return dict(facts, architecture=hosts.normalize_architecture(facts["architecture"]) or facts["architecture"]), row


def check_release(params: dict[str, Any], cluster: dict[str, Any], row: releases.Release) -> None:
    """Refuse an option that the node-joiner of the cluster's release cannot do, before anything is created."""
    asked = {"pxe": params["pxe"], "config_iso": params.get("output") == art.CONFIG_ISO_OUTPUT}
    for option, field, flag, instead in FLAGS:
        if asked[field] and not getattr(row, field):
            major, minor = releases.since(field)
            raise InputError(
                f"{option} needs OpenShift {major}.{minor} or later, but this cluster runs {cluster['version']}: its "
                f'node-joiner has no {flag} flag (it would stop with "Error: unknown flag: {flag}"). {instead}, or '
                "upgrade the cluster first. Nothing was created."
            )


def check_platform(params: dict[str, Any], cluster: dict[str, Any], row: releases.Release, arches: list[str]) -> None:
    """Refuse live_kernel_arguments for an ISO whose kernel arguments cannot be edited, before anything is created:
    node-joiner 4.17's minimal ISO on platform External (releases.minimal_iso_on_external) keeps the full ISO's
    kargs.jso, which on x86_64 no longer matches isolinux.cfg (iso.read_layout)."""
    minimal = row.minimal_iso_on_external and cluster["platform"] == "External" and params.get("output") != "config-iso"
    if minimal and not params["pxe"] and params["live_kernel_arguments"] and "x86_64" in arches:
        raise InputError(
            f"live_kernel_arguments cannot be written into the x86_64 minimal ISO node-joiner {cluster['version']} "
            "builds on platform External: its coreos/kargs.jso no longer matches isolinux.cfg, so no tool can edit its "
            "kernel arguments safely. Drop live_kernel_arguments, or upgrade to 4.18 (a full ISO). Nothing was created."
        )


def nodes_configs(params: dict[str, Any], cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The nodes-config of each architecture of the hosts; every problem of the hosts at once, as an InputError."""
    try:
        configs = nodes_config.build_nodes_configs(
            params["hosts"],
            cluster["architecture"],
            ssh_key=params["ssh_key"],
            boot_artifacts_base_url=params["boot_artifacts_base_url"],
            allow_loopback=hosts.loopback_allowed(),
            platform=cluster["platform"],
        )
    except nodes_config.InventoryError as error:
        raise InputError(f"invalid hosts, nothing was written:\n{error.message}", error.result)
    if params.get("output") == art.CONFIG_ISO_OUTPUT and len(configs) > 1:
        raise InputError(
            f"output: config-iso writes one {art.CONFIG_ISO} for all hosts, but the hosts have several architectures "
            f"({', '.join(sorted(configs))}): run day2_iso once per architecture. Nothing was created."
        )
    return configs


def cleanup_note(run: nj.NodeJoinerRun) -> str:
    namespace, failures = run.ns_name, "; ".join(run.cleanup_failures)
    if run.kept:
        return (
            f" (keep_on_failure: namespace {namespace} and its ClusterRole/ClusterRoleBinding were kept; delete them)"
        )
    if run.cleaned_up:
        return f" (namespace {namespace} and everything in it were deleted)"
    incomplete = f" (clean-up of namespace {namespace} incomplete, delete what is left by hand: {failures})"
    return incomplete if failures else ""
