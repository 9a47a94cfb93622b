"""The API server's identities over the wire: unknown and anonymous callers, read-only RBAC with the real
messages, the bootstrapper's CSRs, client certificates and the node authorizer."""

from __future__ import annotations

import os

from api_helpers import CSRS, assert_status, configmap, csr_body, unique


def test_unknown_token_and_anonymous_get_401(lab):
    assert_status(lab.api("GET", "/api/v1/nodes", token="not-a-token"), 401, "Unauthorized", "Unauthorized")
    assert_status(lab.api("GET", "/api/v1/nodes", as_user=None), 401, "Unauthorized")


def test_version_is_anonymous_and_matches_the_control_plane(lab):
    response = lab.api("GET", "/version", as_user=None)
    assert response.status_code == 200
    assert response.json()["gitVersion"] == "v1.34.2"
    assert (response.json()["major"], response.json()["minor"]) == ("1", "34")


def test_readonly_reads_but_writes_get_403_with_the_real_message(lab):
    assert lab.api("GET", "/api/v1/namespaces/openshift-config/secrets", as_user="readonly").status_code == 200
    response = lab.api(
        "POST", "/api/v1/namespaces/default/configmaps", as_user="readonly", body=configmap("default", "ro")
    )
    assert_status(
        response,
        403,
        "Forbidden",
        'configmaps "ro" is forbidden: User "lab-readonly" cannot create resource "configmaps" '
        'in API group "" in the namespace "default"',
    )
    response = lab.api("PUT", f"{CSRS}/x/approval", as_user="readonly", body={"metadata": {"name": "x"}})
    assert_status(
        response,
        403,
        "Forbidden",
        'certificatesigningrequests.certificates.k8s.io "x" is forbidden: User "lab-readonly" cannot '
        'update resource "certificatesigningrequests/approval" in API group "certificates.k8s.io" '
        "at the cluster scope",
    )


def test_bootstrapper_files_csrs_whose_requestor_is_set_by_the_server(lab):
    name = unique("node-csr")
    response = lab.api("POST", CSRS, as_user="bootstrapper", body=csr_body(name))
    assert response.status_code == 201, response.text
    spec = response.json()["spec"]
    assert spec["username"] == "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
    assert spec["groups"] == [
        "system:serviceaccounts:openshift-machine-config-operator",
        "system:serviceaccounts",
        "system:authenticated",
    ]
    assert response.json()["status"] == {}
    assert_status(lab.api("GET", "/api/v1/nodes", as_user="bootstrapper"), 403, "Forbidden")
    assert lab.api("GET", CSRS, as_user="bootstrapper").status_code == 200


def test_client_certificate_identity(lab):
    issued = lab.control("POST", "/client-cert", {"user": "system:node:extra-worker-1", "groups": ["system:nodes"]})
    cert_file = os.path.join(lab.state, "node-cert.pem")
    key_file = os.path.join(lab.state, "node-key.pem")
    with open(cert_file, "w", encoding="ascii") as handle:
        handle.write(issued["cert"])
    with open(key_file, "w", encoding="ascii") as handle:
        handle.write(issued["key"])
    as_node = {"as_user": None, "cert": (cert_file, key_file)}
    name = unique("node-csr")
    response = lab.api("POST", CSRS, body=csr_body(name, signer="kubernetes.io/kubelet-serving"), **as_node)
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["username"] == "system:node:extra-worker-1"
    assert response.json()["spec"]["groups"] == ["system:nodes", "system:authenticated"]
    own = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra-worker-1"}}
    assert lab.api("POST", "/api/v1/nodes", body=own, **as_node).status_code == 201
    other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra-worker-2"}}
    assert_status(
        lab.api("POST", "/api/v1/nodes", body=other, **as_node),
        403,
        "Forbidden",
        'nodes "extra-worker-2" is forbidden: User "system:node:extra-worker-1" cannot create resource '
        '"nodes" in API group "" at the cluster scope',
    )
    patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    response = lab.api(
        "PATCH",
        "/api/v1/nodes/extra-worker-1/status",
        body=patch,
        content_type="application/strategic-merge-patch+json",
        **as_node,
    )
    assert response.status_code == 200, response.text
    assert lab.api("DELETE", "/api/v1/nodes/extra-worker-1").status_code == 200
    requests_logged = lab.control("GET", "/requests")
    assert any(entry["user"] == "system:node:extra-worker-1" and entry["method"] == "POST" for entry in requests_logged)
