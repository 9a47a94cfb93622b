# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The permissions a run needs, defined once (``RULES``: who needs each and why), and the access check.

``RULES`` are the rules of the roles docs/rbac.md documents (a unit test keeps the two equal): the ClusterRole
``openshift-agent-day2`` (the rules without a namespace), a Role ``openshift-agent-day2`` in each namespace of a
namespaced rule, and the ClusterRole ``openshift-agent-day2-replace`` (the rules only replace_worker.yml needs).

:func:`run` asks the API server, with one SelfSubjectAccessReview per verb, resource and name, whether the
identity holds every permission of the planned parts of the run, and fails with the list of the missing ones.
An access review is a question, not a change: the API server answers it and stores nothing.

Creating node-joiner's ClusterRole and its binding is subject to the API server's escalation rule: allowed only
to an identity that holds every permission the role grants, or may ``escalate`` and ``bind`` ClusterRoles --
kubernetes pkg/registry/rbac/clusterrole/policybased/storage.go@f57072c8cd5e803d5bef17af8c27c1b0feefb018 and
pkg/registry/rbac/escalation_check.go@31b6ba4e9469592a7ca2f56235750767f34ab3fb. The documented role takes the
second way; an identity that takes the first (every rule of :func:`_image.node_joiner.cluster_role_rules`,
cluster-wide) passes too.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiClient,
    connect,
    describe_connection,
    group_target,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.node_joiner import (
    ICSP_RULE_FIXED_IN,
    cluster_role_rules,
)

# The parts of a run (the option ``plan``) and the module of each, for the messages.
STEP_MODULES = {
    "gather": "day1_facts",
    "image": "day2_iso",
    "install": "join_workers",
    "join": "join_workers",
    "replace": "replace_worker.yml",
}
DEFAULT_PLAN = ("gather", "image", "install", "join")
ROLE_NAME = "openshift-agent-day2"
REPLACE_ROLE_NAME = "openshift-agent-day2-replace"
RBAC = "rbac.authorization.k8s.io"
_CONFIG, _MCO, _CERTS = "config.openshift.io", "machineconfiguration.openshift.io", "certificates.k8s.io"
KUBELET_SIGNERS = ("kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving")
REVIEW_TARGET = group_target("authorization.k8s.io", "v1", "selfsubjectaccessreviews", verb="create")


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule of the documented roles: an RBAC PolicyRule, where it applies, who needs it and why."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    steps: tuple[str, ...]
    why: str
    names: tuple[str, ...] = ()
    namespace: str | None = None  # None: in the ClusterRole; else in the Role of that namespace
    # True for the rule node-joiner's role can be granted without: holding all of that role instead.
    or_node_joiner_rules: bool = False

    @property
    def role(self) -> str:
        return REPLACE_ROLE_NAME if self.steps == ("replace",) else ROLE_NAME

    def policy_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"apiGroups": [self.group], "resources": list(self.resources)}
        if self.names:
            rule["resourceNames"] = list(self.names)
        rule["verbs"] = list(self.verbs)
        return rule

    def comment(self) -> str:
        return "%s: %s" % (", ".join(STEP_MODULES[step] for step in self.steps), self.why)


