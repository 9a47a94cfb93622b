# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""day2_iso in check mode and with --diff, without a cluster: what it predicts, what it writes (nothing), the
nodes-config it shows (secrets redacted) against the one recorded in the sidecar."""

import json
import os

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import build
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.build import (
    file_sha256,
    token_digests,
    write_sidecar,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import (
    REDACTED,
    redacted,
    secret_values,
)
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils import test_iso_day2 as day2

PSK = "ipsec-psk-5b9e0c"
PASSWORD = "dot1x-password-7a21"
NMSTATE = {
    "interfaces": [
        {
            "name": "eth0",
            "type": "ethernet",
            "state": "up",
            "mac-address": "52:54:00:6f:00:14",
            "ipv4": {"enabled": True, "address": [{"ip": "192.168.111.20", "prefix-length": 24}]},
            "802.1x": {"identity": "worker", "password": PASSWORD, "private-key": "/etc/pki/worker.key"},
        },
        {"name": "hosta_conn", "type": "ipsec", "libreswan": {"psk": PSK, "right": "192.168.111.254"}},
    ]
}


@pytest.fixture
def connected(monkeypatch):
    api = day2.Api(day2.cluster_objects())
    monkeypatch.setattr(build, "connect", lambda module: (day2.Client(), api))
    return api


def test_a_missing_dest_is_fine_in_check_mode_only(connected, tmp_path):
    dest = tmp_path / "work"
    result = build.run(day2.Module(dest, check_mode=True))
    assert result["would_build"][0]["path"] == str(dest / "node.x86_64.iso") and not dest.exists()
    with pytest.raises(InputError, match="is not an existing directory"):
        build.run(day2.Module(dest))
    dest.write_text("a file, not a directory")
    with pytest.raises(InputError, match="is not an existing directory"):
        build.run(day2.Module(dest, check_mode=True))


def test_check_mode_writes_nothing_and_asks_nothing_but_the_reads(connected, tmp_path):
    result = build.run(day2.Module(tmp_path, check_mode=True, pxe=True))
    path = str(tmp_path / "boot-artifacts" / "x86_64")
    assert result["would_build"] == [{"architecture": "x86_64", "path": path, "reason": "%s does not exist" % path}]
    entry = result["artifacts"][0]
    assert (entry["reused"], entry["files"], entry["sidecar"], entry["stages"]) == (False, [], path + ".json", [])
    # the four objects and the three lists of what earlier runs may have left
    assert len(connected.asked) == 4 + len(day2.LEFTOVER_LISTS) and os.listdir(tmp_path) == []


def test_diff_shows_the_new_nodes_config_against_none(connected, tmp_path):
    result = build.run(day2.Module(tmp_path, check_mode=True, diff=True))
    iso = str(tmp_path / "node.x86_64.iso")
    assert result["diff"] == [
        {
            "before_header": "%s (no nodes-config recorded)" % iso,
            "after_header": "nodes-config.yaml for x86_64",
            "before": "",
            "after": result["nodes_configs"]["x86_64"],
        }
    ]
    assert "hostname: extra-worker-0" in result["diff"][0]["after"]


def test_diff_shows_the_recorded_nodes_config_as_before(connected, tmp_path):
    iso = str(tmp_path / "node.x86_64.iso")
    write_sidecar(iso, {"inputs_digest": "old", "files": [], "nodes_config": "hosts:\n- hostname: old-worker\n"})
    result = build.run(day2.Module(tmp_path, check_mode=True, diff=True))
    (diff,) = result["diff"]
    assert diff["before"] == "hosts:\n- hostname: old-worker\n" and "extra-worker-0" in diff["after"]
    assert diff["before_header"] == "%s.json (nodes-config of %s)" % (iso, iso)
    assert not os.path.exists(iso)


def test_no_diff_when_the_artifact_is_reused(connected, tmp_path):
    first = build.run(day2.Module(tmp_path, check_mode=True, pxe=True))["artifacts"][0]
    os.makedirs(first["path"])
    initrd = os.path.join(first["path"], "node.x86_64-initrd.img")
    with open(initrd, "wb") as handle:
        handle.write(b"initrd")
    files = [{"path": initrd, "sha256": file_sha256(initrd), "size": 6}]
    record = {"inputs_digest": first["inputs_digest"], "files": files, "token_expiry": "2099-01-01T00:00:00Z"}
    write_sidecar(first["path"], dict(record, token_digests=token_digests(["agent-token"])))
    connected.objects[day2.SECRET_PATH] = day2.secret_with("agent-token")
    result = build.run(day2.Module(tmp_path, check_mode=True, diff=True, pxe=True))
    assert result["changed"] is False and result["would_build"] == [] and "diff" not in result
    assert result["artifacts"][0]["reused"] is True and result["artifacts"][0]["files"] == files


def test_secrets_of_a_raw_nmstate_are_redacted_and_hidden(connected, tmp_path):
    host = {key: value for key, value in day2.HOST.items() if key not in ("ip", "prefix_length")}
    module = day2.Module(tmp_path, check_mode=True, diff=True, hosts=[dict(host, network_config=NMSTATE)])
    result = build.run(module)
    text = json.dumps(result)
    assert PSK not in text and PASSWORD not in text
    assert result["nodes_configs"]["x86_64"].count(REDACTED) == 2 and REDACTED in result["diff"][0]["after"]
    assert "/etc/pki/worker.key" in result["nodes_configs"]["x86_64"]  # a path, not a secret
    assert {PSK, PASSWORD} <= module.no_log_values


def test_redaction_keeps_the_ssh_key_and_takes_url_passwords():
    config = {
        "sshKey": "ssh-ed25519 AAAAC3Nza worker@example",
        "bootArtifactsBaseURL": "https://pxe:s3cr3t-url@boot.example.com/x86_64",
        "hosts": [{"hostname": "w0", "networkConfig": {"macsec": {"mka-cak": "50b71a8ef0bd5751ea76de6d6c98c03a"}}}],
    }
    shown = redacted(config)
    assert shown["sshKey"] == config["sshKey"]
    assert shown["bootArtifactsBaseURL"] == "https://pxe:%s@boot.example.com/x86_64" % REDACTED
    assert shown["hosts"][0]["networkConfig"]["macsec"]["mka-cak"] == REDACTED
    assert sorted(secret_values(config)) == ["50b71a8ef0bd5751ea76de6d6c98c03a", "s3cr3t-url"]
    assert config["hosts"][0]["networkConfig"]["macsec"]["mka-cak"] != REDACTED  # the input is not changed
    assert redacted({"hosts": [{"hostname": "w0"}]}) == {"hosts": [{"hostname": "w0"}]}


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://u:p@ss@proxy:3128/x", "http://u:%s@proxy:3128/x" % REDACTED),
        ("http://proxy.example.com:3128/a@b", "http://proxy.example.com:3128/a@b"),
        ("https://boot.example.com/x86_64", "https://boot.example.com/x86_64"),
        ("http://a:b@one http://c:d@two", "http://a:%s@one http://c:%s@two" % (REDACTED, REDACTED)),
    ],
)
def test_url_passwords(url, shown):
    assert redacted(url) == shown
