# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What new workers inherit from the cluster: networks, proxy, mirrors, SSH key, FIPS, chrony, the pull secret's
coverage, the RHCOS boot images and the worker Ignition endpoint.

Pure functions over the objects :mod:`_facts.cluster` read. Where node-joiner falls back to the install-config
(mirrors, SSH key, FIPS), so do these -- openshift/installer
pkg/asset/agent/joiner/clusterinfo.go@ead4c47ae829a90629f8c39693ed0bf61e24412f. A damaged object is a warning
(appended to ``warnings``), never an error. Secret contents never leave this module: only derived values do.
"""

from __future__ import annotations

import base64
import json
from typing import Any

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule reports a missing PyYAML
    yaml = None  # type: ignore[assignment]

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import dig

# Where each kind of mirror set lists its entries.
_MIRROR_FIELDS = (
    ("ImageDigestMirrorSet", "imageDigestMirrors"),
    ("ImageContentSourcePolicy", "repositoryDigestMirrors"),
)
_IC_MIRROR_KEYS = ("imageDigestSources", "imageContentSources")


def install_config(configmap: Any, warnings: list[str]) -> dict[str, Any]:
    """The install-config as a dict, {} when absent; a damaged one is a warning (node-joiner rarely reads it)."""
    if configmap is None:
        return {}
    text = dig(configmap, "data", "install-config")
    try:
        data = yaml.safe_load(text) if text else None
        problem = "has no key 'install-config'" if not text else "key 'install-config' is not a YAML mapping"
    except yaml.YAMLError as error:
        data, problem = None, f"key 'install-config' is not valid YAML ({' '.join(str(error).split())})"
    if not isinstance(data, dict):
        warnings.append(
            f"ConfigMap kube-system/cluster-config-v1 {problem}; its values are not used. Restore it from the "
            "installation directory's install-config.yaml."
        )
        return {}
    return data


def networks(network: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Machine, cluster and service networks and the network type: the Network config, else install-config."""
    net_cfg = config.get("networking") or {}
    cluster = dig(network, "status", "clusterNetwork") or net_cfg.get("clusterNetwork") or []
    service = dig(network, "status", "serviceNetwork") or net_cfg.get("serviceNetwork") or []
    return {
        "machine_networks": [m.get("cidr") for m in net_cfg.get("machineNetwork") or [] if m.get("cidr")],
        "cluster_networks": [{"cidr": c.get("cidr"), "host_prefix": c.get("hostPrefix")} for c in cluster],
        "service_networks": list(service),
        "network_type": dig(network, "status", "networkType") or net_cfg.get("networkType"),
    }


PROXY_FIELDS = (("http_proxy", "httpProxy"), ("https_proxy", "httpsProxy"), ("no_proxy", "noProxy"))


