# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The CSR policy of plugins/module_utils/_join/csr.py: reading a CSR, every check of one CSR at a time, the CSRs
of one host together (host_csrs: client keys, the serving CSR) and the flood guard.

Every rule is called through the module object (``csr.X``, csr_factory's helpers) so that
tests/mutation/csr_policy_mutations.py can disable one at a time. The rogue kinds include those the lab files
(docs/lab-hosts.md, "Kubelets and CSRs").
"""

import base64
import datetime

import pytest
from cryptography.x509.oid import NameOID

from ansible_collections.openshift_agent.day2.plugins.module_utils._join import csr
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    BOOTSTRAP_USERNAME,
    CLIENT_SIGNER,
    EXPECTED_WITH_EXISTING,
    HOUR,
    MINUTE,
    NOW,
    SECOND,
    SKEW,
    client_csr,
    finding,
    names,
    serving_csr,
    sort_host,
)

# worker-4 is given only ip; its Node reports an IPv6 address too, and addresses it must not get (the tests say why).
DUAL_STACK = [
    {
        "name": "worker-4",
        "addresses": ["127.0.111.24"],
        "reported": [
            "127.0.111.24",
            "fd2e:6f44:5dd8:c956::24",
            "198.51.100.24",
            "fd2e:6f44:5dd8:c956::5",
            "127.0.111.4",
            "fd2e:6f44:5dd8:c956::10",
            "127.0.111.20",
        ],
    }
]
PEM_OF_CERTIFICATE_LOOKALIKE = b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
APPROVED = ["Approved"]

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
        {"status": {"conditions": [{"type": ["Approved"]}, {"type": {"Denied": 1}}, "Failed", None]}},
    ],
)
def test_parse_csr_never_raises(garbage):
    parsed = csr.parse_csr(garbage)
    assert parsed.error is not None
    assert parsed.error.reason in ("bad-object", "bad-request")
    assert parsed.host is None


def test_without_cryptography_no_csr_can_pass(monkeypatch):
    monkeypatch.setattr(csr, "HAS_CRYPTOGRAPHY", False)
    parsed = csr.parse_csr(client_csr("worker-0"))
    assert (parsed.error.reason, parsed.error.message) == (
        "bad-request",
        "the Python library cryptography is missing, CSRs cannot be checked",
    )
    assert finding(client_csr("worker-0"))[0] == "bad-request"


def test_parse_csr_reads_fields():
    parsed = csr.parse_csr(serving_csr("worker-0", key=f.make_key(), ips=["127.0.111.20"], dns=["worker-0"]))
    assert parsed.error is None
    assert parsed.host == "worker-0"
    assert parsed.key_type == "ECDSA P-256"
    assert parsed.signature_valid
    assert parsed.dns_sans == ["worker-0"]
    assert [str(ip) for ip in parsed.ip_sans] == ["127.0.111.20"]
    assert parsed.organizations == ["system:nodes"]
    assert parsed.state == csr.PENDING


def test_the_fields_of_an_approvable_csr():
    parsed = csr.parse_csr(client_csr("worker-0", name="node-csr-abc", created=NOW - 2 * MINUTE))
    fields = (parsed.name, parsed.host, parsed.signer, parsed.created_text, parsed.state)
    assert fields == ("node-csr-abc", "worker-0", CLIENT_SIGNER, "2024-05-01T11:58:00Z", csr.PENDING)
    assert parsed.describe() == "node-csr-abc (requested by %s at 2024-05-01T11:58:00Z, key sha256:%s)" % (
        BOOTSTRAP_USERNAME,
        parsed.key_id,
    )
    assert len(parsed.key_id) == 16 and finding(client_csr("worker-0")) == ("valid", None)


@pytest.mark.parametrize(
    "kind, described",
    [("p256", "ECDSA P-256"), ("p384", "ECDSA P-384"), ("rsa2048", "RSA 2048"), ("ed25519", "Ed25519PublicKey")],
)
def test_key_types_are_described(kind, described):
    assert csr.parse_csr(client_csr("worker-0", key=f.make_key(kind))).key_type == described


def test_fractional_and_offset_timestamps_are_read():
    obj = client_csr("worker-0")
    obj["metadata"]["creationTimestamp"] = "2024-05-01T13:55:00.123456789+02:00"
    parsed = csr.parse_csr(obj)
    assert parsed.created == datetime.datetime(2024, 5, 1, 11, 55, 0, 123456, tzinfo=datetime.timezone.utc)
    assert parsed.created_text == "2024-05-01T11:55:00Z"


def test_ip_sans_are_addresses_compared_by_value():
    parsed = csr.parse_csr(serving_csr("worker-0", ips=["fd00:0::20", "127.0.111.20"]))
    assert [str(ip) for ip in parsed.ip_sans] == ["fd00::20", "127.0.111.20"]
    assert parsed.all_sans == ["fd00::20", "127.0.111.20"]


@pytest.mark.parametrize(
    "conditions, state",
    [([], csr.PENDING), (["Approved"], csr.APPROVED), (["Denied"], csr.DENIED_OR_FAILED),
     (["Approved", "Failed"], csr.DENIED_OR_FAILED)],
)  # fmt: skip
def test_the_state_comes_from_the_conditions(conditions, state):
    assert csr.parse_csr(client_csr("worker-0", conditions=conditions)).state == state


# ---------------------------------------------------------------- the checks of one CSR

# (id, builder, kwargs for finding, expected action, expected reason)
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
    # IP SANs on real NICs (worker-4 given only ip; what its Node reports: DUAL_STACK)
    (
        "serving-dual-stack-node-address",
        lambda: serving_csr("worker-4", ips=["127.0.111.24", "fd2e:6f44:5dd8:c956::24"], dns=["worker-4"]),
        {"expected": DUAL_STACK},
        "approve",
        "valid",
    ),
    (
        "serving-node-address-without-inventory-address",
        lambda: serving_csr("worker-4", ips=["fd2e:6f44:5dd8:c956::24"]),
        {"expected": DUAL_STACK},
        "approve",
        "valid",
    ),
    (
        "serving-inventory-address-outside-machine-networks",
        lambda: serving_csr("worker-6", ips=["10.0.0.6"]),
        {"expected": [{"name": "worker-6", "addresses": ["10.0.0.6"]}]},
        "approve",
        "valid",
    ),
    (
        "serving-node-address-outside-machine-networks",
        lambda: serving_csr("worker-4", ips=["127.0.111.24", "198.51.100.24"]),
        {"expected": DUAL_STACK},
        "skip",
        "san-outside-machine-networks",
    ),
    (
        "serving-node-address-and-no-machine-networks-known",
        lambda: serving_csr("worker-4", ips=["fd2e:6f44:5dd8:c956::24"]),
        {"expected": DUAL_STACK, "network": {}},
        "skip",
        "san-outside-machine-networks",
    ),
    (
        "serving-node-address-is-api-vip",
        lambda: serving_csr("worker-4", ips=["127.0.111.24", "fd2e:6f44:5dd8:c956::5"]),
        {"expected": DUAL_STACK},
        "skip",
        "san-is-vip",
    ),
    (
        "serving-node-address-is-ingress-vip",
        lambda: serving_csr("worker-4", ips=["127.0.111.4"]),
        {"expected": DUAL_STACK},
        "skip",
        "san-is-vip",
    ),
    (
        "serving-inventory-address-is-vip",
        lambda: serving_csr("worker-5", ips=["127.0.111.5"]),
        {"expected": [{"name": "worker-5", "addresses": ["127.0.111.5"]}]},
        "skip",
        "san-is-vip",
    ),
    (
        "serving-node-address-of-another-node",
        lambda: serving_csr("worker-4", ips=["127.0.111.24", "fd2e:6f44:5dd8:c956::10"]),
        {"expected": DUAL_STACK},
        "skip",
        "san-of-another-node",
    ),
    (
        "serving-node-address-of-another-new-host",
        lambda: serving_csr("worker-4", ips=["127.0.111.20"]),
        {"expected": DUAL_STACK},
        "skip",
        "san-of-another-node",
    ),
    (
        "serving-address-neither-inventory-nor-node",
        lambda: serving_csr("worker-4", ips=["127.0.111.24", "fd2e:6f44:5dd8:c956::99"]),
        {"expected": DUAL_STACK},
        "skip",
        "san-not-expected",
    ),
    (
        "serving-dns-other-than-node-name",
        lambda: serving_csr("worker-4", ips=["127.0.111.24"], dns=["worker-4", "worker-4.lab.example.com"]),
        {"expected": DUAL_STACK},
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
        lambda: client_csr("worker-2", created=NOW - HOUR - SKEW + SECOND),
        {},
        "approve",
        "valid",
    ),
    (
        "client-just-past-the-clock-skew-of-not-before",
        lambda: client_csr("worker-2", created=NOW - HOUR - SKEW - SECOND),
        {},
        "skip",
        "before-not-before",
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
    found, message = finding(builder(), **kwargs)
    assert found == reason, message
    assert (found == "valid") == (action == "approve")
    assert message if action == "skip" else message is None


def test_table_is_large_enough():
    assert len(SINGLE_CSR_TABLE) >= 30


def test_messages_say_what_was_expected_and_found():
    _reason, message = finding(client_csr("worker-0", username="system:anonymous"))
    assert BOOTSTRAP_USERNAME in message and "system:anonymous" in message
    _reason, message = finding(serving_csr("worker-1", ips=["127.0.111.99"]))
    assert "127.0.111.21" in message and "127.0.111.99" in message
    _reason, message = finding(client_csr("worker-2", created=NOW - 2 * HOUR))
    assert "not_before of worker-2, minus 2s clock skew" in message and "2024-05-01T10:00:00Z" in message


def test_each_refused_san_is_named_with_why():
    _reason, message = finding(serving_csr("worker-4", ips=["198.51.100.24"]), expected=DUAL_STACK)
    assert message == (
        "SAN 198.51.100.24, reported by its Node, is outside the cluster's machine networks (127.0.111.0/24, "
        "fd2e:6f44:5dd8:c956::/64): the certificate would not be this host's"
    )
    _reason, message = finding(serving_csr("worker-4", ips=["127.0.111.24"]), expected=DUAL_STACK, network={})
    assert message is None
    _reason, message = finding(
        serving_csr("worker-4", ips=["fd2e:6f44:5dd8:c956::24"]), expected=DUAL_STACK, network={}
    )
    assert "none known (csr_approve's cluster has no machine_networks)" in message
    _reason, message = finding(serving_csr("worker-4", ips=["fd2e:6f44:5dd8:c956::5"]), expected=DUAL_STACK)
    assert message.startswith("SAN fd2e:6f44:5dd8:c956::5 is the cluster's API VIP")
    _reason, message = finding(serving_csr("worker-4", ips=["127.0.111.20"]), expected=DUAL_STACK)
    assert message.startswith("SAN 127.0.111.20 is an address of worker-0")
    two = serving_csr("worker-4", ips=["fd2e:6f44:5dd8:c956::99"], dns=["evil.example.com"])
    _reason, message = finding(two, expected=DUAL_STACK)
    assert message.startswith("SAN evil.example.com is not the node name worker-4; SAN fd2e:6f44:5dd8:c956::99 is ")
    assert "inventory address of worker-4 (127.0.111.24) nor in the status.addresses of its Node (127.0.111.20, " in (
        message
    )
    _reason, message = finding(serving_csr("worker-1", ips=["fd00::21"]))
    assert "nor in the status.addresses of its Node (no Node yet)" in message


def test_the_machine_networks_and_vips_come_from_the_facts():
    network = csr.Network.of({"machine_networks": [{"cidr": "10.0.0.0/16"}, "fd00::/64"], "api_vips": ["10.0.0.5"]})
    assert [str(n) for n in network.machine_networks] == ["10.0.0.0/16", "fd00::/64"]
    assert network.vips == {"10.0.0.5": "API VIP"}
    assert csr.Network.of({}) == csr.Network()
    with pytest.raises(csr.InputError, match=r"cluster: field machine_networks value '10\.0\.0\.0' is not a CIDR"):
        csr.Network.of({"machine_networks": ["10.0.0.0"]})


def test_a_nodes_ips_are_its_status_addresses():
    node = {
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": "127.0.111.24"},
                {"type": "InternalIP", "address": "fd2e:6f44:5dd8:c956::24"},
                {"type": "ExternalIP", "address": "198.51.100.24"},
                {"type": "Hostname", "address": "worker-4"},
                {"type": "InternalIP", "address": "garbage"},
                "junk",
            ]
        }
    }
    assert sorted(map(str, csr.node_ips(node))) == ["127.0.111.24", "198.51.100.24", "fd2e:6f44:5dd8:c956::24"]
    assert csr.node_ips(None) == csr.node_ips({"status": None}) == csr.node_ips("x") == frozenset()


def test_existing_node_message_points_to_replace_playbook():
    reason, message = finding(client_csr("worker-3"), expected=EXPECTED_WITH_EXISTING)
    assert reason == "node-exists" and "playbooks/replace_worker.yml" in message


def test_the_checks_of_the_signer_follow_the_common_ones():
    """A client CSR is not asked the serving checks, nor a serving CSR the client ones."""
    assert finding(client_csr("worker-0", username=BOOTSTRAP_USERNAME))[0] == "valid"
    assert finding(serving_csr("worker-1", ips=["127.0.111.21"]))[0] == "valid"
    assert csr.first_finding(csr.parse_csr(client_csr("worker-0")), f.context(), skip=tuple(csr.CSR_CHECKS)) is None
    parsed = csr.parse_csr(client_csr("worker-3"))
    assert csr.first_finding(parsed, f.context(expected=EXPECTED_WITH_EXISTING)).reason == "node-exists"
    skipped = (csr.check_node_absent,)
    assert csr.first_finding(parsed, f.context(expected=EXPECTED_WITH_EXISTING), skip=skipped) is None


# ---------------------------------------------------------------- the CSRs of one host: host_csrs


def nothing_for(found):
    return (found.approved, found.pending, found.client, found.rogue, found.ambiguous, found.serving, found.refused)


def test_csrs_of_other_signers_and_of_nobody_are_not_the_hosts():
    alice = client_csr(
        "x",
        common_names=["alice"],
        organizations=["dev"],
        signer="kubernetes.io/kube-apiserver-client",
        username="alice",
        groups=["system:authenticated"],
    )
    garbage_elsewhere = client_csr("x", signer="example.com/signer", raw_request="!!")
    node_cn_elsewhere = client_csr("worker-0", signer="kubernetes.io/kube-apiserver-client")
    for name in ("worker-0", "worker-1", "x"):
        assert nothing_for(sort_host([alice, garbage_elsewhere, node_cn_elsewhere], name)) == ([],) * 6 + ({},)


def test_garbage_objects_never_raise_and_are_not_ours():
    garbage = [None, "csr", 42, [], {}, {"metadata": 5, "spec": "x", "status": []}]
    assert nothing_for(sort_host(garbage, "worker-0")) == ([],) * 6 + ({},)
    assert csr.flood([csr.parse_csr(obj) for obj in garbage * 20], frozenset(["worker-0"]), NOW) is None


def test_kubelet_signer_object_without_metadata_is_reported():
    obj = client_csr("worker-0", name="no-time")
    del obj["metadata"]["creationTimestamp"]
    assert finding(obj)[0] == "bad-object"
    found = sort_host([obj], "worker-0")
    assert found.client == [] and found.refused["no-time"].startswith("bad-object: metadata.name or ")


def test_a_replay_carries_the_same_key_and_every_copy_is_approved_oldest_first():
    key = f.make_key()
    genuine = client_csr("worker-0", key=key, name="genuine", created=NOW - 70 * MINUTE)
    replay = client_csr("worker-0", key=key, name="replay", created=NOW - 5 * MINUTE)
    found = sort_host([replay, genuine], "worker-0")
    assert names(found.client) == ["genuine", "replay"]
    assert found.problem("worker-0") is None and found.key is None and found.rogue == found.ambiguous == []


def test_two_pending_keys_approve_nothing_and_name_both():
    genuine = client_csr("worker-0", name="node-csr-genuine", created=NOW - 10 * MINUTE)
    rogue = client_csr("worker-0", name="node-csr-rogue", created=NOW - 5 * MINUTE)
    other = client_csr("worker-1", name="node-csr-other")
    found = sort_host([rogue, genuine, other], "worker-0")
    assert found.client == [] and names(found.ambiguous) == ["node-csr-genuine", "node-csr-rogue"]
    problem = found.problem("worker-0")
    assert "carry 2 different public keys" in problem
    assert "node-csr-genuine (requested by" in problem and "node-csr-rogue (requested by" in problem
    assert names(sort_host([rogue, genuine, other], "worker-1").client) == ["node-csr-other"]


def test_a_second_key_after_the_approval_names_only_the_rogue():
    key = f.make_key()
    genuine = client_csr("worker-0", key=key, name="genuine", conditions=APPROVED)
    again = client_csr("worker-0", key=key, name="again")
    rogue = client_csr("worker-0", name="rogue", username=f.BOOTSTRAP_USERNAME)
    found = sort_host([genuine, again, rogue], "worker-0")
    assert names(found.rogue) == ["rogue"] and names(found.client) == ["again"] and names(found.approved) == ["genuine"]
    problem = found.problem("worker-0")
    rogue_part = problem.split("while")[0]
    assert "rogue (requested by %s" % f.BOOTSTRAP_USERNAME in rogue_part and "genuine" not in rogue_part
    assert "the kubelet's key is sha256:%s (approved: genuine)" % csr.parse_csr(genuine).key_id in problem
    assert "oc delete csr rogue" in problem


def test_two_approved_keys_say_a_certificate_went_to_someone_else():
    first = client_csr("worker-0", name="first", conditions=APPROVED)
    second = client_csr("worker-0", name="second", conditions=APPROVED)
    problem = sort_host([first, second], "worker-0").problem("worker-0")
    assert problem.startswith("client CSRs of worker-0 with different public keys are approved: first (")
    assert "revoke it (rotate the kubelet CA)" in problem and "playbooks/replace_worker.yml" in problem


def test_a_csr_from_before_not_before_and_a_malformed_one_do_not_count_as_a_second_key():
    key = f.make_key()
    early = client_csr("worker-2", name="early", created=NOW - 2 * HOUR)
    sans = client_csr("worker-2", name="sans", dns=["worker-2"])
    genuine = client_csr("worker-2", key=key, name="genuine", created=NOW - MINUTE)
    found = sort_host([early, sans, genuine], "worker-2")
    assert names(found.client) == ["genuine"] and found.problem("worker-2") is None
    assert sorted(found.refused) == ["early", "sans"]
    assert found.refused["early"].startswith("before-not-before: ")
    assert found.refused["sans"].startswith("client-has-sans: ")


def test_an_approval_from_before_not_before_belongs_to_an_earlier_life():
    old_life = client_csr("worker-2", name="old-life", created=NOW - 3 * HOUR, conditions=APPROVED)
    new_life = client_csr("worker-2", name="new-life", created=NOW - MINUTE)
    found = sort_host([old_life, new_life], "worker-2")
    assert found.approved == [] and names(found.client) == ["new-life"] and found.problem("worker-2") is None
    # Without the bound the old approval is taken as the kubelet's key and the new CSR as a second key.
    unbounded = sort_host([old_life, new_life], "worker-2", expected=[{"name": "worker-2"}])
    assert names(unbounded.approved) == ["old-life"] and "a second public key" in unbounded.problem("worker-2")


def test_a_denied_csr_of_a_host_does_not_block_it():
    denied = client_csr("worker-0", name="denied", created=NOW - 9 * MINUTE, conditions=["Denied"])
    fresh = client_csr("worker-0", name="fresh", created=NOW - MINUTE)
    found = sort_host([denied, fresh], "worker-0")
    assert names(found.client) == ["fresh"] and found.refused == {} and found.problem("worker-0") is None


def test_an_invalid_rogue_does_not_block_the_genuine_csr():
    genuine = client_csr("worker-0", name="genuine", created=NOW - 10 * MINUTE)
    rogue = client_csr("worker-0", name="rogue", created=NOW - 5 * MINUTE, username="system:anonymous")
    found = sort_host([genuine, rogue], "worker-0")
    assert names(found.client) == ["genuine"] and found.problem("worker-0") is None
    assert found.refused["rogue"].startswith("bad-username: expected spec.username")


def test_the_newest_pending_serving_csr_is_the_one():
    older = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-old", created=NOW - 20 * MINUTE)
    newer = serving_csr("worker-1", ips=["127.0.111.21"], name="csr-new", created=NOW - 2 * MINUTE)
    found = sort_host([newer, older], "worker-1")
    assert names(found.serving) == ["csr-new"]
    # Serving keys may differ (a kubelet makes a new key for each): no problem.
    assert found.problem("worker-1") is None and found.refused == {}


def test_one_serving_approval_per_installation():
    approved = serving_csr(
        "worker-1", ips=["127.0.111.21"], name="first", created=NOW - 9 * MINUTE, conditions=APPROVED
    )
    again = serving_csr("worker-1", ips=["127.0.111.21"], name="again", created=NOW - MINUTE)
    assert sort_host([approved, again], "worker-1").serving == []
    # An approval of the installation before not_before does not count, nor a refused serving CSR.
    old = serving_csr("worker-2", ips=["127.0.111.22"], name="old", created=NOW - 2 * HOUR, conditions=APPROVED)
    new = serving_csr("worker-2", ips=["127.0.111.22"], name="new", created=NOW - MINUTE)
    assert names(sort_host([old, new], "worker-2").serving) == ["new"]
    foreign = serving_csr("worker-1", ips=["127.0.111.99"], name="foreign", created=NOW - 3 * MINUTE)
    found = sort_host([foreign, again], "worker-1")
    assert names(found.serving) == ["again"] and found.refused["foreign"].startswith("san-not-expected: ")


def test_a_refused_pending_serving_csr_is_reported_and_a_refused_approved_one_ignored():
    pending = serving_csr("worker-1", ips=["127.0.111.99"], name="pending-foreign")
    approved = serving_csr("worker-1", ips=["127.0.111.99"], name="approved-foreign", conditions=APPROVED)
    found = sort_host([pending, approved], "worker-1")
    assert list(found.refused) == ["pending-foreign"] and found.serving == []
    assert sort_host([pending], "worker-1").refused_serving == ["pending-foreign"]
    # once a serving CSR of this installation is approved, a refused one is someone else's, not a missing certificate
    assert found.refused_serving == []
    genuine = serving_csr("worker-1", ips=["127.0.111.21"], name="genuine", conditions=APPROVED)
    found = sort_host([pending, genuine], "worker-1")
    assert list(found.refused) == ["pending-foreign"] and found.refused_serving == []


def node(name, *addresses):
    return {
        "metadata": {"name": name},
        "status": {"addresses": [{"type": "InternalIP", "address": a} for a in addresses]},
    }


def test_each_host_gives_every_host_its_own_nodes_addresses_and_every_holder_of_an_address():
    """Each host is seen with what its own Node reports; another Node's address or another new host's inventory
    address is never its own, even when its Node reports it."""
    v6 = "fd2e:6f44:5dd8:c956::"
    expected = {
        "worker-4": f.expected_host("worker-4", ["127.0.111.24"]),
        "worker-5": f.expected_host("worker-5", ["127.0.111.25"]),
    }
    nodes = {
        "master-0": node("master-0", "127.0.111.10", v6 + "10"),
        "worker-4": node("worker-4", "127.0.111.24", v6 + "24", v6 + "10", "127.0.111.25"),
    }
    objs = [
        serving_csr("worker-4", ips=["127.0.111.24", v6 + "24"], name="dual"),
        serving_csr("worker-4", ips=["127.0.111.24", v6 + "10"], name="masters"),
        serving_csr("worker-4", ips=["127.0.111.25"], name="worker-5s"),
        serving_csr("worker-5", ips=["127.0.111.25", v6 + "24"], name="worker-4s"),
    ]
    parsed = [csr.parse_csr(obj) for obj in objs]
    network = csr.Network.of(f.NETWORK_FACTS)
    found = csr.each_host(parsed, expected, nodes, NOW, SKEW, network)
    assert names(found["worker-4"].serving) == ["dual"]
    assert found["worker-4"].refused_serving == ["masters", "worker-5s"]
    assert found["worker-4"].refused["masters"].startswith(f"san-of-another-node: SAN {v6}10 is an address of master-0")
    assert (
        found["worker-4"]
        .refused["worker-5s"]
        .startswith("san-of-another-node: SAN 127.0.111.25 is an address of worker-5")
    )
    # worker-5 has no Node: an address only worker-4's Node reports is not worker-5's
    assert found["worker-5"].serving == [] and found["worker-5"].refused["worker-4s"].startswith("san-not-expected: ")
    # without the networks (csr_approve given no cluster facts) a Node-reported address is refused
    alone = csr.each_host(parsed, expected, nodes, NOW, SKEW)
    assert alone["worker-4"].serving == [] and alone["worker-4"].refused["dual"].startswith("san-outside-machine-")


def test_the_refusals_line_names_each_refused_csr():
    found = sort_host([serving_csr("worker-1", ips=["127.0.111.99"], name="foreign")], "worker-1")
    assert found.refusals().startswith(" (refused: foreign: san-not-expected: SAN 127.0.111.99 is neither ")
    assert sort_host([], "worker-1").refusals() == ""


# ---------------------------------------------------------------- the flood guard


def pending_serving(count, host="worker-1", created=None):
    return [
        serving_csr(
            host,
            ips=[f.EXPECTED[1]["addresses"][0]],
            name="%s-csr-%02d" % (host, i),
            created=created or NOW - MINUTE - i * SECOND,
        )
        for i in range(count)
    ]


def flood_of(objs, hosts, now=NOW):
    return csr.flood([csr.parse_csr(obj) for obj in objs], frozenset(hosts), now)


@pytest.mark.parametrize("host_count, limit", [(1, 10), (2, 10), (3, 12), (10, 40)])
def test_the_flood_limit_is_four_per_host_and_at_least_ten(host_count, limit):
    hosts = ["worker-%d" % i for i in range(host_count)]
    assert flood_of(pending_serving(limit, host=hosts[0]), hosts) is None  # at the limit is not a flood
    message = flood_of(pending_serving(limit + 1, host=hosts[0]), hosts)
    assert message == (
        "expected at most %d pending CSRs for the %d new hosts within 1:00:00, found %d: approving nothing until "
        "someone looks (docs/csr-approval.md)" % (limit, host_count, limit + 1)
    )


def test_the_flood_guard_counts_recent_pending_csrs_of_the_new_hosts():
    objs = [*pending_serving(12), client_csr("intruder-7", name="not-counted")]
    objs += [client_csr("worker-0", name="approved-not-counted", conditions=APPROVED)]
    objs += [client_csr("worker-0", name="denied-not-counted", conditions=["Denied"])]
    objs += pending_serving(1, host="worker-2", created=NOW - 2 * HOUR)
    hosts = ["worker-0", "worker-1", "worker-2"]
    assert flood_of(objs, hosts) is None
    objs += [client_csr("worker-0", name="one-too-many", created=NOW - MINUTE)]
    assert "found 13" in flood_of(objs, hosts)


def test_the_flood_window_is_the_last_hour():
    objs = pending_serving(11, created=NOW - 59 * MINUTE)
    assert flood_of(objs, ["worker-1"]) is not None
    assert flood_of(objs, ["worker-1"], now=NOW + 2 * MINUTE) is None
