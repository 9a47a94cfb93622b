# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one engine behind agent_wait and csr_approve: one loop follows every new host, each on its own.

Every round (``wait_sleep``) polls the agents of the hosts that have not rebooted yet (``agent``; the kubelet port
when the agent does not answer). agent_wait stops there, at the target it was given (discovered, validated,
installing, rebooted). csr_approve (target ``ready``) then reads the CSRs and Nodes once and moves every host on:

- waiting (nothing answered) -> installing (its agent answers) -> rebooted (its kubelet answers on the installed
  system: a TLS handshake, or the alert internal_error that a kubelet without a serving certificate sends, as
  openshift/installer pkg/agent/monitoraddnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c isKubeletRunningOnNode
  counts it; or its Node or an approved client CSR exists);
- settling: ``settle_seconds`` after the kubelet answered, before the first approval (a second key shows up here);
  then its client CSRs with the kubelet's key are approved (``csr.host_csrs``); CSRs created before the live ISO's
  agent last answered are not the installed system's;
- half-joined: its Node exists, not Ready: its labels and taints are set as soon as the Node registers, its serving
  CSR is approved; joined: the Node is Ready and carries its labels and taints;
- failed: stopped with the reason (agent failure, a second key, a timeout); the other hosts go on.

``decide`` is the one decision of what to approve; check mode (``predict``) asks it too. Each approval reads the
CSR again first (``ApiClient.update_fresh``), so nothing is approved twice, and a re-run takes every host where it
stands. ``say`` prints one progress line.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, cast

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import clock, k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import signals_raise
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import agent
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import csr as policy
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import token as tokens
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.cluster import APPROVED_BY, Cluster
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.monitor import (
    ClusterMonitor,
    Say,
    start_monitor,
)

WAITING, INSTALLING, REBOOTED, SETTLING = "waiting", "installing", "rebooted", "settling"
HALF_JOINED, JOINED, FAILED = "half-joined", "joined", "failed"
PHASES = (WAITING, INSTALLING, REBOOTED, SETTLING, HALF_JOINED, JOINED, FAILED)
Json = dict[str, Any]
Moment = datetime.datetime
SECRET_TARGET = k8s.core_target("secrets", tokens.SECRET_NAME, tokens.SECRET_NAMESPACE)


class JoinError(Day2Error):
    """The loop stopped; ``result`` holds every host's state so far."""


@dataclasses.dataclass
class Options:
    """How the loop runs (the options of agent_wait and csr_approve, checked)."""

    target: str = "ready"
    wait: bool = True
    settle_seconds: int = 10
    boot_timeout: int = 1800
    install_timeout: int = 5400
    join_timeout: int = 1800
    wait_sleep: int = 5
    validation_grace: int = 600
    clock_skew: int = 2
    max_failed_hosts: int = 0
    request_timeout: int = 5
    agent_port: int = 8090
    kubelet_port: int = 10250
    first_header: str | None = None
    follow_from: str = "auto"


def options(params: Json, target: str, environ: dict[str, str]) -> Options:
    """Options from the module parameters; the ports fall back to the environment (the lab's only switch)."""
    for name in ("settle_seconds", "wait_sleep", "request_timeout", "boot_timeout", "install_timeout"):
        if name in params and params[name] < 1:
            raise InputError(f"{name} must be at least 1 second, got {params[name]}")
    if params.get("max_failed_hosts", 0) < 0 or params.get("clock_skew", 0) < 0:
        raise InputError("max_failed_hosts and clock_skew cannot be negative")
    try:
        grace = clock.parse_duration(params.get("validation_grace", 600))
    except ValueError as error:
        raise InputError(f"validation_grace: {error}")
    given = {f.name: params[f.name] for f in dataclasses.fields(Options) if params.get(f.name) is not None}
    given.update(target=target, validation_grace=grace)
    try:  # OPENSHIFT_AGENT_DAY2_AGENT_PORT, OPENSHIFT_AGENT_DAY2_KUBELET_PORT
        for port, default in (("agent_port", Options.agent_port), ("kubelet_port", Options.kubelet_port)):
            given[port] = params.get(port) or int(environ.get(f"OPENSHIFT_AGENT_DAY2_{port.upper()}") or default)
    except ValueError as error:
        raise InputError(
            "agent_port/kubelet_port: OPENSHIFT_AGENT_DAY2_AGENT_PORT and OPENSHIFT_AGENT_DAY2_KUBELET_PORT must be "
            f"port numbers ({error}); unset them or give agent_port and kubelet_port"
        )
    given["first_header"] = None if params.get("first_header") in (None, "auto") else params["first_header"]
    return Options(**given)


