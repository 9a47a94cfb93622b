"""Pods and their "containers": Python behaviours chosen by the container image.

Which behaviour a pod gets, from its first container's image:

* the node-joiner image -- the ``installer`` image of ConfigMap ``installer-images`` (namespace
  ``openshift-config``, then ``openshift``; the seeded one counts even after a test deleted the ConfigMap), the
  release payload's ``baremetal-installer`` image (``lab.payload``), or any image whose name contains
  ``baremetal-installer`` or ``node-joiner`` -- runs the pod command of ``oc adm node-image create``:
  ``cp /config/nodes-config.yaml /assets; HOME=/assets node-joiner add-nodes ... --dir=/assets; sleep``.
  The node-joiner command line is parsed as the binary of the cluster's release parses it (``lab.njcli``,
  profile ``lab.versions.for_cluster``): an unknown flag prints cobra's error and usage and nothing is
  written; otherwise ``lab.nodejoiner.NodeJoinerRun`` runs with the flags given.
  A temporary directory stands for the container filesystem (``/config`` is the pod's ConfigMap volume).
  The pod stays Running ("sleeping") after the command, so the artifacts can be copied out with exec.
* the release image (``ClusterVersion.status.desired.image``) prints ``/release-manifests/image-references``
  (an ImageStream JSON whose ``baremetal-installer`` tag is the node-joiner image) and turns Succeeded.
* any other image cannot be pulled: the pod stays Pending, its container waiting with ``ErrImagePull`` and
  then ``ImagePullBackOff``, with the kubelet's Events ``Pulling``, ``Failed`` ("Failed to pull image ...") and
  ``BackOff``; a name the reference grammar refuses waits with ``InvalidImageName`` and an ``InspectFailed`` Event.

How a node-joiner container dies (fault ``nodejoiner``), as the kubelet and CRI-O write it: ``oom`` -- the
container terminated with reason ``OOMKilled``, exit code 137, the pod ``Failed``; ``evicted`` and
``evicted_emptydir`` -- the pod ``Failed`` with reason ``Evicted``, the eviction message in ``status.message``, a
``DisruptionTarget`` condition and a Warning Event ``Evicted``. Each happens while node-joiner extracts the base
ISO (it hangs there until then), so its log stops mid-run and exec answers "cannot exec into a container in a
completed pod".

``exec`` and ``log`` are ``lab.podexec``'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
import time

from aiohttp import web

from . import clusterinfo, isobase, kinds, njcli, seeds, versions
from .faults import register_fault
from .njmonitor import MonitorRun
from .nodejoiner import NodeJoinerRun
from .payload import baremetal_installer_image, image_references, installer_image, release_image, seeded_installer_image
from .podexec import PodStreams, serve_pod_files
from .shell import Container
from .store import now_rfc3339

LOG = logging.getLogger(__name__)
NODE_JOINER_MARKERS = ("baremetal-installer", "node-joiner")
BACKOFF_AFTER = 1.0  # seconds of ErrImagePull before the kubelet reports ImagePullBackOff
CONFIGMAP, EVENT = kinds.by_kind("v1", "ConfigMap"), kinds.by_kind("v1", "Event")
NODE = "master-0"  # where the lab's pods run
DEATHS = ("oom", "evicted", "evicted_emptydir")  # the container dies while node-joiner extracts the base ISO
KILL_AFTER = 1.0  # seconds of node-joiner before it dies
# The eviction messages of the kubelet: nodeLowMessageFmt + thresholdMetMessageFmt + containerMessageFmt, and
# emptyDirMessageFmt (kubernetes pkg/kubelet/eviction/helpers.go@008b3652959ca58af8be3fb5b6ecfe9ae7638282), each in
# status.message with reason Evicted and in a Warning Event Evicted, with the DisruptionTarget condition (reason
# TerminationByKubelet) it sets (eviction_manager.go@0239cd73842a07dedf025bc1c93e1b62002cd0aa, evictPod).
EVICTIONS = {
    "evicted": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 62Mi. Container "
    "node-joiner was using 2874Mi, request is 0, has larger consumption of memory. ",
    "evicted_emptydir": 'Usage of EmptyDir volume "assets" exceeds the limit "4Gi". ',
}
# The reference grammar the kubelet parses an image name with before any pull (distribution/distribution
# reference/regexp.go@22b95c866eef7b0d07a093ff9220b3d51601afae, ReferenceRegexp); a name it refuses waits with
# reason InvalidImageName, its message and an InspectFailed Event "Failed to apply default image tag ..."
# (kubernetes pkg/kubelet/images/image_manager.go@cfce511e157eb37917f5ad1d86197e732f0a097f, EnsureImageExists).
_COMPONENT = r"[a-z0-9]+(?:[-]+[a-z0-9]+)*(?:(?:[._]|__)[a-z0-9]+(?:[-]+[a-z0-9]+)*)*"
_HOST = r"(?:(?:[a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])\.)*(?:[a-z0-9]|[a-z0-9][a-z0-9-]*[a-z0-9])(?::[0-9]+)?"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(rf"^(?:{_HOST}/)?(?:{_COMPONENT}/)*{_COMPONENT}(?::[\w][\w.+-]{{0,127}})?(?:@{_DIGEST})?$")
POD_HOST_IP = "127.0.111.10"  # the address of master-0, where every pod runs


def parse_nodejoiner_fault(value: str) -> str:
    if value not in ("bad_host_config", "download_failure", "timeout", *DEATHS):
        raise ValueError("nodejoiner is one of bad_host_config, download_failure, timeout, " + ", ".join(DEATHS))
    return value


register_fault(
    "nodejoiner",
    parse_nodejoiner_fault,
    "the next node-joiner runs fail: bad_host_config, download_failure, timeout (hangs), or the container dies: "
    "oom (OOMKilled), evicted (node low on memory), evicted_emptydir (/assets over its sizeLimit)",
)


# ----- one pod -------------------------------------------------------------------------------------
class SimulatedPod:
    """The container of one pod: its filesystem, its output and the task that plays its behaviour."""

    def __init__(self, pod: dict):
        self.namespace = pod["metadata"]["namespace"]
        self.name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]
        self.container = container.get("name", "")
        self.image = container.get("image", "")
        self.argv = list(container.get("command", []) + container.get("args", []))
        self.command = " ".join(self.argv)
        self.root = tempfile.mkdtemp(prefix=f"lab-pod-{self.namespace}-{self.name}-")
        self.shell = Container(self.root)
        self.output = ""  # what the container printed (the log) when it is not a node-joiner run
        self.run: NodeJoinerRun | MonitorRun | None = None
        self.task: asyncio.Task | None = None
        self.pull_failure = ""  # the waiting reason of an image that cannot be pulled
        self.stamps: list = []  # the times of the log's lines (log_entries)

    def log_text(self) -> str:
        return self.run.log_text() if self.run else self.output

    def log_entries(self) -> list:
        """``(time, line)`` of every line so far: the time the container runtime took it (here: when it was first
        read, which for a log read every round is close enough), with nine fraction digits always: the kubelet
        writes them as types.RFC3339NanoFixed -- kubernetes pkg/kubelet/kuberuntime/logs/
        logs.go@04791b4906602ffda5ccf9bc4c84d3329f1d7080 (timeFormatOut)."""
        lines = self.log_text().splitlines(keepends=True)
        while len(self.stamps) < len(lines):
            now = time.time()
            whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
            self.stamps.append(f"{whole}.{int((now % 1) * 1e9):09d}Z")
        return list(zip(self.stamps, lines))

    def remove(self) -> None:
        if self.task:
            self.task.cancel()
        shutil.rmtree(self.root, ignore_errors=True)


def _waiting_status(name, image, reason, message):
    return {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": {"reason": reason, "message": message}},
    }


def _conditions(ready: bool, now: str) -> list:
    state = "True" if ready else "False"
    return [
        {"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": now}
        for t, s in (
            ("PodReadyToStartContainers", "True"),
            ("Initialized", "True"),
            ("Ready", state),
            ("ContainersReady", state),
            ("PodScheduled", "True"),
        )
    ]


class PodBehaviours:
    """``ctx.pods``: the kubelet and container runtime of the lab."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.pods: dict = {}
        self.ip_counter = 10
        self.iso_size = getattr(ctx.options, "iso_size", 8 * 1024 * 1024)
        self.stage_delay = getattr(ctx.options, "nodejoiner_stage_delay", 0.0)
        self.installer = seeded_installer_image(ctx.variant)
        self.streams = PodStreams(ctx, self.pods)
        # What each node-joiner run was given: {namespace, pod, nodes_config (the text of /assets/nodes-config.yaml)}.
        self.received: list = []

    # --- status ---------------------------------------------------------------------------------------
    def _set_status(self, sim: SimulatedPod, phase: str, container_status: dict, ready: bool = False) -> None:
        pod = self.ctx.store.find(kinds.POD, sim.namespace, sim.name)
        if pod is None:
            return
        now = now_rfc3339()
        status = pod.get("status") or {}
        status.update(
            phase=phase,
            conditions=_conditions(ready, now),
            containerStatuses=[container_status],
            hostIP=POD_HOST_IP,
            hostIPs=[{"ip": POD_HOST_IP}],
        )
        status.setdefault("startTime", now)
        if phase != "Pending" and "podIP" not in status:
            self.ip_counter += 1
            status["podIP"] = f"10.128.2.{self.ip_counter % 250 + 2}"
            status["podIPs"] = [{"ip": status["podIP"]}]
        pod["status"] = status
        pod["spec"].setdefault("nodeName", "master-0")
        pod["metadata"].pop("resourceVersion", None)
        self.ctx.store.update(kinds.POD, pod)

    def _running(self, sim: SimulatedPod) -> None:
        self._set_status(
            sim,
            "Running",
            {
                "name": sim.container,
                "image": sim.image,
                "imageID": sim.image,
                "ready": True,
                "restartCount": 0,
                "started": True,
                "containerID": "cri-o://" + os.path.basename(sim.root).replace("lab-pod-", "")[:64],
                "state": {"running": {"startedAt": now_rfc3339()}},
            },
            ready=True,
        )

    def _terminated(self, sim: SimulatedPod, code: int, reason: str | None = None) -> None:
        self._set_status(
            sim,
            "Succeeded" if code == 0 else "Failed",
            {
                "name": sim.container,
                "image": sim.image,
                "imageID": sim.image,
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": reason or ("Completed" if code == 0 else "Error"),
                        "startedAt": now_rfc3339(),
                        "finishedAt": now_rfc3339(),
                    }
                },
            },
        )

    # --- hooks from the API server -------------------------------------------------------------------
    async def on_created(self, pod: dict) -> None:
        sim = SimulatedPod(pod)
        self.pods[(sim.namespace, sim.name)] = sim
        store = self.ctx.store
        if sim.image == release_image(store):
            behaviour = self._release
        elif sim.image in (
            installer_image(store),
            self.installer,
            baremetal_installer_image(store, self.installer),
        ) or any(m in sim.image for m in NODE_JOINER_MARKERS):
            behaviour = self._node_joiner
        else:
            behaviour = self._pull_failure
        sim.task = asyncio.get_running_loop().create_task(self._play(sim, behaviour, pod))

    async def _play(self, sim, behaviour, pod) -> None:
        try:
            await behaviour(sim, pod)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug in a behaviour must show in the lab log, not vanish with the task
            LOG.exception("pod %s/%s behaviour failed", sim.namespace, sim.name)

    async def on_deleted(self, pod: dict) -> None:
        sim = self.pods.pop((pod["metadata"]["namespace"], pod["metadata"]["name"]), None)
        if sim is not None:
            sim.remove()

    async def shutdown(self) -> None:
        for sim in list(self.pods.values()):
            sim.remove()
        self.pods.clear()

    # --- behaviours ----------------------------------------------------------------------------------
    def _event(self, sim: SimulatedPod, kind: str, reason: str, message: str) -> None:
        """An Event of the pod's kubelet, as client-go's recorder makes it (kubernetes/client-go
        tools/record/event.go@0d54cf50db85e5bbaebd865cd1a36a2a278f9b2f, makeEvent and generateEvent: named
        <pod>.<time in ns, hex>, count 1, source and reporting the kubelet)."""
        pod, now = self.ctx.store.find(kinds.POD, sim.namespace, sim.name), now_rfc3339()
        if pod is None:
            return
        field = f"spec.containers{{{sim.container}}}"
        ref = {"kind": "Pod", "namespace": sim.namespace, "name": sim.name, "uid": pod["metadata"]["uid"]}
        event = {
            "metadata": {"name": f"{sim.name}.{time.time_ns():x}", "namespace": sim.namespace},
            "involvedObject": dict(ref, apiVersion="v1", fieldPath=field),
            "reason": reason,
            "message": message,
            "type": kind,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": "kubelet", "host": NODE},
            "reportingComponent": "kubelet",
            "reportingInstance": NODE,
        }
        self.ctx.store.create(EVENT, event)

    async def _pull_failure(self, sim: SimulatedPod, _pod) -> None:
        """What the kubelet writes for an image it cannot pull (kubernetes
        pkg/kubelet/images/image_manager.go@cfce511e157eb37917f5ad1d86197e732f0a097f, EnsureImageExists; the
        event reasons: pkg/kubelet/events/event.go@00bdb3fade2ef1ada898bd8fae2c6a1958da3a5d)."""
        if not REFERENCE.match(sim.image):
            sim.pull_failure = "InvalidImageName"
            refused = f'Failed to apply default image tag "{sim.image}": couldn\'t parse image name "{sim.image}": '
            refused += "invalid reference format"
            self._event(sim, "Warning", "InspectFailed", refused)
            self._set_status(sim, "Pending", _waiting_status(sim.container, sim.image, sim.pull_failure, refused))
            return
        sim.pull_failure = "ErrImagePull"
        if "@" in sim.image:
            repository, reference = sim.image.split("@", 1)
        else:
            repository, reference = (
                sim.image.rsplit(":", 1) if ":" in sim.image.rsplit("/", 1)[-1] else (sim.image, "latest")
            )
        pull_error = (
            f"initializing source docker://{sim.image}: reading manifest {reference} in "
            f"{repository or sim.image}: manifest unknown"
        )
        self._event(sim, "Normal", "Pulling", f'Pulling image "{sim.image}"')
        self._event(sim, "Warning", "Failed", f'Failed to pull image "{sim.image}": {pull_error}')
        self._set_status(sim, "Pending", _waiting_status(sim.container, sim.image, "ErrImagePull", pull_error))
        await asyncio.sleep(BACKOFF_AFTER)
        sim.pull_failure = "ImagePullBackOff"
        backoff = f'Back-off pulling image "{sim.image}"'
        self._event(sim, "Normal", "BackOff", backoff)
        self._set_status(sim, "Pending", _waiting_status(sim.container, sim.image, sim.pull_failure, backoff))

    async def _die(self, sim: SimulatedPod, how: str) -> None:
        """Kill the node-joiner container as the OOM killer or the eviction manager does, mid-run."""
        await asyncio.sleep(KILL_AFTER)
        if sim.task:
            sim.task.cancel()  # the container's processes are gone: node-joiner's log stops where it was
        # OOMKilled: cri-o server/container_status.go@00fde62296f83c82f7e88a7a67a9e0c95d868ceb; a pod of
        # restartPolicy Never whose container failed is Failed: kubernetes
        # pkg/kubelet/kubelet_pods.go@001a80e975bb880d0fe60b304d30950fe661f278 (getPhase)
        if how == "oom":
            self._terminated(sim, 137, "OOMKilled")
            return
        message = EVICTIONS[how]
        self._event(sim, "Warning", "Evicted", message)
        self._terminated(sim, 137)  # killed at once: grace period 0 for a hard threshold or a local storage limit
        pod = self.ctx.store.find(kinds.POD, sim.namespace, sim.name)
        if pod is not None:
            condition = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
            condition.update(message=message, lastProbeTime=None, lastTransitionTime=now_rfc3339())
            pod["status"].update(reason="Evicted", message=message)
            pod["status"]["conditions"].append(condition)
            pod["metadata"].pop("resourceVersion", None)
            self.ctx.store.update(kinds.POD, pod)

    async def _release(self, sim: SimulatedPod, _pod) -> None:
        references = image_references(self.ctx.store, self.installer)
        path = sim.shell.host_path("/release-manifests/image-references")
        os.makedirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(references)
        self._running(sim)
        sim.output = references  # the pod command is `cat image-references`
        await asyncio.sleep(0.2)
        self._terminated(sim, 0)

    def _mount_config(self, sim: SimulatedPod, pod: dict) -> bool:
        """Write the pod's ConfigMap volume into /config; False if the ConfigMap is missing."""
        for volume in pod["spec"].get("volumes", []):
            if "configMap" not in volume:
                continue
            cm = self.ctx.store.find(CONFIGMAP, sim.namespace, volume["configMap"]["name"])
            if cm is None:
                return False
            mounts = pod["spec"]["containers"][0].get("volumeMounts", [])
            target = next((m["mountPath"] for m in mounts if m["name"] == volume["name"]), "/config")
            directory = sim.shell.host_path(target)
            os.makedirs(directory, exist_ok=True)
            for key, value in (cm.get("data") or {}).items():
                with open(os.path.join(directory, key), "w", encoding="utf-8") as handle:
                    handle.write(value)
        return True

    async def _node_joiner(self, sim: SimulatedPod, pod: dict) -> None:
        if not self._mount_config(sim, pod):
            self._set_status(sim, "Pending", _waiting_status(sim.container, sim.image, "ContainerCreating", ""))
            return
        store = self.ctx.store
        profile = versions.for_cluster(store)
        assets = sim.shell.host_path("/assets")
        os.makedirs(assets, exist_ok=True)
        source = sim.shell.host_path("/config/nodes-config.yaml")
        if os.path.exists(source):  # `cp` fails quietly in the real pod too, node-joiner then reports it
            shutil.copy(source, os.path.join(assets, "nodes-config.yaml"))
            with open(source, encoding="utf-8") as handle:
                self.received.append({"namespace": sim.namespace, "pod": sim.name, "nodes_config": handle.read()})
        self._running(sim)
        argv = njcli.node_joiner_argv(sim.argv)
        if argv is None:
            return  # no node-joiner in the command: the container just sleeps
        try:
            flags = njcli.parse_add_nodes(argv, profile, time.time())
        except njcli.UsageError as refused:
            sim.output = refused.stderr  # exit status 1 (0 for --help); the container goes on with `sleep`
            return
        if flags["command"] == njcli.MONITOR:  # oc adm node-image monitor's pod: no sleep, the process's exit ends it
            interval = getattr(self.ctx.options, "monitor_interval", 5.0)
            sim.run = MonitorRun(self.ctx, profile, flags["addresses"], POD_HOST_IP, interval)
            self._terminated(sim, await sim.run.run())
            return
        failure = self.ctx.faults.get("nodejoiner")
        if failure in DEATHS:
            asyncio.get_running_loop().create_task(self._die(sim, failure))
        options = {
            "profile": profile,
            "stage_delay": self.stage_delay,
            "bad_host_config": failure == "bad_host_config",
            "base_iso_download_failure": failure == "download_failure",
            "timeout": failure in ("timeout", *DEATHS),
            "log_level": flags["log_level"],
            "kubeconfig": flags["kubeconfig"],
            "container_assets_dir": flags["dir"],
            "work_dir": sim.shell.host_path("/tmp"),
        }

        def serves(kind):
            return seeds.serves(self.ctx.variant, kind)

        source = clusterinfo.StoreSource(store, serves)
        sim.run = NodeJoinerRun(
            sim.shell.host_path(flags["dir"]), source, source.get_secret, source.put_secret, self._base_iso, options
        )
        os.makedirs(sim.run.assets_dir, exist_ok=True)
        await sim.run.run(pxe=flags["pxe"], config_iso=flags["config_iso"])
        # The pod command ends in `sleep`: the container keeps running so the files can be copied out.

    def _base_iso(self, arch):
        return isobase.build_base_iso(isobase.LAB_CACHE, self.iso_size, arch)

    # --- exec and log (lab.podexec) ------------------------------------------------------------------
    async def exec_ws(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        return await self.streams.exec_ws(request, namespace, name)

    async def log(self, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
        return await self.streams.log(request, namespace, name)


async def setup(ctx) -> None:
    behaviours = PodBehaviours(ctx)
    ctx.pods = behaviours
    ctx.on_shutdown.append(behaviours.shutdown)
    ctx.dump_sections["node_joiner_inputs"] = lambda: list(behaviours.received)
    files_url = await serve_pod_files(ctx, behaviours.pods)

    async def pod_files(_request):
        return web.json_response({"url": files_url})

    ctx.control_routes.append(("GET", "/pod-files", pod_files))
