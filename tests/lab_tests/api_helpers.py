"""Shared helpers of the API server tests: unique names, CSR and ConfigMap bodies, Status checks."""

from __future__ import annotations

import base64
import uuid

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def csr_body(name: str, common_name: str = "system:node:extra-worker-0", signer: str = CLIENT_SIGNER) -> dict:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    pem = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(pem).decode(),
            "signerName": signer,
            "usages": ["digital signature", "client auth"],
            "username": "forged",
            "groups": ["forged"],
        },
    }


def configmap(namespace: str, name: str, labels=None, data=None) -> dict:
    """A ConfigMap body (``namespace`` None: the one of the URL it is posted to)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data or {},
    }


def assert_status(response, code: int, reason: str, message: str | None = None) -> dict:
    assert response.status_code == code, response.text
    body = response.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == code and body["reason"] == reason
    if message is not None:
        assert body["message"] == message
    return body
