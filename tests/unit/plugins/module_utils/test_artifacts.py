# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reuse decision of ISO and PXE artifacts, read from their sidecars."""

import base64
import datetime
import json
import os

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build

NOW = datetime.datetime(2025, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
DAY = 24 * 3600


def _expiry_in(hours):
    return (NOW + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


FORTY_HOURS = _expiry_in(40)


TOKENS = ["agent-token", "user-token", "watcher-token"]  # what the artifact carries


def _record(paths, digest="d1", token_expiry=FORTY_HOURS):
    files = [{"path": path, "sha256": build.file_sha256(path), "size": os.path.getsize(path)} for path in paths]
    return {
        "inputs_digest": digest,
        "files": files,
        "token_expiry": token_expiry,
        "token_digests": build.token_digests(TOKENS),
    }


@pytest.fixture
def iso(tmp_path):
    path = tmp_path / "node.x86_64.iso"
    path.write_bytes(b"iso" * 1000)
    build.write_sidecar(str(path), _record([str(path)]))
    return str(path)


@pytest.fixture
def pxe(tmp_path):
    directory = tmp_path / "boot-artifacts" / "x86_64"
    directory.mkdir(parents=True)
    for name in ("node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz", "node.x86_64.ipxe"):
        (directory / name).write_bytes(name.encode() * 100)
    build.write_sidecar(str(directory), _record(sorted(str(p) for p in directory.iterdir())))
    return str(directory)


def test_digest_is_canonical():
    assert build.inputs_digest({"a": 1, "b": [1, 2]}) == build.inputs_digest({"b": [1, 2], "a": 1})
    assert build.inputs_digest({"a": 1}) != build.inputs_digest({"a": 2})


def test_sidecar_round_trip_and_versioning(iso):
    record = build.read_sidecar(iso)
    assert record["inputs_digest"] == "d1" and record["version"] == build.SIDECAR_VERSION == 3
    assert "agent-token" not in json.dumps(record) and len(record["token_digests"]) == 3  # digests, never tokens
    for other in (
        {"inputs_digest": "d1", "version": 99},
        dict(record, version=2),
        {"inputs_digest": "d1", "version": 1},
    ):
        with open(iso + ".json", "w") as handle:
            json.dump(other, handle)
        assert build.read_sidecar(iso) is None
    with open(iso + ".json", "w") as handle:
        handle.write("{broken")
    assert build.read_sidecar(iso) is None
    assert [n for n in os.listdir(os.path.dirname(iso)) if n.endswith(".tmp")] == []


def test_the_sidecar_of_a_directory_sits_beside_it(pxe):
    assert build.sidecar_path(pxe) == pxe + ".json" == build.sidecar_path(pxe + os.sep)
    assert os.path.isfile(pxe + ".json")


@pytest.mark.parametrize("artifact", ["iso", "pxe"])
def test_reused_when_inputs_files_and_token_are_good(artifact, request):
    path = request.getfixturevalue(artifact)
    reuse, reason = build.reuse_decision(path, "d1", NOW, DAY)
    assert reuse and "token valid until 2025-05-03T04:00:00+00:00" in reason


def _change(path, change):
    """Break one thing of the artifact at ``path``; return the digest to ask with."""
    record = build.read_sidecar(path)
    victim = record["files"][-1]["path"]
    if change == "digest":
        return "d2"
    if change == "modified":
        with open(victim, "r+b") as handle:
            handle.write(b"X")
    elif change == "no_sidecar":
        os.unlink(build.sidecar_path(path))
    elif change == "missing":
        os.unlink(victim)
    elif change in ("short_token", "unknown_token", "no_files"):
        if change == "no_files":
            record["files"] = []
        else:
            record["token_expiry"] = _expiry_in(23) if change == "short_token" else "soon"
        build.write_sidecar(path, record)
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
    reuse, reason = build.reuse_decision(path, digest, NOW, DAY)
    assert not reuse and expected in reason


def test_an_artifact_never_built_does_not_exist(tmp_path):
    reuse, reason = build.reuse_decision(str(tmp_path / "node.x86_64.iso"), "d1", NOW, DAY)
    assert not reuse and reason.endswith("node.x86_64.iso does not exist")


def _secret(*tokens):
    """Secret agent-auth-token holding ``tokens`` (as node-joiner writes it, base64 under *AuthToken keys)."""
    keys = ("agentAuthToken", "userAuthToken", "watcherAuthToken")
    return {"data": {key: base64.b64encode(value.encode()).decode() for key, value in zip(keys, tokens)}}


@pytest.mark.parametrize("artifact", ["iso", "pxe"])
def test_reused_while_the_cluster_holds_the_tokens_it_carries(artifact, request):
    path = request.getfixturevalue(artifact)

    def held():
        return build.token_digests(_secret(*TOKENS))

    reuse, reason = build.reuse_decision(path, "d1", NOW, DAY, held)
    assert reuse and reason.endswith("the cluster's token valid until 2025-05-03T04:00:00+00:00")
    assert build.reuse_decision(path, "d1", NOW, DAY, lambda: build.token_digests(_secret(*TOKENS[2:])))[0]


@pytest.mark.parametrize("artifact", ["iso", "pxe"])
@pytest.mark.parametrize(
    "secret,expected",
    [
        (None, "Secret openshift-config/agent-auth-token is gone (deleted since "),
        (
            _secret("new-agent", "new-user", "new-watcher"),
            "Secret openshift-config/agent-auth-token holds other tokens",
        ),
        (_secret("agent-token", "user-token", "new-watcher"), "holds other tokens than"),
    ],
)
def test_rebuilt_when_the_secret_is_gone_or_holds_other_tokens(artifact, secret, expected, request):
    path = request.getfixturevalue(artifact)
    asked = []
    reuse, reason = build.reuse_decision(path, "d1", NOW, DAY, lambda: asked.append(1) or build.token_digests(secret))
    assert not reuse and expected in reason and path in reason and asked == [1]
    assert "new-watcher" not in reason


def test_the_secret_is_read_only_when_all_else_holds(iso):
    asked = []
    reuse, reason = build.reuse_decision(iso, "d2", NOW, DAY, lambda: asked.append(1))
    assert not reuse and "inputs changed" in reason and asked == []
