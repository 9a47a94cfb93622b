#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


DOCUMENTATION = r"""
module: iso_info
short_description: Tell which cluster and hosts a node ISO (or PXE initrd) is for, and whether it still works
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Reads a node image on the controller - the C(node.<arch>.iso) node-joiner builds (C(day2_iso), C(oc adm
    node-image create)), the PXE initrd C(node.<arch>-initrd.img), or the base RHCOS live ISO - and returns the
    cluster it is for, the hosts it will add, when its agent token expires and whether it still works for at least
    O(min_validity).
  - Reads node-joiner's layout on OpenShift 4.17 to 4.21 - C(coreos/igninfo.jso) and C(coreos/kargs.jso) (file
    extensions cut to 3 characters, Rock Ridge, no Joliet), a gzip cpio zero-padded in C(images/ignition.img) -
    as well as the base ISO's C(.json) names, xz or plain cpio, Joliet or ISO 9660 primary names only.
  - The token expiry is the earlier of C(/etc/assisted/add-nodes.env) (C(AUTH_TOKEN_EXPIRY) from 4.18,
    C(AGENT_AUTH_TOKEN_EXPIRY) on 4.17) and the earliest C(exp) claim of the tokens the image carries (decoded, not
    verified). On 4.17 node-joiner writes a fresh 48 hours into C(add-nodes.env) even when it reuses an older token,
    whose C(exp) is what the node's agent enforces.
  - Never contacts a cluster and never returns a secret - no token, no pull secret - although the image holds both.
  - Fails, naming the file and what was expected, on anything else - a file that is neither an ISO 9660 image nor
    an initrd, an ISO without C(coreos/igninfo.json) (or C(igninfo.jso)), an undecodable embed area, a config that
    is not an add-nodes one.
notes:
  - Not in the C(openshift_agent.day2.day2) action group and takes no cluster login options - it reads a local file
    only.
extends_documentation_fragment:
  - openshift_agent.day2.attributes.READ_ONLY
options:
  path:
    description: The node ISO, the RHCOS live ISO or the PXE initrd (C(node.<arch>-initrd.img)) to read.
    type: path
    required: true
  min_validity:
    description:
      - How long the image must still work for RV(valid) to be true - seconds, or a duration like C(24h), C(90m),
        C(1d12h). C(0) asks whether it works now.
    type: str
    default: "0"
requirements:
  - python >= 3.9
seealso:
  - module: openshift_agent.day2.day2_iso
"""

EXAMPLES = r"""
- name: Which hosts is this ISO for, and does it work for another day?
  openshift_agent.day2.iso_info:
    path: /var/lib/day2/node.x86_64.iso
    min_validity: 24h
  register: image

- name: Stop before booting hosts from a stale image
  ansible.builtin.assert:
    that: image.valid
    fail_msg: "{{ image.message }}"

- name: The MACs the image recognises
  ansible.builtin.debug:
    msg: "{{ image.hosts | map(attribute='mac_addresses') | flatten }}"
"""

RETURN = r"""
file:
  description: The file read (O(path)).
  returned: always
  type: str
layout:
  description:
    - C(node-iso) (an ISO with an add-nodes config), C(base-iso) (an RHCOS live ISO without an embedded config) or
      C(pxe-initrd) (an initrd with the add-nodes config appended).
  returned: always
  type: str
  sample: node-iso
cluster_id:
  description: The cluster's ID (ClusterVersion C(spec.clusterID)), from C(add-nodes.env) C(CLUSTER_ID).
  returned: always (null for a base ISO)
  type: str
cluster_name:
  description: The cluster name (C(CLUSTER_NAME)).
  returned: always (null for a base ISO)
  type: str
api_dns_name:
  description: The cluster's API DNS name (C(CLUSTER_API_VIP_DNS_NAME)).
  returned: always (null for a base ISO)
  type: str
hosts:
  description:
    - The hosts the image is for, sorted by hostname - C(hostname) (null when the host was given without one),
      C(mac_addresses) (lower case; the image recognises a host by any of them), C(role) (when set) and
      C(interfaces) (C(mac_address) and C(name), for hosts with a static network configuration).
  returned: always
  type: list
  elements: dict
  sample: [{hostname: extra-worker-0, mac_addresses: ["52:54:00:6f:00:14"], role: null,
            interfaces: [{mac_address: "52:54:00:6f:00:14", name: eth0}]}]
token_expiry:
  description: When the agent token in the image expires (RFC 3339, UTC); null when the image does not tell.
  returned: always
  type: str
  sample: "2025-05-03T12:00:00Z"
token_expiry_source:
  description: Where RV(token_expiry) was read (the variable of C(add-nodes.env), or the tokens' C(exp) claim and,
    when C(add-nodes.env) says later, that value).
  returned: always
  type: str
valid:
  description: Whether the token is still valid for at least O(min_validity). False when the expiry is unknown.
  returned: always
  type: bool
valid_for:
  description: Hours until the token expires (negative once expired); null when unknown.
  returned: always
  type: float
  sample: 47.5
min_validity:
  description: O(min_validity) in hours.
  returned: always
  type: float
architecture:
  description: RPM architecture the image is for (C(x86_64), C(aarch64), C(ppc64le), C(s390x)); null when unknown.
  returned: always
  type: str
architecture_source:
  description: >-
    Where RV(architecture) was read - the InfraEnv C(spec.cpuArchitecture), C(images.env), the ISO's boot layout or
    the initrd's file name.
  returned: always
  type: str
kernel_arguments:
  description:
    - The ISO's live kernel arguments (null for a PXE initrd, whose arguments are in the iPXE script).
    - Also null when the ISO's kernel-argument areas disagree - the x86_64 minimal ISO of node-joiner 4.17 on
      platform External, whose C(coreos/kargs.jso) still describes the full ISO (see RV(rootfs_url)).
  returned: always
  type: str
rootfs_url:
  description:
    - Where a host booted from a minimal ISO fetches its rootfs - the C(coreos.live.rootfs_url) of the ISO's grub.cfg
      (the RHCOS stream's, in the minimal ISO node-joiner 4.17 builds on platform External); null for a full ISO,
      which holds its rootfs, and for a PXE initrd. The hosts must reach it when they boot.
  returned: always
  type: str
openshift_version:
  description: The cluster's OpenShift version as node-joiner wrote it into the image, when it did.
  returned: always
  type: str
release_image:
  description: The cluster's release image (the ClusterImageSet in the image), when present.
  returned: always
  type: str
volume_id:
  description: The ISO's volume identifier (the base RHCOS ISO's, which node-joiner keeps).
  returned: always
  type: str
iso_files:
  description: How the ISO spells C(igninfo) and C(kargs) (for example C(coreos/igninfo.jso)); null for an initrd.
  returned: always
  type: dict
compression:
  description: The compression of each archive in the embed area or the appended archive (C(gzip), C(xz), C(none)).
  returned: always
  type: list
  elements: str
checked_at:
  description: When the validity was judged (RFC 3339, UTC).
  returned: always
  type: str
message:
  description: One sentence answering which cluster and hosts the image is for and whether it still works.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.module import run_step
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.iso import iso_info

ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "min_validity": {"type": "str", "default": "0", "no_log": False},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    run_step(module, "iso_info", lambda module: iso_info(module.params["path"], module.params["min_validity"]))


if __name__ == "__main__":
    main()
