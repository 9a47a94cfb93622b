# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
module: workers_check
short_description: Check the new workers' inventory variables against each other and the cluster
version_added: 0.1.0
author:
  - openshift_agent.day2 developers (@openshift-agent-day2)
description:
  - Reads the variables of every host of inventory group O(group) itself (it runs on the controller, so no host
    variable, secrets included, passes through module arguments) and checks them, the boot settings and the play's
    settings before anything is written to the cluster. All problems are reported at once, each naming the host (or
    C(play) for a play variable), the field, the value and the fix. It returns one record per new worker
    (RV(hosts)), which the later steps take.
  - The host keys are those of a host record (the suboptions of M(openshift_agent.day2.day2_iso)'s
    O(openshift_agent.day2.day2_iso#module:hosts)) and C(bmc_password). They are read from the host, whichever group
    or file sets them, and checked and converted as a module's argument spec does (C(prefix_length="24") becomes 24;
    an empty text, which an AWX survey sends for an unanswered question, means unset).
  - "Every other variable of a host is sorted. Not counted: Ansible's own (C(ansible_*), C(inventory_hostname)...),
    those every host of the play has alike (group C(all), extra variables) and the login the playbooks read from the
    group (C(kubeconfig), C(context), C(k8s_host), C(k8s_api_key), C(k8s_validate_certs), C(k8s_ca_cert)).
    Refused, naming the host key meant: a name equal to a host key but for case, C(-)/C(_) and camelCase
    (C(rootDeviceHints)), another usual name for it (C(netmask), C(gw)), its beginning (C(mac), C(bmc_user)), a
    misspelling (C(gatway), C(dns_server), C(root_device_hint)) or the key with more words (C(ip_address)). Refused
    too: a setting of this collection (C(day2_*)) set on the new workers only, where the role does not read it. Any
    other variable is left alone and listed in RV(ignored): other plays' groups may set it on the same hosts; so is
    one that only feeds another variable (used in another one's template, read from an encrypted file, or named
    C(vault_*): Ansible's vault layout, C(bmc_password: \"{{ vault_bmc_password }}\")). The value of a mistake is
    shown, unless it is or resembles a secret."
  - Against the cluster (the facts of M(openshift_agent.day2.day1_facts)) every host's settings are checked the way
    the image step renders them (names, MACs, addresses, routes, DNS, root device hints, architecture and platform),
    against each other (names, MACs and addresses once each), and every static address against the machine
    networks, their prefix length, the API and ingress VIPs and the existing Nodes' addresses. A host name that is a
    control-plane Node is refused as such; a Ready worker Node of the host's name and address means the host joined
    already, so it is left out of RV(hosts) (it is in RV(joined)), so running the playbook again is safe.
  - "The prefix rule: an address in a machine network must carry that network's prefix length. Where the cluster
    has VIPs (keepalived moves them among the nodes, this worker included) a different prefix is refused; without
    VIPs (platform none or external) it is accepted when the host has a default gateway of that IP version (a routed
    part of the machine network)."
  - "With the raw form (C(network_config)) C(ip)/C(ipv6) are optional: given, each must be one of its static
    addresses; not given, the install is followed at its first static address."
  - "A host with C(ip) and none of the static network keys (C(prefix_length), C(gateway), C(dns_servers),
    C(vlan_id), C(ipv6), C(ipv6_prefix_length), C(ipv6_gateway), C(network_config)) is a DHCP host: the image step
    gives it no C(networkConfig), and its install is followed at C(ip), the address its DHCP reservation gives,
    checked like a static address but for the prefix rule. A host with neither C(ip) nor a static address is
    refused: there is no address to follow its install at."
  - The hosts may also come from a day-1 C(agent-config.yaml) (O(agent_config)) and from an C(oc adm node-image)
    C(nodes-config.yaml) (O(nodes_config)), mixed with the group's; a host defined twice (the same name, or a MAC
    of another host) is refused, the latter with its other problems in the same run.
  - "With C(--limit) (C(ansible_limit)), the new workers are the hosts of O(group) that ansible's inventory manager
    selects with the limit's patterns; the files' hosts are left out, and so is every other host of the group, named
    in the plan. A limit that selects no new worker is refused, naming the limit and the group."
  - "Raw nmstate is read as nmstate reads it: a bond's ports and a VLAN's base that C(network_config) does not
    define are NICs of C(interfaces), known by their MACs; C(sriov:<PF>:<VF>) names an SR-IOV virtual function."
  - With O(boot_method=redfish), O(iso_url) must be an http(s) URL and every host needs C(bmc_username),
    C(bmc_password) and a C(bmc_address) of a Redfish BMC, as the installer and metal3 write it - C(redfish://),
    C(redfish-virtualmedia://), C(redfish-uefihttp://), C(idrac-redfish://), C(idrac-virtualmedia://),
    C(ilo5-redfish://), C(ilo5-virtualmedia://), each also with C(+http) or C(+https) - or a plain C(https://) or
    C(http://) URL of the BMC. C(ipmi://), C(idrac://) (WS-Man) and the other non-Redfish types, or a bare host, are
    refused. With C(manual) the BMC keys are not used and not checked.
  - "The play's settings (every C(day2_*) variable, as the role C(openshift_agent.day2.day2) reads it) are checked
    against the role's C(meta/argument_specs.yml), the one list of settings and their types, and for what the spec
    cannot say: C(day2_pxe) needs a release whose node-joiner has C(--pxe) (4.18), C(day2_min_token_validity) is a
    duration, C(day2_boot_artifacts_base_url) is an http(s) URL used with C(day2_pxe) (node-joiner reads it for PXE
    files only), no number is negative. (The role's own argument
    validation refuses a wrong type when the role starts; the check here also covers the later steps' settings when
    the steps run one by one.) A play variable named like a setting but unknown to the collection
    (C(day2_boot_methd), C(DAY2_PXE), C(day2BootMethod)) is refused naming the one meant."
  - Before any of that, a cluster that node-joiner cannot add workers to (the facts' C(supported)) is refused, so is
    one being updated (the facts' C(unsafe_reasons), which M(openshift_agent.day2.day1_facts) leaves empty with its
    O(openshift_agent.day2.day1_facts#module:allow_upgrading)), and so is an unhealthy one (the facts' C(health))
    unless O(require_healthy=false).
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
  require_healthy:
    description:
      - Refuse a cluster whose facts report health problems (C(day2_require_healthy)), naming them.
    type: bool
    default: true
  replace_node:
    description:
      - The host being replaced (C(replace_worker.yml) sets it). It is checked and returned even though a Node of its
        name exists.
    type: str
    default: ""
  boot_method:
    description:
      - How the hosts will be booted, C(manual) or C(redfish) (C(day2_boot_method)).
        Any other value is refused, naming it and the choices.
    type: str
    default: manual
  iso_url:
    description:
      - Where the BMCs will download the ISO from (C(day2_iso_url)); needed for O(boot_method=redfish) unless
        O(serve_iso).
    type: str
    default: ""
  serve_iso:
    description:
      - Whether the boot step serves the ISO itself (C(day2_serve_iso)); then no O(iso_url) is needed. Unset, it
        does with O(boot_method=redfish) and no O(iso_url). RV(boot) says what was decided.
    type: bool
  serve:
    description:
      - How the boot step serves the ISO when it does (O(serve_iso)), for the plan's words - C(address)
        (C(day2_serve_address)) and C(tls_cert) (C(day2_serve_tls_cert); empty, plain HTTP).
    type: dict
    default: {}
  agent_config:
    description:
      - Path (on the controller) of a day-1 C(agent-config.yaml) whose C(hosts) are new workers too, besides or
        instead of the hosts of O(group) (C(day2_agent_config)). Read as the installer reads it (an unknown field is
        refused); of each host C(hostname), C(interfaces), C(networkConfig), C(rootDeviceHints), C(role) and C(BMC)
        become the host keys C(name), C(interfaces), C(network_config), C(root_device_hints) and C(bmc_*), and the
        same checks apply, a problem named by the file's own field name. A host with C(role) C(master) is refused
        (node-joiner adds workers only), and so is a host also in O(group). A relative path is taken from the current
        directory, else from the playbook's. The file-wide fields (C(rendezvousIP)...) are listed in RV(ignored).
    type: str
    default: ""
  nodes_config:
    description:
      - Path (on the controller) of an C(oc adm node-image) C(nodes-config.yaml) whose C(hosts) are new workers too
        (C(day2_nodes_config)). Read as node-joiner reads it (C(cpuArchitecture), C(sshKey), C(bootArtifactsBaseURL),
        C(hosts) of agent-config hosts, names matching regardless of case), but a field node-joiner does not know is
        refused (node-joiner would drop it unseen). Its hosts become records as O(agent_config)'s do, with the file's
        C(cpuArchitecture) as their C(cpu_architecture); each needs a static address in C(networkConfig) (a DHCP host
        belongs in O(group), with C(ip)). Its C(sshKey) and C(bootArtifactsBaseURL) go into RV(image).
    type: str
    default: ""
  ssh_key:
    description:
      - The run's SSH key for the new hosts (C(day2_ssh_key)). With O(nodes_config) giving a different C(sshKey), the
        check fails naming both; else RV(image) carries whichever is set.
    type: str
    default: ""
  boot_artifacts_base_url:
    description:
      - The run's PXE base URL (C(day2_boot_artifacts_base_url)), checked against O(nodes_config)'s
        C(bootArtifactsBaseURL) as O(ssh_key) is.
    type: str
    default: ""
  cluster_name:
    description:
      - The name of the cluster meant (C(day2_cluster_name)). When set and the facts in O(cluster) name another
        cluster, the check fails naming both; so does O(base_domain) and O(openshift_version).
    type: str
    default: ""
  base_domain:
    description: The base domain of the cluster meant (C(day2_base_domain)).
    type: str
    default: ""
  openshift_version:
    description:
      - The version of the cluster meant (C(day2_openshift_version)), C(x.y) (any z-stream) or C(x.y.z).
    type: raw
    default: ""
  node_labels:
    description:
      - Labels of every new Node (C(day2_node_labels)); a host's C(node_labels) go over them, key by key. Keys and
        values are checked as the API server checks a Node's (a key C([prefix/]name), a value of at most 63
        characters; a key without value is the empty value).
    type: raw
    default: {}
  node_taints:
    description:
      - Taints of every new Node (C(day2_node_taints)), each C({key, value, effect}) or C(key=value:effect), the
        effect one of C(NoSchedule), C(PreferNoSchedule), C(NoExecute); a host's C(node_taints) replace those of the
        same key.
    type: raw
    default: []
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

- name: Check the hosts of group new_workers, their BMCs and the play's settings
  openshift_agent.day2.workers_check:
    cluster: "{{ ansible_facts.day1_cluster }}"
    boot_method: redfish
    iso_url: https://files.example.com/node.x86_64.iso
  register: workers

- name: Say what will be done
  ansible.builtin.debug:
    msg: "{{ workers.summary }}"

- name: Build their ISO
  openshift_agent.day2.day2_iso:
    hosts: "{{ workers.hosts }}"
    dest: /var/lib/day2
"""

RETURN = r"""
hosts:
  description:
    - One record per host still to add, the C(hosts) of the later steps (M(openshift_agent.day2.day2_iso) takes them
      as they are). Its keys are documented there; every key given (never C(bmc_password)) and C(address),
      C(addresses), C(state) (C(new), C(half-joined), C(replace)), C(labels), C(taints), C(source) and C(bmc).
    - C(address) is where the install is followed - C(ip) (for a DHCP host the address of its reservation), else
      C(ipv6), else the first static address of C(network_config); C(addresses) starts with it, then the host's
      other static addresses.
    - "C(labels) (C({key: value})) and C(taints) (C([{key, value, effect}]), C(value) left out when empty): the play's
      and the host's merged, to put on its Node as soon as it registers."
    - C(bmc), with O(boot_method=redfish), the BMC's endpoint C(bmc_base_url) (C(https://host[:port]), the scheme
      taken from the C(+http)/C(+https) suffix, https without one) and C(bmc_system_path) (C(/redfish/v1/Systems/<id>),
      or empty when the address names no system); null otherwise, and for a C(half-joined) host (not booted again).
  returned: success
  type: list
  elements: dict
joined:
  description:
    - The records (as in RV(hosts), C(state) C(joined)) of the hosts that are already Ready Nodes with their address;
      the join step converges their labels and taints.
  returned: success
  type: list
  elements: dict
summary:
  description:
    - The plan, one line each - the cluster, the new workers and the boot method, the agent-config hosts, the
      nodes-config hosts, the labels and taints, the hosts already joined, the variables left alone, the cluster's
      warnings. The preflight step
      prints it.
  returned: success
  type: list
  elements: str
boot:
  description:
    - How the hosts are booted, for the boot step - C(method) (O(boot_method)), C(iso_url) and C(serve_iso) (whether
      this run serves the ISO to the BMCs).
  returned: success
  type: dict
  sample: {method: redfish, iso_url: "", serve_iso: true}
agent_config_hosts:
  description: The hosts taken from O(agent_config).
  returned: success
  type: list
  elements: str
nodes_config_hosts:
  description: The hosts taken from O(nodes_config).
  returned: success
  type: list
  elements: str
image:
  description:
    - What the image step passes to M(openshift_agent.day2.day2_iso) - C(ssh_key) and C(boot_artifacts_base_url),
      each the setting (O(ssh_key), O(boot_artifacts_base_url)), else the C(sshKey) and C(bootArtifactsBaseURL) of
      O(nodes_config), else empty.
  returned: success
  type: dict
  sample: {ssh_key: "", boot_artifacts_base_url: ""}
ignored:
  description: Per host, the variables that are no host keys of this collection and were left alone.
  returned: success
  type: dict
  sample: {extra-worker-0: [rack_location]}
problems:
  description:
    - Every problem found, with C(host) (for a play variable the text "(play)", for the group "(inventory)"),
      C(field), C(value) (for a secret the text "(not shown)") and C(message).
  returned: failure
  type: list
  elements: dict
"""
