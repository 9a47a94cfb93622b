# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variables of the later roles, checked before anything is written.

Each role's ``meta/argument_specs.yml`` is the one definition of its options; ansible-core would check them only
when the role starts, after the ISO build. Here every option the user set, as itself (``join_timeout``) or through
the play-wide ``day2_*`` variable its default reads (``day2_boot_method``), is checked against that spec with
ansible-core's ArgumentSpecValidator, plus what the spec cannot say (PXE needs 4.18, a duration, a URL). The options
the playbooks wire from one role to the next (``required``) are not the user's and are left out.

A play variable whose name resembles one of the collection's (``day2_boot_methd``, ``join_timout``) is refused
naming it, as host variables are.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.yaml import yaml_load  # PyYAML's safe loader; ansible-core needs PyYAML

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.boot import is_http_url
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import PLAY_PREFIX, close_key
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.support import parse_version
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.build import PXE_SINCE

PLAY = "(play)"
ROLES = ("preflight", "node_image", "boot", "join")
# workers_check takes these as its own options (boot_method, iso_url) and checks them with the hosts' BMCs.
CHECKED_AS_OPTIONS = {("boot", "boot_method"), ("boot", "boot_iso_url")}
SPEC_KEYS = ("type", "elements", "choices", "options", "no_log")
_FALLBACK = re.compile(r"^\s*\{\{\s*(day2_\w+)\s*\|\s*default\(")
_DAY2_NAME = re.compile(r"\bday2_\w+")
SECRET_OPTION = re.compile(r"pass|token|secret|credential|api_?key", re.IGNORECASE)


@dataclasses.dataclass
class RoleSpec:
    """One role's options (from its argument spec) and raw defaults (from defaults/main.yml)."""

    role: str
    options: dict[str, dict[str, Any]]
    defaults: dict[str, Any]

    def fallback(self, option: str) -> str | None:
        """The play-wide variable the option's default reads (``day2_boot_method`` for ``boot_method``)."""
        match = _FALLBACK.match(str(self.defaults.get(option, "")))
        return match.group(1) if match else None


@dataclasses.dataclass
class RoleValue:
    """A role option the user set: through which variable, and its value (templated)."""

    role: str
    option: str
    variable: str
    value: Any


def _load(path: str) -> Any:
    with open(path, encoding="utf-8") as stream:
        return yaml_load(stream)


def load_role_specs(roles_dir: str, roles: Iterable[str]) -> dict[str, RoleSpec]:
    """The specs of ``roles``, read from the collection's roles directory."""
    specs = {}
    for role in roles:
        spec = _load(os.path.join(roles_dir, role, "meta", "argument_specs.yml"))
        defaults_path = os.path.join(roles_dir, role, "defaults", "main.yml")
        defaults = _load(defaults_path) if os.path.exists(defaults_path) else {}
        options = ((spec.get("argument_specs") or {}).get("main") or {}).get("options") or {}
        specs[role] = RoleSpec(role, options, defaults or {})
    return specs


