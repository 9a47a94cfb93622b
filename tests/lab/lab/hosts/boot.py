"""What a host reads when it boots (the Ignition of its ISO or PXE initrd) and the facts of the lab's cluster.

The layout read is node-joiner's add-nodes Ignition (openshift/installer pkg/asset/agent/image/ignition.go at
3075c3231aef1a206c4ce065b74b61187ecf6229 for 4.17, 5e705f0f658f4030865683bee11bc0e45bf61cfb for 4.18,
00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9 newest):

- the host belongs to the ISO when its MAC is a line of some ``/etc/assisted/hostconfig/*/mac_addresses``,
  compared exactly with the lower-case form Go prints (openshift/assisted-service
  cmd/agentbasedinstaller/host_config.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd, ``currentHostHasMACAddress``;
  the same on release-4.21 3977af16577a830b9c9c8822fe8f2925b38eac9c); its hostname is the content of
  ``/etc/assisted/hostnames/<its MAC>`` (installer data/data/agent/files/usr/local/bin/set-hostname.sh@
  28fe68eef75b9366b94eaffeee89d149410b09bc);
- ``CLUSTER_ID`` and the token expiry (``AGENT_AUTH_TOKEN_EXPIRY`` on 4.17, installer PR #8802, not yet in the
  ignition.go@3075c32... above; ``AUTH_TOKEN_EXPIRY`` from 4.18, ignition.go@5e705f0...) are in
  ``/etc/assisted/add-nodes.env``; the agent itself judges a token by its ``exp`` claim only (``hosts.auth``), so
  a 4.17 ISO whose add-nodes.env overstates the expiry (``lab.authtoken``) is refused at the claim's time;
- assisted-service reads ``INFRA_ENV_ID`` and ``EC_PUBLIC_KEY_PEM`` (base64 of the PEM; empty: the service does
  not start) from ``/usr/local/share/assisted-service/assisted-service.env`` (installer
  data/data/agent/systemd/units/assisted-service.service.template@2e7e078d016b5b25f332ca05dab770b124d22367;
  openshift/assisted-service pkg/auth/agent_local_authenticator.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd);
- its network: the keyfiles of the ``/etc/assisted/network/host*`` directory whose ``mac_interface.ini`` names one of
  its MACs (compared in upper case) are copied for NetworkManager; with no such directory nothing is copied and
  NetworkManager asks DHCP (installer data/data/agent/files/usr/local/bin/pre-network-manager-config.sh@
  68a2973d6030b51cc29715581831f008bd0b1406, "None of host directories are a match for the current host");
  ``BootConfig.static_addresses`` are the ``method=manual`` addresses of those keyfiles (none: DHCP);
- the tokens the host's own services use: the import client reads ``AGENT_AUTH_TOKEN`` on 4.17 and
  ``USER_AUTH_TOKEN`` from 4.18 and sends it in ``Authorization`` (assisted-service
  cmd/agentbasedinstaller/client/main.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd and
  @73206081d00ddfc1a2d9b385b1560564642b79ee); the agent sends ``PULL_SECRET_TOKEN`` in ``X-Secret-Key``.
"""

from __future__ import annotations

import base64
import binascii
import configparser
import glob
import json
import os
import time
from dataclasses import dataclass, field

from .. import ignition as ignition_mod
from .. import iso as iso_mod
from .. import jwt, kinds

GO_ARCH_TO_RPM = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}
ADD_NODES_ENV = "/etc/assisted/add-nodes.env"
RENDEZVOUS_ENV = "/etc/assisted/rendezvous-host.env"
ASSISTED_SERVICE_ENV = "/usr/local/share/assisted-service/assisted-service.env"
HOSTCONFIG_DIR = "/etc/assisted/hostconfig"
HOSTNAMES_DIR = "/etc/assisted/hostnames"
NETWORK_DIR = "/etc/assisted/network"
EXPIRY_VARIABLES = ("AUTH_TOKEN_EXPIRY", "AGENT_AUTH_TOKEN_EXPIRY")
TOKEN_VARIABLES = ("AGENT_AUTH_TOKEN", "PULL_SECRET_TOKEN", "USER_AUTH_TOKEN", "WATCHER_AUTH_TOKEN")


class WrongIso(Exception):
    """The boot media cannot start an agent on this host (the reason is what a console would show)."""


