# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent (assisted-service) every host booted from the ISO runs, and the kubelet of the installed system.

The agent API is plain HTTP on ``<address>:8090`` under ``/api/assisted-install/v2``; the token goes in the header
``token`` chooses, and when the agent refuses it the request is sent once more in the other header (the header
that worked is kept for that host and tried first for the others). A poll makes at most two requests, the cluster
(``GET /clusters?with_hosts=true`` the first time, then ``GET /clusters/{id}``) and its newest events; when the
agent does not answer, one TLS handshake on the kubelet port takes the place of the second. Only the standard
library is used (http.client, ssl). ``HostProgress`` folds the polls of one host into where it stands.

Field names follow the assisted-service swagger (``cluster.hosts``, ``host.progress.current_stage``,
``host.validations_info`` and ``host.inventory`` as JSON strings, ``event.event_time``). Stages and statuses:
the ``host-stage`` enum has 12 values on 4.17-4.20 (openshift/assisted-service
swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd .. @4e399454ffb97a17837bb2362518f5442f7dd086) and 4.21 adds
``Copying registry data to disk`` (swagger.yaml@3977af16577a830b9c9c8822fe8f2925b38eac9c); the host ``status``
enum has the same 28 values on 4.17-4.21. A day-2 worker reports ``Starting installation``, ``Installing``,
``Writing image to disk``, ``Waiting for control plane`` and ``Rebooting`` (openshift/assisted-installer
src/installer/installer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267), and the service stores that ``Rebooting`` as
``Done`` at 100 %, the host going to ``added-to-existing-cluster`` (openshift/assisted-service
internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd). An unknown status counts as discovered, an unknown
stage adds nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import http.client
import json
import socket
import ssl
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote, urlencode, urlsplit

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import normalize_mac, proxy_for
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import token as tokens

API_PREFIX = "/api/assisted-install/v2"
# How far a host got, in the order it passes the targets of agent_wait's ``until``; a level is an index + 1.
TARGETS = ("discovered", "validated", "installing", "rebooted")
DISCOVERED, VALIDATED, INSTALLING, REBOOTED = 1, 2, 3, 4
FAILED_STAGE = "Failed"
PENDING_USER_ACTION = "installing-pending-user-action"
# The disk is written: the virtual CD may go.
DISK_WRITTEN_STAGES = ("Rebooting", "Waiting for ignition", "Configuring", "Joined", "Done")
# Every host-stage and how far it gets a host: the stages up to "Copying registry data to disk" run the
# installation ("Waiting for control plane" comes after the disk is written for a day-2 worker, before the reboot);
# from "Rebooting" on the disk is written and the host boots from it. "Failed" adds nothing.
INSTALL_STAGES = (
    "Starting installation",
    "Waiting for control plane",
    "Waiting for bootkube",
    "Waiting for controller",
    "Installing",
    "Writing image to disk",
    "Copying registry data to disk",
)
STAGE_LEVEL = {**dict.fromkeys(INSTALL_STAGES, INSTALLING), **dict.fromkeys(DISK_WRITTEN_STAGES, REBOOTED)}
STAGE_LEVEL[FAILED_STAGE] = 0
# The statuses that say more than "the agent knows its host"; preparing-failed goes back to known.
STATUS_LEVEL = {
    "known": VALIDATED,
    "preparing-failed": VALIDATED,
    "preparing-for-installation": INSTALLING,
    "preparing-successful": INSTALLING,
    "installing": INSTALLING,
    "installing-in-progress": INSTALLING,
    PENDING_USER_ACTION: INSTALLING,
    "installed": REBOOTED,
    "added-to-existing-cluster": REBOOTED,
}
FAILED_STATUSES = ("error", "cancelled")
FAILED_CLUSTER_STATUSES = ("error", "cancelled", PENDING_USER_ACTION)

# One entry of a host's timeline: when, and the status, stage, percentage and note it then had.
TIMELINE_FIELDS = ("time", "status", "stage", "percentage", "event")
KUBELET_TEXT = {
    "handshake": "the kubelet answers TLS",
    "internal_error": "the kubelet aborts TLS with alert internal_error (its serving certificate is not approved yet)",
    "cluster": "the cluster's monitor sees its kubelet running",
}
BOOT_ORDER_ADVICE = (
    "the host booted the ISO again after writing the disk: eject the virtual media or fix the boot order so it "
    "boots from disk"
)
NEVER_ANSWERED = (
    "never answered: not booted, booted a wrong ISO (another cluster, MAC not in the ISO, expired token) or "
    "unreachable at %s:%s"
)


