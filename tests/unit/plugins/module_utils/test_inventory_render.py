# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Good inventories become exactly the nodes-config.yaml node-joiner reads, rendered canonically."""

import copy

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    HOST_KEYS,
    HOST_OPTIONS,
    normalize_architecture,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import (
    build_nodes_configs,
    render_nodes_config,
)

MAC0 = "00:02:46:e3:9e:7c"
MAC1 = "00:02:46:e3:9e:7d"

V4_HOST = {
    "name": "extra-worker-0",
    "mac_address": MAC0,
    "ip": "192.168.111.90",
    "prefix_length": 24,
    "gateway": "192.168.111.1",
    "dns_servers": ["192.168.111.1"],
    "root_device_hints": {"deviceName": "/dev/sda"},
}

V4_ROUTE = {
    "destination": "0.0.0.0/0",
    "next-hop-address": "192.168.111.1",
    "next-hop-interface": "eth0",
    "table-id": 254,
}
V6_ROUTE = {"destination": "::/0", "next-hop-address": "fd00:1101::1", "next-hop-interface": "eth0", "table-id": 254}
V4_SETTINGS = {"enabled": True, "dhcp": False, "address": [{"ip": "192.168.111.90", "prefix-length": 24}]}
V6_SETTINGS = {"enabled": True, "dhcp": False, "address": [{"ip": "fd00:1101::90", "prefix-length": 64}]}


def _only_config(hosts, architecture="amd64", **kwargs):
    configs = build_nodes_configs(hosts, architecture, **kwargs)
    assert len(configs) == 1
    return next(iter(configs.values()))


def test_static_ipv4_is_the_facts_example():
    config = _only_config([V4_HOST], ssh_key="ssh-ed25519 AAAAC3Nza lab\n")
    assert config == {
        "cpuArchitecture": "x86_64",
        "sshKey": "ssh-ed25519 AAAAC3Nza lab",
        "hosts": [
            {
                "hostname": "extra-worker-0",
                "role": "worker",
                "rootDeviceHints": {"deviceName": "/dev/sda"},
                "interfaces": [{"name": "eth0", "macAddress": MAC0}],
                "networkConfig": {
                    "interfaces": [
                        {"name": "eth0", "type": "ethernet", "state": "up", "mac-address": MAC0, "ipv4": V4_SETTINGS}
                    ],
                    "dns-resolver": {"config": {"server": ["192.168.111.1"]}},
                    "routes": {"config": [V4_ROUTE]},
                },
            }
        ],
    }


def test_static_ipv6_only_disables_ipv4():
    host = {
        "name": "extra-worker-0",
        "mac_address": MAC0.upper(),
        "ipv6": "fd00:1101:0::90",
        "ipv6_prefix_length": 64,
        "ipv6_gateway": "fd00:1101::1",
        "dns_servers": ["fd00:1101::1"],
    }
    config = _only_config([host])
    assert config["hosts"] == [
        {
            "hostname": "extra-worker-0",
            "role": "worker",
            "interfaces": [{"name": "eth0", "macAddress": MAC0}],
            "networkConfig": {
                "interfaces": [
                    {
                        "name": "eth0",
                        "type": "ethernet",
                        "state": "up",
                        "mac-address": MAC0,
                        "ipv4": {"enabled": False},
                        "ipv6": V6_SETTINGS,
                    }
                ],
                "dns-resolver": {"config": {"server": ["fd00:1101::1"]}},
                "routes": {"config": [V6_ROUTE]},
            },
        }
    ]


def test_dual_stack_has_both_families_and_both_default_routes():
    host = dict(
        V4_HOST,
        ipv6="fd00:1101::90",
        ipv6_prefix_length=64,
        ipv6_gateway="fd00:1101::1",
        dns_servers=["192.168.111.1", "fd00:1101::1"],
    )
    network = _only_config([host])["hosts"][0]["networkConfig"]
    assert network == {
        "interfaces": [
            {
                "name": "eth0",
                "type": "ethernet",
                "state": "up",
                "mac-address": MAC0,
                "ipv4": V4_SETTINGS,
                "ipv6": V6_SETTINGS,
            }
        ],
        "dns-resolver": {"config": {"server": ["192.168.111.1", "fd00:1101::1"]}},
        "routes": {"config": [V4_ROUTE, V6_ROUTE]},
    }


