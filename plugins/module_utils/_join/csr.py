# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one CSR policy: which kubelet CSRs of a new worker may be approved. Pure: no I/O, no Ansible.

``parse_csr`` reads a certificates.k8s.io/v1 CertificateSigningRequest (never raises: anyone may file one). Each
check refuses a CSR for one reason (CSR_CHECKS for every CSR, CLIENT_CHECKS and SERVING_CHECKS by signer;
docs/csr-approval.md says why each exists, tests/mutation disables each in turn). ``host_csrs`` then sees all CSRs
of one host together:

- client CSRs by public key: a kubelet makes its bootstrap key once and files every client CSR with it, so every
  pending copy with the kubelet's key is approved (a replay cannot strand the kubelet), and a second key, before or
  after an approval, means someone else holds the bootstrap credential: nothing more is approved for that host;
- serving CSRs: one approval per run, the newest pending one. An IP SAN is the host's when it is an inventory
  address of the host, or an address its own Node reports in status.addresses that is inside a machine network, no
  VIP and no other Node's or new host's (``Network``, ``each_host``: the cluster's Nodes go in).

``flood`` stops every approval while more CSRs name the new hosts than their kubelets would file. Nothing is ever
denied: a CSR we do not approve may be someone else's, so it is only refused with a reason.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import datetime
import hashlib
import traceback
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import as_utc, format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip, parse_network

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import NameOID
except ImportError:
    HAS_CRYPTOGRAPHY = False
    CRYPTOGRAPHY_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    HAS_CRYPTOGRAPHY = True
    CRYPTOGRAPHY_IMPORT_ERROR = None

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
KUBELET_SIGNERS = (CLIENT_SIGNER, SERVING_SIGNER)
NODE_USER_PREFIX = "system:node:"
PENDING, APPROVED, DENIED_OR_FAILED = "pending", "approved", "denied/failed"
BOOTSTRAP_USERNAME = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
BOOTSTRAP_GROUPS = frozenset(
    ("system:serviceaccounts:openshift-machine-config-operator", "system:serviceaccounts", "system:authenticated")
)
NODES_GROUP = "system:nodes"
SERVING_REQUIRED_GROUPS = frozenset((NODES_GROUP, "system:authenticated"))
CLIENT_USAGES = (
    frozenset(("digital signature", "client auth")),
    frozenset(("digital signature", "key encipherment", "client auth")),
)
SERVING_USAGES = (
    frozenset(("digital signature", "server auth")),
    frozenset(("digital signature", "key encipherment", "server auth")),
)
# The kubelet makes every key it asks a certificate for as ECDSA on P-256; anything else only widens what a holder
# of the bootstrap credential could present (docs/csr-approval.md).
ACCEPTED_KEY_TYPES = frozenset(("ECDSA P-256",))
# Pending CSRs are garbage collected after 24 h: an older one is not a live request.
MAX_PENDING_AGE = datetime.timedelta(hours=24)
# The flood guard: pending CSRs naming the new hosts, created within the window, may number at most
# max(FLOOD_MINIMUM, FLOOD_PER_NODE x hosts): a kubelet has one client and one serving CSR pending at a time and
# files a new one after about an hour, so four per host allows one retry of each.
FLOOD_WINDOW = datetime.timedelta(hours=1)
FLOOD_MINIMUM, FLOOD_PER_NODE = 10, 4


@dataclasses.dataclass
class Finding:
    """Why a CSR is not approved: a short machine reason and a human message."""

    reason: str
    message: str


@dataclasses.dataclass
class ParsedCSR:
    """The fields of one CSR object the policy looks at; ``error`` when the object or its request is unreadable."""

    name: str | None = None
    created: datetime.datetime | None = None
    signer: str | None = None
    username: str | None = None
    groups: list[str] = dataclasses.field(default_factory=list)
    usages: list[str] = dataclasses.field(default_factory=list)
    state: str = PENDING
    error: Finding | None = None
    common_names: list[str] = dataclasses.field(default_factory=list)
    organizations: list[str] = dataclasses.field(default_factory=list)
    other_subject_attributes: list[str] = dataclasses.field(default_factory=list)
    dns_sans: list[str] = dataclasses.field(default_factory=list)
    ip_sans: list[Any] = dataclasses.field(default_factory=list)  # netaddr.IPAddress
    other_sans: list[str] = dataclasses.field(default_factory=list)  # e-mail, URI and anything else
    key_type: str | None = None
    public_key_der: bytes | None = None
    signature_valid: bool = False

    @property
    def host(self) -> str | None:
        """The host named by the one subject CN system:node:<host>, or None."""
        if len(self.common_names) != 1 or not self.common_names[0].startswith(NODE_USER_PREFIX):
            return None
        return self.common_names[0][len(NODE_USER_PREFIX) :] or None

    @property
    def all_sans(self) -> list[str]:
        return self.dns_sans + [str(ip) for ip in self.ip_sans] + self.other_sans

    @property
    def kind(self) -> str:
        """``client`` or ``serving``, by its signer."""
        return "client" if self.signer == CLIENT_SIGNER else "serving"

    @property
    def created_text(self) -> str | None:
        return format_rfc3339(self.created) if self.created is not None else None

    @property
    def key_id(self) -> str:
        """A short name of its public key (sha256 of the DER, first 16 hex digits)."""
        return hashlib.sha256(self.public_key_der or b"").hexdigest()[:16]

    def describe(self) -> str:
        return (
            f"{self.name} (requested by {self.username or '(no spec.username)'} at "
            f"{self.created_text or '(no creationTimestamp)'}, key sha256:{self.key_id})"
        )


def parse_csr(obj: Any) -> ParsedCSR:
    """Read one CSR object (API JSON). Garbage gives an ``error`` ('bad-object' or 'bad-request')."""
    if not isinstance(obj, dict):
        return ParsedCSR(error=Finding("bad-object", "not a CertificateSigningRequest object"))
    parsed = ParsedCSR()
    metadata, spec, status = (_typed(obj.get(key), dict) for key in ("metadata", "spec", "status"))
    parsed.name = metadata.get("name") if isinstance(metadata.get("name"), str) and metadata.get("name") else None
    parsed.signer = spec.get("signerName") if isinstance(spec.get("signerName"), str) else None
    parsed.username = spec.get("username") if isinstance(spec.get("username"), str) else None
    parsed.groups, parsed.usages = _strings(spec.get("groups")), _strings(spec.get("usages"))
    conditions = _typed(status.get("conditions"), list)
    held = [c.get("type") for c in conditions if isinstance(c, dict) and c.get("status", "True") == "True"]
    if "Denied" in held or "Failed" in held:  # a list: a type that is no string compares, never raises
        parsed.state = DENIED_OR_FAILED
    elif "Approved" in held:
        parsed.state = APPROVED
    with contextlib.suppress(KeyError, TypeError, ValueError):  # else no creation time
        parsed.created = as_utc(metadata["creationTimestamp"])
    parsed.error = _read_request(parsed, spec.get("request"))
    if parsed.error is None and (parsed.name is None or parsed.created is None):
        parsed.error = Finding("bad-object", "metadata.name or metadata.creationTimestamp is missing")
    return parsed


def _typed(value: Any, kind: type) -> Any:
    """``value`` when it is a ``kind``, else an empty one: anyone may file a CSR, its fields may hold anything."""
    return value if isinstance(value, kind) else kind()


def _strings(value: Any) -> list[str]:
    return [item for item in _typed(value, list) if isinstance(item, str)]


def _read_request(parsed: ParsedCSR, request_b64: Any) -> Finding | None:
    if not HAS_CRYPTOGRAPHY:
        return Finding("bad-request", "the Python library cryptography is missing, CSRs cannot be checked")
    if not isinstance(request_b64, (str, bytes)) or not request_b64:
        return Finding("bad-request", "spec.request is missing or not a string")
    try:
        pem = base64.b64decode(request_b64, validate=True)
    except (binascii.Error, ValueError):
        return Finding("bad-request", "spec.request is not valid base64")
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in pem:
        return Finding("bad-request", "spec.request does not hold a PEM CERTIFICATE REQUEST block")
    try:
        request = x509.load_pem_x509_csr(pem)
        subject, named = request.subject, (NameOID.COMMON_NAME, NameOID.ORGANIZATION_NAME)
        parsed.common_names, parsed.organizations = (
            [str(a.value) for a in subject.get_attributes_for_oid(oid)] for oid in named
        )
        parsed.other_subject_attributes = [a.oid.dotted_string for a in subject if a.oid not in named]
        sans: Any = next((e.value for e in request.extensions if isinstance(e.value, x509.SubjectAlternativeName)), [])
        for name in sans:
            address = parse_ip(str(name.value)) if isinstance(name, x509.IPAddress) else None
            if isinstance(name, x509.DNSName):
                parsed.dns_sans.append(name.value)
            elif address is not None:
                parsed.ip_sans.append(address)
            else:  # a network where an address belongs, e-mail, URI, other names: foreign to every host
                parsed.other_sans.append(f"{type(name).__name__} {getattr(name, 'value', '')}")
    except Exception as exc:  # cryptography raises several types for malformed DER
        return Finding("bad-request", f"spec.request is not a readable PKCS#10 request: {exc}")
    with contextlib.suppress(Exception):  # an unsupported signature algorithm cannot be verified: not valid
        parsed.signature_valid = bool(request.is_signature_valid)
    try:
        key = request.public_key()
        parsed.public_key_der = key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        if isinstance(key, ec.EllipticCurvePublicKey):
            curves = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
            parsed.key_type = f"ECDSA {curves.get(key.curve.name, key.curve.name)}"
        elif isinstance(key, rsa.RSAPublicKey):
            parsed.key_type = "RSA %d" % key.key_size
        else:
            parsed.key_type = type(key).__name__
    except Exception as exc:  # unknown key algorithms or curves
        parsed.key_type = f"unsupported ({exc})"
    return None


def dns_key(name: str) -> str:
    """DNS names compare case-insensitively and without a trailing dot."""
    return name.lower().rstrip(".")


@dataclasses.dataclass
class Expected:
    """A new worker as the policy sees it: its Node name, its inventory addresses and the DNS names its serving
    certificate may carry, ``not_before`` (server clock), before which no CSR of its current installation exists,
    and ``reported``: the IP addresses its own Node reports in status.addresses."""

    name: str
    addresses: frozenset[Any] = frozenset()
    dns_names: frozenset[str] = frozenset()
    not_before: datetime.datetime | None = None
    reported: frozenset[Any] = frozenset()


@dataclasses.dataclass
class Network:
    """The cluster's machine networks and VIPs (address text -> what it is), from the day1_facts."""

    machine_networks: tuple[Any, ...] = ()
    vips: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, facts: dict[str, Any]) -> Network:
        """From the facts' machine_networks (CIDR texts or {cidr}), api_vips and ingress_vips."""
        cidrs = [n.get("cidr") if isinstance(n, dict) else n for n in facts.get("machine_networks") or []]
        if bad := [cidr for cidr in cidrs if parse_network(cidr) is None]:
            what = "is not a CIDR such as 192.168.111.0/24: give the facts of day1_facts"
            raise InputError(f"cluster: field machine_networks value {bad[0]!r} {what}")
        vips = {str(parse_ip(v)): kind for key, kind in VIP_KINDS for v in facts.get(key) or [] if parse_ip(v)}
        return cls(tuple(parse_network(cidr) for cidr in cidrs), vips)