def host_records(hosts: list[Json], installed_after: Json | None = None) -> list[Json]:
    """The hosts to follow (name, address, addresses, ...) checked, names lower-cased as the kubelet registers them;
    ``installed_after`` (per host, RFC 3339) becomes the host's ``installed_after`` datetime."""
    after = {str(name).lower(): value for name, value in (installed_after or {}).items() if value}
    records, problems = [], []
    for index, host in enumerate(hosts):
        name = str(host.get("name") or "").strip().lower()
        addresses = [str(a) for a in host.get("addresses") or [host.get("address")] if a]
        where = "hosts[%d] (%s)" % (index, name or "no name")
        if not name or not host.get("address"):
            problems.append(f"{where}: expected name and address, found {sorted(k for k in host if host[k])}")
        elif any(wildcard in name for wildcard in "*?"):
            problems.append(f"{where}: a wildcard in the name; name every host, there is no approve-all")
        elif any(parse_ip(a) is None for a in addresses):
            problems.append(
                f"{where}: addresses {addresses} must be IP addresses (a serving certificate is checked against them)"
            )
        else:
            try:
                moment = clock.parse_rfc3339(str(after.pop(name))) if name in after else None
                records.append(
                    dict(host, name=name, address=str(host["address"]), addresses=addresses, installed_after=moment)
                )
            except ValueError as error:  # installed_after's timestamp
                problems.append(f"installed_after[{name}]: {error}")
    names = collections.Counter(record["name"] for record in records)
    problems += [f"host {n} is listed twice; list every host once" for n in sorted(names) if names[n] > 1]
    problems += [f"installed_after names hosts that are not followed: {', '.join(sorted(after))}"] if after else []
    problems += ["hosts is empty: give at least one {name, address}"] if not hosts else []
    if problems:
        raise InputError("; ".join(problems))
    return records


def decide(keys: policy.HostCsrs, node: Json | None, rebooted: bool, settled: bool) -> list[policy.ParsedCSR]:
    """The CSRs of one host to approve now: its kubelet's client CSRs once it rebooted and settled (while it has no
    Node and no approved client CSR), its serving CSR once its client certificate is issued."""
    if node is None and not keys.approved:
        return list(keys.client) if rebooted and settled else []
    return list(keys.serving)


def describe_marks(labels: Json, taints: list[Json]) -> str:
    """``labels a=b; taints k=v:NoSchedule`` for a progress line."""
    shown = ["labels " + ", ".join(f"{key}={value}" for key, value in sorted(labels.items()))] if labels else []
    written = (f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}" for t in taints)
    return "; ".join(shown + (["taints " + ", ".join(written)] if taints else []))


