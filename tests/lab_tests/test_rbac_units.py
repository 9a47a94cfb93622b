"""The RBAC rule logic without a server: matching a request, covering rules, compacting the missing ones."""

from __future__ import annotations

import pytest
from lab.auth import Attributes, non_resource
from lab.escalation import compact, compact_string, rule_covers, uncovered
from lab.rbac import rule_allows

PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}


@pytest.mark.parametrize(
    "rule,attrs,allowed",
    [
        (PODS, Attributes("get", "", "pods", namespace="a", name="p"), True),
        (PODS, Attributes("delete", "", "pods", name="p"), False),
        (PODS, Attributes("get", "apps", "pods", name="p"), False),
        (PODS, Attributes("get", "", "pods", "log", name="p"), False),
        ({**PODS, "resources": ["pods/log"]}, Attributes("get", "", "pods", "log"), True),
        ({**PODS, "resources": ["*/log"]}, Attributes("get", "", "pods", "log"), True),
        ({**PODS, "resources": ["*/log"]}, Attributes("get", "", "pods"), False),
        ({**PODS, "resources": ["*"]}, Attributes("get", "", "nodes", "status"), True),
        ({**PODS, "verbs": ["*"]}, Attributes("escalate", "", "pods"), True),
        ({**PODS, "apiGroups": ["*"]}, Attributes("get", "x.io", "pods"), True),
        ({**PODS, "resourceNames": ["p"]}, Attributes("get", "", "pods", name="p"), True),
        ({**PODS, "resourceNames": ["p"]}, Attributes("get", "", "pods", name="q"), False),
        ({**PODS, "resourceNames": ["p"]}, Attributes("list", "", "pods"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, non_resource("get", "/apis/x/v1"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis"]}, non_resource("get", "/apis/x"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, Attributes("get", "", "pods"), False),
        (PODS, non_resource("get", "/api"), False),
    ],
)
def test_rule_allows(rule, attrs, allowed):
    assert rule_allows(attrs, rule) is allowed


def sub(group, resource, verb, name=None) -> dict:
    built = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
    if name:
        built["resourceNames"] = [name]
    return built


@pytest.mark.parametrize(
    "owner,wanted,covered",
    [
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, sub("x", "y", "z", "n"), True),
        (PODS, sub("", "pods", "get"), True),
        (PODS, sub("", "pods", "get", "p"), True),  # no names held covers any name
        ({**PODS, "resourceNames": ["p"]}, sub("", "pods", "get"), False),
        ({**PODS, "resourceNames": ["p"]}, sub("", "pods", "get", "p"), True),
        (PODS, sub("", "pods/exec", "get"), False),
        ({**PODS, "resources": ["*/exec"]}, sub("", "pods/exec", "get"), True),
        ({**PODS, "resources": ["*"]}, sub("", "pods/exec", "get"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/x/*"]}, {"verbs": ["get"], "nonResourceURLs": ["/x/y"]}, True),
        ({"verbs": ["get"], "nonResourceURLs": ["/x"]}, {"verbs": ["get"], "nonResourceURLs": ["/x/y"]}, False),
    ],
)
def test_rule_covers(owner, wanted, covered):
    assert rule_covers(owner, wanted) is covered


def test_uncovered_rules_are_broken_down_and_compacted_per_resource():
    wanted = [{"apiGroups": ["", "apps"], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    missing = uncovered([PODS], wanted)
    assert missing == [
        sub("", "pods", "watch"),
        sub("apps", "pods", "get"),
        sub("apps", "pods", "list"),
        sub("apps", "pods", "watch"),
    ]
    assert sorted(compact_string(rule) for rule in compact(missing)) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["watch"]}',
        '{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list" "watch"]}',
    ]
    assert compact_string({"verbs": ["get"], "nonResourceURLs": ["/a"]}) == '{NonResourceURLs:["/a"], Verbs:["get"]}'
