# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OpenShift releases the collection adds workers to, and what each does differently: one row per minor
release, each field with its upstream source (``repo path@commit``). Every version decision reads this table.

:func:`release` gives the row of a version (``"4.18.3"`` or ``(4, 18)``): a release newer than the table gets the
newest row (it is treated like 4.21); one older than :data:`MINIMUM` is refused. The cluster's version itself is
read in one place, ``_facts.cluster.cluster_version``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError

# The first release whose node-joiner adds nodes: oc refuses older clusters (nodeJoinerMinimumSupportedVersion,
# defined in openshift/oc pkg/cli/admin/nodeimage/create.go@9d9df34c46c9deba8c291a2a084de5724c0bd820, checked in
# basenodeimagecommand.go there).
MINIMUM = (4, 17)


@dataclasses.dataclass(frozen=True)
class Release:
    """What one minor release does, where the collection has to do something else for it."""

    minor: tuple[int, int]
    # node-joiner's --pxe and --config-iso (installer PRs #9097, #9214): node-joiner 4.17 knows --kubeconfig, --dir
    # and --log-level only -- openshift/installer cmd/node-joiner/main.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c;
    # 4.18 takes both -- pkg/nodejoiner/addnodes.go@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2.
    pxe: bool
    config_iso: bool
    # Completion: report.json besides exit_code from 4.18 (addnodes.go@de45fedd...); 4.17 persists the node ISO
    # (AgentImage) and then writes exit_code only -- addnodes.go@52e2540bb22e42b2bf9de1304d0a3cf17d9c2e0c.
    report_json: bool
    # The token expiry in the ISO's add-nodes.env: AGENT_AUTH_TOKEN_EXPIRY on 4.17 (installer PR #8802; 4.17 keeps a
    # fresh 48 h there when it reuses an older token, authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d, so the
    # tokens' exp decides: _image/ignition.py), AUTH_TOKEN_EXPIRY from 4.18 -- pkg/asset/agent/image/
    # ignition.go@5e705f0f658f4030865683bee11bc0e45bf61cfb and @00f6ab7e623ca3556ec97407cc7a8e3e8b0e88e9.
    expiry_variable: str
    # The agent API's watcherAuth scheme, header Watcher-Authorization: none on 4.17 -- openshift/assisted-service
    # swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd; from 4.18 the monitor sends the watcher token in it --
    # openshift/installer pkg/agent/rest.go@013f25cacd773a040b1b2f40ff7d211314bbb8b0, checked by
    # openshift/assisted-service pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee.
    watcher_header: bool
    # oc looks up the node-joiner image in ConfigMap openshift-config/installer-images (images.json, "installer")
    # before the release payload from 4.18 (OCPBUGS-53106) -- openshift/oc
    # pkg/cli/admin/nodeimage/basenodeimagecommand.go@6febe61977471b066f08d513424b226b82ee518f; oc 4.17 does not --
    # create.go@d76df14ea3d7ff9916ea576b6335cd3a220cd1bf. The cluster gets the ConfigMap from the release payload,
    # openshift/installer images/baremetal/manifests/0000_90_baremetal-installer_01_images.configmap.yaml@
    # b68be1e8d99ac6af3a5733f252cbe3ee7244af60, from 4.19 ("the configMap was added to installer in 4.19", oc's
    # basenodeimagecommand.go@6febe619...).
    installer_images_configmap: bool
    # (API group, resource) of the image-content rule oc grants node-joiner's ClusterRole: 4.17-4.20 list
    # "config.openshift.io imagecontentpolicies" -- create.go@d76df14... (4.17),
    # basenodeimagecommand.go@92a3a166a7f710a344a11bda0ad221e54583fccd (4.20); 4.21 grants "operator.openshift.io
    # imagecontentsourcepolicies" instead (OCPBUGS-61491) --
    # basenodeimagecommand.go@9d9df34c46c9deba8c291a2a084de5724c0bd820.
    icsp_rule: tuple[str, str]
    # On platform External node-joiner 4.17 writes a minimal node ISO (no rootfs, the RHCOS stream's fetched at boot)
    # -- openshift/installer pkg/asset/agent/image/agentimage.go@e63803a36b43bf74bca84e614403f9be1494a7d6; from 4.18
    # only the install workflow gets one (installer PR #9056, AgentArtifacts.MinimalISO): upstream's External add-nodes
    # test builds from a stream without a PXE rootfs -- cmd/node-joiner/testdata/
    # add-nodes-usermanagednetworking-external.txt@de45feddbf0f1fa796f476cb7bb4c15a7b4e04d2 (inferred).
    minimal_iso_on_external: bool = False


_ICP, _ICSP = ("config.openshift.io", "imagecontentpolicies"), ("operator.openshift.io", "imagecontentsourcepolicies")
# One row per minor release, the fields in the order of Release.
RELEASES = (
    # minor, pxe, config_iso, report_json, expiry_variable, watcher_header, installer_images_configmap, icsp_rule
    Release((4, 17), False, False, False, "AGENT_AUTH_TOKEN_EXPIRY", False, False, _ICP, minimal_iso_on_external=True),
    Release((4, 18), True, True, True, "AUTH_TOKEN_EXPIRY", True, True, _ICP),
    Release((4, 19), True, True, True, "AUTH_TOKEN_EXPIRY", True, True, _ICP),
    Release((4, 20), True, True, True, "AUTH_TOKEN_EXPIRY", True, True, _ICP),
    Release((4, 21), True, True, True, "AUTH_TOKEN_EXPIRY", True, True, _ICSP),
)


def parse_version(text: Any) -> tuple[int, int] | None:
    """``(major, minor)`` of a version text such as ``4.18.3`` or ``v4.17.0-rc.1``, None when it is not one."""
    match = re.match(r"^v?(\d+)\.(\d+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def release(version: str | tuple[int, ...] | None) -> Release:
    """The row of ``version``; InputError for an unknown version or one older than :data:`MINIMUM`."""
    minor = parse_version(version) if not isinstance(version, tuple) else tuple(version[:2])
    if minor is None:
        raise InputError(f"cluster version {version!r} is not a version: the release decides what node-joiner does")
    if minor < MINIMUM:
        shown = version if isinstance(version, str) else ".".join(map(str, minor))
        raise InputError(
            f"cluster version {shown} is older than {MINIMUM[0]}.{MINIMUM[1]}, the first release whose node-joiner "
            "can add nodes: upgrade the cluster first"
        )
    return next(row for row in reversed(RELEASES) if minor >= row.minor)


def since(field: str) -> tuple[int, int]:
    """The first release whose ``field`` is true, for messages such as "needs OpenShift 4.18 or later"."""
    return next(row.minor for row in RELEASES if getattr(row, field))
