# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The checks of one CSR at a time: every legitimate and rogue CSR, alone against the policy.

The rogue kinds include those the lab files (docs/lab-hosts.md, "Kubelets and CSRs").
"""

import base64
import datetime

import pytest
from cryptography.x509.oid import NameOID

from ansible_collections.openshift_agent.day2.plugins.module_utils._join.checks import BOOTSTRAP_USERNAME
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import CLIENT_SIGNER
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    EXPECTED_WITH_EXISTING,
    HOUR,
    MINUTE,
    NOW,
    client_csr,
    decide,
    only_decision,
    serving_csr,
)

PEM_OF_CERTIFICATE_LOOKALIKE = b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"

# (id, builder, kwargs for decide, expected action, expected reason)
SINGLE_CSR_TABLE = [
    # legitimate requests
    ("client-legit", lambda: client_csr("worker-0"), {}, "approve", "valid"),
    (
        "client-legit-key-encipherment",
        lambda: client_csr("worker-1", usages=["digital signature", "key encipherment", "client auth"]),
        {},
        "approve",
        "valid",
    ),
    (
        "serving-legit-ip-and-dns",
        lambda: serving_csr("worker-0", ips=["127.0.111.20", "fd00::20"], dns=["worker-0", "worker-0.lab.example.com"]),
        {},
        "approve",
        "valid",
    ),
    ("serving-legit-ip-only", lambda: serving_csr("worker-1", ips=["127.0.111.21"]), {}, "approve", "valid"),
    ("serving-legit-hostname-only", lambda: serving_csr("worker-1", dns=["worker-1"]), {}, "approve", "valid"),
    (
        "serving-legit-dns-case-insensitive",
        lambda: serving_csr("worker-0", dns=["Worker-0.LAB.example.com."]),
        {},
        "approve",
        "valid",
    ),
    (
        "serving-legit-key-encipherment",
        lambda: serving_csr(
            "worker-1", ips=["127.0.111.21"], usages=["key encipherment", "digital signature", "server auth"]
        ),
        {},
        "approve",
        "valid",
    ),
    (
        "serving-legit-extra-group",
        lambda: serving_csr(
            "worker-1", ips=["127.0.111.21"], groups=["system:nodes", "system:authenticated", "system:custom"]
        ),
        {},
        "approve",
        "valid",
    ),
    (
        "serving-legit-o-contains-nodes",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], organizations=["system:nodes", "example"]),
        {},
        "approve",
        "valid",
    ),
    (
        "serving-for-existing-node",
        lambda: serving_csr("worker-3", ips=["127.0.111.23"]),
        {"expected": EXPECTED_WITH_EXISTING},
        "approve",
        "valid",
    ),
    # key types: only ECDSA P-256
    ("client-rsa-2048", lambda: client_csr("worker-0", key=f.make_key("rsa2048")), {}, "skip", "key-type"),
    ("client-p384", lambda: client_csr("worker-0", key=f.make_key("p384")), {}, "skip", "key-type"),
    ("client-ed25519", lambda: client_csr("worker-0", key=f.make_key("ed25519")), {}, "skip", "key-type"),
    (
        "serving-rsa-2048",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], key=f.make_key("rsa2048")),
        {},
        "skip",
        "key-type",
    ),
    # whose node
    ("client-host-not-in-inventory", lambda: client_csr("intruder-7"), {}, "skip", "unknown-node"),
    ("client-cn-of-existing-control-plane", lambda: client_csr("master-0"), {}, "skip", "unknown-node"),
    (
        "serving-cn-of-existing-control-plane",
        lambda: serving_csr("master-1", ips=["127.0.111.11"]),
        {},
        "skip",
        "unknown-node",
    ),
    (
        "client-for-existing-node",
        lambda: client_csr("worker-3"),
        {"expected": EXPECTED_WITH_EXISTING},
        "skip",
        "node-exists",
    ),
    # client identity and content
    (
        "client-wrong-username",
        lambda: client_csr("worker-0", username="system:serviceaccount:default:builder"),
        {},
        "skip",
        "bad-username",
    ),
    (
        "client-node-username",
        lambda: client_csr("worker-0", username="system:node:worker-0"),
        {},
        "skip",
        "bad-username",
    ),
    (
        "client-extra-group",
        lambda: client_csr("worker-0", groups=[*f.BOOTSTRAP_GROUPS, "system:masters"]),
        {},
        "skip",
        "bad-groups",
    ),
    ("client-missing-group", lambda: client_csr("worker-0", groups=f.BOOTSTRAP_GROUPS[1:]), {}, "skip", "bad-groups"),
    ("client-dns-san", lambda: client_csr("worker-0", dns=["worker-0"]), {}, "skip", "client-has-sans"),
    ("client-ip-san", lambda: client_csr("worker-0", ips=["127.0.111.20"]), {}, "skip", "client-has-sans"),
    ("client-email-san", lambda: client_csr("worker-0", emails=["root@worker-0"]), {}, "skip", "client-has-sans"),
    ("client-uri-san", lambda: client_csr("worker-0", uris=["spiffe://lab/worker-0"]), {}, "skip", "client-has-sans"),
    (
        "client-extra-usage-server-auth",
        lambda: client_csr("worker-0", usages=["digital signature", "client auth", "server auth"]),
        {},
        "skip",
        "bad-usages",
    ),
    (
        "client-missing-client-auth",
        lambda: client_csr("worker-0", usages=["digital signature"]),
        {},
        "skip",
        "bad-usages",
    ),
    (
        "client-o-system-masters",
        lambda: client_csr("worker-0", organizations=["system:masters"]),
        {},
        "skip",
        "bad-organization",
    ),
    (
        "client-o-extra-org",
        lambda: client_csr("worker-0", organizations=["system:nodes", "system:masters"]),
        {},
        "skip",
        "bad-organization",
    ),
    ("client-no-o", lambda: client_csr("worker-0", organizations=[]), {}, "skip", "bad-organization"),
    # subject
    ("client-cn-without-prefix", lambda: client_csr("worker-0", common_names=["worker-0"]), {}, "skip", "bad-subject"),
    (
        "client-two-cns",
        lambda: client_csr("worker-0", common_names=["system:node:worker-0", "system:node:worker-1"]),
        {},
        "skip",
        "bad-subject",
    ),
    ("client-empty-host", lambda: client_csr("worker-0", common_names=["system:node:"]), {}, "skip", "bad-subject"),
    (
        "client-extra-subject-ou",
        lambda: client_csr("worker-0", extra_subject=[(NameOID.ORGANIZATIONAL_UNIT_NAME, "system:masters")]),
        {},
        "skip",
        "bad-subject",
    ),
    # serving identity and content
    (
        "serving-username-not-cn",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], username="system:node:worker-0"),
        {},
        "skip",
        "username-cn-mismatch",
    ),
    (
        "serving-bootstrapper-username",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], username=f.BOOTSTRAP_USERNAME),
        {},
        "skip",
        "username-cn-mismatch",
    ),
    (
        "serving-missing-nodes-group",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], groups=["system:authenticated"]),
        {},
        "skip",
        "bad-groups",
    ),
    (
        "serving-missing-authenticated-group",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], groups=["system:nodes"]),
        {},
        "skip",
        "bad-groups",
    ),
    (
        "serving-o-without-nodes",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], organizations=["example"]),
        {},
        "skip",
        "bad-organization",
    ),
    (
        "serving-client-auth-usage",
        lambda: serving_csr(
            "worker-1", ips=["127.0.111.21"], usages=["digital signature", "server auth", "client auth"]
        ),
        {},
        "skip",
        "bad-usages",
    ),
    ("serving-no-sans", lambda: serving_csr("worker-1"), {}, "skip", "no-sans"),
    (
        "serving-foreign-ip",
        lambda: serving_csr("worker-1", ips=["127.0.111.21", "127.0.111.10"]),
        {},
        "skip",
        "san-not-expected",
    ),
    (
        "serving-ip-of-other-new-host",
        lambda: serving_csr("worker-1", ips=["127.0.111.20"]),
        {},
        "skip",
        "san-not-expected",
    ),
    (
        "serving-foreign-dns",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], dns=["api.lab.example.com"]),
        {},
        "skip",
        "san-not-expected",
    ),
    (
        "serving-dns-of-other-new-host",
        lambda: serving_csr("worker-1", dns=["worker-0"]),
        {},
        "skip",
        "san-not-expected",
    ),
    (
        "serving-email-san",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], emails=["a@b.c"]),
        {},
        "skip",
        "san-not-expected",
    ),
    # signers
    (
        "node-cn-to-apiserver-client-signer",
        lambda: client_csr("worker-0", signer="kubernetes.io/kube-apiserver-client"),
        {},
        "skip",
        "unexpected-signer",
    ),
    (
        "node-cn-to-legacy-unknown-signer",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], signer="kubernetes.io/legacy-unknown"),
        {},
        "skip",
        "unexpected-signer",
    ),
    (
        "node-cn-of-unknown-host-to-custom-signer",
        lambda: client_csr("intruder-7", signer="example.com/anything"),
        {},
        "skip",
        "unexpected-signer",
    ),
    # request integrity
    ("client-invalid-signature", lambda: client_csr("worker-0", tamper=True), {}, "skip", "bad-signature"),
    (
        "serving-invalid-signature",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], tamper=True),
        {},
        "skip",
        "bad-signature",
    ),
    (
        "client-garbage-base64",
        lambda: client_csr("worker-0", raw_request="***not base64***"),
        {},
        "skip",
        "bad-request",
    ),
    (
        "client-base64-not-pem",
        lambda: client_csr("worker-0", raw_request=base64.b64encode(b"hello, I am a node").decode()),
        {},
        "skip",
        "bad-request",
    ),
    (
        "client-pem-with-garbage-body",
        lambda: client_csr("worker-0", raw_request=base64.b64encode(PEM_OF_CERTIFICATE_LOOKALIKE).decode()),
        {},
        "skip",
        "bad-request",
    ),
    ("client-request-missing", lambda: client_csr("worker-0", raw_request=""), {}, "skip", "bad-request"),
    # state and time
    (
        "client-already-approved",
        lambda: client_csr("worker-0", conditions=["Approved"]),
        {},
        "skip",
        "already-approved",
    ),
    ("client-denied", lambda: client_csr("worker-0", conditions=["Denied"]), {}, "skip", "denied/failed"),
    (
        "serving-failed",
        lambda: serving_csr("worker-1", ips=["127.0.111.21"], conditions=["Approved", "Failed"]),
        {},
        "skip",
        "denied/failed",
    ),
    (
        "client-before-not-before",
        lambda: client_csr("worker-2", created=NOW - HOUR - 2 * MINUTE),
        {},
        "skip",
        "before-not-before",
    ),
    (
        "client-within-clock-skew-of-not-before",
        lambda: client_csr("worker-2", created=NOW - HOUR - datetime.timedelta(seconds=30)),
        {},
        "approve",
        "valid",
    ),
    (
        "serving-before-not-before",
        lambda: serving_csr("worker-2", ips=["127.0.111.22"], created=NOW - 3 * HOUR),
        {},
        "skip",
        "before-not-before",
    ),
    ("client-older-than-24h", lambda: client_csr("worker-0", created=NOW - 25 * HOUR), {}, "skip", "too-old"),
]


@pytest.mark.parametrize(
    "builder, kwargs, action, reason",
    [case[1:] for case in SINGLE_CSR_TABLE],
    ids=[case[0] for case in SINGLE_CSR_TABLE],
)
def test_single_csr_table(builder, kwargs, action, reason):
    decision = only_decision(builder(), **kwargs)
    assert (decision.action, decision.reason) == (action, reason), decision.message
    assert decision.message


def test_table_is_large_enough():
    assert len(SINGLE_CSR_TABLE) >= 30


def test_decision_fields_of_an_approval():
    obj = client_csr("worker-0", name="node-csr-abc", created=NOW - 2 * MINUTE)
    decision = only_decision(obj)
    fields = (decision.name, decision.node, decision.signer, decision.action, decision.reason, decision.created)
    assert fields == ("node-csr-abc", "worker-0", CLIENT_SIGNER, "approve", "valid", "2024-05-01T11:58:00Z")
    assert "worker-0" in decision.message


def test_messages_say_what_was_expected_and_found():
    decision = only_decision(client_csr("worker-0", username="system:anonymous"))
    assert BOOTSTRAP_USERNAME in decision.message
    assert "system:anonymous" in decision.message
    decision = only_decision(serving_csr("worker-1", ips=["127.0.111.99"]))
    assert "127.0.111.21" in decision.message and "127.0.111.99" in decision.message


def test_existing_node_message_points_to_replace_playbook():
    decision = only_decision(client_csr("worker-3"), expected=EXPECTED_WITH_EXISTING)
    assert "playbooks/replace_worker.yml" in decision.message


def test_csrs_of_other_signers_that_are_not_node_csrs_are_ignored():
    alice = client_csr(
        "x",
        common_names=["alice"],
        organizations=["dev"],
        signer="kubernetes.io/kube-apiserver-client",
        username="alice",
        groups=["system:authenticated"],
    )
    garbage_elsewhere = client_csr("x", signer="example.com/signer", raw_request="!!")
    assert decide([alice, garbage_elsewhere]) == []


def test_garbage_objects_never_raise_and_are_not_ours():
    assert decide([None, "csr", 42, [], {}, {"metadata": 5, "spec": "x", "status": []}]) == []


def test_kubelet_signer_object_without_metadata_is_reported():
    obj = client_csr("worker-0")
    del obj["metadata"]["creationTimestamp"]
    decision = only_decision(obj)
    assert (decision.action, decision.reason) == ("skip", "bad-object")


def test_naive_now_is_utc():
    decision = only_decision(client_csr("worker-0"), now=NOW.replace(tzinfo=None))
    assert decision.action == "approve"
