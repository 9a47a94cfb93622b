"""The simulated node-joiner run's failures: cluster inspection, platform and architecture rules, an empty
history, nodes-config load and host validation, the fault switches, and a Secret without its token."""

import asyncio
import json

import pytest
from lab import ignition as ign
from lab import iso, seeds
from nj_helpers import MAC0, FakeSecrets, execute, host, make_run, nodes_config, read_report, replace


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
        # the installer's own fixture (pkg/asset/agent/joiner/addnodesconfig_test.go@24a06e10)
        (
            None,
            'sshKey: Invalid value: "not a valid ssh key": ssh: no key found; last parsing error for ignored line: '
            "illegal base64 data at input byte 4",
        ),
    ],
)
def test_nodes_config_load_failures_come_before_any_stage(tmp_path, iso_cache, raw, message):
    text = raw if raw is not None else json.dumps(nodes_config(sshKey="not a valid ssh key"))
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
