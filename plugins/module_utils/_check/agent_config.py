# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A day-1 ``agent-config.yaml`` as the list of new workers (``day2_agent_config``).

The file is read as the installer reads it (openshift/installer pkg/types/agent/agent_config_type.go
@3d4734fdff2c701c7d749cca4b0fc80138fe5a9c, ``Config`` and ``Host``; loaded strictly, an unknown field is an error:
pkg/asset/agent/agentconfig/agent_config.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2 ``Load``). Of each host,
``hostname``, ``interfaces`` (``name``, ``macAddress``), ``networkConfig`` (nmstate), ``rootDeviceHints``, ``role``
and ``BMC`` (``address``, ``username``, ``password``, ``disableCertificateVerification``) become the same host
record an inventory host gives (``name``, ``interfaces``, ``network_config``, ``root_device_hints``, ``bmc_*``), so
the same checks apply. A ``role`` is ``master`` or ``worker`` or absent (pkg/asset/agent/agentconfig/agenthosts.go
@110b87b60aac7ca91fec8bec3a205faf373fe22a ``validateRoles``); ``master`` is refused here, since node-joiner adds
workers only. Go reads field names case-insensitively, so does this. The file-wide fields (``rendezvousIP``,
``additionalNTPSources``...) are day-1 settings of the whole cluster: they are listed as left alone.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import HostVariables
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

try:
    import yaml
except ImportError:  # pragma: no cover - ansible-core requires PyYAML
    yaml = None  # type: ignore[assignment]

SOURCE = "(agent-config)"
API_VERSIONS = ("v1alpha1", "v1beta1")
KIND = "AgentConfig"
# Config's fields (the JSON names); those day 2 does not use are listed as left alone.
FILE_FIELDS = (
    "apiVersion",
    "kind",
    "metadata",
    "additionalNTPSources",
    "rendezvousIP",
    "bootArtifactsBaseURL",
    "ipxeBaseURL",
    "minimalISO",
    "hosts",
)
USED_FILE_FIELDS = ("apiVersion", "kind", "metadata", "hosts")
HOST_FIELDS = {
    "hostname": "name",
    "role": None,
    "rootDeviceHints": "root_device_hints",
    "interfaces": "interfaces",
    "networkConfig": "network_config",
    "BMC": None,
}
INTERFACE_FIELDS = {"name": "name", "macAddress": "mac_address"}
BMC_FIELDS = {"address": "bmc_address", "username": "bmc_username", "password": "bmc_password"}
BMC_FIELDS_ALL = ("address", "username", "password", "disableCertificateVerification")
ROLES = ("master", "worker")
# Inventory key -> agent-config field, to name a problem of an agent-config host by the file's own words.
FIELD_NAMES = (
    ("name", "hostname"),
    ("network_config", "networkConfig"),
    ("root_device_hints", "rootDeviceHints"),
    ("bmc_address", "BMC.address"),
    ("bmc_username", "BMC.username"),
    ("bmc_password", "BMC.password"),
    ("bmc_verify_certs", "BMC.disableCertificateVerification"),
    ("mac_address", "interfaces"),
)


def _loader() -> Any:
    """A YAML loader that, like the installer's, keeps ``10:20:30:40:50:59`` a text (YAML 1.1's base-60 integer
    would otherwise turn an unquoted all-digit MAC into a number)."""

    class Loader(yaml.SafeLoader):
        pass

    def integer(loader: Any, node: Any) -> Any:
        text = loader.construct_scalar(node)
        return text if ":" in text else yaml.SafeLoader.construct_yaml_int(loader, node)

    Loader.add_constructor("tag:yaml.org,2002:int", integer)
    return Loader


def parse(text: str, path: str, problems: Problems) -> dict[str, Any] | None:
    """The file's document, or None (a problem reported) when it is no agent-config."""
    try:
        document = yaml.load(text, Loader=_loader())
    except yaml.YAMLError as error:
        problems.add(SOURCE, "day2_agent_config", path, "is not YAML: %s" % error, "fix the file")
        return None
    if not isinstance(document, dict):
        problems.add(SOURCE, "day2_agent_config", path, "is not a mapping", "give the path of an agent-config.yaml")
        return None
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, KIND) or version not in (None, *API_VERSIONS):
        problems.add(
            SOURCE,
            "day2_agent_config",
            path,
            "is not an agent-config.yaml (kind %s, apiVersion %s)" % (kind, version),
            "give the path of a file of kind %s, apiVersion %s" % (KIND, API_VERSIONS[-1]),
        )
        return None
    return document


def _field(given: dict[str, Any], known: Any) -> dict[str, Any]:
    """The fields of ``given`` by their known names (Go's JSON decoding matches names regardless of case);
    unknown ones under their own name, prefixed with ``?``."""
    by_lower = {name.lower(): name for name in known}
    found: dict[str, Any] = {}
    for key, value in given.items():
        found[by_lower.get(str(key).lower(), "?%s" % key)] = value
    return found


def _unknown(fields: dict[str, Any], host: str, where: str, known: Any, problems: Problems) -> None:
    for key in sorted(name for name in fields if name.startswith("?")):
        problems.add(
            host,
            where + key[1:],
            fields[key] if "pass" not in key.lower() else "(not shown)",
            "is not a field of an agent-config host (the installer refuses it too)",
            "remove it, or use one of: %s" % ", ".join(known),
        )


