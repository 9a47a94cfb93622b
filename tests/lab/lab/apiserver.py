"""The HTTPS Kubernetes-style API server: discovery, routing and authorization of the REST verbs, every kind.

Request path: log middleware (request log) -> auth middleware (401, identity) -> path authorization (403 for a
non-resource path the caller may not get) -> fault middleware (delay, reset, 5xx) -> handler (RBAC 403 from
``lab.rbac``, then ``lab.verbs`` with the store; reviews go to ``lab.reviews``). Every error is a Kubernetes
``Status`` body.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from aiohttp import web

from . import escalation, kinds, rbac, reviews, verbs, workloads
from .auth import ANONYMOUS_PATHS, Attributes, non_resource
from .discovery import (
    CTX,
    IDENTITY,
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
from .errors import ApiError, forbidden, status_body
from .faults import RESET, reset_connection

LOG = logging.getLogger(__name__)


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
        user = request.get(IDENTITY)
        if request.get(RESET):
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
    request[IDENTITY] = identity
    return await handler(request)


def is_resource_path(path: str) -> bool:
    """``/api/v1/<resource>...`` or ``/apis/<group>/<version>/<resource>...``; everything else (``/version``,
    discovery, unknown paths) is a non-resource request, authorized on its path."""
    parts = [part for part in path.split("/") if part]
    return (len(parts) >= 3 and parts[0] == "api") or (len(parts) >= 4 and parts[0] == "apis")


@web.middleware
async def path_authorization_middleware(request: web.Request, handler):
    """Non-resource requests need a nonResourceURLs rule (system:discovery, system:public-info-viewer...)."""
    if not is_resource_path(request.path):
        identity = request[IDENTITY]
        attrs = non_resource(request.method.lower(), request.path)
        allowed, reason = rbac.authorize(request.app[CTX].store, identity, attrs)
        if not allowed:
            user = identity.name if identity else "system:anonymous"
            message = f'forbidden: User "{user}" cannot {request.method.lower()} path "{request.path}"'
            return error_response(ApiError(403, "Forbidden", message + (f": {reason}" if reason else "")))
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
    if faults.roll("api_throttle_rate"):
        # max-in-flight answers 429 with Retry-After "1" before the request is handled -- kubernetes/kubernetes
        # staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go@e4b6dc5a70de2c18b80897d104473342bc5452e5
        response = json_response(status_body(429, "TooManyRequests", "Too many requests, please try again later."), 429)
        response.headers["Retry-After"] = "1"
        return response
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


def _authorize(request: web.Request, target: Target, verb: str, name: str | None, named: bool = True) -> None:
    """403 unless the caller may ``verb`` the target (``lab.rbac``); ``named`` False for a create, whose request
    carries no name (so a rule with resourceNames never allows it), though the refusal names the object."""
    ctx = request.app[CTX]
    identity = request[IDENTITY]
    kind = target.kind
    attrs = Attributes(
        verb, kind.group, kind.plural, target.subresource or "", target.namespace or "", (name or "") if named else ""
    )
    resource = attrs.combined_resource
    allowed, reason = rbac.authorize(ctx.store, identity, attrs, name or "")
    if ctx.faults.denies(verb, resource, identity.is_admin) or not allowed:
        error = forbidden(kind, name, identity.name, verb, resource, target.namespace)
        if reason:
            error = ApiError(error.code, error.reason, f"{error.message}: {reason}", error.details)
        raise error
    if kind is kinds.CSR and target.subresource == "approval" and verb in ("update", "patch"):
        escalation.check_approval(ctx.store, identity, name or "")


async def _review(request: web.Request, target: Target) -> web.Response:
    """POST of a SelfSubjectAccessReview or SelfSubjectRulesReview: answered, never stored (``lab.reviews``)."""
    if request.method != "POST" or target.name:
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    body = verbs.check_body(target, await verbs.read_body(request))
    _authorize(request, target, "create", None)
    ctx = request.app[CTX]
    return json_response(reviews.review(ctx.store, request[IDENTITY], target.kind, body), 201)


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
        if target.kind in reviews.KINDS:
            return await _review(request, target)
        verb = _verb(request, target)
        if target.kind.namespaced and not target.namespace and verb not in ("list", "watch"):
            raise _NO_RESOURCE
        if target.subresource == "eviction":  # lab/workloads.py
            _authorize(request, target, "create", target.name)
            return await workloads.evict(request, ctx, target)
        if target.subresource in ("exec", "log"):
            _authorize(request, target, verb, target.name)
            return await verbs.pod_subresource(request, ctx, target)
        if verb in ("watch", "list", "deletecollection"):
            _authorize(request, target, verb, None)
            if verb == "watch":
                return await verbs.watch(request, ctx, target)
            if verb == "list":
                return verbs.list_objects(request, ctx, target)
            return verbs.delete_collection(request, ctx, target)
        if verb == "create":
            if target.name:
                raise ApiError(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            body = verbs.check_body(target, await verbs.read_body(request))
            _authorize(request, target, verb, body["metadata"].get("name"), named=False)
            return await verbs.create(request, ctx, target, body)
        if verb == "get":
            _authorize(request, target, verb, target.name)
            return verbs.get_object(request, ctx, target)
        if verb == "update":
            body = verbs.check_body(target, await verbs.read_body(request))
            _authorize(request, target, verb, target.name)
            return verbs.update(request, ctx, target, body)
        if verb == "patch":
            body = await verbs.read_body(request)
            _authorize(request, target, verb, target.name)
            return await verbs.patch(request, ctx, target, body)
        _authorize(request, target, verb, target.name)
        return verbs.delete(ctx, target)
    except ApiError as error:
        return error_response(error)


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
        middlewares=[log_middleware, auth_middleware, path_authorization_middleware, fault_middleware],
        client_max_size=64 * 1024 * 1024,
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
