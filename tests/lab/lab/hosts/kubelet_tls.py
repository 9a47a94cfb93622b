"""The installed system's kubelet port on a rebooted host: a TLS listener on ``<ip>:<kubelet port>``."""

from __future__ import annotations

import os
import ssl
import tempfile

from aiohttp import web


async def kubelet_unauthorized(_request):
    return web.Response(status=401, text="Unauthorized")


def kubelet_app():
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", kubelet_unauthorized)
    return app


def server_context(cert_pem, key_pem):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        for path, data in ((cert_file, cert_pem), (key_file, key_pem)):
            with open(path, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_file, key_file)
    return context


async def start_listener(pki, hostname, ip, port):
    """Serve TLS (a lab-CA certificate for the host's name and IP) on ``ip:port``; returns the runner."""
    cert_pem, key_pem = pki.issue_server_cert(dns_names=(hostname,), ips=(ip,))
    runner = web.AppRunner(kubelet_app(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, ip, port, ssl_context=server_context(cert_pem, key_pem), reuse_address=True).start()
    return runner
