"""What kube-apiserver checks when roles and bindings are written, and when a CSR is approved.

- A Role or ClusterRole is created or updated only by system:masters, by whoever may ``escalate`` roles/clusterroles
  (the request's name: an unnamed create never matches a rule with resourceNames), or by whoever already holds every
  permission it grants (in the role's namespace for a Role, cluster-wide for a ClusterRole); an update that changes
  only ownerReferences or finalizers is always allowed -- kubernetes
  pkg/registry/rbac/clusterrole/policybased/storage.go@f57072c8cd5e803d5bef17af8c27c1b0feefb018 and
  pkg/registry/rbac/escalation_check.go@31b6ba4e9469592a7ca2f56235750767f34ab3fb.
- A RoleBinding or ClusterRoleBinding only by system:masters, by whoever may ``bind`` the referenced role (in the
  binding's namespace), or by whoever holds every permission of the referenced role; a missing role is a 404.
- "Holds" is ``Covers`` (each rule broken down to one group, resource, verb and name; ``*`` and ``*/subresource``
  cover) -- staging/src/k8s.io/component-helpers/auth/rbac/validation/policy_comparator.go@
  04791b4906602ffda5ccf9bc4c84d3329f1d7080; the refusal lists the missing rules compacted and sorted, in
  ``CompactString`` form -- pkg/registry/rbac/validation/rule.go@2821f1617e3ce4f4ee17f6d0c770e2abbb5147a5,
  pkg/registry/rbac/validation/policy_compact.go@490ffa432a878f5a75e5b5906d820d06e672556e.
- Approving a CSR (``certificatesigningrequests/approval``) also needs ``approve`` on ``signers`` named after the
  CSR's signerName or ``<domain>/*`` -- plugin/pkg/admission/certificates/approval/admission.go@
  c4b5de207d1f469249888c498a965c58443e6964, plugin/pkg/admission/certificates/util.go@
  aed80471ab6fbe2c2f884d1000108db3b65246b8.
"""

from __future__ import annotations

import json

from . import kinds
from .auth import Attributes, Identity
from .errors import ApiError, invalid, not_found
from .rbac import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    MASTERS,
    RBAC_GROUP,
    ROLE,
    ROLE_BINDING,
    aggregate,
    authorize,
    field,
    rbac_rules,
    role_rules,
)

ROLE_KINDS = (CLUSTER_ROLE, ROLE)
BINDING_KINDS = (CLUSTER_ROLE_BINDING, ROLE_BINDING)
_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")
_STORE_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation")


def _quoted(values) -> str:
    """A Go ``%q`` of a []string: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(value) for value in values) + "]"


def compact_string(rule: dict) -> str:
    parts = []
    for key, label in (
        ("apiGroups", "APIGroups"),
        ("resources", "Resources"),
        ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"),
        ("verbs", "Verbs"),
    ):
        if rule.get(key):
            parts.append(f"{label}:{_quoted(rule[key])}")
    return "{" + ", ".join(parts) + "}"


# ----- Covers --------------------------------------------------------------------------------------
def breakdown(rule: dict) -> list:
    subrules = []
    for group in field(rule, "apiGroups"):
        for resource in field(rule, "resources"):
            for verb in field(rule, "verbs"):
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                names = field(rule, "resourceNames")
                subrules += [dict(base, resourceNames=[name]) for name in names] if names else [base]
    for url in field(rule, "nonResourceURLs"):
        subrules += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in field(rule, "verbs")]
    return subrules


def _resources_cover(owned: list, wanted: list) -> bool:
    if "*" in owned:
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_covers(owner: dict, sub: dict) -> bool:
    verbs, groups = field(owner, "verbs"), field(owner, "apiGroups")
    owner_names, sub_names = field(owner, "resourceNames"), field(sub, "resourceNames")
    return (
        ("*" in verbs or set(field(sub, "verbs")) <= set(verbs))
        and ("*" in groups or set(field(sub, "apiGroups")) <= set(groups))
        and _resources_cover(field(owner, "resources"), field(sub, "resources"))
        and all(any(_url_covers(o, p) for o in field(owner, "nonResourceURLs")) for p in field(sub, "nonResourceURLs"))
        and (not owner_names if not sub_names else (not owner_names or set(sub_names) <= set(owner_names)))
    )


def uncovered(owner_rules: list, rules: list) -> list:
    """The broken-down rules of ``rules`` that no rule of ``owner_rules`` covers."""
    return [sub for rule in rules for sub in breakdown(rule) if not any(rule_covers(o, sub) for o in owner_rules)]


def compact(rules: list) -> list:
    """Rules of one group, one resource and at most one name, with nothing else, merged across verbs."""
    merged: dict = {}
    result = []
    for rule in rules:
        simple = (
            len(field(rule, "resourceNames")) <= 1
            and not rule.get("nonResourceURLs")
            and len(field(rule, "apiGroups")) == 1
            and len(field(rule, "resources")) == 1
        )
        if not simple:
            result.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], tuple(field(rule, "resourceNames")))
        if key in merged:
            merged[key]["verbs"] = merged[key]["verbs"] + field(rule, "verbs")
        else:
            merged[key] = {k: list(v) for k, v in rule.items()}
    return result + list(merged.values())


def confirm_no_escalation(store, identity: Identity, namespace: str, rules: list) -> str | None:
    """None when ``identity`` holds every permission of ``rules`` in ``namespace``; else the refusal's text."""
    owner_rules, errors = rbac_rules(store, identity, namespace)
    missing = uncovered(owner_rules, rules)
    if not missing:
        return None
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (
        f'user "{identity.name}" (groups={_quoted(identity.groups)}) is attempting to grant RBAC permissions not '
        "currently held:\n" + "\n".join(lines)
    )
    if errors:
        message += f"; resolution errors: [{aggregate(errors)}]"
    return message


