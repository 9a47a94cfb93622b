"""Rogue CSRs: requests an attacker could file while new workers join. None may be approved (docs/lab-hosts.md).

Each kind is filed over the real HTTPS API with an identity an attacker could hold: the node-bootstrapper
token (it is in every worker's Ignition config), the client certificate of an existing node, or — for the
serving-certificate kinds — the credential of the new node itself (a node asking for more than it owns).
The certificates are minted by the lab CA for tests only, as ``POST /client-cert`` does.

Rogue CSRs look exactly like real ones to the collection (no label, no annotation); only the lab's state
(``rogue_csrs`` in the dump) knows which they are.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from . import auth, kinds
from .apiserver import CTX, json_response
from .csrs import CLIENT_SIGNER, CLIENT_USAGES, SERVING_SIGNER, SERVING_USAGES, ApiClient, build_csr, epoch_ms
from .pki import write_private

# A host no inventory names, and the node whose credential the attacker stole (seeded control plane).
OUTSIDER = "rogue-worker-9"
EXISTING_NODE = "master-0"
FOREIGN_IP = "127.0.111.99"
FOREIGN_DNS = "api.lab.day2.example.test"

# kind -> (what it is, whose CN by default: "target" = an inventory host, or a fixed name).
# Kinds whose defect is visible before the host name matters (other signer, signature, key type) name a
# host outside the inventory, so that ``all`` adds only 8 pending CSRs naming the new hosts and stays below
# the collection's flood guard for 3 hosts (max(10, 4 x 3) = 12) while the hosts' own CSRs are pending.
KINDS = {
    "unknown-host": ("client CSR for a host not in the inventory (bootstrap credential)", OUTSIDER),
    "existing-node": ("client CSR for an existing node (bootstrap credential)", EXISTING_NODE),
    "wrong-username": ("client CSR for a new host filed with an existing node's credential", "target"),
    "extra-group": ("client CSR filed by a bootstrapper identity with an extra group", "target"),
    "client-sans": ("client CSR carrying DNS and IP SANs (bootstrap credential)", "target"),
    "client-extra-usage": ("client CSR that also asks for server auth (bootstrap credential)", "target"),
    "serving-foreign-ip": ("serving CSR of a new host with an IP it does not own (node credential)", "target"),
    "serving-foreign-dns": ("serving CSR of a new host with the API's DNS name (node credential)", "target"),
    "serving-username-mismatch": ("serving CSR for a new host filed by another node", "target"),
    "other-signer": ("node CSR for the generic client signer kube-apiserver-client (bootstrap)", OUTSIDER),
    "bad-organization": ("client CSR with O system:masters (bootstrap credential)", "target"),
    "bad-signature": ("client CSR whose request was altered after signing (bootstrap credential)", OUTSIDER),
    "rsa-key": ("client CSR with an RSA key where the kubelet uses ECDSA P-256 (bootstrap)", OUTSIDER),
    "spoof-client": ("perfectly formed client CSR for a new host with another key (bootstrap); not in 'all'", "target"),
    "replay-client": ("byte-for-byte copy of the host's newest client CSR (bootstrap); not in 'all'", "target"),
}
# Kinds that need a moment chosen by the test (a spoof at "Rebooting", a replay of a pending CSR).
TIMED_KINDS = ("spoof-client", "replay-client")
ALL_KINDS = [kind for kind in KINDS if kind not in TIMED_KINDS]


def _p256():
    return ec.generate_private_key(ec.SECP256R1())


def _tamper(request_pem: bytes) -> bytes:
    """Flip one bit of the signature's last byte: the request still parses, the signature no longer verifies."""
    der = bytearray(x509.load_pem_x509_csr(request_pem).public_bytes(serialization.Encoding.DER))
    der[-1] ^= 0x01
    body = base64.encodebytes(bytes(der)).decode().replace("\n", "")
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return (
        "-----BEGIN CERTIFICATE REQUEST-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE REQUEST-----\n"
    ).encode()


