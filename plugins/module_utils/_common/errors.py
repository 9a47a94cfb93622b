# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one root of the collection's errors.

Every error the collection raises derives from :class:`Day2Error`: a message meant for the user (it names the
host or object, the field, the value and the fix) and the partial result gathered so far, which the module
returns with its failure. A module's ``main()`` has one ``except Day2Error``.
"""

from __future__ import annotations

from typing import Any


class Day2Error(Exception):
    """An error to report to the user, with the partial result of the run so far."""

    def __init__(self, message: str, result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.result: dict[str, Any] = dict(result or {})


class InputError(Day2Error):
    """A parameter cannot be used; raised before anything is read from or written to the cluster."""
