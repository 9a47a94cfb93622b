"""The lab's hosts as a fleet: ports, the control endpoints (``labctl boot``, the dump) and the component setup."""

from __future__ import annotations

import json
import os
import socket

from aiohttp import web

from ..apiserver import CTX, json_response
from .firewall import Firewall
from .machine import SimHost


def free_port():
    """A port free on every address (bound on the wildcard), so each host IP can listen on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return probe.getsockname()[1]


class Hosts:
    def __init__(self, ctx):
        options = ctx.options
        self.agent_port = options.agent_port or free_port()
        self.kubelet_port = options.kubelet_port or free_port()
        self.firewall = Firewall(ctx)
        # The lab's DHCP server: a reservation per host, its MAC -> the address the lab was started with.
        self.reservations = {h["mac_address"].lower(): h["ip"] for h in ctx.hosts}
        self.by_name = {
            h["name"]: SimHost(ctx, h, self.agent_port, self.kubelet_port, options.install_seconds) for h in ctx.hosts
        }

    def get(self, name):
        if name not in self.by_name:
            raise KeyError(f"no host {name!r}; the lab's hosts: {', '.join(self.by_name) or 'none'}")
        return self.by_name[name]

    def state(self):
        return [host.state() for host in self.by_name.values()]

    async def shutdown(self):
        for host in self.by_name.values():
            await host.power_off()


async def _json_body(request):
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "the body must be a JSON object"}), content_type="application/json"
        )
    return body


async def boot_endpoint(request):
    """Body {"iso": PATH | "pxe": PATH, "hosts": [NAME, ...], "install_seconds": S}: boot those hosts.

    Stands for a person at the console: ``iso`` is the add-nodes ISO; ``pxe`` a PXE boot from node-joiner's
    boot artifacts (the ``boot-artifacts`` directory, or the ``node.<arch>-initrd.img`` itself).
    ``install_seconds`` (optional) overrides the lab's for this boot.
    """
    ctx = request.app[CTX]
    body = await _json_body(request)
    names, seconds = body.get("hosts") or [], body.get("install_seconds")
    if seconds is not None and (not isinstance(seconds, (int, float)) or seconds <= 0):
        return json_response({"error": f"install_seconds must be a positive number, got {seconds!r}"}, 400)
    if bool(body.get("iso")) == bool(body.get("pxe")):
        return json_response({"error": "give exactly one of iso (an ISO file) and pxe (boot artifacts)"}, 400)
    pxe = bool(body.get("pxe"))
    path = body["pxe"] if pxe else body["iso"]
    if pxe and not os.path.exists(path):
        return json_response({"error": f"no boot artifacts directory or initrd at {path!r}"}, 400)
    if not pxe and not os.path.isfile(path):
        return json_response({"error": f"no ISO file at {path!r}"}, 400)
    try:
        hosts = [ctx.lab_hosts.get(name) for name in names]
    except KeyError as exc:
        return json_response({"error": exc.args[0]}, 400)
    if not hosts:
        return json_response({"error": "name at least one host"}, 400)
    return json_response([await host.boot(os.path.abspath(path), install_seconds=seconds, pxe=pxe) for host in hosts])


async def power_off_endpoint(request):
    """Body {"hosts": [NAME, ...]}: those hosts fail (powered off: no agent, no kubelet), e.g. a worker to replace."""
    ctx = request.app[CTX]
    try:
        hosts = [ctx.lab_hosts.get(name) for name in (await _json_body(request)).get("hosts") or []]
    except KeyError as exc:
        return json_response({"error": exc.args[0]}, 400)
    for host in hosts:
        await host.power_off()
    return json_response([host.state() for host in hosts])


async def hosts_endpoint(request):
    return json_response(request.app[CTX].lab_hosts.state())


async def setup(ctx) -> None:
    ctx.lab_hosts = Hosts(ctx)
    ctx.control_routes.append(("POST", "/hosts/boot", boot_endpoint))
    ctx.control_routes.append(("GET", "/hosts", hosts_endpoint))
    ctx.control_routes.append(("POST", "/hosts/power-off", power_off_endpoint))
    # Sections of the dump and of lab.json other components may also fill (created by the first one).
    if not hasattr(ctx, "dump_sections"):
        ctx.dump_sections = {}
    if not hasattr(ctx, "lab_json"):
        ctx.lab_json = {}
    ctx.dump_sections["hosts"] = ctx.lab_hosts.state
    ctx.dump_sections["host_connections"] = lambda: list(ctx.lab_hosts.firewall.log)
    ctx.lab_json["agent_port"] = ctx.lab_hosts.agent_port
    ctx.lab_json["kubelet_port"] = ctx.lab_hosts.kubelet_port
    ctx.on_shutdown.append(ctx.lab_hosts.shutdown)
