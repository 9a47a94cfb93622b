# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Run commands in a pod over the exec WebSocket and stream their output.

Uses the kubernetes client's own WebSocket client (v5/v4 channel protocols),
but opens it with ``capture_all`` off and in binary mode, so a 1 GiB ``cat``
goes straight to a file instead of piling up in memory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import time

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover
    quote = None

try:
    from kubernetes.stream import ws_client
except ImportError:  # pragma: no cover - reported by the module
    ws_client = None


class ExecError(Exception):
    """The exec call itself failed (not the command)."""


class ExecResult:
    def __init__(self, returncode, stdout, stderr):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def exec_url(configuration, namespace, pod, container, command):
    query = "&".join(["command=%s" % quote(part, safe="") for part in command])
    path = "/api/v1/namespaces/%s/pods/%s/exec?%s&container=%s&stdin=false&stdout=true&stderr=true&tty=false" % (
        namespace, pod, query, quote(container, safe=""))
    return ws_client.get_websocket_url(configuration.host.rstrip("/") + path)


def _headers(configuration):
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


def _returncode(client):
    try:
        return client.returncode
    except Exception:  # pylint: disable=broad-except
        # No status on channel 3: the stream was cut before the command ended.
        return None


def _handshake_problem(error):
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


def _receive(client):
    """Wait up to a second for frames; return (stdout bytes, stderr bytes) that arrived."""
    client.update(timeout=1)
    out = client.read_stdout() if client.peek_stdout() else b""
    err = client.read_stderr() if client.peek_stderr() else b""
    return out, err


def run_streaming(configuration, namespace, pod, container, command, sink, timeout=600, idle_timeout=120):
    """Run ``command``; feed stdout chunks to ``sink``; return (returncode, stderr bytes).

    Raises ExecError when the connection fails or breaks before the command's
    exit status arrives. Errors of ``sink`` (a full disk) propagate unchanged.
    """
    if ws_client is None:
        raise ExecError("the kubernetes Python library (kubernetes.stream) is required")
    described = "exec %s in pod %s/%s" % (" ".join(command), namespace, pod)
    try:
        client = ws_client.WSClient(configuration, exec_url(configuration, namespace, pod, container, command),
                                    _headers(configuration), capture_all=False, binary=True)
    except Exception as error:  # pylint: disable=broad-except
        raise ExecError("cannot open exec into pod %s/%s: %s" % (namespace, pod, _handshake_problem(error)))
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    stderr = bytearray()
    try:
        while True:
            if time.monotonic() > deadline:
                raise ExecError("%s did not finish within %ss" % (described, timeout))
            try:
                still_open = client.is_open()
                # After the close, one more pass drains what arrived with it.
                out, err = _receive(client)
            except Exception as error:  # pylint: disable=broad-except
                # websocket-client raises its own and socket/SSL errors when the connection breaks.
                raise ExecError("%s was interrupted: %s" % (described, error))
            if out:
                sink(out)  # outside the try: a write error of the sink is not a broken connection
            stderr.extend(err)
            if out or err:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > idle_timeout:
                raise ExecError("%s sent nothing for %ss" % (described, idle_timeout))
            if not still_open:
                break
        code = _returncode(client)
    finally:
        try:
            client.close()
        except Exception:  # pylint: disable=broad-except
            pass
    if code is None:
        raise ExecError("%s ended without an exit status (connection cut)" % described)
    return code, bytes(stderr)


def run(configuration, namespace, pod, container, command, timeout=120):
    out = bytearray()
    code, err = run_streaming(configuration, namespace, pod, container, command, out.extend, timeout=timeout)
    return ExecResult(code, bytes(out), err)


def copy_file(configuration, namespace, pod, container, path, fileobj, timeout=1800):
    """Stream ``path`` from the pod into ``fileobj``; return (bytes written, sha256 hex)."""
    digest = hashlib.sha256()
    written = [0]

    def sink(chunk):
        fileobj.write(chunk)
        digest.update(chunk)
        written[0] += len(chunk)

    code, err = run_streaming(configuration, namespace, pod, container, ["cat", path], sink, timeout=timeout)
    if code != 0:
        raise ExecError("cat %s in pod %s/%s failed (exit %s): %s" % (path, namespace, pod, code, err.decode("utf-8", "replace").strip()))
    return written[0], digest.hexdigest()
