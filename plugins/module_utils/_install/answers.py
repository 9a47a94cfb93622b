# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Read what an agent (assisted-service) answers: its host in the cluster list, failing validations, newest event.

Pure code on the agent's JSON, field names as in the assisted-service swagger (``cluster.hosts``,
``host.requested_hostname``, ``host.inventory`` and ``host.validations_info``, both JSON strings,
``event.host_id``, ``event.event_time``). Anything malformed counts as absent.
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import normalize_mac


def find_host(
    clusters: Any, name: str, mac_address: str | None = None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Return ``(cluster, host)`` for the host called ``name`` in an agent's cluster list.

    In the add-nodes flow every node runs its own assisted-service with one cluster
    that holds only that node, so a cluster with a single host is taken even when
    the names differ (the hostname may not be set yet while discovering). A host
    matches by MAC address in its inventory, ``requested_hostname`` or inventory
    hostname. A cluster without ``hosts`` (the list was served without them) is
    returned with ``host`` None so the caller can fetch it.
    """
    clusters = [c for c in (clusters or []) if isinstance(c, dict)]
    for cluster in clusters:
        for host in cluster.get("hosts") or []:
            if _host_matches(host, name, mac_address):
                return cluster, host
    for cluster in clusters:
        hosts = cluster.get("hosts") or []
        if len(hosts) == 1:
            return cluster, hosts[0]
    for cluster in clusters:
        if "hosts" not in cluster:
            return cluster, None
    return (clusters[0], None) if clusters else (None, None)


def _host_matches(host: dict[str, Any], name: str, mac_address: str | None) -> bool:
    inventory = _json_object(host.get("inventory"))
    wanted = normalize_mac(mac_address)
    if wanted:
        for interface in inventory.get("interfaces") or []:
            if isinstance(interface, dict) and normalize_mac(interface.get("mac_address")) == wanted:
                return True
    return name in (host.get("requested_hostname"), inventory.get("hostname"))


def _json_object(text: Any) -> dict[str, Any]:
    """The agent sends several fields as JSON strings; an unreadable one counts as empty."""
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def failing_validations(validations_info: Any) -> dict[str, str]:
    """``{id: message}`` of the validations in status ``failure``, in the agent's order."""
    failing = {}
    for results in _json_object(validations_info).values():
        for result in results if isinstance(results, list) else []:
            if isinstance(result, dict) and result.get("status") == "failure":
                failing[str(result.get("id"))] = result.get("message") or ""
    return failing


def newest_event(events: Any, host_id: str | None = None) -> dict[str, Any] | None:
    """The newest event of a list (by ``event_time``; the later one in the list on a tie).

    Events of other hosts are skipped; events without ``host_id`` (cluster or
    infra-env events) are kept.
    """
    newest = None
    for event in events or []:
        if not isinstance(event, dict):
            continue
        if host_id and event.get("host_id") not in (None, "", host_id):
            continue
        if newest is None or str(event.get("event_time") or "") >= str(newest.get("event_time") or ""):
            newest = event
    return newest
