# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ISO server the boot step starts on the controller (``iso_serve``): one file, one secret path, GET and HEAD.

Run as a program (``python serve.py --file ISO --token T ...``); standard library only, so it runs with the
controller's Python and no collection path. It serves the file at ``/<token>/<name>`` and nothing else:

- GET and HEAD only (405 otherwise); any other path is 404 with no listing; single byte ranges (``Range:
  bytes=a-b``, ``a-``, ``-n``) answer 206 with ``Content-Range``, as BMCs read virtual media in ranges; an
  unsatisfiable range is 416; several ranges, or an ``If-Range`` that does not match, get the whole file (200),
  as RFC 9110 lets a server do.
- Plain HTTP, or HTTPS with ``--cert`` and ``--key``.
- It writes ``--pidfile`` (JSON: pid, port, started) once it listens, and removes it when it exits.
- It exits on SIGTERM, SIGINT or SIGHUP; when the process it watches (``--watch-pid``: ansible-playbook) is gone
  or a zombie, so a killed run leaves no server behind; and after ``--max-seconds`` in any case.
- The access log (``--log``) has the method, the range, the status and the client; never the secret path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NOT_FOUND = b"not found\n"
WATCH_SECONDS = 0.5
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) of a single satisfiable byte range; None for no (or an ignored) range; raises ValueError
    for a range that cannot be satisfied."""
    match = _RANGE.match((header or "").strip().replace(" ", ""))
    if not match or match.groups() == ("", ""):
        return None  # no range, several ranges (a comma) or not a byte range this server knows: the whole file
    first_text, last_text = match.groups()
    if not first_text:  # the last N bytes; none (N = 0, or an empty file) cannot be satisfied
        first, last = max(0, size - int(last_text)), size - 1
    else:
        first, last = int(first_text), int(last_text) if last_text else size - 1
    if first >= size or last < first:
        raise ValueError("range outside the file")
    return first, min(last, size - 1)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, None when it cannot be read: the state first (Z a
    zombie, X dead), the start time in clock ticks twentieth -- torvalds/linux
    fs/proc/array.c@9edd576d89a5b6d3e136d7dcab654d887c0d25b7 (``task_state_array``, ``do_task_stat``)."""
    with contextlib.suppress(OSError, IndexError), open("/proc/%d/stat" % pid) as handle:
        return handle.read().rsplit(")", 1)[1].split()
    return None


def process_alive(pid: int, start_time: str | None) -> bool:
    """Whether ``pid`` still runs (not a zombie) and is the process that had ``start_time`` (Linux /proc)."""
    if os.path.exists("/proc/self/stat"):
        fields = _stat(pid)
        return fields is not None and fields[0] not in ("Z", "X") and start_time in (None, fields[19])
    try:
        os.kill(pid, 0)
    except OSError as error:
        return isinstance(error, PermissionError)  # someone else's process still runs
    return True


def start_time_of(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields else None


class IsoHandler(BaseHTTPRequestHandler):
    server_version = "openshift-agent-day2-iso"
    protocol_version = "HTTP/1.1"
    timeout = 300  # seconds a connection may stay idle

    def _answer(self, status: int, headers: dict[str, str], length: int = 0) -> None:
        self.send_response(status)
        for name, value in dict(headers, **{"Content-Length": str(length)}).items():
            self.send_header(name, value)
        self.end_headers()

    def _not_allowed(self) -> None:
        self._answer(405, {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    def do_GET(self) -> None:
        """GET and HEAD of the one path: the whole file or one range of it."""
        conf = self.server.conf  # type: ignore[attr-defined]
        if self.path.split("?", 1)[0] != conf["path"]:
            self._answer(404, {"Content-Type": "text/plain"}, len(NOT_FOUND))
            if self.command != "HEAD":
                self.wfile.write(NOT_FOUND)
            return
        size, mtime = os.path.getsize(conf["file"]), os.path.getmtime(conf["file"])
        etag, modified = f'"{int(mtime):x}-{size:x}"', self.date_time_string(mtime)
        try:
            wanted = parse_range(self.headers.get("Range"), size)
        except ValueError:
            self._answer(416, {"Content-Range": "bytes */%d" % size})
            return
        if wanted is not None and (self.headers.get("If-Range") or etag) not in (etag, modified):
            wanted = None  # an If-Range of another version of the file: the whole file
        first, last = wanted if wanted is not None else (0, size - 1)
        headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes", "ETag": etag}
        headers["Last-Modified"] = modified
        if wanted is not None:
            headers["Content-Range"] = "bytes %d-%d/%d" % (first, last, size)
        self._answer(206 if wanted is not None else 200, headers, max(0, last - first + 1))
        if self.command != "HEAD" and size:
            with open(conf["file"], "rb") as handle:
                self.connection.sendfile(handle, first, last - first + 1)

    do_HEAD = do_GET

    def log_request(self, code: object = "-", size: object = "-") -> None:
        conf = self.server.conf  # type: ignore[attr-defined]
        where = "ISO" if self.path.split("?", 1)[0] == conf["path"] else "other path"
        asked = self.headers.get("Range", "-") if self.headers else "-"
        self.log_message("%s %s range=%s status=%s", self.command, where, asked, code)

    def log_message(self, format: str, *args: object) -> None:
        token = self.server.conf["token"]  # type: ignore[attr-defined]
        logging.info("%s %s", self.client_address[0], (format % args).replace(token, "(secret)"))


class IsoServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], conf: dict) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.conf = conf
        super().__init__(address, IsoHandler)


def _arguments(argv: list | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--name", required=True, help="the file name in the URL")
    parser.add_argument("--token-file", required=True, help="a file holding the secret path segment (read, kept)")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", help="with --key: HTTPS (empty: plain HTTP)")
    parser.add_argument("--key")
    parser.add_argument("--pidfile", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--watch-pid", type=int, required=True)
    parser.add_argument("--watch-start", help="its start time in /proc/<pid>/stat (empty: unknown)")
    parser.add_argument("--max-seconds", type=float, default=7200)
    return parser.parse_args(argv)


def main(argv: list | None = None) -> int:
    args = _arguments(argv)
    with open(args.token_file) as handle:
        token = handle.read().strip()
    logging.basicConfig(filename=args.log, format="%(asctime)s %(message)s", datefmt=TIME_FORMAT, level=logging.INFO)
    conf = {"file": args.file, "path": f"/{token}/{args.name}", "token": token}
    server = IsoServer((args.bind.strip("[]"), args.port), conf)
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key or None)
        # Each accepted connection is wrapped alike; its handshake happens in the request's own thread, at its first
        # read: a slow client blocks no one.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_args: stop.set())
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    temporary = args.pidfile + ".tmp"
    with open(temporary, "w") as handle:
        json.dump({"pid": os.getpid(), "port": server.server_address[1], "started": time.time()}, handle)
    os.replace(temporary, args.pidfile)
    deadline = time.monotonic() + args.max_seconds
    why = ""
    while not why and not stop.wait(WATCH_SECONDS):
        if not process_alive(args.watch_pid, args.watch_start or None):
            why = "the run (pid %d) is gone" % args.watch_pid
        elif time.monotonic() > deadline:
            why = f"served for its maximum of {args.max_seconds:.0f} s"
    server.shutdown()
    server.server_close()
    for path in (args.pidfile, args.token_file):
        with contextlib.suppress(OSError):
            os.remove(path)
    logging.info("exit: %s", why or "stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
