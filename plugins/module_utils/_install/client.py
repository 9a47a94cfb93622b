# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Poll the agents (assisted-service) of new hosts and drive the wait.

The agent API of a booted host is plain HTTP on ``<address>:8090`` under ``/api/assisted-install/v2``. The
token goes in the header its release reads (``token``): ``Authorization`` on 4.17, ``Watcher-Authorization``
from 4.18 (openshift/installer pkg/agent/rest.go@3075c3231aef1a206c4ce065b74b61187ecf6229 and
@013f25cacd773a040b1b2f40ff7d211314bbb8b0). When an agent refuses it (``token.is_refusal``) the same
request is sent once more in the other header; the header that worked is kept for that host and tried first
for the hosts not settled yet.

Per host and poll at most two requests are made: the cluster (``GET /clusters?with_hosts=true`` the first
time, then ``GET /clusters/{id}``) and its newest events (``GET /events?infra_env_id=...``); a third one in a
poll where the other header is tried. When the agent does not answer, one TLS handshake on the kubelet port
takes the place of the second request.

Only the standard library is used (http.client, ssl), so the module needs no extra Python package for this
part. Decisions live in ``progress``.
"""

from __future__ import annotations

import datetime
import http.client
import json
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import quote, urlencode

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import Deadline, utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.answers import find_host, newest_event
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.progress import (
    KUBELET_HANDSHAKE,
    KUBELET_INTERNAL_ERROR,
    HostProgress,
    Observation,
    round_verdict,
    timeout_message,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import (
    AgentToken,
    is_refusal,
    other_header,
    refusal_advice,
)

API_PREFIX = "/api/assisted-install/v2"
MAX_WORKERS = 32


def bracketed(address: str) -> str:
    """``address`` as the host part of a URL (an IPv6 address in brackets)."""
    return "[%s]" % address if ":" in address and not address.startswith("[") else address


def agent_url(address: str, port: int) -> str:
    """The agent API of a host, as this module reaches it."""
    return "http://%s:%d%s" % (bracketed(address), port, API_PREFIX)


class AgentRequestError(Day2Error):
    """A request to an agent failed. ``kind`` is one of the Observation kinds."""

    def __init__(self, kind: str, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status


def describe_connection_error(error: BaseException, timeout: float) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    if isinstance(error, socket.timeout):
        return "no answer within %s s" % timeout
    if isinstance(error, http.client.RemoteDisconnected):
        return "connection closed without a response"
    return "%s: %s" % (type(error).__name__, error)


def _error_text(body: bytes) -> str:
    """The message of an assisted-service error body (``infra_error.message`` or ``error.reason``)."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        data = None
    if isinstance(data, dict):
        return str(data.get("message") or data.get("reason") or "").strip()
    return body.decode("utf-8", "replace")[:200].strip() if isinstance(body, bytes) else ""


class AuthChoice:
    """The token and the header to send it in first, shared by the hosts of one run (thread-safe)."""

    def __init__(self, token: AgentToken, first_header: str | None = None) -> None:
        self.token = token
        self.first = first_header or self.token.header()
        self.accepted: str | None = None  # the header an agent accepted last
        self._lock = threading.Lock()

    def preferred(self) -> str:
        with self._lock:
            return self.accepted or self.first

    def accept(self, header: str) -> None:
        with self._lock:
            self.accepted = header


