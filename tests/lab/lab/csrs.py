"""Kubelet CSRs as a client files them, and an HTTPS client of the lab's own API server.

The signers and key usages a kubelet asks for (kubernetes.io/kube-apiserver-client-kubelet for its client
certificate, kubernetes.io/kubelet-serving for its serving certificate), PKCS#10 requests, CSR objects,
and ``ApiClient``: one identity (bearer token or client certificate) talking HTTPS to the API server.
Used by the simulated kubelets (``lab.kubelet``) and the rogue CSRs (``lab.rogue``).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import ssl
import time

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
CLIENT_USAGES = ["digital signature", "key encipherment", "client auth"]
SERVING_USAGES = ["digital signature", "key encipherment", "server auth"]
CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def epoch_ms(moment: float | None) -> str | None:
    """RFC 3339 with milliseconds: the dump's filing/approval times, finer than creationTimestamp."""
    if moment is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + f".{int(moment * 1000) % 1000:03d}Z"


def build_csr(key, common_name: str, organizations=("system:nodes",), dns_names=(), ips=()) -> bytes:
    """A PEM PKCS#10 request signed with ``key`` (subject O..., CN; optional SANs)."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes))
    sans = [x509.DNSName(name) for name in dns_names] + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def csr_object(request_pem: bytes, signer: str, usages) -> dict:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"generateName": "csr-"},
        "spec": {"request": base64.b64encode(request_pem).decode(), "signerName": signer, "usages": list(usages)},
    }


def key_fingerprint(key) -> str:
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def is_approved(csr: dict) -> bool:
    return any(
        c.get("type") == "Approved" and c.get("status", "True") == "True"
        for c in (csr.get("status") or {}).get("conditions") or []
    )


class ApiClient:
    """HTTPS to the lab's own API server as one identity: a bearer token or a client certificate."""

    def __init__(self, ctx, token: str | None = None, cert_file: str | None = None, key_file: str | None = None):
        context = ssl.create_default_context(cadata=ctx.pki.ca_pem.decode())
        if cert_file:
            context.load_cert_chain(cert_file, key_file)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._url = ctx.api_url
        self._session = aiohttp.ClientSession(
            headers=headers, connector=aiohttp.TCPConnector(ssl=context), timeout=aiohttp.ClientTimeout(total=30)
        )

    async def request(self, method: str, path: str, body=None, content_type: str = "application/json") -> tuple:
        """``(status, decoded body)``; connection failures raise aiohttp.ClientError/OSError."""
        data = json.dumps(body) if body is not None else None
        async with self._session.request(
            method, self._url + path, data=data, headers={"Content-Type": content_type}
        ) as response:
            text = await response.text()
            try:
                return response.status, json.loads(text) if text else {}
            except ValueError:
                return response.status, {"message": text}

    async def create_csr(self, request_pem: bytes, signer: str, usages) -> dict:
        """POST one CSR; raises ApiRefused with the server's answer unless it was created."""
        status, body = await self.request("POST", CSR_PATH, csr_object(request_pem, signer, usages))
        if status != 201:
            raise ApiRefused(status, body)
        return body

    async def close(self) -> None:
        await self._session.close()


class ApiRefused(Exception):
    def __init__(self, status: int, body: dict):
        super().__init__(f"{status}: {body.get('message', body)}")
        self.status = status
