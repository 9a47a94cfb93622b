# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One node-joiner run in the cluster, as ``oc adm node-image create`` of the cluster's release makes it
(openshift/oc pkg/cli/admin/nodeimage, cited below): its objects, its pod, its report, its artifacts copied back.

:class:`NodeJoinerRun` creates a namespace and the objects below and always deletes them again, on failure too,
unless the caller keeps them for debugging. The functions build the manifests and read report.json,
image-references and pod logs; they are pure.

What earlier runs left behind, found and removed before a run builds: node-joiner objects in the cluster and
partial files in ``dest``.

A run deletes its namespace, ClusterRole and ClusterRoleBinding at its end, and on SIGTERM too; a run killed
outright (SIGKILL, a crash of the controller) cannot. oc relies on the namespace's owner reference for the
cluster-scoped RBAC and deletes the namespace when it is done, with no look for earlier runs --
openshift/oc pkg/cli/admin/nodeimage/basenodeimagecommand.go@9d9df34c46c9deba8c291a2a084de5724c0bd820. Here every
object of a run carries the labels of labels(), so the next run finds them by label. A run still
going (another playbook on the same cluster) is not touched: its namespace names its owner (host, process and
the process's start time, annotation OWNER_ANNOTATION); a namespace of a process of this host that is gone is
left over at once, one of another host only when it is older than any run can last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import re
import socket
import sys
import time
from typing import Any, Callable
from urllib.parse import quote

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.serve import process_alive, start_time_of
from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import Deadline, parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import core_target, dig, group_target
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.releases import RELEASES, Release
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import pod_exec

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "openshift_agent.day2"
RUN_LABEL = "openshift-agent.day2/run"
# The process that runs a run ("<host> <pid> <start>"), on its namespace: see owner_tag.
OWNER_ANNOTATION = "openshift-agent.day2/owner"
NAMESPACE_PREFIX = "openshift-node-joiner-"
SERVICE_ACCOUNT = "node-joiner"
CONFIGMAP = "nodes-config"
POD = "node-joiner"
RELEASE_POD = "release-image-references"
ASSETS = "/assets"
# node-joiner --config-iso (releases.Release.config_iso) writes this, whatever the architecture: volume
# agent_configimage, one file config.gz --
# openshift/installer pkg/asset/agent/configimage/configiso.go@386d4aafb939cb7e5e22f77feef48386c731d2e1.
CONFIG_ISO = "agentconfig.noarch.iso"
# Where oc of a release with releases.Release.installer_images_configmap looks up the node-joiner image first.
INSTALLER_IMAGES = core_target("configmaps", "installer-images", "openshift-config")
IMAGE_REFERENCES = "/release-manifests/image-references"
NODE_JOINER_TAG = "baremetal-installer"
RBAC = "rbac.authorization.k8s.io"
# What a run leaves in the cluster when it cannot delete it: (kind, API group, resource); the namespace comes last
# so that nothing it owns is orphaned by a failure (it takes its pods, config map and service account with it).
RUN_KINDS = (
    ("ClusterRoleBinding", RBAC, "clusterrolebindings"),
    ("ClusterRole", RBAC, "clusterroles"),
    ("Namespace", "", "namespaces"),
)
# Partial files of an interrupted transfer (pod_exec.fetch: ".<name>.<random>.part") and sidecar writes (".tmp").
PARTIAL_SUFFIXES = (".part", ".tmp")
# What ends a pod or keeps it from starting, as the kubelet writes it into the pod's status and Events:
# - a container the OOM killer killed: state.terminated reason OOMKilled (cri-o
#   server/container_status.go@00fde62296f83c82f7e88a7a67a9e0c95d868ceb), exit code 137 (128 + SIGKILL); with
#   restartPolicy Never the pod is then Failed (kubernetes
#   pkg/kubelet/kubelet_pods.go@001a80e975bb880d0fe60b304d30950fe661f278, getPhase);
# - an evicted pod: status.reason Evicted, status.message "The node was low on resource: <name>. ..." or "Usage of
#   EmptyDir volume "<volume>" exceeds the limit "<size>". ", and a Warning Event Evicted with that message
#   (pkg/kubelet/eviction/helpers.go@008b3652959ca58af8be3fb5b6ecfe9ae7638282,
#   eviction_manager.go@0239cd73842a07dedf025bc1c93e1b62002cd0aa);
# - an image that cannot be pulled: state.waiting reason ErrImagePull, ImagePullBackOff, InvalidImageName..., and
#   Warning Events "Failed to pull image "<image>": <error>"
#   (pkg/kubelet/images/image_manager.go@cfce511e157eb37917f5ad1d86197e732f0a097f; their reasons:
#   events/event.go@00bdb3fade2ef1ada898bd8fae2c6a1958da3a5d).
# oc waits up to 15 minutes on ErrImagePull and ImagePullBackOff and fails at once on InvalidImageName
# (openshift/oc pkg/cli/admin/nodeimage/basenodeimagecommand.go@9d9df34c46c9deba8c291a2a084de5724c0bd820,
# waitForRunningPod); here pod_start_timeout bounds the first two, and every other reason fails at once.
PULL_RETRIED = ("ErrImagePull", "ImagePullBackOff")
PULL_FAILURES = (
    *PULL_RETRIED,
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
    "SignatureValidationFailed",
)
# oc gives the pod no memory request or limit, only a sizeLimit on the assets emptyDir (openshift/oc
# pkg/cli/admin/nodeimage/create.go@0215a1a1e57f4bd9fae970704df5f3f04aacda77, createPod); neither does this collection.
ASSETS_SIZE = "4Gi"
PULL_FIX = (
    "Check that the registry serves the image and that the cluster's pull secret (Secret openshift-config/pull-secret) "
    "covers it; on a disconnected cluster, that it is mirrored (ImageDigestMirrorSet); or set node_joiner_image "
    "(day2_node_joiner_image) to an image the nodes can pull."
)
LOG_TAIL_LINES = 40
# node-joiner has exited when its log shows one of these: logrus's "level=fatal" (main ends with logrus.Fatal on any
# error, after NewAddNodesCommand wrote its result -- openshift/installer
# cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c), cobra's "Error: <error>" for a command line it
# refuses before anything is written (e.g. "Error: unknown flag: --pxe" --
# spf13/cobra command.go@adbc8813901bba65827259daa8e22ff94ec1f30e), or a Go panic (exit status 2, no result).
_FATAL_LINE = re.compile(r"^(?:.*\blevel=fatal\b.*|Error: .*|panic: .*)$", re.MULTILINE)
_LOG_MESSAGE = re.compile(r"\bmsg=(.*)$")
# What node-joiner reads and writes in the cluster, as oc grants it (the image-content rule differs by release:
# releases.Release.icsp_rule) -- openshift/oc
# pkg/cli/admin/nodeimage/basenodeimagecommand.go@9d9df34c46c9deba8c291a2a084de5724c0bd820.
_CONFIG, _READ = "config.openshift.io", ["get", "list"]
_CONFIG_RESOURCES = ["clusterversions", "infrastructures", "proxies", "imagedigestmirrorsets"]
_COMMON_RULES = (
    ("machineconfiguration.openshift.io", ["machineconfigs"], _READ),
    ("certificates.k8s.io", ["certificatesigningrequests"], _READ),
    ("", ["configmaps", "nodes", "pods"], _READ),
    ("", ["secrets"], ["get", "list", "create", "update"]),
)


class RunError(Day2Error):
    """A run failed; ``stages`` and ``log_tail`` of its result (the partial result) say how far node-joiner got."""

    def __init__(self, message: str, stages: list[dict[str, Any]] | None = None, log_tail: str | None = None) -> None:
        super().__init__(message, {"stages": stages or [], "log_tail": log_tail})


# --- the run's objects -------------------------------------------------------------------------------------------


def cluster_role_rules(row: Release) -> list[dict[str, Any]]:
    """The ClusterRole rules oc grants node-joiner on a cluster of release ``row``: the image-content resource is
    in the config.openshift.io rule when it is of that group, a rule of its own otherwise."""
    group, resource = row.icsp_rule
    config = [*_CONFIG_RESOURCES, resource] if group == _CONFIG else _CONFIG_RESOURCES
    rules = [(_CONFIG, config, _READ), *([] if group == _CONFIG else [(group, [resource], _READ)]), *_COMMON_RULES]
    return [{"apiGroups": [g], "resources": list(r), "verbs": list(v)} for g, r, v in rules]


def labels(run_id: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, RUN_LABEL: run_id}


def namespace_manifest(run_id: str, owner: str | None = None) -> dict[str, Any]:
    """The run's namespace; ``owner`` (:func:`owner_tag`) tells a later run whether this one still runs."""
    annotations = {"openshift.io/node-selector": ""}  # let the pod land on any node, as oc does
    annotations.update({OWNER_ANNOTATION: owner} if owner else {})
    metadata = {"generateName": NAMESPACE_PREFIX, "labels": labels(run_id), "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def manifest(kind: str, namespace: dict[str, Any], run_id: str, name: str | None = None, **body: Any) -> dict[str, Any]:
    """An object of the run in ``namespace``, named ``name``; a cluster-scoped one (the RBAC) is named like the
    namespace and owned by it, so that it goes with the namespace."""
    ns_name = namespace["metadata"]["name"]
    metadata: dict[str, Any] = {"name": name or ns_name, "labels": labels(run_id)}
    if name:
        metadata["namespace"] = ns_name
    else:
        owner = {"apiVersion": "v1", "kind": "Namespace", "name": ns_name, "uid": namespace["metadata"]["uid"]}
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "v1" if name else RBAC + "/v1", "kind": kind, "metadata": metadata, **body}


def rbac_manifests(namespace: dict[str, Any], run_id: str, row: Release) -> list[dict[str, Any]]:
    """The service account, the ClusterRole and its binding, as oc creates them for node-joiner."""
    account = {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace["metadata"]["name"]}
    role = {"apiGroup": RBAC, "kind": "ClusterRole", "name": namespace["metadata"]["name"]}
    return [
        manifest("ServiceAccount", namespace, run_id, SERVICE_ACCOUNT),
        manifest("ClusterRole", namespace, run_id, rules=cluster_role_rules(row)),
        manifest("ClusterRoleBinding", namespace, run_id, roleRef=role, subjects=[account]),
    ]


def node_joiner_command(pxe: bool, config_iso: bool = False) -> str:
    # --config-iso: the configuration-only image (releases.Release.config_iso), which oc never asks for.
    flags = (" --pxe" if pxe else "") + (" --config-iso" if config_iso else "")
    # sleep keeps the container alive so the artifacts can be copied out.
    return (
        f"cp /config/{CONFIGMAP}.yaml {ASSETS}; HOME={ASSETS} node-joiner add-nodes{flags} --dir={ASSETS} "
        "--log-level=debug; sleep 600"
    )


def pod_manifest(namespace: dict[str, Any], run_id: str, name: str, container: dict[str, Any], **spec: Any) -> Any:
    """A run-once pod of this run, restricted as the restricted-v2 SCC expects."""
    restricted = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    locked = dict(restricted, allowPrivilegeEscalation=False, capabilities={"drop": ["ALL"]})
    spec.update(serviceAccountName=SERVICE_ACCOUNT, restartPolicy="Never", securityContext=restricted)
    spec["containers"] = [dict(container, securityContext=locked)]
    return manifest("Pod", namespace, run_id, name, spec=spec)


def node_joiner_pod_manifest(
    namespace: dict[str, Any], run_id: str, image: str, command: str, proxy: dict | None, name: str = POD
) -> dict[str, Any]:
    """A node-joiner pod (its container named like it) running the bash ``command`` (:func:`node_joiner_command`
    for add-nodes); ``proxy`` is the cluster's Proxy status (the facts' ``proxy_status``), its environment."""
    container = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/bash", "-c", command],
        "env": [{"name": key.upper(), "value": value} for key, value in (proxy or {}).items() if value],
        "volumeMounts": [{"name": CONFIGMAP, "mountPath": "/config"}, {"name": "assets", "mountPath": ASSETS}],
    }
    config = {"name": CONFIGMAP, "configMap": {"name": CONFIGMAP}}
    assets = {"name": "assets", "emptyDir": {"sizeLimit": ASSETS_SIZE}}
    return pod_manifest(namespace, run_id, name, container, volumes=[config, assets])


