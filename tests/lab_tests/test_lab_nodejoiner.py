"""The simulated node-joiner run, its Ignition config and its ES256 tokens."""

import asyncio
import base64
import datetime
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lab"))

from lab import ignition as ign  # noqa: E402
from lab import iso  # noqa: E402
from lab import jwt  # noqa: E402
from lab import nodejoiner  # noqa: E402

NOW = 1_800_000_000
HOUR = 3600
MAC0 = "00:02:46:e3:9e:7c"
MAC1 = "00:02:46:e3:9e:7d"

CLUSTER = {
    "cluster_id": "5f9e0d3a-6a49-4c4e-9b0e-2f1d2c3b4a59",
    "name": "lab",
    "base_domain": "example.com",
    "api_dns_name": "api.lab.example.com",
    "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeClusterKey cluster@lab",
    "mirrors": [{"source": "quay.io/openshift-release-dev/ocp-release",
                 "mirrors": ["registry.lab.example.com:5000/ocp/release"]}],
    "pull_secret_json": '{"auths":{"registry.lab.example.com:5000":{"auth":"dXNlcjpwYXNz"}}}',
    "version": "4.18.3",
    "release_image": "quay.io/openshift-release-dev/ocp-release@sha256:" + "ab" * 32,
    "architecture": "amd64",
}


def host(name, mac, ip, iface="eth0", **extra):
    entry = {
        "hostname": name,
        "role": "worker",
        "rootDeviceHints": {"deviceName": "/dev/sda"},
        "interfaces": [{"name": iface, "macAddress": mac}],
        "networkConfig": {
            "interfaces": [{"name": iface, "type": "ethernet", "state": "up", "mac-address": mac,
                            "ipv4": {"enabled": True, "dhcp": False,
                                     "address": [{"ip": ip, "prefix-length": 24}]}}],
            "dns-resolver": {"config": {"server": ["127.0.111.1"]}},
            "routes": {"config": [{"destination": "0.0.0.0/0", "next-hop-address": "127.0.111.1",
                                   "next-hop-interface": iface, "table-id": 254}]},
        },
    }
    entry.update(extra)
    return entry


def nodes_config(*hosts, **top):
    config = {"hosts": list(hosts) or [host("extra-worker-0", MAC0, "127.0.111.20")]}
    config.update(top)
    return config


# --------------------------------------------------------------------------- JWT


def test_jwt_round_trip():
    key = jwt.new_key()
    token = jwt.mint(key, "infra-1", NOW + HOUR)
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "ES256", "typ": "JWT"}
    assert len(base64.urlsafe_b64decode(token.split(".")[2] + "==")) == 64
    claims = jwt.verify(token, jwt.public_pem(key), now=NOW)
    assert claims == {"infra_env_id": "infra-1", "exp": NOW + HOUR}


def test_jwt_public_pem_label_and_standard_label_accepted():
    key = jwt.new_key()
    pem = jwt.public_pem(key)
    assert pem.startswith("-----BEGIN EC PUBLIC KEY-----\n")
    standard = pem.replace("EC PUBLIC KEY", "PUBLIC KEY")
    token = jwt.mint(key, "x", NOW + 10)
    assert jwt.verify(token, standard, now=NOW)["infra_env_id"] == "x"


def test_jwt_expired():
    key = jwt.new_key()
    token = jwt.mint(key, "x", NOW)
    with pytest.raises(jwt.TokenError, match="expired"):
        jwt.verify(token, jwt.public_pem(key), now=NOW)


def test_jwt_tampered_claims_rejected():
    key = jwt.new_key()
    header, _claims, signature = jwt.mint(key, "x", NOW + HOUR).split(".")
    forged = base64.urlsafe_b64encode(b'{"infra_env_id":"x","exp":9999999999}').rstrip(b"=").decode()
    with pytest.raises(jwt.TokenError, match="signature is invalid"):
        jwt.verify("%s.%s.%s" % (header, forged, signature), jwt.public_pem(key), now=NOW)


