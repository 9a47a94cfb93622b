# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Build real CertificateSigningRequest objects (API JSON) with cryptography, for the CSR policy tests.

The defaults are what a kubelet of a new worker files (docs/csr-approval.md); every field can be overridden to
make a rogue variant. ``context`` is the policy's view of the inventory the tests share (EXPECTED, EXISTING);
``finding`` and ``sort_host`` run the policy of plugins/module_utils/_join/csr.py through the module object, so
that tests/mutation/csr_policy_mutations.py can disable one rule at a time.
"""

import base64
import datetime
import hashlib
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import csr as policy

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
BOOTSTRAP_USERNAME = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
BOOTSTRAP_GROUPS = [
    "system:serviceaccounts:openshift-machine-config-operator",
    "system:serviceaccounts",
    "system:authenticated",
]
NODE_GROUPS = ["system:nodes", "system:authenticated"]
CLIENT_USAGES = ["digital signature", "client auth"]
SERVING_USAGES = ["digital signature", "server auth"]

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
SECOND = datetime.timedelta(seconds=1)
MINUTE = datetime.timedelta(minutes=1)
HOUR = datetime.timedelta(hours=1)
SKEW = 2 * SECOND  # csr_approve's default clock_skew

# The inventory of the policy tests: three new hosts (worker-2 with not_before) and the Nodes that exist.
EXPECTED = [
    {"name": "worker-0", "addresses": ["127.0.111.20", "fd00::20"], "dns_names": ["worker-0.lab.example.com"]},
    {"name": "worker-1", "addresses": ["127.0.111.21"]},
    {"name": "worker-2", "addresses": ["127.0.111.22"], "not_before": NOW - HOUR},
]
EXISTING = ["master-0", "master-1", "master-2", "worker-3"]
EXPECTED_WITH_EXISTING = [*EXPECTED, {"name": "worker-3", "addresses": ["127.0.111.23"]}]


# The networks of the policy tests: a dual-stack machine network, its VIPs, and who holds which address.
MACHINE_NETWORKS = ["127.0.111.0/24", "fd2e:6f44:5dd8:c956::/64"]
NETWORK_FACTS = {
    "machine_networks": MACHINE_NETWORKS,
    "api_vips": ["127.0.111.5", "fd2e:6f44:5dd8:c956::5"],
    "ingress_vips": ["127.0.111.4", "fd2e:6f44:5dd8:c956::4"],
}
OWNERS = {
    "fd2e:6f44:5dd8:c956::10": ["master-0"],
    "127.0.111.10": ["master-0"],
    "127.0.111.20": ["worker-0"],
    "127.0.111.21": ["worker-1"],
}


def expected_host(name, addresses=(), dns_names=(), not_before=None, reported=()):
    """A new host as the policy sees it (what the engine's Host.expected makes; ``reported``: its Node's IPs)."""
    return policy.Expected(
        name,
        frozenset(parse_ip(address) for address in addresses),
        frozenset(policy.dns_key(dns) for dns in dns_names),
        not_before,
        frozenset(parse_ip(address) for address in reported),
    )


def context(expected=None, existing=None, now=NOW, clock_skew=SKEW, owners=None, network=None):
    """The policy's Context for EXPECTED and EXISTING unless told otherwise (expected: dicts of Expected's fields;
    owners: address -> names, OWNERS by default; network: day1_facts keys, NETWORK_FACTS by default)."""
    hosts = EXPECTED if expected is None else expected
    return policy.Context(
        {host["name"]: expected_host(**host) for host in hosts},
        frozenset(EXISTING if existing is None else existing),
        now,
        clock_skew,
        {address: frozenset(names) for address, names in (OWNERS if owners is None else owners).items()},
        policy.Network.of(NETWORK_FACTS if network is None else network),
    )


def finding(obj, **kwargs):
    """``(reason, message)`` of the first check that refuses ``obj``, ``("valid", None)`` when none does."""
    found = policy.first_finding(policy.parse_csr(obj), context(**kwargs))
    return ("valid", None) if found is None else (found.reason, found.message)


def sort_host(objs, host, **kwargs):
    """policy.host_csrs of ``host`` over ``objs`` (API JSON)."""
    return policy.host_csrs([policy.parse_csr(obj) for obj in objs], context(**kwargs), host)


def names(csrs):
    return [csr.name for csr in csrs]


def make_key(kind="p256"):
    """A fresh private key: p256 (what the kubelet uses), p384, rsa2048 or ed25519."""
    if kind == "p256":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "p384":
        return ec.generate_private_key(ec.SECP384R1())
    if kind == "rsa2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise ValueError("unknown key kind %s" % kind)


def make_request_pem(
    key, common_names=(), organizations=("system:nodes",), extra_subject=(), dns=(), ips=(), emails=(), uris=()
):
    """A signed PKCS#10 request in PEM. extra_subject: (NameOID, value) pairs."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes += [x509.NameAttribute(oid, value) for oid, value in extra_subject]
    attributes += [x509.NameAttribute(NameOID.COMMON_NAME, cn) for cn in common_names]
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes))
    names = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    names += [x509.RFC822Name(e) for e in emails]
    names += [x509.UniformResourceIdentifier(u) for u in uris]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.PEM)


