# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which kubelet CSRs of new workers may be approved (FACTS.md section 5).

Pure policy: no I/O and no Ansible. Input is the Kubernetes API JSON of
certificates.k8s.io/v1 CertificateSigningRequest objects, the nodes the inventory
expects, the names of the Nodes that exist and the current time. Output is one
Decision per CSR that concerns kubelets. Nothing is ever denied: a CSR we do not
approve may belong to someone else, so it is only skipped with a reason.

Every rule is a small named function in CSR_CHECKS / CLIENT_CHECKS /
SERVING_CHECKS (one CSR at a time) or GROUP_RULES (all CSRs of one node and
signer together), so that each can be reasoned about, tested and disabled on its
own (tests/mutation/csr_policy_mutations.py does exactly that).
"""

import base64
import binascii
import datetime
import ipaddress
import traceback

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
    from cryptography.x509.oid import NameOID

    HAS_CRYPTOGRAPHY = True
    CRYPTOGRAPHY_IMPORT_ERROR = None
except ImportError:
    HAS_CRYPTOGRAPHY = False
    CRYPTOGRAPHY_IMPORT_ERROR = traceback.format_exc()


CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
KUBELET_SIGNERS = (CLIENT_SIGNER, SERVING_SIGNER)

BOOTSTRAP_USERNAME = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
BOOTSTRAP_GROUPS = frozenset(
    [
        "system:serviceaccounts:openshift-machine-config-operator",
        "system:serviceaccounts",
        "system:authenticated",
    ]
)
NODE_USER_PREFIX = "system:node:"
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
# Flood guard: pending node CSRs for the expected hosts created within this window...
FLOOD_WINDOW = datetime.timedelta(hours=1)
# ...may number at most max(FLOOD_MINIMUM, FLOOD_PER_NODE x expected hosts).
FLOOD_MINIMUM = 10
FLOOD_PER_NODE = 4

APPROVE = "approve"
SKIP = "skip"

PENDING = "pending"
APPROVED = "approved"
DENIED_OR_FAILED = "denied/failed"

REPLACE_HINT = "playbooks/replace_worker.yml"


class Finding:
    """Why a rule refuses a CSR: a short machine reason and a human message."""

    def __init__(self, reason, message):
        self.reason = reason
        self.message = message

    def __repr__(self):
        return "Finding(%r, %r)" % (self.reason, self.message)


class ExpectedNode:
    """A host of the inventory that is about to join.

    name: the Node name the kubelet will register (lowercase host name);
    addresses: its IP addresses; dns_names: extra DNS names its serving
    certificate may carry; not_before: an aware datetime before which no CSR of
    this host can be genuine (e.g. when its ISO was built or it was booted).
    """

    def __init__(self, name, addresses=(), dns_names=(), not_before=None):
        self.name = name
        self.addresses = frozenset(ipaddress.ip_address("%s" % a) for a in addresses)
        self.dns_names = frozenset(_dns_key(n) for n in dns_names)
        self.not_before = _as_utc(not_before) if not_before is not None else None

    @classmethod
    def from_value(cls, value):
        """Accept an ExpectedNode or a dict with the same keys."""
        if isinstance(value, cls):
            return value
        return cls(value["name"], value.get("addresses") or (), value.get("dns_names") or (), value.get("not_before"))


class ParsedCSR:
    """The fields of one CSR object that the policy looks at.

    Built by parse_csr, which never raises: when the object or its request
    cannot be read, error holds a Finding and the request fields stay empty.
    """

    def __init__(self):
        self.name = None
        self.created = None
        self.signer = None
        self.username = None
        self.groups = []
        self.usages = []
        self.state = PENDING
        self.error = None
        self.common_names = []
        self.organizations = []
        self.other_subject_attributes = []
        self.dns_sans = []
        self.ip_sans = []
        self.email_sans = []
        self.uri_sans = []
        self.other_sans = []
        self.key_type = None
        self.public_key_der = None
        self.signature_valid = False

    @property
    def host(self):
        """The host named by the subject CN system:node:<host>, or None."""
        if len(self.common_names) != 1:
            return None
        cn = self.common_names[0]
        if not cn.startswith(NODE_USER_PREFIX) or len(cn) == len(NODE_USER_PREFIX):
            return None
        return cn[len(NODE_USER_PREFIX) :]

    @property
    def looks_like_node_csr(self):
        return any(cn.startswith(NODE_USER_PREFIX) for cn in self.common_names)

    @property
    def all_sans(self):
        return self.dns_sans + [str(ip) for ip in self.ip_sans] + self.email_sans + self.uri_sans + self.other_sans


class Decision:
    """What to do with one CSR and why."""

    FIELDS = ("name", "node", "signer", "action", "reason", "message", "created")

    def __init__(self, name, node, signer, action, reason, message, created):
        self.name = name
        self.node = node
        self.signer = signer
        self.action = action
        self.reason = reason
        self.message = message
        self.created = created

    def to_dict(self):
        return {field: getattr(self, field) for field in self.FIELDS}

    def __repr__(self):
        return "Decision(%s)" % ", ".join("%s=%r" % (f, getattr(self, f)) for f in self.FIELDS)


class FloodVerdict:
    """Result of flood_guard: flood is True when approving must stop."""

    def __init__(self, flood, count, threshold, message):
        self.flood = flood
        self.reason = "flood" if flood else "ok"
        self.count = count
        self.threshold = threshold
        self.message = message


class Context:
    """What the per-CSR checks compare a CSR with."""

    def __init__(self, expected, existing_node_names, now, clock_skew):
        self.expected = expected
        self.existing_node_names = existing_node_names
        self.now = now
        self.clock_skew = clock_skew


class Group:
    """All CSRs of one node for one signer: valid pending candidates and those
    already approved in this run (settled)."""

    def __init__(self, node, signer):
        self.node = node
        self.signer = signer
        self.candidates = []
        self.settled = []


# ---------------------------------------------------------------- parsing


def _as_utc(value):
    """An aware UTC datetime from a datetime (naive means UTC) or an RFC 3339 string."""
    if isinstance(value, datetime.datetime):
        moment = value
    else:
        text = "%s" % value
        if text.endswith("Z") or text.endswith("z"):
            text = text[:-1] + "+00:00"
        # Python 3.9 fromisoformat accepts only 3 or 6 fraction digits: drop fractions.
        if "." in text:
            head, tail = text.split(".", 1)
            zone = ""
            for sign in ("+", "-"):
                if sign in tail:
                    zone = tail[tail.index(sign) :]
            text = head + zone
        moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc)


def _dns_key(name):
    """DNS names compare case-insensitively and without a trailing dot."""
    return name.lower().rstrip(".")


def _condition_state(conditions):
    state = PENDING
    for condition in conditions or []:
        if not isinstance(condition, dict) or condition.get("status", "True") != "True":
            continue
        if condition.get("type") in ("Denied", "Failed"):
            return DENIED_OR_FAILED
        if condition.get("type") == "Approved":
            state = APPROVED
    return state


def _string_list(value):
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def _describe_key(public_key):
    """A short name such as 'ECDSA P-256' or 'RSA 2048' for messages and ACCEPTED_KEY_TYPES."""
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        curves = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
        return "ECDSA %s" % curves.get(public_key.curve.name, public_key.curve.name)
    if isinstance(public_key, rsa.RSAPublicKey):
        return "RSA %d" % public_key.key_size
    if isinstance(public_key, dsa.DSAPublicKey):
        return "DSA %d" % public_key.key_size
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return "Ed25519"
    if isinstance(public_key, ed448.Ed448PublicKey):
        return "Ed448"
    return type(public_key).__name__


def _read_subject(parsed, request):
    for attribute in request.subject:
        if attribute.oid == NameOID.COMMON_NAME:
            parsed.common_names.append(attribute.value)
        elif attribute.oid == NameOID.ORGANIZATION_NAME:
            parsed.organizations.append(attribute.value)
        else:
            parsed.other_subject_attributes.append(attribute.oid.dotted_string)


def _read_sans(parsed, request):
    try:
        extension = request.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return
    for general_name in extension.value:
        if isinstance(general_name, x509.DNSName):
            parsed.dns_sans.append(general_name.value)
        elif isinstance(general_name, x509.IPAddress):
            parsed.ip_sans.append(general_name.value)
        elif isinstance(general_name, x509.RFC822Name):
            parsed.email_sans.append(general_name.value)
        elif isinstance(general_name, x509.UniformResourceIdentifier):
            parsed.uri_sans.append(general_name.value)
        else:
            parsed.other_sans.append(type(general_name).__name__)


def _read_request(parsed, request_b64):
    """Fill the request fields from spec.request; return a Finding on failure."""
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
        _read_subject(parsed, request)
        _read_sans(parsed, request)
    except Exception as exc:  # cryptography raises several types for malformed DER
        return Finding("bad-request", "spec.request is not a readable PKCS#10 request: %s" % exc)
    try:
        parsed.signature_valid = bool(request.is_signature_valid)
    except Exception:  # an unsupported signature algorithm cannot be verified
        parsed.signature_valid = False
    try:
        public_key = request.public_key()
        parsed.key_type = _describe_key(public_key)
        parsed.public_key_der = public_key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    except Exception as exc:  # unknown key algorithms or curves
        parsed.key_type = "unsupported (%s)" % exc
    return None


def parse_csr(obj):
    """Read one CSR object (API JSON as a dict). Never raises.

    Garbage gives a ParsedCSR whose error is a Finding ('bad-object' or
    'bad-request'); the envelope fields that could be read are kept.
    """
    parsed = ParsedCSR()
    if not isinstance(obj, dict):
        parsed.error = Finding("bad-object", "not a CertificateSigningRequest object")
        return parsed
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    name = metadata.get("name")
    parsed.name = name if isinstance(name, str) and name else None
    parsed.signer = spec.get("signerName") if isinstance(spec.get("signerName"), str) else None
    parsed.username = spec.get("username") if isinstance(spec.get("username"), str) else None
    parsed.groups = _string_list(spec.get("groups"))
    parsed.usages = _string_list(spec.get("usages"))
    parsed.state = _condition_state(status.get("conditions"))
    try:
        parsed.created = _as_utc(metadata["creationTimestamp"])
    except (KeyError, TypeError, ValueError):
        parsed.created = None
    parsed.error = _read_request(parsed, spec.get("request"))
    if parsed.error is None and (parsed.name is None or parsed.created is None):
        parsed.error = Finding("bad-object", "metadata.name or metadata.creationTimestamp is missing")
    return parsed


# ---------------------------------------------------------------- per-CSR checks
# Each check takes (ParsedCSR, Context) and returns None (passed) or a Finding.


def check_state(csr, ctx):
    """Only pending CSRs are candidates."""
    if csr.state == APPROVED:
        return Finding("already-approved", "already approved; nothing to do")
    if csr.state == DENIED_OR_FAILED:
        return Finding("denied/failed", "has a Denied or Failed condition; it will never be approved")
    return None


def check_signer(csr, ctx):
    """A node-looking CSR for a signer other than the two kubelet signers."""
    if csr.signer not in KUBELET_SIGNERS:
        return Finding(
            "unexpected-signer", "expected signer %s or %s, found %r" % (CLIENT_SIGNER, SERVING_SIGNER, csr.signer)
        )
    return None


def check_readable(csr, ctx):
    """The object and its PKCS#10 request could be read."""
    return csr.error


