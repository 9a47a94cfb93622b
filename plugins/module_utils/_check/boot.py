# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boot settings, checked before the ISO is built: the boot method, the ISO's URL and every host's BMC.

The boot step talks plain Redfish (virtual media) to each host's BMC. ``bmc_address`` takes the forms the
installer's install-config and metal3 take for a Redfish BMC: metal3 registers the BMC types ``redfish``,
``redfish-virtualmedia``, ``redfish-uefihttp``, ``idrac-redfish``, ``idrac-virtualmedia``, ``ilo5-redfish`` and
``ilo5-virtualmedia``, each also with ``+http`` or ``+https`` (without one, https) -- in
metal3-io/baremetal-operator pkg/hardwareutils/bmc/:
access.go@2a889ba1e937d200f7accbe79f695270c5cdc4d2 (RegisterFactory),
redfish.go@137d8726384c1cc6744bcbf293e394f453c2e19e (getRedfishAddress: after "+" the scheme, else https),
redfish_virtualmedia.go@47a68b9160969ea4c71264d88e267f8c5287fdf6,
idrac_virtualmedia.go@18fca47dbaad4398eaff8be051ae3eaae4893c6d,
redfish_https.go@38b24719e3aaf9c0c805f572778f9de81f1055a2.
A plain ``https://`` or ``http://`` URL of the BMC is taken too. metal3's other types (``ipmi``, ``idrac`` through
WS-Man, ``irmc``, ``ilo4``, ``ilo5``, ``ibmc``, ``libvirt``) and a bare host (which metal3 reads as IPMI) are
refused: the boot step cannot use them.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

BOOT_METHODS = ("manual", "redfish")
REDFISH_TYPES = (
    "redfish",
    "redfish-virtualmedia",
    "redfish-uefihttp",
    "idrac-redfish",
    "idrac-virtualmedia",
    "ilo5-redfish",
    "ilo5-virtualmedia",
)
TRANSPORTS = ("http", "https")
# metal3 BMC types the boot step cannot drive, and what to write instead.
OTHER_TYPES = {
    "ipmi": "an IPMI address",
    "libvirt": "a libvirt (IPMI) address",
    "idrac": "an iDRAC WS-Man address",
    "irmc": "a Fujitsu iRMC address",
    "ilo4": "an HPE iLO 4 address",
    "ilo5": "an HPE iLO 5 (not Redfish) address",
    "ibmc": "a Huawei iBMC address",
}
EXAMPLE_BMC = "redfish-virtualmedia+https://192.168.111.201/redfish/v1/Systems/1"
PLAY = "(play)"
_HOST_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_SYSTEM_PATH = re.compile(r"^/redfish/v1/Systems/[^/]+/?$")
_SERVICE_ROOTS = ("", "/", "/redfish/v1", "/redfish/v1/")


def accepted_schemes() -> list[str]:
    """Every bmc_address scheme the boot step takes."""
    schemes = list(TRANSPORTS)
    for kind in REDFISH_TYPES:
        schemes += [kind] + ["%s+%s" % (kind, transport) for transport in TRANSPORTS]
    return schemes


def _valid_host(host: str) -> bool:
    if parse_ip(host.strip("[]")) is not None:
        return True
    return bool(host) and all(_HOST_LABEL.match(label) for label in host.split("."))


