# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The objects of one node-joiner run and the interpretation of what it reports.

Pure: builds manifests as dicts and reads report.json / image-references
documents and pod logs. The module drives the API; this file only knows the shapes
that ``oc adm node-image create`` uses (openshift/oc pkg/cli/admin/nodeimage, cited below).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "openshift_agent.day2"
RUN_LABEL = "openshift-agent.day2/run"
# The process that runs a run ("<host> <pid> <start>"), on its namespace: see leftovers.py.
OWNER_ANNOTATION = "openshift-agent.day2/owner"
NAMESPACE_PREFIX = "openshift-node-joiner-"
SERVICE_ACCOUNT = "node-joiner"
CONFIGMAP = "nodes-config"
POD = "node-joiner"
RELEASE_POD = "release-image-references"
ASSETS = "/assets"
# oc 4.18+ reads ConfigMap openshift-config/installer-images (key images.json, field installer), else the release
# payload's baremetal-installer -- openshift/oc
# pkg/cli/admin/nodeimage/basenodeimagecommand.go@6febe61977471b066f08d513424b226b82ee518f.
INSTALLER_IMAGES_NAMESPACE = "openshift-config"
INSTALLER_IMAGES_CONFIGMAP = "installer-images"
IMAGE_REFERENCES = "/release-manifests/image-references"
NODE_JOINER_TAG = "baremetal-installer"

# What node-joiner reads and writes in the cluster, as oc grants it. oc 4.17-4.20 lists a
# "config.openshift.io imagecontentpolicies" resource -- openshift/oc
# pkg/cli/admin/nodeimage/basenodeimagecommand.go@92a3a166a7f710a344a11bda0ad221e54583fccd (4.20; the same in
# create.go@d76df14ea3d7ff9916ea576b6335cd3a220cd1bf on 4.17); 4.21 grants "operator.openshift.io
# imagecontentsourcepolicies" instead (OCPBUGS-61491) --
# basenodeimagecommand.go@9d9df34c46c9deba8c291a2a084de5724c0bd820.
# The run grants what the oc of the cluster's release grants.
ICSP_RULE_FIXED_IN = (4, 21)
_CONFIG_RESOURCES = ["clusterversions", "infrastructures", "proxies", "imagedigestmirrorsets"]
_COMMON_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["machineconfiguration.openshift.io"], "resources": ["machineconfigs"], "verbs": ["get", "list"]},
    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["configmaps", "nodes", "pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "update"]},
]


def cluster_role_rules(cluster_minor: tuple[int, ...]) -> list[dict[str, Any]]:
    """The ClusterRole rules oc grants node-joiner on a cluster of release ``cluster_minor`` (e.g. (4, 18))."""
    if tuple(cluster_minor) >= ICSP_RULE_FIXED_IN:
        head = [
            {"apiGroups": ["config.openshift.io"], "resources": list(_CONFIG_RESOURCES), "verbs": ["get", "list"]},
            {
                "apiGroups": ["operator.openshift.io"],
                "resources": ["imagecontentsourcepolicies"],
                "verbs": ["get", "list"],
            },
        ]
    else:
        head = [
            {
                "apiGroups": ["config.openshift.io"],
                "resources": [*_CONFIG_RESOURCES, "imagecontentpolicies"],
                "verbs": ["get", "list"],
            }
        ]
    return head + [dict(rule) for rule in _COMMON_RULES]


def labels(run_id: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY, RUN_LABEL: run_id}


def namespace_manifest(run_id: str, owner: str | None = None) -> dict[str, Any]:
    """The run's namespace; ``owner`` (leftovers.owner_tag) tells a later run whether this one still runs."""
    # Let the pod land on any node, as oc does.
    annotations = {"openshift.io/node-selector": ""}
    if owner:
        annotations[OWNER_ANNOTATION] = owner
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"generateName": NAMESPACE_PREFIX, "labels": labels(run_id), "annotations": annotations},
    }


