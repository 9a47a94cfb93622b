# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster the user meant: ``day2_cluster_name``, ``day2_base_domain`` and ``day2_openshift_version``, when
set, against the cluster the login reaches (the day-1 facts), before anything is written.

A wrong kubeconfig would add the new workers to another cluster; naming the cluster in the inventory makes that
mistake a refusal that names both clusters. The name and base domain are the facts' (the API URL's
``api.<name>.<base domain>``, as node-joiner derives them); a version ``x.y`` matches every ``x.y.z``, a version
``x.y.z`` only itself.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

PLAY = "(play)"
VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def _unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _where(cluster: dict[str, Any]) -> str:
    api = cluster.get("api_url")
    return "the cluster the login reaches%s" % (" (%s)" % api if api else "")


def _version_matches(wanted: str, actual: Any) -> bool:
    found = RELEASE.match(str(actual or ""))
    if not found:
        return False
    parts = [part for part in VERSION.match(wanted).groups() if part is not None]  # type: ignore[union-attr]
    return [int(part) for part in parts] == [int(part) for part in found.groups()[: len(parts)]]


def check_identity(
    cluster: dict[str, Any], cluster_name: Any, base_domain: Any, openshift_version: Any, problems: Problems
) -> None:
    """Each of the three that is set must be the cluster's; every difference names both values."""
    fix = "point the login (kubeconfig, context, k8s_host) at the cluster you meant, or correct %s"
    for variable, wanted, actual, what in (
        ("day2_cluster_name", cluster_name, cluster.get("name"), "name"),
        ("day2_base_domain", base_domain, cluster.get("base_domain"), "base domain"),
    ):
        if _unset(wanted):
            continue
        wanted_text = str(wanted).strip().rstrip(".").lower()
        if wanted_text != str(actual or "").lower():
            problems.add(
                PLAY,
                variable,
                wanted,
                "is not %s: its %s is %s" % (_where(cluster), what, '"%s"' % actual if actual else "unknown"),
                fix % variable,
            )
    if _unset(openshift_version):
        return
    wanted = str(openshift_version).strip()
    if isinstance(openshift_version, float):
        problems.add(
            PLAY,
            "day2_openshift_version",
            openshift_version,
            "is a number, not a version (YAML reads an unquoted 4.20 as 4.2)",
            'quote it: day2_openshift_version: "4.20"',
        )
    elif not VERSION.match(wanted):
        problems.add(
            PLAY,
            "day2_openshift_version",
            openshift_version,
            "is not a version x.y or x.y.z",
            'write it as "4.21" or "4.21.3"',
        )
    elif not _version_matches(wanted, cluster.get("version")):
        problems.add(
            PLAY,
            "day2_openshift_version",
            openshift_version,
            "is not the version of %s: it runs %s" % (_where(cluster), cluster.get("version") or "an unknown version"),
            fix % "day2_openshift_version",
        )
