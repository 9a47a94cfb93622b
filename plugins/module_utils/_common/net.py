# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Addresses, networks and MACs, through one library (netaddr) for the whole collection; and the one proxy policy of
every connection the run makes."""

from __future__ import annotations

import contextlib
import os
import re
import traceback
from typing import Any
from urllib.parse import urlsplit

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


def proxy_for(url: str) -> str | None:
    """The proxy a connection to ``url`` goes through, or None: ``HTTPS_PROXY``/``HTTP_PROXY`` unless ``NO_PROXY``
    names its host, as curl and oc read them -- a host, a ``.domain`` or ``domain`` suffix, ``host:port``, ``*``, or a
    CIDR of the address's family (golang.org/x/net http/httpproxy/proxy.go@094d4385b4862d82e1922eed028a3b6bf83662d3,
    curl docs/libcurl/opts/CURLOPT_NOPROXY.md@0a142efeb3fb83a2a00ef4a1a682ac2074f361e7). requests' environment rules
    do this for names and IPv4 CIDRs; an IPv6 CIDR and an ``address:port`` are matched here. A ``.domain`` entry also
    matches the domain itself, as curl does (Go matches its subdomains only)."""
    import requests.utils  # the kubernetes client's own dependency

    parts = urlsplit(url)
    address = parse_ip(parts.hostname)
    entries = [e.strip() for e in (os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or "").split(",")]
    networks = [parse_network(entry) for entry in entries]
    if address is not None and any(n is not None and n.version == address.version and address in n for n in networks):
        return None
    if address is not None and parts.port and f"{parts.hostname}:{parts.port}" in entries:
        return None
    return requests.utils.select_proxy(url, requests.utils.get_environ_proxies(url))
