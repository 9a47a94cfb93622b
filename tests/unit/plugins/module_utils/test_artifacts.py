# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reuse decision of ISO and PXE artifacts, read from their sidecars."""

import datetime
import json
import os

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import artifacts as art

NOW = datetime.datetime(2025, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
DAY = 24 * 3600


def _expiry_in(hours):
    return (NOW + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


FORTY_HOURS = _expiry_in(40)


def _record(paths, digest="d1", token_expiry=FORTY_HOURS):
    files = [{"path": path, "sha256": art.file_sha256(path), "size": os.path.getsize(path)} for path in paths]
    return {"inputs_digest": digest, "files": files, "token_expiry": token_expiry}


@pytest.fixture
def iso(tmp_path):
    path = tmp_path / "node.x86_64.iso"
    path.write_bytes(b"iso" * 1000)
    art.write_sidecar(str(path), _record([str(path)]))
    return str(path)


@pytest.fixture
def pxe(tmp_path):
    directory = tmp_path / "boot-artifacts" / "x86_64"
    directory.mkdir(parents=True)
    for name in ("node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz", "node.x86_64.ipxe"):
        (directory / name).write_bytes(name.encode() * 100)
    art.write_sidecar(str(directory), _record(sorted(str(p) for p in directory.iterdir())))
    return str(directory)


def test_digest_is_canonical():
    assert art.inputs_digest({"a": 1, "b": [1, 2]}) == art.inputs_digest({"b": [1, 2], "a": 1})
    assert art.inputs_digest({"a": 1}) != art.inputs_digest({"a": 2})


def test_sidecar_round_trip_and_versioning(iso):
    record = art.read_sidecar(iso)
    assert record["inputs_digest"] == "d1" and record["version"] == art.SIDECAR_VERSION == 2
    for other in ({"inputs_digest": "d1", "version": 99}, {"inputs_digest": "d1", "version": 1, "sha256": "x"}):
        with open(iso + ".json", "w") as handle:
            json.dump(other, handle)
        assert art.read_sidecar(iso) is None
    with open(iso + ".json", "w") as handle:
        handle.write("{broken")
    assert art.read_sidecar(iso) is None
    assert [n for n in os.listdir(os.path.dirname(iso)) if n.endswith(".tmp")] == []


def test_the_sidecar_of_a_directory_sits_beside_it(pxe):
    assert art.sidecar_path(pxe) == pxe + ".json" == art.sidecar_path(pxe + os.sep)
    assert os.path.isfile(pxe + ".json")


@pytest.mark.parametrize("artifact", ["iso", "pxe"])
def test_reused_when_inputs_files_and_token_are_good(artifact, request):
    path = request.getfixturevalue(artifact)
    reuse, reason = art.reuse_decision(path, "d1", NOW, DAY)
    assert reuse and "token valid until 2025-05-03T04:00:00+00:00" in reason


def _change(path, change):
    """Break one thing of the artifact at ``path``; return the digest to ask with."""
    record = art.read_sidecar(path)
    victim = record["files"][-1]["path"]
    if change == "digest":
        return "d2"
    if change == "modified":
        with open(victim, "r+b") as handle:
            handle.write(b"X")
    elif change == "no_sidecar":
        os.unlink(art.sidecar_path(path))
    elif change == "missing":
        os.unlink(victim)
    elif change in ("short_token", "unknown_token", "no_files"):
        if change == "no_files":
            record["files"] = []
        else:
            record["token_expiry"] = _expiry_in(23) if change == "short_token" else "soon"
        art.write_sidecar(path, record)
    return "d1"


@pytest.mark.parametrize("artifact", ["iso", "pxe"])
@pytest.mark.parametrize(
    "change,expected",
    [
        ("digest", "the inputs changed"),
        ("modified", "modified or damaged"),
        ("no_sidecar", "no readable sidecar"),
        ("missing", "does not exist"),
        ("short_token", "less than min_token_validity (24h00m)"),
        ("unknown_token", "expiry of"),
        ("no_files", "records no files"),
    ],
)
def test_rebuilt_when_something_is_wrong(artifact, change, expected, request):
    path = request.getfixturevalue(artifact)
    digest = _change(path, change)
    reuse, reason = art.reuse_decision(path, digest, NOW, DAY)
    assert not reuse and expected in reason


def test_an_artifact_never_built_does_not_exist(tmp_path):
    reuse, reason = art.reuse_decision(str(tmp_path / "node.x86_64.iso"), "d1", NOW, DAY)
    assert not reuse and reason.endswith("node.x86_64.iso does not exist")


def test_the_artifacts_own_earlier_expiry_decides(iso):
    """A sidecar holding the fresh 48 h a 4.17 node-joiner wrote beside a reused token: the token's exp decides."""
    reuse, reason = art.reuse_decision(iso, "d1", NOW, DAY, lambda path: _expiry_in(23))
    assert not reuse
    assert "expires at 2025-05-02T11:00:00+00:00 (read from the artifact itself; the sidecar recorded " in reason
    assert "less than min_token_validity (24h00m)" in reason
    reuse, reason = art.reuse_decision(iso, "d1", NOW, DAY, lambda path: _expiry_in(30))
    assert reuse and "token valid until 2025-05-02T18:00:00+00:00" in reason


@pytest.mark.parametrize("own", [lambda path: _expiry_in(60), lambda path: None, lambda path: "garbage"])
def test_a_later_or_unreadable_own_expiry_leaves_the_recorded_one(iso, own):
    reuse, reason = art.reuse_decision(iso, "d1", NOW, DAY, own)
    assert reuse and "token valid until 2025-05-03T04:00:00+00:00" in reason


def test_an_unreadable_artifact_leaves_the_recorded_expiry(iso):
    def broken(path):
        raise art.IsoError(f"{path} is not an ISO")

    assert art.reuse_decision(iso, "d1", NOW, DAY, broken)[0]