# ----- writes of roles and bindings ----------------------------------------------------------------
def _only_gc_fields(new: dict, old: dict | None) -> bool:
    if old is None:
        return False

    def comparable(obj: dict) -> dict:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS + _STORE_FIELDS}
        return {**{k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}, "metadata": meta}

    return comparable(new) == comparable(old)


def _forbidden(kind, name: str, message: str) -> ApiError:
    details = {"name": name, "group": kind.group, "kind": kind.plural}
    return ApiError(403, "Forbidden", f'{kind.group_resource} "{name}" is forbidden: {message}', details)


def _may(store, identity: Identity, verb: str, resource: str, namespace: str, name: str) -> bool:
    attrs = Attributes(verb, RBAC_GROUP, resource, namespace=namespace, name=name)
    return authorize(store, identity, attrs)[0]


def _check_role_ref(kind, obj: dict, old: dict | None) -> dict:
    name = obj["metadata"].get("name")
    role_ref = obj.get("roleRef")
    allowed = ("ClusterRole",) if kind is CLUSTER_ROLE_BINDING else ("Role", "ClusterRole")
    if not isinstance(role_ref, dict) or not role_ref.get("name"):
        raise invalid(kind, name, "roleRef.name: Required value")
    if role_ref.get("kind") not in allowed:
        supported = ", ".join(f'"{value}"' for value in allowed)
        message = f'roleRef.kind: Unsupported value: "{role_ref.get("kind")}": supported values: {supported}'
        raise invalid(kind, name, message)
    if role_ref.get("apiGroup") not in (RBAC_GROUP, None, ""):
        message = f'roleRef.apiGroup: Unsupported value: "{role_ref.get("apiGroup")}": supported values: "{RBAC_GROUP}"'
        raise invalid(kind, name, message)
    before = (old or {}).get("roleRef") or {}
    if old is not None and (before.get("kind"), before.get("name")) != (role_ref.get("kind"), role_ref.get("name")):
        shown = f'rbac.RoleRef{{APIGroup:"{RBAC_GROUP}", Kind:"{role_ref.get("kind")}", Name:"{role_ref.get("name")}"}}'
        raise invalid(kind, name, f"roleRef: Invalid value: {shown}: cannot change roleRef")
    return role_ref


def check_write(
    store, identity: Identity, kind, namespace: str | None, obj: dict, old: dict | None, url_name: str
) -> None:
    """Raise the ApiError kube-apiserver answers when ``identity`` may not write ``obj`` (a role or a binding).

    ``old`` is the stored object of an update (None for a create); ``url_name`` the name in the request's URL
    ("" for a create), which is what an ``escalate`` rule with resourceNames is matched against.
    """
    if kind not in ROLE_KINDS + BINDING_KINDS:
        return
    scope = namespace or ""
    role_ref = _check_role_ref(kind, obj, old) if kind in BINDING_KINDS else None
    if MASTERS in identity.groups or _only_gc_fields(obj, old):
        return
    name = obj["metadata"].get("name", "")
    if role_ref is None:
        if _may(store, identity, "escalate", kind.plural, scope, url_name):
            return
        rules = list(obj.get("rules") or [])
    else:
        ref_resource = "clusterroles" if role_ref["kind"] == "ClusterRole" else "roles"
        if _may(store, identity, "bind", ref_resource, scope, role_ref["name"]):
            return
        try:
            rules = role_rules(store, role_ref, scope)
        except KeyError:
            raise not_found(CLUSTER_ROLE if role_ref["kind"] == "ClusterRole" else ROLE, role_ref["name"]) from None
    refusal = confirm_no_escalation(store, identity, scope, rules)
    if refusal:
        raise _forbidden(kind, name, refusal)


# ----- CSR approval --------------------------------------------------------------------------------
CSR = kinds.CSR


def check_approval(store, identity: Identity, csr_name: str) -> None:
    """The approval admission: ``approve`` on signers ``<signerName>`` or ``<domain>/*``, else 403."""
    if MASTERS in identity.groups:
        return
    csr = store.find(CSR, None, csr_name)
    if csr is None:
        return  # the update answers the 404
    signer = (csr.get("spec") or {}).get("signerName", "")
    for name in (signer, signer.split("/")[0] + "/*"):
        if authorize(store, identity, Attributes("approve", "certificates.k8s.io", "signers", name=name))[0]:
            return
    raise _forbidden(CSR, csr_name, f'user not permitted to approve requests with signerName "{signer}"')
