# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CSR approval driver when hosts cannot join: flood guard, spoofing, existing Nodes, timeouts, refusals."""

import datetime
import types

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join import approver
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.approver import CsrApproveError, CsrApprover
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import expected_nodes
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    NOW,
    make_key,
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
    with pytest.raises(InputError) as failure:
        CsrApprover(FakeApi(FakeClock()), expected_nodes(expected("worker-0")), max_pending=11)
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


# ---------------------------------------------------------------- the module's entry point


class FakeModule:
    def __init__(self, nodes, check_mode=False, **params):
        self.check_mode = check_mode
        self.params = {
            "nodes": nodes,
            "wait_for": "ready",
            "wait_timeout": 60,
            "wait_sleep": 10,
            "max_pending": None,
            "clock_skew": 60,
        }
        self.params.update(params)


def spec_nodes(*hosts):
    return [dict(entry, not_before=None) for entry in expected(*hosts)]


def refuse_to_connect(module):
    raise AssertionError("the cluster must not be contacted")


def test_run_checks_the_nodes_option_before_connecting(monkeypatch):
    monkeypatch.setattr(approver, "connect", refuse_to_connect)
    with pytest.raises(InputError) as failure:
        approver.run(FakeModule([dict(spec_nodes("worker-0")[0], name="worker-*")]))
    assert "nodes[0] (worker-*): name 'worker-*' contains a wildcard" in str(failure.value)


@pytest.mark.parametrize("flag, library", [("HAS_CRYPTOGRAPHY", "cryptography"), ("HAS_NETADDR", "netaddr")])
def test_run_names_a_missing_library_and_how_to_install_it(monkeypatch, flag, library):
    monkeypatch.setattr(approver, "connect", refuse_to_connect)
    monkeypatch.setattr(approver, flag, False)
    with pytest.raises(Day2Error) as failure:
        approver.run(FakeModule(spec_nodes("worker-0")))
    assert "the Python library %s is missing" % library in str(failure.value)
    assert "pip install %s" % library in str(failure.value)


def test_run_wires_the_options_into_the_approver(monkeypatch):
    clock = FakeClock()
    filed = datetime.datetime.now(datetime.timezone.utc) - MINUTE  # run() uses the real clock
    api = FakeApi(clock, [legit_client("worker-0", created=filed), legit_client("worker-1", created=filed)])
    made = ("api-client", "dynamic")
    monkeypatch.setattr(approver, "connect", lambda module: (types.SimpleNamespace(client="dynamic"), "api-client"))
    monkeypatch.setattr(approver, "KubeCsrApi", lambda client, dynamic: api if (client, dynamic) == made else None)
    result = approver.run(FakeModule(spec_nodes("worker-0"), check_mode=True))
    assert [entry["name"] for entry in result["would_approve"]] == ["worker-0.client"]
    assert api.approval_log == []
    with pytest.raises(InputError, match="max_pending=11"):
        approver.run(FakeModule(spec_nodes("worker-0"), check_mode=True, max_pending=11))
