"""The simulated ``node-joiner add-nodes [--pxe] --dir=/assets`` run (FACTS.md section 1).

Independent of the HTTP server and the store: the cluster is a plain dict, the
agent-auth-token Secret is read and written through two callables, and the base
ISO comes from a callable.  The run writes what the real tool writes into the
assets directory: ``report.json`` stage by stage (4.18+), ``node.<arch>.iso`` or
``boot-artifacts/``, and ``exit_code``; its log lines (the pod log) go to
``self.log``.
"""

import asyncio
import base64
import datetime
import inspect
import json
import os
import re
import time
import uuid

import yaml

from lab import ignition as ignition_mod
from lab import iso as iso_mod
from lab import jwt

TOKEN_LIFETIME = 48 * 3600
TOKEN_REUSE_MARGIN = 24 * 3600
SECRET_NAMESPACE = "openshift-config"
SECRET_NAME = "agent-auth-token"
ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time, as an unfinished stage shows it

GO_TO_RPM_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}
RPM_ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x")
ROOT_DEVICE_HINTS = ("deviceName", "hctl", "model", "vendor", "serialNumber", "minSizeGigabytes", "wwn",
                     "rotational")
MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
HOSTNAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
HCTL_RE = re.compile(r"^\d+:\d+:\d+:\d+$")

STAGES = {
    "add-nodes-cluster-inspection": "Gathering additional information from the target cluster",
    "create-manifest": "Creating internal configuration manifests",
    "ignition": "Rendering ISO ignition",
    "fetch-base-iso": "Retrieving the base ISO image",
    "fetch-base-iso.extract-image": "Extracting base image from release payload",
    "fetch-base-iso.verify-version": "Verifying base image version",
    "fetch-base-iso.download-image": "Downloading base ISO image",
    "create-agent-artifacts": "Creating agent artifacts for the final image",
    "create-agent-artifacts.agent-tui": "Extracting required artifacts from release payload",
    "create-agent-artifacts.prepare": "Preparing artifacts",
    "generate-iso": "Assembling ISO image",
    "generate-pxe": "Assembling PXE files",
}

DEFAULT_BAD_HOST_CONFIG = ("failed to validate network yaml for host 0, invalid yaml, error: "
                           "nmstatectl gc failed: InvalidArgument: Invalid IPv4 network prefix length")


class NodeJoinerError(Exception):
    """A failed run: ``detailed`` is the whole wrapped chain, ``str()`` the innermost cause."""

    def __init__(self, message, *context):
        Exception.__init__(self, message)
        self.context = context
        self.detailed = ": ".join(context + (message,))

    def wrapped(self, *outer):
        """The same error seen from a caller that adds its own context."""
        return NodeJoinerError(str(self), *(outer + self.context))


def rfc3339(epoch, fraction=False):
    """UTC time as Go's JSON encoding writes it (nanoseconds trimmed of trailing zeros)."""
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if fraction and moment.microsecond:
        text += ("." + "%06d" % moment.microsecond).rstrip("0")
    return text + "Z"


