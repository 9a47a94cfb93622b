"""OpenShift version profiles: every lab behaviour that differs between 4.17 and 4.21, with its upstream source.

The lab picks the profile from the seeded ``ClusterVersion`` (``status.desired.version``, else
``status.history[0].version``, which is what node-joiner reads). A version newer than the newest profile
gets the newest one; an older one the oldest (4.16 clusters are refused by ``oc`` and by the collection before
any node-joiner runs).

Sources (``repo path@commit``). openshift/installer is read file by file; which release a stored installer
commit belongs to is inferred from its content and from the assisted-service release branch it works with.

- node ISO layout, same on 4.17-4.21: extract the RHCOS ISO, cut every file extension longer than 3 characters
  to 3 (``coreos/igninfo.jso``, ``coreos/kargs.jso``; ``boot.catalog`` excepted), rebuild with Rock Ridge and
  no Joliet -- openshift/installer pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6
  (``normalizeFilesExtension``, ``iso9660Level1ExtLen``, ``PersistToFile``); openshift/assisted-image-service
  pkg/isoeditor/isoutil.go@a55e383a69c5e0ba00d4ca875e8d2b9ed520efcc (``Create``: RockRidge, no Joliet).
- embedded config: gzip cpio newc with ``config.ign`` (0100644), zero-padded to 4 bytes, then zeros to the area's
  end -- openshift/assisted-image-service pkg/isoeditor/ignition.go@39bd9999768d3a3341915e0b5a135f12c8c4ed79
  (``IgnitionContent.Archive``: gzip, cpio and the pad in one function; from
  fd35e7cff1ffa51733f8b65b973d257b016c72e1 on ``Archive`` calls ``generateCompressedCPIO`` of isoutil.go, e.g.
  ignition.go and isoutil.go@a55e383a69c5e0ba00d4ca875e8d2b9ed520efcc) and the zeros
  pkg/isoeditor/stream.go@a55e383a69c5e0ba00d4ca875e8d2b9ed520efcc (``ignitionOverlay``).
- node-joiner flags: 4.17 ``--kubeconfig --dir --log-level`` only --
  openshift/installer cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c; ``--pxe`` and
  ``--config-iso`` from 4.18 (installer PRs #9097 and #9214); an unknown flag is cobra's
  ``Error: unknown flag: --X`` plus usage on stderr, exit 1 --
  spf13/cobra command.go@adbc8813901bba65827259daa8e22ff94ec1f30e.
- result files: 4.17 persists ``AgentWorkflowAddNodes`` and ``AgentImage`` only, so ``node.<arch>.iso`` and then
  ``exit_code``, no config ISO and no report.json -- openshift/installer
  pkg/nodejoiner/addnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c (the commit of 4.17's main.go flags below;
  addnodes.go@1b10d1c09e8015e354af740458d30ceafd2ffb80, which also persists ``ConfigImage``, is a later master state
  without report.json or ``--config-iso``, inferred to be of no release); 4.18+ writes ``report.json`` and still
  ``exit_code`` -- openshift/installer pkg/nodejoiner/addnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2.
- ``add-nodes.env`` expiry: ``AGENT_AUTH_TOKEN_EXPIRY`` on 4.17 (installer PR #8802, whose
  agent-auth-token-status.sh reads it; the stored 4.17-era ignition.go@3075c3231aef1a206c4ce065b74b61187ecf6229
  predates it and has no expiry line), ``AUTH_TOKEN_EXPIRY`` from 4.18 -- openshift/installer
  pkg/asset/agent/image/ignition.go@5e705f0f658f4030865683bee11bc0e45bf61cfb and
  @00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9 (``getAddNodesEnv``; PR #9039).
- Secret ``openshift-config/agent-auth-token``: 4.17 ``agentAuthToken`` (claims ``infra_env_id``, ``exp``),
  annotation ``updatedAt`` --
  openshift/installer pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d;
  4.18+ ``agentAuthToken``, ``userAuthToken``, ``watcherAuthToken`` (claims ``auth_scheme``, ``exp``), annotations
  ``updatedAt`` and ``expiresAt`` -- installer PR #9210, authconfig_test.go ("for OCP 4.18+"); the persona names,
  the ``auth_scheme`` claim and ``expiresAt`` from openshift/installer
  pkg/asset/agent/gencrypto/authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb (an intermediate state whose
  Secret holds only ``watcherAuthToken``).
- agent API security: 4.17 has no ``watcherAuth`` scheme and no authorization handler -- openshift/assisted-service
  swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd, pkg/auth/authz.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd;
  4.18+ ``watcherAuth`` (``Watcher-Authorization``) on four GETs, ``auth_scheme`` checked --
  openshift/assisted-service swagger.yaml@73206081d00ddfc1a2d9b385b1560564642b79ee,
  pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee (same on release-4.19..4.21:
  de5d04b1db10aa8b3864d1e8f42a7fc23aadd4ae, 4e399454ffb97a17837bb2362518f5442f7dd086,
  3977af16577a830b9c9c8822fe8f2925b38eac9c).
- host-stage enum: 12 values on 4.17-4.20, ``Copying registry data to disk`` added in 4.21 --
  openshift/assisted-service swagger.yaml on each release branch, commit 4096daea4c14c53027bc0de10daadb990bed2f10.
- ConfigMap ``openshift-config/installer-images`` (``images.json`` ``installer``): a manifest of the release
  payload, openshift/installer
  images/baremetal/manifests/0000_90_baremetal-installer_01_images.configmap.yaml@b68be1e8d99ac6af3a5733f252cbe3ee7244af60
  (namespace ``openshift-config``; another stored version, @41711097443d78451e5b0818b2803c8cc2007551, puts it in
  ``openshift``), shipped from 4.19 by oc's own account ("the configMap was added to installer in 4.19",
  openshift/oc pkg/cli/admin/nodeimage/basenodeimagecommand.go@6febe61977471b066f08d513424b226b82ee518f of
  release-4.18, whose oc already reads it first: OCPBUGS-53106, oc PR #2005).
- PXE artifacts (4.18+): ``boot-artifacts/node.<arch>-{initrd.img,rootfs.img,vmlinuz}``, on s390x also
  ``node.s390x-initrd.addrsize`` and ``node.s390x-generic.ins``, and ``node.<arch>.ipxe`` only when
  ``bootArtifactsBaseURL`` is set -- openshift/installer
  pkg/asset/agent/image/agentpxefiles.go@84c3bbc9d011c5339af99235decb0f31bea501a7 (``PersistToFile``,
  ``handleAdditionals390xArtifacts``);
  cmd/node-joiner/testdata/add-nodes-pxe.txt@be8603b19514d0b701a29c99b91c81d4810e8c40.

Fields added later (same rule: each cites its source):

- ``import_cluster_config``: ``/etc/assisted/clusterconfig/import-cluster-config.json`` is always written from 4.18
  (installer PR #9129; openshift/installer pkg/asset/agent/image/ignition.go@5e705f0f658f4030865683bee11bc0e45bf61cfb,
  ``addDay2ClusterConfigFiles``); assisted-service reads it from release-4.18 on
  (openshift/assisted-service cmd/agentbasedinstaller/import.go@73206081d00ddfc1a2d9b385b1560564642b79ee). 4.17 writes
  only ``worker-ignition-endpoint.json`` -- ignition.go@3075c3231aef1a206c4ce065b74b61187ecf6229.
- ``aiui_urls``: ``AIUI_APP_API_URL`` and ``AIUI_URL`` in ``rendezvous-host.env`` -- openshift/installer
  pkg/asset/agent/image/ignition.go@00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9 (the newest stored copy, which also has
  arbiter hosts: 4.19+, inferred); absent at ignition.go@5e705f0f658f4030865683bee11bc0e45bf61cfb (4.18).
- ``fresh_expiry_on_reuse``: node-joiner 4.17 computes a new expiry (now + 48 h) before it looks at the Secret, and
  when it reuses the Secret's token it takes the token and the public key but keeps that new expiry, which goes
  into ``add-nodes.env`` -- openshift/installer
  pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d (``Generate``,
  ``createOrUpdateAuthTokenSecret``); from 4.18 the reused token's own expiry is taken (``a.AuthTokenExpiry =
  expiryTime``, authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb).
- ``external_minimal_iso``: on platform External node-joiner 4.17 writes a minimal node ISO (no rootfs; it fetches
  the RHCOS stream's) -- openshift/installer
  pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6 (add-nodes: ``a.platform =
  clusterInfo.PlatformType``; no report stages there: 4.17, inferred). From 4.18 the minimal ISO is
  ``AgentArtifacts.MinimalISO``, set for the install workflow only (installer PR #9056; agentartifacts.go, the
  version with ``MinimalISO``), and upstream's own External add-nodes test builds its node ISO from a stream without
  a PXE rootfs, which a minimal ISO would need -- cmd/node-joiner/testdata/
  add-nodes-usermanagednetworking-external.txt@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2 with
  setup/default/0020_coreos-bootimages-cm.yaml@2ff7ccc89c533e7286dbbbd4d89fdf46652989c6: a full ISO (inferred).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# Every host stage of the swagger enum, in its order (openshift/assisted-service swagger.yaml, see above).
HOST_STAGES_4_17 = (
    "Starting installation",
    "Waiting for control plane",
    "Waiting for bootkube",
    "Waiting for controller",
    "Installing",
    "Writing image to disk",
    "Rebooting",
    "Waiting for ignition",
    "Configuring",
    "Joined",
    "Done",
    "Failed",
)
HOST_STAGES_4_21 = (*HOST_STAGES_4_17[:6], "Copying registry data to disk", *HOST_STAGES_4_17[6:])

# What a day-2 worker reports, in order; "Rebooting" is stored as "Done" (status added-to-existing-cluster)
# because nothing can be followed after it --
# openshift/assisted-service internal/host/host.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd
# (GetStagesByRole cuts after Rebooting for AddToExistingClusterHost), internal/host/common.go (WorkerStages),
# openshift/assisted-installer src/installer/installer.go@63b2da6ef83a82468cf0c5baea4fef27a36be267.
DAY2_WORKER_STAGES = (
    "Starting installation",
    "Installing",
    "Writing image to disk",
    "Waiting for control plane",
    "Rebooting",
)

AGENT_PERSONA, USER_PERSONA, WATCHER_PERSONA = "agentAuth", "userAuth", "watcherAuth"


@dataclass(frozen=True)
class Profile:
    """What one OpenShift minor release does, for the lab components that differ by version."""

    minor: tuple
    # node-joiner
    add_nodes_flags: tuple  # the flags of `node-joiner add-nodes` (global ones included)
    writes_report: bool  # report.json besides exit_code
    expiry_variable: str  # in /etc/assisted/add-nodes.env
    token_keys: tuple  # data keys of Secret openshift-config/agent-auth-token besides authTokenPublicKey
    token_claim: str  # "infra_env_id" (4.17) or "auth_scheme" (4.18+)
    secret_annotations: tuple
    # the agent (assisted-service) on each booted host
    watcher_scheme: bool  # Watcher-Authorization exists and auth_scheme is enforced
    host_stages: tuple
    # the cluster
    ships_installer_images: bool  # ConfigMap openshift-config/installer-images
    # (added later, with defaults so the rows above keep their meaning)
    import_cluster_config: bool = False  # /etc/assisted/clusterconfig/import-cluster-config.json
    aiui_urls: bool = False  # AIUI_APP_API_URL / AIUI_URL in rendezvous-host.env
    fresh_expiry_on_reuse: bool = False  # add-nodes.env gets now + 48 h even when an older token is reused
    external_minimal_iso: bool = False  # platform External: a minimal node ISO (see below)

    @property
    def name(self) -> str:
        return "%d.%d" % self.minor

    @property
    def has_pxe(self) -> bool:
        return "--pxe" in self.add_nodes_flags


_GLOBAL_FLAGS = ("--kubeconfig", "--dir", "--log-level")
_V417 = Profile(
    minor=(4, 17),
    add_nodes_flags=_GLOBAL_FLAGS,
    writes_report=False,
    expiry_variable="AGENT_AUTH_TOKEN_EXPIRY",
    token_keys=("agentAuthToken",),
    token_claim="infra_env_id",
    secret_annotations=("updatedAt",),
    watcher_scheme=False,
    host_stages=HOST_STAGES_4_17,
    ships_installer_images=False,
    fresh_expiry_on_reuse=True,
    external_minimal_iso=True,
)
_V418 = Profile(
    minor=(4, 18),
    add_nodes_flags=(*_GLOBAL_FLAGS, "--pxe", "-p", "--config-iso"),
    writes_report=True,
    expiry_variable="AUTH_TOKEN_EXPIRY",
    token_keys=("agentAuthToken", "userAuthToken", "watcherAuthToken"),
    token_claim="auth_scheme",
    secret_annotations=("updatedAt", "expiresAt"),
    watcher_scheme=True,
    host_stages=HOST_STAGES_4_17,
    ships_installer_images=False,
    import_cluster_config=True,
)
_V419 = replace(_V418, minor=(4, 19), ships_installer_images=True, aiui_urls=True)
_V420 = replace(_V419, minor=(4, 20))
_V421 = replace(_V420, minor=(4, 21), host_stages=HOST_STAGES_4_21)

PROFILES = (_V417, _V418, _V419, _V420, _V421)
NEWEST = PROFILES[-1]


def parse_minor(version) -> tuple | None:
    match = re.match(r"^v?(\d+)\.(\d+)", str(version or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def for_version(version) -> Profile:
    """The profile of an OpenShift version string such as ``4.18.12`` (unknown: the newest)."""
    minor = parse_minor(version)
    if minor is None:
        return NEWEST
    for profile in reversed(PROFILES):
        if minor >= profile.minor:
            return profile
    return PROFILES[0]


def cluster_version(clusterversion: dict | None) -> str | None:
    """``status.desired.version``, else ``status.history[0].version`` of a ClusterVersion object."""
    status = (clusterversion or {}).get("status") or {}
    desired = (status.get("desired") or {}).get("version")
    if desired:
        return desired
    history = status.get("history") or []
    return (history[0] or {}).get("version") if history else None


def for_cluster(store) -> Profile:
    """The profile of the cluster a lab store holds."""
    from . import kinds  # late: kinds imports nothing from here, but keep this module import-light

    cv = store.find(kinds.by_kind("config.openshift.io/v1", "ClusterVersion"), None, "version")
    return for_version(cluster_version(cv))
