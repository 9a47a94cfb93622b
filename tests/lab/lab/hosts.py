"""Simulated new hosts: boot from an add-nodes ISO, run the agent (assisted-service subset), reboot.

One ``SimHost`` per inventory host, on the host's own 127.0.111.x address (LAB.md item 4, FACTS.md section 4):

- boot (``labctl boot`` = a person at the console, or ``lab.redfish`` when the BMC's virtual media and power
  say so) reads the embedded Ignition with the lab's own ISO reader and refuses an ISO that does not name
  the host's MAC, names another cluster or carries an expired token: the host then sits at "wrong ISO"
  and its agent never answers;
- otherwise the agent serves ``/api/assisted-install/v2`` on ``<ip>:<agent port>``, checks
  ``Watcher-Authorization`` (ES256 signature against Secret openshift-config/agent-auth-token, ``exp``)
  and walks discovering -> known (insufficient while a validation fault is set) ->
  preparing-for-installation -> preparing-successful -> installing -> installing-in-progress with the
  stages Starting installation, Installing, Writing image to disk (percentages), Rebooting ->
  added-to-existing-cluster, with one event per change, in ``--install-seconds``;
- then the agent goes away, a TLS listener (a lab-CA certificate) answers on ``<ip>:<kubelet port>``,
  and ``ctx.host_rebooted(host)`` is awaited when another component provides it (kubelet CSRs).

Faults (``labctl fault NAME=[HOST:]VALUE[,...]``, no HOST = every host) are read at the moment they matter.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import socket
import ssl
import tempfile
import time
import uuid

from aiohttp import web

from . import ignition as ignition_mod
from . import iso as iso_mod
from . import jwt, kinds
from .apiserver import CTX, json_response
from .context import utc_now
from .faults import register_fault

LOG = logging.getLogger("lab.hosts")
API_PREFIX = "/api/assisted-install/v2"
HOSTS_KEY = web.AppKey("sim_host", object)
TICK = 0.1

# Share of --install-seconds each step takes (sums to 1).
DISCOVERING, KNOWN, PREPARING, PREPARED, INSTALLING = 0.10, 0.10, 0.05, 0.05, 0.05
STARTING, INSTALLING_STAGE, WRITING, REBOOTING, ADDED = 0.05, 0.10, 0.35, 0.10, 0.05
WRITE_STEPS = (0, 20, 40, 60, 80, 100)
INSTALL_STAGES = ("Starting installation", "Installing", "Writing image to disk", "Rebooting")
# Every stage of a worker, for installation_percentage as assisted-service computes it (index / count).
WORKER_STAGES = INSTALL_STAGES + ("Configuring", "Joined", "Done")
GO_ARCH_TO_RPM = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}

# id -> (category, success message, failure message), as assisted-service words them.
VALIDATIONS = {
    "connected": ("network", "Host is connected", "Host is disconnected"),
    "ntp-synced": ("network", "Host NTP is synced", "Host couldn't synchronize with any NTP server"),
    "time-synced-between-host-and-service": (
        "network", "Host clock is synchronized with service",
        "Host clock is not synchronized, there is more than 4 minutes gap between clocks, "
        "please configure an NTP server via DHCP"),
    "api-int-domain-name-resolved-correctly": (
        "network", "Domain name resolution for the api-int.{domain} domain was successful or not required",
        "Couldn't resolve domain name api-int.{domain} on the host. To continue installation, create the "
        "necessary DNS entries to resolve this domain name to the cluster's API IP address"),
    "ignition-downloadable": (
        "network", "Ignition is downloadable",
        "Ignition is not downloadable. Please ensure host connectivity to the cluster's API"),
    "container-images-available": (
        "network", "All required container images were either pulled successfully or no attempt was made "
        "to pull them", "Failed to fetch container images needed for installation"),
    "has-min-cpu-cores": ("hardware", "Sufficient CPU cores",
                          "The host is not eligible to participate in Openshift Cluster because the minimum "
                          "required CPU cores for any role is 2, found only 1"),
    "has-min-memory": ("hardware", "Sufficient minimum RAM",
                       "The host is not eligible to participate in Openshift Cluster because the minimum "
                       "required RAM for any role is 8.00 GiB, found only 4.00 GiB"),
    "has-min-valid-disks": ("hardware", "Sufficient disk capacity",
                            "No eligible disks were found, please check specific disks to see why they are "
                            "not eligible"),
    "hostname-unique": ("hardware", "Hostname {name} is unique in cluster",
                        "Hostname {name} is not unique in cluster"),
    "hostname-valid": ("hardware", "Hostname {name} is allowed", "Hostname {name} is forbidden"),
}


# ----- faults ----------------------------------------------------------------------------------------
def per_host(parse_value):
    """A fault parser for ``[HOST:]VALUE[,[HOST:]VALUE...]`` -> ((host or None, value), ...)."""
    def parse(text):
        entries = []
        for item in (part.strip() for part in str(text).split(",")):
            if not item:
                continue
            host, has_host, value = item.partition(":")
            if not has_host:
                host, value = None, item
            entries.append((host or None, parse_value(value.strip())))
        if not entries:
            raise ValueError("give [HOST:]VALUE")
        return tuple(entries)
    return parse


def _validation_id(value):
    if value not in VALIDATIONS:
        raise ValueError(f"unknown validation {value!r}; known: {', '.join(sorted(VALIDATIONS))}")
    return value


def _stage(value):
    if value not in INSTALL_STAGES:
        raise ValueError(f"unknown install stage {value!r}; one of: {', '.join(INSTALL_STAGES)}")
    return value


def _outage(value):
    """Seconds -> the monotonic time the outage ends (counted from when the fault is switched on)."""
    seconds = float(value)
    if seconds < 0:
        raise ValueError(f"seconds cannot be negative, got {value}")
    return time.monotonic() + seconds


def _flag(value):
    return value.lower() not in ("0", "false", "no", "off", "")


register_fault("agent_unreachable", per_host(_outage),
               "[HOST:]SECONDS: the agent refuses connections for that long from now")
register_fault("validation_failing", per_host(_validation_id),
               "[HOST:]VALIDATION_ID[,...]: that validation fails (host insufficient until cleared)")
register_fault("install_error", per_host(_stage), "[HOST:]STAGE: the install fails when it reaches STAGE")
register_fault("wrong_boot_order", per_host(_flag),
               "[HOST:]1: after writing the disk the host boots the ISO again (installing-pending-user-action)")
register_fault("token_rejected", per_host(_flag), "[HOST:]1: the agent answers 401 to every request")


def fault_values(faults, name, host):
    """The values of fault ``name`` that apply to ``host`` (entries for it or for every host)."""
    return [value for target, value in faults.get(name, ()) if target in (None, host)]


# ----- the ISO ---------------------------------------------------------------------------------------
class WrongIso(Exception):
    """The ISO cannot start an agent on this host (the reason is what a console would show)."""


def read_boot_config(iso_path, host, cluster_id, now=None):
    """What the host's agent needs from the ISO, or WrongIso.

    Returns {token, infra_env_id, hostname}; refuses when the MAC is not in the ISO, the cluster ID differs
    or the token expired.
    """
    try:
        config = iso_mod.read_embedded_ignition(iso_path)
    except (OSError, ValueError, iso_mod.IsoFormatError) as exc:
        raise WrongIso(f"cannot read the ISO {iso_path}: {exc}") from None
    if config is None:
        raise WrongIso("the ISO holds no embedded Ignition config (not an add-nodes ISO)")
    files = ignition_mod.files_by_path(config)
    mac = host["mac_address"].lower()
    hostname = None
    macs_in_iso = set()
    for path, content in files.items():
        if path.startswith(ignition_mod.HOSTCONFIG_DIR + "/") and path.endswith("/mac_addresses"):
            found = {line.strip().lower() for line in content.decode().splitlines() if line.strip()}
            macs_in_iso |= found
            if mac in found:
                hostname = path.split("/")[-2]
    if hostname is None:
        raise WrongIso(f"MAC {mac} is not in the ISO (it names {', '.join(sorted(macs_in_iso)) or 'no MAC'})")
    add_nodes = ignition_mod.read_env_file(files.get(ignition_mod.ADD_NODES_ENV, b""))
    if add_nodes.get("CLUSTER_ID") != cluster_id:
        raise WrongIso(f"the ISO is for cluster {add_nodes.get('CLUSTER_ID')}, this cluster is {cluster_id}")
    rendezvous = ignition_mod.read_env_file(files.get(ignition_mod.RENDEZVOUS_ENV, b""))
    service = ignition_mod.read_env_file(files.get(ignition_mod.ASSISTED_SERVICE_ENV, b""))
    token = rendezvous.get("PULL_SECRET_TOKEN") or service.get("WATCHER_AUTH_TOKEN") or ""
    try:
        exp = jwt.unverified_claims(token).get("exp")
    except jwt.TokenError as exc:
        raise WrongIso(f"the ISO's agent token is unreadable: {exc}") from None
    if not isinstance(exp, (int, float)) or (now or time.time()) >= exp:
        raise WrongIso(f"the ISO's agent token expired at {add_nodes.get('AUTH_TOKEN_EXPIRY') or exp}")
    return {"token": token, "infra_env_id": service.get("INFRA_ENV_ID") or str(uuid.uuid4()),
            "hostname": hostname}


def cluster_id_of(store):
    version = store.find(kinds.by_kind("config.openshift.io/v1", "ClusterVersion"), None, "version") or {}
    return (version.get("spec") or {}).get("clusterID")


def cluster_architecture(store):
    """The Go architecture of the control plane (what a new worker of this lab runs)."""
    nodes, _rv = store.list(kinds.NODE)
    for node in nodes:
        if "node-role.kubernetes.io/master" in (node["metadata"].get("labels") or {}):
            return node["status"]["nodeInfo"]["architecture"]
    return "amd64"


def agent_public_key(store):
    """The PEM in Secret openshift-config/agent-auth-token (data authTokenPublicKey = base64 of base64 PEM)."""
    secret = store.find(kinds.SECRET, "openshift-config", "agent-auth-token")
    encoded = ((secret or {}).get("data") or {}).get("authTokenPublicKey")
    if not encoded:
        return None
    return base64.b64decode(base64.b64decode(encoded)).decode()


# ----- one host --------------------------------------------------------------------------------------
class SimHost:
    """One new host: powered off, sitting at a wrong ISO, running its agent, or rebooted from disk."""

    def __init__(self, ctx, inventory_host, agent_port, kubelet_port, install_seconds):
        self.ctx = ctx
        self.inventory = inventory_host
        self.name = inventory_host["name"]
        self.ip = inventory_host["ip"]
        self.mac = inventory_host["mac_address"].lower()
        self.agent_port = agent_port
        self.kubelet_port = kubelet_port
        self.install_seconds = install_seconds
        self.host_id = str(uuid.uuid5(uuid.NAMESPACE_OID, "lab-host-" + self.mac))
        self._task = None
        self._agent_runner = None
        self._agent_site = None
        self._kubelet_runner = None
        self._reset()

    def _reset(self):
        self.phase = "off"  # off | wrong-iso | agent | rebooted
        self.boot_error = None
        self.booted_by = None
        self.iso = None
        self.token = None
        self.infra_env_id = None
        self.cluster_id = None
        self.hostname = self.name
        self.status = None
        self.status_info = None
        self.status_updated_at = None
        self.stage = None
        self.stage_percent = None
        self.stage_started_at = None
        self.stage_updated_at = None
        self.failing = ()
        self.events = []
        self.requests = 0
        self.agent_up = False

    # -- boot and power ------------------------------------------------------------------------------
    async def boot(self, iso_path, booted_by="console", install_seconds=None):
        """Power-cycle the host into ``iso_path``; returns the host's state (wrong ISO or agent started).

        ``install_seconds`` overrides ``--install-seconds`` for this boot (a test that needs a long install).
        """
        await self.power_off()
        self.install_seconds = install_seconds or self.ctx.options.install_seconds
        self.booted_by = booted_by
        self.iso = iso_path
        try:
            found = await asyncio.to_thread(read_boot_config, iso_path, self.inventory,
                                            cluster_id_of(self.ctx.store))
        except WrongIso as exc:
            self.phase = "wrong-iso"
            self.boot_error = str(exc)
            LOG.info("host %s booted %s: wrong ISO: %s", self.name, iso_path, exc)
            return self.state()
        self.token = found["token"]
        self.infra_env_id = found["infra_env_id"]
        self.hostname = found["hostname"]
        self.cluster_id = str(uuid.uuid4())  # every boot starts its own assisted-service with a new cluster
        self.phase = "agent"
        self._task = asyncio.ensure_future(self._run())
        LOG.info("host %s booted %s (%s)", self.name, iso_path, booted_by)
        return self.state()

    async def power_off(self):
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # the old run is over either way
                pass
            self._task = None
        await self._stop_agent()
        if self._kubelet_runner is not None:
            await self._kubelet_runner.cleanup()
            self._kubelet_runner = None
        self._reset()

    # -- the run ------------------------------------------------------------------------------------
    async def _run(self):
        self._agent_runner = web.AppRunner(agent_app(self), access_log=None, handle_signals=False,
                                           shutdown_timeout=0.5)
        await self._agent_runner.setup()
        try:
            await self._sync_reachability()
        except OSError as exc:
            # Another lab (or anything) holds the port on this address: say so instead of a silent agent.
            self.boot_error = f"the agent cannot listen on {self.ip}:{self.agent_port}: {exc}"
            LOG.error("host %s: %s", self.name, self.boot_error)
            return
        reachability = asyncio.ensure_future(self._keep_reachability())
        try:
            await self._install()
        finally:
            reachability.cancel()

    async def _install(self):
        self._event(f"Host {self.hostname}: Successfully registered")
        self._set_status("discovering", "Waiting for host to send hardware details")
        await self._wait(DISCOVERING)
        await self._validate()
        for status, info, share in (
                ("preparing-for-installation", "Host is preparing for installation", PREPARING),
                ("preparing-successful", "Host finished successfully to prepare for installation", PREPARED),
                ("installing", "Installation is in progress", INSTALLING)):
            self._set_status(status, info)
            await self._wait(share)
        self._set_status("installing-in-progress", "Host is installing")
        for stage, share in (("Starting installation", STARTING), ("Installing", INSTALLING_STAGE)):
            if not await self._reach(stage):
                return
            await self._wait(share)
        if not await self._reach("Writing image to disk", 0):
            return
        for percent in WRITE_STEPS[1:]:
            await self._wait(WRITING / (len(WRITE_STEPS) - 1))
            self._set_stage("Writing image to disk", percent)
        if fault_values(self.ctx.faults, "wrong_boot_order", self.name):
            # The firmware booted the ISO again instead of the disk: the agent is back and waits for a person.
            self._set_stage("Rebooting", None, event=False)
            self._set_status("installing-pending-user-action",
                             "Expected the host to boot from disk, but it booted the installation image - "
                             "please reboot and fix boot order to boot from disk /dev/sda")
            return
        if not await self._reach("Rebooting"):
            return
        await self._wait(REBOOTING)
        self._set_status("added-to-existing-cluster", "Host has rebooted and no further updates will be posted. "
                         "Please check console for any issues")
        await self._wait(ADDED)
        await self._reboot_from_disk()

    async def _validate(self):
        """Known once no validation fault applies; insufficient (with the failing validations) meanwhile."""
        deadline = time.monotonic() + KNOWN * self.install_seconds
        while True:
            self.failing = tuple(fault_values(self.ctx.faults, "validation_failing", self.name))
            if self.failing:
                messages = "; ".join(self._validation_message(vid, False) for vid in self.failing)
                self._set_status("insufficient",
                                 f"Host cannot be installed due to following failing validation(s): {messages}")
                deadline = time.monotonic() + KNOWN * self.install_seconds
            else:
                self._set_status("known", "Host is ready to be installed")
                if time.monotonic() >= deadline:
                    return
            await asyncio.sleep(TICK)

    async def _reach(self, stage, percent=None):
        """Enter ``stage``; False (and status error) when an install error is set for it."""
        if stage in fault_values(self.ctx.faults, "install_error", self.name):
            self._set_stage("Failed", None, event=False)
            self._set_status("error", f"Host failed to install: installation stage {stage} failed: "
                             f"coreos-installer exited with status 1 (/dev/sda: Input/output error)",
                             severity="error")
            return False
        self._set_stage(stage, percent)
        return True

    async def _wait(self, share):
        await asyncio.sleep(share * self.install_seconds)

    async def _reboot_from_disk(self):
        await self._stop_agent()
        self.phase = "rebooted"
        cert_pem, key_pem = self.ctx.pki.issue_server_cert(dns_names=(self.hostname,), ips=(self.ip,))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as directory:
            cert_file, key_file = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
            for path, data in ((cert_file, cert_pem), (key_file, key_pem)):
                with open(path, "wb") as handle:
                    handle.write(data)
            context.load_cert_chain(cert_file, key_file)
        self._kubelet_runner = web.AppRunner(kubelet_app(), access_log=None, handle_signals=False,
                                             shutdown_timeout=0.5)
        await self._kubelet_runner.setup()
        await web.TCPSite(self._kubelet_runner, self.ip, self.kubelet_port, ssl_context=context,
                          reuse_address=True).start()
        LOG.info("host %s rebooted from disk; kubelet TLS on %s:%s", self.name, self.ip, self.kubelet_port)
        hook = getattr(self.ctx, "host_rebooted", None)
        if hook is not None:
            await hook(dict(self.inventory, architecture=cluster_architecture(self.ctx.store)))

    # -- reachability (agent_unreachable) ------------------------------------------------------------
    def unreachable(self):
        now = time.monotonic()
        return any(now < until for until in fault_values(self.ctx.faults, "agent_unreachable", self.name))

    async def _keep_reachability(self):
        while True:
            await asyncio.sleep(TICK)
            try:
                await self._sync_reachability()
            except OSError as exc:  # the port was taken during an outage: retry at the next tick
                self.boot_error = f"the agent cannot listen on {self.ip}:{self.agent_port}: {exc}"

    async def _sync_reachability(self):
        wanted = not self.unreachable()
        if wanted and self._agent_site is None:
            site = web.TCPSite(self._agent_runner, self.ip, self.agent_port, reuse_address=True)
            await site.start()
            self._agent_site = site
        elif not wanted and self._agent_site is not None:
            site, self._agent_site = self._agent_site, None
            await site.stop()
        self.agent_up = self._agent_site is not None

    async def _stop_agent(self):
        if self._agent_runner is not None:
            runner, self._agent_runner, self._agent_site = self._agent_runner, None, None
            await runner.cleanup()
        self.agent_up = False

    # -- state the agent reports -----------------------------------------------------------------------
    def _event(self, message, severity="info"):
        self.events.append({"name": "lab_event", "cluster_id": self.cluster_id, "host_id": self.host_id,
                            "infra_env_id": self.infra_env_id, "severity": severity, "category": "user",
                            "message": message, "event_time": utc_now()})

    def _set_status(self, status, info, severity="info"):
        if (status, info) == (self.status, self.status_info):
            return
        previous = self.status
        self.status, self.status_info, self.status_updated_at = status, info, utc_now()
        if previous:
            self._event(f"Host {self.hostname}: updated status from {previous} to {status} ({info})", severity)

    def _set_stage(self, stage, percent, event=True):
        now = utc_now()
        if stage != self.stage:
            self.stage_started_at = now
        self.stage, self.stage_percent, self.stage_updated_at = stage, percent, now
        if event:
            suffix = f": {percent}%" if percent is not None else ""
            self._event(f"Host {self.hostname}: reached installation stage {stage}{suffix}")

    def installation_percentage(self):
        if self.stage not in WORKER_STAGES:
            return 0 if self.stage is None else None
        index = WORKER_STAGES.index(self.stage)
        within = (self.stage_percent or 0) / 100.0
        return int((index + within) * 100 / len(WORKER_STAGES))

    def _validation_message(self, vid, ok):
        category, success, failure = VALIDATIONS[vid]
        domain = self.ctx.store.find(kinds.by_kind("config.openshift.io/v1", "Infrastructure"), None, "cluster")
        api = ((domain or {}).get("status") or {}).get("apiServerURL", "https://api.lab:6443")
        base = api.split("//", 1)[-1].rsplit(":", 1)[0].split(".", 1)[-1]
        return (success if ok else failure).format(name=self.hostname, domain=base)

    def validations_info(self):
        grouped = {}
        pending = self.status == "discovering"
        for vid, (category, _ok, _failed) in VALIDATIONS.items():
            if pending and vid != "connected":
                entry = {"id": vid, "status": "pending", "message": "Missing inventory"}
            else:
                ok = vid not in self.failing
                entry = {"id": vid, "status": "success" if ok else "failure",
                         "message": self._validation_message(vid, ok)}
            grouped.setdefault(category, []).append(entry)
        return json.dumps(grouped, separators=(",", ":"))

    def host_json(self):
        progress = {"current_stage": self.stage or "", "installation_percentage": self.installation_percentage(),
                    "progress_info": f"{self.stage_percent}%" if self.stage_percent is not None else "",
                    "stage_started_at": self.stage_started_at or "0001-01-01T00:00:00.000Z",
                    "stage_updated_at": self.stage_updated_at or "0001-01-01T00:00:00.000Z"}
        inventory = {"hostname": self.hostname,
                     "interfaces": [{"name": "eth0", "mac_address": self.mac,
                                     "ipv4_addresses": [f"{self.ip}/{self.inventory.get('prefix_length', 24)}"]}],
                     "cpu": {"architecture": GO_ARCH_TO_RPM.get(cluster_architecture(self.ctx.store)), "count": 4},
                     "memory": {"physical_bytes": 16 * 1024 ** 3}}
        return {"kind": "AddToExistingClusterHost", "id": self.host_id,
                "href": f"{API_PREFIX}/infra-envs/{self.infra_env_id}/hosts/{self.host_id}",
                "cluster_id": self.cluster_id, "infra_env_id": self.infra_env_id, "status": self.status,
                "status_info": self.status_info, "status_updated_at": self.status_updated_at,
                "validations_info": self.validations_info(), "progress": progress, "role": "worker",
                "requested_hostname": self.hostname, "inventory": json.dumps(inventory),
                "installation_disk_path": "/dev/sda"}

    def cluster_json(self, with_hosts=True):
        cluster = {"kind": "AddHostsCluster", "id": self.cluster_id, "href": f"{API_PREFIX}/clusters/{self.cluster_id}",
                   "name": "lab", "openshift_cluster_id": cluster_id_of(self.ctx.store), "status": "adding-hosts",
                   "status_info": "cluster is adding hosts to existing OCP cluster", "image_info": {}}
        if with_hosts:
            cluster["hosts"] = [self.host_json()] if self.status else []
        return cluster

    def infra_env_json(self):
        return {"kind": "InfraEnv", "id": self.infra_env_id, "href": f"{API_PREFIX}/infra-envs/{self.infra_env_id}",
                "name": "lab-add-nodes", "type": "full-iso", "cluster_id": self.cluster_id,
                "cpu_architecture": GO_ARCH_TO_RPM.get(cluster_architecture(self.ctx.store)),
                "created_at": self.events[0]["event_time"] if self.events else utc_now(), "updated_at": utc_now()}

    def state(self):
        """The host as ``labctl dump`` shows it."""
        return {"name": self.name, "ip": self.ip, "mac_address": self.mac, "phase": self.phase,
                "boot_error": self.boot_error, "booted_by": self.booted_by, "iso": self.iso,
                "status": self.status, "status_info": self.status_info, "stage": self.stage,
                "stage_percent": self.stage_percent, "installation_percentage": self.installation_percentage(),
                "agent_url": f"http://{self.ip}:{self.agent_port}{API_PREFIX}", "agent_up": self.agent_up,
                "kubelet": f"{self.ip}:{self.kubelet_port}" if self.phase == "rebooted" else None,
                "cluster_id": self.cluster_id, "infra_env_id": self.infra_env_id, "requests": self.requests,
                "events": [event["message"] for event in self.events]}


# ----- the agent API ---------------------------------------------------------------------------------
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
    return json_response([host.cluster_json(with_hosts)])


async def get_cluster(request):
    host = request.app[HOSTS_KEY]
    if request.match_info["cluster_id"] != host.cluster_id:
        return json_response({"kind": "Error", "id": 404, "href": "", "code": "404",
                              "reason": f"cluster {request.match_info['cluster_id']} can not be found"}, 404)
    return json_response(host.cluster_json())


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
    return json_response([request.app[HOSTS_KEY].infra_env_json()])


def agent_app(host):
    app = web.Application(middlewares=[watcher_auth])
    app[HOSTS_KEY] = host
    app.router.add_get(API_PREFIX + "/clusters", list_clusters)
    app.router.add_get(API_PREFIX + "/clusters/{cluster_id}", get_cluster)
    app.router.add_get(API_PREFIX + "/events", list_events)
    app.router.add_get(API_PREFIX + "/infra-envs", list_infra_envs)
    return app


async def kubelet_unauthorized(_request):
    return web.Response(status=401, text="Unauthorized")


def kubelet_app():
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", kubelet_unauthorized)
    return app


# ----- the fleet, control endpoints and start options ---------------------------------------------------
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
        self.by_name = {h["name"]: SimHost(ctx, h, self.agent_port, self.kubelet_port, options.install_seconds)
                        for h in ctx.hosts}

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
        raise web.HTTPBadRequest(text=json.dumps({"error": "the body must be a JSON object"}),
                                 content_type="application/json")
    return body


async def boot_endpoint(request):
    """Body {"iso": PATH, "hosts": [NAME, ...], "install_seconds": S}: boot those hosts from the ISO.

    Stands for a person at the console; ``install_seconds`` (optional) overrides the lab's for this boot.
    """
    ctx = request.app[CTX]
    body = await _json_body(request)
    iso_path, names, seconds = body.get("iso"), body.get("hosts") or [], body.get("install_seconds")
    if seconds is not None and (not isinstance(seconds, (int, float)) or seconds <= 0):
        return json_response({"error": f"install_seconds must be a positive number, got {seconds!r}"}, 400)
    if not iso_path or not os.path.isfile(iso_path):
        return json_response({"error": f"no ISO file at {iso_path!r}"}, 400)
    try:
        hosts = [ctx.lab_hosts.get(name) for name in names]
    except KeyError as exc:
        return json_response({"error": exc.args[0]}, 400)
    if not hosts:
        return json_response({"error": "name at least one host"}, 400)
    return json_response([await host.boot(os.path.abspath(iso_path), install_seconds=seconds) for host in hosts])


async def hosts_endpoint(request):
    return json_response(request.app[CTX].lab_hosts.state())


async def setup(ctx) -> None:
    ctx.lab_hosts = Hosts(ctx)
    ctx.control_routes.append(("POST", "/hosts/boot", boot_endpoint))
    ctx.control_routes.append(("GET", "/hosts", hosts_endpoint))
    # Sections of the dump and of lab.json other components may also fill (created by the first one).
    if not hasattr(ctx, "dump_sections"):
        ctx.dump_sections = {}
    if not hasattr(ctx, "lab_json"):
        ctx.lab_json = {}
    ctx.dump_sections["hosts"] = ctx.lab_hosts.state
    ctx.lab_json["agent_port"] = ctx.lab_hosts.agent_port
    ctx.lab_json["kubelet_port"] = ctx.lab_hosts.kubelet_port
    ctx.on_shutdown.append(ctx.lab_hosts.shutdown)
