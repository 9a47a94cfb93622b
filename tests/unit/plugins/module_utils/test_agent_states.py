# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Every host stage and status of the agent's API (4.17-4.21) and the ``until`` target it reaches."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._install import states
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    T0,
    host,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_agent_progress import (
    GRACE,
    answered,
    at,
    progress,
)

# What a day-2 worker's agent reports (openshift/assisted-installer
# src/installer/installer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267); the service stores Rebooting as Done.
DAY2_WORKER_STAGES = (
    "Starting installation",
    "Installing",
    "Writing image to disk",
    "Waiting for control plane",
    "Rebooting",
)
# known -> the four stages a day-2 worker reports before Rebooting -> Done (added-to-existing-cluster).
DAY2_WORKER_PHASES = ["validated", "installing", "installing", "installing", "installing", "rebooted"]


def phase_of(status, stage):
    level = states.level_of(status, stage)
    return states.TARGETS[level - 1] if level else "waiting"


@pytest.mark.parametrize(
    "status, stage, phase",
    [
        (None, None, "waiting"),
        ("discovering", None, "discovered"),
        ("insufficient", None, "discovered"),
        ("pending-for-input", None, "discovered"),
        ("known", None, "validated"),
        ("preparing-for-installation", None, "installing"),
        ("preparing-successful", None, "installing"),
        ("installing", "Starting installation", "installing"),
        ("installing-in-progress", "Writing image to disk", "installing"),
        ("installing-in-progress", "Rebooting", "rebooted"),
        ("installing-in-progress", "Configuring", "rebooted"),
        ("installing-in-progress", "Joined", "rebooted"),
        ("installing-in-progress", "Done", "rebooted"),
        ("added-to-existing-cluster", None, "rebooted"),
        ("added-to-existing-cluster", "Done", "rebooted"),
    ],
)
def test_level_of_status_and_stage(status, stage, phase):
    assert phase_of(status, stage) == phase


# Every host status of the swagger enum (the same 28 on 4.17-4.21) and the target it reaches on its own.
STATUS_PHASES = {
    "discovering": "discovered",
    "known": "validated",
    "disconnected": "discovered",
    "insufficient": "discovered",
    "disabled": "discovered",
    "preparing-for-installation": "installing",
    "preparing-failed": "validated",
    "preparing-successful": "installing",
    "pending-for-input": "discovered",
    "installing": "installing",
    "installing-in-progress": "installing",
    "installing-pending-user-action": "installing",
    "resetting-pending-user-action": "discovered",
    "installed": "rebooted",
    "error": "discovered",
    "resetting": "discovered",
    "added-to-existing-cluster": "rebooted",
    "cancelled": "discovered",
    "binding": "discovered",
    "unbinding": "discovered",
    "unbinding-pending-user-action": "discovered",
    "known-unbound": "discovered",
    "disconnected-unbound": "discovered",
    "insufficient-unbound": "discovered",
    "disabled-unbound": "discovered",
    "discovering-unbound": "discovered",
    "reclaiming": "discovered",
    "reclaiming-rebooting": "discovered",
}
# Every host stage (12 on 4.17-4.20, plus "Copying registry data to disk" on 4.21) with a status that reaches
# nothing by itself: the stage alone decides.
STAGE_PHASES = {
    "Starting installation": "installing",
    "Waiting for control plane": "installing",
    "Waiting for bootkube": "installing",
    "Waiting for controller": "installing",
    "Installing": "installing",
    "Writing image to disk": "installing",
    "Copying registry data to disk": "installing",
    "Rebooting": "rebooted",
    "Waiting for ignition": "rebooted",
    "Configuring": "rebooted",
    "Joined": "rebooted",
    "Done": "rebooted",
    "Failed": "discovered",
}


def test_the_tables_hold_every_enum_value():
    assert list(states.STATUS_LEVEL) == list(STATUS_PHASES) and len(states.STATUS_LEVEL) == 28
    assert list(states.STAGE_LEVEL) == list(STAGE_PHASES) and len(states.STAGE_LEVEL) == 13
    assert set(DAY2_WORKER_STAGES) < set(states.STAGE_LEVEL)


@pytest.mark.parametrize("status", sorted(STATUS_PHASES))
def test_every_status(status):
    assert phase_of(status, None) == STATUS_PHASES[status]


@pytest.mark.parametrize("stage", sorted(STAGE_PHASES))
def test_every_stage(stage):
    assert phase_of("discovering", stage) == STAGE_PHASES[stage]


@pytest.mark.parametrize(
    "status, stage", [("hibernating", None), (None, "Defragmenting"), ("", ""), ("hibernating", "Defragmenting")]
)
def test_unknown_values_do_not_crash(status, stage):
    assert states.level_of(status, stage) == (states.DISCOVERED if status else 0)
    assert status not in states.STATUS_LEVEL and stage not in states.STAGE_LEVEL


@pytest.mark.parametrize("until, level", [("discovered", 1), ("validated", 2), ("installing", 3), ("rebooted", 4)])
def test_target_levels(until, level):
    assert states.target_level(until) == level


def test_unknown_stage_and_status_are_kept_as_they_came():
    p = progress()
    p.observe(answered(host(status="hibernating", stage="Defragmenting", percentage=7), message="new"), T0)
    assert p.phase() == "discovered" and p.failure(GRACE, T0) is None
    assert (p.status, p.stage) == ("hibernating", "Defragmenting")
    assert "status hibernating at stage Defragmenting (7%)" in p.describe()
    p.observe(answered(host(status="hibernating", stage="Rebooting")), at(5))
    assert p.reached("rebooted")


def test_a_day2_worker_goes_through_its_stages_to_done():
    """The agent's sequence for a day-2 worker; its Rebooting is stored as Done (added-to-existing-cluster)."""
    p = progress()
    seen = []
    sequence = (
        [("known", None, None)]
        + [("installing-in-progress", stage, (index + 1) * 20) for index, stage in enumerate(DAY2_WORKER_STAGES[:4])]
        + [("added-to-existing-cluster", "Done", 100)]
    )
    for second, (status, stage, percentage) in enumerate(sequence):
        p.observe(answered(host(status=status, stage=stage, percentage=percentage)), at(second * 5))
        seen.append(p.phase())
    assert seen == DAY2_WORKER_PHASES
    assert p.result("rebooted")["rebooted_after"] == "2025-01-20T10:00:25Z"  # when Done was seen
    assert [e["stage"] for e in p.timeline] == [None, *list(DAY2_WORKER_STAGES[:4]), "Done"]
    assert p.failure(GRACE, at(30)) is None
