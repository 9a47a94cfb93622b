# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The later roles' variables, checked against the roles' own argument specs before anything is written."""

import pathlib

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.roles import (
    RoleValue,
    check_play_names,
    check_role_values,
    chosen_variable,
    known_play_variables,
    load_role_specs,
    settable_options,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

COLLECTION = pathlib.Path(__file__).resolve().parents[4]
SPECS = load_role_specs(str(COLLECTION / "roles"), ["node_image", "boot", "join"])
KNOWN = known_play_variables(str(COLLECTION))
CLUSTER = {"version": "4.21.1"}


def test_the_wired_options_and_workers_checks_own_are_left_out():
    assert "node_image_hosts" not in settable_options(SPECS["node_image"])
    assert "boot_hosts" not in settable_options(SPECS["boot"]) and "boot_artifacts" not in settable_options(
        SPECS["boot"]
    )
    assert "boot_method" not in settable_options(SPECS["boot"])  # workers_check's boot_method
    assert {"join_timeout", "join_install_timeout"} <= set(settable_options(SPECS["join"]))


def test_the_variable_the_user_set_is_named():
    boot = SPECS["boot"]
    default = boot.defaults["boot_bmc_verify_certs"]
    assert boot.fallback("boot_bmc_verify_certs") == "day2_bmc_verify_certs"
    # The role's own default, unchanged: the day2_* variable it reads, when set.
    assert chosen_variable(boot, "boot_bmc_verify_certs", {"boot_bmc_verify_certs": default}) is None
    assert (
        chosen_variable(boot, "boot_bmc_verify_certs", {"boot_bmc_verify_certs": default, "day2_bmc_verify_certs": 1})
        == "day2_bmc_verify_certs"
    )
    assert chosen_variable(boot, "boot_bmc_verify_certs", {"day2_bmc_verify_certs": 1}) == "day2_bmc_verify_certs"
    # The option itself, set by the user, wins.
    assert chosen_variable(boot, "boot_bmc_verify_certs", {"boot_bmc_verify_certs": "no", "day2_x": 1}) == (
        "boot_bmc_verify_certs"
    )
    assert chosen_variable(SPECS["join"], "join_timeout", {"join_timeout": 1800}) is None
    assert chosen_variable(SPECS["join"], "join_timeout", {"join_timeout": "abc"}) == "join_timeout"


def problems_of(*values, cluster=None):
    cluster = CLUSTER if cluster is None else cluster
    problems = Problems()
    check_role_values([RoleValue(*value) for value in values], SPECS, cluster, problems)
    return [(p["host"], p["field"], p["value"]) for p in problems.items], [p["message"] for p in problems.items]


def test_good_values_pass():
    assert problems_of(
        ("join", "join_timeout", "join_timeout", "600"),
        ("node_image", "node_image_pxe", "day2_pxe", True),
        ("node_image", "node_image_boot_artifacts_base_url", "day2_boot_artifacts_base_url", "http://h/boot"),
        ("node_image", "node_image_min_token_validity", "day2_min_token_validity", "36h"),
        ("boot", "boot_bmc_verify_certs", "day2_bmc_verify_certs", "false"),
    ) == ([], [])


def test_a_value_the_spec_refuses_names_the_variable_the_value_and_the_fix():
    found, messages = problems_of(
        ("join", "join_timeout", "join_timeout", "abc"),
        ("node_image", "node_image_force", "day2_force_rebuild", "sometimes"),
    )
    assert found == [("(play)", "join_timeout", "abc"), ("(play)", "day2_force_rebuild", "sometimes")]
    assert messages[0].startswith('play: field "join_timeout" value "abc" is refused by role join\'s option')
    assert messages[0].endswith("give join_timeout a value of type int")
    assert "role node_image's option node_image_force, set through day2_force_rebuild" in messages[1]


def test_what_the_spec_cannot_say_is_checked_too():
    found, messages = problems_of(
        ("node_image", "node_image_pxe", "day2_pxe", True),
        ("node_image", "node_image_min_token_validity", "day2_min_token_validity", "soon"),
        ("node_image", "node_image_boot_artifacts_base_url", "day2_boot_artifacts_base_url", "boot-server/x"),
        ("join", "join_install_timeout", "join_install_timeout", -5),
        cluster={"version": "4.17.3"},
    )
    assert [field for _host, field, _value in found] == [
        "day2_pxe",
        "day2_min_token_validity",
        "day2_boot_artifacts_base_url",
        "join_install_timeout",
    ]
    assert "this cluster runs 4.17.3 and its node-joiner has no --pxe (it came with 4.18)" in messages[0]
    assert "is not a duration" in messages[1] and "is not an http:// or https:// URL" in messages[2]
    assert "is negative" in messages[3]
    assert problems_of(("node_image", "node_image_pxe", "day2_pxe", True), cluster={"version": "4.18.0"}) == ([], [])


def test_a_secret_option_is_never_shown():
    specs = {"r": type(SPECS["join"])("r", {"r_password": {"type": "int"}}, {})}
    problems = Problems()
    check_role_values([RoleValue("r", "r_password", "r_password", "hunter2")], specs, CLUSTER, problems)
    assert problems.items[0]["value"] == "(not shown)" and "hunter2" not in str(problems.items)


def test_play_variables_named_like_the_collections_are_typos():
    problems = Problems()
    defined = {
        "day2_boot_methd": "redfish",
        "join_timout": 5,
        "boot_iso": "http://x",
        "day2_my_own_thing": 1,  # not like any: left alone
        "other_var": 1,
        "boot_method": "manual",  # known
    }
    check_play_names(defined, KNOWN, problems)
    assert [(p["field"], p["message"].rsplit("; ", 1)[1]) for p in problems.items] == [
        ("boot_iso", 'did you mean "boot_iso_url"? Rename it'),
        ("day2_boot_methd", 'did you mean "day2_boot_method"? Rename it'),
        ("join_timout", 'did you mean "join_timeout"? Rename it'),
    ]


@pytest.mark.parametrize(
    "name",
    [
        "day2_boot_method",  # a role default reads it
        "day2_auth",  # playbooks/vars/auth.yml
        "day2_old_node",  # registered by replace_worker.yml
        "day2_drain_timeout",  # play vars of replace_worker.yml
        "boot_ejects",  # set by the boot role's tasks
        "node_image_result",  # registered by the node_image role
        "preflight_workers",
        "preflight_check_roles",
    ],
)
def test_the_collections_own_play_variables_are_known(name):
    assert name in KNOWN