def check_age(csr, ctx):
    """Pending CSRs are garbage collected after 24 h; an older one is not genuine."""
    if csr.created is None or ctx.now - csr.created > MAX_PENDING_AGE:
        return Finding(
            "too-old",
            "expected a CSR created within %s before %s, found creationTimestamp %s"
            % (MAX_PENDING_AGE, _iso(ctx.now), _iso(csr.created)),
        )
    return None


def check_signature(csr, ctx):
    """The request is signed by the key it carries (proof of possession)."""
    if not csr.signature_valid:
        return Finding("bad-signature", "the request signature does not verify with its own public key")
    return None


def check_key_type(csr, ctx):
    """Only the key type the kubelet generates."""
    if csr.key_type not in ACCEPTED_KEY_TYPES:
        return Finding(
            "key-type",
            "expected a %s key (what the kubelet generates), found %s"
            % (" or ".join(sorted(ACCEPTED_KEY_TYPES)), csr.key_type),
        )
    return None


def check_subject(csr, ctx):
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


def check_expected_node(csr, ctx):
    """The CN names a host of the inventory."""
    if csr.host not in ctx.expected:
        extra = " (an existing Node)" if csr.host in ctx.existing_node_names else ""
        return Finding(
            "unknown-node",
            "expected a CN naming one of the new hosts %s, found %s%s%s"
            % (sorted(ctx.expected), NODE_USER_PREFIX, csr.host, extra),
        )
    return None


