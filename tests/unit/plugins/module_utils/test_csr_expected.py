# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""csr_approve's nodes option: what the argument spec cannot check (names, addresses, not_before)."""

import datetime

import netaddr
import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._join.expected import ExpectedNode, expected_nodes


def node(name, addresses=("127.0.111.20",), dns_names=(), not_before=None):
    """One entry of the option as the argument spec hands it over (every suboption present)."""
    return {"name": name, "addresses": list(addresses), "dns_names": list(dns_names), "not_before": not_before}


@pytest.mark.parametrize(
    "nodes, fragments",
    [
        (
            [node("worker-*")],
            ["nodes[0] (worker-*)", "name 'worker-*' contains a wildcard", "name every host explicitly"],
        ),
        ([node("worker-?")], ["nodes[0] (worker-?)", "contains a wildcard"]),
        ([node("worker-0", addresses=[])], ["nodes[0] (worker-0)", "addresses is empty", "give the IP addresses"]),
        (
            [node("worker-0", addresses=["127.0.111.20", "not-an-ip", "10.1"])],
            ["nodes[0] (worker-0)", "addresses ['not-an-ip', '10.1'] are not IP addresses", "such as 192.168.111.90"],
        ),
        (
            [node("worker-0", not_before="yesterday")],
            ["nodes[0] (worker-0)", "not_before 'yesterday' is not an RFC 3339 time", "2024-05-01T12:00:00Z"],
        ),
        ([node("worker-0"), node("Worker-0")], ["nodes[1] (worker-0)", "listed twice", "list every host once"]),
        ([node("  ")], ["nodes[0] (  )", "name is empty", "lower-case host name"]),
        ([], ["nodes is empty", "name at least one host"]),
    ],
)
def test_expected_nodes_refuses_bad_input_naming_node_field_value_and_fix(nodes, fragments):
    with pytest.raises(InputError) as failure:
        expected_nodes(nodes)
    message = str(failure.value)
    assert message.startswith("invalid nodes option: ")
    for fragment in fragments:
        assert fragment in message, message


def test_every_problem_is_listed_at_once():
    with pytest.raises(InputError) as failure:
        expected_nodes([node("worker-*"), node("worker-1"), node("worker-2", addresses=["x"])])
    message = str(failure.value)
    assert "nodes[0] (worker-*)" in message and "nodes[2] (worker-2)" in message
    assert "nodes[1]" not in message


def test_expected_nodes_lowercases_and_parses_not_before():
    expected = expected_nodes(
        [
            node("Worker-0", not_before="2024-05-01T11:00:00.5+00:00"),
            node("worker-1", addresses=["fd00:0::21"], dns_names=["Worker-1.Lab.Example.COM."]),
        ]
    )
    assert [n.name for n in expected] == ["worker-0", "worker-1"]
    assert expected[0].not_before == datetime.datetime(2024, 5, 1, 11, 0, 0, 500000, tzinfo=datetime.timezone.utc)
    assert expected[1].not_before is None
    assert expected[1].addresses == frozenset([netaddr.IPAddress("fd00::21")])
    assert expected[1].dns_names == frozenset(["worker-1.lab.example.com"])


def test_an_expected_node_refuses_a_text_that_is_not_an_address():
    with pytest.raises(ValueError, match="'worker-0' is not an IP address"):
        ExpectedNode("worker-0", ["worker-0"])
