# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Reading the agent's JSON: the host in a cluster list, the failing validations, the newest event."""

import json

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._install import answers
from ansible_collections.openshift_agent.day2.tests.unit.plugins.module_utils.agent_fakes import (
    CLUSTER_ID,
    cluster,
    event,
    host,
    host_id,
    validations,
)


@pytest.mark.parametrize(
    "clusters, name, mac, expected_host",
    [
        (
            [cluster([host("a", mac="52:54:00:00:00:01"), host("b", mac="52:54:00:00:00:02")])],
            "zzz",
            "52:54:00:00:00:02",
            "b",
        ),
        (
            [cluster([host("a", mac="52:54:00:00:00:01"), host("b", mac="52:54:00:00:00:02")])],
            "zzz",
            "52:54:00:00:00:0A",
            None,
        ),
        ([cluster([host("a"), host("b", mac="52:54:00:00:00:09")])], "b", None, "b"),
        ([cluster([host("a", hostname="localhost")])], "other", None, "a"),
        ([cluster([])], "a", None, None),
        ([], "a", None, None),
    ],
)
def test_find_host(clusters, name, mac, expected_host):
    found_cluster, found_host = answers.find_host(clusters, name, mac)
    if expected_host is None:
        assert found_host is None
    else:
        assert found_host["id"] == host_id(expected_host)
        assert found_cluster["id"] == CLUSTER_ID


def test_find_host_by_requested_hostname():
    entry = host("x", hostname="localhost")
    entry["requested_hostname"] = "worker-7"
    pair = answers.find_host([cluster([host("y"), entry])], "worker-7")
    assert pair[1] is entry


def test_find_host_returns_a_cluster_listed_without_hosts():
    bare = cluster([])
    del bare["hosts"]
    assert answers.find_host([bare], "a") == (bare, None)


@pytest.mark.parametrize(
    "info, expected",
    [
        (
            validations([("ntp-synced", "Host couldn't synchronize with any NTP server")]),
            {"ntp-synced": "Host couldn't synchronize with any NTP server"},
        ),
        (validations(), {}),
        ('{"network": [{"id": "x", "status": "pending", "message": "m"}, {"id": "y", "status": "error"}]}', {}),
        ("", {}),
        (None, {}),
        ("not json", {}),
        ("[1, 2]", {}),
    ],
)
def test_failing_validations(info, expected):
    assert answers.failing_validations(info) == expected


def test_newest_event_by_time_skipping_other_hosts():
    events = [
        event("old", "2025-01-20T10:00:01Z", "worker-0"),
        event("other host, newest", "2025-01-20T10:00:09Z", "worker-1"),
        event("cluster level", "2025-01-20T10:00:03Z"),
        event("newest of ours", "2025-01-20T10:00:05Z", "worker-0"),
        event("older again", "2025-01-20T10:00:02Z", "worker-0"),
    ]
    assert answers.newest_event(events, host_id("worker-0"))["message"] == "newest of ours"
    assert answers.newest_event(events)["message"] == "other host, newest"
    assert answers.newest_event([]) is None


def test_newest_event_tie_takes_the_later_in_the_list():
    events = [event("first", "2025-01-20T10:00:01Z"), event("second", "2025-01-20T10:00:01Z")]
    assert answers.newest_event(events)["message"] == "second"


@pytest.mark.parametrize("mac", ["52-54-00-00-00-02", "52:54:00:00:00:02", "52:54:00:00:00:02".upper()])
def test_find_host_by_mac_in_any_notation(mac):
    clusters = [cluster([host("a", mac="52:54:00:00:00:01"), host("b", mac="52:54:00:00:00:02")])]
    assert answers.find_host(clusters, "zzz", mac)[1]["id"] == host_id("b")


def test_find_host_skips_interfaces_that_are_not_objects():
    entry = host("b", mac="52:54:00:00:00:02")
    inventory = json.loads(entry["inventory"])
    inventory["interfaces"].insert(0, "eth0")
    entry["inventory"] = json.dumps(inventory)
    clusters = [cluster([host("a"), entry])]
    assert answers.find_host(clusters, "zzz", "52:54:00:00:00:02")[1] is entry
