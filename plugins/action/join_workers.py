# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.join_workers (documented in plugins/modules/join_workers.py).

It runs on the controller so that one loop can follow every host's agent and approve its CSRs, and print every
host's progress as it happens (a module only reports when it ends). The logic is module_utils code
(``_join/orchestrator.py``); this file reads the options, connects and prints.
"""

from __future__ import annotations

import copy
import datetime
import os
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_duration, parse_rfc3339
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error, InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import connect
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import Login
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.client import agent_url, bracketed
from ansible_collections.openshift_agent.day2.plugins.module_utils._install.token import (
    HEADERS,
    AgentTokenError,
    choose,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.approver import CsrApprover
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr_api import KubeCsrApi
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import expected_nodes
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.node_marks import marks_of
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.orchestrator import JoinOptions, JoinRun

display = Display()

OPTIONS = {
    "hosts": {"type": "list", "elements": "dict", "required": True},
    "nodes": {"type": "list", "elements": "dict", "default": []},
    "settle_seconds": {"type": "int", "default": 10},
    "boot_timeout": {"type": "int", "default": 1800},
    "install_timeout": {"type": "int", "default": 5400},
    "join_timeout": {"type": "int", "default": 1800},
    "wait_sleep": {"type": "int", "default": 5},
    "validation_grace": {"type": "raw", "default": 600},
    "clock_skew": {"type": "int", "default": 2},
    "max_failed_hosts": {"type": "int", "default": 0},
    "request_timeout": {"type": "int", "default": 5},
    "agent_port": {"type": "int"},
    "kubelet_port": {"type": "int"},
    "token": {"type": "str", "no_log": True},
    "first_header": {"type": "str", "default": "auto", "choices": ["auto", *HEADERS]},
    "installed_after": {"type": "dict", "default": {}},
    "eject": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "name": {"type": "str", "required": True},
            "baseuri": {"type": "str", "required": True},
            "username": {"type": "str", "required": True},
            "category": {"type": "str", "default": "Systems", "choices": ["Systems", "Manager"]},
            "resource_id": {"type": "str", "default": ""},
            "image_url": {"type": "str", "required": True, "no_log": True},
            "validate_certs": {"type": "bool", "default": True},
            "ca_path": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 30},
        },
    },
}


def argument_spec() -> dict[str, Any]:
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(OPTIONS)
    return spec


def join_hosts(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The hosts to follow (name, address, mac_address) with the addresses of ``nodes`` of the same name."""
    nodes = {str(node.get("name", "")).lower(): node for node in params["nodes"]}
    hosts = []
    for index, host in enumerate(params["hosts"]):
        if not host.get("name") or not host.get("address"):
            raise InputError("hosts[%d]: expected name and address, found %s" % (index, sorted(host)))
        name = str(host["name"]).lower()
        addresses = (nodes.get(name) or {}).get("addresses") or [host["address"]]
        hosts.append(dict(host, name=name, addresses=[str(a) for a in addresses], installed_after=None))
    after = {str(name).lower(): value for name, value in (params.get("installed_after") or {}).items()}
    for host in hosts:
        if after.get(host["name"]):
            try:
                host["installed_after"] = parse_rfc3339(str(after.pop(host["name"])))
            except ValueError as error:
                raise InputError("installed_after[%s]: %s" % (host["name"], error))
        after.pop(host["name"], None)
    if after:
        raise InputError("installed_after names hosts that are not followed: %s" % ", ".join(sorted(after)))
    names = [host["name"] for host in hosts]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError("hosts names must be unique; repeated: %s" % ", ".join(repeated))
    if not hosts:
        raise InputError("hosts is empty: give at least one {name, address}")
    return hosts


