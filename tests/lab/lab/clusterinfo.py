"""What node-joiner reads from the cluster (its ``ClusterInfo`` asset), and how it fails.

Follows the newest node-joiner, openshift/installer pkg/asset/agent/joiner/clusterinfo.go@
ead4c47ae829a90629f8c39693ed0bf61e24412f, in its order; the first error ends the inspection:

1. ClusterVersion ``version`` (required): ``spec.clusterID``, ``status.history[0]`` image and version (an empty
   history is an index-out-of-range panic in Go);
2. Proxy ``cluster`` (required): spec; 3. Secret ``openshift-config/pull-secret`` (required);
4. ConfigMap ``openshift-config/user-ca-bundle`` (optional);
5. Nodes: nodes-config ``cpuArchitecture``, else the first node labelled ``node-role.kubernetes.io/master``,
   else ``unable to determine target cluster architecture``;
6./7. ImageDigestMirrorSets and operator.openshift.io ImageContentSourcePolicies (404 tolerated);
8. Secret ``openshift-machine-api/worker-user-data-managed`` (optional): the worker Ignition endpoint and CA;
9.-11. Infrastructure ``cluster`` (required): ``spec.platformSpec.type``, ``status.apiServerURL`` host, the
   cluster name from ``^api\\.([^.]+)\\.``;
12.-14. MachineConfigs ``99-worker-ssh`` (nodes-config ``sshKey`` wins), ``99-worker-fips``,
   ``50-workers-chrony-configuration`` (all optional);
Not step 17, the Ingress ``cluster`` read of that file: it came with installer PR #10719 (OCPBUGS-88511, July
2026), after 4.21 branched, so no release the lab models reads Ingress.
Then the platform rules (``agent.ValidateSupportedPlatforms``, pkg/asset/agent/installconfig.go@
006d45739349721f1371d3013792d9b8407e9842): ppc64le and s390x only with platform none; the platform one of
baremetal, vsphere, none, external (pkg/asset/agent/common.go@2596730513b90f0f1264fae8ef73729780cc99dc).

``coreos-bootimages`` is read leniently for the OS image URL of ``images.env`` (intermediate clusterinfo.go@
c143649564e2b4c776faf2f7a3cc14f77cab7c6c). A source is anything with ``get(api_version, kind, name, namespace)``
and ``list(api_version, kind)`` raising ``NotFound``: ``StoreSource`` (the lab's store, which also reads and writes
the agent-auth-token Secret for node-joiner) or ``ObjectsSource`` (a list of objects, for tests).
"""

import base64
import json
import re
from urllib.parse import urlparse

from . import kinds

# configv1.PlatformType -> installer platform name (toTypesPlatform); anything else cannot be converted.
PLATFORMS = {
    "AWS": "aws",
    "Azure": "azure",
    "BareMetal": "baremetal",
    "GCP": "gcp",
    "OpenStack": "openstack",
    "None": "none",
    "VSphere": "vsphere",
    "oVirt": "ovirt",
    "IBMCloud": "ibmcloud",
    "PowerVS": "powervs",
    "Nutanix": "nutanix",
    "External": "external",
}
SUPPORTED_PLATFORMS = ("baremetal", "vsphere", "none", "external")
NONE_ONLY_ARCHES = ("ppc64le", "s390x")
CLUSTER_NAME_RE = re.compile(r"^api\.([^.]+)\..*")


class NotFound(Exception):
    """The object (or its kind) does not exist; the text is client-go's."""


class InspectionError(Exception):
    """The cluster inspection failed; the text is node-joiner's."""


class Panic(Exception):
    """node-joiner would panic (a Go runtime error): no exit_code, exit status 2."""


def not_found_text(kind, name):
    return '%s "%s" not found' % (kind.group_resource, name)


