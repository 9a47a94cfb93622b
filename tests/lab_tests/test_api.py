"""The API server over the wire: Status errors, CRUD, selectors, patches, subresources, GC, discovery.

Identities and authorization are in test_api_auth.py."""

from __future__ import annotations

import pytest
from api_helpers import CSRS, assert_status, configmap, csr_body, unique


def test_not_found_and_already_exists(lab):
    assert_status(
        lab.api("GET", "/api/v1/namespaces/default/configmaps/missing"),
        404,
        "NotFound",
        'configmaps "missing" not found',
    )
    assert_status(
        lab.api("GET", "/apis/config.openshift.io/v1/clusterversions/nope"),
        404,
        "NotFound",
        'clusterversions.config.openshift.io "nope" not found',
    )
    assert_status(lab.api("GET", "/apis/nope.example.com/v1/things"), 404, "NotFound")
    assert_status(
        lab.api("POST", "/api/v1/namespaces/no-such-ns/configmaps", body=configmap("no-such-ns", "x")),
        404,
        "NotFound",
        'namespaces "no-such-ns" not found',
    )
    name = unique("cm")
    assert lab.api("POST", "/api/v1/namespaces/default/configmaps", body=configmap("default", name)).status_code == 201
    body = assert_status(
        lab.api("POST", "/api/v1/namespaces/default/configmaps", body=configmap("default", name)),
        409,
        "AlreadyExists",
        f'configmaps "{name}" already exists',
    )
    assert body["details"] == {"name": name, "group": "", "kind": "configmaps"}


def test_generate_name_and_metadata_stamping(lab):
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "openshift-node-joiner-"}}
    response = lab.api("POST", "/api/v1/namespaces", body=body)
    assert response.status_code == 201
    meta = response.json()["metadata"]
    assert meta["name"].startswith("openshift-node-joiner-") and len(meta["name"]) == len("openshift-node-joiner-") + 5
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z") and meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0
    assert response.json()["status"] == {"phase": "Active"}
    lab.api("DELETE", f"/api/v1/namespaces/{meta['name']}")


def test_list_shape_and_selectors(lab):
    namespace = "default"
    prefix = unique("sel")
    for name, labels in (
        ("a", {"tier": "one", "app": prefix}),
        ("b", {"tier": "two", "app": prefix}),
        ("c", {"app": prefix}),
    ):
        body = configmap(namespace, f"{prefix}-{name}", labels)
        assert lab.api("POST", f"/api/v1/namespaces/{namespace}/configmaps", body=body).status_code == 201

    def names(selector: str, field: str = "") -> list:
        params = {"labelSelector": f"app={prefix},{selector}" if selector else f"app={prefix}"}
        if field:
            params["fieldSelector"] = field
        response = lab.api("GET", f"/api/v1/namespaces/{namespace}/configmaps", params=params)
        assert response.status_code == 200, response.text
        return sorted(item["metadata"]["name"][-1] for item in response.json()["items"])

    assert names("") == ["a", "b", "c"]
    assert names("tier=one") == ["a"]
    assert names("tier==two") == ["b"]
    assert names("tier!=one") == ["b", "c"]
    assert names("tier in (one,two)") == ["a", "b"]
    assert names("tier notin (one)") == ["b", "c"]
    assert names("tier") == ["a", "b"]
    assert names("!tier") == ["c"]
    assert names("", f"metadata.name={prefix}-b") == ["b"]
    assert names("", f"metadata.name!={prefix}-b") == ["a", "c"]
    listing = lab.api("GET", "/api/v1/namespaces/default/configmaps").json()
    assert listing["kind"] == "ConfigMapList" and listing["apiVersion"] == "v1"
    assert int(listing["metadata"]["resourceVersion"]) > 0
    everywhere = lab.api("GET", "/api/v1/secrets").json()
    assert {"openshift-config", "openshift-machine-api"} <= {s["metadata"]["namespace"] for s in everywhere["items"]}
    masters = lab.api("GET", "/api/v1/nodes", params={"labelSelector": "node-role.kubernetes.io/master"}).json()
    assert [n["metadata"]["name"] for n in masters["items"]] == ["master-0", "master-1", "master-2"]
    assert_status(lab.api("GET", "/api/v1/nodes", params={"fieldSelector": "spec.bogus=1"}), 400, "BadRequest")


