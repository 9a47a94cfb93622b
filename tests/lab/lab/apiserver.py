"""The HTTPS Kubernetes-style API server: discovery, the generic REST verbs for every registered kind, watch.

Request path: log middleware (request log) -> auth middleware (401, identity) -> fault middleware
(delay, reset, 5xx) -> handler (RBAC 403, store). Every error is a Kubernetes ``Status`` body.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass

import yaml
from aiohttp import web

from . import admission, kinds, tables
from .auth import ANONYMOUS_PATHS, Attributes, allowed
from .discovery import (
    CTX,
    _serves,
    core_versions,
    error_response,
    group_info,
    group_list,
    json_response,
    openapi_v2,
    resource_list,
    version,
)
from .discovery import NO_RESOURCE as _NO_RESOURCE
from .errors import ApiError, bad_request, forbidden, status_body
from .patch import APPLY, apply_patch
from .store import now_rfc3339

LOG = logging.getLogger(__name__)
DEFAULT_WATCH_SECONDS = 1800  # kube-apiserver's --min-request-timeout


def reset_connection(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """Drop the TCP connection (a fault); aiohttp then quietly fails to write ``response``."""
    request["reset"] = True
    if request.transport is not None:
        request.transport.abort()
    return response


# ----- middlewares ---------------------------------------------------------------------------------
@web.middleware
async def log_middleware(request: web.Request, handler):
    ctx = request.app[CTX]
    status = None
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        user = request.get("identity")
        if request.get("reset"):
            status = "reset"
        ctx.log_request(request.method, request.path_qs, user.name if user else None, status)


@web.middleware
async def auth_middleware(request: web.Request, handler):
    ctx = request.app[CTX]
    try:
        identity = ctx.auth.identify(
            request.headers.get("Authorization"),
            request.transport.get_extra_info("peercert") if request.transport else None,
        )
    except ApiError as error:
        return error_response(error)
    if identity is None and request.path not in ANONYMOUS_PATHS:
        return error_response(ApiError(401, "Unauthorized", "Unauthorized"))
    request["identity"] = identity
    return await handler(request)


@web.middleware
async def fault_middleware(request: web.Request, handler):
    faults = request.app[CTX].faults
    delay = faults.get("api_delay")
    if delay:
        await asyncio.sleep(delay)
    if faults.roll("api_reset_rate"):
        return reset_connection(request, web.Response())
    if faults.roll("api_error_rate"):
        code = faults.random.choice((500, 503))
        reason = "InternalError" if code == 500 else "ServiceUnavailable"
        return json_response(status_body(code, reason, f"lab fault api_error_rate: {reason}"), code)
    return await handler(request)


async def healthz(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


# ----- resource requests ---------------------------------------------------------------------------
@dataclass
class Target:
    kind: object
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_target(path: str):
    """Split a REST path; returns ("discovery", group, version) for a group-version root, or a Target."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise _NO_RESOURCE
    if not rest:
        return ("discovery", group, version)
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise _NO_RESOURCE
    kind = kinds.by_resource(group, version, rest[0])
    if kind is None or (namespace and not kind.namespaced):
        raise _NO_RESOURCE
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if subresource and subresource not in kind.subresources:
        raise _NO_RESOURCE
    return Target(kind, namespace, name, subresource)


def _verb(request: web.Request, target: Target) -> str:
    method = request.method
    if target.subresource == "exec":
        return "create"  # exec is authorized as create even over a websocket GET
    if method == "GET":
        if target.name:
            return "get"
        return "watch" if request.query.get("watch") in ("true", "1") else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def _authorize(request: web.Request, target: Target, verb: str, name: str | None) -> None:
    ctx = request.app[CTX]
    identity = request["identity"]
    resource = f"{target.kind.plural}/{target.subresource}" if target.subresource else target.kind.plural
    attrs = Attributes(verb, target.kind, resource, target.namespace, name)
    if ctx.faults.denies(verb, resource, identity.is_admin) or not allowed(identity, attrs):
        raise forbidden(target.kind, name, identity.name, verb, resource, target.namespace)


async def _read_body(request: web.Request):
    raw = await request.read()
    if not raw:
        raise bad_request("the request body is empty")
    try:
        if request.content_type in ("application/yaml", APPLY):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the body of the request could not be decoded: {exc}") from None


def _check_body(target: Target, body) -> dict:
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be an object")
    kind = target.kind
    if body.get("apiVersion") not in (None, kind.api_version) or body.get("kind") not in (None, kind.kind):
        raise bad_request(
            f"the API version in the data ({body.get('apiVersion')}) does not match the expected "
            f"API version ({kind.api_version})"
        )
    meta = body.setdefault("metadata", {})
    if kind.namespaced:
        if meta.get("namespace") not in (None, "", target.namespace):
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = target.namespace
    if target.name and meta.get("name") not in (None, target.name):
        raise bad_request("the name of the object does not match the name on the URL")
    return body