class StoreSource:
    """The lab's store, as node-joiner's clients see it (``serves``: does the API server know the kind)."""

    def __init__(self, store, serves=None):
        self.store = store
        self.serves = serves or (lambda kind: True)

    def _kind(self, api_version, kind_name, what):
        kind = kinds.by_kind(api_version, kind_name)
        if kind is None or not self.serves(kind):
            plural = kind.group_resource if kind else kind_name.lower() + "s"
            raise NotFound("the server could not find the requested resource (%s %s)" % (what, plural))
        return kind

    def get(self, api_version, kind_name, name, namespace=None):
        kind = self._kind(api_version, kind_name, "get")
        obj = self.store.find(kind, namespace, name)
        if obj is None:
            raise NotFound(not_found_text(kind, name))
        return obj

    def list(self, api_version, kind_name):
        return self.store.list(self._kind(api_version, kind_name, "get"))[0]

    def get_secret(self, namespace, name):
        """The Secret node-joiner reads for its auth tokens, or None."""
        return self.store.find(kinds.SECRET, namespace, name)

    def put_secret(self, secret):
        """node-joiner's write of that Secret: an update of the one it read (it carries its resourceVersion),
        else a create."""
        if (secret.get("metadata") or {}).get("resourceVersion"):
            return self.store.update(kinds.SECRET, secret)
        return self.store.create(kinds.SECRET, secret)


class ObjectsSource:
    """A fixed list of objects (seed objects; a Secret's ``stringData`` counts as its data)."""

    def __init__(self, objects, served=None):
        self.objects = [self._normal(obj) for obj in objects]
        self.served = served

    @staticmethod
    def _normal(obj):
        if obj.get("kind") == "Secret" and obj.get("stringData"):
            obj = dict(
                obj,
                data=dict(
                    obj.get("data") or {},
                    **{k: base64.b64encode(v.encode()).decode() for k, v in obj["stringData"].items()},
                ),
            )
        return obj

    def _check(self, api_version, kind_name):
        kind = kinds.by_kind(api_version, kind_name)
        if self.served is not None and not kind.builtin and (kind.group, kind.plural) not in self.served:
            raise NotFound("the server could not find the requested resource (get %s)" % kind.group_resource)
        return kind

    def get(self, api_version, kind_name, name, namespace=None):
        kind = self._check(api_version, kind_name)
        for obj in self.objects:
            meta = obj.get("metadata") or {}
            if (obj.get("apiVersion"), obj.get("kind"), meta.get("name"), meta.get("namespace")) == (
                api_version,
                kind_name,
                name,
                namespace,
            ):
                return obj
        raise NotFound(not_found_text(kind, name))

    def list(self, api_version, kind_name):
        self._check(api_version, kind_name)
        return [o for o in self.objects if (o.get("apiVersion"), o.get("kind")) == (api_version, kind_name)]


def _optional(source, *args):
    try:
        return source.get(*args)
    except NotFound:
        return None


def _optional_list(source, *args):
    try:
        return source.list(*args)
    except NotFound:
        return []


def _ignition_of(machine_config):
    return (machine_config.get("spec") or {}).get("config") or {}


def _ssh_key(source, nodes_config):
    if nodes_config.get("sshKey"):
        return nodes_config["sshKey"]
    mc = _optional(source, "machineconfiguration.openshift.io/v1", "MachineConfig", "99-worker-ssh")
    if mc is None:
        return ""
    users = (_ignition_of(mc).get("passwd") or {}).get("users") or []
    if not users:
        raise InspectionError("cannot retrieve SSH key from machineconfig/99-worker-ssh: no user found")
    if not users[0].get("sshAuthorizedKeys"):
        raise InspectionError(
            "cannot retrieve SSH key from machineconfig/99-worker-ssh: no SSH key found for "
            "user %s" % users[0].get("name")
        )
    return users[0]["sshAuthorizedKeys"][0]


def _chrony(source):
    mc = _optional(source, "machineconfiguration.openshift.io/v1", "MachineConfig", "50-workers-chrony-configuration")
    for entry in (_ignition_of(mc or {}).get("storage") or {}).get("files") or []:
        if entry.get("path") == "/etc/chrony.conf":
            from .ignition import decode_data_url  # late: ignition does not import this module

            return decode_data_url((entry.get("contents") or {}).get("source") or "data:,").decode()
    return None


