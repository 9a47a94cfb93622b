# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boot settings: the boot method, the ISO's URL, and the BMC addresses a Redfish boot can use."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._boot.redfish import (
    REDFISH_TYPES,
    SCHEMES,
    Bmc,
    bmc_endpoint,
    check_bmc,
    check_boot_settings,
    is_http_url,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

SYSTEM = "/redfish/v1/Systems/1"


@pytest.mark.parametrize("kind", REDFISH_TYPES)
@pytest.mark.parametrize("transport", ["", "+https"])
def test_every_redfish_type_of_metal3_is_taken(kind, transport):
    assert bmc_endpoint("%s%s://bmc.example.com%s" % (kind, transport, SYSTEM)) == ("https://bmc.example.com", SYSTEM)


@pytest.mark.parametrize("kind", REDFISH_TYPES)
def test_plain_http_redfish_is_refused_with_the_https_address(kind):
    # metal3 takes +http, but community.general's redfish modules, which the boot step uses, talk HTTPS only.
    with pytest.raises(ValueError) as refused:
        bmc_endpoint("%s+http://bmc.example.com%s" % (kind, SYSTEM))
    what, fix = refused.value.args
    assert what.startswith("is a plain-HTTP Redfish address")
    assert fix.startswith("write redfish-virtualmedia+https://bmc.example.com%s" % SYSTEM)


@pytest.mark.parametrize(
    "address,endpoint",
    [
        ("https://10.0.0.1", ("https://10.0.0.1", "")),
        ("https://10.0.0.1:8000/redfish/v1/", ("https://10.0.0.1:8000", "")),
        (
            "redfish+https://[fd00::1]:8000/redfish/v1/Systems/abc/",
            ("https://[fd00::1]:8000", "/redfish/v1/Systems/abc"),
        ),
        (
            "idrac-virtualmedia://idrac/redfish/v1/Systems/System.Embedded.1",
            ("https://idrac", "/redfish/v1/Systems/System.Embedded.1"),
        ),
        ("REDFISH-VIRTUALMEDIA+HTTPS://bmc/redfish/v1/Systems/1", ("https://bmc", SYSTEM)),
    ],
)
def test_the_endpoint_is_what_the_boot_step_talks_to(address, endpoint):
    assert bmc_endpoint(address) == endpoint


@pytest.mark.parametrize(
    "address,words",
    [
        ("ipmi://10.0.0.1:623", "is an IPMI address"),
        ("ipmi+http://10.0.0.1", "is an IPMI address"),
        ("idrac://10.0.0.1", "iDRAC WS-Man"),
        ("irmc://10.0.0.1", "iRMC"),
        ("ilo5://10.0.0.1", "iLO 5"),
        ("libvirt://10.0.0.1", "libvirt"),
        ("10.0.0.1", "has no scheme"),
        ("bmc.example.com:623", "has no scheme"),
        ("redfish-virtualmedia+ftp://bmc/redfish/v1/Systems/1", 'scheme "redfish-virtualmedia+ftp"'),
        ("redfsh://bmc", 'scheme "redfsh"'),
        ("https://bm c/redfish/v1/Systems/1", "is not a host name or IP address"),
        ("https://user:pw@bmc/redfish/v1/Systems/1", "has a user or password in it"),
        ("http://10.0.0.1:8000/redfish/v1/", "is a plain-HTTP Redfish address"),
        ("https://bmc:99999", "is not a host name or IP address"),
        ("https://bmc/redfish/v1/Managers/1", 'path "/redfish/v1/Managers/1"'),
    ],
)
def test_what_a_redfish_boot_cannot_use_is_refused_with_the_fix(address, words):
    with pytest.raises(ValueError) as caught:
        bmc_endpoint(address)
    what, fix = caught.value.args
    assert words in what
    assert fix and "pw" not in what + fix


def test_the_accepted_schemes_are_listed_in_the_fix():
    with pytest.raises(ValueError) as caught:
        bmc_endpoint("vnc://bmc")
    assert "redfish-virtualmedia+https://" in caught.value.args[1] and "https://" in caught.value.args[1]
    assert len(SCHEMES) == 2 + 3 * len(REDFISH_TYPES)


def messages(problems):
    return [p["message"] for p in problems.items]


