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
    headers = {}
    token = configuration.get_api_key_with_prefix("authorization") if hasattr(configuration, "get_api_key_with_prefix") else None
    if token:
        headers["authorization"] = token
    return headers


def _returncode(client):
    try:
        return client.returncode
    except Exception:  # pylint: disable=broad-except
        # No status on channel 3: the stream was cut before the command ended.
        return None


def run_streaming(configuration, namespace, pod, container, command, sink, timeout=600, idle_timeout=120):
    """Run ``command``; feed stdout chunks to ``sink``; return (returncode, stderr bytes).

    Raises ExecError when the connection fails or breaks before the command's
    exit status arrives.
    """
    if ws_client is None:
        raise ExecError("the kubernetes Python library (kubernetes.stream) is required")
    try:
        client = ws_client.WSClient(configuration, exec_url(configuration, namespace, pod, container, command),
                                    _headers(configuration), capture_all=False, binary=True)
    except Exception as error:  # pylint: disable=broad-except
        raise ExecError("cannot open exec into pod %s/%s: %s" % (namespace, pod, error))
    deadline = time.monotonic() + timeout
    idle_since = time.monotonic()
    stderr = bytearray()
    try:
        while client.is_open():
            if time.monotonic() > deadline:
                raise ExecError("exec %s in pod %s/%s did not finish within %ss" % (" ".join(command), namespace, pod, timeout))
            try:
                client.update(timeout=1)
            except Exception as error:  # pylint: disable=broad-except
                raise ExecError("exec %s in pod %s/%s was interrupted: %s" % (" ".join(command), namespace, pod, error))
            got = False
            if client.peek_stdout():
                sink(client.read_stdout())
                got = True
            if client.peek_stderr():
                stderr.extend(client.read_stderr())
                got = True
            if got:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > idle_timeout:
                raise ExecError("exec %s in pod %s/%s sent nothing for %ss" % (" ".join(command), namespace, pod, idle_timeout))
        # Drain what arrived with the close.
        if client.peek_stdout():
            sink(client.read_stdout())
        if client.peek_stderr():
            stderr.extend(client.read_stderr())
        code = _returncode(client)
    finally:
        try:
            client.close()
        except Exception:  # pylint: disable=broad-except
            pass
    if code is None:
        raise ExecError("exec %s in pod %s/%s ended without an exit status (connection cut)" % (" ".join(command), namespace, pod))
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
