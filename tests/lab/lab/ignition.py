"""The Ignition config node-joiner embeds in an add-nodes ISO, per OpenShift release (lab.versions profiles).

The files and their contents follow node-joiner's ``Ignition`` asset; the real config carries many more
(systemd units for assisted-service, TLS material...). Sources: openshift/installer
pkg/asset/agent/image/ignition.go at 3075c3231aef1a206c4ce065b74b61187ecf6229 (4.17-era),
5e705f0f658f4030865683bee11bc0e45bf61cfb (4.18-era) and 00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9 (newest, 4.19+).

- ``/etc/assisted/add-nodes.env``: ``CLUSTER_ID``, ``CLUSTER_NAME``, ``CLUSTER_API_VIP_DNS_NAME``, then the expiry
  (``profile.expiry_variable``: ``AGENT_AUTH_TOKEN_EXPIRY`` on 4.17, installer PR #8802 -- the 4.17-era
  ignition.go@3075c32... above predates it and writes the three cluster lines only; ``AUTH_TOKEN_EXPIRY`` from 4.18,
  ``getAddNodesEnv`` at 5e705f0... and 00f6ab7...); its value is ``auth["expiry"]`` (``lab.authtoken``);
- ``/etc/assisted/rendezvous-host.env``: 4.17 ``AGENT_AUTH_TOKEN`` and ``PULL_SECRET_TOKEN`` (both the one token);
  4.18+ ``PULL_SECRET_TOKEN`` (agentAuth token) and ``USER_AUTH_TOKEN``; 4.19+ also ``AIUI_APP_API_URL``, ``AIUI_URL``;
- ``/usr/local/share/assisted-service/assisted-service.env``: ``AUTH_TYPE=agent-installer-local``,
  ``INFRA_ENV_ID``, ``EC_PUBLIC_KEY_PEM`` (base64 of the PEM), then 4.17 ``AGENT_AUTH_TOKEN``, 4.18+
  ``USER_AUTH_TOKEN`` and ``WATCHER_AUTH_TOKEN``;
- per host and manifests: ``lab.agentmanifests``; ``/etc/assisted/clusterconfig/import-cluster-config.json`` from
  4.18 (``userManagedNetworking`` true for platform none/external; pkg/asset/agent/joiner/importclusterconfig.go@
  3e81c8677997715c02b439744505b1fb6c88db19, pkg/asset/agent/common.go@2596730513b90f0f1264fae8ef73729780cc99dc);
- ``/etc/assisted/agent-installer.env`` (``RELEASE_IMAGE``), ``start-cluster.env`` (``REQUIRED_MASTER_NODES=0``,
  ``REQUIRED_WORKER_NODES=<hosts>``), ``images.env`` (``OS_IMAGES``), ``/etc/issue`` -- the templates under
  data/data/agent/files (agent-installer.env.template@c2b00a80a54560f5e549719a7cadca95e73d58df,
  start-cluster.env.template@5409f2e5bef885e214fded99d093a8c0546afe68, images.env.template@
  828c8a1861ef2de6e0d785cada192c4d01fef4c5, etc/issue.template@0b61555a2a26d78d3e549fb4442c58151655a1ec).
"""

import base64
import json
from urllib.parse import unquote_to_bytes

from . import agentmanifests
from .agentmanifests import rpm_arch

HOSTCONFIG_DIR, HOSTNAMES_DIR = agentmanifests.HOSTCONFIG_DIR, agentmanifests.HOSTNAMES_DIR
NETWORK_DIR, MANIFEST_DIR = agentmanifests.NETWORK_DIR, agentmanifests.MANIFEST_DIR