def _interfaces(value: Any, host: str, problems: Problems) -> Any:
    if not isinstance(value, list) or not value:
        problems.add(
            host,
            "interfaces",
            value,
            "is not a non-empty list",
            "list the host's NICs as {name, macAddress} (at least one; the ISO recognises the host by them)",
        )
        return None
    converted = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            converted.append(item)  # the image checks name it
            continue
        fields = _field(item, INTERFACE_FIELDS)
        _unknown(fields, host, "interfaces[%d]." % index, INTERFACE_FIELDS, problems)
        converted.append({INTERFACE_FIELDS[key]: v for key, v in fields.items() if key in INTERFACE_FIELDS})
    return converted


def _bmc(value: Any, host: str, problems: Problems) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(host, "BMC", "(not shown)", "is not a mapping", "write address, username, password")
        return {}
    fields = _field(value, BMC_FIELDS_ALL)
    _unknown(fields, host, "BMC.", BMC_FIELDS_ALL, problems)
    settings = {BMC_FIELDS[key]: v for key, v in fields.items() if key in BMC_FIELDS and v not in (None, "")}
    if "disableCertificateVerification" in fields:
        disabled = fields["disableCertificateVerification"]
        settings["bmc_verify_certs"] = (not disabled) if isinstance(disabled, bool) else disabled
    return settings


def _host(index: int, item: Any, path: str, problems: Problems) -> HostVariables | None:
    where = "hosts[%d]" % index
    if not isinstance(item, dict):
        problems.add(SOURCE, where, item, "is not a mapping", "write each host as hostname, interfaces...")
        return None
    fields = _field(item, HOST_FIELDS)
    name = fields.get("hostname")
    if not isinstance(name, str) or not name.strip():
        problems.add(
            SOURCE,
            where + ".hostname",
            name,
            "is not set",
            "give every host its hostname (it becomes the Node's name, by which the join is followed)",
        )
        return None
    _unknown(fields, name, "", HOST_FIELDS, problems)
    role = fields.get("role")
    if role == "master":
        problems.add(
            name,
            "role",
            role,
            "is a control-plane host of the day-1 file: node-joiner adds workers only",
            "remove it from %s (or point day2_agent_config at a file of the new workers only)" % path,
        )
        return None
    if role not in (None, "", "worker"):
        problems.add(name, "role", role, "is not a role", "write worker (or leave it out): %s" % ", ".join(ROLES))
    interfaces = _interfaces(fields.get("interfaces"), name, problems)
    if interfaces is None:
        return None
    host = HostVariables(name)
    host.source = path
    settings = _bmc(fields.get("BMC"), name, problems)
    settings["interfaces"] = interfaces
    for field, key in (("rootDeviceHints", "root_device_hints"), ("networkConfig", "network_config")):
        if fields.get(field) is not None:
            settings[key] = fields[field]
    host.settings = settings
    return host


def agent_config_hosts(document: dict[str, Any], path: str, problems: Problems) -> tuple[list[HostVariables], list]:
    """The file's hosts as host records, and the file-wide fields it sets that day 2 leaves alone."""
    fields = _field(document, FILE_FIELDS)
    for key in sorted(name for name in fields if name.startswith("?")):
        problems.add(
            SOURCE,
            key[1:],
            fields[key],
            "is not a field of an agent-config.yaml (the installer refuses it too)",
            "remove it from %s" % path,
        )
    hosts = fields.get("hosts")
    if hosts is None:
        hosts = []
    if not isinstance(hosts, list):
        problems.add(SOURCE, "hosts", hosts, "is not a list", "write hosts as a list of hostname, interfaces...")
        hosts = []
    found = [_host(index, item, path, problems) for index, item in enumerate(hosts)]
    records = [host for host in found if host is not None]
    names = [host.name for host in records]
    for name in sorted({name for name in names if names.count(name) > 1}):
        problems.add(name, "hostname", name, "is listed more than once in %s" % path, "give each host once")
    ignored = sorted(key for key in fields if key in FILE_FIELDS and key not in USED_FILE_FIELDS)
    return [host for host in records if names.count(host.name) == 1], ignored


def read_agent_config(path: str, problems: Problems) -> tuple[list[HostVariables], list]:
    """The hosts of the agent-config file at ``path`` (on the controller) and the file-wide fields left alone."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as error:
        problems.add(SOURCE, "day2_agent_config", path, "cannot be read: %s" % error, "give the path of the file")
        return [], []
    document = parse(text, path, problems)
    if document is None:
        return [], []
    return agent_config_hosts(document, path, problems)


def in_file_words(problem: dict[str, Any], path: str) -> dict[str, Any]:
    """A problem of an agent-config host, its field named as the file names it (``networkConfig...``), the file
    named in the message."""
    field = str(problem.get("field") or "")
    renamed = field
    for inventory_key, file_field in FIELD_NAMES:
        if field == inventory_key or field.startswith(inventory_key + ".") or field.startswith(inventory_key + "["):
            renamed = file_field + field[len(inventory_key) :]
            break
    renamed = renamed.replace(".mac_address", ".macAddress")
    message = str(problem.get("message") or "")
    if renamed != field:
        message = message.replace('field "%s"' % field, 'field "%s"' % renamed, 1)
    return dict(problem, field=renamed, message="%s (in %s)" % (message, path))
