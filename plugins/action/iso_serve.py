# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.iso_serve (documented in plugins/modules/iso_serve.py).

It runs on the controller because the ISO is there and the server must outlive the task but not the run: it
starts ``_boot/serve.py`` in its own session, watching ansible-playbook's process (this worker's parent), and
stops it by its pidfile. The logic is module_utils code (``_boot/server.py``).
"""

from __future__ import annotations

import os
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot import server
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

ARGUMENT_SPEC = {
    "state": {"type": "str", "default": "started", "choices": ["started", "stopped"]},
    "path": {"type": "path"},
    "workdir": {"type": "path", "required": True},
    "address": {"type": "str", "default": ""},
    "bmc_urls": {"type": "list", "elements": "str", "default": []},
    "tls_cert": {"type": "path"},
    "tls_key": {"type": "path"},
    "timeout": {"type": "int", "default": 7200},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        pidfile = os.path.join(args["workdir"], "iso-serve.pid")
        try:
            if args["state"] == "stopped":
                if self._task.check_mode:
                    running = server.read_pidfile(pidfile)
                    result.update(changed=bool(running), stopped=False, pid=(running or {}).get("pid"))
                    return result
                stopped = server.stop(pidfile)
                result.update(stopped, changed=stopped["stopped"])
                return result
            if not args["path"]:
                raise Day2Error("iso_serve: path (the ISO to serve) is required with state=started")
            if args["timeout"] < 60:
                raise Day2Error("iso_serve: timeout must be at least 60 seconds, got %d" % args["timeout"])
            if self._task.check_mode:
                result.update(changed=True, url="", display_url="(check mode: %s would be served)" % args["path"])
                return result
            started = server.start(
                args["path"],
                args["workdir"],
                args["address"],
                args["bmc_urls"],
                # This worker's parent is ansible-playbook itself: the server lives no longer than the run.
                watch_pid=os.getppid(),
                max_seconds=args["timeout"],
                cert=args["tls_cert"] or "",
                key=args["tls_key"] or "",
            )
            result.update(started, changed=True)
        except Day2Error as error:
            result.update(error.result, failed=True, msg=error.message)
        return result
