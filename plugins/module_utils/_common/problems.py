# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Problems of the new workers' inventory: each names the host, the field, the value and the fix.

Every check reports all it finds, so one run lists every mistake; the check and image steps share this.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error

MAX_SHOWN_VALUE = 120
# Words of a name whose value may be a secret (a password, a token, nmstate's 802.1X, MACsec and IPsec keys), looked
# for in the name in lower case without "-" and "_"; sshKey is a public key whatever its name says.
SECRET_WORDS = re.compile(r"pas[sw]|secret|token|credential|apikey|psk|mkacak")
# report(field, value, what is wrong, how to fix it): one problem of one host.
Report = Callable[[str, Any, str, str], None]


def secret_name(name: Any) -> bool:
    """Whether the value of a key or variable of this name is never shown."""
    return isinstance(name, str) and name != "sshKey" and bool(SECRET_WORDS.search(re.sub("[-_]", "", name.lower())))


def given(value: Any) -> bool:
    """AWX surveys send "" for an unanswered optional question: it means unset, like an absent variable."""
    return value is not None and value != "" and value != [] and value != {}


class InventoryError(Day2Error):
    """All problems found in an inventory; ``problems`` is a list of {host, field, value, message}."""

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        self.problems = list(problems)
        lines = [f"{len(self.problems)} problem(s) in the new-worker inventory:"]
        lines += ["- " + problem["message"] for problem in self.problems]
        super().__init__("\n".join(lines), {"problems": self.problems})


class Problems:
    """Collects problems; ``for_host`` gives the report(field, value, what, fix) callable."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, host: Any, field: str, value: Any, what: str, fix: str) -> None:
        """One problem; ``host`` is the host's name, or a scope in parentheses: ``(play)`` for a play variable,
        ``(inventory)``, ``(cluster)``, ``(parameters)``."""
        scope = str(host)[1:-1] if str(host).startswith("(") and str(host).endswith(")") else f"host {host}"
        message = f'{scope}: field "{field}" value {show(value)} {what}; {fix}'
        self.items.append({"host": host, "field": field, "value": value, "message": message})

    def for_host(self, host: str) -> Report:
        return lambda field, value, what, fix: self.add(host, field, value, what, fix)

    def raise_any(self) -> None:
        if self.items:
            raise InventoryError(self.items)


def show(value: Any) -> str:
    """A value as a message shows it: JSON, cut after 120 characters."""
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text[:MAX_SHOWN_VALUE] + "..." if len(text) > MAX_SHOWN_VALUE else text