def delete_run_objects(api: k8s.ApiClient, found: list[tuple[str, str]]) -> tuple[list[str], list[tuple[str, str]]]:
    """Delete the (kind, name) of :data:`RUN_KINDS` in ``found``, in that order; (the Kind/name deleted, and
    (Kind/name, reason) of each that could not be)."""
    removed, failures = [], []
    for kind, name in found:
        group, resource = next((g, r) for k, g, r in RUN_KINDS if k == kind)
        try:
            api.delete(group_target(group, "v1", resource, name, verb="delete"))
            removed.append(f"{kind}/{name}")
        except k8s.ApiAccessError as error:
            failures.append((f"{kind}/{name}", error.message))
    return removed, failures


# --- what the pods tell ------------------------------------------------------------------------------------------


def installer_image_from_configmap(configmap: dict[str, Any] | None) -> str | None:
    """The node-joiner image from ConfigMap installer-images, or None."""
    try:
        return json.loads(dig(configmap, "data", "images.json", default="")).get("installer") or None
    except (ValueError, AttributeError):
        return None


def node_joiner_image_from_references(text: str, release: str = "") -> str:
    """The ``baremetal-installer`` image from the image-references (an ImageStream JSON) of ``release``."""
    try:
        tags = dig(json.loads(text), "spec", "tags", default=[])
    except ValueError:
        tags = None
    image = next((dig(tag, "from", "name") for tag in tags or [] if tag.get("name") == NODE_JOINER_TAG), None)
    if not image:
        problem = f"its image-references list no {NODE_JOINER_TAG!r} image" if tags is not None else "unreadable"
        raise RunError(f"cannot find the node-joiner image in release {release}: {problem}")
    return str(image)


