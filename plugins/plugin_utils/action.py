# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's action plugins share (controller code: module_utils may not import ansible.plugins).

Each of them runs on the controller alone (no connection, no files sent), supports check mode, validates its task
arguments against ``ARGUMENT_SPEC`` and does its work in ``act``; a :class:`Day2Error` becomes a failure whose
message starts with the module's name and that carries the error's partial result. ``bmc`` is the one way they
reach a host's BMC.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.redfish import Bmc, login
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error


class Day2Action(ActionBase):
    """An action plugin of openshift_agent.day2: ``NAME`` is its module's name."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False
    NAME = ""
    ARGUMENT_SPEC: dict[str, Any] = {}

    def act(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """The result of the task for its validated arguments (added to ActionBase's result)."""
        raise NotImplementedError

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        try:
            result.update(self.act(args, task_vars or {}))
        except Day2Error as error:
            result.update(error.result, failed=True, msg=f"{self.NAME}: {error.message}")
        return result

    def bmc(self, host: dict[str, Any], task_vars: dict[str, Any], verify: bool, ca_path: str, timeout: int) -> Bmc:
        """The BMC of ``host`` (a record of the plan), with its login read now (``redfish.login``), talked to
        through community.general's Redfish modules run from this task."""

        def run_module(name: str, arguments: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
            saved = self._task.environment  # the task's environment, with the module's proxy exceptions after it
            if environment:
                given = saved if isinstance(saved, list) else [saved] if saved else []
                self._task.environment = [*given, environment]
            try:
                return self._execute_module(name, module_args=arguments, task_vars=task_vars)
            finally:
                self._task.environment = saved

        credentials = login(host, task_vars["hostvars"], verify, ca_path, timeout)
        return Bmc(host["name"], host.get("bmc") or {}, credentials, run_module, str(host.get("source") or "inventory"))
