# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workers of another architecture need a multi-architecture release payload (_check.arch), refused in the check
step with the host, its architecture and why; the day-1 facts say which payload runs."""

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._check.arch import (
    check_payload_architectures,
    payload_is_multi,
)
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.variables import sort_variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import InventoryError, Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._facts.cluster import _version
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.host_checks import CheckedHost
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import known_host_keys

RELEASE = "quay.io/openshift-release-dev/ocp-release@sha256:4a7a"
SINGLE = {"architecture": "amd64", "rpm_architecture": "x86_64", "release_architecture": "", "release_image": RELEASE}
MULTI = dict(SINGLE, release_architecture="Multi")


def checked(name, arch):
    return CheckedHost(hostname=name, label=name, architecture=arch)


def problems(hosts, cluster):
    found = Problems()
    check_payload_architectures(hosts, cluster, found)
    return found.items


def test_another_architecture_on_a_single_architecture_payload_names_host_architecture_and_why():
    found = problems([checked("extra-worker-0", "x86_64"), checked("extra-worker-1", "aarch64")], SINGLE)
    assert [(p["host"], p["field"], p["value"]) for p in found] == [("extra-worker-1", "cpu_architecture", "aarch64")]
    message = found[0]["message"]
    assert message.startswith('host extra-worker-1: field "cpu_architecture" value "aarch64" ')
    for words in ("control plane's architecture (x86_64)", RELEASE, "single-architecture", "not Multi", "aarch64 ISO"):
        assert words in message
    assert "use x86_64 hardware" in message and "oc adm upgrade --to-multi-arch" in message


def test_a_multi_architecture_payload_takes_both_and_the_same_architecture_always_passes():
    assert problems([checked("a", "x86_64"), checked("b", "aarch64")], MULTI) == []
    assert problems([checked("a", "x86_64"), checked("b", None)], SINGLE) == []
    arm = dict(SINGLE, architecture="arm64", rpm_architecture="aarch64")
    assert [p["host"] for p in problems([checked("a", "x86_64"), checked("b", "aarch64")], arm)] == ["a"]


@pytest.mark.parametrize("arch", ["s390x", "ppc64le"])
def test_pairs_the_host_checks_refuse_are_not_reported_twice(arch):
    assert problems([checked("a", arch)], SINGLE) == []


def test_facts_without_the_payload_architecture_are_not_guessed():
    old = {key: value for key, value in SINGLE.items() if key != "release_architecture"}
    assert payload_is_multi(old) is None and problems([checked("b", "aarch64")], old) == []
    assert payload_is_multi(SINGLE) is False and payload_is_multi(MULTI) is True


def test_the_facts_carry_clusterversion_desired_architecture():
    multi = {"status": {"desired": {"version": "4.21.1", "image": RELEASE, "architecture": "Multi"}}}
    single = {"status": {"desired": {"version": "4.21.1", "image": RELEASE}}}
    assert _version(multi)["release_architecture"] == "Multi"
    assert _version(single)["release_architecture"] == ""


def test_the_check_step_refuses_the_host_before_anything_is_written():
    variables = {
        "inventory_hostname": "extra-worker-1",
        "group_names": ["new_workers"],
        "mac_address": "52:54:00:6f:00:21",
        "ip": "192.168.111.21",
        "prefix_length": 24,
        "cpu_architecture": "arm64",
    }
    hosts = [sort_variables("extra-worker-1", variables, variables.__getitem__, known_host_keys(), set())]
    cluster = dict(SINGLE, machine_networks=["192.168.111.0/24"], nodes=[])
    with pytest.raises(InventoryError) as caught:
        check_workers(hosts, cluster)
    assert [(p["host"], p["value"]) for p in caught.value.problems] == [("extra-worker-1", "aarch64")]
    assert (
        check_workers(hosts, dict(cluster, release_architecture="Multi"))["image_hosts"][0]["name"] == "extra-worker-1"
    )
