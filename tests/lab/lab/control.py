"""The control API: plain HTTP on 127.0.0.1 for tests and labctl (state dump, request log, approvals, faults).

Components add endpoints by appending ``(method, path, handler)`` to ``ctx.control_routes`` before the
daemon builds this app; a handler reaches the context as ``request.app[CTX]``.
"""

from __future__ import annotations

import json

from aiohttp import web

from .apiserver import CTX, json_response


async def state(request: web.Request) -> web.Response:
    return json_response(request.app[CTX].dump())


async def requests_log(request: web.Request) -> web.Response:
    return json_response(request.app[CTX].request_log)


async def approvals(request: web.Request) -> web.Response:
    return json_response(request.app[CTX].approvals)


async def reset_log(request: web.Request) -> web.Response:
    """Forget the request log (approvals stay: they are evidence of what the collection did)."""
    request.app[CTX].request_log.clear()
    return json_response({"requests": 0})


async def set_faults(request: web.Request) -> web.Response:
    """Body ``{"NAME": VALUE, ...}``; all or none are applied."""
    faults = request.app[CTX].faults
    try:
        wanted = json.loads(await request.read() or b"{}")
        if not isinstance(wanted, dict):
            raise ValueError("the body must be a JSON object of fault names to values")
        before = faults.snapshot()
        try:
            for name, value in wanted.items():
                faults.set(name, value)
        except ValueError:
            faults.clear()
            for name, value in before.items():
                faults.set(name, value)
            raise
    except ValueError as exc:
        return json_response({"error": str(exc)}, 400)
    return json_response(faults.snapshot())


async def clear_faults(request: web.Request) -> web.Response:
    faults = request.app[CTX].faults
    names = request.query.getall("name", [])
    if names:
        for name in names:
            faults.clear(name)
    else:
        faults.clear()
    return json_response(faults.snapshot())


async def client_cert(request: web.Request) -> web.Response:
    """Body ``{"user": CN, "groups": [O, ...]}``: a client certificate the API server accepts as that identity."""
    try:
        wanted = json.loads(await request.read() or b"{}")
        user, groups = wanted["user"], list(wanted.get("groups", []))
    except (ValueError, KeyError, TypeError):
        return json_response({"error": 'the body must be {"user": NAME, "groups": [GROUP, ...]}'}, 400)
    cert_pem, key_pem = request.app[CTX].pki.issue_client_cert(user, groups)
    return json_response({"cert": cert_pem.decode(), "key": key_pem.decode()})


def build_control_app(ctx) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[CTX] = ctx
    app.router.add_get("/state", state)
    app.router.add_get("/requests", requests_log)
    app.router.add_get("/approvals", approvals)
    app.router.add_post("/reset-log", reset_log)
    app.router.add_post("/faults", set_faults)
    app.router.add_delete("/faults", clear_faults)
    app.router.add_post("/client-cert", client_cert)
    for method, path, handler in ctx.control_routes:
        app.router.add_route(method, path, handler)
    return app