def test_a_boot_method_is_manual_or_redfish():
    problems = Problems()
    assert check_boot_settings("redfsh", "", problems) is False
    assert messages(problems) == [
        'play: field "day2_boot_method" value "redfsh" is not a boot method; set it to one of: manual, redfish'
    ]
    problems = Problems()
    assert check_boot_settings("manual", "", problems) is False and problems.items == []


@pytest.mark.parametrize(
    "url,words",
    [("", "is not set"), ("ftp://h/node.iso", "is not an http:// or https:// URL"), ("node.iso", "not an http")],
)
def test_redfish_needs_the_iso_url(url, words):
    problems = Problems()
    assert check_boot_settings("redfish", url, problems) is True
    assert [p["field"] for p in problems.items] == ["day2_iso_url"] and words in messages(problems)[0]


def test_a_good_redfish_setting_passes():
    problems = Problems()
    assert check_boot_settings("redfish", "https://files.example.com:8443/node.x86_64.iso", problems) is True
    assert problems.items == []
    assert is_http_url("http://127.0.0.1:8080/x.iso") and not is_http_url("http://bad host/x.iso")


def test_every_bmc_setting_is_needed_and_the_password_never_shown():
    problems = Problems()
    assert check_bmc("w0", {"bmc_address": "ipmi://10.0.0.1"}, problems) == {}
    assert [(p["host"], p["field"]) for p in problems.items] == [
        ("w0", "bmc_address"),
        ("w0", "bmc_username"),
        ("w0", "bmc_password"),
    ]
    problems = Problems()
    settings = {"bmc_address": "redfish://bmc/redfish/v1/Systems/1", "bmc_username": "u", "bmc_password": "pw-9"}
    assert check_bmc("w0", settings, problems) == {"bmc_base_url": "https://bmc", "bmc_system_path": SYSTEM}
    assert problems.items == []
    problems = Problems()
    check_bmc("w0", {"bmc_address": "redfish://bmc", "bmc_username": "u", "bmc_password": ""}, problems)
    assert problems.items[0]["value"] is None
    problems = Problems()
    check_bmc("w0", {"bmc_address": "https://root:pw-9@bmc", "bmc_username": "u", "bmc_password": "x"}, problems)
    assert problems.items[0]["value"] == "https://(not shown)@bmc" and "pw-9" not in str(problems.items)


def _bmc_answering(systems, source="inventory"):
    """A Bmc whose BMC answers redfish_info with ``systems`` (its Manager: no virtual media)."""

    def run(module, arguments, environment):
        facts = systems if arguments["category"] == "Systems" else {"virtual_media": {"entries": []}}
        return {"redfish_facts": facts}

    endpoint = {"bmc_base_url": "https://bmc:8000", "bmc_system_path": "/redfish/v1/Systems/1"}
    return Bmc("extra-worker-0", endpoint, {"username": "u", "password": "p"}, run, source)


SYSTEM_FACTS = {"entries": [[{"system_uri": SYSTEM}, {"PowerState": "Off"}]]}
FLOPPY = {"entries": [[{"resource_uri": SYSTEM}, [{"Id": "Floppy", "MediaTypes": ["Floppy"]}]]]}


@pytest.mark.parametrize("source", ["inventory", "/srv/agent-config.yaml"])
def test_a_bmc_without_the_system_or_a_cd_is_refused_naming_the_host_and_the_field(source):
    field = "bmc_address" if source == "inventory" else "bmc.address"
    with pytest.raises(Day2Error) as caught:
        _bmc_answering({"system": {"entries": []}}, source).inspect()
    assert caught.value.message.startswith(
        'host extra-worker-0: field "%s": the BMC at bmc:8000 has no system /redfish/v1/Systems/1; end %s with a '
        "system the BMC has" % (field, field)
    )
    with pytest.raises(Day2Error) as caught:
        _bmc_answering({"system": SYSTEM_FACTS, "virtual_media": FLOPPY}, source).inspect()
    assert caught.value.message.startswith(
        'host extra-worker-0: field "%s": the BMC at bmc:8000 offers no CD/DVD virtual media; boot the host by hand '
        "(day2_boot_method=manual)" % field
    )
    assert caught.value.message.endswith("" if source == "inventory" else " in /srv/agent-config.yaml")
