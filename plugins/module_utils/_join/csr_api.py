# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""CSRs and Nodes through kubernetes.core's client: list, get, approve, and a streaming watch of the CSR list.

CsrApprover talks to the cluster only through an object with the five methods of KubeCsrApi (list_csrs,
list_nodes, get_csr, approve, watch_csrs); the unit tests pass a scripted fake. No Ansible import.
"""

from __future__ import annotations

import copy
import datetime
import email.utils
import json
import time
from collections.abc import Iterator
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    API_ERRORS,
    ApiClient,
    Target,
    core_target,
    describe_api_error,
    group_target,
    with_query,
)

APPROVAL_REASON = "OpenshiftAgentDay2Approved"
CSR_LIST = group_target("certificates.k8s.io", "v1", "certificatesigningrequests")
NODE_LIST = core_target("nodes")
MERGE_PATCH = "application/merge-patch+json"  # RFC 7386, as kubectl patch --type merge sends it
# Seconds to wait for the watch connection; reading allows timeoutSeconds plus this grace.
WATCH_CONNECT_TIMEOUT = 10
WATCH_READ_GRACE = 10
# What a broken stream raises: what any API request raises, and a garbled line.
STREAM_ERRORS: tuple[type[BaseException], ...] = (*API_ERRORS, ValueError)
# What reading the server's Date header raises: a failed request, no or a garbled header.
DATE_ERRORS: tuple[type[BaseException], ...] = (*STREAM_ERRORS, TypeError, IndexError)


class WatchBroken(Day2Error):
    """The CSR watch ended abnormally (cut, 410 Gone, ERROR event); status when known."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class CsrCache:
    """Every CSR object of the cluster by name, kept current by a list and the watch events that follow it."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.resource_version: str | None = None  # where the next watch starts

    def replace(self, items: list[dict[str, Any]], resource_version: str | None) -> None:
        """Start over from a list."""
        self.objects = by_name(items)
        self.resource_version = resource_version

    def apply(self, event: dict[str, Any]) -> bool:
        """Update the cache from one watch event; True when a decision may change."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            # The server reports an expired resourceVersion (410) and other failures this way.
            raise WatchBroken("the CSR watch reported an error: %s" % (obj.get("message") or obj), obj.get("code"))
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            self.resource_version = resource_version
        name = _name(obj)
        if kind == "BOOKMARK" or not name:
            return False
        if kind == "DELETED":
            return self.objects.pop(name, None) is not None
        previous = self.objects.get(name)
        if previous is not None and len(_conditions(obj)) < len(_conditions(previous)):
            # Conditions are only ever added: this event predates what we hold, for example
            # a replayed update from before our own approval. Keep the newer object.
            return False
        self.objects[name] = obj
        if kind == "ADDED" or previous is None:
            return True
        # Our own approval is already in the cache; a new certificate alone changes no decision.
        return _conditions(previous) != _conditions(obj)


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """API objects by metadata.name (objects without a name are dropped)."""
    return {_name(obj): obj for obj in items if _name(obj)}


def _name(obj: dict[str, Any] | None) -> str:
    return ((obj or {}).get("metadata") or {}).get("name") or ""


def _conditions(obj: dict[str, Any] | None) -> list[Any]:
    return ((obj or {}).get("status") or {}).get("conditions") or []


class KubeCsrApi:
    """CSRs and Nodes: ApiClient for plain requests, the DynamicClient itself for the streaming watch."""

    def __init__(self, client: ApiClient, dynamic_client: Any) -> None:
        self._client = client
        self._dynamic_client = dynamic_client

    def list_csrs(self) -> tuple[list[dict[str, Any]], str | None]:
        """Every CSR object and the list's resourceVersion (where a watch starts)."""
        data = self._client.request("GET", CSR_LIST) or {}
        return data.get("items") or [], (data.get("metadata") or {}).get("resourceVersion")

    def list_nodes(self) -> list[dict[str, Any]]:
        return (self._client.request("GET", NODE_LIST) or {}).get("items") or []

    def get_csr(self, name: str) -> dict[str, Any] | None:
        return self._client.get(group_target("certificates.k8s.io", "v1", "certificatesigningrequests", name))

    def approve(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        target = Target(
            CSR_LIST.path + "/%s/approval" % name,
            "update",
            "certificatesigningrequests/approval",
            "certificates.k8s.io",
            name,
        )
        return self._client.request("PUT", target, body=body)

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of a Node (its labels and taints: ``node_marks``)."""
        target = core_target("nodes", name, verb="patch")
        return self._client.request("PATCH", target, body=patch, content_type=MERGE_PATCH)

    def server_offset(self) -> float | None:
        """Seconds the API server's clock is ahead of this one (from the ``Date`` header of GET /version,
        to about a second), or None when it cannot be told. CSR creation times are the server's clock."""
        try:
            before = time.time()
            response = self._dynamic_client.request("GET", "/version", serialize=False)
            after = time.time()
            headers = getattr(response, "headers", None) or {}
            date = email.utils.parsedate_to_datetime(headers.get("Date") or headers.get("date") or "")
        except DATE_ERRORS:
            return None
        # The header has whole seconds: the server's time was within [date, date + 1).
        return date.timestamp() + 0.5 - (before + after) / 2

    def watch_csrs(self, resource_version: str, timeout_seconds: int) -> Iterator[dict[str, Any]]:
        """Yield watch events (dicts with type and object) until the server ends the watch.

        The request streams (the kubernetes client does not preload the body of DynamicClient.request), so each
        event is handled as soon as its line arrives. Any transport or HTTP failure becomes WatchBroken.
        """
        target = with_query(
            Target(CSR_LIST.path, "watch", CSR_LIST.resource, CSR_LIST.group),
            watch="true",
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true",
        )
        try:
            # serialize=False: the raw urllib3 response, whose body has not been read yet.
            response = self._dynamic_client.request(
                "GET",
                target.path,
                serialize=False,
                _request_timeout=(WATCH_CONNECT_TIMEOUT, timeout_seconds + WATCH_READ_GRACE),
            )
        except STREAM_ERRORS as error:
            described = describe_api_error(error, target, self._client.api_url)
            raise WatchBroken(described.message, described.status)
        return _watch_events(response)


def _watch_events(response: Any) -> Iterator[dict[str, Any]]:
    buffered = b""
    try:
        for chunk in response.stream(amt=None):
            buffered += chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                if line.strip():
                    yield json.loads(line.decode("utf-8"))
    except STREAM_ERRORS as error:
        raise WatchBroken("the CSR watch broke: %s" % error)
    finally:
        # Close before releasing: an unread chunked body must not go back to the pool.
        response.close()
        release = getattr(response, "release_conn", None)
        if release is not None:
            release()


def approval_body(obj: dict[str, Any], message: str, now: datetime.datetime) -> dict[str, Any]:
    """The CSR object with an Approved condition added, as PUT .../approval expects it."""
    body = copy.deepcopy(obj)
    status = body.setdefault("status", {})
    status["conditions"] = [
        *list(status.get("conditions") or []),
        {
            "type": "Approved",
            "status": "True",
            "reason": APPROVAL_REASON,
            "message": message,
            "lastUpdateTime": format_rfc3339(now),
        },
    ]
    return body