def tamper_signature(pem):
    """Flip a bit of the last signature byte: still a well-formed CSR, signature invalid."""
    request = x509.load_pem_x509_csr(pem)
    der = bytearray(request.public_bytes(serialization.Encoding.DER))
    # The signature BIT STRING ends the DER; its last byte is deep inside the value.
    der[-1] ^= 0x01
    body = base64.encodebytes(bytes(der)).decode("ascii")
    return ("-----BEGIN CERTIFICATE REQUEST-----\n%s-----END CERTIFICATE REQUEST-----\n" % body).encode("ascii")


def csr_object(
    request_pem, signer, username, groups, usages, name=None, created=None, conditions=None, raw_request=None
):
    """A CertificateSigningRequest as the API returns it. raw_request replaces spec.request verbatim."""
    if raw_request is None:
        request = base64.b64encode(request_pem).decode("ascii")
    else:
        request = raw_request
    if name is None:
        name = "csr-" + hashlib.sha256(request.encode("ascii", "replace") + signer.encode()).hexdigest()[:10]
    created = created or NOW - datetime.timedelta(minutes=5)
    obj = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name, "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ")},
        "spec": {
            "request": request,
            "signerName": signer,
            "username": username,
            "groups": list(groups),
            "usages": list(usages),
        },
        "status": {},
    }
    if conditions:
        obj["status"]["conditions"] = [
            {"type": c, "status": "True", "reason": "Test", "message": "test"} for c in conditions
        ]
    return obj


def client_csr(
    host,
    key=None,
    common_names=None,
    organizations=("system:nodes",),
    extra_subject=(),
    dns=(),
    ips=(),
    emails=(),
    uris=(),
    signer=CLIENT_SIGNER,
    username=BOOTSTRAP_USERNAME,
    groups=None,
    usages=None,
    tamper=False,
    **kwargs,
):
    """The kubelet's bootstrap client CSR for host, or a variant of it."""
    pem = make_request_pem(
        key or make_key(),
        common_names=["system:node:" + host] if common_names is None else common_names,
        organizations=organizations,
        extra_subject=extra_subject,
        dns=dns,
        ips=ips,
        emails=emails,
        uris=uris,
    )
    if tamper:
        pem = tamper_signature(pem)
    return csr_object(
        pem,
        signer,
        username,
        BOOTSTRAP_GROUPS if groups is None else groups,
        CLIENT_USAGES if usages is None else usages,
        **kwargs,
    )


def serving_csr(
    host,
    ips=(),
    dns=(),
    key=None,
    common_names=None,
    organizations=("system:nodes",),
    emails=(),
    uris=(),
    signer=SERVING_SIGNER,
    username=None,
    groups=None,
    usages=None,
    tamper=False,
    **kwargs,
):
    """The kubelet's serving CSR for host, or a variant of it."""
    pem = make_request_pem(
        key or make_key(),
        common_names=["system:node:" + host] if common_names is None else common_names,
        organizations=organizations,
        dns=dns,
        ips=ips,
        emails=emails,
        uris=uris,
    )
    if tamper:
        pem = tamper_signature(pem)
    return csr_object(
        pem,
        signer,
        "system:node:" + host if username is None else username,
        NODE_GROUPS if groups is None else groups,
        SERVING_USAGES if usages is None else usages,
        **kwargs,
    )
