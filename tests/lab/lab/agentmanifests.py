"""The per-host files and ZTP manifests node-joiner puts in an add-nodes Ignition (4.17-4.21, same layout).

Each function returns ``[(path, content, mode)]``; ``lab.ignition`` turns them into Ignition storage files.

- ``/etc/assisted/hostconfig/<hostname or host-<i>>/``: ``mac_addresses`` (every MAC lower-cased, each followed
  by a newline), ``role`` (only when set, no newline), ``root-device-hints.yaml`` (only when set) --
  openshift/installer pkg/asset/agent/agentconfig/agenthosts.go@110b87b60aac7ca91fec8bec3a205faf373fe22a
  (``HostConfigFiles``);
- ``/etc/assisted/hostnames/<first MAC, lower case>``: the hostname, no newline, 0600, for hosts with one --
  pkg/asset/agent/image/ignition.go@00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9 (``addMacAddressToHostnameMappings``);
- ``/etc/assisted/network/host<N>/``: for hosts with ``networkConfig`` only, numbered after sorting the hosts by
  their network YAML, ``<iface>.nmconnection`` and ``mac_interface.ini`` (``MAC=ifname`` lines sorted, joined by
  a newline, none at the end, the MAC as written) --
  pkg/asset/agent/manifests/staticnetworkconfig/generator.go@d70541cb937b733e75320fa6f8b4eb4062e036fe;
- ``/etc/assisted/manifests/``: ``infraenv.yaml``
  (pkg/asset/agent/manifests/infraenv.go@c3e9b51178e9069018fd48d5c044bfbb6d50c2c8), ``cluster-image-set.yaml``
  (clusterimageset.go@41ac01a1979cc999b02ef742ae8ead199d34c6f8), ``pull-secret.yaml``
  (manifests/common.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2), ``nmstateconfig.yaml`` only when a host has
  ``networkConfig`` (nmstateconfig.go@dbbe36d8ead71e361f44ced8f40b600fadf45034), and the empty
  ``cluster-deployment.yaml`` / ``agent-cluster-install.yaml`` ("keep config ISO loader happy",
  clusterdeployment.go@7b8529619140faf7592c82e0537663366c5e7dd3), each root 0600.
"""

import yaml

from .nmstate import nmstate_keyfiles

HOSTCONFIG_DIR = "/etc/assisted/hostconfig"
HOSTNAMES_DIR = "/etc/assisted/hostnames"
NETWORK_DIR = "/etc/assisted/network"
MANIFEST_DIR = "/etc/assisted/manifests"
NAMESPACE = "cluster0"
INFRAENV_LABEL = "infraenvs.agent-install.openshift.io"
AGENT_API = "agent-install.openshift.io/v1beta1"
GO_TO_RPM_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}


def rpm_arch(arch):
    """``arch.RpmArch``: amd64 -> x86_64, arm64 -> aarch64, anything else as is."""
    return GO_TO_RPM_ARCH.get(arch, arch)


def _yaml(obj):
    """sigs.k8s.io/yaml output: keys sorted, block style."""
    return yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)


def host_config_files(hosts):
    files = []
    for index, host in enumerate(hosts):
        name = host.get("hostname") or "host-%d" % index
        directory = "%s/%s" % (HOSTCONFIG_DIR, name)
        interfaces = host.get("interfaces") or []
        if interfaces:
            files.append(
                (directory + "/mac_addresses", "".join(str(i["macAddress"]).lower() + "\n" for i in interfaces), 0o644)
            )
        hints = host.get("rootDeviceHints") or {}
        if hints:
            files.append((directory + "/root-device-hints.yaml", _yaml(hints), 0o644))
        if host.get("role"):
            files.append((directory + "/role", host["role"], 0o644))
        if host.get("hostname") and interfaces:
            files.append(("%s/%s" % (HOSTNAMES_DIR, str(interfaces[0]["macAddress"]).lower()), host["hostname"], 0o600))
    return files


