# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.boot_hosts (documented in plugins/modules/boot_hosts.py).

It runs on the controller because a host's BMC password is read from its variables at the moment of the Redfish
call and never passed through module arguments; the Redfish calls go through community.general's modules, the
decisions are ``_boot/redfish.py``.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.redfish import BOOT_METHODS
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.plugin_utils.action import Day2Action

# Hosts the plan finds installed: booting them again would reinstall them.
INSTALLED = {"joined": "its Node is Ready", "half-joined": "its Node exists; its certificates are approved next"}


class ActionModule(Day2Action):
    NAME = "boot_hosts"
    ARGUMENT_SPEC = {
        "method": {"type": "str", "default": "manual", "choices": list(BOOT_METHODS)},
        "hosts": {"type": "list", "elements": "dict", "required": True},
        "artifacts": {"type": "list", "elements": "dict", "default": []},
        "standing": {"type": "dict", "default": {}},
        "image_url": {"type": "str", "default": "", "no_log": True},
        "image_url_shown": {"type": "str", "default": ""},
        "verify_certs": {"type": "bool", "default": True},
        "ca_path": {"type": "str", "default": ""},
        "timeout": {"type": "int", "default": 60},
        "inspect": {"type": "bool", "default": False},
    }

    def act(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        if args["inspect"]:
            return self._inspect(args, task_vars)
        hosts, lines, redfish = [], [], args["method"] == "redfish"
        for host in args["hosts"]:
            stands = (args["standing"].get(str(host["name"]).lower()) or {}).get("agent") or {}
            where = f" at {stands['stage']}" if stands.get("stage") else ""
            if host.get("state") in INSTALLED:
                lines.append(f"{host['name']} is {host['state']} already ({INSTALLED[host['state']]}): not booted")
            elif stands.get("phase", "waiting") != "waiting":  # booting it again would reinstall it
                lines.append(
                    f"{host['name']} is {stands['phase']} already (agent: {stands.get('status') or 'gone'}{where}): "
                    "not booted again, its install is followed"
                )
            else:
                hosts.append(host)
        if hosts and not redfish:
            check = "Check mode: nothing is built or booted; a run would ask you at this point: "
            lines[:0] = [
                (check if self._task.check_mode else "") + "Boot each of these hosts from the ISO once (virtual "
                "media, USB or PXE), with the disk as the next boot device: " + ", ".join(h["name"] for h in hosts),
                "The ISO: " + (", ".join(str(a.get("path")) for a in args["artifacts"]) or "(the ISO)"),
                "The next step follows every host's install as soon as it boots.",
            ]
        booted: list[str] = []
        shown = args["image_url_shown"]
        try:
            for host in hosts if redfish else []:
                bmc = self.bmc(host, task_vars, args["verify_certs"], args["ca_path"], args["timeout"])
                if self._task.check_mode:
                    lines.append(f"Check mode: {host['name']} would be booted {bmc.plan(bmc.inspect(), shown)}")
                    continue
                if not args["image_url"]:
                    fix = "set day2_iso_url, or leave it empty and day2_serve_iso unset (this run serves it)"
                    raise Day2Error(f"host {host['name']}: there is no ISO URL to insert: {fix}")
                bmc.boot(args["image_url"])
                booted.append(host["name"])
                lines.append(f"{host['name']}: booted from {shown or 'the ISO'} through its BMC {bmc.baseuri}")
        except Day2Error as error:
            raise Day2Error(error.message, {"booted": booted}) from error
        return {"changed": bool(booted), "booted": booted, "msg": lines}

    def _inspect(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """Preflight: every BMC asked about its system, virtual CD and boot override with its login (GET requests
        only, in check mode too), before anything is written; every refusal at once."""
        lines, problems = [], []
        redfish = args["method"] == "redfish"
        for host in (host for host in args["hosts"] if redfish and host.get("state") not in INSTALLED):
            try:
                media = self.bmc(host, task_vars, args["verify_certs"], args["ca_path"], args["timeout"]).inspect()
            except Day2Error as error:
                problems.append(error.message)
                continue
            held = " (holds a medium)" if media.cd.get("Image") else ""
            lines.append(
                f"{host['name']}: its BMC answers: system {media.system_uri} (power {media.power}), virtual CD "
                f"{media.cd.get('Id') or '?'}{held}"
            )
        if problems:
            raise Day2Error("; ".join(problems), {"changed": False, "problems": problems})
        return {"changed": False, "msg": lines}
