# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.workers_check (documented in plugins/modules/workers_check.py).

It runs on the controller because it reads the inventory and the play itself: every variable of every host of the
group, without passing them (secrets included) through module arguments, and the play's settings as the role will
see them. The checks are module_utils code (``_check``).
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.openshift_agent.day2.plugins.module_utils._check import agent_config as files
from ansible_collections.openshift_agent.day2.plugins.module_utils._check import variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import workdir
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_KEYS

FILE_OPTIONS = ("agent_config", "nodes_config")  # the files of hosts
ARGUMENT_SPEC = {
    "group": {"type": "str", "default": "new_workers"},
    "cluster": {"type": "dict", "required": True},
    "require_healthy": {"type": "bool", "default": True},
    "boot_method": {"type": "str", "default": "manual"},
    "serve_iso": {"type": "bool"},
    **{key: {"type": "str", "default": ""} for key in ("replace_node", "iso_url", *FILE_OPTIONS)},
    **{key: {"type": "str", "default": ""} for key in ("cluster_name", "base_domain", *files.IMAGE_FIELDS.values())},
    "openshift_version": {"type": "raw", "default": ""},
    "node_labels": {"type": "raw", "default": {}},
    "node_taints": {"type": "raw", "default": []},
}
# The options that describe the play (the cluster meant, the play-wide marks, the files of hosts) rather than a check.
PLAY_OPTIONS = ("cluster_name", "base_domain", "openshift_version", "node_labels", "node_taints", *FILE_OPTIONS)
# plugins/action/ -> the collection's root (roles/, playbooks/).
COLLECTION_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(get: Callable[[Any], Any], key: Any) -> Any:
    """``get(key)``: a variable's value, templated; Day2Error naming the cause when it cannot be templated."""
    try:
        return get(key)
    except AnsibleError as error:
        raise Day2Error(str(error).splitlines()[0] if str(error) else type(error).__name__)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        task_vars, problems = task_vars or {}, Problems()
        try:
            settings, known = variables.load_settings(COLLECTION_DIR)
            values = {}
            for name in (name for name in settings if name in task_vars):
                try:
                    values[name] = _read(self._templar.template, task_vars[name])
                except Day2Error as error:
                    fix = "define every variable it uses"
                    problems.add(variables.PLAY, name, "(cannot be templated)", error.message, fix)
            variables.check_settings(values, settings, args["cluster"], problems)
            if values.get("day2_workdir"):  # before preflight creates it, and long before anything is written there
                workdir.check(str(values["day2_workdir"]), variables.PLAY, "day2_workdir", problems)
            variables.check_play_names(task_vars, known, problems)
            hostvars = task_vars["hostvars"]
            shared = set(hostvars[task_vars["inventory_hostname"]])  # what the play's own host sees: all, extra vars
            hosts = []
            for name in task_vars["groups"].get(args["group"]) or []:
                read = functools.partial(_read, hostvars[name].__getitem__)
                hosts.append(variables.sort_variables(name, hostvars[name], read, HOST_KEYS, shared))
            playbook_dir = task_vars.get("playbook_dir")
            agent_hosts, left_alone = files.read_agent_config(args["agent_config"], playbook_dir, problems)
            nodes_hosts, from_file = files.read_nodes_config(args["nodes_config"], playbook_dir, problems)
            image = {key: args.pop(key) for key in files.IMAGE_FIELDS.values()}
            image = files.image_settings(from_file, image, args["nodes_config"], problems)
            play, groups = {key: args.pop(key) for key in PLAY_OPTIONS}, list(task_vars["groups"])
            found: dict[str, Any] = {"agent_hosts": agent_hosts, "nodes_hosts": nodes_hosts, "groups": groups}
            outcome = check_workers(hosts, play=play, problems=problems, **found, **args)
            outcome["image"] = image
            if left_alone:
                outcome["ignored"]["(agent-config)"] = left_alone
        except Day2Error as error:
            return {**result, **error.result, "failed": True, "msg": f"workers_check: {error.message}"}
        return {**result, **outcome, "changed": False}
