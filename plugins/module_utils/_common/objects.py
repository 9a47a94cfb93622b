# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fields and conditions of Kubernetes objects as the API returns them (decoded JSON), read without KeyErrors."""

from __future__ import annotations

from typing import Any


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """The value at ``path`` (dict keys, list indexes) in ``obj``; ``default`` where it is missing or null."""
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return default
        if obj is None:
            return default
    return obj


def condition(obj: Any, kind: str) -> dict[str, Any]:
    """The ``status.conditions`` entry of type ``kind``, {} when there is none."""
    for entry in dig(obj, "status", "conditions", default=[]):
        if isinstance(entry, dict) and entry.get("type") == kind:
            return entry
    return {}


def condition_true(obj: Any, kind: str) -> bool:
    """Whether the condition ``kind`` has status True."""
    return condition(obj, kind).get("status") == "True"
