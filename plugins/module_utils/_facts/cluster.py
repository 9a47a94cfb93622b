# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The day-1 cluster's objects read (``READS``: what node-joiner reads, plus a few for health) and turned into
the facts a day-2 worker needs: ``ansible_facts.day1_cluster``, the input of every later step.

:func:`gather` is day1_facts' whole work: connect, :func:`read_objects` (one GET per entry of ``READS``),
:func:`build_facts` (pure: identity, version and platform here; what workers inherit in :mod:`_facts.settings`,
the health and the Nodes in :mod:`_facts.health`, whether node-joiner accepts the cluster and its kind in
:mod:`_facts.support`). :func:`image_facts` reads the same way what day2_iso needs when it is not given the facts.
Secret contents never reach the facts: only derived values do.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import core_target, dig, group_target
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts import health, settings, support

GO_TO_RPM_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}

# How much each object matters (see _facts.support for the upstream source):
REQUIRED = "required"  # missing or forbidden fails the module: not an OpenShift cluster, or no access at all
NEEDED = "needed"  # node-joiner fails without it: missing or forbidden makes the cluster unsupported
OPTIONAL = "optional"  # node-joiner does without it: missing or forbidden is a warning
USUAL = "usual"  # its absence is a normal configuration (no extra CA, FIPS off...): only a forbidden read warns
_CONFIG, _MCO = "config.openshift.io", "machineconfiguration.openshift.io"
READS = (
    ("clusterversion", group_target(_CONFIG, "v1", "clusterversions", "version"), REQUIRED),
    ("infrastructure", group_target(_CONFIG, "v1", "infrastructures", "cluster"), REQUIRED),
    ("network", group_target(_CONFIG, "v1", "networks", "cluster"), OPTIONAL),
    ("proxy", group_target(_CONFIG, "v1", "proxies", "cluster"), NEEDED),
    ("ingress", group_target(_CONFIG, "v1", "ingresses", "cluster"), OPTIONAL),
    ("install_config", core_target("configmaps", "cluster-config-v1", "kube-system"), OPTIONAL),
    ("pull_secret", core_target("secrets", "pull-secret", "openshift-config"), NEEDED),
    ("user_ca_bundle", core_target("configmaps", "user-ca-bundle", "openshift-config"), USUAL),
    ("nodes", core_target("nodes"), REQUIRED),
    ("idms", group_target(_CONFIG, "v1", "imagedigestmirrorsets"), USUAL),
    ("icsp", group_target("operator.openshift.io", "v1alpha1", "imagecontentsourcepolicies"), USUAL),
    ("bootimages", core_target("configmaps", "coreos-bootimages", "openshift-machine-config-operator"), OPTIONAL),
    ("worker_user_data", core_target("secrets", "worker-user-data-managed", "openshift-machine-api"), OPTIONAL),
    ("mc_ssh", group_target(_MCO, "v1", "machineconfigs", "99-worker-ssh"), OPTIONAL),
    ("mc_fips", group_target(_MCO, "v1", "machineconfigs", "99-worker-fips"), USUAL),
    ("mc_chrony", group_target(_MCO, "v1", "machineconfigs", "50-workers-chrony-configuration"), USUAL),
    ("clusteroperators", group_target(_CONFIG, "v1", "clusteroperators"), OPTIONAL),
    ("worker_pool", group_target(_MCO, "v1", "machineconfigpools", "worker"), OPTIONAL),
)
# What day2_iso reads when it is not given the facts (four GETs, in this order): what it decides with.
IMAGE_READS = ("clusterversion", "infrastructure", "proxy", "nodes")

