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

oc's ``nodes-config.yaml`` (``day2_nodes_config``) is read the same way, as node-joiner reads it: its ``Config`` is
``cpuArchitecture``, ``sshKey``, ``bootArtifactsBaseURL`` and ``hosts`` of the same ``agent.Host`` (with the inline
``TypeMeta`` and ``metadata``) -- openshift/installer pkg/asset/agent/joiner/addnodesconfig.go
@d465fb6e27edadc0b118f98018ad1170666fddd4 (``Config``, ``Load``). node-joiner decodes it with sigs.k8s.io/yaml
``Unmarshal``, which drops a field it does not know without a word; here an unknown field is refused, since a
misspelt ``networkConfig`` would otherwise turn a static host into a DHCP one unnoticed. ``cpuArchitecture`` becomes
each of its hosts' ``cpu_architecture``; ``sshKey`` and ``bootArtifactsBaseURL`` the run's ``day2_ssh_key`` and
``day2_boot_artifacts_base_url`` (:func:`image_settings`: a different value set in both places is refused).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import pathlib
import re
from typing import Any

from ansible.module_utils.common.yaml import HAS_YAML, SafeLoader  # (the controller's ansible-core requires PyYAML)

if HAS_YAML:
    from yaml import YAMLError, load

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.redfish import is_http_url
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import HostVariables
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems, given, secret_name
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import redacted

# A file of hosts: how its problems name it, its setting, and why an unknown field is refused.
Kind = collections.namedtuple("Kind", "source setting unknown")
AGENT_CONFIG = Kind("(agent-config)", "day2_agent_config", "of an agent-config{} (the installer refuses it too)")
NODES_CONFIG = Kind("(nodes-config)", "day2_nodes_config", "of a nodes-config{} (node-joiner would drop it unseen)")
API_VERSIONS = ("v1alpha1", "v1beta1")
KIND = "AgentConfig"
# Config's fields (the JSON names); those day 2 does not use are listed as left alone.
FILE_FIELDS = ("apiVersion", "kind", "metadata", "hosts")
DAY1_FIELDS = ("additionalNTPSources", "rendezvousIP", "bootArtifactsBaseURL", "ipxeBaseURL", "minimalISO")
NODES_FIELDS = ("apiVersion", "kind", "metadata", "cpuArchitecture", "hosts")
# nodes-config field -> the setting it maps onto (the day2_iso option of the same meaning)
IMAGE_FIELDS = {"sshKey": "ssh_key", "bootArtifactsBaseURL": "boot_artifacts_base_url"}
# The host fields (the JSON names) -> the host keys they become.
HOST_FIELDS = {
    "hostname": "name",
    "role": "role",
    "rootDeviceHints": "root_device_hints",
    "interfaces": "interfaces",
    "networkConfig": "network_config",
    "bmc": "BMC",  # (Go field BMC, no JSON tag: decoded regardless of case, written bmc in the docs)
}
INTERFACE_FIELDS = {"name": "name", "macAddress": "mac_address"}
BMC_FIELDS = {
    "address": "bmc_address",
    "username": "bmc_username",
    "password": "bmc_password",
    "disableCertificateVerification": "bmc_verify_certs",
}
ROLES = ("master", "worker")
# Host key -> agent-config field, to name a problem of an agent-config host by the file's own words.
FIELD_NAMES = dict(
    {key: field for field, key in HOST_FIELDS.items() if key != field},
    mac_address="interfaces",
    cpu_architecture="cpuArchitecture",
    **{key: "bmc." + field for field, key in BMC_FIELDS.items()},
)


class _Loader(SafeLoader):
    """A YAML loader that, like the installer's, keeps ``10:20:30:40:50:59`` a text (YAML 1.1's base-60 integer
    would otherwise turn an unquoted all-digit MAC into a number)."""

    def integer(self, node: Any) -> Any:
        text = self.construct_scalar(node)
        return text if ":" in text else self.construct_yaml_int(node)


if HAS_YAML:  # (ansible-test's import sanity test has no PyYAML)
    _Loader.add_constructor("tag:yaml.org,2002:int", _Loader.integer)


