"""``node-joiner monitor-add-nodes IP...``: what ``oc adm node-image monitor`` runs in its pod, from inside the cluster.

For every address, every ``--monitor-interval`` seconds (upstream: 5), until its Node is Ready -- the per-node loop
of openshift/installer pkg/agent/monitoraddnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2 (PR #9172, 4.18+) and
@1f1111c9ab1dcc364d7dc41d2dc6556c084a8848 (one address, the same checks and words):

1. the agent's REST API until it answers once: ``GET /v2/infra-envs`` with the token of Secret
   openshift-config/agent-auth-token, read through the pod's service account (pkg/agent/cluster.go@
   f4e8e5745f2234fffc734865ba58ca5c0876b057, ``GetAuthTokenFromCluster``): on 4.17 the one ``agentAuthToken`` in
   ``Authorization`` (userAuth; openshift/assisted-service swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd has no
   watcherAuth), from 4.18 ``watcherAuthToken`` in ``Watcher-Authorization`` (pkg/agent/rest.go@
   013f25cacd773a040b1b2f40ff7d211314bbb8b0) -> ``Assisted Service API is available``;
2. the kubelet until it is seen, whatever the API did: ``GET https://IP:10250/metrics`` with Go's default client,
   running when the handshake fails with ``remote error: tls: internal error`` (no serving certificate yet) or with
   a certificate signed by an unknown authority; any other answer is not (``isKubeletRunningOnNode``) -> ``Kubelet is
   running``;
3. once the kubelet runs, the pending CSRs whose subject names the host (by the reverse DNS of its address; the lab
   resolves its own hosts) -> ``First CSR Pending approval`` / ``Second CSR Pending approval`` and one ``CSR %s with
   signerName %s and username %s is Pending and awaiting approval`` each (printed once per CSR here);
4. a Node with InternalIP == IP -> ``Node joined cluster``; Ready -> ``Node is Ready`` and the loop of that node ends;
5. while the API answers: the cluster's status in words when it changes (``humanFriendlyClusterInstallStatus``, itself
   prefixed ``Node IP: ``), a host's failing validation (``Host %s validation: %s``, warning -- pkg/agent/
   validations.go@640266e30e3ac1d3367adbd5c692baf4e4a8bed1) and the newest event when it changed (events between two
   polls are never printed; warning unless its severity is info).

Lines go to stderr in logrus's text format without quotes (``time=... level=info msg=...``; cmd/node-joiner/
main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c). From 4.18 every message of a node goes through its channel, which
prefixes ``Node IP: `` once more (pkg/agent/logging.go@006d45739349721f1371d3013792d9b8407e9842), so the cluster status
reads ``Node IP: Node IP: Cluster is adding hosts``. The process ends when every node is Ready (exit 0; oc's monitor
command has no ``sleep``). Without the Secret the monitor fails at its start (``logrus.Fatal``, exit 1).

The connections leave from the node the pod runs on (``status.hostIP``): pod traffic to the machine network is SNATed
to its node's address, which is what a host behind ``--firewalled-hosts`` admits (``lab.hosts.firewall``). The lab's
hosts serve the agent and the kubelet on the lab's ports rather than 8090 and 10250.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import ssl

import aiohttp
from cryptography import x509
from cryptography.x509.oid import NameOID

from . import kinds

CLUSTER_WORDS = {
    "adding-hosts": "Cluster is adding hosts",
    "installing": "Cluster installation in progress",
    "preparing-for-installation": "Preparing cluster for installation",
    "ready": "Cluster is ready for install",
    "insufficient": "Cluster is not ready for install. Check validations",
    "error": "Cluster has hosts in error",
    "installing-pending-user-action": "Cluster has hosts requiring user input",
    "finalizing": "Finalizing cluster installation",
    "pending-for-input": "User input is required to continue cluster installation",
    "cancelled": "Cluster installation cancelled",
}
CLIENT_SIGNER, SERVING_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"
API = "/api/assisted-install/v2"


def logrus_line(level: str, message: str) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"time={stamp} level={level} msg={message}\n"


class MonitorRun:
    """One monitor-add-nodes process: ``log_text()`` is its stderr, ``exit_code`` None while it runs."""

    def __init__(self, ctx, profile, addresses: list, source: str, interval: float):
        self.ctx, self.profile, self.addresses, self.source = ctx, profile, addresses, source
        self.interval = interval
        self.lines: list[str] = []
        self.exit_code: int | None = None

    def log_text(self) -> str:
        return "".join(self.lines)

    def _log(self, level: str, address: str | None, message: str, prefixed: bool = False) -> None:
        """One line; ``prefixed``: the message carries its own ``Node IP: `` (the cluster status), which only 4.18+'s
        channel prefixes once more."""
        if address is not None and (not prefixed or self.profile.watcher_scheme):
            message = f"Node {address}: {message}"
        self.lines.append(logrus_line(level, message))

    async def run(self) -> int:
        secret = self.ctx.store.find(kinds.SECRET, "openshift-config", "agent-auth-token")
        key = self.profile.token_keys[-1]  # 4.17: agentAuthToken; 4.18+: watcherAuthToken
        if secret is None or key not in (secret.get("data") or {}):
            self._log("fatal", None, 'secrets "agent-auth-token" not found')
            self.exit_code = 1
            return 1
        token = base64.b64decode(secret["data"][key]).decode()
        header = "Watcher-Authorization" if self.profile.watcher_scheme else "Authorization"
        self._log("info", None, "Monitoring IPs: [%s]" % " ".join(self.addresses))
        connector = aiohttp.TCPConnector(local_addr=(self.source, 0), force_close=True)
        async with aiohttp.ClientSession(connector=connector, headers={header: token}) as session:
            await asyncio.gather(*(self._follow(session, address) for address in self.addresses))
        self.exit_code = 0
        return 0

    async def _follow(self, session, address: str) -> None:
        hosts = self.ctx.lab_hosts
        name = next((h.name for h in hosts.by_name.values() if h.ip == address), None)
        if name is None:
            self._log(
                "info", address, f"Cannot resolve IP address {address} to a hostname. Skipping checks for pending CSRs."
            )
        api_seen = kubelet_seen = joined = False
        said: dict = {"csrs": set()}
        base = f"http://{address}:{hosts.agent_port}{API}"
        while True:
            if not api_seen and await self._get(session, base + "/infra-envs") is not None:
                api_seen = True
                self._log("info", address, "Assisted Service API is available")
            if not kubelet_seen and await self._kubelet_running(address, hosts.kubelet_port):
                kubelet_seen = True
                self._log("info", address, "Kubelet is running")
            if kubelet_seen and name is not None:
                self._pending_csrs(address, name, said)
            node = self._node(address)
            if node is not None and not joined:
                joined = True
                self._log("info", address, "Node joined cluster")
            if node is not None and _ready(node):
                self._log("info", address, "Node is Ready")
                return
            if api_seen:
                await self._assisted_status(session, base, address, said)
            await asyncio.sleep(self.interval)

    async def _get(self, session, url: str):
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as response:
                return await response.json() if response.status == 200 else None
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            return None

    async def _kubelet_running(self, address: str, port: int) -> bool:
        context = ssl.create_default_context()  # Go's default client: the system roots, the name checked
        try:
            _reader, writer = await asyncio.wait_for(
                asyncio.open_connection(address, port, ssl=context, local_addr=(self.source, 0)), timeout=5
            )
        except ssl.SSLCertVerificationError:
            return True  # x509: certificate signed by unknown authority
        except ssl.SSLError as error:
            return getattr(error, "reason", None) == "TLSV1_ALERT_INTERNAL_ERROR"
        except (OSError, asyncio.TimeoutError):
            return False
        writer.close()
        return False  # a certificate the pod trusts: not what upstream counts

    def _pending_csrs(self, address: str, name: str, said: dict) -> None:
        items, _rv = self.ctx.store.list(kinds.CSR)
        for signer, words in ((CLIENT_SIGNER, "First"), (SERVING_SIGNER, "Second")):
            pending = [
                csr
                for csr in items
                if csr["spec"].get("signerName") == signer
                and not (csr.get("status") or {}).get("conditions")
                and name in (csr["spec"].get("username") or "") + _subject(csr)
            ]
            fresh = [csr for csr in pending if csr["metadata"]["name"] not in said["csrs"]]
            if fresh:
                self._log("info", address, f"{words} CSR Pending approval")
            for csr in fresh:
                said["csrs"].add(csr["metadata"]["name"])
                self._log(
                    "info",
                    address,
                    "CSR %s with signerName %s and username %s is Pending and awaiting approval"
                    % (csr["metadata"]["name"], signer, csr["spec"].get("username")),
                )

    def _node(self, address: str):
        items, _rv = self.ctx.store.list(kinds.NODE)
        for node in items:
            internal = [
                a.get("address")
                for a in (node.get("status") or {}).get("addresses") or []
                if a.get("type") == "InternalIP"
            ]
            if address in internal:
                return node
        return None

    async def _assisted_status(self, session, base: str, address: str, said: dict) -> None:
        clusters = await self._get(session, base + "/clusters")
        if not clusters:
            return
        cluster = await self._get(session, f"{base}/clusters/{clusters[0]['id']}") or clusters[0]
        words = CLUSTER_WORDS.get(cluster.get("status"))
        if words and cluster.get("status") != said.get("cluster"):
            said["cluster"] = cluster.get("status")
            self._log("info", address, f"Node {address}: {words}", prefixed=True)
        for host in cluster.get("hosts") or []:
            for group in _json(host.get("validations_info")).values():
                for check in group:
                    key = (check.get("id"), check.get("status"))
                    if check.get("status") == "failure" and said.get(check.get("id")) != key:
                        said[check.get("id")] = key
                        self._log(
                            "warning",
                            address,
                            f"Host {host.get('requested_hostname')} validation: {check.get('message')}",
                        )
        events = await self._get(session, f"{base}/events?cluster_id={cluster.get('id')}") or []
        if events and events[-1].get("message") != said.get("event"):
            said["event"] = events[-1].get("message")
            self._log("info" if events[-1].get("severity") == "info" else "warning", address, said["event"])


def _ready(node: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )


def _subject(csr: dict) -> str:
    """The common names of the CSR's subject, which upstream matches the host name against."""
    try:
        request = x509.load_pem_x509_csr(base64.b64decode(csr["spec"].get("request") or ""))
    except ValueError:
        return ""
    return " ".join(str(a.value) for a in request.subject.get_attributes_for_oid(NameOID.COMMON_NAME))


def _json(text) -> dict:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
