# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The checks the approval policy makes on one CSR at a time.

Every check takes (ParsedCSR, Context) and returns None (passed) or a Finding. CSR_CHECKS apply to every CSR,
CLIENT_CHECKS and SERVING_CHECKS to the CSRs of that signer; each check can be reasoned about, tested and
disabled on its own (tests/mutation/csr_policy_mutations.py does exactly that). docs/csr-approval.md says why
each one exists.
"""

from __future__ import annotations

import datetime
from typing import Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import (
    APPROVED,
    CLIENT_SIGNER,
    DENIED_OR_FAILED,
    KUBELET_SIGNERS,
    NODE_USER_PREFIX,
    SERVING_SIGNER,
    Finding,
    ParsedCSR,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode, dns_key

BOOTSTRAP_USERNAME = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
BOOTSTRAP_GROUPS = frozenset(
    [
        "system:serviceaccounts:openshift-machine-config-operator",
        "system:serviceaccounts",
        "system:authenticated",
    ]
)
NODES_GROUP = "system:nodes"
SERVING_REQUIRED_GROUPS = frozenset([NODES_GROUP, "system:authenticated"])

CLIENT_USAGES = (
    frozenset(["digital signature", "client auth"]),
    frozenset(["digital signature", "key encipherment", "client auth"]),
)
SERVING_USAGES = (
    frozenset(["digital signature", "server auth"]),
    frozenset(["digital signature", "key encipherment", "server auth"]),
)

# The kubelet makes every key it asks a certificate for (bootstrap client key and
# serving keys) as ECDSA on P-256. Accepting anything else only widens what a
# holder of the bootstrap credential could present; see docs/csr-approval.md.
ACCEPTED_KEY_TYPES = frozenset(["ECDSA P-256"])

# The API server stamps creationTimestamp with its clock, not_before comes from the
# controller's clock: tolerate this much disagreement between the two.
DEFAULT_CLOCK_SKEW = datetime.timedelta(seconds=60)
# Pending CSRs are garbage collected after 24 h: an older one is not a live request.
MAX_PENDING_AGE = datetime.timedelta(hours=24)

REPLACE_HINT = "playbooks/replace_worker.yml"


class Context:
    """What the per-CSR checks compare a CSR with: the expected hosts by name, the existing Node names, the time."""

    def __init__(
        self,
        expected: dict[str, ExpectedNode],
        existing_node_names: frozenset[str],
        now: datetime.datetime,
        clock_skew: datetime.timedelta,
    ) -> None:
        self.expected = expected
        self.existing_node_names = existing_node_names
        self.now = now
        self.clock_skew = clock_skew


Check = Callable[[ParsedCSR, Context], "Finding | None"]


def first_finding(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The first check of this CSR's signer that refuses it, or None when all pass."""
    checks = list(CSR_CHECKS)
    if csr.signer == CLIENT_SIGNER:
        checks += CLIENT_CHECKS
    elif csr.signer == SERVING_SIGNER:
        checks += SERVING_CHECKS
    for check in checks:
        finding = check(csr, ctx)
        if finding is not None:
            return finding
    return None


def _usages_finding(csr: ParsedCSR, accepted: tuple[frozenset[str], ...]) -> Finding | None:
    if frozenset(csr.usages) in accepted:
        return None
    return Finding(
        "bad-usages",
        "expected usages %s, found %s" % (" or ".join(str(sorted(u)) for u in accepted), sorted(csr.usages)),
    )


# ---------------------------------------------------------------- every CSR


