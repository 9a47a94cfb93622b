"""The Ignition config of an add-nodes ISO per release, and node-joiner's command line (cobra/pflag)."""

import base64
import json
import subprocess

import pytest
import yaml
from lab import authtoken, clusterinfo, jwt, njcli, seeds, versions
from lab import ignition as ign
from nj_helpers import MAC0, MAC1, NOW, VERSION_VARIANTS, host, nodes_config, profile_of

RENDEZVOUS = {
    "v417": [
        "NODE_ZERO_IP",
        "SERVICE_BASE_URL",
        "IMAGE_SERVICE_BASE_URL",
        "AGENT_AUTH_TOKEN",
        "PULL_SECRET_TOKEN",
        "WORKFLOW_TYPE",
    ],
    "v418": [
        "NODE_ZERO_IP",
        "SERVICE_BASE_URL",
        "IMAGE_SERVICE_BASE_URL",
        "PULL_SECRET_TOKEN",
        "USER_AUTH_TOKEN",
        "WORKFLOW_TYPE",
    ],
}
for _variant in ("v419", "v420", "v421"):
    RENDEZVOUS[_variant] = RENDEZVOUS["v418"] + ["AIUI_APP_API_URL", "AIUI_URL"]
SERVICE_TOKENS = {"v417": ["AGENT_AUTH_TOKEN"]}
SERVICE_TOKENS.update((v, ["USER_AUTH_TOKEN", "WATCHER_AUTH_TOKEN"]) for v in VERSION_VARIANTS[1:])


def build(variant="v421", config=None, objects=None):
    profile = profile_of(variant)
    source = clusterinfo.ObjectsSource(objects or seeds.load_seed(variant))
    config = config or nodes_config(
        host("w0", MAC0.upper(), "127.0.111.20"),
        host("w1", MAC1, "127.0.111.21", "ens3", role=None, rootDeviceHints=None),
        {"interfaces": [{"name": "eth0", "macAddress": "00:02:46:e3:9e:7e"}]},
    )
    info = clusterinfo.inspect(source, config)
    auth, _secret = authtoken.resolve(profile, None, NOW, "infra-1")
    auth["infra_env_id"] = "infra-1"
    return ign.build_add_nodes_ignition(info, config, auth, profile), auth, info