def registry(image: str) -> str:
    """The registry an image reference names: its first part when that is a host, else docker.io."""
    host, slash, _rest = image.partition("/")
    return host if slash and ("." in host or ":" in host or host == "localhost") else "docker.io"


def pod_problem(pod: dict[str, Any] | None, events: list[dict[str, Any]] | tuple = ()) -> str | None:
    """What ended ``pod`` or keeps it from starting, in the kubelet's words (its status, and its Warning Events),
    with the setting to change where one exists; None while nothing does. A container that terminated is one: the
    node-joiner container never ends by itself before its artifacts are copied (it sleeps)."""
    status, node = dig(pod, "status", default={}), dig(pod, "spec", "nodeName", default="(none)")
    where = f"pod {dig(pod, 'metadata', 'namespace')}/{dig(pod, 'metadata', 'name')} on node {node}"
    warned = [str(event.get("message") or "").strip() for event in events if event.get("type") == "Warning"]
    if status.get("reason") == "Evicted":
        said = (status.get("message") or next(iter(warned), "")).strip()
        low = re.search(r"low on resource: ([\w-]+)", said)
        fix = f"free {low.group(1)} on node {node}, then run again" if low else "see the kubelet's message"
        if "EmptyDir" in said:
            fix = f"node-joiner wrote more than the {ASSETS_SIZE} oc gives /assets; no setting changes that"
        return f"{where} was evicted by the kubelet: {said} ({fix})"
    for container in status.get("containerStatuses") or []:
        name, image = container.get("name"), str(container.get("image") or "")
        ended, waiting = (dig(container, "state", state, default={}) for state in ("terminated", "waiting"))
        code, said = ended.get("exitCode"), str(ended.get("message") or "").strip()
        if ended.get("reason") == "OOMKilled":
            fix = _oom_fix(pod, name, node)
            return f"{where}: container {name} was killed by the OOM killer (OOMKilled, exit code {code}): {fix}"
        if ended:  # as oc's monitor words it
            said = f"exit code: {code}, reason: {ended.get('reason')}, message: {said}"
            return f"{where}: container {name} unexpectedly terminated: {said}"
        if waiting.get("reason") in PULL_FAILURES:
            pulled = [m for m in warned if m.startswith(("Failed to pull image", "Failed to apply default image tag"))]
            said = f"{waiting['reason']}: {pulled[-1] if pulled else waiting.get('message')}"
            return f"image pull failure: {where} cannot pull {image} from {registry(image)} ({said}). {PULL_FIX}"
    failed = f"{where} failed: {status.get('reason')}: {status.get('message')}"
    return failed if status.get("phase") == "Failed" else None


