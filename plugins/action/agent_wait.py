# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.agent_wait (documented in plugins/modules/agent_wait.py): the loop of
``_join/engine.py`` up to a target, on the controller, so that every host's progress is printed as it happens."""

from __future__ import annotations

import copy
from typing import Any

from ansible.utils.display import Display
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Login
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.engine import AGENT_WAIT_OPTIONS, follow
from ansible_collections.openshift_agent.day2.plugins.plugin_utils.action import Day2Action


class ActionModule(Day2Action):
    OPTIONS = AGENT_WAIT_OPTIONS
    ARGUMENT_SPEC = dict(copy.deepcopy(AUTH_ARG_SPEC), **OPTIONS)
    NAME = "agent_wait"

    def hooks(self, params: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        return {}

    def act(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        hooks = {} if self._task.check_mode else self.hooks(args, task_vars)
        return follow(args, self._task.check_mode, lambda: connect(Login(args)), Display().display, **hooks)
