# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""join_workers' loop: follow every host's agent and approve its CSRs in one loop, each host on its own.

Every round (``wait_sleep``) polls the agents of the hosts that have not rebooted yet (a host whose agent does
not answer gets a TLS handshake on its kubelet port instead), then reads the CSRs and Nodes once and moves
every host on (``host_join`` names the phases):

- a host's first client CSR is approved only once its kubelet answers (the alert ``internal_error`` counts, as
  in openshift/installer pkg/agent/monitoraddnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c,
  isKubeletRunningOnNode) and the settle period has passed; CSRs created before the live ISO's agent last
  answered are not the installed system's;
- then every pending client CSR of the host with the one key is approved (``keys``); a second key, before or
  after an approval, stops that host at once;
- its serving CSR is approved as csr_approve's policy decides (``policy``);
- a host that never answers fails after ``boot_timeout``, the others go on; every host is approved as soon as
  it rebooted.

The API is a KubeCsrApi-like object (list_csrs, list_nodes, get_csr, approve); ``say`` prints one line.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339, utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.objects import condition_true
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.retry import is_transient
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.client import (
    AgentClient,
    AuthChoice,
    HostPoller,
    kubelet_state,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.progress import (
    NEVER_ANSWERED,
    Observation,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import AgentToken
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import policy
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import Context
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import PENDING, SERVING_SIGNER, parse_csr
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr_api import approval_body, by_name
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.host_join import (
    FAILED,
    HALF_JOINED,
    INSTALLING,
    JOINED,
    SETTLING,
    WAITING,
    HostJoin,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.keys import client_keys
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.node_marks import describe_marks, node_patch

APPROVED_BY = "openshift_agent.day2.join_workers"
# The agent's stages once the disk is written: a day-2 worker's stages end "Writing image to disk", "Waiting for
# control plane", "Rebooting", and the service stores its Rebooting as Done - openshift/assisted-service
# internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd (UpdateInstallProgress, WorkerStages).
DISK_WRITTEN_STAGES = ("Rebooting", "Done")
CONFLICT_RETRIES = 3


class JoinError(Day2Error):
    """The run failed (more hosts failed than allowed, or the API cannot be used); ``result`` says how far."""


@dataclasses.dataclass
class JoinOptions:
    settle_seconds: float = 10
    boot_timeout: float = 1800
    install_timeout: float = 5400
    join_timeout: float = 1800
    wait_sleep: float = 5
    validation_grace: int = 600
    clock_skew: float = 2
    max_failed_hosts: int = 0
    request_timeout: float = 5
    agent_port: int = 8090
    kubelet_port: int = 10250
    first_header: str | None = None


class JoinRun:
    """One run over ``hosts`` (dicts with name, address, addresses, mac_address)."""

    def __init__(
        self,
        hosts: list[dict[str, Any]],
        token: AgentToken | None,
        api: Any,
        options: JoinOptions,
        say: Callable[[str], None],
        server_offset: float = 0.0,
        sleep: Callable[[float], None] | None = None,
        now: Callable[[], datetime.datetime] = utcnow,
        on_disk_written: Callable[[str], str] | None = None,
        marks: dict[str, dict[str, Any]] | None = None,
        still_wanted: Callable[[], bool] | None = None,
    ) -> None:
        self.options = options
        # False once the run that started this loop is gone (ansible-playbook killed: its task worker lives in a
        # session of its own and would go on approving unattended); the loop then stops.
        self.still_wanted = still_wanted
        # Called once per host when its disk is written (the agent reports Rebooting, or the host runs its
        # installed system): the boot step's virtual CD is ejected then, not before (ejecting earlier breaks the
        # write). Returns what was done, for the progress line; raises Day2Error when it could not be done.
        self.on_disk_written = on_disk_written
        self._disk_written: set[str] = set()
        # Labels and taints per host (node_marks.marks_of): set as soon as its Node is registered, before it is
        # Ready; a host is joined only once its Node has them.
        self.marks = marks or {}
        self._marked: set[str] = set()
        self.api = api
        self.say = say
        self.server_offset = server_offset
        self._sleep = sleep or time.sleep
        self._now = now
        self.started = now()
        self.hosts = [HostJoin(host, options.agent_port, self.started) for host in hosts]
        auth = AuthChoice(token, options.first_header) if token is not None else None
        self._pollers = {
            host.name: HostPoller(
                AgentClient(host.address, options.agent_port, auth, options.request_timeout),
                host.name,
                host.progress.mac_address,
                options.kubelet_port,
            )
            for host in self.hosts
            if auth is not None
        }
        self.approved: list[dict[str, Any]] = []
        self.api_errors = 0
        self.rounds = 0
        self.warnings: list[str] = []

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        workers = max(1, min(32, len(self.hosts)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            while True:
                self.rounds += 1
                now = self._now()
                self._poll_agents(pool, now)
                self._look_at_cluster(self._now())
                self._after_disk_written(self._now())
                self._check_timeouts(self._now())
                self._show(self._now())
                if all(host.done for host in self.hosts):
                    break
                if self.still_wanted is not None and not self.still_wanted():
                    raise JoinError(
                        "the run that started this loop is gone (ansible-playbook was stopped): "
                        "stopping; run the playbook again to go on",
                        self.result(self._now()),
                    )
                self._sleep(self.options.wait_sleep)
        return self._finish(self._now())

    def _poll_agents(self, pool: ThreadPoolExecutor, now: datetime.datetime) -> None:
        polled = [host for host in self.hosts if not host.done and host.kubelet_at is None]
        for host, seen in zip(polled, pool.map(self._poll_one, polled)):
            host.progress.observe(seen, now)
            if host.progress.answered and host.phase == WAITING:
                host.set_phase(INSTALLING, now)
            if seen.kubelet:
                host.rebooted("its kubelet answers (%s)" % seen.kubelet, now)
                continue
            failure = host.progress.failure(self.options.validation_grace, now, "rebooted")
            if failure:
                host.fail(failure, now)

    def _poll_one(self, host: HostJoin) -> Observation:
        poller = self._pollers.get(host.name)
        if poller is not None:
            return poller.poll()
        # No agent token (the Secret is gone): only the kubelet port tells that the host rebooted.
        kubelet = kubelet_state(host.address, self.options.kubelet_port, self.options.request_timeout)
        return Observation("unreachable", "not asked (no agent token)", kubelet=kubelet)

    def _after_disk_written(self, now: datetime.datetime) -> None:
        if self.on_disk_written is None:
            return
        for host in self.hosts:
            written = host.progress.stage in DISK_WRITTEN_STAGES or host.kubelet_at is not None
            if host.name in self._disk_written or not written or host.phase == FAILED:
                continue
            self._disk_written.add(host.name)
            try:
                said = self.on_disk_written(host.name)
            except Day2Error as error:
                said = "could not eject the virtual CD: %s" % error.message
                self.warnings.append("%s: %s" % (host.name, said))
            self.say("%s %s: the disk is written; %s" % (format_rfc3339(now), host.name, said))

    def _mark(self, host: HostJoin, node: dict[str, Any] | None, now: datetime.datetime) -> None:
        """Give the host's Node its labels and taints (once it is registered); a conflict is retried next round."""
        wanted = self.marks.get(host.name)
        if node is None or wanted is None or host.name in self._marked:
            return
        patch = node_patch(node, wanted.get("labels"), wanted.get("taints"))
        if patch is not None:
            try:
                self.api.patch_node(host.name, patch)
            except ApiAccessError as error:
                if error.status != 409 and not is_transient(error.status):
                    raise JoinError(
                        "cannot set the labels and taints of Node %s: %s" % (host.name, error), self.result(now)
                    )
                return  # the next round reads the Node again
            self.say(
                "%s %s: labels and taints set on its Node (%s)"
                % (format_rfc3339(now), host.name, describe_marks(wanted))
            )
        self._marked.add(host.name)

    # -- the cluster -------------------------------------------------------------------------

    def _look_at_cluster(self, now: datetime.datetime) -> None:
        active = [host for host in self.hosts if not host.done]
        if not active:
            return
        try:
            items, _version = self.api.list_csrs()
            nodes = by_name(self.api.list_nodes())
        except ApiAccessError as error:
            if not is_transient(error.status):
                raise JoinError("cannot read CSRs and Nodes: %s" % error, self.result(now))
            self.api_errors += 1
            return
        server_now = now + datetime.timedelta(seconds=self.server_offset)
        skew = datetime.timedelta(seconds=self.options.clock_skew)
        expected = {
            host.name: ExpectedNode(host.name, host.addresses, (), host.not_before(self.server_offset))
            for host in self.hosts
        }
        evaluation = policy.decide(items, list(expected.values()), list(nodes), server_now, skew)
        if evaluation.flood.flood:
            for host in active:
                host.fail("flood guard: %s (docs/csr-approval.md)" % evaluation.flood.message, now)
            return
        parsed = [parse_csr(obj) for obj in items]
        objects = by_name(items)
        for host in active:
            self._mark(host, nodes.get(host.name), now)
            context = Context({host.name: expected[host.name]}, frozenset(), server_now, skew)
            self._move_on(host, nodes.get(host.name), client_keys(parsed, context, host.name), evaluation, objects, now)

    def _move_on(
        self,
        host: HostJoin,
        node: dict[str, Any] | None,
        keys: Any,
        evaluation: policy.Evaluation,
        objects: dict[str, dict[str, Any]],
        now: datetime.datetime,
    ) -> None:
        if node is not None:
            host.rebooted("its Node exists", now)
        elif keys.approved:
            host.rebooted("a client CSR of it is approved", now)
        problem = keys.problem(host.name)
        if problem:
            host.fail(problem, now)
            return
        if (
            node is not None
            and condition_true(node, "Ready")
            and host.name in self.marks
            and host.name not in self._marked
        ):
            host.waiting_for = "Node Ready; setting its labels and taints"
            return
        if node is not None and condition_true(node, "Ready"):
            host.node_ready = True
            host.waiting_for = None
            host.set_phase(JOINED, now)
            return
        if host.kubelet_at is None:
            if keys.pending:
                host.waiting_for = "client CSR %s pending; approved once its kubelet answers" % ", ".join(
                    str(csr.name) for csr in keys.pending
                )
            return
        if node is None and not keys.approved:
            settled_at = host.kubelet_at + datetime.timedelta(seconds=self.options.settle_seconds)
            host.set_phase(SETTLING, now)
            if now < settled_at:
                host.waiting_for = "settle period until %s (a second key stops the host)" % format_rfc3339(settled_at)
                return
            if not keys.to_approve:
                refused = "; ".join("%s: %s" % item for item in sorted(keys.refused.items()))
                host.waiting_for = "waiting for its kubelet's client CSR%s" % (
                    " (refused: %s)" % refused if refused else ""
                )
                return
            for csr in keys.to_approve:
                self._approve(host, objects[str(csr.name)], "client", now)
            host.waiting_for = "client certificate approved; waiting for the Node"
            return
        host.set_phase(HALF_JOINED, now)
        serving = [
            decision
            for decision in evaluation.decisions
            if decision.node == host.name and decision.signer == SERVING_SIGNER and decision.action == policy.APPROVE
        ]
        for decision in serving:
            self._approve(host, objects[str(decision.name)], "serving", now)
        host.waiting_for = (
            "waiting for its Node" if node is None else "Node NotReady; waiting for its serving CSR or Ready"
        )

    def _approve(self, host: HostJoin, listed: dict[str, Any], kind: str, now: datetime.datetime) -> None:
        """Approve one CSR after a fresh GET (never one that is no longer pending or changed)."""
        name = str((listed.get("metadata") or {}).get("name"))
        message = "Approved by %s: %s CSR of new host %s (kubelet answered, one public key)" % (
            APPROVED_BY,
            kind,
            host.name,
        )
        for _attempt in range(CONFLICT_RETRIES):
            try:
                fresh = self.api.get_csr(name)
                if fresh is None or fresh.get("spec") != listed.get("spec") or parse_csr(fresh).state != PENDING:
                    return
                moment = now + datetime.timedelta(seconds=self.server_offset)
                self.api.approve(name, approval_body(fresh, message, moment))
            except ApiAccessError as error:
                if error.status == 409:
                    continue
                if error.status == 404:
                    return
                if is_transient(error.status):
                    self.api_errors += 1
                    return  # still pending: the next round decides again
                raise JoinError(
                    "cannot approve CSR %s of %s: %s. The identity needs update on "
                    "certificatesigningrequests/approval and approve on the kubelet signers (docs/rbac.md)"
                    % (name, host.name, error),
                    self.result(now),
                )
            entry = {"name": name, "node": host.name, "kind": kind, "approved_at": format_rfc3339(now)}
            host.approved.append(entry)
            self.approved.append(entry)
            self.say("%s %s: approved %s CSR %s" % (format_rfc3339(now), host.name, kind, name))
            return

    # -- time and output ---------------------------------------------------------------------

    def _check_timeouts(self, now: datetime.datetime) -> None:
        elapsed = (now - self.started).total_seconds()
        options = self.options
        for host in self.hosts:
            if host.done:
                continue
            if not host.heard and elapsed >= options.boot_timeout:
                host.fail(
                    "%s within day2_boot_timeout (%d s): %s"
                    % (
                        "nothing answered",
                        options.boot_timeout,
                        NEVER_ANSWERED % (host.address, options.agent_port)
                        + "; its kubelet port %d did not answer either. Boot it (check its console) and run again"
                        % options.kubelet_port,
                    ),
                    now,
                )
            elif host.kubelet_at is None and elapsed >= options.install_timeout:
                host.fail(
                    "not rebooted into the installed system within %d s: %s"
                    % (options.install_timeout, host.progress.describe()),
                    now,
                )
            elif host.kubelet_at is not None and (now - host.kubelet_at).total_seconds() >= options.join_timeout:
                host.fail(
                    "not Ready within %d s after it rebooted (%s): %s"
                    % (options.join_timeout, host.rebooted_by, host.waiting_for or host.phase),
                    now,
                )

    def _show(self, now: datetime.datetime) -> None:
        for host in self.hosts:
            line = host.status_line()
            if line:
                self.say("%s %s: %s" % (format_rfc3339(now), host.name, line))

    def result(self, now: datetime.datetime) -> dict[str, Any]:
        return {
            "changed": bool(self.approved),
            "hosts": {host.name: host.summary(now) for host in self.hosts},
            "approved": list(self.approved),
            "joined": sorted(host.name for host in self.hosts if host.phase == JOINED),
            "failed_hosts": sorted(host.name for host in self.hosts if host.phase == FAILED),
            "duration": round((now - self.started).total_seconds(), 1),
            "rounds": self.rounds,
            "api_errors": self.api_errors,
            "server_clock_offset": round(self.server_offset, 3),
            "warnings": list(self.warnings),
        }

    def _finish(self, now: datetime.datetime) -> dict[str, Any]:
        for host in self.hosts:
            self.say("summary %s" % host.summary_line(now))
        result = self.result(now)
        failed = [host for host in self.hosts if host.phase == FAILED]
        if len(failed) > self.options.max_failed_hosts:
            raise JoinError(
                "%d of %d host(s) failed (day2_max_failed_hosts is %d), %d joined: %s"
                % (
                    len(failed),
                    len(self.hosts),
                    self.options.max_failed_hosts,
                    len(result["joined"]),
                    " | ".join("%s: %s" % (host.name, host.failure) for host in failed),
                ),
                result,
            )
        if failed:
            result["warnings"].append(
                "%d host(s) failed, within day2_max_failed_hosts (%d): %s"
                % (len(failed), self.options.max_failed_hosts, ", ".join(host.name for host in failed))
            )
        return result
