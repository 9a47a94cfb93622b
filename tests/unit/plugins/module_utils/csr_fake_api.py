# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A scripted fake of the CSR API for the approver tests (no HTTP), with real CSRs from csr_factory.

The fake keeps a store with resourceVersions and an event history like an API
server: a watch replays the events after its resourceVersion, then runs the
steps scripted for that watch session, then ends as if timeoutSeconds passed.
With kubelet=True it plays the new hosts' kubelets: an approved client CSR
creates the Node (NotReady) and files the serving CSR; an approved serving CSR
makes the Node Ready.
"""

import copy
import datetime

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.approver import CsrApprover
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import CLIENT_SIGNER
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import expected_nodes
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    NOW,
    client_csr,
    serving_csr,
)

MINUTE = datetime.timedelta(minutes=1)
IPS = {"worker-0": "127.0.111.20", "worker-1": "127.0.111.21", "worker-2": "127.0.111.22"}
EXISTING = ["master-0", "master-1", "master-2"]


def stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_object(name, ready=False, created=NOW - MINUTE, ip=None):
    return {
        "metadata": {"name": name, "creationTimestamp": stamp(created)},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "addresses": [
                {"type": "InternalIP", "address": ip or "127.0.111.10"},
                {"type": "Hostname", "address": name},
            ],
        },
    }


class FakeClock:
    """Monotonic seconds since the start; wall time is NOW plus those seconds."""

    def __init__(self):
        self.t = 0.0
        self.sleeps = []

    def monotonic(self):
        return self.t

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.t += seconds

    def now(self):
        return NOW + datetime.timedelta(seconds=self.t)


class FakeApi:
    def __init__(self, clock, csrs=(), nodes=(), kubelet=False, sessions=None, conflicts=None):
        self.clock = clock
        self.rv = 100
        self.history = []  # (rv, type, object)
        self.oldest_rv = 0  # a watch from before this gets 410 Gone
        self.csrs = {}
        self.nodes = {n: node_object(n, ready=True) for n in EXISTING}
        self.kubelet = kubelet
        self.sessions = list(sessions or [])
        self.conflicts = dict(conflicts or {})
        self.calls = []  # (verb, what)
        self.approval_log = []
        self.approval_bodies = []
        self.list_failures = []  # ApiAccessErrors raised by the next list_csrs calls
        for obj in csrs:
            self.put_csr(obj)
        for obj in nodes:
            self.nodes[obj["metadata"]["name"]] = obj

    # store
    def put_csr(self, obj, kind=None):
        obj = copy.deepcopy(obj)
        name = obj["metadata"]["name"]
        kind = kind or ("MODIFIED" if name in self.csrs else "ADDED")
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.csrs[name] = obj
        self.history.append((self.rv, kind, copy.deepcopy(obj)))
        return copy.deepcopy(obj)

    # the five calls of the driver
    def list_csrs(self):
        self.calls.append(("list", "csrs"))
        if self.list_failures:
            raise self.list_failures.pop(0)
        return [copy.deepcopy(o) for o in self.csrs.values()], str(self.rv)

    def list_nodes(self):
        self.calls.append(("list", "nodes"))
        return [copy.deepcopy(o) for o in self.nodes.values()]

    def get_csr(self, name):
        self.calls.append(("get", name))
        return copy.deepcopy(self.csrs.get(name))

    def approve(self, name, body):
        self.calls.append(("approve", name))
        self.approval_bodies.append(body)
        current = self.csrs.get(name)
        if current is None:
            raise ApiAccessError("not found", status=404)
        if self.conflicts.get(name):
            self.conflicts[name] -= 1
            self.put_csr(current)  # someone else updated it meanwhile
            raise ApiAccessError("conflict", status=409)
        if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise ApiAccessError("conflict: stale resourceVersion", status=409)
        updated = copy.deepcopy(current)
        updated["status"]["conditions"] = body["status"]["conditions"]
        self.approval_log.append(name)
        result = self.put_csr(updated)
        if self.kubelet:
            self._kubelet_reacts(result)
        return result

    def watch_csrs(self, resource_version, timeout_seconds):
        self.calls.append(("watch", resource_version))
        steps = self.sessions.pop(0) if self.sessions else []
        return self._watch(int(resource_version), timeout_seconds, steps)

    def _watch(self, since, timeout_seconds, steps):
        if since < self.oldest_rv:
            yield {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
            return
        position = since
        steps = list(steps)
        while True:
            newer = [h for h in self.history if h[0] > position]
            for rv, kind, obj in newer:
                position = rv
                yield {"type": kind, "object": copy.deepcopy(obj)}
            if newer:
                continue  # handling those events may have made more (approvals, the kubelet)
            if not steps:
                break
            step = steps.pop(0)
            if isinstance(step, Exception):
                raise step
            if isinstance(step, dict) and "type" in step:
                yield step
            elif callable(step):
                step(self)
            else:
                self.put_csr(step)
        self.clock.t += timeout_seconds  # the server held the watch open until timeoutSeconds

    def _kubelet_reacts(self, csr):
        host = csr["metadata"]["name"].split(".")[0]
        if csr["spec"]["signerName"] == CLIENT_SIGNER:
            self.nodes[host] = node_object(host, ready=False, created=self.clock.now(), ip=IPS[host])
            self.put_csr(
                serving_csr(host, ips=[IPS[host]], dns=[host], name=host + ".serving", created=self.clock.now())
            )
        else:
            self.nodes[host]["status"]["conditions"][0]["status"] = "True"

    def count(self, verb):
        return sum(1 for call in self.calls if call[0] == verb)


def expected(*hosts, **extra):
    return [dict({"name": h, "addresses": [IPS[h]], "dns_names": [h]}, **extra) for h in hosts]


def legit_client(host, **kwargs):
    kwargs.setdefault("name", host + ".client")
    return client_csr(host, **kwargs)


def run(api, clock, hosts, **kwargs):
    kwargs.setdefault("wait_timeout", 600)
    kwargs.setdefault("wait_sleep", 10)
    driver = CsrApprover(
        api, expected_nodes(hosts), monotonic=clock.monotonic, sleep=clock.sleep, now=clock.now, **kwargs
    )
    return driver.run()


def reasons(result):
    return {s["name"]: s["reason"] for s in result["skipped_csrs"]}
