# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Ignition config of a node-joiner add-nodes image says: cluster, hosts, architecture, version, expiry.

The errors of every image reader (this one, the initramfs and ISO readers of iso.py) are defined here, under one
root (:class:`IsoError`).

Never returns a secret: tokens are only decoded for their ``exp`` claim. The files read, as node-joiner
(openshift/installer pkg/asset/agent/image/ignition.go@00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9, and
@3075c3231aef1a206c4ce065b74b61187ecf6229 for 4.17) writes them:

* ``/etc/assisted/add-nodes.env``: ``CLUSTER_ID``, ``CLUSTER_NAME``, ``CLUSTER_API_VIP_DNS_NAME`` and the token
  expiry, ``AUTH_TOKEN_EXPIRY`` from 4.18 (installer PR #9039; ``getAddNodesEnv`` at
  ignition.go@5e705f0f658f4030865683bee11bc0e45bf61cfb), ``AGENT_AUTH_TOKEN_EXPIRY`` on 4.17 (PR #8802; the 4.17-era
  ignition.go@3075c32... above predates it). The token expiry is the earlier of that and the earliest ``exp`` of the
  tokens in ``/etc/assisted/rendezvous-host.env`` and ``/usr/local/share/assisted-service/assisted-service.env``
  (decoded, never verified): node-joiner 4.17 writes a fresh now + 48 h into add-nodes.env even when it reuses an
  older token, whose ``exp`` is what the host's agent enforces
  (pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d, ``createOrUpdateAuthTokenSecret``).
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

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import clock
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import normalize_architecture
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.token import AgentToken

CONFIG_NAME = "config.ign"
ADD_NODES_ENV_PATH = "/etc/assisted/add-nodes.env"
TOKEN_ENV_PATHS = ("/etc/assisted/rendezvous-host.env", "/usr/local/share/assisted-service/assisted-service.env")
TOKEN_VARIABLES = ("AGENT_AUTH_TOKEN", "PULL_SECRET_TOKEN", "USER_AUTH_TOKEN", "WATCHER_AUTH_TOKEN")
EXPIRY_VARIABLES = ("AUTH_TOKEN_EXPIRY", "AGENT_AUTH_TOKEN_EXPIRY")
IMAGES_ENV_PATH = "/usr/local/share/assisted-service/images.env"
INFRAENV_PATH = "/etc/assisted/manifests/infraenv.yaml"
CLUSTER_IMAGE_SET_PATH = "/etc/assisted/manifests/cluster-image-set.yaml"
_HOST_FILE_RE = re.compile(
    r"^/etc/assisted/(?:hostconfig/([^/]+)/(mac_addresses|role)|hostnames/([^/]+)|network/host(\d+)/mac_interface\.ini)$"
)
_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5,19}$")
_UNNAMED_HOST_RE = re.compile(r"^host-\d+$")
_CPU_ARCH_RE = re.compile(r"^\s*cpuArchitecture:\s*[\"']?([\w-]+)", re.MULTILINE)


# --- the errors of the image readers (this file; the initramfs and ISO readers of iso.py): one root, so that a
# caller can catch them all


class IsoError(Day2Error):
    """Base class of every error raised by the ISO, initrd and Ignition readers and the kernel-argument edit."""


class IsoLayoutError(IsoError):
    """The file is not a CoreOS live ISO (or initrd) we can read or edit: missing file, bad JSON, bad offsets."""


class EmbedAreaError(IsoError):
    """The Ignition embed area (or an initrd) holds data that cannot be decoded."""


class CapacityError(IsoError):
    """New content does not fit into its area."""


class KargsMismatchError(IsoError):
    """The kernel-argument regions of one ISO do not hold the same arguments."""


class IgnitionContentError(IsoError):
    """The Ignition config is not JSON, or a file in it cannot be decoded."""


