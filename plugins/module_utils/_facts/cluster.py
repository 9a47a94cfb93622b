# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day-1 cluster's objects read (``READS``: what node-joiner reads, plus a few for health) and turned into
the facts a day-2 worker needs.

:func:`gather` is day1_facts' whole work: connect, :func:`read_objects` (one GET per entry of ``READS``),
:func:`build_facts` (pure: identity, version and platform here; what workers inherit in :mod:`_facts.settings`,
the health in :mod:`_facts.health`, the Nodes in :mod:`_facts.nodes`, whether node-joiner accepts the cluster
in :mod:`_facts.support`). Secret contents never reach the facts: only derived values do.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    ApiClient,
    connect,
    core_target,
    group_target,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.objects import dig
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts import settings
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import health
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.kind import cluster_kind, kind_warnings
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.nodes import (
    master_architecture,
    master_architectures,
    node_summary,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.support import split_api_host, support_reasons

GO_TO_RPM_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}

# How much each object matters (see _facts.support for the upstream source):
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
# What the facts say of each Node (node_summary says more).
NODE_FACT_KEYS = ("name", "roles", "internal_ips", "hostname", "architecture", "ready")


class FactsError(Day2Error):
    """The cluster is not an OpenShift cluster installed by the installer (a required object does not exist)."""


