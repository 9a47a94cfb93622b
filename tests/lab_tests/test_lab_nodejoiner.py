"""The simulated node-joiner run per OpenShift release: result files, report, the agent-auth-token Secret, log.

Failures (cluster inspection, platforms, architectures, nodes-config, faults) are in test_lab_nodejoiner_failures.py."""

import asyncio
import base64
import datetime
import json
import os
import re

import pytest
from lab import ignition as ign
from lab import iso, jwt
from nj_helpers import (
    HOUR,
    MAC0,
    NOW,
    VERSION_VARIANTS,
    execute,
    make_run,
    nodes_config,
    read_report,
)

# variant -> (report.json, Secret data keys, claim, annotations, expiry var)
EXPECTED = {
    "v417": (
        False,
        ["agentAuthToken", "authTokenPublicKey"],
        "infra_env_id",
        ["updatedAt"],
        "AGENT_AUTH_TOKEN_EXPIRY",
    ),
    **{
        v: (
            True,
            ["agentAuthToken", "authTokenPublicKey", "userAuthToken", "watcherAuthToken"],
            "auth_scheme",
            ["expiresAt", "updatedAt"],
            "AUTH_TOKEN_EXPIRY",
        )
        for v in VERSION_VARIANTS[1:]
    },
}


def parse_time(text):
    return (
        datetime.datetime.strptime(re.sub(r"\.\d+Z$", "Z", text), "%Y-%m-%dT%H:%M:%SZ")
        .replace(tzinfo=datetime.timezone.utc)
        .timestamp()
    )


@pytest.mark.parametrize("variant", VERSION_VARIANTS)
def test_iso_run_per_release(tmp_path, iso_cache, variant):
    report, keys, claim, annotations, expiry_var = EXPECTED[variant]
    run, assets, secrets = make_run(tmp_path, iso_cache, variant)
    assert execute(run) == 0
    assert (assets / "exit_code").read_text() == "0" and oct(os.stat(assets / "exit_code").st_mode)[-3:] == "600"
    written = [".addnodesparams", "exit_code", "node.x86_64.iso", "nodes-config.yaml"]
    assert sorted(os.listdir(assets)) == sorted(written + (["report.json"] if report else []))  # no config ISO
    assert json.loads((assets / ".addnodesparams").read_text()) == {}
    # The Secret
    secret = secrets.puts[0]
    assert sorted(secret["data"]) == keys and sorted(secret["metadata"]["annotations"]) == annotations
    assert secret["metadata"]["annotations"]["updatedAt"] == ""
    public_pem = secrets.public_pem()
    assert public_pem.startswith("-----BEGIN EC PUBLIC KEY-----\n")
    for key in [k for k in keys if k != "authTokenPublicKey"]:
        claims = jwt.verify(secrets.token(key), public_pem, now=NOW)
        assert claims["exp"] == NOW + 48 * HOUR
        assert sorted(claims) == sorted(["exp", claim])
        if claim == "auth_scheme":
            assert (
                claims["auth_scheme"]
                == {"agentAuthToken": "agentAuth", "userAuthToken": "userAuth", "watcherAuthToken": "watcherAuth"}[key]
            )
            assert secret["metadata"]["annotations"]["expiresAt"] == nodejoiner_rfc(NOW + 48 * HOUR)
    # The embedded Ignition
    files = ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.x86_64.iso")))
    env = ign.read_env_file(files["/etc/assisted/add-nodes.env"])
    assert list(env) == ["CLUSTER_ID", "CLUSTER_NAME", "CLUSTER_API_VIP_DNS_NAME", expiry_var]
    assert env["CLUSTER_NAME"] == "lab" and env["CLUSTER_API_VIP_DNS_NAME"] == "api.lab.day2.example.test"
    assert parse_time(env[expiry_var]) == NOW + 48 * HOUR
    service = ign.read_env_file(files["/usr/local/share/assisted-service/assisted-service.env"])
    assert base64.b64decode(service["EC_PUBLIC_KEY_PEM"]).decode() == public_pem
    assert ("Generated ISO at /assets/node.x86_64.iso. The ISO is valid up to %s" % env[expiry_var]) in run.log_text()


def nodejoiner_rfc(epoch):
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("variant, fresh", [("v417", True), ("v418", False), ("v421", False)])
def test_a_reused_token_keeps_its_exp_and_417_writes_a_fresh_expiry_beside_it(tmp_path, iso_cache, variant, fresh):
    """4.17 reuses the Secret's token but writes the now + 48 h it computed first into add-nodes.env."""
    first, _assets, secrets = make_run(tmp_path / "a", iso_cache, variant)
    assert execute(first) == 0
    later = NOW + 20 * HOUR
    second, assets, _secrets = make_run(tmp_path / "b", iso_cache, variant, secrets=secrets, clock=lambda: later)
    assert execute(second) == 0 and second.auth["reused"] and second.token == first.token
    assert jwt.verify(second.token, secrets.public_pem(), now=later)["exp"] == NOW + 48 * HOUR
    files = ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.x86_64.iso")))
    env = ign.read_env_file(files["/etc/assisted/add-nodes.env"])
    written = parse_time(env[EXPECTED[variant][-1]])
    assert written == (later + 48 * HOUR if fresh else NOW + 48 * HOUR)
    assert "Reusing existing auth token (valid up to %s)" % nodejoiner_rfc(NOW + 48 * HOUR) in second.log_text()