@dataclass
class BootConfig:
    """What the host's live system found in its Ignition."""

    hostname: str | None
    cluster_id: str
    infra_env_id: str
    public_pem: str
    tokens: dict = field(default_factory=dict)  # variable -> JWT (the env files merged, rendezvous-host.env last)
    expiry: str | None = None  # the add-nodes.env value, else the earliest exp of the tokens (RFC 3339)
    expiry_variable: str | None = None
    ipv6_autoconf: bool = False  # its NIC takes an IPv6 address from router advertisements (ipv6_autoconf())
    static_addresses: list = field(default_factory=list)  # of its keyfiles (method=manual); none: it asks DHCP

    def client_token(self):
        """What the import client sends in ``Authorization`` (4.17 AGENT_AUTH_TOKEN, 4.18+ USER_AUTH_TOKEN)."""
        return self.tokens.get("USER_AUTH_TOKEN") or self.tokens.get("AGENT_AUTH_TOKEN") or ""

    def agent_token(self):
        return self.tokens.get("PULL_SECRET_TOKEN") or ""


def ignition_of_iso(iso_path):
    try:
        config = iso_mod.read_embedded_ignition(iso_path)
    except (OSError, ValueError, iso_mod.IsoFormatError) as exc:
        raise WrongIso(f"cannot read the ISO {iso_path}: {exc}") from None
    if config is None:
        raise WrongIso("the ISO holds no embedded Ignition config (not an add-nodes ISO)")
    return config


def initrd_of(path, rpm_arch):
    """The initrd a PXE boot loads: ``path`` itself, or ``node.<arch>-initrd.img`` in that directory (or in its
    ``boot-artifacts``); node-joiner's names (openshift/installer cmd/node-joiner/testdata/add-nodes-pxe.txt@
    be8603b19514d0b701a29c99b91c81d4810e8c40)."""
    if os.path.isfile(path):
        return path
    for directory in (path, os.path.join(path, "boot-artifacts")):
        wanted = os.path.join(directory, f"node.{rpm_arch}-initrd.img")
        if os.path.isfile(wanted):
            return wanted
        found = sorted(glob.glob(os.path.join(directory, "*-initrd.img")))
        if len(found) == 1:
            return found[0]
    raise WrongIso(f"no node.{rpm_arch}-initrd.img in {path} (give the boot-artifacts directory or the initrd)")


def ignition_of_initrd(initrd_path):
    """The Ignition appended to a PXE initrd (a compressed cpio holding ``config.ign``)."""
    try:
        with open(initrd_path, "rb") as handle:
            files = iso_mod.read_initrd_files(handle.read())
        config = json.loads(files["config.ign"]) if "config.ign" in files else None
    except (OSError, ValueError, iso_mod.IsoFormatError) as exc:
        raise WrongIso(f"cannot read the initrd {initrd_path}: {exc}") from None
    if config is None:
        raise WrongIso(f"the initrd {initrd_path} carries no Ignition config (not an add-nodes initrd)")
    return config


def read_boot_config(iso_path, host, cluster_id):
    """The BootConfig of an ISO for ``host``, or WrongIso."""
    return boot_config(ignition_of_iso(iso_path), host, cluster_id)


def boot_config(config, host, cluster_id):
    """The BootConfig of ``config`` for ``host`` (an inventory host), or WrongIso."""
    files = ignition_mod.files_by_path(config)
    mac = host["mac_address"].lower()
    macs_in_iso = []
    mine = False
    for path, content in sorted(files.items()):
        if path.startswith(HOSTCONFIG_DIR + "/") and path.endswith("/mac_addresses"):
            lines = [line.strip() for line in content.decode().split("\n") if line.strip()]
            macs_in_iso += lines
            mine = mine or mac in lines
    if not mine:
        raise WrongIso(
            f"MAC {mac} is not in the ISO (it names {', '.join(macs_in_iso) or 'no MAC'} in "
            f"{HOSTCONFIG_DIR}/*/mac_addresses): boot an ISO built with host {host['name']} in nodes-config"
        )
    add_nodes = ignition_mod.read_env_file(files.get(ADD_NODES_ENV, b""))
    if add_nodes.get("CLUSTER_ID") != cluster_id:
        raise WrongIso(
            f"the ISO is for cluster {add_nodes.get('CLUSTER_ID')}, this cluster is {cluster_id} "
            f"(CLUSTER_ID in {ADD_NODES_ENV}): boot an ISO built from this cluster"
        )
    service = ignition_mod.read_env_file(files.get(ASSISTED_SERVICE_ENV, b""))
    rendezvous = ignition_mod.read_env_file(files.get(RENDEZVOUS_ENV, b""))
    public_pem = service_public_key(service.get("EC_PUBLIC_KEY_PEM", ""))
    tokens = {
        name: value for env in (service, rendezvous) for name, value in env.items() if name in TOKEN_VARIABLES and value
    }
    expiry_variable = next((name for name in EXPIRY_VARIABLES if add_nodes.get(name)), None)
    hostname = files.get(f"{HOSTNAMES_DIR}/{mac}")
    return BootConfig(
        static_addresses=static_addresses(files, mac),
        hostname=hostname.decode() if hostname else None,
        cluster_id=add_nodes["CLUSTER_ID"],
        infra_env_id=service.get("INFRA_ENV_ID", ""),
        public_pem=public_pem,
        tokens=tokens,
        expiry=add_nodes[expiry_variable] if expiry_variable else earliest_exp(tokens.values()),
        expiry_variable=expiry_variable,
        ipv6_autoconf=ipv6_autoconf(files, mac),
    )


