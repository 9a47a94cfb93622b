"""The installed system's kubelet port on a rebooted host (``<ip>:<kubelet port>``).

Until the node's serving CSR (signer ``kubernetes.io/kubelet-serving``) is approved and issued, the kubelet has
no serving certificate and every TLS handshake ends with the alert ``internal_error`` (80), which a Go client
reports as ``remote error: tls: internal error``; the installer's monitor counts exactly that as "Kubelet is
running" (openshift/installer pkg/agent/monitoraddnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c,
``isKubeletRunningOnNode``). Once issued, the handshake completes with the certificate that CSR got (from the
lab CA, SANs the host's name and IP) and any request without credentials is answered 401, as a kubelet without
anonymous auth does.

The certificate comes from ``serving()`` (``lab.kubelet.Kubelets.serving_certificate``), asked at every
handshake: the TLS ``servername`` callback runs for every ClientHello, with or without SNI. The HTTP side is a
fixed 401 answer to the first request (the kubelet's ``/metrics`` without credentials); the connection then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import ssl
import tempfile

from ..pki import key_pem

UNAUTHORIZED = (
    b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 12\r\nConnection: close\r\n\r\nUnauthorized"
)
MAX_REQUEST = 64 * 1024


def server_context(cert_pem, key_pem_bytes):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        for path, data in ((cert_file, cert_pem), (key_file, key_pem_bytes)):
            with open(path, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_file, key_file)
    return context


class KubeletPort:
    """The TLS listener; ``serving()`` returns ``(certificate PEM, private key)`` or None (no certificate yet).

    TLS runs over memory BIOs rather than asyncio's SSL transport, which drops the alert a failed handshake
    leaves in its outgoing buffer: here it is sent before the connection closes.
    """

    def __init__(self, ip, port, serving, admits=lambda source: True):
        self.admits = admits  # admits(source address): the host's firewall
        self.ip = ip
        self.port = port
        self.serving = serving
        self.server = None
        self.alerts = 0  # handshakes aborted with internal_error
        self.handshakes = 0  # handshakes given a certificate
        self._contexts = {}  # certificate fingerprint -> SSLContext
        self._base = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._base.sni_callback = self._select

    def _select(self, connection, _server_name, _context):
        found = self.serving()
        if found is None:
            self.alerts += 1
            return ssl.ALERT_DESCRIPTION_INTERNAL_ERROR
        cert_pem, key = found
        fingerprint = hashlib.sha256(cert_pem).hexdigest()
        if fingerprint not in self._contexts:
            self._contexts[fingerprint] = server_context(cert_pem, key_pem(key))
        connection.context = self._contexts[fingerprint]
        self.handshakes += 1
        return None

    async def _connection(self, reader, writer):
        peer = writer.get_extra_info("peername")
        if not self.admits(peer[0] if peer else None):
            writer.transport.abort()
            return
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = self._base.wrap_bio(incoming, outgoing, server_side=True)

        async def flush():
            pending = outgoing.read()
            if pending:
                writer.write(pending)
                await writer.drain()

        async def more():
            await flush()
            data = await reader.read(65536)
            if not data:
                raise ConnectionResetError("the client closed the connection")
            incoming.write(data)

        try:
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    await more()
            request = b""
            while b"\r\n\r\n" not in request and len(request) < MAX_REQUEST:
                try:
                    request += tls.read(65536)
                except ssl.SSLWantReadError:
                    await more()
            tls.write(UNAUTHORIZED)
            await flush()
        except (ssl.SSLError, OSError):
            with contextlib.suppress(OSError):
                await flush()  # the alert of a refused handshake, if any
        finally:
            writer.close()

    async def start(self):
        self.server = await asyncio.start_server(self._connection, self.ip, self.port, reuse_address=True)

    async def stop(self):
        if self.server is not None:
            server, self.server = self.server, None
            server.close()
            await server.wait_closed()

    def state(self):
        return {
            "address": f"{self.ip}:{self.port}",
            "serving": self.serving() is not None,
            "alerts": self.alerts,
            "handshakes": self.handshakes,
        }
