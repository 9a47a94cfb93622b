"""The agent's HTTP API (the assisted-service subset the collection reads): routes, auth, JSON shapes.

Every route names its swagger operation; ``lab.hosts.auth`` decides, per release, which credentials may call
it. Errors are assisted-service's ``{"code": N, "message": "..."}`` with Content-Type application/json; a path
the API does not have is go-openapi's 404 ``path <path> was not found`` (vendor/github.com/go-openapi/runtime/
middleware/router.go@73206081d00ddfc1a2d9b385b1560564642b79ee, ``NewRouter``), answered before any auth.
"""

from __future__ import annotations

import json

from aiohttp import web

from ..apiserver import json_response
from ..context import utc_now
from ..nodes import host_architecture
from .auth import AuthError, authorize
from .boot import GO_ARCH_TO_RPM, cluster_id_of
from .faults import VALIDATIONS, fault_values

API_PREFIX = "/api/assisted-install/v2"
HOSTS_KEY = web.AppKey("sim_host", object)
# What the token_rejected fault answers: a token signed by a key the agent does not have.
REJECTED = AuthError(401, "Failed to parse token: crypto/ecdsa: verification error\n")


# ----- JSON shapes -------------------------------------------------------------------------------------
def validations_info(host):
    grouped = {}
    pending = host.status == "discovering"
    for vid, (category, _ok, _failed) in VALIDATIONS.items():
        if pending and vid != "connected":
            entry = {"id": vid, "status": "pending", "message": "Missing inventory"}
        else:
            ok = vid not in host.failing
            entry = {"id": vid, "status": "success" if ok else "failure", "message": host.validation_message(vid, ok)}
        grouped.setdefault(category, []).append(entry)
    return json.dumps(grouped, separators=(",", ":"))


def host_json(host):
    inventory = {
        "hostname": host.hostname,
        "interfaces": [
            {
                "name": "eth0",
                "mac_address": host.mac,
                "ipv4_addresses": [f"{host.ip}/{host.inventory.get('prefix_length', 24)}"],
            }
        ],
        "cpu": {"architecture": GO_ARCH_TO_RPM.get(host_architecture(host.ctx.store, host.inventory)), "count": 4},
        "memory": {"physical_bytes": 16 * 1024**3},
    }
    return {
        "kind": "AddToExistingClusterHost",
        "id": host.host_id,
        "href": f"{API_PREFIX}/infra-envs/{host.infra_env_id}/hosts/{host.host_id}",
        "cluster_id": host.cluster_id,
        "infra_env_id": host.infra_env_id,
        "status": host.status,
        "status_info": host.status_info,
        "status_updated_at": host.status_updated_at,
        "validations_info": validations_info(host),
        "progress": host.progress_json(),
        "role": "worker",
        "requested_hostname": host.hostname,
        "inventory": json.dumps(inventory),
        "installation_disk_path": "/dev/sda",
    }


def cluster_json(host, with_hosts=True):
    cluster = {
        "kind": "AddHostsCluster",
        "id": host.cluster_id,
        "href": f"{API_PREFIX}/clusters/{host.cluster_id}",
        "name": "lab",
        "openshift_cluster_id": cluster_id_of(host.ctx.store),
        "status": "adding-hosts",
        "status_info": "cluster is adding hosts to existing OCP cluster",
        "image_info": {},
    }
    if with_hosts:
        cluster["hosts"] = [host_json(host)] if host.status else []
    return cluster


def infra_env_json(host):
    return {
        "kind": "InfraEnv",
        "id": host.infra_env_id,
        "href": f"{API_PREFIX}/infra-envs/{host.infra_env_id}",
        "name": "lab-add-nodes",
        "type": "full-iso",
        "cluster_id": host.cluster_id,
        "cpu_architecture": GO_ARCH_TO_RPM.get(host_architecture(host.ctx.store, host.inventory)),
        "created_at": host.events[0]["event_time"] if host.events else utc_now(),
        "updated_at": utc_now(),
    }


def not_found(kind, identifier):
    return json_response(
        {"kind": "Error", "id": 404, "href": "", "code": "404", "reason": f"{kind} {identifier} can not be found"}, 404
    )


# ----- auth and routes ---------------------------------------------------------------------------------
def _error(status, message):
    return json_response({"code": status, "message": message}, status)


@web.middleware
async def agent_auth(request, handler):
    host = request.app[HOSTS_KEY]
    if not host.ctx.lab_hosts.firewall.admits(host.name, "agent", request.remote):
        request.transport.abort()  # reset before anything is read, as a REJECT rule does
        return web.Response(status=403)  # never sent
    host.requests += 1
    missing = request.match_info.http_exception
    if isinstance(missing, web.HTTPMethodNotAllowed):
        allowed = ",".join(sorted(missing.allowed_methods))
        return _error(405, f"method {request.method} is not allowed, but [{allowed}] are")
    if missing is not None:
        return _error(404, f"path {request.path} was not found")
    try:
        if fault_values(host.ctx.faults, "token_rejected", host.name):
            raise REJECTED
        operation = OPERATIONS[request.match_info.handler]
        authorize(host.profile, host.config.public_pem, operation, request.headers, request.query)
    except AuthError as exc:
        return json_response(exc.body(), exc.status)
    return await handler(request)


async def list_clusters(request):
    host = request.app[HOSTS_KEY]
    with_hosts = request.query.get("with_hosts", "false").lower() in ("true", "1", "")
    return json_response([cluster_json(host, with_hosts)] if host.imported else [])


async def get_cluster(request):
    host = request.app[HOSTS_KEY]
    if not host.imported or request.match_info["cluster_id"] != host.cluster_id:
        return not_found("cluster", request.match_info["cluster_id"])
    return json_response(cluster_json(host))


async def list_events(request):
    host = request.app[HOSTS_KEY]
    query = request.query
    events = host.events
    if "infra_env_id" in query:
        events = [e for e in events if e["infra_env_id"] == query["infra_env_id"]]
    if "cluster_id" in query:
        events = [e for e in events if e["cluster_id"] == query["cluster_id"]]
    return json_response(events)


async def list_infra_envs(request):
    host = request.app[HOSTS_KEY]
    return json_response([infra_env_json(host)] if host.imported else [])


async def list_hosts(request):
    host = request.app[HOSTS_KEY]
    if not host.imported or request.match_info["infra_env_id"] != host.infra_env_id:
        return not_found("infra env", request.match_info["infra_env_id"])
    return json_response([host_json(host)] if host.status else [])


# handler -> (path, swagger operationId)
ROUTES = {
    list_clusters: ("/clusters", "v2ListClusters"),
    get_cluster: ("/clusters/{cluster_id}", "v2GetCluster"),
    list_events: ("/events", "v2ListEvents"),
    list_infra_envs: ("/infra-envs", "ListInfraEnvs"),
    list_hosts: ("/infra-envs/{infra_env_id}/hosts", "v2ListHosts"),
}
OPERATIONS = {handler: operation for handler, (_path, operation) in ROUTES.items()}


def agent_app(host):
    app = web.Application(middlewares=[agent_auth])
    app[HOSTS_KEY] = host
    for handler, (path, _operation) in ROUTES.items():
        app.router.add_get(API_PREFIX + path, handler)
    return app
