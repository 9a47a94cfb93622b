# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host keys as argument-spec options: what ansible-core checks and converts, and their documentation."""

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.openshift_agent.day2.plugins.doc_fragments.hosts import ModuleDocFragment
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import (
    ALLOW_LOOPBACK_VARIABLE,
    DERIVED_KEYS,
    HOST_KEYS,
    HOST_OPTIONS,
    INPUT_OPTIONS,
    SECRET_HOST_KEYS,
    loopback_allowed,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.nodes_config import build_nodes_configs

HOST = {
    "name": "extra-worker-0",
    "mac_address": "00:02:46:e3:9e:7c",
    "ip": "192.168.111.90",
    "prefix_length": 24,
    "gateway": "192.168.111.1",
}


def _validate(hosts, options=None):
    spec = {"hosts": {"type": "list", "elements": "dict", "options": options or HOST_OPTIONS}}
    return ArgumentSpecValidator(spec).validate({"hosts": hosts})


def _host_of(**changes):
    result = _validate([dict(HOST, **changes)])
    assert result.error_messages == []
    return result.validated_parameters["hosts"][0]


# --- what ansible-core does with the spec -------------------------------------------------------------


def test_numbers_given_as_text_become_integers():
    """-e extra vars and survey answers are text."""
    host = _host_of(prefix_length="24", vlan_id="100", ipv6="fd00::5", ipv6_prefix_length="64")
    assert (host["prefix_length"], host["vlan_id"], host["ipv6_prefix_length"]) == (24, 100, 64)
    network = build_nodes_configs([host], "x86_64")["x86_64"]["hosts"][0]["networkConfig"]
    assert network["interfaces"][1]["name"] == "eth0.100"


def test_a_comma_separated_dns_servers_text_is_split_and_rendered():
    host = _host_of(dns_servers="192.168.111.1, 192.168.111.2")
    network = build_nodes_configs([host], "x86_64")["x86_64"]["hosts"][0]["networkConfig"]
    assert network["dns-resolver"] == {"config": {"server": ["192.168.111.1", "192.168.111.2"]}}


def test_keys_left_out_are_none_and_mean_unset():
    host = _host_of()
    assert set(host) == set(HOST_OPTIONS) and host["vlan_id"] is None and host["interfaces"] is None
    assert list(build_nodes_configs([host], "x86_64")) == ["x86_64"]


@pytest.mark.parametrize(
    "changes, needle",
    [
        ({"mac_adress": "00:02:46:e3:9e:7c"}, "hosts.mac_adress"),
        ({"bmc_password": "s3cret!"}, "hosts.bmc_password"),
        ({"interfaces": [{"name": "eth0", "mac_address": "00:02:46:e3:9e:7c", "mtu": 9000}]}, "hosts.interfaces.mtu"),
        ({"vlan_id": "ten"}, "vlan_id"),
        ({"prefix_length": "24/32"}, "prefix_length"),
        ({"network_config": "eth0"}, "network_config"),
        ({"network_config": ["eth0"]}, "network_config"),
        ({"mac_address": None, "interfaces": "eth0"}, "interfaces"),
        ({"dns_servers": {"a": 1}}, "dns_servers"),
        ({"root_device_hints": "/dev/sda"}, "root_device_hints"),
    ],
)
def test_unknown_keys_and_wrong_types_are_refused_by_name(changes, needle):
    result = _validate([dict(HOST, **changes)])
    assert any(needle in message for message in result.error_messages), result.error_messages
    assert "s3cret!" not in str(result.error_messages)


@pytest.mark.parametrize("hosts", [None, {"name": "w"}, [HOST, "extra-worker-1"]])
def test_hosts_that_are_no_list_of_mappings_are_refused(hosts):
    assert (
        ArgumentSpecValidator(
            {"hosts": {"type": "list", "elements": "dict", "options": HOST_OPTIONS, "required": True}}
        )
        .validate({"hosts": hosts})
        .error_messages
    )


def test_name_is_required():
    result = _validate([{"mac_address": "00:02:46:e3:9e:7c"}])
    assert any("name" in message and "missing" in message for message in result.error_messages)


def test_a_user_gives_the_record_keys_and_the_bmc_password_which_no_record_holds():
    result = _validate([dict(HOST, bmc_address="redfish://127.0.0.1/x", bmc_password="s3cret!")], INPUT_OPTIONS)
    assert result.error_messages == []
    assert "s3cret!" in result._no_log_values  # pylint: disable=protected-access
    assert set(HOST_KEYS) == set(INPUT_OPTIONS) - {"name"}  # the name is the inventory name
    assert set(INPUT_OPTIONS) == (set(HOST_OPTIONS) - set(DERIVED_KEYS)) | {"bmc_password"}
    assert "bmc_password" not in HOST_OPTIONS and not set(DERIVED_KEYS) & set(HOST_KEYS)


def test_a_record_passes_the_spec_of_the_steps_that_take_it():
    record = dict(HOST, address="192.168.111.90", addresses=["192.168.111.90"], state="half-joined", source="inventory")
    record.update(labels={"zone": "a"}, taints=[{"key": "k", "effect": "NoSchedule"}], bmc=None)
    assert _validate([record]).error_messages == []
    assert any("state" in message for message in _validate([dict(record, state="joined")]).error_messages)


def test_a_host_that_passes_the_spec_can_still_have_bad_values():
    """The spec checks types; the checks check values, naming the host, the field and the fix."""
    with pytest.raises(InventoryError, match=r'host extra-worker-0: field "vlan_id" value 5000 is not a VLAN ID'):
        build_nodes_configs([_host_of(vlan_id="5000")], "x86_64")


# --- loopback addresses: the lab's, through the environment only ---------------------------------------


@pytest.mark.parametrize("value, allowed", [("1", True), ("0", False), ("", False), ("yes", False), (None, False)])
def test_loopback_is_allowed_only_by_the_environment_variable(value, allowed):
    environ = {} if value is None else {ALLOW_LOOPBACK_VARIABLE: value}
    assert ALLOW_LOOPBACK_VARIABLE == "OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK"
    assert loopback_allowed(environ) is allowed


def test_loopback_reads_the_process_environment(monkeypatch):
    monkeypatch.delenv(ALLOW_LOOPBACK_VARIABLE, raising=False)
    assert loopback_allowed() is False
    monkeypatch.setenv(ALLOW_LOOPBACK_VARIABLE, "1")
    assert loopback_allowed() is True


# --- the documentation is the spec ---------------------------------------------------------------------


def _documented(fragment):
    return yaml.safe_load(fragment)["options"]["hosts"]["suboptions"]


def _shape(options):
    """What must agree between documentation and spec, per key (nested suboptions included)."""
    shape = {}
    for key, option in options.items():
        shape[key] = (
            option.get("type", "str"),
            option.get("elements"),
            bool(option.get("required")),
            tuple(option.get("aliases") or ()),
            _shape(option.get("suboptions") or option.get("options") or {}),
        )
    return shape


def test_doc_fragment_documents_exactly_the_spec():
    options = HOST_OPTIONS
    documented = _documented(ModuleDocFragment.DOCUMENTATION)
    assert list(documented) == list(options)
    assert _shape(documented) == _shape(options)
    for key, option in documented.items():
        assert option.get("description"), "hosts.%s has no description" % key


def test_the_only_secret_host_key_is_a_no_log_option():
    assert [key for key, option in INPUT_OPTIONS.items() if option.get("no_log")] == ["bmc_password"]
    assert SECRET_HOST_KEYS == ("bmc_password",)