def check_state(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Only pending CSRs are candidates."""
    if csr.state == APPROVED:
        return Finding("already-approved", "already approved; nothing to do")
    if csr.state == DENIED_OR_FAILED:
        return Finding("denied/failed", "has a Denied or Failed condition; it will never be approved")
    return None


def check_signer(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A node-looking CSR for a signer other than the two kubelet signers."""
    if csr.signer not in KUBELET_SIGNERS:
        return Finding(
            "unexpected-signer", "expected signer %s or %s, found %r" % (CLIENT_SIGNER, SERVING_SIGNER, csr.signer)
        )
    return None


def check_readable(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The object and its PKCS#10 request could be read."""
    return csr.error


def check_age(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Pending CSRs are garbage collected after 24 h; an older one is not genuine."""
    if csr.created is None or ctx.now - csr.created > MAX_PENDING_AGE:
        return Finding(
            "too-old",
            "expected a CSR created within %s before %s, found creationTimestamp %s"
            % (MAX_PENDING_AGE, format_rfc3339(ctx.now), csr.created_text),
        )
    return None


def check_signature(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The request is signed by the key it carries (proof of possession)."""
    if not csr.signature_valid:
        return Finding("bad-signature", "the request signature does not verify with its own public key")
    return None


def check_key_type(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Only the key type the kubelet generates."""
    if csr.key_type not in ACCEPTED_KEY_TYPES:
        return Finding(
            "key-type",
            "expected a %s key (what the kubelet generates), found %s"
            % (" or ".join(sorted(ACCEPTED_KEY_TYPES)), csr.key_type),
        )
    return None


def check_subject(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Subject is exactly one CN system:node:<host> plus O; nothing else."""
    if csr.host is None:
        return Finding(
            "bad-subject", "expected exactly one subject CN %s<host>, found %r" % (NODE_USER_PREFIX, csr.common_names)
        )
    if csr.other_subject_attributes:
        return Finding(
            "bad-subject",
            "expected a subject of only CN and O, found also %s" % ", ".join(csr.other_subject_attributes),
        )
    return None


def check_expected_node(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The CN names a host of the inventory."""
    if csr.host not in ctx.expected:
        extra = " (an existing Node)" if csr.host in ctx.existing_node_names else ""
        return Finding(
            "unknown-node",
            "expected a CN naming one of the new hosts %s, found %s%s%s"
            % (sorted(ctx.expected), NODE_USER_PREFIX, csr.host, extra),
        )
    return None


def check_not_before(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Not created before the host could have asked (minus clock skew)."""
    node = ctx.expected.get(csr.host or "")
    if node is None or node.not_before is None:
        return None
    if csr.created is None or csr.created < node.not_before - ctx.clock_skew:
        return Finding(
            "before-not-before",
            "expected a CSR created after %s (not_before of %s, minus %ss clock skew), found %s"
            % (format_rfc3339(node.not_before), csr.host, int(ctx.clock_skew.total_seconds()), csr.created_text),
        )
    return None


CSR_CHECKS: list[Check] = [
    check_state,
    check_signer,
    check_readable,
    check_age,
    check_signature,
    check_key_type,
    check_subject,
    check_expected_node,
    check_not_before,
]


# ---------------------------------------------------------------- client CSRs


def check_node_absent(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A client certificate for an existing Node name would hand over that node's identity."""
    if csr.host in ctx.existing_node_names:
        return Finding(
            "node-exists",
            "a Node named %s already exists; a new client certificate for it would "
            "hand its identity to whoever filed this CSR. To re-add this host, remove the old Node "
            "with %s" % (csr.host, REPLACE_HINT),
        )
    return None


def check_bootstrap_username(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The client CSR was filed with the node-bootstrapper credential."""
    if csr.username != BOOTSTRAP_USERNAME:
        return Finding("bad-username", "expected spec.username %s, found %r" % (BOOTSTRAP_USERNAME, csr.username))
    return None


def check_bootstrap_groups(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Exactly the node-bootstrapper's groups."""
    if set(csr.groups) != BOOTSTRAP_GROUPS:
        return Finding(
            "bad-groups", "expected spec.groups exactly %s, found %s" % (sorted(BOOTSTRAP_GROUPS), sorted(csr.groups))
        )
    return None


def check_client_organization(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """O exactly [system:nodes]: any other O becomes a group of the node user."""
    if csr.organizations != [NODES_GROUP]:
        return Finding(
            "bad-organization", "expected subject O exactly [%s], found %s" % (NODES_GROUP, csr.organizations)
        )
    return None


def check_client_no_sans(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A kubelet client certificate carries no subject alternative names."""
    if csr.all_sans:
        return Finding("client-has-sans", "expected no subject alternative names, found %s" % csr.all_sans)
    return None


def check_client_usages(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The key usages the kubelet asks for a client certificate."""
    return _usages_finding(csr, CLIENT_USAGES)


CLIENT_CHECKS: list[Check] = [
    check_node_absent,
    check_bootstrap_username,
    check_bootstrap_groups,
    check_client_organization,
    check_client_no_sans,
    check_client_usages,
]


# ---------------------------------------------------------------- serving CSRs


def check_username_matches_cn(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A serving CSR is filed by the node itself, with its own client certificate."""
    if csr.username != "%s%s" % (NODE_USER_PREFIX, csr.host):
        return Finding(
            "username-cn-mismatch",
            "expected spec.username %s%s (the subject CN), found %r" % (NODE_USER_PREFIX, csr.host, csr.username),
        )
    return None


def check_node_groups(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Filed by a node user: system:nodes and system:authenticated among the groups."""
    missing = SERVING_REQUIRED_GROUPS - set(csr.groups)
    if missing:
        return Finding(
            "bad-groups",
            "expected spec.groups to include %s, found %s (missing %s)"
            % (sorted(SERVING_REQUIRED_GROUPS), sorted(csr.groups), sorted(missing)),
        )
    return None


def check_serving_organization(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """O contains system:nodes, as the kubelet writes it."""
    if NODES_GROUP not in csr.organizations:
        return Finding(
            "bad-organization", "expected subject O to contain %s, found %s" % (NODES_GROUP, csr.organizations)
        )
    return None


def check_serving_usages(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The key usages the kubelet asks for a serving certificate."""
    return _usages_finding(csr, SERVING_USAGES)


def check_serving_has_san(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A serving certificate without a name or address serves nothing."""
    if not csr.all_sans:
        return Finding(
            "no-sans", "expected at least one DNS or IP subject alternative name of %s, found none" % csr.host
        )
    return None


def check_serving_sans_expected(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Every SAN is an address or name of this host: a foreign one would let it impersonate another."""
    node = ctx.expected.get(csr.host or "") or ExpectedNode(csr.host or "")
    allowed_dns = node.dns_names | frozenset([dns_key(node.name)])
    foreign = [name for name in csr.dns_sans if dns_key(name) not in allowed_dns]
    foreign += [str(ip) for ip in csr.ip_sans if ip not in node.addresses]
    foreign += csr.email_sans + csr.uri_sans + csr.other_sans
    if foreign:
        return Finding(
            "san-not-expected",
            "expected DNS names %s and IP addresses %s only, found also %s"
            % (sorted(allowed_dns), sorted(str(a) for a in node.addresses), foreign),
        )
    return None


SERVING_CHECKS: list[Check] = [
    check_username_matches_cn,
    check_node_groups,
    check_serving_organization,
    check_serving_usages,
    check_serving_has_san,
    check_serving_sans_expected,
]
