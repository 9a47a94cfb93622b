# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run commands in a pod over the exec WebSocket and stream their output; copy a file out of a pod, verified.

Opens the exec WebSocket with the kubernetes client (v5/v4 channel protocols, binary) and reads its frames one
at a time, so a 1 GiB ``cat`` goes straight to a file instead of piling up in memory. :func:`fetch` writes the
copy atomically (a ``0600`` temporary file in the same directory, renamed into place) once its sha256 matches the
one computed in the pod.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import select
import ssl
import tempfile
import time
from typing import IO, Any, Callable, NamedTuple

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import k8s
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

try:
    from kubernetes.stream import ws_client
    from websocket import ABNF
except ImportError:  # pragma: no cover - AnsibleK8SModule reports a missing kubernetes, which needs websocket
    pass

STDOUT_CHANNEL, STDERR_CHANNEL, STATUS_CHANNEL = 1, 2, 3
_SHA256_LINE = re.compile(r"^([0-9a-f]{64})\s")


class ExecError(Day2Error):
    """The exec call itself failed (not the command)."""


class ExecResult(NamedTuple):
    returncode: int
    stdout: bytes
    stderr: bytes

    def text(self, stream: str = "stdout") -> str:
        return str(getattr(self, stream).decode("utf-8", "replace").strip())


class Pod(NamedTuple):
    """Where commands run: the kubernetes client's configuration, a pod and its container (by default the pod's
    name, as node-joiner's pod names its container)."""

    configuration: Any
    namespace: str | None
    name: str
    container: str = ""

    def describe(self) -> str:
        return f"pod {self.namespace}/{self.name}"


def exec_url(pod: Pod, command: list[str]) -> str:
    """The exec WebSocket URL, its query (one ``command`` per argument) encoded by the kubernetes client."""
    streams = {"stdin": "false", "stdout": "true", "stderr": "true", "tty": "false"}
    query = [("command", command), ("container", pod.container or pod.name), *streams.items()]
    url = f"{pod.configuration.host.rstrip('/')}/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/exec"
    return ws_client.get_websocket_url(url, query)


def _headers(configuration: Any) -> dict[str, str]:
    """The credential headers the REST calls send (the bearer token; client certificates go in TLS).

    Read through auth_settings() because the key of the token differs between kubernetes client
    versions ("authorization" or "BearerToken").
    """
    settings = configuration.auth_settings() if hasattr(configuration, "auth_settings") else {}
    return {s["key"]: s["value"] for s in settings.values() if s.get("in") == "header" and s.get("value")}


def _handshake_problem(error: Exception) -> str:
    """The API server's Status message of a refused exec upgrade (403, 404...), else the error text."""
    status = getattr(error, "status_code", None)
    try:
        message = json.loads(getattr(error, "resp_body", None) or "").get("message") if status else None
    except (ValueError, AttributeError):
        message = None
    if not message:
        return str(error)
    return f"HTTP {status}: {message}" + (": the identity needs 'create' on pods/exec" if status == 403 else "")


def _handshake_attempt(error: BaseException) -> k8s.Attempt | None:
    """What the retry policy sees of a failed exec upgrade: the HTTP status (a 429 or 5xx is tried again), None
    for a connection that broke before any answer; a refused certificate is not tried again."""
    status = getattr(error, "status_code", None)
    if status is not None:
        return k8s.Attempt(status, k8s.retry_after_seconds(getattr(error, "resp_headers", None)))
    if isinstance(error, ssl.SSLCertVerificationError):
        return None
    return k8s.Attempt(None) if isinstance(error, OSError) or type(error).__module__.startswith("websocket") else None


def _readable(ws: Any, timeout: float) -> bool:
    """True when a frame can be read: bytes on the socket, or already decrypted in the TLS buffer."""
    if isinstance(ws.sock, ssl.SSLSocket) and ws.sock.pending():
        return True
    poll = select.poll()  # every POSIX Python has it; select() would refuse descriptors above 1023
    poll.register(ws.sock, select.POLLIN)
    return bool(poll.poll(timeout * 1000))


def exit_code(status: dict[str, Any]) -> int:
    """The command's exit code from the Status the kubelet sends on channel 3."""
    causes = k8s.dig(status, "details", "causes", default=[])
    code = next((cause.get("message") for cause in causes if cause.get("reason") == "ExitCode"), "")
    try:
        return 0 if status.get("status") == "Success" else int(code)
    except (TypeError, ValueError):
        return 1  # a failure without an exit code (the command could not start)


