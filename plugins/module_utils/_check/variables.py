# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variables of a run: which of a new worker's variables are host keys, which are mistakes and which belong to
something else; and the play's settings, checked against the role's argument spec.

A host's variables in a play are everything Ansible knows about it: its own, its groups', ``all``'s, the extra
variables and Ansible's own. Host keys are always read from the host. Of the other names:

- Ansible's own, those every host of the play has alike (``all``, extra variables: what the play's own host sees
  too) and the login variables the playbooks read from the group (``kubeconfig``...) are nobody's mistake;
- a name that resembles a host key (``gatway``, ``dns_server``, ``mac``, ``bmc_user``, ``rootDeviceHints``) is a
  typo and refused, naming the key;
- a setting of this collection (``day2_*``) set on the new workers only is refused: the role reads it from the
  play, where it would be missing;
- a name that only feeds another variable is left alone: one that another of the host's variables uses in a
  template, one of an encrypted file, one of the ``vault_`` convention (Ansible's documented vault layout:
  ``bmc_password: "{{ vault_bmc_password }}"`` in ``group_vars/<group>/vars.yml``, ``vault_bmc_password`` in an
  encrypted ``vault.yml`` beside it);
- any other name is left alone and reported, since other plays' groups may set it on the same hosts.

The settings: roles/day2/meta/argument_specs.yml is the one list of them (entry point ``main``) with their types.
A play variable named like one of the collection's but unknown to it (``day2_boot_methd``, ``DAY2_PXE``) is
refused naming the one meant, as host variables are.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import pathlib
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.yaml import yaml_load  # PyYAML's safe loader; ansible-core needs PyYAML
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.redfish import is_http_url
from ansible_collections.openshift_agent.day2.plugins.module_utils._common import releases
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems, secret_name
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import SECRET_HOST_KEYS

PLAY = "(play)"
PREFIX = "day2_"  # the collection's one namespace of settings
VAULT_PREFIX = "vault_"  # Ansible's convention for a variable kept in a vault and used through another one
ROLE_SPECS = os.path.join("roles", "day2", "meta", "argument_specs.yml")
# Ansible's own variables, present on every host ("Special Variables" of the Ansible documentation).
MAGIC_VARIABLES = frozenset(
    (  # noqa: SIM905 (a list of words)
        "environment group_names groups hostvars inventory_dir inventory_file inventory_hostname "
        "inventory_hostname_short omit play_hosts playbook_dir role_name role_names role_path vars"
    ).split()
)
# The login of every run, which playbooks/vars/auth.yml reads from the play or from the new workers' group.
LOGIN_VARIABLES = frozenset(("kubeconfig", "context", "k8s_host", "k8s_api_key", "k8s_validate_certs", "k8s_ca_cert"))
# How alike a name must be to a known key to be called its typo (difflib ratio): "gatway" and "dns_server" are,
# "rack" is not. With as many words as the key, every word must also be alike, so "ntp_servers" is no typo of
# "dns_servers"; with another number of words the whole name must be closer.
TYPO_RATIO, WORD_RATIO, TYPO_RATIO_OTHER_WORDS = 0.75, 0.5, 0.85
# A name that begins a key ("mac", "bmc_user", "root_device") or ends one ("username") must be this long.
MIN_PART = 3
# Other names people give the host keys (as normalized by ``normalized``).
SYNONYMS = {
    alias: key
    for key, aliases in {
        "ip": "ipv4 ipv4_address ip_address address",
        "prefix_length": "netmask mask cidr ipv4_prefix ipv4_prefix_length",
        "gateway": "ipv4_gateway gw",
        "ipv6_gateway": "ipv6_gw",
        "ipv6": "ipv6_address",
        "dns_servers": "nameservers name_servers resolvers",
        "network_config": "nmstate",
        "interface": "nic",
        "interfaces": "nics",
        "cpu_architecture": "arch architecture",
        "root_device_hints": "disk install_disk installation_disk",
        "bmc_address": "bmc bmc_ip bmc_url bmc_host ipmi_address redfish_address redfish_url",
        "bmc_password": "bmc_pass",
        "bmc_username": "bmc_user bmc_login",
    }.items()
    for alias in aliases.split()
}
# A value of a name that looks like this is never shown (it may be a password under a misspelt name).
NOT_SHOWN = "(not shown)"
SPEC_KEYS = ("type", "elements", "choices", "options")
MISPLACED_FIX = (
    "the roles read it from the play, not from the new workers: set it for group all, in the play or with -e"
)


