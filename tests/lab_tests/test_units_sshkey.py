"""lab.sshkey: nodes-config's sshKey checked as node-joiner checks it (golang.org/x/crypto ParseAuthorizedKey).

Valid keys come from an independent peer, OpenSSH's ssh-keygen; invalid ones from the installer's own fixtures."""

from __future__ import annotations

import base64
import subprocess

import pytest
from lab import sshkey


@pytest.fixture(scope="module")
def real_keys(tmp_path_factory):
    keys = {}
    for kind, bits in (("ed25519", None), ("ecdsa", "256"), ("ecdsa", "384"), ("ecdsa", "521"), ("rsa", "2048")):
        path = tmp_path_factory.mktemp("keys") / "id"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", kind, *(["-b", bits] if bits else []), "-N", "", "-C", "lab", "-f", str(path)],
            check=True,
        )
        keys[f"{kind}{bits or ''}"] = (path.parent / "id.pub").read_text().strip()
    return keys


def test_keys_of_ssh_keygen_are_valid_with_options_comments_and_blank_lines(real_keys):
    for key in real_keys.values():
        assert sshkey.authorized_key_error(key) is None, key
        assert sshkey.authorized_key_error(f'from="10.0.0.1",command="echo a b" {key}') is None
        assert sshkey.authorized_key_error(f"# a comment\n\n{key}\n") is None
        # the key type word is not read: the blob names the algorithm
        assert sshkey.authorized_key_error("whatever " + key.split(" ", 1)[1]) is None


@pytest.mark.parametrize(
    "text, error",
    [
        # openshift/installer pkg/asset/agent/joiner/addnodesconfig_test.go@24a06e10850970962647ac7893400f2bb843e65c
        (
            "not a valid ssh key",
            "ssh: no key found; last parsing error for ignored line: illegal base64 data at input byte 4",
        ),
        # "invalid": the first try reads "invalid" (a partial quantum at byte 4), the options try reads "key"
        (
            "some invalid key",
            "ssh: no key found; last parsing error for ignored line: illegal base64 data at input byte 0",
        ),
        ("my-sshKey", "ssh: no key found"),  # one word: the line is skipped, nothing was tried
        ("", "ssh: no key found"),
        (
            "ssh-ed25519 AAAA other",
            "ssh: no key found; last parsing error for ignored line: illegal base64 data at input byte 4",
        ),
    ],
)
def test_invalid_keys_give_gos_error(text, error):
    assert sshkey.authorized_key_error(text) == error


def test_wire_format_errors(real_keys):
    blob = base64.b64decode(real_keys["ed25519"].split()[1])

    def error(data):
        return sshkey.authorized_key_error("ssh-ed25519 " + base64.b64encode(data).decode())

    assert error(blob + b"\0").endswith("ssh: trailing junk in public key")
    assert error(blob[:-1]).endswith("ssh: short read")
    unknown = (7).to_bytes(4, "big") + b"ssh-foo" + blob[15:]
    assert error(unknown).endswith("ssh: unknown key algorithm: ssh-foo")
    short = blob[:15] + (31).to_bytes(4, "big") + blob[19:50]
    assert error(short).endswith("invalid size 31 for Ed25519 public key")


def test_go_base64_offsets():
    assert sshkey.b64_error_offset(b"QUJD") is None and sshkey.b64_error_offset(b"QUI=") is None
    assert sshkey.b64_error_offset(b"QQ==") is None and sshkey.b64_error_offset(b"QQ=") == 3  # "==" cut short
    assert sshkey.b64_error_offset(b"QUJ") == 0  # a partial quantum without padding: its first byte
    assert sshkey.b64_error_offset(b"QU*D") == 2 and sshkey.b64_error_offset(b"Q===") == 1
    assert sshkey.b64_error_offset(b"QQ==QUJD") == 4  # data after the padding