def test_vlan_carries_the_addresses_on_top_of_the_base_interface():
    host = dict(V4_HOST, interface="eno1", vlan_id="120")
    del host["root_device_hints"]
    assert _only_config([host])["hosts"][0]["networkConfig"] == {
        "interfaces": [
            {
                "name": "eno1",
                "type": "ethernet",
                "state": "up",
                "mac-address": MAC0,
                "ipv4": {"enabled": False},
                "ipv6": {"enabled": False},
            },
            {
                "name": "eno1.120",
                "type": "vlan",
                "state": "up",
                "vlan": {"base-iface": "eno1", "id": 120},
                "ipv4": V4_SETTINGS,
            },
        ],
        "dns-resolver": {"config": {"server": ["192.168.111.1"]}},
        "routes": {"config": [dict(V4_ROUTE, **{"next-hop-interface": "eno1.120"})]},
    }


@pytest.mark.parametrize("unset", [None, ""], ids=["absent", "empty-survey-answers"])
@pytest.mark.parametrize("ip", [None, "192.168.111.90"], ids=["no-ip", "reserved-ip"])
def test_a_dhcp_host_has_no_network_config(unset, ip):
    """No static network key: no networkConfig at all, as in node-joiner's own add-nodes test
    (cmd/node-joiner/testdata/add-nodes.txt); the ip (the DHCP reservation's) goes nowhere in the ISO."""
    host = {"name": "extra-worker-0", "mac_address": MAC0, "ip": ip}
    if unset is not None:
        host.update(
            prefix_length=unset,
            gateway=unset,
            dns_servers=unset,
            vlan_id=unset,
            root_device_hints=unset,
            cpu_architecture=unset,
        )
    config = _only_config([host])
    assert config["hosts"] == [
        {"hostname": "extra-worker-0", "role": "worker", "interfaces": [{"name": "eth0", "macAddress": MAC0}]}
    ]
    assert "networkConfig" not in render_nodes_config(config) and "192.168.111.90" not in render_nodes_config(config)


def test_a_dhcp_host_with_several_nics_lists_them_all():
    nics = [{"name": "eno1", "mac_address": MAC0}, {"name": "eno2", "mac_address": MAC1}]
    config = _only_config([{"name": "extra-worker-0", "interfaces": nics, "ip": "192.168.111.90"}])
    assert config["hosts"][0]["interfaces"] == [
        {"name": "eno1", "macAddress": MAC0},
        {"name": "eno2", "macAddress": MAC1},
    ]
    assert "networkConfig" not in config["hosts"][0]


def test_raw_nmstate_passes_through_unchanged():
    network_config = {
        "interfaces": [
            {"name": "eno1", "type": "ethernet", "state": "up", "mac-address": MAC0.upper()},
            {"name": "eno2", "type": "ethernet", "state": "up", "mac-address": MAC1},
            {
                "name": "bond0",
                "type": "bond",
                "state": "up",
                "link-aggregation": {"mode": "active-backup", "port": ["eno1", "eno2"]},
                "ipv4": {"enabled": True, "dhcp": False, "address": [{"ip": "192.168.111.90", "prefix-length": 24}]},
            },
        ],
        "routes": {"config": [dict(V4_ROUTE, **{"next-hop-interface": "bond0"})]},
    }
    host = {
        "name": "extra-worker-0",
        "network_config": network_config,
        "interfaces": [{"name": "eno1", "mac_address": MAC0}, {"name": "eno2", "macAddress": MAC1}],
    }
    # as day2_iso gets it: macAddress (the nodes-config spelling) is an alias of mac_address
    spec = {"hosts": {"type": "list", "elements": "dict", "options": HOST_OPTIONS}}
    validated = ArgumentSpecValidator(spec).validate({"hosts": [host]})
    assert validated.error_messages == []
    config = _only_config(validated.validated_parameters["hosts"])
    assert config["hosts"][0]["interfaces"] == [
        {"name": "eno1", "macAddress": MAC0},
        {"name": "eno2", "macAddress": MAC1},
    ]
    assert config["hosts"][0]["networkConfig"] == network_config
    # The output is a copy: editing it must not change the caller's inventory.
    config["hosts"][0]["networkConfig"]["interfaces"].pop()
    assert len(network_config["interfaces"]) == 3


