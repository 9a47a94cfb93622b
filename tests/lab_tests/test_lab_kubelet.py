"""The simulated kubelets after reboot (lab/kubelet.py) and the rogue CSRs (lab/rogue.py).

One lab with a short ``--csr-refile-seconds`` for the whole module; CSRs are approved here with the admin
token, the way ``oc adm certificate approve`` would, so these tests do not depend on the collection.
"""

from __future__ import annotations

import base64
import json
import time

import pytest
from conftest import labctl, running_lab
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from lab.waiting import wait_until

REFILE_SECONDS = 1.5
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
BOOTSTRAPPER = "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"
BOOTSTRAP_GROUPS = [
    "system:serviceaccounts:openshift-machine-config-operator",
    "system:serviceaccounts",
    "system:authenticated",
]


@pytest.fixture(scope="module")
def klab(tmp_path_factory):
    state = str(tmp_path_factory.mktemp("kubelet-lab"))
    with running_lab(state, "--hosts", "4", "--csr-refile-seconds", str(REFILE_SECONDS)) as started:
        yield started


def csrs_of(lab, filed_by=None, cn=None):
    items = lab.api("GET", CSRS).json()["items"]
    return [
        c
        for c in items
        if (filed_by is None or c["spec"]["username"] == filed_by) and (cn is None or subject(c).get("CN") == cn)
    ]


def request_of(csr) -> x509.CertificateSigningRequest:
    return x509.load_pem_x509_csr(base64.b64decode(csr["spec"]["request"]))


def subject(csr) -> dict:
    names = {}
    for attribute in request_of(csr).subject:
        key = {NameOID.COMMON_NAME: "CN", NameOID.ORGANIZATION_NAME: "O"}.get(
            attribute.oid, attribute.oid.dotted_string
        )
        names.setdefault(key, attribute.value)
    return names


