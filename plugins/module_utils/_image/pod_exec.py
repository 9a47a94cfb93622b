# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run commands in a pod over the exec WebSocket and stream their output.

Opens the exec WebSocket with the kubernetes client (v5/v4 channel protocols,
binary) and reads its frames one at a time, so a 1 GiB ``cat`` goes straight
to a file instead of piling up in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import select
import ssl
import time
from typing import IO, Any, Callable
from urllib.parse import quote

from ansible_collections.openshift_agent.day2.plugins.module_utils._common import retry as _retry
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

try:
    from kubernetes.stream import ws_client
    from websocket import ABNF
except ImportError:  # pragma: no cover - reported by the module
    ws_client = None  # type: ignore[assignment]

STDOUT_CHANNEL, STDERR_CHANNEL, STATUS_CHANNEL = 1, 2, 3


class ExecError(Day2Error):
    """The exec call itself failed (not the command)."""


class ExecResult:
    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def exec_url(configuration: Any, namespace: str | None, pod: str, container: str, command: list[str]) -> str:
    query = "&".join(["command=%s" % quote(part, safe="") for part in command])
    path = "/api/v1/namespaces/%s/pods/%s/exec?%s&container=%s&stdin=false&stdout=true&stderr=true&tty=false" % (
        namespace,
        pod,
        query,
        quote(container, safe=""),
    )
    return ws_client.get_websocket_url(configuration.host.rstrip("/") + path)


def _headers(configuration: Any) -> dict[str, str]:
    """The credential headers the REST calls send (the bearer token; client certificates go in TLS).

    Read through auth_settings() because the key of the token differs between kubernetes client
    versions ("authorization" or "BearerToken").
    """
    headers = {}
    settings = configuration.auth_settings() if hasattr(configuration, "auth_settings") else {}
    for setting in settings.values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    return headers


def _handshake_problem(error: Exception) -> str:
    """The API server's Status message of a refused exec upgrade (403, 404...), else the error text."""
    status = getattr(error, "status_code", None)
    body = getattr(error, "resp_body", None)
    if status and body:
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            message = None
        if message:
            hint = ": the identity needs 'create' on pods/exec" if status == 403 else ""
            return "HTTP %s: %s%s" % (status, message, hint)
    return str(error)


def _handshake_attempt(error: BaseException) -> _retry.Attempt | None:
    """What the retry policy sees of a failed exec upgrade: the HTTP status (a 429 or 5xx is tried again), None
    for a connection that broke before any answer; a refused certificate is not tried again."""
    status = getattr(error, "status_code", None)
    if status is not None:
        return _retry.Attempt(status, _retry.retry_after_seconds(getattr(error, "resp_headers", None)))
    if isinstance(error, ssl.SSLCertVerificationError):
        return None
    if isinstance(error, OSError) or type(error).__module__.startswith("websocket"):
        return _retry.Attempt(None)
    return None


def _open(configuration: Any, url: str, policy: _retry.RetryPolicy, sleep: Callable[[float], Any]) -> Any:
    """The exec WebSocket; the upgrade (a GET) is tried again after a transient failure, as every read is."""
    return _retry.call(
        lambda: ws_client.WSClient(configuration, url, _headers(configuration), capture_all=False, binary=True),
        policy,
        _handshake_attempt,
        sleep=sleep,
    )


def _readable(ws: Any, timeout: float) -> bool:
    """True when a frame can be read: bytes on the socket, or already decrypted in the TLS buffer."""
    raw = ws.sock
    if isinstance(raw, ssl.SSLSocket) and raw.pending():
        return True
    if hasattr(select, "poll"):
        poll = select.poll()
        poll.register(raw, select.POLLIN)
        return bool(poll.poll(timeout * 1000))
    return bool(select.select([raw], [], [], timeout)[0])


def exit_code(status: dict[str, Any]) -> int:
    """The command's exit code from the Status the kubelet sends on channel 3."""
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message"))
            except (TypeError, ValueError):
                break
    return 1  # a failure without an exit code (the command could not start)