VIP_KINDS = (("api_vips", "API VIP"), ("ingress_vips", "ingress VIP"))


@dataclasses.dataclass
class Context:
    """What a check compares a CSR with: the new hosts by name, the existing Node names, the time, who holds each
    address (address text -> the Nodes reporting it and the new hosts given it) and the cluster's networks."""

    expected: dict[str, Expected]
    nodes: frozenset[str]
    now: datetime.datetime
    clock_skew: datetime.timedelta
    owners: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    network: Network = dataclasses.field(default_factory=Network)


def node_ips(node: Any) -> frozenset[Any]:
    """The IP addresses a Node reports in status.addresses (InternalIP, ExternalIP; a Hostname that is an IP)."""
    entries = ((node or {}).get("status") or {}).get("addresses") or [] if isinstance(node, dict) else []
    addresses = (parse_ip(e.get("address")) for e in entries if isinstance(e, dict))
    return frozenset(address for address in addresses if address is not None)


Check = Callable[[ParsedCSR, Context], "Finding | None"]


def _usages(csr: ParsedCSR, accepted: tuple[frozenset[str], ...]) -> Finding | None:
    if frozenset(csr.usages) in accepted:
        return None
    wanted = " or ".join(str(sorted(usages)) for usages in accepted)
    return Finding("bad-usages", f"expected usages {wanted}, found {sorted(csr.usages)}")