@dataclasses.dataclass
class HostVariables:
    """One host's variables, sorted: ``settings`` (host key -> value), ``foreign`` (names left alone), ``problems``
    (of misspelt or misplaced names, and of host keys that cannot be templated) and ``source`` (where the host is
    defined: "" for the inventory, else the path of the day-1 agent-config.yaml)."""

    name: str
    source: str = ""
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    foreign: list[str] = dataclasses.field(default_factory=list)
    problems: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def normalized(name: str) -> str:
    """``rootDeviceHints``, ``Root-Device-Hints`` and ``ROOT_DEVICE_HINTS`` all become ``root_device_hints``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[-_\s.]+", "_", spaced).strip("_").lower()


def _alike(name: str, key: str) -> bool:
    """A misspelling (difflib), word by word when both have as many words."""
    ratio = difflib.SequenceMatcher(None, name, key).ratio()
    words, key_words = name.split("_"), key.split("_")
    if ratio < TYPO_RATIO or len(words) != len(key_words):
        return ratio >= TYPO_RATIO_OTHER_WORDS
    return all(difflib.SequenceMatcher(None, a, b).ratio() >= WORD_RATIO for a, b in zip(words, key_words))


def close_key(name: str, known: Sequence[str]) -> str | None:
    """The known key ``name`` is most likely a mistake for, or None.

    In this order: equal but for case, ``-``/``_`` and camelCase (``rootDeviceHints``, ``vlanid``); another name
    people use (``netmask``, ``gw``); the beginning of a key (``mac``, ``bmc_user``, ``root_device``); a misspelling
    (``gatway``, ``dns_server``, ``root_device_hint``); a key with more words after it (``ip_address``,
    ``gateway_ip``) or before it (``default_gateway``); the end of a key (``username``).
    """
    norm = normalized(name)
    same = [key for key in known if norm.replace("_", "") == key.replace("_", "")]
    same += [SYNONYMS[norm]] if SYNONYMS.get(norm) in known else []
    starts = sorted((key for key in known if key.startswith(norm)), key=len) if len(norm) >= MIN_PART else []
    close = [key for key in difflib.get_close_matches(norm, known, n=3, cutoff=TYPO_RATIO) if _alike(norm, key)]
    longer = sorted((key for key in known if norm.startswith(key + "_") or norm.endswith("_" + key)), key=len)
    ends = sorted((key for key in known if len(norm) > MIN_PART and key.endswith("_" + norm)), key=len)
    return next(iter([*same, *starts, *close, *reversed(longer), *ends]), None)


def _shown(name: str, read: Callable[[str], Any], secret: bool = False) -> Any:
    """The value of a variable as a message may show it: never a secret's, nor one that cannot be read."""
    try:
        return NOT_SHOWN if secret or secret_name(name) else read(name)
    except Day2Error:
        return "(cannot be templated)"


def sort_variables(
    host: str,
    names: Iterable[str],
    read: Callable[[str], Any],
    known: Sequence[str],
    shared: Container[str],
    feeding: Container[str] = (),
) -> HostVariables:
    """Sort the variable ``names`` of ``host``; ``read(name)`` gives a value (raises Day2Error when it cannot be
    templated); ``shared``: the names every host of the play has alike; ``feeding``: the names that only feed
    another variable (another of the host's variables uses them in a template, or an encrypted file holds them:
    Ansible's vault layout, ``bmc_password: "{{ vault_bmc_password }}"``), left alone like those of the ``vault_``
    convention. The value of a mistake is shown unless it is, or resembles, a secret host key (``bmc_pasword``)."""
    found, problems = HostVariables(host), Problems()
    for name in sorted(names):
        if name in known:
            try:
                found.settings[name] = read(name)
            except Day2Error as error:
                fix = "define the variables it uses (or write a literal value)"
                problems.add(host, name, "(cannot be templated)", f"cannot be templated: {error.message}", fix)
        elif name.startswith("ansible_") or name in MAGIC_VARIABLES or name in LOGIN_VARIABLES or name in shared:
            continue
        elif name.startswith(PREFIX):
            problems.add(host, name, _shown(name, read), "is a play variable of this collection", MISPLACED_FIX)
        elif name in feeding or name.startswith(VAULT_PREFIX) or not (key := close_key(name, known)):
            found.foreign.append(name)  # (feeds another variable, or resembles no host key)
        else:
            what, shown = "is not a host variable of this collection", _shown(name, read, key in SECRET_HOST_KEYS)
            problems.add(host, name, shown, what, f'did you mean "{key}"? Rename it')
    found.problems = problems.items
    return found


# --- the settings ------------------------------------------------------------------------------------------------


