# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day2_iso module's work: check the parameters and hosts, take the cluster's facts (given, or read as
day1_facts reads them), plan (reuse or build) each architecture's artifact, run node-joiner in the cluster, fetch
and check what it wrote.

What differs by release (the ClusterRole rules, the completion signal, ``--pxe`` and ``--config-iso``, where the
node-joiner image is looked up) is read from the release table, ``_common.releases``.

Each architecture's artifacts (:class:`Artifacts`): where they go, whether they are reused, how they are fetched
and checked, and the sidecar record the reuse decision reads.

An ISO is ``<dest>/node.<arch>.iso`` (``<dest>/agentconfig.noarch.iso`` for a config ISO); PXE files go into
``<dest>/boot-artifacts/<arch>/``. A JSON sidecar next to each (``node.<arch>.iso.json``,
``boot-artifacts/<arch>.json``) records the digest of every input, each file written with its sha256 and size, the
agent token expiry, the sha256 of each agent token the artifact carries and the nodes-config it was built from,
secrets redacted (``nodes_config``, the "before" of the next run's --diff). It holds no secret: a token's sha256
tells whether the cluster still holds that token, never the token. A re-run reuses the artifact when the inputs
are the same, its files still have their sha256, its token is valid long enough and Secret
openshift-config/agent-auth-token still holds the tokens it carries (deleted, or regenerated with a new key, the
Secret's tokens are not the ones the hosts' agents take: the run could not follow a host booted from it).

Which tokens an artifact carries, and when they expire, the artifact itself says (``ignition.py``): the tokens in
its Ignition config, and the earlier of its add-nodes.env expiry and their ``exp`` claims -- node-joiner 4.17 writes
a fresh 48 h into add-nodes.env when it reuses an older token (openshift/installer
pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d). Whatever another run did to the
Secret meanwhile, the artifact cannot be wrong about itself. The config ISO is not read: for it the Secret as
node-joiner left it counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import tempfile
import time
import uuid
from typing import Any, Callable

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import clock, k8s, releases
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError, ApiClient, connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Terminated, hide, signals_raise
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import image_facts
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import MASTER_LABEL
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import hosts as definition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import ignition, iso, nodes_config, workdir
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import token

PXE_DIR = "boot-artifacts"
CONFIG_ISO, CONFIG_ISO_LABEL = nj.CONFIG_ISO, "agent_configimage"  # its name and volume (node_joiner.py)
CONFIG_ISO_OUTPUT = "config-iso"
# The parameters that go into the inputs digest besides the nodes-config and the cluster's identity.
DIGESTED_PARAMETERS = ("pxe", "boot_artifacts_base_url", "live_kernel_arguments", "node_joiner_image")
DIGESTED_FACTS = ("release_image", "cluster_id")
SECRET = k8s.core_target("secrets", token.SECRET_NAME, token.SECRET_NAMESPACE)
SIDECAR_SUFFIX = ".json"
# 3: the tokens' sha256 and the artifact's own expiry; a sidecar of another version is not read, the artifact is
# rebuilt (version 2 recorded the Secret's expiry, version 1 no ``files``).
SIDECAR_VERSION = 3
# The facts the artifact says of itself that only the sidecar keeps (not the result).
OWN_TOKEN_FACTS = ("token_expiry", "token_digests")
# The rootfs among the PXE files (boot-artifacts/node.<arch>-rootfs.img), named in the result.
ROOTFS_SUFFIX = "-rootfs.img"
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
    artifacts = Artifacts(params, api, cluster, clock.utcnow(), min_validity)
    render = nodes_config.render_nodes_config
    shown = {arch: render(nodes_config.redacted(config)) for arch, config in sorted(configs.items())}
    result: dict[str, Any] = {"artifacts": [], "nodes_configs": shown, **earlier_runs(module, api)}
    plans = [artifacts.plan(arch, render(config), shown[arch]) for arch, config in sorted(configs.items())]
    changed = not all(plan.reuse for plan in plans)
    if module._diff and changed:
        result["diff"] = [artifacts.diff(plan) for plan in plans if not plan.reuse]
    for plan in plans:  # one after the other: a failed build's result holds the artifacts before it
        entry = artifacts.reused(plan) if plan.reuse else artifacts.planned(plan) if module.check_mode else None
        result["artifacts"].append(entry or _build(row, artifacts, plan, result))
    if module.check_mode:
        keys = ("architecture", "path", "reason")
        result["would_build"] = [{key: a[key] for key in keys} for a in result["artifacts"] if not a["reused"]]
    return dict(result, changed=changed, duration=round(time.monotonic() - started, 3))


def _build(row: releases.Release, artifacts: Artifacts, plan: Plan, result: dict[str, Any]) -> dict[str, Any]:
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
    partial = [] if check_mode else nj.remove_partial_files(params["dest"], PXE_DIR)
    # No run lasts longer than this (its pods' starts, the build, the copies); older objects of another host's
    # run are over.
    max_age = 2 * params["pod_start_timeout"] + 4 * params["build_timeout"]
    try:
        found = nj.find_leftovers(api, clock.utcnow(), max_age)
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
    if params["pxe"] and params.get("output") == CONFIG_ISO_OUTPUT:
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
        min_validity = clock.parse_duration(params["min_token_validity"])
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
    architecture = definition.normalize_architecture(facts["architecture"]) or facts["architecture"]
    return dict(facts, architecture=architecture), row


def check_release(params: dict[str, Any], cluster: dict[str, Any], row: releases.Release) -> None:
    """Refuse an option that the node-joiner of the cluster's release cannot do, before anything is created."""
    asked = {"pxe": params["pxe"], "config_iso": params.get("output") == CONFIG_ISO_OUTPUT}
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
            allow_loopback=definition.loopback_allowed(),
            platform=cluster["platform"],
        )
    except InventoryError as error:
        raise InputError(f"invalid hosts, nothing was written:\n{error.message}", error.result)
    if params.get("output") == CONFIG_ISO_OUTPUT and len(configs) > 1:
        raise InputError(
            f"output: config-iso writes one {CONFIG_ISO} for all hosts, but the hosts have several architectures "
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


# --- the artifacts of one architecture --------------------------------------------------------------------------


@dataclasses.dataclass
class Plan:
    """What to do for one architecture: reuse the artifact, or build it from ``nodes_config``.

    ``shown`` is the nodes-config as it may be shown and recorded (redact.py): the same text unless it held a secret.
    """

    architecture: str
    nodes_config: str
    shown: str
    digest: str
    reuse: bool
    reason: str


@dataclasses.dataclass
class Artifacts:
    """The artifacts of one day2_iso run; ``params`` are the module's, ``cluster`` the cluster's facts."""

    params: dict[str, Any]
    api: ApiClient
    cluster: dict[str, Any]
    now: datetime.datetime
    min_validity: float

    def __post_init__(self) -> None:
        self.pxe, self.config_iso = bool(self.params["pxe"]), self.params.get("output") == CONFIG_ISO_OUTPUT
        self.node_iso = not self.pxe and not self.config_iso

    def path(self, arch: str) -> str:
        name = os.path.join(PXE_DIR, arch) if self.pxe else CONFIG_ISO if self.config_iso else f"node.{arch}.iso"
        return os.path.join(self.params["dest"], name)

    def plan(self, arch: str, nodes_config: str, shown: str | None = None) -> Plan:
        """Reuse or build ``arch`` from ``nodes_config``; ``shown`` is its redacted form (default: the same)."""
        inputs = {key: self.params[key] for key in DIGESTED_PARAMETERS}
        inputs.update({key: self.cluster[key] for key in DIGESTED_FACTS}, nodes_config=nodes_config)
        if self.config_iso:  # only then, so that the digests of node ISOs built before stay the same
            inputs["output"] = CONFIG_ISO_OUTPUT
        digest = inputs_digest(inputs)
        if self.params["force"]:
            reuse, reason = False, "force is set"
        else:
            reuse, reason = reuse_decision(self.path(arch), digest, self.now, self.min_validity, self.cluster_tokens)
        return Plan(arch, nodes_config, nodes_config if shown is None else shown, digest, reuse, reason)

    def cluster_tokens(self) -> list[str] | None:
        """The sha256 of the tokens Secret agent-auth-token holds now (None: it is gone); the reuse decision asks
        only when everything else allows a reuse."""
        return token_digests(self.api.get(SECRET))

    def reused(self, plan: Plan) -> dict[str, Any]:
        """The result entry of an artifact kept as it is."""
        path = self.path(plan.architecture)
        return self._result(plan, read_sidecar(path) or {}, [], iso_facts(path) if self.node_iso else {})

    def planned(self, plan: Plan) -> dict[str, Any]:
        """The result entry of an artifact that would be built (check mode): where it would go and why, no files."""
        facts = dict.fromkeys(("cluster_id", "cluster_name", "api_dns_name", "kernel_arguments", "rootfs_url"))
        return self._result(plan, {}, [], dict(facts, hosts=[]) if self.node_iso else {})

    def diff(self, plan: Plan) -> dict[str, Any]:
        """The --diff of ``plan``: the nodes-config recorded for the existing artifact (or none), and the new one."""
        path = self.path(plan.architecture)
        before = (read_sidecar(path) or {}).get("nodes_config")
        recorded = isinstance(before, str)
        header = f"{sidecar_path(path)} (nodes-config of {path})" if recorded else f"{path} (no nodes-config recorded)"
        after: dict[str, Any] = {"after_header": f"nodes-config.yaml for {plan.architecture}", "after": plan.shown}
        return dict(after, before_header=header, before=before if recorded else "")

    def build(self, plan: Plan, run: nj.NodeJoinerRun, image: str) -> dict[str, Any]:
        """Run node-joiner for ``plan``, fetch what it wrote, record it in the sidecar; return the result entry.

        Its ``reason`` is the plan's: why the artifact could not be reused.
        """
        stages = run.build(image, plan.nodes_config, self.pxe, self.config_iso)
        path = self.path(plan.architecture)
        seen: dict[str, Any] = {}  # what the node ISO says of itself
        if self.pxe:
            os.makedirs(path, 0o700, exist_ok=True)
            names = run.list_dir(nj.ASSETS + "/" + PXE_DIR)
            files = [self._fetch(run, f"{PXE_DIR}/{name}", os.path.join(path, name)) for name in names]
            seen = initrd_facts([entry["path"] for entry in files])
        elif self.config_iso:
            files = [self._fetch(run, CONFIG_ISO, path, check_config_iso)]
        else:
            files = [self._fetch(run, os.path.basename(path), path, lambda temp: seen.update(self._finish_iso(temp)))]
            if self.params["live_kernel_arguments"]:  # written into the copy: the file differs from the pod's
                files[0].update(sha256=file_sha256(path), size=os.path.getsize(path))
        if not seen.get("token_digests"):  # the artifact says nothing of its tokens (a config ISO): the Secret counts
            secret = self.api.get(SECRET)
            expiry = token.secret_expiry(secret)
            seen = dict(seen, token_expiry=expiry and clock.format_rfc3339(expiry), token_digests=token_digests(secret))
        record = {
            "inputs_digest": plan.digest,
            "files": files,
            **{key: seen.get(key) for key in OWN_TOKEN_FACTS},
            "built_at": clock.format_rfc3339(self.now),
            "nodes_config": plan.shown,  # for the next run's --diff; secrets redacted
        }
        write_sidecar(path, record)
        return self._result(plan, record, stages, seen)

    @staticmethod
    def _fetch(run: nj.NodeJoinerRun, name: str, path: str, finish: Any = None) -> dict[str, Any]:
        size, sha = run.fetch(f"{nj.ASSETS}/{name}", path, finish=finish)
        return {"path": path, "sha256": sha, "size": size}

    def _finish_iso(self, temp_path: str) -> dict[str, Any]:
        """Add the live kernel arguments to the fetched ISO, then read what it says, before it is renamed into place.

        The ISO is the only source of the cluster it was built for, its hosts and its kernel arguments: one read of
        two small areas (igninfo and the embedded Ignition) that refuses an ISO of another cluster (a node_joiner_image
        of another release, or facts of another cluster) and gives the result its details.
        """
        if self.params["live_kernel_arguments"]:
            iso.append_kernel_arguments(temp_path, self.params["live_kernel_arguments"])
        facts = iso_facts(temp_path)
        if facts["cluster_id"] != self.cluster["cluster_id"]:
            raise Day2Error(
                f"the ISO node-joiner built names cluster {facts['cluster_id']!r}, not this cluster "
                f"{self.cluster['cluster_id']!r}: refusing it. Check node_joiner_image and the cluster facts given."
            )
        return facts

    def _result(self, plan: Plan, record: dict[str, Any], stages: list[dict[str, Any]], facts: dict[str, Any]) -> Any:
        path, files = self.path(plan.architecture), record.get("files") or []
        result = {key: value for key, value in facts.items() if key not in OWN_TOKEN_FACTS}
        result.update(architecture=plan.architecture, path=path, reused=plan.reuse, reason=plan.reason, stages=stages)
        result.update(sidecar=sidecar_path(path), inputs_digest=plan.digest, token_expiry=record.get("token_expiry"))
        result["files"] = [{key: entry.get(key) for key in ("path", "sha256", "size")} for entry in files]
        result["rootfs"] = next((f.get("path") for f in files if str(f.get("path")).endswith(ROOTFS_SUFFIX)), None)
        return result


def iso_facts(path: str) -> dict[str, Any]:
    """What the ISO at ``path`` says about itself, without secrets: cluster, hosts, token expiry and digests, kernel
    arguments."""
    info = iso.inspect_iso(path)
    summary = info["summary"] or {}
    hosts = [{key: h.get(key) for key in ("hostname", "mac_addresses")} for h in summary.get("hosts") or []]
    facts = {key: summary.get(key) for key in ("token_expiry", "cluster_id", "cluster_name", "api_dns_name")}
    facts.update(hosts=hosts, kernel_arguments=info["kargs"], rootfs_url=info["rootfs_url"])
    return dict(facts, token_digests=token_digests(ignition.token_values(info["ignition"] or {})))


def check_config_iso(path: str) -> None:
    """Refuse a fetched config ISO that is not one: volume agent_configimage holding config.gz."""
    with open(path, "rb") as handle:
        image = iso.IsoImage(handle, path)
        if (image.volume_id or "").lower() != CONFIG_ISO_LABEL or not image.exists("config.gz"):
            raise Day2Error(
                f"{path} is not a node-joiner config ISO (volume {image.volume_id!r}, config.gz "
                f"{'present' if image.exists('config.gz') else 'missing'}; expected volume {CONFIG_ISO_LABEL} with "
                "config.gz): refusing it. Check node_joiner_image."
            )


def initrd_facts(paths: list[str]) -> dict[str, Any]:
    """The token expiry and digests the PXE initrd among ``paths`` carries (read from the file itself), or {}."""
    for path in (path for path in paths if path.endswith("-initrd.img")):
        try:
            config = iso.read_pxe_initrd(path)[0]
        except (ignition.IsoError, OSError):
            return {}
        expiry = ignition.summarize_add_nodes_ignition(config)["token_expiry"]
        return {"token_expiry": expiry, "token_digests": token_digests(ignition.token_values(config))}
    return {}


def token_digests(tokens: list[str] | dict[str, Any] | None) -> list[str] | None:
    """The sha256 of each agent token, sorted: of a list of tokens, or of Secret agent-auth-token (None: no Secret)."""
    if isinstance(tokens, dict):
        tokens = [found.value for found in token.secret_tokens(tokens)]
    return None if tokens is None else sorted({hashlib.sha256(value.encode()).hexdigest() for value in tokens})


# --- the sidecar and the reuse decision ----------------------------------------------------------------------------


def inputs_digest(inputs: dict[str, Any]) -> str:
    """sha256 of a canonical JSON rendering of the inputs dict."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def file_sha256(path: str, chunk: int = 4 << 20) -> str:
    digest = hashlib.sha256()
    with workdir.open_nofollow(path) as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def sidecar_path(artifact_path: str) -> str:
    return artifact_path.rstrip(os.sep) + SIDECAR_SUFFIX


def read_sidecar(artifact_path: str) -> dict[str, Any] | None:
    """The sidecar record of ``artifact_path``; None when it is missing, unreadable or of another version."""
    try:
        with workdir.open_nofollow(sidecar_path(artifact_path), "r") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == SIDECAR_VERSION else None


def write_sidecar(artifact_path: str, record: dict[str, Any]) -> str:
    """Write the sidecar atomically (temp file in the same directory, then rename); return its path."""
    path = sidecar_path(artifact_path)
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(dict(record, version=SIDECAR_VERSION), handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(temp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)  # renamed away when it succeeded
    return path


def reuse_decision(
    artifact_path: str,
    digest: str,
    now: datetime.datetime,
    min_validity_seconds: float,
    cluster_tokens: Callable[[], list[str] | None] | None = None,
) -> tuple[bool, str]:
    """Return (reusable, reason) for the artifact at ``artifact_path`` (an ISO, or a directory of PXE files).

    Reusable when its sidecar records the inputs ``digest``, every file it records still has its sha256, the agent
    token it carries is valid for at least ``min_validity_seconds`` after ``now``, and every token of Secret
    agent-auth-token is one it carries: ``cluster_tokens()`` gives their sha256 (None: the Secret is gone; not
    asked when ``cluster_tokens`` is None).
    """
    record, sidecar = read_sidecar(artifact_path), sidecar_path(artifact_path)
    if record is None:
        problem = f"has no readable sidecar {sidecar}" if os.path.exists(artifact_path) else "does not exist"
        return False, f"{artifact_path} {problem}"
    if record.get("inputs_digest") != digest:
        return False, f"the inputs changed since {artifact_path} was built"
    files = [entry for entry in record.get("files") or [] if isinstance(entry, dict)]
    if not files:
        return False, f"the sidecar {sidecar} records no files"
    for entry in files:
        path = entry.get("path")
        try:
            intact = isinstance(path, str) and entry.get("sha256") == file_sha256(path)
        except OSError as error:
            return False, f"{path} does not exist or cannot be read ({error.strerror})"
        if not intact:
            return False, f"{path} was modified or damaged since it was built (sha256 differs)"
    expiry = ignition.moment(record.get("token_expiry"))
    if expiry is None:
        return False, f"the agent token expiry of {artifact_path} is unknown"
    left = (expiry - now).total_seconds()
    if left < min_validity_seconds:
        return False, (
            f"the agent token in {artifact_path} expires at {expiry.isoformat()}, {_human(left)} from now, less than "
            f"min_token_validity ({_human(min_validity_seconds)})"
        )
    held, secret = cluster_tokens() if cluster_tokens else [], f"Secret {token.SECRET_NAMESPACE}/{token.SECRET_NAME}"
    if held is None:
        return False, (
            f"{secret} is gone (deleted since {artifact_path} was built): the token it carries is no longer the "
            "cluster's, so its hosts could not be followed"
        )
    if not set(held) <= set(record.get("token_digests") or []):
        return False, (
            f"{secret} holds other tokens than {artifact_path} carries (regenerated since it was built): the hosts "
            "booted from it would refuse the cluster's token"
        )
    return True, f"inputs unchanged, {artifact_path} intact, the cluster's token valid until {expiry.isoformat()}"


def _human(seconds: float) -> str:
    whole = abs(int(seconds))
    return f"{'-' if seconds <= -1 else ''}{whole // 3600}h{whole % 3600 // 60:02d}m"