def test_jwt_other_key_rejected():
    token = jwt.mint(jwt.new_key(), "x", NOW + HOUR)
    with pytest.raises(jwt.TokenError, match="signature is invalid"):
        jwt.verify(token, jwt.public_pem(jwt.new_key()), now=NOW)


@pytest.mark.parametrize("token, message", [
    ("abc", "3 dot-separated"),
    ("e30.e30.AAAA", "unexpected signing method"),
])
def test_jwt_malformed(token, message):
    with pytest.raises(jwt.TokenError, match=message):
        jwt.verify(token, jwt.public_pem(jwt.new_key()), now=NOW)


# --------------------------------------------------------------------------- Ignition


def validate_with_ignition_validate(config, tmp_path):
    path = tmp_path / "config.ign"
    path.write_text(json.dumps(config))
    return subprocess.run(["ignition-validate", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)


def test_add_nodes_ignition_is_valid(tmp_path):
    config = ign.build_add_nodes_ignition(
        CLUSTER, nodes_config(host("w0", MAC0, "127.0.111.20"), host("w1", MAC1, "127.0.111.21", "ens3")),
        "TOKEN", "2027-01-15T08:00:00Z", "infra-1", "UFVCS0VZ")
    proc = validate_with_ignition_validate(config, tmp_path)
    assert proc.returncode == 0, proc.stdout.decode()
    assert config["ignition"]["version"] == "3.2.0"


def test_ignition_validate_catches_a_broken_config(tmp_path):
    config = ign.build_add_nodes_ignition(CLUSTER, nodes_config(), "T", "2027-01-15T08:00:00Z")
    config["storage"]["files"][0]["path"] = "relative/path"
    assert validate_with_ignition_validate(config, tmp_path).returncode != 0


def test_add_nodes_ignition_files():
    config = ign.build_add_nodes_ignition(
        CLUSTER, nodes_config(host("w0", MAC0.upper(), "127.0.111.20"), host("w1", MAC1, "127.0.111.21", "ens3")),
        "TOKEN", "2027-01-15T08:00:00Z", "infra-1", "UFVCS0VZ")
    files = ign.files_by_path(config)
    assert ign.read_env_file(files["/etc/assisted/add-nodes.env"]) == {
        "CLUSTER_ID": CLUSTER["cluster_id"], "CLUSTER_NAME": "lab",
        "CLUSTER_API_VIP_DNS_NAME": "api.lab.example.com", "AUTH_TOKEN_EXPIRY": "2027-01-15T08:00:00Z"}
    rendezvous = ign.read_env_file(files["/etc/assisted/rendezvous-host.env"])
    assert rendezvous["NODE_ZERO_IP"] == "127.0.0.1"
    assert rendezvous["SERVICE_BASE_URL"] == "http://127.0.0.1:8090/"
    assert rendezvous["WORKFLOW_TYPE"] == "addnodes"
    assert rendezvous["PULL_SECRET_TOKEN"] == "TOKEN"
    service = ign.read_env_file(files["/usr/local/share/assisted-service/assisted-service.env"])
    assert service["EC_PUBLIC_KEY_PEM"] == "UFVCS0VZ" and service["INFRA_ENV_ID"] == "infra-1"
    assert files["/etc/assisted/network/host0/mac_interface.ini"] == b"00:02:46:e3:9e:7c=eth0\n"
    assert files["/etc/assisted/network/host1/mac_interface.ini"] == b"00:02:46:e3:9e:7d=ens3\n"
    keyfile = files["/etc/assisted/network/host1/ens3.nmconnection"].decode()
    assert "interface-name=ens3" in keyfile
    assert "address1=127.0.111.21/24,127.0.111.1" in keyfile and "dns=127.0.111.1;" in keyfile
    assert files["/etc/assisted/hostnames/00:02:46:e3:9e:7c"] == b"w0"
    assert files["/root/.docker/config.json"].decode() == CLUSTER["pull_secret_json"]
    registries = files["/etc/containers/registries.conf"].decode()
    assert 'location = "registry.lab.example.com:5000/ocp/release"' in registries
    assert files["/usr/local/bin/add-node.sh"].startswith(b"#!/bin/bash")
    modes = {f["path"]: f["mode"] for f in config["storage"]["files"]}
    assert modes["/usr/local/bin/add-node.sh"] == 0o755 and modes["/root/.docker/config.json"] == 0o600
    assert config["passwd"]["users"] == [{"name": "core", "sshAuthorizedKeys": [CLUSTER["ssh_key"]]}]


def test_nodes_config_ssh_key_wins_and_no_mirrors_no_registries_conf():
    cluster = dict(CLUSTER, mirrors=[])
    config = ign.build_add_nodes_ignition(cluster, nodes_config(sshKey="ssh-ed25519 AAAA other"), "T", "E")
    assert config["passwd"]["users"][0]["sshAuthorizedKeys"] == ["ssh-ed25519 AAAA other"]
    assert "/etc/containers/registries.conf" not in ign.files_by_path(config)


# --------------------------------------------------------------------------- node-joiner


class FakeSecrets:
    """The two secret callables, recording every write."""

    def __init__(self, secret=None):
        self.secret = secret
        self.puts = []

    def get(self, namespace, name):
        assert (namespace, name) == ("openshift-config", "agent-auth-token")
        return self.secret

    def put(self, secret):
        self.puts.append(json.loads(json.dumps(secret)))
        self.secret = dict(secret, metadata=dict(secret["metadata"], resourceVersion=str(len(self.puts))))


@pytest.fixture(scope="module")
def iso_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("njcache"))


