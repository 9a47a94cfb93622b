"""The lab's RBAC authorizer over the wire, for identities made with ``labctl user``: bindings and their subjects,
namespaces, resourceNames, subresources, wildcards, non-resource URLs, and kube-apiserver's denial messages.

``Grants`` (users, roles and bindings made by the admin) is shared with test_rbac_escalation.py and
test_rbac_reviews.py.
"""

from __future__ import annotations

import json
import os

import pytest
from api_helpers import assert_status, configmap, unique
from conftest import labctl, token_of

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def rule(verbs, resources=None, groups=("",), names=None, urls=None) -> dict:
    if urls is not None:
        return {"verbs": list(verbs), "nonResourceURLs": list(urls)}
    built = {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
    if names:
        built["resourceNames"] = list(names)
    return built


class Grants:
    """Identities (``labctl user``) and the roles and bindings the admin gives them, on the session lab."""

    def __init__(self, lab):
        self.lab = lab

    def user(self, name: str | None = None, groups=(), labctl_user: bool = False) -> tuple:
        """``(name, token)`` of a new identity: from the control API, or written by ``labctl user`` as
        kubeconfig-NAME."""
        name = name or unique("user")
        if not labctl_user:
            made = self.lab.control("POST", "/users", {"name": name, "groups": list(groups)})
            return name, made["token"]
        args = ["user", "--state", self.lab.state, "--name", name]
        for group in groups:
            args += ["--group", group]
        printed = json.loads(labctl(*args).stdout)
        assert printed == {
            "kubeconfig": os.path.join(self.lab.state, f"kubeconfig-{name}"),
            "user": name,
            "groups": [*groups, "system:authenticated"],
        }
        assert os.stat(printed["kubeconfig"]).st_mode & 0o777 == 0o600
        return name, token_of(printed["kubeconfig"])

    def admin(self, method: str, path: str, body=None, expect=(200, 201)):
        response = self.lab.api(method, path, body=body)
        assert response.status_code in expect, response.text
        return response.json()

    def cluster_role(self, rules, name: str | None = None) -> str:
        name = name or unique("role")
        self.admin("POST", f"{RBAC}/clusterroles", {"metadata": {"name": name}, "rules": rules})
        return name

    def role(self, namespace: str, rules, name: str | None = None) -> str:
        name = name or unique("role")
        self.admin("POST", f"{RBAC}/namespaces/{namespace}/roles", {"metadata": {"name": name}, "rules": rules})
        return name

    def bind(self, role: str, subjects, namespace: str | None = None, role_kind: str = "ClusterRole") -> str:
        """A ClusterRoleBinding (no namespace) or a RoleBinding in ``namespace`` of ``role`` to ``subjects``."""
        name = unique("binding")
        body = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects,
        }
        where = f"namespaces/{namespace}/rolebindings" if namespace else "clusterrolebindings"
        self.admin("POST", f"{RBAC}/{where}", body)
        return name

    def namespace(self) -> str:
        name = unique("rbac-ns")
        self.admin("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def grant(self, rules, user: str | None = None, groups=()) -> tuple:
        """A new user bound cluster-wide to a new ClusterRole of ``rules``: ``(name, token)``."""
        name, token = self.user(user, groups)
        self.bind(self.cluster_role(rules), [{"kind": "User", "name": name}])
        return name, token


def as_token(lab, token: str, method: str, path: str, body=None, **kwargs):
    return lab.api(method, path, as_user=None, token=token, body=body, **kwargs)


@pytest.fixture
def grants(lab):
    return Grants(lab)


def test_a_new_user_may_only_discover(lab, grants):
    name, token = grants.user(groups=["devs"], labctl_user=True)
    assert_status(
        as_token(lab, token, "GET", "/api/v1/nodes"),
        403,
        "Forbidden",
        f'nodes is forbidden: User "{name}" cannot list resource "nodes" in API group "" at the cluster scope',
    )
    for path in ("/api", "/api/v1", "/apis", "/apis/certificates.k8s.io/v1", "/version", "/openapi/v2"):
        assert as_token(lab, token, "GET", path).status_code == 200, path
    body = assert_status(as_token(lab, token, "GET", "/metrics"), 403, "Forbidden")
    assert body["message"] == f'forbidden: User "{name}" cannot get path "/metrics"'
    assert lab.api("GET", "/metrics").status_code == 404  # system:masters may: then it is not found
    assert lab.api("GET", "/version", as_user=None).status_code == 200  # system:public-info-viewer


def test_cluster_role_binding_to_a_user_covers_every_namespace(lab, grants):
    name, token = grants.grant([rule(["get", "list"], ["configmaps"])])
    assert as_token(lab, token, "GET", "/api/v1/configmaps").status_code == 200
    assert as_token(lab, token, "GET", "/api/v1/namespaces/openshift-config/configmaps").status_code == 200
    assert as_token(lab, token, "GET", "/api/v1/namespaces/openshift-config/configmaps/user-ca-bundle").ok
    assert_status(
        as_token(lab, token, "DELETE", "/api/v1/namespaces/default/configmaps/x"),
        403,
        "Forbidden",
        f'configmaps "x" is forbidden: User "{name}" cannot delete resource "configmaps" in API group "" '
        'in the namespace "default"',
    )
    assert as_token(lab, token, "GET", "/api/v1/secrets").status_code == 403


def test_group_and_service_account_subjects(lab, grants):
    team = unique("team")
    _name, member = grants.user(groups=[team])
    _other, outsider = grants.user(groups=["another-team"])
    grants.bind(grants.cluster_role([rule(["list"], ["nodes"])]), [{"kind": "Group", "name": team}])
    assert as_token(lab, member, "GET", "/api/v1/nodes").status_code == 200
    assert as_token(lab, outsider, "GET", "/api/v1/nodes").status_code == 403

    namespace = grants.namespace()
    account = f"system:serviceaccount:{namespace}:robot"
    _sa, robot = grants.user(account, ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"])
    role = grants.cluster_role([rule(["list"], ["pods"])])
    # In a RoleBinding a ServiceAccount subject without namespace is one of the binding's namespace.
    grants.bind(role, [{"kind": "ServiceAccount", "name": "robot"}], namespace=namespace)
    assert as_token(lab, robot, "GET", f"/api/v1/namespaces/{namespace}/pods").status_code == 200
    assert as_token(lab, robot, "GET", "/api/v1/namespaces/default/pods").status_code == 403
    # In a ClusterRoleBinding it needs its namespace; one of another namespace does not match.
    grants.bind(grants.cluster_role([rule(["list"], ["nodes"])]), [{"kind": "ServiceAccount", "name": "robot"}])
    grants.bind(
        grants.cluster_role([rule(["list"], ["nodes"])]),
        [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
    )
    assert as_token(lab, robot, "GET", "/api/v1/nodes").status_code == 403
    grants.bind(
        grants.cluster_role([rule(["list"], ["nodes"])]),
        [{"kind": "ServiceAccount", "name": "robot", "namespace": namespace}],
    )
    assert as_token(lab, robot, "GET", "/api/v1/nodes").status_code == 200


def test_role_bindings_grant_in_their_namespace_only(lab, grants):
    name, token = grants.user()
    first, second = grants.namespace(), grants.namespace()
    grants.bind(grants.cluster_role([rule(["create", "get"], ["configmaps"])]), [{"kind": "User", "name": name}], first)
    role = grants.role(second, [rule(["list"], ["configmaps"])])
    grants.bind(role, [{"kind": "User", "name": name}], second, role_kind="Role")
    created = as_token(lab, token, "POST", f"/api/v1/namespaces/{first}/configmaps", configmap(first, "mine"))
    assert created.status_code == 201, created.text
    assert as_token(lab, token, "GET", f"/api/v1/namespaces/{first}/configmaps/mine").status_code == 200
    assert as_token(lab, token, "GET", f"/api/v1/namespaces/{first}/configmaps").status_code == 403
    assert as_token(lab, token, "GET", f"/api/v1/namespaces/{second}/configmaps").status_code == 200
    assert (
        as_token(lab, token, "POST", f"/api/v1/namespaces/{second}/configmaps", configmap(second, "x")).status_code
        == 403
    )
    assert as_token(lab, token, "GET", "/api/v1/configmaps").status_code == 403  # not cluster-wide


def test_resource_names_allow_named_requests_only(lab, grants):
    name, token = grants.grant([rule(["get", "update", "create", "list"], ["configmaps"], names=["allowed"])])
    grants.admin("POST", "/api/v1/namespaces/default/configmaps", configmap("default", "allowed"))
    grants.admin("POST", "/api/v1/namespaces/default/configmaps", configmap("default", "other"))
    base = "/api/v1/namespaces/default/configmaps"
    assert as_token(lab, token, "GET", f"{base}/allowed").status_code == 200
    assert as_token(lab, token, "GET", f"{base}/other").status_code == 403
    assert as_token(lab, token, "GET", base).status_code == 403  # a list has no name
    # A create carries no name in its URL, so a rule with resourceNames never allows it.
    assert_status(
        as_token(lab, token, "POST", base, configmap("default", "allowed-too")),
        403,
        "Forbidden",
        f'configmaps "allowed-too" is forbidden: User "{name}" cannot create resource "configmaps" in API group "" '
        'in the namespace "default"',
    )
    grants.admin("DELETE", f"{base}/allowed")
    grants.admin("DELETE", f"{base}/other")


def test_subresources_and_wildcards(lab, grants):
    _name, token = grants.grant(
        [rule(["get"], ["nodes/status"]), rule(["list"], ["*"], groups=["config.openshift.io"])]
    )
    assert as_token(lab, token, "GET", "/api/v1/nodes/master-0/status").status_code == 200
    assert as_token(lab, token, "GET", "/api/v1/nodes/master-0").status_code == 403
    assert as_token(lab, token, "GET", "/apis/config.openshift.io/v1/clusteroperators").status_code == 200
    assert as_token(lab, token, "GET", "/apis/config.openshift.io/v1/clusterversions").status_code == 200
    assert as_token(lab, token, "GET", "/apis/config.openshift.io/v1/clusterversions/version").status_code == 403
    _name, star = grants.grant([rule(["get"], ["*/status"], groups=["*"])])
    assert as_token(lab, star, "GET", "/api/v1/nodes/master-0/status").status_code == 200
    assert as_token(lab, star, "GET", "/apis/config.openshift.io/v1/clusterversions/version/status").ok
    assert as_token(lab, star, "GET", "/api/v1/nodes/master-0").status_code == 403
    _name, everything = grants.grant([rule(["*"], ["*"], groups=["*"])])
    assert as_token(lab, everything, "GET", "/api/v1/secrets").status_code == 200
    assert as_token(lab, everything, "GET", "/metrics").status_code == 403  # no nonResourceURLs rule


def test_non_resource_urls(lab, grants):
    _name, token = grants.grant([rule(["get"], urls=["/metrics", "/debug/*"])])
    assert as_token(lab, token, "GET", "/metrics").status_code == 404  # authorized, then not served
    assert as_token(lab, token, "GET", "/debug/pprof").status_code == 404
    assert as_token(lab, token, "GET", "/debugger").status_code == 403


def test_a_binding_to_a_missing_role_is_named_in_the_denial(lab, grants):
    name, token = grants.user()
    missing = unique("missing")
    grants.bind(missing, [{"kind": "User", "name": name}])
    assert_status(
        as_token(lab, token, "GET", "/api/v1/nodes"),
        403,
        "Forbidden",
        f'nodes is forbidden: User "{name}" cannot list resource "nodes" in API group "" at the cluster scope: '
        f'RBAC: clusterrole.rbac.authorization.k8s.io "{missing}" not found',
    )


def test_built_in_identities_are_bootstrap_bindings(lab):
    names = {item["metadata"]["name"] for item in lab.api("GET", f"{RBAC}/clusterrolebindings").json()["items"]}
    assert {"cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer"} <= names
    assert {"system-bootstrap-node-bootstrapper", "lab-readonly"} <= names
    readonly = lab.api("GET", f"{RBAC}/clusterroles/lab-readonly").json()
    assert readonly["rules"] == [{"verbs": ["get", "list", "watch"], "apiGroups": ["*"], "resources": ["*"]}]
