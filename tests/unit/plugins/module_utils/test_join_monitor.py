# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's monitor (node-joiner monitor-add-nodes) read from its pod log, and where the engine follows each
host from."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import monitor as mon
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.agent import HostProgress, Observation

IP = "192.168.111.90"
STAMP = "2026-12-02T06:23:38.123456789Z"


def line(message, level="info", stamp=STAMP):
    return f"{stamp} time=2026-12-02T06:23:38Z level={level} msg={message}"


@pytest.mark.parametrize(
    "text, expected",
    [
        (line(f"Node {IP}: Kubelet is running"), (IP, "info", "Kubelet is running")),
        # 4.18+: the node's channel prefixes the cluster status's own prefix once more
        (line(f"Node {IP}: Node {IP}: Cluster is adding hosts"), (IP, "info", "Cluster is adding hosts")),
        (line("Monitoring IPs: [192.168.111.90]"), (None, "info", "Monitoring IPs: [192.168.111.90]")),
        (
            line('secrets "agent-auth-token" not found', "fatal"),
            (None, "fatal", 'secrets "agent-auth-token" not found'),
        ),
        ("garbage without a level", None),
    ],
)
def test_a_log_line_gives_its_address_level_and_message(text, expected):
    assert mon.parse_line(text) == expected


def test_what_the_monitor_says_becomes_the_agents_observation():
    seen = mon.Seen()
    assert seen.observation().kind == "unreachable"
    at = datetime.datetime(2026, 12, 2, 6, 23, 38, tzinfo=datetime.timezone.utc)
    for message in (
        "Assisted Service API is available",
        "Cluster is adding hosts",
        "Host worker-0: updated status from known to installing (Installation is in progress)",
        "Host: worker-0, reached installation stage Writing image to disk: 40%",
    ):
        seen.take("info", message, at)
    seen.take("warning", "Host worker-0 validation: No connectivity to the majority of hosts in the cluster", at)
    observed = seen.observation()
    assert observed.kind == "answered" and observed.at == at
    progress = HostProgress("worker-0", IP, 8090)
    progress.observe(observed, at + datetime.timedelta(seconds=30))
    assert (progress.status, progress.stage, progress.percentage) == (
        "installing-in-progress",
        "Writing image to disk",
        40,
    )
    assert progress.last_answer == at  # when the agent said it, not when the log was read
    assert list(progress.failing) == ["No connectivity to the majority of hosts in the cluster"]
    assert progress.cluster_status == "adding-hosts"

    seen.take("info", "Kubelet is running", at + datetime.timedelta(seconds=60))
    rebooted = seen.observation()
    assert rebooted == Observation("unreachable", "its agent stopped (seen from the cluster)", kubelet="cluster")
    progress.observe(rebooted, at + datetime.timedelta(seconds=61))
    assert progress.disk_written and progress.phase() == "rebooted"


def test_a_cluster_in_error_is_named_as_the_agent_would():
    seen = mon.Seen()
    seen.take("info", "Assisted Service API is available", None)
    seen.take("info", "Cluster has hosts requiring user input", None)
    progress = HostProgress("worker-0", IP, 8090)
    progress.observe(seen.observation(), datetime.datetime.now(datetime.timezone.utc))
    assert "installing-pending-user-action" in progress.failure(600, datetime.datetime.now(datetime.timezone.utc))


class Api:
    """The pod log (lines with the kubelet's timestamps) and the pod, as the API server serves them."""

    def __init__(self, lines, phase="Running"):
        self.lines, self.phase, self.asked = lines, phase, []

    def request(self, method, target, raw=False, **params):
        self.asked.append(target.path)
        since = dict(part.split("=", 1) for part in target.path.split("?", 1)[1].split("&")).get("sinceTime")
        return "".join(text + "\n" for text in self.lines if not since or text[:19] >= since.replace("%3A", ":")[:19])

    def get(self, target):
        return {"status": {"phase": self.phase}}


class Run:
    def __init__(self, api):
        self.api, self.ns_name = api, "openshift-node-joiner-x"


def test_each_round_reads_only_the_new_lines_and_notes_an_ended_pod():
    api = Api([line("Monitoring IPs: [%s]" % IP), line(f"Node {IP}: Assisted Service API is available")])
    monitor = mon.ClusterMonitor(Run(api), [IP])
    monitor.poll()
    assert monitor.seen[IP].api and monitor.began and not monitor.ended
    later = "2026-12-02T06:23:38.523456789Z"  # within the same second: sinceTime brings both lines again
    api.lines.append(line(f"Node {IP}: Host: worker-0, reached installation stage Rebooting", stamp=later))
    monitor.poll()
    assert (
        "sinceTime=2026-12-02T06" in api.asked[-1] and monitor.seen[IP].host["progress"]["current_stage"] == "Rebooting"
    )
    api.lines.append(line('secrets "agent-auth-token" not found', "fatal", "2026-12-02T06:23:40.000000000Z"))
    api.phase = "Failed"
    monitor.poll()
    assert monitor.ended == 'node-joiner monitor-add-nodes failed: secrets "agent-auth-token" not found'
    assert "failed" in monitor.describe() and monitor.asked_once()


def test_the_monitor_command_is_ocs():
    assert mon.monitor_command(["10.0.0.5", "10.0.0.6"]) == (
        "HOME=/assets node-joiner monitor-add-nodes --dir=/assets 10.0.0.5 10.0.0.6"
    )
