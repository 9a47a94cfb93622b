"""The lab process: one asyncio loop hosting the API server, the control API and every simulated component.

Started by ``labctl start`` (``python -m lab.daemon <start options>``); it writes ``lab.json`` last, which
is how ``labctl start`` knows the lab is ready.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import signal
import sys

import yaml
from aiohttp import web

from . import auth, hosts, isobuild, kubelet, pods, rbac, redfish, rogue, seeds, workloads
from .apiserver import build_app
from .cli import add_start_options
from .context import LabContext
from .control import build_control_app
from .faults import Faults
from .pki import LabPKI, write_private
from .store import Store

LOG = logging.getLogger("lab")

# Async callables ``setup(ctx)`` run after the seed is loaded and before the servers start; a component
# (pods, hosts, redfish...) appends its setup here and may add ctx.control_routes, ctx.on_shutdown, pids.
COMPONENTS: list = []
COMPONENTS.append(hosts.setup)  # the new hosts: ISO or PXE boot, agent API per release, reboot (labctl boot)
COMPONENTS.append(isobuild.setup)  # add-nodes ISOs for tests without the collection (labctl build-iso)
COMPONENTS.append(redfish.setup)  # sushy-emulator BMCs that boot the hosts (labctl start --redfish)
COMPONENTS.append(kubelet.setup)  # kubelets after reboot: client/serving CSRs, Node, lab signer
COMPONENTS.append(rogue.setup)  # rogue CSRs on demand (labctl rogue-csr)
COMPONENTS.append(pods.setup)  # pods, exec, log and the simulated node-joiner
COMPONENTS.append(auth.setup)  # new identities with bearer tokens (labctl user)
COMPONENTS.append(workloads.setup)  # pods on Ready workers, pod GC of deleted Nodes (eviction: lab/apiserver.py)


def inventory_hosts(count: int) -> list:
    """The new workers: extra-worker-N on 127.0.111.(20+N), each with a unique locally administered MAC."""
    return [
        {
            "name": f"extra-worker-{index}",
            "ip": f"127.0.111.{20 + index}",
            "mac_address": f"52:54:00:6f:00:{20 + index:02x}",
            "prefix_length": 24,
            "gateway": "127.0.111.1",
            "dns_servers": ["127.0.111.1"],
        }
        for index in range(count)
    ]


def set_host_architectures(hosts: list, pairs: list) -> None:
    """``--host-arch NAME=ARCH``: that host's hardware architecture, in the inventory as its cpu_architecture."""
    by_name = {host["name"]: host for host in hosts}
    for pair in pairs:
        name, _equals, arch = pair.partition("=")
        if name not in by_name or not arch:
            raise SystemExit(f"--host-arch {pair!r}: give HOST=ARCH for a host of {', '.join(by_name) or 'none'}")
        by_name[name]["cpu_architecture"] = arch


def kubeconfig(server: str, ca_pem: bytes, user: str, token: str) -> bytes:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "lab",
                "cluster": {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "lab", "user": user, "namespace": "default"}}],
        "current-context": user,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False).encode()


def inventory(ctx) -> bytes:
    hosts = {host["name"]: {key: value for key, value in host.items() if key != "name"} for host in ctx.hosts}
    document = {
        "all": {
            "children": {
                "new_workers": {
                    "hosts": hosts,
                    "vars": {"kubeconfig": os.path.join(ctx.state_dir, "kubeconfig")},
                }
            }
        }
    }
    return yaml.safe_dump(document, sort_keys=False).encode()


def atomic_write(path: str, data: bytes, private: bool = False) -> None:
    temporary = path + ".tmp"
    if private:
        write_private(temporary, data)
    else:
        with open(temporary, "wb") as handle:
            handle.write(data)
    os.replace(temporary, path)


def write_state_files(ctx, tokens: dict) -> None:
    directory = ctx.state_dir
    ca_pem = ctx.pki.ca_pem
    atomic_write(os.path.join(directory, "ca.crt"), ca_pem)
    for file_name, (user, token) in tokens.items():
        atomic_write(os.path.join(directory, file_name), kubeconfig(ctx.api_url, ca_pem, user, token), private=True)
    atomic_write(os.path.join(directory, "inventory.yml"), inventory(ctx))
    lab = {
        "api_url": ctx.api_url,
        "control_url": ctx.control_url,
        "pids": ctx.pids,
        "pid_start_times": ctx.pid_start_times,
        "variant": ctx.variant,
        "hosts": ctx.hosts,
        "state_dir": directory,
    }
    lab.update(getattr(ctx, "lab_json", {}))  # sections components add (agent ports, redfish)
    atomic_write(os.path.join(directory, "lab.json"), json.dumps(lab, indent=2).encode())


async def _serve(app: web.Application, port: int, ssl_context=None) -> tuple:
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=ssl_context, reuse_address=True)
    await site.start()
    bound_port = runner.addresses[0][1]
    return runner, bound_port


async def run(options) -> None:
    state_dir = os.path.abspath(options.state)
    pki_dir = os.path.join(state_dir, "pki")
    os.makedirs(pki_dir, mode=0o700, exist_ok=True)
    store = Store(event_window=options.event_window)
    count = seeds.load_into(store, options.variant)
    count += rbac.bootstrap(store)  # the roles and bindings of the built-in identities (lab.rbac)
    ctx = LabContext(state_dir, options, store, LabPKI(), Faults(), auth.Authenticator())
    ctx.hosts = inventory_hosts(options.hosts)
    set_host_architectures(ctx.hosts, options.host_arch)
    tokens = {
        "kubeconfig": ("admin", ctx.auth.add_token(auth.ADMIN)),
        "kubeconfig-readonly": ("lab-readonly", ctx.auth.add_token(auth.READONLY)),
        "kubeconfig-bootstrapper": ("node-bootstrapper", ctx.auth.add_token(auth.BOOTSTRAPPER)),
    }
    for setup in COMPONENTS:
        await setup(ctx)
    api_runner, api_port = await _serve(build_app(ctx), options.api_port, ctx.pki.server_ssl_context(pki_dir))
    control_runner, control_port = await _serve(build_control_app(ctx), 0)
    ctx.api_url = f"https://127.0.0.1:{api_port}"
    ctx.control_url = f"http://127.0.0.1:{control_port}"
    write_state_files(ctx, tokens)
    LOG.info(
        "lab ready: variant %s, %d seeded objects, %d hosts, api %s, control %s",
        options.variant,
        count,
        len(ctx.hosts),
        ctx.api_url,
        ctx.control_url,
    )

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    LOG.info("lab stopping")
    for shutdown in reversed(ctx.on_shutdown):
        try:
            await shutdown()
        except Exception:  # keep stopping the rest
            LOG.exception("shutdown step failed")
    ctx.store.end_watches()
    await api_runner.cleanup()
    await control_runner.cleanup()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="lab.daemon")
    add_start_options(parser)
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(run(options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
