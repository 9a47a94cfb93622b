"""``nodes-config.yaml`` as node-joiner loads and checks it.

- Loading (``AddNodesConfig``, before any report stage): YAML, at least one host, a valid ``sshKey`` (``lab.sshkey``:
  golang.org/x/crypto's ``ParseAuthorizedKey`` and its error texts) --
  openshift/installer pkg/asset/agent/joiner/addnodesconfig.go@d465fb6e27edadc0b118f98018ad1170666fddd4;
- every host (``AgentHosts``, create-manifest stage): hostname, role, interfaces and unique valid MACs, root
  device hints, a MAC for every ethernet interface of ``networkConfig`` --
  pkg/asset/agent/agentconfig/agenthosts.go@110b87b60aac7ca91fec8bec3a205faf373fe22a;
- ``cpuArchitecture`` is not checked there: an unknown value fails in the InfraEnv manifest
  (``Config.Spec.CpuArchitecture %s is not supported `` -- pkg/asset/agent/manifests/infraenv.go@
  c3e9b51178e9069018fd48d5c044bfbb6d50c2c8); Go (amd64) and RPM (x86_64) names are both accepted.
"""

import json
import re

import yaml

from . import sshkey
from .njerrors import NodeJoinerError

RPM_ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x")
ROOT_DEVICE_HINTS = ("deviceName", "hctl", "model", "vendor", "serialNumber", "minSizeGigabytes", "wwn", "rotational")
MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
HOSTNAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
HCTL_RE = re.compile(r"^\d+:\d+:\d+:\d+$")


def load(text, target, container_path):
    """Parse nodes-config.yaml and run the load-time checks; raise NodeJoinerError."""
    context = ("failed to fetch " + target, 'failed to load asset "AddNodes Config"')
    if text is None:
        raise NodeJoinerError(
            "open %s: no such file or directory" % container_path, *context, "failed to load nodes-config.yaml file"
        )
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise NodeJoinerError(
            "error converting YAML to JSON: %s" % str(exc).replace("\n", " "),
            *context,
            "failed to unmarshal nodes-config.yaml",
        )
    if not isinstance(config, dict):
        raise NodeJoinerError(
            "error unmarshaling JSON: cannot unmarshal %s into Go value of type joiner.Config" % type(config).__name__,
            *context,
            "failed to unmarshal nodes-config.yaml",
        )
    errors = []
    if not config.get("hosts"):
        errors.append(_required("hosts", "at least one host must be defined"))
    key = config.get("sshKey")
    problem = sshkey.authorized_key_error(key) if key else None
    if problem:
        errors.append(_invalid("sshKey", key, problem))
    if errors:
        raise NodeJoinerError(_aggregate(errors), *context)
    return config


def check_architecture(arch, target):
    """The InfraEnv's ``cpuArchitecture`` check (create-manifest); ``arch`` in RPM form."""
    if arch not in RPM_ARCHES:
        raise NodeJoinerError(
            "Config.Spec.CpuArchitecture %s is not supported " % arch,
            "failed to fetch " + target,
            'failed to generate asset "InfraEnv Config"',
        )


