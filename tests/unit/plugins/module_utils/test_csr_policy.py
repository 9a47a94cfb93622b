# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Unit table for the CSR approval policy (FACTS.md section 5, LAB.md item 6).

Tests call everything through the module object (policy.X) so that
tests/mutation/csr_policy_mutations.py can disable one rule at a time.
"""

import base64
import datetime

import pytest
from cryptography.x509.oid import NameOID

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import policy as policy
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    NOW,
    client_csr,
    serving_csr,
)

MINUTE = datetime.timedelta(minutes=1)
HOUR = datetime.timedelta(hours=1)

EXPECTED = [
    {"name": "worker-0", "addresses": ["127.0.111.20", "fd00::20"], "dns_names": ["worker-0.lab.example.com"]},
    {"name": "worker-1", "addresses": ["127.0.111.21"]},
    {"name": "worker-2", "addresses": ["127.0.111.22"], "not_before": NOW - HOUR},
]
EXISTING = ["master-0", "master-1", "master-2", "worker-3"]
EXPECTED_WITH_EXISTING = [*EXPECTED, {"name": "worker-3", "addresses": ["127.0.111.23"]}]


def decide(objs, expected=None, existing=None, now=NOW):
    return policy.decide(
        objs, EXPECTED if expected is None else expected, EXISTING if existing is None else existing, now
    )


def only_decision(obj, **kwargs):
    decisions = decide([obj], **kwargs)
    assert len(decisions) == 1, decisions
    return decisions[0]


def by_name(decisions):
    return {d.name: d for d in decisions}


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
    assert decision.to_dict() == {
        "name": "node-csr-abc",
        "node": "worker-0",
        "signer": policy.CLIENT_SIGNER,
        "action": "approve",
        "reason": "valid",
        "message": decision.message,
        "created": "2024-05-01T11:58:00Z",
    }
    assert "worker-0" in decision.message


def test_messages_say_what_was_expected_and_found():
    decision = only_decision(client_csr("worker-0", username="system:anonymous"))
    assert policy.BOOTSTRAP_USERNAME in decision.message
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


def test_fractional_and_offset_timestamps_are_read():
    obj = client_csr("worker-0")
    obj["metadata"]["creationTimestamp"] = "2024-05-01T13:55:00.123456789+02:00"
    parsed = policy.parse_csr(obj)
    assert parsed.created == datetime.datetime(2024, 5, 1, 11, 55, tzinfo=datetime.timezone.utc)


# ---------------------------------------------------------------- parse_csr


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        17,
        "text",
        [],
        {},
        {"metadata": None},
        {"spec": {"request": 12}},
        {"metadata": {"name": "a", "creationTimestamp": "yesterday"}, "spec": {"request": "AAAA"}},
        {"spec": {"request": base64.b64encode(b"-----BEGIN CERTIFICATE REQUEST-----\n\xff\xfe").decode()}},
        {"spec": {"groups": "system:nodes", "usages": None}, "status": {"conditions": "Approved"}},
    ],
)
def test_parse_csr_never_raises(garbage):
    parsed = policy.parse_csr(garbage)
    assert parsed.error is not None
    assert parsed.error.reason in ("bad-object", "bad-request")
    assert parsed.host is None


def test_parse_csr_reads_fields():
    key = f.make_key()
    parsed = policy.parse_csr(serving_csr("worker-0", key=key, ips=["127.0.111.20"], dns=["worker-0"]))
    assert parsed.error is None
    assert parsed.host == "worker-0"
    assert parsed.key_type == "ECDSA P-256"
    assert parsed.signature_valid
    assert parsed.dns_sans == ["worker-0"]
    assert [str(ip) for ip in parsed.ip_sans] == ["127.0.111.20"]
    assert parsed.organizations == ["system:nodes"]
    assert parsed.state == policy.PENDING


@pytest.mark.parametrize(
    "kind, described",
    [("p256", "ECDSA P-256"), ("p384", "ECDSA P-384"), ("rsa2048", "RSA 2048"), ("ed25519", "Ed25519")],
)
def test_key_types_are_described(kind, described):
    assert policy.parse_csr(client_csr("worker-0", key=f.make_key(kind))).key_type == described


# ---------------------------------------------------------------- grouping


def test_two_client_keys_for_one_node_is_possible_spoofing():
    genuine = client_csr("worker-0", name="node-csr-genuine", created=NOW - 10 * MINUTE)
    rogue = client_csr("worker-0", name="node-csr-rogue", created=NOW - 5 * MINUTE)
    other = client_csr("worker-1", name="node-csr-other")
    decisions = by_name(decide([genuine, rogue, other]))
    for name in ("node-csr-genuine", "node-csr-rogue"):
        assert (decisions[name].action, decisions[name].reason) == ("skip", "possible-spoofing")
        assert "node-csr-genuine" in decisions[name].message and "node-csr-rogue" in decisions[name].message
    assert decisions["node-csr-other"].action == "approve"


def test_same_client_key_twice_approves_newest():
    key = f.make_key()
    older = client_csr("worker-0", key=key, name="node-csr-older", created=NOW - 70 * MINUTE)
    newer = client_csr("worker-0", key=key, name="node-csr-newer", created=NOW - 5 * MINUTE)
    decisions = by_name(decide([newer, older]))
    assert decisions["node-csr-newer"].action == "approve"
    assert (decisions["node-csr-older"].action, decisions["node-csr-older"].reason) == ("skip", "superseded")
    assert "node-csr-newer" in decisions["node-csr-older"].message


def test_two_serving_csrs_newest_wins():
    older = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-old", created=NOW - 20 * MINUTE)
    newer = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-new", created=NOW - 2 * MINUTE)
    decisions = by_name(decide([older, newer]))
    assert decisions["csr-new"].action == "approve"
    assert (decisions["csr-old"].action, decisions["csr-old"].reason) == ("skip", "superseded")


def test_serving_keys_may_differ_without_spoofing():
    first = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-a", created=NOW - 20 * MINUTE)
    second = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-b", created=NOW - 2 * MINUTE)
    assert [d.reason for d in decide([first, second])] == ["superseded", "valid"]


def test_client_already_approved_in_run_blocks_a_second_approval():
    key = f.make_key()
    approved = client_csr(
        "worker-0", key=key, name="node-csr-first", created=NOW - 30 * MINUTE, conditions=["Approved"]
    )
    again = client_csr("worker-0", key=key, name="node-csr-again", created=NOW - MINUTE)
    decisions = by_name(decide([approved, again]))
    assert decisions["node-csr-first"].reason == "already-approved"
    assert (decisions["node-csr-again"].action, decisions["node-csr-again"].reason) == ("skip", "node-already-approved")
    assert "node-csr-first" in decisions["node-csr-again"].message


def test_serving_already_approved_in_run_blocks_a_second_approval():
    approved = serving_csr(
        "worker-1", ips=["127.0.111.21"], name="csr-first", created=NOW - 9 * MINUTE, conditions=["Approved"]
    )
    again = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-again", created=NOW - MINUTE)
    assert by_name(decide([approved, again]))["csr-again"].reason == "node-already-approved"


def test_pending_client_with_key_other_than_approved_one_is_possible_spoofing():
    approved = client_csr("worker-0", name="node-csr-first", created=NOW - 30 * MINUTE, conditions=["Approved"])
    rogue = client_csr("worker-0", name="node-csr-second", created=NOW - MINUTE)
    decision = by_name(decide([approved, rogue]))["node-csr-second"]
    assert (decision.action, decision.reason) == ("skip", "possible-spoofing")


def test_approval_from_before_not_before_belongs_to_an_earlier_life():
    old_life = client_csr("worker-2", name="node-csr-old-life", created=NOW - 3 * HOUR, conditions=["Approved"])
    new_life = client_csr("worker-2", name="node-csr-new-life", created=NOW - MINUTE)
    decisions = by_name(decide([old_life, new_life]))
    assert decisions["node-csr-new-life"].action == "approve"


def test_denied_csr_of_a_node_does_not_block_it():
    denied = client_csr("worker-0", name="node-csr-denied", created=NOW - 9 * MINUTE, conditions=["Denied"])
    fresh = client_csr("worker-0", name="node-csr-fresh", created=NOW - MINUTE)
    assert by_name(decide([denied, fresh]))["node-csr-fresh"].action == "approve"


def test_invalid_rogue_does_not_block_the_genuine_csr():
    genuine = client_csr("worker-0", name="node-csr-genuine", created=NOW - 10 * MINUTE)
    rogue = client_csr("worker-0", name="node-csr-rogue", created=NOW - 5 * MINUTE, username="system:anonymous")
    decisions = by_name(decide([genuine, rogue]))
    assert decisions["node-csr-genuine"].action == "approve"
    assert decisions["node-csr-rogue"].reason == "bad-username"


def test_a_whole_run_with_rogues_approves_exactly_the_genuine_csrs():
    objs = [
        client_csr("worker-0", name="genuine-client-0"),
        serving_csr("worker-1", ips=["127.0.111.21"], dns=["worker-1"], name="genuine-serving-1"),
        client_csr("intruder-7", name="rogue-unknown"),
        client_csr("master-0", name="rogue-existing"),
        client_csr("worker-1", name="rogue-extra-group", groups=[*f.BOOTSTRAP_GROUPS, "system:masters"]),
        client_csr("worker-1", name="rogue-san", dns=["worker-1"]),
        serving_csr("worker-0", ips=["127.0.111.10"], name="rogue-foreign-ip"),
        serving_csr("worker-0", ips=["127.0.111.20"], username="system:node:worker-1", name="rogue-username"),
        client_csr("worker-1", name="rogue-signer", signer="kubernetes.io/kube-apiserver-client"),
        client_csr("worker-1", name="rogue-tampered", tamper=True),
        client_csr("worker-1", name="rogue-rsa", key=f.make_key("rsa2048")),
    ]
    approved = sorted(d.name for d in decide(objs) if d.action == "approve")
    assert approved == ["genuine-client-0", "genuine-serving-1"]


# ---------------------------------------------------------------- flood guard


@pytest.mark.parametrize("expected_count, threshold", [(1, 10), (2, 10), (3, 12), (10, 40)])
def test_flood_threshold(expected_count, threshold):
    assert policy.flood_threshold(expected_count) == threshold


def _pending_serving(count, created=None):
    return [
        serving_csr(
            "worker-1",
            ips=["127.0.111.21"],
            name="csr-%02d" % i,
            created=created or NOW - MINUTE - i * datetime.timedelta(seconds=1),
        )
        for i in range(count)
    ]


def test_flood_guard_counts_recent_pending_csrs_of_expected_hosts():
    objs = [*_pending_serving(12), client_csr("intruder-7", name="not-counted")]
    objs += [client_csr("worker-0", name="approved-not-counted", conditions=["Approved"])]
    objs += _pending_serving(1, created=NOW - 2 * HOUR)
    verdict = policy.flood_guard(
        [policy.parse_csr(o) for o in objs], frozenset(["worker-0", "worker-1", "worker-2"]), NOW
    )
    assert (verdict.flood, verdict.reason, verdict.count, verdict.threshold) == (False, "ok", 12, 12)
    objs += _pending_serving(1, created=NOW - MINUTE)
    objs[-1]["metadata"]["name"] = "one-too-many"
    verdict = policy.flood_guard(
        [policy.parse_csr(o) for o in objs], frozenset(["worker-0", "worker-1", "worker-2"]), NOW
    )
    assert (verdict.flood, verdict.reason, verdict.count) == (True, "flood", 13)
    assert "13" in verdict.message


def test_flood_stops_every_approval():
    objs = [*_pending_serving(11), client_csr("worker-0", name="genuine")]
    decisions = decide(objs, expected=EXPECTED[:1] + EXPECTED[1:2])
    assert all(d.action == "skip" for d in decisions)
    assert by_name(decisions)["genuine"].reason == "flood"
    assert "12" in by_name(decisions)["genuine"].message


def test_at_threshold_is_not_a_flood():
    objs = [*_pending_serving(9), client_csr("worker-0", name="genuine")]
    decisions = by_name(decide(objs, expected=EXPECTED[:2]))
    assert decisions["genuine"].action == "approve"


def test_flood_guard_accepts_raw_objects():
    verdict = policy.flood_guard(_pending_serving(11), ["worker-1"], NOW.replace(tzinfo=None))
    assert (verdict.flood, verdict.count, verdict.threshold) == (True, 11, 10)
