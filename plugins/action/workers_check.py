# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.workers_check (documented in plugins/modules/workers_check.py).

It runs on the controller because it reads the inventory and the play itself: every variable of every host of the
group, without passing them (secrets included) through module arguments, and the variables of the later roles as
the play sets them. The checks are module_utils code.
"""

from __future__ import annotations

import os
from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.agent_config import read_agent_config
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.roles import (
    RoleValue,
    check_play_names,
    check_role_values,
    chosen_variable,
    known_play_variables,
    load_role_specs,
    settable_options,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import sort_variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import known_host_keys

ARGUMENT_SPEC = {
    "group": {"type": "str", "default": "new_workers"},
    "cluster": {"type": "dict", "required": True},
    "replace_node": {"type": "str", "default": ""},
    "boot_method": {"type": "str", "default": "manual"},
    "iso_url": {"type": "str", "default": ""},
    "serve_iso": {"type": "bool", "default": False},
    "roles": {"type": "list", "elements": "str", "default": []},
    "agent_config": {"type": "str", "default": ""},
    "cluster_name": {"type": "str", "default": ""},
    "base_domain": {"type": "str", "default": ""},
    "openshift_version": {"type": "raw", "default": ""},
    "node_labels": {"type": "raw", "default": {}},
    "node_taints": {"type": "raw", "default": []},
}
# plugins/action/ -> the collection's root (roles/, playbooks/).
COLLECTION_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = "(play)"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def _template(self, value: Any) -> Any:
        try:
            return self._templar.template(value)
        except AnsibleError as error:
            raise Day2Error(str(error))

    def _hosts(self, args: dict[str, Any], task_vars: dict[str, Any], play_variables: set[str]) -> list[Any]:
        """Every host of the group, its variables sorted."""
        hostvars = task_vars["hostvars"]
        shared = set(hostvars[task_vars["inventory_hostname"]])  # what the play's own host sees: all, extra vars
        known = known_host_keys()
        hosts = []
        for name in task_vars["groups"].get(args["group"]) or []:
            variables = hostvars[name]

            def read(key: str, variables: Any = variables, name: str = name) -> Any:
                try:
                    return variables[key]
                except AnsibleError as error:
                    raise Day2Error(str(error).splitlines()[0] if str(error) else type(error).__name__)

            hosts.append(sort_variables(name, variables, read, known, shared, play_variables))
        return hosts

    def _agent_config_path(self, path: str, task_vars: dict[str, Any]) -> str:
        """A relative path is taken from the current directory, else from the playbook's directory."""
        path = os.path.expanduser(path)
        if os.path.isabs(path) or os.path.exists(path):
            return path
        beside = os.path.join(task_vars.get("playbook_dir") or "", path)
        return beside if os.path.exists(beside) else path

    def _role_values(self, specs: dict[str, Any], task_vars: dict[str, Any], problems: Problems) -> list[RoleValue]:
        """The later roles' options the play sets, templated as the roles will see them."""
        values = []
        for role, spec in specs.items():
            for option in settable_options(spec):
                variable = chosen_variable(spec, option, task_vars)
                if variable is None:
                    continue
                try:
                    values.append(RoleValue(role, option, variable, self._template(task_vars[variable])))
                except Day2Error as error:
                    problems.add(
                        PLAY, variable, "(cannot be templated)", error.message, "define every variable it uses"
                    )
        return values

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        task_vars = task_vars or {}
        problems = Problems()
        try:
            play_variables = known_play_variables(COLLECTION_DIR)
            specs = load_role_specs(os.path.join(COLLECTION_DIR, "roles"), args["roles"])
            check_role_values(self._role_values(specs, task_vars, problems), specs, args["cluster"], problems)
            check_play_names(task_vars, play_variables, problems)
            hosts = self._hosts(args, task_vars, play_variables)
            agent_hosts: list[Any] = []
            left_alone: list[str] = []
            if args["agent_config"]:
                path = self._agent_config_path(args["agent_config"], task_vars)
                agent_hosts, left_alone = read_agent_config(path, problems)
            play = {key: args[key] for key in ("cluster_name", "base_domain", "openshift_version")}
            play.update(node_labels=args["node_labels"], node_taints=args["node_taints"])
            play["agent_config"] = args["agent_config"]
            try:
                outcome = check_workers(
                    hosts,
                    args["cluster"],
                    args["replace_node"],
                    args["group"],
                    args["boot_method"],
                    args["iso_url"],
                    args["serve_iso"],
                    groups=list(task_vars["groups"]),
                    agent_hosts=agent_hosts,
                    play=play,
                )
                if left_alone:
                    outcome["ignored"]["(agent-config)"] = left_alone
            except InventoryError as error:
                problems.items.extend(error.problems)
            if problems.items:
                raise InventoryError(problems.items)
        except Day2Error as error:
            result.update(error.result, failed=True, msg="workers_check: %s" % error.message)
            return result
        result.update(outcome, changed=False)
        return result