def _aggregate(errors):
    """k8s.io/apimachinery's aggregate error text."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def _required(path, detail):
    return "%s: Required value: %s" % (path, detail)


def _invalid(path, value, detail):
    return "%s: Invalid value: %s: %s" % (path, json.dumps(value), detail)


def _forbidden(path, detail):
    return "%s: Forbidden: %s" % (path, detail)


def validate_nodes_config(config, cluster_arch):
    """Check a parsed nodes-config.yaml as node-joiner does; raise NodeJoinerError on the first failing group.

    ``cluster_arch`` is the RPM architecture of the cluster (x86_64...).
    """
    if not isinstance(config, dict):
        config = {}
    top = []
    hosts = config.get("hosts") or []
    if not hosts:
        top.append(_required("hosts", "at least one host must be defined"))
    arch = config.get("cpuArchitecture")
    if arch and arch not in RPM_ARCHES:
        top.append("cpuArchitecture: Unsupported value: %s: supported values: %s" % (
            json.dumps(arch), ", ".join(json.dumps(a) for a in RPM_ARCHES)))
    elif arch and arch != cluster_arch:
        top.append(_invalid("cpuArchitecture", arch,
                            "the cluster release payload is %s only: adding %s nodes requires a "
                            "multi-architecture release payload" % (cluster_arch, arch)))
    if top:
        raise NodeJoinerError(_aggregate(top), "invalid nodes configuration")

    errors = []
    macs = set()
    for i, host in enumerate(hosts):
        errors.extend(_host_errors("Hosts[%d]" % i, host, macs))
    if errors:
        raise NodeJoinerError(_aggregate(errors), 'failed to generate asset "Agent Hosts"',
                              "invalid Hosts configuration")


def _host_errors(path, host, macs):
    errors = []
    if not isinstance(host, dict):
        return [_invalid(path, str(host), "a host must be a mapping")]
    hostname = host.get("hostname")
    if hostname is not None and (not isinstance(hostname, str) or not HOSTNAME_RE.match(hostname)
                                 or len(hostname) > 253):
        errors.append(_invalid(path + ".Hostname", hostname,
                               "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                               "characters, '-' or '.', and must start and end with an alphanumeric character"))
    role = host.get("role")
    if role and role not in ("master", "worker"):
        errors.append(_forbidden(path + ".Host",
                                 "host role has incorrect value. Role must either be 'master' or 'worker'"))
    elif role == "master":
        errors.append(_forbidden(path + ".Host", "only worker nodes can be added to an existing cluster"))

    interfaces = host.get("interfaces") or []
    if not interfaces:
        errors.append(_required(path + ".Interfaces", "at least one interface must be defined for each node"))
    names = set()
    for j, iface in enumerate(interfaces):
        mac_path = "%s.Interfaces[%d].macAddress" % (path, j)
        mac = (iface or {}).get("macAddress") or ""
        names.add((iface or {}).get("name"))
        if not mac:
            errors.append(_required(mac_path, "each interface must have a MAC address defined"))
            continue
        if not MAC_RE.match(str(mac)):
            errors.append(_invalid(mac_path, mac, "address %s: invalid MAC address" % mac))
        if str(mac).lower() in macs:
            errors.append(_invalid(mac_path, mac, "duplicate MAC address found"))
        macs.add(str(mac).lower())

    errors.extend(_root_device_hint_errors(path + ".rootDeviceHints", host.get("rootDeviceHints")))

    network = host.get("networkConfig") or {}
    for iface in network.get("interfaces") or [] if isinstance(network, dict) else []:
        if iface.get("type", "ethernet") == "ethernet" and iface.get("name") not in names:
            errors.append(_invalid(path + ".networkConfig", iface.get("name"),
                                   "mac-interface mapping for interface %s is missing" % iface.get("name")))
    return errors


def _root_device_hint_errors(path, hints):
    if not hints:
        return []
    if not isinstance(hints, dict):
        return [_invalid(path, str(hints), "root device hints must be a mapping")]
    errors = []
    for key in sorted(hints):
        if key == "wwnWithExtension":
            errors.append(_forbidden(path + ".wwnWithExtension",
                                     "WWN extensions are not supported in root device hints"))
        elif key == "wwnVendorExtension":
            errors.append(_forbidden(path + ".wwnVendorExtension",
                                     "WWN vendor extensions are not supported in root device hints"))
        elif key not in ROOT_DEVICE_HINTS:
            errors.append("%s: Unsupported value: %s: supported values: %s" % (
                path, json.dumps(key), ", ".join(json.dumps(h) for h in ROOT_DEVICE_HINTS)))
    device = hints.get("deviceName")
    if device is not None and not str(device).startswith("/dev/"):
        errors.append(_invalid(path + ".deviceName", device,
                               "device name of root device hint must be path in /dev/ or /dev/disk/by-path/"))
    hctl = hints.get("hctl")
    if hctl is not None and not HCTL_RE.match(str(hctl)):
        errors.append(_invalid(path + ".hctl", hctl, "the HCTL format must be Host:Channel:Target:Lun"))
    size = hints.get("minSizeGigabytes")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        errors.append(_invalid(path + ".minSizeGigabytes", size, "the minSizeGigabytes must be positive"))
    if "rotational" in hints and not isinstance(hints["rotational"], bool):
        errors.append(_invalid(path + ".rotational", hints["rotational"], "rotational must be true or false"))
    return errors


class Report:
    """``report.json`` as node-joiner's workflow report writes it after every change."""

    def __init__(self, path, clock):
        self.path = path
        self.clock = clock
        self.doc = {"id": "report-addnodes-" + time.strftime("%Y%m%d%H%M", time.gmtime(clock())),
                    "start_time": ZERO_TIME, "end_time": ZERO_TIME, "result": None}

    def _now(self):
        return rfc3339(self.clock(), fraction=True)

    def _write(self):
        # Go's encoding omits empty stages; the key order follows the Go struct.
        doc = {k: self.doc[k] for k in ("id", "start_time", "end_time")}
        if self.doc.get("stages"):
            doc["stages"] = self.doc["stages"]
        doc["result"] = self.doc["result"]
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, self.path)

    def _new(self, stage_id):
        return {"id": stage_id, "description": STAGES[stage_id], "start_time": self._now(), "end_time": ZERO_TIME}

    @staticmethod
    def _stop(stage, now):
        subs = stage.get("sub_stages")
        if subs and subs[-1]["end_time"] == ZERO_TIME:
            subs[-1]["end_time"] = now
        if stage["end_time"] == ZERO_TIME:
            stage["end_time"] = now

    def stage(self, stage_id):
        stages = self.doc.setdefault("stages", [])
        if stages:
            self._stop(stages[-1], self._now())
        stage = self._new(stage_id)
        if not stages:
            self.doc["start_time"] = stage["start_time"]
        stages.append(stage)
        self._write()

    def sub_stage(self, stage_id):
        owner = self.doc["stages"][-1]
        subs = owner.setdefault("sub_stages", [])
        if subs:
            subs[-1]["end_time"] = self._now()
        subs.append(self._new(stage_id))
        self._write()

    def stage_result(self, stage_id, value):
        for stage in self.doc.get("stages", []):
            if stage["id"] == stage_id:
                # Go's omitempty puts "result" after the times, before sub_stages.
                subs = stage.pop("sub_stages", None)
                stage["result"] = value
                if subs:
                    stage["sub_stages"] = subs
        self._write()

    def complete(self, error):
        result = {"exit_code": 0}
        if error is not None:
            result = {"exit_code": 1, "error_message": str(error), "detailed_error_message": error.detailed}
        self.doc["result"] = result
        stages = self.doc.get("stages")
        if stages:
            self._stop(stages[-1], self._now())
            self.doc["end_time"] = stages[-1]["end_time"]
        self._write()


