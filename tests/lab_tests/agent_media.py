"""Boot media for the simulated hosts written by the tests themselves: an add-nodes Ignition with the files
the host's agent reads, laid out as node-joiner writes them for one release, and tokens minted here.

It does not use the lab's node-joiner, so the agent's behaviour per release is tested on its own: the files
are ``/etc/assisted/hostconfig/<name>/mac_addresses``, ``/etc/assisted/hostnames/<mac>``,
``/etc/assisted/add-nodes.env`` (4.17 ``AGENT_AUTH_TOKEN_EXPIRY``, 4.18+ ``AUTH_TOKEN_EXPIRY``),
``/etc/assisted/rendezvous-host.env`` and ``/usr/local/share/assisted-service/assisted-service.env`` (4.17 one
token ``AGENT_AUTH_TOKEN``; 4.18+ ``PULL_SECRET_TOKEN``/``USER_AUTH_TOKEN``/``WATCHER_AUTH_TOKEN`` with
``auth_scheme`` claims).
"""

from __future__ import annotations

import base64
import os
import time
import uuid

from lab import iso as iso_mod
from lab import jwt

PERSONAS = ("agentAuth", "userAuth", "watcherAuth")


def tokens_for(profile, key, exp, infra_env_id):
    """{persona: JWT}; on 4.17 the one infra_env_id token stands for all three."""
    if not profile.watcher_scheme:
        token = jwt.mint(key, infra_env_id, exp)
        return dict.fromkeys(PERSONAS, token)
    return {persona: jwt.mint_claims(key, {"auth_scheme": persona, "exp": int(exp)}) for persona in PERSONAS}


def _data(content):
    if isinstance(content, str):
        content = content.encode()
    return {"source": "data:text/plain;charset=utf-8;base64," + base64.b64encode(content).decode()}


def _env(pairs):
    return "".join(f"{name}={value}\n" for name, value in pairs)


def ignition(profile, hosts, cluster_id, key=None, exp=None, public_key_b64=None):
    """``(config, tokens)`` for ``hosts`` (inventory dicts); ``exp`` defaults to 48 h from now."""
    key = key or jwt.new_key()
    exp = int(exp if exp is not None else time.time() + 48 * 3600)
    infra_env_id = str(uuid.uuid4())
    tokens = tokens_for(profile, key, exp, infra_env_id)
    if public_key_b64 is None:
        public_key_b64 = base64.b64encode(jwt.public_pem(key).encode()).decode()
    expiry = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))
    if profile.watcher_scheme:
        rendezvous = [("PULL_SECRET_TOKEN", tokens["agentAuth"]), ("USER_AUTH_TOKEN", tokens["userAuth"])]
        service = [("USER_AUTH_TOKEN", tokens["userAuth"]), ("WATCHER_AUTH_TOKEN", tokens["watcherAuth"])]
    else:
        rendezvous = [("AGENT_AUTH_TOKEN", tokens["agentAuth"]), ("PULL_SECRET_TOKEN", tokens["agentAuth"])]
        service = [("AGENT_AUTH_TOKEN", tokens["agentAuth"])]
    files = {
        "/etc/assisted/add-nodes.env": _env(
            [
                ("CLUSTER_ID", cluster_id),
                ("CLUSTER_NAME", "lab"),
                ("CLUSTER_API_VIP_DNS_NAME", "api.lab.example.test"),
                (profile.expiry_variable, expiry),
            ]
        ),
        "/etc/assisted/rendezvous-host.env": _env(
            [
                ("NODE_ZERO_IP", "127.0.0.1"),
                ("SERVICE_BASE_URL", "http://127.0.0.1:8090/"),
                *rendezvous,
                ("WORKFLOW_TYPE", "addnodes"),
            ]
        ),
        "/usr/local/share/assisted-service/assisted-service.env": _env(
            [
                ("AUTH_TYPE", "agent-installer-local"),
                ("INFRA_ENV_ID", infra_env_id),
                ("EC_PUBLIC_KEY_PEM", public_key_b64),
                *service,
            ]
        ),
    }
    for host in hosts:
        mac = host["mac_address"].lower()
        files[f"/etc/assisted/hostconfig/{host['name']}/mac_addresses"] = mac + "\n"
        files[f"/etc/assisted/hostnames/{mac}"] = host["name"]
    config = {
        "ignition": {"version": "3.2.0"},
        "storage": {
            "files": [{"path": path, "mode": 0o644, "contents": _data(content)} for path, content in files.items()]
        },
    }
    return config, tokens


def write_pxe(directory, config, arch="x86_64"):
    """``<directory>/boot-artifacts/node.<arch>-initrd.img``: a live initrd (here one small cpio) with the
    Ignition appended as a gzip cpio, as node-joiner's PXE artifacts carry it."""
    out = os.path.join(directory, "boot-artifacts")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"node.{arch}-initrd.img")
    with open(path, "wb") as handle:
        handle.write(_live_initrd())
        handle.write(iso_mod.ignition_archive(config, "gzip"))
    return out


def _live_initrd():
    """A newc cpio with one file and the trailer, padded to 4 bytes (what the appended archive follows)."""

    def entry(name, data, mode):
        name_bytes = name.encode() + b"\0"
        header = "070701" + "".join(
            "%08x" % value for value in (1, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name_bytes), 0)
        )
        out = header.encode() + name_bytes
        out += b"\0" * (-len(out) % 4) + data
        return out + b"\0" * (-len(out) % 4)

    archive = entry("etc/initrd-release", b"NAME=lab\n", 0o100644) + entry("TRAILER!!!", b"", 0)
    return archive + b"\0" * (-len(archive) % 512)
