# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Interpret what the agents of new hosts report; decide progress, success and failure.

Pure code: no network, no clock of its own. The caller (``client``) polls
every host, turns each poll into an :class:`Observation` and hands it to the
host's :class:`HostProgress` with the time of the poll. The field names are the
assisted-service ones (``cluster``/``host``/``event`` definitions of its swagger):
``host.status``, ``host.status_info``, ``host.progress.current_stage``,
``host.progress.installation_percentage``, ``host.validations_info`` (a JSON
string ``{category: [{id, status, message}]}``), ``cluster.status``,
``event.message``, ``event.event_time``. Which stage and status reaches which ``until`` is in
``states``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.answers import failing_validations
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.states import (
    FAILED_CLUSTER_STATUSES,
    FAILED_STAGE,
    FAILED_STATUSES,
    INSTALLING,
    PENDING_USER_ACTION,
    REBOOTED,
    TARGETS,
    level_of,
    target_level,
)

# How the kubelet port answered a probe; either means the installed system runs (see client.kubelet_state).
KUBELET_HANDSHAKE = "handshake"
KUBELET_INTERNAL_ERROR = "internal_error"
_KUBELET_TEXT = {
    KUBELET_HANDSHAKE: "the kubelet answers TLS",
    KUBELET_INTERNAL_ERROR: "the kubelet aborts TLS with alert internal_error (its serving certificate is not "
    "approved yet)",
}

BOOT_ORDER_ADVICE = (
    "the host booted the ISO again after writing the disk: eject the virtual media or fix the boot "
    "order so it boots from disk"
)
NEVER_ANSWERED = (
    "never answered: not booted, booted a wrong ISO (another cluster, MAC not in the ISO, expired token) "
    "or unreachable at %s:%s"
)


@dataclass(frozen=True)
class Observation:
    """What one poll of one host saw.

    ``kind`` is ``answered`` (the agent served the cluster list), ``unreachable``
    (connection refused, reset or timed out), ``rejected`` (the agent refused the
    token in every header it was tried in) or ``http_error`` (any other HTTP
    error, or a body that is not JSON). ``cluster``/``host``/``event`` are the
    agent's JSON objects, ``None`` when not known yet; ``header`` is the header the
    agent accepted the token in; ``recovered`` the refusal (header, status, message) of
    the header tried first when the other one then worked; ``kubelet`` is how the kubelet port answered
    (``handshake``, ``internal_error``) or ``None`` (not probed, or no kubelet).
    """

    kind: str
    detail: str | None = None
    cluster: dict[str, Any] | None = None
    host: dict[str, Any] | None = None
    event: dict[str, Any] | None = None
    kubelet: str | None = None
    header: str | None = None
    recovered: dict[str, Any] | None = None


