# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Fakes for the engine tests (plugins/module_utils/_join/engine.py): an API server, scripted agents, a clock.

``FakeApi`` stands for kubernetes' DynamicClient under the collection's real ApiClient, so ``Cluster`` and
``ApiClient.update_fresh`` run as in production: it keeps CSRs, Nodes and the agent-auth-token Secret with
resourceVersions, refuses a stale write with 409 like an API server, and fails the requests it is told to. With
``kubelet=True`` it plays the new hosts' kubelets: an approved client CSR registers the Node (NotReady) and files
the serving CSR; an approved serving CSR makes the Node Ready.

``Poller`` replaces a host's AgentClient: each poll returns the next scripted Observation (the last repeats).
``FakeClock.sleep`` advances the time and runs what is planned for the next round, so nothing really sleeps.
"""

import copy
import datetime
import email.utils
import json
from urllib.parse import unquote

from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiClient, RetryPolicy
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import cluster as join_cluster
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import engine
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.agent import Observation
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import CLIENT_SIGNER
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import cluster, host
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    NOW,
    client_csr,
    serving_csr,
)

MINUTE = datetime.timedelta(minutes=1)
IPS = {"worker-%d" % i: "127.0.111.2%d" % i for i in range(5)}
EXISTING = ["master-0", "master-1", "master-2"]
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
NODES = "/api/v1/nodes"
SECRET = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"
MERGE_PATCH = "application/merge-patch+json"


def stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_object(name, ready=False, created=NOW - MINUTE, ip=None, labels=None, taints=None):
    obj = {
        "metadata": {
            "name": name,
            "creationTimestamp": stamp(created),
            "labels": dict(labels or {"kubernetes.io/hostname": name}),
        },
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "addresses": [
                {"type": "InternalIP", "address": ip or "127.0.111.10"},
                {"type": "Hostname", "address": name},
            ],
        },
    }
    if taints is not None:
        obj["spec"]["taints"] = list(taints)
    return obj


def merge(obj, patch):
    """RFC 7386, as the API server applies a merge patch."""
    for key, value in patch.items():
        if value is None:
            obj.pop(key, None)
        elif isinstance(value, dict) and isinstance(obj.get(key), dict):
            merge(obj[key], value)
        else:
            obj[key] = copy.deepcopy(value)
    return obj


class Response:
    def __init__(self, body, headers=None):
        self.data = json.dumps(body).encode() if body is not None else b""
        self.headers = headers or {}


def error(status, message="test"):
    return api_exception(ApiException(status=status, reason=message, body=json.dumps({"message": message})))


class FakeClock:
    """Wall time NOW plus the seconds slept; ``plan`` runs actions when a round begins (round 1 at start)."""

    def __init__(self):
        self.t = 0.0
        self.round = 1
        self.sleeps = []
        self.plan = {}

    def now(self):
        return NOW + datetime.timedelta(seconds=self.t)

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.t += seconds
        self.round += 1
        for action in self.plan.pop(self.round, []):
            action()

    def at_round(self, number, action):
        self.plan.setdefault(number, []).append(action)


class FakeApi:
    """The DynamicClient the engine's ApiClient sends its requests through."""

    def __init__(self, clock, csrs=(), nodes=(), kubelet=False, secret=None, server_date=None):
        self.clock = clock
        self.rv = 100
        self.csrs = {}
        self.nodes = {}
        self.kubelet = kubelet
        self.secret = secret
        self.server_date = server_date  # the Date header of GET /version (a POSIX time), None for none
        self.calls = []  # (method, path)
        self.approval_log = []
        self.approval_bodies = []
        self.patches = []  # (node name, patch)
        # (method, kind) -> what happens to the next requests of that kind, one each: a status fails it; a callable
        # runs first (it may change the store, as someone else would meanwhile). kind: csrs, csr, approval, nodes,
        # node, secret.
        self.failures = {}
        for name in EXISTING:
            self.put_node(node_object(name, ready=True))
        for obj in csrs:
            self.put_csr(obj)
        for obj in nodes:
            self.put_node(obj)

    # the store
    def _stored(self, obj):
        obj = copy.deepcopy(obj)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def put_csr(self, obj):
        stored = self._stored(obj)
        self.csrs[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)

    def put_node(self, obj):
        stored = self._stored(obj)
        self.nodes[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)

    def set_ready(self, name):
        node = copy.deepcopy(self.nodes[name])
        node["status"]["conditions"][0]["status"] = "True"
        self.put_node(node)

    def fail(self, method, kind, *statuses):
        self.failures.setdefault((method, kind), []).extend(statuses)

    def count(self, method, kind=None):
        return sum(1 for call in self.calls if call[0] == method and (kind is None or _kind(call[1]) == kind))

    # the transport
    def request(self, method, path, body=None, serialize=False, content_type=None, **params):
        self.calls.append((method, path))
        if path == "/version":
            headers = (
                {} if self.server_date is None else {"Date": email.utils.formatdate(self.server_date, usegmt=True)}
            )
            return Response({"gitVersion": "v1.31.0"}, headers)
        kind = _kind(path)
        queued = self.failures.get((method, kind))
        if queued:
            failure = queued.pop(0)
            if not callable(failure):
                raise error(failure)
            failure(self)
        name = unquote(path.rstrip("/").split("/")[-2 if kind == "approval" else -1])
        if kind == "csrs":
            return Response({"items": [copy.deepcopy(o) for o in self.csrs.values()], "metadata": {}})
        if kind == "nodes":
            return Response({"items": [copy.deepcopy(o) for o in self.nodes.values()], "metadata": {}})
        if kind == "secret":
            if self.secret is None:
                raise error(404, 'secrets "agent-auth-token" not found')
            return Response(self.secret)
        store = self.csrs if kind in ("csr", "approval") else self.nodes
        current = store.get(name)
        if current is None:
            raise error(404, "%s not found" % name)
        if method == "GET":
            return Response(copy.deepcopy(current))
        if kind == "approval" and method == "PUT":
            return Response(self._approve(name, body, current))
        if kind == "node" and method == "PATCH":
            assert content_type == MERGE_PATCH, content_type
            guard = (body.get("metadata") or {}).get("resourceVersion")
            if guard is not None and guard != current["metadata"]["resourceVersion"]:
                raise error(409, "the object has been modified; please apply your changes to the latest version")
            self.patches.append((name, copy.deepcopy(body)))
            patch = copy.deepcopy(body)
            (patch.get("metadata") or {}).pop("resourceVersion", None)
            return Response(self.put_node(merge(copy.deepcopy(current), patch)))
        raise AssertionError("unexpected request %s %s" % (method, path))

    def _approve(self, name, body, current):
        self.approval_bodies.append(copy.deepcopy(body))
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise error(409, "the object has been modified")
        updated = copy.deepcopy(current)
        updated["status"] = copy.deepcopy(body["status"])
        self.approval_log.append(name)
        stored = self.put_csr(updated)
        if self.kubelet:
            self._kubelet_reacts(stored)
        return stored

    def _kubelet_reacts(self, csr):
        name = csr["metadata"]["name"].split(".")[0]
        if csr["spec"]["signerName"] == CLIENT_SIGNER:
            self.put_node(node_object(name, ready=False, created=self.clock.now(), ip=IPS[name]))
            self.put_csr(
                serving_csr(name, ips=[IPS[name]], dns=[name], name=name + ".serving", created=self.clock.now())
            )
        else:
            self.set_ready(name)


