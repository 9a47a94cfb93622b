# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Booting a host through its BMC's Redfish virtual media, decided here and nowhere else.

``bmc_endpoint`` reads ``bmc_address`` in the forms the installer's install-config and metal3 take for a Redfish BMC:
the types ``redfish``, ``redfish-virtualmedia``, ``redfish-uefihttp``, ``idrac-redfish``, ``idrac-virtualmedia``,
``ilo5-redfish`` and ``ilo5-virtualmedia``, each also with ``+http`` or ``+https`` (without one, https) -- in
metal3-io/baremetal-operator pkg/hardwareutils/bmc/: access.go@2a889ba1e937d200f7accbe79f695270c5cdc4d2
(RegisterFactory), redfish.go@137d8726384c1cc6744bcbf293e394f453c2e19e (getRedfishAddress),
redfish_virtualmedia.go@47a68b9160969ea4c71264d88e267f8c5287fdf6,
idrac_virtualmedia.go@18fca47dbaad4398eaff8be051ae3eaae4893c6d,
redfish_https.go@38b24719e3aaf9c0c805f572778f9de81f1055a2
-- or a plain ``https://`` URL of the BMC. metal3's other types (ipmi, WS-Man idrac, irmc, ilo4, ilo5, ibmc,
libvirt) and a bare host (which metal3 reads as IPMI) are refused.

``Bmc`` talks to one BMC through community.general's redfish_info and redfish_command modules (they handle the
vendors' quirks: an InsertMedia without Inserted/WriteProtected, PATCH where there is no action, manager-level
media), run by the caller's ``run(module, arguments)``: it picks the system and its virtual CD (system-level media
where the system has them, else the manager's, as older BMCs keep them), boots the host from the ISO, and ejects the
CD once the disk is written, making sure the next boot is the disk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from typing import Any, Callable
from urllib.parse import urlsplit

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip, proxy_for
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
OTHER_TYPES = {
    "ipmi": "an IPMI address",
    "libvirt": "a libvirt (IPMI) address",
    "idrac": "an iDRAC WS-Man address",
    "irmc": "a Fujitsu iRMC address",
    "ilo4": "an HPE iLO 4 address",
    "ilo5": "an HPE iLO 5 (not Redfish) address",
    "ibmc": "a Huawei iBMC address",
}
SCHEMES = [*TRANSPORTS] + [kind + plus for kind in REDFISH_TYPES for plus in ("", "+http", "+https")]
EXAMPLE_BMC = "redfish-virtualmedia+https://192.168.111.201/redfish/v1/Systems/1"
_HOST_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_SYSTEM_PATH = re.compile(r"^/redfish/v1/Systems/[^/]+/?$")
PLAY = "(play)"
NO_CD = ("offers no CD/DVD virtual media", "boot the host by hand (day2_boot_method=manual)")
Json = dict[str, Any]
# Runs a community.general module with its arguments and more environment variables, returns its result.
Run = Callable[[str, Json, dict[str, str]], Json]
NOT_CD = ("None", "Hdd")  # boot override targets that do not start the installer again
SYSTEM_FACTS = ["GetSystemInventory", "GetVirtualMedia", "GetBootOverride"]


def _valid_host(host: str) -> bool:
    labels = bool(host) and all(_HOST_LABEL.match(label) for label in host.split("."))
    return parse_ip(host.strip("[]")) is not None or labels