def _oom_fix(pod: Any, name: str, node: str) -> str:
    own: dict[str, Any] = next((c for c in dig(pod, "spec", "containers", default=[]) if c.get("name") == name), {})
    limit, unset = dig(own, "resources", "limits", "memory"), "neither oc adm node-image nor this collection sets one"
    if limit:
        return f"its memory limit {limit} was set in the cluster ({unset}: a LimitRange or a webhook): raise it there"
    return f"it had no memory limit ({unset}), so node {node} ran out of memory: free memory there, then run again"


def _ended(value: Any) -> bool:
    """Whether a time of the report is set: node-joiner writes Go's zero time (0001-01-01T00:00:00Z) until then."""
    return isinstance(value, str) and value != "" and not value.startswith("0001-01-01")


def report_completed(report: dict[str, Any] | None) -> bool:
    """True once node-joiner ran the report's Complete(): ``end_time`` set, or a ``result`` while ``end_time`` is
    still Go's zero time.

    oc waits for the top-level ``end_time`` alone to be no longer Go's zero time, then reads ``result`` --
    openshift/oc pkg/cli/admin/nodeimage/create.go@9d9df34c46c9deba8c291a2a084de5724c0bd820
    (``monitorWorkflowReport``). But Complete() sets the result, and takes end_time from the last stage only: a run
    that fails before its first stage (nodes-config refused at load, e.g. an invalid sshKey) never sets end_time, and
    oc, which waits for it, waits until the pod ends -- openshift/installer
    pkg/asset/agent/workflow/report/report.go@22e4625923c928f318fe8b972a24420a6b0df81f (``Complete``),
    pkg/nodejoiner/addnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2 (Complete, then exit_code)."""
    return report is not None and (_ended(report.get("end_time")) or isinstance(report.get("result"), dict))


def report_exit_code(report: dict[str, Any] | None) -> int | None:
    """``result.exit_code`` of a finished report; None when it ended without a result."""
    result = (report or {}).get("result")
    try:
        return int(result.get("exit_code") or 0) if isinstance(result, dict) else None
    except (TypeError, ValueError):
        return None


