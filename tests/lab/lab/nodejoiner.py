"""The simulated ``node-joiner add-nodes [--pxe|--config-iso] --dir=/assets`` run, per OpenShift release.

Independent of the HTTP server: the cluster comes from a ``lab.clusterinfo`` source, the agent-auth-token Secret
is read and written through two callables, and the base ISO comes from a callable. What it writes into the
assets directory follows ``NewAddNodesCommand`` (openshift/installer pkg/nodejoiner/addnodes.go):

- 4.17 (@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c, ``AgentImage`` only): ``node.<arch>.iso``, then ``exit_code``
  (``0``/``1``, no newline, 0600); no config ISO, no report.json;
- 4.18+ (@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2): ``--pxe`` and ``--config-iso`` together fail with
  ``invalid configuration found`` before anything is written; otherwise one target (``boot-artifacts/``,
  ``agentconfig.noarch.iso`` or ``node.<arch>.iso``), ``report.json`` stage by stage, then ``exit_code``.

Every error ends with logrus ``Fatal`` (exit status 1). The log (the pod log) uses the file hook node-joiner
installs in ``PersistentPreRun`` (``DisableQuote``, full timestamps: ``time=... level=info msg=...``) --
cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c.
"""

import asyncio
import inspect
import json
import os
import shutil
import tempfile
import time
import uuid

from . import authtoken, clusterinfo, nodeiso, nodesconfig, versions
from . import ignition as ignition_mod
from .njerrors import NodeJoinerError
from .njreport import STAGES, Report, rfc3339

# re-exported for callers of the previous single module
TOKEN_LIFETIME, TOKEN_REUSE_MARGIN = authtoken.TOKEN_LIFETIME, authtoken.TOKEN_REUSE_MARGIN
SECRET_NAMESPACE, SECRET_NAME = authtoken.SECRET_NAMESPACE, authtoken.SECRET_NAME
LOG_LEVELS = ("panic", "fatal", "error", "warning", "info", "debug", "trace")
CLUSTER_INFO_ASSET = 'failed to generate asset "Agent Installer ClusterInfo"'
DEFAULT_BAD_HOST_CONFIG = (
    "failed to validate network yaml for host 0, invalid yaml, error: "
    "nmstatectl gc failed: InvalidArgument: Invalid IPv4 network prefix length"
)


async def _maybe_await(value):
    if inspect.isawaitable(value):
        return await value
    return value


