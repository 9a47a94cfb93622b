"""labctl start/stop: files written, speed, nothing left running, every variant starts."""

from __future__ import annotations

import base64
import json
import os

import pytest
import requests
import yaml
from conftest import Lab, labctl
from lab import seeds


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _group_members(pgid: int) -> list:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[2] == str(pgid) and fields[0] != "Z":
                members.append(int(entry))
    return members


def test_start_writes_the_contract_files_and_stop_leaves_nothing_running(tmp_path):
    state = str(tmp_path / "state")
    printed = json.loads(labctl("start", "--state", state, "--hosts", "2").stdout)
    try:
        lab = Lab(state)
        assert printed == lab.info
        assert set(lab.info) >= {"api_url", "control_url", "pids", "variant", "hosts", "state_dir"}
        assert lab.info["api_url"].startswith("https://127.0.0.1:") and lab.info["state_dir"] == state
        assert lab.info["variant"] == "default"
        daemon = lab.info["pids"][0]
        assert _alive(daemon)

        with open(os.path.join(state, "kubeconfig"), encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        cluster = config["clusters"][0]["cluster"]
        assert cluster["server"] == lab.api_url
        with open(os.path.join(state, "ca.crt"), "rb") as handle:
            assert base64.b64decode(cluster["certificate-authority-data"]) == handle.read()
        assert os.stat(os.path.join(state, "kubeconfig")).st_mode & 0o077 == 0

        with open(os.path.join(state, "inventory.yml"), encoding="utf-8") as handle:
            inventory = yaml.safe_load(handle)
        group = inventory["all"]["children"]["new_workers"]
        assert group["vars"]["kubeconfig"] == os.path.join(state, "kubeconfig")
        assert group["hosts"] == {
            "extra-worker-0": {
                "ip": "127.0.111.20",
                "mac_address": "52:54:00:6f:00:14",
                "prefix_length": 24,
                "gateway": "127.0.111.1",
                "dns_servers": ["127.0.111.1"],
            },
            "extra-worker-1": {
                "ip": "127.0.111.21",
                "mac_address": "52:54:00:6f:00:15",
                "prefix_length": 24,
                "gateway": "127.0.111.1",
                "dns_servers": ["127.0.111.1"],
            },
        }
        assert [host["name"] for host in lab.info["hosts"]] == ["extra-worker-0", "extra-worker-1"]

        again = labctl("start", "--state", state, check=False)
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        labctl("stop", "--state", state)
    assert not _alive(daemon)
    assert _group_members(daemon) == []
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(lab.api_url + "/version", verify=lab.ca, timeout=2)
    assert labctl("stop", "--state", state).returncode == 0, "stop is idempotent"


def test_zero_hosts_and_a_fixed_port(tmp_path):
    state = str(tmp_path / "state")
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    labctl("start", "--state", state, "--hosts", "0", "--api-port", str(port))
    try:
        lab = Lab(state)
        assert lab.api_url == f"https://127.0.0.1:{port}"
        assert lab.info["hosts"] == []
        with open(os.path.join(state, "inventory.yml"), encoding="utf-8") as handle:
            assert yaml.safe_load(handle)["all"]["children"]["new_workers"]["hosts"] == {}
    finally:
        labctl("stop", "--state", state)


def test_a_lab_that_cannot_start_reports_its_log(tmp_path):
    state = str(tmp_path / "state")
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = labctl("start", "--state", state, "--api-port", str(busy.getsockname()[1]), check=False)
    assert result.returncode == 1
    assert "exited with code" in result.stderr and "address already in use" in result.stderr.lower()


def test_commands_without_a_lab_fail_cleanly(tmp_path):
    result = labctl("dump", "--state", str(tmp_path), check=False)
    assert result.returncode == 1 and "no lab" in result.stderr
    assert labctl("stop", "--state", str(tmp_path)).returncode == 0


@pytest.mark.parametrize("variant", seeds.variants())
def test_every_variant_starts_and_serves_its_seed(tmp_path, variant):
    state = str(tmp_path / variant)
    labctl("start", "--state", state, "--variant", variant, "--hosts", "1")
    try:
        lab = Lab(state)
        assert lab.info["variant"] == variant
        expected = seeds.find(seeds.load_seed(variant), "ClusterVersion", "version")
        served = lab.api("GET", "/apis/config.openshift.io/v1/clusterversions/version").json()
        assert served["status"]["desired"] == expected["status"]["desired"]
        infra = seeds.find(seeds.load_seed(variant), "Infrastructure", "cluster")
        served = lab.api("GET", "/apis/config.openshift.io/v1/infrastructures/cluster").json()
        assert served["spec"]["platformSpec"] == infra["spec"]["platformSpec"]
        assert lab.api("GET", "/version").status_code == 200
    finally:
        labctl("stop", "--state", state)