IGNITION_VERSION = "3.2.0"
AUTH_TYPE = "agent-installer-local"
ADD_NODES_ENV = "/etc/assisted/add-nodes.env"
RENDEZVOUS_ENV = "/etc/assisted/rendezvous-host.env"
ASSISTED_SERVICE_ENV = "/usr/local/share/assisted-service/assisted-service.env"
IMAGES_ENV = "/usr/local/share/assisted-service/images.env"
START_CLUSTER_ENV = "/usr/local/share/start-cluster/start-cluster.env"
AGENT_INSTALLER_ENV = "/etc/assisted/agent-installer.env"
CLUSTER_CONFIG_DIR = "/etc/assisted/clusterconfig"
IMPORT_CLUSTER_CONFIG = CLUSTER_CONFIG_DIR + "/import-cluster-config.json"
WORKER_IGNITION_ENDPOINT = CLUSTER_CONFIG_DIR + "/worker-ignition-endpoint.json"
ADD_NODE_SCRIPT = "/usr/local/bin/add-node.sh"
REGISTRIES_CONF = "/etc/containers/registries.conf"
PULL_SECRET_FILE = "/root/.docker/config.json"
CA_BUNDLE_FILE = "/etc/pki/ca-trust/source/anchors/domain.crt"
CHRONY_CONF = "/etc/chrony.conf"
ISSUE_FILE = "/etc/issue"
# In the add-nodes workflow every node runs its own assisted-service (rendezvous IP 127.0.0.1).
NODE_ZERO_IP = "127.0.0.1"
SERVICE_BASE_URL = "http://127.0.0.1:8090/"
IMAGE_SERVICE_BASE_URL = "http://127.0.0.1:8888/"
AIUI_APP_API_URL = "http://127.0.0.1:8090/"
AIUI_URL = "http://127.0.0.1:3001/"
USER_MANAGED_NETWORKING_PLATFORMS = ("none", "external")
# GetConfigImageFiles(): the files packed into agentconfig.noarch.iso (a path matches when it contains one) --
# openshift/installer pkg/asset/agent/image/unconfigured_ignition.go@193d48fef27eb9fd9396f0f6df5f4fe3fedb0226.
CONFIG_IMAGE_FILES = (
    "/etc/assisted/manifests/pull-secret.yaml",
    "/etc/assisted/manifests/cluster-deployment.yaml",
    "/etc/assisted/manifests/cluster-image-set.yaml",
    "/etc/assisted/manifests/agent-cluster-install.yaml",
    "/etc/assisted/manifests/infraenv.yaml",
    "/etc/assisted/manifests",
    "/etc/assisted/extra-manifests",
    HOSTCONFIG_DIR,
    HOSTNAMES_DIR,
    NETWORK_DIR,
    "/etc/NetworkManager/conf.d/clientid.conf",
    ISSUE_FILE,
    "/etc/systemd/system.conf.d/10-default-env.conf",
    PULL_SECRET_FILE,
    START_CLUSTER_ENV,
    ASSISTED_SERVICE_ENV,
    "/opt/agent/tls/kubeadmin-password.hash",
    "/opt/agent/tls/admin-kubeconfig-signer.key",
    "/opt/agent/tls/admin-kubeconfig-signer.crt",
    "/opt/agent/tls/kube-apiserver-lb-signer.key",
    "/opt/agent/tls/kube-apiserver-lb-signer.crt",
    "/opt/agent/tls/kube-apiserver-localhost-signer.key",
    "/opt/agent/tls/kube-apiserver-localhost-signer.crt",
    "/opt/agent/tls/kube-apiserver-service-network-signer.key",
    "/opt/agent/tls/kube-apiserver-service-network-signer.crt",
    RENDEZVOUS_ENV,
)

ADD_NODE_SH = """#!/bin/bash
# Lab rendition of add-node.sh: wait until this host is known to the local
# assisted-service, then ask it to install the host into the existing cluster.
set -e
BASE_URL="${SERVICE_BASE_URL}api/assisted-install/v2"
auth=(-H "Authorization: ${USER_AUTH_TOKEN:-${AGENT_AUTH_TOKEN}}")
until host_id=$(curl -fsS "${auth[@]}" "${BASE_URL}/infra-envs/${INFRA_ENV_ID}/hosts" \\
        | jq -er '.[] | select(.status == "known") | .id'); do
    sleep 10
done
curl -fsS -X POST "${auth[@]}" "${BASE_URL}/infra-envs/${INFRA_ENV_ID}/hosts/${host_id}/actions/install"
"""

ADD_NODE_UNIT = """[Unit]
Description=Adds the current host to an existing cluster
Wants=network-online.target
After=network-online.target assisted-service.service

[Service]
Type=oneshot
EnvironmentFile=/etc/assisted/rendezvous-host.env
EnvironmentFile=/usr/local/share/assisted-service/assisted-service.env
ExecStart=/usr/local/bin/add-node.sh
RemainAfterExit=true

[Install]
WantedBy=multi-user.target
"""


def data_url(content):
    """An RFC 2397 data URL holding ``content`` (str or bytes) in base64."""
    if isinstance(content, str):
        content = content.encode()
    return "data:text/plain;charset=utf-8;base64," + base64.b64encode(content).decode()


