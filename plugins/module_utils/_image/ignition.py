# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Ignition config of a node-joiner add-nodes image says: cluster, hosts, architecture, version, expiry.

Never returns a secret: tokens are only decoded for their ``exp`` claim. The files read, as node-joiner
(openshift/installer pkg/asset/agent/image/ignition.go@00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9, and
@3075c3231aef1a206c4ce065b74b61187ecf6229 for 4.17) writes them:

* ``/etc/assisted/add-nodes.env``: ``CLUSTER_ID``, ``CLUSTER_NAME``, ``CLUSTER_API_VIP_DNS_NAME`` and the token
  expiry, ``AUTH_TOKEN_EXPIRY`` from 4.18 (installer PR #9039), ``AGENT_AUTH_TOKEN_EXPIRY`` on 4.17 (PR #8802).
  Without either, the earliest ``exp`` of the tokens in ``/etc/assisted/rendezvous-host.env`` and
  ``/usr/local/share/assisted-service/assisted-service.env`` (every add-nodes token expires after 48 hours).
* ``/etc/assisted/hostconfig/<hostname or host-<i>>/mac_addresses``: every MAC of one host, lower case, one per
  line -- pkg/asset/agent/agentconfig/agenthosts.go@110b87b60aac7ca91fec8bec3a205faf373fe22a (``HostConfigFiles``);
  ``role`` beside it when set.
* ``/etc/assisted/hostnames/<first MAC>``: the hostname (``addMacAddressToHostnameMappings``).
* ``/etc/assisted/network/host<N>/mac_interface.ini``: ``MAC=ifname`` lines of the hosts with static network. ``N``
  is not the host's position (the configs are sorted first), so interfaces are joined to hosts by MAC --
  pkg/asset/agent/manifests/staticnetworkconfig/generator.go@d70541cb937b733e75320fa6f8b4eb4062e036fe.
* architecture: ``/etc/assisted/manifests/infraenv.yaml`` ``spec.cpuArchitecture``
  (pkg/asset/agent/manifests/infraenv.go@c3e9b51178e9069018fd48d5c044bfbb6d50c2c8), else ``OS_IMAGES``
  ``cpu_architecture`` of ``/usr/local/share/assisted-service/images.env``.
* OpenShift version: ``OS_IMAGES`` ``openshift_version``, else ``/etc/assisted/manifests/cluster-image-set.yaml``
  ``metadata.name`` (``openshift-<version>``,
  pkg/asset/agent/manifests/clusterimageset.go@41ac01a1979cc999b02ef742ae8ead199d34c6f8).
"""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import re
import zlib
from typing import Any
from urllib.parse import unquote_to_bytes

try:
    import yaml
except ImportError:  # the regular expression below reads the one field needed
    yaml = None  # type: ignore[assignment]

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import format_rfc3339, parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.errors import IgnitionContentError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import normalize_architecture
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import AgentToken

CONFIG_NAME = "config.ign"
ADD_NODES_ENV_PATH = "/etc/assisted/add-nodes.env"
TOKEN_ENV_PATHS = ("/etc/assisted/rendezvous-host.env", "/usr/local/share/assisted-service/assisted-service.env")
TOKEN_VARIABLES = ("AGENT_AUTH_TOKEN", "PULL_SECRET_TOKEN", "USER_AUTH_TOKEN", "WATCHER_AUTH_TOKEN")
EXPIRY_VARIABLES = ("AUTH_TOKEN_EXPIRY", "AGENT_AUTH_TOKEN_EXPIRY")
IMAGES_ENV_PATH = "/usr/local/share/assisted-service/images.env"
INFRAENV_PATH = "/etc/assisted/manifests/infraenv.yaml"
CLUSTER_IMAGE_SET_PATH = "/etc/assisted/manifests/cluster-image-set.yaml"
HOSTCONFIG_DIR = "/etc/assisted/hostconfig/"
HOSTNAMES_DIR = "/etc/assisted/hostnames/"
NETWORK_DIR = "/etc/assisted/network/"

_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5,19}$")
_HOSTCONFIG_RE = re.compile("^" + re.escape(HOSTCONFIG_DIR) + r"([^/]+)/(mac_addresses|role)$")
_NETWORK_RE = re.compile("^" + re.escape(NETWORK_DIR) + r"host(\d+)/mac_interface\.ini$")
_UNNAMED_HOST_RE = re.compile(r"^host-\d+$")
_CPU_ARCH_RE = re.compile(r"^\s*cpuArchitecture:\s*[\"']?([\w-]+)", re.MULTILINE)


def parse_ignition(raw: bytes) -> dict[str, Any]:
    """Parse ``config.ign`` bytes into a dict."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise IgnitionContentError("%s is not valid JSON: %s" % (CONFIG_NAME, exc))
    if not isinstance(value, dict):
        raise IgnitionContentError("%s must hold a JSON object, got %s" % (CONFIG_NAME, type(value).__name__))
    return value


def decode_data_url(source: Any, compression: str | None = None) -> bytes:
    """Bytes of an Ignition ``data:`` URL (base64 or percent-encoded), gunzipped if compressed."""
    if not isinstance(source, str) or not source.startswith("data:") or "," not in source:
        raise IgnitionContentError(
            "expected a data: URL, got %r" % (source[:40] if isinstance(source, str) else source)
        )
    header, payload = source[5:].split(",", 1)
    try:
        if header.split(";")[-1] == "base64":
            data = base64.b64decode(unquote_to_bytes(payload), validate=True)
        else:
            data = unquote_to_bytes(payload)
    except (ValueError, TypeError) as exc:
        raise IgnitionContentError("undecodable data URL: %s" % exc)
    if compression in (None, ""):
        return data
    if compression != "gzip":
        raise IgnitionContentError("unsupported compression %r (Ignition knows gzip)" % compression)
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise IgnitionContentError("corrupt gzip data URL: %s" % exc)


def ignition_files(ignition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{path: file entry}`` of ``storage.files``; a later entry for a path wins."""
    files: dict[str, dict[str, Any]] = {}
    storage = ignition.get("storage") or {}
    for entry in storage.get("files") or []:
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            files[entry["path"]] = entry
    return files


def file_text(files: dict[str, dict[str, Any]], path: str) -> str | None:
    """The text of the ignition file ``path``, or None when the config has no such file."""
    entry = files.get(path)
    if entry is None:
        return None
    contents = entry.get("contents") or {}
    source = contents.get("source")
    if source is None:
        return ""
    try:
        return decode_data_url(source, contents.get("compression")).decode("utf-8")
    except (IgnitionContentError, UnicodeDecodeError) as exc:
        raise IgnitionContentError("ignition file %s: %s" % (path, exc))


def parse_env_file(text: str | None) -> dict[str, str]:
    """``KEY=VALUE`` lines (optionally ``export``ed, optionally quoted) into a dict."""
    env: dict[str, str] = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def parse_mac_interface_ini(text: str) -> list[tuple[str, str]]:
    """``[(mac lower case, interface)]`` from a ``mac_interface.ini`` (lines ``MAC=ifname``)."""
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;[" or "=" not in line:
            continue
        left, right = (part.strip() for part in line.split("=", 1))
        if not _MAC_RE.match(left) and _MAC_RE.match(right):
            left, right = right, left
        if not _MAC_RE.match(left):
            raise IgnitionContentError("mac_interface.ini line %r has no MAC address" % line)
        pairs.append((left.lower(), right))
    return pairs


def _macs(text: str) -> list[str]:
    return [line.strip().lower() for line in text.splitlines() if line.strip()]


def _host_sort_key(host: dict[str, Any]) -> tuple[bool, str, list[str]]:
    return (host["hostname"] is None, host["hostname"] or "", host["mac_addresses"][:1])


def hosts_of(files: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The hosts an add-nodes config is for: ``[{hostname, mac_addresses, interfaces, role}]``.

    hostconfig directories first; static-network directories and hostname files whose MACs no
    hostconfig directory claims are added too (configs written without hostconfig).
    """
    hostconfig: dict[str, list[str]] = {}
    roles: dict[str, str | None] = {}
    hostnames: dict[str, str | None] = {}
    network: dict[int, list[tuple[str, str]]] = {}
    for path in sorted(files):
        match = _HOSTCONFIG_RE.match(path)
        network_match = _NETWORK_RE.match(path)
        if match and match.group(2) == "mac_addresses":
            hostconfig[match.group(1)] = _macs(file_text(files, path) or "")
        elif match:
            roles[match.group(1)] = (file_text(files, path) or "").strip() or None
        elif path.startswith(HOSTNAMES_DIR):
            hostnames[path[len(HOSTNAMES_DIR) :].lower()] = (file_text(files, path) or "").strip() or None
        elif network_match:
            network[int(network_match.group(1))] = parse_mac_interface_ini(file_text(files, path) or "")
    interface_of = dict(pair for pairs in network.values() for pair in pairs)

    def host(dirname: str | None, macs: list[str]) -> dict[str, Any]:
        named = [hostnames[mac] for mac in macs if hostnames.get(mac)]
        hostname = named[0] if named else (None if dirname is None or _UNNAMED_HOST_RE.match(dirname) else dirname)
        return {
            "hostname": hostname,
            "mac_addresses": macs,
            "role": roles.get(dirname) if dirname else None,
            "interfaces": [{"mac_address": mac, "name": interface_of[mac]} for mac in macs if mac in interface_of],
        }

    hosts = [host(name, macs) for name, macs in sorted(hostconfig.items())]
    claimed = {mac for item in hosts for mac in item["mac_addresses"]}
    for index in sorted(network):
        macs = [mac for mac, _name in network[index]]
        if macs and not claimed.intersection(macs):
            hosts.append(host(None, macs))
            claimed.update(macs)
    for mac in sorted(hostnames):
        if mac not in claimed:
            hosts.append(host(None, [mac]))
    return sorted(hosts, key=_host_sort_key)


def _os_image(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    env = parse_env_file(file_text(files, IMAGES_ENV_PATH))
    try:
        images = json.loads(env.get("OS_IMAGES") or "[]")
    except ValueError:
        return {}
    return images[0] if isinstance(images, list) and images and isinstance(images[0], dict) else {}


def _yaml_document(text: str | None) -> dict[str, Any] | None:
    if yaml is None or not text:
        return None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return document if isinstance(document, dict) else None


def architecture_of(files: dict[str, dict[str, Any]]) -> tuple[str | None, str | None]:
    """``(RPM architecture, source)`` from infraenv.yaml, else images.env; ``(None, None)`` when neither says."""
    text = file_text(files, INFRAENV_PATH)
    if text:
        document = _yaml_document(text)
        value = ((document or {}).get("spec") or {}).get("cpuArchitecture") if document is not None else None
        if value is None and document is None:
            match = _CPU_ARCH_RE.search(text)
            value = match.group(1) if match else None
        if isinstance(value, str) and value:
            return normalize_architecture(value) or value, INFRAENV_PATH + " spec.cpuArchitecture"
    value = _os_image(files).get("cpu_architecture")
    if isinstance(value, str) and value:
        return normalize_architecture(value) or value, IMAGES_ENV_PATH + " OS_IMAGES cpu_architecture"
    return None, None


def version_of(files: dict[str, dict[str, Any]]) -> tuple[str | None, str | None]:
    """``(OpenShift version, release image)``; each None when the config does not say."""
    version = _os_image(files).get("openshift_version")
    document = _yaml_document(file_text(files, CLUSTER_IMAGE_SET_PATH)) or {}
    name = (document.get("metadata") or {}).get("name")
    if not version and isinstance(name, str) and name.startswith("openshift-"):
        version = name[len("openshift-") :]
    release = (document.get("spec") or {}).get("releaseImage")
    return (
        version if isinstance(version, str) and version else None,
        release if isinstance(release, str) and release else None,
    )


def token_expiry_of(files: dict[str, dict[str, Any]], env: dict[str, str]) -> tuple[str | None, str | None]:
    """``(expiry as RFC 3339 UTC, source)`` of the image's agent token; ``(None, None)`` when unknown."""
    for variable in EXPIRY_VARIABLES:
        try:
            moment = parse_rfc3339(env.get(variable))
        except ValueError:
            moment = None
        if moment is not None:
            return format_rfc3339(moment), "%s %s" % (ADD_NODES_ENV_PATH, variable)
    expiries: list[datetime.datetime] = []
    for path in TOKEN_ENV_PATHS:
        values = parse_env_file(file_text(files, path))
        for name in TOKEN_VARIABLES:
            moment = AgentToken(values[name]).expiry if values.get(name) else None
            if moment is not None:
                expiries.append(moment)
    if expiries:
        return format_rfc3339(min(expiries)), "exp claim of the tokens in %s" % ", ".join(TOKEN_ENV_PATHS)
    return None, None


def summarize_add_nodes_ignition(ignition: dict[str, Any]) -> dict[str, Any]:
    """Cluster identity, token expiry, hosts, architecture and version of an add-nodes Ignition config (a dict).

    Values missing from the config are None; ``add_nodes`` says whether it has ``/etc/assisted/add-nodes.env``.
    """
    files = ignition_files(ignition)
    env_text = file_text(files, ADD_NODES_ENV_PATH)
    env = parse_env_file(env_text)
    expiry, expiry_source = token_expiry_of(files, env)
    architecture, architecture_source = architecture_of(files)
    version, release_image = version_of(files)
    return {
        "add_nodes": env_text is not None,
        "cluster_id": env.get("CLUSTER_ID") or None,
        "cluster_name": env.get("CLUSTER_NAME") or None,
        "api_dns_name": env.get("CLUSTER_API_VIP_DNS_NAME") or None,
        "token_expiry": expiry,
        "token_expiry_source": expiry_source,
        "hosts": hosts_of(files),
        "architecture": architecture,
        "architecture_source": architecture_source,
        "openshift_version": version,
        "release_image": release_image,
    }
