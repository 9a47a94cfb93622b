# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The flood guard: approve nothing while more CSRs name the new hosts than their kubelets would file.

A kubelet has at most one client and one serving CSR pending and files a new one after about an hour; many
more means someone is filing CSRs for our hosts. docs/csr-approval.md explains the threshold.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable

from ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr import PENDING, ParsedCSR

# Pending node CSRs for the expected hosts created within this window...
FLOOD_WINDOW = datetime.timedelta(hours=1)
# ...may number at most max(FLOOD_MINIMUM, FLOOD_PER_NODE x expected hosts).
FLOOD_MINIMUM = 10
FLOOD_PER_NODE = 4


class FloodVerdict:
    """Result of flood_guard: ``flood`` is True when approving must stop."""

    def __init__(self, flood: bool, count: int, threshold: int, message: str) -> None:
        self.flood = flood
        self.reason = "flood" if flood else "ok"
        self.count = count
        self.threshold = threshold
        self.message = message


def flood_threshold(expected_count: int) -> int:
    """The policy's limit for this many expected hosts; csr_approve's max_pending may only lower it."""
    return max(FLOOD_MINIMUM, FLOOD_PER_NODE * expected_count)


def flood_guard(
    csrs: Iterable[ParsedCSR], expected_names: Collection[str], now: datetime.datetime, threshold: int
) -> FloodVerdict:
    """Count the pending CSRs naming an expected host created within FLOOD_WINDOW before ``now`` (aware UTC).

    More than ``threshold`` is a flood.
    """
    window_start = now - FLOOD_WINDOW
    count = sum(
        1
        for csr in csrs
        if csr.state == PENDING
        and csr.host in expected_names
        and csr.created is not None
        and csr.created >= window_start
    )
    if count > threshold:
        return FloodVerdict(
            True,
            count,
            threshold,
            "expected at most %d pending CSRs for the %d new hosts within %s, "
            "found %d: approving nothing until someone looks" % (threshold, len(expected_names), FLOOD_WINDOW, count),
        )
    return FloodVerdict(
        False,
        count,
        threshold,
        "%d pending CSRs for the new hosts within %s (limit %d)" % (count, FLOOD_WINDOW, threshold),
    )
