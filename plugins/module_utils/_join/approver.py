# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The I/O side of CSR approval: list and watch CSRs, approve, wait for the Nodes.

The decisions themselves are made by the pure policy in _csr_policy; this file
feeds it every CSR of the cluster, carries out its `approve` decisions through
the /approval subresource and follows the expected hosts until they are done.

CsrApprover talks to the cluster only through an object with five methods
(list_csrs, list_nodes, get_csr, approve, watch_csrs); KubeCsrApi is the real
one, the unit tests pass a scripted fake. No Ansible import.
"""

import copy
import ipaddress
import json
import time

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import (
    Deadline,
    format_rfc3339,
    parse_rfc3339,
    utcnow,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    Target,
    core_target,
    describe_api_error,
    group_target,
    with_query,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import policy as policy

try:
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:  # pragma: no cover - the module reports the missing library

    class DynamicApiError(Exception):
        """Stand-in so that the except clauses below stay valid; never raised."""


try:
    from urllib3.exceptions import HTTPError as Urllib3HTTPError
except ImportError:  # pragma: no cover

    class Urllib3HTTPError(Exception):
        """Stand-in so that the except clauses below stay valid; never raised."""


APPROVAL_REASON = "OpenshiftAgentDay2Approved"
APPROVED_BY = "openshift_agent.day2.csr_approve"
WAIT_FOR_CHOICES = ("approved", "ready")

# A 409 means the object changed between our read and our write (a kubelet or the
# signer updated its status). The spec is immutable, so a fresh read and one more
# try almost always succeed; give up on this CSR for this round after a few.
CONFLICT_RETRIES = 3
# HTTP statuses after which the next poll may well succeed (API server restart,
# load balancer hiccup): keep waiting instead of failing the run.
TRANSIENT_STATUSES = (None, 429, 500, 502, 503, 504)
# Seconds to wait for the watch connection; reading allows timeoutSeconds plus this grace.
WATCH_CONNECT_TIMEOUT = 10
WATCH_READ_GRACE = 10

# Skip reasons that are about a CSR that is no longer pending: not reported in `skipped_csrs`.
NOT_PENDING_REASONS = ("already-approved", "denied/failed")
# Skip reasons that follow from this run's own approval of a host (its Node now exists, it has its
# certificate): they never replace a reason reported for the same CSR before that approval.
AFTER_APPROVAL_REASONS = ("node-exists", "node-already-approved")

# What a broken stream raises: HTTP errors of the client, cut connections, a garbled line.
_STREAM_ERRORS = (DynamicApiError, Urllib3HTTPError, OSError, ValueError)


def _is_stream_error(error):
    return isinstance(error, _STREAM_ERRORS)


CSR_LIST = group_target("certificates.k8s.io", "v1", "certificatesigningrequests")
NODE_LIST = core_target("nodes")


class CsrApproveError(Day2Error):
    """The run failed; result holds what was done and seen so far."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result or {}