@dataclasses.dataclass
class _File:
    """A file of hosts being read: its kind, its path and where its problems go."""

    kind: Kind
    path: str
    problems: Problems

    def fields(self, fields: dict[str, Any], known: Any, host: str, where: str = "") -> dict[str, Any]:
        """The fields of ``fields`` by their known names, or the host keys ``known`` maps them to (Go's JSON decoding
        matches names regardless of case); an unknown one is refused."""
        by_lower = {name.lower(): known[name] if isinstance(known, dict) else name for name in known}
        found: dict[str, Any] = {}
        for key, value in fields.items():
            if str(key).lower() in by_lower:
                found[by_lower[str(key).lower()]] = value
                continue
            top = host == self.kind.source  # (a field of the file, else of a host)
            fix = f"remove it from {self.path}" if top else f"remove it, or use one of: {', '.join(known)}"
            what = "is not a field " + self.kind.unknown.format(".yaml" if top else " host")
            shown = "(not shown)" if secret_name(str(key)) and not top else value
            self.problems.add(host, where + str(key), shown, what, fix)
        return found

    def host(self, index: int, item: Any) -> HostVariables | None:
        report, source = self.problems.add, self.kind.source
        if not isinstance(item, dict):
            report(source, f"hosts[{index}]", item, "is not a mapping", "write each host as hostname, interfaces...")
            return None
        name = next((value for key, value in item.items() if str(key).lower() == "hostname"), None)
        if not isinstance(name, str) or not name.strip():
            fix = "give every host its hostname (it becomes the Node's name, by which the join is followed)"
            report(source, f"hosts[{index}].hostname", name, "is not set", fix)
            return None
        fields = self.fields(item, HOST_FIELDS, name)
        role, interfaces, bmc = fields.pop("role", None), fields.get("interfaces"), fields.pop("BMC", None)
        if role == "master":
            fix = f"remove it from {self.path} (or point {self.kind.setting} at a file of the new workers only)"
            report(name, "role", role, f"is a control-plane host of {self.path}: node-joiner adds workers only", fix)
            return None
        if role not in (None, "", "worker"):
            report(name, "role", role, "is not a role", f"write worker (or leave it out): {', '.join(ROLES)}")
        if not isinstance(interfaces, list) or not interfaces:
            fix = "list the host's NICs as {name, macAddress} (at least one; the ISO recognises the host by them)"
            report(name, "interfaces", interfaces, "is not a non-empty list", fix)
            return None
        fields["interfaces"] = [  # (what is no mapping, the image checks name)
            self.fields(nic, INTERFACE_FIELDS, name, f"interfaces[{i}].") if isinstance(nic, dict) else nic
            for i, nic in enumerate(interfaces)
        ]
        if bmc is not None and not isinstance(bmc, dict):
            report(name, "bmc", "(not shown)", "is not a mapping", "write address, username, password")
        fields.update(self.fields(bmc, BMC_FIELDS, name, "bmc.") if isinstance(bmc, dict) else {})
        if isinstance(fields.get("bmc_verify_certs"), bool):  # (disableCertificateVerification)
            fields["bmc_verify_certs"] = not fields["bmc_verify_certs"]
        settings = {key: value for key, value in fields.items() if key != "name" and value not in (None, "")}
        return HostVariables(name, source=self.path, settings=settings)

    def hosts(self, listed: Any) -> list[HostVariables]:
        """The file's hosts, each once."""
        if not isinstance(listed, (list, type(None))):
            fix = "write hosts as a list of hostname, interfaces..."
            self.problems.add(self.kind.source, "hosts", listed, "is not a list", fix)
        items = listed if isinstance(listed, list) else []
        found = [host for index, item in enumerate(items) if (host := self.host(index, item))]
        names = [host.name for host in found]
        for name in sorted({name for name in names if names.count(name) > 1}):
            self.problems.add(name, "hostname", name, f"is listed more than once in {self.path}", "give each host once")
        return [host for host in found if names.count(host.name) == 1]


def _load(path: str, playbook_dir: str | None, kind: Kind, problems: Problems) -> tuple[_File, Any]:
    """The file (the path used) and its YAML document, None when it cannot be read. A relative path is taken from
    the current directory, else from the playbook's directory."""
    path, beside = os.path.expanduser(path), os.path.join(playbook_dir or "", os.path.expanduser(path))
    path = beside if not os.path.isabs(path) and not os.path.exists(path) and os.path.exists(beside) else path
    file = _File(kind, path, problems)
    try:
        document = load(pathlib.Path(path).read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, YAMLError) as error:
        what = "is not YAML: %s" if isinstance(error, YAMLError) else "cannot be read: %s"
        fix = "fix the file" if isinstance(error, YAMLError) else "give the path of the file"
        problems.add(kind.source, kind.setting, path, what % error, fix)
        return file, None
    if not isinstance(document, dict):
        problems.add(kind.source, kind.setting, path, "is not a mapping", "give the path of a file of hosts")
    return file, document if isinstance(document, dict) else None


