# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One host's way from the live ISO to a Ready node, as join_workers follows it. No I/O.

Phases, in order (a re-run starts each host where the cluster and the host say it is):

- ``waiting``: nothing answered yet (the host has not booted the ISO, or is unreachable);
- ``installing``: its agent answers (the live ISO installs the disk);
- ``rebooted``: its kubelet answers on the kubelet port (a TLS handshake, or the alert ``internal_error``
  that a kubelet without a serving certificate sends), or its Node or an approved client CSR exists;
- ``settling``: rebooted, waiting the settle period before the first approval (a second key shows up here);
- ``half-joined``: its Node exists and is not Ready (client certificate issued, serving CSR or Ready pending);
- ``joined``: its Node is Ready;
- ``failed``: stopped, with the reason (agent failure, timeout, a second key).
"""

from __future__ import annotations

import datetime
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.progress import HostProgress

WAITING = "waiting"
INSTALLING = "installing"
REBOOTED = "rebooted"
SETTLING = "settling"
HALF_JOINED = "half-joined"
JOINED = "joined"
FAILED = "failed"
PHASES = (WAITING, INSTALLING, REBOOTED, SETTLING, HALF_JOINED, JOINED, FAILED)
TERMINAL = (JOINED, FAILED)


class HostJoin:
    """Everything join_workers knows about one host: the agent's progress, the phase and when each began, the
    approvals made for it, and why it failed."""

    def __init__(self, host: dict[str, Any], agent_port: int, started: datetime.datetime) -> None:
        self.name = str(host["name"])
        self.address = str(host["address"])
        self.addresses = [str(a) for a in host.get("addresses") or [self.address]]
        self.progress = HostProgress(self.name, self.address, agent_port, host.get("mac_address"))
        self.phase = WAITING
        self.phase_started: dict[str, datetime.datetime] = {WAITING: started}
        self.kubelet_at: datetime.datetime | None = None  # when this run first saw that the host rebooted
        self.rebooted_by: str | None = None  # what showed it
        self.approved: list[dict[str, Any]] = []
        self.failure: str | None = None
        self.failed_in: str | None = None
        self.node_ready = False
        self.waiting_for: str | None = None  # what the host waits for now, for the status line
        # Controller clock: no CSR of the current installation is older (replace_worker.yml: the old Node's
        # deletion; the old installation's CSRs stay in the cluster for up to an hour after it).
        self.installed_after: datetime.datetime | None = host.get("installed_after")
        self._shown: tuple[Any, ...] | None = None

    @property
    def done(self) -> bool:
        return self.phase in TERMINAL

    @property
    def heard(self) -> bool:
        """Anything answered: the agent, the kubelet, or the cluster knows the host."""
        return self.progress.answered or self.kubelet_at is not None

    def set_phase(self, phase: str, now: datetime.datetime) -> None:
        if self.done or phase == self.phase:
            return
        self.phase = phase
        self.phase_started.setdefault(phase, now)

    def rebooted(self, how: str, now: datetime.datetime) -> None:
        """The host runs its installed system (``how`` says what showed it)."""
        if self.kubelet_at is None:
            self.kubelet_at = now
            self.rebooted_by = how
        if self.phase in (WAITING, INSTALLING):
            self.set_phase(REBOOTED, now)

    def fail(self, message: str, now: datetime.datetime) -> None:
        if self.done:
            return
        self.failure = message
        self.failed_in = self.phase
        self.set_phase(FAILED, now)

    def not_before(self, server_offset: float) -> datetime.datetime | None:
        """The earliest creation time (API server clock) of a CSR of the installed system: the last time the
        live ISO's agent answered, or the given ``installed_after``, the later of the two. None when this run
        never heard the agent (the host rebooted before) and no ``installed_after`` was given."""
        known = [when for when in (self.progress.last_answer, self.installed_after) if when is not None]
        if not known:
            return None
        return max(known) + datetime.timedelta(seconds=server_offset)

    # -- output ----------------------------------------------------------------------------

    def status_line(self) -> str | None:
        """The line to show when something shown changed since the last call, else None."""
        progress = self.progress
        key = (self.phase, progress.status, progress.stage, progress.percentage, self.waiting_for)
        if key == self._shown:
            return None
        self._shown = key
        parts = [self.phase]
        if progress.status and self.phase in (INSTALLING, REBOOTED, WAITING):
            stage = " at %s" % progress.stage if progress.stage else ""
            percent = " (%s%%)" % progress.percentage if progress.percentage is not None else ""
            parts.append("agent: %s%s%s" % (progress.status, stage, percent))
        if self.waiting_for:
            parts.append(self.waiting_for)
        if self.failure:
            parts.append(self.failure)
        return "; ".join(parts)

    def durations(self, end: datetime.datetime) -> dict[str, float]:
        """Seconds spent in each phase this run saw, in phase order."""
        seen = sorted(self.phase_started.items(), key=lambda item: (item[1], PHASES.index(item[0])))
        spans = {}
        for index, (phase, begun) in enumerate(seen):
            if phase in TERMINAL:
                continue
            finish = seen[index + 1][1] if index + 1 < len(seen) else end
            spans[phase] = round((finish - begun).total_seconds(), 1)
        return spans

    def summary(self, end: datetime.datetime) -> dict[str, Any]:
        progress = self.progress
        return {
            "name": self.name,
            "address": self.address,
            "state": self.phase,
            "failed_in": self.failed_in,
            "problem": self.failure,
            "phases": self.durations(end),
            "phase_started": {phase: format_rfc3339(when) for phase, when in self.phase_started.items()},
            "rebooted_by": self.rebooted_by,
            "approved": list(self.approved),
            "summary": self.summary_line(end),
            "agent": {
                "answered": progress.answered,
                "status": progress.status,
                "stage": progress.stage,
                "percentage": progress.percentage,
                "last_answer": format_rfc3339(progress.last_answer) if progress.last_answer else None,
                "auth_header": progress.auth_header,
                "kubelet": progress.kubelet,
            },
        }

    def summary_line(self, end: datetime.datetime) -> str:
        phases = ", ".join("%s %ss" % (phase, seconds) for phase, seconds in self.durations(end).items())
        approvals = ", ".join("%s %s" % (a["kind"], a["name"]) for a in self.approved) or "none"
        text = "%s: %s (%s); approved in this run: %s" % (self.name, self.phase, phases or "no phase seen", approvals)
        if self.progress.auth_header:
            text += "; agent token in %s" % self.progress.auth_header
        if self.failure:
            text += "; %s" % self.failure
        return text