async def _maybe_await(value):
    if inspect.isawaitable(value):
        return await value
    return value


class NodeJoinerRun:
    """One simulated node-joiner run.

    assets_dir: the directory standing for the pod's /assets; it must hold nodes-config.yaml.
    cluster: dict with cluster_id, name, base_domain, api_dns_name, ssh_key, mirrors, pull_secret_json,
        and optionally version, release_image, platform, architecture (RPM or Go name), os_image_url.
    get_secret(namespace, name) -> Secret dict (Kubernetes JSON, data base64) or None; may be async.
    put_secret(secret) -> anything; creates the Secret when it has no metadata.resourceVersion,
        else replaces it; may be async; an exception fails the run.
    base_iso_provider(arch) -> path of the base ISO; may be async (a sync one runs in a thread).
    options: stage_delay (seconds, default 0), bad_host_config (True or a message),
        base_iso_download_failure, timeout (hang at fetch-base-iso.extract-image until cancelled),
        version ("4.17" writes only exit_code; default cluster["version"]), embed_compression
        ("xz" or "gzip"), clock (() -> epoch seconds), on_log (callable(line)),
        container_assets_dir (default "/assets", used in messages).
    """

    def __init__(self, assets_dir, cluster, get_secret, put_secret, base_iso_provider, options=None):
        self.assets_dir = assets_dir
        self.cluster = cluster
        self.get_secret = get_secret
        self.put_secret = put_secret
        self.base_iso_provider = base_iso_provider
        self.options = dict(options or {})
        self.clock = self.options.get("clock") or time.time
        self.log = []
        self.report = None
        self.token = None
        self.infra_env_id = None

    # ------------------------------------------------------------------ helpers

    @property
    def arch(self):
        arch = self.cluster.get("architecture") or "x86_64"
        return GO_TO_RPM_ARCH.get(arch, arch)

    def _version(self):
        return str(self.options.get("version") or self.cluster.get("version") or "4.18.0")

    def _writes_report(self):
        parts = self._version().split(".")
        return (int(parts[0]), int(parts[1])) >= (4, 18)

    def _log(self, level, msg):
        line = 'time="%s" level=%s msg=%s' % (rfc3339(self.clock()), level, json.dumps(msg))
        self.log.append(line)
        if self.options.get("on_log"):
            self.options["on_log"](line)

    def log_text(self):
        """The pod log so far, as ``kubectl logs`` would return it."""
        return "".join(line + "\n" for line in self.log)

    def _container_path(self, *parts):
        return "/".join((self.options.get("container_assets_dir", "/assets"),) + parts)

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

    async def run(self, pxe=False):
        """Run to completion; return the exit code (0 success, 1 failure)."""
        if self._writes_report():
            self.report = Report(os.path.join(self.assets_dir, "report.json"), self.clock)
        with open(os.path.join(self.assets_dir, ".addnodesparams"), "w") as f:
            json.dump({}, f)
        error = None
        try:
            await self._workflow(pxe)
        except NodeJoinerError as exc:
            error = exc
            self._log("fatal", exc.detailed)
        if self.report:
            self.report.complete(error)
        code = 0 if error is None else 1
        with open(os.path.join(self.assets_dir, "exit_code"), "w") as f:
            f.write(str(code))
        return code

    async def _workflow(self, pxe):
        target = "Agent Installer PXE Files" if pxe else "Agent Installer ISO"
        self._log("info", "Add-nodes command invoked: node-joiner add-nodes%s --dir=%s --log-level=debug" % (
            " --pxe" if pxe else "", self.options.get("container_assets_dir", "/assets")))

        await self._stage("add-nodes-cluster-inspection")
        inspection = {
            "Version": self._version(),
            "ReleaseImage": self.cluster.get("release_image", ""),
            "OSImage": self.cluster.get("os_image_url", ""),
            "PlatformType": self.cluster.get("platform", "baremetal"),
            "Architecture": self.arch,
        }
        if self.report:
            self.report.stage_result("add-nodes-cluster-inspection", json.dumps(inspection, separators=(",", ":")))
        self._log("info", "Cluster %s (%s) version %s, architecture %s" % (
            self.cluster["name"], self.cluster["cluster_id"], inspection["Version"], self.arch))

        await self._stage("create-manifest")
        nodes_config = self._load_nodes_config(target)
        try:
            validate_nodes_config(nodes_config, self.arch)
        except NodeJoinerError as exc:
            raise exc.wrapped("failed to fetch " + target)
        if self.options.get("bad_host_config"):
            message = self.options["bad_host_config"]
            if message is True:
                message = DEFAULT_BAD_HOST_CONFIG
            raise NodeJoinerError(message, "failed to fetch " + target,
                                  'failed to generate asset "NMState Config"')
        arch = nodes_config.get("cpuArchitecture") or self.arch

        await self._stage("ignition")
        token, expiry, public_b64 = await self._auth_token(target)
        self.infra_env_id = str(uuid.uuid4())
        config = ignition_mod.build_add_nodes_ignition(self.cluster, nodes_config, token, rfc3339(expiry),
                                                       self.infra_env_id, public_b64)

        await self._stage("fetch-base-iso")
        base_iso = await self._fetch_base_iso(arch, target)

        await self._stage("create-agent-artifacts")
        await self._sub_stage("create-agent-artifacts.agent-tui")
        await self._sub_stage("create-agent-artifacts.prepare")

        if pxe:
            await self._stage("generate-pxe")
            base_url = nodes_config.get("bootArtifactsBaseURL")
            await asyncio.to_thread(iso_mod.write_pxe_artifacts, self.assets_dir, arch, config, base_iso, base_url)
            self._log("info", "Created PXE files in %s directory" % self._container_path("boot-artifacts"))
        else:
            await self._stage("generate-iso")
            dest = os.path.join(self.assets_dir, "node.%s.iso" % arch)
            compression = self.options.get("embed_compression", "xz")
            await asyncio.to_thread(iso_mod.embed_ignition, base_iso, dest, config, compression)
            self._log("info", "Generated ISO at %s" % self._container_path("node.%s.iso" % arch))

    def _load_nodes_config(self, target):
        path = os.path.join(self.assets_dir, "nodes-config.yaml")
        try:
            with open(path) as f:
                text = f.read()
        except OSError as exc:
            raise NodeJoinerError("open %s: %s" % (self._container_path("nodes-config.yaml"), exc.strerror),
                                  "failed to fetch " + target, "failed to load nodes-config.yaml file")
        try:
            return yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise NodeJoinerError("error converting YAML to JSON: %s" % str(exc).replace("\n", " "),
                                  "failed to fetch " + target, "failed to unmarshal nodes-config.yaml")

    async def _auth_token(self, target):
        """Return (token, expiry epoch, base64 public PEM), creating or refreshing the Secret."""
        context = ("failed to fetch " + target, 'failed to generate asset "Agent Installer API Auth Config"')
        now = self.clock()
        secret = await _maybe_await(self.get_secret(SECRET_NAMESPACE, SECRET_NAME))
        if secret:
            data = secret.get("data") or {}
            token = base64.b64decode(data.get("agentAuthToken") or "").decode()
            if not token:
                raise NodeJoinerError("auth token secret %s/%s does not contain the key agentAuthToken or is empty"
                                      % (SECRET_NAMESPACE, SECRET_NAME), *context)
            exp = jwt.unverified_claims(token)["exp"]
            if now < exp - TOKEN_REUSE_MARGIN:
                self._log("debug", "Reusing existing auth token (valid up to %s)" % rfc3339(exp))
                self.token = token
                return token, exp, base64.b64decode(data.get("authTokenPublicKey") or "").decode()

        key = jwt.new_key()
        exp = int(now) + TOKEN_LIFETIME
        token = jwt.mint(key, str(uuid.uuid4()), exp)
        # authTokenPublicKey holds base64(PEM); the private key is thrown away, as node-joiner does.
        public_b64 = base64.b64encode(jwt.public_pem(key).encode()).decode()
        data = {"agentAuthToken": base64.b64encode(token.encode()).decode(),
                "authTokenPublicKey": base64.b64encode(public_b64.encode()).decode()}
        if secret:
            secret = dict(secret)
            secret["data"] = dict(secret.get("data") or {}, **data)
            metadata = dict(secret.get("metadata") or {})
            metadata["annotations"] = dict(metadata.get("annotations") or {}, updatedAt=rfc3339(now))
            secret["metadata"] = metadata
            action = "Updated"
        else:
            secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                      "metadata": {"name": SECRET_NAME, "namespace": SECRET_NAMESPACE,
                                   "annotations": {"updatedAt": ""}},
                      "data": data}
            action = "Created"
        try:
            await _maybe_await(self.put_secret(secret))
        except Exception as exc:  # the store's own error type is not known here
            raise NodeJoinerError("failed to %s auth token secret: %s" % (action[:-1].lower(), exc), *context)
        self._log("debug", "%s auth token secret %s/%s" % (action, SECRET_NAMESPACE, SECRET_NAME))
        self.token = token
        return token, exp, public_b64

    async def _fetch_base_iso(self, arch, target):
        context = ("failed to fetch " + target, 'failed to fetch dependency of "Base ISO Image"')
        await self._sub_stage("fetch-base-iso.extract-image")
        if self.options.get("timeout"):
            self._log("debug", "Extracting base ISO from release payload")
            await asyncio.Event().wait()  # never set: the run only ends when cancelled
        if self.options.get("base_iso_download_failure"):
            url = self.cluster.get("os_image_url") or (
                "https://rhcos.mirror.openshift.com/art/storage/prod/streams/4.18-9.4/builds/"
                "418.94.202410090804-0/%s/rhcos-418.94.202410090804-0-live.%s.iso" % (arch, arch))
            self._log("warning", "Failed to extract base ISO from release payload - check registry configuration")
            await self._sub_stage("fetch-base-iso.download-image")
            host = url.split("/")[2] if "://" in url else url
            raise NodeJoinerError('Get "%s": dial tcp: lookup %s on 172.30.0.10:53: no such host' % (url, host),
                                  *context)
        try:
            if inspect.iscoroutinefunction(self.base_iso_provider):
                path = await self.base_iso_provider(arch)
            else:
                # A sync provider may build the ISO (seconds): keep the event loop free.
                path = await _maybe_await(await asyncio.to_thread(self.base_iso_provider, arch))
        except Exception as exc:  # whatever the provider raises fails the stage
            raise NodeJoinerError(str(exc), *context)
        await self._sub_stage("fetch-base-iso.verify-version")
        return path
