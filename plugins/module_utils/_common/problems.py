# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Problems of the new workers' inventory: each names the host, the field, the value and the fix.

Every check reports all it finds, so one run lists every mistake; the check and image steps share this.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

MAX_SHOWN_VALUE = 120
Report = Callable[[str, Any, str, str], None]


class InventoryError(Day2Error):
    """All problems found in an inventory; ``problems`` is a list of {host, field, value, message}."""

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        self.problems = list(problems)
        lines = ["%d problem(s) in the new-worker inventory:" % len(self.problems)]
        lines.extend("- " + problem["message"] for problem in self.problems)
        super().__init__("\n".join(lines), {"problems": self.problems})


class Problems:
    """Collects problems; ``for_host`` gives the report(field, value, what, fix) callable."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, host: Any, field: str, value: Any, what: str, fix: str) -> None:
        """One problem; ``host`` is the host's name, or a scope in parentheses: ``(play)`` for a play variable,
        ``(inventory)``, ``(cluster)``, ``(parameters)``."""
        scope = str(host)[1:-1] if str(host).startswith("(") and str(host).endswith(")") else "host %s" % host
        self.items.append(
            {
                "host": host,
                "field": field,
                "value": value,
                "message": '%s: field "%s" value %s %s; %s' % (scope, field, show(value), what, fix),
            }
        )

    def for_host(self, host: str) -> Report:
        def report(field: str, value: Any, what: str, fix: str) -> None:
            self.add(host, field, value, what, fix)

        return report


def show(value: Any) -> str:
    """A value as a message shows it: JSON, cut after 120 characters."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > MAX_SHOWN_VALUE:
        text = text[:MAX_SHOWN_VALUE] + "..."
    return text
