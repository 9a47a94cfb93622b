# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Following hosts from inside the cluster, for the hosts this controller cannot reach: the pod that
``oc adm node-image monitor`` runs, read through the API server alone.

oc runs ``node-joiner monitor-add-nodes --dir=/assets IP...`` from the node-joiner image, in a namespace, service
account and ClusterRole of its own, and streams the pod's log -- openshift/oc
pkg/cli/admin/nodeimage/monitor.go@6febe61977471b066f08d513424b226b82ee518f (4.18; the same on 4.17
d76df14ea3d7ff9916ea576b6335cd3a220cd1bf and 4.21 9d9df34c46c9deba8c291a2a084de5724c0bd820). node-joiner reads the
agent token from Secret openshift-config/agent-auth-token itself, through the pod's service account, so the token is
in no pod spec, command line or log. Every 5 s it asks each host's agent (``Assisted Service API is available``, the
cluster status, the newest event, failing validations) and its kubelet (``Kubelet is running``: the TLS alert
internal_error of a kubelet without a serving certificate) -- openshift/installer pkg/agent/
monitoraddnodes.go@1f1111c9ab1dcc364d7dc41d2dc6556c084a8848 and @de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2 (4.18+:
every line of a node goes through a channel that prefixes ``Node IP: `` once more, pkg/agent/
logging.go@006d45739349721f1371d3013792d9b8407e9842). The events are assisted-service's: ``Host <name>: updated
status from A to B (info)`` and ``Host: <name>, reached installation stage S[: info]`` -- openshift/assisted-service
docs/events.yaml@003cbfdfe21b60c91a42a0b358bc145cf540662e.

