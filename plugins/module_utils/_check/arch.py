# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The new workers' architectures against the cluster's release payload, before anything is written.

A worker of another architecture than the control plane's (x86_64 and aarch64 may be mixed; s390x and ppc64le
never, which ``_image.host_checks`` reports) needs a multi-architecture release payload: a single-architecture one
holds the images of one architecture only, so node-joiner finds no base ISO for the other one and, were the
host booted anyway, none of the cluster's images would run on it. ClusterVersion says which payload runs in
``status.desired.architecture``: ``Multi`` for a multi-architecture payload, empty otherwise (openshift/api
config/v1/types_cluster_version.go@7395174fe74168e53ed58dfda8c170fbedd6d61d, ``ClusterVersionArchitecture``).
node-joiner itself has no such check and fails late, after its namespace and pod exist (openshift/installer
pkg/asset/agent/image/baseiso.go@41ac01a1979cc999b02ef742ae8ead199d34c6f8); refusing here keeps the cluster
untouched.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.host_checks import CheckedHost
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import normalize_architecture

MULTI = "Multi"
# The architectures that may join a cluster of the other one (with a multi-architecture payload).
MIXABLE = ("x86_64", "aarch64")
MIGRATE = "oc adm upgrade --to-multi-arch"


def payload_is_multi(cluster: dict[str, Any]) -> bool | None:
    """True for a multi-architecture payload, False for a single-architecture one, None when the facts do not
    say (facts of an older day1_facts: no ``release_architecture`` key)."""
    if "release_architecture" not in cluster:
        return None
    return (cluster.get("release_architecture") or "") == MULTI


def check_payload_architectures(checked: list[CheckedHost], cluster: dict[str, Any], problems: Problems) -> None:
    """One problem per host whose architecture is not the control plane's on a single-architecture payload."""
    control_plane = normalize_architecture(cluster.get("rpm_architecture") or cluster.get("architecture"))
    if control_plane is None or payload_is_multi(cluster) is not False:
        return
    for host in checked:
        arch = host.architecture
        if arch is None or arch == control_plane or arch not in MIXABLE or control_plane not in MIXABLE:
            continue  # the same architecture, or a pair _image.host_checks refuses on its own
        problems.add(
            host.label,
            "cpu_architecture",
            arch,
            "is not the control plane's architecture (%s), and the cluster's release payload %s is "
            "single-architecture (ClusterVersion status.desired.architecture is not %s): it holds no %s images, so "
            "node-joiner has no %s ISO to build and the node could not run the cluster's pods"
            % (control_plane, cluster.get("release_image") or "(unknown)", MULTI, arch, arch),
            "use %s hardware for this worker, or first move the cluster to the multi-architecture payload (%s) "
            "and run again" % (control_plane, MIGRATE),
        )