def validate(config, tmp_path):
    path = tmp_path / "config.ign"
    path.write_text(json.dumps(config))
    return subprocess.run(
        ["ignition-validate", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False
    )


@pytest.mark.parametrize("variant", VERSION_VARIANTS)
def test_env_files_and_tokens_per_release(variant, tmp_path):
    config, auth, _info = build(variant)
    assert validate(config, tmp_path).returncode == 0
    files = ign.files_by_path(config)
    profile = profile_of(variant)
    add_nodes = ign.read_env_file(files[ign.ADD_NODES_ENV])
    assert list(add_nodes)[-1] == profile.expiry_variable
    rendezvous = ign.read_env_file(files[ign.RENDEZVOUS_ENV])
    assert list(rendezvous) == RENDEZVOUS[variant] and rendezvous["WORKFLOW_TYPE"] == "addnodes"
    service = ign.read_env_file(files[ign.ASSISTED_SERVICE_ENV])
    assert [k for k in service if k.endswith("_TOKEN")] == SERVICE_TOKENS[variant]
    assert service["AUTH_TYPE"] == "agent-installer-local" and service["INFRA_ENV_ID"] == "infra-1"
    assert service["EC_PUBLIC_KEY_PEM"] == auth["public_key_b64"]
    pem = base64.b64decode(service["EC_PUBLIC_KEY_PEM"]).decode()
    if variant == "v417":
        assert rendezvous["AGENT_AUTH_TOKEN"] == rendezvous["PULL_SECRET_TOKEN"] == service["AGENT_AUTH_TOKEN"]
        assert jwt.verify(rendezvous["AGENT_AUTH_TOKEN"], pem, now=NOW)["infra_env_id"] == "infra-1"
    else:
        schemes = {
            name: jwt.verify(value, pem, now=NOW)["auth_scheme"]
            for name, value in (
                ("PULL_SECRET_TOKEN", rendezvous["PULL_SECRET_TOKEN"]),
                ("USER_AUTH_TOKEN", service["USER_AUTH_TOKEN"]),
                ("WATCHER_AUTH_TOKEN", service["WATCHER_AUTH_TOKEN"]),
            )
        }
        assert schemes == {
            "PULL_SECRET_TOKEN": "agentAuth",
            "USER_AUTH_TOKEN": "userAuth",
            "WATCHER_AUTH_TOKEN": "watcherAuth",
        }
        assert rendezvous["USER_AUTH_TOKEN"] == service["USER_AUTH_TOKEN"]
    assert (ign.IMPORT_CLUSTER_CONFIG in files) is profile.import_cluster_config


def test_token_claims_are_encoded_with_sorted_keys():
    for profile, first in ((versions.PROFILES[0], "exp"), (versions.NEWEST, "auth_scheme")):
        tokens, _public, _exp = authtoken.new_tokens(profile, NOW, "id-1")
        payload = tokens["agentAuthToken"].split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        assert next(iter(claims)) == first and claims["exp"] == NOW + 48 * 3600


def test_host_files():
    config, _auth, _info = build()
    files = ign.files_by_path(config)
    modes = {f["path"]: f["mode"] for f in config["storage"]["files"]}
    assert files["/etc/assisted/hostconfig/w0/mac_addresses"] == (MAC0 + "\n").encode()
    assert files["/etc/assisted/hostconfig/w0/role"] == b"worker"
    assert files["/etc/assisted/hostconfig/w0/root-device-hints.yaml"] == b"deviceName: /dev/sda\n"
    assert (
        "/etc/assisted/hostconfig/w1/role" not in files
        and "/etc/assisted/hostconfig/w1/root-device-hints.yaml" not in files
    )
    assert files["/etc/assisted/hostconfig/host-2/mac_addresses"] == b"00:02:46:e3:9e:7e\n"
    assert files["/etc/assisted/hostnames/" + MAC0] == b"w0" and modes["/etc/assisted/hostnames/" + MAC0] == 0o600
    assert not [p for p in files if p.startswith("/etc/assisted/hostnames/00:02:46:e3:9e:7e")]
    # host<N> numbered after sorting the network YAMLs; the MAC as written, no trailing newline
    inis = {p: files[p] for p in files if p.endswith("mac_interface.ini")}
    assert sorted(inis) == [
        "/etc/assisted/network/host0/mac_interface.ini",
        "/etc/assisted/network/host1/mac_interface.ini",
    ]
    assert sorted(inis.values()) == [(MAC0.upper() + "=eth0").encode(), (MAC1 + "=ens3").encode()]
    keyfile = next(files[p] for p in files if p.endswith("ens3.nmconnection")).decode()
    assert "autoconnect-priority=1" in keyfile and "address1=127.0.111.21/24,127.0.111.1" in keyfile
    assert modes[next(p for p in files if p.endswith("ens3.nmconnection"))] == 0o600


def test_manifests_and_cluster_files():
    config, _auth, info = build()
    files = ign.files_by_path(config)
    manifests = sorted(p.rsplit("/", 1)[1] for p in files if p.startswith("/etc/assisted/manifests/"))
    assert manifests == [
        "agent-cluster-install.yaml",
        "cluster-deployment.yaml",
        "cluster-image-set.yaml",
        "infraenv.yaml",
        "nmstateconfig.yaml",
        "pull-secret.yaml",
    ]
    infraenv = yaml.safe_load(files["/etc/assisted/manifests/infraenv.yaml"])
    assert infraenv["metadata"] == {"creationTimestamp": None, "name": "lab", "namespace": "cluster0"}
    assert infraenv["spec"]["cpuArchitecture"] == "x86_64" and infraenv["spec"]["pullSecretRef"] == {
        "name": "lab-pull-secret"
    }
    assert infraenv["spec"]["nmStateConfigLabelSelector"] == {
        "matchLabels": {"infraenvs.agent-install.openshift.io": "lab"}
    }
    image_set = yaml.safe_load(files["/etc/assisted/manifests/cluster-image-set.yaml"])
    assert (
        image_set["metadata"]["name"] == "openshift-4.21.1"
        and image_set["spec"]["releaseImage"] == info["release_image"]
    )
    nmstate = [d for d in yaml.safe_load_all(files["/etc/assisted/manifests/nmstateconfig.yaml"]) if d]
    assert [d["metadata"]["name"] for d in nmstate] == ["lab-0", "lab-1"]
    assert ign.read_env_file(files[ign.START_CLUSTER_ENV]) == {
        "REQUIRED_MASTER_NODES": "0",
        "REQUIRED_WORKER_NODES": "3",
    }
    assert ign.read_env_file(files[ign.AGENT_INSTALLER_ENV]) == {"RELEASE_IMAGE": info["release_image"]}
    os_images = json.loads(ign.read_env_file(files[ign.IMAGES_ENV])["OS_IMAGES"])
    assert os_images[0]["openshift_version"] == "4.21.1" and os_images[0]["cpu_architecture"] == "x86_64"
    assert os_images[0]["url"].endswith("live-iso.x86_64.iso")
    assert files[ign.ISSUE_FILE] == b"\\S\nOpenShift Agent Installer image for lab\n"
    assert json.loads(files[ign.IMPORT_CLUSTER_CONFIG]) == {"networking": {"userManagedNetworking": False}}
    assert files[ign.IMPORT_CLUSTER_CONFIG].startswith(b'{\n  "networking"')
    assert json.loads(files[ign.WORKER_IGNITION_ENDPOINT])["url"].endswith(":22623/config/worker")
    assert config["passwd"]["users"][0]["sshAuthorizedKeys"] == [info["ssh_key"]]
    assert "/etc/chrony.conf" in files and files[ign.PULL_SECRET_FILE].decode() == info["pull_secret_json"]


def test_417_writes_the_worker_endpoint_compact_and_no_import_config():
    config, _auth, _info = build("v417")
    files = ign.files_by_path(config)
    assert ign.IMPORT_CLUSTER_CONFIG not in files and "/etc/chrony.conf" not in files
    assert files[ign.WORKER_IGNITION_ENDPOINT].startswith(b'{"url":')


def test_nodes_config_ssh_key_wins_and_no_mirrors_no_registries_conf():
    config, _auth, _info = build(config=nodes_config(sshKey="ssh-ed25519 AAAA other"))
    assert config["passwd"]["users"][0]["sshAuthorizedKeys"] == ["ssh-ed25519 AAAA other"]
    assert "/etc/containers/registries.conf" not in ign.files_by_path(config)
    mirrored, _auth, _info = build(objects=seeds.load_seed("disconnected"))
    registries = ign.files_by_path(mirrored)["/etc/containers/registries.conf"].decode()
    assert 'location = "mirror.lab.day2.example.test:5000/ocp4/openshift-release-dev/ocp-release"' in registries


# --------------------------------------------------------------------------- the command line

CMD = (
    "cp /config/nodes-config.yaml /assets; HOME=/assets node-joiner add-nodes %s--dir=/assets --log-level=debug; "
    "sleep 600"
)


def test_argv_is_found_in_the_pod_command():
    assert njcli.node_joiner_argv(CMD % "--pxe ") == ["add-nodes", "--pxe", "--dir=/assets", "--log-level=debug"]
    assert njcli.node_joiner_argv("sleep 600") is None
    assert njcli.node_joiner_argv(["/bin/bash", "-c", "node-joiner add-nodes --dir=/assets; sleep 600"]) == [
        "add-nodes",
        "--dir=/assets",
    ]
    assert njcli.node_joiner_argv(["node-joiner", "add-nodes", "--config-iso"]) == ["add-nodes", "--config-iso"]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["add-nodes", "--dir=/assets", "--log-level=debug"], {"pxe": False, "config_iso": False, "dir": "/assets"}),
        (["add-nodes", "-p", "--dir", "/x"], {"pxe": True, "dir": "/x"}),
        (["add-nodes", "--pxe=false", "--config-iso"], {"pxe": False, "config_iso": True, "dir": "."}),
    ],
)
def test_flags_of_418_and_later(argv, expected):
    options = njcli.parse_add_nodes(argv, versions.for_version("4.18"), NOW)
    assert {k: options[k] for k in expected} == expected


@pytest.mark.parametrize(
    "version, argv, error",
    [
        ("4.17", ["add-nodes", "--pxe", "--dir=/assets"], "unknown flag: --pxe"),
        ("4.17", ["add-nodes", "--config-iso"], "unknown flag: --config-iso"),
        ("4.17", ["add-nodes", "-p"], "unknown shorthand flag: 'p' in -p"),
        ("4.21", ["add-nodes", "--bogus"], "unknown flag: --bogus"),
    ],
)
def test_unknown_flags_print_cobras_error_and_usage(version, argv, error):
    with pytest.raises(njcli.UsageError) as caught:
        njcli.parse_add_nodes(argv, versions.for_version(version), NOW)
    lines = caught.value.stderr.splitlines()
    assert str(caught.value) == error and lines[0] == "Error: " + error
    assert lines[1:3] == ["Usage:", "  node-joiner add-nodes [flags]"]
    assert "Flags:" in lines and "Global Flags:" in lines
    assert any(line.strip().startswith("--dir string") for line in lines)
    assert lines[-1].startswith('time="') and lines[-1].endswith('level=fatal msg="%s"' % error)
    assert ("-p, --pxe" in caught.value.stderr) is ("--config-iso   " in caught.value.stderr) is (version != "4.17")