class HostProgress:
    """Everything known about one host across polls."""

    def __init__(self, name: str, address: str, agent_port: int, mac_address: str | None = None) -> None:
        self.name = name
        self.address = address
        self.agent_port = agent_port
        self.mac_address = mac_address
        self.status: str | None = None
        self.status_info: str | None = None
        self.stage: str | None = None
        self.percentage: int | None = None
        self.cluster_status: str | None = None
        self.cluster_status_info: str | None = None
        self.last_event: str | None = None
        self.failing: dict[str, dict[str, Any]] = {}  # validation id -> {"message": ..., "since": datetime}
        self.timeline: list[dict[str, Any]] = []
        self.unreachable_since: datetime.datetime | None = None
        self.unreachable_reason: str | None = None
        self.agent_error: str | None = None
        self.rejected: str | None = None
        self.auth_header: str | None = None
        self.auth_refused: dict[str, Any] | None = None  # the refusal the other header recovered from
        self.kubelet: str | None = None
        self.last_answer: datetime.datetime | None = None  # when the agent (in the live ISO) last answered
        self.rebooted_after: datetime.datetime | None = None  # the live ISO's last sign before the reboot
        self.answered = False
        self.level = 0
        self._last_key: tuple[Any, ...] | None = None

    # -- observing ---------------------------------------------------------------------

    def observe(self, seen: Observation, now: datetime.datetime) -> None:
        """Fold one poll (an Observation) taken at ``now`` (aware datetime) into the state."""
        note = None
        if seen.kind == "unreachable":
            note = self._observe_unreachable(seen, now)
        else:
            self.answered = True
            self.unreachable_since = None
            self.unreachable_reason = None
            if seen.kind == "rejected":
                self.rejected = seen.detail
                note = "the agent refused the token"
            elif seen.kind == "http_error":
                self.agent_error = seen.detail
                note = "the agent answered with an error: %s" % seen.detail
            else:
                self.agent_error = None
                self.auth_header = seen.header or self.auth_header
                self.last_answer = now
                self._observe_answer(seen, now)
                note = self.last_event
                if seen.recovered:
                    self.auth_refused = seen.recovered
                    self._record(
                        "the agent refused the token in %s (HTTP %s: %s); it accepted it in %s"
                        % (
                            seen.recovered["header"],
                            seen.recovered["status"],
                            seen.recovered["message"],
                            self.auth_header,
                        ),
                        now,
                    )
        self._record(note, now)

    def _observe_unreachable(self, seen: Observation, now: datetime.datetime) -> str:
        if self.unreachable_since is None:
            self.unreachable_since = now
        self.unreachable_reason = seen.detail
        # The agent runs from the ISO: once the disk is written it goes away with the reboot, and the
        # installed system's kubelet is what answers next. A kubelet answering means the host booted its
        # disk, also when this run never saw it installing (it rebooted before the run started).
        if not seen.kubelet:
            return "the agent does not answer"
        self.kubelet = seen.kubelet
        installing = self.level >= INSTALLING
        if self.level < REBOOTED:
            self.rebooted_after = self.last_answer  # None: the host rebooted before this run heard its agent
        self.level = REBOOTED
        how = _KUBELET_TEXT.get(seen.kubelet, "the kubelet answers (%s)" % seen.kubelet)
        if installing:
            return "the agent is gone and %s: the host rebooted from its disk" % how
        return "the agent does not answer and %s: the host already rebooted from its disk" % how

    def _observe_answer(self, seen: Observation, now: datetime.datetime) -> None:
        cluster = seen.cluster or {}
        if cluster:
            self.cluster_status = cluster.get("status")
            self.cluster_status_info = cluster.get("status_info")
        host = seen.host
        if host:
            progress = host.get("progress") or {}
            self.status = host.get("status")
            self.status_info = host.get("status_info")
            self.stage = progress.get("current_stage") or None
            self.percentage = progress.get("installation_percentage")
            self._track_validations(failing_validations(host.get("validations_info")), now)
            level = level_of(self.status, self.stage)
            if level >= REBOOTED > self.level:
                self.rebooted_after = now  # the agent reports Rebooting (stored as Done) before the reboot
            self.level = max(self.level, level)
        if seen.event:
            self.last_event = seen.event.get("message")

    def _track_validations(self, failing: dict[str, str], now: datetime.datetime) -> None:
        # A validation keeps the time it was first seen failing until it passes again.
        self.failing = {
            vid: {"message": message, "since": self.failing.get(vid, {}).get("since") or now}
            for vid, message in failing.items()
        }

    def _record(self, note: str | None, now: datetime.datetime) -> None:
        key = (self.status, self.stage, self.percentage, note)
        if key == self._last_key:
            return
        self._last_key = key
        self.timeline.append(
            {
                "time": format_rfc3339(now),
                "status": self.status,
                "stage": self.stage,
                "percentage": self.percentage,
                "event": note,
            }
        )

    # -- deciding ----------------------------------------------------------------------

    def reached(self, until: str) -> bool:
        return self.level >= target_level(until)

    def phase(self) -> str:
        """The furthest target reached, or ``waiting``."""
        return TARGETS[self.level - 1] if self.level else "waiting"

    def failure(self, grace_seconds: int, now: datetime.datetime, until: str = "rebooted") -> str | None:
        """Why this host cannot get further (a message), or None. Checked after each poll of it.

        A failing validation only matters for a host that has neither reached ``until``
        nor started installing: some validations are informational and never block.
        """
        where = "host %s (%s)" % (self.name, self.address)
        if self.rejected:
            return "%s: the agent at %s:%s refused the token: %s." % (
                where,
                self.address,
                self.agent_port,
                self.rejected,
            )
        if self.status == PENDING_USER_ACTION:
            return "%s is in status %s%s: %s. %s." % (
                where,
                self.status,
                self._stage_text(),
                self.status_info or "",
                BOOT_ORDER_ADVICE,
            )
        if self.status in FAILED_STATUSES or self.stage == FAILED_STAGE:
            return "%s failed: status %s%s: %s%s" % (
                where,
                self.status,
                self._stage_text(),
                self.status_info or "(no status_info)",
                self._event_text(),
            )
        if self.cluster_status in FAILED_CLUSTER_STATUSES:
            advice = " %s." % BOOT_ORDER_ADVICE if self.cluster_status == PENDING_USER_ACTION else ""
            return "%s: the agent's cluster is in status %s: %s.%s" % (
                where,
                self.cluster_status,
                self.cluster_status_info or "(no status_info)",
                advice,
            )
        if self.level < INSTALLING and not self.reached(until):
            return self._validation_failure(where, grace_seconds, now)
        return None

    def _validation_failure(self, where: str, grace_seconds: int, now: datetime.datetime) -> str | None:
        expired = [
            (failure["since"], vid, failure["message"])
            for vid, failure in self.failing.items()
            if (now - failure["since"]).total_seconds() >= grace_seconds
        ]
        if not expired:
            return None
        since, vid, message = min(expired)
        others = len(self.failing) - 1
        return (
            "%s: validation %s has been failing since %s (longer than validation_grace %d s): %s%s "
            "(host status %s: %s)"
            % (
                where,
                vid,
                format_rfc3339(since),
                grace_seconds,
                message,
                "; %d more failing validation(s) in the result" % others if others else "",
                self.status,
                self.status_info or "",
            )
        )

    def _stage_text(self) -> str:
        if not self.stage:
            return ""
        if self.percentage is None:
            return " at stage %s" % self.stage
        return " at stage %s (%s%%)" % (self.stage, self.percentage)

    def _event_text(self) -> str:
        return "; last agent event: %s" % self.last_event if self.last_event else ""

    def describe(self) -> str:
        """One line for a timeout message: where this host is."""
        if not self.answered:
            last = " (last attempt: %s)" % self.unreachable_reason if self.unreachable_reason else ""
            return "%s: %s%s" % (self.name, NEVER_ANSWERED % (self.address, self.agent_port), last)
        parts = ["%s: reached %s" % (self.name, self.phase())]
        if self.status:
            parts.append("status %s%s" % (self.status, self._stage_text()))
        if self.status_info:
            parts.append(self.status_info)
        if self.failing:
            parts.append("failing validations: %s" % ", ".join(sorted(self.failing)))
        if self.unreachable_since is not None:
            parts.append(
                "agent not answering since %s (%s)" % (format_rfc3339(self.unreachable_since), self.unreachable_reason)
            )
        elif self.agent_error:
            parts.append("agent error: %s" % self.agent_error)
        if self.last_event:
            parts.append("last event: %s" % self.last_event)
        return "; ".join(parts)

    def result(self, until: str) -> dict[str, Any]:
        """The per-host entry of the module result."""
        return {
            "address": self.address,
            "answered": self.answered,
            "phase": self.phase(),
            "reached": self.reached(until),
            "status": self.status,
            "status_info": self.status_info,
            "stage": self.stage,
            "percentage": self.percentage,
            "cluster_status": self.cluster_status,
            "failing_validations": [
                {"id": vid, "message": failure["message"], "since": format_rfc3339(failure["since"])}
                for vid, failure in self.failing.items()
            ],
            "last_event": self.last_event,
            "auth_header": self.auth_header,
            "auth_refused": self.auth_refused,
            "kubelet": self.kubelet,
            "rebooted_after": format_rfc3339(self.rebooted_after) if self.rebooted_after else None,
            "timeline": list(self.timeline),
            "unreachable_since": format_rfc3339(self.unreachable_since) if self.unreachable_since else None,
        }


def round_verdict(
    progress: list[HostProgress], polled: list[HostProgress], until: str, grace_seconds: int, now: datetime.datetime
) -> tuple[str, str | None]:
    """After a poll round: ``("failed", message)``, ``("done", None)`` or ``("waiting", None)``.

    Failures are judged on the hosts ``polled`` in this round; a host that reached
    ``until`` earlier is no longer polled and keeps its result.
    """
    failures = [message for message in (p.failure(grace_seconds, now, until) for p in polled) if message]
    if failures:
        return "failed", " | ".join(failures)
    if all(p.reached(until) for p in progress):
        return "done", None
    return "waiting", None


def timeout_message(progress: list[HostProgress], until: str, seconds: int) -> str:
    late = [p for p in progress if not p.reached(until)]
    return "timed out after %d s waiting for %d of %d host(s) to reach %s: %s" % (
        seconds,
        len(late),
        len(progress),
        until,
        " | ".join(p.describe() for p in late),
    )
