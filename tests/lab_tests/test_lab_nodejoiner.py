"""The simulated node-joiner run per OpenShift release: result files, report, Secret, failures, architectures."""

import asyncio
import base64
import datetime
import json
import os
import re

import pytest
from lab import ignition as ign
from lab import iso, jwt, seeds
from nj_helpers import (
    HOUR,
    MAC0,
    NOW,
    VERSION_VARIANTS,
    FakeSecrets,
    execute,
    host,
    make_run,
    nodes_config,
    read_report,
    replace,
)

# variant -> (report.json, agentconfig ISO next to the node ISO, Secret data keys, claim, annotations, expiry var)
EXPECTED = {
    "v417": (
        False,
        True,
        ["agentAuthToken", "authTokenPublicKey"],
        "infra_env_id",
        ["updatedAt"],
        "AGENT_AUTH_TOKEN_EXPIRY",
    ),
    **{
        v: (
            True,
            False,
            ["agentAuthToken", "authTokenPublicKey", "userAuthToken", "watcherAuthToken"],
            "auth_scheme",
            ["expiresAt", "updatedAt"],
            "AUTH_TOKEN_EXPIRY",
        )
        for v in VERSION_VARIANTS[1:]
    },
}


@pytest.fixture(scope="module")
def iso_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("njcache"))


def parse_time(text):
    return (
        datetime.datetime.strptime(re.sub(r"\.\d+Z$", "Z", text), "%Y-%m-%dT%H:%M:%SZ")
        .replace(tzinfo=datetime.timezone.utc)
        .timestamp()
    )


@pytest.mark.parametrize("variant", VERSION_VARIANTS)
def test_iso_run_per_release(tmp_path, iso_cache, variant):
    report, config_iso, keys, claim, annotations, expiry_var = EXPECTED[variant]
    run, assets, secrets = make_run(tmp_path, iso_cache, variant)
    assert execute(run) == 0
    assert (assets / "exit_code").read_text() == "0" and oct(os.stat(assets / "exit_code").st_mode)[-3:] == "600"
    assert (assets / "report.json").exists() is report
    assert (assets / "agentconfig.noarch.iso").exists() is config_iso
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


def test_417_also_writes_the_config_iso(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, "v417")
    assert execute(run) == 0
    files, _modes = iso.read_config_iso(str(assets / "agentconfig.noarch.iso"))
    assert "/etc/assisted/manifests/infraenv.yaml" in files and "/etc/assisted/add-nodes.env" not in files


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


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda o: replace(o, "ClusterVersion", "version", lambda x: None),
            'clusterversions.config.openshift.io "version" not found',
        ),
        (lambda o: replace(o, "Proxy", "cluster", lambda x: None), 'proxies.config.openshift.io "cluster" not found'),
        (
            lambda o: replace(o, "Secret", "pull-secret", lambda x: None, "openshift-config"),
            'secrets "pull-secret" not found',
        ),
        (lambda o: [x for x in o if x["kind"] != "Node"], "unable to determine target cluster architecture"),
        (
            lambda o: replace(
                o, "Infrastructure", "cluster", lambda x: dict(x, spec={"platformSpec": {"type": "Nutanix"}})
            ),
            'platform: Unsupported value: "nutanix": supported values: "baremetal", "vsphere", "none", "external"',
        ),
        (
            lambda o: replace(
                o, "Infrastructure", "cluster", lambda x: dict(x, spec={"platformSpec": {"type": "Libvirt"}})
            ),
            "unable to convert platform type Libvirt",
        ),
    ],
)
def test_cluster_inspection_failures(tmp_path, iso_cache, change, message):
    run, assets, secrets = make_run(tmp_path, iso_cache, objects=change(seeds.load_seed("default")))
    assert execute(run) == 1
    report = read_report(assets)
    assert report["stages"][-1]["id"] == "add-nodes-cluster-inspection" and "result" not in report["stages"][-1]
    assert report["result"]["error_message"] == message
    assert (
        'failed to generate asset "Agent Installer ClusterInfo": ' + message
        in report["result"]["detailed_error_message"]
    )
    assert not secrets.puts and (assets / "exit_code").read_text() == "1"


