# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


import datetime
import json
import os

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import sidecar as art

NOW = datetime.datetime(2025, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
DAY = 24 * 3600


@pytest.fixture
def iso(tmp_path):
    path = tmp_path / "node.x86_64.iso"
    path.write_bytes(b"iso" * 1000)
    art.write_sidecar(str(path), {"inputs_digest": "d1", "sha256": art.file_sha256(str(path))})
    return str(path)


def no_expiry(_path):
    return None


def expiry_in(hours):
    return lambda _path: NOW + datetime.timedelta(hours=hours)


def test_digest_is_canonical():
    assert art.inputs_digest({"a": 1, "b": [1, 2]}) == art.inputs_digest({"b": [1, 2], "a": 1})
    assert art.inputs_digest({"a": 1}) != art.inputs_digest({"a": 2})


def test_sidecar_round_trip_and_versioning(iso):
    record = art.read_sidecar(iso)
    assert record["inputs_digest"] == "d1" and record["version"] == art.SIDECAR_VERSION
    with open(iso + ".json", "w") as handle:
        json.dump({"inputs_digest": "d1", "version": 99}, handle)
    assert art.read_sidecar(iso) is None
    with open(iso + ".json", "w") as handle:
        handle.write("{broken")
    assert art.read_sidecar(iso) is None
    assert [n for n in os.listdir(os.path.dirname(iso)) if n.endswith(".tmp")] == []


def test_reused_when_inputs_file_and_token_are_good(iso):
    reuse, reason = art.reuse_decision([iso], "d1", NOW, DAY, expiry_in(40))
    assert reuse and "token valid until" in reason


@pytest.mark.parametrize(
    "change,expected",
    [
        ("digest", "the inputs changed"),
        ("modified", "modified or damaged"),
        ("no_sidecar", "no readable sidecar"),
        ("missing", "does not exist"),
        ("short_token", "less than min_token_validity (24h00m)"),
        ("unknown_token", "expiry of"),
    ],
)
def test_rebuilt_when_something_is_wrong(iso, change, expected):
    digest, expiry = "d1", expiry_in(40)
    if change == "digest":
        digest = "d2"
    elif change == "modified":
        with open(iso, "r+b") as handle:
            handle.write(b"X")
    elif change == "no_sidecar":
        os.unlink(iso + ".json")
    elif change == "missing":
        os.unlink(iso)
    elif change == "short_token":
        expiry = expiry_in(23)
    elif change == "unknown_token":
        expiry = no_expiry
    reuse, reason = art.reuse_decision([iso], digest, NOW, DAY, expiry)
    assert not reuse and expected in reason
