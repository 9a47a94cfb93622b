"""What a host reads when it boots: the embedded Ignition of its ISO, and the facts of the lab's cluster."""

from __future__ import annotations

import base64
import time
import uuid

from .. import ignition as ignition_mod
from .. import iso as iso_mod
from .. import jwt, kinds

GO_ARCH_TO_RPM = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x"}


class WrongIso(Exception):
    """The ISO cannot start an agent on this host (the reason is what a console would show)."""


def read_boot_config(iso_path, host, cluster_id, now=None):
    """What the host's agent needs from the ISO, or WrongIso.

    Returns {token, infra_env_id, hostname}; refuses when the MAC is not in the ISO, the cluster ID differs
    or the token expired.
    """
    try:
        config = iso_mod.read_embedded_ignition(iso_path)
    except (OSError, ValueError, iso_mod.IsoFormatError) as exc:
        raise WrongIso(f"cannot read the ISO {iso_path}: {exc}") from None
    if config is None:
        raise WrongIso("the ISO holds no embedded Ignition config (not an add-nodes ISO)")
    files = ignition_mod.files_by_path(config)
    mac = host["mac_address"].lower()
    hostname = None
    macs_in_iso = set()
    for path, content in files.items():
        if path.startswith(ignition_mod.HOSTCONFIG_DIR + "/") and path.endswith("/mac_addresses"):
            found = {line.strip().lower() for line in content.decode().splitlines() if line.strip()}
            macs_in_iso |= found
            if mac in found:
                hostname = path.split("/")[-2]
    if hostname is None:
        raise WrongIso(f"MAC {mac} is not in the ISO (it names {', '.join(sorted(macs_in_iso)) or 'no MAC'})")
    add_nodes = ignition_mod.read_env_file(files.get(ignition_mod.ADD_NODES_ENV, b""))
    if add_nodes.get("CLUSTER_ID") != cluster_id:
        raise WrongIso(f"the ISO is for cluster {add_nodes.get('CLUSTER_ID')}, this cluster is {cluster_id}")
    rendezvous = ignition_mod.read_env_file(files.get(ignition_mod.RENDEZVOUS_ENV, b""))
    service = ignition_mod.read_env_file(files.get(ignition_mod.ASSISTED_SERVICE_ENV, b""))
    token = rendezvous.get("PULL_SECRET_TOKEN") or service.get("WATCHER_AUTH_TOKEN") or ""
    try:
        exp = jwt.unverified_claims(token).get("exp")
    except jwt.TokenError as exc:
        raise WrongIso(f"the ISO's agent token is unreadable: {exc}") from None
    if not isinstance(exp, (int, float)) or (now or time.time()) >= exp:
        raise WrongIso(f"the ISO's agent token expired at {add_nodes.get('AUTH_TOKEN_EXPIRY') or exp}")
    return {"token": token, "infra_env_id": service.get("INFRA_ENV_ID") or str(uuid.uuid4()),
            "hostname": hostname}


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


def agent_public_key(store):
    """The PEM in Secret openshift-config/agent-auth-token (data authTokenPublicKey = base64 of base64 PEM)."""
    secret = store.find(kinds.SECRET, "openshift-config", "agent-auth-token")
    encoded = ((secret or {}).get("data") or {}).get("authTokenPublicKey")
    if not encoded:
        return None
    return base64.b64decode(base64.b64decode(encoded)).decode()
