# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A nodes-config as it may be shown (the module result, ``--diff``) and recorded (the sidecar): secrets redacted.

A nodes-config holds no pull secret and no token; an ``sshKey`` is a public key. What could be secret comes from
a raw nmstate ``network_config``: 802.1X ``password`` and ``private-key-password``, MACsec ``mka-cak``, IPsec
``psk`` (nmstate's own names), and a password in a URL (``bootArtifactsBaseURL``, any string) of the form ``scheme://user:password@``.
Those values are replaced by REDACTED; ``secret_values`` lists them, so that the module can hide them everywhere.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
# Parts of key names (lower case, without - and _) whose values are secret: nmstate's 802.1X, MACsec and IPsec
# keys, and anything named like a password, a secret or a token.
SECRET_KEY_PARTS = ("password", "passwd", "secret", "psk", "token", "mkacak")
# A URL's password: scheme://user:password@host (up to the last @ before the path: a password may hold a literal @)
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/@:\s]*:)(?P<password>[^/\s]+)(?=@)")
# Keys whose values are public whatever their name says.
PUBLIC_KEYS = ("sshKey",)


def is_secret_key(key: Any) -> bool:
    if not isinstance(key, str) or key in PUBLIC_KEYS:
        return False
    bare = key.lower().replace("-", "").replace("_", "")
    return any(part in bare for part in SECRET_KEY_PARTS)


def secret_values(value: Any) -> list[str]:
    """Every secret value in ``value`` (a nodes-config or any part of it), as text."""
    found: list[str] = []
    _walk(value, found)
    return found


def redacted(value: Any) -> Any:
    """A copy of ``value`` with every secret value replaced by REDACTED."""
    return _walk(value, [])


def _walk(value: Any, found: list[str]) -> Any:
    if isinstance(value, dict):
        copy = {}
        for key, item in value.items():
            if is_secret_key(key) and item not in (None, ""):
                found.extend(_texts(item))
                copy[key] = REDACTED
            else:
                copy[key] = _walk(item, found)
        return copy
    if isinstance(value, list):
        return [_walk(item, found) for item in value]
    if isinstance(value, str):
        found.extend(match.group("password") for match in _URL_PASSWORD.finditer(value))
        return _URL_PASSWORD.sub(lambda match: match.group("head") + REDACTED, value)
    return value


def _texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return [str(value)] if value not in (None, "") else []
