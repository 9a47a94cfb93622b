"""iso_info against ISOs the lab's node-joiner builds (labctl build-iso), for every release profile 4.17 to 4.21."""

import json
from datetime import datetime, timezone

import pytest
import yaml
from conftest import labctl, run_module

MODULE = "openshift_agent.day2.iso_info"
PROFILES = ["v417", "v418", "v419", "v420", "v421"]


def lab_facts(lab):
    objects = lab.dump()["objects"]
    version = next(o for o in objects if o["kind"] == "ClusterVersion")
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)["all"]["children"]["new_workers"]["hosts"]
    return version["spec"]["clusterID"], version["status"]["desired"]["version"], inventory


def build_iso(lab, out, *args):
    labctl("build-iso", "--state", str(lab.state), "--out", str(out), *args)
    return out


def iso_info(path, **options):
    result, output = run_module(MODULE, dict(options, path=str(path)))
    return result, output


@pytest.mark.parametrize("profile", PROFILES)
def test_reads_the_node_iso_of_every_release(lab_factory, tmp_path, profile):
    lab = lab_factory("--variant", profile, "--hosts", "2")
    try:
        cluster_id, version, inventory = lab_facts(lab)
        iso = build_iso(lab, tmp_path / "node.x86_64.iso")
        result, output = iso_info(iso, min_validity="24h")
        assert not result.get("failed"), result.get("msg")
        assert result["changed"] is False and result["layout"] == "node-iso"
        assert result["cluster_id"] == cluster_id
        assert sorted(h["hostname"] for h in result["hosts"]) == sorted(inventory)
        for host in result["hosts"]:
            assert host["mac_addresses"] == [inventory[host["hostname"]]["mac_address"].lower()]
        expiry = datetime.strptime(result["token_expiry"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        assert 47 * 3600 < (expiry - datetime.now(timezone.utc)).total_seconds() <= 48 * 3600
        variable = "AGENT_AUTH_TOKEN_EXPIRY" if profile == "v417" else "AUTH_TOKEN_EXPIRY"
        assert result["token_expiry_source"] == "/etc/assisted/add-nodes.env " + variable
        assert result["valid"] is True and 47 < result["valid_for"] <= 48
        assert result["architecture"] == "x86_64"
        assert result["iso_files"] == {"igninfo": "coreos/igninfo.jso", "kargs": "coreos/kargs.jso"}
        assert result["compression"] == ["gzip"]
        if result["openshift_version"] is not None:
            assert result["openshift_version"] == version
        assert result["kernel_arguments"]
        # no secret: neither the tokens of the ISO nor the lab's pull secret marker
        assert "LAB-PULL-SECRET-MARKER" not in output and "eyJ" not in json.dumps(result)
    finally:
        labctl("stop", "--state", str(lab.state), check=False)


def test_expired_and_foreign_isos(lab_factory, tmp_path):
    lab = lab_factory("--hosts", "2")
    try:
        expired = build_iso(lab, tmp_path / "expired.iso", "--expired-token")
        result, _output = iso_info(expired)
        assert result["valid"] is False and result["valid_for"] < 0 and "token expired at" in result["message"]
        foreign = build_iso(lab, tmp_path / "foreign.iso", "--cluster-id", "00000000-0000-4000-8000-000000000001")
        result, _output = iso_info(foreign)
        assert result["cluster_id"] == "00000000-0000-4000-8000-000000000001"
        one = build_iso(lab, tmp_path / "one.iso", "extra-worker-1")
        result, _output = iso_info(one)
        assert [h["hostname"] for h in result["hosts"]] == ["extra-worker-1"]
    finally:
        labctl("stop", "--state", str(lab.state), check=False)


def test_not_an_iso_fails_naming_the_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("these are not the droids\n" * 100)
    result, _output = iso_info(path)
    assert result["failed"] is True and str(path) in result["msg"]
    assert "neither an ISO 9660 image" in result["msg"] and "node.<arch>.iso" in result["msg"]