def check_not_before(csr, ctx):
    """Not created before the host could have asked (minus clock skew)."""
    node = ctx.expected.get(csr.host)
    if node is None or node.not_before is None:
        return None
    if csr.created is None or csr.created < node.not_before - ctx.clock_skew:
        return Finding(
            "before-not-before",
            "expected a CSR created after %s (not_before of %s, minus %ss "
            "clock skew), found %s"
            % (_iso(node.not_before), csr.host, int(ctx.clock_skew.total_seconds()), _iso(csr.created)),
        )
    return None


def check_node_absent(csr, ctx):
    """A client certificate for an existing Node name would hand over that node's identity."""
    if csr.host in ctx.existing_node_names:
        return Finding(
            "node-exists",
            "a Node named %s already exists; a new client certificate for it would "
            "hand its identity to whoever filed this CSR. To re-add this host, remove the old Node "
            "with %s" % (csr.host, REPLACE_HINT),
        )
    return None


def check_bootstrap_username(csr, ctx):
    """The client CSR was filed with the node-bootstrapper credential."""
    if csr.username != BOOTSTRAP_USERNAME:
        return Finding("bad-username", "expected spec.username %s, found %r" % (BOOTSTRAP_USERNAME, csr.username))
    return None


def check_bootstrap_groups(csr, ctx):
    """Exactly the node-bootstrapper's groups."""
    if set(csr.groups) != BOOTSTRAP_GROUPS:
        return Finding(
            "bad-groups", "expected spec.groups exactly %s, found %s" % (sorted(BOOTSTRAP_GROUPS), sorted(csr.groups))
        )
    return None


