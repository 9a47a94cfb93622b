# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Map the day-1 cluster's objects to the facts a day-2 worker needs.

Pure functions: the caller fetches the objects listed in ``READS`` (the same
ones node-joiner reads) and passes them in; nothing here talks to the API.
Secret contents never leave this module: only derived, harmless values do.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import re

try:
    from urllib.parse import urlparse
except ImportError:  # pragma: no cover - Python 2 is not supported
    urlparse = None

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule reports a missing PyYAML
    yaml = None

from ansible_collections.openshift_agent.day2.plugins.module_utils._k8s import (
    core_target,
    group_target,
)

MIN_VERSION = (4, 17)
DOCUMENTED_PLATFORMS = ("BareMetal", "VSphere", "Nutanix", "None")
GO_TO_RPM_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}
CONTROL_PLANE_ROLES = ("master", "control-plane")

# (key, target, required). A required object that cannot be read fails the
# module; any other one that cannot be read only makes the cluster unsupported
# (or, for mirrors, falls back to install-config, as node-joiner does).
READS = (
    ("clusterversion", group_target("config.openshift.io", "v1", "clusterversions", "version"), True),
    ("infrastructure", group_target("config.openshift.io", "v1", "infrastructures", "cluster"), True),
    ("network", group_target("config.openshift.io", "v1", "networks", "cluster"), False),
    ("proxy", group_target("config.openshift.io", "v1", "proxies", "cluster"), False),
    ("install_config", core_target("configmaps", "cluster-config-v1", "kube-system"), True),
    ("pull_secret", core_target("secrets", "pull-secret", "openshift-config"), False),
    ("user_ca_bundle", core_target("configmaps", "user-ca-bundle", "openshift-config"), False),
    ("nodes", core_target("nodes"), True),
    ("idms", group_target("config.openshift.io", "v1", "imagedigestmirrorsets"), False),
    ("icsp", group_target("operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies"), False),
    ("bootimages", core_target("configmaps", "coreos-bootimages", "openshift-machine-config-operator"), False),
    ("worker_user_data", core_target("secrets", "worker-user-data-managed", "openshift-machine-api"), False),
    ("mc_ssh", group_target("machineconfiguration.openshift.io", "v1", "machineconfigs", "99-worker-ssh"), False),
    ("mc_fips", group_target("machineconfiguration.openshift.io", "v1", "machineconfigs", "99-worker-fips"), False),
    (
        "mc_chrony",
        group_target("machineconfiguration.openshift.io", "v1", "machineconfigs", "50-workers-chrony-configuration"),
        False,
    ),
    ("clusteroperators", group_target("config.openshift.io", "v1", "clusteroperators"), False),
    ("worker_pool", group_target("machineconfiguration.openshift.io", "v1", "machineconfigpools", "worker"), False),
)

# Objects node-joiner cannot work without; reading them is what "supported" needs.
NEEDED_BY_NODE_JOINER = {
    "pull_secret": "the pull secret (Secret openshift-config/pull-secret)",
    "bootimages": "the RHCOS boot images (ConfigMap openshift-machine-config-operator/coreos-bootimages)",
    "worker_user_data": "the worker ignition (Secret openshift-machine-api/worker-user-data-managed)",
    "network": "the cluster network (Network.config.openshift.io cluster)",
}


class FactsError(Exception):
    """The cluster's objects cannot be interpreted."""


def _get(obj, *path, **kwargs):
    default = kwargs.get("default")
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
        if obj is None:
            return default
    return obj


def _condition(obj, cond_type):
    for cond in _get(obj, "status", "conditions", default=[]) or []:
        if cond.get("type") == cond_type:
            return cond
    return {}


def _is_true(obj, cond_type):
    return _condition(obj, cond_type).get("status") == "True"


