# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which host variables are mistakes: the typo rule, misplaced play variables, and what is left alone."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import (
    close_key,
    normalized,
    sort_variables,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import known_host_keys

KEYS = known_host_keys()


@pytest.mark.parametrize(
    "name,key",
    [
        # misspelt (difflib, word by word)
        ("gatway", "gateway"),
        ("dns_server", "dns_servers"),
        ("root_device_hint", "root_device_hints"),
        ("bmc_pasword", "bmc_password"),
        ("ipv6_gatway", "ipv6_gateway"),
        ("mac_adress", "mac_address"),
        ("prefix_lenght", "prefix_length"),
        ("ip6", "ipv6"),
        # case, '-' / '_' and camelCase
        ("rootDeviceHints", "root_device_hints"),
        ("macAddress", "mac_address"),
        ("MAC_ADDRESS", "mac_address"),
        ("Gateway", "gateway"),
        ("vlanid", "vlan_id"),
        ("dns-servers", "dns_servers"),
        ("networkConfig", "network_config"),
        # the beginning of a key
        ("mac", "mac_address"),
        ("bmc_user", "bmc_username"),
        ("prefix", "prefix_length"),
        ("vlan", "vlan_id"),
        ("dns", "dns_servers"),
        ("cpu_arch", "cpu_architecture"),
        # a key with more words, or the end of one
        ("ip_address", "ip"),
        ("gateway_ip", "gateway"),
        ("default_gateway", "gateway"),
        ("dns_servers_list", "dns_servers"),
        ("username", "bmc_username"),
        # other names for the same thing
        ("netmask", "prefix_length"),
        ("ipv4", "ip"),
        ("gw", "gateway"),
        ("nameservers", "dns_servers"),
        ("architecture", "cpu_architecture"),
        ("ipmi_address", "bmc_address"),
        ("bmc_url", "bmc_address"),
        ("labels", "node_labels"),
        ("nodeLabels", "node_labels"),
        ("node_taint", "node_taints"),
    ],
)
def test_a_name_like_a_host_key_is_that_keys_mistake(name, key):
    assert close_key(name, KEYS) == key


@pytest.mark.parametrize(
    "name",
    ["ntp_servers", "rack", "rack_location", "owner", "datacenter", "serial", "timezone", "node_pool", "bios", "os"],
)
def test_other_names_are_nobodys_mistake(name):
    assert close_key(name, KEYS) is None


def test_normalized_names():
    assert normalized("rootDeviceHints") == "root_device_hints"
    assert normalized("Root-Device-Hints") == "root_device_hints"
    assert normalized("ROOT_DEVICE_HINTS") == "root_device_hints"


SHARED = {"day2_workdir", "ntp_servers"}


def sort(name="w", **variables):
    def read(key):
        if key == "broken":
            raise Day2Error("undefined variable")
        return variables[key]

    base = {"ansible_host": "x", "inventory_hostname": name, "group_names": ["new_workers"]}
    base.update(variables)
    return sort_variables(
        name, base, lambda key: base[key] if key != "broken" else read(key), KEYS, SHARED, {"join_timeout"}
    )


def test_variables_are_sorted():
    found = sort(ip="192.168.111.20", gatway="x", rack="r12", kubeconfig="/k", k8s_host="h", ansible_user="u")
    assert found.settings == {"ip": "192.168.111.20"}
    assert found.typos == [("gatway", "gateway", "x")]
    assert found.foreign == ["rack"]  # the login variables and Ansible's own are nobody's mistake
    assert found.misplaced == []


def test_play_variables_set_on_the_hosts_only_are_misplaced():
    found = sort(day2_boot_method="redfish", join_timeout=5, day2_workdir="/shared")
    assert found.misplaced == [("day2_boot_method", "redfish"), ("join_timeout", 5)]  # day2_workdir: shared


def test_a_secret_is_never_shown_even_misspelt():
    found = sort(bmc_pasword="s3cret", bmc_passwd="s3cret", day2_api_token="t0ken", broken_pass="x")
    shown = {name: value for name, _key, value in found.typos} | dict(found.misplaced)
    assert "s3cret" not in str(shown) and "t0ken" not in str(shown)
    assert shown["bmc_pasword"] == shown["bmc_passwd"] == "(not shown)"


def test_a_value_that_cannot_be_templated_is_said_so():
    found = sort(broken="{{ nope }}", gatway="x")
    assert found.foreign == ["broken"]
    found = sort_variables("w", ["gatway"], lambda key: (i for i in ()).throw(Day2Error("undefined")), KEYS, set())
    assert found.typos == [("gatway", "gateway", "(cannot be templated)")]