def check_client_organization(csr, ctx):
    """O exactly [system:nodes]: any other O becomes a group of the node user."""
    if csr.organizations != [NODES_GROUP]:
        return Finding(
            "bad-organization", "expected subject O exactly [%s], found %s" % (NODES_GROUP, csr.organizations)
        )
    return None


def check_client_no_sans(csr, ctx):
    """A kubelet client certificate carries no subject alternative names."""
    if csr.all_sans:
        return Finding("client-has-sans", "expected no subject alternative names, found %s" % csr.all_sans)
    return None


def check_client_usages(csr, ctx):
    if frozenset(csr.usages) not in CLIENT_USAGES:
        return Finding(
            "bad-usages",
            "expected usages %s, found %s" % (" or ".join(str(sorted(u)) for u in CLIENT_USAGES), sorted(csr.usages)),
        )
    return None


def check_username_matches_cn(csr, ctx):
    """A serving CSR is filed by the node itself, with its own client certificate."""
    if csr.username != "%s%s" % (NODE_USER_PREFIX, csr.host):
        return Finding(
            "username-cn-mismatch",
            "expected spec.username %s%s (the subject CN), found %r" % (NODE_USER_PREFIX, csr.host, csr.username),
        )
    return None


def check_node_groups(csr, ctx):
    missing = SERVING_REQUIRED_GROUPS - set(csr.groups)
    if missing:
        return Finding(
            "bad-groups",
            "expected spec.groups to include %s, found %s (missing %s)"
            % (sorted(SERVING_REQUIRED_GROUPS), sorted(csr.groups), sorted(missing)),
        )
    return None