def test_ingress_is_not_needed_by_4_17_to_4_21(tmp_path, iso_cache):
    """Node-joiner reads Ingress only after 4.21 (installer PR #10719): a cluster without it still gets its ISO."""
    run, assets, _secrets = make_run(
        tmp_path, iso_cache, objects=replace(seeds.load_seed("default"), "Ingress", "cluster", lambda x: None)
    )
    assert execute(run) == 0
    assert (assets / "exit_code").read_text() == "0"


def test_ppc64le_and_s390x_need_platform_none(tmp_path, iso_cache):
    run, assets, _secrets = make_run(tmp_path, iso_cache, "multiarch", config=nodes_config(cpuArchitecture="s390x"))
    assert execute(run) == 1
    assert (
        read_report(assets)["result"]["error_message"]
        == 'platform: Invalid value: "baremetal": CPU architecture "s390x" only supports platform "none".'
    )
    objects = replace(
        seeds.load_seed("multiarch"),
        "Infrastructure",
        "cluster",
        lambda x: dict(x, spec={"platformSpec": {"type": "None"}}),
    )
    ok, assets, _secrets = make_run(
        tmp_path / "none", iso_cache, "multiarch", objects=objects, config=nodes_config(cpuArchitecture="s390x")
    )
    assert execute(ok) == 0 and (assets / "node.s390x.iso").exists()
    files = ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.s390x.iso")))
    config = json.loads(files["/etc/assisted/clusterconfig/import-cluster-config.json"])
    assert config == {"networking": {"userManagedNetworking": True}}


def test_another_architecture_needs_a_multi_payload(tmp_path, iso_cache):
    single, assets, _secrets = make_run(tmp_path, iso_cache, config=nodes_config(cpuArchitecture="arm64"))
    assert execute(single) == 1
    report = read_report(assets)
    assert report["stages"][-1]["sub_stages"][-1]["id"] == "fetch-base-iso.extract-image"
    assert (
        report["result"]["error_message"]
        == "base ISO for aarch64 not found in release image, check release image architecture"
    )
    multi, assets, _secrets = make_run(
        tmp_path / "multi", iso_cache, "multiarch", config=nodes_config(cpuArchitecture="aarch64")
    )
    assert execute(multi) == 0 and (assets / "node.aarch64.iso").exists()
    files = ign.files_by_path(iso.read_embedded_ignition(str(assets / "node.aarch64.iso")))
    release = json.loads(
        ign.read_env_file(files["/usr/local/share/assisted-service/assisted-service.env"])["RELEASE_IMAGES"]
    )
    assert release[0]["cpu_architecture"] == "multi" and "aarch64" in release[0]["cpu_architectures"]
    assert b"cpuArchitecture: aarch64" in files["/etc/assisted/manifests/infraenv.yaml"]


def test_an_empty_history_is_a_go_panic(tmp_path, iso_cache):
    objects = replace(
        seeds.load_seed("default"), "ClusterVersion", "version", lambda x: dict(x, status=dict(x["status"], history=[]))
    )
    run, assets, _secrets = make_run(tmp_path, iso_cache, objects=objects)
    assert execute(run) == 2
    assert not (assets / "exit_code").exists() and read_report(assets)["result"] is None
    assert "panic: runtime error: index out of range [0] with length 0" in run.log_text()


@pytest.mark.parametrize(
    "raw, message",
    [
        ("hosts: []\n", "hosts: Required value: at least one host must be defined"),
        ("hosts: [unclosed", "error converting YAML to JSON"),
        (None, 'sshKey: Invalid value: "not a key": ssh: no key found'),
    ],
)
def test_nodes_config_load_failures_come_before_any_stage(tmp_path, iso_cache, raw, message):
    text = raw if raw is not None else json.dumps(nodes_config(sshKey="not a key"))
    run, assets, _secrets = make_run(tmp_path, iso_cache, raw_yaml=text)
    assert execute(run) == 1
    report = read_report(assets)
    assert "stages" not in report and message in report["result"]["error_message"]
    # Complete() takes end_time from the last stage: with none it stays Go's zero time (oc 4.18+ keeps polling)
    assert report["end_time"] == report["start_time"] == "0001-01-01T00:00:00Z"
    assert 'failed to load asset "AddNodes Config"' in report["result"]["detailed_error_message"]


