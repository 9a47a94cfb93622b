# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What earlier runs left behind, found and removed before a run builds: node-joiner objects in the cluster and
partial files in ``dest``.

A run deletes its namespace, ClusterRole and ClusterRoleBinding at its end, and on SIGTERM too; a run killed
outright (SIGKILL, a crash of the controller) cannot. oc relies on the namespace's owner reference for the
cluster-scoped RBAC and deletes the namespace when it is done, with no look for earlier runs --
openshift/oc pkg/cli/admin/nodeimage/basenodeimagecommand.go@9d9df34c46c9deba8c291a2a084de5724c0bd820. Here every
object of a run carries the labels of node_joiner.labels(), so the next run finds them by label. A run still
going (another playbook on the same cluster) is not touched: its namespace names its owner (host, process and
the process's start time, annotation OWNER_ANNOTATION); a namespace of a process of this host that is gone is
left over at once, one of another host only when it is older than any run can last.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
from typing import Any
from urllib.parse import quote

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import dig, group_target, with_query
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj

# Partial files of an interrupted transfer (pod_exec.fetch: ".<name>.<random>.part") and sidecar writes (".tmp").
PARTIAL_SUFFIXES = (".part", ".tmp")


class LeftoverError(Day2Error):
    """Objects of earlier runs that could not be removed; ``objects`` names them (Kind/name)."""

    def __init__(self, message: str, objects: list[str]) -> None:
        super().__init__(message, {"leftovers": objects})
        self.objects = objects


def _process_start(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat), "" if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_tag(pid: int | None = None) -> str:
    """``<host> <pid> <start>`` of this process: what a run writes into its namespace's OWNER_ANNOTATION."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()} {pid} {_process_start(pid)}"


def owner_alive(tag: str | None, hostname: str | None = None) -> bool | None:
    """True when the process ``tag`` names still runs, False when it is gone, None when this host cannot tell
    (another host, no tag)."""
    parts = (tag or "").split()
    if len(parts) < 2 or parts[0] != (hostname or socket.gethostname()) or not parts[1].isdigit():
        return None
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a process of another user: it exists
    return len(parts) < 3 or _process_start(pid) == parts[2]


def is_left_over(namespace: dict[str, Any], now: datetime.datetime, max_age: float) -> bool:
    """Whether the run of ``namespace`` is over: its process is gone, or (unknown) it is older than ``max_age``."""
    alive = owner_alive(dig(namespace, "metadata", "annotations", nj.OWNER_ANNOTATION))
    if alive is not None:
        return not alive
    created = parse_rfc3339(dig(namespace, "metadata", "creationTimestamp", default=""))
    return created is None or (now - created).total_seconds() > max_age


def _list(api: k8s.ApiClient, group: str, resource: str) -> list[dict[str, Any]]:
    """The objects of ``resource`` labelled as a run's (managed by this collection, with a run label)."""
    selector = quote(f"{nj.MANAGED_BY_LABEL}={nj.MANAGED_BY},{nj.RUN_LABEL}", safe="")
    items = dig(api.get(with_query(group_target(group, "v1", resource), labelSelector=selector)), "items", default=[])
    return [item for item in items if dig(item, "metadata", "name", default="").startswith(nj.NAMESPACE_PREFIX)]


def find(api: k8s.ApiClient, now: datetime.datetime, max_age: float) -> list[tuple[str, str]]:
    """(kind, name) of every object of a finished run, namespaces last: namespaces left over, and the
    ClusterRoles and ClusterRoleBindings whose namespace is left over or gone."""
    listed = {kind: _list(api, group, resource) for kind, group, resource in nj.RUN_KINDS}
    # A namespace already being deleted is neither stale nor live: it is going.
    running = [ns for ns in listed["Namespace"] if not dig(ns, "metadata", "deletionTimestamp")]
    stale = {ns["metadata"]["name"] for ns in running if is_left_over(ns, now, max_age)}
    live = {ns["metadata"]["name"] for ns in running} - stale
    return [
        (kind, item["metadata"]["name"])
        for kind, _group, _resource in nj.RUN_KINDS
        for item in listed[kind]
        if (item["metadata"]["name"] in stale if kind == "Namespace" else item["metadata"]["name"] not in live)
    ]


def remove(api: k8s.ApiClient, found: list[tuple[str, str]]) -> list[str]:
    """Delete what :func:`find` found; the names removed (Kind/name). Raises LeftoverError naming every object
    that could not be removed, with the reason and how to remove it by hand."""
    removed, failures = nj.delete_run_objects(api, found)
    if failures:
        names, reasons = [name for name, _reason in failures], "; ".join(f"{n}: {why}" for n, why in failures)
        raise LeftoverError(
            f"cannot remove what earlier node-joiner runs left in the cluster: {reasons}. Nothing was built. Remove "
            f"them by hand (oc delete {delete_command(names)}), or give this identity the permission named, then run "
            "again.",
            names,
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
    found = [os.path.join(dest, name) for name in names if name.startswith((".node.", f".{nj.CONFIG_ISO}."))]
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
