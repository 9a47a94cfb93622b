"""Authorization as kube-apiserver does it: system:masters, then RBAC from the stored roles and bindings, then the
node authorizer -- for any identity, with the answers kube-apiserver gives (decision and reason).

- Rules match as kubernetes pkg/apis/rbac/v1/evaluation_helpers.go@03bf11a309fd1369f5c2dc7f3b31d63a97a14d66 has it:
  ``*`` verbs, groups and resources; ``resource/subresource`` and ``*/subresource``; resourceNames (an unnamed
  create, list or deletecollection never matches a rule with resourceNames); nonResourceURLs with a trailing ``*``.
- Which rules apply (ClusterRoleBindings, then RoleBindings of the request's namespace; User, Group and
  ServiceAccount subjects, a ServiceAccount without namespace meaning the binding's) and the reasons
  (``RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"``; a binding to a missing role is an
  error in the denial's reason) -- pkg/registry/rbac/validation/rule.go@2821f1617e3ce4f4ee17f6d0c770e2abbb5147a5
  and plugin/pkg/auth/authorizer/rbac/rbac.go@01aa0f3f6052c9866dcb69054d8924fa8c96e3cb.
- The lab's built-in identities are RBAC objects the lab creates at start (``bootstrap``), as kube-apiserver
  creates its bootstrap policy: cluster-admin for system:masters, system:discovery, system:basic-user and
  system:public-info-viewer for everyone (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go@
  53f1b9d6f8de259644c05a25aa7ac8c6a67258e2), system:node-bootstrapper for the MCO's node-bootstrapper
  (openshift/machine-config-operator manifests/machineconfigserver/csr-bootstrap-role-binding.yaml@
  aea7478588c21a1732b4cf3f401ab2577a37446d) and ``lab-readonly`` (get/list/watch on everything) for the lab's
  read-only user. ``system:node:<name>`` keeps the node authorizer's part a kubelet needs (``NODE_RULE``).
"""

from __future__ import annotations

from . import kinds
from .auth import ANONYMOUS, READONLY, Attributes, Identity

RBAC_GROUP = "rbac.authorization.k8s.io"
CLUSTER_ROLE = kinds.by_kind(f"{RBAC_GROUP}/v1", "ClusterRole")
CLUSTER_ROLE_BINDING = kinds.by_kind(f"{RBAC_GROUP}/v1", "ClusterRoleBinding")
ROLE = kinds.by_kind(f"{RBAC_GROUP}/v1", "Role")
ROLE_BINDING = kinds.by_kind(f"{RBAC_GROUP}/v1", "RoleBinding")
MASTERS = "system:masters"
NODES = "system:nodes"


# ----- one rule ------------------------------------------------------------------------------------
def field(rule: dict, key: str) -> list:
    return list(rule.get(key) or [])


def rule_allows(attrs: Attributes, rule: dict) -> bool:
    if "*" not in field(rule, "verbs") and attrs.verb not in field(rule, "verbs"):
        return False
    if not attrs.resource_request:
        return any(_url_matches(pattern, attrs.path) for pattern in field(rule, "nonResourceURLs"))
    groups = field(rule, "apiGroups")
    if "*" not in groups and attrs.group not in groups:
        return False
    if not _resource_matches(field(rule, "resources"), attrs.combined_resource, attrs.subresource):
        return False
    names = field(rule, "resourceNames")
    return not names or attrs.name in names


def _resource_matches(resources: list, combined: str, subresource: str) -> bool:
    for resource in resources:
        if resource in ("*", combined):
            return True
        if subresource and resource == "*/" + subresource:
            return True
    return False


def _url_matches(pattern: str, path: str) -> bool:
    if pattern in ("*", path):
        return True
    return pattern.endswith("*") and path.startswith(pattern.rstrip("*"))


