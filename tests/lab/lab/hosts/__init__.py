"""Simulated new hosts: boot from an add-nodes ISO, run the agent (assisted-service subset), reboot.

One ``SimHost`` per inventory host, on the host's own 127.0.111.x address, for the release of the lab's
cluster (``lab.versions.for_cluster``, read at each boot):

- boot (``labctl boot --iso`` or ``--pxe`` = a person at the console, or ``lab.redfish`` when the BMC's virtual
  media and power say so) reads the Ignition of the ISO (or the PXE initrd) with the lab's own reader and
  refuses media that do not name the host's MAC or name another cluster: the host then sits at "wrong ISO"
  and its agent never answers;
- otherwise the agent (assisted-service of the live system) serves ``/api/assisted-install/v2`` on
  ``<ip>:<agent port>``, authenticating and authorizing every request as that release does, with the public
  key of the boot media; the host's own services call it with the media's tokens (expired: 401, nothing
  installs) and walk the day-2 install: discovering -> known -> installing -> installing-in-progress through
  Starting installation, Installing, Writing image to disk, Waiting for control plane, then Rebooting (stored
  as Done, status added-to-existing-cluster);
- then the agent goes away and the kubelet port aborts TLS handshakes (alert internal_error) until the node's
  serving certificate is issued, then serves it; ``ctx.host_rebooted(host)`` starts the kubelet.

Modules, by concern: ``faults`` (validations and host fault switches), ``boot`` (what the host reads from
its boot media), ``machine`` (the install state machine), ``agent`` (the agent's HTTP API),
``progress`` (status, stages and events as assisted-service records them), ``agent`` (the agent's HTTP API),
``auth`` (its authentication and authorization per release), ``kubelet_tls`` (the kubelet port after reboot),
``fleet`` (ports, control endpoints, setup).
"""

from .boot import GO_ARCH_TO_RPM, BootConfig, WrongIso, cluster_architecture, cluster_id_of, read_boot_config
from .faults import fault_values, per_host
from .fleet import Hosts, _json_body, free_port, setup
from .machine import WRITE_STEPS, SimHost

__all__ = [
    "GO_ARCH_TO_RPM",
    "WRITE_STEPS",
    "BootConfig",
    "Hosts",
    "SimHost",
    "WrongIso",
    "_json_body",
    "cluster_architecture",
    "cluster_id_of",
    "fault_values",
    "free_port",
    "per_host",
    "read_boot_config",
    "setup",
]