def ipv6_autoconf(files, mac):
    """Whether the host's NIC autoconfigures IPv6 (SLAAC) on the system installed from these media (the lab takes
    the media's network config as the installed system's).

    With keyfiles for the host (the ``network/host<N>`` directory whose ``mac_interface.ini`` names its MAC): when
    one has ``[ipv6] method=auto``, what nmstate writes for ipv6 enabled with dhcp and autoconf; an nmstate without
    an ipv6 section gives ``method=disabled`` (nmstate rust/src/lib/nm/settings/ip.rs@
    07013aa727ca177d76a0b085ba3413af36175d7f, ``gen_nm_ipv6_setting``). Without keyfiles for it, NetworkManager's
    default connection configures the NIC automatically, DHCP and SLAAC (NetworkManager.conf(5), ``no-auto-default``:
    https://networkmanager.dev/docs/api/latest/NetworkManager.conf.html)."""
    for path, content in sorted(files.items()):
        if not (path.startswith(NETWORK_DIR + "/") and path.endswith("/mac_interface.ini")):
            continue
        macs = [line.partition("=")[0].strip().lower() for line in content.decode(errors="replace").splitlines()]
        if mac not in macs:
            continue
        directory = path.rsplit("/", 1)[0] + "/"
        for keyfile in (
            text for name, text in files.items() if name.startswith(directory) and name.endswith(".nmconnection")
        ):
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read_string(keyfile.decode(errors="replace"))
            except configparser.Error:
                continue
            if parser.get("ipv6", "method", fallback="") == "auto":
                return True
        return False
    return True


def static_addresses(files, mac):
    """The static addresses the keyfiles of the ``host*`` directory naming ``mac`` give (pre-network-manager-config.sh
    takes the first directory, in ``ls`` order, whose mac_interface.ini names a MAC of the host)."""
    directories = sorted({path.rsplit("/", 1)[0] for path in files if path.startswith(NETWORK_DIR + "/host")})
    for directory in directories:
        mapping = files.get(directory + "/mac_interface.ini", b"").decode()
        if mac.upper() not in [line.split("=", 1)[0].strip().upper() for line in mapping.splitlines()]:
            continue
        addresses = []
        for path in sorted(p for p in files if p.startswith(directory + "/") and p.endswith(".nmconnection")):
            section = method = None
            for line in files[path].decode().splitlines():
                if line.startswith("["):
                    section, method = line.strip("[] "), None
                elif line.startswith("method="):
                    method = line.split("=", 1)[1].strip()
                elif section in ("ipv4", "ipv6") and method == "manual" and line.startswith("address"):
                    addresses.append(line.split("=", 1)[1].split(",")[0].split("/")[0].strip())
        return addresses
    return []


def service_public_key(value):
    """The PEM assisted-service verifies tokens with, or WrongIso naming why it cannot start."""
    if not value:
        raise WrongIso(
            "assisted-service does not start: agent installer local authentication requires an "
            "ecdsa Public Key (EC_PUBLIC_KEY_PEM is empty in assisted-service.env)"
        )
    try:
        pem = base64.b64decode(value, validate=True).decode()
        jwt.load_public_pem(pem)
    except (binascii.Error, UnicodeDecodeError, jwt.TokenError) as exc:
        raise WrongIso(
            f"assisted-service does not start: EC_PUBLIC_KEY_PEM in assisted-service.env is not "
            f"the base64 of an EC public key PEM ({exc})"
        ) from None
    return pem


def earliest_exp(tokens):
    exps = []
    for token in tokens:
        try:
            exp = jwt.unverified_claims(token).get("exp")
        except jwt.TokenError:
            continue
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            exps.append(exp)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(min(exps))) if exps else None


def cluster_id_of(store):
    version = store.find(kinds.by_kind("config.openshift.io/v1", "ClusterVersion"), None, "version") or {}
    return (version.get("spec") or {}).get("clusterID")


def cluster_architecture(store):
    """The Go architecture of the control plane (what a new worker of this lab runs)."""
    nodes, _rv = store.list(kinds.NODE)
    for node in nodes:
        if "node-role.kubernetes.io/master" in (node["metadata"].get("labels") or {}):
            return node["status"]["nodeInfo"]["architecture"]
    return "amd64"
