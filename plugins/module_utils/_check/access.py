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
second way; an identity that takes the first (every rule of :func:`_image.node_joiner.cluster_role_rules` for the
cluster's release, ``_common.releases``; every release's when the release is not given, cluster-wide) passes too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s, releases
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.node_joiner import cluster_role_rules

# The parts of a run (the option ``plan``) and the module of each, for the messages.
STEP_MODULES = {"gather": "day1_facts", "image": "day2_iso", "install": "agent_wait", "join": "csr_approve"}
STEP_MODULES.update(follow="monitor", replace="replace_worker.yml")  # monitor: the pod of follow_from
DEFAULT_PLAN = ("gather", "image", "install", "join", "follow")
ROLE_NAME = "openshift-agent-day2"
REPLACE_ROLE_NAME = "openshift-agent-day2-replace"
RBAC = "rbac.authorization.k8s.io"
_CONFIG, _MCO, _CERTS = "config.openshift.io", "machineconfiguration.openshift.io", "certificates.k8s.io"
KUBELET_SIGNERS = "kubernetes.io/kube-apiserver-client-kubelet kubernetes.io/kubelet-serving"
REVIEW_TARGET = k8s.group_target("authorization.k8s.io", "v1", "selfsubjectaccessreviews", verb="create")


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

    @property
    def role(self) -> str:
        return REPLACE_ROLE_NAME if self.steps == ("replace",) else ROLE_NAME

    def policy_rule(self) -> dict[str, Any]:
        names = {"resourceNames": list(self.names)} if self.names else {}
        return {"apiGroups": [self.group], "resources": list(self.resources), **names, "verbs": list(self.verbs)}

    def modules(self) -> list[str]:
        return [STEP_MODULES[step] for step in self.steps]

    def comment(self) -> str:
        return f"{', '.join(dict.fromkeys(self.modules()))}: {self.why}"

    @classmethod
    def of(cls, spec: tuple[str, ...], why: str) -> Rule:
        """The rule of a :data:`_TABLE` entry."""
        steps, verbs, group, resources, names, namespace = (*spec, "", "")[:6]
        resources_, verbs_, steps_, names_ = (tuple(text.split()) for text in (resources, verbs, steps, names))
        return cls(group, resources_, verbs_, steps_, why, names_, namespace or None)

    def reviews(self) -> list[Review]:
        names: tuple[str | None, ...] = self.names or (None,)
        return [Review(v, r, self.group, self.namespace, n) for r in self.resources for v in self.verbs for n in names]


# Each rule is two entries: (the parts of the run that need it, its verbs, API group ("" the core one), resources,
# object names (none: any), the namespace of its Role (none: cluster-wide)), lists space-separated; then why.
_TABLE: tuple[Any, ...] = (
    # --- ClusterRole openshift-agent-day2 ---
    ("gather image", "get", _CONFIG, "clusterversions", "version"),
    "release, cluster ID, release image (node-joiner and agents differ by release)",
    ("gather image", "get", _CONFIG, "infrastructures", "cluster"),
    "platform, API URLs, infrastructure name",
    ("gather", "get", _CONFIG, "networks", "cluster"),
    "cluster and service networks, network type",
    ("gather image", "get", _CONFIG, "proxies", "cluster"),
    "the cluster proxy (node-joiner's pod uses it too)",
    ("gather", "get", _CONFIG, "ingresses", "cluster"),
    "the apps domain",
    ("gather", "list", _CONFIG, "imagedigestmirrorsets"),
    "registry mirrors the new workers inherit",
    ("gather", "list", "operator.openshift.io", "imagecontentsourcepolicies"),
    "registry mirrors of the older kind",
    ("gather", "list", _CONFIG, "clusteroperators"),
    "operator health (preflight refuses a sick cluster)",
    ("gather", "get", _MCO, "machineconfigs", "99-worker-ssh 99-worker-fips 50-workers-chrony-configuration"),
    "SSH key, FIPS and chrony settings of the workers",
    ("gather", "get", _MCO, "machineconfigpools", "worker"),
    "worker pool health",
    ("gather image join", "list", "", "nodes"),
    "existing nodes (names, addresses, architecture); the new nodes' Ready state",
    ("join", "get patch", "", "nodes"),
    "the new nodes' labels and taints (node_labels, node_taints)",
    ("join", "get list", _CERTS, "certificatesigningrequests"),
    "find the new nodes' CSRs and follow the ones still to come",
    ("join", "update", _CERTS, "certificatesigningrequests/approval"),
    "approve exactly those CSRs",
    ("join", "approve", _CERTS, "signers", KUBELET_SIGNERS),
    "approving needs the signer's approve: the kubelet's two only",
    ("image follow", "create delete list", "", "namespaces"),
    "a namespace of its own (a generated name: no resourceNames), deleted at the end; old runs' found",
    ("image follow", "create", "", "serviceaccounts configmaps"),
    "its service account (and node-joiner's nodes-config) in that namespace",
    ("image follow", "create get", "", "pods"),
    "its pod (node-joiner's, the monitor's, the release pod) and their state",
    ("image", "create", "", "pods/exec"),
    "read node-joiner's report, copy the ISO out of the pod",
    ("image follow", "get", "", "pods/log"),
    "the release pod's image references, node-joiner's log on failure, the monitor's log",
    ("image follow", "create delete get list", RBAC, "clusterroles clusterrolebindings"),
    "the ClusterRole and binding oc adm node-image grants, deleted at the end; old runs' found",
    ("image follow", "escalate bind", RBAC, "clusterroles"),
    "that role and binding need escalate and bind, or every permission the role grants",
    # --- Roles openshift-agent-day2 ---
    ("gather", "get", "", "secrets", "pull-secret", "openshift-config"),
    "the pull secret node-joiner needs (never returned)",
    ("image install join", "get", "", "secrets", "agent-auth-token", "openshift-config"),
    "node-joiner's agent tokens: ISO reuse, agent API login",
    ("gather", "get", "", "configmaps", "user-ca-bundle", "openshift-config"),
    "the additional trust bundle",
    ("image follow", "get", "", "configmaps", "installer-images", "openshift-config"),
    "the node-joiner image (4.18 and later)",
    ("gather", "get", "", "configmaps", "cluster-config-v1", "kube-system"),
    "install-config: name, base domain, machine networks",
    ("gather", "get", "", "configmaps", "coreos-bootimages", "openshift-machine-config-operator"),
    "the RHCOS boot images",
    ("gather", "get", "", "secrets", "worker-user-data-managed", "openshift-machine-api"),
    "the workers' Ignition endpoint",
    # --- ClusterRole openshift-agent-day2-replace ---
    ("replace", "delete", "", "nodes"),
    "delete the replaced node (get and patch nodes: the join step's)",
    ("replace", "list delete", "", "pods"),
    "drain: the node's pods, deleted without eviction (a failed node); get pods is the image step's",
)
RULES = tuple(Rule.of(spec, why) for spec, why in zip(_TABLE[::2], _TABLE[1::2]))


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
        optional = {"subresource": subresource, "namespace": self.namespace, "name": self.name}
        attributes = {"verb": self.verb, "group": self.group, "resource": resource}
        return {"resourceAttributes": dict(attributes, **{key: value for key, value in optional.items() if value})}

    def describe(self) -> str:
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        where = f" in namespace {self.namespace}" if self.namespace else " (cluster-wide)"
        return f"{self.verb} {what}" + (f' "{self.name}"' if self.name else "") + where