def parse_ignition(raw: bytes) -> dict[str, Any]:
    """``config.ign`` bytes as a dict."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise IgnitionContentError(f"{CONFIG_NAME} is not valid JSON: {exc}")
    if not isinstance(value, dict):
        raise IgnitionContentError(f"{CONFIG_NAME} must hold a JSON object, got {type(value).__name__}")
    return value


def decode_data_url(source: Any, compression: str | None = None) -> bytes:
    """The bytes of an Ignition ``data:`` URL (base64 or percent-encoded), gunzipped if compressed."""
    if not isinstance(source, str) or not source.startswith("data:") or "," not in source:
        raise IgnitionContentError(f"expected a data: URL, got {source[:40] if isinstance(source, str) else source!r}")
    if compression not in (None, "", "gzip"):
        raise IgnitionContentError(f"unsupported compression {compression!r} (Ignition knows gzip)")
    header, payload = source[5:].split(",", 1)
    try:
        data = unquote_to_bytes(payload)
        data = base64.b64decode(data, validate=True) if header.split(";")[-1] == "base64" else data
    except (ValueError, TypeError) as exc:
        raise IgnitionContentError(f"undecodable data URL: {exc}")
    try:
        return gzip.decompress(data) if compression else data
    except (OSError, EOFError, zlib.error) as exc:
        raise IgnitionContentError(f"corrupt gzip data URL: {exc}")


def ignition_files(ignition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{path: file entry}`` of ``storage.files``; a later entry for a path wins."""
    entries = (ignition.get("storage") or {}).get("files") or []
    return {entry["path"]: entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("path"), str)}


def file_text(files: dict[str, dict[str, Any]], path: str) -> str | None:
    """The text of the Ignition file ``path``, or None when the config has no such file."""
    if path not in files:
        return None
    contents = files[path].get("contents") or {}
    try:
        source = contents.get("source")
        return "" if source is None else decode_data_url(source, contents.get("compression")).decode("utf-8")
    except (IgnitionContentError, UnicodeDecodeError) as exc:
        raise IgnitionContentError(f"ignition file {path}: {exc}")


def parse_env_file(text: str | None) -> dict[str, str]:
    """``KEY=VALUE`` lines (optionally ``export``ed, optionally quoted) as a dict."""
    env = {}
    for line in (text or "").splitlines():
        key, equals, value = re.sub(r"^export\s+", "", line.strip()).partition("=")
        if equals and not key.startswith("#"):
            value = value.strip()
            env[key.strip()] = value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value
    return env