def make_run(tmp_path, iso_cache, config=None, secrets=None, raw_yaml=None, **options):
    assets = tmp_path / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    text = raw_yaml if raw_yaml is not None else yaml.safe_dump(config or nodes_config())
    (assets / "nodes-config.yaml").write_text(text)
    secrets = secrets or FakeSecrets()
    options.setdefault("clock", lambda: NOW)
    run = nodejoiner.NodeJoinerRun(str(assets), dict(CLUSTER), secrets.get, secrets.put,
                                   lambda arch: iso.build_base_iso(iso_cache, 8 * 1024 * 1024, arch), options)
    return run, assets, secrets


def read_report(assets):
    return json.loads((assets / "report.json").read_text())


def parse_time(text):
    return datetime.datetime.strptime(re.sub(r"\.\d+Z$", "Z", text), "%Y-%m-%dT%H:%M:%SZ")


def test_successful_iso_run(tmp_path, iso_cache):
    run, assets, secrets = make_run(tmp_path, iso_cache, clock=None)
    assert asyncio.run(run.run(pxe=False)) == 0
    assert (assets / "exit_code").read_text() == "0"
    report = read_report(assets)
    assert list(report) == ["id", "start_time", "end_time", "stages", "result"]
    assert re.match(r"^report-addnodes-\d{12}$", report["id"])
    assert report["result"] == {"exit_code": 0}
    assert [s["id"] for s in report["stages"]] == [
        "add-nodes-cluster-inspection", "create-manifest", "ignition", "fetch-base-iso",
        "create-agent-artifacts", "generate-iso"]
    by_id = {s["id"]: s for s in report["stages"]}
    assert [s["id"] for s in by_id["fetch-base-iso"]["sub_stages"]] == [
        "fetch-base-iso.extract-image", "fetch-base-iso.verify-version"]
    assert [s["id"] for s in by_id["create-agent-artifacts"]["sub_stages"]] == [
        "create-agent-artifacts.agent-tui", "create-agent-artifacts.prepare"]
    inspection = json.loads(by_id["add-nodes-cluster-inspection"]["result"])
    assert inspection["Version"] == "4.18.3" and inspection["Architecture"] == "x86_64"
    for stage in report["stages"] + by_id["fetch-base-iso"]["sub_stages"]:
        assert stage["description"]
        assert parse_time(stage["start_time"]) <= parse_time(stage["end_time"])
    assert report["start_time"] == report["stages"][0]["start_time"]
    assert report["end_time"] == report["stages"][-1]["end_time"]

    config = iso.read_embedded_ignition(str(assets / "node.x86_64.iso"))
    files = ign.files_by_path(config)
    assert ign.read_env_file(files["/etc/assisted/add-nodes.env"])["CLUSTER_ID"] == CLUSTER["cluster_id"]
    assert files["/etc/assisted/network/host0/mac_interface.ini"] == ("%s=eth0\n" % MAC0).encode()

    # The Secret: created once, token verifiable with its public key, 48 h lifetime.
    assert len(secrets.puts) == 1
    secret = secrets.puts[0]
    assert secret["metadata"]["annotations"] == {"updatedAt": ""}
    token = base64.b64decode(secret["data"]["agentAuthToken"]).decode()
    public_pem = base64.b64decode(base64.b64decode(secret["data"]["authTokenPublicKey"])).decode()
    claims = jwt.verify(token, public_pem)
    assert 47 * HOUR < claims["exp"] - parse_time(report["start_time"]).replace(
        tzinfo=datetime.timezone.utc).timestamp() <= 48 * HOUR
    rendezvous = ign.read_env_file(files["/etc/assisted/rendezvous-host.env"])
    assert rendezvous["PULL_SECRET_TOKEN"] == token
    expiry = ign.read_env_file(files["/etc/assisted/add-nodes.env"])["AUTH_TOKEN_EXPIRY"]
    assert parse_time(expiry).replace(tzinfo=datetime.timezone.utc).timestamp() == claims["exp"]