def read_agent_config(path: str, playbook_dir: str | None, problems: Problems) -> tuple[list[HostVariables], list[str]]:
    """The hosts of the agent-config file at ``path`` (on the controller; none when it is empty) and the file-wide
    fields left alone."""
    file, document = _load(path, playbook_dir, AGENT_CONFIG, problems) if path else (None, None)
    if file is None or document is None:
        return [], []
    kind, version = document.get("kind"), document.get("apiVersion")
    if kind not in (None, KIND) or version not in (None, *API_VERSIONS):
        what = f"is not an agent-config.yaml (kind {kind}, apiVersion {version})"
        fix = f"give the path of a file of kind {KIND}, apiVersion {API_VERSIONS[-1]}"
        problems.add(AGENT_CONFIG.source, "day2_agent_config", file.path, what, fix)
        return [], []
    fields = file.fields(document, FILE_FIELDS + DAY1_FIELDS, AGENT_CONFIG.source)
    return file.hosts(fields.get("hosts")), sorted(set(fields) & set(DAY1_FIELDS))


def read_nodes_config(path: str, playbook_dir: str | None, problems: Problems) -> tuple[list[HostVariables], dict]:
    """The hosts of oc's nodes-config file at ``path`` (none when it is empty), each with the file's
    ``cpuArchitecture``, and its ``sshKey`` and ``bootArtifactsBaseURL`` ({day2_iso option: value})."""
    file, document = _load(path, playbook_dir, NODES_CONFIG, problems) if path else (None, None)
    if file is None or document is None:
        return [], {}
    fields = file.fields(document, dict({field: field for field in NODES_FIELDS}, **IMAGE_FIELDS), NODES_CONFIG.source)
    hosts = file.hosts(fields.get("hosts"))
    for host in hosts if given(fields.get("cpuArchitecture")) else []:
        host.settings["cpu_architecture"] = fields["cpuArchitecture"]
    return hosts, {key: fields[key] for key in IMAGE_FIELDS.values() if given(fields.get(key))}


def image_settings(from_file: dict[str, Any], settings: dict[str, Any], path: str, problems: Problems) -> dict:
    """The image step's ``ssh_key`` and ``boot_artifacts_base_url``: the setting (``day2_*``), else the
    nodes-config's; both set and different is refused. (A password in a URL is not shown.)"""
    merged = {key: str(settings.get(key) or "").strip() for key in IMAGE_FIELDS.values()}
    for field, key in IMAGE_FIELDS.items():
        theirs, url = from_file.get(key), key == "boot_artifacts_base_url"
        if theirs is None:
            continue
        if not isinstance(theirs, str) or (url and not is_http_url(theirs)):
            what, fix = "is not an http:// or https:// URL" if url else "is not a text", f"fix it in {path}"
        elif merged[key] and merged[key] != theirs.strip():
            what = f"differs from day2_{key} ({redacted(merged[key])}), which is set too"
            fix = f"set it in one place: in {path} or as day2_{key}"
        else:
            merged[key] = theirs.strip()
            continue
        problems.add(NODES_CONFIG.source, field, redacted(theirs), what, fix)
    return merged


def agent_config_password(path: str, name: str) -> str:
    """Host ``name``'s ``bmc.password`` in the agent-config file at ``path``, read at the moment of its use (the
    host records never carry it); empty when the file or the host has none."""
    hosts, _left_alone = read_agent_config(path, None, Problems())
    return next((str(h.settings.get("bmc_password") or "") for h in hosts if h.name == name), "")


def in_file_words(problem: dict[str, Any], path: str) -> dict[str, Any]:
    """A problem of an agent-config host, its field named as the file names it (``networkConfig...``), the file
    named in the message."""
    field, message = str(problem.get("field") or ""), str(problem.get("message") or "")
    key = re.match(r"[a-z_]+", field)
    renamed = FIELD_NAMES.get(key.group(0), key.group(0)) + field[key.end() :] if key else field
    renamed = renamed.replace(".mac_address", ".macAddress")
    message = message.replace(f'field "{field}"', f'field "{renamed}"', 1)
    return dict(problem, field=renamed, message=f"{message} (in {path})")
