# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop the controller's ISO server (``serve.py``) for ``iso_serve``, and for any step that ends it.

The server runs in its own session (a Ctrl-C of the terminal or a kill of ansible-playbook's process group does
not reach it) and watches ansible-playbook's process itself: it exits on its own when the run is gone, whatever
ended it. Its pidfile (JSON, in the work directory) names it, so a later task stops it by the pidfile alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.serve import process_alive, start_time_of
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

SERVE_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve.py")
START_SECONDS = 15.0
STOP_SECONDS = 10.0


class ServeError(Day2Error):
    """The ISO server cannot be started or stopped (the message names the address, the file and the fix)."""


def parse_address(address: str) -> tuple[str, int]:
    """``host:port``, ``[v6]:port``, ``host`` or ``:port`` -> (host or "", port or 0); raises ValueError."""
    address = (address or "").strip()
    if address.startswith("["):
        host, _bracket, rest = address[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else rest
    elif address.count(":") == 1:
        host, port_text = address.split(":")
    else:  # a host alone, or a bare IPv6 address
        host, port_text = address, ""
    if port_text and (not port_text.isdigit() or not 0 <= int(port_text) <= 65535):
        raise ValueError(f'the port "{port_text}" is not a number from 0 to 65535')
    return host, int(port_text or 0)


def route_source(targets: list[str]) -> str | None:
    """The controller's address towards the first of ``targets`` (BMC URLs) that routes (no packet is sent)."""
    for target in targets:
        with contextlib.suppress(OSError, ValueError):  # not a URL, or no route to its host
            host = urlsplit(target).hostname
            if host:
                with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as probe:
                    probe.connect((host, 9))
                    return str(probe.getsockname()[0])
    return None


def listen_address(address: str, bmc_urls: list[str]) -> tuple[str, int]:
    """The one address and the port (0: any free one) the server listens on and the BMCs download from: the address
    given, else (none, or every address given) the controller's address that routes to the BMCs. Never every
    address: the ISO holds the pull secret."""
    try:
        bind, port = parse_address(address)
    except ValueError as error:
        raise ServeError(f"address {address}: {error}; write host:port, e.g. 192.168.111.1:8080")
    source = bind if bind not in ("", "0.0.0.0", "::") else route_source(bmc_urls)
    if source is None:
        raise ServeError(
            f"no address of this controller routes to the BMCs ({', '.join(bmc_urls or ['none'])}); set "
            "day2_serve_address to the controller's address on the BMC network, e.g. 192.168.111.1:8080"
        )
    return source, port


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def read_pidfile(pidfile: str) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError), open(pidfile) as handle:
        return dict(json.load(handle))
    return None


def start(
    iso: str,
    workdir: str,
    address: str,
    bmc_urls: list[str],
    watch_pid: int,
    max_seconds: float,
    cert: str = "",
    key: str = "",
) -> dict[str, Any]:
    """Start a server for ``iso``; return url (holding the secret path), display_url (without it), pid, pidfile,
    log and address. A server of an earlier run of this work directory is stopped first."""
    if not os.path.isfile(iso):
        raise ServeError(f"path {iso} is not a file; build the ISO first (the image step)")
    if bool(cert) != bool(key):
        raise ServeError("tls_cert and tls_key go together (HTTPS); give both, or neither (HTTP)")
    host, port = listen_address(address, bmc_urls)
    pidfile = os.path.join(workdir, "iso-serve.pid")
    stop(pidfile)
    token_file = os.path.join(workdir, "iso-serve.token")
    token = secrets.token_urlsafe(24)
    with open(token_file, "w", opener=lambda path, flags: os.open(path, flags, 0o600)) as handle:
        handle.write(token)
    log = os.path.join(workdir, "iso-serve.log")
    name = os.path.basename(iso)
    command = [sys.executable, SERVE_PROGRAM, "--file", iso, "--name", name, "--token-file", token_file]
    command += ["--bind", host, "--port", str(port), "--pidfile", pidfile, "--log", log, "--cert", cert, "--key", key]
    command += ["--watch-pid", str(watch_pid), "--watch-start", start_time_of(watch_pid) or ""]
    command += ["--max-seconds", str(max_seconds)]
    with open(log, "ab") as errors:
        # Controller side (the iso_serve action plugin), not a module: there is no AnsibleModule.run_command, and
        # the server must outlive this call in its own session.
        process = subprocess.Popen(  # pylint: disable=ansible-bad-function
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        info = read_pidfile(pidfile)
        if info and info.get("pid") == process.pid:
            listening = "%s:%d" % (_bracket(host), info["port"])
            base = f"{'https' if cert else 'http'}://{listening}"
            urls = {"url": f"{base}/{token}/{name}", "display_url": f"{base}/(secret)/{name}"}
            return dict(urls, pid=process.pid, pidfile=pidfile, log=log, address=listening)
        if process.poll() is not None:
            raise ServeError(
                f"the server for {iso} on {_bracket(host)}:{port} exited ({process.returncode}): "
                f"{_tail(log)}; choose a free address and port in day2_serve_address"
            )
        time.sleep(0.05)
    process.kill()
    raise ServeError(f"the server on {_bracket(host)}:{port} did not start within {START_SECONDS:.0f} s; see {log}")


def _tail(log: str) -> str:
    try:
        with open(log, errors="replace") as handle:
            lines = [line.strip() for line in handle.read().splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(no output)"


def stop(pidfile: str, timeout: float = STOP_SECONDS) -> dict[str, Any]:
    """Stop the server of ``pidfile`` (SIGTERM, then SIGKILL); return stopped (a server was running) and pid."""
    info = read_pidfile(pidfile)
    if not info or not isinstance(info.get("pid"), int):
        return {"stopped": False, "pid": None}
    pid, running = info["pid"], _is_server(info["pid"])
    try:
        if running:
            os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        running = False
    deadline = time.monotonic() + timeout
    while running and time.monotonic() < deadline and process_alive(pid, None):
        time.sleep(0.05)
    if running and process_alive(pid, None):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for path in (pidfile, os.path.join(os.path.dirname(pidfile), "iso-serve.token")) if running else (pidfile,):
        with contextlib.suppress(OSError):
            os.remove(path)
    return {"stopped": running, "pid": pid}


def _is_server(pid: int) -> bool:
    """Whether ``pid`` is a running serve.py (a stale pidfile may name a pid now used by something else)."""
    if not process_alive(pid, None):
        return False
    with contextlib.suppress(OSError), open("/proc/%d/cmdline" % pid, "rb") as handle:
        return SERVE_PROGRAM.encode() in handle.read()
    return not os.path.exists("/proc/self")  # no /proc: trust the pidfile