Each round reads only the log lines written since the last (``sinceTime`` and the timestamps the API server adds)
and turns what they say of an address into the agent ``Observation`` the engine takes from the controller's own
polls, so progress, the approval gate (the kubelet answers, then the settle period) and the eject are the same.
"""

from __future__ import annotations

import datetime
import re
import time
import uuid
from typing import Any, Callable

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s, releases
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import core_target, dig
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import image_facts
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import node_joiner as nj
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.agent import Observation

Json = dict[str, Any]
Say = Callable[[str], None]  # prints one progress line
POD = "node-joiner-monitor"
ROUND = 6.0  # the monitor asks every host every 5 s (monitoraddnodes.go), plus a second for the log to reach us
LOOK_LIMIT = 120.0  # one look waits no longer for the monitor pod to start
_LINE = re.compile(r"^(\S+) .*?\blevel=(\w+) msg=(.*)$")  # <API server timestamp> time=... level=... msg=...
_NODE = re.compile(r"^Node (\S+): ")
_STATUS = re.compile(r"^Host (\S+): updated status from (\S+) to (\S+) ?(?:\((.*)\))?$")
_STAGE = re.compile(r"^Host: (\S+), reached installation stage ([^:]+)(?:: (.*))?$")
_VALIDATION = re.compile(r"^Host (\S+) validation: (.*)$")
# The cluster status in words (cluster.go humanFriendlyClusterInstallStatus, pkg/agent/
# cluster.go@f4e8e5745f2234fffc734865ba58ca5c0876b057), back to the statuses the engine judges.
CLUSTER_STATUSES = {
    "Cluster is adding hosts": "adding-hosts",
    "Cluster has hosts in error": "error",
    "Cluster has hosts requiring user input": "installing-pending-user-action",
    "Cluster installation cancelled": "cancelled",
}


# The status a progress report leaves a day-2 host in: a stage keeps it installing-in-progress, Rebooting is stored
# as Done with the host added-to-existing-cluster, Failed puts it in error -- openshift/assisted-service
# internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd (UpdateInstallProgress). The monitor prints only
# the newest event of each round, so a status-change event is often not among its lines.
STAGE_STATUS = {"Rebooting": "added-to-existing-cluster", "Done": "added-to-existing-cluster", "Failed": "error"}


def monitor_command(addresses: list[str]) -> str:
    return "HOME=/assets node-joiner monitor-add-nodes --dir=/assets " + " ".join(addresses)


def parse_line(line: str) -> tuple[str | None, str, str] | None:
    """(address or None, level, message without its ``Node IP: `` prefixes) of one log line, or None."""
    match = _LINE.match(line.strip())
    if not match:
        return None
    message, address = match.group(3), None
    while node := _NODE.match(message):
        address, message = node.group(1), message[node.end() :]
    return address, match.group(2), message


def _moment(stamp: str) -> datetime.datetime | None:
    try:
        return parse_rfc3339(stamp)
    except ValueError:
        return None


class Seen:
    """What the monitor said of one address so far."""

    def __init__(self) -> None:
        self.api = self.kubelet = False
        self.host: dict[str, Any] = {}
        self.cluster: dict[str, Any] = {}
        self.event: str | None = None
        self.failing: dict[str, str] = {}
        self.at: datetime.datetime | None = None  # the time of the newest line from the agent (the node's clock)

    def take(self, level: str, message: str, at: datetime.datetime | None) -> None:
        status, stage, validation = _STATUS.match(message), _STAGE.match(message), _VALIDATION.match(message)
        if message == "Assisted Service API is available":
            self.api = True
        elif message == "Kubelet is running":
            self.kubelet = True
        elif message in CLUSTER_STATUSES:
            self.cluster = {"status": CLUSTER_STATUSES[message], "status_info": message}
        elif validation and level in ("warning", "error"):
            self.failing[validation.group(2)] = validation.group(2)
        if status:
            self.host.update(status=status.group(3), status_info=status.group(4) or "")
        if stage:  # a progress report moves the host as assisted-service's UpdateInstallProgress does
            name, info = stage.group(2), stage.group(3) or ""
            percentage = int(info[:-1]) if re.fullmatch(r"\d{1,3}%", info) else None
            self.host["progress"] = {"current_stage": name, "installation_percentage": percentage}
            moved = STAGE_STATUS.get(name, "installing-in-progress")
            self.host.update(status=moved, status_info=f"Failed - {info}" if name == "Failed" else name)
        if status or stage or level != "info" or not (self.api or self.kubelet):
            self.event = message
        if not self.kubelet:  # what the live ISO's agent said, last at this time
            self.at = at or self.at

    def observation(self) -> Observation:
        if self.kubelet:  # the installed system answers: the agent of the live ISO is gone
            return Observation("unreachable", "its agent stopped (seen from the cluster)", kubelet="cluster")
        if not self.api:
            return Observation("unreachable", "the cluster's monitor has not reached its agent yet")
        checks = [{"id": m, "status": "failure", "message": m} for m in self.failing]
        host = dict(self.host, validations_info={"cluster": checks}) if self.host or checks else None
        return Observation("answered", cluster=self.cluster, host=host, event={"message": self.event}, at=self.at)


class ClusterMonitor:
    """node-joiner monitor-add-nodes in a run of its own (``run``: a NodeJoinerRun, entered by ``start``)."""

    def __init__(self, run: nj.NodeJoinerRun, addresses: list[str]) -> None:
        self.run, self.addresses = run, addresses
        self.seen = {address: Seen() for address in addresses}
        self.since: str | None = None  # the API server's timestamp of the newest line read
        self.ended: str | None = None  # why the monitor stopped before its hosts were done
        self.began: float | None = None  # when its first line was read (time.monotonic)
        self.created = time.monotonic()

    def start(self, image: Callable[[], str]) -> None:
        """Create the run's objects and the pod; ``image()`` looks up the node-joiner image (it may run a pod)."""
        self.run.__enter__()
        try:
            container: dict[str, Any] = {"name": POD, "image": image(), "imagePullPolicy": "IfNotPresent"}
            container.update(command=["/bin/bash", "-c", monitor_command(self.addresses)])
            container["volumeMounts"] = [{"name": "assets", "mountPath": nj.ASSETS}]
            assets = {"name": "assets", "emptyDir": {"sizeLimit": "4Gi"}}
            self.run.create(nj.pod_manifest(self.run.namespace, self.run.run_id, POD, container, volumes=[assets]))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self.run.__exit__(None, None, None)

    def poll(self) -> None:
        """Read the lines written since the last poll; note when the pod has stopped."""
        query = {"container": POD, "timestamps": "true", **({"sinceTime": self.since[:19] + "Z"} if self.since else {})}
        target = k8s.with_query(core_target("pods", POD + "/log", self.run.ns_name), **query)
        try:
            text = self.run.api.request("GET", target, raw=True) or ""
        except k8s.ApiAccessError as error:
            if error.status != 400:  # 400: the container has not started yet
                raise
            text = ""
        before = self.since
        for line in text.splitlines():
            stamp = line.split(" ", 1)[0]
            parsed = parse_line(line)
            if parsed is None or (before is not None and stamp <= before):
                continue  # sinceTime has whole seconds: lines already read come again (their times are fixed-width)
            self.since = max(self.since or stamp, stamp)
            self.began = self.began or time.monotonic()
            address, level, message = parsed
            if address in self.seen:
                self.seen[address].take(level, message, _moment(stamp))
            elif level in ("fatal", "error"):
                self.ended = f"node-joiner monitor-add-nodes failed: {message}"
        phase = dig(self.run.api.get(core_target("pods", POD, self.run.ns_name)), "status", "phase")
        if phase in ("Succeeded", "Failed") and not self.ended:
            self.ended = f"the monitor pod {self.run.ns_name}/{POD} ended ({phase})"

    def asked_once(self) -> bool:
        """Whether every host had one round of the monitor (it loops every 5 s), or it ended, or it could not start
        within LOOK_LIMIT seconds."""
        now = time.monotonic()
        return bool(self.ended) or (self.began or now) + ROUND <= now or now - self.created >= LOOK_LIMIT

    def describe(self) -> str:
        if self.ended:
            return f" ({self.ended})"
        return "" if self.began else f" (its pod {self.run.ns_name}/{POD} has not started)"


def start_monitor(
    params: Json, follow_from: str, records: list[Json], api: k8s.ApiClient, say: Say, warnings: list[str]
) -> ClusterMonitor | None:
    """The monitor pod that follows from inside the cluster the hosts this controller does not reach (follow_from
    auto or cluster); None with auto when this identity may not run it (a warning says so)."""
    addresses = [r["address"] for r in records if r.get("state") != "joined"]
    if follow_from == "controller" or not addresses:
        return None
    facts = params.get("cluster") or {}
    try:
        facts = facts if facts.get("release_image") and facts.get("version") else image_facts(api)
        release = releases.release(facts["version"])
        run = nj.NodeJoinerRun(api, uuid.uuid4().hex[:12], release, facts.get("proxy_status"))
        run.owner = nj.owner_tag()
        monitor = ClusterMonitor(run, addresses)
        monitor.start(lambda: run.node_joiner_image(params.get("node_joiner_image"), facts["release_image"]))
    except Day2Error as error:
        if follow_from == "cluster":
            raise Day2Error(f"cannot follow the hosts from inside the cluster: {error.message}") from None
        warnings.append(
            f"the hosts are followed from this controller only: the monitor pod cannot run ({error.message})"
        )
        return None
    where = "" if follow_from == "cluster" else "from here where this controller reaches them, else "
    where += f"from inside the cluster (node-joiner monitor-add-nodes in {run.ns_name})"
    say(f"following {len(addresses)} host(s) {where}")
    return monitor