class Rogues:
    def __init__(self, ctx):
        self.ctx = ctx
        self.filed: list = []  # {"name", "kind", "host", "identity", "filed"}
        self.bootstrap_token = ctx.auth.add_token(auth.BOOTSTRAPPER)
        # The bootstrapper's name does not fit a certificate CN (64 characters): a token carries the extra group.
        self.extra_group_token = ctx.auth.add_token(
            auth.Identity(auth.BOOTSTRAPPER.name, (*auth.BOOTSTRAPPER.groups, "system:cluster-readers"))
        )

    def state(self) -> list:
        return list(self.filed)

    def _cert_client(self, user: str, groups) -> ApiClient:
        """A client authenticated by a lab-CA certificate for ``user``/``groups`` (files live only briefly)."""
        cert_pem, key_pem = self.ctx.pki.issue_client_cert(user, list(groups))
        directory = tempfile.mkdtemp(prefix="rogue-", dir=self.ctx.state_dir)
        cert_file, key_file = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        write_private(cert_file, cert_pem)
        write_private(key_file, key_pem)
        try:
            return ApiClient(self.ctx, cert_file=cert_file, key_file=key_file)
        finally:  # the SSL context has read them
            os.unlink(cert_file)
            os.unlink(key_file)
            os.rmdir(directory)

    def _request(self, kind: str, host: dict) -> tuple:
        """``(identity, api client, request PEM, signer, usages)`` for one rogue kind against ``host``."""
        name = host["name"]
        cn = f"system:node:{name}"
        bootstrap = ("bootstrap", lambda: ApiClient(self.ctx, token=self.bootstrap_token))
        stolen_node = (
            f"system:node:{EXISTING_NODE}",
            lambda: self._cert_client(f"system:node:{EXISTING_NODE}", ["system:nodes"]),
        )
        own_node = (cn, lambda: self._cert_client(cn, ["system:nodes"]))
        extra_group = ("bootstrap+system:cluster-readers", lambda: ApiClient(self.ctx, token=self.extra_group_token))
        client = (CLIENT_SIGNER, CLIENT_USAGES)
        if kind in ("unknown-host", "existing-node", "spoof-client"):
            return (*bootstrap, build_csr(_p256(), cn), *client)
        if kind == "replay-client":
            return (*bootstrap, self._replayed_request(name), *client)
        if kind == "wrong-username":
            return (*stolen_node, build_csr(_p256(), cn), *client)
        if kind == "extra-group":
            return (*extra_group, build_csr(_p256(), cn), *client)
        if kind == "client-sans":
            return (*bootstrap, build_csr(_p256(), cn, dns_names=[name], ips=[host["ip"]]), *client)
        if kind == "client-extra-usage":
            return (*bootstrap, build_csr(_p256(), cn), CLIENT_SIGNER, [*CLIENT_USAGES, "server auth"])
        if kind == "serving-foreign-ip":
            request = build_csr(_p256(), cn, dns_names=[name], ips=[host["ip"], FOREIGN_IP])
            return (*own_node, request, SERVING_SIGNER, SERVING_USAGES)
        if kind == "serving-foreign-dns":
            request = build_csr(_p256(), cn, dns_names=[name, FOREIGN_DNS], ips=[host["ip"]])
            return (*own_node, request, SERVING_SIGNER, SERVING_USAGES)
        if kind == "serving-username-mismatch":
            request = build_csr(_p256(), cn, dns_names=[name], ips=[host["ip"]])
            return (*stolen_node, request, SERVING_SIGNER, SERVING_USAGES)
        if kind == "other-signer":
            return (
                *bootstrap,
                build_csr(_p256(), cn),
                "kubernetes.io/kube-apiserver-client",
                ["digital signature", "client auth"],
            )
        if kind == "bad-organization":
            return (*bootstrap, build_csr(_p256(), cn, organizations=["system:masters"]), *client)
        if kind == "bad-signature":
            return (*bootstrap, _tamper(build_csr(_p256(), cn)), *client)
        if kind == "rsa-key":
            return (*bootstrap, build_csr(rsa.generate_private_key(65537, 2048), cn), *client)
        raise ValueError(f"unknown rogue CSR kind {kind!r}; known: all, {', '.join(KINDS)}")

    def _replayed_request(self, name: str) -> bytes:
        """The PKCS#10 request of the newest client CSR the host's kubelet filed (its key, its signature)."""
        kubelet = getattr(self.ctx, "kubelets", None)
        own = kubelet.by_host.get(name) if kubelet is not None else None
        filed = [entry["name"] for entry in (own.filed if own else []) if entry["signer"] == CLIENT_SIGNER]
        obj = self.ctx.store.find(kinds.CSR, None, filed[-1]) if filed else None
        if obj is None:
            raise ValueError(f"{name} has no client CSR to replay yet (its kubelet has not filed one)")
        return base64.b64decode(obj["spec"]["request"])

    async def file(self, kind: str, host: dict) -> dict:
        """File one rogue CSR naming ``host`` (``name``, ``ip``) in its subject."""
        identity, make_client, request_pem, signer, usages = self._request(kind, host)
        api = make_client()
        try:
            created = await api.create_csr(request_pem, signer, usages)
        finally:
            await api.close()
        entry = {
            "name": created["metadata"]["name"],
            "kind": kind,
            "host": host["name"],
            "identity": identity,
            "signer": signer,
            "filed": epoch_ms(time.time()),
        }
        self.filed.append(entry)
        return entry


async def rogue_csr(request: web.Request) -> web.Response:
    """Body ``{"kind": KIND|"all", "host": NAME?}``: file rogue CSRs; answers the filed entries."""
    ctx = request.app[CTX]
    try:
        wanted = json.loads(await request.read() or b"{}")
        kind, host_name = wanted["kind"], wanted.get("host")
    except (ValueError, KeyError, TypeError):
        return json_response({"error": 'the body must be {"kind": KIND, "host": NAME}'}, 400)
    if kind != "all" and kind not in KINDS:
        return json_response({"error": f"unknown kind {kind!r}; known: all, {', '.join(KINDS)}"}, 400)
    hosts = {host["name"]: host for host in ctx.hosts}
    if host_name is not None and host_name not in hosts:
        return json_response({"error": f"{host_name} is not an inventory host; known: {sorted(hosts)}"}, 400)
    if not hosts:
        return json_response({"error": "the lab has no inventory hosts to impersonate"}, 400)
    target = hosts[host_name or ctx.hosts[0]["name"]]
    filed = []
    try:
        for one in ALL_KINDS if kind == "all" else [kind]:
            alone = kind != "all" and bool(host_name)
            filed.append(await ctx.rogues.file(one, _subject_host(one, target, alone=alone)))
    except ValueError as error:
        return json_response({"error": str(error)}, 400)
    return json_response(filed)


def _subject_host(kind: str, target: dict, alone: bool) -> dict:
    """The host a rogue CSR names: the target for most kinds; a fixed name for the rest, unless one kind
    is filed on its own against an explicit host (e.g. ``rogue-csr rsa-key extra-worker-0``)."""
    fixed = KINDS[kind][1]
    if fixed == "target" or (alone and kind not in ("unknown-host", "existing-node")):
        return target
    return {"name": fixed, "ip": FOREIGN_IP}


async def setup(ctx) -> None:
    ctx.rogues = Rogues(ctx)
    ctx.dump_sections["rogue_csrs"] = ctx.rogues.state
    ctx.control_routes.append(("POST", "/rogue-csr", rogue_csr))
