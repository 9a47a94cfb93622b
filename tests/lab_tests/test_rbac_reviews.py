"""SelfSubjectAccessReview and SelfSubjectRulesReview as kube-apiserver answers them, their discovery, and
``kubectl auth can-i`` (kubectl 1.20, as test_clients.py obtains it) against the lab."""

from __future__ import annotations

import os
import subprocess

import pytest
from api_helpers import assert_status, unique
from test_clients import kubectl_binary
from test_rbac import Grants, as_token, rule

AUTHZ = "/apis/authorization.k8s.io/v1"


@pytest.fixture
def grants(lab):
    return Grants(lab)


def access_review(lab, token, **attributes) -> dict:
    key = "nonResourceAttributes" if "path" in attributes else "resourceAttributes"
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {key: attributes}}
    response = as_token(lab, token, "POST", f"{AUTHZ}/selfsubjectaccessreviews", body)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["kind"] == "SelfSubjectAccessReview" and answer["spec"] == body["spec"]
    return answer["status"]


def rules_review(lab, token, namespace: str) -> dict:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": namespace}}
    response = as_token(lab, token, "POST", f"{AUTHZ}/selfsubjectrulesreviews", body)
    assert response.status_code == 201, response.text
    return response.json()["status"]


def test_access_reviews_answer_with_the_deciding_binding(lab, grants):
    name, token = grants.user()
    role = grants.cluster_role([rule(["get"], ["pods/log"]), rule(["approve"], ["signers"], ["certificates.k8s.io"])])
    binding = grants.bind(role, [{"kind": "User", "name": name}])
    assert access_review(lab, token, verb="get", resource="pods", subresource="log", namespace="x") == {
        "allowed": True,
        "reason": f'RBAC: allowed by ClusterRoleBinding "{binding}" of ClusterRole "{role}" to User "{name}"',
    }
    assert access_review(lab, token, verb="get", resource="pods", namespace="x") == {"allowed": False}
    # A synthetic resource (no such kind is served) is answered all the same.
    signer = access_review(lab, token, verb="approve", group="certificates.k8s.io", resource="signers", name="a/b")
    assert signer["allowed"] is True
    assert access_review(lab, token, path="/version", verb="get")["allowed"] is True
    assert access_review(lab, token, path="/metrics", verb="get") == {"allowed": False}
    assert access_review(lab, lab.tokens["admin"], verb="delete", resource="nodes") == {"allowed": True}


def test_access_review_reasons_for_role_bindings_and_service_accounts(lab, grants):
    namespace = grants.namespace()
    account = f"system:serviceaccount:{namespace}:robot"
    _name, token = grants.user(account, ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"])
    role = grants.role(namespace, [rule(["list"], ["configmaps"])])
    binding = grants.bind(role, [{"kind": "ServiceAccount", "name": "robot"}], namespace, role_kind="Role")
    status = access_review(lab, token, verb="list", resource="configmaps", namespace=namespace)
    assert status["reason"] == (
        f'RBAC: allowed by RoleBinding "{binding}/{namespace}" of Role "{role}" to ServiceAccount "robot/{namespace}"'
    )
    assert access_review(lab, token, verb="list", resource="configmaps")["allowed"] is False  # all namespaces
    missing = unique("missing")
    grants.bind(missing, [{"kind": "ServiceAccount", "name": "robot", "namespace": namespace}])
    denied = access_review(lab, token, verb="list", resource="nodes")
    assert denied == {"allowed": False, "reason": f'RBAC: clusterrole.rbac.authorization.k8s.io "{missing}" not found'}


def test_access_review_validation_and_methods(lab):
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}
    assert_status(
        lab.api("POST", f"{AUTHZ}/selfsubjectaccessreviews", body=body),
        422,
        "Invalid",
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
        '"null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
    )
    assert_status(lab.api("GET", f"{AUTHZ}/selfsubjectaccessreviews"), 405, "MethodNotAllowed")
    # Reviews are never stored.
    kinds = {obj["kind"] for obj in lab.control("GET", "/state")["objects"]}
    assert "SelfSubjectAccessReview" not in kinds and "SelfSubjectRulesReview" not in kinds