# ----- which rules apply ---------------------------------------------------------------------------
def applies_to(identity: Identity, subject: dict, namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return identity.name == name
    if kind == "Group":
        return name in identity.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and identity.name == f"system:serviceaccount:{sa_namespace}:{name}"
    return False


def _describe_subject(subject: dict, namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{subject.get("name")}/{subject.get("namespace") or namespace}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


def role_rules(store, role_ref: dict, namespace: str) -> list:
    """The rules of the role a binding references; KeyError(the lister's not-found text) when it does not exist."""
    kind = role_ref.get("kind")
    name = role_ref.get("name", "")
    if kind == "ClusterRole":
        role = store.find(CLUSTER_ROLE, None, name)
    elif kind == "Role":
        role = store.find(ROLE, namespace, name) if namespace else None
    else:
        raise KeyError(f'unsupported role reference kind: "{kind}"')
    if role is None:
        raise KeyError(f'{str(kind).lower()}.{RBAC_GROUP} "{name}" not found')
    return list(role.get("rules") or [])


def visit_rules(store, identity: Identity, namespace: str):
    """``(source, rule, error)`` for every rule that applies to ``identity`` in ``namespace`` ("": cluster-wide)."""
    bindings = [(binding, "") for binding in store.list(CLUSTER_ROLE_BINDING)[0]]
    if namespace:
        bindings += [(binding, namespace) for binding in store.list(ROLE_BINDING, namespace)[0]]
    for binding, scope in bindings:
        subject = next((s for s in binding.get("subjects") or [] if applies_to(identity, s, scope)), None)
        if subject is None:
            continue
        role_ref = binding.get("roleRef") or {}
        try:
            rules = role_rules(store, role_ref, scope)
        except KeyError as error:
            yield None, None, error.args[0]
            continue
        name = binding["metadata"]["name"]
        kind = "ClusterRoleBinding" if not scope else "RoleBinding"
        shown = name if not scope else f"{name}/{scope}"
        role = f'{role_ref.get("kind")} "{role_ref.get("name")}"'
        source = f'{kind} "{shown}" of {role} to {_describe_subject(subject, scope)}'
        for rule in rules:
            yield source, rule, None


def rbac_rules(store, identity: Identity, namespace: str) -> tuple:
    """``(rules, errors)``: kube's ``RulesFor`` -- every rule that applies and every binding that could not."""
    rules, errors = [], []
    for _source, rule, error in visit_rules(store, identity, namespace):
        if rule is not None:
            rules.append(rule)
        if error:
            errors.append(error)
    return rules, errors


def aggregate(errors: list) -> str:
    """An error list as utilerrors.NewAggregate prints it (flat, each text once, brackets for more than one)."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# ----- the authorizer chain ------------------------------------------------------------------------
def _node_name(identity: Identity) -> str | None:
    if identity.name.startswith("system:node:") and NODES in identity.groups:
        return identity.name[len("system:node:") :]
    return None


def node_rule(identity: Identity, attrs: Attributes, object_name: str = "") -> bool:
    """The part of the node authorizer and the system:node role a kubelet needs to join: its own Node only (the
    NodeRestriction admission's part, which sees the name in the body of a create: ``object_name``)."""
    node = _node_name(identity)
    if node is None or not attrs.resource_request or attrs.group not in ("", "certificates.k8s.io"):
        return False
    resource = attrs.combined_resource
    if resource == "certificatesigningrequests":
        return attrs.verb in ("create", "get", "list", "watch")
    if resource == "nodes" and attrs.verb in ("get", "list", "watch"):
        return True
    if resource in ("nodes", "nodes/status") and attrs.verb in ("create", "update", "patch"):
        return (attrs.name or object_name) == node
    return False


def authorize(store, identity: Identity | None, attrs: Attributes, object_name: str = "") -> tuple:
    """``(allowed, reason)`` as kube-apiserver's authorizer chain answers (reason "" when nothing is to be said).

    ``object_name``: the name in the body of a create, which only the node authorizer's part looks at.
    """
    identity = identity or ANONYMOUS
    if MASTERS in identity.groups:
        return True, ""
    errors = []
    for source, rule, error in visit_rules(store, identity, attrs.namespace):
        if rule is not None and rule_allows(attrs, rule):
            return True, f"RBAC: allowed by {source}"
        if error:
            errors.append(error)
    if node_rule(identity, attrs, object_name):
        return True, ""
    return False, f"RBAC: {aggregate(errors)}" if errors else ""


def rules_review(store, identity: Identity, namespace: str) -> dict:
    """The ``status`` of a SelfSubjectRulesReview: every authorizer's rules, ``incomplete`` and the errors."""
    resource_rules, non_resource_rules, errors = [], [], []
    if MASTERS in identity.groups:
        resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
        non_resource_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
    rules, rbac_errors = rbac_rules(store, identity, namespace)
    for rule in rules:
        if rule.get("resources"):
            converted = {key: field(rule, key) for key in ("verbs", "apiGroups", "resources", "resourceNames")}
            resource_rules.append({key: value for key, value in converted.items() if value or key == "verbs"})
        if rule.get("nonResourceURLs"):
            urls = field(rule, "nonResourceURLs")
            non_resource_rules.append({"verbs": field(rule, "verbs"), "nonResourceURLs": urls})
    errors += rbac_errors
    incomplete = _node_name(identity) is not None
    if incomplete:
        errors.append("node authorizer does not support user rule resolution")
    status = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": incomplete}
    if errors:
        status["evaluationError"] = aggregate(errors)
    return status


# ----- the bootstrap policy ------------------------------------------------------------------------
def _rule(verbs, groups=None, resources=None, urls=None) -> dict:
    rule: dict = {"verbs": list(verbs)}
    if groups is not None:
        rule["apiGroups"] = list(groups)
        rule["resources"] = list(resources)
    if urls is not None:
        rule["nonResourceURLs"] = list(urls)
    return rule


_PUBLIC_URLS = ("/livez", "/readyz", "/healthz", "/version", "/version/")
# name -> (rules, subjects of its ClusterRoleBinding of the same name)
BOOTSTRAP = {
    "cluster-admin": (
        [_rule(["*"], ["*"], ["*"]), _rule(["*"], urls=["*"])],
        [{"kind": "Group", "name": MASTERS}],
    ),
    "system:discovery": (
        [_rule(["get"], urls=[*_PUBLIC_URLS, "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"])],
        [{"kind": "Group", "name": "system:authenticated"}],
    ),
    "system:basic-user": (
        [_rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"])],
        [{"kind": "Group", "name": "system:authenticated"}],
    ),
    "system:public-info-viewer": (
        [_rule(["get"], urls=_PUBLIC_URLS)],
        [{"kind": "Group", "name": "system:authenticated"}, {"kind": "Group", "name": "system:unauthenticated"}],
    ),
    "system:node-bootstrapper": (
        [_rule(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"])],
        [{"kind": "ServiceAccount", "name": "node-bootstrapper", "namespace": "openshift-machine-config-operator"}],
    ),
    READONLY.name: ([_rule(["get", "list", "watch"], ["*"], ["*"])], [{"kind": "User", "name": READONLY.name}]),
}
# The MCO names its binding differently from the role.
BINDING_NAMES = {"system:node-bootstrapper": "system-bootstrap-node-bootstrapper"}


def bootstrap(store) -> int:
    """Create the bootstrap ClusterRoles and their ClusterRoleBindings; returns how many objects were created."""
    for name, (rules, subjects) in BOOTSTRAP.items():
        labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
        store.create(CLUSTER_ROLE, {"metadata": {"name": name, "labels": labels}, "rules": rules})
        binding = {
            "metadata": {"name": BINDING_NAMES.get(name, name), "labels": labels},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [dict(subject) for subject in subjects],
        }
        store.create(CLUSTER_ROLE_BINDING, binding)
    return 2 * len(BOOTSTRAP)
