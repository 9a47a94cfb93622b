"""The Node a simulated kubelet registers and keeps up to date, as a real kubelet reports it (docs/lab-hosts.md).

A real kubelet creates its Node with the whole status, then patches ``nodes/status`` on every heartbeat with
every condition. The fields follow kubernetes/api core/v1/types.go@3fed8b5a8558cb508dd58c8cfb228d04cc9a52a5
(``NodeStatus``, ``NodeSystemInfo``: all ten strings are required in the OpenAPI schema, so typed clients such
as the Python ``kubernetes`` package refuse a Node without one; ``NodeDaemonEndpoints`` with the JSON key
``Port``) and the condition reasons and messages of the kubelet's status setters (kubernetes/kubernetes
pkg/kubelet/nodestatus/setters.go@8340f5a937ee0d2568a8db2c198899da75d5b8ae: ``MemoryPressure``, ``DiskPressure``,
``PIDPressure``, ``Ready``). ``kubeProxyVersion`` is empty: kubelets stopped filling the
deprecated field in 1.31 (KEP-4004), as the seeded control-plane Nodes show.

The addresses (``node_addresses``): the kubelet is started with ``--node-ip=${KUBELET_NODE_IPS}``, which
nodeip-configuration writes with, for each API VIP, the host's address on that VIP's subnet, so one address per
family on a dual-stack cluster (openshift/baremetal-runtimecfg cmd/runtimecfg/node-ip.go@
0270aa251b916ff38002195df5f4b89f0d511afa, ``set``); with two node IPs the kubelet reports two InternalIPs and its
Hostname (openshift/kubernetes pkg/kubelet/nodestatus/setters.go@1c80dc4830febbd94ec491a7acef041484dab02f,
``NodeAddress``). A host given only ``ip`` whose NIC autoconfigures IPv6 has an address from the router
advertisement of the IPv6 VIP's /64: the lab makes it from the MAC (modified EUI-64, RFC 4291 appendix A, nmstate's
default ``addr-gen-mode``).

Per host, what a machine keeps across reinstalls (``systemUUID``, from the firmware) and what a reinstall or a
reboot changes (``machineID``: a new install writes a new ``/etc/machine-id``; ``bootID``: every boot) are
kept apart, so a replaced worker comes back with the same ``systemUUID`` and a new ``machineID``.
"""

from __future__ import annotations

import ipaddress
import time
import uuid

from . import kinds

# RPM architecture (inventory cpu_architecture) -> Go architecture (nodeInfo.architecture, kubernetes.io/arch).
GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}
RPM_ARCH = {go: rpm for rpm, go in GO_ARCH.items()}
KUBELET_PORT = 10250
# A worker of the lab: 4 CPUs and 16 GiB like the agent's inventory; OpenShift reserves 500m CPU and 1 GiB of
# memory for the system (the MCO's kubelet systemReserved defaults) and the kubelet 100Mi of memory for eviction.
WORKER_CAPACITY = {
    "cpu": "4",
    "ephemeral-storage": "125293548Ki",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "16391652Ki",
    "pods": "250",
}
WORKER_ALLOCATABLE = dict(
    WORKER_CAPACITY, **{"cpu": "3500m", "ephemeral-storage": "114396791822", "memory": "15186404Ki"}
)
# (type, reason and message when healthy): the kubelet's setters.
PRESSURE_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
NOT_READY_MESSAGE = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin "
    "returns error: no CNI configuration file in /etc/kubernetes/cni/net.d/. Has your network provider started?"
)


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def go_architecture(value: str | None, default: str = "amd64") -> str:
    """``x86_64``/``amd64`` -> ``amd64`` and so on; None or empty -> ``default``."""
    if not value:
        return default
    return GO_ARCH.get(value, value)


def control_plane_node(store) -> dict:
    """The first master-labelled Node (the one node-joiner and ``oc`` read), else {}."""
    for node in store.list(kinds.NODE)[0]:
        if "node-role.kubernetes.io/master" in (node["metadata"].get("labels") or {}):
            return node
    return {}


def control_plane_architecture(store) -> str:
    return ((control_plane_node(store).get("status") or {}).get("nodeInfo") or {}).get("architecture") or "amd64"


def host_architecture(store, host: dict) -> str:
    """The Go architecture of a lab host's hardware: its inventory ``cpu_architecture`` (``labctl start
    --host-arch``), else the control plane's."""
    return go_architecture(host.get("cpu_architecture"), control_plane_architecture(store))


def api_vips(store) -> list:
    """The API VIPs of the lab's Infrastructure (``status.platformStatus.<platform>.apiServerInternalIPs``)."""
    infrastructure = store.find(kinds.by_kind("config.openshift.io/v1", "Infrastructure"), None, "cluster") or {}
    platform = (infrastructure.get("status") or {}).get("platformStatus") or {}
    found = [
        vip for value in platform.values() if isinstance(value, dict) for vip in value.get("apiServerInternalIPs") or []
    ]
    return [ipaddress.ip_address(vip) for vip in found]