def test_field_selector_on_csr_signer(lab):
    serving = unique("csr-serving")
    lab.api("POST", CSRS, body=csr_body(serving, signer="kubernetes.io/kubelet-serving"))
    items = lab.api("GET", CSRS, params={"fieldSelector": "spec.signerName=kubernetes.io/kubelet-serving"}).json()
    names = {item["metadata"]["name"] for item in items["items"]}
    assert serving in names
    assert all(item["spec"]["signerName"] == "kubernetes.io/kubelet-serving" for item in items["items"])


def test_merge_json_and_strategic_patches(lab):
    name = unique("patch")
    path = f"/api/v1/namespaces/default/configmaps/{name}"
    lab.api("POST", "/api/v1/namespaces/default/configmaps", body=configmap("default", name, data={"a": "1", "b": "2"}))
    merged = lab.api("PATCH", path, body={"data": {"a": None, "c": "3"}}, content_type="application/merge-patch+json")
    assert merged.status_code == 200 and merged.json()["data"] == {"b": "2", "c": "3"}
    ops = [
        {"op": "add", "path": "/data/d", "value": "4"},
        {"op": "remove", "path": "/data/b"},
        {"op": "replace", "path": "/data/c", "value": "33"},
        {"op": "test", "path": "/data/d", "value": "4"},
    ]
    patched = lab.api("PATCH", path, body=ops, content_type="application/json-patch+json")
    assert patched.status_code == 200 and patched.json()["data"] == {"c": "33", "d": "4"}
    failing = [{"op": "test", "path": "/data/d", "value": "5"}]
    assert lab.api("PATCH", path, body=failing, content_type="application/json-patch+json").status_code == 422
    # OpenShift config kinds are CRDs: strategic merge is refused like on a real cluster.
    response = lab.api(
        "PATCH",
        "/apis/config.openshift.io/v1/proxies/cluster",
        body={"spec": {}},
        content_type="application/strategic-merge-patch+json",
    )
    assert_status(response, 415, "UnsupportedMediaType")
    assert_status(
        lab.api("PATCH", path.replace(name, "missing"), body={}, content_type="application/merge-patch+json"),
        404,
        "NotFound",
    )


def test_strategic_merge_keeps_other_conditions(lab):
    path = "/api/v1/nodes/master-2/status"
    patch = {"status": {"conditions": [{"type": "DiskPressure", "status": "Unknown"}]}}
    response = lab.api("PATCH", path, body=patch, content_type="application/strategic-merge-patch+json")
    conditions = {c["type"]: c["status"] for c in response.json()["status"]["conditions"]}
    assert conditions == {"MemoryPressure": "False", "DiskPressure": "Unknown", "PIDPressure": "False", "Ready": "True"}
    patch["status"]["conditions"][0]["status"] = "False"
    lab.api("PATCH", path, body=patch, content_type="application/strategic-merge-patch+json")