class Host:
    """Everything the loop knows about one host: its agent's progress, the phase and when each began, the
    approvals made for it, and why it failed."""

    def __init__(self, record: Json, options: Options, started: Moment, auth: agent.AuthChoice | None = None) -> None:
        self.name, self.address, self.addresses = record["name"], record["address"], record["addresses"]
        self.labels = dict(record.get("labels") or record.get("node_labels") or {})
        self.taints = list(record.get("taints") or record.get("node_taints") or [])
        self.installed_after: Moment | None = record.get("installed_after")
        self.progress = agent.HostProgress(self.name, self.address, options.agent_port)
        ports = (options.agent_port, options.kubelet_port)
        mac = record.get("mac_address") or (record.get("interfaces") or [{}])[0].get("mac_address")
        self.agent = agent.AgentClient(self.name, self.address, mac, ports, auth, options.request_timeout)
        self.phase = JOINED if record.get("state") == "joined" else WAITING
        self.phase_started = {WAITING: started}
        self.rebooted_at: Moment | None = None  # when this run first saw it run its installed system
        self.rebooted_by: str | None = None
        self.approved: list[Json] = []
        self.failure: str | None = None
        self.failed_in: str | None = None
        self.waiting_for: str | None = None
        self.refused: dict[str, str] = {}  # its CSRs the policy refuses now: name -> reason: message
        self.marked = not (self.labels or self.taints)
        self.disk_written = False
        self.via: str | None = None  # where it was heard from: controller or cluster
        self._shown: tuple[Any, ...] | None = None

    @property
    def done(self) -> bool:
        return self.phase in (JOINED, FAILED)

    def set_phase(self, phase: str, now: Moment) -> None:
        if not self.done and phase != self.phase:
            self.phase = phase
            self.phase_started.setdefault(phase, now)

    def rebooted(self, how: str, now: Moment) -> None:
        if self.rebooted_at is None:
            self.rebooted_at, self.rebooted_by = now, how
        if self.phase in (WAITING, INSTALLING):
            self.set_phase(REBOOTED, now)

    def fail(self, message: str, now: Moment) -> None:
        if not self.done:
            self.failure, self.failed_in, self.waiting_for = message, self.phase, None
            self.set_phase(FAILED, now)

    def expected(self, offset: float) -> policy.Expected:
        """The host as the policy sees it; ``not_before`` is the last time the live ISO's agent answered or the
        given installed_after, the later one, in the API server's clock."""
        known = [when for when in (self.progress.last_answer, self.installed_after) if when is not None]
        not_before = max(known) + datetime.timedelta(seconds=offset) if known else None
        return policy.Expected(self.name, frozenset(parse_ip(a) for a in self.addresses), frozenset(), not_before)

    def status_line(self) -> str | None:
        """The line to show when something shown changed since the last call, else None."""
        p = self.progress
        key = (self.phase, p.status, p.stage, p.percentage, self.waiting_for)
        if key == self._shown:
            return None
        self._shown = key
        parts = [self.phase if self.progress.answered or self.phase != WAITING else f"{WAITING}; nothing answers yet"]
        if p.status and self.phase in (WAITING, INSTALLING, REBOOTED):
            stage = f" at {p.stage}" if p.stage else ""
            parts.append(f"agent: {p.status}{stage}{f' ({p.percentage}%)' if p.percentage is not None else ''}")
        return "; ".join(parts + [text for text in (self.waiting_for, self.failure) if text])

    def durations(self, end: Moment) -> dict[str, float]:
        seen = sorted(self.phase_started.items(), key=lambda item: (item[1], PHASES.index(item[0])))
        return {
            phase: round(((seen[i + 1][1] if i + 1 < len(seen) else end) - begun).total_seconds(), 1)
            for i, (phase, begun) in enumerate(seen)
            if phase not in (JOINED, FAILED)
        }

    def summary_line(self, end: Moment) -> str:
        phases = ", ".join("{} {}s".format(*item) for item in self.durations(end).items()) or "no phase seen"
        approvals = ", ".join("{kind} {name}".format(**a) for a in self.approved) or "none"
        text = f"{self.name}: {self.phase} ({phases}); approved in this run: {approvals}"
        text += f"; agent token in {self.progress.auth_header}" if self.progress.auth_header else ""
        text += "; followed from the cluster" if self.via == "cluster" else ""
        return text + (f"; {self.failure}" if self.failure else "")

    def summary(self, end: Moment) -> Json:
        return {
            "name": self.name,
            "address": self.address,
            "state": self.phase,
            "reached": self.progress.phase(),
            "failed_in": self.failed_in,
            "problem": self.failure,
            "phases": self.durations(end),
            "phase_started": {phase: clock.format_rfc3339(when) for phase, when in self.phase_started.items()},
            "rebooted_by": self.rebooted_by,
            "followed_from": self.via,
            "approved": list(self.approved),
            "refused": dict(self.refused),
            "summary": self.summary_line(end),
            "agent": self.progress.result(),
        }


