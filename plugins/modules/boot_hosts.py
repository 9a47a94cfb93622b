#!/usr/bin/python
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# The documentation of the action plugin plugins/action/boot_hosts.py (the decisions are plugins/module_utils/_boot/).

DOCUMENTATION = r"""
module: boot_hosts
short_description: Boot the new hosts from the ISO, by hand or through their BMC's Redfish virtual media
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - With O(method=manual), says what to boot (RV(msg)) and boots nothing.
  - With O(method=redfish), boots every host through its BMC, with M(community.general.redfish_info) and
    M(community.general.redfish_command) (HTTPS BMCs). It reads the system, its virtual media and boot override,
    picks the virtual CD (system-level virtual media where the system has them, else the manager's, as older BMCs
    keep them), ejects a medium the CD still holds, inserts O(image_url), sets a one-time boot from CD and powers the
    host on, or restarts it when it is on.
  - A host's BMC settings come from its record (C(bmc_base_url) and C(bmc_system_path), worked out from its
    C(bmc_address) by M(openshift_agent.day2.workers_check), C(bmc_username), C(bmc_verify_certs)); its password is
    read at the moment of the call from its variable C(bmc_password) (set on the host or its group), or, for a host
    of an agent-config.yaml, from the file's C(bmc.password); it is never passed through module arguments.
  - Only the hosts that need it are booted or named to boot. A host the plan finds joined or half-joined, or whose
    agent already answers (O(standing)), is named with where it stands, and not booted again.
  - With O(inspect=true) (the preflight step), it boots nothing; it asks every BMC, with its login, about its system,
    virtual media and boot override (GET requests only) and fails, naming every host, field and fix at once, on a
    wrong login, an unreachable BMC, an unknown system or a system without a virtual CD.
  - The virtual CD is ejected later, once the host's disk is written, by M(openshift_agent.day2.csr_approve)
    (its C(eject) option takes RV(booted)).
  - It is an action plugin and always runs on the controller.
options:
  method:
    description: How the hosts are booted.
    type: str
    choices: [manual, redfish]
    default: manual
  hosts:
    description: The hosts to boot, as M(openshift_agent.day2.workers_check) returns them in C(hosts).
    type: list
    elements: dict
    required: true
  artifacts:
    description: What to boot, as M(openshift_agent.day2.day2_iso) returns it in C(artifacts) (the paths are shown).
    type: list
    elements: dict
    default: []
  standing:
    description:
      - Where each host stands, by lower-case name, as M(openshift_agent.day2.agent_wait) with
        O(openshift_agent.day2.agent_wait#module:wait=false) returns it in C(hosts); a host whose agent phase is
        not C(waiting) is not booted again.
    type: dict
    default: {}
  inspect:
    description: Ask every BMC (GET requests only) instead of booting; see the description.
    type: bool
    default: false
  image_url:
    description:
      - The URL the BMCs download the ISO from (M(openshift_agent.day2.iso_serve)'s C(url), or your own server). It
        is never shown (a served ISO's URL holds a secret path).
    type: str
    default: ""
  image_url_shown:
    description: The same URL as messages may show it.
    type: str
    default: ""
  verify_certs:
    description: Verify the BMCs' TLS certificates (a host's C(bmc_verify_certs) wins).
    type: bool
    default: true
  ca_path:
    description: CA file (PEM) that verifies the BMCs' certificates; empty for the system's CAs.
    type: str
    default: ""
  timeout:
    description: Seconds for each Redfish request.
    type: int
    default: 60
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - With O(method=redfish) it reads each BMC (GET requests only) and says how the host would be booted; it
        inserts, sets and powers nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
requirements:
  - the collection community.general (its redfish modules)
seealso:
  - module: community.general.redfish_command
  - module: openshift_agent.day2.iso_serve
"""

EXAMPLES = r"""
- name: Boot the new hosts through their BMCs from an ISO you serve
  openshift_agent.day2.boot_hosts:
    method: redfish
    hosts: "{{ day2_plan.hosts }}"
    image_url: https://files.example.com/node.x86_64.iso
  register: booted

- name: Before anything is written, ask every BMC with its login (GET requests only)
  openshift_agent.day2.boot_hosts:
    method: redfish
    hosts: "{{ day2_plan.hosts }}"
    inspect: true
"""

RETURN = r"""
booted:
  description: The hosts booted through their BMC (for M(openshift_agent.day2.csr_approve)'s C(eject)).
  returned: success and failure, unless O(inspect=true)
  type: list
  elements: str
problems:
  description: With O(inspect=true), every BMC's refusal, each naming the host, the field and the fix.
  returned: failure
  type: list
  elements: str
msg:
  description:
    - What to boot (manual), or what was done (or in check mode would be done) per host, and where each host stands
      that is not booted. With O(inspect=true), what each BMC answered.
  returned: success
  type: list
  elements: str
"""
