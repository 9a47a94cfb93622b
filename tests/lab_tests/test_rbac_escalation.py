"""The escalation rule over the wire: roles and bindings are written only by whoever holds what they grant, or
may ``escalate`` / ``bind``; and CSR approval needs ``approve`` on the signer. Messages are kube-apiserver's."""

from __future__ import annotations

import pytest
from api_helpers import CSRS, assert_status, csr_body, unique
from test_rbac import RBAC, Grants, as_token, rule

WRITE_ROLES = rule(["create", "update", "patch"], ["clusterroles", "roles"], groups=["rbac.authorization.k8s.io"])
WRITE_BINDINGS = rule(
    ["create", "update"], ["clusterrolebindings", "rolebindings"], groups=["rbac.authorization.k8s.io"]
)


@pytest.fixture
def grants(lab):
    return Grants(lab)


def role_body(name: str, rules) -> dict:
    return {"metadata": {"name": name}, "rules": rules}


def binding_body(name: str, role: str, user: str, role_kind: str = "ClusterRole") -> dict:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "name": user}],
    }


def groups_text(name: str) -> str:
    return (
        f'user "{name}" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:'
    )


def test_a_cluster_role_granting_more_than_the_requester_holds_is_refused(lab, grants):
    name, token = grants.grant([WRITE_ROLES, rule(["get"], ["pods"])])
    wanted = [rule(["get", "list"], ["pods"]), rule(["get"], ["nodes"]), rule(["get"], ["secrets"], names=["a", "b"])]
    role = unique("wide")
    assert_status(
        as_token(lab, token, "POST", f"{RBAC}/clusterroles", role_body(role, wanted)),
        403,
        "Forbidden",
        f'clusterroles.rbac.authorization.k8s.io "{role}" is forbidden: {groups_text(name)}\n'
        '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["list"]}\n'
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get"]}\n'
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}',
    )
    held = as_token(lab, token, "POST", f"{RBAC}/clusterroles", role_body(unique("held"), [rule(["get"], ["pods"])]))
    assert held.status_code == 201, held.text


def test_escalate_allows_any_role_and_its_resource_names_apply_to_updates(lab, grants):
    rbac = ["rbac.authorization.k8s.io"]
    _name, token = grants.grant([WRITE_ROLES, rule(["escalate"], ["clusterroles"], groups=rbac)])
    anything = [rule(["*"], ["*"], groups=["*"])]
    assert as_token(lab, token, "POST", f"{RBAC}/clusterroles", role_body(unique("any"), anything)).status_code == 201

    target = grants.cluster_role([rule(["get"], ["pods"])])
    _named, limited = grants.grant([WRITE_ROLES, rule(["escalate"], ["clusterroles"], groups=rbac, names=[target])])
    updated = as_token(lab, limited, "PUT", f"{RBAC}/clusterroles/{target}", role_body(target, anything))
    assert updated.status_code == 200, updated.text
    # The create of a role of that very name carries no name in its URL: escalate with resourceNames does not apply.
    created = as_token(lab, limited, "POST", f"{RBAC}/clusterroles", role_body(unique("other"), anything))
    assert created.status_code == 403


def test_a_role_is_checked_against_what_the_requester_holds_in_its_namespace(lab, grants):
    name, token = grants.user()
    first, second = grants.namespace(), grants.namespace()
    writer = grants.cluster_role([WRITE_ROLES, rule(["get", "list"], ["configmaps"])])
    grants.bind(writer, [{"kind": "User", "name": name}], namespace=first)
    grants.bind(grants.cluster_role([WRITE_ROLES]), [{"kind": "User", "name": name}], namespace=second)
    rules = [rule(["get"], ["configmaps"])]
    path = f"{RBAC}/namespaces/{{}}/roles"
    assert as_token(lab, token, "POST", path.format(first), role_body("reader", rules)).status_code == 201
    refused = as_token(lab, token, "POST", path.format(second), role_body("reader", rules))
    assert_status(
        refused,
        403,
        "Forbidden",
        f'roles.rbac.authorization.k8s.io "reader" is forbidden: {groups_text(name)}\n'
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}',
    )


def test_an_update_that_changes_only_owner_references_is_always_allowed(lab, grants):
    _name, token = grants.grant([WRITE_ROLES])
    role = grants.cluster_role([rule(["get"], ["secrets"])])
    current = grants.admin("GET", f"{RBAC}/clusterroles/{role}")
    current["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Namespace", "name": "default", "uid": "u"}]
    assert as_token(lab, token, "PUT", f"{RBAC}/clusterroles/{role}", current).status_code == 200
    current = grants.admin("GET", f"{RBAC}/clusterroles/{role}")
    current["rules"] = [rule(["list"], ["secrets"])]
    assert as_token(lab, token, "PUT", f"{RBAC}/clusterroles/{role}", current).status_code == 403
    patch = {"rules": [rule(["delete"], ["secrets"])]}
    patched = as_token(
        lab, token, "PATCH", f"{RBAC}/clusterroles/{role}", patch, content_type="application/merge-patch+json"
    )
    assert patched.status_code == 403