def check_state(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Only pending CSRs are candidates."""
    if csr.state == APPROVED:
        return Finding("already-approved", "already approved; nothing to do")
    if csr.state == DENIED_OR_FAILED:
        return Finding("denied/failed", "has a Denied or Failed condition; it will never be approved")
    return None


def check_signer(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A node-looking CSR for a signer other than the two kubelet signers."""
    if csr.signer in KUBELET_SIGNERS:
        return None
    return Finding("unexpected-signer", f"expected signer {CLIENT_SIGNER} or {SERVING_SIGNER}, found {csr.signer!r}")


def check_readable(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The object and its PKCS#10 request could be read."""
    return csr.error


def check_age(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Pending CSRs are garbage collected after 24 h; an older one is not genuine."""
    if csr.created is not None and ctx.now - csr.created <= MAX_PENDING_AGE:
        return None
    return Finding(
        "too-old",
        f"expected a CSR created within {MAX_PENDING_AGE} before {format_rfc3339(ctx.now)}, found creationTimestamp "
        f"{csr.created_text}",
    )


def check_signature(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The request is signed by the key it carries (proof of possession)."""
    if csr.signature_valid:
        return None
    return Finding("bad-signature", "the request signature does not verify with its own public key")


def check_key_type(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Only the key type the kubelet generates."""
    if csr.key_type in ACCEPTED_KEY_TYPES:
        return None
    wanted = " or ".join(sorted(ACCEPTED_KEY_TYPES))
    return Finding("key-type", f"expected a {wanted} key (what the kubelet generates), found {csr.key_type}")


def check_subject(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Subject is exactly one CN system:node:<host> plus O; nothing else."""
    if csr.host is None:
        return Finding(
            "bad-subject", f"expected exactly one subject CN {NODE_USER_PREFIX}<host>, found {csr.common_names!r}"
        )
    if csr.other_subject_attributes:
        return Finding(
            "bad-subject", f"expected a subject of only CN and O, found also {', '.join(csr.other_subject_attributes)}"
        )
    return None


def check_expected_node(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The CN names a new host."""
    if csr.host in ctx.expected:
        return None
    extra = " (an existing Node)" if csr.host in ctx.nodes else ""
    return Finding(
        "unknown-node",
        f"expected a CN naming one of the new hosts {sorted(ctx.expected)}, found {NODE_USER_PREFIX}{csr.host}{extra}",
    )


def check_not_before(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A CSR older than the host's current installation is not its kubelet's (a replay, or the old system's)."""
    node = ctx.expected.get(csr.host or "")
    not_before = node.not_before if node is not None else None
    if not_before is None or (csr.created is not None and csr.created >= not_before - ctx.clock_skew):
        return None
    return Finding(
        "before-not-before",
        f"expected a CSR created after {format_rfc3339(not_before)} (not_before of {csr.host}, minus "
        f"{int(ctx.clock_skew.total_seconds())}s clock skew), found {csr.created_text}",
    )


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


def check_node_absent(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A client certificate for an existing Node name would hand over that node's identity."""
    if csr.host not in ctx.nodes:
        return None
    return Finding(
        "node-exists",
        f"a Node named {csr.host} already exists; a new client certificate for it would hand its identity to whoever "
        "filed this CSR. To re-add this host, remove the old Node with playbooks/replace_worker.yml",
    )


def check_bootstrap_username(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The client CSR was filed with the node-bootstrapper credential."""
    if csr.username == BOOTSTRAP_USERNAME:
        return None
    return Finding("bad-username", f"expected spec.username {BOOTSTRAP_USERNAME}, found {csr.username!r}")


def check_bootstrap_groups(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Exactly the node-bootstrapper's groups."""
    if set(csr.groups) == BOOTSTRAP_GROUPS:
        return None
    return Finding("bad-groups", f"expected spec.groups exactly {sorted(BOOTSTRAP_GROUPS)}, found {sorted(csr.groups)}")


def check_client_organization(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """O exactly [system:nodes]: any other O becomes a group of the node user."""
    if csr.organizations == [NODES_GROUP]:
        return None
    return Finding("bad-organization", f"expected subject O exactly [{NODES_GROUP}], found {csr.organizations}")


def check_client_no_sans(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A kubelet client certificate carries no subject alternative names."""
    if not csr.all_sans:
        return None
    return Finding("client-has-sans", f"expected no subject alternative names, found {csr.all_sans}")


def check_client_usages(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The key usages the kubelet asks for a client certificate."""
    return _usages(csr, CLIENT_USAGES)


CLIENT_CHECKS: list[Check] = [
    check_node_absent,
    check_bootstrap_username,
    check_bootstrap_groups,
    check_client_organization,
    check_client_no_sans,
    check_client_usages,
]


def check_username_matches_cn(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A serving CSR is filed by the node itself, with its own client certificate."""
    if csr.username == NODE_USER_PREFIX + str(csr.host):
        return None
    return Finding(
        "username-cn-mismatch",
        f"expected spec.username {NODE_USER_PREFIX}{csr.host} (the subject CN), found {csr.username!r}",
    )


def check_node_groups(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """Filed by a node user: system:nodes and system:authenticated among the groups."""
    missing = SERVING_REQUIRED_GROUPS - set(csr.groups)
    if not missing:
        return None
    return Finding(
        "bad-groups",
        f"expected spec.groups to include {sorted(SERVING_REQUIRED_GROUPS)}, found {sorted(csr.groups)} (missing "
        f"{sorted(missing)})",
    )


def check_serving_organization(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """O contains system:nodes, as the kubelet writes it."""
    if NODES_GROUP in csr.organizations:
        return None
    return Finding("bad-organization", f"expected subject O to contain {NODES_GROUP}, found {csr.organizations}")


def check_serving_usages(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """The key usages the kubelet asks for a serving certificate."""
    return _usages(csr, SERVING_USAGES)


def check_serving_has_san(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """A serving certificate without a name or address serves nothing."""
    if csr.all_sans:
        return None
    return Finding("no-sans", f"expected at least one DNS or IP subject alternative name of {csr.host}, found none")


def _node(csr: ParsedCSR, ctx: Context) -> Expected:
    return ctx.expected.get(csr.host or "") or Expected(csr.host or "")


def _texts(addresses: Any) -> str:
    return ", ".join(sorted(str(address) for address in addresses)) or "none"


def _refused_sans(what: str, sans: list[str]) -> Finding | None:
    return None if not sans else Finding(what, f"SAN {'; SAN '.join(sans)}: the certificate would not be this host's")


def check_serving_sans_expected(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """DNS SANs are the node name only, IP SANs inventory addresses or addresses its own Node reports, no other SAN:
    a foreign one would let it impersonate another."""
    node = _node(csr, ctx)
    allowed_dns = node.dns_names | {dns_key(node.name)}
    names = " or ".join(sorted(allowed_dns))
    foreign = [f"{name} is not the node name {names}" for name in csr.dns_sans if dns_key(name) not in allowed_dns]
    foreign += [
        f"{ip} is neither an inventory address of {node.name} ({_texts(node.addresses)}) nor in the status.addresses "
        f"of its Node ({_texts(node.reported) if node.reported or node.name in ctx.nodes else 'no Node yet'})"
        for ip in csr.ip_sans
        if ip not in node.addresses and ip not in node.reported
    ]
    return _refused_sans("san-not-expected", foreign + [f"{other} is not a DNS name or IP" for other in csr.other_sans])


def check_serving_machine_networks(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """An address only the host's Node reports (not an inventory address) is inside a machine network."""
    node, networks = _node(csr, ctx), ctx.network.machine_networks
    outside = [ip for ip in csr.ip_sans if ip not in node.addresses and not any(ip in net for net in networks)]
    known = _texts(networks) if networks else "none known (csr_approve's cluster has no machine_networks)"
    return _refused_sans(
        "san-outside-machine-networks",
        [f"{ip}, reported by its Node, is outside the cluster's machine networks ({known})" for ip in outside],
    )


def check_serving_not_vip(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """No IP SAN is a VIP: the VIPs move between the cluster's nodes."""
    vips = ctx.network.vips
    return _refused_sans(
        "san-is-vip", [f"{ip} is the cluster's {vips[str(ip)]}" for ip in csr.ip_sans if str(ip) in vips]
    )


def check_serving_not_others(csr: ParsedCSR, ctx: Context) -> Finding | None:
    """No IP SAN belongs to another Node or another new host: a new node never gets another node's address."""
    others = [(ip, sorted(ctx.owners.get(str(ip), frozenset()) - {csr.host})) for ip in csr.ip_sans]
    return _refused_sans(
        "san-of-another-node", [f"{ip} is an address of {', '.join(names)}" for ip, names in others if names]
    )


SERVING_CHECKS: list[Check] = [
    check_username_matches_cn,
    check_node_groups,
    check_serving_organization,
    check_serving_usages,
    check_serving_has_san,
    check_serving_sans_expected,
    check_serving_machine_networks,
    check_serving_not_vip,
    check_serving_not_others,
]


def first_finding(csr: ParsedCSR, ctx: Context, skip: tuple[Check, ...] = ()) -> Finding | None:
    """The first check of this CSR's signer that refuses it (the checks in ``skip`` left out), or None."""
    checks = CSR_CHECKS + {CLIENT_SIGNER: CLIENT_CHECKS, SERVING_SIGNER: SERVING_CHECKS}.get(csr.signer or "", [])
    return next((f for f in (check(csr, ctx) for check in checks if check not in skip) if f is not None), None)


@dataclasses.dataclass
class HostCsrs:
    """All CSRs of one host, sorted by the policy.

    ``key``: the kubelet's client key when one client CSR is approved; ``client``: the pending client CSRs to
    approve (those with ``key``, or, while none is approved, with the one key all pending ones share); ``rogue``:
    client CSRs with another key than ``key``; ``ambiguous``: pending client CSRs of several keys while none is
    approved; ``serving``: the serving CSR to approve (the newest pending one, none once one of this installation
    is approved); ``refused``: CSRs of the host that fail a check, name -> "reason: message" (the pending serving
    CSRs among them in ``refused_serving`` while no serving CSR of this installation is approved).
    """

    approved: list[ParsedCSR] = dataclasses.field(default_factory=list)
    pending: list[ParsedCSR] = dataclasses.field(default_factory=list)
    key: bytes | None = None
    client: list[ParsedCSR] = dataclasses.field(default_factory=list)
    rogue: list[ParsedCSR] = dataclasses.field(default_factory=list)
    ambiguous: list[ParsedCSR] = dataclasses.field(default_factory=list)
    serving: list[ParsedCSR] = dataclasses.field(default_factory=list)
    refused: dict[str, str] = dataclasses.field(default_factory=dict)
    refused_serving: list[str] = dataclasses.field(default_factory=list)

    def refusals(self) -> str:
        """`` (refused: NAME: reason: message; ...)`` for a progress line, or "" when nothing is refused."""
        return " (refused: %s)" % "; ".join(map(": ".join, sorted(self.refused.items()))) if self.refused else ""

    def problem(self, host: str) -> str | None:
        """The message that stops the host, or None."""
        if len({csr.public_key_der for csr in self.approved}) > 1:
            return (
                f"client CSRs of {host} with different public keys are approved: {_describe(self.approved)}. A "
                "certificate for this node went to "
                "someone else: revoke it (rotate the kubelet CA), investigate who holds the bootstrap credential, "
                "remove the Node and add the host again with playbooks/replace_worker.yml"
            )
        if self.rogue:
            return (
                f"a second public key for {host}: {_describe(self.rogue)}, while the kubelet's key is "
                f"sha256:{self.approved[0].key_id} (approved: {', '.join(str(c.name) for c in self.approved)}). "
                "Someone else holds the bootstrap credential (it is in the worker Ignition config): nothing more is "
                f"approved for {host}. Delete the rogue CSR (oc delete csr "
                f"{' '.join(str(c.name) for c in self.rogue)}), find who filed it, then run again"
            )
        if self.ambiguous:
            return (
                "the pending client CSRs of %s carry %d different public keys: %s. One is the kubelet's, the other(s) "
                "were filed by someone else holding the bootstrap credential; which is which cannot be told from the "
                "cluster, so none is approved. Delete them all (oc delete csr NAME...), make sure nobody else holds "
                "the bootstrap credential, reboot the host (its kubelet files a new CSR) and run again"
                % (host, len({csr.public_key_der for csr in self.ambiguous}), _describe(self.ambiguous))
            )
        return None


def _describe(csrs: list[ParsedCSR]) -> str:
    return "; ".join(csr.describe() for csr in csrs)


def _order(csr: ParsedCSR) -> tuple[str, str]:
    return (csr.created_text or "", csr.name or "")


def host_csrs(csrs: list[ParsedCSR], ctx: Context, host: str) -> HostCsrs:
    """Sort the CSRs of ``host``. A client CSR is well-formed when it passes every check but its state and the
    Node's absence (a second key after the Node joined must still be seen)."""
    found = HostCsrs()
    serving_candidates, serving_done = [], False
    for csr in csrs:
        if csr.host != host or csr.state == DENIED_OR_FAILED:
            continue
        if csr.signer == CLIENT_SIGNER:
            finding = first_finding(csr, ctx, skip=(check_state, check_node_absent))
            if finding is not None:
                found.refused[str(csr.name)] = f"{finding.reason}: {finding.message}"
            else:
                (found.approved if csr.state == APPROVED else found.pending).append(csr)
        elif csr.signer == SERVING_SIGNER:
            finding = first_finding(csr, ctx)
            if finding is None:
                serving_candidates.append(csr)
            elif csr.state == APPROVED:
                serving_done = serving_done or (check_not_before(csr, ctx) is None and csr.error is None)
            else:
                found.refused[str(csr.name)] = f"{finding.reason}: {finding.message}"
                found.refused_serving.append(str(csr.name))
    keys = {csr.public_key_der for csr in found.approved}
    if len(keys) == 1:
        found.key = next(iter(keys))
        found.rogue = [csr for csr in found.pending if csr.public_key_der != found.key]
        found.client = sorted((csr for csr in found.pending if csr.public_key_der == found.key), key=_order)
    elif not keys:
        if len({csr.public_key_der for csr in found.pending}) > 1:
            found.ambiguous = sorted(found.pending, key=_order)
        else:
            found.client = sorted(found.pending, key=_order)
    if serving_candidates and not serving_done:
        found.serving = [max(serving_candidates, key=_order)]
    found.refused_serving = [] if serving_done else found.refused_serving
    return found


def each_host(
    csrs: list[ParsedCSR],
    expected: dict[str, Expected],
    nodes: dict[str, Any],
    now: datetime.datetime,
    clock_skew: datetime.timedelta,
    network: Network | None = None,
) -> dict[str, HostCsrs]:
    """``host_csrs`` of every new host, each seen alone, with what its own Node reports, who holds each address
    (every Node by its status.addresses, every new host by its inventory addresses) and the cluster's networks."""
    reported = {name: node_ips(node) for name, node in nodes.items()}
    holders = [*reported.items(), *((host.name, host.addresses) for host in expected.values())]
    owners: dict[str, frozenset[str]] = {}
    for name, addresses in holders:
        for address in map(str, addresses):
            owners[address] = owners.get(address, frozenset()) | {name}
    every = Context({}, frozenset(nodes), now, clock_skew, owners, network or Network())
    own = {name: dataclasses.replace(host, reported=reported.get(name, frozenset())) for name, host in expected.items()}
    return {
        name: host_csrs(csrs, dataclasses.replace(every, expected={name: host}), name) for name, host in own.items()
    }


def flood(csrs: list[ParsedCSR], hosts: frozenset[str], now: datetime.datetime) -> str | None:
    """The message that stops every approval when more pending CSRs name the new hosts than kubelets file, or None."""
    limit = max(FLOOD_MINIMUM, FLOOD_PER_NODE * len(hosts))
    start = now - FLOOD_WINDOW
    count = sum(1 for c in csrs if c.state == PENDING and c.host in hosts and c.created and c.created >= start)
    if count <= limit:
        return None
    return (
        "expected at most %d pending CSRs for the %d new hosts within %s, found %d: approving nothing until someone "
        "looks (docs/csr-approval.md)" % (limit, len(hosts), FLOOD_WINDOW, count)
    )