def bmc_endpoint(address: str) -> tuple[str, str]:
    """(Redfish base URL, system path or "") of a bmc_address; ValueError(what, fix) when it cannot be one."""
    scheme, has_scheme, rest = address.partition("://")
    kind, _plus, transport = scheme.lower().partition("+")
    parts = urlsplit(f"{transport or ('https' if kind in REDFISH_TYPES else kind or 'none')}://{rest}")
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError:
        host, port = "", None
    by_hand, example = "or boot by hand (day2_boot_method=manual)", f"e.g. {EXAMPLE_BMC}"
    refusals = (
        (not has_scheme, "has no scheme (metal3 and the installer read a bare host as an IPMI address)",
         f"write the BMC's Redfish address, {example}"),
        (kind in OTHER_TYPES and transport in ("", *TRANSPORTS),
         f"is {OTHER_TYPES.get(kind)}, but the boot step boots through Redfish virtual media only",
         f"give the BMC's Redfish address, {example} (iDRAC: idrac-virtualmedia+https://<bmc>/redfish/v1/Systems/"
         f"System.Embedded.1), {by_hand}"),
        (scheme.lower() not in SCHEMES, f'has the scheme "{scheme.lower()}", which is not a Redfish BMC type',
         f"use one of: {', '.join(s + '://' for s in SCHEMES)}"),
        ("@" in parts.netloc, "has a user or password in it",
         "give them in bmc_username and bmc_password (in a vault), and the address alone"),
        (not _valid_host(host), f'has the host "{parts.netloc}", which is not a host name or IP address',
         f"write the BMC's host name or IP address after the scheme, {example}"),
        (parts.path not in ("", "/", "/redfish/v1", "/redfish/v1/") and not _SYSTEM_PATH.match(parts.path),
         f'has the path "{parts.path}", which is not a Redfish system',
         "end the address with the system's path /redfish/v1/Systems/<id>, or with the host alone when the BMC has "
         "one system"),
        (parts.scheme != "https",  # community.general's redfish modules build https:// URLs only
         "is a plain-HTTP Redfish address, but the boot step talks to BMCs over HTTPS only",
         f"write redfish-virtualmedia+https://{parts.netloc}{parts.path} (set bmc_verify_certs: false for a "
         f"self-signed BMC certificate), {by_hand}"),
    )  # fmt: skip
    for what, fix in (refusal[1:] for refusal in refusals if refusal[0]):
        raise ValueError(what, fix)
    base = f"https://{f'[{host}]' if ':' in host else host}{':%d' % port if port else ''}"
    return base, parts.path.rstrip("/") if _SYSTEM_PATH.match(parts.path) else ""


def is_http_url(value: Any) -> bool:
    if isinstance(value, str) and re.match(r"^https?://", value, re.IGNORECASE):
        with contextlib.suppress(ValueError):  # a port or IPv6 address that does not parse
            return _valid_host(urlsplit(value).hostname or "")
    return False


def check_boot_settings(boot_method: Any, iso_url: Any, problems: Problems, serve_iso: bool = False) -> bool:
    """The play's boot settings; whether the hosts are booted through Redfish. With ``serve_iso`` the run serves the
    ISO itself, so no ISO URL is needed."""
    if boot_method not in BOOT_METHODS:
        problems.add(PLAY, "day2_boot_method", boot_method, "is not a boot method", "set it to one of: manual, redfish")
        return False
    if boot_method == "redfish" and not iso_url and not serve_iso:
        what = "is not set and day2_serve_iso is false, but the BMCs must download the ISO from somewhere"
        fix = (
            "leave day2_serve_iso unset (this run serves the ISO), or serve it yourself and set day2_iso_url to its URL"
        )
        problems.add(PLAY, "day2_iso_url", iso_url, what, fix)
    elif boot_method == "redfish" and iso_url and not is_http_url(iso_url):
        what = "is not an http:// or https:// URL, which is what a BMC downloads virtual media from"
        fix = "set day2_iso_url to the ISO's URL, e.g. http://192.168.111.1:8080/node.x86_64.iso"
        problems.add(PLAY, "day2_iso_url", iso_url, what, fix)
    return boot_method == "redfish"


def check_bmc(host: str, settings: dict[str, Any], problems: Problems) -> dict[str, str]:
    """One host's BMC settings for a Redfish boot; its base URL and system path when they are usable."""
    fix = "set bmc_address, bmc_username and bmc_password in the host's variables (Redfish boot)"
    address, endpoint = str(settings.get("bmc_address") or ""), {}
    try:
        base, system_path = bmc_endpoint(address) if address else ("", "")
        endpoint = {"bmc_base_url": base, "bmc_system_path": system_path} if address else {}
    except ValueError as error:  # shown without a user and password it may hold
        problems.add(host, "bmc_address", re.sub(r"(://)[^/@]*@", r"\1(not shown)@", address), *error.args)
    if not address:
        what = "is not set, but the host is booted through Redfish"
        problems.add(host, "bmc_address", settings.get("bmc_address"), what, fix)
    if not settings.get("bmc_username"):
        problems.add(host, "bmc_username", settings.get("bmc_username"), "is not set (Redfish boot)", fix)
    if not settings.get("bmc_password"):
        problems.add(host, "bmc_password", None, "is not set (Redfish boot)", fix + " (in a vault)")
    return endpoint


@dataclasses.dataclass
class Media:
    """What the BMC says of the host: its system, power state, boot override and the virtual CD to use."""

    system_uri: str
    system_id: str
    power: str
    override: dict[str, Any]
    category: str  # Systems or Manager: where the virtual CD is
    media_id: str  # the system's or manager's id, for redfish_command's resource_id
    cd: dict[str, Any]

    @property
    def next_boot_is_cd(self) -> bool:
        target = self.override.get("BootSourceOverrideTarget") or "None"
        return (self.override.get("BootSourceOverrideEnabled") or "Disabled") != "Disabled" and target not in NOT_CD


