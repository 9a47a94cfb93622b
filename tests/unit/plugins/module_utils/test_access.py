# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The permissions of a run (_check/access.py): equal to docs/rbac.md, covering what the modules read and write,
and the check that asks the API server and lists what is missing."""

import pathlib
import re

import pytest
import yaml

from ansible_collections.openshift_agent.day2.plugins.module_utils._check import access
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import READS

DOCS = pathlib.Path(__file__).resolve().parents[4] / "docs" / "rbac.md"


def yaml_blocks():
    return re.findall(r"```yaml\n(.*?)```", DOCS.read_text(), re.S)


def documented_roles():
    """``{(kind, name, namespace): (rules, comments)}`` of the roles in docs/rbac.md, and the bindings."""
    roles, bindings = {}, []
    for block in yaml_blocks():
        comments = iter(re.findall(r"^  # (.*)\n  - apiGroups:", block, re.M))
        for document in yaml.safe_load_all(block):
            meta = document["metadata"]
            key = (document["kind"], meta["name"], meta.get("namespace"))
            if document["kind"] in ("ClusterRole", "Role"):
                roles[key] = (document["rules"], [next(comments) for _rule in document["rules"]])
            else:
                bindings.append((key, document["roleRef"]))
    return roles, bindings


def expected_roles():
    roles = {}
    for rule in access.RULES:
        key = ("ClusterRole", rule.role, None) if rule.namespace is None else ("Role", rule.role, rule.namespace)
        rules, comments = roles.setdefault(key, ([], []))
        rules.append(rule.policy_rule())
        comments.append(rule.comment())
    return roles


def test_docs_rbac_md_has_exactly_the_rules_and_reasons_of_the_code():
    roles, bindings = documented_roles()
    assert roles == expected_roles()
    # Every role is bound, by a binding of its own kind, name and namespace.
    assert sorted((kind + "Binding", name, ns) for kind, name, ns in roles) == sorted(key for key, _ref in bindings)
    for (kind, name, _namespace), ref in bindings:
        assert ref == {"apiGroup": "rbac.authorization.k8s.io", "kind": kind[: -len("Binding")], "name": name}


def test_every_rule_has_a_reason_and_known_steps():
    for rule in access.RULES:
        assert rule.why and set(rule.steps) <= set(access.STEP_MODULES), rule
        assert len(rule.comment()) <= 116, rule.comment()  # one line of the YAML in docs/rbac.md


def allowing(rules, verb, resource, group, namespace=None, name=None):
    """The rules that allow this request as RBAC does (a rule with resourceNames needs the name)."""
    return [
        rule
        for rule in rules
        if rule.group == group
        and resource in rule.resources
        and verb in rule.verbs
        and rule.namespace in (None, namespace)
        and (not rule.names or name in rule.names)
    ]


def test_every_read_of_day1_facts_is_granted_for_the_gather_step():
    gather = access.planned_rules(["gather"])
    assert len(READS) == 18
    for key, target, _importance in READS:
        assert allowing(gather, target.verb, target.resource, target.group, target.namespace, target.name), key


# What the image, install and join steps send (their API calls, as the lab's request log of a run shows them).
STEP_REQUESTS = {
    "image": [
        ("create", "namespaces", "", None, None),
        ("delete", "namespaces", "", None, "openshift-node-joiner-x"),
        ("create", "serviceaccounts", "", "openshift-node-joiner-x", None),
        ("create", "clusterroles", "rbac.authorization.k8s.io", None, None),
        ("create", "clusterrolebindings", "rbac.authorization.k8s.io", None, None),
        ("delete", "clusterroles", "rbac.authorization.k8s.io", None, "openshift-node-joiner-x"),
        ("delete", "clusterrolebindings", "rbac.authorization.k8s.io", None, "openshift-node-joiner-x"),
        ("create", "configmaps", "", "openshift-node-joiner-x", None),
        ("create", "pods", "", "openshift-node-joiner-x", None),
        ("get", "pods", "", "openshift-node-joiner-x", "node-joiner"),
        ("create", "pods/exec", "", "openshift-node-joiner-x", "node-joiner"),
        ("get", "pods/log", "", "openshift-node-joiner-x", "release-image-references"),
        ("get", "configmaps", "", "openshift-config", "installer-images"),
        ("get", "secrets", "", "openshift-config", "agent-auth-token"),
        ("get", "clusterversions", "config.openshift.io", None, "version"),
        ("get", "proxies", "config.openshift.io", None, "cluster"),
        ("list", "nodes", "", None, None),
    ],
    "install": [
        ("get", "secrets", "", "openshift-config", "agent-auth-token"),
    ],
    "join": [
        ("list", "certificatesigningrequests", "certificates.k8s.io", None, None),
        ("get", "nodes", "", None, "worker-9"),
        ("patch", "nodes", "", None, "worker-9"),
        ("get", "certificatesigningrequests", "certificates.k8s.io", None, "csr-x"),
        ("update", "certificatesigningrequests/approval", "certificates.k8s.io", None, "csr-x"),
        ("approve", "signers", "certificates.k8s.io", None, "kubernetes.io/kubelet-serving"),
        ("list", "nodes", "", None, None),
    ],
    "replace": [
        ("get", "nodes", "", None, "worker-3"),
        ("patch", "nodes", "", None, "worker-3"),
        ("delete", "nodes", "", None, "worker-3"),
        ("list", "pods", "", None, None),
        ("delete", "pods", "", "some-app", "web-1"),
        ("get", "pods", "", "some-app", "web-1"),
    ],
}


@pytest.mark.parametrize("step", sorted(STEP_REQUESTS))
def test_every_request_of_a_step_is_granted_by_that_steps_rules(step):
    # replace_worker.yml runs the whole add flow too: its extra role adds to the others.
    rules = access.planned_rules([step, *access.DEFAULT_PLAN] if step == "replace" else [step])
    for request in STEP_REQUESTS[step]:
        assert allowing(rules, *request), (step, request)


def test_the_replace_rules_are_a_role_of_their_own():
    assert {rule.role for rule in access.planned_rules(["replace"])} == {access.REPLACE_ROLE_NAME}
    assert access.REPLACE_ROLE_NAME not in {rule.role for rule in access.planned_rules(list(access.DEFAULT_PLAN))}


class FakeApi:
    """Answers SelfSubjectAccessReviews: allowed unless the review's (verb, resource, group, namespace, name) is
    denied; records every review."""

    def __init__(self, denied=()):
        self.denied = set(denied)
        self.asked = []

    def create(self, target, body):
        assert target.path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        assert body["kind"] == "SelfSubjectAccessReview" and body["apiVersion"] == "authorization.k8s.io/v1"
        attributes = body["spec"]["resourceAttributes"]
        resource = attributes["resource"] + ("/" + attributes["subresource"] if "subresource" in attributes else "")
        key = (attributes["verb"], resource, attributes["group"], attributes.get("namespace"), attributes.get("name"))
        self.asked.append(key)
        return {"status": {"allowed": key not in self.denied}}


def test_all_held_passes_with_one_review_per_permission():
    api = FakeApi()
    result = access.check(api, access.DEFAULT_PLAN, "4.21.1", "me")
    assert result["missing"] == [] and result["changed"] is False
    assert result["reviews"] == len(api.asked) == len(set(api.asked))
    assert ("create", "pods/exec", "", None, None) in api.asked
    assert ("get", "secrets", "", "openshift-config", "pull-secret") in api.asked
    assert ("approve", "signers", "certificates.k8s.io", None, "kubernetes.io/kubelet-serving") in api.asked
    assert ("patch", "nodes", "", None, None) in api.asked  # the new nodes' labels and taints
    assert not any(key[0] == "delete" and key[1] == "nodes" for key in api.asked)  # replace is not planned


def test_missing_permissions_are_listed_with_who_needs_them_and_why():
    denied = [("create", "pods/exec", "", None, None), ("get", "secrets", "", "openshift-config", "pull-secret")]
    with pytest.raises(access.AccessError) as failure:
        access.check(FakeApi(denied), access.DEFAULT_PLAN, "4.21.1", "the kubeconfig k")
    message = failure.value.message
    assert message.startswith("the identity of the kubeconfig k lacks 2 permission(s) this run needs; nothing was")
    assert "- create pods/exec (cluster-wide): day2_iso: read node-joiner's report" in message
    assert '- get secrets "pull-secret" in namespace openshift-config: day1_facts: the pull secret' in message
    assert "docs/rbac.md" in message
    missing = failure.value.result["missing"]
    assert missing[1] == {
        "verb": "get",
        "resource": "secrets",
        "group": "",
        "namespace": "openshift-config",
        "name": "pull-secret",
        "needed_by": ["day1_facts"],
        "why": "the pull secret node-joiner needs (never returned)",
        "role": "openshift-agent-day2 (Role in openshift-config)",
    }


ESCALATE = ("escalate", "clusterroles", "rbac.authorization.k8s.io", None, None)


def test_without_escalate_holding_node_joiners_role_is_enough():
    api = FakeApi([ESCALATE])
    assert access.check(api, ["image"], "4.21.1", "me")["missing"] == []
    assert ("create", "secrets", "", None, None) in api.asked  # node-joiner writes its token Secret
    assert ("list", "imagecontentsourcepolicies", "operator.openshift.io", None, None) in api.asked
    assert ("list", "imagecontentpolicies", "config.openshift.io", None, None) not in api.asked


def test_without_escalate_nor_node_joiners_role_both_ways_are_named():
    denied = [ESCALATE, ("update", "secrets", "", None, None)]
    with pytest.raises(access.AccessError) as failure:
        access.check(FakeApi(denied), ["image"], "4.18.3", "me")
    assert [entry["verb"] for entry in failure.value.result["missing"]] == ["escalate"]
    assert "escalate clusterroles.rbac.authorization.k8s.io (cluster-wide): day2_iso" in failure.value.message
    assert "or every permission the role grants" in failure.value.message


def test_node_joiners_role_per_release():
    older = {(r.verb, r.resource, r.group) for r in access.node_joiner_reviews("4.18.3")}
    newer = {(r.verb, r.resource, r.group) for r in access.node_joiner_reviews("4.21.0")}
    unknown = {(r.verb, r.resource, r.group) for r in access.node_joiner_reviews(None)}
    assert ("list", "imagecontentpolicies", "config.openshift.io") in older - newer
    assert ("list", "imagecontentsourcepolicies", "operator.openshift.io") in newer - older
    assert unknown == older | newer


def test_plan_selects_the_rules():
    api = FakeApi()
    access.check(api, ["join"], None, "me")
    assert {key[2] for key in api.asked} <= {"", "certificates.k8s.io"}
    assert ("list", "nodes", "", None, None) in api.asked
    api = FakeApi()
    access.check(api, [*access.DEFAULT_PLAN, "replace"], None, "me")
    assert ("patch", "nodes", "", None, None) in api.asked and ("delete", "pods", "", None, None) in api.asked
    assert len(api.asked) == len(set(api.asked))  # a permission two rules grant is asked once
    with pytest.raises(access.Day2Error, match="option plan has boot, which is not a part of the run"):
        access.check(FakeApi(), ["boot"], None, "me")


def test_review_specs_split_the_subresource():
    spec = access.Review("create", "pods/exec", "").spec()
    assert spec == {"resourceAttributes": {"verb": "create", "group": "", "resource": "pods", "subresource": "exec"}}
    spec = access.Review("get", "secrets", "", "openshift-config", "pull-secret").spec()
    assert spec["resourceAttributes"] == {
        "verb": "get",
        "group": "",
        "resource": "secrets",
        "namespace": "openshift-config",
        "name": "pull-secret",
    }
