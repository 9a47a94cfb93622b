"""Add-nodes ISOs for tests and the benchmark: the lab's own node-joiner run for the lab inventory.

``labctl build-iso`` (control route ``POST /build-iso``) writes an ISO without the collection, so lab tests can
boot hosts from it; it can forge an ISO for another cluster or one whose token has expired.
"""

from __future__ import annotations

import os
import tempfile
import time

from . import clusterinfo, isobase, versions
from .apiserver import CTX, json_response
from .hosts import _json_body

TEST_ISO_SIZE = 8 * 1024 * 1024


class IsoBuildError(Exception):
    """The node-joiner run failed (its fatal log line is the message)."""


def nodes_config(hosts, dhcp=()):
    """nodes-config.yaml for inventory hosts with static IPv4, but those named in ``dhcp``: no networkConfig."""
    entries = []
    for host in hosts:
        if host["name"] in dhcp:
            interfaces = [{"name": "eth0", "macAddress": host["mac_address"]}]
            entries.append({"hostname": host["name"], "role": "worker", "interfaces": interfaces})
            continue
        address = {"ip": host["ip"], "prefix-length": host.get("prefix_length", 24)}
        entries.append(
            {
                "hostname": host["name"],
                "role": "worker",
                "interfaces": [{"name": "eth0", "macAddress": host["mac_address"]}],
                "networkConfig": {
                    "interfaces": [
                        {
                            "name": "eth0",
                            "type": "ethernet",
                            "state": "up",
                            "mac-address": host["mac_address"],
                            "ipv4": {"enabled": True, "dhcp": False, "address": [address]},
                        }
                    ],
                    "dns-resolver": {"config": {"server": list(host.get("dns_servers") or [])}},
                    "routes": {
                        "config": [
                            {
                                "destination": "0.0.0.0/0",
                                "next-hop-address": host.get("gateway"),
                                "next-hop-interface": "eth0",
                                "table-id": 254,
                            }
                        ]
                    },
                },
            }
        )
    return {"hosts": entries}


class _ForgedSource(clusterinfo.StoreSource):
    """The cluster with another ``spec.clusterID`` (an ISO for another cluster)."""

    def __init__(self, store, cluster_id):
        clusterinfo.StoreSource.__init__(self, store)
        self.cluster_id = cluster_id

    def get(self, api_version, kind_name, name, namespace=None):
        obj = clusterinfo.StoreSource.get(self, api_version, kind_name, name, namespace)
        if kind_name == "ClusterVersion":
            obj = dict(obj, spec=dict(obj.get("spec") or {}, clusterID=self.cluster_id))
        return obj


async def build_iso(ctx, out, hosts, cluster_id=None, expired_token=False, dhcp=()):
    """Write an add-nodes ISO for ``hosts`` at ``out``; return the run (its ``token`` and ``auth``)."""
    import yaml

    from .nodejoiner import TOKEN_LIFETIME, NodeJoinerRun

    store = ctx.store
    source = _ForgedSource(store, cluster_id) if cluster_id else clusterinfo.StoreSource(store)
    get_secret, put_secret = source.get_secret, source.put_secret
    if expired_token:  # a throwaway token: the cluster's Secret is neither read nor written

        def get_secret(_namespace, _name):
            return None

        def put_secret(_secret):
            return None

    options = {"profile": versions.for_cluster(store)}
    if expired_token:
        past = time.time() - TOKEN_LIFETIME - 3600
        options["clock"] = lambda: past
    with tempfile.TemporaryDirectory(dir=os.path.dirname(out) or ".") as work:
        assets = os.path.join(work, "assets")
        os.makedirs(assets)
        options["work_dir"] = work
        with open(os.path.join(assets, "nodes-config.yaml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(nodes_config(hosts, dhcp), handle)
        run = NodeJoinerRun(
            assets,
            source,
            get_secret,
            put_secret,
            lambda wanted: isobase.build_base_iso(isobase.LAB_CACHE, TEST_ISO_SIZE, wanted),
            options,
        )
        if await run.run() != 0:
            raise IsoBuildError(run.log[-1] if run.log else "node-joiner failed")
        built = [name for name in os.listdir(assets) if name.startswith("node.") and name.endswith(".iso")]
        os.replace(os.path.join(assets, built[0]), out)
    return run


async def build_iso_endpoint(request):
    """Body {"out": PATH, "hosts": [NAME...], "cluster_id": ID, "expired_token": bool, "dhcp": [NAME...]}: an
    add-nodes ISO.

    Runs the lab's own node-joiner for the lab inventory (all hosts by default), so tests and the benchmark
    have an ISO without the collection. ``cluster_id`` forges an ISO for another cluster; ``expired_token``
    one whose token has expired (minted with a throwaway key, the Secret is left alone); the hosts of ``dhcp`` get
    no networkConfig (they take the lease of their DHCP reservation).
    """
    ctx = request.app[CTX]
    body = await _json_body(request)
    out = body.get("out")
    if not out:
        return json_response({"error": "give out: the path of the ISO to write"}, 400)
    try:
        hosts = [ctx.lab_hosts.get(name).inventory for name in body.get("hosts") or ctx.lab_hosts.by_name]
    except KeyError as exc:
        return json_response({"error": exc.args[0]}, 400)
    try:
        run = await build_iso(
            ctx,
            os.path.abspath(out),
            hosts,
            body.get("cluster_id"),
            bool(body.get("expired_token")),
            body.get("dhcp") or (),
        )
    except IsoBuildError as exc:
        return json_response({"error": str(exc)}, 500)
    # "token": what a monitor sends (agent token on 4.17, watcher token from 4.18); "tokens": every one.
    tokens = {key: run.auth[key] for key in ("agent", "user", "watcher") if run.auth.get(key)}
    return json_response({"iso": os.path.abspath(out), "token": run.token, "tokens": tokens})


async def setup(ctx) -> None:
    ctx.control_routes.append(("POST", "/build-iso", build_iso_endpoint))
