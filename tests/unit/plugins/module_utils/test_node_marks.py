# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one merge patch that gives a Node its labels and taints, or None when it has them (a re-run: no change)."""

from ansible_collections.openshift_agent.day2.plugins.module_utils._join.node_marks import (
    desired_taints,
    marks_of,
    node_patch,
)

NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}


def node(labels=None, taints=None, rv="42"):
    return {
        "metadata": {"name": "w", "resourceVersion": rv, "labels": dict(labels or {"kubernetes.io/hostname": "w"})},
        "spec": {"taints": list(taints)} if taints is not None else {},
    }


def apply(obj, patch):
    """RFC 7386, as the API server applies it (enough for these objects)."""
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(obj.get(key), dict):
            apply(obj[key], value)
        else:
            obj[key] = value
    return obj


def test_labels_only_the_missing_ones_then_nothing():
    registered = node(labels={"kubernetes.io/hostname": "w", "zone": "old"})
    patch = node_patch(registered, {"zone": "a", "node-role.kubernetes.io/infra": ""}, [])
    assert patch == {"metadata": {"labels": {"zone": "a", "node-role.kubernetes.io/infra": ""}}}
    assert "resourceVersion" not in patch["metadata"]  # a label merge cannot undo anyone's change
    assert node_patch(apply(registered, patch), {"zone": "a", "node-role.kubernetes.io/infra": ""}, []) is None


def test_taints_keep_the_controllers_and_carry_the_resource_version():
    registered = node(taints=[NOT_READY])
    wanted = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    patch = node_patch(registered, {}, wanted)
    assert patch == {"metadata": {"resourceVersion": "42"}, "spec": {"taints": [NOT_READY, *wanted]}}
    marked = apply(registered, patch)
    assert node_patch(marked, {}, wanted) is None
    # the controller removes its taint when the Node is Ready: still nothing to do
    marked["spec"]["taints"] = wanted
    assert node_patch(marked, {}, wanted) is None


def test_a_key_given_gets_exactly_the_given_taints():
    current = [{"key": "dedicated", "value": "infra", "effect": "NoExecute"}, NOT_READY]
    wanted = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    assert desired_taints(current, wanted) == [NOT_READY, *wanted]
    assert desired_taints(current[:1], [{"key": "dedicated", "value": "infra", "effect": "NoExecute"}]) is None
    # a Node without spec.taints, and a value left out equals an empty one
    assert node_patch(node(), {}, [{"key": "gpu", "effect": "NoSchedule"}])["spec"]["taints"] == [
        {"key": "gpu", "effect": "NoSchedule"}
    ]
    assert (
        desired_taints([{"key": "gpu", "value": "", "effect": "NoSchedule"}], [{"key": "gpu", "effect": "NoSchedule"}])
        is None
    )


def test_both_and_neither():
    patch = node_patch(node(), {"zone": "a"}, [{"key": "gpu", "effect": "NoSchedule"}])
    assert patch["metadata"] == {"labels": {"zone": "a"}, "resourceVersion": "42"}
    assert node_patch(node(), {}, []) is None and node_patch(node(), None, None) is None


def test_marks_of_the_join_nodes():
    nodes = [
        {"name": "Extra-0", "addresses": ["x"], "labels": {"a": "b"}},
        {"name": "extra-1", "addresses": ["y"]},
        {"name": "extra-2", "addresses": ["z"], "taints": [{"key": "k", "effect": "NoSchedule"}]},
    ]
    assert marks_of(nodes) == {
        "extra-0": {"labels": {"a": "b"}, "taints": []},
        "extra-2": {"labels": {}, "taints": [{"key": "k", "effect": "NoSchedule"}]},
    }
