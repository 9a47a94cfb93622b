# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: workers_check
short_description: Check the new workers' inventory variables against each other and the cluster
version_added: 0.2.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Reads the variables of every host of inventory group O(group) itself (it runs on the controller, so no host
    variable, secrets included, passes through module arguments) and checks them before anything is written to the
    cluster. All problems are reported at once, each naming the host, the field, the value and the fix.
  - The host keys are the suboptions of M(openshift_agent.day2.day2_iso)'s O(openshift_agent.day2.day2_iso#module:hosts)
    and the BMC keys of the boot step (C(bmc_address), C(bmc_username), C(bmc_password), C(bmc_verify_certs); see the
    C(boot) role). They are read from the host, whichever group or file sets them, and checked and
    converted as a module's argument spec does (C(prefix_length="24") becomes 24; an empty text, which an AWX survey
    sends for an unanswered question, means unset).
  - A variable whose name is close to a host key (C(gatway), C(dns_server), C(root_device_hint)) is refused, naming
    the key it resembles. Ansible's own variables (C(ansible_*), C(inventory_hostname)...) and those every host of
    the play has alike (group C(all), extra variables) are not host settings. Any other variable is left alone and
    listed in RV(ignored), since other plays may set it.
  - Against the cluster (the facts of M(openshift_agent.day2.day1_facts)) every host's settings are checked the way
    the image step renders them (names, MACs, addresses, routes, DNS, root device hints, architecture and platform),
    its addresses against the machine networks and the existing Nodes' addresses, and its name against the existing
    Nodes. A Ready Node of the host's name and address means the host joined already, so it is left out of every
    list (RV(joined)), so running the playbook again is safe.
notes:
  - It reads the inventory only and writes nothing; check mode behaves like a normal run.
  - It is an action plugin; it always runs on the controller.
options:
  group:
    description: The inventory group of the new workers.
    type: str
    default: new_workers
  cluster:
    description: The day-1 facts of the cluster, as M(openshift_agent.day2.day1_facts) returns them in C(day1_cluster).
    type: dict
    required: true
  replace_node:
    description:
      - The host being replaced (C(replace_worker.yml) sets it). It is checked and returned even though a Node of its
        name exists.
    type: str
    default: ""
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description:
      Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
    support: none
  action:
    description:
      Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
seealso:
  - module: openshift_agent.day2.day1_facts
  - module: openshift_agent.day2.day2_iso
"""

EXAMPLES = r"""
- name: Read the cluster
  openshift_agent.day2.day1_facts:

- name: Check the hosts of group new_workers
  openshift_agent.day2.workers_check:
    cluster: "{{ ansible_facts.day1_cluster }}"
  register: workers

- name: Build their ISO
  openshift_agent.day2.day2_iso:
    hosts: "{{ workers.image_hosts }}"
    dest: /var/lib/day2
"""

RETURN = r"""
image_hosts:
  description:
    The host keys of the image step, per host still to add (the C(hosts) of M(openshift_agent.day2.day2_iso)).
  returned: success
  type: list
  elements: dict
boot_hosts:
  description:
    - Per host still to add, its BMC settings (C(name), C(bmc_address), C(bmc_username), C(bmc_verify_certs)) and
      C(bmc_password_set). The password itself is not returned; the boot step reads it from the inventory.
  returned: success
  type: list
  elements: dict
install_hosts:
  description:
    Per host still to add, C(name), C(address) and C(mac_address) (the C(hosts) of M(openshift_agent.day2.agent_wait)).
  returned: success
  type: list
  elements: dict
join_nodes:
  description: Per host still to add, C(name) and C(addresses) (the C(nodes) of M(openshift_agent.day2.csr_approve)).
  returned: success
  type: list
  elements: dict
joined:
  description: Hosts of the group that are already Ready Nodes with their address; they are left out of the lists.
  returned: success
  type: list
  elements: str
ignored:
  description: Per host, the variables that are no host keys of this collection and were left alone.
  returned: success
  type: dict
  sample: {extra-worker-0: [rack_location]}
problems:
  description: Every problem found, with C(host), C(field), C(value) and C(message).
  returned: failure
  type: list
  elements: dict
"""