def fatal_line(log_text: str | None) -> str | None:
    """The first line of a pod log that says node-joiner stopped (fatal or cobra error), or None."""
    match = _FATAL_LINE.search(log_text or "")
    return match.group(0).strip() if match else None


def fatal_message(line: str) -> str:
    """What a fatal line says: logrus's ``msg=`` (unquoted when quoted), else the line."""
    match = _LOG_MESSAGE.search(line)
    text = match.group(1).strip() if match else line
    try:
        return str(json.loads(text)) if text.startswith('"') else text
    except ValueError:
        return text.strip('"')


def ended_without_result(line: str, exit_code_only: bool = True) -> str:
    written = f"{ASSETS}/exit_code" if exit_code_only else f"a result into {ASSETS}/report.json"
    hint = " This node-joiner does not know a flag it was given (the 4.17 node-joiner has no --pxe)."
    return f"node-joiner stopped without writing {written}; its log says: {line}." + hint * ("unknown flag" in line)


def summarize_stages(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Flat list of stages and sub-stages: id, description, status (done, running, failed), times, result.

    ``result`` is the stage's own detail (node-joiner sets it on a few stages) and is kept when present.
    When the report failed, the last stage and its last sub-stage are the ones that failed.
    """
    rows: list[dict[str, Any]] = []
    failed = report_completed(report) and report_exit_code(report) != 0

    def walk(stages: list[dict[str, Any]], last_of_parent: bool) -> None:
        for index, stage in enumerate(stages):
            last, ended = last_of_parent and index == len(stages) - 1, _ended(stage.get("end_time"))
            keys = ("id", "description", "start_time", *(("result",) if stage.get("result") else ()))
            row = {key: stage.get(key) for key in keys}
            row.update(status="failed" if failed and last else ("done" if ended else "running"))
            rows.append(dict(row, end_time=stage["end_time"] if ended else None))
            walk(stage.get("sub_stages") or [], last)

    walk((report or {}).get("stages") or [], True)
    return rows


def failure_message(report: dict[str, Any] | None) -> str:
    result = (report or {}).get("result") or {}
    if not isinstance(result, dict) or not result:
        return f"node-joiner completed its report (end_time {(report or {}).get('end_time')}) without a result"
    detail = result.get("detailed_error_message") or ""
    message = result.get("error_message") or f"node-joiner failed with exit code {result.get('exit_code')}"
    failed = [stage for stage in summarize_stages(report) if stage["status"] == "failed"]
    where = f" at stage {failed[-1]['id']} ({failed[-1]['description']})" if failed else ""
    return f"node-joiner failed{where}: {message}" + (f" ({detail})" if detail and detail != message else "")


def describe_failure(message: str, stages: list[dict[str, Any]], log_tail: str | None) -> str:
    """One message with what went wrong, the report stages so far and the tail of the pod log."""
    lines = [message]
    if stages:
        lines.append("node-joiner stages: " + ", ".join(f"{s['id']} {s['status']}" for s in stages))
    if log_tail and log_tail.strip():
        lines.append("node-joiner pod log (last lines):\n" + log_tail.rstrip())
    return "\n".join(lines)


# --- the run -----------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class NodeJoinerRun:
    """One namespace, one or more pods, their artifacts; use as a context manager. ``release`` is the row of the
    cluster's release, ``proxy`` its Proxy status (the pod's environment), ``owner`` owner_tag()."""

    api: k8s.ApiClient
    run_id: str
    release: Release = RELEASES[-1]
    proxy: dict[str, Any] | None = None
    owner: str | None = None
    wait_sleep: float = 5
    pod_start_timeout: float = 900
    build_timeout: float = 1800
    keep_on_failure: bool = False
    sleeper: Callable[[float], Any] = time.sleep
    namespace: dict[str, Any] = dataclasses.field(default_factory=dict, init=False)  # as the API server made it
    cleaned_up: bool = dataclasses.field(default=False, init=False)
    kept: bool = dataclasses.field(default=False, init=False)
    cleanup_failures: list[str] = dataclasses.field(default_factory=list, init=False)
    left: list[str] = dataclasses.field(default_factory=list, init=False)  # Kind/name the clean-up could not delete
    stages: list[dict[str, Any]] = dataclasses.field(default_factory=list, init=False)  # of the report read last

    def __enter__(self) -> NodeJoinerRun:
        self.namespace = self.create(namespace_manifest(self.run_id, self.owner))
        try:
            for body in rbac_manifests(self.namespace, self.run_id, self.release):
                self.create(body)
        except BaseException:
            self.__exit__(*sys.exc_info())  # __exit__ does not run when __enter__ fails
            raise
        return self

    def create(self, body: dict[str, Any]) -> Any:
        group, namespace = body["apiVersion"].rpartition("/")[0], dig(body, "metadata", "namespace")
        return self.api.create(group_target(group, "v1", body["kind"].lower() + "s", None, namespace, "create"), body)

    def __exit__(self, exc_type: type[BaseException] | None, *_exc: Any) -> None:
        # keep_on_failure keeps a failed run for debugging; a stopped one (SIGTERM, Ctrl-C) is always removed.
        if exc_type is not None and issubclass(exc_type, Exception) and self.keep_on_failure:
            self.kept = True
        elif self.namespace:
            # The owner references make the cluster-scoped RBAC go with the namespace; it is deleted explicitly
            # too, so nothing lingers while the garbage collector catches up.
            failures = delete_run_objects(self.api, [(kind[0], self.ns_name or "") for kind in RUN_KINDS])[1]
            self.left, self.cleanup_failures = [f[0] for f in failures], [f[1] for f in failures]
            self.cleaned_up = not failures

    @property
    def ns_name(self) -> str | None:
        return dig(self.namespace, "metadata", "name")

    def pod_log_tail(self, pod: str, lines: int = LOG_TAIL_LINES) -> str:
        target = k8s.with_query(core_target("pods", pod + "/log", self.ns_name), tailLines=lines)
        try:
            return self.api.request("GET", target, raw=True) or ""
        except k8s.ApiAccessError as error:
            return f"(pod log unavailable: {error})"

    def problem(self, pod: str, obj: dict[str, Any] | None = None) -> str | None:
        """What ended pod ``pod`` (``obj``, else read) or keeps it from starting (:func:`pod_problem`), with its
        Events, read only then (a 403 leaves the status to say it); None when nothing does."""
        obj = obj or self.api.get(core_target("pods", pod, self.ns_name))
        if pod_problem(obj) is None:
            return None
        try:
            events = dig(self.api.get(core_target("events", None, self.ns_name)), "items", default=[])
        except k8s.ApiAccessError:
            events = []
        return pod_problem(obj, [event for event in events if dig(event, "involvedObject", "name") == pod])

    def wait_started(self, pod: str, phases: tuple[str, ...]) -> None:
        """Wait until the pod is in one of ``phases``. A pod that cannot start fails at once, except while it waits
        for an image pull oc retries (PULL_RETRIED), until pod_start_timeout."""
        deadline = Deadline(self.pod_start_timeout, sleeper=self.sleeper)
        while True:
            obj = self.api.get(core_target("pods", pod, self.ns_name))
            status = dig(obj, "status", default={})
            if status.get("phase") in phases:
                return
            waiting = [dig(s, "state", "waiting", "reason") for s in status.get("containerStatuses") or []]
            if (pod_problem(obj) and not set(waiting) & set(PULL_RETRIED)) or deadline.expired():
                late = f"pod {self.ns_name}/{pod} did not start (phase {status.get('phase')})"
                problem = self.problem(pod, obj) or late
                waited = f" (pod_start_timeout {self.pod_start_timeout}s passed)" if deadline.expired() else ""
                raise RunError(problem + waited, log_tail=None if any(waiting) else self.pod_log_tail(pod))
            deadline.sleep(self.wait_sleep)

    @property
    def pod(self) -> pod_exec.Pod:
        return pod_exec.Pod(self.api.configuration, self.ns_name, POD)

    def _in_pod(self, call: Callable[[], Any]) -> Any:
        """``call`` (an exec into the node-joiner pod); when exec fails because the pod ended (OOMKilled, evicted...),
        a RunError that says why, with the stages so far and the log."""
        try:
            return call()
        except pod_exec.ExecError:
            problem = self.problem(POD)
            if problem:
                raise RunError(problem, self.stages, self.pod_log_tail(POD)) from None
            raise

    def exec(self, command: list[str], timeout: float = 120) -> pod_exec.ExecResult:
        """``command`` in the node-joiner pod; its output whatever its exit code, an ExecError when exec failed."""
        return self._in_pod(lambda: pod_exec.run(self.pod, command, timeout=timeout))

    def fetch(self, remote_path: str, dest_path: str, finish: Callable[[str], Any] | None = None) -> tuple[int, str]:
        """Copy ``remote_path`` out of the node-joiner pod into ``dest_path``, verified (pod_exec.fetch)."""
        return self._in_pod(lambda: pod_exec.fetch(self.pod, remote_path, dest_path, finish, self.build_timeout))

    def list_dir(self, path: str) -> list[str]:
        result = self.exec(["ls", path])
        if result.returncode != 0:
            raise RunError(f"cannot list {path} in the node-joiner pod: {result.text('stderr')}")
        return sorted(line.strip() for line in result.text().splitlines() if line.strip())

    def node_joiner_image(self, configured: str | None, release_image: str) -> str:
        """``configured``; else ConfigMap openshift-config/installer-images where oc of the release looks (it ships
        from 4.19); else the release payload's (a pod reads it)."""
        if configured:
            return configured
        lookup = self.release.installer_images_configmap
        found = installer_image_from_configmap(self.api.get(INSTALLER_IMAGES)) if lookup else None
        return found or self.image_from_release(release_image)

    def image_from_release(self, release_image: str) -> str:
        """Run the release image once and read its image-references (no registry access needed here)."""
        container = {"name": "release", "image": release_image, "command": ["/bin/sh", "-c", "cat " + IMAGE_REFERENCES]}
        self.create(pod_manifest(self.namespace, self.run_id, RELEASE_POD, container))
        self.wait_started(RELEASE_POD, ("Succeeded",))
        return node_joiner_image_from_references(self.pod_log_tail(RELEASE_POD, lines=100000), release_image)

    def build(self, image: str, nodes_config_yaml: str, pxe: bool, config_iso: bool = False) -> list[dict[str, Any]]:
        """Run node-joiner with ``image`` on ``nodes_config_yaml`` until it is done; return its report stages.

        Raises RunError with the stages and the pod log tail when it fails.
        """
        data = {CONFIGMAP + ".yaml": nodes_config_yaml}
        self.create(manifest("ConfigMap", self.namespace, self.run_id, CONFIGMAP, data=data))
        command = node_joiner_command(pxe, config_iso)
        self.create(node_joiner_pod_manifest(self.namespace, self.run_id, image, command, self.proxy))
        self.wait_started(POD, ("Running",))
        report, exit_code = self.wait_report(exit_code_only=not self.release.report_json)
        if exit_code != 0:
            log = self.pod_log_tail(POD)
            line = None if report else fatal_line(log)  # 4.17: node-joiner's own error is only in its log
            message = failure_message(report) if report else f"node-joiner exited with code {exit_code}"
            raise RunError(f"node-joiner failed: {fatal_message(line)}" if line else message, self.stages, log)
        return self.stages

    def _poll(self, exit_code_only: bool, report: dict[str, Any] | None) -> tuple[bool, Any, int | None]:
        """(whether node-joiner is done, the report read -- else ``report``, the last one --, its exit code)."""
        if exit_code_only:  # the number in /assets/exit_code, once node-joiner wrote it
            result = self.exec(["cat", ASSETS + "/exit_code"])
            code = int(result.text()) if result.returncode == 0 and result.text().lstrip("-").isdigit() else None
            return code is not None, None, code
        result = self.exec(["cat", ASSETS + "/report.json"])
        try:
            read = json.loads(result.text()) if result.returncode == 0 else None
        except ValueError:
            read = None  # being written
        report = read if isinstance(read, dict) else report
        self.stages = summarize_stages(report)
        return report_completed(report), report, report_exit_code(report)

    def wait_report(self, exit_code_only: bool = False) -> tuple[dict[str, Any] | None, int | None]:
        """Wait until node-joiner is done; return (report or None, exit code or None).

        With report.json (releases.Release.report_json): until node-joiner completed the report
        (:func:`report_completed`: its end_time, as oc waits, or its result when it failed before its first stage),
        then its result.exit_code (None when it has no result). Without (``exit_code_only``): until /assets/exit_code
        exists -- openshift/oc pkg/cli/admin/nodeimage/create.go@9d9df34c46c9deba8c291a2a084de5724c0bd820
        (``waitForCompletion``). Either way a pod log that shows node-joiner has exited (a fatal line, a cobra error,
        a panic) ends the wait at once: its result is read once more (a failed run writes it just before its fatal
        line), else the run fails with that line. The pod's ``sleep 600`` is never waited out.
        """
        deadline, report, line, log = Deadline(self.build_timeout, sleeper=self.sleeper), None, None, ""
        while True:
            done, report, code = self._poll(exit_code_only, report)
            if done:
                return report, code
            if line:  # read once more since the log showed node-joiner had exited: it wrote no result
                raise RunError(ended_without_result(line, exit_code_only), self.stages, log)
            log = self.pod_log_tail(POD)
            line = fatal_line(log)
            problem = None if line else self.problem(POD)  # the pod ended: OOMKilled, evicted, its command over
            if problem or (deadline.expired() and not line):
                late = f"node-joiner did not finish within build_timeout ({self.build_timeout}s)"
                raise RunError(problem or late, self.stages, log)
            if not line:
                deadline.sleep(self.wait_sleep)


