# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_labels and node_taints, checked as the API server checks a Node's (before anything is written)."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.labels import (
    check_labels,
    check_taints,
    key_problem,
    merged_marks,
    value_problem,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems


def checked(function, value):
    problems = Problems()
    result = function(value, problems.for_host("w"))
    return result, problems.items


@pytest.mark.parametrize(
    "key",
    ["infra", "node-role.kubernetes.io/infra", "example.com/rack_1", "a", "A.b-C_d", "x" * 63, "%s/n" % ("a" * 253)],
)
def test_good_keys(key):
    assert key_problem(key) is None


@pytest.mark.parametrize(
    "key, says",
    [
        ("", "non-empty"),
        ("a/b/c", "more than one '/'"),
        ("/infra", "empty prefix"),
        ("Example.com/infra", "not a lower-case DNS subdomain"),
        ("example_com/infra", "not a lower-case DNS subdomain"),
        ("example.com/", "empty name part"),
        ("-infra", "not alphanumerics"),
        ("infra.", "not alphanumerics"),
        ("in fra", "not alphanumerics"),
        ("x" * 64, "longer than 63"),
        ("%s/n" % ("a" * 254), "longer than 253"),
        (5, "non-empty text"),
    ],
)
def test_bad_keys(key, says):
    assert says in key_problem(key)


def test_values():
    assert value_problem("") is None and value_problem("infra-1.a_b") is None
    assert "longer than 63" in value_problem("v" * 64)
    assert "not alphanumerics" in value_problem("a b")
    assert "YAML made a bool" in value_problem(True)
    assert "YAML made a int" in value_problem(3)


def test_labels_null_is_the_empty_value_and_mistakes_name_the_key():
    labels, problems = checked(check_labels, {"node-role.kubernetes.io/infra": None, "zone": "a"})
    assert labels == {"node-role.kubernetes.io/infra": "", "zone": "a"} and problems == []
    labels, problems = checked(check_labels, {"bad key": "x", "ssd": True, "rack": "r 1"})
    assert labels == {}
    by_field = {p["field"]: p for p in problems}
    assert "is no label key" in by_field["node_labels.bad key"]["message"]
    assert 'quote it: ssd: "true"' in by_field["node_labels.ssd"]["message"]
    assert by_field["node_labels.rack"]["value"] == "r 1"
    _labels, problems = checked(check_labels, ["a=b"])
    assert "is not a mapping" in problems[0]["message"]


def test_taints_as_mappings_or_text():
    taints, problems = checked(
        check_taints,
        [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}, "gpu:NoExecute", "x=y:PreferNoSchedule"],
    )
    assert problems == []
    assert taints == [
        {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
        {"key": "gpu", "effect": "NoExecute"},
        {"key": "x", "value": "y", "effect": "PreferNoSchedule"},
    ]


@pytest.mark.parametrize(
    "taint, field, says",
    [
        ({"key": "a", "effect": "NoScheduel"}, "node_taints[0].effect", "is not a taint effect"),
        ({"key": "a"}, "node_taints[0].effect", "NoSchedule, PreferNoSchedule, NoExecute"),
        ({"key": "a b", "effect": "NoSchedule"}, "node_taints[0].key", "is no taint key"),
        ({"key": "a", "value": "b c", "effect": "NoSchedule"}, "node_taints[0].value", "is no taint value"),
        ({"key": "a", "effect": "NoSchedule", "operator": "Exists"}, "node_taints[0]", "which a taint has not"),
        ("just-a-key", "node_taints[0]", "is not a taint"),
    ],
)
def test_bad_taints(taint, field, says):
    taints, problems = checked(check_taints, [taint])
    assert taints == []
    assert any(p["field"] == field and says in p["message"] for p in problems), problems


def test_a_taint_key_once_per_effect():
    taints, problems = checked(check_taints, ["a:NoSchedule", "a=b:NoSchedule", "a:NoExecute"])
    assert len(taints) == 2 and "repeats the taint a:NoSchedule" in problems[0]["message"]


def test_the_hosts_marks_go_over_the_plays():
    problems = Problems()
    play_labels = {"zone": "a", "tier": "x"}
    play_taints = [{"key": "dedicated", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoExecute"}]
    labels, taints = merged_marks(
        {"zone": "b"}, ["dedicated=infra:NoExecute"], play_labels, play_taints, problems.for_host("w")
    )
    assert labels == {"zone": "b", "tier": "x"}
    assert taints == [
        {"key": "gpu", "effect": "NoExecute"},
        {"key": "dedicated", "value": "infra", "effect": "NoExecute"},
    ]
    assert problems.items == []


def test_check_workers_returns_the_marks_per_host_and_for_joined_hosts():
    from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
    from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.test_workers_check import (
        CLUSTER,
        good,
        problems_of,
    )

    joined = good("extra-worker-9", 29, node_taints=["dedicated=infra:NoSchedule"])  # a Ready worker of CLUSTER
    plain = good("extra-worker-1", 21)
    play = {"node_labels": {"node-role.kubernetes.io/infra": None}}
    result = check_workers([good(node_labels={"zone": "a"}), plain, joined], CLUSTER, play=play)
    assert [record["name"] for record in result["joined"]] == ["extra-worker-9"]
    assert result["hosts"][0]["labels"] == {"node-role.kubernetes.io/infra": "", "zone": "a"}
    assert result["hosts"][0]["taints"] == [] and result["hosts"][1]["labels"] == {"node-role.kubernetes.io/infra": ""}
    assert result["joined"][0]["taints"] == [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    unmarked = check_workers([plain], CLUSTER)
    assert unmarked["hosts"][0]["labels"] == {} and unmarked["hosts"][0]["taints"] == []
    problems = problems_of(good(node_taints=[{"key": "a", "effect": "NoSchedul"}]), play={"node_labels": {"a b": "c"}})
    assert {(p["host"], p["field"]) for p in problems} == {
        ("extra-worker-0", "node_taints[0].effect"),
        ("(play)", "day2_node_labels.a b"),
    }