def owned_by_namespace(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """Owner reference that makes cluster-scoped objects go with the namespace."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "name": namespace["metadata"]["name"],
            "uid": namespace["metadata"]["uid"],
        }
    ]


def service_account_manifest(namespace: dict[str, Any], run_id: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace["metadata"]["name"], "labels": labels(run_id)},
    }


def cluster_role_manifest(namespace: dict[str, Any], run_id: str, cluster_minor: tuple[int, ...]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": namespace["metadata"]["name"],
            "labels": labels(run_id),
            "ownerReferences": owned_by_namespace(namespace),
        },
        "rules": cluster_role_rules(cluster_minor),
    }


def cluster_role_binding_manifest(namespace: dict[str, Any], run_id: str) -> dict[str, Any]:
    name = namespace["metadata"]["name"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": labels(run_id), "ownerReferences": owned_by_namespace(namespace)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": name}],
    }


def config_map_manifest(namespace: dict[str, Any], run_id: str, nodes_config_yaml: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": namespace["metadata"]["name"], "labels": labels(run_id)},
        "data": {"nodes-config.yaml": nodes_config_yaml},
    }


def _restricted_security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def proxy_env(proxy: dict[str, Any] | None) -> list[dict[str, str]]:
    """Pod environment for the cluster proxy (``Proxy/cluster`` status)."""
    env = []
    status = (proxy or {}).get("status") or {}
    for name, key in (("HTTP_PROXY", "httpProxy"), ("HTTPS_PROXY", "httpsProxy"), ("NO_PROXY", "noProxy")):
        if status.get(key):
            env.append({"name": name, "value": status[key]})
    return env


def node_joiner_command(pxe: bool, config_iso: bool = False) -> str:
    # --config-iso: the configuration-only image (4.18+, installer PR #9214), which oc never asks for --
    # openshift/installer pkg/nodejoiner/addnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2.
    flag = (" --pxe" if pxe else "") + (" --config-iso" if config_iso else "")
    # sleep keeps the container alive so the artifacts can be copied out.
    return "cp /config/nodes-config.yaml %s; HOME=%s node-joiner add-nodes%s --dir=%s --log-level=debug; sleep 600" % (
        ASSETS,
        ASSETS,
        flag,
        ASSETS,
    )


def _pod_manifest(
    namespace: dict[str, Any],
    run_id: str,
    name: str,
    container: dict[str, Any],
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A run-once pod of this run, restricted as the restricted-v2 SCC expects."""
    container = dict(container, securityContext=_restricted_security_context())
    spec: dict[str, Any] = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
    }
    if volumes:
        spec["volumes"] = volumes
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace["metadata"]["name"], "labels": labels(run_id)},
        "spec": spec,
    }


def node_joiner_pod_manifest(
    namespace: dict[str, Any],
    run_id: str,
    image: str,
    pxe: bool,
    proxy: dict[str, Any] | None,
    config_iso: bool = False,
) -> dict[str, Any]:
    container = {
        "name": POD,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/bash", "-c", node_joiner_command(pxe, config_iso)],
        "env": proxy_env(proxy),
        "volumeMounts": [
            {"name": "nodes-config", "mountPath": "/config"},
            {"name": "assets", "mountPath": ASSETS},
        ],
    }
    volumes = [
        {"name": "nodes-config", "configMap": {"name": CONFIGMAP}},
        {"name": "assets", "emptyDir": {"sizeLimit": "4Gi"}},
    ]
    return _pod_manifest(namespace, run_id, POD, container, volumes)


def release_pod_manifest(namespace: dict[str, Any], run_id: str, release_image: str) -> dict[str, Any]:
    """A short pod that runs the release image itself and prints its image references."""
    container = {"name": "release", "image": release_image, "command": ["/bin/sh", "-c", "cat %s" % IMAGE_REFERENCES]}
    return _pod_manifest(namespace, run_id, RELEASE_POD, container)


class ReportError(Day2Error):
    pass


def installer_image_from_configmap(configmap: dict[str, Any] | None) -> str | None:
    """The node-joiner image from ConfigMap installer-images, or None."""
    text = ((configmap or {}).get("data") or {}).get("images.json")
    if not text:
        return None
    try:
        return json.loads(text).get("installer") or None
    except (ValueError, AttributeError):
        return None


def node_joiner_image_from_references(text: str) -> str:
    """The ``baremetal-installer`` image from a release's image-references (an ImageStream JSON)."""
    try:
        stream = json.loads(text)
    except ValueError:
        raise ReportError("the release image printed no valid image-references document")
    for tag in (stream.get("spec") or {}).get("tags") or []:
        image = (tag.get("from") or {}).get("name") if tag.get("name") == NODE_JOINER_TAG else None
        if image:
            return str(image)
    raise ReportError("the release image-references list no %r image" % NODE_JOINER_TAG)


def parse_report(text: str | None) -> dict[str, Any] | None:
    """Return the report dict, or None while it is not written or not complete JSON yet."""
    if not text or not text.strip():
        return None
    try:
        report = json.loads(text)
    except ValueError:
        return None  # being written
    return report if isinstance(report, dict) else None


ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time: a stage (or the report) that has not ended