def proxy(proxy_config: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The cluster-wide proxy: Proxy ``status``, else its ``spec``, else install-config."""
    sources = [dig(proxy_config, part, default={}) for part in ("status", "spec")] + [config.get("proxy") or {}]
    found = {key: next((source[field] for source in sources if source.get(field)), "") for key, field in PROXY_FIELDS}
    return dict(found, enabled=bool(found["http_proxy"] or found["https_proxy"]))


def proxy_status(proxy_config: Any) -> dict[str, str]:
    """The Proxy ``status`` alone: what oc puts into the node-joiner pod's environment -- openshift/oc
    pkg/cli/admin/nodeimage/create.go@9d9df34c46c9deba8c291a2a084de5724c0bd820 (``configurePodProxySetting``)."""
    return {key: dig(proxy_config, "status", field, default="") for key, field in PROXY_FIELDS}


def _mirror(entry: dict[str, Any], origin: str) -> dict[str, Any]:
    return {"source": entry.get("source"), "mirrors": list(entry.get("mirrors") or []), "origin": origin}


def mirrors(idms: Any, icsp: Any, config: dict[str, Any], idms_readable: bool) -> list[dict[str, Any]]:
    """Mirrors from the ImageDigestMirrorSets and ImageContentSourcePolicies; install-config when those are
    forbidden, as node-joiner does."""
    if not idms_readable:
        return [_mirror(entry, f"install-config/{key}") for key in _IC_MIRROR_KEYS for entry in config.get(key) or []]
    found: list[dict[str, Any]] = []
    for (kind, field), objects in zip(_MIRROR_FIELDS, (idms, icsp)):
        for item in dig(objects, "items", default=[]):
            origin = f"{kind}/{dig(item, 'metadata', 'name')}"
            found.extend(_mirror(entry, origin) for entry in dig(item, "spec", field, default=[]))
    return found


def ssh_key(mc_ssh: Any, config: dict[str, Any]) -> str:
    """The public SSH key(s) of user core: MachineConfig 99-worker-ssh, else install-config ``sshKey``."""
    for user in dig(mc_ssh, "spec", "config", "passwd", "users", default=[]):
        if user.get("name") == "core" and user.get("sshAuthorizedKeys"):
            return "\n".join(user["sshAuthorizedKeys"])
    return (config.get("sshKey") or "").strip()


def fips(mc_fips: Any, config: dict[str, Any]) -> bool:
    """FIPS mode: MachineConfig 99-worker-fips ``spec.fips``, else install-config ``fips``."""
    return bool(dig(mc_fips, "spec", "fips") or config.get("fips"))


def chrony_configured(mc_chrony: Any) -> bool:
    """Whether MachineConfig 50-workers-chrony-configuration writes /etc/chrony.conf."""
    files = dig(mc_chrony, "spec", "config", "storage", "files", default=[])
    return any(entry.get("path") == "/etc/chrony.conf" for entry in files)


def pull_secret(secret: Any) -> dict[str, Any]:
    """Whether the pull secret has a ``.dockerconfigjson``, and the registries it covers; the credentials are never
    returned."""
    encoded = dig(secret, "data", ".dockerconfigjson")
    return {"present": bool(encoded), "registries": sorted(dig(_json(encoded, True), "auths", default={}))}


def _json(text: Any, encoded: bool = False) -> Any:
    """``text`` (base64-decoded first when ``encoded``) read as JSON; None when it is empty or cannot be read."""
    try:
        return json.loads(base64.b64decode(text) if encoded else text) if text else None
    except (ValueError, TypeError):
        return None


def _artifact(data: Any, *path: str) -> dict[str, Any]:
    return {"location": dig(data, *path, "location"), "sha256": dig(data, *path, "sha256")}


def boot_images(configmap: Any, warnings: list[str]) -> dict[str, Any]:
    """The RHCOS live ISO and PXE artifacts per RPM architecture, from ConfigMap coreos-bootimages ``stream``."""
    text = dig(configmap, "data", "stream")
    stream = _json(text)
    if text and not isinstance(stream, dict):  # a damaged object is a warning, never an error
        warnings.append(
            "ConfigMap openshift-machine-config-operator/coreos-bootimages key 'stream' is not a JSON object, "
            "boot_images is empty; the machine-config operator maintains it: check its health."
        )
    images = {}
    for arch, data in sorted(dig(stream, "architectures", default={}).items()):
        metal = dig(data, "artifacts", "metal", default={})
        pxe = dig(metal, "formats", "pxe", default={})
        images[arch] = {
            "release": metal.get("release"),
            "iso": _artifact(metal, "formats", "iso", "disk"),
            "pxe": {part: _artifact(pxe, part) for part in ("kernel", "initramfs", "rootfs") if part in pxe},
        }
    return images


def worker_ignition(secret: Any, warnings: list[str]) -> dict[str, Any]:
    """The machine-config server URL and CA of the worker pointer config (Secret worker-user-data-managed)."""
    encoded = dig(secret, "data", "userData")
    pointer = _json(encoded, True)
    if encoded and pointer is None:
        warnings.append(
            "Secret openshift-machine-api/worker-user-data-managed key 'userData' is not an Ignition JSON document, "
            "worker_ignition is unknown; the machine-config operator maintains it: check its health."
        )
    url = dig(pointer, "ignition", "config", "merge", 0, "source")
    if pointer is not None and url is None:
        warnings.append(
            "the worker ignition pointer config (Secret openshift-machine-api/worker-user-data-managed) has no merge "
            "source URL"
        )
    return {
        "url": url,
        "has_ca": bool(dig(pointer, "ignition", "security", "tls", "certificateAuthorities", 0, "source")),
        "ignition_version": dig(pointer, "ignition", "version"),
    }