# What each object is, and what its absence means, for the reasons (NEEDED) and the warnings (OPTIONAL, USUAL).
MEANING = {
    "proxy": ("the cluster proxy (Proxy.config.openshift.io cluster)", ""),
    "pull_secret": ("the pull secret (Secret openshift-config/pull-secret)", ""),
    "network": (
        "Network.config.openshift.io cluster",
        "cluster_networks, service_networks and network_type come from install-config or stay empty; node-joiner "
        "does not read it",
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


def cluster_version(clusterversion: Any) -> dict[str, Any]:
    """The release of a ClusterVersion as node-joiner reads it: ``status.desired``, else the newest
    ``status.history`` entry (``history[0]``). The one reader of ClusterVersion in the collection."""
    desired = dig(clusterversion, "status", "desired", default={})
    entries = dig(clusterversion, "status", "history", default=[])
    history = [{key: h.get(key) for key in ("version", "state", "image")} for h in entries if isinstance(h, dict)]
    latest, progressing = history[0] if history else {}, k8s.condition(clusterversion, "Progressing")
    # An update under way: Progressing=True "Working towards <version>: ..." and history[0] Partial until it is
    # Completed -- openshift/cluster-version-operator pkg/cvo/status.go@d37e5a056d5a9c74c2ac2d5551ef39f573c9824a
    # (4.17: @b855c68099755979a053f60a49300d3502f44325).
    running = f"status.history[0] {latest.get('version')} is Partial" if latest.get("state") == "Partial" else None
    if progressing.get("status") == "True":
        running = f"Progressing=True: {progressing.get('message')}"
    return {
        "version": desired.get("version") or latest.get("version"),
        "release_image": desired.get("image") or latest.get("image"),
        # "Multi" for a multi-architecture payload, else "" (openshift/api config/v1/types_cluster_version.go@
        # 7395174fe74168e53ed58dfda8c170fbedd6d61d): workers of another architecture need "Multi" (_check.arch).
        "release_architecture": desired.get("architecture") or "",
        "version_history": history,
        "progressing": running,
    }


def _core(objects: dict[str, Any], config: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """Identity, release, control-plane architecture, platform and proxy, as node-joiner derives them."""
    clusterversion, infrastructure = objects.get("clusterversion"), objects.get("infrastructure")
    api_url = dig(infrastructure, "status", "apiServerURL")
    api_host = urlparse(api_url).hostname if api_url else None
    name, base_domain = support.split_api_host(api_host)
    ic_name, ic_domain = dig(config, "metadata", "name"), config.get("baseDomain")
    if name is None:  # install-config only when the API host is not api.<name>.<domain>
        name, base_domain = ic_name, ic_domain
    elif config and (ic_name, ic_domain) != (name, base_domain):
        warnings.append(
            f"install-config (ConfigMap kube-system/cluster-config-v1) names the cluster {ic_name}.{ic_domain}, but "
            f"the API URL {api_url} says {name}.{base_domain}: node-joiner uses the API URL, so do these facts"
        )
    listed = [health.node_summary(item) for item in dig(objects.get("nodes"), "items", default=[])]  # API's order
    masters = health.master_architectures(listed)
    architecture, reported = next(iter(masters), None), sorted(set(masters))
    if len(reported) > 1:
        warnings.append(
            f"the master Nodes report several architectures ({', '.join(reported)}): node-joiner takes "
            f"{architecture}, the first one's"
        )
    # The platform as node-joiner reads it (spec.platformSpec.type); the VIPs from platformStatus.
    platform = dig(infrastructure, "spec", "platformSpec", "type")
    key = (platform or dig(infrastructure, "status", "platformStatus", "type") or "").lower()
    platform_status = dig(infrastructure, "status", "platformStatus", key, default={})
    return {
        "cluster_id": dig(clusterversion, "spec", "clusterID"),
        "name": name,
        "base_domain": base_domain,
        "infrastructure_name": dig(infrastructure, "status", "infrastructureName"),
        "api_url": api_url,
        "api_int_url": dig(infrastructure, "status", "apiServerInternalURI"),
        "api_dns_name": api_host,
        **cluster_version(clusterversion),
        "architecture": architecture,
        "rpm_architecture": GO_TO_RPM_ARCH.get(architecture or ""),
        "platform": platform,
        "api_vips": list(platform_status.get("apiServerInternalIPs") or []),
        "ingress_vips": list(platform_status.get("ingressIPs") or []),
        "proxy": settings.proxy(objects.get("proxy"), config),
        "proxy_status": settings.proxy_status(objects.get("proxy")),
        "nodes": listed,
    }


def build_facts(
    objects: dict[str, Any], unreadable: dict[str, str] | None = None, allow_upgrading: bool = False
) -> dict[str, Any]:
    """The ``day1_cluster`` facts.

    ``objects`` maps each READS key to the object read (None when absent); ``unreadable`` maps the READS keys
    that could not be read (403) to the reason. The updates under way (:func:`health.updates`) are warnings, and
    also ``unsafe_reasons`` unless ``allow_upgrading``.
    """
    unreadable = unreadable or {}
    warnings = []
    for key, _target, role in READS:  # optional objects missing or forbidden, usual ones forbidden
        what, consequence = MEANING.get(key, (key, ""))
        if key in unreadable and role in (OPTIONAL, USUAL):
            warnings.append(f"cannot read {what}: {consequence} ({unreadable[key]})")
        elif role == OPTIONAL and objects.get(key) is None:
            warnings.append(f"{what} does not exist: {consequence}")
    config = settings.install_config(objects.get("install_config"), warnings)
    facts = _core(objects, config, warnings)
    nodes = sorted(facts.pop("nodes"), key=lambda node: node["name"] or "")
    ingress = objects.get("ingress")
    facts["ingress_domain"] = dig(ingress, "spec", "appsDomain") or dig(ingress, "spec", "domain")
    facts.update(settings.networks(objects.get("network"), config))
    facts["mirrors"] = settings.mirrors(objects.get("idms"), objects.get("icsp"), config, "idms" not in unreadable)
    kind = support.cluster_kind(facts["mirrors"], facts["api_int_url"], facts["name"], facts["base_domain"])
    facts["cluster_kind"], facts["internal_registries"] = kind["kind"], kind["internal_registries"]
    warnings.extend(support.kind_warnings(kind))
    facts["ssh_key"] = settings.ssh_key(objects.get("mc_ssh"), config)
    facts["fips"] = settings.fips(objects.get("mc_fips"), config)
    facts["chrony_configured"] = settings.chrony_configured(objects.get("mc_chrony"))
    facts["pull_secret"] = settings.pull_secret(objects.get("pull_secret"))
    facts["user_ca_bundle"] = bool(dig(objects.get("user_ca_bundle"), "data", "ca-bundle.crt"))
    facts["boot_images"] = settings.boot_images(objects.get("bootimages"), warnings)
    rpm_architecture = facts["rpm_architecture"]
    if rpm_architecture and facts["boot_images"] and rpm_architecture not in facts["boot_images"]:
        warnings.append(
            f"coreos-bootimages has no RHCOS boot image for the control-plane architecture {rpm_architecture} "
            "(node-joiner of 4.17 reads the ISO from it; later ones take it from the release)"
        )
    facts["worker_ignition"] = settings.worker_ignition(objects.get("worker_user_data"), warnings)
    facts["nodes"] = [{key: node[key] for key in NODE_FACT_KEYS} for node in nodes]
    facts["health"] = health.health(objects, nodes, unreadable, warnings)
    refused, warned = health.updates(facts)
    warnings += refused + warned
    facts["unsafe_reasons"] = [] if allow_upgrading else refused
    needed = {key: MEANING[key][0] for key, _target, role in READS if role == NEEDED}
    facts["unsupported_reasons"] = support.support_reasons(facts, objects, unreadable, needed)
    facts["supported"] = not facts["unsupported_reasons"]
    facts["warnings"] = warnings
    return facts


def read_objects(client: k8s.ApiClient, keys: tuple[str, ...] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Fetch the objects of READS (only ``keys`` when given); return (objects, unreadable reasons).

    A required object that is missing or cannot be read fails; another one that is forbidden is recorded in
    the unreadable reasons.
    """
    objects: dict[str, Any] = {}
    unreadable: dict[str, str] = {}
    for key, target, role in (read for read in READS if keys is None or read[0] in keys):
        try:
            objects[key] = client.get(target)
        except k8s.ApiAccessError as error:
            if role == REQUIRED or error.status != 403:
                raise
            objects[key], unreadable[key] = None, str(error)
        if role == REQUIRED and objects[key] is None:
            raise FactsError(
                f"{target.describe()} does not exist: this does not look like an OpenShift cluster installed by the "
                "OpenShift installer (check that the kubeconfig points at the right cluster)"
            )
    return objects, unreadable


def gather(module: Any, name: str = "day1_facts") -> dict[str, Any]:
    """day1_facts' result: the facts as ``ansible_facts.day1_cluster``, the number of API calls and the facts'
    warnings (prefixed with the module's ``name``) as module warnings."""
    client = k8s.connect(module)[1]
    facts = build_facts(*read_objects(client), allow_upgrading=module.params["allow_upgrading"])
    facts["server_url"] = client.api_url  # where this controller reaches the API server (the plan's proxy line)
    return {
        "changed": False,
        "ansible_facts": {"day1_cluster": facts},
        "api_calls": client.calls,
        "warnings": [f"{name}: {warning}" for warning in facts["warnings"]],
    }


def image_facts(client: k8s.ApiClient) -> dict[str, Any]:
    """The facts of :data:`IMAGE_READS` (identity, release, architecture, platform, proxy), read and built as
    day1_facts does it, for a day2_iso that was not given them; all four are needed."""
    objects, unreadable = read_objects(client, IMAGE_READS)
    if unreadable:
        reasons = "; ".join(f"{key}: {reason}" for key, reason in sorted(unreadable.items()))
        raise Day2Error(f"cannot read what node-joiner needs: {reasons}")
    return _core(objects, {}, [])
