# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""day2_cluster_name, day2_base_domain, day2_openshift_version against the cluster the login reaches."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.identity import check_identity
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

CLUSTER = {
    "name": "ostest",
    "base_domain": "test.metalkube.org",
    "version": "4.21.3",
    "api_url": "https://api.ostest.test.metalkube.org:6443",
}


def problems(name="", domain="", version=""):
    found = Problems()
    check_identity(CLUSTER, name, domain, version, found)
    return found.items


@pytest.mark.parametrize(
    "name, domain, version",
    [
        ("", "", ""),
        (None, None, None),
        ("ostest", "", ""),
        ("OSTEST", "test.metalkube.org.", "4.21"),
        ("", "", "4.21.3"),
    ],
)
def test_the_cluster_meant(name, domain, version):
    assert problems(name, domain, version) == []


def test_another_name_is_refused_naming_both():
    (problem,) = problems(name="prod")
    assert problem["host"] == "(play)" and problem["field"] == "day2_cluster_name" and problem["value"] == "prod"
    assert problem["message"].startswith('play: field "day2_cluster_name" value "prod" is not the cluster')
    assert '"ostest"' in problem["message"] and "api.ostest.test.metalkube.org" in problem["message"]


def test_another_domain_and_version():
    found = problems(domain="example.com", version="4.20")
    assert [p["field"] for p in found] == ["day2_base_domain", "day2_openshift_version"]
    assert '"test.metalkube.org"' in found[0]["message"] and "runs 4.21.3" in found[1]["message"]
    assert "runs 4.21.3" in problems(version="4.21.2")[0]["message"]
    assert problems(version="4.2") and problems(version="4")


@pytest.mark.parametrize(
    "version, says", [("4.21.x", "is not a version x.y or x.y.z"), (4.2, "is a number"), ("v4.21", "x.y")]
)
def test_a_malformed_version(version, says):
    (problem,) = problems(version=version)
    assert says in problem["message"]
