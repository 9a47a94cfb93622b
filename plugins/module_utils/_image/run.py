# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Drive one node-joiner run in the cluster and copy its artifacts back, verified.

The run creates a namespace (and the objects of node_joiner.py) and always deletes it again, on failure too,
unless the caller keeps it for debugging.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import tempfile
from types import TracebackType
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import Deadline
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    ApiClient,
    core_target,
    group_target,
    with_query,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import pod_exec as _pod_exec

IMAGE_PULL_REASONS = (
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
)
LOG_TAIL_LINES = 40
_SHA256_LINE = re.compile(r"^([0-9a-f]{64})\s")
# node-joiner 4.17 writes only exit_code, 4.18 and later report.json too -- openshift/installer
# pkg/nodejoiner/addnodes.go@1b10d1c09e8015e354af740458d30ceafd2ffb80 (4.17), @de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2.
REPORT_SINCE = (4, 18)
_RBAC = "rbac.authorization.k8s.io"


class RunError(Day2Error):
    """A run failed; ``stages`` and ``log_tail`` (also in the partial result) say how far node-joiner got."""

    def __init__(self, message: str, stages: list[dict[str, Any]] | None = None, log_tail: str | None = None) -> None:
        super().__init__(message, {"stages": stages or [], "log_tail": log_tail})
        self.stages = stages or []
        self.log_tail = log_tail