INVALID_HOSTS = [
    (
        nodes_config(host("w0", "zz:02:46:e3:9e:7c", "127.0.111.20")),
        'Hosts[0].Interfaces[0].macAddress: Invalid value: "zz:02:46:e3:9e:7c": address zz:02:46:e3:9e:7c: '
        "invalid MAC address",
    ),
    (
        nodes_config(host("w0", MAC0, "127.0.111.20"), host("w1", MAC0, "127.0.111.21")),
        'Hosts[1].Interfaces[0].macAddress: Invalid value: "00:02:46:e3:9e:7c": duplicate MAC address found',
    ),
    (
        nodes_config(host("w0", MAC0, "127.0.111.20", rootDeviceHints={"wwnWithExtension": "0x5000"})),
        "Hosts[0].rootDeviceHints.wwnWithExtension: Forbidden: WWN extensions are not supported",
    ),
    (
        nodes_config(host("w0", MAC0, "127.0.111.20", rootDeviceHints={"deviceName": "sda"})),
        'Hosts[0].rootDeviceHints.deviceName: Invalid value: "sda": device name of root device hint must be path',
    ),
    (
        nodes_config(host("w0", MAC0, "127.0.111.20", role="bootstrap")),
        "Hosts[0].Host: Forbidden: host role has incorrect value",
    ),
    (
        nodes_config(host("w0", MAC0, "127.0.111.20", interfaces=[{"name": "eth1", "macAddress": MAC0}])),
        "mac-interface mapping for interface eth0 is missing",
    ),
    (nodes_config(host("Bad_Name", MAC0, "127.0.111.20")), 'Hosts[0].Hostname: Invalid value: "Bad_Name"'),
    (nodes_config(cpuArchitecture="sparc"), "Config.Spec.CpuArchitecture sparc is not supported "),
]


@pytest.mark.parametrize("config, message", INVALID_HOSTS)
def test_invalid_hosts_fail_at_create_manifest(tmp_path, iso_cache, config, message):
    run, assets, secrets = make_run(tmp_path, iso_cache, config=config)
    assert execute(run) == 1
    report = read_report(assets)
    assert report["stages"][-1]["id"] == "create-manifest" and message in report["result"]["error_message"]
    assert report["result"]["detailed_error_message"].startswith("failed to fetch Agent Installer ISO: ")
    assert report["result"]["detailed_error_message"].endswith(report["result"]["error_message"])
    assert not list(assets.glob("*.iso")) and not secrets.puts
    assert "level=fatal" in run.log[-1] and message in run.log[-1]


@pytest.mark.parametrize(
    "option, stage, text",
    [
        ({"bad_host_config": True}, "create-manifest", "nmstatectl gc failed"),
        ({"base_iso_download_failure": True}, "fetch-base-iso", "no such host"),
    ],
)
def test_fault_switches(tmp_path, iso_cache, option, stage, text):
    run, assets, _secrets = make_run(tmp_path, iso_cache, **option)
    assert execute(run) == 1
    report = read_report(assets)
    assert report["stages"][-1]["id"] == stage and text in report["result"]["error_message"]
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


def test_secret_without_its_token_is_an_error(tmp_path, iso_cache):
    secret = {
        "metadata": {"name": "agent-auth-token", "namespace": "openshift-config", "resourceVersion": "1"},
        "data": {"authTokenPublicKey": "eA=="},
    }
    run, assets, _secrets = make_run(tmp_path, iso_cache, secrets=FakeSecrets(secret))
    assert execute(run) == 1
    assert (
        read_report(assets)["result"]["error_message"]
        == "auth token secret openshift-config/agent-auth-token does not contain the key watcherAuthToken or is empty"
    )