def _ended(value: Any) -> bool:
    return isinstance(value, str) and value != "" and not value.startswith("0001-01-01")


def report_finished(report: dict[str, Any] | None) -> bool:
    """True once node-joiner completed the report: its top-level ``end_time`` is no longer Go's zero time.

    oc waits for exactly that, then reads ``result`` -- openshift/oc
    pkg/cli/admin/nodeimage/create.go@9d9df34c46c9deba8c291a2a084de5724c0bd820 (``monitorWorkflowReport``).
    """
    return report is not None and _ended(report.get("end_time"))


def report_exit_code(report: dict[str, Any] | None) -> int | None:
    """``result.exit_code`` of a finished report; None when it ended without a result."""
    result = (report or {}).get("result")
    if not isinstance(result, dict):
        return None
    try:
        return int(result.get("exit_code") or 0)
    except (TypeError, ValueError):
        return None


def report_failed(report: dict[str, Any] | None) -> bool:
    return report_finished(report) and report_exit_code(report) != 0


# A node-joiner that stops before NewAddNodesCommand runs writes no exit_code: logrus prints
# "level=fatal" (main ends with logrus.Fatal on any error -- openshift/installer
# cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c) and cobra prints "Error: <error>", e.g.
# "Error: unknown flag: --pxe" -- spf13/cobra command.go@adbc8813901bba65827259daa8e22ff94ec1f30e.
_FATAL_LINE = re.compile(r"^(?:.*\blevel=fatal\b.*|Error: .*)$", re.MULTILINE)


def fatal_line(log_text: str | None) -> str | None:
    """The first line of a pod log that says node-joiner stopped (fatal or cobra error), or None."""
    match = _FATAL_LINE.search(log_text or "")
    return match.group(0).strip() if match else None


def ended_without_exit_code(line: str) -> str:
    hint = ""
    if "unknown flag" in line:
        hint = " This node-joiner does not know a flag it was given (the 4.17 node-joiner has no --pxe)."
    return "node-joiner stopped without writing %s/exit_code; its log says: %s.%s" % (ASSETS, line, hint)


def summarize_stages(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Flat list of stages and sub-stages: id, description, status (done, running, failed), times, result.

    ``result`` is the stage's own detail (node-joiner sets it on a few stages) and is kept when present.
    When the report failed, the last stage and its last sub-stage are the ones that failed.
    """
    rows: list[dict[str, Any]] = []
    failed = report_failed(report)

    def walk(stages: list[dict[str, Any]] | None, last_of_parent: bool) -> None:
        stages = stages or []
        for index, stage in enumerate(stages):
            last = last_of_parent and index == len(stages) - 1
            ended = _ended(stage.get("end_time"))
            row = {
                "id": stage.get("id"),
                "description": stage.get("description"),
                "status": "failed" if failed and last else ("done" if ended else "running"),
                "start_time": stage.get("start_time"),
                "end_time": stage.get("end_time") if ended else None,
            }
            if stage.get("result"):
                row["result"] = stage["result"]
            rows.append(row)
            walk(stage.get("sub_stages"), last)

    walk((report or {}).get("stages"), True)
    return rows


def failure_message(report: dict[str, Any] | None) -> str:
    result = (report or {}).get("result") or {}
    if not isinstance(result, dict) or not result:
        return "node-joiner completed its report (end_time %s) without a result" % (report or {}).get("end_time")
    detail = result.get("detailed_error_message") or ""
    message = result.get("error_message") or "node-joiner failed with exit code %s" % result.get("exit_code")
    failed = [stage for stage in summarize_stages(report) if stage["status"] == "failed"]
    where = " at stage %s (%s)" % (failed[-1]["id"], failed[-1]["description"]) if failed else ""
    return "node-joiner failed%s: %s%s" % (where, message, (" (%s)" % detail) if detail and detail != message else "")


def describe_failure(message: str, stages: list[dict[str, Any]], log_tail: str | None) -> str:
    """One message with what went wrong, the report stages so far and the tail of the pod log."""
    lines = [message]
    if stages:
        lines.append("node-joiner stages: " + ", ".join("%s %s" % (s["id"], s["status"]) for s in stages))
    if log_tail and log_tail.strip():
        lines.append("node-joiner pod log (last lines):\n" + log_tail.rstrip())
    return "\n".join(lines)


def iso_name(rpm_arch: str) -> str:
    return "node.%s.iso" % rpm_arch