def level_of(status: str | None, stage: str | None) -> int:
    """How far a host with this status and install stage got: 0 (unknown) up to REBOOTED."""
    level = STATUS_LEVEL.get(status, DISCOVERED) if status else 0
    return max(level, STAGE_LEVEL.get(stage, 0) if stage else 0)


def bracketed(address: str) -> str:
    """``address`` as the host part of a URL (an IPv6 address in brackets)."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def agent_url(address: str, port: int) -> str:
    return "http://%s:%d%s" % (bracketed(address), port, API_PREFIX)


def json_object(text: Any) -> dict[str, Any]:
    """The agent sends several fields as JSON strings; an unreadable one counts as empty."""
    if isinstance(text, dict):
        return text
    with contextlib.suppress(TypeError, ValueError):
        value = json.loads(text) if text else {}
        return value if isinstance(value, dict) else {}
    return {}


def find_host(clusters: Any, name: str, mac: str | None = None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(cluster, host)`` of the host called ``name`` in an agent's cluster list. Every added node runs its own
    assisted-service with one cluster holding only that node, so a cluster with one host is taken even when the
    names differ (no hostname yet while discovering); a host matches by MAC in its inventory, requested_hostname or
    inventory hostname. A cluster listed without ``hosts`` comes back with host None, for the caller to fetch."""
    clusters = [c for c in (clusters or []) if isinstance(c, dict)]
    wanted = normalize_mac(mac)
    for cluster in clusters:
        for host in cluster.get("hosts") or []:
            inventory = json_object(host.get("inventory"))
            interfaces = [i for i in inventory.get("interfaces") or [] if isinstance(i, dict)]
            macs = {normalize_mac(i.get("mac_address")) for i in interfaces}
            if (wanted and wanted in macs) or name in (host.get("requested_hostname"), inventory.get("hostname")):
                return cluster, host
    for cluster in clusters:
        if len(cluster.get("hosts") or []) == 1:
            return cluster, cluster["hosts"][0]
    unlisted = [cluster for cluster in clusters if "hosts" not in cluster]
    return (unlisted or clusters or [None])[0], None


def failing_validations(validations_info: Any) -> dict[str, str]:
    """``{id: message}`` of the validations in status ``failure``, in the agent's order."""
    failing = {}
    for results in json_object(validations_info).values():
        for result in results if isinstance(results, list) else []:
            if isinstance(result, dict) and result.get("status") == "failure":
                failing[str(result.get("id"))] = result.get("message") or ""
    return failing


def newest_event(events: Any, host_id: str | None = None) -> dict[str, Any] | None:
    """The newest event (by event_time, the later one on a tie), skipping other hosts' events."""
    events = events if isinstance(events, list) else []
    mine = [e for e in events if isinstance(e, dict) and (not host_id or e.get("host_id") in (None, "", host_id))]
    # max keeps the first of equal ones: reversed, the later one in the list wins a tie
    return max(reversed(mine), key=lambda event: str(event.get("event_time") or ""), default=None)


def kubelet_state(address: str, port: int, timeout: float) -> str | None:
    """How ``address:port`` answers a TLS handshake: ``handshake``, ``internal_error`` or None.

    A new kubelet serves no certificate until its serving CSR is approved and aborts the handshake with the alert
    internal_error, which upstream's add-nodes monitor counts as running (openshift/installer
    pkg/agent/monitoraddnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c, isKubeletRunningOnNode). The certificate
    is not verified and nothing is sent. A proxy that applies (``net.proxy_for``) carries it through CONNECT.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    proxy = proxy_for("https://%s:%d/" % (bracketed(address), port))
    try:
        if proxy:
            tunnel = http.client.HTTPSConnection(*_proxy_address(proxy), timeout=timeout, context=context)
            tunnel.set_tunnel(address, port)
            tunnel.connect()
            tunnel.close()
            return "handshake"
        with socket.create_connection((address, port), timeout=timeout) as raw, context.wrap_socket(raw):
            return "handshake"
    except ssl.SSLError as error:
        return "internal_error" if getattr(error, "reason", None) == "TLSV1_ALERT_INTERNAL_ERROR" else None
    except OSError:
        return None


def _proxy_address(proxy: str) -> tuple[str, int]:
    parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
    return parts.hostname or "", parts.port or 80


class AgentRequestError(Day2Error):
    """A request to an agent failed; ``kind`` is an Observation kind."""

    def __init__(self, kind: str, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.status = kind, detail, status


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return body.decode("utf-8", "replace")[:200].strip() if isinstance(body, bytes) else ""
    return str(data.get("message") or data.get("reason") or "").strip() if isinstance(data, dict) else ""


def _connection_error(error: BaseException, timeout: float) -> str:
    """How a failed request to an agent reads, by the exception's type (the first that matches)."""
    texts: dict[type, str] = {ConnectionRefusedError: "connection refused", ConnectionResetError: "connection reset"}
    texts[socket.timeout] = f"no answer within {timeout} s"
    return next((text for kind, text in texts.items() if isinstance(error, kind)), f"{type(error).__name__}: {error}")