def test_report_stages_and_result(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, clock=None)
    assert execute(run) == 0
    report = read_report(assets)
    assert list(report) == ["id", "start_time", "end_time", "stages", "result"]
    assert re.match(r"^report-addnodes-\d{12}$", report["id"]) and report["result"] == {"exit_code": 0}
    assert [s["id"] for s in report["stages"]] == [
        "add-nodes-cluster-inspection",
        "create-manifest",
        "ignition",
        "fetch-base-iso",
        "create-agent-artifacts",
        "generate-iso",
    ]
    by_id = {s["id"]: s for s in report["stages"]}
    assert [s["id"] for s in by_id["fetch-base-iso"]["sub_stages"]] == [
        "fetch-base-iso.extract-image",
        "fetch-base-iso.verify-version",
    ]
    assert [s["id"] for s in by_id["create-agent-artifacts"]["sub_stages"]] == [
        "create-agent-artifacts.agent-tui",
        "create-agent-artifacts.prepare",
    ]
    inspection = json.loads(by_id["add-nodes-cluster-inspection"]["result"])
    assert list(inspection) == ["Architecture", "PlatformType", "ReleaseImage", "Version"]
    assert inspection["Version"] == "4.21.1" and inspection["Architecture"] == "amd64"
    assert inspection["PlatformType"] == "BareMetal"
    for stage in report["stages"] + by_id["fetch-base-iso"]["sub_stages"]:
        assert stage["description"] and parse_time(stage["start_time"]) <= parse_time(stage["end_time"])
    assert report["start_time"] == report["stages"][0]["start_time"]
    assert report["end_time"] == report["stages"][-1]["end_time"]
    assert oct(os.stat(assets / "report.json").st_mode)[-3:] == "600"


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
    assert partial and len({len(r.get("stages", [])) for r in partial}) > 2
    assert any(r["stages"][-1]["end_time"] == "0001-01-01T00:00:00Z" for r in partial if r.get("stages"))


def test_config_iso_flag_writes_only_the_config_iso(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, "v418")
    assert execute(run, config_iso=True) == 0
    assert sorted(os.listdir(assets)) == [
        ".addnodesparams",
        "agentconfig.noarch.iso",
        "exit_code",
        "nodes-config.yaml",
        "report.json",
    ]
    files, modes = iso.read_config_iso(str(assets / "agentconfig.noarch.iso"))
    assert sorted(files) == [
        "/etc/assisted/hostconfig/extra-worker-0/mac_addresses",
        "/etc/assisted/hostconfig/extra-worker-0/role",
        "/etc/assisted/hostconfig/extra-worker-0/root-device-hints.yaml",
        "/etc/assisted/hostnames/" + MAC0,
        "/etc/assisted/manifests/agent-cluster-install.yaml",
        "/etc/assisted/manifests/cluster-deployment.yaml",
        "/etc/assisted/manifests/cluster-image-set.yaml",
        "/etc/assisted/manifests/infraenv.yaml",
        "/etc/assisted/manifests/nmstateconfig.yaml",
        "/etc/assisted/manifests/pull-secret.yaml",
        "/etc/assisted/network/host0/eth0.nmconnection",
        "/etc/assisted/network/host0/mac_interface.ini",
        "/etc/assisted/rendezvous-host.env",
        "/etc/issue",
        "/root/.docker/config.json",
        "/usr/local/share/assisted-service/assisted-service.env",
        "/usr/local/share/start-cluster/start-cluster.env",
    ]
    assert modes["/etc/assisted/manifests/infraenv.yaml"] == 0o100600
    assert files["/etc/assisted/manifests/cluster-deployment.yaml"] == b""
    stages = [s["id"] for s in read_report(assets)["stages"]]
    assert stages == ["add-nodes-cluster-inspection", "create-manifest", "ignition"]


def test_pxe_and_config_iso_together_are_refused_before_anything(tmp_path, iso_cache):
    run, assets, secrets = make_run(tmp_path, iso_cache, "v421")
    assert execute(run, pxe=True, config_iso=True) == 1
    assert sorted(os.listdir(assets)) == ["nodes-config.yaml"] and not secrets.puts
    assert run.log[-1].endswith("level=fatal msg=invalid configuration found")