class WatchBroken(Day2Error):
    """The CSR watch ended abnormally (cut, 410 Gone, ERROR event); status when known."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------- input checks


def normalize_nodes(nodes):
    """Check the `nodes` option and return ExpectedNode objects; raise CsrApproveError listing every problem.

    Names are lower-cased because the kubelet registers the lower-case host name.
    There is deliberately no wildcard: every host must be named.
    """
    problems = []
    expected = []
    seen = set()
    for index, node in enumerate(nodes or []):
        where = "nodes[%d]" % index
        if not isinstance(node, dict):
            problems.append("%s: expected a dict with name and addresses, found %r" % (where, node))
            continue
        name = str(node.get("name") or "").strip().lower()
        if not name:
            problems.append("%s: name is missing" % where)
            continue
        where = "%s (%s)" % (where, name)
        if "*" in name or "?" in name:
            problems.append(
                "%s: name %r contains a wildcard; name every host explicitly, there is no "
                "approve-all (docs/csr-approval.md explains why)" % (where, name)
            )
            continue
        if name in seen:
            problems.append("%s: name %s is listed twice" % (where, name))
            continue
        seen.add(name)
        addresses = node.get("addresses") or []
        if not addresses:
            problems.append(
                "%s: addresses is empty; give the IP addresses the host will have, the serving "
                "certificate is checked against them" % where
            )
            continue
        bad = []
        for address in addresses:
            try:
                ipaddress.ip_address("%s" % address)
            except ValueError:
                bad.append(address)
        if bad:
            problems.append("%s: addresses %s are not IP addresses" % (where, bad))
            continue
        not_before = node.get("not_before")
        if not_before:
            try:
                not_before = parse_rfc3339(str(not_before))
            except ValueError as error:
                problems.append("%s: not_before: %s (for example 2024-05-01T12:00:00Z)" % (where, error))
                continue
        expected.append(policy.ExpectedNode(name, addresses, node.get("dns_names") or (), not_before or None))
    if not expected and not problems:
        problems.append("nodes is empty: name at least one host")
    if problems:
        raise CsrApproveError("invalid nodes option: " + "; ".join(problems))
    return expected


# ---------------------------------------------------------------- the real API


class KubeCsrApi:
    """CSRs and Nodes through kubernetes.core's client: ApiClient for plain requests,
    the DynamicClient itself for the streaming watch."""

    def __init__(self, reader, dynamic_client):
        self._reader = reader
        self._client = dynamic_client

    def list_csrs(self):
        """Every CSR object and the list's resourceVersion (where a watch starts)."""
        data = self._reader.request("GET", CSR_LIST) or {}
        return data.get("items") or [], (data.get("metadata") or {}).get("resourceVersion")

    def list_nodes(self):
        return (self._reader.request("GET", NODE_LIST) or {}).get("items") or []

    def get_csr(self, name):
        return self._reader.get(group_target("certificates.k8s.io", "v1", "certificatesigningrequests", name))

    def approve(self, name, body):
        target = Target(
            CSR_LIST.path + "/%s/approval" % name,
            "update",
            "certificatesigningrequests/approval",
            "certificates.k8s.io",
            name,
        )
        return self._reader.request("PUT", target, body=body)

    def watch_csrs(self, resource_version, timeout_seconds):
        """Yield watch events (dicts with type and object) until the server ends the watch.

        The request streams (the kubernetes client does not preload the body of
        DynamicClient.request), so each event is handled as soon as its line arrives.
        Any transport or HTTP failure becomes WatchBroken.
        """
        target = with_query(
            Target(CSR_LIST.path, "watch", CSR_LIST.resource, CSR_LIST.group),
            watch="true",
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true",
        )
        try:
            # serialize=False: the raw urllib3 response, whose body has not been read yet.
            response = self._client.request(
                "GET",
                target.path,
                serialize=False,
                _request_timeout=(WATCH_CONNECT_TIMEOUT, timeout_seconds + WATCH_READ_GRACE),
            )
        except Exception as error:  # pylint: disable=broad-except
            if not _is_stream_error(error):
                raise
            described = describe_api_error(error, target, self._reader.api_url)
            raise WatchBroken(str(described), described.status)
        return _watch_events(response)


def _watch_events(response):
    buffered = b""
    try:
        for chunk in response.stream(amt=None):
            buffered += chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line.decode("utf-8"))
    except Exception as error:  # pylint: disable=broad-except
        if not _is_stream_error(error):
            raise
        raise WatchBroken("the CSR watch broke: %s" % error)
    finally:
        # Close before releasing: an unread chunked body must not go back to the pool.
        response.close()
        release = getattr(response, "release_conn", None)
        if release is not None:
            release()


# ---------------------------------------------------------------- helpers


def _conditions(obj):
    return ((obj or {}).get("status") or {}).get("conditions") or []


def _name(obj):
    return ((obj or {}).get("metadata") or {}).get("name")


def _resource_version(obj):
    return ((obj or {}).get("metadata") or {}).get("resourceVersion")


def _node_view(obj):
    status = obj.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    addresses = [
        a.get("address")
        for a in status.get("addresses") or []
        if str(a.get("type", "")).endswith("IP") and a.get("address")
    ]
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    return {"ready": ready, "addresses": addresses, "created": created}


def approval_body(obj, message, now):
    """The CSR object with an Approved condition added, as PUT .../approval expects it."""
    body = copy.deepcopy(obj)
    status = body.setdefault("status", {})
    status["conditions"] = [
        *list(status.get("conditions") or []),
        {
            "type": "Approved",
            "status": "True",
            "reason": APPROVAL_REASON,
            "message": message,
            "lastUpdateTime": format_rfc3339(now),
        },
    ]
    return body