def _declared(node: Any, names: set[str]) -> None:
    """Names a task file declares: register, set_fact keys, vars keys, loop_var."""
    if isinstance(node, list):
        for item in node:
            _declared(item, names)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("register", "loop_var") and isinstance(value, str):
                names.add(value)
            elif key in ("vars", "ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
                names.update(str(name) for name in value)
            _declared(value, names)


def known_play_variables(collection_dir: str) -> set[str]:
    """Every play variable of the collection: role options, defaults and what the roles' tasks declare, and every
    ``day2_*`` name the roles and playbooks use."""
    names: set[str] = set()
    for role in ROLES:
        for part in ("meta/argument_specs.yml", "defaults/main.yml"):
            path = os.path.join(collection_dir, "roles", role, part)
            data = _load(path) if os.path.exists(path) else None
            if part.startswith("meta"):
                names.update((((data or {}).get("argument_specs") or {}).get("main") or {}).get("options") or {})
            else:
                names.update(data or {})
    for folder in ("roles", "playbooks"):
        for directory, _dirs, files in os.walk(os.path.join(collection_dir, folder)):
            for name in files:
                if name.endswith((".yml", ".yaml")):
                    path = os.path.join(directory, name)
                    with open(path, encoding="utf-8") as stream:
                        text = stream.read()
                    names.update(_DAY2_NAME.findall(text))
                    if "/tasks" in directory or folder == "playbooks":
                        _declared(yaml_load(text), names)
    return names


def chosen_variable(spec: RoleSpec, option: str, defined: Mapping[str, Any]) -> str | None:
    """The variable that sets ``option`` for the role: the option itself when the user set it (its value is not
    the role's raw default), else the ``day2_*`` variable its default reads when that one is set, else None."""
    if option in defined and (option not in spec.defaults or defined[option] != spec.defaults[option]):
        return option
    fallback = spec.fallback(option)
    return fallback if fallback and fallback in defined else None


def settable_options(spec: RoleSpec) -> list[str]:
    """The options of a role the user may set (not wired by the playbooks, not workers_check's own)."""
    return [
        option
        for option, option_spec in spec.options.items()
        if not option_spec.get("required") and (spec.role, option) not in CHECKED_AS_OPTIONS
    ]


def _shown(option: str, value: Any) -> Any:
    return "(not shown)" if SECRET_OPTION.search(option) else value


def _named(value: RoleValue) -> str:
    if value.variable == value.option:
        return "role %s's option" % value.role
    return "role %s's option %s, set through %s" % (value.role, value.option, value.variable)


def check_role_values(
    values: Iterable[RoleValue], specs: Mapping[str, RoleSpec], cluster: Mapping[str, Any], problems: Problems
) -> None:
    """Check every value against its role's argument spec, then what the spec cannot say."""
    for value in values:
        option_spec = {key: v for key, v in specs[value.role].options[value.option].items() if key in SPEC_KEYS}
        result = ArgumentSpecValidator({value.option: option_spec}).validate({value.option: value.value})
        messages = result.error_messages
        for message in messages:
            if SECRET_OPTION.search(value.option):
                message = "it is not of type %s" % option_spec.get("type", "str")  # ansible-core's text shows it
            choices = option_spec.get("choices")
            fix = (
                "set %s to one of: %s" % (value.variable, ", ".join(str(c) for c in choices))
                if choices
                else "give %s a value of type %s" % (value.variable, option_spec.get("type", "str"))
            )
            problems.add(
                PLAY,
                value.variable,
                _shown(value.option, value.value),
                "is refused by %s: %s" % (_named(value), message),
                fix,
            )
        if not messages:
            _beyond_the_spec(value, result.validated_parameters[value.option], cluster, problems)


def _beyond_the_spec(value: RoleValue, checked: Any, cluster: Mapping[str, Any], problems: Problems) -> None:
    option = value.option
    if option == "node_image_pxe" and checked:
        version = parse_version(cluster.get("version"))
        if version is not None and version < PXE_SINCE:
            problems.add(
                PLAY,
                value.variable,
                value.value,
                "asks for PXE files, but this cluster runs %s and its node-joiner has no --pxe (it came with %d.%d)"
                % (cluster.get("version"), PXE_SINCE[0], PXE_SINCE[1]),
                "boot the hosts from the ISO: drop %s (or set it to false)" % value.variable,
            )
    elif option == "node_image_min_token_validity":
        try:
            parse_duration(checked)
        except ValueError as error:
            problems.add(PLAY, value.variable, value.value, "is not a duration: %s" % error, "write e.g. 24h or 90m")
    elif option == "node_image_boot_artifacts_base_url" and checked and not is_http_url(checked):
        problems.add(
            PLAY,
            value.variable,
            value.value,
            "is not an http:// or https:// URL",
            "set it to the URL the PXE files will be served from",
        )
    elif isinstance(checked, int) and not isinstance(checked, bool) and checked < 0:
        problems.add(PLAY, value.variable, value.value, "is negative (%s)" % _named(value), "give a number of seconds")


def check_play_names(defined: Mapping[str, Any], known: Iterable[str], problems: Problems) -> None:
    """Play variables named like one of the collection's but unknown to it: typos, refused naming the one meant.

    Only names of the collection's families (``day2_*`` and each role's prefix) are looked at; ``defined``: the
    play's variables, their raw values (shown, unless the name looks secret)."""
    known_names = sorted(set(known))
    prefixes = (PLAY_PREFIX, *("%s_" % role for role in ROLES))
    for name in sorted(set(defined) - set(known_names)):
        if not name.startswith(prefixes):
            continue
        family = name.split("_", 1)[0]
        close = close_key(name, [key for key in known_names if key.split("_", 1)[0] == family])
        if close:
            problems.add(
                PLAY,
                name,
                _shown(name, defined[name]),
                "is not a variable of this collection",
                'did you mean "%s"? Rename it' % close,
            )