class JoinRun:
    """One run of the loop over ``hosts`` (records from host_records)."""

    def __init__(
        self,
        hosts: list[Json],
        options: Options,
        say: Say,
        token: tokens.AgentToken | None = None,
        cluster: Cluster | None = None,
        server_offset: float = 0.0,
        on_disk_written: Callable[[str], str] | None = None,
        still_wanted: Callable[[], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], Moment] = clock.utcnow,
        network: policy.Network | None = None,
        monitor: ClusterMonitor | None = None,
    ) -> None:
        self.options, self.say, self.cluster, self.network = options, say, cluster, network or policy.Network()
        self.monitor = monitor  # follows from inside the cluster the hosts this controller does not reach
        self.server_offset = server_offset
        self.on_disk_written, self.still_wanted = on_disk_written, still_wanted
        self._sleep, self._now = sleep, now
        self.started = now()
        auth = agent.AuthChoice(token, options.first_header) if token is not None else None
        self.hosts = [Host(record, options, self.started, auth) for record in hosts]
        self.approved: list[Json] = []
        self.marked: list[str] = []  # the Nodes whose labels or taints this run set
        self.api_errors = self.rounds = 0
        self.warnings: list[str] = []

    @property
    def joining(self) -> bool:
        return self.options.target == "ready"

    def finished(self, host: Host) -> bool:
        """Joined with its labels and taints, failed, or (agent_wait) at the target."""
        done = host.phase == JOINED and host.marked if self.joining else host.progress.reached(self.options.target)
        return host.phase == FAILED or done

    def run(self) -> Json:
        try:
            return self._rounds()
        finally:
            if self.monitor is not None:
                self.monitor.stop()

    def _rounds(self) -> Json:
        with ThreadPoolExecutor(max_workers=max(1, min(32, len(self.hosts)))) as pool:
            while True:
                self.rounds += 1
                # The hosts not rebooted yet and not finished (for csr_approve, nor joined in an earlier run).
                polled = [
                    h for h in self.hosts if not (h.done if self.joining else self.finished(h)) and not h.rebooted_at
                ]
                if self.monitor is not None and polled:
                    try:
                        self.monitor.poll()
                    except k8s.ApiAccessError as error:
                        self._api_error(error, f"cannot read the monitor pod in the cluster: {error}", self._now())
                for host, seen in zip(polled, pool.map(self._poll, polled)):
                    self._observed(host, seen, self._now())
                if self.joining:
                    self._look_at_cluster(self._now())
                self._eject(self._now())
                self._check_timeouts(self._now())
                self._show(self._now())
                if all(self.finished(host) for host in self.hosts) or not (self.options.wait or self._looking()):
                    break
                if self.still_wanted is not None and not self.still_wanted():
                    raise JoinError(
                        "the run that started this loop is gone (ansible-playbook was stopped): stopping; "
                        "run the playbook again to go on",
                        self.result(self._now()),
                    )
                self._sleep(self.options.wait_sleep)
        return self._finish(self._now())

    def _looking(self) -> bool:
        """One look (wait false) with a monitor lasts until it asked every host once, or it ended."""
        unheard = [h for h in self.hosts if h.via is None and not self.finished(h)]
        return self.monitor is not None and bool(unheard) and not self.monitor.asked_once()

    def _api_error(self, error: k8s.ApiAccessError, message: str, now: Moment, passing: tuple[int, ...] = ()) -> None:
        """A transient failure (or one of the ``passing`` statuses) is counted, the next round tries again; any other
        stops the loop with ``message``."""
        if not k8s.is_transient(error.status) and error.status not in passing:
            raise JoinError(message, self.result(now))
        self.api_errors += 1

    def _poll(self, host: Host) -> Any:
        """One look at ``host``: from this controller, else (a host it never reached) from the cluster's monitor."""
        if self.monitor is not None and (host.via == "cluster" or self.options.follow_from == "cluster"):
            host.via = "cluster"
            return self._from_cluster(host)
        seen = host.agent.poll()
        if seen.kind != "unreachable" or seen.kubelet:
            host.via = "controller"
        elif self.monitor is not None and host.via is None:
            from_cluster = self._from_cluster(host)
            if from_cluster.kind != "unreachable" or from_cluster.kubelet:
                host.via = "cluster"  # this controller does not reach it: it is followed from the cluster from now on
                return from_cluster
        return seen

    def _from_cluster(self, host: Host) -> Any:
        """The monitor's observation, its time in this controller's clock (the log's times are the cluster's)."""
        seen = cast(ClusterMonitor, self.monitor).seen[host.address].observation()
        shifted = seen.at - datetime.timedelta(seconds=self.server_offset) if seen.at else None
        return dataclasses.replace(seen, at=shifted)

    def _observed(self, host: Host, seen: Any, now: Moment) -> None:
        host.progress.observe(seen, now)
        if host.progress.answered and host.phase == WAITING:
            host.set_phase(INSTALLING, now)
        if seen.kubelet:
            host.rebooted(f"its kubelet answers ({seen.kubelet})", now)
        target = self.options.target if not self.joining else "rebooted"
        failure = None if seen.kubelet else host.progress.failure(self.options.validation_grace, now, target)
        if failure:
            host.fail(failure, now)

    def _read_cluster(self, now: Moment) -> tuple[Json, dict[str, Json], str | None, dict[str, policy.HostCsrs]]:
        """The cluster's CSR objects by name and its Nodes, read now; the flood guard's message (None: no flood)
        and every host's CSRs as the policy sorts them at ``now`` (none in a flood)."""
        cluster = cast(Cluster, self.cluster)  # only called with a cluster
        parsed = [(policy.parse_csr(obj), obj) for obj in cluster.csrs()]
        nodes = cluster.nodes()
        server_now = now + datetime.timedelta(seconds=self.server_offset)
        csrs = [csr for csr, _obj in parsed]
        expected = {host.name: host.expected(self.server_offset) for host in self.hosts}
        flood = policy.flood(csrs, frozenset(expected), server_now)
        skew = datetime.timedelta(seconds=self.options.clock_skew)
        sorted_csrs = {} if flood else policy.each_host(csrs, expected, nodes, server_now, skew, self.network)
        return {str(csr.name): obj for csr, obj in parsed}, nodes, flood, sorted_csrs

    def _look_at_cluster(self, now: Moment) -> None:
        active = [host for host in self.hosts if not host.done or not host.marked]
        if not active:
            return
        try:
            objects, nodes, flood, sorted_csrs = self._read_cluster(now)
        except k8s.ApiAccessError as error:
            return self._api_error(error, f"cannot read CSRs and Nodes: {error}", now)
        for host in active:
            # In a flood only the hosts that joined earlier get their labels and taints: that approves nothing.
            if not flood or host.phase == JOINED:
                self._mark(host, nodes.get(host.name), now)
            if flood:
                host.fail(f"flood guard: {flood}", now)
            elif not host.done:
                self._move_on(host, nodes.get(host.name), sorted_csrs[host.name], objects, now)

    def _mark(self, host: Host, node: Json | None, now: Moment) -> None:
        """Labels and taints as soon as the Node registers, before it is Ready; a conflict is read again."""
        if host.marked:
            return
        if node is None:
            if host.phase == JOINED:  # joined in an earlier run, its Node since deleted: nothing to mark
                host.marked = True
                self.warnings.append(f"{host.name}: its Node is gone; its labels and taints were not set")
            return
        try:
            if self.cluster and self.cluster.mark(host.name, host.labels, host.taints):
                self.marked.append(host.name)
                self.say(
                    f"{clock.format_rfc3339(now)} {host.name}: labels and taints set on its Node "
                    f"({describe_marks(host.labels, host.taints)})"
                )
            host.marked = True
        except k8s.ApiAccessError as error:
            if error.status != 409 and not k8s.is_transient(error.status):
                raise JoinError(f"cannot set the labels and taints of Node {host.name}: {error}", self.result(now))

    def _move_on(self, host: Host, node: Json | None, keys: policy.HostCsrs, objects: Json, now: Moment) -> None:
        if node is not None or keys.approved:
            host.rebooted("its Node exists" if node is not None else "a client CSR of it is approved", now)
        if problem := keys.problem(host.name):
            host.fail(problem, now)
            return
        host.refused = dict(keys.refused)
        if node is not None and k8s.condition_true(node, "Ready"):
            if host.marked:
                host.waiting_for = None
                host.set_phase(JOINED, now)
                if keys.refused_serving:  # Ready without a serving certificate: oc logs and exec then fail
                    self.warnings.append(f"{host.name}: joined, its serving CSR pending{keys.refusals()}")
            else:
                host.waiting_for = "Node Ready; setting its labels and taints"
            return
        if host.rebooted_at is None:
            pending = ", ".join(str(csr.name) for csr in keys.pending)
            waits = f"its certificate request {pending} waits until its kubelet answers on the installed system"
            host.waiting_for = waits if pending else None
            return
        settled_at = host.rebooted_at + datetime.timedelta(seconds=self.options.settle_seconds)
        chosen = decide(keys, node, True, now >= settled_at)
        if node is None and not keys.approved:
            host.set_phase(SETTLING, now)
            if now < settled_at:
                host.waiting_for = (
                    f"its kubelet answers; its client certificate is approved at {clock.format_rfc3339(settled_at)}, "
                    "unless a certificate request from another key names this host first (that would stop it)"
                )
            elif not chosen:
                host.waiting_for = "waiting for its kubelet's first certificate request" + keys.refusals()
            else:
                host.waiting_for = "client certificate approved; waiting for its Node to register"
        else:
            host.set_phase(HALF_JOINED, now)
            registered = "its Node registered, not Ready yet; waiting for its serving certificate request"
            host.waiting_for = ("waiting for its Node to register" if node is None else registered) + keys.refusals()
        for csr in chosen:
            self._approve(host, objects[str(csr.name)], csr.kind, now)

    def _approve(self, host: Host, listed: Json, kind: str, now: Moment) -> None:
        cluster = cast(Cluster, self.cluster)  # only called with a cluster
        name = listed["metadata"]["name"]
        message = f"Approved by {APPROVED_BY}: {kind} CSR of new host {host.name} (kubelet answered, one public key)"
        try:
            done = cluster.approve(listed, message, now + datetime.timedelta(seconds=self.server_offset))
        except k8s.ApiAccessError as error:  # changed meanwhile (404, 409) or still pending: the next round decides
            why = "The identity needs update on certificatesigningrequests/approval and approve on the kubelet signers"
            return self._api_error(
                error, f"cannot approve CSR {name} of {host.name}: {error}. {why} (docs/rbac.md)", now, (404, 409)
            )
        if done:
            entry = {"name": name, "node": host.name, "kind": kind, "approved_at": clock.format_rfc3339(now)}
            host.approved.append(entry)
            self.approved.append(entry)
            self.say(f"{clock.format_rfc3339(now)} {host.name}: approved its {kind} certificate request {name}")

    def _eject(self, now: Moment) -> None:
        """The virtual CD goes once the disk is written (the agent reports Rebooting, or the installed system
        answers), not before: the installer reads the ISO until then."""
        for host in self.hosts:
            if self.on_disk_written is None or host.disk_written or host.phase == FAILED:
                continue
            if host.progress.disk_written or host.rebooted_at is not None:
                host.disk_written = True
                try:
                    said = self.on_disk_written(host.name)
                except Day2Error as error:
                    said = f"could not eject the virtual CD: {error.message}"
                    self.warnings.append(f"{host.name}: {said}")
                self.say(f"{clock.format_rfc3339(now)} {host.name}: the disk is written; {said}")

    def _check_timeouts(self, now: Moment) -> None:
        elapsed = (now - self.started).total_seconds()
        o = self.options
        for host in self.hosts:
            if self.finished(host):
                continue
            heard = host.progress.answered or host.rebooted_at is not None
            if not heard and elapsed >= o.boot_timeout:
                never = agent.NEVER_ANSWERED % (host.address, o.agent_port)
                if self.monitor is not None:
                    never += f"; nor did it answer the cluster's monitor{self.monitor.describe()}"
                host.fail(
                    f"nothing answered within day2_boot_timeout ({o.boot_timeout} s): {never}; its kubelet port "
                    f"{o.kubelet_port} did not answer either. Boot it (check its console) and run again",
                    now,
                )
            elif host.rebooted_at is None and elapsed >= o.install_timeout:
                what = "rebooted into the installed system" if self.joining else f"at {o.target}"
                host.fail(f"not {what} within {o.install_timeout} s: {host.progress.describe()}", now)
            elif host.rebooted_at is not None and (now - host.rebooted_at).total_seconds() >= o.join_timeout:
                host.fail(
                    f"not Ready within {o.join_timeout} s after it rebooted ({host.rebooted_by}): "
                    f"{host.waiting_for or host.phase}",
                    now,
                )

    def _show(self, now: Moment) -> None:
        for host in self.hosts:
            if line := host.status_line():
                self.say(f"{clock.format_rfc3339(now)} {host.name}: {line}")

    def result(self, now: Moment) -> Json:
        return {
            "changed": bool(self.approved or self.marked),
            "hosts": {host.name: host.summary(now) for host in self.hosts},
            "approved": list(self.approved),
            "joined": sorted(h.name for h in self.hosts if h.phase == JOINED),
            "reached": [] if self.joining else sorted(h.name for h in self.done()),
            "failed_hosts": sorted(h.name for h in self.hosts if h.phase == FAILED),
            "duration": round((now - self.started).total_seconds(), 1),
            "rounds": self.rounds,
            "api_errors": self.api_errors,
            "server_clock_offset": round(self.server_offset, 3),
            "warnings": list(self.warnings),
            "outcome": self.outcome(),
            "summary": [self.outcome(), *(host.summary_line(now) for host in self.hosts)],
        }

    def done(self) -> list[Host]:
        """The hosts that joined (csr_approve) or reached the target (agent_wait)."""
        if self.joining:
            return [h for h in self.hosts if h.phase == JOINED]
        return [h for h in self.hosts if h.phase != FAILED and h.progress.reached(self.options.target)]

    def outcome(self) -> str:
        """The run's outcome in one sentence, first in the summary."""
        failed = ", ".join(h.name for h in self.hosts if h.phase == FAILED)
        what = "joined the cluster" if self.joining else f"reached {self.options.target}"
        return f"{len(self.done())} of {len(self.hosts)} host(s) {what}" + (f"; failed: {failed}" if failed else "")

    def _finish(self, now: Moment) -> Json:
        result = self.result(now)
        self.say(f"summary: {result['outcome']}")
        for host in self.hosts:
            self.say(f"summary {host.summary_line(now)}")
        failed = [host for host in self.hosts if host.phase == FAILED]
        if len(failed) > self.options.max_failed_hosts:
            done = f"{len(self.done())} " + ("joined" if self.joining else f"reached {self.options.target}")
            reasons = " | ".join(f"{host.name}: {host.failure}" for host in failed)
            raise JoinError(
                f"{len(failed)} of {len(self.hosts)} host(s) failed (day2_max_failed_hosts is "
                f"{self.options.max_failed_hosts}), {done}: {reasons}",
                result,
            )
        if failed:
            within = f"within day2_max_failed_hosts ({self.options.max_failed_hosts})"
            result["warnings"].append(f"{len(failed)} host(s) failed, {within}: {', '.join(h.name for h in failed)}")
        return result

    def predict(self) -> Json:
        """Check mode: whom the loop would follow where and, from the cluster's CSRs and Nodes as they are, which
        CSRs ``decide`` accepts now (a run approves a host's client CSRs once its kubelet answered and the settle
        period passed). Nothing is asked of an agent and nothing is written."""
        o = self.options
        follow = [
            {
                "name": h.name,
                "address": h.address,
                "agent_url": agent.agent_url(h.address, o.agent_port),
                "addresses": h.addresses,
                "kubelet": "%s:%d" % (agent.bracketed(h.address), o.kubelet_port),
                "until": o.target if o.target in agent.TARGETS else "ready",
                "from": o.follow_from,
            }
            for h in self.hosts
        ]
        would: list[Json] = []
        if self.joining and self.cluster is not None:
            _objects, nodes, flood, sorted_csrs = self._read_cluster(self._now())
            would = [
                {"name": c.name, "node": h.name, "signer": c.signer, "created": c.created_text}
                for h in self.hosts
                if not flood and h.phase != JOINED and sorted_csrs[h.name].problem(h.name) is None
                for c in decide(sorted_csrs[h.name], nodes.get(h.name), True, True)
            ]
        until = "its Node is Ready" if self.joining else f"it is {o.target}"
        others = " and its Node's other addresses in the machine networks" if self.network.machine_networks else ""
        lines = []
        for entry in follow:
            mine = ", ".join(w["name"] for w in would if w["node"] == entry["name"])
            when = f"now, once its kubelet answers: {mine}" if mine else "none yet (no CSR of this host is pending)"
            then = f"would approve {when}; its serving certificate may carry {', '.join(entry['addresses'])}{others}"
            if not self.joining:
                then = "nothing is asked of its agent in check mode"
            where = FOLLOWED_FROM[o.follow_from].format(**entry)
            lines.append(f"Check mode: {entry['name']} would be followed {where} until {until}; {then}")
        return {"changed": bool(would), "would_follow": follow, "would_approve": would, "msg": lines}


