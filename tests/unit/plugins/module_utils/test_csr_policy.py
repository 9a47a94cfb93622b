# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The policy over all CSRs at once: the rules over one node's CSRs and the flood guard.

Everything is called through the module objects (policy.X, flood.X) so that tests/mutation/csr_policy_mutations.py
can disable one rule at a time.
"""

import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import flood
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import parse_csr
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    EXPECTED,
    HOUR,
    MINUTE,
    NOW,
    by_name,
    client_csr,
    decide,
    evaluate,
    serving_csr,
)

# ---------------------------------------------------------------- grouping


def test_two_client_keys_for_one_node_is_possible_spoofing():
    genuine = client_csr("worker-0", name="node-csr-genuine", created=NOW - 10 * MINUTE)
    rogue = client_csr("worker-0", name="node-csr-rogue", created=NOW - 5 * MINUTE)
    other = client_csr("worker-1", name="node-csr-other")
    decisions = by_name(decide([genuine, rogue, other]))
    for name in ("node-csr-genuine", "node-csr-rogue"):
        assert (decisions[name].action, decisions[name].reason) == ("skip", "possible-spoofing")
        assert "node-csr-genuine" in decisions[name].message and "node-csr-rogue" in decisions[name].message
    assert decisions["node-csr-other"].action == "approve"


def test_same_client_key_twice_approves_newest():
    key = f.make_key()
    older = client_csr("worker-0", key=key, name="node-csr-older", created=NOW - 70 * MINUTE)
    newer = client_csr("worker-0", key=key, name="node-csr-newer", created=NOW - 5 * MINUTE)
    decisions = by_name(decide([newer, older]))
    assert decisions["node-csr-newer"].action == "approve"
    assert (decisions["node-csr-older"].action, decisions["node-csr-older"].reason) == ("skip", "superseded")
    assert "node-csr-newer" in decisions["node-csr-older"].message


def test_two_serving_csrs_newest_wins():
    older = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-old", created=NOW - 20 * MINUTE)
    newer = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-new", created=NOW - 2 * MINUTE)
    decisions = by_name(decide([older, newer]))
    assert decisions["csr-new"].action == "approve"
    assert (decisions["csr-old"].action, decisions["csr-old"].reason) == ("skip", "superseded")


def test_serving_keys_may_differ_without_spoofing():
    first = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-a", created=NOW - 20 * MINUTE)
    second = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-b", created=NOW - 2 * MINUTE)
    assert [d.reason for d in decide([first, second])] == ["superseded", "valid"]


def test_client_already_approved_in_run_blocks_a_second_approval():
    key = f.make_key()
    approved = client_csr(
        "worker-0", key=key, name="node-csr-first", created=NOW - 30 * MINUTE, conditions=["Approved"]
    )
    again = client_csr("worker-0", key=key, name="node-csr-again", created=NOW - MINUTE)
    decisions = by_name(decide([approved, again]))
    assert decisions["node-csr-first"].reason == "already-approved"
    assert (decisions["node-csr-again"].action, decisions["node-csr-again"].reason) == ("skip", "node-already-approved")
    assert "node-csr-first" in decisions["node-csr-again"].message


def test_serving_already_approved_in_run_blocks_a_second_approval():
    approved = serving_csr(
        "worker-1", ips=["127.0.111.21"], name="csr-first", created=NOW - 9 * MINUTE, conditions=["Approved"]
    )
    again = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-again", created=NOW - MINUTE)
    assert by_name(decide([approved, again]))["csr-again"].reason == "node-already-approved"


def test_pending_client_with_key_other_than_approved_one_is_possible_spoofing():
    approved = client_csr("worker-0", name="node-csr-first", created=NOW - 30 * MINUTE, conditions=["Approved"])
    rogue = client_csr("worker-0", name="node-csr-second", created=NOW - MINUTE)
    decision = by_name(decide([approved, rogue]))["node-csr-second"]
    assert (decision.action, decision.reason) == ("skip", "possible-spoofing")


def test_approval_from_before_not_before_belongs_to_an_earlier_life():
    old_life = client_csr("worker-2", name="node-csr-old-life", created=NOW - 3 * HOUR, conditions=["Approved"])
    new_life = client_csr("worker-2", name="node-csr-new-life", created=NOW - MINUTE)
    decisions = by_name(decide([old_life, new_life]))
    assert decisions["node-csr-new-life"].action == "approve"


def test_denied_csr_of_a_node_does_not_block_it():
    denied = client_csr("worker-0", name="node-csr-denied", created=NOW - 9 * MINUTE, conditions=["Denied"])
    fresh = client_csr("worker-0", name="node-csr-fresh", created=NOW - MINUTE)
    assert by_name(decide([denied, fresh]))["node-csr-fresh"].action == "approve"


def test_invalid_rogue_does_not_block_the_genuine_csr():
    genuine = client_csr("worker-0", name="node-csr-genuine", created=NOW - 10 * MINUTE)
    rogue = client_csr("worker-0", name="node-csr-rogue", created=NOW - 5 * MINUTE, username="system:anonymous")
    decisions = by_name(decide([genuine, rogue]))
    assert decisions["node-csr-genuine"].action == "approve"
    assert decisions["node-csr-rogue"].reason == "bad-username"


def test_a_whole_run_with_rogues_approves_exactly_the_genuine_csrs():
    objs = [
        client_csr("worker-0", name="genuine-client-0"),
        serving_csr("worker-1", ips=["127.0.111.21"], dns=["worker-1"], name="genuine-serving-1"),
        client_csr("intruder-7", name="rogue-unknown"),
        client_csr("master-0", name="rogue-existing"),
        client_csr("worker-1", name="rogue-extra-group", groups=[*f.BOOTSTRAP_GROUPS, "system:masters"]),
        client_csr("worker-1", name="rogue-san", dns=["worker-1"]),
        serving_csr("worker-0", ips=["127.0.111.10"], name="rogue-foreign-ip"),
        serving_csr("worker-0", ips=["127.0.111.20"], username="system:node:worker-1", name="rogue-username"),
        client_csr("worker-1", name="rogue-signer", signer="kubernetes.io/kube-apiserver-client"),
        client_csr("worker-1", name="rogue-tampered", tamper=True),
        client_csr("worker-1", name="rogue-rsa", key=f.make_key("rsa2048")),
    ]
    approved = sorted(d.name for d in decide(objs) if d.action == "approve")
    assert approved == ["genuine-client-0", "genuine-serving-1"]


# ---------------------------------------------------------------- flood guard


@pytest.mark.parametrize("expected_count, threshold", [(1, 10), (2, 10), (3, 12), (10, 40)])
def test_flood_threshold(expected_count, threshold):
    assert flood.flood_threshold(expected_count) == threshold


def _pending_serving(count, created=None):
    return [
        serving_csr(
            "worker-1",
            ips=["127.0.111.21"],
            name="csr-%02d" % i,
            created=created or NOW - MINUTE - i * datetime.timedelta(seconds=1),
        )
        for i in range(count)
    ]


def test_flood_guard_counts_recent_pending_csrs_of_expected_hosts():
    objs = [*_pending_serving(12), client_csr("intruder-7", name="not-counted")]
    objs += [client_csr("worker-0", name="approved-not-counted", conditions=["Approved"])]
    objs += _pending_serving(1, created=NOW - 2 * HOUR)
    verdict = flood.flood_guard([parse_csr(o) for o in objs], frozenset(["worker-0", "worker-1", "worker-2"]), NOW, 12)
    assert (verdict.flood, verdict.reason, verdict.count, verdict.threshold) == (False, "ok", 12, 12)
    objs += _pending_serving(1, created=NOW - MINUTE)
    objs[-1]["metadata"]["name"] = "one-too-many"
    verdict = flood.flood_guard([parse_csr(o) for o in objs], frozenset(["worker-0", "worker-1", "worker-2"]), NOW, 12)
    assert (verdict.flood, verdict.reason, verdict.count) == (True, "flood", 13)
    assert "13" in verdict.message


def test_flood_stops_every_approval():
    objs = [*_pending_serving(11), client_csr("worker-0", name="genuine")]
    evaluation = evaluate(objs, expected=EXPECTED[:1] + EXPECTED[1:2])
    assert all(d.action == "skip" for d in evaluation.decisions)
    assert by_name(evaluation.decisions)["genuine"].reason == "flood"
    assert "12" in by_name(evaluation.decisions)["genuine"].message
    assert (evaluation.flood.flood, evaluation.flood.count, evaluation.flood.threshold) == (True, 12, 10)


def test_at_threshold_is_not_a_flood():
    objs = [*_pending_serving(9), client_csr("worker-0", name="genuine")]
    evaluation = evaluate(objs, expected=EXPECTED[:2])
    assert by_name(evaluation.decisions)["genuine"].action == "approve"
    assert (evaluation.flood.flood, evaluation.flood.count, evaluation.flood.threshold) == (False, 10, 10)


def test_a_lower_flood_limit_stops_approvals_earlier():
    objs = [*_pending_serving(2), client_csr("worker-0", name="genuine")]
    assert by_name(decide(objs, expected=EXPECTED[:2], flood_limit=3))["genuine"].action == "approve"
    evaluation = evaluate(objs, expected=EXPECTED[:2], flood_limit=2)
    assert by_name(evaluation.decisions)["genuine"].reason == "flood"
    assert (evaluation.flood.count, evaluation.flood.threshold) == (3, 2)


def test_naive_now_counts_as_utc_for_the_flood_window():
    objs = _pending_serving(11, created=NOW - 59 * MINUTE)
    assert evaluate(objs, expected=EXPECTED[1:2], now=NOW.replace(tzinfo=None)).flood.flood
    assert not evaluate(objs, expected=EXPECTED[1:2], now=(NOW + 2 * MINUTE).replace(tzinfo=None)).flood.flood