def test_put_with_stale_resource_version_is_a_conflict(lab):
    name = unique("stale")
    created = lab.api("POST", "/api/v1/namespaces/default/configmaps", body=configmap("default", name)).json()
    path = f"/api/v1/namespaces/default/configmaps/{name}"
    first = dict(created, data={"v": "1"})
    updated = lab.api("PUT", path, body=first)
    assert updated.status_code == 200
    assert int(updated.json()["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = dict(created, data={"v": "2"})
    assert_status(
        lab.api("PUT", path, body=stale),
        409,
        "Conflict",
        f'Operation cannot be fulfilled on configmaps "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
    )


def test_status_subresource_and_generation(lab):
    path = "/apis/machineconfiguration.openshift.io/v1/machineconfigpools/worker"
    current = lab.api("GET", path).json()
    changed = dict(current, status={"conditions": []}, spec=dict(current["spec"], paused=True))
    updated = lab.api("PUT", path, body=changed).json()
    assert updated["status"] == current["status"], "the main resource ignores status"
    assert (
        updated["spec"]["paused"] is True and updated["metadata"]["generation"] == current["metadata"]["generation"] + 1
    )
    status_only = dict(updated, spec=current["spec"], status=dict(current["status"], machineCount=7))
    after = lab.api("PUT", path + "/status", body=status_only).json()
    assert after["status"]["machineCount"] == 7 and after["spec"]["paused"] is True
    restore = dict(after, spec=current["spec"])
    restored = lab.api("PUT", path, body=restore).json()
    lab.api("PUT", path + "/status", body=dict(restored, status=current["status"]))


def test_approval_subresource_changes_only_conditions_and_is_logged(lab):
    name = unique("node-csr")
    created = lab.api("POST", CSRS, as_user="bootstrapper", body=csr_body(name)).json()
    approval = dict(created)
    approval["spec"] = dict(created["spec"], signerName="kubernetes.io/legacy-unknown")
    condition = {
        "type": "Approved",
        "status": "True",
        "reason": "LabTest",
        "message": "approved by a test",
        "lastUpdateTime": "2025-01-01T00:00:00Z",
    }
    approval["status"] = {"conditions": [condition], "certificate": "bm90IGFsbG93ZWQ="}
    response = lab.api("PUT", f"{CSRS}/{name}/approval", body=approval)
    assert response.status_code == 200, response.text
    stored = response.json()
    assert stored["status"] == {"conditions": [condition]}
    assert stored["spec"] == created["spec"]
    approvals = lab.control("GET", "/approvals")
    entry = next(item for item in approvals if item["csr"] == name)
    assert entry["user"] == "system:admin" and entry["conditions"] == [condition] and entry["time"].endswith("Z")
    assert_status(lab.api("PUT", f"{CSRS}/{name}/approval", body=approval), 409, "Conflict")


def test_namespace_deletion_collects_owned_cluster_scoped_objects(lab):
    namespace = lab.api(
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "openshift-node-joiner-"}},
    ).json()
    ns_name, ns_uid = namespace["metadata"]["name"], namespace["metadata"]["uid"]
    owner = [{"apiVersion": "v1", "kind": "Namespace", "name": ns_name, "uid": ns_uid}]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ns_name, "ownerReferences": owner},
        "rules": [],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ns_name, "ownerReferences": owner},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ns_name},
        "subjects": [{"kind": "ServiceAccount", "name": "node-joiner", "namespace": ns_name}],
    }
    unowned = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ns_name + "-unowned"},
        "rules": [],
    }
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    for path, body in (
        (f"{rbac}/clusterroles", role),
        (f"{rbac}/clusterrolebindings", binding),
        (f"{rbac}/clusterroles", unowned),
        (f"/api/v1/namespaces/{ns_name}/configmaps", configmap(ns_name, "nodes-config")),
    ):
        assert lab.api("POST", path, body=body).status_code == 201
    deleted = lab.api("DELETE", f"/api/v1/namespaces/{ns_name}")
    assert deleted.status_code == 200 and deleted.json()["status"]["phase"] == "Terminating"
    assert lab.api("GET", f"/api/v1/namespaces/{ns_name}").status_code == 404
    assert lab.api("GET", f"{rbac}/clusterroles/{ns_name}").status_code == 404
    assert lab.api("GET", f"{rbac}/clusterrolebindings/{ns_name}").status_code == 404
    assert lab.api("GET", f"/api/v1/namespaces/{ns_name}/configmaps/nodes-config").status_code == 404
    assert lab.api("GET", f"{rbac}/clusterroles/{ns_name}-unowned").status_code == 200
    gone = lab.api("DELETE", f"{rbac}/clusterroles/{ns_name}-unowned").json()
    assert gone["kind"] == "Status" and gone["status"] == "Success" and gone["details"]["name"] == ns_name + "-unowned"