class AgentClient:
    """GET requests to one host's agent; ``requests`` counts every attempt, ``header`` is the one it accepted."""

    def __init__(self, address: str, port: int, auth: AuthChoice, timeout: float) -> None:
        self.address = address
        self.port = port
        self.timeout = timeout
        self.auth = auth
        self.header: str | None = None
        self.recovered: dict[str, Any] | None = None  # the refusal in the first header when the other one worked
        self.requests = 0
        self._may_switch = True

    def begin_poll(self) -> None:
        """Allow one try of the other header in this poll (this bounds the requests per poll)."""
        self._may_switch = True

    def _send(self, url: str, header: str) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection(self.address, self.port, timeout=self.timeout)
        self.requests += 1
        try:
            connection.request("GET", url, headers={header: self.auth.token.value, "Accept": "application/json"})
            response = connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            raise AgentRequestError("unreachable", describe_connection_error(error, self.timeout))
        finally:
            connection.close()

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        url = API_PREFIX + path + ("?" + urlencode(query) if query else "")
        header = self.header or self.auth.preferred()
        status, body = self._send(url, header)
        attempts = []
        if is_refusal(status, _error_text(body)):
            attempts.append((header, status, _error_text(body)))
            if self._may_switch:
                self._may_switch = False
                header = other_header(header)
                status, body = self._send(url, header)
                if is_refusal(status, _error_text(body)):
                    attempts.append((header, status, _error_text(body)))
                else:
                    refused_header, refused_status, refused_text = attempts[0]
                    self.recovered = {"header": refused_header, "status": refused_status, "message": refused_text}
                    attempts = []
        if attempts:
            raise AgentRequestError("rejected", self._refusal(path, attempts), status)
        # Any other answer got past the agent's authentication: keep this header for the host.
        self.header = header
        self.auth.accept(header)
        if status != 200:
            raise AgentRequestError("http_error", "HTTP %d on GET %s: %s" % (status, path, _error_text(body)), status)
        try:
            return json.loads(body)
        except ValueError:
            raise AgentRequestError("http_error", "GET %s answered 200 with a body that is not JSON" % path, status)

    def _refusal(self, path: str, attempts: list[tuple[str, int, str]]) -> str:
        """The refusal in every header tried, the token (never its value) and what to do."""
        tried = "; ".join(
            "in %s: HTTP %d on GET %s: %s" % (header, status, path, text or "(no message)")
            for header, status, text in attempts
        )
        return "%s. Token: %s. %s" % (
            tried,
            self.auth.token.describe(),
            refusal_advice(self.auth.token, [text for _h, _s, text in attempts]),
        )

    def list_clusters(self) -> Any:
        return self.get("/clusters", {"with_hosts": "true"})

    def get_cluster(self, cluster_id: str) -> Any:
        return self.get("/clusters/%s" % quote(str(cluster_id), safe=""))

    def list_events(self, infra_env_id: str | None = None, cluster_id: str | None = None) -> Any:
        query = {"infra_env_id": infra_env_id} if infra_env_id else {"cluster_id": cluster_id}
        return self.get("/events", query)


