"""One simulated new host: boot, the install state machine its agent walks, reboot from disk.

Phases: off -> wrong-iso (the ISO does not fit the host: the agent never answers) or agent (the agent
answers on ``<ip>:<agent port>`` while it walks discovering -> known -> ... -> added-to-existing-cluster in
``--install-seconds``) -> rebooted (the agent is gone; the kubelet port answers TLS and
``ctx.host_rebooted(host)`` starts the kubelet of ``lab/kubelet.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from aiohttp import web

from .. import kinds
from ..context import utc_now
from .agent import API_PREFIX, agent_app
from .boot import WrongIso, cluster_architecture, cluster_id_of, read_boot_config
from .faults import INSTALL_STAGES, VALIDATIONS, fault_values
from .kubelet_tls import start_listener

LOG = logging.getLogger("lab.hosts")
TICK = 0.1

# Share of --install-seconds each step takes (sums to 1).
DISCOVERING, KNOWN, PREPARING, PREPARED, INSTALLING = 0.10, 0.10, 0.05, 0.05, 0.05
STARTING, INSTALLING_STAGE, WRITING, REBOOTING, ADDED = 0.05, 0.10, 0.35, 0.10, 0.05
WRITE_STEPS = (0, 20, 40, 60, 80, 100)
# Every stage of a worker, for installation_percentage as assisted-service computes it (index / count).
WORKER_STAGES = INSTALL_STAGES + ("Configuring", "Joined", "Done")


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
                messages = "; ".join(self.validation_message(vid, False) for vid in self.failing)
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
        self._kubelet_runner = await start_listener(self.ctx.pki, self.hostname, self.ip, self.kubelet_port)
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

    def validation_message(self, vid, ok):
        category, success, failure = VALIDATIONS[vid]
        domain = self.ctx.store.find(kinds.by_kind("config.openshift.io/v1", "Infrastructure"), None, "cluster")
        api = ((domain or {}).get("status") or {}).get("apiServerURL", "https://api.lab:6443")
        base = api.split("//", 1)[-1].rsplit(":", 1)[0].split(".", 1)[-1]
        return (success if ok else failure).format(name=self.hostname, domain=base)

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