def check_serving_organization(csr, ctx):
    if NODES_GROUP not in csr.organizations:
        return Finding(
            "bad-organization", "expected subject O to contain %s, found %s" % (NODES_GROUP, csr.organizations)
        )
    return None


def check_serving_usages(csr, ctx):
    if frozenset(csr.usages) not in SERVING_USAGES:
        return Finding(
            "bad-usages",
            "expected usages %s, found %s" % (" or ".join(str(sorted(u)) for u in SERVING_USAGES), sorted(csr.usages)),
        )
    return None


def check_serving_has_san(csr, ctx):
    """A serving certificate without a name or address serves nothing."""
    if not csr.all_sans:
        return Finding(
            "no-sans", "expected at least one DNS or IP subject alternative name of %s, found none" % csr.host
        )
    return None


def check_serving_sans_expected(csr, ctx):
    """Every SAN is an address or name of this host: a foreign one would let it impersonate another."""
    node = ctx.expected.get(csr.host) or ExpectedNode(csr.host or "")
    allowed_dns = node.dns_names | frozenset([_dns_key(node.name)])
    foreign = [name for name in csr.dns_sans if _dns_key(name) not in allowed_dns]
    foreign += [str(ip) for ip in csr.ip_sans if ip not in node.addresses]
    foreign += csr.email_sans + csr.uri_sans + csr.other_sans
    if foreign:
        return Finding(
            "san-not-expected",
            "expected DNS names %s and IP addresses %s only, found also %s"
            % (sorted(allowed_dns), sorted(str(a) for a in node.addresses), foreign),
        )
    return None