def _declared(node: Any, names: set[str]) -> None:
    """Names a task file or playbook declares: register, loop_var, set_fact and vars keys."""
    for key, value in node.items() if isinstance(node, dict) else enumerate(node if isinstance(node, list) else []):
        if key in ("register", "loop_var") and isinstance(value, str):
            names.add(value)
        elif key in ("vars", "ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
            names.update(str(name) for name in value)
        _declared(value, names)


def load_settings(collection_dir: str) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The role's settings (entry point ``main``: name -> spec) and every play variable the collection knows: every
    entry point's options, what the role's tasks and the playbooks declare, and the keys of the playbooks' vars
    files (``day2_auth``)."""
    specs = yaml_load(pathlib.Path(collection_dir, ROLE_SPECS).read_text(encoding="utf-8"))["argument_specs"]
    known = {name for spec in specs.values() for name in spec.get("options") or {}}
    for folder in (pathlib.Path(collection_dir, "roles", "day2", "tasks"), pathlib.Path(collection_dir, "playbooks")):
        for path in sorted([*folder.rglob("*.yml"), *folder.rglob("*.yaml")]):
            document = yaml_load(path.read_text(encoding="utf-8"))
            _declared(document, known)
            if isinstance(document, dict) and path.parent.name == "vars":
                known.update(document)
    return specs["main"]["options"], known


def check_settings(
    values: Mapping[str, Any], settings: Mapping[str, dict[str, Any]], cluster: Mapping[str, Any], problems: Problems
) -> None:
    """Check the settings' ``values`` (templated) against their specs, then what a spec cannot say.

    The role's own argument validation refuses a value of the wrong type when the role starts, before any task.
    The check here keeps its place for what a spec cannot say (PXE needs a release whose node-joiner has --pxe, a
    duration, an http(s) URL, no negative numbers), and for the types of the later steps' settings when the steps
    run one by one (``tasks_from``): ansible-core checks a step's settings only when it starts, after the ISO build.
    """
    report, minor = problems.for_host(PLAY), releases.parse_version(cluster.get("version"))
    for name, value in sorted(values.items()):
        spec = {key: option for key, option in settings[name].items() if key in SPEC_KEYS}
        result = ArgumentSpecValidator({name: spec}).validate({name: value})
        kind, choices, secret = spec.get("type", "str"), spec.get("choices"), secret_name(name)
        fix = f"give {name} a value of type {kind}"
        fix = f"set {name} to one of: {', '.join(map(str, choices))}" if choices else fix
        for message in result.error_messages:
            what = "is refused by the role's argument spec: " + (f"it is not of type {kind}" if secret else message)
            report(name, NOT_SHOWN if secret else value, what, fix)
        checked = None if result.error_messages else result.validated_parameters[name]
        if name == "day2_pxe" and checked and minor and minor >= releases.MINIMUM and not releases.release(minor).pxe:
            what = "asks for PXE files, but this cluster runs %s and its node-joiner has no --pxe (it came with %d.%d)"
            fix = f"boot the hosts from the ISO: drop {name} (or set it to false)"
            report(name, value, what % (cluster.get("version"), *releases.since("pxe")), fix)
        elif name == "day2_min_token_validity" and checked is not None:
            try:
                parse_duration(checked)
            except ValueError as error:
                report(name, value, f"is not a duration: {error}", "write e.g. 24h or 90m")
        elif name == "day2_boot_artifacts_base_url" and checked and not is_http_url(checked):
            fix = "set it to the URL the PXE files will be served from"
            report(name, value, "is not an http:// or https:// URL", fix)
        elif name == "day2_boot_artifacts_base_url" and checked and not boolean(values.get("day2_pxe"), strict=False):
            # node-joiner reads it for PXE files only, on every platform (_image/build.check_platform)
            what = "is used by node-joiner only for PXE files, on every platform (External's node ISO included)"
            report(name, value, what, "set day2_pxe: true, or drop it")
        elif isinstance(checked, int) and not isinstance(checked, bool) and checked < 0:
            report(name, value, "is negative", "give a number of 0 or more")


def check_play_names(defined: Mapping[str, Any], known: Iterable[str], problems: Problems) -> None:
    """Play variables named like one of the collection's (``day2_*``, in any case or spelling) but unknown to it:
    typos, refused naming the one meant. ``defined``: the play's variables, their raw values (shown, unless the
    name or the one meant looks secret)."""
    known_names = sorted(name for name in set(known) if name.startswith(PREFIX))
    for name in sorted(set(defined) - set(known_names)):
        close = close_key(name, known_names) if normalized(name).startswith(PREFIX) else None
        if close:
            shown, fix = NOT_SHOWN if secret_name(name) or secret_name(close) else defined[name], 'did you mean "%s"?'
            problems.add(PLAY, name, shown, "is not a variable of this collection", fix % close + " Rename it")
