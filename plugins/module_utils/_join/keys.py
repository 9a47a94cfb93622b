# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The client CSRs of one joining host, grouped by public key: which to approve and which are someone else's.

A kubelet generates its bootstrap key once and files every client CSR with it (a re-file after an unanswered
hour is a new object with the same key). So every well-formed client CSR of one host carries one key, and:

- a copy of a pending CSR (a replay) carries the same key: approving it too gives nobody anything, and
  approving only the copy would strand the kubelet, which waits for its own object;
- a second key means someone else holds the bootstrap credential: nothing more is approved for that host.

"Well-formed" is every per-CSR check of ``checks`` except the state (approved ones count too) and the Node's
existence (a second key after the Node joined must still be seen). No I/O.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import checks
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import (
    APPROVED,
    CLIENT_SIGNER,
    PENDING,
    ParsedCSR,
)

# Every check of a client CSR but its state and the Node's existence.
KEY_CHECKS = [
    check
    for check in checks.CSR_CHECKS + checks.CLIENT_CHECKS
    if check not in (checks.check_state, checks.check_node_absent)
]


def fingerprint(key: bytes | None) -> str:
    """A short name of a public key (sha256 of its DER, first 16 hex digits)."""
    return hashlib.sha256(key or b"").hexdigest()[:16]


def describe(csr: ParsedCSR) -> str:
    """One CSR for a message: name, requestor, creation time and key."""
    return "%s (requested by %s at %s, key sha256:%s)" % (
        csr.name,
        csr.username or "(no spec.username)",
        csr.created_text or "(no creationTimestamp)",
        fingerprint(csr.public_key_der),
    )


class ClientKeys:
    """The well-formed client CSRs of one host, and what they mean.

    ``key``: the kubelet's key when known (the one key of the approved CSRs); ``to_approve``: the pending CSRs
    with that key, or, when none is approved yet, with the one key all pending CSRs share; ``rogue``: CSRs with
    another key than ``key``; ``ambiguous``: pending CSRs that carry several keys while none is approved (one
    of them may be the kubelet's: nothing can be approved); ``refused``: CSRs of the host that fail a check
    (name -> reason), only reported.
    """

    def __init__(self) -> None:
        self.approved: list[ParsedCSR] = []
        self.pending: list[ParsedCSR] = []
        self.refused: dict[str, str] = {}
        self.key: bytes | None = None
        self.rogue: list[ParsedCSR] = []
        self.ambiguous: list[ParsedCSR] = []
        self.to_approve: list[ParsedCSR] = []

    def problem(self, host: str) -> str | None:
        """The message that stops the host, or None."""
        approved_keys = {csr.public_key_der for csr in self.approved}
        if len(approved_keys) > 1:
            return (
                "client CSRs of %s with different public keys are approved: %s. A certificate for this node went "
                "to someone else: revoke it (rotate the kubelet CA), investigate who holds the bootstrap "
                "credential, remove the Node and add the host again with playbooks/replace_worker.yml"
                % (host, "; ".join(describe(csr) for csr in self.approved))
            )
        if self.rogue:
            return (
                "a second public key for %s: %s, while the kubelet's key is sha256:%s (approved: %s). Someone "
                "else holds the bootstrap credential (it is in the worker Ignition config): nothing more is "
                "approved for %s. Delete the rogue CSR (oc delete csr %s), find who filed it, then run again"
                % (
                    host,
                    "; ".join(describe(csr) for csr in self.rogue),
                    fingerprint(self.key),
                    ", ".join(str(csr.name) for csr in self.approved),
                    host,
                    " ".join(str(csr.name) for csr in self.rogue),
                )
            )
        if self.ambiguous:
            return (
                "the pending client CSRs of %s carry %d different public keys: %s. One is the kubelet's, the "
                "other(s) were filed by someone else holding the bootstrap credential; which is which cannot be "
                "told from the cluster, so none is approved. Delete them all (oc delete csr NAME...), make sure "
                "nobody else holds the bootstrap credential, reboot the host (its kubelet files a new CSR) and "
                "run again"
                % (
                    host,
                    len({csr.public_key_der for csr in self.ambiguous}),
                    "; ".join(describe(csr) for csr in self.ambiguous),
                )
            )
        return None


def client_keys(csrs: list[ParsedCSR], ctx: checks.Context, host: str) -> ClientKeys:
    """Sort the parsed CSRs of ``host`` (client signer only) into a ClientKeys."""
    found = ClientKeys()
    for csr in csrs:
        if csr.signer != CLIENT_SIGNER or csr.host != host or csr.state not in (PENDING, APPROVED):
            continue
        finding = next((f for f in (check(csr, ctx) for check in KEY_CHECKS) if f is not None), None)
        if finding is not None:
            found.refused[str(csr.name)] = "%s: %s" % (finding.reason, finding.message)
        elif csr.state == APPROVED:
            found.approved.append(csr)
        else:
            found.pending.append(csr)
    approved_keys = {csr.public_key_der for csr in found.approved}
    if len(approved_keys) == 1:
        found.key = next(iter(approved_keys))
        found.rogue = [csr for csr in found.pending if csr.public_key_der != found.key]
        found.to_approve = [csr for csr in found.pending if csr.public_key_der == found.key]
    elif not approved_keys:
        pending_keys = {csr.public_key_der for csr in found.pending}
        if len(pending_keys) > 1:
            found.ambiguous = sorted(found.pending, key=_order)
        else:
            found.to_approve = sorted(found.pending, key=_order)
    return found


def _order(csr: ParsedCSR) -> Any:
    return (csr.created_text or "", csr.name or "")