CSR_CHECKS = [
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
CLIENT_CHECKS = [
    check_node_absent,
    check_bootstrap_username,
    check_bootstrap_groups,
    check_client_organization,
    check_client_no_sans,
    check_client_usages,
]
SERVING_CHECKS = [
    check_username_matches_cn,
    check_node_groups,
    check_serving_organization,
    check_serving_usages,
    check_serving_has_san,
    check_serving_sans_expected,
]


# ---------------------------------------------------------------- group rules
# Each rule takes a Group and returns {csr name: Finding} for candidates it refuses.


def rule_single_client_key(group):
    """All genuine client CSRs of one node carry the kubelet's one bootstrap key."""
    if group.signer != CLIENT_SIGNER:
        return {}
    keys = {csr.public_key_der for csr in group.candidates + group.settled}
    if len(keys) < 2:
        return {}
    names = sorted(csr.name for csr in group.candidates + group.settled)
    finding = Finding(
        "possible-spoofing",
        "expected every client CSR of %s to carry the same public key, found "
        "%d different keys in %s: someone else may hold the bootstrap credential; approve none, "
        "investigate, delete the rogue CSRs" % (group.node, len(keys), ", ".join(names)),
    )
    return {csr.name: finding for csr in group.candidates}


def rule_one_approval_per_run(group):
    """A node gets one certificate per signer in a run."""
    if not group.settled:
        return {}
    names = ", ".join(sorted(csr.name for csr in group.settled))
    finding = Finding(
        "node-already-approved",
        "expected no second approval for %s, found %s already approved for this signer" % (group.node, names),
    )
    return {csr.name: finding for csr in group.candidates}


def rule_newest_wins(group):
    """Only the newest request of a node is approved; older ones are retries."""
    if len(group.candidates) < 2:
        return {}
    newest = max(group.candidates, key=lambda csr: (csr.created, csr.name))
    finding = Finding("superseded", "a newer CSR of %s for this signer exists: %s" % (group.node, newest.name))
    return {csr.name: finding for csr in group.candidates if csr is not newest}


GROUP_RULES = [
    rule_single_client_key,
    rule_one_approval_per_run,
    rule_newest_wins,
]


# ---------------------------------------------------------------- flood guard


def flood_threshold(expected_count):
    return max(FLOOD_MINIMUM, FLOOD_PER_NODE * expected_count)


def flood_guard(csrs, expected_names, now):
    """Refuse to approve anything when too many recent pending CSRs name the expected hosts.

    csrs: CSR objects (API JSON dicts) or ParsedCSR; expected_names: the new
    hosts' names. A kubelet has at most one client and one serving CSR pending
    and refiles after about an hour; many more means someone is filing CSRs
    for our hosts (docs/csr-approval.md explains the threshold).
    """
    parsed_csrs = [csr if isinstance(csr, ParsedCSR) else parse_csr(csr) for csr in csrs]
    expected_names = frozenset(expected_names)
    window_start = _as_utc(now) - FLOOD_WINDOW
    count = sum(
        1
        for csr in parsed_csrs
        if csr.state == PENDING
        and csr.host in expected_names
        and csr.created is not None
        and csr.created >= window_start
    )
    threshold = flood_threshold(len(expected_names))
    if count > threshold:
        return FloodVerdict(
            True,
            count,
            threshold,
            "expected at most %d pending CSRs for the %d new hosts within %s, "
            "found %d: approving nothing until someone looks" % (threshold, len(expected_names), FLOOD_WINDOW, count),
        )
    return FloodVerdict(
        False,
        count,
        threshold,
        "%d pending CSRs for the new hosts within %s (limit %d)" % (count, FLOOD_WINDOW, threshold),
    )


# ---------------------------------------------------------------- decide


def _iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else None


def _is_ours(csr):
    """Kubelet-signer CSRs, and node-looking CSRs sent to another signer."""
    return csr.signer in KUBELET_SIGNERS or csr.looks_like_node_csr


def _first_finding(csr, ctx):
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


def _settled_in_run(csr, ctx):
    """Approved earlier in this run: approved, of an expected host, not older than its not_before."""
    if csr.state != APPROVED or csr.error is not None or csr.host not in ctx.expected:
        return False
    node = ctx.expected[csr.host]
    return node.not_before is None or csr.created >= node.not_before - ctx.clock_skew


def _approval_message(csr):
    kind = "client" if csr.signer == CLIENT_SIGNER else "serving"
    return "%s CSR of new host %s: every check passed" % (kind, csr.host)


def decide(csrs, expected_nodes, existing_node_names, now, clock_skew=DEFAULT_CLOCK_SKEW):
    """Decide, for all CSR objects of the cluster at once, which to approve.

    csrs: every CSR object (API JSON dicts), pending or not, so that approvals
    made earlier in the run count; expected_nodes: ExpectedNode objects or dicts;
    existing_node_names: names of the Nodes that exist; now: aware datetime.
    Returns one Decision per CSR that concerns kubelets, in input order.
    """
    now = _as_utc(now)
    expected = {node.name: node for node in (ExpectedNode.from_value(n) for n in expected_nodes)}
    ctx = Context(expected, frozenset(existing_node_names), now, clock_skew)
    parsed = [csr for csr in (parse_csr(obj) for obj in csrs) if _is_ours(csr)]

    findings = {}
    groups = {}
    for csr in parsed:
        finding = _first_finding(csr, ctx)
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

    verdict = flood_guard(parsed, frozenset(expected), now)
    decisions = []
    for csr in parsed:
        finding = findings.get(id(csr))
        if finding is None and verdict.flood:
            finding = Finding("flood", verdict.message)
        if finding is None:
            action, reason, message = APPROVE, "valid", _approval_message(csr)
        else:
            action, reason, message = SKIP, finding.reason, finding.message
        decisions.append(Decision(csr.name, csr.host, csr.signer, action, reason, message, _iso(csr.created)))
    return decisions
