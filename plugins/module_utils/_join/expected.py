# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The hosts that are joining, as csr_approve's ``nodes`` option names them.

The argument spec already checks the shape (a list of dicts, ``name`` and ``addresses`` present, the types);
``expected_nodes`` adds what it cannot express: a usable name, real addresses, a readable ``not_before``.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import as_utc
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import InputError
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.net import parse_ip

WILDCARDS = ("*", "?")


def dns_key(name: str) -> str:
    """DNS names compare case-insensitively and without a trailing dot."""
    return name.lower().rstrip(".")


class ExpectedNode:
    """A host of the inventory that is about to join.

    name: the Node name the kubelet will register (lower-case host name); addresses: its IP addresses (text);
    dns_names: extra DNS names its serving certificate may carry; not_before: a datetime or RFC 3339 text
    before which no CSR of this host can be genuine (e.g. when it was seen rebooting into the installed system).
    """

    def __init__(
        self,
        name: str,
        addresses: Iterable[str] = (),
        dns_names: Iterable[str] = (),
        not_before: datetime.datetime | str | None = None,
    ) -> None:
        self.name = name
        self.addresses = frozenset(_address(text) for text in addresses)
        self.dns_names = frozenset(dns_key(name) for name in dns_names)
        self.not_before = as_utc(not_before)

    def __repr__(self) -> str:
        return "ExpectedNode(%r)" % self.name


def _address(text: str) -> Any:
    address = parse_ip(text)
    if address is None:
        raise ValueError("%r is not an IP address" % (text,))
    return address


def expected_nodes(nodes: list[dict[str, Any]]) -> list[ExpectedNode]:
    """The ``nodes`` option as ExpectedNode objects; raise InputError listing every problem.

    Names are lower-cased because the kubelet registers the lower-case host name. There is deliberately no
    wildcard: every host must be named.
    """
    problems: list[str] = []
    expected: list[ExpectedNode] = []
    seen: set[str] = set()
    for index, node in enumerate(nodes):
        name = node["name"].strip().lower()
        where = "nodes[%d] (%s)" % (index, name or node["name"])
        problem = _name_problem(name, seen) or _addresses_problem(node["addresses"])
        not_before = None
        if problem is None and node.get("not_before"):
            try:
                not_before = as_utc(node["not_before"])
            except ValueError:
                problem = "not_before %r is not an RFC 3339 time; write it like 2024-05-01T12:00:00Z" % (
                    node["not_before"],
                )
        if problem is not None:
            problems.append("%s: %s" % (where, problem))
            continue
        seen.add(name)
        expected.append(ExpectedNode(name, node["addresses"], node.get("dns_names") or (), not_before))
    if not nodes:
        problems.append("nodes is empty: name at least one host that is joining")
    if problems:
        raise InputError("invalid nodes option: " + "; ".join(problems))
    return expected


def _name_problem(name: str, seen: set[str]) -> str | None:
    if not name:
        return "name is empty; give the Node name the host registers (its lower-case host name)"
    if any(wildcard in name for wildcard in WILDCARDS):
        return (
            "name %r contains a wildcard; name every host explicitly, there is no approve-all "
            "(docs/csr-approval.md explains why)" % name
        )
    if name in seen:
        return "name %s is listed twice; list every host once" % name
    return None


def _addresses_problem(addresses: list[str]) -> str | None:
    if not addresses:
        return (
            "addresses is empty; give the IP addresses the host will have, its serving certificate is checked "
            "against them"
        )
    bad = [address for address in addresses if parse_ip(address) is None]
    if bad:
        return "addresses %s are not IP addresses; give plain IPv4 or IPv6 addresses such as 192.168.111.90" % bad
    return None