def test_ignition_of_a_run_passes_ignition_validate(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache)
    assert asyncio.run(run.run()) == 0
    config = iso.read_embedded_ignition(str(assets / "node.x86_64.iso"))
    proc = validate_with_ignition_validate(config, tmp_path)
    assert proc.returncode == 0, proc.stdout.decode()


def test_report_is_written_stage_by_stage(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, stage_delay=0.05)
    seen = []

    async def scenario():
        task = asyncio.ensure_future(run.run())
        while not task.done():
            if (assets / "report.json").exists():
                seen.append(read_report(assets))
            await asyncio.sleep(0.01)
        return await task

    assert asyncio.run(scenario()) == 0
    partial = [r for r in seen if r["result"] is None]
    assert partial, "no report seen while running"
    assert len({len(r.get("stages", [])) for r in partial}) > 2
    # An unfinished stage carries Go's zero time.
    assert any(r["stages"][-1]["end_time"] == "0001-01-01T00:00:00Z" for r in partial if r.get("stages"))


def test_token_reused_when_more_than_24h_left(tmp_path, iso_cache):
    first, _assets, secrets = make_run(tmp_path / "a", iso_cache)
    assert asyncio.run(first.run()) == 0
    token = first.token
    second, assets, _secrets = make_run(tmp_path / "b", iso_cache, secrets=secrets, clock=lambda: NOW + 23 * HOUR)
    assert asyncio.run(second.run()) == 0
    assert second.token == token and len(secrets.puts) == 1
    config = iso.read_embedded_ignition(str(assets / "node.x86_64.iso"))
    assert ign.read_env_file(ign.files_by_path(config)["/etc/assisted/rendezvous-host.env"])[
        "PULL_SECRET_TOKEN"] == token
    assert "Reusing existing auth token" in second.log_text()


def test_token_refreshed_when_less_than_24h_left(tmp_path, iso_cache):
    first, _assets, secrets = make_run(tmp_path / "a", iso_cache)
    assert asyncio.run(first.run()) == 0
    second, _assets, _secrets = make_run(tmp_path / "b", iso_cache, secrets=secrets, clock=lambda: NOW + 25 * HOUR)
    assert asyncio.run(second.run()) == 0
    assert second.token != first.token and len(secrets.puts) == 2
    updated = secrets.puts[1]
    assert updated["metadata"]["resourceVersion"] == "1", "an update must carry the resourceVersion it read"
    assert updated["metadata"]["annotations"]["updatedAt"] == nodejoiner.rfc3339(NOW + 25 * HOUR)
    public_pem = base64.b64decode(base64.b64decode(updated["data"]["authTokenPublicKey"])).decode()
    assert jwt.verify(second.token, public_pem, now=NOW + 25 * HOUR)["exp"] == NOW + 73 * HOUR
    with pytest.raises(jwt.TokenError):
        jwt.verify(first.token, public_pem, now=NOW)


