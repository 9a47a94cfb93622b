"""The lab's certificate authority: API server certificate, client certificates, and a CSR signer.

One CA signs everything (API serving certificate, client identities, kubelet certificates issued for
approved CSRs); its certificate is ``<state>/ca.crt`` and the ``certificate-authority-data`` of every
kubeconfig the lab writes.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_EKU = {
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
}


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str, organizations=()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _key_usage(digital_signature=True, key_encipherment=False, cert_sign=False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


class LabPKI:
    """The CA key and certificate live in memory; ``write_ca`` puts the certificate where clients read it."""

    def __init__(self, common_name: str = "lab-ca"):
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = _name(common_name, ["openshift-agent-day2-lab"])
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(cert_sign=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )

    @property
    def ca_pem(self) -> bytes:
        return _pem(self.ca_cert)

    def _issue(self, subject: x509.Name, public_key, usages, dns_names=(), ips=(), days: int = 365) -> x509.Certificate:
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.ca_cert.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(key_encipherment="key encipherment" in usages), critical=True)
            .add_extension(x509.ExtendedKeyUsage([_EKU[u] for u in usages if u in _EKU]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()), critical=False)
        )
        sans = [x509.DNSName(name) for name in dns_names] + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(self.ca_key, hashes.SHA256())

    def issue_server_cert(self, dns_names=("localhost",), ips=("127.0.0.1",)) -> tuple:
        """``(cert_pem, key_pem)`` for a TLS server."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._issue(
            _name(dns_names[0] if dns_names else str(ips[0])),
            key.public_key(),
            ["digital signature", "key encipherment", "server auth"],
            dns_names,
            ips,
        )
        return _pem(cert), key_pem(key)

    def issue_client_cert(self, common_name: str, organizations=(), days: int = 365) -> tuple:
        """``(cert_pem, key_pem)`` for an API identity: CN = user, O = groups (as kube-apiserver reads them)."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._issue(
            _name(common_name, organizations), key.public_key(), ["digital signature", "client auth"], days=days
        )
        return _pem(cert), key_pem(key)

    def sign_csr(self, csr_pem: bytes, usages, days: int = 365) -> bytes:
        """Issue a certificate for a PEM CSR (subject and SANs copied from it) — the signer of approved CSRs."""
        csr = x509.load_pem_x509_csr(csr_pem)
        dns_names, ips = (), ()
        try:
            sans = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns_names = sans.get_values_for_type(x509.DNSName)
            ips = [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
        except x509.ExtensionNotFound:
            pass
        return _pem(self._issue(csr.subject, csr.public_key(), list(usages), dns_names, ips, days))

    def server_ssl_context(self, directory: str) -> ssl.SSLContext:
        """TLS 1.2+ server context, HTTP/1.1 only; client certificates are optional and checked against the CA."""
        cert_pem, server_key_pem = self.issue_server_cert()
        cert_file = os.path.join(directory, "apiserver.crt")
        key_file = os.path.join(directory, "apiserver.key")
        write_private(cert_file, cert_pem)
        write_private(key_file, server_key_pem)
        write_private(os.path.join(directory, "lab-ca.crt"), self.ca_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert_file, key_file)
        context.load_verify_locations(cadata=self.ca_pem.decode())
        context.verify_mode = ssl.CERT_OPTIONAL
        context.set_alpn_protocols(["http/1.1"])
        return context


def write_private(path: str, data: bytes) -> None:
    """Write a file readable only by its owner (keys, kubeconfigs with tokens)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
