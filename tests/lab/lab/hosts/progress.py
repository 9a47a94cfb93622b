"""A host's status, install progress and events as the agent's assisted-service records them.

- ``report(stage, info)`` is ``UpdateInstallProgress`` for a day-2 worker (openshift/assisted-service
  internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd, unchanged through release-4.21
  3977af16577a830b9c9c8822fe8f2925b38eac9c): the stages are ``versions.DAY2_WORKER_STAGES`` (``WorkerStages`` cut
  after Rebooting by ``GetStagesByRole`` for an AddToExistingClusterHost without kube-api);
  ``installation_percentage`` = (index + 1) / 5 * 100 on each new stage; the same stage with new info only
  updates ``progress_info``; ``Rebooting`` is stored as stage ``Done``; ``Failed`` keeps the last stage and
  puts the host in ``error`` with status_info ``Failed - <info>`` (refused once the host is
  added-to-existing-cluster).
- status: installing-in-progress with the stage name as status_info, ``Done`` -> added-to-existing-cluster with
  the day-2 rebooting text (internal/host/statemachine.go, transition.go ``PostHostProgress``, common.go
  ``statusInfoRebootingDay2``@c18512cd02435454b6c92e8a708ddd5b1f188dcd).
- events: ``Host <name>: updated status from A to B (<status_info>)`` when the status changes
  (internal/host/hostutil/update_host.go ``UpdateHostStatus``, docs/events.yaml ``host_status_updated``), then
  ``Host: <name>, reached installation stage <reported stage>[: <info>]`` for every progress change
  (internal/bminventory/inventory.go ``V2UpdateHostInstallProgress``, event ``host_install_progress_updated`` of
  docs/events.yaml@003cbfdfe21b60c91a42a0b358bc145cf540662e; node-joiner's monitor prints these texts).
"""

from __future__ import annotations

from ..context import utc_now
from ..versions import DAY2_WORKER_STAGES

REBOOTING_DAY2 = (
    "Host has rebooted and no further updates will be posted. Please check console for progress and "
    "to possibly approve pending CSRs"
)
ZERO_TIME = "0001-01-01T00:00:00.000Z"


class Progress:
    """Mixin of SimHost: the fields the agent API shows and the rules that change them."""

    def reset_progress(self):
        self.status = None
        self.status_info = None
        self.status_updated_at = None
        self.stage = None
        self.progress_info = ""
        self.percentage = None
        self.stage_started_at = None
        self.stage_updated_at = None
        self.events = []

    def _event(self, message, severity="info"):
        self.events.append(
            {
                "name": "lab_event",
                "cluster_id": self.cluster_id,
                "host_id": self.host_id,
                "infra_env_id": self.infra_env_id,
                "severity": severity,
                "category": "user",
                "message": message,
                "event_time": utc_now(),
            }
        )

    def _set_status(self, status, info, severity="info"):
        previous = self.status
        self.status_info = info
        if status == previous:
            return
        self.status, self.status_updated_at = status, utc_now()
        if previous:
            self._event(f"Host {self.hostname}: updated status from {previous} to {status} ({info})", severity)

    def report(self, stage, info=""):
        """The agent reports ``stage`` with ``info`` (assisted-installer's ``UpdateHostInstallProgress``)."""
        now = utc_now()
        if stage == "Failed":
            if self.status not in ("installing", "installing-in-progress", "installing-pending-user-action"):
                return  # 409 "Can't set progress <Failed> to host in status <...>": no change, no event
            self._set_status("error", f"Failed - {info}" if info else "Failed", severity="error")
        else:
            stored = "Done" if stage == "Rebooting" else stage
            if stored == self.stage and info == self.progress_info:
                return
            if stored != self.stage:
                index = DAY2_WORKER_STAGES.index(stage)
                self.percentage = int((index + 1) * 100 / len(DAY2_WORKER_STAGES))
                self.stage_started_at = now
            self.stage, self.progress_info, self.stage_updated_at = stored, info, now
            if stored == "Done":
                self._set_status("added-to-existing-cluster", REBOOTING_DAY2)
            else:
                self._set_status("installing-in-progress", stored)
        suffix = f": {info}" if info else ""
        self._event(f"Host: {self.hostname}, reached installation stage {stage}{suffix}")

    def progress_json(self):
        return {
            "current_stage": self.stage or "",
            "installation_percentage": self.percentage or 0,
            "progress_info": self.progress_info,
            "stage_started_at": self.stage_started_at or ZERO_TIME,
            "stage_updated_at": self.stage_updated_at or ZERO_TIME,
        }
