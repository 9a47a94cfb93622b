# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.workers_check (documented in plugins/modules/workers_check.py).

It runs on the controller because it reads the inventory itself: every variable of every host of the group,
without passing them (secrets included) through module arguments. The checks are module_utils code.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import sort_variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import known_host_keys

ARGUMENT_SPEC = {
    "group": {"type": "str", "default": "new_workers"},
    "cluster": {"type": "dict", "required": True},
    "replace_node": {"type": "str", "default": ""},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        task_vars = task_vars or {}
        hostvars = task_vars["hostvars"]
        shared = set(hostvars[task_vars["inventory_hostname"]])  # what the play's own host sees: all, extra vars
        known = known_host_keys()
        hosts = []
        try:
            for name in task_vars["groups"].get(args["group"]) or []:
                variables = hostvars[name]

                def read(key: str, variables: Any = variables, name: str = name) -> Any:
                    try:
                        return variables[key]
                    except AnsibleError as error:
                        raise Day2Error("host %s: variable %s cannot be templated: %s" % (name, key, error))

                hosts.append(sort_variables(name, variables, read, known, shared))
            outcome = check_workers(hosts, args["cluster"], args["replace_node"], args["group"])
        except Day2Error as error:
            result.update(error.result, failed=True, msg="workers_check: %s" % error.message)
            return result
        result.update(outcome, changed=False)
        return result
