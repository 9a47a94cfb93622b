# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Where each expected host stands after an evaluation: its certificates, its Node, what blocks it.

No I/O: NodeStates.update gets the policy's decisions, the Node objects and the CSR objects the approver holds.
"""

from __future__ import annotations

import datetime
from collections.abc import Container
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import as_utc
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.nodes import node_summary
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import BOOTSTRAP_USERNAME
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import CLIENT_SIGNER, SERVING_SIGNER
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.policy import APPROVE, SKIP, Decision

WAIT_FOR_CHOICES = ("approved", "ready")
# Skip reasons that are about a CSR that is no longer pending: not reported in `skipped_csrs`.
NOT_PENDING_REASONS = ("already-approved", "denied/failed")


class NodeState:
    """What is known about one expected host after an evaluation."""

    def __init__(self, expected: ExpectedNode) -> None:
        self.expected = expected
        self.name = expected.name
        self.client_csr: str | None = None
        self.serving_csr: str | None = None
        self.exists = False
        self.fresh = False  # its Node was created after not_before: the Node of this run
        self.ready = False
        self.addresses: list[str] = []
        self.created: str | None = None
        self.pending: list[Decision] = []
        self.blocked: str | None = None

    def done(self, wait_for: str) -> bool:
        """wait_for=ready: the Node of this run exists and is Ready. wait_for=approved: both certificates
        approved (or, once they were garbage collected, the Node of this run is Ready)."""
        if self.blocked:
            return False
        if wait_for == "approved":
            return bool((self.client_csr and self.serving_csr) or (self.fresh and self.ready))
        return self.fresh and self.ready

    @property
    def state(self) -> str:
        if self.blocked:
            return "blocked"
        if self.fresh and self.ready:
            return "ready"
        if not self.client_csr:
            return "waiting-for-client-csr"
        if not self.serving_csr:
            return "waiting-for-serving-csr"
        return "waiting-for-ready"

    def describe(self) -> str:
        """One line for failure messages: certificates, skipped CSRs, Node."""
        parts = []
        for kind, approved, signer in (
            ("client", self.client_csr, CLIENT_SIGNER),
            ("serving", self.serving_csr, SERVING_SIGNER),
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

    def to_dict(self) -> dict[str, Any]:
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


class NodeStates:
    """The NodeState of every expected host, and the possible-spoofing warnings (the latest per host)."""

    def __init__(self, expected: list[ExpectedNode], wait_for: str, clock_skew: datetime.timedelta) -> None:
        self.by_name = {node.name: NodeState(node) for node in expected}
        self.wait_for = wait_for
        self.clock_skew = clock_skew
        self.spoofing: dict[str, str] = {}

    def update(
        self,
        decisions: list[Decision],
        node_objects: dict[str, dict[str, Any]],
        csrs: dict[str, dict[str, Any]],
        approved_here: Container[str],
    ) -> None:
        """Recompute every host from the latest decisions; approved_here: the CSR names this run approved."""
        by_node: dict[str, list[Decision]] = {}
        for decision in decisions:
            if decision.node in self.by_name:
                by_node.setdefault(decision.node, []).append(decision)
        for name, state in self.by_name.items():
            mine = by_node.get(name, [])
            state.client_csr = self._approved_for(state, mine, CLIENT_SIGNER, approved_here)
            state.serving_csr = self._approved_for(state, mine, SERVING_SIGNER, approved_here)
            state.pending = [d for d in mine if d.action == SKIP and d.reason not in NOT_PENDING_REASONS]
            node = node_objects.get(name)
            summary = node_summary(node) if node else {"ready": False, "addresses": [], "created": None}
            state.exists = node is not None
            state.ready = summary["ready"]
            state.addresses = summary["addresses"]
            state.created = summary["created"]
            state.fresh = state.exists and self._created_after_not_before(state.expected, state.created)
            state.blocked = self._blocker(state, csrs)

    def finished(self) -> bool:
        """Every host done, or done except those blocked until a person acts."""
        return all(state.done(self.wait_for) or state.blocked for state in self.by_name.values())

    def blocked(self) -> list[NodeState]:
        return [state for state in self.by_name.values() if state.blocked]

    def waiting(self) -> list[NodeState]:
        return sorted((s for s in self.by_name.values() if not s.done(self.wait_for)), key=lambda s: s.name)

    def timeout_message(self, seconds: float) -> str:
        waiting = self.waiting()
        return "timed out after %ss waiting for %s %s: %s" % (
            seconds,
            ", ".join(s.name for s in waiting),
            "to have approved client and serving CSRs" if self.wait_for == "approved" else "to be Ready",
            " | ".join(s.describe() for s in waiting),
        )

    def to_list(self) -> list[dict[str, Any]]:
        return [self.by_name[name].to_dict() for name in sorted(self.by_name)]

    def warnings(self) -> list[str]:
        return [self.spoofing[name] for name in sorted(self.spoofing)]

    def _approved_for(
        self, state: NodeState, decisions: list[Decision], signer: str, approved_here: Container[str]
    ) -> str | None:
        """The newest CSR of this host and signer approved in this run (here or by an earlier run)."""
        approved = []
        for decision in decisions:
            if decision.signer != signer:
                continue
            if (decision.name in approved_here and decision.action == APPROVE) or (
                decision.reason == "already-approved"
                and self._created_after_not_before(state.expected, decision.created)
            ):
                approved.append(decision)
        if not approved:
            return None
        return max(approved, key=lambda d: (d.created or "", d.name or "")).name

    def _created_after_not_before(self, expected: ExpectedNode, created: str | None) -> bool:
        if expected.not_before is None:
            return True
        try:
            moment = as_utc(created or None)
        except (TypeError, ValueError):
            return False
        return moment is not None and moment >= expected.not_before - self.clock_skew

    def _blocker(self, state: NodeState, csrs: dict[str, dict[str, Any]]) -> str | None:
        """Why this host cannot join without a person, or None.

        A host counts as joined once a client CSR of it is approved, or when its Node was created after
        not_before; CSRs refused after that are only warned about.
        """
        joined = bool(state.client_csr) or (state.expected.not_before is not None and state.fresh)
        spoofed = sorted(str(d.name) for d in state.pending if d.reason == "possible-spoofing")
        if spoofed:
            self.spoofing[state.name] = (
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
            obj = csrs.get(str(decision.name)) or {}
            filed_by_bootstrap = (obj.get("spec") or {}).get("username") == BOOTSTRAP_USERNAME
            if decision.reason == "node-exists" and filed_by_bootstrap:
                return "node already exists: CSR %s: %s" % (decision.name, decision.message)
        return None