# --- what earlier runs left ------------------------------------------------------------------------------------


class LeftoverError(Day2Error):
    """Objects of earlier runs that could not be removed; ``leftovers`` of its result names them (Kind/name)."""


def owner_tag(pid: int | None = None) -> str:
    """``<host> <pid> <start>`` of this process: what a run writes into its namespace's OWNER_ANNOTATION."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()} {pid} {start_time_of(pid) or ''}"


def owner_alive(tag: str | None) -> bool | None:
    """True when the process ``tag`` names still runs, False when it is gone, None when this host cannot tell
    (another host, no tag). A zombie is gone: a run killed in a container whose init does not reap orphans stays
    one, and its objects are left over all the same (serve.process_alive, which the ISO server's watch uses too)."""
    parts = (tag or "").split()
    if len(parts) < 2 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    return process_alive(int(parts[1]), parts[2] if len(parts) > 2 else None)


def is_left_over(namespace: dict[str, Any], now: datetime.datetime, max_age: float) -> bool:
    """Whether the run of ``namespace`` is over: its process is gone, or (unknown) it is older than ``max_age``."""
    alive = owner_alive(dig(namespace, "metadata", "annotations", OWNER_ANNOTATION))
    if alive is not None:
        return not alive
    created = parse_rfc3339(dig(namespace, "metadata", "creationTimestamp", default=""))
    return created is None or (now - created).total_seconds() > max_age


def _list_runs(api: k8s.ApiClient, group: str, resource: str) -> list[dict[str, Any]]:
    """The objects of ``resource`` labelled as a run's (managed by this collection, with a run label)."""
    selector = quote(f"{MANAGED_BY_LABEL}={MANAGED_BY},{RUN_LABEL}", safe="")
    target = k8s.with_query(group_target(group, "v1", resource), labelSelector=selector)
    items = dig(api.get(target), "items", default=[])
    return [item for item in items if dig(item, "metadata", "name", default="").startswith(NAMESPACE_PREFIX)]


def find_leftovers(api: k8s.ApiClient, now: datetime.datetime, max_age: float) -> list[tuple[str, str]]:
    """(kind, name) of every object of a finished run, namespaces last: namespaces left over, and the
    ClusterRoles and ClusterRoleBindings whose namespace is left over or gone."""
    listed = {kind: _list_runs(api, group, resource) for kind, group, resource in RUN_KINDS}
    # A namespace already being deleted is neither stale nor live: it is going.
    running = [ns for ns in listed["Namespace"] if not dig(ns, "metadata", "deletionTimestamp")]
    stale = {ns["metadata"]["name"] for ns in running if is_left_over(ns, now, max_age)}
    live = {ns["metadata"]["name"] for ns in running} - stale
    return [
        (kind, item["metadata"]["name"])
        for kind, _group, _resource in RUN_KINDS
        for item in listed[kind]
        if (item["metadata"]["name"] in stale if kind == "Namespace" else item["metadata"]["name"] not in live)
    ]


def remove_leftovers(api: k8s.ApiClient, found: list[tuple[str, str]]) -> list[str]:
    """Delete what :func:`find_leftovers` found; the names removed (Kind/name). Raises LeftoverError naming every
    object that could not be removed, with the reason and how to remove it by hand."""
    removed, failures = delete_run_objects(api, found)
    if failures:
        names, reasons = [name for name, _reason in failures], "; ".join(f"{n}: {why}" for n, why in failures)
        raise LeftoverError(
            f"cannot remove what earlier node-joiner runs left in the cluster: {reasons}. Nothing was built. Remove "
            f"them by hand (oc delete {delete_command(names)}), or give this identity the permission named, then run "
            "again.",
            {"leftovers": names},
        )
    return removed


def delete_command(names: list[str]) -> str:
    """The arguments of ``oc delete`` for Kind/name entries."""
    return " ".join(name.lower().replace("/", " ", 1) for name in names)


def remove_partial_files(dest: str, pxe_dir: str) -> list[str]:
    """Delete the partial files interrupted runs left in ``dest`` (ISO: ``.node.*``, ``.agentconfig.noarch.iso.*``)
    and ``dest/<pxe_dir>/**`` (PXE); their paths. Only this module's own temporary names are touched: ``.part`` or
    ``.tmp`` at the end."""

    # pod_exec.fetch's temporary names of node.<arch>.iso and agentconfig.noarch.iso, and of their sidecars.
    names = os.listdir(dest) if os.path.isdir(dest) else []
    found = [os.path.join(dest, name) for name in names if name.startswith((".node.", f".{CONFIG_ISO}."))]
    pxe = os.path.join(dest, pxe_dir)
    for root, _directories, names in os.walk(pxe) if not os.path.islink(pxe) else ():  # never through a symlink
        found += [os.path.join(root, name) for name in names if name.startswith(".")]
    removed = []
    for path in sorted(found):
        if path.endswith(PARTIAL_SUFFIXES) and os.path.isfile(path) and not os.path.islink(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    return removed