def test_async_secret_callables_and_failing_put(tmp_path, iso_cache):
    async def get(namespace, name):
        return None

    async def put(secret):
        raise RuntimeError('secrets is forbidden: User "system:serviceaccount:x:node-joiner" cannot create')

    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "nodes-config.yaml").write_text(yaml.safe_dump(nodes_config()))
    run = nodejoiner.NodeJoinerRun(str(assets), CLUSTER, get, put, lambda arch: None, {"clock": lambda: NOW})
    assert asyncio.run(run.run()) == 1
    result = read_report(assets)["result"]
    assert result["error_message"].startswith("failed to create auth token secret: secrets is forbidden")
    assert read_report(assets)["stages"][-1]["id"] == "ignition"


INVALID_CONFIGS = [
    ({"hosts": []}, "hosts: Required value: at least one host must be defined"),
    (nodes_config(host("w0", "zz:02:46:e3:9e:7c", "127.0.111.20")),
     'Hosts[0].Interfaces[0].macAddress: Invalid value: "zz:02:46:e3:9e:7c": address zz:02:46:e3:9e:7c: '
     'invalid MAC address'),
    (nodes_config(host("w0", MAC0, "127.0.111.20"), host("w1", MAC0, "127.0.111.21")),
     'Hosts[1].Interfaces[0].macAddress: Invalid value: "00:02:46:e3:9e:7c": duplicate MAC address found'),
    (nodes_config(host("w0", MAC0, "127.0.111.20", rootDeviceHints={"wwnWithExtension": "0x5000"})),
     "Hosts[0].rootDeviceHints.wwnWithExtension: Forbidden: WWN extensions are not supported"),
    (nodes_config(host("w0", MAC0, "127.0.111.20", rootDeviceHints={"wwnVendorExtension": "0x1"})),
     "Hosts[0].rootDeviceHints.wwnVendorExtension: Forbidden: WWN vendor extensions are not supported"),
    (nodes_config(host("w0", MAC0, "127.0.111.20", rootDeviceHints={"disk": "/dev/sda"})),
     'Hosts[0].rootDeviceHints: Unsupported value: "disk"'),
    (nodes_config(host("w0", MAC0, "127.0.111.20", rootDeviceHints={"deviceName": "sda"})),
     'Hosts[0].rootDeviceHints.deviceName: Invalid value: "sda": device name of root device hint must be path'),
    (nodes_config(host("w0", MAC0, "127.0.111.20", role="bootstrap")),
     "Hosts[0].Host: Forbidden: host role has incorrect value"),
    (nodes_config(host("w0", MAC0, "127.0.111.20", interfaces=[])),
     "Hosts[0].Interfaces: Required value: at least one interface must be defined for each node"),
    (nodes_config(host("w0", MAC0, "127.0.111.20", interfaces=[{"name": "eth1", "macAddress": MAC0}])),
     "mac-interface mapping for interface eth0 is missing"),
    (nodes_config(host("Bad_Name", MAC0, "127.0.111.20")), 'Hosts[0].Hostname: Invalid value: "Bad_Name"'),
    (nodes_config(cpuArchitecture="sparc"), 'cpuArchitecture: Unsupported value: "sparc"'),
    (nodes_config(cpuArchitecture="aarch64"), "requires a multi-architecture release payload"),
]


@pytest.mark.parametrize("config, message", INVALID_CONFIGS)
def test_invalid_nodes_config_fails_at_create_manifest(tmp_path, iso_cache, config, message):
    run, assets, secrets = make_run(tmp_path, iso_cache, config=config)
    assert asyncio.run(run.run()) == 1
    assert (assets / "exit_code").read_text() == "1"
    report = read_report(assets)
    assert report["stages"][-1]["id"] == "create-manifest"
    assert message in report["result"]["error_message"]
    assert report["result"]["detailed_error_message"].startswith("failed to fetch Agent Installer ISO: ")
    assert report["result"]["detailed_error_message"].endswith(report["result"]["error_message"])
    assert not list(assets.glob("*.iso")) and not secrets.puts
    assert "level=fatal" in run.log[-1]
    assert message in json.loads(run.log[-1].split(" msg=", 1)[1])


