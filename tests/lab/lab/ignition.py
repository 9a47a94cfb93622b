"""The Ignition config node-joiner embeds in an add-nodes ISO (FACTS.md section 3).

Only the files the lab and the collection look at are rendered, with the paths
and contents node-joiner uses; the real config carries many more (systemd units
for assisted-service, TLS material...).  The nmstate of each host is rendered to
NetworkManager keyfiles in a simple way: the real tool runs ``nmstatectl gc``.
"""

import base64
import json
from urllib.parse import unquote_to_bytes

IGNITION_VERSION = "3.2.0"
AUTH_TYPE = "agent-installer-local"
ADD_NODES_ENV = "/etc/assisted/add-nodes.env"
RENDEZVOUS_ENV = "/etc/assisted/rendezvous-host.env"
ASSISTED_SERVICE_ENV = "/usr/local/share/assisted-service/assisted-service.env"
NETWORK_DIR = "/etc/assisted/network"
HOSTNAMES_DIR = "/etc/assisted/hostnames"
HOSTCONFIG_DIR = "/etc/assisted/hostconfig"
ADD_NODE_SCRIPT = "/usr/local/bin/add-node.sh"
REGISTRIES_CONF = "/etc/containers/registries.conf"
PULL_SECRET_FILE = "/root/.docker/config.json"
# In the add-nodes workflow every node runs its own assisted-service.
NODE_ZERO_IP = "127.0.0.1"
SERVICE_BASE_URL = "http://127.0.0.1:8090/"
IMAGE_SERVICE_BASE_URL = "http://127.0.0.1:8888/"