def _entry(entries: Any, key: str, uri: str) -> Any:
    """The value of redfish_info's ``entries`` ([[{key: uri}, value], ...]) for ``uri``, None when absent."""
    return next((value for ident, value in entries or [] if (ident or {}).get(key) == uri), None)


def pick_media(system_path: str, systems: dict[str, Any], managers: dict[str, Any] | None) -> Media:
    """The system and virtual CD from redfish_info's facts of Systems (GetSystemInventory, GetVirtualMedia,
    GetBootOverride) and, where the system has no virtual media, of Manager (GetVirtualMedia)."""
    entries = (systems.get("system") or {}).get("entries") or []
    uri = system_path or (entries[0][0].get("system_uri") if entries else "")
    system = _entry(entries, "system_uri", uri) or {}
    media = _entry((systems.get("virtual_media") or {}).get("entries"), "resource_uri", uri) or []
    category, media_id = "Systems", uri.rsplit("/", 1)[-1]
    if not media:
        found = (managers or {}).get("virtual_media", {}).get("entries") or []
        # Several managers: the one named like the system; else the only (or first) one.
        same = [e for e in found if (e[0] or {}).get("resource_uri", "").endswith("/" + media_id)] * (len(found) > 1)
        ident, media = (same or found or [({}, [])])[0]
        category, media_id = "Manager", (ident or {}).get("resource_uri", "").rsplit("/", 1)[-1]
    typed = [m for m in media if isinstance(m, dict) and m.get("MediaTypes")]
    cd = next((m for kind in ("CD", "DVD") for m in typed if kind in m["MediaTypes"]), {})
    override = _entry((systems.get("boot_override") or {}).get("entries"), "system_uri", uri) or {}
    uri = uri if system else ""  # no such system: inspect() names it
    return Media(uri, uri.rsplit("/", 1)[-1], system.get("PowerState") or "unknown", override, category, media_id, cd)


def login(host: dict[str, Any], hostvars: Any, verify: bool, ca_path: str, timeout: int) -> dict[str, Any]:
    """redfish_info/redfish_command's login for ``host`` (a host record); its password from its variables (host or
    group), else from its agent-config.yaml (``bmc.password``), read at this moment and never passed around."""
    known = host["name"] in hostvars  # (a host of an agent-config file alone is not in the inventory)
    password = (hostvars[host["name"]].get("bmc_password") if known else "") or ""
    if not password and host.get("source") not in (None, "inventory"):  # an agent-config host: from its file
        # (imported here: _check imports this module for the BMC addresses)
        from ansible_collections.openshift_agent.day2.plugins.module_utils._check import agent_config

        password = agent_config.agent_config_password(str(host["source"]), str(host["name"]))
    verify = verify if host.get("bmc_verify_certs") is None else host["bmc_verify_certs"]
    found = {"username": host.get("bmc_username") or "", "password": password, "validate_certs": verify}
    return dict(found, timeout=timeout, **({"ca_path": ca_path} if ca_path else {}))


def module_environment(url: str) -> dict[str, str]:
    """The environment that makes a community.general Redfish module go where ``net.proxy_for`` says: its open_url
    reads HTTPS_PROXY and NO_PROXY through Python's urllib, which knows no CIDR
    (urllib.request.proxy_bypass_environment), so a BMC that NO_PROXY names by a CIDR or ``address:port`` is added to
    no_proxy literally."""
    if proxy_for(url) is not None or not (os.environ.get("https_proxy") or os.environ.get("HTTPS_PROXY")):
        return {}
    listed = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    value = ",".join(part for part in (listed, urlsplit(url).hostname) if part)
    return {"no_proxy": value, "NO_PROXY": value}