class AuthChoice:
    """The token and the header to send it in first, shared by the hosts of one run: ``accepted``, the header an
    agent last took, is tried first by the others (the polling threads only read and set it whole, which needs no
    lock)."""

    def __init__(self, token: tokens.AgentToken, first_header: str | None = None) -> None:
        self.token = token
        self.first = first_header or token.header()
        self.accepted: str | None = None


@dataclass(frozen=True)
class Observation:
    """What one poll of one host saw: ``kind`` answered, unreachable, rejected (the token refused in every header
    tried) or http_error; the agent's cluster, host and newest event; the header it took; the refusal of the first
    header when the other one then worked; how the kubelet port answered (handshake, internal_error or None)."""

    kind: str
    detail: str | None = None
    cluster: dict[str, Any] | None = None
    host: dict[str, Any] | None = None
    event: dict[str, Any] | None = None
    kubelet: str | None = None
    header: str | None = None
    recovered: dict[str, Any] | None = None
    at: datetime.datetime | None = None  # when the agent said it, if not at the poll (the cluster's monitor's log)


class AgentClient:
    """Polls one host's agent (``requests`` counts every attempt); remembers its cluster id."""

    def __init__(
        self, name: str, address: str, mac: str | None, ports: tuple[int, int], auth: AuthChoice | None, timeout: float
    ) -> None:
        self.name, self.address, self.mac = name, address, mac
        self.port, self.kubelet_port = ports
        self.auth, self.timeout = auth, timeout
        self.header: str | None = None
        self.cluster_id: str | None = None
        self.requests = 0
        self._recovered: dict[str, Any] | None = None
        self._may_switch = True

    def _send(self, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
        absolute = "http://%s:%d%s" % (bracketed(self.address), self.port, url)
        proxy = proxy_for(absolute)  # a proxy takes the whole URL in the request line
        host, port = _proxy_address(proxy) if proxy else (self.address, self.port)
        connection = http.client.HTTPConnection(host, port, timeout=self.timeout)
        self.requests += 1
        try:
            connection.request("GET", absolute if proxy else url, headers=dict(headers, Accept="application/json"))
            response = connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            through = f" (through the proxy {proxy}: set NO_PROXY to reach it directly)" if proxy else ""
            raise AgentRequestError("unreachable", _connection_error(error, self.timeout) + through)
        finally:
            connection.close()

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        auth = cast(AuthChoice, self.auth)  # poll asks the agent only with a token
        url = API_PREFIX + path + ("?" + urlencode(query) if query else "")
        header = self.header or auth.accepted or auth.first
        refused = []
        while True:
            status, body = self._send(url, {header: auth.token.value})
            text = _error_text(body)
            if not tokens.is_refusal(status, text):
                break
            refused.append((header, status, text))
            if not self._may_switch:  # one switch per poll bounds the requests
                tried = "; ".join(f"in {h}: HTTP {s} on GET {path}: {t or '(no message)'}" for h, s, t in refused)
                advice = tokens.refusal_advice(auth.token, [t for _h, _s, t in refused])
                raise AgentRequestError("rejected", f"{tried}. Token: {auth.token.describe()}. {advice}", status)
            self._may_switch = False
            header = tokens.other_header(header)
        if refused:  # the other header worked: remember the refusal of the first
            self._recovered = dict(zip(("header", "status", "message"), refused[0]))
        self.header = auth.accepted = header  # any other answer got past the agent's authentication
        if status != 200:
            raise AgentRequestError("http_error", "HTTP %d on GET %s: %s" % (status, path, text), status)
        try:
            return json.loads(body)
        except ValueError:
            raise AgentRequestError("http_error", f"GET {path} answered 200 with a body that is not JSON", status)

    def poll(self) -> Observation:
        """One poll of the agent, or of the kubelet when the agent does not answer (or there is no token)."""
        if self.auth is None:
            kubelet = kubelet_state(self.address, self.kubelet_port, self.timeout)
            return Observation("unreachable", "not asked (no agent token)", kubelet=kubelet)
        self._may_switch = True
        try:
            cluster, host, spent = self._cluster_and_host()
        except AgentRequestError as error:
            if error.status == 404:
                self.cluster_id = None  # the agent restarted with a new cluster: list again
            asked = error.kind == "unreachable"  # also for a host never seen installing: it may have rebooted
            kubelet = kubelet_state(self.address, self.kubelet_port, self.timeout) if asked else None
            return Observation(error.kind, error.detail, kubelet=kubelet)
        event = None
        if cluster and host and not spent:
            try:
                infra_env = host.get("infra_env_id")
                scope = {"infra_env_id": infra_env} if infra_env else {"cluster_id": cluster.get("id")}
                event = newest_event(self.get("/events", scope), host.get("id"))
            except AgentRequestError as error:
                if error.kind == "rejected":
                    return Observation(error.kind, error.detail)
        recovered, self._recovered = self._recovered, None
        return Observation("answered", cluster=cluster, host=host, event=event, header=self.header, recovered=recovered)

    def _cluster_and_host(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
        listed = not self.cluster_id  # the list is one request: the cluster read after it spends the poll's second
        if listed:
            cluster, host = find_host(self.get("/clusters", {"with_hosts": "true"}), self.name, self.mac)
            if cluster is None:
                return None, None, False  # the agent is up but has not registered its cluster yet
            self.cluster_id = cluster.get("id")
            if host is not None or "hosts" in cluster or not self.cluster_id:
                return cluster, host, False
        cluster = self.get(f"/clusters/{quote(str(self.cluster_id), safe='')}")
        return cluster, find_host([cluster], self.name, self.mac)[1], listed


class HostProgress:
    """Everything the polls of one host told: status, stage, failing validations, how far it got, a timeline."""

    def __init__(self, name: str, address: str, agent_port: int) -> None:
        self.name, self.address, self.agent_port = name, address, agent_port
        self.status: str | None = None
        self.status_info: str | None = None
        self.stage: str | None = None
        self.percentage: int | None = None
        self.cluster_status: str | None = None
        self.cluster_status_info: str | None = None
        self.last_event: str | None = None
        self.failing: dict[str, dict[str, Any]] = {}  # id -> {message, since}
        self.timeline: list[dict[str, Any]] = []
        self.unreachable_since: datetime.datetime | None = None
        self.unreachable_reason: str | None = None
        self.agent_error: str | None = None
        self.rejected: str | None = None
        self.auth_header: str | None = None
        self.auth_refused: dict[str, Any] | None = None
        self.kubelet: str | None = None
        self.last_answer: datetime.datetime | None = None  # when the live ISO's agent last answered
        self.answered = False
        self.level = 0
        self._last: tuple[Any, ...] | None = None

    def observe(self, seen: Observation, now: datetime.datetime) -> None:
        """Fold one poll taken at ``now`` into the state."""
        if seen.kind == "unreachable":
            self.unreachable_since = self.unreachable_since or now
            self.unreachable_reason = seen.detail
            note: str | None = "the agent does not answer"
            if seen.kubelet:  # the agent runs from the ISO: once the disk is written the installed system answers
                self.kubelet = seen.kubelet
                how = KUBELET_TEXT.get(seen.kubelet, seen.kubelet)
                note = f"{how}: the host {'' if self.level >= INSTALLING else 'already '}rebooted from its disk"
                self.level = REBOOTED
        else:
            self.answered = True
            self.unreachable_since = self.unreachable_reason = None
            self.rejected = seen.detail if seen.kind == "rejected" else None
            self.agent_error = seen.detail if seen.kind == "http_error" else None
            notes = {"rejected": "the agent refused the token", "http_error": f"the agent answered: {seen.detail}"}
            note = notes.get(seen.kind)
            if seen.kind == "answered":
                self._answered(seen, now)
                note = self.last_event
        self._record(note, now)

    def _answered(self, seen: Observation, now: datetime.datetime) -> None:
        self.last_answer = seen.at or now
        self.auth_header = seen.header or self.auth_header
        if seen.cluster:
            self.cluster_status, self.cluster_status_info = seen.cluster.get("status"), seen.cluster.get("status_info")
        if seen.host:
            progress = seen.host.get("progress") or {}
            self.status, self.status_info = seen.host.get("status"), seen.host.get("status_info")
            self.stage = progress.get("current_stage") or None
            self.percentage = progress.get("installation_percentage")
            failing = failing_validations(seen.host.get("validations_info"))
            # A validation keeps the time it was first seen failing until it passes again.
            self.failing = {
                v: {"message": m, "since": self.failing.get(v, {}).get("since") or now} for v, m in failing.items()
            }
            self.level = max(self.level, level_of(self.status, self.stage))
        if seen.event:
            self.last_event = seen.event.get("message")
        if seen.recovered:
            self.auth_refused = seen.recovered
            refused = "the agent refused the token in {header} (HTTP {status}: {message})".format(**seen.recovered)
            self._record(f"{refused}; it accepted it in {self.auth_header}", now)

    def _record(self, note: str | None, now: datetime.datetime) -> None:
        key = (self.status, self.stage, self.percentage, note)
        if key != self._last:
            self._last = key
            self.timeline.append(dict(zip(TIMELINE_FIELDS, (format_rfc3339(now), *key))))

    @property
    def disk_written(self) -> bool:
        return self.stage in DISK_WRITTEN_STAGES or self.kubelet is not None

    def reached(self, target: str) -> bool:
        return self.level >= TARGETS.index(target) + 1

    def phase(self) -> str:
        return TARGETS[self.level - 1] if self.level else "waiting"

    def _where(self) -> str:
        stage = f" at stage {self.stage}" if self.stage else ""
        return stage + (f" ({self.percentage}%)" if self.stage and self.percentage is not None else "")

    def failure(self, grace: int, now: datetime.datetime, target: str = "rebooted") -> str | None:
        """Why this host cannot get further, or None. A failing validation only matters for a host that has not
        reached ``target`` nor started installing, after ``grace`` seconds: some pass late on a healthy host."""
        where = f"host {self.name} ({self.address})"
        if self.rejected:
            return f"{where}: the agent at {self.address}:{self.agent_port} refused the token: {self.rejected}."
        if self.status == PENDING_USER_ACTION:
            return f"{where} is in status {self.status}{self._where()}: {self.status_info or ''}. {BOOT_ORDER_ADVICE}."
        if self.status in FAILED_STATUSES or self.stage == FAILED_STAGE:
            event = f"; last agent event: {self.last_event}" if self.last_event else ""
            return (
                f"{where} failed: status {self.status}{self._where()}: {self.status_info or '(no status_info)'}{event}"
            )
        if self.cluster_status in FAILED_CLUSTER_STATUSES:
            advice = f" {BOOT_ORDER_ADVICE}." if self.cluster_status == PENDING_USER_ACTION else ""
            return (
                f"{where}: the agent's cluster is in status {self.cluster_status}: "
                f"{self.cluster_status_info or '(no status_info)'}.{advice}"
            )
        cutoff = now - datetime.timedelta(seconds=grace)
        expired = [(f["since"], v, f["message"]) for v, f in self.failing.items() if f["since"] <= cutoff]
        if self.level >= INSTALLING or self.reached(target) or not expired:
            return None
        since, vid, message = min(expired)
        more = f"; {len(self.failing) - 1} more failing validation(s) in the result" if len(self.failing) > 1 else ""
        return (
            f"{where}: validation {vid} has been failing since {format_rfc3339(since)} (longer than validation_grace "
            f"{grace} s): {message}{more} (host status {self.status}: {self.status_info or ''})"
        )

    def describe(self) -> str:
        """One line for a timeout message: where this host is."""
        if not self.answered:
            last = f" (last attempt: {self.unreachable_reason})" if self.unreachable_reason else ""
            return f"{self.name}: {NEVER_ANSWERED % (self.address, self.agent_port)}{last}"
        parts = [f"{self.name}: reached {self.phase()}"]
        parts += [f"status {self.status}{self._where()}"] if self.status else []
        parts += [self.status_info] if self.status_info else []
        parts += [f"failing validations: {', '.join(sorted(self.failing))}"] if self.failing else []
        if self.unreachable_since is not None:
            parts.append(
                f"agent not answering since {format_rfc3339(self.unreachable_since)} ({self.unreachable_reason})"
            )
        elif self.agent_error:
            parts.append(f"agent error: {self.agent_error}")
        parts += [f"last event: {self.last_event}"] if self.last_event else []
        return "; ".join(parts)

    def result(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "answered": self.answered,
            "phase": self.phase(),
            "status": self.status,
            "status_info": self.status_info,
            "stage": self.stage,
            "percentage": self.percentage,
            "cluster_status": self.cluster_status,
            "failing_validations": [
                {"id": v, "message": f["message"], "since": format_rfc3339(f["since"])} for v, f in self.failing.items()
            ],
            "last_event": self.last_event,
            "last_answer": format_rfc3339(self.last_answer) if self.last_answer else None,
            "auth_header": self.auth_header,
            "auth_refused": self.auth_refused,
            "kubelet": self.kubelet,
            "unreachable_since": format_rfc3339(self.unreachable_since) if self.unreachable_since else None,
            "timeline": list(self.timeline),
        }