def parse_version(text):
    match = re.match(r"^v?(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_install_config(configmap):
    text = _get(configmap, "data", "install-config")
    if not text:
        raise FactsError(
            "ConfigMap kube-system/cluster-config-v1 has no key 'install-config'; the cluster was not "
            "installed by the OpenShift installer or the ConfigMap was edited. Restore it from the "
            "installation directory's install-config.yaml."
        )
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise FactsError(
            "ConfigMap kube-system/cluster-config-v1 key 'install-config' is not valid YAML (%s); "
            "fix the ConfigMap so it holds the install-config used at installation." % error
        )
    if not isinstance(data, dict) or not _get(data, "metadata", "name") or not data.get("baseDomain"):
        raise FactsError(
            "ConfigMap kube-system/cluster-config-v1 key 'install-config' lacks metadata.name or baseDomain; "
            "fix the ConfigMap so it holds the install-config used at installation."
        )
    return data


def _identity(clusterversion, infrastructure, install_config):
    api_url = _get(infrastructure, "status", "apiServerURL")
    api_host = urlparse(api_url).hostname if api_url else None
    return {
        "cluster_id": _get(clusterversion, "spec", "clusterID"),
        "name": _get(install_config, "metadata", "name"),
        "base_domain": install_config.get("baseDomain"),
        "infrastructure_name": _get(infrastructure, "status", "infrastructureName"),
        "api_url": api_url,
        "api_int_url": _get(infrastructure, "status", "apiServerInternalURI"),
        "api_dns_name": api_host,
    }


def _version(clusterversion):
    desired = _get(clusterversion, "status", "desired", default={})
    history = [
        {"version": h.get("version"), "state": h.get("state"), "image": h.get("image")}
        for h in _get(clusterversion, "status", "history", default=[])
    ]
    return {
        "version": desired.get("version"),
        "release_image": desired.get("image"),
        "version_history": history,
    }


def _platform(infrastructure):
    ptype = _get(infrastructure, "spec", "platformSpec", "type") or _get(infrastructure, "status", "platformStatus", "type")
    key = (ptype or "").lower()  # platformStatus keys are lower case: baremetal, vsphere, nutanix
    status = _get(infrastructure, "status", "platformStatus", key, default={}) or {}
    return {
        "platform": ptype,
        "api_vips": list(status.get("apiServerInternalIPs") or []),
        "ingress_vips": list(status.get("ingressIPs") or []),
    }


def _networks(network, install_config):
    net_cfg = install_config.get("networking") or {}
    cluster = _get(network, "status", "clusterNetwork") or net_cfg.get("clusterNetwork") or []
    service = _get(network, "status", "serviceNetwork") or net_cfg.get("serviceNetwork") or []
    return {
        "machine_networks": [m.get("cidr") for m in net_cfg.get("machineNetwork") or [] if m.get("cidr")],
        "cluster_networks": [{"cidr": c.get("cidr"), "host_prefix": c.get("hostPrefix")} for c in cluster],
        "service_networks": list(service),
        "network_type": _get(network, "status", "networkType") or net_cfg.get("networkType"),
    }


def _proxy(proxy, install_config):
    status = _get(proxy, "status", default={}) or {}
    spec = _get(proxy, "spec", default={}) or {}
    fallback = install_config.get("proxy") or {}
    result = {
        "http_proxy": status.get("httpProxy") or spec.get("httpProxy") or fallback.get("httpProxy") or "",
        "https_proxy": status.get("httpsProxy") or spec.get("httpsProxy") or fallback.get("httpsProxy") or "",
        "no_proxy": status.get("noProxy") or spec.get("noProxy") or fallback.get("noProxy") or "",
    }
    result["enabled"] = bool(result["http_proxy"] or result["https_proxy"])
    return result


def _mirrors(idms, icsp, install_config, idms_readable):
    """Mirrors from IDMS/ICSP objects; install-config when those cannot be read."""
    mirrors = []
    if idms_readable:
        for item in _get(idms, "items", default=[]):
            for entry in _get(item, "spec", "imageDigestMirrors", default=[]):
                mirrors.append({"source": entry.get("source"), "mirrors": list(entry.get("mirrors") or []),
                                "origin": "ImageDigestMirrorSet/%s" % _get(item, "metadata", "name")})
        for item in _get(icsp, "items", default=[]):
            for entry in _get(item, "spec", "repositoryDigestMirrors", default=[]):
                mirrors.append({"source": entry.get("source"), "mirrors": list(entry.get("mirrors") or []),
                                "origin": "ImageContentSourcePolicy/%s" % _get(item, "metadata", "name")})
        return mirrors
    for key in ("imageDigestSources", "imageContentSources"):
        for entry in install_config.get(key) or []:
            mirrors.append({"source": entry.get("source"), "mirrors": list(entry.get("mirrors") or []),
                            "origin": "install-config/%s" % key})
    return mirrors


def _ssh_key(mc_ssh, install_config):
    for user in _get(mc_ssh, "spec", "config", "passwd", "users", default=[]):
        if user.get("name") == "core" and user.get("sshAuthorizedKeys"):
            return "\n".join(user["sshAuthorizedKeys"])
    return (install_config.get("sshKey") or "").strip()


def pull_secret_registries(secret):
    """Registries covered by the pull secret; the credentials are never returned."""
    encoded = _get(secret, "data", ".dockerconfigjson")
    if not encoded:
        return []
    try:
        auths = json.loads(base64.b64decode(encoded)).get("auths") or {}
    except (ValueError, TypeError, AttributeError):
        return []
    return sorted(auths)


def _boot_images(configmap):
    text = _get(configmap, "data", "stream")
    if not text:
        return {}
    try:
        stream = json.loads(text)
    except ValueError:
        raise FactsError(
            "ConfigMap openshift-machine-config-operator/coreos-bootimages key 'stream' is not JSON; "
            "the machine-config operator maintains it: check that operator's health."
        )
    images = {}
    for arch, data in sorted((stream.get("architectures") or {}).items()):
        metal = _get(data, "artifacts", "metal", default={})
        formats = metal.get("formats") or {}
        pxe = formats.get("pxe") or {}
        iso = _get(formats, "iso", "disk", default={})
        images[arch] = {
            "release": metal.get("release"),
            "iso": {"location": iso.get("location"), "sha256": iso.get("sha256")},
            "pxe": dict(
                (part, {"location": _get(pxe, part, "location"), "sha256": _get(pxe, part, "sha256")})
                for part in ("kernel", "initramfs", "rootfs")
                if part in pxe
            ),
        }
    return images


def _worker_ignition(secret):
    encoded = _get(secret, "data", "userData")
    if not encoded:
        return {"url": None, "has_ca": False}
    try:
        pointer = json.loads(base64.b64decode(encoded))
    except (ValueError, TypeError):
        raise FactsError(
            "Secret openshift-machine-api/worker-user-data-managed key 'userData' is not an Ignition JSON "
            "document; it is maintained by the machine-config operator: check that operator's health."
        )
    merge = _get(pointer, "ignition", "config", "merge", default=[])
    cas = _get(pointer, "ignition", "security", "tls", "certificateAuthorities", default=[])
    return {
        "url": merge[0].get("source") if merge else None,
        "has_ca": bool(cas and cas[0].get("source")),
        "ignition_version": _get(pointer, "ignition", "version"),
    }


def _chrony_configured(mc_chrony):
    for entry in _get(mc_chrony, "spec", "config", "storage", "files", default=[]):
        if entry.get("path") == "/etc/chrony.conf":
            return True
    return False


def _node_roles(node):
    prefix = "node-role.kubernetes.io/"
    labels = _get(node, "metadata", "labels", default={})
    return sorted(k[len(prefix):] for k in labels if k.startswith(prefix) and k[len(prefix):])


def node_summary(node):
    addresses = _get(node, "status", "addresses", default=[])
    return {
        "name": _get(node, "metadata", "name"),
        "roles": _node_roles(node),
        "internal_ips": [a.get("address") for a in addresses if a.get("type") == "InternalIP"],
        "hostname": next((a.get("address") for a in addresses if a.get("type") == "Hostname"), None),
        "architecture": _get(node, "status", "nodeInfo", "architecture"),
        "ready": _is_true(node, "Ready"),
    }


def control_plane_arch(nodes):
    """(architecture or None, every architecture) the control-plane nodes report."""
    arches = sorted(
        set(n["architecture"] for n in nodes if n["architecture"] and set(n["roles"]) & set(CONTROL_PLANE_ROLES))
    )
    return (arches[0] if arches else None), arches


def _health(clusteroperators, worker_pool, nodes, readable):
    problems = []
    operators = {"total": 0, "degraded": [], "unavailable": [], "progressing": []}
    for co in _get(clusteroperators, "items", default=[]):
        name = _get(co, "metadata", "name")
        operators["total"] += 1
        if _is_true(co, "Degraded"):
            message = _condition(co, "Degraded").get("message", "")
            operators["degraded"].append({"name": name, "message": message})
            problems.append("ClusterOperator %s is Degraded: %s" % (name, message))
        if _condition(co, "Available") and not _is_true(co, "Available"):
            message = _condition(co, "Available").get("message", "")
            operators["unavailable"].append({"name": name, "message": message})
            problems.append("ClusterOperator %s is not Available: %s" % (name, message))
        if _is_true(co, "Progressing"):
            operators["progressing"].append({"name": name, "message": _condition(co, "Progressing").get("message", "")})
    pool = None
    if worker_pool:
        pool = {
            "updated": _is_true(worker_pool, "Updated"),
            "updating": _is_true(worker_pool, "Updating"),
            "degraded": _is_true(worker_pool, "Degraded"),
            "machine_count": _get(worker_pool, "status", "machineCount"),
            "ready_machine_count": _get(worker_pool, "status", "readyMachineCount"),
            "message": _condition(worker_pool, "Degraded").get("message", ""),
        }
        if pool["degraded"]:
            problems.append("MachineConfigPool worker is Degraded: %s" % pool["message"])
    elif readable.get("worker_pool", True):
        problems.append("MachineConfigPool worker does not exist")
    for node in nodes:
        if not node["ready"]:
            problems.append("Node %s is not Ready" % node["name"])
    for key in ("clusteroperators", "worker_pool"):
        if not readable.get(key, True):
            problems.append("health unknown: cannot read %s" % key)
    return {"healthy": not problems, "problems": problems, "cluster_operators": operators, "worker_pool": pool}


def build_facts(objects, unreadable=None):
    """Return the ``day1_cluster`` facts.

    ``objects`` maps each READS key to the object read (None when absent);
    ``unreadable`` maps READS keys that could not be read (403) to the reason.
    """
    unreadable = unreadable or {}
    install_config = parse_install_config(objects.get("install_config"))
    clusterversion = objects.get("clusterversion") or {}
    infrastructure = objects.get("infrastructure") or {}
    nodes = [node_summary(n) for n in _get(objects.get("nodes"), "items", default=[])]
    nodes.sort(key=lambda n: n["name"] or "")
    architecture, cp_arches = control_plane_arch(nodes)
    readable = dict((key, key not in unreadable) for key, _target, _required in READS)

    facts = {}
    facts.update(_identity(clusterversion, infrastructure, install_config))
    facts.update(_version(clusterversion))
    facts["architecture"] = architecture
    facts["rpm_architecture"] = GO_TO_RPM_ARCH.get(architecture)
    facts.update(_platform(infrastructure))
    facts.update(_networks(objects.get("network"), install_config))
    facts["proxy"] = _proxy(objects.get("proxy"), install_config)
    facts["mirrors"] = _mirrors(objects.get("idms"), objects.get("icsp"), install_config, readable["idms"])
    facts["ssh_key"] = _ssh_key(objects.get("mc_ssh"), install_config)
    facts["fips"] = bool(_get(objects.get("mc_fips"), "spec", "fips") or install_config.get("fips"))
    facts["chrony_configured"] = _chrony_configured(objects.get("mc_chrony"))
    facts["pull_secret"] = {
        "present": bool(_get(objects.get("pull_secret"), "data", ".dockerconfigjson")),
        "registries": pull_secret_registries(objects.get("pull_secret")),
    }
    facts["user_ca_bundle"] = bool(_get(objects.get("user_ca_bundle"), "data", "ca-bundle.crt"))
    facts["boot_images"] = _boot_images(objects.get("bootimages"))
    facts["worker_ignition"] = _worker_ignition(objects.get("worker_user_data"))
    facts["nodes"] = nodes
    facts["health"] = _health(objects.get("clusteroperators"), objects.get("worker_pool"), nodes, readable)

    reasons = []
    version = parse_version(facts["version"])
    if version is None:
        reasons.append("cluster version unknown (ClusterVersion status.desired.version is empty)")
    elif version < MIN_VERSION:
        reasons.append(
            "cluster version %s is older than %d.%d, the first release whose node-joiner can add nodes"
            % (facts["version"], MIN_VERSION[0], MIN_VERSION[1])
        )
    if facts["platform"] not in DOCUMENTED_PLATFORMS:
        reasons.append(
            "platform %s is not one of those documented for adding nodes with node-joiner (%s)"
            % (facts["platform"], ", ".join(DOCUMENTED_PLATFORMS))
        )
    if len(cp_arches) > 1:
        reasons.append("control-plane nodes report several architectures: %s" % ", ".join(cp_arches))
    elif architecture is None:
        reasons.append("no control-plane node reports its architecture (Node status.nodeInfo.architecture)")
    for key, what in sorted(NEEDED_BY_NODE_JOINER.items()):
        if key in unreadable:
            reasons.append("cannot read %s: %s" % (what, unreadable[key]))
        elif not objects.get(key):
            reasons.append("%s does not exist" % what)
    if facts["rpm_architecture"] and facts["boot_images"] and facts["rpm_architecture"] not in facts["boot_images"]:
        reasons.append("no RHCOS boot image for the control-plane architecture %s" % facts["rpm_architecture"])
    if objects.get("worker_user_data") and not facts["worker_ignition"]["url"]:
        reasons.append("the worker ignition pointer config has no merge source URL")
    facts["supported"] = not reasons
    facts["unsupported_reasons"] = reasons
    return facts
