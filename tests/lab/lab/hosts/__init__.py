"""Simulated new hosts: boot from an add-nodes ISO, run the agent (assisted-service subset), reboot.

One ``SimHost`` per inventory host, on the host's own 127.0.111.x address:

- boot (``labctl boot`` = a person at the console, or ``lab.redfish`` when the BMC's virtual media and power
  say so) reads the embedded Ignition with the lab's own ISO reader and refuses an ISO that does not name
  the host's MAC, names another cluster or carries an expired token: the host then sits at "wrong ISO"
  and its agent never answers;
- otherwise the agent serves ``/api/assisted-install/v2`` on ``<ip>:<agent port>``, checks
  ``Watcher-Authorization`` (ES256 signature against Secret openshift-config/agent-auth-token, ``exp``)
  and walks discovering -> known (insufficient while a validation fault is set) ->
  preparing-for-installation -> preparing-successful -> installing -> installing-in-progress with the
  stages Starting installation, Installing, Writing image to disk (percentages), Rebooting ->
  added-to-existing-cluster, with one event per change, in ``--install-seconds``;
- then the agent goes away, a TLS listener (a lab-CA certificate) answers on ``<ip>:<kubelet port>``,
  and ``ctx.host_rebooted(host)`` is awaited when another component provides it (kubelet CSRs).

Modules, by concern: ``faults`` (validations and host fault switches), ``boot`` (what the host reads from
its boot media), ``machine`` (the install state machine), ``agent`` (the agent's HTTP API),
``kubelet_tls`` (the kubelet port after reboot), ``fleet`` (ports, control endpoints, setup).
"""

from .boot import GO_ARCH_TO_RPM, WrongIso, agent_public_key, cluster_architecture, cluster_id_of, read_boot_config
from .faults import fault_values, per_host
from .fleet import Hosts, _json_body, free_port, setup
from .machine import WRITE_STEPS, SimHost

__all__ = ["GO_ARCH_TO_RPM", "Hosts", "SimHost", "WRITE_STEPS", "WrongIso", "_json_body", "agent_public_key",
           "cluster_architecture", "cluster_id_of", "fault_values", "free_port", "per_host", "read_boot_config",
           "setup"]
