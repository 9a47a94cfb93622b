# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CSR approval driver against a scripted fake API (no HTTP), with real CSRs from csr_factory.

The fake keeps a store with resourceVersions and an event history like an API
server: a watch replays the events after its resourceVersion, then runs the
steps scripted for that watch session, then ends as if timeoutSeconds passed.
With kubelet=True it plays the new hosts' kubelets: an approved client CSR
creates the Node (NotReady) and files the serving CSR; an approved serving CSR
makes the Node Ready.
"""

import copy
import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import approver as approver
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.approver import (
    CsrApproveError,
    CsrApprover,
    KubeCsrApi,
    WatchBroken,
    normalize_nodes,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    NOW,
    client_csr,
    make_key,
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
        if csr["spec"]["signerName"] == approver.policy.CLIENT_SIGNER:
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
        api, normalize_nodes(hosts), monotonic=clock.monotonic, sleep=clock.sleep, now=clock.now, **kwargs
    )
    return driver.run()


def reasons(result):
    return {s["name"]: s["reason"] for s in result["skipped_csrs"]}


# ---------------------------------------------------------------- happy paths


def test_approves_exactly_the_new_hosts_csrs_and_waits_until_ready():
    clock = FakeClock()
    rogues = [
        client_csr("intruder", name="rogue.unknown-host"),
        client_csr("master-0", name="rogue.existing-node"),
        client_csr("worker-1", name="rogue.bad-username", username="system:anonymous", created=NOW - 2 * MINUTE),
        serving_csr("worker-0", ips=["10.9.9.9"], name="rogue.foreign-ip"),
    ]
    api = FakeApi(clock, [legit_client("worker-0"), legit_client("worker-1"), *rogues], kubelet=True)
    result = run(api, clock, expected("worker-0", "worker-1"))

    assert sorted(api.approval_log) == ["worker-0.client", "worker-0.serving", "worker-1.client", "worker-1.serving"]
    assert sorted(a["name"] for a in result["approved"]) == sorted(api.approval_log)
    assert result["changed"] is True
    # Once worker-1's Node exists because this run approved it, node-exists would be misleading:
    # the reason found before (bad-username) stays.
    assert reasons(result) == {
        "rogue.unknown-host": "unknown-node",
        "rogue.existing-node": "unknown-node",
        "rogue.bad-username": "bad-username",
        "rogue.foreign-ip": "san-not-expected",
    }
    assert [(n["name"], n["state"], n["ready"], n["addresses"]) for n in result["nodes"]] == [
        ("worker-0", "ready", True, ["127.0.111.20"]),
        ("worker-1", "ready", True, ["127.0.111.21"]),
    ]
    assert result["nodes"][0]["client_csr"] == "worker-0.client"
    assert result["nodes"][0]["serving_csr"] == "worker-0.serving"
    assert "would_approve" not in result


def test_approved_entries_carry_node_signer_and_times():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    result = run(api, clock, expected("worker-0"), wait_for="approved")
    first = result["approved"][0]
    assert first == {
        "name": "worker-0.client",
        "node": "worker-0",
        "signer": approver.policy.CLIENT_SIGNER,
        "created": stamp(NOW - 5 * MINUTE),
        "approved_at": stamp(NOW),
    }


def test_approval_body_is_the_object_plus_an_approved_condition_naming_the_collection():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    stored = copy.deepcopy(api.csrs["worker-0.client"])
    with pytest.raises(CsrApproveError):  # no kubelet here: the serving CSR never comes
        run(api, clock, expected("worker-0"), wait_for="approved", wait_timeout=30)
    body = api.approval_bodies[0]
    condition = body["status"]["conditions"][-1]
    assert condition["type"] == "Approved" and condition["status"] == "True"
    assert condition["reason"] == "OpenshiftAgentDay2Approved"
    assert "openshift_agent.day2" in condition["message"] and "worker-0" in condition["message"]
    assert condition["lastUpdateTime"] == stamp(NOW)
    body["status"].pop("conditions")
    assert body == stored  # everything else, resourceVersion included, is the object as read


def test_new_csr_from_the_watch_is_approved_without_waiting_for_a_poll():
    clock = FakeClock()
    late = legit_client("worker-0", created=NOW)
    api = FakeApi(clock, [], kubelet=True, sessions=[[late]])
    result = run(api, clock, expected("worker-0"), wait_for="approved")
    assert api.approval_log == ["worker-0.client", "worker-0.serving"]
    # Both approvals happened inside the first watch session, before any clock movement.
    assert [a["approved_at"] for a in result["approved"]] == [stamp(NOW), stamp(NOW)]
    assert clock.sleeps == []
    assert api.count("watch") == 1 and result["watch_restarts"] == 0


def test_a_rerun_counts_earlier_approvals_and_changes_nothing():
    clock = FakeClock()
    done = [
        legit_client("worker-0", conditions=["Approved"]),
        serving_csr("worker-0", ips=[IPS["worker-0"]], name="worker-0.serving", conditions=["Approved"]),
    ]
    api = FakeApi(clock, done)
    result = run(api, clock, expected("worker-0"), wait_for="approved")
    assert result["changed"] is False and result["approved"] == [] and result["skipped_csrs"] == []
    assert api.count("approve") == 0 and api.count("watch") == 0
    assert result["nodes"][0]["client_csr"] == "worker-0.client"
    assert result["nodes"][0]["serving_csr"] == "worker-0.serving"
    assert result["nodes"][0]["state"] == "waiting-for-ready"


def test_earlier_approvals_before_not_before_do_not_count():
    clock = FakeClock()
    old = [
        legit_client("worker-0", conditions=["Approved"], created=NOW - 50 * MINUTE),
        serving_csr(
            "worker-0",
            ips=[IPS["worker-0"]],
            name="worker-0.serving",
            conditions=["Approved"],
            created=NOW - 50 * MINUTE,
        ),
    ]
    api = FakeApi(clock, old)
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0", not_before=stamp(NOW - 10 * MINUTE)), wait_for="approved", wait_timeout=30)
    assert "timed out" in str(failure.value)
    assert failure.value.result["nodes"][0]["client_csr"] is None


def test_an_existing_ready_node_created_after_not_before_is_done():
    clock = FakeClock()
    api = FakeApi(clock, [], nodes=[node_object("worker-0", ready=True, created=NOW - MINUTE, ip=IPS["worker-0"])])
    result = run(api, clock, expected("worker-0", not_before=stamp(NOW - 10 * MINUTE)))
    assert result["nodes"][0]["state"] == "ready" and result["changed"] is False


# ---------------------------------------------------------------- conflicts


def test_a_409_is_retried_after_a_fresh_get():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True, conflicts={"worker-0.client": 2})
    result = run(api, clock, expected("worker-0"), wait_for="approved")
    assert api.approval_log == ["worker-0.client", "worker-0.serving"]
    assert [c for c in api.calls if c[1] == "worker-0.client"] == [
        ("approve", "worker-0.client"),
        ("get", "worker-0.client"),
        ("approve", "worker-0.client"),
        ("get", "worker-0.client"),
        ("approve", "worker-0.client"),
    ]
    assert result["approved"][0]["name"] == "worker-0.client"


def test_endless_409s_give_up_for_the_round_and_try_again_later():
    clock = FakeClock()
    api = FakeApi(
        clock, [legit_client("worker-0")], kubelet=True, conflicts={"worker-0.client": approver.CONFLICT_RETRIES + 1}
    )
    run(api, clock, expected("worker-0"), wait_for="approved")
    attempts = [c for c in api.calls if c == ("approve", "worker-0.client")]
    assert len(attempts) == approver.CONFLICT_RETRIES + 2  # one full round, then success on the next wake-up
    assert api.approval_log[0] == "worker-0.client"


def test_a_csr_approved_by_someone_else_meanwhile_is_not_approved_again():
    clock = FakeClock()

    api = FakeApi(clock, [legit_client("worker-0")], conflicts={"worker-0.client": 1})
    original = api.approve

    def approve_after_someone_else(name, body):
        if api.conflicts.get(name):
            other = copy.deepcopy(api.csrs[name])
            other["status"]["conditions"] = [{"type": "Approved", "status": "True"}]
            api.put_csr(other)
            api.conflicts[name] = 0
            raise ApiAccessError("conflict", status=409)
        return original(name, body)

    api.approve = approve_after_someone_else
    with pytest.raises(CsrApproveError):
        run(api, clock, expected("worker-0"), wait_for="approved", wait_timeout=20)
    assert api.approval_log == []


def test_after_a_409_a_changed_spec_is_not_approved_in_the_same_round():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])
    original = api.approve
    replaced = []

    def replace_then_conflict(name, body):
        if not replaced:
            other = legit_client("worker-0")  # same name, another request
            other["status"] = {}
            api.put_csr(other)
            replaced.append(name)
            raise ApiAccessError("conflict", status=409)
        return original(name, body)

    api.approve = replace_then_conflict
    with pytest.raises(CsrApproveError):
        run(api, clock, expected("worker-0"), wait_for="approved", wait_timeout=30)
    first_get = api.calls.index(("get", "worker-0.client"))
    assert api.calls[first_get + 1] != ("approve", "worker-0.client")  # decided again first
    assert api.approval_log == ["worker-0.client"]  # and approved after that fresh decision
    assert api.approval_bodies[-1]["spec"] == api.csrs["worker-0.client"]["spec"]


def test_a_csr_skipped_earlier_and_approved_later_leaves_skipped_csrs():
    clock = FakeClock()
    old_node = node_object("worker-0", ready=False, created=NOW - 600 * MINUTE, ip=IPS["worker-0"])

    def old_node_removed(fake):
        del fake.nodes["worker-0"]
        fake.put_csr(legit_client("worker-1", created=NOW))

    api = FakeApi(clock, [legit_client("worker-0")], nodes=[old_node], kubelet=True, sessions=[[old_node_removed]])
    result = run(api, clock, expected("worker-0", "worker-1"))
    assert sorted(api.approval_log) == ["worker-0.client", "worker-0.serving", "worker-1.client", "worker-1.serving"]
    assert result["skipped_csrs"] == []


# ---------------------------------------------------------------- watch failures


def test_a_broken_watch_falls_back_to_polling_then_watches_again_from_a_fresh_list():
    clock = FakeClock()
    later = legit_client("worker-0", created=NOW)
    api = FakeApi(clock, [], kubelet=True, sessions=[[WatchBroken("connection reset")], [later]])
    result = run(api, clock, expected("worker-0"), wait_for="approved")
    assert result["watch_restarts"] == 1
    assert clock.sleeps[0] == 10  # one poll interval
    assert api.count("list") >= 2 and api.calls[2:5] == [("watch", "100"), ("list", "csrs"), ("list", "nodes")]
    watches = [c for c in api.calls if c[0] == "watch"]
    assert len(watches) >= 2  # re-established after the fresh list
    assert api.approval_log == ["worker-0.client", "worker-0.serving"]


def test_a_connection_error_from_the_watch_also_falls_back():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True, sessions=[[ConnectionResetError("cut")]])
    result = run(api, clock, expected("worker-0"))
    assert result["watch_restarts"] >= 1 and result["nodes"][0]["ready"] is True


def test_410_gone_error_event_restarts_the_watch_after_a_fresh_list():
    clock = FakeClock()
    api = FakeApi(clock, [])
    api.oldest_rv = 10**6  # every resourceVersion the driver has is too old now

    def file_csr_and_compact(fake):
        fake.oldest_rv = 0

    api.sessions = [[]]
    later = legit_client("worker-0", created=NOW)
    # First watch: 410 Gone. During the poll the CSR arrives and the history is usable again.
    original_sleep = clock.sleep

    def sleep_and_file(seconds):
        original_sleep(seconds)
        if not api.csrs:
            api.put_csr(later)
            api.oldest_rv = 0

    clock.sleep = sleep_and_file
    with pytest.raises(CsrApproveError):
        run(api, clock, expected("worker-0"), wait_for="approved", wait_timeout=40)
    assert api.approval_log == ["worker-0.client"]
    assert api.calls[2][0] == "watch" and api.calls[3] == ("list", "csrs")


def test_a_watch_that_is_forbidden_turns_into_polling_with_a_warning():
    clock = FakeClock()
    api = FakeApi(clock, [], kubelet=True)
    later = legit_client("worker-0", created=NOW)

    def forbidden(resource_version, timeout_seconds):
        api.calls.append(("watch", resource_version))
        if not api.csrs:
            api.put_csr(later)
        raise WatchBroken("permission denied (403 Forbidden) to watch certificatesigningrequests", 403)

    api.watch_csrs = forbidden
    result = run(api, clock, expected("worker-0"))
    assert api.count("watch") == 1
    assert result["nodes"][0]["ready"] is True
    assert any("polling every 10s" in w for w in result["warnings"])


def test_transient_list_errors_are_retried_and_permanent_ones_fail():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    api.list_failures = [ApiAccessError("503 from the load balancer", status=503)]
    result = run(api, clock, expected("worker-0"))
    assert result["nodes"][0]["ready"] is True and clock.sleeps[0] == 10

    api = FakeApi(FakeClock(), [legit_client("worker-0")])
    api.list_failures = [ApiAccessError("permission denied (403 Forbidden)", status=403)]
    with pytest.raises(CsrApproveError) as failure:
        run(api, api.clock, expected("worker-0"))
    assert "403" in str(failure.value)


# ---------------------------------------------------------------- check mode


def test_check_mode_approves_nothing_reports_would_approve_and_does_not_wait():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0"), client_csr("intruder", name="rogue")], kubelet=True)
    result = run(api, clock, expected("worker-0", "worker-1"), check_mode=True)
    assert api.count("approve") == 0 and api.count("watch") == 0 and clock.sleeps == []
    assert [w["name"] for w in result["would_approve"]] == ["worker-0.client"]
    assert result["approved"] == [] and result["changed"] is True
    assert reasons(result) == {"rogue": "unknown-node"}


def test_check_mode_with_nothing_to_approve_is_unchanged():
    clock = FakeClock()
    result = run(FakeApi(clock, []), clock, expected("worker-0"), check_mode=True)
    assert result["changed"] is False and result["would_approve"] == []


# ---------------------------------------------------------------- flood guard


def flood_of(host, count):
    return [legit_client(host, name="%s.flood-%02d" % (host, i), created=NOW - i * MINUTE) for i in range(count)]


def test_the_flood_guard_stops_everything_before_any_approval():
    clock = FakeClock()
    api = FakeApi(clock, [*flood_of("worker-0", 10), legit_client("worker-1")], kubelet=True)
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0", "worker-1"))
    assert "flood guard: 11 pending CSRs" in str(failure.value) and "limit 10" in str(failure.value)
    assert api.count("approve") == 0


def test_the_flood_guard_also_stops_check_mode_and_a_flood_arriving_through_the_watch():
    clock = FakeClock()
    with pytest.raises(CsrApproveError):
        run(FakeApi(clock, flood_of("worker-0", 11)), clock, expected("worker-0"), check_mode=True)

    clock = FakeClock()
    api = FakeApi(clock, [], sessions=[flood_of("worker-0", 4)])
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0"), max_pending=2)
    # flood-00 was approved when it was the only one; flood-01..03 (older: node-already-approved) then
    # pile up pending and the third of them trips the tightened limit.
    assert "flood guard: 3 pending CSRs" in str(failure.value) and "limit 2" in str(failure.value)
    assert api.approval_log == ["worker-0.flood-00"]


def test_max_pending_can_only_tighten_the_policy_limit():
    with pytest.raises(CsrApproveError) as failure:
        CsrApprover(FakeApi(FakeClock()), normalize_nodes(expected("worker-0")), max_pending=11)
    assert "can only be tightened" in str(failure.value)


# ---------------------------------------------------------------- refusals that need a person


def test_possible_spoofing_is_reported_while_the_other_hosts_join():
    clock = FakeClock()
    rogue = legit_client("worker-0", name="worker-0.rogue", key=make_key(), created=NOW - 9 * MINUTE)
    own = legit_client("worker-0", name="worker-0.client", key=make_key(), created=NOW - 5 * MINUTE)
    api = FakeApi(clock, [rogue, own, legit_client("worker-1")], kubelet=True)
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0", "worker-1"))
    message = str(failure.value)
    result = failure.value.result
    assert sorted(api.approval_log) == ["worker-1.client", "worker-1.serving"]
    assert "possible spoofing" in message and "worker-0.client, worker-0.rogue" in message
    assert "worker-1" not in message.split("cannot join")[1].split("|")[0].split(":")[0]
    assert reasons(result) == {"worker-0.rogue": "possible-spoofing", "worker-0.client": "possible-spoofing"}
    assert [w for w in result["warnings"] if "worker-0" in w and "worker-0.rogue" in w]
    states = {n["name"]: n["state"] for n in result["nodes"]}
    assert states == {"worker-0": "blocked", "worker-1": "ready"}
    assert result["duration"] < 600  # failed when the others were done, not at the timeout


def test_spoofing_after_the_host_joined_is_a_warning_only():
    clock = FakeClock()
    rogue = legit_client("worker-0", name="worker-0.rogue", key=make_key(), created=NOW)
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True, sessions=[[rogue]])
    result = run(api, clock, expected("worker-0"))
    assert result["nodes"][0]["state"] == "ready"
    # First seen after this run approved the host: its Node exists because of that approval, which
    # the reason says instead of pointing to replace_worker.yml.
    assert reasons(result)["worker-0.rogue"] == "node-already-approved"
    assert "worker-0.rogue" not in api.approval_log


def test_a_duplicate_keeps_superseded_after_the_newer_one_is_approved():
    # Without a kubelet the Node does not appear: later rounds see the older CSR as
    # node-already-approved, which must not replace the reason found first.
    clock = FakeClock()
    key = make_key()
    old = legit_client("worker-0", name="worker-0.old", key=key, created=NOW - 2 * MINUTE)
    new = legit_client("worker-0", name="worker-0.new", key=key, created=NOW - MINUTE)
    api = FakeApi(clock, [old, new])
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0"), wait_timeout=30)
    assert api.approval_log == ["worker-0.new"]
    assert reasons(failure.value.result) == {"worker-0.old": "superseded"}


def test_an_existing_node_with_the_expected_name_is_surfaced_with_the_replace_hint():
    clock = FakeClock()
    old_node = node_object("worker-2", ready=True, created=NOW - 30 * 24 * 60 * MINUTE, ip=IPS["worker-2"])
    api = FakeApi(clock, [legit_client("worker-2"), legit_client("worker-0")], nodes=[old_node], kubelet=True)
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0", "worker-2"))
    assert reasons(failure.value.result) == {"worker-2.client": "node-exists"}
    assert "node already exists" in str(failure.value) and "playbooks/replace_worker.yml" in str(failure.value)
    assert sorted(api.approval_log) == ["worker-0.client", "worker-0.serving"]


# ---------------------------------------------------------------- timeout


def test_timeout_names_every_waiting_host_and_what_it_misses():
    clock = FakeClock()
    csrs = [
        legit_client("worker-1", conditions=["Approved"]),
        serving_csr("worker-1", ips=["10.1.1.1"], name="worker-1.bad-serving"),
    ]
    api = FakeApi(clock, csrs)
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0", "worker-1"), wait_timeout=60)
    message = str(failure.value)
    assert message.startswith("timed out after 60s waiting for worker-0, worker-1 to be Ready")
    assert "worker-0: client CSR: none seen yet, serving CSR: none seen yet, Node: absent" in message
    assert (
        "worker-1: client CSR worker-1.client approved, serving CSR: worker-1.bad-serving skipped "
        "(san-not-expected" in message
    )
    assert 60 <= clock.t < 80
    assert failure.value.result["changed"] is False


def test_a_node_older_than_not_before_is_not_the_new_host():
    clock = FakeClock()
    old = node_object("worker-0", ready=True, created=NOW - 60 * MINUTE, ip=IPS["worker-0"])
    api = FakeApi(clock, [], nodes=[old])
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0", not_before=stamp(NOW - 10 * MINUTE)), wait_timeout=30)
    assert "an older Node of this name" in str(failure.value)


def test_a_5xx_on_the_approval_is_tried_again_at_the_next_wake_up():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")], kubelet=True)
    failures = [ApiAccessError("service unavailable", status=503), ApiAccessError("unreachable", status=None)]
    approve = api.approve

    def flaky_approve(name, body):
        if failures:
            raise failures.pop(0)
        return approve(name, body)

    api.approve = flaky_approve
    result = run(api, clock, expected("worker-0"))
    assert api.approval_log == ["worker-0.client", "worker-0.serving"]
    assert result["nodes"][0]["state"] == "ready" and result["changed"] is True


def test_a_forbidden_approval_fails_with_the_rbac_hint():
    clock = FakeClock()
    api = FakeApi(clock, [legit_client("worker-0")])

    def forbidden(name, body):
        raise ApiAccessError(
            "permission denied (403 Forbidden) to update certificatesigningrequests/approval", status=403
        )

    api.approve = forbidden
    with pytest.raises(CsrApproveError) as failure:
        run(api, clock, expected("worker-0"))
    assert "cannot approve CSR worker-0.client of worker-0" in str(failure.value)
    assert "approve on the kubelet signers" in str(failure.value)


# ---------------------------------------------------------------- the nodes option


@pytest.mark.parametrize(
    "nodes, fragment",
    [
        ([{"name": "worker-*", "addresses": ["127.0.111.20"]}], "contains a wildcard"),
        ([{"name": "worker-0", "addresses": []}], "addresses is empty"),
        ([{"name": "worker-0", "addresses": ["not-an-ip"]}], "addresses ['not-an-ip'] are not IP addresses"),
        ([{"name": "worker-0", "addresses": ["127.0.111.20"], "not_before": "yesterday"}], "not_before"),
        (
            [{"name": "worker-0", "addresses": ["127.0.111.20"]}, {"name": "Worker-0", "addresses": ["127.0.111.20"]}],
            "listed twice",
        ),
        ([], "nodes is empty"),
        ([{"addresses": ["127.0.111.20"]}], "name is missing"),
    ],
)
def test_normalize_nodes_refuses_bad_input(nodes, fragment):
    with pytest.raises(CsrApproveError) as failure:
        normalize_nodes(nodes)
    assert fragment in str(failure.value)


def test_normalize_nodes_lowercases_and_parses_not_before():
    node = normalize_nodes(
        [{"name": "Worker-0", "addresses": ["127.0.111.20"], "not_before": "2024-05-01T11:00:00.5+00:00"}]
    )[0]
    assert node.name == "worker-0"
    assert node.not_before == datetime.datetime(2024, 5, 1, 11, 0, 0, 500000, tzinfo=datetime.timezone.utc)


# ---------------------------------------------------------------- KubeCsrApi over fake transports


class FakeResponse:
    def __init__(self, chunks, error=None):
        self.chunks = chunks
        self.error = error
        self.closed = False
        self.released = False

    def stream(self, amt=None):
        yield from self.chunks
        if self.error is not None:
            raise self.error

    def close(self):
        self.closed = True

    def release_conn(self):
        self.released = True


class FakeDynamicClient:
    def __init__(self, response):
        self.response = response
        self.requests = []

    def request(self, method, path, **params):
        self.requests.append((method, path, params))
        if isinstance(self.response, Exception):
            raise self.response
        return self.response


class FakeReader:
    api_url = "https://api.lab:6443"

    def __init__(self):
        self.requests = []

    def request(self, method, target, body=None):
        self.requests.append((method, target, body))
        return {"items": [], "metadata": {"resourceVersion": "7"}}


def test_kube_watch_streams_events_split_across_chunks_and_closes():
    response = FakeResponse(
        [
            b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}}\n{"type": "MOD',
            b'IFIED", "object": {"metadata": {"name": "a"}}}\n',
            b"\n",
        ]
    )
    client = FakeDynamicClient(response)
    events = list(KubeCsrApi(FakeReader(), client).watch_csrs("42", 10))
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    method, path, params = client.requests[0]
    assert path == (
        "/apis/certificates.k8s.io/v1/certificatesigningrequests?allowWatchBookmarks=true"
        "&resourceVersion=42&timeoutSeconds=10&watch=true"
    )
    assert params["_request_timeout"] == (approver.WATCH_CONNECT_TIMEOUT, 10 + approver.WATCH_READ_GRACE)
    assert params["serialize"] is False  # otherwise the client reads the whole body before returning
    assert response.closed and response.released


def test_kube_watch_turns_transport_failures_into_watch_broken():
    response = FakeResponse([b'{"type": "ADDED", "object": {}}\n'], error=ConnectionResetError("reset by peer"))
    events = KubeCsrApi(FakeReader(), FakeDynamicClient(response)).watch_csrs("1", 5)
    assert next(events)["type"] == "ADDED"
    with pytest.raises(WatchBroken):
        next(events)
    assert response.closed

    with pytest.raises(WatchBroken):
        KubeCsrApi(FakeReader(), FakeDynamicClient(OSError("connection refused"))).watch_csrs("1", 5)


def test_kube_approve_puts_to_the_approval_subresource():
    reader = FakeReader()
    api = KubeCsrApi(reader, None)
    assert api.list_csrs() == ([], "7")
    api.approve("node-csr-abc", {"kind": "CertificateSigningRequest"})
    method, target, body = reader.requests[-1]
    assert method == "PUT"
    assert target.path == "/apis/certificates.k8s.io/v1/certificatesigningrequests/node-csr-abc/approval"
    assert target.describe() == "update certificatesigningrequests/approval.certificates.k8s.io node-csr-abc"
