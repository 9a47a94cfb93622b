"""Simulated kubelets after a host's reboot: the client and serving CSR lifecycle (docs/lab-hosts.md).

When a host has rebooted into the installed system (``ctx.host_rebooted(host)``, called by the simulated
hosts or by ``labctl reboot-done``), its kubelet:

1. generates its bootstrap key once (ECDSA P-256) and files the client CSR over the real HTTPS API with the
   node-bootstrapper token, so authentication and admission set ``spec.username``/``spec.groups``;
2. once a client CSR of it carries a certificate, authenticates with that certificate, creates its Node
   (NotReady, its addresses from ``lab.nodes.node_addresses``: both families on a dual-stack cluster) and files the
   serving CSR with a new key, as ``system:node:<name>``, for the Node's addresses: its Hostname as the DNS SAN,
   its InternalIPs and ExternalIPs as the IP SANs, each list sorted (kubernetes/kubernetes
   pkg/kubelet/certificate/kubelet.go@16913111deb1a4c4ff76f4ba7ffd9ebef397a303, ``newGetTemplateFn``,
   ``addressesToHostnamesAndIPs``);
3. once a serving CSR of it carries a certificate, reports the Node Ready; that certificate is what a
   rebooted simulated host serves on its kubelet port (``serving_certificate``, ``lab.hosts.kubelet_tls``).

A CSR not answered within ``--csr-refile-seconds`` is filed again, the client CSR with the same key. Each
filing is a new object (``generateName: csr-``, the names OpenShift shows), so a late approver sees the
duplicates a real cluster accumulates.

The lab signer (the part of kube-controller-manager that signs kubelet CSRs) is here too: every approved
CSR a simulated kubelet filed gets ``status.certificate`` from the lab CA. Other approved CSRs (rogue ones,
tests' own) stay ``Approved`` without a certificate, so an approval the collection should not have made is
plain in the approvals log and nobody waits on a signer.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
import os
import time

import aiohttp
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec

from . import auth, kinds, nodes
from .apiserver import CTX, json_response
from .csrs import (
    CLIENT_SIGNER,
    CLIENT_USAGES,
    SERVING_SIGNER,
    SERVING_USAGES,
    ApiClient,
    ApiRefused,
    build_csr,
    epoch_ms,
    is_approved,
    key_fingerprint,
)
from .faults import parse_seconds, register_fault
from .hosts.faults import fault_values, per_host
from .pki import key_pem, write_private

LOG = logging.getLogger(__name__)

# The Node address types a serving CSR's DNS SANs and IP SANs come from (certificate/kubelet.go).
SAN_TYPES = (("Hostname", "InternalDNS", "ExternalDNS"), ("InternalIP", "ExternalIP"))
# Seconds between two tries of a request that failed (API fault, restart): the kubelet backs off too.
RETRY_SECONDS = 1.0
register_fault(
    "kubelet_ready_delay",
    parse_seconds,
    "seconds a kubelet waits after its serving certificate before it reports Ready",
)


def _address(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address (an IPv6 one needs HOST: before it)") from None


register_fault(
    "kubelet_extra_address",
    per_host(_address),
    "[HOST:]IP: the kubelet also reports IP as an InternalIP of its Node, so its serving CSR carries it too (as a "
    "node IP on another NIC would); read when the host reboots",
)


class Kubelets:
    """Every simulated kubelet of the lab, the lab signer, and the approval times the benchmark reads."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.by_host: dict = {}
        self.approved_at: dict = {}  # CSR name -> epoch seconds the Approved condition appeared
        self.filed_names: set = set()  # CSRs the simulated kubelets filed: the ones the lab signer issues
        self.changed = asyncio.Event()  # set on every CSR change: kubelets re-check their CSRs
        self.bootstrap_token = ctx.auth.add_token(auth.BOOTSTRAPPER)
        self.directory = os.path.join(ctx.state_dir, "kubelets")

    def on_change(self, event_type: str, kind, obj: dict) -> None:
        if kind is not kinds.CSR or event_type == "DELETED":
            return
        name = obj["metadata"]["name"]
        if is_approved(obj):
            self.approved_at.setdefault(name, time.time())
            if name in self.filed_names and not (obj.get("status") or {}).get("certificate"):
                # Not from inside the store's write: sign once this update is fully recorded.
                asyncio.get_running_loop().call_soon(self.sign, name)
        self.changed.set()
        self.changed = asyncio.Event()

    def sign(self, name: str) -> None:
        """The lab signer: a certificate for an approved kubelet CSR (subject and SANs from the request)."""
        csr = self.ctx.store.find(kinds.CSR, None, name)
        if csr is None or (csr.get("status") or {}).get("certificate") or not is_approved(csr):
            return
        try:
            request_pem = base64.b64decode(csr["spec"]["request"])
            certificate = self.ctx.pki.sign_csr(request_pem, csr["spec"].get("usages") or [])
        except (ValueError, KeyError) as exc:
            LOG.warning("lab signer: CSR %s cannot be signed: %s", name, exc)
            return
        csr["status"]["certificate"] = base64.b64encode(certificate).decode()
        csr["metadata"].pop("resourceVersion", None)
        self.ctx.store.update(kinds.CSR, csr)

    async def host_rebooted(self, host: dict) -> dict:
        """The host runs the installed system: start its kubelet (once; a second reboot keeps it)."""
        kubelet = self.by_host.get(host["name"])
        if kubelet is None or host.get("new_install"):
            # A new install (a replaced worker) has a new disk: a new kubelet with a new bootstrap key.
            if kubelet is not None and kubelet.task is not None:
                kubelet.task.cancel()
            kubelet = self.by_host[host["name"]] = Kubelet(self, host)
        kubelet.reboots += 1
        if kubelet.task is None or (kubelet.task.done() and not kubelet.node_ready):
            kubelet.task = asyncio.create_task(kubelet.run(), name=f"kubelet-{host['name']}")
        return kubelet.state()

    def state(self) -> dict:
        return {name: kubelet.state() for name, kubelet in sorted(self.by_host.items())}

    def serving_certificate(self, host_name: str) -> tuple | None:
        """``(certificate PEM, key)`` the kubelet of ``host_name`` serves on its port: the newest of its serving
        CSRs that carries a certificate; None while none does (the port then aborts every handshake)."""
        kubelet = self.by_host.get(host_name)
        return kubelet.issued(SERVING_SIGNER, newest=True) if kubelet is not None else None

    async def stop(self) -> None:
        tasks = [k.task for k in self.by_host.values() if k.task is not None and not k.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Kubelet:
    """One host's kubelet: bootstrap, Node registration, serving certificate, Ready."""

    def __init__(self, kubelets: Kubelets, host: dict):
        self.kubelets = kubelets
        self.ctx = kubelets.ctx
        self.name = host["name"].lower()
        self.ip = host["ip"]
        # Go architecture: as the host reported it, else its inventory cpu_architecture, else the control plane's.
        self.architecture = nodes.go_architecture(
            host.get("architecture") or host.get("cpu_architecture"), nodes.control_plane_architecture(self.ctx.store)
        )
        self.host = host
        self.identity = nodes.Identity(host)  # machine-id of this installation, boot id of this boot
        self.bootstrap_key = ec.generate_private_key(ec.SECP256R1())  # once: every client CSR reuses it
        self.filed: list = []  # {"name", "signer", "filed", "key"} in filing order
        self.reboots = 0
        self.node_created = False
        self.node_ready = False
        self.error = None
        self.task = None
        self.pki_dir = os.path.join(kubelets.directory, self.name)
        extra = fault_values(self.ctx.faults, "kubelet_extra_address", host["name"])
        self.addresses = nodes.node_addresses(self.ctx.store, host, extra)  # what it reports: Node and serving CSR

    def state(self) -> dict:
        return {
            "name": self.name,
            "ip": self.ip,
            "addresses": [a["address"] for a in self.addresses if a["type"] != "Hostname"],
            "reboots": self.reboots,
            "bootstrap_key_fingerprint": key_fingerprint(self.bootstrap_key),
            "csrs": [
                {
                    "name": entry["name"],
                    "signer": entry["signer"],
                    "filed": epoch_ms(entry["filed"]),
                    "approved": epoch_ms(self.kubelets.approved_at.get(entry["name"])),
                }
                for entry in self.filed
            ],
            "node_created": self.node_created,
            "node_ready": self.node_ready,
            "error": self.error,
        }

    async def run(self) -> None:
        try:
            bootstrap = ApiClient(self.ctx, token=self.kubelets.bootstrap_token)
            try:
                cert_pem, key = await self.obtain(bootstrap, CLIENT_SIGNER)
            finally:
                await bootstrap.close()
            os.makedirs(self.pki_dir, mode=0o700, exist_ok=True)
            cert_file = os.path.join(self.pki_dir, "kubelet-client-current.pem")
            key_file = os.path.join(self.pki_dir, "kubelet-client.key")
            write_private(cert_file, cert_pem)
            write_private(key_file, key_pem(key))
            node = ApiClient(self.ctx, cert_file=cert_file, key_file=key_file)
            try:
                await self.register_node(node)
                await self.obtain(node, SERVING_SIGNER)
                await asyncio.sleep(self.ctx.faults.get("kubelet_ready_delay", 0.0))
                await self.report_ready(node)
            finally:
                await node.close()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # recorded for the dump; the lab goes on
            LOG.exception("kubelet %s failed", self.name)
            self.error = str(exc)

    async def obtain(self, api: ApiClient, signer: str) -> tuple:
        """File a CSR for ``signer`` until one of ours carries a certificate; ``(cert PEM, key)``."""
        refile = float(self.ctx.options.csr_refile_seconds)
        while True:
            key = self.bootstrap_key if signer == CLIENT_SIGNER else ec.generate_private_key(ec.SECP256R1())
            await self.file_csr(api, signer, key)
            deadline = time.monotonic() + refile
            while time.monotonic() < deadline:
                issued = self.issued(signer)
                if issued is not None:
                    return issued
                changed = self.kubelets.changed
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), max(0.0, deadline - time.monotonic()))
            LOG.info("kubelet %s: no certificate for %s after %ss, filing again", self.name, signer, refile)

    def issued(self, signer: str, newest: bool = False) -> tuple | None:
        for entry in reversed(self.filed) if newest else self.filed:
            if entry["signer"] != signer:
                continue
            csr = self.ctx.store.find(kinds.CSR, None, entry["name"])
            certificate = ((csr or {}).get("status") or {}).get("certificate")
            if certificate:
                return base64.b64decode(certificate), entry["key"]
        return None

    async def file_csr(self, api: ApiClient, signer: str, key) -> None:
        if signer == CLIENT_SIGNER:
            request_pem = build_csr(key, f"system:node:{self.name}")
            usages = CLIENT_USAGES
        else:
            types = {kind: sorted(a["address"] for a in self.addresses if a["type"] in kind) for kind in SAN_TYPES}
            ips = sorted(set(types[SAN_TYPES[1]]))  # (as Go sorts them: by their text)
            request_pem = build_csr(key, f"system:node:{self.name}", dns_names=types[SAN_TYPES[0]], ips=ips)
            usages = SERVING_USAGES
        created = await self.retry(f"file a {signer} CSR", lambda: api.create_csr(request_pem, signer, usages))
        self.filed.append({"name": created["metadata"]["name"], "signer": signer, "filed": time.time(), "key": key})
        self.kubelets.filed_names.add(created["metadata"]["name"])

    async def retry(self, what: str, call):
        """Call until the API server answers: faults (5xx, resets) must not end a kubelet."""
        while True:
            try:
                return await call()
            except (ApiRefused, aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                LOG.info("kubelet %s: cannot %s (%s); retrying", self.name, what, exc)
                await asyncio.sleep(RETRY_SECONDS)

    def node_object(self) -> dict:
        """The Node as a real kubelet registers it: full nodeInfo, capacity, conditions (``lab.nodes``)."""
        return nodes.kubelet_node(
            self.ctx.store, self.host, self.architecture, self.identity, self.kubelet_port(), self.addresses
        )

    def kubelet_port(self) -> int:
        hosts = getattr(self.ctx, "lab_hosts", None)
        return getattr(hosts, "kubelet_port", None) or nodes.KUBELET_PORT

    async def register_node(self, api: ApiClient) -> None:
        async def create():
            status, body = await api.request("POST", "/api/v1/nodes", self.node_object())
            if status not in (201, 409):  # 409: a Node of this name exists; the kubelet carries on with it
                raise ApiRefused(status, body)

        await self.retry("create its Node", create)
        self.node_created = True

    async def report_ready(self, api: ApiClient) -> None:
        async def patch():
            status, body = await api.request(
                "PATCH",
                f"/api/v1/nodes/{self.name}/status",
                nodes.ready_patch(self.ctx.store, self.name),
                "application/merge-patch+json",
            )
            if status != 200:
                raise ApiRefused(status, body)

        await self.retry("report Ready", patch)
        self.node_ready = True


# ----- control API and component -------------------------------------------------------------------
async def reboot_done(request: web.Request) -> web.Response:
    """Body ``{"hosts": [NAME, ...]}``: these hosts have just rebooted into the installed system."""
    ctx = request.app[CTX]
    try:
        names = list(json.loads(await request.read() or b"{}")["hosts"])
    except (ValueError, KeyError, TypeError):
        return json_response({"error": 'the body must be {"hosts": [NAME, ...]}'}, 400)
    by_name = {host["name"]: host for host in ctx.hosts}
    unknown = [name for name in names if name not in by_name]
    if unknown or not names:
        return json_response({"error": f"not inventory hosts: {unknown}; known: {sorted(by_name)}"}, 400)
    return json_response({name: await ctx.host_rebooted(by_name[name]) for name in names})


async def kubelet_state(request: web.Request) -> web.Response:
    return json_response(request.app[CTX].kubelets.state())


async def setup(ctx) -> None:
    kubelets = Kubelets(ctx)
    ctx.kubelets = kubelets
    ctx.host_rebooted = kubelets.host_rebooted
    ctx.store.add_listener(kubelets.on_change)
    ctx.dump_sections["kubelets"] = kubelets.state
    ctx.control_routes.append(("POST", "/reboot-done", reboot_done))
    ctx.control_routes.append(("GET", "/kubelets", kubelet_state))
    ctx.on_shutdown.append(kubelets.stop)
