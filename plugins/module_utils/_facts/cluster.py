# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Map the day-1 cluster's objects to the facts a day-2 worker needs.

Pure functions: the caller fetches the objects listed in ``READS`` (the ones
node-joiner reads, plus a few for health) and passes them in; nothing here talks
to the API. Secret contents never leave this module: only derived, harmless
values do. Whether node-joiner can work with the cluster is ``_cluster_support``.
"""

import base64
import json

try:
    from urllib.parse import urlparse
except ImportError:  # pragma: no cover - Python 2 is not supported
    urlparse = None

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule reports a missing PyYAML
    yaml = None

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    core_target,
    group_target,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.support import (
    master_architecture,
    split_api_host,
    support_reasons,
)

GO_TO_RPM_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}

# How much each object matters (see _cluster_support for the upstream source):
REQUIRED = "required"  # missing or forbidden fails the module: not an OpenShift cluster, or no access at all
NEEDED = "needed"  # node-joiner fails without it: missing or forbidden makes the cluster unsupported
OPTIONAL = "optional"  # node-joiner does without it: missing or forbidden is a warning
USUAL = "usual"  # its absence is a normal configuration (no extra CA, FIPS off...): only a forbidden read warns
_MCO = "machineconfiguration.openshift.io"
READS = (
    ("clusterversion", group_target("config.openshift.io", "v1", "clusterversions", "version"), REQUIRED),
    ("infrastructure", group_target("config.openshift.io", "v1", "infrastructures", "cluster"), REQUIRED),
    ("network", group_target("config.openshift.io", "v1", "networks", "cluster"), OPTIONAL),
    ("proxy", group_target("config.openshift.io", "v1", "proxies", "cluster"), NEEDED),
    ("ingress", group_target("config.openshift.io", "v1", "ingresses", "cluster"), OPTIONAL),
    ("install_config", core_target("configmaps", "cluster-config-v1", "kube-system"), OPTIONAL),
    ("pull_secret", core_target("secrets", "pull-secret", "openshift-config"), NEEDED),
    ("user_ca_bundle", core_target("configmaps", "user-ca-bundle", "openshift-config"), USUAL),
    ("nodes", core_target("nodes"), REQUIRED),
    ("idms", group_target("config.openshift.io", "v1", "imagedigestmirrorsets"), USUAL),
    ("icsp", group_target("operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies"), USUAL),
    ("bootimages", core_target("configmaps", "coreos-bootimages", "openshift-machine-config-operator"), OPTIONAL),
    ("worker_user_data", core_target("secrets", "worker-user-data-managed", "openshift-machine-api"), OPTIONAL),
    ("mc_ssh", group_target(_MCO, "v1", "machineconfigs", "99-worker-ssh"), OPTIONAL),
    ("mc_fips", group_target(_MCO, "v1", "machineconfigs", "99-worker-fips"), USUAL),
    ("mc_chrony", group_target(_MCO, "v1", "machineconfigs", "50-workers-chrony-configuration"), USUAL),
    ("clusteroperators", group_target("config.openshift.io", "v1", "clusteroperators"), OPTIONAL),
    ("worker_pool", group_target(_MCO, "v1", "machineconfigpools", "worker"), OPTIONAL),
)

# What each object is, and what its absence means, for the reasons (NEEDED) and the warnings (OPTIONAL, USUAL).
MEANING = {
    "proxy": ("the cluster proxy (Proxy.config.openshift.io cluster)", ""),
    "pull_secret": ("the pull secret (Secret openshift-config/pull-secret)", ""),
    "network": (
        "Network.config.openshift.io cluster",
        "cluster_networks, service_networks and network_type come "
        "from install-config or stay empty; node-joiner does not read it",
    ),
    "ingress": (
        "Ingress.config.openshift.io cluster",
        "ingress_domain is unknown; node-joiner reads the apps domain from it only after 4.21",
    ),
    "install_config": (
        "ConfigMap kube-system/cluster-config-v1 (install-config)",
        "name and base domain come from the API URL alone, machine_networks stays empty",
    ),
    "bootimages": ("ConfigMap openshift-machine-config-operator/coreos-bootimages", "boot_images is empty"),
    "worker_user_data": ("Secret openshift-machine-api/worker-user-data-managed", "worker_ignition is unknown"),
    "mc_ssh": ("MachineConfig 99-worker-ssh", "ssh_key comes from install-config, or new workers get no SSH key"),
    "clusteroperators": ("the resource clusteroperators.config.openshift.io", "the operators' health is unknown"),
    "worker_pool": ("MachineConfigPool worker", "its health is unknown"),
    "user_ca_bundle": ("ConfigMap openshift-config/user-ca-bundle", "user_ca_bundle is unknown"),
    "idms": ("the ImageDigestMirrorSets", "mirrors come from install-config, as node-joiner does"),
    "icsp": ("the ImageContentSourcePolicies", "their mirrors are missing"),
    "mc_fips": ("MachineConfig 99-worker-fips", "fips comes from install-config, as node-joiner does"),
    "mc_chrony": ("MachineConfig 50-workers-chrony-configuration", "chrony_configured is unknown"),
}


class FactsError(Day2Error):
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


def parse_install_config(configmap, warnings):
    """The install-config as a dict, {} when absent; a damaged one is a warning (node-joiner rarely reads it)."""
    if configmap is None:
        return {}
    text = _get(configmap, "data", "install-config")
    problem = None
    data = None
    if not text:
        problem = "has no key 'install-config'"
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            problem = "key 'install-config' is not valid YAML (%s)" % " ".join(str(error).split())
    if problem is None and not isinstance(data, dict):
        problem = "key 'install-config' is not a YAML mapping"
    if problem:
        warnings.append(
            "ConfigMap kube-system/cluster-config-v1 %s; its values are not used. Restore it from the "
            "installation directory's install-config.yaml." % problem
        )
        return {}
    return data


def _identity(clusterversion, infrastructure, install_config, warnings):
    """Name and base domain from the API host as node-joiner derives them; install-config as fallback."""
    api_url = _get(infrastructure, "status", "apiServerURL")
    api_host = urlparse(api_url).hostname if api_url else None
    name, base_domain = split_api_host(api_host)
    ic_name, ic_domain = _get(install_config, "metadata", "name"), install_config.get("baseDomain")
    if name is None:
        name, base_domain = ic_name, ic_domain
    elif install_config and (ic_name, ic_domain) != (name, base_domain):
        warnings.append(
            "install-config (ConfigMap kube-system/cluster-config-v1) names the cluster %s.%s, but the API URL %s "
            "says %s.%s: node-joiner uses the API URL, so do these facts"
            % (ic_name, ic_domain, api_url, name, base_domain)
        )
    return {
        "cluster_id": _get(clusterversion, "spec", "clusterID"),
        "name": name,
        "base_domain": base_domain,
        "infrastructure_name": _get(infrastructure, "status", "infrastructureName"),
        "api_url": api_url,
        "api_int_url": _get(infrastructure, "status", "apiServerInternalURI"),
        "api_dns_name": api_host,
    }


def _version(clusterversion):
    """``status.desired``, else ``status.history[0]`` (what node-joiner reads)."""
    desired = _get(clusterversion, "status", "desired", default={})
    history = [
        {"version": h.get("version"), "state": h.get("state"), "image": h.get("image")}
        for h in _get(clusterversion, "status", "history", default=[])
        if isinstance(h, dict)
    ]
    latest = history[0] if history else {}
    return {
        "version": desired.get("version") or latest.get("version"),
        "release_image": desired.get("image") or latest.get("image"),
        "version_history": history,
    }


def _platform(infrastructure):
    """The platform as node-joiner reads it (spec.platformSpec.type); the VIPs from platformStatus."""
    ptype = _get(infrastructure, "spec", "platformSpec", "type")
    key = (ptype or _get(infrastructure, "status", "platformStatus", "type") or "").lower()
    status = _get(infrastructure, "status", "platformStatus", key, default={}) or {}
    return {
        "platform": ptype,
        "api_vips": list(status.get("apiServerInternalIPs") or []),
        "ingress_vips": list(status.get("ingressIPs") or []),
    }


def _ingress_domain(ingress):
    return _get(ingress, "spec", "appsDomain") or _get(ingress, "spec", "domain")


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
                mirrors.append(
                    {
                        "source": entry.get("source"),
                        "mirrors": list(entry.get("mirrors") or []),
                        "origin": "ImageDigestMirrorSet/%s" % _get(item, "metadata", "name"),
                    }
                )
        for item in _get(icsp, "items", default=[]):
            for entry in _get(item, "spec", "repositoryDigestMirrors", default=[]):
                mirrors.append(
                    {
                        "source": entry.get("source"),
                        "mirrors": list(entry.get("mirrors") or []),
                        "origin": "ImageContentSourcePolicy/%s" % _get(item, "metadata", "name"),
                    }
                )
        return mirrors
    for key in ("imageDigestSources", "imageContentSources"):
        for entry in install_config.get(key) or []:
            mirrors.append(
                {
                    "source": entry.get("source"),
                    "mirrors": list(entry.get("mirrors") or []),
                    "origin": "install-config/%s" % key,
                }
            )
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


def _boot_images(configmap, warnings):
    text = _get(configmap, "data", "stream")
    if not text:
        return {}
    try:
        stream = json.loads(text)
        if not isinstance(stream, dict):
            raise ValueError("not an object")
    except ValueError:
        warnings.append(
            "ConfigMap openshift-machine-config-operator/coreos-bootimages key 'stream' is not a JSON "
            "object, boot_images is empty; the machine-config operator maintains it: check its health."
        )
        return {}
    images = {}
    for arch, data in sorted((stream.get("architectures") or {}).items()):
        metal = _get(data, "artifacts", "metal", default={})
        formats = metal.get("formats") or {}
        pxe = formats.get("pxe") or {}
        iso = _get(formats, "iso", "disk", default={})
        images[arch] = {
            "release": metal.get("release"),
            "iso": {"location": iso.get("location"), "sha256": iso.get("sha256")},
            "pxe": {
                part: {"location": _get(pxe, part, "location"), "sha256": _get(pxe, part, "sha256")}
                for part in ("kernel", "initramfs", "rootfs")
                if part in pxe
            },
        }
    return images


def _worker_ignition(secret, warnings):
    encoded = _get(secret, "data", "userData")
    if not encoded:
        return {"url": None, "has_ca": False}
    try:
        pointer = json.loads(base64.b64decode(encoded))
    except (ValueError, TypeError):
        warnings.append(
            "Secret openshift-machine-api/worker-user-data-managed key 'userData' is not an Ignition "
            "JSON document, worker_ignition is unknown; the machine-config operator maintains it: "
            "check its health."
        )
        return {"url": None, "has_ca": False}
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
    return sorted(k[len(prefix) :] for k in labels if k.startswith(prefix) and k[len(prefix) :])


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
    for node in nodes:
        if not node["ready"]:
            problems.append("Node %s is not Ready" % node["name"])
    # Absent objects are warnings (see MEANING); an identity that may not read them cannot judge the health.
    for key in ("clusteroperators", "worker_pool"):
        if not readable.get(key, True):
            problems.append("health unknown: cannot read %s" % key)
    return {"healthy": not problems, "problems": problems, "cluster_operators": operators, "worker_pool": pool}


def absence_warnings(objects, unreadable):
    """One warning per optional object that is missing or forbidden, and per usual one that is forbidden."""
    warnings = []
    for key, _target, role in READS:
        what, consequence = MEANING.get(key, (key, ""))
        if key in unreadable and role in (OPTIONAL, USUAL):
            warnings.append("cannot read %s: %s (%s)" % (what, consequence, unreadable[key]))
        elif role == OPTIONAL and objects.get(key) is None:
            warnings.append("%s does not exist: %s" % (what, consequence))
    return warnings


def build_facts(objects, unreadable=None):
    """Return the ``day1_cluster`` facts.

    ``objects`` maps each READS key to the object read (None when absent);
    ``unreadable`` maps READS keys that could not be read (403) to the reason.
    """
    unreadable = unreadable or {}
    warnings = absence_warnings(objects, unreadable)
    install_config = parse_install_config(objects.get("install_config"), warnings)
    clusterversion = objects.get("clusterversion") or {}
    infrastructure = objects.get("infrastructure") or {}
    node_items = _get(objects.get("nodes"), "items", default=[])
    nodes = sorted((node_summary(n) for n in node_items), key=lambda n: n["name"] or "")
    architecture, master_arches = master_architecture(node_items)
    if len(master_arches) > 1:
        warnings.append(
            "the master Nodes report several architectures (%s): node-joiner takes %s, the first "
            "one's" % (", ".join(master_arches), architecture)
        )
    readable = {key: key not in unreadable for key, _target, _role in READS}

    facts = {}
    facts.update(_identity(clusterversion, infrastructure, install_config, warnings))
    facts.update(_version(clusterversion))
    facts["architecture"] = architecture
    facts["rpm_architecture"] = GO_TO_RPM_ARCH.get(architecture)
    facts.update(_platform(infrastructure))
    facts["ingress_domain"] = _ingress_domain(objects.get("ingress"))
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
    facts["boot_images"] = _boot_images(objects.get("bootimages"), warnings)
    facts["worker_ignition"] = _worker_ignition(objects.get("worker_user_data"), warnings)
    facts["nodes"] = nodes
    facts["health"] = _health(objects.get("clusteroperators"), objects.get("worker_pool"), nodes, readable)

    if facts["rpm_architecture"] and facts["boot_images"] and facts["rpm_architecture"] not in facts["boot_images"]:
        warnings.append(
            "coreos-bootimages has no RHCOS boot image for the control-plane architecture %s (node-joiner "
            "of 4.17 reads the ISO from it; later ones take it from the release)" % facts["rpm_architecture"]
        )
    if (
        objects.get("worker_user_data")
        and facts["worker_ignition"]["url"] is None
        and _get(objects.get("worker_user_data"), "data", "userData")
    ):
        warnings.append(
            "the worker ignition pointer config (Secret openshift-machine-api/worker-user-data-managed) "
            "has no merge source URL"
        )
    needed = {key: MEANING[key][0] for key, _target, role in READS if role == NEEDED}
    reasons = support_reasons(facts, objects, unreadable, needed)
    facts["supported"] = not reasons
    facts["unsupported_reasons"] = reasons
    facts["warnings"] = warnings
    return facts


def read_objects(client, keys=None):
    """Fetch the objects of READS (only ``keys`` when given); return (objects, unreadable reasons).

    A required object that is missing or cannot be read fails; another one that is forbidden is recorded in
    the unreadable reasons. Used by day1_facts (everything) and by the image step (what it needs).
    """
    objects, unreadable = {}, {}
    for key, target, role in READS:
        if keys is not None and key not in keys:
            continue
        try:
            objects[key] = client.get(target)
        except ApiAccessError as error:
            if role == REQUIRED or error.status != 403:
                raise
            objects[key] = None
            unreadable[key] = str(error)
        if role == REQUIRED and objects[key] is None:
            raise FactsError(
                "%s does not exist: this does not look like an OpenShift cluster installed by the "
                "OpenShift installer (check that the kubeconfig points at the right cluster)" % target.describe()
            )
    return objects, unreadable
