# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Whether node-joiner can add workers to a cluster, judged the way node-joiner judges it.

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
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.nodes import MASTER_LABEL

MIN_VERSION = (4, 17)
# Infrastructure spec.platformSpec.type -> the installer's platform name, for the platforms node-joiner accepts.
AGENT_PLATFORMS = {"BareMetal": "baremetal", "VSphere": "vsphere", "None": "none", "External": "external"}
# Platforms node-joiner converts but then refuses for adding nodes.
REFUSED_PLATFORMS = {
    "AWS": "aws",
    "Azure": "azure",
    "GCP": "gcp",
    "OpenStack": "openstack",
    "oVirt": "ovirt",
    "IBMCloud": "ibmcloud",
    "PowerVS": "powervs",
    "Nutanix": "nutanix",
}
NONE_ONLY_ARCHITECTURES = ("ppc64le", "s390x")
API_HOST = re.compile(r"^api\.([^.]+)\.(.+)$")


def parse_version(text: str | None) -> tuple[int, int] | None:
    """``(major, minor)`` of a version text such as ``4.18.3`` or ``v4.17.0-rc.1``, None when it is not one."""
    match = re.match(r"^v?(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


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
    name = AGENT_PLATFORMS.get(platform)
    if name is None:
        if platform not in REFUSED_PLATFORMS:
            return [
                "platform %s (Infrastructure cluster spec.platformSpec.type): node-joiner cannot add nodes "
                "to it (unable to convert platform type %s)" % (platform, platform)
            ]
        return [
            'platform %s cannot take nodes from node-joiner: platform: Unsupported value: "%s": supported '
            "values: %s"
            % (platform, REFUSED_PLATFORMS[platform], ", ".join('"%s"' % value for value in AGENT_PLATFORMS.values()))
        ]
    if architecture in NONE_ONLY_ARCHITECTURES and name != "none":
        return [
            'platform: Invalid value: "%s": CPU architecture "%s" only supports platform "none".' % (name, architecture)
        ]
    return []


def support_reasons(
    facts: dict[str, Any], objects: dict[str, Any], unreadable: dict[str, str], needed: dict[str, str]
) -> list[str]:
    """Why node-joiner could not add workers to this cluster; ``needed`` maps object keys to descriptions."""
    reasons: list[str] = []
    version = parse_version(facts["version"])
    if version is None:
        reasons.append(
            "cluster version unknown (ClusterVersion status.desired.version and status.history[0]."
            "version are empty); node-joiner reads the version from status.history[0]"
        )
    elif version < MIN_VERSION:
        reasons.append(
            "cluster version %s is older than %d.%d, the first release whose node-joiner can add nodes"
            % (facts["version"], MIN_VERSION[0], MIN_VERSION[1])
        )
    if not facts["api_url"]:
        reasons.append("Infrastructure cluster has no status.apiServerURL: node-joiner reads the API host from it")
    elif facts["api_dns_name"] and split_api_host(facts["api_dns_name"])[0] is None:
        reasons.append(
            "the API host %s (Infrastructure status.apiServerURL) is not api.<cluster name>.<domain>: "
            "node-joiner derives the cluster name from it" % facts["api_dns_name"]
        )
    reasons.extend(platform_reasons(facts["platform"], facts["architecture"]))
    if facts["architecture"] is None:
        reasons.append(
            "unable to determine target cluster architecture: no Node labelled %s reports "
            "status.nodeInfo.architecture (node-joiner takes it from the first one)" % MASTER_LABEL
        )
    for key, what in sorted(needed.items()):
        if key in unreadable:
            reasons.append("cannot read %s: %s" % (what, unreadable[key]))
        elif not objects.get(key):
            reasons.append("%s does not exist; node-joiner cannot work without it" % what)
    return reasons