RULES: tuple[Rule, ...] = (
    # --- ClusterRole openshift-agent-day2 ---
    Rule(_CONFIG, ("clusterversions",), ("get",), ("gather", "image", "install"),
         "release, cluster ID, release image (node-joiner and agents differ by release)",
         names=("version",)),
    Rule(_CONFIG, ("infrastructures",), ("get",), ("gather", "image"), "platform, API URLs, infrastructure name",
         names=("cluster",)),
    Rule(_CONFIG, ("networks",), ("get",), ("gather",), "cluster and service networks, network type",
         names=("cluster",)),
    Rule(_CONFIG, ("proxies",), ("get",), ("gather", "image"), "the cluster proxy (node-joiner's pod uses it too)",
         names=("cluster",)),
    Rule(_CONFIG, ("ingresses",), ("get",), ("gather",), "the apps domain", names=("cluster",)),
    Rule(_CONFIG, ("imagedigestmirrorsets",), ("list",), ("gather",), "registry mirrors the new workers inherit"),
    Rule("operator.openshift.io", ("imagecontentsourcepolicies",), ("list",), ("gather",),
         "registry mirrors of the older kind"),
    Rule(_CONFIG, ("clusteroperators",), ("list",), ("gather",), "operator health (preflight refuses a sick cluster)"),
    Rule(_MCO, ("machineconfigs",), ("get",), ("gather",), "SSH key, FIPS and chrony settings of the workers",
         names=("99-worker-ssh", "99-worker-fips", "50-workers-chrony-configuration")),
    Rule(_MCO, ("machineconfigpools",), ("get",), ("gather",), "worker pool health", names=("worker",)),
    Rule("", ("nodes",), ("list",), ("gather", "image", "join"),
         "existing nodes (names, addresses, architecture); the new nodes' Ready state"),
    Rule("", ("nodes",), ("patch",), ("join",), "the new nodes' labels and taints (node_labels, node_taints)"),
    Rule(_CERTS, ("certificatesigningrequests",), ("get", "list", "watch"), ("join",),
         "find the new nodes' CSRs and follow the ones still to come"),
    Rule(_CERTS, ("certificatesigningrequests/approval",), ("update",), ("join",), "approve exactly those CSRs"),
    Rule(_CERTS, ("signers",), ("approve",), ("join",), "approving needs the signer's approve: the kubelet's two only",
         names=KUBELET_SIGNERS),
    Rule("", ("namespaces",), ("create", "delete", "list"), ("image",),
         "node-joiner's namespace (a generated name, so no resourceNames), deleted at the end; old runs' found"),
    Rule("", ("serviceaccounts", "configmaps"), ("create",), ("image",),
         "node-joiner's service account and nodes-config in that namespace"),
    Rule("", ("pods",), ("create", "get"), ("image",), "the node-joiner pod (and the release pod) and their state"),
    Rule("", ("pods/exec",), ("create",), ("image",), "read node-joiner's report, copy the ISO out of the pod"),
    Rule("", ("pods/log",), ("get",), ("image",), "the release pod's image references; node-joiner's log on failure"),
    Rule(RBAC, ("clusterroles", "clusterrolebindings"), ("create", "delete", "get", "list"), ("image",),
         "node-joiner's ClusterRole and binding (as oc adm node-image grants), deleted at the end; old runs' found"),
    Rule(RBAC, ("clusterroles",), ("escalate", "bind"), ("image",),
         "creating that role and its binding needs escalate and bind, or every permission the role grants",
         or_node_joiner_rules=True),
    # --- Roles openshift-agent-day2 ---
    Rule("", ("secrets",), ("get",), ("gather",), "the pull secret node-joiner needs (never returned)",
         names=("pull-secret",), namespace="openshift-config"),
    Rule("", ("secrets",), ("get",), ("image", "install"), "node-joiner's agent tokens: ISO reuse, agent API login",
         names=("agent-auth-token",), namespace="openshift-config"),
    Rule("", ("configmaps",), ("get",), ("gather",), "the additional trust bundle", names=("user-ca-bundle",),
         namespace="openshift-config"),
    Rule("", ("configmaps",), ("get",), ("image",), "the node-joiner image (4.18 and later)",
         names=("installer-images",), namespace="openshift-config"),
    Rule("", ("configmaps",), ("get",), ("gather",), "install-config: name, base domain, machine networks",
         names=("cluster-config-v1",), namespace="kube-system"),
    Rule("", ("configmaps",), ("get",), ("gather",), "the RHCOS boot images", names=("coreos-bootimages",),
         namespace="openshift-machine-config-operator"),
    Rule("", ("secrets",), ("get",), ("gather",), "the workers' Ignition endpoint",
         names=("worker-user-data-managed",), namespace="openshift-machine-api"),
    # --- ClusterRole openshift-agent-day2-replace ---
    Rule("", ("nodes",), ("get", "delete"), ("replace",), "read and delete the replaced node (cordon: patch nodes)"),
    Rule("", ("pods",), ("list", "delete"), ("replace",),
         "drain: the node's pods, deleted without eviction (a failed node); get pods is the image step's"),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Review:
    """One question to the API server: may the identity ``verb`` this resource (this name, in this namespace)?"""

    verb: str
    resource: str  # plural/subresource
    group: str
    namespace: str | None = None
    name: str | None = None

    def spec(self) -> dict[str, Any]:
        resource, _sep, subresource = self.resource.partition("/")
        attributes = {"verb": self.verb, "group": self.group, "resource": resource}
        for key, value in (("subresource", subresource), ("namespace", self.namespace), ("name", self.name)):
            if value:
                attributes[key] = value
        return {"resourceAttributes": attributes}

    def describe(self) -> str:
        what = self.resource if not self.group else "%s.%s" % (self.resource, self.group)
        named = ' "%s"' % self.name if self.name else ""
        where = " in namespace %s" % self.namespace if self.namespace else " (cluster-wide)"
        return "%s %s%s%s" % (self.verb, what, named, where)


def reviews_of(rule: Rule) -> list[Review]:
    names: tuple[str | None, ...] = rule.names or (None,)
    return [
        Review(verb, resource, rule.group, rule.namespace, name)
        for resource in rule.resources
        for verb in rule.verbs
        for name in names
    ]


def planned_rules(plan: list[str] | tuple[str, ...]) -> list[Rule]:
    unknown = sorted(set(plan) - set(STEP_MODULES))
    if unknown:
        raise Day2Error(
            "access_check: option plan has %s, which is not a part of the run; use some of %s"
            % (", ".join(unknown), ", ".join(STEP_MODULES))
        )
    return [rule for rule in RULES if set(rule.steps) & set(plan)]


def node_joiner_reviews(release: str | None) -> list[Review]:
    """The cluster-wide permissions of node-joiner's ClusterRole for ``release`` (all releases' when unknown)."""
    match = re.match(r"(\d+)\.(\d+)", release or "")
    minors = (
        [(int(match.group(1)), int(match.group(2)))] if match else [(4, ICSP_RULE_FIXED_IN[1] - 1), ICSP_RULE_FIXED_IN]
    )
    reviews: list[Review] = []
    for minor in minors:
        for rule in cluster_role_rules(minor):
            for group in rule["apiGroups"]:
                reviews += [Review(verb, resource, group) for resource in rule["resources"] for verb in rule["verbs"]]
    return list(dict.fromkeys(reviews))


class AccessError(Day2Error):
    """The identity lacks permissions the run needs (``result["missing"]`` lists them)."""


def _ask(api: ApiClient, review: Review) -> bool:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": review.spec()}
    answer = api.create(REVIEW_TARGET, body) or {}
    return bool((answer.get("status") or {}).get("allowed"))


def check(api: ApiClient, plan: list[str] | tuple[str, ...], release: str | None, identity: str) -> dict[str, Any]:
    """Ask for every permission of the planned parts of the run; raise AccessError listing the missing ones."""
    asked: dict[Review, bool] = {}

    def allowed(review: Review) -> bool:
        if review not in asked:
            asked[review] = _ask(api, review)
        return asked[review]

    missing: list[dict[str, Any]] = []
    for rule in planned_rules(plan):
        lacking = [review for review in reviews_of(rule) if not allowed(review)]
        if lacking and rule.or_node_joiner_rules and all(allowed(r) for r in node_joiner_reviews(release)):
            lacking = []
        missing += [_entry(review, rule) for review in lacking]
    result: dict[str, Any] = {"changed": False, "plan": list(plan), "reviews": len(asked), "missing": missing}
    if missing:
        raise AccessError(_message(missing, identity), result)
    return result


def _entry(review: Review, rule: Rule) -> dict[str, Any]:
    return {
        "verb": review.verb,
        "resource": review.resource,
        "group": review.group,
        "namespace": review.namespace,
        "name": review.name,
        "needed_by": [STEP_MODULES[step] for step in rule.steps],
        "why": rule.why,
        "role": rule.role if rule.namespace is None else "%s (Role in %s)" % (ROLE_NAME, rule.namespace),
    }


def _message(missing: list[dict[str, Any]], identity: str) -> str:
    lines = []
    for entry in missing:
        review = Review(entry["verb"], entry["resource"], entry["group"], entry["namespace"], entry["name"])
        lines.append("- %s: %s: %s" % (review.describe(), ", ".join(entry["needed_by"]), entry["why"]))
    return (
        "the identity of %s lacks %d permission(s) this run needs; nothing was written to the cluster.\n%s\n"
        "Bind the roles of docs/rbac.md to it (they grant exactly what the run needs), or grant what is listed."
        % (identity, len(missing), "\n".join(lines))
    )


def run(module: Any) -> dict[str, Any]:
    """access_check: connect and check the planned parts of the run (``plan``, ``release`` options)."""
    _client, api = connect(module)
    return check(api, module.params["plan"], module.params.get("release"), describe_connection(module))