def bmc_endpoint(address: str) -> tuple[str, str]:
    """(Redfish base URL, system path or "") of a bmc_address; raises ValueError(what, fix) when it cannot be one."""
    if "://" not in address:
        raise ValueError(
            "has no scheme (metal3 and the installer read a bare host as an IPMI address)",
            "write the BMC's Redfish address, e.g. %s" % EXAMPLE_BMC,
        )
    scheme = address.split("://", 1)[0].lower()
    kind, _plus, transport = scheme.partition("+")
    if kind in OTHER_TYPES and transport in ("", *TRANSPORTS):
        raise ValueError(
            "is %s, but the boot step boots through Redfish virtual media only" % OTHER_TYPES[kind],
            "give the BMC's Redfish address, e.g. %s (iDRAC: idrac-virtualmedia+https://<bmc>/redfish/v1/Systems/"
            "System.Embedded.1), or boot by hand (day2_boot_method=manual)" % EXAMPLE_BMC,
        )
    if scheme not in accepted_schemes():
        raise ValueError(
            'has the scheme "%s", which is not a Redfish BMC type' % scheme,
            "use one of: %s" % ", ".join(scheme + "://" for scheme in accepted_schemes()),
        )
    parts = urlsplit(
        "%s://%s" % (transport or ("https" if kind in REDFISH_TYPES else kind), address.split("://", 1)[1])
    )
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError:
        host, port = "", None
    if "@" in parts.netloc:
        raise ValueError(
            "has a user or password in it",
            "give them in bmc_username and bmc_password (in a vault), and the address without them",
        )
    if not _valid_host(host):
        raise ValueError(
            'has the host "%s", which is not a host name or IP address' % parts.netloc,
            "write the BMC's host name or IP address after the scheme, e.g. %s" % EXAMPLE_BMC,
        )
    if parts.path not in _SERVICE_ROOTS and not _SYSTEM_PATH.match(parts.path):
        raise ValueError(
            'has the path "%s", which is not a Redfish system' % parts.path,
            "end the address with the system's path /redfish/v1/Systems/<id>, or with the host alone when the BMC "
            "has one system",
        )
    if parts.scheme != "https":
        # community.general's redfish modules, which the boot step uses, build https:// URLs only.
        raise ValueError(
            "is a plain-HTTP Redfish address, but the boot step talks to BMCs over HTTPS only",
            "write redfish-virtualmedia+https://%s%s (set bmc_verify_certs: false for a self-signed BMC "
            "certificate), or boot by hand (day2_boot_method=manual)" % (parts.netloc, parts.path),
        )
    netloc = "[%s]" % host if ":" in host else host
    base = "%s://%s%s" % (parts.scheme, netloc, ":%d" % port if port else "")
    return base, parts.path.rstrip("/") if _SYSTEM_PATH.match(parts.path) else ""


def without_userinfo(address: str) -> str:
    """The address as a message may show it: a user and password inside it are replaced."""
    return re.sub(r"(://)[^/@]*@", r"\1(not shown)@", address)


def is_http_url(value: Any) -> bool:
    if not isinstance(value, str) or not re.match(r"^https?://", value, re.IGNORECASE):
        return False
    try:
        host = urlsplit(value).hostname or ""
    except ValueError:
        return False
    return _valid_host(host)


def check_boot_settings(boot_method: Any, iso_url: Any, problems: Problems, serve_iso: bool = False) -> bool:
    """The play's boot settings; return whether the hosts are booted through Redfish. ``serve_iso``: the boot step
    serves the ISO itself (day2_serve_iso), so no ISO URL is needed."""
    if boot_method not in BOOT_METHODS:
        problems.add(
            PLAY,
            "boot_method",
            boot_method,
            "is not a boot method",
            "set day2_boot_method (the boot role's boot_method) to one of: %s" % ", ".join(BOOT_METHODS),
        )
        return False
    if boot_method != "redfish":
        return False
    if not iso_url and serve_iso:
        return True
    if not iso_url:
        problems.add(
            PLAY,
            "iso_url",
            iso_url,
            "is not set and day2_serve_iso is false, but the BMCs must download the ISO from somewhere",
            "leave day2_serve_iso at its default (this run serves the ISO), or serve it yourself and set day2_iso_url "
            "(the boot role's boot_iso_url) to its URL",
        )
    elif not is_http_url(iso_url):
        problems.add(
            PLAY,
            "iso_url",
            iso_url,
            "is not an http:// or https:// URL, which is what a BMC downloads virtual media from",
            "set day2_iso_url to the ISO's URL, e.g. http://192.168.111.1:8080/node.x86_64.iso",
        )
    return True


def check_bmc(host: str, settings: dict[str, Any], problems: Problems) -> dict[str, str]:
    """One host's BMC settings for a Redfish boot; return its base URL and system path when they are usable."""
    fix_all = "set bmc_address, bmc_username and bmc_password in the host's variables (Redfish boot)"
    address = settings.get("bmc_address")
    endpoint: dict[str, str] = {}
    if not address:
        problems.add(host, "bmc_address", address, "is not set, but the host is booted through Redfish", fix_all)
    else:
        try:
            base, system_path = bmc_endpoint(address)
            endpoint = {"bmc_base_url": base, "bmc_system_path": system_path}
        except ValueError as error:
            what, fix = error.args
            problems.add(host, "bmc_address", without_userinfo(address), what, fix)
    if not settings.get("bmc_username"):
        problems.add(host, "bmc_username", settings.get("bmc_username"), "is not set (Redfish boot)", fix_all)
    if not settings.get("bmc_password"):
        problems.add(host, "bmc_password", None, "is not set (Redfish boot)", fix_all + " (in a vault)")
    return endpoint