def test_pods_stay_pending_and_exec_is_not_simulated_yet(lab):
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sleeper", "namespace": "default"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "example.test/any:1"}]},
    }
    created = lab.api("POST", "/api/v1/namespaces/default/pods", body=body)
    assert created.status_code == 201 and created.json()["status"]["phase"] == "Pending"
    pending = lab.api("GET", "/api/v1/pods", params={"fieldSelector": "status.phase=Pending"}).json()
    assert "sleeper" in {pod["metadata"]["name"] for pod in pending["items"]}
    if lab.api("GET", "/api/v1/namespaces/default/pods/sleeper/log").status_code == 501:
        assert_status(lab.api("POST", "/api/v1/namespaces/default/pods/sleeper/exec"), 501, "NotImplemented")
    assert_status(lab.api("GET", "/api/v1/namespaces/default/pods/absent/log"), 404, "NotFound")
    assert lab.api("DELETE", "/api/v1/namespaces/default/pods/sleeper").json()["kind"] == "Pod"


@pytest.mark.parametrize(
    "path, kind",
    [
        ("/api", "APIVersions"),
        ("/apis", "APIGroupList"),
        ("/api/v1", "APIResourceList"),
        ("/apis/certificates.k8s.io", "APIGroup"),
        ("/apis/certificates.k8s.io/v1", "APIResourceList"),
    ],
)
def test_discovery_documents(lab, path, kind):
    assert lab.api("GET", path).json()["kind"] == kind


def test_discovery_lists_subresources_verbs_and_short_names(lab):
    core = {r["name"]: r for r in lab.api("GET", "/api/v1").json()["resources"]}
    assert {"pods/exec", "pods/log", "pods/status", "nodes/status"} <= set(core)
    assert core["pods"]["namespaced"] is True and core["nodes"]["namespaced"] is False
    assert "watch" in core["nodes"]["verbs"] and core["nodes"]["shortNames"] == ["no"]
    certs = {r["name"]: r for r in lab.api("GET", "/apis/certificates.k8s.io/v1").json()["resources"]}
    assert certs["certificatesigningrequests/approval"]["verbs"] == ["get", "patch", "update"]
    groups = {g["name"]: g for g in lab.api("GET", "/apis").json()["groups"]}
    assert groups["operator.openshift.io"]["preferredVersion"]["groupVersion"] == "operator.openshift.io/v1alpha1"
    machines = {r["name"]: r for r in lab.api("GET", "/apis/machine.openshift.io/v1beta1").json()["resources"]}
    assert machines["machines"]["namespaced"] is True


def test_config_kinds_node_joiner_and_oc_read_are_served(lab):
    config = {r["name"]: r for r in lab.api("GET", "/apis/config.openshift.io/v1").json()["resources"]}
    assert {"ingresses", "ingresses/status", "dnses", "imagecontentpolicies", "imagetagmirrorsets"} <= set(config)
    assert config["imagetagmirrorsets"]["shortNames"] == ["itms"] and config["dnses"]["namespaced"] is False
    ingress = lab.api("GET", "/apis/config.openshift.io/v1/ingresses/cluster").json()
    assert ingress["spec"]["domain"] == "apps.lab.day2.example.test"
    dns = lab.api("GET", "/apis/config.openshift.io/v1/dnses/cluster").json()
    assert dns["spec"]["baseDomain"] == "lab.day2.example.test"
    for plural in ("imagetagmirrorsets", "imagecontentpolicies"):
        listed = lab.api("GET", f"/apis/config.openshift.io/v1/{plural}").json()
        assert listed["items"] == [] and listed["kind"].endswith("List")
    # kube-apiserver's own namespaces exist even though no seed file holds them
    names = {ns["metadata"]["name"] for ns in lab.api("GET", "/api/v1/namespaces").json()["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
