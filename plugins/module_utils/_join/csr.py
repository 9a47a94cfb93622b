# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Read a certificates.k8s.io/v1 CertificateSigningRequest object into the fields the approval policy looks at.

``parse_csr`` never raises: a CSR anyone may file is untrusted input. No I/O, no Ansible.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import traceback
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import as_utc, format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
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

# The state a CSR's conditions give it.
PENDING = "pending"
APPROVED = "approved"
DENIED_OR_FAILED = "denied/failed"


class Finding:
    """Why a CSR is not approved: a short machine reason and a human message."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message

    def __repr__(self) -> str:
        return "Finding(%r, %r)" % (self.reason, self.message)


class ParsedCSR:
    """The fields of one CSR object that the policy looks at.

    Built by parse_csr: when the object or its request cannot be read, ``error`` holds a Finding and the
    request fields stay empty.
    """

    def __init__(self) -> None:
        self.name: str | None = None
        self.created: datetime.datetime | None = None
        self.signer: str | None = None
        self.username: str | None = None
        self.groups: list[str] = []
        self.usages: list[str] = []
        self.state = PENDING
        self.error: Finding | None = None
        self.common_names: list[str] = []
        self.organizations: list[str] = []
        self.other_subject_attributes: list[str] = []
        self.dns_sans: list[str] = []
        self.ip_sans: list[Any] = []  # netaddr.IPAddress
        self.email_sans: list[str] = []
        self.uri_sans: list[str] = []
        self.other_sans: list[str] = []
        self.key_type: str | None = None
        self.public_key_der: bytes | None = None
        self.signature_valid = False

    @property
    def host(self) -> str | None:
        """The host named by the subject CN system:node:<host>, or None."""
        if len(self.common_names) != 1:
            return None
        cn = self.common_names[0]
        if not cn.startswith(NODE_USER_PREFIX) or len(cn) == len(NODE_USER_PREFIX):
            return None
        return cn[len(NODE_USER_PREFIX) :]

    @property
    def looks_like_node_csr(self) -> bool:
        return any(cn.startswith(NODE_USER_PREFIX) for cn in self.common_names)

    @property
    def all_sans(self) -> list[str]:
        return self.dns_sans + [str(ip) for ip in self.ip_sans] + self.email_sans + self.uri_sans + self.other_sans

    @property
    def created_text(self) -> str | None:
        """creationTimestamp as RFC 3339 text (whole seconds, UTC), or None when unreadable."""
        return format_rfc3339(self.created) if self.created is not None else None


def parse_csr(obj: Any) -> ParsedCSR:
    """Read one CSR object (API JSON as a dict). Never raises.

    Garbage gives a ParsedCSR whose error is a Finding ('bad-object' or 'bad-request'); the envelope fields
    that could be read are kept.
    """
    parsed = ParsedCSR()
    if not isinstance(obj, dict):
        parsed.error = Finding("bad-object", "not a CertificateSigningRequest object")
        return parsed
    metadata = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    status = _mapping(obj.get("status"))
    name = metadata.get("name")
    parsed.name = name if isinstance(name, str) and name else None
    parsed.signer = _text(spec.get("signerName"))
    parsed.username = _text(spec.get("username"))
    parsed.groups = _string_list(spec.get("groups"))
    parsed.usages = _string_list(spec.get("usages"))
    parsed.state = _condition_state(status.get("conditions"))
    try:
        parsed.created = as_utc(metadata["creationTimestamp"])
    except (KeyError, TypeError, ValueError):
        parsed.created = None
    parsed.error = _read_request(parsed, spec.get("request"))
    if parsed.error is None and (parsed.name is None or parsed.created is None):
        parsed.error = Finding("bad-object", "metadata.name or metadata.creationTimestamp is missing")
    return parsed


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _string_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def _condition_state(conditions: Any) -> str:
    state = PENDING
    for condition in conditions if isinstance(conditions, list) else []:
        if not isinstance(condition, dict) or condition.get("status", "True") != "True":
            continue
        if condition.get("type") in ("Denied", "Failed"):
            return DENIED_OR_FAILED
        if condition.get("type") == "Approved":
            state = APPROVED
    return state


def _read_request(parsed: ParsedCSR, request_b64: Any) -> Finding | None:
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


def _read_subject(parsed: ParsedCSR, request: x509.CertificateSigningRequest) -> None:
    for attribute in request.subject:
        if attribute.oid == NameOID.COMMON_NAME:
            parsed.common_names.append(str(attribute.value))
        elif attribute.oid == NameOID.ORGANIZATION_NAME:
            parsed.organizations.append(str(attribute.value))
        else:
            parsed.other_subject_attributes.append(attribute.oid.dotted_string)


def _read_sans(parsed: ParsedCSR, request: x509.CertificateSigningRequest) -> None:
    try:
        extension = request.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return
    for general_name in extension.value:
        if isinstance(general_name, x509.DNSName):
            parsed.dns_sans.append(general_name.value)
        elif isinstance(general_name, x509.IPAddress):
            address = parse_ip(str(general_name.value))
            if address is None:  # a network where an address belongs: foreign to every host
                parsed.other_sans.append("IPAddress %s" % general_name.value)
            else:
                parsed.ip_sans.append(address)
        elif isinstance(general_name, x509.RFC822Name):
            parsed.email_sans.append(general_name.value)
        elif isinstance(general_name, x509.UniformResourceIdentifier):
            parsed.uri_sans.append(general_name.value)
        else:
            parsed.other_sans.append(type(general_name).__name__)


def _describe_key(public_key: Any) -> str:
    """A short name such as 'ECDSA P-256' or 'RSA 2048' for messages and the accepted key types."""
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
