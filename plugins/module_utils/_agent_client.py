# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Poll the agents (assisted-service) of new hosts and drive the wait.

The agent API of a booted host is plain HTTP on ``<address>:8090`` under
``/api/assisted-install/v2`` and takes the ``agentAuthToken`` in the
``Watcher-Authorization`` header. Per host and poll at most two requests are
made: the cluster (``GET /clusters?with_hosts=true`` the first time, then
``GET /clusters/{id}``) and its newest events (``GET /events?infra_env_id=...``).
When the agent is gone after the host started installing, one TLS handshake on
the kubelet port takes the place of the second request.

Only the standard library is used (http.client, ssl), so the module needs no
extra Python package for this part. Decisions live in ``_agent_progress``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.client
import json
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlencode

from ansible_collections.openshift_agent.day2.plugins.module_utils._clock import Deadline, utcnow
from ansible_collections.openshift_agent.day2.plugins.module_utils._agent_progress import (
    HostProgress,
    Observation,
    find_host,
    newest_event,
    round_verdict,
    timeout_message,
)

API_PREFIX = "/api/assisted-install/v2"
MAX_WORKERS = 32


class AgentRequestError(Exception):
    """A request to an agent failed. ``kind`` is one of the Observation kinds."""

    def __init__(self, kind, detail, status=None):
        super(AgentRequestError, self).__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status


def describe_connection_error(error, timeout):
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    if isinstance(error, socket.timeout):
        return "no answer within %s s" % timeout
    if isinstance(error, http.client.RemoteDisconnected):
        return "connection closed without a response"
    return "%s: %s" % (type(error).__name__, error)


def _error_text(body):
    """The message of an assisted-service error body (``infra_error.message`` or ``error.reason``)."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        data = None
    if isinstance(data, dict):
        return data.get("message") or data.get("reason") or ""
    return body.decode("utf-8", "replace")[:200] if isinstance(body, bytes) else ""


class AgentClient:
    """GET requests to one host's agent; ``requests`` counts every attempt."""

    def __init__(self, address, port, token, timeout):
        self.address = address
        self.port = port
        self.timeout = timeout
        self._token = token
        self.requests = 0

    def get(self, path, query=None):
        url = API_PREFIX + path + ("?" + urlencode(query) if query else "")
        headers = {"Watcher-Authorization": self._token, "Accept": "application/json"}
        connection = http.client.HTTPConnection(self.address, self.port, timeout=self.timeout)
        self.requests += 1
        try:
            connection.request("GET", url, headers=headers)
            response = connection.getresponse()
            status, body = response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            raise AgentRequestError("unreachable", describe_connection_error(error, self.timeout))
        finally:
            connection.close()
        if status in (401, 403):
            raise AgentRequestError("rejected", "HTTP %d on GET %s: %s" % (status, path, _error_text(body)), status)
        if status != 200:
            raise AgentRequestError("http_error", "HTTP %d on GET %s: %s" % (status, path, _error_text(body)), status)
        try:
            return json.loads(body)
        except ValueError:
            raise AgentRequestError("http_error", "GET %s answered 200 with a body that is not JSON" % path, status)

    def list_clusters(self):
        return self.get("/clusters", {"with_hosts": "true"})

    def get_cluster(self, cluster_id):
        return self.get("/clusters/%s" % quote(str(cluster_id), safe=""))

    def list_events(self, infra_env_id=None, cluster_id=None):
        query = {"infra_env_id": infra_env_id} if infra_env_id else {"cluster_id": cluster_id}
        return self.get("/events", query)


def answers_tls(address, port, timeout):
    """Whether ``address:port`` completes a TLS handshake.

    The certificate is deliberately not verified: the kubelet of a new node serves a
    self-signed certificate until its serving CSR is approved, and all we learn
    here is that the installed system is up. Nothing is sent over the connection.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((address, port), timeout=timeout) as raw:
            with context.wrap_socket(raw) as tls:
                return tls.version() is not None
    except (OSError, ssl.SSLError):
        return False


class HostPoller:
    """Polls one host; remembers the agent's ids so later polls ask for exactly this cluster."""

    def __init__(self, client, name, mac_address=None, kubelet_port=10250):
        self.client = client
        self.name = name
        self.mac_address = mac_address
        self.kubelet_port = kubelet_port
        self.kubelet_probes = 0
        self.cluster_id = None

    @property
    def requests(self):
        return self.client.requests + self.kubelet_probes

    def poll(self, probe_kubelet):
        """One poll: at most two requests (or one request and one TLS handshake)."""
        try:
            cluster, host, complete = self._cluster_and_host()
        except AgentRequestError as error:
            if error.status == 404:
                self.cluster_id = None  # the agent restarted with a new cluster: list again
            kubelet = None
            if error.kind == "unreachable" and probe_kubelet:
                self.kubelet_probes += 1
                kubelet = answers_tls(self.client.address, self.kubelet_port, self.client.timeout)
            return Observation(error.kind, error.detail, kubelet_tls=kubelet)
        event = None
        if host and not complete:
            try:
                events = self.client.list_events(host.get("infra_env_id"), cluster.get("id"))
                event = newest_event(events if isinstance(events, list) else [], host.get("id"))
            except AgentRequestError as error:
                if error.kind == "rejected":
                    return Observation(error.kind, error.detail)
                # The events only add the newest message; the host state is already known.
        return Observation("answered", cluster=cluster, host=host, event=event)

    def _cluster_and_host(self):
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

    def __init__(self, hosts, token, agent_port=8090, kubelet_port=10250, request_timeout=5,
                 clock=time.monotonic, sleeper=time.sleep, now=utcnow):
        self.progress = [
            HostProgress(h["name"], h["address"], agent_port, h.get("mac_address")) for h in hosts
        ]
        self._pollers = dict(
            (h["name"], HostPoller(AgentClient(h["address"], agent_port, token, request_timeout),
                                   h["name"], h.get("mac_address"), kubelet_port))
            for h in hosts
        )
        self._clock = clock
        self._sleep = sleeper
        self._now = now
        self.polls = 0
        self.started = None

    @property
    def requests(self):
        return sum(poller.requests for poller in self._pollers.values())

    def run(self, until, wait=True, wait_timeout=3600, wait_sleep=5, grace_seconds=600):
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

    def _poll_round(self, pool, polled):
        self.polls += 1
        futures = [(p, pool.submit(self._poll_one, p)) for p in polled]
        for progress, future in futures:
            observation, seen_at = future.result()
            progress.observe(observation, seen_at)

    def _poll_one(self, progress):
        observation = self._pollers[progress.name].poll(progress.wants_kubelet_probe())
        return observation, self._now()

    def result(self, until):
        return {
            "hosts": dict((p.name, p.result(until)) for p in self.progress),
            "duration": round(self._clock() - self.started, 1) if self.started is not None else 0.0,
            "polls": self.polls,
            "requests": self.requests,
        }