def test_raw_nmstate_with_mac_address_shorthand():
    network_config = {
        "interfaces": [
            {
                "name": "eth0",
                "type": "ethernet",
                "state": "up",
                "mac-address": MAC0,
                "ipv4": {"enabled": True, "dhcp": True},
            }
        ]
    }
    host = {"name": "extra-worker-0", "mac_address": MAC0, "network_config": network_config}
    assert _only_config([host])["hosts"][0]["interfaces"] == [{"name": "eth0", "macAddress": MAC0}]


def test_multiple_interfaces_first_one_carries_the_addresses_by_default():
    host = dict(V4_HOST, interfaces=[{"name": "eno1", "mac_address": MAC0}, {"name": "eno2", "mac_address": MAC1}])
    del host["mac_address"]
    config_host = _only_config([host])["hosts"][0]
    assert config_host["interfaces"] == [{"name": "eno1", "macAddress": MAC0}, {"name": "eno2", "macAddress": MAC1}]
    assert config_host["networkConfig"]["interfaces"] == [
        {"name": "eno1", "type": "ethernet", "state": "up", "mac-address": MAC0, "ipv4": V4_SETTINGS},
        {
            "name": "eno2",
            "type": "ethernet",
            "state": "up",
            "mac-address": MAC1,
            "ipv4": {"enabled": False},
            "ipv6": {"enabled": False},
        },
    ]
    assert config_host["networkConfig"]["routes"]["config"][0]["next-hop-interface"] == "eno1"


def test_multiple_interfaces_named_primary():
    host = dict(
        V4_HOST,
        interface="eno2",
        interfaces=[{"name": "eno1", "mac_address": MAC0}, {"name": "eno2", "mac_address": MAC1}],
    )
    del host["mac_address"]
    nm_interfaces = _only_config([host])["hosts"][0]["networkConfig"]["interfaces"]
    assert [entry.get("ipv4") for entry in nm_interfaces] == [{"enabled": False}, V4_SETTINGS]


def test_mixed_architectures_give_one_config_each():
    arm = {"name": "extra-worker-1", "mac_address": MAC1, "cpu_architecture": "arm64"}
    configs = build_nodes_configs(
        [arm, V4_HOST], "x86_64", ssh_key="ssh-ed25519 K", boot_artifacts_base_url="http://127.0.0.1:8080/pxe"
    )
    assert sorted(configs) == ["aarch64", "x86_64"]
    for architecture, config in configs.items():
        assert list(config) == ["cpuArchitecture", "sshKey", "bootArtifactsBaseURL", "hosts"]
        assert config["cpuArchitecture"] == architecture
        assert config["bootArtifactsBaseURL"] == "http://127.0.0.1:8080/pxe"
    assert [h["hostname"] for h in configs["aarch64"]["hosts"]] == ["extra-worker-1"]
    assert [h["hostname"] for h in configs["x86_64"]["hosts"]] == ["extra-worker-0"]


@pytest.mark.parametrize(
    "given, expected",
    [
        ("amd64", "x86_64"),
        ("x86_64", "x86_64"),
        ("arm64", "aarch64"),
        ("AArch64", "aarch64"),
        ("ppc64le", "ppc64le"),
        ("s390x", "s390x"),
        ("i386", None),
        (None, None),
    ],
)
def test_architecture_names(given, expected):
    assert normalize_architecture(given) == expected


def test_go_architecture_names_for_cluster_and_host():
    host = dict(V4_HOST, cpu_architecture="amd64")
    configs = build_nodes_configs([host], "arm64")
    assert list(configs) == ["x86_64"]
    assert list(build_nodes_configs([V4_HOST], "arm64")) == ["aarch64"]


