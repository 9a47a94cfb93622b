# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifacts of one architecture: where they go, whether they are reused, how they are fetched and checked.

An ISO is ``<dest>/node.<arch>.iso``; PXE files go into ``<dest>/boot-artifacts/<arch>/``. Each has a sidecar
(sidecar.py) that the reuse decision reads, and the module's result describes what the artifact really holds, read
back from it.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiClient, core_target
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import IsoError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.ignition import summarize_add_nodes_ignition
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.info import read_pxe_initrd
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso import (
    append_kernel_arguments,
    inspect_iso,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso9660 import IsoImage
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.run import NodeJoinerRun
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.sidecar import (
    file_sha256,
    inputs_digest,
    read_sidecar,
    reuse_decision,
    sidecar_path,
    write_sidecar,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import (
    SECRET_NAME,
    SECRET_NAMESPACE,
    secret_expiry,
)

PXE_DIR = "boot-artifacts"
# node-joiner --config-iso (4.18+) writes this, whatever the architecture: volume agent_configimage, one file
# config.gz -- openshift/installer pkg/asset/agent/configimage/configiso.go@386d4aafb939cb7e5e22f77feef48386c731d2e1.
CONFIG_ISO = "agentconfig.noarch.iso"
CONFIG_ISO_LABEL = "agent_configimage"
CONFIG_ISO_OUTPUT = "config-iso"
# The parameters that go into the inputs digest besides the nodes-config and the cluster's identity.
DIGESTED_PARAMETERS = ("pxe", "boot_artifacts_base_url", "live_kernel_arguments", "node_joiner_image")


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


class Artifacts:
    """The artifacts of one day2_iso run; ``params`` are the module's, ``cluster`` what build.read_cluster read."""

    def __init__(
        self,
        params: dict[str, Any],
        api: ApiClient,
        cluster: dict[str, Any],
        now: datetime.datetime,
        min_validity: float,
    ) -> None:
        self.params = params
        self.pxe = bool(params["pxe"])
        self.config_iso = params.get("output") == CONFIG_ISO_OUTPUT
        self.api = api
        self.cluster = cluster
        self.now = now
        self.min_validity = min_validity

    def path(self, arch: str) -> str:
        if self.pxe:
            return os.path.join(self.params["dest"], PXE_DIR, arch)
        if self.config_iso:
            return os.path.join(self.params["dest"], CONFIG_ISO)
        return os.path.join(self.params["dest"], nj.iso_name(arch))

    def plan(self, arch: str, nodes_config: str, shown: str | None = None) -> Plan:
        """Reuse or build ``arch`` from ``nodes_config``; ``shown`` is its redacted form (default: the same)."""
        shown = nodes_config if shown is None else shown
        inputs = {key: self.params[key] for key in DIGESTED_PARAMETERS}
        if self.config_iso:  # only then, so that the digests of node ISOs built before stay the same
            inputs["output"] = CONFIG_ISO_OUTPUT
        inputs.update(
            nodes_config=nodes_config,
            release_image=self.cluster["release_image"],
            cluster_id=self.cluster["cluster_id"],
        )
        digest = inputs_digest(inputs)
        if self.params["force"]:
            return Plan(arch, nodes_config, shown, digest, False, "force is set")
        reuse, reason = reuse_decision(self.path(arch), digest, self.now, self.min_validity)
        return Plan(arch, nodes_config, shown, digest, reuse, reason)

    def reused(self, plan: Plan) -> dict[str, Any]:
        """The result entry of an artifact kept as it is."""
        return self._result(plan, read_sidecar(self.path(plan.architecture)) or {}, [])

    def planned(self, plan: Plan) -> dict[str, Any]:
        """The result entry of an artifact that would be built (check mode): where it would go and why, no files."""
        result = self._result(plan, {}, [], read_back=False)
        result.update(dict.fromkeys(("cluster_id", "cluster_name", "api_dns_name", "kernel_arguments")), hosts=[])
        return result

    def diff(self, plan: Plan) -> dict[str, str]:
        """The --diff of ``plan``: the nodes-config recorded for the existing artifact (or none), and the new one."""
        path = self.path(plan.architecture)
        before = (read_sidecar(path) or {}).get("nodes_config")
        return {
            "before_header": (
                "%s (nodes-config of %s)" % (sidecar_path(path), path)
                if isinstance(before, str)
                else "%s (no nodes-config recorded)" % path
            ),
            "after_header": "nodes-config.yaml for %s" % plan.architecture,
            "before": before if isinstance(before, str) else "",
            "after": plan.shown,
        }

    def build(self, plan: Plan, run: NodeJoinerRun, image: str) -> dict[str, Any]:
        """Run node-joiner for ``plan``, fetch what it wrote, record it in the sidecar; return the result entry.

        Its ``reason`` is the plan's: why the artifact could not be reused.
        """
        if self.config_iso:
            stages = run.build(image, plan.nodes_config, self.pxe, config_iso=True)
        else:
            stages = run.build(image, plan.nodes_config, self.pxe)
        path = self.path(plan.architecture)
        if self.pxe:
            files, token_expiry = self._fetch_pxe(run, path)
        elif self.config_iso:
            files, token_expiry = self._fetch_config_iso(run, path)
        else:
            files, token_expiry = self._fetch_iso(run, path)
        record = {
            "inputs_digest": plan.digest,
            "files": files,
            "token_expiry": token_expiry,
            "built_at": format_rfc3339(self.now),
            "nodes_config": plan.shown,  # for the next run's --diff; secrets redacted
        }
        write_sidecar(path, record)
        return self._result(plan, record, stages)

    # --- ISO -------------------------------------------------------------------------------------

    def _fetch_iso(self, run: NodeJoinerRun, path: str) -> tuple[list[dict[str, Any]], str | None]:
        size, sha = run.fetch("%s/%s" % (nj.ASSETS, os.path.basename(path)), path, finish=self._finish_iso)
        if self.params["live_kernel_arguments"]:
            size, sha = os.path.getsize(path), file_sha256(path)  # the kernel arguments were written into it
        return [{"path": path, "sha256": sha, "size": size}], iso_facts(path)["token_expiry"]

    def _finish_iso(self, temp_path: str) -> None:
        """Check what the fetched ISO says and add the live kernel arguments, before it is renamed into place."""
        found = iso_facts(temp_path)["cluster_id"]
        if found != self.cluster["cluster_id"]:
            raise Day2Error(
                "the ISO node-joiner built names cluster %r, not this cluster %r: refusing it. Check "
                "node_joiner_image." % (found, self.cluster["cluster_id"])
            )
        if self.params["live_kernel_arguments"]:
            append_kernel_arguments(temp_path, self.params["live_kernel_arguments"])

    # --- config ISO ------------------------------------------------------------------------------

    def _fetch_config_iso(self, run: NodeJoinerRun, path: str) -> tuple[list[dict[str, Any]], str | None]:
        size, sha = run.fetch("%s/%s" % (nj.ASSETS, CONFIG_ISO), path, finish=check_config_iso)
        return [{"path": path, "sha256": sha, "size": size}], self._secret_token_expiry()

    def _secret_token_expiry(self) -> str | None:
        """The expiry of the tokens node-joiner used: those of the Secret it read."""
        expiry = secret_expiry(self.api.get(core_target("secrets", SECRET_NAME, SECRET_NAMESPACE)))
        return format_rfc3339(expiry) if expiry else None

    # --- PXE -------------------------------------------------------------------------------------

    def _fetch_pxe(self, run: NodeJoinerRun, directory: str) -> tuple[list[dict[str, Any]], str | None]:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        files: list[dict[str, Any]] = []
        for name in run.list_dir(nj.ASSETS + "/" + PXE_DIR):
            path = os.path.join(directory, name)
            size, sha = run.fetch("%s/%s/%s" % (nj.ASSETS, PXE_DIR, name), path)
            files.append({"path": path, "sha256": sha, "size": size})
        token_expiry = initrd_token_expiry([entry["path"] for entry in files])
        if token_expiry is None:
            # The tokens node-joiner put into the PXE files are those of the Secret it used.
            token_expiry = self._secret_token_expiry()
        return files, token_expiry

    # --- the result ------------------------------------------------------------------------------

    def _result(
        self, plan: Plan, record: dict[str, Any], stages: list[dict[str, Any]], read_back: bool = True
    ) -> dict[str, Any]:
        path = self.path(plan.architecture)
        result = {
            "architecture": plan.architecture,
            "path": path,
            "files": [
                {key: entry.get(key) for key in ("path", "sha256", "size")} for entry in record.get("files") or []
            ],
            "reused": plan.reuse,
            "reason": plan.reason,
            "sidecar": sidecar_path(path),
            "inputs_digest": plan.digest,
            "token_expiry": record.get("token_expiry"),
            "stages": stages,
        }
        if read_back and not self.pxe and not self.config_iso:
            result.update(iso_facts(path))
        return result


def iso_facts(path: str) -> dict[str, Any]:
    """What the ISO at ``path`` says about itself, without secrets: cluster, hosts, token expiry, kernel arguments."""
    info = inspect_iso(path)
    summary = info["summary"] or {}
    return {
        "token_expiry": summary.get("token_expiry"),
        "cluster_id": summary.get("cluster_id"),
        "cluster_name": summary.get("cluster_name"),
        "api_dns_name": summary.get("api_dns_name"),
        "hosts": [
            {"hostname": host.get("hostname"), "mac_addresses": host.get("mac_addresses")}
            for host in summary.get("hosts") or []
        ],
        "kernel_arguments": info.get("kargs"),
    }


def check_config_iso(path: str) -> None:
    """Refuse a fetched config ISO that is not one: volume agent_configimage holding config.gz."""
    with open(path, "rb") as handle:
        image = IsoImage(handle, path)
        if (image.volume_id or "").lower() != CONFIG_ISO_LABEL or not image.exists("config.gz"):
            raise Day2Error(
                "%s is not a node-joiner config ISO (volume %r, config.gz %s; expected volume %s with config.gz): "
                "refusing it. Check node_joiner_image."
                % (path, image.volume_id, "present" if image.exists("config.gz") else "missing", CONFIG_ISO_LABEL)
            )


def initrd_token_expiry(paths: list[str]) -> str | None:
    """The token expiry the PXE initrd among ``paths`` carries (read from the file itself), or None."""
    for path in paths:
        if path.endswith("-initrd.img"):
            try:
                ignition, _kinds = read_pxe_initrd(path)
                return summarize_add_nodes_ignition(ignition)["token_expiry"]
            except (IsoError, OSError):
                return None
    return None
