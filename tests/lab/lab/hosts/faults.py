"""What can go wrong with a simulated host: the validations it may fail and the host fault switches.

Faults (``labctl fault NAME=[HOST:]VALUE[,...]``, no HOST = every host) are read at the moment they matter.
"""

from __future__ import annotations

import time

from ..faults import register_fault
from ..versions import DAY2_WORKER_STAGES

# id -> (category, success message, failure message), as assisted-service words them.
VALIDATIONS = {
    "connected": ("network", "Host is connected", "Host is disconnected"),
    "ntp-synced": ("network", "Host NTP is synced", "Host couldn't synchronize with any NTP server"),
    "time-synced-between-host-and-service": (
        "network",
        "Host clock is synchronized with service",
        "Host clock is not synchronized, there is more than 4 minutes gap between clocks, "
        "please configure an NTP server via DHCP",
    ),
    "api-int-domain-name-resolved-correctly": (
        "network",
        "Domain name resolution for the api-int.{domain} domain was successful or not required",
        "Couldn't resolve domain name api-int.{domain} on the host. To continue installation, create the "
        "necessary DNS entries to resolve this domain name to the cluster's API IP address",
    ),
    "ignition-downloadable": (
        "network",
        "Ignition is downloadable",
        "Ignition is not downloadable. Please ensure host connectivity to the cluster's API",
    ),
    "container-images-available": (
        "network",
        "All required container images were either pulled successfully or no attempt was made to pull them",
        "Failed to fetch container images needed for installation",
    ),
    "has-min-cpu-cores": (
        "hardware",
        "Sufficient CPU cores",
        "The host is not eligible to participate in Openshift Cluster because the minimum "
        "required CPU cores for any role is 2, found only 1",
    ),
    "has-min-memory": (
        "hardware",
        "Sufficient minimum RAM",
        "The host is not eligible to participate in Openshift Cluster because the minimum "
        "required RAM for any role is 8.00 GiB, found only 4.00 GiB",
    ),
    "has-min-valid-disks": (
        "hardware",
        "Sufficient disk capacity",
        "No eligible disks were found, please check specific disks to see why they are not eligible",
    ),
    "hostname-unique": ("hardware", "Hostname {name} is unique in cluster", "Hostname {name} is not unique in cluster"),
    "hostname-valid": ("hardware", "Hostname {name} is allowed", "Hostname {name} is forbidden"),
}


def per_host(parse_value):
    """A fault parser for ``[HOST:]VALUE[,[HOST:]VALUE...]`` -> ((host or None, value), ...)."""

    def parse(text):
        entries = []
        for item in (part.strip() for part in str(text).split(",")):
            if not item:
                continue
            host, has_host, value = item.partition(":")
            if not has_host:
                host, value = None, item
            entries.append((host or None, parse_value(value.strip())))
        if not entries:
            raise ValueError("give [HOST:]VALUE")
        return tuple(entries)

    return parse


def _validation_id(value):
    if value not in VALIDATIONS:
        raise ValueError(f"unknown validation {value!r}; known: {', '.join(sorted(VALIDATIONS))}")
    return value


def _stage(value):
    if value not in DAY2_WORKER_STAGES:
        raise ValueError(f"unknown install stage {value!r}; one of: {', '.join(DAY2_WORKER_STAGES)}")
    return value


def _outage(value):
    """Seconds -> the monotonic time the outage ends (counted from when the fault is switched on)."""
    seconds = float(value)
    if seconds < 0:
        raise ValueError(f"seconds cannot be negative, got {value}")
    return time.monotonic() + seconds


def _flag(value):
    return value.lower() not in ("0", "false", "no", "off", "")


register_fault(
    "agent_unreachable", per_host(_outage), "[HOST:]SECONDS: the agent refuses connections for that long from now"
)
register_fault(
    "validation_failing",
    per_host(_validation_id),
    "[HOST:]VALIDATION_ID[,...]: that validation fails (host insufficient until cleared)",
)
register_fault(
    "install_error",
    per_host(_stage),
    "[HOST:]STAGE: the install fails at that day-2 stage (the agent reports Failed: status error)",
)
register_fault(
    "wrong_boot_order",
    per_host(_flag),
    "[HOST:]1: after writing the disk the host boots the ISO again (installing-pending-user-action)",
)
register_fault(
    "token_rejected",
    per_host(_flag),
    "[HOST:]1: the agent answers every request 401, as to a token signed by another key",
)


def fault_values(faults, name, host):
    """The values of fault ``name`` that apply to ``host`` (entries for it or for every host)."""
    return [value for target, value in faults.get(name, ()) if target in (None, host)]
