# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CSR approval driver against a scripted fake API: approvals, conflicts, the watch and polling, check mode."""

import copy

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import approver
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.approver import CsrApproveError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import CLIENT_SIGNER
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr_api import WatchBroken
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    NOW,
    client_csr,
    serving_csr,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_fake_api import (
    IPS,
    MINUTE,
    FakeApi,
    FakeClock,
    expected,
    legit_client,
    node_object,
    reasons,
    run,
    stamp,
)

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
        "signer": CLIENT_SIGNER,
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