def planned_rules(plan: list[str] | tuple[str, ...]) -> list[Rule]:
    unknown = sorted(set(plan) - set(STEP_MODULES))
    if unknown:
        what = f"option plan has {', '.join(unknown)}, which is not a part of the run"
        raise Day2Error(f"access_check: {what}; use some of {', '.join(STEP_MODULES)}")
    return [rule for rule in RULES if set(rule.steps) & set(plan)]


def node_joiner_reviews(version: str | None) -> list[Review]:
    """The cluster-wide permissions of node-joiner's ClusterRole on release ``version`` (every release's when it is
    not given)."""
    minor = releases.parse_version(version)
    rows = releases.RELEASES if minor is None else (releases.release(max(minor, releases.MINIMUM)),)
    rules = [rule for row in rows for rule in cluster_role_rules(row)]
    found = [
        Review(v, r, g) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    ]
    return list(dict.fromkeys(found))  # (each once, in order)


class AccessError(Day2Error):
    """The identity lacks permissions the run needs (``result["missing"]`` lists them)."""


def check(api: k8s.ApiClient, plan: list[str] | tuple[str, ...], release: str | None, identity: str) -> dict[str, Any]:
    """Ask for every permission of the planned parts of the run; raise AccessError listing the missing ones."""
    asked: dict[Review, bool] = {}

    def allowed(review: Review) -> bool:
        if review not in asked:
            body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": review.spec()}
            asked[review] = bool(((api.create(REVIEW_TARGET, body) or {}).get("status") or {}).get("allowed"))
        return asked[review]

    lacking: list[tuple[Review, Rule]] = []
    for rule in planned_rules(plan):
        denied = [review for review in rule.reviews() if not allowed(review)]
        # escalate (and bind): or every rule of node-joiner's ClusterRole instead, the escalation rule's other way
        if not (denied and "escalate" in rule.verbs and all(allowed(r) for r in node_joiner_reviews(release))):
            lacking += [(review, rule) for review in denied]
    missing = []
    for review, rule in lacking:
        role = f"{ROLE_NAME} (Role in {rule.namespace})" if rule.namespace else rule.role
        missing.append(dict(dataclasses.asdict(review), needed_by=rule.modules(), why=rule.why, role=role))
    result: dict[str, Any] = {"changed": False, "plan": list(plan), "reviews": len(asked), "missing": missing}
    if missing:
        lines = "".join(f"- {review.describe()}: {rule.comment()}\n" for review, rule in lacking)
        fix = "Bind the roles of docs/rbac.md to it (they grant exactly what the run needs), or grant what is listed."
        lacks = f"the identity of {identity} lacks {len(lacking)} permission(s) this run needs"
        raise AccessError(f"{lacks}; nothing was written to the cluster.\n{lines}{fix}", result)
    return result


def plan_of(params: dict[str, Any]) -> list[str]:
    """``plan``, or with ``run_tags`` the parts of the run that the playbook's tags select (gather always; the
    monitor pod with install or join, unless ``follow_from`` is controller)."""
    run, skip = params.get("run_tags"), set(params.get("skip_tags") or [])
    if run is None:
        return list(params["plan"])
    plan = ["gather"] + [step for step in DEFAULT_PLAN[1:-1] if ("all" in run or step in run) and step not in skip]
    following = params.get("follow_from") != "controller" and {"install", "join"} & set(plan)
    return plan + (["follow"] if following else [])


def run(module: Any) -> dict[str, Any]:
    """access_check: connect and check the planned parts of the run (``plan``, ``release`` options)."""
    api = k8s.connect(module)[1]
    return check(api, plan_of(module.params), module.params.get("release"), k8s.describe_connection(module))
