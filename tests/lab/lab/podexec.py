"""``exec`` and ``log`` of the lab's pods, and the exec faults.

``exec`` runs commands through ``lab.shell.Container`` over a WebSocket (``v5.channel.k8s.io`` or
``v4.channel.k8s.io``, binary frames, one channel byte first: 1 stdout, 2 stderr, 3 the exit Status), streaming
big outputs chunk by chunk, with the faults ``exec_cut_after_bytes`` and ``exec_corrupt``. ``log`` returns the
container's output as plain text. ``serve_pod_files`` is the plain HTTPS download the streaming benchmark
compares exec with.
"""

from __future__ import annotations

import asyncio
import json
import os

from aiohttp import web

from . import kinds
from .errors import ApiError
from .faults import register_fault, reset_connection

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDOUT, STDERR, STATUS = 1, 2, 3
CORRUPT_MIN_BYTES = 64 * 1024  # exec_corrupt spares small outputs (report.json, sha256sum lines)


def parse_cut(value: str) -> tuple:
    """``N`` or ``NxK``: cut the next K (default 1) exec streams once N stdout bytes are sent."""
    size, times = ([*value.split("x", 1), "1"])[:2]
    parsed = (int(size), int(times))
    if parsed[0] < 0 or parsed[1] < 1:
        raise ValueError(f"exec_cut_after_bytes is N or NxK with N >= 0 and K >= 1, got {value}")
    return parsed


def parse_rate_limit(value: str) -> int:
    rate = int(value)
    if rate < 1:
        raise ValueError(f"bytes per second is 1 or more, got {value}")
    return rate


def parse_count(value: str) -> int:
    count = 1 if value == "true" else int(value)
    if count < 1:
        raise ValueError(f"a count is 1 or more, got {value}")
    return count


register_fault(
    "exec_cut_after_bytes",
    parse_cut,
    "N[xK]: the next K exec streams (default 1) lose their connection after N stdout bytes",
)
register_fault(
    "exec_corrupt", parse_count, "K: one byte is flipped in each of the next K exec outputs larger than 64 KiB"
)
register_fault(
    "exec_bytes_per_second", parse_rate_limit, "exec streams send stdout at most this fast (a slow transfer)"
)