def test_lab_host_on_loopback():
    host = {
        "name": "extra-worker-0",
        "mac_address": MAC0,
        "ip": "127.0.111.20",
        "prefix_length": "24",
        "gateway": "127.0.111.1",
        "dns_servers": "127.0.111.1, 127.0.111.2",
    }
    # as day2_iso's argument spec gives it: "24" an integer, the text a list
    (host,) = (
        ArgumentSpecValidator({"hosts": {"type": "list", "elements": "dict", "options": HOST_OPTIONS}})
        .validate({"hosts": [host]})
        .validated_parameters["hosts"]
    )
    network = _only_config([host], allow_loopback=True)["hosts"][0]["networkConfig"]
    assert network["interfaces"][0]["ipv4"]["address"] == [{"ip": "127.0.111.20", "prefix-length": 24}]
    assert network["dns-resolver"] == {"config": {"server": ["127.0.111.1", "127.0.111.2"]}}


def test_bmc_keys_are_not_rendered():
    host = dict(
        V4_HOST,
        bmc_address="redfish://127.0.0.1:8000/redfish/v1/Systems/1",
        bmc_username="admin",
        bmc_password="s3cret!",
        bmc_verify_certs=False,
    )
    text = render_nodes_config(_only_config([host]))
    assert "bmc" not in text and "s3cret!" not in text


def test_the_host_keys_are_every_key_a_user_gives():
    assert len(HOST_KEYS) == len(set(HOST_KEYS))
    assert set(HOST_KEYS) == {
        "mac_address",
        "interfaces",
        "interface",
        "ip",
        "prefix_length",
        "gateway",
        "dns_servers",
        "vlan_id",
        "ipv6",
        "ipv6_prefix_length",
        "ipv6_gateway",
        "network_config",
        "root_device_hints",
        "cpu_architecture",
        "bmc_address",
        "bmc_username",
        "bmc_password",
        "bmc_verify_certs",
        "node_labels",
        "node_taints",
    }


# --- canonical rendering (what the inputs digest is made of) ----------------------------------


def test_rendering_reads_back_to_the_same_dict():
    config = _only_config(
        [V4_HOST, dict(V4_HOST, name="extra-worker-1", mac_address="00:11:22:33:44:55", ip="192.168.111.91")],
        ssh_key="ssh-ed25519 " + "A" * 600,
    )
    text = render_nodes_config(config)
    assert yaml.safe_load(text) == config
    # All-digit MACs would be base-60 numbers to a YAML 1.1 reader if they were not quoted.
    assert 'macAddress: "00:11:22:33:44:55"' in text
    # Long keys stay on one line.
    assert len([line for line in text.splitlines() if line.startswith("sshKey:")]) == 1


def test_rendering_key_order_is_fixed():
    text = render_nodes_config(_only_config([V4_HOST], ssh_key="k"))
    top = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith((" ", "-"))]
    assert top == ["cpuArchitecture", "sshKey", "hosts"]
    assert (
        text.index("hostname:")
        < text.index("role:")
        < text.index("rootDeviceHints:")
        < text.index("  interfaces:")
        < text.index("networkConfig:")
    )


def _reversed_dicts(value):
    if isinstance(value, dict):
        return {key: _reversed_dicts(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_dicts(item) for item in value]
    return value


def test_rendering_ignores_dict_order_and_host_order():
    second = dict(V4_HOST, name="extra-worker-1", mac_address=MAC1, ip="192.168.111.91")
    config = _only_config([V4_HOST, second])
    shuffled = _only_config([_reversed_dicts(second), _reversed_dicts(V4_HOST)])
    assert render_nodes_config(config) == render_nodes_config(shuffled)
    assert render_nodes_config(config) == render_nodes_config(_reversed_dicts(copy.deepcopy(config)))


def test_rendering_changes_with_content():
    base = render_nodes_config(_only_config([V4_HOST]))
    assert render_nodes_config(_only_config([dict(V4_HOST, ip="192.168.111.99")])) != base
    assert render_nodes_config(_only_config([V4_HOST], ssh_key="ssh-ed25519 other")) != base
    assert render_nodes_config(_only_config([V4_HOST])) == base
