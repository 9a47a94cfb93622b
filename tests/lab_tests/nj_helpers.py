"""Shared helpers of the node-joiner tests: runs against seed variants, without a lab process."""

import asyncio
import base64
import json

import yaml
from lab import clusterinfo, iso, nodejoiner, seeds, versions

NOW = 1_800_000_000
HOUR = 3600
MAC0 = "00:02:46:e3:9e:7c"
MAC1 = "00:02:46:e3:9e:7d"
VERSION_VARIANTS = ("v417", "v418", "v419", "v420", "v421")


def host(name, mac, ip, iface="eth0", **extra):
    entry = {
        "hostname": name,
        "role": "worker",
        "rootDeviceHints": {"deviceName": "/dev/sda"},
        "interfaces": [{"name": iface, "macAddress": mac}],
        "networkConfig": {
            "interfaces": [
                {
                    "name": iface,
                    "type": "ethernet",
                    "state": "up",
                    "mac-address": mac,
                    "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": ip, "prefix-length": 24}]},
                }
            ],
            "dns-resolver": {"config": {"server": ["127.0.111.1"]}},
            "routes": {
                "config": [
                    {
                        "destination": "0.0.0.0/0",
                        "next-hop-address": "127.0.111.1",
                        "next-hop-interface": iface,
                        "table-id": 254,
                    }
                ]
            },
        },
    }
    entry.update(extra)
    return entry


def nodes_config(*hosts, **top):
    config = {"hosts": list(hosts) or [host("extra-worker-0", MAC0, "127.0.111.20")]}
    config.update(top)
    return config


def profile_of(variant):
    cv = seeds.find(seeds.load_seed(variant), "ClusterVersion", "version")
    return versions.for_version(versions.cluster_version(cv))


class FakeSecrets:
    """The two secret callables, recording every write."""

    def __init__(self, secret=None):
        self.secret = secret
        self.puts = []

    def get(self, namespace, name):
        assert (namespace, name) == ("openshift-config", "agent-auth-token")
        return self.secret

    def put(self, secret):
        self.puts.append(json.loads(json.dumps(secret)))
        self.secret = dict(secret, metadata=dict(secret["metadata"], resourceVersion=str(len(self.puts))))

    def token(self, key="agentAuthToken"):
        return base64.b64decode(self.secret["data"][key]).decode()

    def public_pem(self):
        return base64.b64decode(base64.b64decode(self.secret["data"]["authTokenPublicKey"])).decode()


def make_run(tmp_path, iso_cache, variant="default", config=None, secrets=None, raw_yaml=None, objects=None, **options):
    """A NodeJoinerRun on the seed of ``variant`` (or on ``objects``); its nodes-config.yaml written."""
    assets = tmp_path / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    text = raw_yaml if raw_yaml is not None else yaml.safe_dump(config or nodes_config())
    (assets / "nodes-config.yaml").write_text(text)
    secrets = secrets or FakeSecrets()
    options.setdefault("clock", lambda: NOW)
    options.setdefault("profile", profile_of(variant))
    source = clusterinfo.ObjectsSource(
        objects if objects is not None else seeds.load_seed(variant), seeds.served_resources(variant)
    )
    run = nodejoiner.NodeJoinerRun(
        str(assets),
        source,
        secrets.get,
        secrets.put,
        lambda arch: iso.build_base_iso(iso_cache, 8 * 1024 * 1024, arch),
        options,
    )
    return run, assets, secrets


def execute(run, **flags):
    return asyncio.run(run.run(**flags))


def read_report(assets):
    return json.loads((assets / "report.json").read_text())


def replace(objects, kind, name, change, namespace=None):
    """A copy of ``objects`` where ``change(obj)`` is applied to one object (None: removed)."""
    result = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj["kind"] == kind and meta.get("name") == name and meta.get("namespace") == namespace:
            obj = change(json.loads(json.dumps(obj)))
            if obj is None:
                continue
        result.append(obj)
    return result
