"""The one object every lab component shares (``ctx``)."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone


def _pid_start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells a live lab process from an unrelated one that reused its pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class LabContext:
    """Shared state of a running lab.

    Attributes components use:
      state_dir, options (argparse namespace of ``labctl start``), variant, hosts (inventory host dicts),
      store (store.Store), pki (pki.LabPKI), faults (faults.Faults), auth (auth.Authenticator),
      request_log and approvals (lists of dicts), pods (None until lab/pods.py sets a handler),
      control_routes ((method, path, handler) added to the control API), on_shutdown, api_url, control_url.
    """

    REQUEST_LOG_LIMIT = 100000

    def __init__(self, state_dir: str, options, store, pki, faults, auth):
        self.state_dir = state_dir
        self.options = options
        self.variant = options.variant
        self.hosts: list = []
        self.store = store
        self.pki = pki
        self.faults = faults
        self.auth = auth
        self.request_log: list = []
        self.approvals: list = []
        self.pods = None
        self.control_routes: list = []
        self.dump_sections: dict = {}  # name -> callable returning JSON; added to dump() (e.g. kubelets)
        self.on_shutdown: list = []  # async callables run (last added first) when the lab stops
        self.pids: list = []
        self.pid_start_times: dict = {}
        self.api_url = ""
        self.control_url = ""
        self.started = time.time()
        self.add_pid(os.getpid())

    def add_pid(self, pid: int) -> None:
        """Record a process ``labctl stop`` must end (call before the lab is ready)."""
        self.pids.append(pid)
        self.pid_start_times[str(pid)] = _pid_start_time(pid)

    def log_request(self, method: str, path: str, user: str | None, status) -> None:
        if len(self.request_log) >= self.REQUEST_LOG_LIMIT:
            del self.request_log[: self.REQUEST_LOG_LIMIT // 10]
        self.request_log.append({"time": utc_now(), "method": method, "path": path, "user": user, "status": status})

    def dump(self) -> dict:
        dump = {
            "objects": self.store.all_objects(),
            "requests": list(self.request_log),
            "approvals": list(self.approvals),
            "faults": self.faults.snapshot(),
        }
        for name, section in self.dump_sections.items():
            dump[name] = section()
        return dump


def utc_now() -> str:
    """RFC 3339 with milliseconds, for logs where order within a second matters."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