def test_several_errors_are_aggregated(tmp_path, iso_cache):
    config = nodes_config(host("w0", "bad", "127.0.111.20", rootDeviceHints={"wwnWithExtension": "x"}))
    run, assets, _secrets = make_run(tmp_path, iso_cache, config=config)
    assert asyncio.run(run.run()) == 1
    message = read_report(assets)["result"]["error_message"]
    assert message.startswith("[") and message.endswith("]") and message.count("Hosts[0]") == 2
    assert "invalid Hosts configuration: [" in read_report(assets)["result"]["detailed_error_message"]


def test_unparsable_yaml(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, raw_yaml="hosts: [unclosed")
    assert asyncio.run(run.run()) == 1
    assert "failed to unmarshal nodes-config.yaml" in read_report(assets)["result"]["detailed_error_message"]


def test_bad_host_config_switch(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, bad_host_config="nmstatectl gc failed: boom")
    assert asyncio.run(run.run()) == 1
    report = read_report(assets)
    assert report["stages"][-1]["id"] == "create-manifest"
    assert report["result"]["error_message"] == "nmstatectl gc failed: boom"
    run2, assets2, _secrets = make_run(tmp_path / "default", iso_cache, bad_host_config=True)
    assert asyncio.run(run2.run()) == 1
    assert "nmstatectl gc failed" in read_report(assets2)["result"]["error_message"]


def test_base_iso_download_failure_switch(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, base_iso_download_failure=True)
    assert asyncio.run(run.run()) == 1
    report = read_report(assets)
    last = report["stages"][-1]
    assert last["id"] == "fetch-base-iso"
    assert [s["id"] for s in last["sub_stages"]] == [
        "fetch-base-iso.extract-image", "fetch-base-iso.download-image"]
    assert report["result"]["error_message"].endswith("no such host")
    assert "level=warning" in run.log_text()
    assert not list(assets.glob("*.iso"))


def test_timeout_switch_never_finishes(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, timeout=True)

    async def scenario():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(run.run(), 0.5)

    asyncio.run(scenario())
    report = read_report(assets)
    assert report["result"] is None
    assert report["stages"][-1]["sub_stages"][-1]["id"] == "fetch-base-iso.extract-image"
    assert not (assets / "exit_code").exists()


def test_version_417_writes_only_exit_code(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, version="4.17")
    assert asyncio.run(run.run()) == 0
    assert not (assets / "report.json").exists()
    assert (assets / "exit_code").read_text() == "0"
    assert (assets / "node.x86_64.iso").exists()


def test_pxe_run(tmp_path, iso_cache):
    config = nodes_config(bootArtifactsBaseURL="http://127.0.0.1:8088/boot")
    run, assets, _secrets = make_run(tmp_path, iso_cache, config=config)
    assert asyncio.run(run.run(pxe=True)) == 0
    assert read_report(assets)["stages"][-1]["id"] == "generate-pxe"
    names = sorted(os.listdir(str(assets / "boot-artifacts")))
    assert names == ["agent.x86_64-initrd.img", "agent.x86_64-rootfs.img", "agent.x86_64-vmlinuz",
                     "agent.x86_64.ipxe"]
    assert "http://127.0.0.1:8088/boot/agent.x86_64-vmlinuz" in (assets / "boot-artifacts" / names[3]).read_text()
    assert not list(assets.glob("*.iso"))


def test_log_lines_look_like_logrus(tmp_path, iso_cache):
    lines = []
    run, _assets, _secrets = make_run(tmp_path, iso_cache, on_log=lines.append)
    assert asyncio.run(run.run()) == 0
    assert lines == run.log and len(lines) > 5
    pattern = re.compile(r'^time="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ" level=(debug|info|warning|error|fatal) msg=".*"$')
    assert all(pattern.match(line) for line in lines), lines
    assert run.log_text().endswith("Generated ISO at /assets/node.x86_64.iso\"\n")