async def resource_handler(request: web.Request) -> web.StreamResponse:
    ctx = request.app[CTX]
    try:
        parsed = parse_target(request.path)
        if isinstance(parsed, tuple):
            if request.method != "GET":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
            body = resource_list(parsed[1], parsed[2], _serves(ctx))
            if body is None:
                raise _NO_RESOURCE
            return json_response(body)
        target = parsed
        if not _serves(ctx)(target.kind):
            raise _NO_RESOURCE
        verb = _verb(request, target)
        if target.kind.namespaced and not target.namespace and verb not in ("list", "watch"):
            raise _NO_RESOURCE
        if target.subresource in ("exec", "log"):
            _authorize(request, target, verb, target.name)
            return await _pod_hook(request, ctx, target)
        if verb == "watch":
            _authorize(request, target, verb, None)
            return await _watch(request, ctx, target)
        if verb == "list":
            _authorize(request, target, verb, None)
            return _list(request, ctx, target)
        if verb == "get":
            _authorize(request, target, verb, target.name)
            obj = ctx.store.get(target.kind, target.namespace, target.name)
            if tables.wants_table(request.headers.get("Accept", "")):
                return json_response(
                    tables.table(
                        target.kind, [obj], obj["metadata"]["resourceVersion"], request.query.get("includeObject")
                    )
                )
            return json_response(obj)
        if verb == "create":
            if target.name:
                raise ApiError(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            body = _check_body(target, await _read_body(request))
            _authorize(request, target, verb, body["metadata"].get("name"))
            return await _create(request, ctx, target, body)
        if verb == "update":
            body = _check_body(target, await _read_body(request))
            _authorize(request, target, verb, target.name)
            current = ctx.store.get(target.kind, target.namespace, target.name)
            return _store_update(request, ctx, target, current, body, 200)
        if verb == "patch":
            body = await _read_body(request)
            _authorize(request, target, verb, target.name)
            return await _patch(request, ctx, target, body)
        if verb == "delete":
            _authorize(request, target, verb, target.name)
            return _delete(ctx, target)
        _authorize(request, target, verb, None)
        return _delete_collection(request, ctx, target)
    except ApiError as error:
        return error_response(error)


def _list(request: web.Request, ctx, target: Target) -> web.Response:
    items, rv = ctx.store.list(
        target.kind, target.namespace, request.query.get("labelSelector"), request.query.get("fieldSelector")
    )
    if tables.wants_table(request.headers.get("Accept", "")):
        return json_response(tables.table(target.kind, items, str(rv), request.query.get("includeObject")))
    return json_response(
        {
            "kind": f"{target.kind.kind}List",
            "apiVersion": target.kind.api_version,
            "metadata": {"resourceVersion": str(rv)},
            "items": items,
        }
    )


async def _create(request: web.Request, ctx, target: Target, body: dict) -> web.Response:
    obj = admission.prepare_create(target.kind, body, request["identity"])
    created = ctx.store.create(target.kind, obj)
    if target.kind is kinds.POD and ctx.pods is not None:
        await ctx.pods.on_created(created)
        created = ctx.store.find(target.kind, target.namespace, created["metadata"]["name"]) or created
    return json_response(created, 201)


def _store_update(request, ctx, target: Target, current: dict, new: dict, code: int) -> web.Response:
    obj = admission.prepare_update(target.kind, current, new, target.subresource)
    updated = ctx.store.update(target.kind, obj)
    if target.subresource == "approval":
        ctx.approvals.append(
            {
                "csr": target.name,
                "user": request["identity"].name,
                "time": now_rfc3339(),
                "conditions": updated.get("status", {}).get("conditions", []),
            }
        )
    return json_response(updated, code)


async def _patch(request: web.Request, ctx, target: Target, body) -> web.Response:
    current = ctx.store.find(target.kind, target.namespace, target.name)
    if current is None:
        if request.content_type == APPLY and not target.subresource:
            # Server-side apply creates what does not exist yet.
            body = _check_body(target, body)
            return await _create(request, ctx, target, body)
        ctx.store.get(target.kind, target.namespace, target.name)  # raises the 404
    patched = apply_patch(current, body, request.content_type, target.kind.builtin)
    if not isinstance(patched, dict):
        raise bad_request("the patch does not produce an object")
    return _store_update(request, ctx, target, current, patched, 200)


def _delete(ctx, target: Target) -> web.Response:
    removed = ctx.store.delete(target.kind, target.namespace, target.name)
    if target.kind in (kinds.NAMESPACE, kinds.POD):
        removed["metadata"]["deletionTimestamp"] = now_rfc3339()
        if target.kind is kinds.NAMESPACE:
            removed["status"] = {"phase": "Terminating"}
        return json_response(removed)
    details = {
        "name": target.name,
        "group": target.kind.group,
        "kind": target.kind.plural,
        "uid": removed["metadata"]["uid"],
    }
    return json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
    )