class NodeJoinerRun:
    """One namespace, one or more pods, their artifacts; use as a context manager."""

    def __init__(
        self,
        api: ApiClient,
        configuration: Any,
        run_id: str,
        proxy: dict[str, Any] | None = None,
        wait_sleep: float = 5,
        pod_start_timeout: float = 900,
        build_timeout: float = 1800,
        keep_on_failure: bool = False,
        sleeper: Callable[[float], Any] | None = None,
        cluster_minor: tuple[int, int] = (4, 21),
        owner: str | None = None,
    ) -> None:
        self.api = api
        self.owner = owner
        self.cluster_minor = tuple(cluster_minor)
        self.configuration = configuration
        self.run_id = run_id
        self.proxy = proxy
        self.wait_sleep = wait_sleep
        self.pod_start_timeout = pod_start_timeout
        self.build_timeout = build_timeout
        self.keep_on_failure = keep_on_failure
        self._sleeper = sleeper
        self.namespace: dict[str, Any] | None = None
        self.cleaned_up = False
        self.cleanup_failures: list[str] = []
        self.left: list[str] = []  # Kind/name of what the clean-up could not delete
        self.kept = False

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> NodeJoinerRun:
        self.namespace = self.api.create(
            core_target("namespaces", verb="create"), nj.namespace_manifest(self.run_id, self.owner)
        )
        try:
            self._create_rbac()
        except BaseException:
            # __exit__ does not run when __enter__ fails: clean up the namespace here.
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _create_rbac(self) -> None:
        name = self.ns_name
        self.api.create(
            core_target("serviceaccounts", namespace=name, verb="create"),
            nj.service_account_manifest(self._created_namespace(), self.run_id),
        )
        self.api.create(
            group_target("rbac.authorization.k8s.io", "v1", "clusterroles", verb="create"),
            nj.cluster_role_manifest(self._created_namespace(), self.run_id, self.cluster_minor),
        )
        self.api.create(
            group_target("rbac.authorization.k8s.io", "v1", "clusterrolebindings", verb="create"),
            nj.cluster_role_binding_manifest(self._created_namespace(), self.run_id),
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # keep_on_failure keeps a failed run for debugging; a stopped one (SIGTERM, Ctrl-C) is always removed.
        if exc_type is not None and issubclass(exc_type, Exception) and self.keep_on_failure:
            self.kept = True
        else:
            self.cleanup()

    def _created_namespace(self) -> dict[str, Any]:
        if self.namespace is None:
            raise RunError("the node-joiner run has no namespace yet: use it as a context manager")
        return self.namespace

    @property
    def ns_name(self) -> str | None:
        return self.namespace["metadata"]["name"] if self.namespace else None

    def cleanup(self) -> None:
        """Delete everything this run created; the namespace takes its pods and config map with it."""
        if not self.namespace:
            return
        name = self.ns_name
        # The owner references make the cluster-scoped RBAC go with the namespace; delete it
        # explicitly too, so nothing lingers while the garbage collector catches up.
        for kind, target in (
            ("ClusterRoleBinding", group_target(_RBAC, "v1", "clusterrolebindings", name, verb="delete")),
            ("ClusterRole", group_target(_RBAC, "v1", "clusterroles", name, verb="delete")),
            ("Namespace", core_target("namespaces", name, verb="delete")),
        ):
            try:
                self.api.delete(target)
            except ApiAccessError as error:
                self.cleanup_failures.append(str(error))
                self.left.append("%s/%s" % (kind, name))
        self.cleaned_up = not self.cleanup_failures

    def _sleep(self, deadline: Deadline, seconds: float) -> None:
        if self._sleeper:
            self._sleeper(min(seconds, deadline.remaining()))
        else:
            deadline.sleep(seconds)

    # --- pods ------------------------------------------------------------------------------

    def pod_log_tail(self, pod: str, lines: int = LOG_TAIL_LINES) -> str:
        try:
            target = with_query(core_target("pods", pod + "/log", self.ns_name), tailLines=lines)
            return self.api.request("GET", target, raw=True) or ""
        except ApiAccessError as error:
            return "(pod log unavailable: %s)" % error

    def wait_started(self, pod: str, image: str, until_phases: tuple[str, ...] = ("Running", "Succeeded")) -> str:
        """Wait until the pod runs; image-pull errors are retried until the start timeout."""
        deadline = Deadline(self.pod_start_timeout)
        last_waiting = None
        while True:
            obj = self.api.get(core_target("pods", pod, self.ns_name))
            phase = ((obj or {}).get("status") or {}).get("phase")
            if phase in until_phases:
                return phase
            if phase == "Failed":
                raise RunError(
                    "pod %s/%s failed before it started its work" % (self.ns_name, pod), log_tail=self.pod_log_tail(pod)
                )
            for status in ((obj or {}).get("status") or {}).get("containerStatuses") or []:
                waiting = (status.get("state") or {}).get("waiting") or {}
                if waiting.get("reason"):
                    last_waiting = waiting
            if deadline.expired():
                if last_waiting and last_waiting.get("reason") in IMAGE_PULL_REASONS:
                    raise RunError(
                        "image pull failure: pod %s/%s could not pull %s for %ss (%s: %s). Check that the image "
                        "exists, that the cluster pull secret covers its registry, and for a disconnected cluster "
                        "that it is mirrored (ImageDigestMirrorSet); or pass node_joiner_image."
                        % (
                            self.ns_name,
                            pod,
                            image,
                            self.pod_start_timeout,
                            last_waiting.get("reason"),
                            last_waiting.get("message", ""),
                        )
                    )
                raise RunError(
                    "pod %s/%s did not start within %ss (phase %s%s)"
                    % (
                        self.ns_name,
                        pod,
                        self.pod_start_timeout,
                        phase,
                        ", %s" % last_waiting.get("reason") if last_waiting else "",
                    )
                )
            self._sleep(deadline, self.wait_sleep)

    def exec(self, pod: str, container: str, command: list[str], timeout: float = 120) -> _pod_exec.ExecResult:
        try:
            return _pod_exec.run(self.configuration, self.ns_name, pod, container, command, timeout=timeout)
        except _pod_exec.ExecError as error:
            raise RunError(str(error))

    # --- node-joiner image -----------------------------------------------------------------

    def image_from_release(self, release_image: str) -> str:
        """Run the release image once and read its image-references (no registry access needed here)."""
        self.api.create(
            core_target("pods", namespace=self.ns_name, verb="create"),
            nj.release_pod_manifest(self._created_namespace(), self.run_id, release_image),
        )
        deadline = Deadline(self.pod_start_timeout)
        self.wait_started(nj.RELEASE_POD, release_image, until_phases=("Succeeded",))
        text = self.pod_log_tail(nj.RELEASE_POD, lines=100000)
        try:
            return nj.node_joiner_image_from_references(text)
        except nj.ReportError as error:
            raise RunError(
                "cannot find the node-joiner image in release %s: %s (after %.0fs)"
                % (release_image, error, deadline.elapsed())
            )

    # --- the build -------------------------------------------------------------------------

    def build(self, image: str, nodes_config_yaml: str, pxe: bool, config_iso: bool = False) -> list[dict[str, Any]]:
        """Run node-joiner with ``image`` on ``nodes_config_yaml`` until it is done; return its report stages.

        Raises RunError with the stages and the pod log tail when it fails.
        """
        self.start_build(image, nodes_config_yaml, pxe, config_iso)
        report, exit_code = self.wait_report(exit_code_only=self.cluster_minor < REPORT_SINCE)
        stages = nj.summarize_stages(report)
        if exit_code != 0:
            message = nj.failure_message(report) if report else "node-joiner exited with code %s" % exit_code
            raise RunError(message, stages=stages, log_tail=self.pod_log_tail(nj.POD))
        return stages

    def start_build(self, image: str, nodes_config_yaml: str, pxe: bool, config_iso: bool = False) -> None:
        self.api.create(
            core_target("configmaps", namespace=self.ns_name, verb="create"),
            nj.config_map_manifest(self._created_namespace(), self.run_id, nodes_config_yaml),
        )
        self.api.create(
            core_target("pods", namespace=self.ns_name, verb="create"),
            nj.node_joiner_pod_manifest(self._created_namespace(), self.run_id, image, pxe, self.proxy, config_iso),
        )
        self.wait_started(nj.POD, image, until_phases=("Running",))

    def _exit_code(self) -> int | None:
        """The number in /assets/exit_code, or None while node-joiner has not written it."""
        result = self.exec(nj.POD, nj.POD, ["cat", nj.ASSETS + "/exit_code"])
        text = result.stdout.decode("utf-8", "replace").strip()
        return int(text) if result.returncode == 0 and text.lstrip("-").isdigit() else None

    def wait_report(self, exit_code_only: bool = False) -> tuple[dict[str, Any] | None, int | None]:
        """Wait until node-joiner is done, as oc does; return (report or None, exit code or None).

        From 4.18: until report.json's top-level end_time is set, then its result.exit_code (None when it has
        no result). Before 4.18 (``exit_code_only``): until /assets/exit_code exists; a pod log that shows
        node-joiner stopped without writing it (a fatal line, a cobra error) fails at once -- openshift/oc
        pkg/cli/admin/nodeimage/create.go@9d9df34c46c9deba8c291a2a084de5724c0bd820 (``waitForCompletion``).
        """
        deadline = Deadline(self.build_timeout)
        report = None
        while True:
            if exit_code_only:
                code = self._exit_code()
                if code is not None:
                    return None, code
                log = self.pod_log_tail(nj.POD)
                line = nj.fatal_line(log)
                if line:
                    code = self._exit_code()  # a failed run writes exit_code just before its fatal line
                    if code is not None:
                        return None, code
                    raise RunError(nj.ended_without_exit_code(line), log_tail=log)
            else:
                result = self.exec(nj.POD, nj.POD, ["cat", nj.ASSETS + "/report.json"])
                if result.returncode == 0:
                    report = nj.parse_report(result.stdout.decode("utf-8", "replace")) or report
                if nj.report_finished(report):
                    return report, nj.report_exit_code(report)
            pod = self.api.get(core_target("pods", nj.POD, self.ns_name))
            phase = ((pod or {}).get("status") or {}).get("phase")
            if phase in ("Failed", "Succeeded"):
                raise RunError(
                    "the node-joiner pod ended (%s) without a result" % phase,
                    stages=nj.summarize_stages(report),
                    log_tail=self.pod_log_tail(nj.POD),
                )
            if deadline.expired():
                raise RunError(
                    "node-joiner did not finish within build_timeout (%ss)" % self.build_timeout,
                    stages=nj.summarize_stages(report),
                    log_tail=self.pod_log_tail(nj.POD),
                )
            self._sleep(deadline, self.wait_sleep)

    def remote_sha256(self, path: str) -> str:
        result = self.exec(nj.POD, nj.POD, ["sha256sum", path])
        match = _SHA256_LINE.match(result.stdout.decode("utf-8", "replace"))
        if result.returncode != 0 or not match:
            raise RunError(
                "cannot checksum %s in the node-joiner pod: %s"
                % (path, result.stderr.decode("utf-8", "replace").strip() or "no sha256sum output")
            )
        return match.group(1)

    def list_dir(self, path: str) -> list[str]:
        result = self.exec(nj.POD, nj.POD, ["ls", path])
        if result.returncode != 0:
            raise RunError(
                "cannot list %s in the node-joiner pod: %s" % (path, result.stderr.decode("utf-8", "replace").strip())
            )
        return sorted(line.strip() for line in result.stdout.decode("utf-8", "replace").splitlines() if line.strip())

    def fetch(
        self, remote_path: str, dest_path: str, finish: Callable[[str], Any] | None = None, attempts: int = 2
    ) -> tuple[int, str]:
        """Copy a file out of the pod into ``dest_path`` atomically, verified by sha256.

        ``finish(temp_path)`` may edit the verified copy before it is renamed into place.
        A broken transfer or a checksum mismatch is retried once. Returns (size, sha256 of the copy
        as received).
        """
        expected = self.remote_sha256(remote_path)
        directory = os.path.dirname(os.path.abspath(dest_path))
        problem = None
        for _attempt in range(attempts):
            fd, temp_path = tempfile.mkstemp(prefix=".%s." % os.path.basename(dest_path), suffix=".part", dir=directory)
            try:
                os.fchmod(fd, 0o600)  # the artifacts carry the pull secret and the agent token
                with os.fdopen(fd, "wb") as out:
                    size, digest = _pod_exec.copy_file(
                        self.configuration, self.ns_name, nj.POD, nj.POD, remote_path, out, timeout=self.build_timeout
                    )
                    out.flush()
                    os.fsync(out.fileno())
                if digest != expected:
                    problem = "checksum mismatch for %s: the pod says %s, %d bytes received hash to %s" % (
                        remote_path,
                        expected,
                        size,
                        digest,
                    )
                    raise _Retry()
                if finish:
                    finish(temp_path)
                os.replace(temp_path, dest_path)
                return size, digest
            except _Retry:
                _remove(temp_path)
            except _pod_exec.ExecError as error:
                _remove(temp_path)
                problem = "transfer of %s interrupted: %s" % (remote_path, error)
            except OSError as error:
                _remove(temp_path)
                if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                    raise RunError(
                        "no space left to write %s in %s (%s); free space there or choose another dest. "
                        "Nothing partial was left." % (os.path.basename(dest_path), directory, error.strerror)
                    )
                raise
            except BaseException:
                _remove(temp_path)
                raise
        raise RunError("%s (after %d attempts)" % (problem, attempts))


class _Retry(Exception):  # internal: never leaves fetch()
    pass


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