def run_streaming(
    pod: Pod, command: list[str], sink: Callable[[bytes], Any], timeout: float = 600, idle_timeout: float = 120
) -> tuple[int, bytes]:
    """Run ``command``; feed stdout chunks to ``sink``; return (returncode, stderr bytes).

    Frames are read one by one and handed to ``sink`` at once: the kubernetes client's own
    WSClient.update() gathers every frame already available into one growing bytes object, which
    is quadratic and holds a whole ISO in memory. WSClient is used only to open the connection
    (credentials, TLS, proxy, v5/v4 subprotocol); the upgrade (a GET) is tried again after a transient failure,
    as every read is.

    Raises ExecError when the connection fails or breaks before the command's exit status
    arrives. Errors of ``sink`` (a full disk) propagate unchanged.
    """
    described = f"exec {' '.join(command)} in {pod.describe()}"
    url, headers = exec_url(pod, command), _headers(pod.configuration)
    try:
        opened = functools.partial(ws_client.WSClient, pod.configuration, url, headers, capture_all=False, binary=True)
        client = k8s.call(opened, k8s.DEFAULT_POLICY, _handshake_attempt)
    except Exception as error:  # pylint: disable=broad-except
        raise ExecError(f"cannot open exec into {pod.describe()}: {_handshake_problem(error)}")
    deadline, idle_since, stderr = time.monotonic() + timeout, time.monotonic(), bytearray()
    statuses: list[bytes] = []  # channel 255 (v5 "close this channel") needs nothing done: a close frame ends
    channels = {STDOUT_CHANNEL: sink, STDERR_CHANNEL: stderr.extend, STATUS_CHANNEL: statuses.append}
    try:
        while True:
            now = time.monotonic()
            if now > deadline or now - idle_since > idle_timeout:
                late = f"did not finish within {timeout}s" if now > deadline else f"sent nothing for {idle_timeout}s"
                raise ExecError(f"{described} {late}")
            try:
                opcode, frame = client.sock.recv_data_frame(True) if _readable(client.sock, 1.0) else (None, None)
            except Exception as error:  # pylint: disable=broad-except
                if statuses:
                    break  # the exit status arrived; only the closing handshake was lost
                # websocket-client raises its own and socket/SSL errors when the connection breaks.
                raise ExecError(f"{described} was interrupted: {error}")
            if opcode == ABNF.OPCODE_CLOSE:
                break
            data = getattr(frame, "data", b"") if opcode in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) else b""
            data = data if isinstance(data, bytes) else data.encode("utf-8")
            if data:
                idle_since = time.monotonic()
                channels.get(data[0], bytes)(data[1:])
    finally:
        with contextlib.suppress(Exception):  # pylint: disable=broad-except
            client.close()
    if not statuses:
        raise ExecError(f"{described} ended without an exit status (connection cut)")
    return exit_code(json.loads(statuses[-1].decode("utf-8", "replace") or "{}")), bytes(stderr)


def run(pod: Pod, command: list[str], timeout: float = 120) -> ExecResult:
    out = bytearray()
    code, err = run_streaming(pod, command, out.extend, timeout=timeout)
    return ExecResult(code, bytes(out), err)


def copy_file(pod: Pod, path: str, fileobj: IO[bytes], timeout: float = 1800) -> tuple[int, str]:
    """Stream ``path`` from the pod into ``fileobj``; return (bytes written, sha256 hex)."""
    digest = hashlib.sha256()

    def sink(chunk: bytes) -> None:
        fileobj.write(chunk)
        digest.update(chunk)

    code, err = run_streaming(pod, ["cat", path], sink, timeout=timeout)
    if code != 0:
        raise ExecError(f"cat {path} in {pod.describe()} failed (exit {code}): {err.decode(errors='replace').strip()}")
    return fileobj.tell(), digest.hexdigest()


def remote_sha256(pod: Pod, path: str) -> str:
    """The sha256 of ``path``, computed in the pod."""
    result = run(pod, ["sha256sum", path])
    match = _SHA256_LINE.match(result.text())
    if result.returncode != 0 or not match:
        raise ExecError(f"cannot checksum {path} in {pod.describe()}: {result.text('stderr') or 'no sha256sum output'}")
    return match.group(1)


def fetch(
    pod: Pod, remote_path: str, dest_path: str, finish: Callable[[str], Any] | None = None, timeout: float = 1800
) -> tuple[int, str]:
    """Copy ``remote_path`` out of the pod into ``dest_path`` atomically, verified by sha256; return (size, sha256
    of the copy as received).

    ``finish(temp_path)`` may check or edit the verified copy before it is renamed into place. A broken transfer or
    a checksum mismatch is tried again once; nothing partial is left, whatever happens (a SIGTERM included).
    """
    expected = remote_sha256(pod, remote_path)
    directory, attempts, problem = os.path.dirname(os.path.abspath(dest_path)), 2, ""
    for _attempt in range(attempts):
        fd, temp_path = tempfile.mkstemp(prefix=f".{os.path.basename(dest_path)}.", suffix=".part", dir=directory)
        try:  # mode 0600 (mkstemp's): the artifacts carry the pull secret and the agent token
            with os.fdopen(fd, "wb") as out:
                size, digest = copy_file(pod, remote_path, out, timeout=timeout)
                out.flush()
                os.fsync(out.fileno())
            if digest == expected:
                if finish:
                    finish(temp_path)
                os.replace(temp_path, dest_path)
                return size, digest
            problem = f"checksum mismatch for {remote_path}: pod {expected}, the {size} bytes received {digest}"
        except ExecError as error:
            problem = f"transfer of {remote_path} interrupted: {error}"
        except OSError as error:
            if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise ExecError(
                    f"no space left to write {os.path.basename(dest_path)} in {directory} ({error.strerror}); free "
                    "space there or choose another dest. Nothing partial was left."
                )
            raise
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp_path)  # renamed away when it succeeded
    raise ExecError(f"{problem} (after {attempts} attempts)")