# Where check mode says each host would be followed from, by follow_from (its choices).
FOLLOWED_FROM = {
    "auto": "at {agent_url} (then its kubelet at {kubelet}), else from inside the cluster",
    "controller": "at {agent_url} (then its kubelet at {kubelet})",
    "cluster": "from inside the cluster (node-joiner monitor-add-nodes asks {address})",
}


def _ints(*names: str) -> dict[str, Json]:
    """Integer options, their defaults those of ``Options``."""
    return {name: {"type": "int", "default": getattr(Options, name)} for name in names}


# The options of the two faces of the loop (their documentation: plugins/modules/agent_wait.py, csr_approve.py).
FOLLOW_OPTIONS: dict[str, Json] = {
    "hosts": {"type": "list", "elements": "dict", "required": True},
    "cluster": {"type": "dict", "default": {}},
    **_ints("wait_sleep", "boot_timeout", "install_timeout", "max_failed_hosts", "request_timeout"),
    "validation_grace": {"type": "raw", "default": Options.validation_grace},
    "agent_port": {"type": "int"},
    "kubelet_port": {"type": "int"},
    "token": {"type": "str", "no_log": True},
    "first_header": {"type": "str", "default": "auto", "choices": ["auto", "Watcher-Authorization", "Authorization"]},
    "follow_from": {"type": "str", "default": "auto", "choices": list(FOLLOWED_FROM)},
    "node_joiner_image": {"type": "str"},
}
AGENT_WAIT_OPTIONS = dict(
    FOLLOW_OPTIONS,
    until={"type": "str", "default": "rebooted", "choices": list(agent.TARGETS)},
    wait={"type": "bool", "default": True},
)
CSR_APPROVE_OPTIONS = dict(
    FOLLOW_OPTIONS,
    **_ints("settle_seconds", "join_timeout", "clock_skew"),
    installed_after={"type": "dict", "default": {}},
)