def decode_data_url(url):
    """The bytes of a base64 or percent-encoded data URL (for tests and the lab hosts)."""
    header, _comma, payload = url.partition(",")
    if header.endswith(";base64"):
        return base64.b64decode(payload)
    return unquote_to_bytes(payload)


def _file(path, content, mode=0o644):
    return {
        "path": path,
        "user": {"name": "root"},
        "mode": mode,
        "overwrite": True,
        "contents": {"source": data_url(content)},
    }


def _env(pairs):
    return "".join("%s=%s\n" % (k, v) for k, v in pairs)


def token_env(profile, auth):
    """``(rendezvous-host.env token lines, assisted-service.env token lines)`` of one release."""
    if profile.token_claim == "infra_env_id":  # 4.17: one token for everything
        return (
            [("AGENT_AUTH_TOKEN", auth["agent"]), ("PULL_SECRET_TOKEN", auth["agent"])],
            [("AGENT_AUTH_TOKEN", auth["agent"])],
        )
    return (
        [("PULL_SECRET_TOKEN", auth["agent"]), ("USER_AUTH_TOKEN", auth["user"])],
        [("USER_AUTH_TOKEN", auth["user"]), ("WATCHER_AUTH_TOKEN", auth["watcher"])],
    )


def release_images(info):
    """``RELEASE_IMAGES`` of assisted-service.env: one entry; a multi payload lists every architecture
    (pkg/asset/agent/image/releaseimage.go@9716c1f6046e225647e67af616a211f47b995e90)."""
    multi = info.get("multi_payload")
    entry = {
        "openshift_version": info["version"]
        if "@sha256:" in info["release_image"]
        else ".".join(info["version"].split(".")[:2]),
        "cpu_architecture": "multi" if multi else rpm_arch(info["payload_architecture"]),
        "url": info["release_image"],
        "version": info["version"],
    }
    if multi:
        entry["cpu_architectures"] = ["x86_64", "aarch64", "ppc64le", "s390x"]
    return json.dumps([entry], separators=(",", ":"))


def build_add_nodes_ignition(info, nodes_config, auth, profile):
    """Return the Ignition 3.2.0 config (a dict) of one add-nodes ISO.

    info: the cluster as node-joiner inspected it (``lab.clusterinfo.inspect``).
    nodes_config: the parsed nodes-config.yaml.
    auth: ``{agent, user, watcher, expiry (RFC 3339), public_key_b64, infra_env_id}`` (``lab.authtoken``).
    profile: the ``lab.versions.Profile`` of the release.
    """
    hosts = nodes_config.get("hosts") or []
    rendezvous_tokens, service_tokens = token_env(profile, auth)
    rendezvous = [
        ("NODE_ZERO_IP", NODE_ZERO_IP),
        ("SERVICE_BASE_URL", SERVICE_BASE_URL),
        ("IMAGE_SERVICE_BASE_URL", IMAGE_SERVICE_BASE_URL),
        *rendezvous_tokens,
        ("WORKFLOW_TYPE", "addnodes"),
    ]
    if profile.aiui_urls:
        rendezvous += [("AIUI_APP_API_URL", AIUI_APP_API_URL), ("AIUI_URL", AIUI_URL)]
    os_image = [
        {
            "openshift_version": info["version"],
            "cpu_architecture": rpm_arch(info["architecture"]),
            "url": info.get("os_image_url") or "",
            "version": info.get("os_image_version") or "",
        }
    ]
    entries = [
        (
            ADD_NODES_ENV,
            _env(
                [
                    ("CLUSTER_ID", info["cluster_id"]),
                    ("CLUSTER_NAME", info["name"]),
                    ("CLUSTER_API_VIP_DNS_NAME", info["api_dns_name"]),
                    (profile.expiry_variable, auth["expiry"]),
                ]
            ),
            0o644,
        ),
        (RENDEZVOUS_ENV, _env(rendezvous), 0o644),
        (
            ASSISTED_SERVICE_ENV,
            _env(
                [
                    ("AUTH_TYPE", AUTH_TYPE),
                    ("INSTALL_INVOKER", "agent-installer"),
                    ("STORAGE", "filesystem"),
                    ("RELEASE_IMAGES", release_images(info)),
                    ("INFRA_ENV_ID", auth["infra_env_id"]),
                    ("EC_PUBLIC_KEY_PEM", auth["public_key_b64"]),
                    *service_tokens,
                ]
            ),
            0o644,
        ),
        (
            IMAGES_ENV,
            _env(
                [
                    ("ASSISTED_SERVICE_HOST", "localhost:8090"),
                    ("ASSISTED_SERVICE_SCHEME", "http"),
                    ("OS_IMAGES", json.dumps(os_image, separators=(",", ":"))),
                ]
            ),
            0o644,
        ),
        (START_CLUSTER_ENV, _env([("REQUIRED_MASTER_NODES", 0), ("REQUIRED_WORKER_NODES", len(hosts))]), 0o644),
        (AGENT_INSTALLER_ENV, _env([("RELEASE_IMAGE", info["release_image"])]), 0o644),
        (ISSUE_FILE, "\\S\nOpenShift Agent Installer image for %s\n" % info["name"], 0o644),
        (ADD_NODE_SCRIPT, ADD_NODE_SH, 0o755),
        (PULL_SECRET_FILE, info["pull_secret_json"], 0o600),
    ]
    mirrors = list(info.get("mirrors") or []) + list(info.get("icsp_mirrors") or [])
    if mirrors:
        entries.append((REGISTRIES_CONF, registries_conf(mirrors), 0o644))
    if info.get("user_ca_bundle"):
        entries.append((CA_BUNDLE_FILE, info["user_ca_bundle"], 0o600))
    if info.get("chrony_conf") is not None and profile.minor >= (4, 19):  # newest ignition.go only
        entries.append((CHRONY_CONF, info["chrony_conf"], 0o644))
    directories = []
    entries += _cluster_config_files(info, profile, directories)
    entries += agentmanifests.host_config_files(hosts)
    entries += agentmanifests.network_files(hosts)
    entries += agentmanifests.manifest_files(info, hosts)

    core = {"name": "core"}
    if info.get("ssh_key"):
        core["sshAuthorizedKeys"] = [info["ssh_key"]]
    storage = {"files": [_file(path, content, mode) for path, content, mode in entries]}
    if directories:
        storage["directories"] = directories
    return {
        "ignition": {"version": IGNITION_VERSION},
        "passwd": {"users": [core]},
        "storage": storage,
        "systemd": {"units": [{"name": "agent-add-node.service", "enabled": True, "contents": ADD_NODE_UNIT}]},
    }