@pytest.mark.parametrize("url", ["http://user-specified-pxe-infra.com", None])
def test_pxe_run(tmp_path, iso_cache, url):
    config = nodes_config(bootArtifactsBaseURL=url) if url else nodes_config()
    run, assets, _secrets = make_run(tmp_path, iso_cache, "v418", config=config)
    assert execute(run, pxe=True) == 0
    assert read_report(assets)["stages"][-1]["id"] == "generate-pxe"
    names = sorted(os.listdir(str(assets / "boot-artifacts")))
    expected = ["node.x86_64-initrd.img", "node.x86_64-rootfs.img", "node.x86_64-vmlinuz"]
    assert names == ([*expected, "node.x86_64.ipxe"] if url else expected)
    if url:
        script = (assets / "boot-artifacts" / "node.x86_64.ipxe").read_text()
        assert "initrd --name initrd http://user-specified-pxe-infra.com/node.x86_64-initrd.img" in script
        assert "coreos.live.rootfs_url=http://user-specified-pxe-infra.com/node.x86_64-rootfs.img" in script
        assert "coreos.liveiso=" not in script
    config_ign = iso.read_pxe_ignition(str(assets / "boot-artifacts" / "node.x86_64-initrd.img"))
    assert "/etc/assisted/add-nodes.env" in ign.files_by_path(config_ign)
    assert not list(assets.glob("*.iso"))


def test_token_reused_when_more_than_24h_left(tmp_path, iso_cache):
    first, _assets, secrets = make_run(tmp_path / "a", iso_cache)
    assert execute(first) == 0
    second, assets, _secrets = make_run(tmp_path / "b", iso_cache, secrets=secrets, clock=lambda: NOW + 23 * HOUR)
    assert execute(second) == 0
    assert len(secrets.puts) == 1 and second.auth["reused"] and not first.auth["reused"]
    for key in ("agent", "user", "watcher", "expiry", "public_key_b64"):
        assert second.auth[key] == first.auth[key], key
    files = ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.x86_64.iso")))
    assert ign.read_env_file(files["/etc/assisted/rendezvous-host.env"])["USER_AUTH_TOKEN"] == first.auth["user"]
    assert "Reusing existing auth token" in second.log_text()


def test_token_refreshed_when_less_than_24h_left(tmp_path, iso_cache):
    first, _assets, secrets = make_run(tmp_path / "a", iso_cache)
    assert execute(first) == 0
    second, _assets, _secrets = make_run(tmp_path / "b", iso_cache, secrets=secrets, clock=lambda: NOW + 25 * HOUR)
    assert execute(second) == 0
    assert second.token != first.token and len(secrets.puts) == 2
    updated = secrets.puts[1]
    assert updated["metadata"]["resourceVersion"] == "1", "an update must carry the resourceVersion it read"
    assert updated["metadata"]["annotations"]["updatedAt"] == nodejoiner_rfc(NOW + 25 * HOUR)
    assert jwt.verify(second.token, secrets.public_pem(), now=NOW + 25 * HOUR)["exp"] == NOW + 73 * HOUR
    with pytest.raises(jwt.TokenError):
        jwt.verify(first.token, secrets.public_pem(), now=NOW)


def test_a_418_run_regenerates_a_secret_written_by_417(tmp_path, iso_cache):
    old, _assets, secrets = make_run(tmp_path / "a", iso_cache, "v417")
    assert execute(old) == 0
    new, _assets, _secrets = make_run(tmp_path / "b", iso_cache, "v418", secrets=secrets)
    assert execute(new) == 0
    assert len(secrets.puts) == 2 and "watcherAuthToken" in secrets.puts[1]["data"]
    assert jwt.verify(secrets.token("watcherAuthToken"), secrets.public_pem(), now=NOW)["auth_scheme"] == "watcherAuth"


def test_failing_secret_write(tmp_path, iso_cache):
    async def put(secret):
        raise RuntimeError('secrets is forbidden: User "system:serviceaccount:x:node-joiner" cannot create')

    run, assets, _secrets = make_run(tmp_path, iso_cache)
    run.put_secret = put
    assert execute(run) == 1
    report = read_report(assets)
    assert report["result"]["error_message"].startswith("failed to create auth token secret: secrets is forbidden")
    assert report["stages"][-1]["id"] == "ignition"


def test_log_lines_are_logrus_hook_lines(tmp_path, iso_cache):
    lines = []
    run, _assets, _secrets = make_run(tmp_path, iso_cache, on_log=lines.append)
    assert execute(run) == 0
    assert lines == run.log and len(lines) > 5
    pattern = re.compile(r"^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ level=(debug|info|warning|error|fatal) msg=[^\"].*$")
    assert all(pattern.match(line) for line in lines), lines
    quiet, _assets, _secrets = make_run(tmp_path / "quiet", iso_cache, log_level="info")
    assert execute(quiet) == 0 and not [line for line in quiet.log if "level=debug" in line]