def _aggregate(errors):
    """k8s.io/apimachinery's aggregate error text."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def _required(path, detail):
    return "%s: Required value: %s" % (path, detail)


def _invalid(path, value, detail):
    return "%s: Invalid value: %s: %s" % (path, json.dumps(value), detail)


def _forbidden(path, detail):
    return "%s: Forbidden: %s" % (path, detail)


def validate_hosts(config, target):
    """The ``AgentHosts`` checks of every host (create-manifest stage); raise NodeJoinerError."""
    if not isinstance(config, dict):
        config = {}
    hosts = config.get("hosts") or []
    errors = []
    macs = set()
    for i, host in enumerate(hosts):
        errors.extend(_host_errors("Hosts[%d]" % i, host, macs))
    if errors:
        raise NodeJoinerError(
            _aggregate(errors),
            "failed to fetch " + target,
            'failed to generate asset "Agent Hosts"',
            "invalid Hosts configuration",
        )


def _host_errors(path, host, macs):
    errors = []
    if not isinstance(host, dict):
        return [_invalid(path, str(host), "a host must be a mapping")]
    hostname = host.get("hostname")
    if hostname is not None and (
        not isinstance(hostname, str) or not HOSTNAME_RE.match(hostname) or len(hostname) > 253
    ):
        errors.append(
            _invalid(
                path + ".Hostname",
                hostname,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
            )
        )
    role = host.get("role")
    if role and role not in ("master", "worker"):
        errors.append(
            _forbidden(path + ".Host", "host role has incorrect value. Role must either be 'master' or 'worker'")
        )
    elif role == "master":
        errors.append(_forbidden(path + ".Host", "only worker nodes can be added to an existing cluster"))

    interfaces = host.get("interfaces") or []
    if not interfaces:
        errors.append(_required(path + ".Interfaces", "at least one interface must be defined for each node"))
    names = set()
    for j, iface in enumerate(interfaces):
        mac_path = "%s.Interfaces[%d].macAddress" % (path, j)
        mac = (iface or {}).get("macAddress") or ""
        names.add((iface or {}).get("name"))
        if not mac:
            errors.append(_required(mac_path, "each interface must have a MAC address defined"))
            continue
        if not MAC_RE.match(str(mac)):
            errors.append(_invalid(mac_path, mac, "address %s: invalid MAC address" % mac))
        if str(mac).lower() in macs:
            errors.append(_invalid(mac_path, mac, "duplicate MAC address found"))
        macs.add(str(mac).lower())

    errors.extend(_root_device_hint_errors(path + ".rootDeviceHints", host.get("rootDeviceHints")))

    network = host.get("networkConfig") or {}
    for iface in network.get("interfaces") or [] if isinstance(network, dict) else []:
        if iface.get("type", "ethernet") == "ethernet" and iface.get("name") not in names:
            errors.append(
                _invalid(
                    path + ".networkConfig",
                    iface.get("name"),
                    "mac-interface mapping for interface %s is missing" % iface.get("name"),
                )
            )
    return errors


def _root_device_hint_errors(path, hints):
    if not hints:
        return []
    if not isinstance(hints, dict):
        return [_invalid(path, str(hints), "root device hints must be a mapping")]
    errors = []
    for key in sorted(hints):
        if key == "wwnWithExtension":
            errors.append(
                _forbidden(path + ".wwnWithExtension", "WWN extensions are not supported in root device hints")
            )
        elif key == "wwnVendorExtension":
            errors.append(
                _forbidden(path + ".wwnVendorExtension", "WWN vendor extensions are not supported in root device hints")
            )
        elif key not in ROOT_DEVICE_HINTS:
            errors.append(
                "%s: Unsupported value: %s: supported values: %s"
                % (path, json.dumps(key), ", ".join(json.dumps(h) for h in ROOT_DEVICE_HINTS))
            )
    device = hints.get("deviceName")
    if device is not None and not str(device).startswith("/dev/"):
        errors.append(
            _invalid(
                path + ".deviceName",
                device,
                "device name of root device hint must be path in /dev/ or /dev/disk/by-path/",
            )
        )
    hctl = hints.get("hctl")
    if hctl is not None and not HCTL_RE.match(str(hctl)):
        errors.append(_invalid(path + ".hctl", hctl, "the HCTL format must be Host:Channel:Target:Lun"))
    size = hints.get("minSizeGigabytes")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        errors.append(_invalid(path + ".minSizeGigabytes", size, "the minSizeGigabytes must be positive"))
    if "rotational" in hints and not isinstance(hints["rotational"], bool):
        errors.append(_invalid(path + ".rotational", hints["rotational"], "rotational must be true or false"))
    return errors