def _identity(clusterversion: Any, infrastructure: Any, config: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """Name and base domain from the API host as node-joiner derives them; install-config as fallback."""
    api_url = dig(infrastructure, "status", "apiServerURL")
    api_host = urlparse(api_url).hostname if api_url else None
    name, base_domain = split_api_host(api_host)
    ic_name, ic_domain = dig(config, "metadata", "name"), config.get("baseDomain")
    if name is None:
        name, base_domain = ic_name, ic_domain
    elif config and (ic_name, ic_domain) != (name, base_domain):
        warnings.append(
            "install-config (ConfigMap kube-system/cluster-config-v1) names the cluster %s.%s, but the API URL %s "
            "says %s.%s: node-joiner uses the API URL, so do these facts"
            % (ic_name, ic_domain, api_url, name, base_domain)
        )
    return {
        "cluster_id": dig(clusterversion, "spec", "clusterID"),
        "name": name,
        "base_domain": base_domain,
        "infrastructure_name": dig(infrastructure, "status", "infrastructureName"),
        "api_url": api_url,
        "api_int_url": dig(infrastructure, "status", "apiServerInternalURI"),
        "api_dns_name": api_host,
    }


def _version(clusterversion: Any) -> dict[str, Any]:
    """``status.desired``, else ``status.history[0]`` (what node-joiner reads)."""
    desired = dig(clusterversion, "status", "desired", default={})
    history = [
        {"version": h.get("version"), "state": h.get("state"), "image": h.get("image")}
        for h in dig(clusterversion, "status", "history", default=[])
        if isinstance(h, dict)
    ]
    latest = history[0] if history else {}
    return {
        "version": desired.get("version") or latest.get("version"),
        "release_image": desired.get("image") or latest.get("image"),
        # "Multi" for a multi-architecture payload, else "" (openshift/api config/v1/types_cluster_version.go@
        # 7395174fe74168e53ed58dfda8c170fbedd6d61d): workers of another architecture need "Multi" (_check.arch).
        "release_architecture": desired.get("architecture") or "",
        "version_history": history,
    }


def _platform(infrastructure: Any) -> dict[str, Any]:
    """The platform as node-joiner reads it (spec.platformSpec.type); the VIPs from platformStatus."""
    ptype = dig(infrastructure, "spec", "platformSpec", "type")
    key = (ptype or dig(infrastructure, "status", "platformStatus", "type") or "").lower()
    status = dig(infrastructure, "status", "platformStatus", key, default={})
    return {
        "platform": ptype,
        "api_vips": list(status.get("apiServerInternalIPs") or []),
        "ingress_vips": list(status.get("ingressIPs") or []),
    }


def _architecture(listed: list[dict[str, Any]], warnings: list[str]) -> dict[str, Any]:
    """The control plane's architecture as node-joiner takes it (``listed``: Node summaries in the API's order)."""
    architecture, reported = master_architecture(listed), master_architectures(listed)
    if len(reported) > 1:
        warnings.append(
            "the master Nodes report several architectures (%s): node-joiner takes %s, the first "
            "one's" % (", ".join(reported), architecture)
        )
    return {"architecture": architecture, "rpm_architecture": GO_TO_RPM_ARCH.get(architecture or "")}


def absence_warnings(objects: dict[str, Any], unreadable: dict[str, str]) -> list[str]:
    """One warning per optional object that is missing or forbidden, and per usual one that is forbidden."""
    warnings = []
    for key, _target, role in READS:
        what, consequence = MEANING.get(key, (key, ""))
        if key in unreadable and role in (OPTIONAL, USUAL):
            warnings.append("cannot read %s: %s (%s)" % (what, consequence, unreadable[key]))
        elif role == OPTIONAL and objects.get(key) is None:
            warnings.append("%s does not exist: %s" % (what, consequence))
    return warnings


def build_facts(objects: dict[str, Any], unreadable: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``day1_cluster`` facts.

    ``objects`` maps each READS key to the object read (None when absent); ``unreadable`` maps the READS keys
    that could not be read (403) to the reason.
    """
    unreadable = unreadable or {}
    readable = {key: key not in unreadable for key, _target, _role in READS}
    warnings = absence_warnings(objects, unreadable)
    config = settings.install_config(objects.get("install_config"), warnings)
    listed = [node_summary(item) for item in dig(objects.get("nodes"), "items", default=[])]
    nodes = sorted(listed, key=lambda node: node["name"] or "")
    architecture = _architecture(listed, warnings)

    facts: dict[str, Any] = {}
    facts.update(_identity(objects.get("clusterversion"), objects.get("infrastructure"), config, warnings))
    facts.update(_version(objects.get("clusterversion")))
    facts.update(architecture)
    facts.update(_platform(objects.get("infrastructure")))
    ingress = objects.get("ingress")
    facts["ingress_domain"] = dig(ingress, "spec", "appsDomain") or dig(ingress, "spec", "domain")
    facts.update(settings.networks(objects.get("network"), config))
    facts["proxy"] = settings.proxy(objects.get("proxy"), config)
    facts["mirrors"] = settings.mirrors(objects.get("idms"), objects.get("icsp"), config, readable["idms"])
    kind = cluster_kind(facts["mirrors"], facts["api_int_url"], facts["name"], facts["base_domain"])
    facts["cluster_kind"], facts["internal_registries"] = kind["kind"], kind["internal_registries"]
    warnings.extend(kind_warnings(kind))
    facts["ssh_key"] = settings.ssh_key(objects.get("mc_ssh"), config)
    facts["fips"] = settings.fips(objects.get("mc_fips"), config)
    facts["chrony_configured"] = settings.chrony_configured(objects.get("mc_chrony"))
    facts["pull_secret"] = settings.pull_secret(objects.get("pull_secret"))
    facts["user_ca_bundle"] = bool(dig(objects.get("user_ca_bundle"), "data", "ca-bundle.crt"))
    facts["boot_images"] = settings.boot_images(objects.get("bootimages"), warnings)
    rpm_architecture = architecture["rpm_architecture"]
    if rpm_architecture and facts["boot_images"] and rpm_architecture not in facts["boot_images"]:
        warnings.append(
            "coreos-bootimages has no RHCOS boot image for the control-plane architecture %s (node-joiner "
            "of 4.17 reads the ISO from it; later ones take it from the release)" % rpm_architecture
        )
    facts["worker_ignition"] = settings.worker_ignition(objects.get("worker_user_data"), warnings)
    facts["nodes"] = [{key: node[key] for key in NODE_FACT_KEYS} for node in nodes]
    facts["health"] = health(objects.get("clusteroperators"), objects.get("worker_pool"), nodes, readable)
    needed = {key: MEANING[key][0] for key, _target, role in READS if role == NEEDED}
    reasons = support_reasons(facts, objects, unreadable, needed)
    facts["supported"] = not reasons
    facts["unsupported_reasons"] = reasons
    facts["warnings"] = warnings
    return facts


def read_objects(client: ApiClient, keys: list[str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Fetch the objects of READS (only ``keys`` when given); return (objects, unreadable reasons).

    A required object that is missing or cannot be read fails; another one that is forbidden is recorded in
    the unreadable reasons. Used by day1_facts (everything) and by the image step (what it needs).
    """
    objects: dict[str, Any] = {}
    unreadable: dict[str, str] = {}
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


def gather(module: Any, name: str = "day1_facts") -> dict[str, Any]:
    """day1_facts' result: the facts as ``ansible_facts.day1_cluster``, the number of API calls and the facts'
    warnings (prefixed with the module's ``name``) as module warnings."""
    client = connect(module)[1]
    objects, unreadable = read_objects(client)
    facts = build_facts(objects, unreadable)
    return {
        "changed": False,
        "ansible_facts": {"day1_cluster": facts},
        "api_calls": client.calls,
        "warnings": ["%s: %s" % (name, warning) for warning in facts["warnings"]],
    }
