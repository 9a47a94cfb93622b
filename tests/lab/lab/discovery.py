"""Discovery and version endpoints of the lab's API server, and the helpers every handler shares.

``/version`` reports the kubelet version of the seeded control plane; ``/apis``, ``/apis/<group>`` and
``/apis/<group>/<version>`` list the registered kinds the variant serves (a standalone seed variant serves
only its own CRDs, see ``lab.seeds``); ``/openapi/v2`` is a document without definitions.
"""

from __future__ import annotations

import json

from aiohttp import web

from . import kinds, seeds
from .errors import ApiError

CTX = web.AppKey("ctx", object)
IDENTITY = web.RequestKey("identity", object)  # the auth.Identity of the caller, None when anonymous
NO_RESOURCE = ApiError(404, "NotFound", "the server could not find the requested resource")


def json_response(body, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


def error_response(error: ApiError) -> web.Response:
    return json_response(error.status(), error.code)


def _kube_version(ctx) -> str:
    """The kubelet version of the seeded control plane, so an old-cluster variant reports an old Kubernetes."""
    items, _rv = ctx.store.list(kinds.NODE, label_selector="node-role.kubernetes.io/master")
    for node in items:
        version = node.get("status", {}).get("nodeInfo", {}).get("kubeletVersion")
        if version:
            return version
    return "v1.31.6"


async def version(request: web.Request) -> web.Response:
    git_version = _kube_version(request.app[CTX])
    major, minor = git_version.lstrip("v").split(".")[:2]
    return json_response(
        {
            "major": major,
            "minor": minor,
            "gitVersion": git_version,
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z",
            "goVersion": "go1.22.9",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    )


def _group_entry(group: str, versions: list) -> dict:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


async def core_versions(request: web.Request) -> web.Response:
    host = request.host
    return json_response(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        }
    )


def _serves(ctx):
    """Whether the cluster serves a kind: a standalone seed variant knows only its own CRDs (lab.seeds)."""
    variant = getattr(ctx, "variant", seeds.DEFAULT)
    try:
        seeds.served_resources(variant)
    except ValueError:  # a context made up by a test: every kind
        return lambda kind: True
    return lambda kind: seeds.serves(variant, kind)


def _group_versions(ctx) -> dict:
    serves = _serves(ctx)
    result: dict = {}
    for kind in kinds.all_kinds():
        if serves(kind):
            versions = result.setdefault(kind.group, [])
            if kind.version not in versions:
                versions.append(kind.version)
    return result


async def group_list(request: web.Request) -> web.Response:
    groups = [_group_entry(group, versions) for group, versions in _group_versions(request.app[CTX]).items() if group]
    return json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


def _subresource_kind(kind, subresource: str) -> str:
    return {"exec": "PodExecOptions", "log": "Pod", "eviction": "Eviction"}.get(subresource, kind.kind)


def resource_list(group: str, version: str, serves=None) -> dict | None:
    selected = [
        kind
        for kind in kinds.all_kinds()
        if kind.group == group and kind.version == version and (serves is None or serves(kind))
    ]
    if not selected:
        return None
    resources = []
    for kind in selected:
        entry = {
            "name": kind.plural,
            "singularName": kind.singular,
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": list(kind.verbs),
        }
        if kind.short_names:
            entry["shortNames"] = list(kind.short_names)
        if kind.categories:
            entry["categories"] = list(kind.categories)
        resources.append(entry)
        for sub in kind.subresources:
            resources.append(
                {
                    "name": f"{kind.plural}/{sub}",
                    "singularName": "",
                    "namespaced": kind.namespaced,
                    "kind": _subresource_kind(kind, sub),
                    "verbs": list(kinds.SUBRESOURCE_VERBS[sub]),
                    # pods/eviction takes a policy/v1 Eviction, as kube-apiserver advertises it.
                    **({"group": "policy", "version": "v1"} if sub == "eviction" else {}),
                }
            )
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


async def group_info(request: web.Request) -> web.Response:
    versions = _group_versions(request.app[CTX]).get(request.match_info["group"])
    if not versions or not request.match_info["group"]:
        return error_response(NO_RESOURCE)
    return json_response(
        {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(request.match_info["group"], versions)}
    )


def _proto_string(field_number: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (values here are shorter than 128 bytes: one-byte length)."""
    assert len(value) < 128
    return bytes([(field_number << 3) | 2, len(value)]) + value


async def openapi_v2(request: web.Request) -> web.Response:
    """An OpenAPI document with no definitions: kubectl then skips client-side validation of every kind.

    kubectl 1.20 fetches it (as gnostic protobuf) before ``create -f`` and fails on a 404.
    """
    title, git_version = "Kubernetes", _kube_version(request.app[CTX])
    if "protobuf" in request.headers.get("Accept", ""):
        info = _proto_string(1, title.encode()) + _proto_string(2, git_version.encode())
        body = _proto_string(1, b"2.0") + _proto_string(2, info)
        return web.Response(body=body, content_type="application/octet-stream")  # as kube-apiserver sends it
    return json_response(
        {"swagger": "2.0", "info": {"title": title, "version": git_version}, "paths": {}, "definitions": {}}
    )
