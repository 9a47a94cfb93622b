# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent's host stages and statuses, and how far each one gets a host (option ``until`` of agent_wait).

Pure data. Upstream sources (``repo path@commit``):

* ``host-stage`` enum: 12 values on 4.17-4.20 (openshift/assisted-service
  swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd .. swagger.yaml@4e399454ffb97a17837bb2362518f5442f7dd086);
  4.21 adds ``Copying registry data to disk`` after ``Writing image to disk``
  (swagger.yaml@3977af16577a830b9c9c8822fe8f2925b38eac9c, commit 4096daea4c14c53027bc0de10daadb990bed2f10).
* host ``status`` enum: the same 28 values on 4.17-4.21 (swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd,
  swagger.yaml@3977af16577a830b9c9c8822fe8f2925b38eac9c).
* A day-2 worker reports ``Starting installation``, ``Installing``, ``Writing image to disk``, ``Waiting for
  control plane`` and ``Rebooting`` (openshift/assisted-installer
  src/installer/installer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267); the service cuts a day-2 host's stages
  after ``Rebooting`` and stores that report as ``Done`` at 100 %, the host going to ``added-to-existing-cluster``
  (openshift/assisted-service internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd,
  internal/host/statemachine.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd; unchanged through release-4.21).

A stage or status this table does not know (a later release) is shown as the agent sent it: an unknown status
counts as ``discovered`` (the agent knows its host), an unknown stage adds nothing.
"""

from __future__ import annotations

# The values of agent_wait's option ``until``, in the order a host passes them; a level is an index + 1.
TARGETS = ("discovered", "validated", "installing", "rebooted")
DISCOVERED, VALIDATED, INSTALLING, REBOOTED = 1, 2, 3, 4
FAILED_STAGE = "Failed"

# Every ``host-stage`` (the keys, in the enum's order) and how far it gets a host. The stages up to
# "Copying registry data to disk" run the installation ("Waiting for control plane" comes after the disk is
# written for a day-2 worker, before the reboot); from "Rebooting" on the disk is written and the host boots
# from it (or has). "Failed" adds nothing: the status says how far the host got.
STAGE_LEVEL = {
    "Starting installation": INSTALLING,
    "Waiting for control plane": INSTALLING,
    "Waiting for bootkube": INSTALLING,
    "Waiting for controller": INSTALLING,
    "Installing": INSTALLING,
    "Writing image to disk": INSTALLING,
    "Copying registry data to disk": INSTALLING,
    "Rebooting": REBOOTED,
    "Waiting for ignition": REBOOTED,
    "Configuring": REBOOTED,
    "Joined": REBOOTED,
    "Done": REBOOTED,
    FAILED_STAGE: 0,
}

PENDING_USER_ACTION = "installing-pending-user-action"
# Every host ``status`` (the keys, in the enum's order) and how far it gets a host: the agent knows its host
# (discovered) unless the status says more. ``preparing-failed`` is reached from ``known`` and goes back to it;
# ``installing-pending-user-action`` is an installation waiting for the boot order to be fixed (a fail-fast
# state of its own).
STATUS_LEVEL = {
    "discovering": DISCOVERED,
    "known": VALIDATED,
    "disconnected": DISCOVERED,
    "insufficient": DISCOVERED,
    "disabled": DISCOVERED,
    "preparing-for-installation": INSTALLING,
    "preparing-failed": VALIDATED,
    "preparing-successful": INSTALLING,
    "pending-for-input": DISCOVERED,
    "installing": INSTALLING,
    "installing-in-progress": INSTALLING,
    PENDING_USER_ACTION: INSTALLING,
    "resetting-pending-user-action": DISCOVERED,
    "installed": REBOOTED,
    "error": DISCOVERED,
    "resetting": DISCOVERED,
    "added-to-existing-cluster": REBOOTED,
    "cancelled": DISCOVERED,
    "binding": DISCOVERED,
    "unbinding": DISCOVERED,
    "unbinding-pending-user-action": DISCOVERED,
    "known-unbound": DISCOVERED,
    "disconnected-unbound": DISCOVERED,
    "insufficient-unbound": DISCOVERED,
    "disabled-unbound": DISCOVERED,
    "discovering-unbound": DISCOVERED,
    "reclaiming": DISCOVERED,
    "reclaiming-rebooting": DISCOVERED,
}

# Host statuses from which the host cannot get further without someone: the wait fails at once.
FAILED_STATUSES = ("error", "cancelled")
# Cluster statuses of the agent's own cluster that stop its hosts (swagger ``cluster.status``).
FAILED_CLUSTER_STATUSES = ("error", "cancelled", PENDING_USER_ACTION)


def level_of(status: str | None, stage: str | None) -> int:
    """How far a host with this status and install stage got: 0 (unknown) up to REBOOTED."""
    level = STATUS_LEVEL.get(status, DISCOVERED) if status else 0
    return max(level, STAGE_LEVEL.get(stage, 0) if stage else 0)


def target_level(until: str) -> int:
    return TARGETS.index(until) + 1