def _ignition_endpoint(source):
    secret = _optional(source, "v1", "Secret", "worker-user-data-managed", "openshift-machine-api")
    raw = ((secret or {}).get("data") or {}).get("userData")
    if not raw:
        return None
    config = json.loads(base64.b64decode(raw))
    cas = (((config.get("ignition") or {}).get("security") or {}).get("tls") or {}).get("certificateAuthorities")
    if not cas:
        return None
    source_url = cas[0].get("source") or ""
    if "," not in source_url:
        raise InspectionError("error while parsing ignition endpoints ca certificate, invalid data url format")
    return {"url": config["ignition"]["config"]["merge"][0]["source"], "ca_certificate": source_url.split(",", 1)[1]}


def _os_image(source, arch):
    """(ISO location, release, PXE rootfs location) of the stream's metal artifact for ``arch``; the rootfs is the
    minimal ISO's default ``coreos.live.rootfs_url`` (``BaseIso.getRootFSURL``, openshift/installer
    pkg/asset/agent/image/baseiso.go@41ac01a1979cc999b02ef742ae8ead199d34c6f8)."""
    cm = _optional(source, "v1", "ConfigMap", "coreos-bootimages", "openshift-machine-config-operator")
    try:
        stream = json.loads(((cm or {}).get("data") or {}).get("stream") or "{}")
        metal = stream["architectures"][arch]["artifacts"]["metal"]
        rootfs = ((metal["formats"].get("pxe") or {}).get("rootfs") or {}).get("location", "")
        return metal["formats"]["iso"]["disk"]["location"], metal.get("release", ""), rootfs
    except (KeyError, TypeError, ValueError, AttributeError):
        return "", "", ""


def _no_proxy(value):
    seen = []
    for entry in (value or "").strip().split(","):
        if entry.strip() and entry.strip() not in seen:
            seen.append(entry.strip())
    return ",".join(seen)


def validate_platform(platform, arch):
    """``agent.ValidateSupportedPlatforms``: the field errors (empty when the pair is supported)."""
    errors = []
    if platform != "none" and arch in NONE_ONLY_ARCHES:
        errors.append(
            'platform: Invalid value: "%s": CPU architecture "%s" only supports platform "none".' % (platform, arch)
        )
    if platform not in SUPPORTED_PLATFORMS:
        errors.append(
            'platform: Unsupported value: "%s": supported values: %s'
            % (platform, ", ".join('"%s"' % p for p in SUPPORTED_PLATFORMS))
        )
    return errors