def kubelet_state(address: str, port: int, timeout: float) -> str | None:
    """How ``address:port`` answers a TLS handshake: ``handshake``, ``internal_error`` or None.

    Upstream's add-nodes monitor counts a kubelet as running when its handshake fails with the alert
    internal_error: a new node serves no certificate until its serving CSR is approved (openshift/installer
    pkg/agent/monitoraddnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c, isKubeletRunningOnNode). It also
    counts a certificate of an unknown authority; this probe does not verify the certificate, so such a kubelet
    completes the handshake. Nothing is sent over the connection; a refused connection costs nothing.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((address, port), timeout=timeout) as raw, context.wrap_socket(raw):
            return KUBELET_HANDSHAKE
    except ssl.SSLError as error:
        return KUBELET_INTERNAL_ERROR if getattr(error, "reason", None) == "TLSV1_ALERT_INTERNAL_ERROR" else None
    except OSError:
        return None


@dataclass
class HostPoller:
    """Polls one host; remembers the agent's ids so later polls ask for exactly this cluster."""

    client: AgentClient
    name: str
    mac_address: str | None = None
    kubelet_port: int = 10250
    kubelet_probes: int = field(default=0, init=False)
    cluster_id: str | None = field(default=None, init=False)

    @property
    def requests(self) -> int:
        return self.client.requests + self.kubelet_probes

    def poll(self) -> Observation:
        """One poll: at most two requests (or one request and one TLS handshake), three when the header changes."""
        self.client.begin_poll()
        try:
            cluster, host, complete = self._cluster_and_host()
        except AgentRequestError as error:
            if error.status == 404:
                self.cluster_id = None  # the agent restarted with a new cluster: list again
            kubelet = None
            if error.kind == "unreachable":
                # Also for a host never seen installing: it may have rebooted before this run started.
                self.kubelet_probes += 1
                kubelet = kubelet_state(self.client.address, self.kubelet_port, self.client.timeout)
            return Observation(error.kind, error.detail, kubelet=kubelet)
        event = None
        if cluster and host and not complete:
            try:
                events = self.client.list_events(host.get("infra_env_id"), cluster.get("id"))
                event = newest_event(events if isinstance(events, list) else [], host.get("id"))
            except AgentRequestError as error:
                if error.kind == "rejected":
                    return Observation(error.kind, error.detail)
                # The events only add the newest message; the host state is already known.
        recovered, self.client.recovered = self.client.recovered, None
        return Observation(
            "answered", cluster=cluster, host=host, event=event, header=self.client.header, recovered=recovered
        )

    def _cluster_and_host(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
        """``(cluster, host, budget_spent)``; budget_spent when two requests were needed."""
        if self.cluster_id:
            cluster = self.client.get_cluster(self.cluster_id)
            return cluster, find_host([cluster], self.name, self.mac_address)[1], False
        clusters = self.client.list_clusters()
        cluster, host = find_host(clusters if isinstance(clusters, list) else [], self.name, self.mac_address)
        if cluster is None:
            return None, None, False  # the agent is up but has not registered its cluster yet
        self.cluster_id = cluster.get("id")
        if host is None and "hosts" not in cluster and self.cluster_id:
            # This agent lists clusters without their hosts: read the one cluster instead.
            cluster = self.client.get_cluster(self.cluster_id)
            return cluster, find_host([cluster], self.name, self.mac_address)[1], True
        return cluster, host, False


class AgentWatch:
    """Polls every host concurrently, one round every ``wait_sleep`` seconds, until a verdict."""

    def __init__(
        self,
        hosts: list[dict[str, Any]],
        token: AgentToken,
        agent_port: int = 8090,
        kubelet_port: int = 10250,
        request_timeout: float = 5,
        first_header: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleeper: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime.datetime] = utcnow,
    ) -> None:
        self.progress = [HostProgress(h["name"], h["address"], agent_port, h.get("mac_address")) for h in hosts]
        self.auth = AuthChoice(token, first_header)
        self._pollers = {
            h["name"]: HostPoller(
                AgentClient(h["address"], agent_port, self.auth, request_timeout),
                h["name"],
                h.get("mac_address"),
                kubelet_port,
            )
            for h in hosts
        }
        self._clock = clock
        self._sleep = sleeper
        self._now = now
        self.polls = 0
        self.started: float | None = None

    @property
    def requests(self) -> int:
        return sum(poller.requests for poller in self._pollers.values())

    def run(
        self, until: str, wait: bool = True, wait_timeout: int = 3600, wait_sleep: int = 5, grace_seconds: int = 600
    ) -> tuple[str | None, dict[str, Any]]:
        """Return ``(failure message or None, result)``. ``wait=False`` polls once."""
        deadline = Deadline(wait_timeout, self._clock, self._sleep)
        self.started = deadline.started
        with ThreadPoolExecutor(max_workers=max(1, min(MAX_WORKERS, len(self.progress)))) as pool:
            while True:
                polled = [p for p in self.progress if not (wait and p.reached(until))]
                self._poll_round(pool, polled)
                verdict, message = round_verdict(self.progress, polled, until, grace_seconds, self._now())
                if verdict == "failed":
                    return message, self.result(until)
                if verdict == "done" or not wait:
                    return None, self.result(until)
                if deadline.expired():
                    return timeout_message(self.progress, until, wait_timeout), self.result(until)
                # Rounds start on a fixed cadence, so slow answers do not stretch the interval.
                deadline.sleep(deadline.started + self.polls * wait_sleep - self._clock())

    def _poll_round(self, pool: ThreadPoolExecutor, polled: list[HostProgress]) -> None:
        self.polls += 1
        futures = [(p, pool.submit(self._poll_one, p)) for p in polled]
        for progress, future in futures:
            observation, seen_at = future.result()
            progress.observe(observation, seen_at)

    def _poll_one(self, progress: HostProgress) -> tuple[Observation, datetime.datetime]:
        observation = self._pollers[progress.name].poll()
        return observation, self._now()

    def result(self, until: str) -> dict[str, Any]:
        return {
            "hosts": {p.name: p.result(until) for p in self.progress},
            "duration": round(self._clock() - self.started, 1) if self.started is not None else 0.0,
            "polls": self.polls,
            "requests": self.requests,
            "auth_header": self.auth.accepted,
        }