def run_streaming(
    configuration: Any,
    namespace: str | None,
    pod: str,
    container: str,
    command: list[str],
    sink: Callable[[bytes], Any],
    timeout: float = 600,
    idle_timeout: float = 120,
    policy: _retry.RetryPolicy = _retry.DEFAULT_POLICY,
    sleep: Callable[[float], Any] = time.sleep,
) -> tuple[int, bytes]:
    """Run ``command``; feed stdout chunks to ``sink``; return (returncode, stderr bytes).

    Frames are read one by one and handed to ``sink`` at once: the kubernetes client's own
    WSClient.update() gathers every frame already available into one growing bytes object, which
    is quadratic and holds a whole ISO in memory. WSClient is used only to open the connection
    (credentials, TLS, proxy, v5/v4 subprotocol).

    Raises ExecError when the connection fails or breaks before the command's exit status
    arrives. Errors of ``sink`` (a full disk) propagate unchanged.
    """
    if ws_client is None:
        raise ExecError("the kubernetes Python library (kubernetes.stream) is required")
    described = "exec %s in pod %s/%s" % (" ".join(command), namespace, pod)
    try:
        client = _open(configuration, exec_url(configuration, namespace, pod, container, command), policy, sleep)
    except Exception as error:  # pylint: disable=broad-except
        raise ExecError("cannot open exec into pod %s/%s: %s" % (namespace, pod, _handshake_problem(error)))
    ws = client.sock
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    stderr = bytearray()
    status = None
    try:
        while True:
            now = time.monotonic()
            if now > deadline:
                raise ExecError("%s did not finish within %ss" % (described, timeout))
            try:
                if not _readable(ws, 1.0):
                    if now - idle_since > idle_timeout:
                        raise ExecError("%s sent nothing for %ss" % (described, idle_timeout))
                    continue
                opcode, frame = ws.recv_data_frame(True)
            except ExecError:
                raise
            except Exception as error:  # pylint: disable=broad-except
                if status is not None:
                    break  # the exit status arrived; only the closing handshake was lost
                # websocket-client raises its own and socket/SSL errors when the connection breaks.
                raise ExecError("%s was interrupted: %s" % (described, error))
            if opcode == ABNF.OPCODE_CLOSE:
                break
            data = frame.data if isinstance(frame.data, bytes) else frame.data.encode("utf-8")
            if opcode not in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) or not data:
                continue
            idle_since = time.monotonic()
            channel, payload = bytearray(data[:1])[0], data[1:]
            if channel == STDOUT_CHANNEL:
                sink(payload)
            elif channel == STDERR_CHANNEL:
                stderr.extend(payload)
            elif channel == STATUS_CHANNEL:
                status = json.loads(payload.decode("utf-8", "replace") or "{}")
            # channel 255 (v5 "close this channel") needs no action: the stream ends with a close frame
    finally:
        with contextlib.suppress(Exception):  # pylint: disable=broad-except
            client.close()
    if status is None:
        raise ExecError("%s ended without an exit status (connection cut)" % described)
    return exit_code(status), bytes(stderr)


def run(
    configuration: Any, namespace: str | None, pod: str, container: str, command: list[str], timeout: float = 120
) -> ExecResult:
    out = bytearray()
    code, err = run_streaming(configuration, namespace, pod, container, command, out.extend, timeout=timeout)
    return ExecResult(code, bytes(out), err)


def copy_file(
    configuration: Any,
    namespace: str | None,
    pod: str,
    container: str,
    path: str,
    fileobj: IO[bytes],
    timeout: float = 1800,
) -> tuple[int, str]:
    """Stream ``path`` from the pod into ``fileobj``; return (bytes written, sha256 hex)."""
    digest = hashlib.sha256()
    written = [0]

    def sink(chunk: bytes) -> None:
        fileobj.write(chunk)
        digest.update(chunk)
        written[0] += len(chunk)

    code, err = run_streaming(configuration, namespace, pod, container, ["cat", path], sink, timeout=timeout)
    if code != 0:
        raise ExecError(
            "cat %s in pod %s/%s failed (exit %s): %s"
            % (path, namespace, pod, code, err.decode("utf-8", "replace").strip())
        )
    return written[0], digest.hexdigest()