def _delete_collection(request: web.Request, ctx, target: Target) -> web.Response:
    items, _rv = ctx.store.list(
        target.kind, target.namespace, request.query.get("labelSelector"), request.query.get("fieldSelector")
    )
    for obj in items:
        meta = obj["metadata"]
        ctx.store.delete(target.kind, meta.get("namespace"), meta["name"])
    return json_response(
        {
            "kind": f"{target.kind.kind}List",
            "apiVersion": target.kind.api_version,
            "metadata": {"resourceVersion": str(ctx.store.resource_version)},
            "items": items,
        }
    )


async def _pod_hook(request: web.Request, ctx, target: Target) -> web.StreamResponse:
    ctx.store.get(target.kind, target.namespace, target.name)  # 404 for a missing pod
    if ctx.pods is None:
        raise ApiError(501, "NotImplemented", f"pods/{target.subresource} is not simulated by this lab")
    if target.subresource == "exec":
        if request.method not in ("GET", "POST"):
            raise ApiError(405, "MethodNotAllowed", "exec takes GET or POST")
        return await ctx.pods.exec_ws(request, target.namespace, target.name)
    if request.method != "GET":
        raise ApiError(405, "MethodNotAllowed", "log takes GET")
    return await ctx.pods.log(request, target.namespace, target.name)


async def _watch(request: web.Request, ctx, target: Target) -> web.StreamResponse:
    query = request.query
    timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS)
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    try:
        watch = ctx.store.watch(
            target.kind,
            target.namespace,
            query.get("labelSelector"),
            query.get("fieldSelector"),
            query.get("resourceVersion"),
        )
    except ApiError as error:
        if error.code != 410:
            raise
        # A too-old resourceVersion is reported inside a 200 stream, as kube-apiserver does.
        await response.prepare(request)
        await response.write((json.dumps({"type": "ERROR", "object": error.status()}) + "\n").encode())
        await response.write_eof()
        return response
    started = time.monotonic()
    as_table = tables.wants_table(request.headers.get("Accept", ""))
    try:
        await response.prepare(request)
        while True:
            cut = ctx.faults.get("watch_cut_seconds")
            deadline = min(timeout, cut) if cut else timeout
            remaining = deadline - (time.monotonic() - started)
            if remaining <= 0:
                if cut and cut <= timeout:
                    return reset_connection(request, response)
                break
            event = await watch.next(min(remaining, 1.0))  # re-check faults switched on mid-watch
            if watch.ended or request.transport is None or request.transport.is_closing():
                break
            if event is not None:
                if as_table:
                    # kubectl get -w: each event carries a one-row Table (the real server does the same).
                    obj = event["object"]
                    event = {
                        "type": event["type"],
                        "object": tables.table(
                            target.kind, [obj], obj["metadata"]["resourceVersion"], query.get("includeObject")
                        ),
                    }
                await response.write((json.dumps(event) + "\n").encode())
        if not request.transport.is_closing():
            await response.write_eof()
    finally:
        watch.close()
    return response


async def not_found(_request: web.Request) -> web.Response:
    """Anything else (``/openapi/v2`` included): the Status kube-apiserver gives for unknown paths."""
    return error_response(_NO_RESOURCE)


def _tell_pods_about_deletions(ctx):
    """A store listener: every deleted pod (directly or with its namespace) goes to ``ctx.pods.on_deleted``."""
    pending: set = set()  # keep references so the tasks are not garbage collected mid-run

    def listener(event_type: str, kind, obj: dict) -> None:
        if event_type == "DELETED" and kind is kinds.POD and ctx.pods is not None:
            task = asyncio.get_running_loop().create_task(ctx.pods.on_deleted(obj))
            pending.add(task)
            task.add_done_callback(pending.discard)

    return listener


def build_app(ctx) -> web.Application:
    app = web.Application(
        middlewares=[log_middleware, auth_middleware, fault_middleware], client_max_size=64 * 1024 * 1024
    )
    app[CTX] = ctx
    ctx.store.add_listener(_tell_pods_about_deletions(ctx))
    app.router.add_get("/version", version)
    for path in ("/healthz", "/readyz", "/livez"):
        app.router.add_get(path, healthz)
    app.router.add_get("/api", core_versions)
    app.router.add_get("/apis", group_list)
    app.router.add_get("/openapi/v2", openapi_v2)
    app.router.add_get("/apis/{group}", group_info)
    app.router.add_route("*", "/{tail:api/.+|apis/[^/]+/.+}", resource_handler)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
