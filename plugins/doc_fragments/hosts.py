# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

# The keys of a host record: the suboptions of a module's ``hosts`` option (the records workers_check returns, or
# hosts written by hand). The module documents ``hosts`` itself (description, type, elements, required); the fragment
# adds its suboptions. The argument spec is plugins/module_utils/_image/hosts.py HOST_OPTIONS; a unit test keeps the
# two equal (the keys a user gives are documented in docs/user-guide.md, which a unit test keeps equal to HOST_KEYS).


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  hosts:
    suboptions:
      name:
        description: The host name, which becomes the Node name (a lower-case DNS name such as C(extra-worker-0)).
        type: str
        required: true
      mac_address:
        description:
          - MAC address of the host's NIC, by which the image recognises the host.
          - Give it here or in O(hosts[].interfaces).
        type: str
      interfaces:
        description: The host's NICs, when it has several (instead of O(hosts[].mac_address)).
        type: list
        elements: dict
        suboptions:
          name:
            description: Interface name, for example C(eth0).
            type: str
          mac_address:
            description: MAC address of that interface.
            type: str
            aliases: [macAddress]
      interface:
        description: The interface that carries the addresses (default C(eth0), or the first of O(hosts[].interfaces)).
        type: str
      ip:
        description:
          - IPv4 address of the host, where its install is followed. With O(hosts[].prefix_length) (and the other
            static keys) a static address. Alone, with none of the static network keys (O(hosts[].prefix_length),
            O(hosts[].gateway), O(hosts[].dns_servers), O(hosts[].vlan_id), O(hosts[].ipv6),
            O(hosts[].ipv6_prefix_length), O(hosts[].ipv6_gateway), O(hosts[].network_config)), the host is a DHCP
            host - its nodes-config entry has no C(networkConfig) - and this is the address its DHCP reservation gives.
        type: str
      prefix_length:
        description: Prefix length of the IPv4 subnet, for example C(24).
        type: int
      gateway:
        description: IPv4 default gateway, inside the host's subnet.
        type: str
      dns_servers:
        description: DNS servers (IP addresses); a comma-separated text is split.
        type: list
        elements: str
      vlan_id:
        description: Put the addresses on a VLAN of this ID (1 to 4094) on top of O(hosts[].interface).
        type: int
      ipv6:
        description: Static IPv6 address; together with O(hosts[].ip) the host is dual stack.
        type: str
      ipv6_prefix_length:
        description: Prefix length of the IPv6 subnet, for example C(64).
        type: int
      ipv6_gateway:
        description: IPv6 default gateway (in the subnet, or link-local).
        type: str
      network_config:
        description:
          - Raw nmstate for the host, instead of the simple network keys; its ethernet interfaces must be listed in
            O(hosts[].interfaces).
        type: dict
      root_device_hints:
        description:
          - Which disk to install to. Keys C(deviceName), C(hctl), C(model), C(vendor), C(serialNumber),
            C(minSizeGigabytes), C(wwn), C(rotational).
        type: dict
      cpu_architecture:
        description:
          - The host's architecture (C(x86_64)/C(amd64), C(aarch64)/C(arm64), C(ppc64le), C(s390x)); default the
            control plane's. One image is built per architecture.
        type: str
      node_labels:
        description: "Labels of the new Node, C({key: value}), as the host gives them (see O(hosts[].labels))."
        type: dict
      node_taints:
        description: Taints of the new Node, as the host gives them (see O(hosts[].taints)).
        type: list
        elements: raw
      bmc_address:
        description: Redfish boot, the host's BMC, e.g. C(redfish-virtualmedia+https://bmc/redfish/v1/Systems/1).
        type: str
      bmc_username:
        description:
          - Redfish boot, the BMC user. The password is never part of a record; the boot step reads it where it is
            used.
        type: str
      bmc_verify_certs:
        description: Redfish boot, whether the BMC's TLS certificate is verified.
        type: bool
      address:
        description:
          - Worked out by M(openshift_agent.day2.workers_check), as are the keys below. Where the install is followed
            (O(hosts[].ip), else O(hosts[].ipv6), else the first static address of O(hosts[].network_config)).
        type: str
      addresses:
        description: Every static address of the host, O(hosts[].address) first (a serving certificate may name any).
        type: list
        elements: str
      state:
        description:
          - C(new); C(half-joined) when an earlier run stopped while the host joined (it is not booted again);
            C(replace) for the host C(replace_worker.yml) rebuilds.
        type: str
        choices: [new, half-joined, replace]
      labels:
        description: The labels the Node gets, C(day2_node_labels) with the host's O(hosts[].node_labels) over them.
        type: dict
      taints:
        description:
          - The taints the Node gets, each C({key, value, effect}) (C(value) left out when empty), C(day2_node_taints)
            with the host's O(hosts[].node_taints) replacing those of the same key.
        type: list
        elements: dict
      source:
        description: Where the host is defined, C(inventory) or the path of the day-1 agent-config.yaml.
        type: str
      bmc:
        description:
          - Redfish boot, the BMC's endpoint as the check worked it out (C(bmc_base_url), C(bmc_system_path)); null
            otherwise.
        type: dict
"""