def public_der(csr) -> bytes:
    return (
        request_of(csr)
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


def approve(lab, csr):
    csr.setdefault("status", {})["conditions"] = [
        {"type": "Approved", "status": "True", "reason": "Test", "message": "approved by test_lab_kubelet"}
    ]
    response = lab.api("PUT", f"{CSRS}/{csr['metadata']['name']}/approval", body=csr)
    assert response.status_code == 200, response.text


def kubelet(lab, host):
    return lab.control("GET", "/kubelets")[host]


def test_a_rebooted_host_files_a_genuine_client_csr_as_the_bootstrapper(klab):
    klab.control("POST", "/reboot-done", {"hosts": ["extra-worker-0"]})
    csr = wait_until("the client CSR", lambda: csrs_of(klab, cn="system:node:extra-worker-0"))[0]
    spec = csr["spec"]
    assert csr["metadata"]["name"].startswith("csr-")
    assert spec["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    assert spec["username"] == BOOTSTRAPPER and sorted(spec["groups"]) == sorted(BOOTSTRAP_GROUPS)
    assert set(spec["usages"]) == {"digital signature", "key encipherment", "client auth"}
    request = request_of(csr)
    assert request.is_signature_valid
    assert subject(csr) == {"CN": "system:node:extra-worker-0", "O": "system:nodes"}
    assert isinstance(request.public_key(), ec.EllipticCurvePublicKey)
    assert request.public_key().curve.name == "secp256r1"
    with pytest.raises(x509.ExtensionNotFound):
        request.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert csr.get("status") in ({}, None)
    assert [c["name"] for c in kubelet(klab, "extra-worker-0")["csrs"]] == [csr["metadata"]["name"]]


def test_approval_brings_a_certificate_the_node_the_serving_csr_and_ready(klab):
    klab.control("POST", "/reboot-done", {"hosts": ["extra-worker-1"]})
    client = wait_until("the client CSR", lambda: csrs_of(klab, cn="system:node:extra-worker-1"))[0]
    approve(klab, client)

    issued = wait_until(
        "the certificate",
        lambda: klab.api("GET", f"{CSRS}/{client['metadata']['name']}").json()["status"].get("certificate"),
    )
    certificate = x509.load_pem_x509_certificate(base64.b64decode(issued))
    with open(klab.ca, "rb") as handle:
        ca = x509.load_pem_x509_certificate(handle.read())
    certificate.verify_directly_issued_by(ca)
    assert certificate.subject.rfc4514_string() == "CN=system:node:extra-worker-1,O=system:nodes"
    assert certificate.public_key().public_numbers() == request_of(client).public_key().public_numbers()

    node = wait_until(
        "the Node",
        lambda: (
            klab.api("GET", "/api/v1/nodes/extra-worker-1").json()
            if klab.api("GET", "/api/v1/nodes/extra-worker-1").status_code == 200
            else None
        ),
    )
    assert {"type": "InternalIP", "address": "127.0.111.21"} in node["status"]["addresses"]
    assert {"type": "Hostname", "address": "extra-worker-1"} in node["status"]["addresses"]
    labels = node["metadata"]["labels"]
    assert "node-role.kubernetes.io/worker" in labels
    assert labels["kubernetes.io/arch"] == "amd64" and labels["kubernetes.io/hostname"] == "extra-worker-1"
    assert labels["kubernetes.io/os"] == "linux"
    assert node["status"]["nodeInfo"]["architecture"] == "amd64"
    assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"] == ["False"]
    # The Node was created with the new client certificate, not with an admin or bootstrap token.
    creates = [r for r in klab.control("GET", "/requests") if r["method"] == "POST" and r["path"] == "/api/v1/nodes"]
    assert {"user": "system:node:extra-worker-1", "status": 201} in [
        {"user": r["user"], "status": r["status"]} for r in creates
    ]

    serving = wait_until(
        "the serving CSR",
        lambda: [
            c
            for c in csrs_of(klab, filed_by="system:node:extra-worker-1")
            if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
        ],
    )[0]
    assert "system:nodes" in serving["spec"]["groups"]
    assert set(serving["spec"]["usages"]) == {"digital signature", "key encipherment", "server auth"}
    sans = request_of(serving).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["extra-worker-1"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.111.21"]
    assert public_der(serving) != public_der(client)  # a new key for the serving certificate
    assert not node_ready(klab, "extra-worker-1")

    approve(klab, serving)
    wait_until("Ready", lambda: node_ready(klab, "extra-worker-1"))
    state = kubelet(klab, "extra-worker-1")
    assert state["node_created"] and state["node_ready"] and state["error"] is None
    assert all(entry["approved"] for entry in state["csrs"])
    certificate = wait_until(
        "the serving certificate",
        lambda: klab.api("GET", f"{CSRS}/{serving['metadata']['name']}").json()["status"].get("certificate"),
    )
    served = x509.load_pem_x509_certificate(base64.b64decode(certificate))
    usages = served.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]


def node_ready(lab, name):
    response = lab.api("GET", f"/api/v1/nodes/{name}")
    if response.status_code != 200:
        return False
    return any(c["type"] == "Ready" and c["status"] == "True" for c in response.json()["status"]["conditions"])


def test_an_unanswered_client_csr_is_filed_again_with_the_same_key(klab):
    klab.control("POST", "/reboot-done", {"hosts": ["extra-worker-2"]})
    started = time.monotonic()

    def two_or_more():
        found = csrs_of(klab, cn="system:node:extra-worker-2")
        return found if len(found) >= 2 else None

    both = wait_until("a second client CSR", two_or_more, timeout=REFILE_SECONDS * 3)
    assert time.monotonic() - started >= REFILE_SECONDS * 0.9
    assert len({c["metadata"]["name"] for c in both}) == len(both)
    assert len({public_der(c) for c in both}) == 1
    state = kubelet(klab, "extra-worker-2")
    assert len(state["csrs"]) >= 2 and not state["node_created"]
    # A second reboot keeps the same bootstrap key (generated once) and does not start a second kubelet.
    again = klab.control("POST", "/reboot-done", {"hosts": ["extra-worker-2"]})["extra-worker-2"]
    assert again["bootstrap_key_fingerprint"] == state["bootstrap_key_fingerprint"] and again["reboots"] == 2


def test_reboot_done_refuses_hosts_outside_the_inventory(klab):
    result = labctl("reboot-done", "--state", klab.state, "not-a-host", check=False)
    assert result.returncode == 1 and "not inventory hosts" in result.stderr


def test_rogue_all_files_every_kind_with_an_attackers_identity(klab):
    result = labctl("rogue-csr", "--state", klab.state, "all", "extra-worker-3")
    filed = {entry["kind"]: entry for entry in json.loads(result.stdout)}
    assert set(filed) == {
        "unknown-host",
        "existing-node",
        "wrong-username",
        "extra-group",
        "client-sans",
        "client-extra-usage",
        "serving-foreign-ip",
        "serving-foreign-dns",
        "serving-username-mismatch",
        "other-signer",
        "bad-organization",
        "bad-signature",
        "rsa-key",
    }
    objects = {c["metadata"]["name"]: c for c in csrs_of(klab)}
    rogue = {kind: objects[entry["name"]] for kind, entry in filed.items()}
    assert all(not c["status"] for c in rogue.values())  # all pending, nothing marks them
    assert all(not c["metadata"].get("labels") and not c["metadata"].get("annotations") for c in rogue.values())

    assert subject(rogue["unknown-host"])["CN"] == "system:node:rogue-worker-9"
    assert subject(rogue["existing-node"])["CN"] == "system:node:master-0"
    assert rogue["wrong-username"]["spec"]["username"] == "system:node:master-0"
    assert "system:cluster-readers" in rogue["extra-group"]["spec"]["groups"]
    assert rogue["extra-group"]["spec"]["username"] == BOOTSTRAPPER
    assert request_of(rogue["client-sans"]).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert "server auth" in rogue["client-extra-usage"]["spec"]["usages"]
    foreign_ip = (
        request_of(rogue["serving-foreign-ip"])
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value.get_values_for_type(x509.IPAddress)
    )
    assert "127.0.111.99" in [str(ip) for ip in foreign_ip]
    assert rogue["serving-foreign-ip"]["spec"]["username"] == "system:node:extra-worker-3"
    assert "api.lab.day2.example.test" in request_of(rogue["serving-foreign-dns"]).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    ).value.get_values_for_type(x509.DNSName)
    mismatch = rogue["serving-username-mismatch"]
    assert (
        subject(mismatch)["CN"] == "system:node:extra-worker-3"
        and mismatch["spec"]["username"] == "system:node:master-0"
    )
    assert rogue["other-signer"]["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert subject(rogue["bad-organization"])["O"] == "system:masters"
    assert not request_of(rogue["bad-signature"]).is_signature_valid
    assert isinstance(request_of(rogue["rsa-key"]).public_key(), rsa.RSAPublicKey)
    for kind in ("wrong-username", "client-sans", "client-extra-usage", "bad-organization"):
        assert subject(rogue[kind])["CN"] == "system:node:extra-worker-3", kind

    dumped = json.loads(labctl("dump", "--state", klab.state).stdout)["rogue_csrs"]
    assert {entry["name"] for entry in filed.values()} <= {entry["name"] for entry in dumped}


def test_spoof_client_is_a_perfect_client_csr_with_another_key(klab):
    klab.control("POST", "/reboot-done", {"hosts": ["extra-worker-3"]})

    def own_client_csrs():
        mine = {entry["name"] for entry in kubelet(klab, "extra-worker-3")["csrs"]}
        return [
            c
            for c in csrs_of(klab, filed_by=BOOTSTRAPPER, cn="system:node:extra-worker-3")
            if c["spec"]["signerName"].endswith("-kubelet") and c["metadata"]["name"] in mine
        ]

    own = wait_until("the host's CSR", own_client_csrs)[0]
    spoof = json.loads(labctl("rogue-csr", "--state", klab.state, "spoof-client", "extra-worker-3").stdout)[0]
    csr = klab.api("GET", f"{CSRS}/{spoof['name']}").json()
    assert csr["spec"]["username"] == own["spec"]["username"] and csr["spec"]["groups"] == own["spec"]["groups"]
    assert csr["spec"]["signerName"] == own["spec"]["signerName"]
    assert subject(csr) == subject(own) and request_of(csr).is_signature_valid
    assert public_der(csr) != public_der(own)


def test_dump_and_unknown_rogue_kinds(klab):
    # Rebooting again keeps the kubelet, so this test does not depend on which tests ran before it.
    klab.control("POST", "/reboot-done", {"hosts": ["extra-worker-3"]})
    dump = json.loads(labctl("dump", "--state", klab.state).stdout)
    assert "extra-worker-3" in dump["kubelets"]
    assert dump["kubelets"]["extra-worker-3"]["bootstrap_key_fingerprint"].startswith("sha256:")
    result = labctl("rogue-csr", "--state", klab.state, "no-such-kind", check=False)
    assert result.returncode != 0 and "no-such-kind" in result.stderr