def follow(
    params: Json, check_mode: bool, connect: Callable[[], tuple[Any, k8s.ApiClient]], say: Say, **hooks: Any
) -> Json:
    """One run of agent_wait (``until`` in params) or csr_approve: check the options, read the agent token, follow.
    ``connect`` gives (kubernetes.core client, ApiClient); ``hooks`` are JoinRun's on_disk_written, still_wanted."""
    target = params.get("until") or "ready"
    records = host_records(params["hosts"], params.get("installed_after"))
    o = options(params, target, dict(os.environ))
    hooks["network"] = policy.Network.of(params.get("cluster") or {})  # machine networks and VIPs, checked
    joining = target == "ready"
    # agent_wait needs the API only to read the token (csr_approve also its CSRs): not when given the token, nor in
    # check mode, which asks no agent (every request to an agent carries the token; the Secret may not exist yet)
    connected = connect() if joining or not (check_mode or params.get("token")) else None
    cluster = Cluster(connected[1], connected[0].client) if connected else None
    if check_mode:
        return JoinRun(records, o, say, cluster=cluster, network=hooks["network"]).predict()
    warnings = []
    try:
        if params.get("token") or cluster is None:
            token = tokens.AgentToken(params["token"].strip())
        else:
            token = tokens.watch_token(cluster.client.get(SECRET_TARGET))
    except tokens.AgentTokenError as error:
        if not joining:
            raise
        token = None
        warnings.append(f"the agents are not asked ({error}); a host counts as rebooted when its kubelet answers")
    if token is not None and o.first_header is None:
        o.first_header = token.header((params.get("cluster") or {}).get("version"))
    offset = cluster.server_offset() if joining and cluster else 0.0
    if offset is None:
        warnings.append("the API server sent no Date header: its clock is taken to be this one's")
    how = f"settle {o.settle_seconds}s, boot timeout {o.boot_timeout}s, at most {o.max_failed_hosts} failed"
    face, how = (APPROVED_BY, how) if joining else ("openshift_agent.day2.agent_wait", f"until {target}")
    say(f"{face}: following {len(records)} host(s): {', '.join(r['name'] for r in records)} ({how})")
    monitor = start_monitor(params, o.follow_from, records, connected[1], say, warnings) if connected else None
    run = JoinRun(records, o, say, token, cluster if joining else None, offset or 0.0, monitor=monitor, **hooks)
    run.warnings.extend(warnings)
    with signals_raise():
        result = run.run()
    result["token_info"] = dict(token.info(), first_header=o.first_header) if token else None
    return result