class Bmc:
    """One host's BMC. ``run(module, arguments)`` runs a community.general module and returns its result."""

    def __init__(self, host: str, endpoint: dict[str, str], login: Json, run: Run, source: str = "inventory") -> None:
        self.host, self.endpoint, self.login, self._run = host, endpoint, login, run
        self.file = "" if source == "inventory" else source  # an agent-config host: fields named as the file does
        self.baseuri = endpoint["bmc_base_url"].split("://", 1)[1]

    def refuse(self, field: str, what: str, fix: str) -> Day2Error:
        """The error of a BMC's answer, in the form of every input problem: host, field (an agent-config host's as its
        file names it, ``bmc.address``), what the BMC said and the fix."""
        if self.file:
            field, fix = field.replace("bmc_", "bmc."), fix.replace("bmc_", "bmc.") + f" in {self.file}"
        return Day2Error(f'host {self.host}: field "{field}": the BMC at {self.baseuri} {what}; {fix}')

    def _call(self, module: str, arguments: dict[str, Any]) -> dict[str, Any]:
        base = self.endpoint["bmc_base_url"]
        outcome = self._run(module, dict(self.login, baseuri=self.baseuri, **arguments), module_environment(base))
        if not outcome.get("failed"):
            return outcome
        message = str(outcome.get("msg") or "no message")
        what = f"refused {module.rsplit('.', 1)[-1]} {arguments.get('command')}: {message}"
        if "401" in message or "403" in message:
            raise self.refuse("bmc_password", what, "check bmc_username and bmc_password against the BMC's accounts")
        proxy = proxy_for(base)
        if proxy:
            what += f" (asked through the proxy {proxy} that HTTPS_PROXY names)"
            raise self.refuse("bmc_address", what, "add the BMC to NO_PROXY to reach it directly, or fix the proxy")
        raise self.refuse("bmc_address", what, "check that this controller reaches the BMC over HTTPS (and Redfish)")

    def inspect(self) -> Media:
        """Read the system, its virtual media and boot override (GET requests only)."""
        systems = self._call("community.general.redfish_info", {"category": "Systems", "command": SYSTEM_FACTS})
        systems, path = systems.get("redfish_facts") or {}, self.endpoint.get("bmc_system_path") or ""
        managers = None
        if not _entry((systems.get("virtual_media") or {}).get("entries"), "resource_uri", path):
            arguments = {"category": "Manager", "command": ["GetVirtualMedia"]}
            managers = self._call("community.general.redfish_info", arguments).get("redfish_facts")
        media = pick_media(path, systems, managers)
        refusal = (f"has no system {path or '(it lists none)'}", "end bmc_address with a system the BMC has")
        if not media.cd or not media.system_uri:
            raise self.refuse("bmc_address", *(refusal if not media.system_uri else NO_CD))
        return media

    def _command(self, media: Media, command: str, on_media: bool = False, **arguments: Any) -> None:
        category, ident = (media.category, media.media_id) if on_media else ("Systems", media.system_id)
        arguments.update(category=category, command=command, resource_id=ident)
        self._call("community.general.redfish_command", arguments)

    def plan(self, media: Media, image: str) -> str:
        """What a boot does, in words (check mode says it)."""
        ejected = " ejected first (it holds a medium)," if media.cd.get("Image") else ""
        return (
            f"through its BMC https://{self.baseuri}{media.system_uri} (power {media.power}): {media.category.lower()}"
            f"-level virtual CD {media.cd.get('Id') or ''}{ejected} given the ISO {image}, a one-time boot from CD "
            f"set, then {'ForceRestart' if media.power == 'On' else 'On'}."
        )

    def boot(self, image_url: str) -> dict[str, Any]:
        """Insert the ISO, set a one-time boot from CD and power on (or restart); what an eject needs later."""
        media = self.inspect()
        if media.cd.get("Image"):
            self._command(media, "VirtualMediaEject", True, virtual_media={"image_url": media.cd["Image"]})
        inserted = {"image_url": image_url, "media_types": ["CD", "DVD"], "inserted": True, "write_protected": True}
        self._command(media, "VirtualMediaInsert", True, virtual_media=inserted)
        self._command(media, "SetOneTimeBoot", bootdevice="Cd")
        self._command(media, "PowerForceRestart" if media.power == "On" else "PowerOn")
        return {"name": self.host, "category": media.category, "resource_id": media.media_id}

    def eject(self) -> str:
        """Once the disk is written: eject the virtual CD and make sure the next boot is the disk."""
        media = self.inspect()
        if media.cd.get("Image"):
            self._command(media, "VirtualMediaEject", True, virtual_media={"image_url": media.cd["Image"]})
        if media.next_boot_is_cd:  # a pending override to the CD (or the network) would start the installer again
            self._command(media, "SetOneTimeBoot", bootdevice="Hdd")
        after = self.inspect()
        if after.cd.get("Image") or after.next_boot_is_cd:
            target = after.override.get("BootSourceOverrideTarget")
            shows = "a medium in the virtual CD" if after.cd.get("Image") else f"a boot override to {target}"
            raise Day2Error(
                f"host {self.host}: after the eject its BMC at {self.baseuri} still shows {shows}: its next boot "
                "would start the installer again. Eject the virtual media and set the disk first in the boot order in "
                "the BMC, then reboot the host"
            )
        return f"virtual CD ejected through its BMC {self.baseuri}; the next boot is the disk"
