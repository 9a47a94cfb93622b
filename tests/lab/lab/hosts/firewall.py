"""Who may reach a host's agent and kubelet: everyone, or with ``labctl start --firewalled-hosts`` the cluster only.

A firewalled host answers connections from the cluster's nodes alone: the API server runs on the control-plane nodes,
and a pod's traffic to an address outside the cluster network leaves its node with the node's address (OVN-Kubernetes'
default source NAT; an EgressIP would give it another, which the lab does not model). The lab takes the Nodes'
InternalIP addresses as those sources. Any other source (the Ansible controller) has its connection reset before a byte
is read, as a REJECT rule would. Every connection is recorded, admitted or not (``labctl dump`` ``host_connections``),
so a test can show that the controller never reached a host.
"""

from __future__ import annotations

from .. import kinds
from ..context import utc_now

LOG_LIMIT = 20000


class Firewall:
    def __init__(self, ctx):
        self.ctx = ctx
        self.enabled = bool(getattr(ctx.options, "firewalled_hosts", False))
        self.log: list = []

    def cluster_addresses(self) -> set:
        """The InternalIP addresses of the cluster's Nodes."""
        items, _rv = self.ctx.store.list(kinds.NODE)
        return {
            entry.get("address")
            for node in items
            for entry in (node.get("status") or {}).get("addresses") or []
            if entry.get("type") == "InternalIP"
        }

    def admits(self, host: str, port: str, source: str | None) -> bool:
        """Whether a connection from ``source`` to ``host``'s ``port`` (agent or kubelet) gets through."""
        admitted = not self.enabled or source in self.cluster_addresses()
        if len(self.log) >= LOG_LIMIT:
            del self.log[: LOG_LIMIT // 10]
        self.log.append({"time": utc_now(), "host": host, "port": port, "source": source, "admitted": admitted})
        return admitted