def slaac_address(network, mac: str):
    """The address SLAAC makes in ``network`` (a /64) from ``mac``: the modified EUI-64 interface identifier."""
    octets = [int(part, 16) for part in mac.split(":")]
    octets[0] ^= 0x02
    return network.network_address + int.from_bytes(bytes([*octets[:3], 0xFF, 0xFE, *octets[3:]]), "big")


def node_ips(store, host: dict) -> list:
    """The node IPs of a host's kubelet: its inventory ``ip`` and ``ipv6``; on a dual-stack cluster (API VIPs of both
    families) a host without ``ipv6`` whose NIC autoconfigures IPv6 (``ipv6_autoconf``, read from its boot media) has
    its SLAAC address on the IPv6 VIP's /64 too."""
    ips = [address for address in (host.get("ip"), host.get("ipv6")) if address]
    vips = {vip.version: vip for vip in reversed(api_vips(store))}
    if set(vips) == {4, 6} and not host.get("ipv6") and host.get("ipv6_autoconf") and host.get("mac_address"):
        ips.append(str(slaac_address(ipaddress.ip_network(f"{vips[6]}/64", strict=False), host["mac_address"])))
    return ips


def node_addresses(store, host: dict, extra=()) -> list:
    """``status.addresses`` of a new worker's Node: an InternalIP per node IP (then ``extra``, the lab fault
    ``kubelet_extra_address``), then its Hostname."""
    ips = [*node_ips(store, host), *(address for address in extra if address not in node_ips(store, host))]
    return [{"type": "InternalIP", "address": ip} for ip in ips] + [
        {"type": "Hostname", "address": host["name"].lower()}
    ]


def system_uuid(host: dict) -> str:
    """The firmware's system UUID: fixed for the machine (its MAC), whatever is installed on it."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, "lab-system-" + str(host.get("mac_address", host["name"])).lower()))


class Identity:
    """What one installation of a host reports: machine-id (per install) and boot id (per boot)."""

    def __init__(self, host: dict):
        self.system_uuid = system_uuid(host)
        self.machine_id = uuid.uuid4().hex
        self.boot_id = str(uuid.uuid4())

    def rebooted(self) -> None:
        self.boot_id = str(uuid.uuid4())


def _kernel(control_plane_info: dict, rpm_arch: str) -> str:
    """The control plane's kernel release, built for ``rpm_arch`` (the same RHCOS for every architecture)."""
    kernel = control_plane_info.get("kernelVersion") or "5.14.0-570.85.1.el9_6.x86_64"
    base = kernel.rsplit(".", 1)[0] if kernel.rsplit(".", 1)[-1] in RPM_ARCH.values() else kernel
    return f"{base}.{rpm_arch}"


def conditions(ready: bool, since: str | None = None) -> list:
    """Every condition a kubelet posts; ``since`` is the Ready condition's last transition."""
    now = now_rfc3339()
    result = [
        {
            "type": kind,
            "status": "False",
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": since or now,
        }
        for kind, reason, message in PRESSURE_CONDITIONS
    ]
    result.append(
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else NOT_READY_MESSAGE,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    )
    return result


def kubelet_node(
    store, host: dict, architecture: str, identity: Identity, kubelet_port: int = KUBELET_PORT, addresses=None
) -> dict:
    """The Node a new worker's kubelet creates (NotReady until its serving certificate is issued); ``addresses``
    default to ``node_addresses``."""
    name = host["name"].lower()
    info = (control_plane_node(store).get("status") or {}).get("nodeInfo") or {}
    rpm_arch = RPM_ARCH.get(architecture, architecture)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": architecture,
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": architecture,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/worker": "",
                "node.openshift.io/os_id": "rhcos",
            },
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": {},
        "status": {
            "addresses": addresses if addresses is not None else node_addresses(store, host),
            "capacity": dict(WORKER_CAPACITY),
            "allocatable": dict(WORKER_ALLOCATABLE),
            "conditions": conditions(False),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "nodeInfo": {
                "architecture": architecture,
                "bootID": identity.boot_id,
                "containerRuntimeVersion": info.get("containerRuntimeVersion") or "cri-o://1.34.2",
                "kernelVersion": _kernel(info, rpm_arch),
                "kubeProxyVersion": "",
                "kubeletVersion": info.get("kubeletVersion") or "v1.34.2",
                "machineID": identity.machine_id,
                "operatingSystem": "linux",
                "osImage": info.get("osImage") or "Red Hat Enterprise Linux CoreOS",
                "systemUUID": identity.system_uuid,
            },
        },
    }


def ready_patch(store, name: str) -> dict:
    """The ``nodes/status`` merge patch of a kubelet whose node became Ready: every condition (a merge patch
    replaces the list), the pressure conditions' transition times kept."""
    node = store.find(kinds.NODE, None, name) or {}
    since = next((c.get("lastTransitionTime") for c in (node.get("status") or {}).get("conditions") or []), None)
    return {"status": {"conditions": conditions(True, since)}}