class NodeState:
    """What is known about one expected host after an evaluation."""

    def __init__(self, expected):
        self.expected = expected
        self.name = expected.name
        self.client_csr = None
        self.serving_csr = None
        self.exists = False
        self.fresh = False
        self.ready = False
        self.addresses = []
        self.created = None
        self.pending = []
        self.blocked = None

    def ready_done(self):
        """wait_for=ready: the Node of this run exists and is Ready."""
        return not self.blocked and self.fresh and self.ready

    def approved_done(self):
        """wait_for=approved: both certificates approved (or, once they were garbage
        collected, the Node of this run is Ready)."""
        return not self.blocked and bool((self.client_csr and self.serving_csr) or (self.fresh and self.ready))

    @property
    def state(self):
        if self.blocked:
            return "blocked"
        if self.fresh and self.ready:
            return "ready"
        if not self.client_csr:
            return "waiting-for-client-csr"
        if not self.serving_csr:
            return "waiting-for-serving-csr"
        return "waiting-for-ready"

    def describe(self):
        """One line for failure messages: certificates, skipped CSRs, Node."""
        parts = []
        for kind, approved, signer in (
            ("client", self.client_csr, policy.CLIENT_SIGNER),
            ("serving", self.serving_csr, policy.SERVING_SIGNER),
        ):
            if approved:
                parts.append("%s CSR %s approved" % (kind, approved))
                continue
            skipped = [
                "%s skipped (%s: %s)" % (d.name, d.reason, d.message) for d in self.pending if d.signer == signer
            ]
            parts.append("%s CSR: %s" % (kind, "; ".join(skipped) if skipped else "none seen yet"))
        if not self.exists:
            parts.append("Node: absent")
        elif not self.fresh:
            parts.append("Node: an older Node of this name (created %s, before not_before) exists" % self.created)
        else:
            parts.append("Node: %s" % ("Ready" if self.ready else "NotReady"))
        text = "%s: %s" % (self.name, ", ".join(parts))
        if self.blocked:
            text += ". BLOCKED: %s" % self.blocked
        return text

    def to_dict(self):
        return {
            "name": self.name,
            "exists": self.exists,
            "ready": self.ready,
            "addresses": self.addresses,
            "expected_addresses": sorted(str(a) for a in self.expected.addresses),
            "created": self.created,
            "client_csr": self.client_csr,
            "serving_csr": self.serving_csr,
            "state": self.state,
            "problem": self.blocked,
        }


# ---------------------------------------------------------------- the approver