class NodeJoinerRun:
    """One simulated node-joiner run.

    assets_dir: the directory standing for the pod's /assets; it must hold nodes-config.yaml.
    source: the cluster (``lab.clusterinfo.StoreSource`` or ``ObjectsSource``).
    get_secret(namespace, name) -> Secret dict (Kubernetes JSON, data base64) or None; may be async.
    put_secret(secret) -> anything; creates the Secret when it has no metadata.resourceVersion,
        else replaces it; may be async; an exception fails the run.
    base_iso_provider(arch) -> path of the base ISO; may be async (a sync one runs in a thread).
    options: profile (a ``lab.versions.Profile``; default: from ``version``, else the newest), stage_delay
        (seconds), bad_host_config (True or a message), base_iso_download_failure, timeout (hang at
        fetch-base-iso.extract-image until cancelled), clock (() -> epoch seconds), on_log (callable(line)),
        container_assets_dir (default "/assets"), log_level (default "debug", what oc passes), kubeconfig,
        work_dir (where the base ISO is extracted; default the parent of assets_dir).
    """

    def __init__(self, assets_dir, source, get_secret, put_secret, base_iso_provider, options=None):
        self.assets_dir = assets_dir
        self.source = source
        self.get_secret = get_secret
        self.put_secret = put_secret
        self.base_iso_provider = base_iso_provider
        self.options = dict(options or {})
        self.profile = self.options.get("profile") or versions.for_version(self.options.get("version"))
        self.clock = self.options.get("clock") or time.time
        self.log = []
        self.report = None
        self.token = None  # what a monitor sends: the agent token on 4.17, the watcher token from 4.18
        self.auth = None
        self.info = None
        self.infra_env_id = None

    # ------------------------------------------------------------------ helpers

    def _log(self, level, msg):
        wanted = (
            str(self.options.get("log_level", "debug"))
            .lower()
            .replace("warn", "warning")
            .replace("warninging", "warning")
        )
        # logrus.ParseLevel; an unknown level means info (runRootCmd)
        if LOG_LEVELS.index(level) > LOG_LEVELS.index(wanted if wanted in LOG_LEVELS else "info"):
            return
        line = "time=%s level=%s msg=%s" % (rfc3339(self.clock()), level, msg)
        self.log.append(line)
        if self.options.get("on_log"):
            self.options["on_log"](line)

    def log_text(self):
        """The pod log so far, as ``kubectl logs`` would return it."""
        return "".join(line + "\n" for line in self.log)

    def _container_path(self, *parts):
        return "/".join((self.options.get("container_assets_dir", "/assets"), *parts))

    async def _pause(self):
        delay = self.options.get("stage_delay", 0)
        if delay:
            await asyncio.sleep(delay)

    async def _stage(self, stage_id):
        if self.report:
            self.report.stage(stage_id)
        self._log("info", STAGES[stage_id])
        await self._pause()

    async def _sub_stage(self, stage_id):
        if self.report:
            self.report.sub_stage(stage_id)
        self._log("info", STAGES[stage_id])
        await self._pause()

    # ------------------------------------------------------------------ the run

    async def run(self, pxe=False, config_iso=False):
        """Run to completion; return the process exit status (0, 1, or 2 for a Go panic)."""
        if pxe and config_iso:
            self._log("fatal", "invalid configuration found")
            return 1
        params = {"kubeconfig": self.options["kubeconfig"]} if self.options.get("kubeconfig") else {}
        with open(os.path.join(self.assets_dir, ".addnodesparams"), "w") as f:
            json.dump(params, f, separators=(",", ":"))
        os.chmod(os.path.join(self.assets_dir, ".addnodesparams"), 0o600)
        if self.profile.writes_report:
            self.report = Report(os.path.join(self.assets_dir, "report.json"), self.clock)
        error = None
        try:
            await self._workflow(pxe, config_iso)
        except NodeJoinerError as exc:
            error = exc
        except clusterinfo.Panic as exc:
            self.log.append("panic: %s [recovered]" % exc)
            self.log.append("goroutine 1 [running]:")
            return 2  # the Go runtime exits 2; neither report result nor exit_code is written
        if self.report:
            self.report.complete(error)
        code = 0 if error is None else 1
        path = os.path.join(self.assets_dir, "exit_code")
        with open(path, "w") as f:
            f.write(str(code))
        os.chmod(path, 0o600)
        if error is not None:
            self._log("fatal", error.detailed)
        return code

    def _target(self, pxe, config_iso):
        if pxe:
            return "Agent Installer PXE Files"
        return "Agent Config ISO" if config_iso else "Agent Installer ISO"

    async def _workflow(self, pxe, config_iso):
        target = self._target(pxe, config_iso)
        flags = (" --pxe" if pxe else "") + (" --config-iso" if config_iso else "")
        self._log(
            "info",
            "Add-nodes command invoked: node-joiner add-nodes%s --dir=%s --log-level=%s"
            % (flags, self.options.get("container_assets_dir", "/assets"), self.options.get("log_level", "debug")),
        )
        nodes_config = nodesconfig.load(self._read_nodes_config(), target, self._container_path("nodes-config.yaml"))

        await self._stage("add-nodes-cluster-inspection")
        info = self._inspect(nodes_config, target)
        if self.report:
            self.report.stage_result("add-nodes-cluster-inspection", clusterinfo.inspection_result(info))
        self._log(
            "info",
            "Cluster %s (%s) version %s, architecture %s"
            % (info["name"], info["cluster_id"], info["version"], info["architecture"]),
        )
        arch = ignition_mod.rpm_arch(info["architecture"])

        await self._stage("create-manifest")
        nodesconfig.validate_hosts(nodes_config, target)
        nodesconfig.check_architecture(arch, target)
        if self.options.get("bad_host_config"):
            message = self.options["bad_host_config"]
            raise NodeJoinerError(
                DEFAULT_BAD_HOST_CONFIG if message is True else message,
                "failed to fetch " + target,
                'failed to generate asset "NMState Config"',
            )

        await self._stage("ignition")
        auth = await self._auth_token(target)
        config = ignition_mod.build_add_nodes_ignition(info, nodes_config, auth, self.profile)
        if config_iso:
            await self._write_config_iso(config)
            return

        await self._stage("fetch-base-iso")
        base_iso = await self._fetch_base_iso(info, arch, target)
        await self._stage("create-agent-artifacts")
        await self._sub_stage("create-agent-artifacts.agent-tui")
        await self._sub_stage("create-agent-artifacts.prepare")
        # The base ISO is extracted to a temporary directory (the container's /tmp), as AgentArtifacts does.
        work_dir = self.options.get("work_dir") or os.path.dirname(os.path.abspath(self.assets_dir))
        os.makedirs(work_dir, exist_ok=True)
        tree = tempfile.mkdtemp(prefix="agent", dir=work_dir)
        try:
            await asyncio.to_thread(nodeiso.extract_tree, base_iso, tree)
            kargs = " fips=1" if info["fips"] else ""
            if pxe:
                await self._stage("generate-pxe")
                url = nodes_config.get("bootArtifactsBaseURL") or ""
                await asyncio.to_thread(nodeiso.write_pxe_artifacts, self.assets_dir, arch, config, tree, url, kargs)
                if url:
                    self._log(
                        "info",
                        "Created iPXE script %s in %s directory"
                        % (nodeiso.pxe_artifact_names(arch)["ipxe"], self._container_path("boot-artifacts")),
                    )
                self._log("info", "PXE boot artifacts created in: %s" % self._container_path("boot-artifacts"))
                self._log("info", "Kernel parameters for PXE boot: %s" % nodeiso.pxe_kernel_args(tree, kargs))
            else:
                await self._stage("generate-iso")
                name = "node.%s.iso" % arch
                minimal = await self._minimal(info, arch, target)
                await asyncio.to_thread(
                    nodeiso.build_node_iso, base_iso, os.path.join(self.assets_dir, name), config, kargs, tree, minimal
                )
                what = "Generated minimal ISO at %s" if minimal else "Generated ISO at %s."
                self._log("info", what % self._container_path(name) + " The ISO is valid up to %s" % auth["expiry"])
                if minimal:
                    self._log(
                        "info",
                        "When using External oci platform, always make sure CCM manifests were added in the openshift "
                        "directory.",
                    )
        except nodeiso.NodeIsoError as exc:
            raise NodeJoinerError(str(exc), "failed to write asset (%s) to disk" % target)
        finally:
            await asyncio.to_thread(shutil.rmtree, tree, True)

    async def _minimal(self, info, arch, target):
        """(rootfs URL, arch) of the minimal ISO node-joiner 4.17 writes on platform External, else None
        (``profile.external_minimal_iso``; ``AgentImage``, agentimage.go@e63803a3). The URL is the RHCOS stream's PXE
        rootfs (``BaseIso.getRootFSURL``, baseiso.go@41ac01a1): that ``AgentImage`` takes a ``bootArtifactsBaseURL``
        from ``AgentArtifacts``, which a 4.17 nodes-config cannot give (the field came with day-2 PXE, installer PR
        #9097, 4.18: inferred), so neither that URL nor the rootfs file beside the ISO is ever written for day 2."""
        if info["platform"] != "external" or not self.profile.external_minimal_iso:
            return None
        url = info.get("os_rootfs_url")
        if not url:
            raise NodeJoinerError(
                "no RootFSURL found for %s" % arch,
                "failed to fetch " + target,
                'failed to generate asset "%s"' % target,
            )
        self._log("debug", "Using default rootfs URL: %s" % url)
        return url, arch

    async def _write_config_iso(self, config):
        await asyncio.to_thread(
            nodeiso.build_config_iso,
            os.path.join(self.assets_dir, "agentconfig.noarch.iso"),
            ignition_mod.config_image_files(config),
        )
        self._log("info", "Generated ISO at %s." % self._container_path("agentconfig.noarch.iso"))

    def _read_nodes_config(self):
        try:
            with open(os.path.join(self.assets_dir, "nodes-config.yaml")) as f:
                return f.read()
        except OSError:
            return None

    def _inspect(self, nodes_config, target):
        context = ("failed to fetch " + target, 'failed to fetch dependency of "%s"' % target, CLUSTER_INFO_ASSET)
        try:
            self.info = clusterinfo.inspect(self.source, nodes_config)
        except (clusterinfo.NotFound, clusterinfo.InspectionError) as exc:
            raise NodeJoinerError(str(exc), *context)
        if nodes_config.get("cpuArchitecture"):
            self._log("info", "CPU architecture set to: %s" % nodes_config["cpuArchitecture"])
        return self.info

    async def _auth_token(self, target):
        """The tokens the ISO carries, creating or refreshing Secret openshift-config/agent-auth-token."""
        context = ("failed to fetch " + target, 'failed to generate asset "Agent Installer API Auth Config"')
        now = self.clock()
        secret = await _maybe_await(self.get_secret(authtoken.SECRET_NAMESPACE, authtoken.SECRET_NAME))
        self.infra_env_id = str(uuid.uuid4())
        try:
            auth, written = authtoken.resolve(self.profile, secret, now, self.infra_env_id)
        except authtoken.TokenSecretError as exc:
            raise NodeJoinerError(str(exc), *context)
        if written is None:
            self._log("debug", "Reusing existing auth token (valid up to %s)" % authtoken.rfc3339(auth["exp"]))
        else:
            action = "Updated" if secret else "Created"
            try:
                await _maybe_await(self.put_secret(written))
            except Exception as exc:  # the store's own error type is not known here
                raise NodeJoinerError("failed to %s auth token secret: %s" % (action[:-1].lower(), exc), *context)
            self._log(
                "debug", "%s auth token secret %s/%s" % (action, authtoken.SECRET_NAMESPACE, authtoken.SECRET_NAME)
            )
        auth["infra_env_id"] = self.infra_env_id
        self.auth = auth
        self.token = auth["agent"] if self.profile.token_claim == "infra_env_id" else auth["watcher"]
        return auth

    async def _fetch_base_iso(self, info, arch, target):
        context = (
            "failed to fetch " + target,
            'failed to generate asset "BaseIso Image"',
            "failed to get base ISO image",
        )
        await self._sub_stage("fetch-base-iso.extract-image")
        self._log("info", "Extracting base ISO from release payload")
        if self.options.get("timeout"):
            await asyncio.Event().wait()  # never set: the run only ends when cancelled
        payload_arch = ignition_mod.rpm_arch(info["payload_architecture"])
        if not info["multi_payload"] and arch != payload_arch:
            # A single-architecture payload has no machine-os-images for another architecture: `oc image extract`
            # finds no ISO, which node-joiner reports as below (inferred: upstream has no explicit check) --
            # openshift/installer pkg/asset/agent/image/baseiso.go@41ac01a1979cc999b02ef742ae8ead199d34c6f8.
            raise NodeJoinerError(
                "base ISO for %s not found in release image, check release image architecture" % arch, *context
            )
        if self.options.get("base_iso_download_failure"):
            url = info.get("os_image_url") or (
                "https://rhcos.mirror.openshift.com/art/storage/prod/streams/rhel-9.6/builds/9.6.20260130-0/"
                "%s/rhcos-9.6.20260130-0-live-iso.%s.iso" % (arch, arch)
            )
            self._log("warning", "Failed to extract base ISO from release payload - check registry configuration")
            self._log("info", "Downloading base ISO")
            await self._sub_stage("fetch-base-iso.download-image")
            host = url.split("/")[2] if "://" in url else url
            raise NodeJoinerError(
                'Get "%s": dial tcp: lookup %s on 172.30.0.10:53: no such host' % (url, host),
                *((*context, "failed to download base ISO image %s" % url)),
            )
        try:
            if inspect.iscoroutinefunction(self.base_iso_provider):
                path = await self.base_iso_provider(arch)
            else:
                # A sync provider may build the ISO (seconds): keep the event loop free.
                path = await _maybe_await(await asyncio.to_thread(self.base_iso_provider, arch))
        except Exception as exc:  # whatever the provider raises fails the stage
            raise NodeJoinerError(str(exc), *context)
        await self._sub_stage("fetch-base-iso.verify-version")
        self._log("debug", "Extracted base ISO image %s from release payload" % path)
        return path