ADD_NODE_SH = """#!/bin/bash
# Lab rendition of add-node.sh: wait until this host is known to the local
# assisted-service, then ask it to install the host into the existing cluster.
set -e
BASE_URL="${SERVICE_BASE_URL}api/assisted-install/v2"
auth=(-H "Authorization: ${PULL_SECRET_TOKEN}")
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


def build_add_nodes_ignition(cluster, nodes_config, token, token_expiry,
                             infra_env_id="", public_key_b64=""):
    """Return the Ignition 3.2.0 config (a dict) for one add-nodes ISO.

    cluster: dict with cluster_id, name, base_domain, api_dns_name, ssh_key,
        mirrors ([{source, mirrors: [...]}], may be empty), pull_secret_json (str).
    nodes_config: the parsed nodes-config.yaml (its sshKey overrides the cluster's).
    token: the agent auth token (JWT); token_expiry: its expiry in RFC 3339.
    infra_env_id, public_key_b64: for assisted-service.env (base64 of the PEM, as
        in the secret's authTokenPublicKey).
    """
    files = [
        _file(ADD_NODES_ENV, _env([
            ("CLUSTER_ID", cluster["cluster_id"]),
            ("CLUSTER_NAME", cluster["name"]),
            ("CLUSTER_API_VIP_DNS_NAME", cluster["api_dns_name"]),
            ("AUTH_TOKEN_EXPIRY", token_expiry),
        ])),
        # The agent reads its token as PULL_SECRET_TOKEN (a historical name).
        _file(RENDEZVOUS_ENV, _env([
            ("NODE_ZERO_IP", NODE_ZERO_IP),
            ("SERVICE_BASE_URL", SERVICE_BASE_URL),
            ("IMAGE_SERVICE_BASE_URL", IMAGE_SERVICE_BASE_URL),
            ("PULL_SECRET_TOKEN", token),
            ("USER_AUTH_TOKEN", token),
            ("WORKFLOW_TYPE", "addnodes"),
        ])),
        _file(ASSISTED_SERVICE_ENV, _env([
            ("AUTH_TYPE", AUTH_TYPE),
            ("INFRA_ENV_ID", infra_env_id),
            ("EC_PUBLIC_KEY_PEM", public_key_b64),
            ("WATCHER_AUTH_TOKEN", token),
        ])),
        _file(ADD_NODE_SCRIPT, ADD_NODE_SH, 0o755),
        _file(PULL_SECRET_FILE, cluster["pull_secret_json"], 0o600),
    ]
    if cluster.get("mirrors"):
        files.append(_file(REGISTRIES_CONF, registries_conf(cluster["mirrors"])))
    for index, host in enumerate(nodes_config.get("hosts") or []):
        files.extend(_host_files(index, host))

    ssh_key = nodes_config.get("sshKey") or cluster.get("ssh_key")
    core = {"name": "core"}
    if ssh_key:
        core["sshAuthorizedKeys"] = [ssh_key]
    return {
        "ignition": {"version": IGNITION_VERSION},
        "passwd": {"users": [core]},
        "storage": {"files": files},
        "systemd": {"units": [{"name": "agent-add-node.service", "enabled": True, "contents": ADD_NODE_UNIT}]},
    }


def _host_files(index, host):
    files = []
    interfaces = host.get("interfaces") or []
    host_dir = "%s/host%d" % (NETWORK_DIR, index)
    network = host.get("networkConfig")
    if network:
        for name, keyfile in nmstate_keyfiles(network).items():
            files.append(_file("%s/%s.nmconnection" % (host_dir, name), keyfile, 0o600))
        files.append(_file(host_dir + "/mac_interface.ini",
                           "".join("%s=%s\n" % (i["macAddress"].lower(), i["name"]) for i in interfaces), 0o600))
    name = host.get("hostname") or "host-%d" % index
    if interfaces and host.get("hostname"):
        files.append(_file("%s/%s" % (HOSTNAMES_DIR, interfaces[0]["macAddress"].lower()), host["hostname"], 0o600))
    if interfaces:
        files.append(_file("%s/%s/mac_addresses" % (HOSTCONFIG_DIR, name),
                           "".join(i["macAddress"].lower() + "\n" for i in interfaces)))
    if host.get("rootDeviceHints"):
        hints = "".join("%s: %s\n" % (k, json.dumps(v)) for k, v in sorted(host["rootDeviceHints"].items()))
        files.append(_file("%s/%s/root-device-hints.yaml" % (HOSTCONFIG_DIR, name), hints))
    files.append(_file("%s/%s/role" % (HOSTCONFIG_DIR, name), host.get("role") or "worker"))
    return files


def registries_conf(mirrors):
    """containers-registries.conf(5) v2 for IDMS-style ``[{source, mirrors}]``."""
    out = ['unqualified-search-registries = []\n']
    for entry in mirrors:
        out.append('\n[[registry]]\n  prefix = ""\n  location = "%s"\n'
                   '  mirror-by-digest-only = true\n' % entry["source"])
        for mirror in entry.get("mirrors") or []:
            out.append('\n  [[registry.mirror]]\n    location = "%s"\n' % mirror)
    return "".join(out)


def _default_gateways(network):
    """{interface name: {4: gateway, 6: gateway}} from the nmstate default routes."""
    gateways = {}
    for route in (network.get("routes") or {}).get("config") or []:
        dest = route.get("destination", "")
        family = 6 if ":" in dest else 4
        if dest in ("0.0.0.0/0", "::/0") and route.get("next-hop-interface"):
            gateways.setdefault(route["next-hop-interface"], {})[family] = route.get("next-hop-address")
    return gateways


def _ip_section(family, settings, gateway, dns):
    section = "ipv%d" % family
    if not settings or not settings.get("enabled", False):
        return "[%s]\nmethod=%s\n" % (section, "disabled")
    if settings.get("dhcp") or settings.get("autoconf"):
        return "[%s]\nmethod=auto\n" % section
    lines = ["[%s]" % section, "method=manual"]
    for n, addr in enumerate(settings.get("address") or [], start=1):
        value = "%s/%s" % (addr["ip"], addr["prefix-length"])
        if n == 1 and gateway:
            value += "," + gateway
        lines.append("address%d=%s" % (n, value))
    servers = [s for s in dns if (":" in s) == (family == 6)]
    if servers:
        lines.append("dns=%s;" % ";".join(servers))
    return "\n".join(lines) + "\n"


def nmstate_keyfiles(network):
    """{interface name: keyfile text} for the ethernet, vlan and bond interfaces of an nmstate."""
    gateways = _default_gateways(network)
    dns = ((network.get("dns-resolver") or {}).get("config") or {}).get("server") or []
    keyfiles = {}
    for iface in network.get("interfaces") or []:
        name = iface["name"]
        kind = iface.get("type", "ethernet")
        nm_type = {"ethernet": "ethernet", "vlan": "vlan", "bond": "bond"}.get(kind, kind)
        parts = ["[connection]\nid=%s\ntype=%s\ninterface-name=%s\nautoconnect=%s\n" % (
            name, nm_type, name, "false" if iface.get("state") == "down" else "true")]
        if kind == "ethernet" and iface.get("mac-address"):
            parts.append("[ethernet]\nmac-address=%s\n" % iface["mac-address"].upper())
        if kind == "vlan":
            vlan = iface.get("vlan") or {}
            parts.append("[vlan]\nid=%s\nparent=%s\n" % (vlan.get("id"), vlan.get("base-iface")))
        if kind == "bond":
            bond = iface.get("link-aggregation") or {}
            parts.append("[bond]\nmode=%s\n" % bond.get("mode", "balance-rr"))
        own_gw = gateways.get(name, {})
        parts.append(_ip_section(4, iface.get("ipv4"), own_gw.get(4), dns))
        parts.append(_ip_section(6, iface.get("ipv6"), own_gw.get(6), dns))
        keyfiles[name] = "\n".join(parts)
    return keyfiles


def files_by_path(config):
    """{path: bytes} of an Ignition config's storage files (for tests and the lab hosts)."""
    return {f["path"]: decode_data_url(f["contents"]["source"]) for f in config.get("storage", {}).get("files", [])}


def read_env_file(text):
    """Parse KEY=VALUE lines (as systemd EnvironmentFile= does for these simple files)."""
    if isinstance(text, bytes):
        text = text.decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
