# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""csr_approve's run: feed the policy every CSR of the cluster, approve what it accepts, wait for the hosts.

CsrApprover keeps a cache of the CSRs (``csr_api.CsrCache``) current through a list and a watch (polling when
the watch breaks), runs the policy (``policy.decide``) at every change and wake-up, carries out its ``approve``
decisions through the /approval subresource and follows the expected hosts (``node_state``) until they are
done. It talks to the cluster only through a KubeCsrApi-like object (``csr_api``). ``run`` is the module's one
entry point.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import (
    Deadline,
    format_rfc3339,
    utcnow,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError, connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import HAS_NETADDR, NETADDR_IMPORT_ERROR
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.retry import is_transient
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import policy
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import DEFAULT_CLOCK_SKEW
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import (
    CLIENT_SIGNER,
    CRYPTOGRAPHY_IMPORT_ERROR,
    HAS_CRYPTOGRAPHY,
    PENDING,
    parse_csr,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr_api import (
    CsrCache,
    KubeCsrApi,
    WatchBroken,
    approval_body,
    by_name,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode, expected_nodes
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.flood import (
    FLOOD_MINIMUM,
    FLOOD_PER_NODE,
    flood_threshold,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.node_state import (
    NOT_PENDING_REASONS,
    WAIT_FOR_CHOICES,
    NodeStates,
)

APPROVED_BY = "openshift_agent.day2.csr_approve"
# A 409 means the object changed between our read and our write (a kubelet or the
# signer updated its status). The spec is immutable, so a fresh read and one more
# try almost always succeed; give up on this CSR for this round after a few.
CONFLICT_RETRIES = 3
# Skip reasons that follow from this run's own approval of a host (its Node now exists, it has its
# certificate): they never replace a reason reported for the same CSR before that approval.
AFTER_APPROVAL_REASONS = ("node-exists", "node-already-approved")


class CsrApproveError(Day2Error):
    """The run failed; ``result`` holds what was done and seen so far."""


def run(module: Any) -> dict[str, Any]:
    """csr_approve: check the libraries and the nodes option, connect, approve and wait; the module's result."""
    for present, library, import_error in (
        (HAS_CRYPTOGRAPHY, "cryptography", CRYPTOGRAPHY_IMPORT_ERROR),
        (HAS_NETADDR, "netaddr", NETADDR_IMPORT_ERROR),
    ):
        if not present:
            cause = (import_error or "").strip().splitlines()[-1:] or ["not importable"]
            raise Day2Error(
                "the Python library %s is missing on the host that runs the module (%s); install it there, "
                "for example with pip install %s" % (library, cause[0], library)
            )
    params = module.params
    expected = expected_nodes(params["nodes"])
    client, api_client = connect(module)
    approver = CsrApprover(
        KubeCsrApi(api_client, client.client),
        expected,
        wait_for=params["wait_for"],
        wait_timeout=params["wait_timeout"],
        wait_sleep=params["wait_sleep"],
        check_mode=module.check_mode,
        clock_skew=datetime.timedelta(seconds=params["clock_skew"]),
        max_pending=params["max_pending"],
    )
    return approver.run()


class CsrApprover:
    """Approve the CSRs the policy accepts and follow the expected hosts.

    api: a KubeCsrApi or a fake with its five methods. expected: ExpectedNode list (expected_nodes).
    max_pending: flood limit (None: the policy's). monotonic/sleep/now: clocks, replaceable in tests.
    """

    def __init__(
        self,
        api: KubeCsrApi,
        expected: list[ExpectedNode],
        wait_for: str = "ready",
        wait_timeout: float = 1800,
        wait_sleep: float = 10,
        check_mode: bool = False,
        clock_skew: datetime.timedelta = DEFAULT_CLOCK_SKEW,
        max_pending: int | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime.datetime] = utcnow,
    ) -> None:
        if wait_for not in WAIT_FOR_CHOICES:
            raise InputError("wait_for must be one of %s, found %r" % (", ".join(WAIT_FOR_CHOICES), wait_for))
        policy_limit = flood_threshold(len(expected))
        if max_pending is not None and not 0 <= max_pending <= policy_limit:
            raise InputError(
                "max_pending=%s: expected a number from 0 to %d, the policy limit for %d hosts (max(%d, %d x hosts)); "
                "the limit can only be tightened"
                % (max_pending, policy_limit, len(expected), FLOOD_MINIMUM, FLOOD_PER_NODE)
            )
        self.api = api
        self.expected = expected
        self.wait_sleep = max(1, int(wait_sleep))
        self.check_mode = check_mode
        self.clock_skew = clock_skew
        self.max_pending = policy_limit if max_pending is None else max_pending
        self._monotonic = monotonic
        self._now = now
        self._deadline = Deadline(wait_timeout, clock=monotonic, sleeper=sleep)

        self.csrs = CsrCache()
        self._node_objects: dict[str, dict[str, Any]] = {}  # name -> Node object
        self._approved_here: dict[str, policy.Decision] = {}  # CSRs approved by this run
        self.approved: list[dict[str, Any]] = []
        self.would_approve: dict[str, dict[str, Any]] = {}
        self.skipped: dict[str, dict[str, Any]] = {}
        self.warnings: list[str] = []
        self.nodes = NodeStates(expected, wait_for, clock_skew)
        self.watch_restarts = 0
        self.api_errors = 0
        self._watch_enabled = True

    # -------------------------------------------------------- public

    def run(self) -> dict[str, Any]:
        """Approve and wait; return the result dict or raise CsrApproveError with it."""
        self._refresh_with_retry()
        self._evaluate()
        if self.check_mode:
            return self.result()
        while not self.nodes.finished():
            if self._deadline.expired():
                raise CsrApproveError(self.nodes.timeout_message(self._deadline.seconds), self.result())
            if self._watch_enabled and self.csrs.resource_version:
                try:
                    self._follow_watch()
                    if not self.nodes.finished():
                        self._evaluate()  # the periodic wake-up: Nodes and time-based rules
                    continue
                except (WatchBroken, OSError) as error:
                    self._watch_broke(error)
            # Polling: wait, then a fresh list (which also gives the watch a new start).
            self._deadline.sleep(self.wait_sleep)
            if self._refresh_with_retry(fail_on_timeout=False):
                self._evaluate()
        blocked = self.nodes.blocked()
        if blocked:
            raise CsrApproveError(
                "these hosts cannot join, the others are done: %s" % " | ".join(s.describe() for s in blocked),
                self.result(),
            )
        return self.result()

    def result(self) -> dict[str, Any]:
        result = {
            "changed": bool(self.would_approve) if self.check_mode else bool(self.approved),
            "approved": list(self.approved),
            # Ansible reserves the result key `skipped` (a bool), hence skipped_csrs.
            "skipped_csrs": [self.skipped[name] for name in sorted(self.skipped)],
            "nodes": self.nodes.to_list(),
            "duration": round(self._deadline.elapsed(), 3),
            "watch_restarts": self.watch_restarts,
            "warnings": self.warnings + self.nodes.warnings(),
        }
        if self.check_mode:
            result["would_approve"] = [self.would_approve[name] for name in sorted(self.would_approve)]
        return result

    # -------------------------------------------------------- reading

    def _refresh_with_retry(self, fail_on_timeout: bool = True) -> bool:
        """A fresh CSR list; transient API failures are retried every wait_sleep until the deadline."""
        while True:
            try:
                self.csrs.replace(*self.api.list_csrs())
                return True
            except ApiAccessError as error:
                if not is_transient(error.status):
                    raise CsrApproveError("cannot list CSRs: %s" % error, self.result())
                self.api_errors += 1
                if self._deadline.expired():
                    if fail_on_timeout:
                        raise CsrApproveError("cannot list CSRs until the timeout: %s" % error, self.result())
                    return False
                self._deadline.sleep(self.wait_sleep)

    def _list_nodes(self) -> None:
        try:
            self._node_objects = by_name(self.api.list_nodes())
        except ApiAccessError as error:
            if not is_transient(error.status):
                raise CsrApproveError("cannot list Nodes: %s" % error, self.result())
            self.api_errors += 1  # keep the last known Nodes; the next wake-up reads again

    # -------------------------------------------------------- watching

    def _follow_watch(self) -> None:
        """Handle watch events until the server ends the watch, everything is done or time is up."""
        timeout = max(1, int(min(self.wait_sleep, max(1.0, self._deadline.remaining()))))
        started = self._monotonic()
        seen = 0
        events = self.api.watch_csrs(str(self.csrs.resource_version), timeout)
        try:
            for event in events:
                seen += 1
                if self.csrs.apply(event):
                    self._evaluate()
                    if self.nodes.finished():
                        return
                if self._deadline.expired():
                    return
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        if not seen and self._monotonic() - started < 1:
            # A server that ends every watch at once would make this loop spin: poll instead.
            raise WatchBroken("the CSR watch ended immediately without events")

    def _watch_broke(self, error: Exception) -> None:
        self.watch_restarts += 1
        if getattr(error, "status", None) in (401, 403):
            self._watch_enabled = False
            self.warnings.append(
                "cannot watch CSRs (%s); polling every %ss instead. Grant verb watch on "
                "certificatesigningrequests for approvals within a second (docs/csr-approval.md)"
                % (error, self.wait_sleep)
            )

    # -------------------------------------------------------- deciding

    def _evaluate(self) -> None:
        """Run the policy over every CSR, approve what it accepts, update the host states."""
        self._list_nodes()
        now = self._now()
        evaluation = policy.decide(
            list(self.csrs.objects.values()),
            self.expected,
            list(self._node_objects),
            now,
            self.clock_skew,
            flood_limit=self.max_pending,
        )
        if evaluation.flood.flood:
            raise CsrApproveError(
                "flood guard: %d pending CSRs name the %d expected hosts within the last hour (limit %d, see "
                "docs/csr-approval.md); approving nothing until someone looks"
                % (evaluation.flood.count, len(self.expected), self.max_pending),
                self.result(),
            )
        for decision in evaluation.decisions:
            if decision.action == policy.APPROVE:
                self._carry_out(decision, now)
            elif decision.reason not in NOT_PENDING_REASONS:
                self._record_skip(decision)
        self.nodes.update(evaluation.decisions, self._node_objects, self.csrs.objects, self._approved_here)

    def _record_skip(self, decision: policy.Decision) -> None:
        name = str(decision.name)
        reason, message = decision.reason, decision.message
        joined_with = self._client_approved_here(decision.node)
        if reason in AFTER_APPROVAL_REASONS and joined_with:
            # These reasons only say that this run approved the host. A reason given before
            # (superseded, a failed check) is still true and more telling, so it stays; and
            # "node already exists, see replace_worker.yml" would be wrong for a Node we let in.
            if name in self.skipped:
                return
            if reason == "node-exists":
                reason = "node-already-approved"
                message = (
                    "the client CSR %s of %s was approved by this run and its Node exists; "
                    "a second client certificate is not needed" % (joined_with, decision.node)
                )
        self.skipped[name] = {
            "name": decision.name,
            "node": decision.node,
            "signer": decision.signer,
            "reason": reason,
            "message": message,
            "created": decision.created,
        }

    def _client_approved_here(self, node: str | None) -> str | None:
        """The name of the client CSR of node this run approved, or None."""
        for name, decision in self._approved_here.items():
            if decision.node == node and decision.signer == CLIENT_SIGNER:
                return name
        return None

    def _carry_out(self, decision: policy.Decision, now: datetime.datetime) -> None:
        name = str(decision.name)
        entry = {"name": decision.name, "node": decision.node, "signer": decision.signer, "created": decision.created}
        if self.check_mode:
            self.would_approve[name] = entry
            return
        approved = self._approve(decision, now)
        if approved is None:
            return
        self.csrs.objects[name] = approved
        self._approved_here[name] = decision
        self.skipped.pop(name, None)
        entry["approved_at"] = format_rfc3339(now)
        self.approved.append(entry)

    def _approve(self, decision: policy.Decision, now: datetime.datetime) -> dict[str, Any] | None:
        """PUT the approval; on 409 read the CSR again and retry. None when it was not approved."""
        message = "Approved by %s: %s (expected node %s)" % (APPROVED_BY, decision.message, decision.node)
        try:
            return self._approve_with_conflict_retries(str(decision.name), message, now)
        except ApiAccessError as error:
            if not is_transient(error.status):
                raise CsrApproveError(
                    "cannot approve CSR %s of %s: %s. The identity needs update on "
                    "certificatesigningrequests/approval and approve on the kubelet signers "
                    "(docs/csr-approval.md)" % (decision.name, decision.node, error),
                    self.result(),
                )
            # An API server hiccup (5xx, unreachable): the CSR is still pending and the
            # policy will pick it again at the next wake-up.
            self.api_errors += 1
            return None

    def _approve_with_conflict_retries(self, name: str, message: str, now: datetime.datetime) -> dict[str, Any] | None:
        obj = self.csrs.objects[name]
        for attempt in range(CONFLICT_RETRIES + 1):
            if attempt:
                fresh = self.api.get_csr(name)
                if fresh is None:
                    self.csrs.objects.pop(name, None)
                    return None
                self.csrs.objects[name] = fresh
                # The spec is immutable; if it differs, or the CSR is no longer pending,
                # the decision was about another object: decide again next round.
                if fresh.get("spec") != obj.get("spec") or parse_csr(fresh).state != PENDING:
                    return None
                obj = fresh
            try:
                return self.api.approve(name, approval_body(obj, message, now))
            except ApiAccessError as error:
                if error.status == 409:
                    continue
                if error.status == 404:
                    self.csrs.objects.pop(name, None)
                    return None
                raise
        return None  # still conflicting: it is still pending, the next evaluation tries again
