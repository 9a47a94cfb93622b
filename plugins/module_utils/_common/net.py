# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Addresses, networks and MACs, through one library (netaddr) for the whole collection."""

from __future__ import annotations

import contextlib
import re
import traceback
from typing import Any

try:
    import netaddr
except ImportError:
    netaddr = None
    NETADDR_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    NETADDR_IMPORT_ERROR = None

_MAC_PATTERN = re.compile(r"^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(?:\1[0-9a-fA-F]{2}){4}$")


def parse_ip(value: Any, version: int | None = None) -> Any:
    """A ``netaddr.IPAddress`` when ``value`` is a plain address (of ``version`` when given), else None.

    INET_PTON refuses the legacy short forms ("10.1") that would silently mean another address.
    """
    if not isinstance(value, str):
        return None
    for candidate in (version,) if version else (4, 6):
        with contextlib.suppress(netaddr.AddrFormatError, ValueError, TypeError):
            return netaddr.IPAddress(value.strip(), candidate, flags=netaddr.INET_PTON)
    return None


def parse_network(value: Any) -> Any:
    """A ``netaddr.IPNetwork`` for a CIDR text, or None."""
    if isinstance(value, str) and "/" in value:
        with contextlib.suppress(netaddr.AddrFormatError, ValueError, TypeError):
            return netaddr.IPNetwork(value.strip())  # netaddr 1.x refuses short forms ("10.1/8") itself
    return None


def normalize_mac(value: Any) -> str | None:
    """A MAC as lower-case colon-separated text, or None when it is not a 6-octet MAC."""
    if not isinstance(value, str) or not _MAC_PATTERN.match(value):
        return None
    return value.replace("-", ":").lower()
