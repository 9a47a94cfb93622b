# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which kubelet CSRs of new workers may be approved: one Decision per CSR, all CSRs of the cluster at once.

Pure policy: no I/O and no Ansible. Input is the Kubernetes API JSON of certificates.k8s.io/v1
CertificateSigningRequest objects, the hosts that are joining, the names of the Nodes that exist and the
current time. Nothing is ever denied: a CSR we do not approve may belong to someone else, so it is only skipped
with a reason.

Each CSR passes the checks of ``checks`` on its own; then GROUP_RULES see all CSRs of one node and signer
together; then the flood guard (``flood``) may stop every approval.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import as_utc
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import flood
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import (
    DEFAULT_CLOCK_SKEW,
    Context,
    first_finding,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import (
    APPROVED,
    CLIENT_SIGNER,
    KUBELET_SIGNERS,
    Finding,
    ParsedCSR,
    parse_csr,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode

APPROVE = "approve"
SKIP = "skip"


@dataclasses.dataclass
class Decision:
    """What to do with one CSR and why; ``node`` is the host its CN names, ``created`` RFC 3339 text."""

    name: str | None
    node: str | None
    signer: str | None
    action: str
    reason: str
    message: str
    created: str | None


class Evaluation:
    """decide's answer: the decisions in input order and the flood guard's verdict (when it fired, nothing
    is approved)."""

    def __init__(self, decisions: list[Decision], verdict: flood.FloodVerdict) -> None:
        self.decisions = decisions
        self.flood = verdict


class Group:
    """All CSRs of one node for one signer: valid pending candidates and those already approved in this run
    (settled)."""

    def __init__(self, node: str | None, signer: str | None) -> None:
        self.node = node
        self.signer = signer
        self.candidates: list[ParsedCSR] = []
        self.settled: list[ParsedCSR] = []


# ---------------------------------------------------------------- group rules
# Each rule takes a Group and returns {csr name: Finding} for candidates it refuses.


def rule_single_client_key(group: Group) -> dict[str | None, Finding]:
    """All genuine client CSRs of one node carry the kubelet's one bootstrap key."""
    if group.signer != CLIENT_SIGNER:
        return {}
    keys = {csr.public_key_der for csr in group.candidates + group.settled}
    if len(keys) < 2:
        return {}
    names = sorted(str(csr.name) for csr in group.candidates + group.settled)
    finding = Finding(
        "possible-spoofing",
        "expected every client CSR of %s to carry the same public key, found "
        "%d different keys in %s: someone else may hold the bootstrap credential; approve none, "
        "investigate, delete the rogue CSRs" % (group.node, len(keys), ", ".join(names)),
    )
    return {csr.name: finding for csr in group.candidates}


def rule_one_approval_per_run(group: Group) -> dict[str | None, Finding]:
    """A node gets one certificate per signer in a run."""
    if not group.settled:
        return {}
    names = ", ".join(sorted(str(csr.name) for csr in group.settled))
    finding = Finding(
        "node-already-approved",
        "expected no second approval for %s, found %s already approved for this signer" % (group.node, names),
    )
    return {csr.name: finding for csr in group.candidates}


def rule_newest_wins(group: Group) -> dict[str | None, Finding]:
    """Only the newest request of a node is approved; older ones are retries."""
    if len(group.candidates) < 2:
        return {}
    newest = max(group.candidates, key=lambda csr: (csr.created, csr.name))
    finding = Finding("superseded", "a newer CSR of %s for this signer exists: %s" % (group.node, newest.name))
    return {csr.name: finding for csr in group.candidates if csr is not newest}


GroupRule = Callable[[Group], "dict[str | None, Finding]"]
GROUP_RULES: list[GroupRule] = [
    rule_single_client_key,
    rule_one_approval_per_run,
    rule_newest_wins,
]


# ---------------------------------------------------------------- decide


def decide(
    csrs: Iterable[Any],
    expected_nodes: Iterable[ExpectedNode],
    existing_node_names: Iterable[str],
    now: datetime.datetime,
    clock_skew: datetime.timedelta = DEFAULT_CLOCK_SKEW,
    flood_limit: int | None = None,
) -> Evaluation:
    """Decide, for all CSR objects of the cluster at once, which to approve.

    csrs: every CSR object (API JSON dicts), pending or not, so that approvals made earlier in the run count;
    existing_node_names: names of the Nodes that exist; now: a datetime (naive means UTC); flood_limit: the
    flood guard's threshold when lower than the policy's (csr_approve's max_pending).
    Returns one Decision per CSR that concerns kubelets, in input order, and the flood verdict.
    """
    moment = as_utc(now)
    if moment is None:
        raise ValueError("decide needs the current time, found %r" % (now,))
    expected = {node.name: node for node in expected_nodes}
    ctx = Context(expected, frozenset(existing_node_names), moment, clock_skew)
    parsed = [csr for csr in (parse_csr(obj) for obj in csrs) if _is_ours(csr)]

    findings: dict[int, Finding] = {}
    groups: dict[tuple[str | None, str | None], Group] = {}
    for csr in parsed:
        finding = first_finding(csr, ctx)
        if finding is not None:
            findings[id(csr)] = finding
        key = (csr.host, csr.signer)
        if finding is None:
            groups.setdefault(key, Group(csr.host, csr.signer)).candidates.append(csr)
        elif _settled_in_run(csr, ctx):
            groups.setdefault(key, Group(csr.host, csr.signer)).settled.append(csr)

    for group in groups.values():
        for rule in GROUP_RULES:
            refused = rule(group)
            for csr in group.candidates:
                if csr.name in refused:
                    findings[id(csr)] = refused[csr.name]
            group.candidates = [csr for csr in group.candidates if csr.name not in refused]

    threshold = flood.flood_threshold(len(expected)) if flood_limit is None else flood_limit
    verdict = flood.flood_guard(parsed, frozenset(expected), moment, threshold)
    decisions = []
    for csr in parsed:
        finding = findings.get(id(csr))
        if finding is None and verdict.flood:
            finding = Finding("flood", verdict.message)
        if finding is None:
            action, reason, message = APPROVE, "valid", _approval_message(csr)
        else:
            action, reason, message = SKIP, finding.reason, finding.message
        decisions.append(Decision(csr.name, csr.host, csr.signer, action, reason, message, csr.created_text))
    return Evaluation(decisions, verdict)


def _is_ours(csr: ParsedCSR) -> bool:
    """Kubelet-signer CSRs, and node-looking CSRs sent to another signer."""
    return csr.signer in KUBELET_SIGNERS or csr.looks_like_node_csr


def _settled_in_run(csr: ParsedCSR, ctx: Context) -> bool:
    """Approved earlier in this run: approved, of an expected host, not older than its not_before."""
    if csr.state != APPROVED or csr.error is not None or csr.host not in ctx.expected:
        return False
    node = ctx.expected[csr.host]
    if node.not_before is None:
        return True
    return csr.created is not None and csr.created >= node.not_before - ctx.clock_skew


def _approval_message(csr: ParsedCSR) -> str:
    kind = "client" if csr.signer == CLIENT_SIGNER else "serving"
    return "%s CSR of new host %s: every check passed" % (kind, csr.host)
