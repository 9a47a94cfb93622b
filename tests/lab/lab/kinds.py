"""The registered kinds: what the API server serves and what discovery advertises.

Adding a kind is one ``register(Kind(...))`` call (or one line in ``_BUILTIN``); the store, the
generic REST handlers and discovery pick it up with no other change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# Verbs each subresource answers to in discovery (kube-apiserver advertises these).
SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "approval": ("get", "patch", "update"),
    "exec": ("create", "get"),
    "log": ("get",),
    "finalize": ("update",),
    "eviction": ("create",),
}

# Field selectors every kind accepts; kinds add their own below.
COMMON_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple = ()
    subresources: tuple = ()
    # False for OpenShift CRD-backed kinds: kube-apiserver refuses strategic-merge patches on them (415).
    builtin: bool = True
    fields: tuple = ()
    verbs: tuple = ALL_VERBS
    categories: tuple = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def group_resource(self) -> str:
        """``plural.group`` as kube-apiserver writes it in messages.

        ``nodes``, ``clusterversions.config.openshift.io``.
        """
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def field_selectors(self) -> tuple:
        return COMMON_FIELDS + self.fields


_CORE, _RBAC, _CERTS = "", "rbac.authorization.k8s.io", "certificates.k8s.io"
_AUTHZ = "authorization.k8s.io"
_CONFIG, _MCO = "config.openshift.io", "machineconfiguration.openshift.io"

_BUILTIN = [
    Kind(_CORE, "v1", "Namespace", "namespaces", False, ("ns",), ("status", "finalize"), fields=("status.phase",)),
    Kind(_CORE, "v1", "Node", "nodes", False, ("no",), ("status",), fields=("spec.unschedulable",)),
    Kind(
        _CORE,
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("status", "exec", "log", "eviction"),
        categories=("all",),
        fields=("status.phase", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "status.podIP"),
    ),
    Kind(_CORE, "v1", "Secret", "secrets", True, fields=("type",)),
    Kind(_CORE, "v1", "ConfigMap", "configmaps", True, ("cm",)),
    Kind(_CORE, "v1", "ServiceAccount", "serviceaccounts", True, ("sa",)),
    Kind(
        _CORE,
        "v1",
        "Event",
        "events",
        True,
        ("ev",),
        fields=(
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
        ),
    ),
    Kind(_RBAC, "v1", "ClusterRole", "clusterroles", False),
    Kind(_RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Kind(_RBAC, "v1", "Role", "roles", True),
    Kind(_RBAC, "v1", "RoleBinding", "rolebindings", True),
    # Create-only reviews, answered by lab.reviews and never stored.
    Kind(_AUTHZ, "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False, verbs=("create",)),
    Kind(_AUTHZ, "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False, verbs=("create",)),
    Kind(
        _CERTS,
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        False,
        ("csr",),
        ("approval", "status"),
        fields=("spec.signerName",),
    ),
    Kind("coordination.k8s.io", "v1", "Lease", "leases", True),
    # The owners of the worker pods (lab/workloads.py): drain tells DaemonSet pods from the others by them.
    Kind("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), categories=("all",)),
    Kind("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), ("status",), categories=("all",)),
    Kind(_CONFIG, "v1", "ClusterVersion", "clusterversions", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "Infrastructure", "infrastructures", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "Network", "networks", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "Proxy", "proxies", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "ClusterOperator", "clusteroperators", False, ("co",), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "ImageDigestMirrorSet", "imagedigestmirrorsets", False, ("idms",), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "Image", "images", False, (), ("status",), builtin=False),
    # Read by node-joiner (ingress domain) and by oc adm node-image (mirror configuration).
    Kind(_CONFIG, "v1", "Ingress", "ingresses", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "DNS", "dnses", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "ImageContentPolicy", "imagecontentpolicies", False, (), ("status",), builtin=False),
    Kind(_CONFIG, "v1", "ImageTagMirrorSet", "imagetagmirrorsets", False, ("itms",), ("status",), builtin=False),
    Kind(
        "operator.openshift.io",
        "v1alpha1",
        "ImageContentSourcePolicy",
        "imagecontentsourcepolicies",
        False,
        builtin=False,
    ),
    Kind(_MCO, "v1", "MachineConfig", "machineconfigs", False, ("mc",), builtin=False),
    Kind(_MCO, "v1", "MachineConfigPool", "machineconfigpools", False, ("mcp",), ("status",), builtin=False),
    Kind("machine.openshift.io", "v1beta1", "Machine", "machines", True, (), ("status",), builtin=False),
]

_by_resource: dict = {}
_by_kind: dict = {}


def register(kind: Kind) -> Kind:
    _by_resource[(kind.group, kind.version, kind.plural)] = kind
    _by_kind[(kind.api_version, kind.kind)] = kind
    return kind


for _kind in _BUILTIN:
    register(_kind)


def all_kinds() -> list:
    return list(_by_resource.values())


def by_resource(group: str, version: str, plural: str) -> Kind | None:
    return _by_resource.get((group, version, plural))


def by_kind(api_version: str, kind: str) -> Kind | None:
    return _by_kind.get((api_version, kind))


def for_object(obj: dict) -> Kind:
    kind = by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
    if kind is None:
        raise KeyError(f"kind not registered: {obj.get('apiVersion')} {obj.get('kind')}")
    return kind


def group_versions() -> dict:
    """``{group: [version, ...]}`` in registration order; the first version is the preferred one."""
    result: dict = {}
    for kind in _by_resource.values():
        versions = result.setdefault(kind.group, [])
        if kind.version not in versions:
            versions.append(kind.version)
    return result


NAMESPACE = by_kind("v1", "Namespace")
POD = by_kind("v1", "Pod")
SECRET = by_kind("v1", "Secret")
CSR = by_kind("certificates.k8s.io/v1", "CertificateSigningRequest")
NODE = by_kind("v1", "Node")