def join_options(params: dict[str, Any]) -> JoinOptions:
    for option in ("settle_seconds", "wait_sleep", "request_timeout", "boot_timeout", "install_timeout"):
        if params[option] < 1:
            raise InputError("%s must be at least 1 second, got %s" % (option, params[option]))
    if params["max_failed_hosts"] < 0 or params["clock_skew"] < 0:
        raise InputError("max_failed_hosts and clock_skew cannot be negative")
    try:
        grace = parse_duration(params["validation_grace"])
    except ValueError as error:
        raise InputError("validation_grace: %s" % error)
    environ = os.environ
    return JoinOptions(
        settle_seconds=params["settle_seconds"],
        boot_timeout=params["boot_timeout"],
        install_timeout=params["install_timeout"],
        join_timeout=params["join_timeout"],
        wait_sleep=params["wait_sleep"],
        validation_grace=grace,
        clock_skew=params["clock_skew"],
        max_failed_hosts=params["max_failed_hosts"],
        request_timeout=params["request_timeout"],
        agent_port=params["agent_port"] or int(environ.get("OPENSHIFT_AGENT_DAY2_AGENT_PORT") or 8090),
        kubelet_port=params["kubelet_port"] or int(environ.get("OPENSHIFT_AGENT_DAY2_KUBELET_PORT") or 10250),
        first_header=None if params["first_header"] == "auto" else params["first_header"],
    )


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validated, params = self.validate_argument_spec(argument_spec=argument_spec())
        try:
            hosts = join_hosts(params)
            options = join_options(params)
            if self._task.check_mode:
                result.update(
                    changed=False,
                    would_follow=self._would_follow(hosts, options),
                    would_approve=self._would_approve(params, options),
                )
                return result
            result.update(self._join(params, hosts, options, task_vars or {}))
        except Day2Error as error:
            result.update(error.result, failed=True, msg="join_workers: %s" % error.message)
        return result

    @staticmethod
    def _would_follow(hosts: list[dict[str, Any]], options: JoinOptions) -> list[dict[str, Any]]:
        return [
            {
                "name": host["name"],
                "agent_url": agent_url(host["address"], options.agent_port),
                "kubelet": "%s:%d" % (bracketed(host["address"]), options.kubelet_port),
                "addresses": host["addresses"],
            }
            for host in hosts
        ]

    @staticmethod
    def _would_approve(params: dict[str, Any], options: JoinOptions) -> list[dict[str, Any]]:
        """Check mode: the pending CSRs of the hosts that the approval policy accepts now (reads only). A run
        approves a host's client CSRs only once its kubelet answers and the settle period passed, so these are
        what it would approve as soon as that is the case."""
        if not params["nodes"]:
            return []
        client, api_client = connect(Login(params))
        approver = CsrApprover(
            KubeCsrApi(api_client, client.client),
            expected_nodes(params["nodes"]),
            wait_timeout=0,
            check_mode=True,
            clock_skew=datetime.timedelta(seconds=options.clock_skew),
        )
        return approver.run()["would_approve"]

    def _eject(self, ejects: dict[str, dict[str, Any]], name: str, task_vars: dict[str, Any]) -> str:
        """Eject the virtual CD of ``name`` through community.general.redfish_command (as the boot step inserted
        it); the BMC password is read from the host's variables here, never passed through the options."""
        entry = ejects.get(name)
        if entry is None:
            return "its virtual CD is not ours to eject (not booted through Redfish in this run)"
        host_vars = task_vars["hostvars"].get(name) or {}
        arguments = {
            "category": entry["category"],
            "command": "VirtualMediaEject",
            "baseuri": entry["baseuri"],
            "username": entry["username"],
            "password": host_vars.get("bmc_password") or "",
            "validate_certs": entry["validate_certs"],
            "timeout": entry["timeout"],
            "virtual_media": {"image_url": entry["image_url"]},
        }
        if entry["resource_id"]:
            arguments["resource_id"] = entry["resource_id"]
        if entry["ca_path"]:
            arguments["ca_path"] = entry["ca_path"]
        outcome = self._execute_module(
            module_name="community.general.redfish_command", module_args=arguments, task_vars=task_vars
        )
        if outcome.get("failed"):
            raise Day2Error(
                "BMC %s refused VirtualMediaEject (%s): eject it in the BMC, so that a reboot cannot start the "
                "installer again" % (entry["baseuri"], outcome.get("msg") or "no message")
            )
        return "virtual CD ejected through its BMC %s" % entry["baseuri"]

    def _join(
        self, params: dict[str, Any], hosts: list[dict[str, Any]], options: JoinOptions, task_vars: dict[str, Any]
    ) -> dict[str, Any]:
        client, api_client = connect(Login(params))
        api = KubeCsrApi(api_client, client.client)
        warnings = []
        try:
            token = choose(params["token"], api_client)[0] if params["token"] else choose(reader=api_client)[0]
        except AgentTokenError as error:
            token = None
            warnings.append("the agents are not asked (%s); a host counts as rebooted when its kubelet answers" % error)
        offset = api.server_offset()
        if offset is None:
            warnings.append("the API server sent no Date header: its clock is taken to be this one's")
        display.display(
            "join_workers: following %d host(s): %s (settle %ss, boot timeout %ss, at most %d failed)"
            % (
                len(hosts),
                ", ".join(host["name"] for host in hosts),
                options.settle_seconds,
                options.boot_timeout,
                options.max_failed_hosts,
            )
        )
        ejects = {str(entry["name"]).lower(): entry for entry in params["eject"]}
        parent = os.getppid()  # the process that started this task's worker; a new parent means it is gone
        run = JoinRun(
            hosts,
            token,
            api,
            options,
            display.display,
            server_offset=offset or 0.0,
            on_disk_written=(lambda name: self._eject(ejects, name, task_vars)) if ejects else None,
            marks=marks_of(params["nodes"]),
            still_wanted=lambda: os.getppid() == parent,
        )
        run.warnings.extend(warnings)
        return run.run()
