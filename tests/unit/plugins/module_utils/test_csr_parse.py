# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Reading CSR objects: parse_csr never raises and reads what the checks look at."""

import base64
import datetime

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import PENDING, parse_csr
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import csr_factory as f
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.csr_factory import (
    client_csr,
    serving_csr,
)

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
    parsed = parse_csr(garbage)
    assert parsed.error is not None
    assert parsed.error.reason in ("bad-object", "bad-request")
    assert parsed.host is None


def test_parse_csr_reads_fields():
    key = f.make_key()
    parsed = parse_csr(serving_csr("worker-0", key=key, ips=["127.0.111.20"], dns=["worker-0"]))
    assert parsed.error is None
    assert parsed.host == "worker-0"
    assert parsed.key_type == "ECDSA P-256"
    assert parsed.signature_valid
    assert parsed.dns_sans == ["worker-0"]
    assert [str(ip) for ip in parsed.ip_sans] == ["127.0.111.20"]
    assert parsed.organizations == ["system:nodes"]
    assert parsed.state == PENDING


@pytest.mark.parametrize(
    "kind, described",
    [("p256", "ECDSA P-256"), ("p384", "ECDSA P-384"), ("rsa2048", "RSA 2048"), ("ed25519", "Ed25519")],
)
def test_key_types_are_described(kind, described):
    assert parse_csr(client_csr("worker-0", key=f.make_key(kind))).key_type == described


def test_fractional_and_offset_timestamps_are_read():
    obj = client_csr("worker-0")
    obj["metadata"]["creationTimestamp"] = "2024-05-01T13:55:00.123456789+02:00"
    parsed = parse_csr(obj)
    assert parsed.created == datetime.datetime(2024, 5, 1, 11, 55, 0, 123456, tzinfo=datetime.timezone.utc)
    assert parsed.created_text == "2024-05-01T11:55:00Z"


def test_ip_sans_are_addresses_compared_by_value():
    parsed = parse_csr(serving_csr("worker-0", ips=["fd00:0::20", "127.0.111.20"]))
    assert [str(ip) for ip in parsed.ip_sans] == ["fd00::20", "127.0.111.20"]
    assert parsed.all_sans == ["fd00::20", "127.0.111.20"]
