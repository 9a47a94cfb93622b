# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SIGTERM (and SIGHUP) in a module's process become an exception, so that the work in progress cleans up.

A stopped playbook (a CI job cancelled, ``kill`` of the process tree, a closed terminal) sends SIGTERM or SIGHUP
to the module's process; by default that ends it at once and whatever it created stays. Inside
:func:`signals_raise`, the first such signal raises :class:`Terminated` where the process is; ``with`` blocks and
``finally`` clauses then delete what they created (a namespace, a partial file) on the way out. Terminated is a
BaseException, like KeyboardInterrupt, so ``except Exception`` of a retry loop does not swallow it. Further
signals are ignored while the clean-up runs (a process tree stopped as a whole may deliver the signal twice);
its requests are bounded by the retry policy, and SIGKILL still ends it (the next run then removes what is left).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """The process was asked to stop by ``signum``."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__("stopped by %s" % self.name)


@contextlib.contextmanager
def signals_raise(signals: tuple[int, ...] = SIGNALS) -> Iterator[None]:
    """Within the block, the first of ``signals`` raises Terminated; the previous handlers come back after it."""
    previous: dict[int, Any] = {}

    def handler(signum: int, _frame: FrameType | None) -> None:
        for number in signals:
            signal.signal(number, signal.SIG_IGN)  # the clean-up runs to its end
        raise Terminated(signum)

    for number in signals:
        previous[number] = signal.signal(number, handler)
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