def _kind(path):
    if path.startswith(CSRS):
        rest = path[len(CSRS) :].strip("/")
        return "csrs" if not rest else ("approval" if rest.endswith("/approval") else "csr")
    if path.startswith(NODES):
        return "nodes" if path == NODES else "node"
    return "secret" if path == SECRET else path


def api_client(api, attempts=3):
    """The collection's ApiClient over ``api``; its waits between tries are recorded, not slept."""
    waits = []
    return ApiClient(api, RetryPolicy(attempts=attempts, budget=3600), sleep=waits.append)


class Poller:
    """A host's agent as the loop sees it: every poll returns the next Observation (the last one repeats)."""

    def __init__(self, *observations):
        self.observations = list(observations)
        self.polls = 0

    def poll(self):
        self.polls += 1
        return self.observations.pop(0) if len(self.observations) > 1 else self.observations[0]


def answered(status="discovering", stage=None, percentage=None, cluster_status="adding-hosts", message=None, **more):
    entry = host(status=status, stage=stage, percentage=percentage, **more)
    return Observation(
        "answered",
        cluster=cluster([entry], status=cluster_status),
        host=entry,
        event={"message": message} if message else None,
    )


SILENT = Observation("unreachable", "connection refused")
KUBELET = Observation("unreachable", "connection refused", kubelet="handshake")
KUBELET_NO_CERT = Observation("unreachable", "connection refused", kubelet="internal_error")


def legit_client(host_name, **kwargs):
    kwargs.setdefault("name", host_name + ".client")
    return client_csr(host_name, **kwargs)


def hosts(*names, **extra):
    return [dict({"name": name, "address": IPS[name]}, **extra) for name in names]


def join_run(api, clock, records, polls=None, lines=None, **options):
    """A csr_approve loop (target ``ready`` unless told) over ``records`` (host dicts), on the fake clock and API;
    each host's agent is a Poller (default: its kubelet answers at once); ``options`` go to engine.Options."""
    installed_after = options.pop("installed_after", None)
    hooks = {key: options.pop(key) for key in ("on_disk_written", "still_wanted", "network") if key in options}
    server_offset = options.pop("server_offset", 0.0)
    settings = {
        "settle_seconds": 10,
        "wait_sleep": 5,
        "boot_timeout": 600,
        "install_timeout": 1800,
        "join_timeout": 600,
    }
    settings.update(options)
    cluster_ = join_cluster.Cluster(api_client(api), api) if api is not None else None
    run = engine.JoinRun(
        engine.host_records(records, installed_after),
        engine.Options(**settings),
        (lines if lines is not None else []).append,
        cluster=cluster_,
        server_offset=server_offset,
        sleep=clock.sleep,
        now=clock.now,
        **hooks,
    )
    for one in run.hosts:
        one.agent = (polls or {}).get(one.name) or Poller(KUBELET)
    return run


def run_to_end(run):
    """``(result, failure message or None)``: the loop's result, also when it failed."""
    try:
        return run.run(), None
    except engine.JoinError as failure:
        return failure.result, failure.message
