# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent's host stages and statuses, and how far each one gets a host (option ``until`` of agent_wait).

Pure data. Upstream sources (``repo path@commit``):

* ``host-stage`` enum: 12 values on 4.17-4.20 (openshift/assisted-service swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd
  .. swagger.yaml@4e399454ffb97a17837bb2362518f5442f7dd086); 4.21 adds ``Copying registry data to disk`` after
  ``Writing image to disk`` (swagger.yaml@3977af16577a830b9c9c8822fe8f2925b38eac9c, commit
  4096daea4c14c53027bc0de10daadb990bed2f10).
* host ``status`` enum: the same 28 values on 4.17-4.21 (swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd,
  swagger.yaml@3977af16577a830b9c9c8822fe8f2925b38eac9c).
* A day-2 worker reports ``Starting installation``, ``Installing``, ``Writing image to disk``, ``Waiting for
  control plane`` and ``Rebooting`` (openshift/assisted-installer src/installer/installer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267);
  the service cuts a day-2 host's stages after ``Rebooting`` and stores that report as ``Done`` at 100 %, the host
  going to ``added-to-existing-cluster`` (openshift/assisted-service internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd,
  internal/host/statemachine.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd; unchanged through release-4.21).

A stage or status this table does not know (a later release) is shown as the agent sent it: an unknown status
counts as ``discovered`` (the agent knows its host), an unknown stage adds nothing.
"""

# The values of agent_wait's option ``until``, in the order a host passes them; a level is an index + 1.
TARGETS = ("discovered", "validated", "installing", "rebooted")
DISCOVERED, VALIDATED, INSTALLING, REBOOTED = 1, 2, 3, 4

HOST_STAGES = (
    "Starting installation",
    "Waiting for control plane",
    "Waiting for bootkube",
    "Waiting for controller",
    "Installing",
    "Writing image to disk",
    "Copying registry data to disk",
    "Rebooting",
    "Waiting for ignition",
    "Configuring",
    "Joined",
    "Done",
    "Failed",
)
# The stages 4.17-4.20 know: all but the one 4.21 added.
HOST_STAGES_4_17 = tuple(stage for stage in HOST_STAGES if stage != "Copying registry data to disk")
DAY2_WORKER_STAGES = (
    "Starting installation",
    "Installing",
    "Writing image to disk",
    "Waiting for control plane",
    "Rebooting",
)
FAILED_STAGE = "Failed"

# Stages before the disk is booted: the installation runs. "Waiting for control plane" comes after the disk
# is written for a day-2 worker, before the reboot.
_INSTALLING_STAGES = (
    "Starting installation",
    "Waiting for control plane",
    "Waiting for bootkube",
    "Waiting for controller",
    "Installing",
    "Writing image to disk",
    "Copying registry data to disk",
)
# Stages once the disk is written and the host boots from it (or has).
_REBOOTED_STAGES = ("Rebooting", "Waiting for ignition", "Configuring", "Joined", "Done")
STAGE_LEVEL = dict(
    [(stage, INSTALLING) for stage in _INSTALLING_STAGES] + [(stage, REBOOTED) for stage in _REBOOTED_STAGES]
)

HOST_STATUSES = (
    "discovering",
    "known",
    "disconnected",
    "insufficient",
    "disabled",
    "preparing-for-installation",
    "preparing-failed",
    "preparing-successful",
    "pending-for-input",
    "installing",
    "installing-in-progress",
    "installing-pending-user-action",
    "resetting-pending-user-action",
    "installed",
    "error",
    "resetting",
    "added-to-existing-cluster",
    "cancelled",
    "binding",
    "unbinding",
    "unbinding-pending-user-action",
    "known-unbound",
    "disconnected-unbound",
    "insufficient-unbound",
    "disabled-unbound",
    "discovering-unbound",
    "reclaiming",
    "reclaiming-rebooting",
)
# ``preparing-failed`` is reached from ``known`` and goes back to it; ``installing-pending-user-action`` is an
# installation waiting for the boot order to be fixed (a fail-fast state of its own).
_STATUS_LEVELS = (
    (VALIDATED, ("known", "preparing-failed")),
    (
        INSTALLING,
        (
            "preparing-for-installation",
            "preparing-successful",
            "installing",
            "installing-in-progress",
            "installing-pending-user-action",
        ),
    ),
    (REBOOTED, ("installed", "added-to-existing-cluster")),
)
STATUS_LEVEL = {status: DISCOVERED for status in HOST_STATUSES}
for _level, _statuses in _STATUS_LEVELS:
    STATUS_LEVEL.update((status, _level) for status in _statuses)

PENDING_USER_ACTION = "installing-pending-user-action"
# Host statuses from which the host cannot get further without someone: the wait fails at once.
FAILED_STATUSES = ("error", "cancelled")
# Cluster statuses of the agent's own cluster that stop its hosts (swagger ``cluster.status``).
FAILED_CLUSTER_STATUSES = ("error", "cancelled", PENDING_USER_ACTION)


def level_of(status, stage):
    """How far a host with this status and install stage got: 0 (unknown) up to REBOOTED."""
    level = STATUS_LEVEL.get(status, DISCOVERED) if status else 0
    return max(level, STAGE_LEVEL.get(stage, 0))


def target_level(until):
    return TARGETS.index(until) + 1


def is_known_stage(stage):
    return stage in HOST_STAGES


def is_known_status(status):
    return status in HOST_STATUSES
