# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifacts of one architecture: where they go, whether they are reused, how they are fetched and checked,
and the sidecar record the reuse decision reads.

An ISO is ``<dest>/node.<arch>.iso`` (``<dest>/agentconfig.noarch.iso`` for a config ISO); PXE files go into
``<dest>/boot-artifacts/<arch>/``. A JSON sidecar next to each (``node.<arch>.iso.json``,
``boot-artifacts/<arch>.json``) records the digest of every input, each file written with its sha256 and size, the
agent token expiry, the sha256 of each agent token the artifact carries and the nodes-config it was built from,
secrets redacted (``nodes_config``, the "before" of the next run's --diff). It holds no secret: a token's sha256
tells whether the cluster still holds that token, never the token. A re-run reuses the artifact when the inputs
are the same, its files still have their sha256, its token is valid long enough and Secret
openshift-config/agent-auth-token still holds the tokens it carries (deleted, or regenerated with a new key, the
Secret's tokens are not the ones the hosts' agents take: the run could not follow a host booted from it).

Which tokens an artifact carries, and when they expire, the artifact itself says (``ignition.py``): the tokens in
its Ignition config, and the earlier of its add-nodes.env expiry and their ``exp`` claims -- node-joiner 4.17 writes
a fresh 48 h into add-nodes.env when it reuses an older token (openshift/installer
pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d). Whatever another run did to the
Secret meanwhile, the artifact cannot be wrong about itself. The config ISO is not read: for it the Secret as
node-joiner left it counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import tempfile
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiClient, core_target
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import ignition, iso
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.workdir import open_nofollow
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import token

PXE_DIR = "boot-artifacts"
CONFIG_ISO, CONFIG_ISO_LABEL = nj.CONFIG_ISO, "agent_configimage"  # its name and volume (node_joiner.py)
CONFIG_ISO_OUTPUT = "config-iso"
# The parameters that go into the inputs digest besides the nodes-config and the cluster's identity.
DIGESTED_PARAMETERS = ("pxe", "boot_artifacts_base_url", "live_kernel_arguments", "node_joiner_image")
DIGESTED_FACTS = ("release_image", "cluster_id")
SECRET = core_target("secrets", token.SECRET_NAME, token.SECRET_NAMESPACE)
SIDECAR_SUFFIX = ".json"
# 3: the tokens' sha256 and the artifact's own expiry; a sidecar of another version is not read, the artifact is
# rebuilt (version 2 recorded the Secret's expiry, version 1 no ``files``).
SIDECAR_VERSION = 3
# The facts the artifact says of itself that only the sidecar keeps (not the result).
OWN_TOKEN_FACTS = ("token_expiry", "token_digests")
# The rootfs among the PXE files (boot-artifacts/node.<arch>-rootfs.img), named in the result.
ROOTFS_SUFFIX = "-rootfs.img"


@dataclasses.dataclass
class Plan:
    """What to do for one architecture: reuse the artifact, or build it from ``nodes_config``.

    ``shown`` is the nodes-config as it may be shown and recorded (redact.py): the same text unless it held a secret.
    """

    architecture: str
    nodes_config: str
    shown: str
    digest: str
    reuse: bool
    reason: str


@dataclasses.dataclass
class Artifacts:
    """The artifacts of one day2_iso run; ``params`` are the module's, ``cluster`` the cluster's facts."""

    params: dict[str, Any]
    api: ApiClient
    cluster: dict[str, Any]
    now: datetime.datetime
    min_validity: float

    def __post_init__(self) -> None:
        self.pxe, self.config_iso = bool(self.params["pxe"]), self.params.get("output") == CONFIG_ISO_OUTPUT
        self.node_iso = not self.pxe and not self.config_iso

    def path(self, arch: str) -> str:
        if self.pxe:
            return os.path.join(self.params["dest"], PXE_DIR, arch)
        return os.path.join(self.params["dest"], CONFIG_ISO if self.config_iso else f"node.{arch}.iso")

    def plan(self, arch: str, nodes_config: str, shown: str | None = None) -> Plan:
        """Reuse or build ``arch`` from ``nodes_config``; ``shown`` is its redacted form (default: the same)."""
        inputs = {key: self.params[key] for key in DIGESTED_PARAMETERS}
        inputs.update({key: self.cluster[key] for key in DIGESTED_FACTS}, nodes_config=nodes_config)
        if self.config_iso:  # only then, so that the digests of node ISOs built before stay the same
            inputs["output"] = CONFIG_ISO_OUTPUT
        digest = inputs_digest(inputs)
        if self.params["force"]:
            reuse, reason = False, "force is set"
        else:
            reuse, reason = reuse_decision(self.path(arch), digest, self.now, self.min_validity, self.cluster_tokens)
        return Plan(arch, nodes_config, nodes_config if shown is None else shown, digest, reuse, reason)

    def cluster_tokens(self) -> list[str] | None:
        """The sha256 of the tokens Secret agent-auth-token holds now (None: it is gone); the reuse decision asks
        only when everything else allows a reuse."""
        return token_digests(self.api.get(SECRET))

    def reused(self, plan: Plan) -> dict[str, Any]:
        """The result entry of an artifact kept as it is."""
        path = self.path(plan.architecture)
        return self._result(plan, read_sidecar(path) or {}, [], iso_facts(path) if self.node_iso else {})

    def planned(self, plan: Plan) -> dict[str, Any]:
        """The result entry of an artifact that would be built (check mode): where it would go and why, no files."""
        facts = dict.fromkeys(("cluster_id", "cluster_name", "api_dns_name", "kernel_arguments", "rootfs_url"))
        return self._result(plan, {}, [], dict(facts, hosts=[]) if self.node_iso else {})

    def diff(self, plan: Plan) -> dict[str, Any]:
        """The --diff of ``plan``: the nodes-config recorded for the existing artifact (or none), and the new one."""
        path = self.path(plan.architecture)
        before = (read_sidecar(path) or {}).get("nodes_config")
        recorded = isinstance(before, str)
        header = f"{sidecar_path(path)} (nodes-config of {path})" if recorded else f"{path} (no nodes-config recorded)"
        after: dict[str, Any] = {"after_header": f"nodes-config.yaml for {plan.architecture}", "after": plan.shown}
        return dict(after, before_header=header, before=before if recorded else "")

    def build(self, plan: Plan, run: nj.NodeJoinerRun, image: str) -> dict[str, Any]:
        """Run node-joiner for ``plan``, fetch what it wrote, record it in the sidecar; return the result entry.

        Its ``reason`` is the plan's: why the artifact could not be reused.
        """
        stages = run.build(image, plan.nodes_config, self.pxe, self.config_iso)
        path = self.path(plan.architecture)
        seen: dict[str, Any] = {}  # what the node ISO says of itself
        if self.pxe:
            os.makedirs(path, 0o700, exist_ok=True)
            names = run.list_dir(nj.ASSETS + "/" + PXE_DIR)
            files = [self._fetch(run, f"{PXE_DIR}/{name}", os.path.join(path, name)) for name in names]
            seen = initrd_facts([entry["path"] for entry in files])
        elif self.config_iso:
            files = [self._fetch(run, CONFIG_ISO, path, check_config_iso)]
        else:
            files = [self._fetch(run, os.path.basename(path), path, lambda temp: seen.update(self._finish_iso(temp)))]
            if self.params["live_kernel_arguments"]:  # written into the copy: the file differs from the pod's
                files[0].update(sha256=file_sha256(path), size=os.path.getsize(path))
        if not seen.get("token_digests"):  # the artifact says nothing of its tokens (a config ISO): the Secret counts
            secret = self.api.get(SECRET)
            expiry = token.secret_expiry(secret)
            seen = dict(seen, token_expiry=expiry and format_rfc3339(expiry), token_digests=token_digests(secret))
        record = {
            "inputs_digest": plan.digest,
            "files": files,
            **{key: seen.get(key) for key in OWN_TOKEN_FACTS},
            "built_at": format_rfc3339(self.now),
            "nodes_config": plan.shown,  # for the next run's --diff; secrets redacted
        }
        write_sidecar(path, record)
        return self._result(plan, record, stages, seen)

    @staticmethod
    def _fetch(run: nj.NodeJoinerRun, name: str, path: str, finish: Any = None) -> dict[str, Any]:
        size, sha = run.fetch(f"{nj.ASSETS}/{name}", path, finish=finish)
        return {"path": path, "sha256": sha, "size": size}

    def _finish_iso(self, temp_path: str) -> dict[str, Any]:
        """Add the live kernel arguments to the fetched ISO, then read what it says, before it is renamed into place.

        The ISO is the only source of the cluster it was built for, its hosts and its kernel arguments: one read of
        two small areas (igninfo and the embedded Ignition) that refuses an ISO of another cluster (a node_joiner_image
        of another release, or facts of another cluster) and gives the result its details.
        """
        if self.params["live_kernel_arguments"]:
            iso.append_kernel_arguments(temp_path, self.params["live_kernel_arguments"])
        facts = iso_facts(temp_path)
        if facts["cluster_id"] != self.cluster["cluster_id"]:
            raise Day2Error(
                f"the ISO node-joiner built names cluster {facts['cluster_id']!r}, not this cluster "
                f"{self.cluster['cluster_id']!r}: refusing it. Check node_joiner_image and the cluster facts given."
            )
        return facts

    def _result(self, plan: Plan, record: dict[str, Any], stages: list[dict[str, Any]], facts: dict[str, Any]) -> Any:
        path, files = self.path(plan.architecture), record.get("files") or []
        result = {key: value for key, value in facts.items() if key not in OWN_TOKEN_FACTS}
        result.update(architecture=plan.architecture, path=path, reused=plan.reuse, reason=plan.reason, stages=stages)
        result.update(sidecar=sidecar_path(path), inputs_digest=plan.digest, token_expiry=record.get("token_expiry"))
        result["files"] = [{key: entry.get(key) for key in ("path", "sha256", "size")} for entry in files]
        result["rootfs"] = next((f.get("path") for f in files if str(f.get("path")).endswith(ROOTFS_SUFFIX)), None)
        return result


def iso_facts(path: str) -> dict[str, Any]:
    """What the ISO at ``path`` says about itself, without secrets: cluster, hosts, token expiry and digests, kernel
    arguments."""
    info = iso.inspect_iso(path)
    summary = info["summary"] or {}
    hosts = [{key: h.get(key) for key in ("hostname", "mac_addresses")} for h in summary.get("hosts") or []]
    facts = {key: summary.get(key) for key in ("token_expiry", "cluster_id", "cluster_name", "api_dns_name")}
    facts.update(hosts=hosts, kernel_arguments=info["kargs"], rootfs_url=info["rootfs_url"])
    return dict(facts, token_digests=token_digests(ignition.token_values(info["ignition"] or {})))


def check_config_iso(path: str) -> None:
    """Refuse a fetched config ISO that is not one: volume agent_configimage holding config.gz."""
    with open(path, "rb") as handle:
        image = iso.IsoImage(handle, path)
        if (image.volume_id or "").lower() != CONFIG_ISO_LABEL or not image.exists("config.gz"):
            raise Day2Error(
                f"{path} is not a node-joiner config ISO (volume {image.volume_id!r}, config.gz "
                f"{'present' if image.exists('config.gz') else 'missing'}; expected volume {CONFIG_ISO_LABEL} with "
                "config.gz): refusing it. Check node_joiner_image."
            )


def initrd_facts(paths: list[str]) -> dict[str, Any]:
    """The token expiry and digests the PXE initrd among ``paths`` carries (read from the file itself), or {}."""
    for path in (path for path in paths if path.endswith("-initrd.img")):
        try:
            config = iso.read_pxe_initrd(path)[0]
        except (ignition.IsoError, OSError):
            return {}
        expiry = ignition.summarize_add_nodes_ignition(config)["token_expiry"]
        return {"token_expiry": expiry, "token_digests": token_digests(ignition.token_values(config))}
    return {}


def token_digests(tokens: list[str] | dict[str, Any] | None) -> list[str] | None:
    """The sha256 of each agent token, sorted: of a list of tokens, or of Secret agent-auth-token (None: no Secret)."""
    if isinstance(tokens, dict):
        tokens = [found.value for found in token.secret_tokens(tokens)]
    return None if tokens is None else sorted({hashlib.sha256(value.encode()).hexdigest() for value in tokens})


# --- the sidecar and the reuse decision ----------------------------------------------------------------------------


def inputs_digest(inputs: dict[str, Any]) -> str:
    """sha256 of a canonical JSON rendering of the inputs dict."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def file_sha256(path: str, chunk: int = 4 << 20) -> str:
    digest = hashlib.sha256()
    with open_nofollow(path) as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def sidecar_path(artifact_path: str) -> str:
    return artifact_path.rstrip(os.sep) + SIDECAR_SUFFIX


def read_sidecar(artifact_path: str) -> dict[str, Any] | None:
    """The sidecar record of ``artifact_path``; None when it is missing, unreadable or of another version."""
    try:
        with open_nofollow(sidecar_path(artifact_path), "r") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == SIDECAR_VERSION else None


def write_sidecar(artifact_path: str, record: dict[str, Any]) -> str:
    """Write the sidecar atomically (temp file in the same directory, then rename); return its path."""
    path = sidecar_path(artifact_path)
    fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(dict(record, version=SIDECAR_VERSION), handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(temp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)  # renamed away when it succeeded
    return path


def reuse_decision(
    artifact_path: str,
    digest: str,
    now: datetime.datetime,
    min_validity_seconds: float,
    cluster_tokens: Callable[[], list[str] | None] | None = None,
) -> tuple[bool, str]:
    """Return (reusable, reason) for the artifact at ``artifact_path`` (an ISO, or a directory of PXE files).

    Reusable when its sidecar records the inputs ``digest``, every file it records still has its sha256, the agent
    token it carries is valid for at least ``min_validity_seconds`` after ``now``, and every token of Secret
    agent-auth-token is one it carries: ``cluster_tokens()`` gives their sha256 (None: the Secret is gone; not
    asked when ``cluster_tokens`` is None).
    """
    record, sidecar = read_sidecar(artifact_path), sidecar_path(artifact_path)
    if record is None:
        if not os.path.exists(artifact_path):
            return False, f"{artifact_path} does not exist"
        return False, f"{artifact_path} has no readable sidecar {sidecar}"
    if record.get("inputs_digest") != digest:
        return False, f"the inputs changed since {artifact_path} was built"
    files = [entry for entry in record.get("files") or [] if isinstance(entry, dict)]
    if not files:
        return False, f"the sidecar {sidecar} records no files"
    for entry in files:
        path = entry.get("path")
        try:
            intact = isinstance(path, str) and entry.get("sha256") == file_sha256(path)
        except OSError as error:
            return False, f"{path} does not exist or cannot be read ({error.strerror})"
        if not intact:
            return False, f"{path} was modified or damaged since it was built (sha256 differs)"
    expiry = ignition.moment(record.get("token_expiry"))
    if expiry is None:
        return False, f"the agent token expiry of {artifact_path} is unknown"
    left = (expiry - now).total_seconds()
    if left < min_validity_seconds:
        return False, (
            f"the agent token in {artifact_path} expires at {expiry.isoformat()}, {_human(left)} from now, less than "
            f"min_token_validity ({_human(min_validity_seconds)})"
        )
    held, secret = cluster_tokens() if cluster_tokens else [], f"Secret {token.SECRET_NAMESPACE}/{token.SECRET_NAME}"
    if held is None:
        return False, (
            f"{secret} is gone (deleted since {artifact_path} was built): the token it carries is no longer the "
            "cluster's, so its hosts could not be followed"
        )
    if not set(held) <= set(record.get("token_digests") or []):
        return False, (
            f"{secret} holds other tokens than {artifact_path} carries (regenerated since it was built): the hosts "
            "booted from it would refuse the cluster's token"
        )
    return True, f"inputs unchanged, {artifact_path} intact, the cluster's token valid until {expiry.isoformat()}"


def _human(seconds: float) -> str:
    whole = abs(int(seconds))
    return f"{'-' if seconds <= -1 else ''}{whole // 3600}h{whole % 3600 // 60:02d}m"
