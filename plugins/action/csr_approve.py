# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.csr_approve (documented in plugins/modules/csr_approve.py): the loop of
``_join/engine.py`` that follows every install and approves each host's CSRs, on the controller, printing every
host's progress as it happens. Besides the loop it ejects a host's virtual CD once its disk is written."""

from __future__ import annotations

import copy
import os
from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.openshift_agent.day2.plugins.action.agent_wait import ActionModule as FollowAction
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.engine import CSR_APPROVE_OPTIONS


class ActionModule(FollowAction):
    OPTIONS = dict(
        CSR_APPROVE_OPTIONS,
        eject={"type": "list", "elements": "str", "default": []},
        bmc_verify_certs={"type": "bool", "default": True},
        bmc_ca_path={"type": "str", "default": ""},
        redfish_timeout={"type": "int", "default": 60},
    )
    ARGUMENT_SPEC = dict(copy.deepcopy(AUTH_ARG_SPEC), **OPTIONS)
    NAME = "csr_approve"

    def hooks(self, params: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        parent = os.getppid()  # the process that started this task's worker; a new parent means it is gone
        hooks: dict[str, Any] = {"still_wanted": lambda: os.getppid() == parent}
        booted = {str(name).lower() for name in params["eject"]}
        records = {name: host for host in params["hosts"] if (name := str(host.get("name")).lower()) in booted}
        if records:
            hooks["on_disk_written"] = lambda name: self._eject(records.get(name), params, task_vars)
        return hooks

    def _eject(self, host: dict[str, Any] | None, params: dict[str, Any], task_vars: dict[str, Any]) -> str:
        """Eject the virtual CD the boot step inserted, through the host's BMC (``_boot/redfish.py``)."""
        if host is None:
            return "its virtual CD is not ours to eject (not booted through Redfish in this run)"
        bmc = self.bmc(host, task_vars, params["bmc_verify_certs"], params["bmc_ca_path"], params["redfish_timeout"])
        return bmc.eject()
