"""What each REST verb does with the store, once the API server has routed and authorized a request.

Request bodies (JSON, YAML, apply), list (or a Table), get, create (pods go to ``ctx.pods.on_created``; roles and
bindings pass ``lab.escalation``'s rule on create and update), update
and the status/approval subresources (approvals are logged), JSON/merge/strategic/apply patches, delete (a
Namespace or Pod answers with the object, others with a Status), deletecollection, pods/exec and pods/log
(``ctx.pods``), and watch (a too-old resourceVersion is an ERROR event in a 200 stream).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import yaml
from aiohttp import web

from . import admission, escalation, kinds, tables
from .discovery import IDENTITY, json_response
from .errors import ApiError, bad_request
from .faults import reset_connection
from .patch import APPLY, apply_patch
from .store import now_rfc3339

if TYPE_CHECKING:
    from .apiserver import Target

DEFAULT_WATCH_SECONDS = 1800  # kube-apiserver's --min-request-timeout


def get_object(request: web.Request, ctx, target: Target) -> web.Response:
    obj = ctx.store.get(target.kind, target.namespace, target.name)
    if tables.wants_table(request.headers.get("Accept", "")):
        return json_response(
            tables.table(target.kind, [obj], obj["metadata"]["resourceVersion"], request.query.get("includeObject"))
        )
    return json_response(obj)


async def read_body(request: web.Request):
    raw = await request.read()
    if not raw:
        raise bad_request("the request body is empty")
    try:
        if request.content_type in ("application/yaml", APPLY):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the body of the request could not be decoded: {exc}") from None


def check_body(target: Target, body) -> dict:
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


def list_objects(request: web.Request, ctx, target: Target) -> web.Response:
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


async def create(request: web.Request, ctx, target: Target, body: dict) -> web.Response:
    obj = admission.prepare_create(target.kind, body, request[IDENTITY])
    # Roles and bindings: the escalation rule (a create carries no name in its URL).
    escalation.check_write(ctx.store, request[IDENTITY], target.kind, target.namespace, obj, None, "")
    created = ctx.store.create(target.kind, obj)
    if target.kind is kinds.POD and ctx.pods is not None:
        await ctx.pods.on_created(created)
        created = ctx.store.find(target.kind, target.namespace, created["metadata"]["name"]) or created
    return json_response(created, 201)


def update(request: web.Request, ctx, target: Target, body: dict) -> web.Response:
    current = ctx.store.get(target.kind, target.namespace, target.name)
    return store_update(request, ctx, target, current, body, 200)


def store_update(request, ctx, target: Target, current: dict, new: dict, code: int) -> web.Response:
    obj = admission.prepare_update(target.kind, current, new, target.subresource)
    escalation.check_write(ctx.store, request[IDENTITY], target.kind, target.namespace, obj, current, target.name)
    updated = ctx.store.update(target.kind, obj)
    if target.subresource == "approval":
        ctx.approvals.append(
            {
                "csr": target.name,
                "user": request[IDENTITY].name,
                "time": now_rfc3339(),
                "conditions": updated.get("status", {}).get("conditions", []),
            }
        )
    return json_response(updated, code)


async def patch(request: web.Request, ctx, target: Target, body) -> web.Response:
    current = ctx.store.find(target.kind, target.namespace, target.name)
    if current is None:
        if request.content_type == APPLY and not target.subresource:
            # Server-side apply creates what does not exist yet.
            body = check_body(target, body)
            return await create(request, ctx, target, body)
        ctx.store.get(target.kind, target.namespace, target.name)  # raises the 404
    patched = apply_patch(current, body, request.content_type, target.kind.builtin)
    if not isinstance(patched, dict):
        raise bad_request("the patch does not produce an object")
    return store_update(request, ctx, target, current, patched, 200)


def delete(ctx, target: Target) -> web.Response:
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


def delete_collection(request: web.Request, ctx, target: Target) -> web.Response:
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


async def pod_subresource(request: web.Request, ctx, target: Target) -> web.StreamResponse:
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


async def watch(request: web.Request, ctx, target: Target) -> web.StreamResponse:
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
