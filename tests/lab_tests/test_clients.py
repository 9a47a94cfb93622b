"""Real clients against the lab: the kubernetes python DynamicClient and kubectl 1.20."""

from __future__ import annotations

import glob
import os
import subprocess
import tempfile

import pytest
from conftest import REPO
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes import dynamic, watch
from test_api import csr_body

KUBECTL_CACHE = os.path.join(REPO, ".cache", "kubectl")
KUBECTL = os.path.join(KUBECTL_CACHE, "usr", "bin", "kubectl")


@pytest.fixture(scope="module")
def dynamic_client(lab):
    return dynamic.DynamicClient(k8s_config.new_client_from_config(lab.kubeconfig))


def test_dynamic_client_reads_the_cluster_version(dynamic_client):
    versions = dynamic_client.resources.get(api_version="config.openshift.io/v1", kind="ClusterVersion")
    assert versions.get(name="version").status.desired.version == "4.21.1"


def test_dynamic_client_crud_and_label_selector(dynamic_client):
    configmaps = dynamic_client.resources.get(api_version="v1", kind="ConfigMap")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "dyn-", "labels": {"via": "dynamic"}},
        "data": {"a": "1"},
    }
    created = configmaps.create(body=body, namespace="default")
    name = created.metadata.name
    patched = configmaps.patch(
        name=name, namespace="default", body={"data": {"b": "2"}}, content_type="application/merge-patch+json"
    )
    assert dict(patched.data) == {"a": "1", "b": "2"}
    listed = configmaps.get(namespace="default", label_selector="via=dynamic")
    assert name in [item.metadata.name for item in listed.items]
    configmaps.delete(name=name, namespace="default")
    masters = dynamic_client.resources.get(api_version="v1", kind="Node").get(
        label_selector="node-role.kubernetes.io/master"
    )
    assert len(masters.items) == 3


def test_dynamic_client_errors_are_typed(dynamic_client):
    from kubernetes.dynamic.exceptions import ConflictError, NotFoundError

    secrets = dynamic_client.resources.get(api_version="v1", kind="Secret")
    with pytest.raises(NotFoundError):
        secrets.get(name="absent", namespace="openshift-config")
    pull_secret = secrets.get(name="pull-secret", namespace="openshift-config")
    assert pull_secret.type == "kubernetes.io/dockerconfigjson"
    with pytest.raises(ConflictError):
        secrets.create(body=pull_secret.to_dict(), namespace="openshift-config")


def test_typed_client_approves_a_csr_and_watches_nodes(lab):
    api_client = k8s_config.new_client_from_config(lab.kubeconfig)
    certificates = k8s_client.CertificatesV1Api(api_client)
    body = csr_body("typed-client-csr")
    certificates.create_certificate_signing_request(body)
    csr = certificates.read_certificate_signing_request("typed-client-csr")
    csr.status.conditions = [
        k8s_client.V1CertificateSigningRequestCondition(
            type="Approved", status="True", reason="LabTest", message="typed client"
        )
    ]
    certificates.replace_certificate_signing_request_approval("typed-client-csr", csr)
    assert any(entry["csr"] == "typed-client-csr" for entry in lab.control("GET", "/approvals"))
    core = k8s_client.CoreV1Api(api_client)
    names = {event["object"].metadata.name for event in watch.Watch().stream(core.list_node, timeout_seconds=1)}
    assert {"master-0", "master-1", "master-2"} <= names


def kubectl_binary() -> str:
    """kubectl 1.20 from Debian's kubernetes-client package, extracted once into .cache (never installed)."""
    if os.path.exists(KUBECTL):
        return KUBECTL
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(["apt-get", "download", "kubernetes-client"], cwd=download, check=True, capture_output=True)
        (deb,) = glob.glob(os.path.join(download, "kubernetes-client_*.deb"))
        os.makedirs(KUBECTL_CACHE, exist_ok=True)
        subprocess.run(["dpkg", "-x", deb, KUBECTL_CACHE], check=True)
    return KUBECTL


def test_kubectl_1_20(lab, tmp_path):
    binary = kubectl_binary()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "KUBECONFIG": lab.kubeconfig}

    def kubectl(*args) -> str:
        result = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    assert "v1.20" in kubectl("version", "--client", "--short")
    nodes = [line.split() for line in kubectl("get", "nodes").splitlines()]
    assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes[3][:3] == ["master-2", "Ready", "control-plane,master"] and nodes[3][4] == "v1.34.2"
    masters = kubectl("get", "nodes", "-l", "node-role.kubernetes.io/master", "-o", "name").split()
    assert masters == ["node/master-0", "node/master-1", "node/master-2"]
    assert kubectl("get", "clusterversion", "version", "-o", "jsonpath={.status.desired.version}") == "4.21.1"
    import yaml

    manifest = tmp_path / "csr.yaml"
    manifest.write_text(yaml.safe_dump(csr_body("kubectl-csr")))
    assert "created" in kubectl("create", "-f", str(manifest))
    assert "kubectl-csr" in kubectl("get", "csr")
    header, row = (line.split() for line in kubectl("get", "csr", "kubectl-csr").splitlines())
    assert header == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    assert row[2:] == ["kubernetes.io/kube-apiserver-client-kubelet", "system:admin", "<none>", "Pending"]
    assert "approved" in kubectl("certificate", "approve", "kubectl-csr")
    assert kubectl("get", "csr", "kubectl-csr").splitlines()[1].split()[-1] == "Approved"
    conditions = kubectl("get", "csr", "kubectl-csr", "-o", "jsonpath={.status.conditions[0].type}")
    assert conditions == "Approved"
    approval = next(entry for entry in lab.control("GET", "/approvals") if entry["csr"] == "kubectl-csr")
    assert approval["user"] == "system:admin"