def hosts_of(files: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The hosts an add-nodes config is for, sorted by hostname: ``[{hostname, mac_addresses, role, interfaces}]``.

    hostconfig directories first; static-network directories and hostname files whose MACs no hostconfig directory
    claims are added too (configs written without hostconfig).
    """
    macs_of: dict[str, list[str]] = {}
    roles: dict[str, str | None] = {}
    hostnames: dict[str, str | None] = {}
    network: dict[int, list[tuple[str, str]]] = {}
    for path in sorted(files):
        for host, kind, mac, number in _HOST_FILE_RE.findall(path):
            text = file_text(files, path) or ""
            if kind == "mac_addresses":
                macs_of[host] = [line.strip().lower() for line in text.splitlines() if line.strip()]
            elif kind or mac:
                (roles if kind else hostnames)[host or mac.lower()] = text.strip() or None
            else:  # "MAC=ifname" lines, either way round
                for line in text.splitlines():
                    key, equals, value = (part.strip() for part in line.strip().partition("="))
                    if equals and key[:1] not in ("#", ";", "["):
                        found, name = (key, value) if _MAC_RE.match(key) or not _MAC_RE.match(value) else (value, key)
                        if not _MAC_RE.match(found):
                            raise IgnitionContentError(f"mac_interface.ini line {line.strip()!r} has no MAC address")
                        network.setdefault(int(number), []).append((found.lower(), name))
    interface_of = dict(pair for pairs in network.values() for pair in pairs)
    candidates = sorted(macs_of.items()) + [(None, [mac for mac, _name in network[n]]) for n in sorted(network)]
    hosts: list[dict[str, Any]] = []
    claimed: set[str] = set()
    for directory, macs in candidates + [(None, [mac]) for mac in sorted(hostnames)]:
        if directory is None and (not macs or claimed.intersection(macs)):
            continue
        claimed.update(macs)
        named = [hostnames[mac] for mac in macs if hostnames.get(mac)]
        hostname = named[0] if named else None if directory is None or _UNNAMED_HOST_RE.match(directory) else directory
        interfaces = [{"mac_address": mac, "name": interface_of[mac]} for mac in macs if mac in interface_of]
        role = roles.get(directory or "")
        hosts.append({"hostname": hostname, "mac_addresses": macs, "role": role, "interfaces": interfaces})
    return sorted(hosts, key=lambda item: (item["hostname"] is None, item["hostname"] or "", item["mac_addresses"][:1]))


def moment(text: str | None) -> Any:
    """The time of an RFC 3339 text; None for none or one that is no time."""
    try:
        return clock.parse_rfc3339(text)
    except ValueError:
        return None


def _yaml(text: str | None) -> dict[str, Any]:
    try:
        document = yaml.safe_load(text) if yaml is not None and text else None
    except yaml.YAMLError:
        document = None
    return document if isinstance(document, dict) else {}


def token_values(ignition: dict[str, Any]) -> list[str]:
    """The agent tokens an add-nodes Ignition config carries (secrets: never shown)."""
    envs = [parse_env_file(file_text(ignition_files(ignition), path)) for path in TOKEN_ENV_PATHS]
    return [env[name] for env in envs for name in TOKEN_VARIABLES if env.get(name)]


def summarize_add_nodes_ignition(ignition: dict[str, Any]) -> dict[str, Any]:
    """Cluster identity, token expiry, hosts, architecture and version of an add-nodes Ignition config (a dict).

    Values missing from the config are None; ``add_nodes`` says whether it has ``/etc/assisted/add-nodes.env``.
    """
    files = ignition_files(ignition)
    env_text = file_text(files, ADD_NODES_ENV_PATH)
    env = parse_env_file(env_text)
    stated = [(moment(env.get(name)), f"{ADD_NODES_ENV_PATH} {name}") for name in EXPIRY_VARIABLES]
    expiry, source = next(((moment, where) for moment, where in stated if moment), (None, None))
    claimed = min(filter(None, (AgentToken(value).expiry for value in token_values(ignition))), default=None)
    if claimed and (expiry is None or claimed < expiry):  # no add-nodes.env expiry, or a later one (4.17's reuse)
        earlier = f" (earlier than {source}={clock.format_rfc3339(expiry)})" if expiry else ""
        expiry, source = claimed, f"exp claim of the tokens in {', '.join(TOKEN_ENV_PATHS)}{earlier}"
    try:
        images = json.loads(parse_env_file(file_text(files, IMAGES_ENV_PATH)).get("OS_IMAGES") or "[]")
    except ValueError:
        images = []
    rhcos = images[0] if isinstance(images, list) and images and isinstance(images[0], dict) else {}
    infraenv = file_text(files, INFRAENV_PATH)
    match = None if _yaml(infraenv) else _CPU_ARCH_RE.search(infraenv or "")  # without PyYAML (or bad YAML)
    arch = (_yaml(infraenv).get("spec") or {}).get("cpuArchitecture") or (match and match.group(1))
    arch_source = INFRAENV_PATH + " spec.cpuArchitecture"
    if not isinstance(arch, str) or not arch:
        arch, arch_source = rhcos.get("cpu_architecture"), IMAGES_ENV_PATH + " OS_IMAGES cpu_architecture"
    image_set = _yaml(file_text(files, CLUSTER_IMAGE_SET_PATH))
    name, spec = str((image_set.get("metadata") or {}).get("name")), image_set.get("spec") or {}
    version = rhcos.get("openshift_version") or (name[len("openshift-") :] if name.startswith("openshift-") else None)
    return {
        "add_nodes": env_text is not None,
        "cluster_id": env.get("CLUSTER_ID") or None,
        "cluster_name": env.get("CLUSTER_NAME") or None,
        "api_dns_name": env.get("CLUSTER_API_VIP_DNS_NAME") or None,
        "token_expiry": expiry and clock.format_rfc3339(expiry),
        "token_expiry_source": source,
        "hosts": hosts_of(files),
        "architecture": (normalize_architecture(arch) or arch) if isinstance(arch, str) and arch else None,
        "architecture_source": arch_source if isinstance(arch, str) and arch else None,
        "openshift_version": version if isinstance(version, str) and version else None,
        "release_image": (spec.get("releaseImage") or None) if isinstance(spec.get("releaseImage"), str) else None,
    }