def test_rules_reviews_list_the_rules_of_the_namespace(lab, grants):
    name, token = grants.user()
    namespace = grants.namespace()
    grants.bind(grants.cluster_role([rule(["list"], ["nodes"])]), [{"kind": "User", "name": name}])
    local = grants.cluster_role([rule(["get"], ["secrets"], names=["one"])])
    grants.bind(local, [{"kind": "User", "name": name}], namespace)
    status = rules_review(lab, token, namespace)
    assert status["incomplete"] is False and "evaluationError" not in status
    assert {"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]} in status["resourceRules"]
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["one"]} in status[
        "resourceRules"
    ]
    basic = {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    }
    assert basic in status["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/livez", "/readyz", "/healthz", "/version", "/version/"]} in status[
        "nonResourceRules"
    ]
    elsewhere = rules_review(lab, token, "default")["resourceRules"]
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["one"]} not in elsewhere
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}}
    response = as_token(lab, token, "POST", f"{AUTHZ}/selfsubjectrulesreviews", body)
    assert_status(response, 400, "BadRequest", "no namespace on request")


def test_rules_review_of_a_node_is_incomplete(lab):
    issued = lab.control("POST", "/client-cert", {"user": "system:node:extra-worker-2", "groups": ["system:nodes"]})
    cert, key = os.path.join(lab.state, "review-node.pem"), os.path.join(lab.state, "review-node-key.pem")
    for path, text in ((cert, issued["cert"]), (key, issued["key"])):
        with open(path, "w", encoding="ascii") as handle:
            handle.write(text)
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "x"}}
    response = lab.api("POST", f"{AUTHZ}/selfsubjectrulesreviews", as_user=None, body=body, cert=(cert, key))
    status = response.json()["status"]
    assert status["incomplete"] is True
    assert status["evaluationError"] == "node authorizer does not support user rule resolution"


def test_discovery_of_the_authorization_group(lab):
    groups = [group["name"] for group in lab.api("GET", "/apis").json()["groups"]]
    assert "authorization.k8s.io" in groups
    resources = lab.api("GET", AUTHZ).json()["resources"]
    assert [(r["name"], r["namespaced"], r["verbs"]) for r in resources] == [
        ("selfsubjectaccessreviews", False, ["create"]),
        ("selfsubjectrulesreviews", False, ["create"]),
    ]


def test_kubectl_auth_can_i(lab, grants, tmp_path):
    binary = kubectl_binary()
    name, _token = grants.user(labctl_user=True)
    kubeconfig = os.path.join(lab.state, f"kubeconfig-{name}")
    namespace = grants.namespace()
    grants.bind(
        grants.cluster_role([rule(["create"], ["pods/exec"]), rule(["list"], ["nodes"])]),
        [{"kind": "User", "name": name}],
    )
    grants.bind(
        grants.cluster_role([rule(["get", "list"], ["configmaps"])]), [{"kind": "User", "name": name}], namespace
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "KUBECONFIG": kubeconfig}

    def can_i(*args) -> tuple:
        result = subprocess.run(
            [binary, "auth", "can-i", *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        return result.returncode, result.stdout.strip()

    assert can_i("list", "nodes") == (0, "yes")
    assert can_i("delete", "nodes") == (1, "no")
    assert can_i("create", "pods", "--subresource", "exec", "-n", "default") == (0, "yes")
    assert can_i("create", "pods", "-n", "default") == (1, "no")
    assert can_i("get", "configmaps", "-n", namespace) == (0, "yes")
    assert can_i("get", "configmaps", "-n", "default") == (1, "no")
    code, table = can_i("--list", "-n", namespace)
    assert code == 0
    rows = [line.split() for line in table.splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert ["configmaps", "[]", "[]", "[get", "list]"] in rows
    assert ["nodes", "[]", "[]", "[list]"] in rows
    assert ["pods/exec", "[]", "[]", "[create]"] in rows
