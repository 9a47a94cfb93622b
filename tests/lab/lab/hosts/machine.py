"""One simulated new host: boot, the install its agent walks, reboot from disk.

Phases: off -> wrong-iso (the boot media does not fit the host: the agent never answers) or agent (the live
system's assisted-service answers on ``<ip>:<agent port>``) -> rebooted (the agent is gone; the kubelet port
answers and ``ctx.host_rebooted(host)`` starts the kubelet of ``lab/kubelet.py``).

In the agent phase the host's own services call the local assisted-service first, with the tokens of the
boot media: the import client (``v2ImportCluster``, userAuth) and the agent (``v2RegisterHost``, agentAuth).
A token the service refuses (expired, another key, a claim of another release) stops the host there: the API
answers, but there is no cluster, or no host, and nothing installs. Otherwise the host walks, in
``--install-seconds``: discovering -> known (insufficient while a validation fault is set) -> installing ->
installing-in-progress through the day-2 worker stages -> added-to-existing-cluster (``lab.hosts.progress``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

from aiohttp import web

from .. import kinds, versions
from ..nodes import host_architecture
from .agent import API_PREFIX, agent_app
from .auth import AGENT, SCHEMES, USER, AuthError, authorize
from .boot import (
    GO_ARCH_TO_RPM,
    NETWORK_DIR,
    WrongIso,
    boot_config,
    cluster_id_of,
    ignition_of_initrd,
    ignition_of_iso,
    initrd_of,
)
from .faults import VALIDATIONS, fault_values
from .kubelet_tls import KubeletPort
from .progress import Progress

LOG = logging.getLogger("lab.hosts")
TICK = 0.1

# Share of --install-seconds each step takes (sums to 1).
DISCOVERING, KNOWN, INSTALLING = 0.10, 0.10, 0.10
STARTING, INSTALLING_STAGE, WRITING, WAITING, REBOOTING = 0.05, 0.10, 0.35, 0.05, 0.15
# coreos-installer progress as the agent reports it (every 5 points or more, and at 100 -- openshift/assisted-installer
# src/coreos_logger/coreos_installer_log_writer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267).
WRITE_STEPS = (20, 40, 60, 80, 100)
# What assisted-installer sends on a failure at each day-2 stage (its error text becomes progress_info).
STAGE_ERRORS = {
    "Starting installation": "failed to create install dir: mkdir /opt/install-dir: read-only file system",
    "Installing": 'failed to fetch the worker ignition: Get "https://api-int.lab:22623/config/worker": EOF',
    "Writing image to disk": "failed after 3 attempts, last error: coreos-installer exited with status 1 "
    "(/dev/sda: Input/output error)",
    "Waiting for control plane": "failed to set the boot order: efibootmgr exited with status 5",
    "Rebooting": "failed to reboot the node: exit status 1",
}
# The disk named in wrong-boot-order messages (model, serial, by-id path), as the host's inventory would.
DISK = ("QEMU HARDDISK", "lab-disk-0", "/dev/disk/by-id/wwn-0x5000c500a0b1c2d3")


class SimHost(Progress):
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
        self.kubelet = None
        self._reset()

    def _reset(self):
        self.phase = "off"  # off | wrong-iso | agent | rebooted
        self.boot_error = None
        self.booted_by = None
        self.booted_from = None  # "iso" | "pxe"
        self.iso = None
        self.initrd = None
        self.profile = None
        self.config = None
        self.imported = False  # the import client created the cluster and the InfraEnv
        self.infra_env_id = None
        self.cluster_id = None
        self.hostname = self.name
        self.network = None  # {"method": "static" | "dhcp", "addresses": [...]}, once booted
        self.failing = ()
        self.requests = 0
        self.agent_up = False
        self.reset_progress()

    # -- boot and power ------------------------------------------------------------------------------
    async def boot(self, path, booted_by="console", install_seconds=None, pxe=False):
        """Power-cycle the host into an ISO (or, ``pxe``, a boot-artifacts directory or initrd); returns the
        host's state (wrong ISO or agent started).

        ``install_seconds`` overrides ``--install-seconds`` for this boot (a test that needs a long install).
        """
        await self.power_off()
        self.install_seconds = install_seconds or self.ctx.options.install_seconds
        self.booted_by, self.booted_from = booted_by, "pxe" if pxe else "iso"
        self.profile = versions.for_cluster(self.ctx.store)
        try:
            if pxe:
                rpm_arch = GO_ARCH_TO_RPM.get(host_architecture(self.ctx.store, self.inventory), "x86_64")
                self.initrd = initrd_of(path, rpm_arch)
                config = await asyncio.to_thread(ignition_of_initrd, self.initrd)
            else:
                self.iso = path
                config = await asyncio.to_thread(ignition_of_iso, path)
            self.config = boot_config(config, self.inventory, cluster_id_of(self.ctx.store))
            self._take_address()
        except WrongIso as exc:
            self.phase = "wrong-iso"
            self.boot_error = str(exc)
            LOG.info("host %s booted %s: wrong ISO: %s", self.name, path, exc)
            return self.state()
        self.infra_env_id = self.config.infra_env_id or str(uuid.uuid4())
        self.hostname = self.config.hostname or self.name
        self.cluster_id = str(uuid.uuid4())  # every boot starts its own assisted-service with a new cluster
        self.phase = "agent"
        self._task = asyncio.ensure_future(self._run())
        LOG.info(
            "host %s booted %s (%s, %s, OpenShift %s)", self.name, path, self.booted_from, booted_by, self.profile.name
        )
        return self.state()

    def _take_address(self):
        """The address the live system comes up at: the static one of its media, else the lease of the lab's DHCP
        server, which reserves each host's MAC the address the lab was started with (``lab.json`` ``hosts``). The
        lab's network has the host at that address only: media giving it another leave it unreachable."""
        static = self.config.static_addresses
        lease = None if static else self.ctx.lab_hosts.reservations.get(self.mac)
        self.network = {"method": "static" if static else "dhcp", "addresses": static or ([lease] if lease else [])}
        if self.ip not in self.network["addresses"]:
            given = f"the static addresses {', '.join(static)}" if static else "no static address and no DHCP lease"
            raise WrongIso(
                f"the media give MAC {self.mac} {given} (keyfiles of {NETWORK_DIR}/host*), but this host lives at "
                f"{self.ip} on the lab's network: nothing can reach it (build the media with its address, or none "
                "for DHCP)"
            )

    async def power_off(self):
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # the old run is over either way
                await self._task
            self._task = None
        await self._stop_agent()
        if self.kubelet is not None:
            await self.kubelet.stop()
            self.kubelet = None
        self._reset()

    # -- the run ------------------------------------------------------------------------------------
    async def _run(self):
        self._agent_runner = web.AppRunner(agent_app(self), access_log=None, handle_signals=False, shutdown_timeout=0.5)
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
            if self._own_call("v2ImportCluster", USER, self.config.client_token()):
                self.imported = True
                if self._own_call("v2RegisterHost", AGENT, self.config.agent_token()):
                    await self._install()
        finally:
            reachability.cancel()

    def _own_call(self, operation, scheme, token):
        """Whether the local assisted-service lets the host's own service call ``operation`` (the service
        retries for ever: a refusal leaves the host where it is, reported in ``boot_error``)."""
        try:
            authorize(self.profile, self.config.public_pem, operation, {SCHEMES[scheme][1]: token})
            return True
        except AuthError as exc:
            self.boot_error = (
                f"the host's own {operation} request is refused: {exc.status} {exc.message.strip()}"
                f" (token expiry {self.config.expiry or 'unknown'}); the host does not install: "
                f"boot an ISO with valid tokens of this release"
            )
            LOG.info("host %s: %s", self.name, self.boot_error)
            return False

    async def _install(self):
        self._event(f"Host {self.hostname}: Successfully registered")
        self._set_status("discovering", "Waiting for host to send hardware details")
        await self._wait(DISCOVERING)
        await self._validate()
        # known -> installing: rule "Install known host" for day-2 hosts (openshift/assisted-service
        # internal/host/statemachine.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd).
        self._set_status("installing", "Installation is in progress")
        await self._wait(INSTALLING)
        for stage, info, share in (
            ("Starting installation", "worker", STARTING),
            ("Installing", "worker", INSTALLING_STAGE),
        ):
            if not self._reach(stage, info):
                return
            await self._wait(share)
        if not self._reach("Writing image to disk", ""):
            return
        for percent in WRITE_STEPS:
            await self._wait(WRITING / len(WRITE_STEPS))
            self.report("Writing image to disk", f"{percent}%")
        if not self._reach("Waiting for control plane", ""):  # an AddHostsCluster returns at once
            return
        await self._wait(WAITING)
        if not self._reach("Rebooting", ""):
            return
        if fault_values(self.ctx.faults, "wrong_boot_order", self.name):
            # The firmware booted the ISO again: a day-2 host registering at stage Done waits for a person --
            # internal/host/statemachine.go ("Wrong boot order detection") and transition.go
            # (PostRegisterDuringReboot)@c18512cd02435454b6c92e8a708ddd5b1f188dcd.
            self._set_status(
                "installing-pending-user-action",
                "Expected the host to boot from disk, but it booted the installation image - please "
                "reboot and fix boot order to boot from disk %s %s (sda, %s)" % DISK,
            )
            return
        await self._wait(REBOOTING)
        await self._reboot_from_disk()

    async def _validate(self):
        """Known once no validation fault applies; insufficient (with the failing validations) meanwhile."""
        deadline = time.monotonic() + KNOWN * self.install_seconds
        while True:
            self.failing = tuple(fault_values(self.ctx.faults, "validation_failing", self.name))
            if self.failing:
                messages = "; ".join(self.validation_message(vid, False) for vid in self.failing)
                self._set_status(
                    "insufficient", f"Host cannot be installed due to following failing validation(s): {messages}"
                )
                deadline = time.monotonic() + KNOWN * self.install_seconds
            else:
                self._set_status("known", "Host is ready to be installed")
                if time.monotonic() >= deadline:
                    return
            await asyncio.sleep(TICK)

    def _reach(self, stage, info):
        """Report ``stage``; when an install error is set for it the step then fails: the agent reports Failed
        with the error and stops (False)."""
        self.report(stage, info)
        if stage in fault_values(self.ctx.faults, "install_error", self.name):
            self.report("Failed", f"installation stage {stage} failed: {STAGE_ERRORS[stage]}")
            return False
        return True

    async def _wait(self, share):
        await asyncio.sleep(share * self.install_seconds)

    async def _reboot_from_disk(self):
        await self._stop_agent()
        self.phase = "rebooted"
        kubelets = getattr(self.ctx, "kubelets", None)
        self.kubelet = KubeletPort(
            self.ip,
            self.kubelet_port,
            lambda: kubelets.serving_certificate(self.name) if kubelets else None,
            lambda source: self.ctx.lab_hosts.firewall.admits(self.name, "kubelet", source),
        )
        await self.kubelet.start()
        LOG.info("host %s rebooted from disk; kubelet TLS on %s:%s", self.name, self.ip, self.kubelet_port)
        hook = getattr(self.ctx, "host_rebooted", None)
        if hook is not None:
            # Every reboot from disk follows an install here: a new disk, so a new kubelet (lab.nodes).
            architecture = host_architecture(self.ctx.store, self.inventory)
            ipv6_autoconf = bool(self.config and self.config.ipv6_autoconf)
            await hook(dict(self.inventory, architecture=architecture, new_install=True, ipv6_autoconf=ipv6_autoconf))

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

    # -- what the host shows -------------------------------------------------------------------------
    def validation_message(self, vid, ok):
        _category, success, failure = VALIDATIONS[vid]
        domain = self.ctx.store.find(kinds.by_kind("config.openshift.io/v1", "Infrastructure"), None, "cluster")
        api = ((domain or {}).get("status") or {}).get("apiServerURL", "https://api.lab:6443")
        base = api.split("//", 1)[-1].rsplit(":", 1)[0].split(".", 1)[-1]
        return (success if ok else failure).format(name=self.hostname, domain=base)

    def state(self):
        """The host as ``labctl dump`` shows it."""
        config = self.config
        return {
            "name": self.name,
            "ip": self.ip,
            "mac_address": self.mac,
            "network": self.network,
            "phase": self.phase,
            "boot_error": self.boot_error,
            "booted_by": self.booted_by,
            "booted_from": self.booted_from,
            "iso": self.iso,
            "initrd": self.initrd,
            "openshift": self.profile.name if self.profile else None,
            "token_expiry": config.expiry if config else None,
            "status": self.status,
            "status_info": self.status_info,
            "stage": self.stage,
            "progress_info": self.progress_info,
            "installation_percentage": self.percentage,
            "agent_url": f"http://{self.ip}:{self.agent_port}{API_PREFIX}",
            "agent_up": self.agent_up,
            "kubelet": self.kubelet.state() if self.kubelet else None,
            "cluster_id": self.cluster_id if self.imported else None,
            "infra_env_id": self.infra_env_id if self.imported else None,
            "requests": self.requests,
            "events": [event["message"] for event in self.events],
        }