def network_files(hosts):
    """``host<N>`` directories, N counted after sorting the configs by their network YAML."""
    configs = []
    for host in hosts:
        if host.get("networkConfig"):
            mac_map = sorted((i["name"], str(i["macAddress"])) for i in host.get("interfaces") or [])
            configs.append((_yaml(host["networkConfig"]), mac_map, host["networkConfig"]))
    files = []
    for number, (_text, mac_map, network) in enumerate(sorted(configs, key=lambda c: c[0])):
        directory = "%s/host%d" % (NETWORK_DIR, number)
        for name, keyfile in nmstate_keyfiles(network).items():
            files.append(("%s/%s.nmconnection" % (directory, name), keyfile, 0o600))
        lines = sorted("%s=%s" % (mac, name) for name, mac in mac_map)
        files.append((directory + "/mac_interface.ini", "\n".join(lines), 0o600))
    return files


def pull_secret_name(info):
    return "%s-pull-secret" % info["name"]


def infraenv(info):
    spec = {
        "clusterRef": {"name": info["name"], "namespace": NAMESPACE},
        "cpuArchitecture": rpm_arch(info["architecture"]),
        "ipxeScriptType": "",
        "nmStateConfigLabelSelector": {"matchLabels": {INFRAENV_LABEL: info["name"]}},
        "pullSecretRef": {"name": pull_secret_name(info)},
        "sshAuthorizedKey": (info.get("ssh_key") or "").strip("|\n\t"),
        "proxy": {
            k: v
            for k, v in (
                ("httpProxy", (info.get("proxy") or {}).get("httpProxy")),
                ("httpsProxy", (info.get("proxy") or {}).get("httpsProxy")),
                ("noProxy", (info.get("proxy") or {}).get("noProxy")),
            )
            if v
        },
    }
    if info.get("user_ca_bundle"):
        spec["additionalTrustBundle"] = info["user_ca_bundle"]
    return {
        "apiVersion": AGENT_API,
        "kind": "InfraEnv",
        "metadata": {"creationTimestamp": None, "name": info["name"], "namespace": NAMESPACE},
        "spec": spec,
        "status": {
            "agentLabelSelector": {},
            "bootArtifacts": {"initrd": "", "ipxeScript": "", "kernel": "", "rootfs": ""},
            "debugInfo": {"eventsURL": ""},
        },
    }


def manifest_files(info, hosts):
    """``[(path, content, 0600)]`` of ``/etc/assisted/manifests``, sorted by name."""
    image_set = {
        "apiVersion": "hive.openshift.io/v1",
        "kind": "ClusterImageSet",
        "metadata": {"creationTimestamp": None, "name": "openshift-%s" % info["version"], "namespace": NAMESPACE},
        "spec": {"releaseImage": info["release_image"]},
        "status": {},
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"creationTimestamp": None, "name": pull_secret_name(info), "namespace": NAMESPACE},
        "stringData": {".dockerconfigjson": info["pull_secret_json"]},
    }
    manifests = {
        "agent-cluster-install.yaml": "",
        "cluster-deployment.yaml": "",
        "cluster-image-set.yaml": _yaml(image_set),
        "infraenv.yaml": _yaml(infraenv(info)),
        "pull-secret.yaml": _yaml(secret),
    }
    nmstate = []
    for index, host in enumerate(hosts):
        if host.get("networkConfig"):
            nmstate.append(
                _yaml(
                    {
                        "apiVersion": AGENT_API,
                        "kind": "NMStateConfig",
                        "metadata": {
                            "creationTimestamp": None,
                            "labels": {INFRAENV_LABEL: info["name"]},
                            "name": "%s-%d" % (info["name"], index),
                            "namespace": NAMESPACE,
                        },
                        "spec": {
                            "config": host["networkConfig"],
                            "interfaces": [
                                {"macAddress": str(i["macAddress"]), "name": i["name"]}
                                for i in host.get("interfaces") or []
                            ],
                        },
                    }
                )
                + "---\n"
            )
    if nmstate:
        manifests["nmstateconfig.yaml"] = "".join(nmstate)
    return [("%s/%s" % (MANIFEST_DIR, name), manifests[name], 0o600) for name in sorted(manifests)]
