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

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot import server
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.plugin_utils.action import Day2Action


class ActionModule(Day2Action):
    NAME = "iso_serve"
    ARGUMENT_SPEC = {
        "state": {"type": "str", "default": "started", "choices": ["started", "stopped"]},
        "artifacts": {"type": "list", "elements": "dict", "default": []},
        "workdir": {"type": "path", "required": True},
        "address": {"type": "str", "default": ""},
        "hosts": {"type": "list", "elements": "dict", "default": []},
        "tls_cert": {"type": "path"},
        "tls_key": {"type": "path"},
        "timeout": {"type": "int", "default": 7200},
    }

    def act(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        pidfile, artifacts = os.path.join(args["workdir"], "iso-serve.pid"), args["artifacts"]
        if args["state"] == "stopped" and self._task.check_mode:
            running = server.read_pidfile(pidfile)
            return {"changed": bool(running), "stopped": False, "pid": (running or {}).get("pid")}
        if args["state"] == "stopped":
            stopped = server.stop(pidfile)
            return dict(stopped, changed=stopped["stopped"])
        if len(artifacts) != 1:
            built = ", ".join(str(a.get("architecture")) for a in artifacts)
            fix = "serve them yourself and set day2_iso_url, or boot the hosts by hand (day2_boot_method=manual)"
            raise Day2Error(f"the run built {len(artifacts)} ISOs ({built}), but it serves one: {fix}")
        if args["timeout"] < 60:
            raise Day2Error("timeout must be at least 60 seconds, got %d" % args["timeout"])
        path, scheme = str(artifacts[0]["path"]), "HTTPS" if args["tls_cert"] else "HTTP"
        bmc_urls = [str(h["bmc"]["bmc_base_url"]) for h in args["hosts"] if (h.get("bmc") or {}).get("bmc_base_url")]
        secret = "The ISO holds the pull secret: only the BMC network should reach that address."
        if self._task.check_mode:
            host, port = server.listen_address(args["address"], bmc_urls)
            at = f"port {port}" if port else "a free port"
            said = f"Check mode: nothing is served. A run would serve {path} over {scheme} at {host}, on {at}, "
            return {"changed": True, "url": "", "msg": said + f"listening on that address only. {secret}"}
        # This worker's parent is ansible-playbook itself: the server lives no longer than the run.
        cert, key = args["tls_cert"] or "", args["tls_key"] or ""
        started = server.start(
            path, args["workdir"], args["address"], bmc_urls, os.getppid(), args["timeout"], cert, key
        )
        msg = (
            f"Serving {path} over {scheme} to the BMCs at {started['display_url']}, listening on "
            f"{started['address']} only, until the disks are written or the run ends. {secret}"
        )
        return dict(started, changed=True, msg=msg)
