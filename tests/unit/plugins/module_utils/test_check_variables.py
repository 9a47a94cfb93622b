# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which host variables are mistakes: the typo rule, misplaced settings, and what is left alone; and the play's
settings, checked against the role's argument spec before anything is written."""

import pathlib

import pytest
from ansible.module_utils.common.yaml import yaml_load

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import (
    check_play_names,
    check_settings,
    close_key,
    load_settings,
    normalized,
    sort_variables,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_KEYS

KEYS = HOST_KEYS
COLLECTION = pathlib.Path(__file__).resolve().parents[4]
SETTINGS, KNOWN = load_settings(str(COLLECTION))
CLUSTER = {"version": "4.21.1"}


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
    return sort_variables(name, base, lambda key: base[key] if key != "broken" else read(key), KEYS, SHARED)


def typos(found):
    """(name, the key it is said to mean, value shown) of each misspelt variable."""
    return [
        (p["field"], p["message"].split('did you mean "')[1].split('"')[0], p["value"])
        for p in found.problems
        if "is not a host variable of this collection" in p["message"]
    ]


def misplaced(found):
    return [(p["field"], p["value"]) for p in found.problems if "is a play variable of this collection" in p["message"]]


def test_variables_are_sorted():
    found = sort(ip="192.168.111.20", gatway="x", rack="r12", kubeconfig="/k", k8s_host="h", ansible_user="u")
    assert found.settings == {"ip": "192.168.111.20"}
    assert typos(found) == [("gatway", "gateway", "x")] and len(found.problems) == 1
    assert found.problems[0]["message"] == (
        'host w: field "gatway" value "x" is not a host variable of this collection; did you mean "gateway"? Rename it'
    )
    assert found.foreign == ["rack"]  # the login variables and Ansible's own are nobody's mistake
    assert misplaced(found) == []


def test_a_variable_that_only_feeds_another_is_left_alone_and_a_misspelling_still_refused():
    """Ansible's vault layout: bmc_password: "{{ vault_bmc_password }}" in group_vars/<group>/vars.yml, the value in
    an encrypted vault.yml beside it; what another variable uses in a template, or an encrypted file holds, only
    feeds another variable (the action plugin finds them: ``feeding``)."""
    variables = {"bmc_password": "pw", "vault_bmc_password": "pw", "bmc_password_rack2": "x", "bmc_passwrd": "y"}
    found = sort_variables("w", variables, variables.__getitem__, HOST_KEYS, set(), feeding={"bmc_password_rack2"})
    assert found.settings == {"bmc_password": "pw"}
    assert found.foreign == ["bmc_password_rack2", "vault_bmc_password"]
    assert [(p["field"], p["value"]) for p in found.problems] == [("bmc_passwrd", "(not shown)")]
    assert 'did you mean "bmc_password"' in found.problems[0]["message"]
    without = sort_variables("w", variables, variables.__getitem__, HOST_KEYS, set())  # the check as it was
    assert sorted(p["field"] for p in without.problems) == ["bmc_password_rack2", "bmc_passwrd"]


def test_settings_set_on_the_hosts_only_are_misplaced():
    found = sort(day2_boot_method="redfish", day2_join_timeout=5, day2_workdir="/shared", join_timeout=5)
    assert misplaced(found) == [("day2_boot_method", "redfish"), ("day2_join_timeout", 5)]  # day2_workdir: shared
    assert len(found.problems) == 2 and found.problems[0]["message"].endswith(
        "the roles read it from the play, not from the new workers: set it for group all, in the play or with -e"
    )
    assert found.foreign == ["join_timeout"]  # no setting of this collection: every one is day2_*


def test_a_secret_is_never_shown_even_misspelt():
    found = sort(bmc_pasword="s3cret", bmc_passwd="s3cret", day2_api_token="t0ken", broken_pass="x")
    shown = {name: value for name, _key, value in typos(found)} | dict(misplaced(found))
    assert "s3cret" not in str(shown) and "t0ken" not in str(shown)
    assert shown["bmc_pasword"] == shown["bmc_passwd"] == "(not shown)"


def test_a_value_that_cannot_be_templated_is_said_so():
    found = sort(broken="{{ nope }}", gatway="x")
    assert found.foreign == ["broken"]
    found = sort_variables("w", ["gatway"], lambda key: (i for i in ()).throw(Day2Error("undefined")), KEYS, set())
    assert typos(found) == [("gatway", "gateway", "(cannot be templated)")]


# --- the settings ------------------------------------------------------------------------------------------------


def test_the_settings_are_the_main_entry_points_options_and_the_defaults_equal_their_specs():
    specs = yaml_load((COLLECTION / "roles/day2/meta/argument_specs.yml").read_text())["argument_specs"]
    defaults = yaml_load((COLLECTION / "roles/day2/defaults/main.yml").read_text())
    assert specs["main"]["options"] == SETTINGS and all(name.startswith("day2_") for name in SETTINGS)
    assert defaults == {name: spec.get("default") for name, spec in SETTINGS.items()}
    for entry, spec in specs.items():  # every step's setting is one of main's, with the same spec
        for name, option in (spec.get("options") or {}).items():
            assert name not in SETTINGS or option == SETTINGS[name], (entry, name)


def settings_problems(cluster=None, **values):
    problems = Problems()
    check_settings(values, SETTINGS, CLUSTER if cluster is None else cluster, problems)
    return [(p["host"], p["field"], p["value"]) for p in problems.items], [p["message"] for p in problems.items]


def test_good_values_and_the_defaults_pass():
    assert settings_problems(
        day2_join_timeout="600",
        day2_pxe=True,
        day2_boot_artifacts_base_url="http://h/boot",
        day2_min_token_validity="36h",
        day2_bmc_verify_certs="false",
        day2_serve_iso=None,
    ) == ([], [])
    assert settings_problems(**{name: spec.get("default") for name, spec in SETTINGS.items()}) == ([], [])


def test_a_value_the_spec_refuses_names_the_setting_the_value_and_the_type():
    found, messages = settings_problems(day2_join_timeout="abc", day2_force_rebuild="sometimes", day2_boot_method="pxe")
    assert found == [
        ("(play)", "day2_boot_method", "pxe"),
        ("(play)", "day2_force_rebuild", "sometimes"),
        ("(play)", "day2_join_timeout", "abc"),
    ]
    assert messages[0].endswith("set day2_boot_method to one of: manual, redfish")
    assert messages[1].startswith('play: field "day2_force_rebuild" value "sometimes" is refused by the role')
    assert "unable to convert to bool" in messages[1]
    assert messages[2].endswith("give day2_join_timeout a value of type int")


def test_what_the_spec_cannot_say_is_checked_too():
    found, messages = settings_problems(
        {"version": "4.17.3"},
        day2_pxe=True,
        day2_min_token_validity="soon",
        day2_boot_artifacts_base_url="boot-server/x",
        day2_install_timeout=-5,
        day2_max_failed_hosts="-1",
    )
    assert [field for _host, field, _value in found] == [
        "day2_boot_artifacts_base_url",
        "day2_install_timeout",
        "day2_max_failed_hosts",
        "day2_min_token_validity",
        "day2_pxe",
    ]
    assert "is not an http:// or https:// URL" in messages[0]
    assert "is negative" in messages[1] and "is negative" in messages[2]
    assert "is not a duration" in messages[3]
    assert "this cluster runs 4.17.3 and its node-joiner has no --pxe (it came with 4.18)" in messages[4]
    assert settings_problems({"version": "4.18.0"}, day2_pxe=True) == ([], [])
    assert settings_problems({"version": "unknown"}, day2_pxe=True) == ([], [])


def test_a_boot_artifacts_base_url_needs_pxe_on_every_platform():
    url = "http://boot.example.com/rhcos"
    for platform in ("BareMetal", "External"):
        found, messages = settings_problems(
            {"version": "4.21.1", "platform": platform}, day2_boot_artifacts_base_url=url
        )
        assert found == [("(play)", "day2_boot_artifacts_base_url", url)]
        assert "used by node-joiner only for PXE files, on every platform" in messages[0]
        assert messages[0].endswith("set day2_pxe: true, or drop it")
    assert settings_problems({"version": "4.21.1"}, day2_boot_artifacts_base_url=url, day2_pxe="yes") == ([], [])


def test_a_secret_setting_is_never_shown():
    problems = Problems()
    check_settings({"day2_api_token": "hunter2"}, {"day2_api_token": {"type": "int"}}, CLUSTER, problems)
    assert problems.items[0]["value"] == "(not shown)" and "hunter2" not in str(problems.items)


def test_play_variables_named_like_the_collections_are_typos():
    problems = Problems()
    defined = {
        "day2_boot_methd": "redfish",
        "day2_join_timout": 5,
        "DAY2_PXE": True,  # case
        "day2BootMethod": "redfish",  # camelCase
        "day2_max_failed": 2,  # the beginning of one
        "day2_api_tokn": "t0ken",  # a secret's value is not shown
        "day2_my_own_thing": 1,  # not like any: left alone
        "join_timeout": 5,  # not the collection's
        "day2_boot_method": "manual",  # known
    }
    check_play_names(defined, KNOWN | {"day2_api_token"}, problems)
    assert [(p["field"], p["value"], p["message"].rsplit("; ", 1)[1]) for p in problems.items] == [
        ("DAY2_PXE", True, 'did you mean "day2_pxe"? Rename it'),
        ("day2BootMethod", "redfish", 'did you mean "day2_boot_method"? Rename it'),
        ("day2_api_tokn", "(not shown)", 'did you mean "day2_api_token"? Rename it'),
        ("day2_boot_methd", "redfish", 'did you mean "day2_boot_method"? Rename it'),
        ("day2_join_timout", 5, 'did you mean "day2_join_timeout"? Rename it'),
        ("day2_max_failed", 2, 'did you mean "day2_max_failed_hosts"? Rename it'),
    ]


@pytest.mark.parametrize(
    "name",
    [
        "day2_boot_method",  # a setting
        "day2_plan",  # what a step takes from an earlier one
        "day2_cluster",  # set by the preflight step
        "day2_auth",  # playbooks/vars/auth.yml
        "day2_group_vars",
        "day2_old_node",  # registered by replace_worker.yml
        "day2_drain_timeout",  # play vars of replace_worker.yml
    ],
)
def test_the_collections_own_play_variables_are_known(name):
    assert name in KNOWN
