"""The agent's HTTP API (the assisted-service subset the collection reads): routes, auth, JSON shapes."""

from __future__ import annotations

import json

from aiohttp import web

from .. import jwt
from ..apiserver import json_response
from ..context import utc_now
from .boot import GO_ARCH_TO_RPM, agent_public_key, cluster_architecture, cluster_id_of
from .faults import VALIDATIONS, fault_values

API_PREFIX = "/api/assisted-install/v2"
HOSTS_KEY = web.AppKey("sim_host", object)


# ----- JSON shapes -------------------------------------------------------------------------------------
def validations_info(host):
    grouped = {}
    pending = host.status == "discovering"
    for vid, (category, _ok, _failed) in VALIDATIONS.items():
        if pending and vid != "connected":
            entry = {"id": vid, "status": "pending", "message": "Missing inventory"}
        else:
            ok = vid not in host.failing
            entry = {"id": vid, "status": "success" if ok else "failure",
                     "message": host.validation_message(vid, ok)}
        grouped.setdefault(category, []).append(entry)
    return json.dumps(grouped, separators=(",", ":"))


def host_json(host):
    progress = {"current_stage": host.stage or "", "installation_percentage": host.installation_percentage(),
                "progress_info": f"{host.stage_percent}%" if host.stage_percent is not None else "",
                "stage_started_at": host.stage_started_at or "0001-01-01T00:00:00.000Z",
                "stage_updated_at": host.stage_updated_at or "0001-01-01T00:00:00.000Z"}
    inventory = {"hostname": host.hostname,
                 "interfaces": [{"name": "eth0", "mac_address": host.mac,
                                 "ipv4_addresses": [f"{host.ip}/{host.inventory.get('prefix_length', 24)}"]}],
                 "cpu": {"architecture": GO_ARCH_TO_RPM.get(cluster_architecture(host.ctx.store)), "count": 4},
                 "memory": {"physical_bytes": 16 * 1024 ** 3}}
    return {"kind": "AddToExistingClusterHost", "id": host.host_id,
            "href": f"{API_PREFIX}/infra-envs/{host.infra_env_id}/hosts/{host.host_id}",
            "cluster_id": host.cluster_id, "infra_env_id": host.infra_env_id, "status": host.status,
            "status_info": host.status_info, "status_updated_at": host.status_updated_at,
            "validations_info": validations_info(host), "progress": progress, "role": "worker",
            "requested_hostname": host.hostname, "inventory": json.dumps(inventory),
            "installation_disk_path": "/dev/sda"}


def cluster_json(host, with_hosts=True):
    cluster = {"kind": "AddHostsCluster", "id": host.cluster_id, "href": f"{API_PREFIX}/clusters/{host.cluster_id}",
               "name": "lab", "openshift_cluster_id": cluster_id_of(host.ctx.store), "status": "adding-hosts",
               "status_info": "cluster is adding hosts to existing OCP cluster", "image_info": {}}
    if with_hosts:
        cluster["hosts"] = [host_json(host)] if host.status else []
    return cluster


def infra_env_json(host):
    return {"kind": "InfraEnv", "id": host.infra_env_id, "href": f"{API_PREFIX}/infra-envs/{host.infra_env_id}",
            "name": "lab-add-nodes", "type": "full-iso", "cluster_id": host.cluster_id,
            "cpu_architecture": GO_ARCH_TO_RPM.get(cluster_architecture(host.ctx.store)),
            "created_at": host.events[0]["event_time"] if host.events else utc_now(), "updated_at": utc_now()}


# ----- auth and routes ---------------------------------------------------------------------------------
def _infra_error(status, message):
    return json_response({"code": status, "message": message}, status)


@web.middleware
async def watcher_auth(request, handler):
    host = request.app[HOSTS_KEY]
    host.requests += 1
    if fault_values(host.ctx.faults, "token_rejected", host.name):
        return _infra_error(401, "Unauthorized")
    token = request.headers.get("Watcher-Authorization", "")
    if not token:
        return _infra_error(401, "Unauthorized: no Watcher-Authorization header")
    public_pem = agent_public_key(host.ctx.store)
    if public_pem is None:
        return _infra_error(401, "Unauthorized: no public key to check the token")
    try:
        jwt.verify(token, public_pem)
    except jwt.TokenError as exc:
        return _infra_error(401, f"Unauthorized: {exc}")
    return await handler(request)


async def list_clusters(request):
    host = request.app[HOSTS_KEY]
    with_hosts = request.query.get("with_hosts", "false").lower() in ("true", "1", "")
    return json_response([cluster_json(host, with_hosts)])


async def get_cluster(request):
    host = request.app[HOSTS_KEY]
    if request.match_info["cluster_id"] != host.cluster_id:
        return json_response({"kind": "Error", "id": 404, "href": "", "code": "404",
                              "reason": f"cluster {request.match_info['cluster_id']} can not be found"}, 404)
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
    return json_response([infra_env_json(request.app[HOSTS_KEY])])


def agent_app(host):
    app = web.Application(middlewares=[watcher_auth])
    app[HOSTS_KEY] = host
    app.router.add_get(API_PREFIX + "/clusters", list_clusters)
    app.router.add_get(API_PREFIX + "/clusters/{cluster_id}", get_cluster)
    app.router.add_get(API_PREFIX + "/events", list_events)
    app.router.add_get(API_PREFIX + "/infra-envs", list_infra_envs)
    return app