class CsrApprover:
    """Approve the CSRs the policy accepts and follow the expected hosts.

    api: see the module docstring. expected: ExpectedNode list (normalize_nodes).
    max_pending: flood limit (None: the policy's). monotonic/sleep/now: clocks,
    replaceable in tests.
    """

    def __init__(
        self,
        api,
        expected,
        wait_for="ready",
        wait_timeout=1800,
        wait_sleep=10,
        check_mode=False,
        clock_skew=policy.DEFAULT_CLOCK_SKEW,
        max_pending=None,
        monotonic=time.monotonic,
        sleep=time.sleep,
        now=utcnow,
    ):
        if wait_for not in WAIT_FOR_CHOICES:
            raise CsrApproveError("wait_for must be one of %s, found %r" % (", ".join(WAIT_FOR_CHOICES), wait_for))
        policy_limit = policy.flood_threshold(len(expected))
        if max_pending is not None and not 0 <= max_pending <= policy_limit:
            raise CsrApproveError(
                "max_pending=%s: expected a number from 0 to %d, the policy limit for %d hosts (max(%d, %d x hosts)); "
                "the limit can only be tightened"
                % (max_pending, policy_limit, len(expected), policy.FLOOD_MINIMUM, policy.FLOOD_PER_NODE)
            )
        self.api = api
        self.expected = expected
        self.names = frozenset(node.name for node in expected)
        self.wait_for = wait_for
        self.wait_sleep = max(1, int(wait_sleep))
        self.check_mode = check_mode
        self.clock_skew = clock_skew
        self.max_pending = policy_limit if max_pending is None else max_pending
        self._monotonic = monotonic
        self._now = now
        self._deadline = Deadline(wait_timeout, clock=monotonic, sleeper=sleep)

        self._csrs = {}  # name -> CSR object, kept current by list and watch
        self._resource_version = None
        self._node_objects = {}  # name -> Node object
        self._approved_here = {}  # CSR names approved by this run, for NodeState
        self.approved = []
        self.would_approve = {}
        self.skipped = {}
        self.warnings = []
        self._spoofing = {}  # node -> warning, the latest wins
        self.states = {node.name: NodeState(node) for node in expected}
        self.watch_restarts = 0
        self.api_errors = 0
        self._watch_enabled = True

    # -------------------------------------------------------- public

    def run(self):
        """Approve and wait; return the result dict or raise CsrApproveError with it."""
        self._refresh_with_retry()
        self._evaluate()
        if self.check_mode:
            return self.result()
        while not self._finished():
            if self._deadline.expired():
                raise CsrApproveError(self._timeout_message(), self.result())
            if self._watch_enabled and self._resource_version:
                try:
                    self._follow_watch()
                    if not self._finished():
                        self._evaluate()  # the periodic wake-up: Nodes and time-based rules
                    continue
                except (WatchBroken, OSError) as error:
                    self._watch_broke(error)
            # Polling: wait, then a fresh list (which also gives the watch a new start).
            self._deadline.sleep(self.wait_sleep)
            if self._refresh_with_retry(fail_on_timeout=False):
                self._evaluate()
        blocked = [state for state in self.states.values() if state.blocked]
        if blocked:
            raise CsrApproveError(
                "these hosts cannot join, the others are done: %s" % " | ".join(s.describe() for s in blocked),
                self.result(),
            )
        return self.result()

    def result(self):
        result = {
            "changed": bool(self.would_approve) if self.check_mode else bool(self.approved),
            "approved": list(self.approved),
            # Ansible reserves the result key `skipped` (a bool), hence skipped_csrs.
            "skipped_csrs": [self.skipped[name] for name in sorted(self.skipped)],
            "nodes": [self.states[name].to_dict() for name in sorted(self.states)],
            "duration": round(self._deadline.elapsed(), 3),
            "watch_restarts": self.watch_restarts,
            "warnings": self.warnings + [self._spoofing[node] for node in sorted(self._spoofing)],
        }
        if self.check_mode:
            result["would_approve"] = [self.would_approve[name] for name in sorted(self.would_approve)]
        return result

    # -------------------------------------------------------- reading

    def _refresh(self):
        items, resource_version = self.api.list_csrs()
        self._csrs = {_name(obj): obj for obj in items if _name(obj)}
        self._resource_version = resource_version

    def _refresh_with_retry(self, fail_on_timeout=True):
        """A fresh CSR list; transient API failures are retried every wait_sleep until the deadline."""
        while True:
            try:
                self._refresh()
                return True
            except ApiAccessError as error:
                if error.status not in TRANSIENT_STATUSES:
                    raise CsrApproveError("cannot list CSRs: %s" % error, self.result())
                self.api_errors += 1
                if self._deadline.expired():
                    if fail_on_timeout:
                        raise CsrApproveError("cannot list CSRs until the timeout: %s" % error, self.result())
                    return False
                self._deadline.sleep(self.wait_sleep)

    def _list_nodes(self):
        try:
            self._node_objects = {_name(obj): obj for obj in self.api.list_nodes() if _name(obj)}
        except ApiAccessError as error:
            if error.status not in TRANSIENT_STATUSES:
                raise CsrApproveError("cannot list Nodes: %s" % error, self.result())
            self.api_errors += 1  # keep the last known Nodes; the next wake-up reads again

    # -------------------------------------------------------- watching

    def _follow_watch(self):
        """Handle watch events until the server ends the watch, everything is done or time is up."""
        timeout = max(1, int(min(self.wait_sleep, max(1.0, self._deadline.remaining()))))
        started = self._monotonic()
        seen = 0
        events = self.api.watch_csrs(self._resource_version, timeout)
        try:
            for event in events:
                seen += 1
                if self._apply_event(event):
                    self._evaluate()
                    if self._finished():
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

    def _apply_event(self, event):
        """Update the CSR cache from one event; True when a decision may change."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            # The server reports an expired resourceVersion (410) and other failures this way.
            raise WatchBroken("the CSR watch reported an error: %s" % (obj.get("message") or obj), obj.get("code"))
        if _resource_version(obj):
            self._resource_version = _resource_version(obj)
        name = _name(obj)
        if kind == "BOOKMARK" or not name:
            return False
        if kind == "DELETED":
            return self._csrs.pop(name, None) is not None
        previous = self._csrs.get(name)
        if previous is not None and len(_conditions(obj)) < len(_conditions(previous)):
            # Conditions are only ever added: this event predates what we hold, for example
            # a replayed update from before our own approval. Keep the newer object.
            return False
        self._csrs[name] = obj
        if kind == "ADDED" or previous is None:
            return True
        # Our own approval is already in the cache; a new certificate alone changes no decision.
        return _conditions(previous) != _conditions(obj)

    def _watch_broke(self, error):
        self.watch_restarts += 1
        if getattr(error, "status", None) in (401, 403):
            self._watch_enabled = False
            self.warnings.append(
                "cannot watch CSRs (%s); polling every %ss instead. Grant verb watch on "
                "certificatesigningrequests for approvals within a second (docs/csr-approval.md)"
                % (error, self.wait_sleep)
            )

    # -------------------------------------------------------- deciding

    def _evaluate(self):
        """Run the policy over every CSR, approve what it accepts, update the host states."""
        self._list_nodes()
        now = self._now()
        csrs = list(self._csrs.values())
        verdict = policy.flood_guard(csrs, self.names, now)
        if verdict.count > self.max_pending:
            raise CsrApproveError(
                "flood guard: %d pending CSRs name the %d expected hosts (limit %d, see docs/csr-approval.md); "
                "approving nothing until someone looks. %s"
                % (verdict.count, len(self.names), self.max_pending, verdict.message),
                self.result(),
            )
        decisions = policy.decide(csrs, self.expected, list(self._node_objects), now, self.clock_skew)
        for decision in decisions:
            if decision.action == policy.APPROVE:
                self._carry_out(decision, now)
            elif decision.reason not in NOT_PENDING_REASONS:
                self._record_skip(decision)
        self._update_states(decisions)

    def _record_skip(self, decision):
        reason, message = decision.reason, decision.message
        joined_with = self._client_approved_here(decision.node)
        if reason in AFTER_APPROVAL_REASONS and joined_with:
            # These reasons only say that this run approved the host. A reason given before
            # (superseded, a failed check) is still true and more telling, so it stays; and
            # "node already exists, see replace_worker.yml" would be wrong for a Node we let in.
            if decision.name in self.skipped:
                return
            if reason == "node-exists":
                reason = "node-already-approved"
                message = (
                    "the client CSR %s of %s was approved by this run and its Node exists; "
                    "a second client certificate is not needed" % (joined_with, decision.node)
                )
        self.skipped[decision.name] = self._skip_entry(decision, reason, message)

    @staticmethod
    def _skip_entry(decision, reason, message):
        return {
            "name": decision.name,
            "node": decision.node,
            "signer": decision.signer,
            "reason": reason,
            "message": message,
            "created": decision.created,
        }

    def _client_approved_here(self, node):
        """The name of the client CSR of node this run approved, or None."""
        for name, decision in self._approved_here.items():
            if decision.node == node and decision.signer == policy.CLIENT_SIGNER:
                return name
        return None

    def _carry_out(self, decision, now):
        entry = {"name": decision.name, "node": decision.node, "signer": decision.signer, "created": decision.created}
        if self.check_mode:
            self.would_approve[decision.name] = entry
            return
        approved = self._approve(decision, now)
        if approved is None:
            return
        self._csrs[decision.name] = approved
        self._approved_here[decision.name] = decision
        self.skipped.pop(decision.name, None)
        entry["approved_at"] = format_rfc3339(now)
        self.approved.append(entry)

    def _approve(self, decision, now):
        """PUT the approval; on 409 read the CSR again and retry. None when it was not approved."""
        obj = self._csrs[decision.name]
        message = "Approved by %s: %s (expected node %s)" % (APPROVED_BY, decision.message, decision.node)
        try:
            return self._approve_with_conflict_retries(decision, obj, message, now)
        except ApiAccessError as error:
            if error.status not in TRANSIENT_STATUSES:
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

    def _approve_with_conflict_retries(self, decision, obj, message, now):
        for attempt in range(CONFLICT_RETRIES + 1):
            if attempt:
                fresh = self.api.get_csr(decision.name)
                if fresh is None:
                    self._csrs.pop(decision.name, None)
                    return None
                self._csrs[decision.name] = fresh
                # The spec is immutable; if it differs, or the CSR is no longer pending,
                # the decision was about another object: decide again next round.
                if fresh.get("spec") != obj.get("spec") or policy.parse_csr(fresh).state != policy.PENDING:
                    return None
                obj = fresh
            try:
                return self.api.approve(decision.name, approval_body(obj, message, now))
            except ApiAccessError as error:
                if error.status == 409:
                    continue
                if error.status == 404:
                    self._csrs.pop(decision.name, None)
                    return None
                raise
        return None  # still conflicting: it is still pending, the next evaluation tries again

    def _update_states(self, decisions):
        by_node = {}
        for decision in decisions:
            if decision.node in self.states:
                by_node.setdefault(decision.node, []).append(decision)
        for name, state in self.states.items():
            mine = by_node.get(name, [])
            state.client_csr = self._approved_for(state, mine, policy.CLIENT_SIGNER)
            state.serving_csr = self._approved_for(state, mine, policy.SERVING_SIGNER)
            state.pending = [d for d in mine if d.action == policy.SKIP and d.reason not in NOT_PENDING_REASONS]
            node = self._node_objects.get(name)
            state.exists = node is not None
            view = _node_view(node) if node else {"ready": False, "addresses": [], "created": None}
            state.ready = view["ready"]
            state.addresses = view["addresses"]
            state.created = view["created"]
            state.fresh = state.exists and self._created_after_not_before(state.expected, view["created"])
            state.blocked = self._blocker(state)

    def _approved_for(self, state, decisions, signer):
        """The newest CSR of this host and signer approved in this run (here or by an earlier run)."""
        approved = []
        for decision in decisions:
            if decision.signer != signer:
                continue
            if (decision.name in self._approved_here and decision.action == policy.APPROVE) or (
                decision.reason == "already-approved"
                and self._created_after_not_before(state.expected, decision.created)
            ):
                approved.append(decision)
        if not approved:
            return None
        return max(approved, key=lambda d: (d.created or "", d.name)).name

    def _created_after_not_before(self, expected, created):
        if expected.not_before is None:
            return True
        if not created:
            return False
        try:
            return parse_rfc3339(created) >= expected.not_before - self.clock_skew
        except ValueError:
            return False

    def _blocker(self, state):
        """Why this host cannot join without a person, or None.

        A host counts as joined once a client CSR of it is approved, or when its
        Node was created after not_before; CSRs refused after that are only warned about.
        """
        joined = bool(state.client_csr) or (state.expected.not_before is not None and state.fresh)
        spoofed = sorted(d.name for d in state.pending if d.reason == "possible-spoofing")
        if spoofed:
            self._spoofing[state.name] = (
                "possible spoofing for node %s: client CSRs %s carry different public keys, so someone else may "
                "hold the bootstrap credential; %s. Investigate and delete the rogue CSRs."
                % (
                    state.name,
                    ", ".join(spoofed),
                    "a client CSR of the host was already approved or its Node joined"
                    if joined
                    else "none of them was approved",
                )
            )
        if joined:
            return None
        if spoofed:
            return (
                "possible spoofing: its pending client CSRs %s carry different public keys; none was approved. "
                "Investigate, delete the rogue CSRs (oc delete csr NAME) and run again" % ", ".join(spoofed)
            )
        for decision in state.pending:
            obj = self._csrs.get(decision.name) or {}
            filed_by_bootstrap = (obj.get("spec") or {}).get("username") == policy.BOOTSTRAP_USERNAME
            if decision.reason == "node-exists" and filed_by_bootstrap:
                return "node already exists: CSR %s: %s" % (decision.name, decision.message)
        return None

    # -------------------------------------------------------- finishing

    def _node_done(self, state):
        return state.approved_done() if self.wait_for == "approved" else state.ready_done()

    def _finished(self):
        """Every host done, or done except those blocked until a person acts."""
        return all(self._node_done(state) or state.blocked for state in self.states.values())

    def _timeout_message(self):
        waiting = [state for state in self.states.values() if not self._node_done(state)]
        return "timed out after %ss waiting for %s %s: %s" % (
            self._deadline.seconds,
            ", ".join(sorted(s.name for s in waiting)),
            "to have approved client and serving CSRs" if self.wait_for == "approved" else "to be Ready",
            " | ".join(s.describe() for s in sorted(waiting, key=lambda s: s.name)),
        )