def test_a_binding_needs_bind_or_every_permission_of_its_role(lab, grants):
    name, token = grants.grant([WRITE_BINDINGS, rule(["get"], ["pods"])])
    binding = unique("b")
    assert_status(
        as_token(lab, token, "POST", f"{RBAC}/clusterrolebindings", binding_body(binding, "cluster-admin", name)),
        403,
        "Forbidden",
        f'clusterrolebindings.rbac.authorization.k8s.io "{binding}" is forbidden: {groups_text(name)}\n'
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}',
    )
    held = grants.cluster_role([rule(["get"], ["pods"])])
    made = as_token(lab, token, "POST", f"{RBAC}/clusterrolebindings", binding_body(unique("b"), held, name))
    assert made.status_code == 201, made.text
    missing = unique("missing")
    assert_status(
        as_token(lab, token, "POST", f"{RBAC}/clusterrolebindings", binding_body(unique("b"), missing, name)),
        404,
        "NotFound",
        f'clusterroles.rbac.authorization.k8s.io "{missing}" not found',
    )

    rbac = ["rbac.authorization.k8s.io"]
    bindable = grants.cluster_role([rule(["*"], ["*"], groups=["*"])])
    _binder, binder = grants.grant([WRITE_BINDINGS, rule(["bind"], ["clusterroles"], groups=rbac, names=[bindable])])
    allowed = as_token(lab, binder, "POST", f"{RBAC}/clusterrolebindings", binding_body(unique("b"), bindable, "x"))
    assert allowed.status_code == 201, allowed.text
    other = as_token(
        lab, binder, "POST", f"{RBAC}/clusterrolebindings", binding_body(unique("b"), "cluster-admin", "x")
    )
    assert other.status_code == 403


def test_a_role_binding_may_bind_a_cluster_role_in_its_namespace_only(lab, grants):
    name, token = grants.user()
    namespace = grants.namespace()
    role = grants.cluster_role([rule(["delete"], ["secrets"])])
    delegate = grants.cluster_role(
        [WRITE_BINDINGS, rule(["bind"], ["clusterroles"], groups=["rbac.authorization.k8s.io"], names=[role])]
    )
    grants.bind(delegate, [{"kind": "User", "name": name}], namespace=namespace)
    path = f"{RBAC}/namespaces/{namespace}/rolebindings"
    assert as_token(lab, token, "POST", path, binding_body("ok", role, "someone")).status_code == 201
    cluster_wide = as_token(lab, token, "POST", f"{RBAC}/clusterrolebindings", binding_body(unique("b"), role, "x"))
    assert cluster_wide.status_code == 403


def test_binding_validation(lab, grants):
    body = binding_body(unique("b"), "cluster-admin", "x", role_kind="Role")
    assert_status(
        lab.api("POST", f"{RBAC}/clusterrolebindings", body=body),
        422,
        "Invalid",
        f'ClusterRoleBinding "{body["metadata"]["name"]}" is invalid: roleRef.kind: Unsupported value: "Role": '
        'supported values: "ClusterRole"',
    )
    name = grants.bind("cluster-admin", [{"kind": "User", "name": "x"}])
    changed = binding_body(name, "lab-readonly", "x")
    response = lab.api("PUT", f"{RBAC}/clusterrolebindings/{name}", body=changed)
    assert_status(response, 422, "Invalid")
    assert response.json()["message"].endswith("cannot change roleRef")


def test_approving_a_csr_needs_approve_on_its_signer(lab, grants):
    approve = rule(["update"], ["certificatesigningrequests/approval"], groups=["certificates.k8s.io"])
    name, token = grants.grant([approve])
    csr = unique("csr")
    grants.admin("POST", CSRS, csr_body(csr))
    current = grants.admin("GET", f"{CSRS}/{csr}")
    current["status"] = {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "t"}]}
    assert_status(
        as_token(lab, token, "PUT", f"{CSRS}/{csr}/approval", current),
        403,
        "Forbidden",
        f'certificatesigningrequests.certificates.k8s.io "{csr}" is forbidden: user not permitted to approve '
        'requests with signerName "kubernetes.io/kube-apiserver-client-kubelet"',
    )
    signers = rule(["approve"], ["signers"], groups=["certificates.k8s.io"], names=["kubernetes.io/*"])
    grants.bind(grants.cluster_role([signers]), [{"kind": "User", "name": name}])
    approved = as_token(lab, token, "PUT", f"{CSRS}/{csr}/approval", current)
    assert approved.status_code == 200, approved.text
    assert any(entry["csr"] == csr and entry["user"] == name for entry in lab.control("GET", "/approvals"))