def _cluster_config_files(info, profile, directories):
    """``/etc/assisted/clusterconfig``: 4.18+ always (import-cluster-config.json, indented JSON); 4.17 only the
    worker ignition endpoint, compact, when the cluster has one."""
    files = []
    endpoint = info.get("ignition_endpoint")
    if profile.import_cluster_config:
        user_managed = info["platform"] in USER_MANAGED_NETWORKING_PLATFORMS
        files.append(
            (
                IMPORT_CLUSTER_CONFIG,
                json.dumps({"networking": {"userManagedNetworking": user_managed}}, indent=2),
                0o644,
            )
        )
        if endpoint:
            files.append((WORKER_IGNITION_ENDPOINT, json.dumps(endpoint, indent=2), 0o644))
    elif endpoint:
        files.append((WORKER_IGNITION_ENDPOINT, json.dumps(endpoint, separators=(",", ":")), 0o644))
    if files:
        directories.append({"path": CLUSTER_CONFIG_DIR, "user": {"name": "root"}, "mode": 0o644})
    return files


def registries_conf(mirrors):
    """containers-registries.conf(5) v2 for IDMS-style ``[{source, mirrors}]``."""
    out = ["unqualified-search-registries = []\n"]
    for entry in mirrors:
        out.append(
            '\n[[registry]]\n  prefix = ""\n  location = "%s"\n  mirror-by-digest-only = true\n' % entry["source"]
        )
        for mirror in entry.get("mirrors") or []:
            out.append('\n  [[registry.mirror]]\n    location = "%s"\n' % mirror)
    return "".join(out)


def config_image_files(config):
    """``[(path, bytes, mode)]`` of the files an ``agentconfig.noarch.iso`` carries, in Ignition order."""
    return [
        (f["path"], decode_data_url(f["contents"]["source"]), f.get("mode", 0o644))
        for f in config.get("storage", {}).get("files", [])
        if any(fragment in f["path"] for fragment in CONFIG_IMAGE_FILES)
    ]


def files_by_path(config):
    """{path: bytes} of an Ignition config's storage files (for tests and the lab hosts)."""
    return {f["path"]: decode_data_url(f["contents"]["source"]) for f in config.get("storage", {}).get("files", [])}


def read_env_file(text):
    """Parse KEY=VALUE lines (as systemd EnvironmentFile= does for these simple files)."""
    if isinstance(text, bytes):
        text = text.decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
