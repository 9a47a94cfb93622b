# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether node-joiner can add workers to a cluster, judged the way node-joiner judges it, and what kind of cluster
it is (``standard``, ``appliance`` or ``registry-less``).

Pure functions over the facts :mod:`_facts.cluster` built. Upstream sources (``repo path@commit``):

* What node-joiner reads and which objects it cannot do without: ClusterVersion, Proxy, the pull secret, the
  Node list (a ``node-role.kubernetes.io/master`` Node's architecture) and Infrastructure (platform, API URL)
  -- openshift/installer pkg/asset/agent/joiner/clusterinfo.go@ead4c47ae829a90629f8c39693ed0bf61e24412f
  (``retrieveClusterData`` .. ``retrieveIngressDomain``, ``validate``). It tolerates a missing user-ca-bundle,
  worker-user-data-managed, 99-worker-ssh, 99-worker-fips, 50-workers-chrony-configuration and mirror sets, and
  never reads the Network config, ClusterOperators or MachineConfigPools. The Ingress config is read only by
  node-joiner after installer PR #10719 (OCPBUGS-88511), later than 4.21; coreos-bootimages only by older ones,
  which tolerate its absence (clusterinfo.go@c143649564e2b4c776faf2f7a3cc14f77cab7c6c).
* Cluster name from the API host with ``^api\\.([^.]+)\\.`` (``retrieveClusterName``, same file).
* Platforms: ``baremetal``, ``vsphere``, ``none``, ``external``; ppc64le and s390x only with ``none`` --
  openshift/installer pkg/asset/agent/common.go@2596730513b90f0f1264fae8ef73729780cc99dc
  (``SupportedInstallerPlatforms``) and pkg/asset/agent/installconfig.go@006d45739349721f1371d3013792d9b8407e9842
  (``ValidateSupportedPlatforms``). The refusal texts below are node-joiner's own wording.

The cluster kind comes from the mirrors day1_facts already read (ImageDigestMirrorSets and
ImageContentSourcePolicies), with no request of its own:

* Appliance: every node installed from the appliance disk image runs a registry on port 22625 named
  ``registry.appliance.openshift.com``, and that name points at 127.0.0.1 in the node's /etc/hosts --
  openshift/appliance data/scripts/bin/setup-local-registry.sh.template@16a46b8a10ad178c9194484d5362474ddb54924c.
  The cluster's mirror sets send the release repositories there. Older appliance builds named it
  ``registry.appliance.com`` (ports 5000/5001) --
  openshift/appliance pkg/asset/registry/registriesconf.go@468aae7ac73995be7ba36ef3103c3f7c55c4857f.
* Registry-less (OVE): the control-plane nodes serve the release payload; an ImageDigestMirrorSet through the
  ``api-int`` name makes the cluster pull from them, and a host added later must reach that port from outside the
  cluster (api-int load balancer and firewalls) -- openshift/enhancements
  enhancements/agent-installer/simplified-registry-less-cluster-operations.md@019ed2a8ce2dc4ddf8ef1f473adbeb2a15823b1b;
  the port is 22625 (``api-int.<cluster>.<domain>:22625/<repository>`` mirrors, same appliance registries test).
  Its InternalReleaseImage (openshift/api
  machineconfiguration/v1/types_internalreleaseimage.go@5b7e429c2a57f0dd7c742e2bf5c6eff57db08abb) is not read:
  the mirrors say the same, without a feature-gated API or one more request.
* The configuration-only image for hosts cloned from the appliance disk image: node-joiner ``--config-iso``
  (``releases.Release.config_iso``).
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import releases
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.health import MASTER_LABEL

# Infrastructure spec.platformSpec.type of the platforms node-joiner accepts; the installer's name of each is the
# type in lower case.
AGENT_PLATFORMS = ("BareMetal", "VSphere", "None", "External")
# Platforms node-joiner converts but then refuses for adding nodes.
REFUSED_PLATFORMS = ("AWS", "Azure", "GCP", "OpenStack", "oVirt", "IBMCloud", "PowerVS", "Nutanix")
NONE_ONLY_ARCHITECTURES = ("ppc64le", "s390x")
API_HOST = re.compile(r"^api\.([^.]+)\.(.+)$")
STANDARD, APPLIANCE, REGISTRY_LESS = "standard", "appliance", "registry-less"
INTERNAL_REGISTRY_PORT = "22625"
APPLIANCE_REGISTRY_HOSTS = ("registry.appliance.openshift.com", "registry.appliance.com")


def split_api_host(api_host: str | None) -> tuple[str | None, str | None]:
    """``(name, base domain)`` from ``api.<name>.<base domain>``, or ``(None, None)``."""
    match = API_HOST.match(api_host or "")
    return (match.group(1), match.group(2)) if match else (None, None)


def platform_reasons(platform: str | None, architecture: str | None) -> list[str]:
    """node-joiner's refusals of a platform (and of an architecture on it), in its words."""
    if not platform:
        return [
            "Infrastructure cluster has no spec.platformSpec.type: node-joiner reads the platform from it "
            '(unable to convert platform type "")'
        ]
    name = platform.lower()
    if platform in REFUSED_PLATFORMS:
        supported = ", ".join(f'"{value.lower()}"' for value in AGENT_PLATFORMS)
        return [
            f'platform {platform} cannot take nodes from node-joiner: platform: Unsupported value: "{name}": '
            f"supported values: {supported}"
        ]
    if platform not in AGENT_PLATFORMS:
        return [
            f"platform {platform} (Infrastructure cluster spec.platformSpec.type): node-joiner cannot add nodes to it "
            f"(unable to convert platform type {platform})"
        ]
    if architecture in NONE_ONLY_ARCHITECTURES and name != "none":
        return [f'platform: Invalid value: "{name}": CPU architecture "{architecture}" only supports platform "none".']
    return []


def support_reasons(
    facts: dict[str, Any], objects: dict[str, Any], unreadable: dict[str, str], needed: dict[str, str]
) -> list[str]:
    """Why node-joiner could not add workers to this cluster; ``needed`` maps object keys to descriptions."""
    reasons: list[str] = []
    if releases.parse_version(facts["version"]) is None:
        reasons.append(
            "cluster version unknown (ClusterVersion status.desired.version and status.history[0].version are empty); "
            "node-joiner reads the version from status.history[0]"
        )
    else:
        try:
            releases.release(facts["version"])
        except InputError as error:
            reasons.append(error.message)
    if not facts["api_url"]:
        reasons.append("Infrastructure cluster has no status.apiServerURL: node-joiner reads the API host from it")
    elif facts["api_dns_name"] and split_api_host(facts["api_dns_name"])[0] is None:
        reasons.append(
            f"the API host {facts['api_dns_name']} (Infrastructure status.apiServerURL) is not "
            "api.<cluster name>.<domain>: node-joiner derives the cluster name from it"
        )
    reasons.extend(platform_reasons(facts["platform"], facts["architecture"]))
    if facts["architecture"] is None:
        reasons.append(
            f"unable to determine target cluster architecture: no Node labelled {MASTER_LABEL} reports "
            "status.nodeInfo.architecture (node-joiner takes it from the first one)"
        )
    for key, what in sorted(needed.items()):
        if key in unreadable:
            reasons.append(f"cannot read {what}: {unreadable[key]}")
        elif not objects.get(key):
            reasons.append(f"{what} does not exist; node-joiner cannot work without it")
    return reasons


def _host_port(location: Any) -> tuple[str, str]:
    """``(host, port)`` of a mirror location such as ``registry.example.com:5000/ocp/release`` (port '' if none)."""
    head = str(location or "").split("/", 1)[0].strip().lower()
    host, _colon, port = head.partition(":") if head.count(":") == 1 else (head, "", "")
    return host, port


def cluster_kind(
    mirrors: list[dict[str, Any]],
    api_int_url: str | None = None,
    name: str | None = None,
    base_domain: str | None = None,
) -> dict[str, Any]:
    """``{"kind", "internal_registries"}`` from the ``mirrors`` facts (``[{"source", "mirrors", "origin"}]``).

    A mirror on ``api-int...:22625`` makes the cluster registry-less (such a cluster may list the appliance
    registry too); else a mirror on the appliance registry makes it an appliance; else it is standard.
    """
    found: dict[str, list[str]] = {REGISTRY_LESS: [], APPLIANCE: []}
    for entry in mirrors or []:
        for host, port in map(_host_port, entry.get("mirrors") or []):
            if host.startswith("api-int.") and port == INTERNAL_REGISTRY_PORT:
                found[REGISTRY_LESS].append(f"{host}:{port}")
            elif host in APPLIANCE_REGISTRY_HOSTS:
                found[APPLIANCE].append(f"{host}:{port}" if port else host)
    own = _host_port(api_int_url.split("://", 1)[-1])[0] if api_int_url else f"api-int.{name}.{base_domain}"
    if found[REGISTRY_LESS] and (api_int_url or (name and base_domain)):  # the cluster's own api-int endpoint first
        found[REGISTRY_LESS].insert(0, f"{own}:{INTERNAL_REGISTRY_PORT}")
    kind = REGISTRY_LESS if found[REGISTRY_LESS] else APPLIANCE if found[APPLIANCE] else STANDARD
    return {"kind": kind, "internal_registries": list(dict.fromkeys(found.get(kind, [])))}


def kind_warnings(kind: dict[str, Any]) -> list[str]:
    """What a new host needs on a cluster of this kind, with the fix (none for a standard cluster)."""
    endpoints = ", ".join(kind.get("internal_registries") or [])
    if kind.get("kind") == APPLIANCE:
        major, minor = releases.since("config_iso")
        return [
            f"cluster kind appliance: its release images are mirrored to {endpoints}, a registry that runs on every "
            "node installed from the appliance disk image (the name points at 127.0.0.1 there). A host booted from "
            "a plain node ISO has no such registry and stops at image pull. Fix: clone the new hosts from the "
            "appliance disk image and attach a configuration-only image built with day2_iso output: config-iso "
            f"(day2_image_output: config-iso; OpenShift {major}.{minor} or later)"
        ]
    if kind.get("kind") == REGISTRY_LESS:
        return [
            f"cluster kind registry-less: its release images are served by the control-plane nodes at {endpoints}; "
            "new hosts pull from there while they install and join. Fix: make TCP port "
            f"{INTERNAL_REGISTRY_PORT} of api-int reachable from the new hosts (add it to the api-int load balancer "
            "when that is external, and open it in the firewalls between them)"
        ]
    return []