def inspect(source, nodes_config):
    """The cluster as node-joiner sees it, a dict; raises NotFound, InspectionError or Panic."""
    from .agentmanifests import rpm_arch

    cv = source.get("config.openshift.io/v1", "ClusterVersion", "version")
    history = (cv.get("status") or {}).get("history") or []
    if not history:
        raise Panic("runtime error: index out of range [0] with length 0")
    proxy_spec = source.get("config.openshift.io/v1", "Proxy", "cluster").get("spec") or {}
    pull = source.get("v1", "Secret", "pull-secret", "openshift-config")
    ca_bundle = (
        (_optional(source, "v1", "ConfigMap", "user-ca-bundle", "openshift-config") or {}).get("data") or {}
    ).get("ca-bundle.crt")
    nodes = source.list("v1", "Node")
    architecture = nodes_config.get("cpuArchitecture")
    if not architecture:
        masters = [
            n for n in nodes if "node-role.kubernetes.io/master" in ((n.get("metadata") or {}).get("labels") or {})
        ]
        if not masters:
            raise InspectionError("unable to determine target cluster architecture")
        architecture = ((masters[0].get("status") or {}).get("nodeInfo") or {}).get("architecture", "")
    mirrors = [
        {"source": m["source"], "mirrors": list(m.get("mirrors") or [])}
        for idms in _optional_list(source, "config.openshift.io/v1", "ImageDigestMirrorSet")
        for m in (idms.get("spec") or {}).get("imageDigestMirrors") or []
    ]
    icsp = [
        {"source": m["source"], "mirrors": list(m.get("mirrors") or [])}
        for obj in _optional_list(source, "operator.openshift.io/v1alpha1", "ImageContentSourcePolicy")
        for m in (obj.get("spec") or {}).get("repositoryDigestMirrors") or []
    ]
    endpoint = _ignition_endpoint(source)
    infra = source.get("config.openshift.io/v1", "Infrastructure", "cluster")
    platform_type = ((infra.get("spec") or {}).get("platformSpec") or {}).get("type", "")
    if platform_type not in PLATFORMS:
        raise InspectionError("unable to convert platform type %s" % platform_type)
    api_dns_name = urlparse((infra.get("status") or {}).get("apiServerURL") or "").hostname or ""
    if not api_dns_name:
        raise InspectionError("cannot get cluster name: API DNS name is empty")
    match = CLUSTER_NAME_RE.match(api_dns_name)
    if not match:
        raise InspectionError("cannot get cluster name from API DNS name: %s" % api_dns_name)
    ssh_key = _ssh_key(source, nodes_config)
    fips_mc = _optional(source, "machineconfiguration.openshift.io/v1", "MachineConfig", "99-worker-fips")
    chrony = _chrony(source)
    platform = PLATFORMS[platform_type]
    errors = validate_platform(platform, rpm_arch(architecture))
    if errors:
        raise InspectionError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    desired = (cv.get("status") or {}).get("desired") or {}
    os_url, os_release, rootfs_url = _os_image(source, rpm_arch(architecture))
    return {
        "cluster_id": (cv.get("spec") or {}).get("clusterID", ""),
        "version": history[0].get("version", ""),
        "release_image": history[0].get("image", ""),
        "multi_payload": desired.get("architecture") == "Multi" or "-multi" in desired.get("image", ""),
        "proxy": {
            "httpProxy": proxy_spec.get("httpProxy", ""),
            "httpsProxy": proxy_spec.get("httpsProxy", ""),
            "noProxy": _no_proxy(proxy_spec.get("noProxy")),
        },
        "pull_secret_json": base64.b64decode(((pull.get("data") or {}).get(".dockerconfigjson")) or "").decode(),
        "user_ca_bundle": ca_bundle,
        "architecture": architecture,
        "payload_architecture": _payload_architecture(nodes, architecture),
        "mirrors": mirrors,
        "icsp_mirrors": icsp,
        "ignition_endpoint": endpoint,
        "platform": platform,
        "api_dns_name": api_dns_name,
        "name": match.group(1),
        "ssh_key": ssh_key,
        "fips": bool(((fips_mc or {}).get("spec") or {}).get("fips")),
        "chrony_conf": chrony,
        "boot_artifacts_base_url": nodes_config.get("bootArtifactsBaseURL", ""),
        "namespace": "cluster0",
        "os_image_url": os_url,
        "os_image_version": os_release,
        "os_rootfs_url": rootfs_url,
    }


def _payload_architecture(nodes, fallback):
    """The architecture of a single-architecture payload: the control plane's (what it was installed with)."""
    for node in nodes:
        if "node-role.kubernetes.io/master" in ((node.get("metadata") or {}).get("labels") or {}):
            return ((node.get("status") or {}).get("nodeInfo") or {}).get("architecture") or fallback
    return fallback


HIVE_PLATFORM_TYPES = {"baremetal": "BareMetal", "vsphere": "VSphere", "none": "None", "external": "External"}


def inspection_result(info):
    """The cluster-inspection stage result of report.json (``reportResult``: a JSON map, so keys sorted;
    ``PlatformType`` is the Hive platform type, empty for an unsupported platform)."""
    return json.dumps(
        {
            "Architecture": info["architecture"],
            "PlatformType": HIVE_PLATFORM_TYPES.get(info["platform"], ""),
            "ReleaseImage": info["release_image"],
            "Version": info["version"],
        },
        separators=(",", ":"),
        sort_keys=True,
    )