class PodStreams:
    """exec and log of the simulated containers (``pods``: (namespace, name) -> ``lab.pods.SimulatedPod``)."""

    def __init__(self, ctx, pods: dict):
        self.ctx = ctx
        self.pods = pods

    def _sim(self, namespace, name):
        self.ctx.store.get(kinds.POD, namespace, name)  # 404 like the API server
        sim = self.pods.get((namespace, name))
        if sim is None:
            raise ApiError(400, "BadRequest", f"pod {name} does not have a host assigned")
        return sim

    def _check_running(self, sim, request: web.Request) -> None:
        container = request.query.get("container")
        if container and container != sim.container:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {sim.name}")
        pod = self.ctx.store.get(kinds.POD, sim.namespace, sim.name)
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            raise ApiError(
                400, "BadRequest", f"cannot exec into a container in a completed pod; current phase is {phase}"
            )
        if phase != "Running":
            raise ApiError(
                400,
                "BadRequest",
                f'container "{sim.container}" in pod "{sim.name}" is waiting to start: '
                + (waiting_words(sim.pull_failure) if sim.pull_failure else "ContainerCreating"),
            )

    async def exec_ws(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        sim = self._sim(namespace, name)
        self._check_running(sim, request)
        command = request.query.getall("command", [])
        if not command:
            raise ApiError(400, "BadRequest", "you must specify at least 1 command")
        ws = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True)
        if not ws.can_prepare(request).ok:
            raise ApiError(400, "BadRequest", "Upgrade request required")
        await ws.prepare(request)
        result = await asyncio.to_thread(sim.shell.execute, command)
        if not await self._send_stdout(request, ws, result.stdout):
            return ws
        if result.stderr:
            await ws.send_bytes(bytes([STDERR]) + result.stderr)
        await ws.send_bytes(bytes([STATUS]) + json.dumps(exit_status(command, result.exit_code)).encode())
        await ws.close()
        return ws

    def _use_fault(self, name, remaining, text):
        """A counted fault: one use fewer, cleared after the last."""
        if remaining <= 1:
            self.ctx.faults.clear(name)
        else:
            self.ctx.faults.set(name, text)

    async def _send_stdout(self, request, ws, chunks) -> bool:
        """Send stdout on channel 1, applying the exec faults; False when the connection was cut."""
        sent = 0
        corrupt_pending = True
        iterator = iter(chunks)
        while True:
            chunk = await asyncio.to_thread(next, iterator, None)
            if chunk is None:
                return True
            cut = self.ctx.faults.get("exec_cut_after_bytes")
            if cut and sent + len(chunk) > cut[0]:
                if cut[0] > sent:
                    await ws.send_bytes(bytes([STDOUT]) + chunk[: cut[0] - sent])
                self._use_fault("exec_cut_after_bytes", cut[1], f"{cut[0]}x{cut[1] - 1}")
                reset_connection(request, ws)
                return False
            corrupt = self.ctx.faults.get("exec_corrupt")
            if corrupt and corrupt_pending and sent + len(chunk) > CORRUPT_MIN_BYTES:
                corrupt_pending = False
                flipped = bytearray(chunk)
                flipped[len(flipped) // 2] ^= 0xFF
                chunk = bytes(flipped)
                self._use_fault("exec_corrupt", corrupt, str(corrupt - 1))
            sent += len(chunk)
            await ws.send_bytes(bytes([STDOUT]) + chunk)
            rate = self.ctx.faults.get("exec_bytes_per_second")
            if rate:
                await asyncio.sleep(len(chunk) / rate)

    async def log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        sim = self._sim(namespace, name)
        if sim.pull_failure:
            words = waiting_words(sim.pull_failure)
            raise ApiError(
                400, "BadRequest", f'container "{sim.container}" in pod "{sim.name}" is waiting to start: {words}'
            )
        # sinceTime (RFC 3339) keeps the lines not before it, timestamps=true puts each line's time first, tailLines
        # keeps the last N -- kubernetes pkg/kubelet/kuberuntime/logs/logs.go@04791b4906602ffda5ccf9bc4c84d3329f1d7080
        # (NewLogOptions, logWriter.write).
        entries = sim.log_entries()
        since = request.query.get("sinceTime")
        if since:
            entries = [(stamp, line) for stamp, line in entries if stamp[:19] >= since[:19]]
        tail = request.query.get("tailLines")
        if tail is not None:
            entries = entries[-int(tail) :] if int(tail) > 0 else []
        stamped = request.query.get("timestamps") == "true"
        text = "".join(f"{stamp} {line}" if stamped else line for stamp, line in entries)
        return web.Response(text=text, content_type="text/plain")


def waiting_words(reason: str) -> str:
    """How the kubelet says a container waits for its image (kubernetes
    pkg/kubelet/kubelet_pods.go@001a80e975bb880d0fe60b304d30950fe661f278, validateContainerLogStatus)."""
    return {"ErrImagePull": "image can't be pulled", "ImagePullBackOff": "trying and failing to pull image"}.get(
        reason, reason
    )


def exit_status(command, code: int) -> dict:
    """The Status the kubelet sends on channel 3 when the command ends."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command {json.dumps(command)}: "
        f"exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


async def serve_pod_files(ctx, pods: dict) -> str:
    """HTTPS downloads of files inside the pods, with the API server's TLS and tokens.

    Not a Kubernetes API: the baseline of the streaming benchmark (a plain GET of the bytes that exec
    streams, from the same process). ``GET /files/<namespace>/<pod>/<container path>``.
    """

    async def download(request: web.Request) -> web.StreamResponse:
        try:
            if ctx.auth.identify(request.headers.get("Authorization"), None) is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
        except ApiError as error:
            return web.json_response(error.status(), status=error.code)
        sim = pods.get((request.match_info["namespace"], request.match_info["pod"]))
        path = sim.shell.host_path("/" + request.match_info["path"]) if sim else ""
        if not os.path.isfile(path):
            return web.json_response({"message": "not found"}, status=404)
        return web.FileResponse(path, chunk_size=256 * 1024)

    app = web.Application()
    app.router.add_get("/files/{namespace}/{pod}/{path:.+}", download)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    directory = os.path.join(ctx.state_dir, "pki", "pod-files")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx.pki.server_ssl_context(directory))
    await site.start()
    ctx.on_shutdown.append(runner.cleanup)
    return f"https://127.0.0.1:{runner.addresses[0][1]}"
