# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent auth token node-joiner keeps in Secret ``openshift-config/agent-auth-token``, and how to send it.

Pure: decodes a Secret the caller read. What differs by release:

* 4.17: one token under ``agentAuthToken`` with claims ``infra_env_id`` and ``exp``
  (openshift/installer pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d), sent raw
  in ``Authorization`` (``UserAuthHeaderWriter``, openshift/installer
  pkg/agent/rest.go@3075c3231aef1a206c4ce065b74b61187ecf6229).
* 4.18+: ``agentAuthToken``, ``userAuthToken`` and ``watcherAuthToken``, each with claims ``auth_scheme`` (the
  persona) and ``exp`` (installer PR #9210; personas in openshift/installer
  pkg/asset/agent/gencrypto/authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb); the watcher token goes in
  ``Watcher-Authorization`` (openshift/installer pkg/agent/rest.go@013f25cacd773a040b1b2f40ff7d211314bbb8b0), and a
  token of another persona gets ``403 authClaim <persona> is unauthorized to access`` (openshift/assisted-service
  pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee).

Every ``*AuthToken`` key is read and its claims decoded without verification (only the node holds the key to
verify them); the watcher persona is preferred. Which header a release reads: ``_common.releases``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime
import hashlib
import json
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.releases import parse_version, since

SECRET_NAMESPACE = "openshift-config"
SECRET_NAME = "agent-auth-token"
WATCHER_HEADER = "Watcher-Authorization"
USER_HEADER = "Authorization"
WATCHER_PERSONA = "watcherAuth"
USER_PERSONA = "userAuth"
# What the agent answers when it does not take the token in the header it came in (openshift/assisted-service
# release-4.17 .. release-4.21): 401 for a missing scheme header, a bad signature or an expired token
# (pkg/auth/local_authenticator.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd) and, on 4.17, a token without
# infra_env_id ("claims are incorrectly formatted", pkg/auth/agent_local_authenticator.go@c18512cd...); from 4.18,
# 403 for a persona that is not the scheme's, 500 "malformed auth_scheme claim" for a token without auth_scheme and
# 400 "token missing authClaim" for an empty one (pkg/auth/agent_local_authz_handler.go@73206081...).
MALFORMED_CLAIM = "malformed auth_scheme claim"
MISSING_CLAIM = "token missing authClaim"


class AgentTokenError(Day2Error):
    """The Secret holds no usable token."""


def decode_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT as a dict, unverified; {} when it is not a readable JWT."""
    with contextlib.suppress(AttributeError, IndexError, TypeError, ValueError, UnicodeDecodeError, binascii.Error):
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8"))
        return claims if isinstance(claims, dict) else {}
    return {}


class AgentToken:
    """One token: its value, the Secret key it came from (None when given directly) and its claims."""

    def __init__(self, value: str, key: str | None = None) -> None:
        self.value, self.key = value, key
        self.claims = decode_claims(value)

    @property
    def persona(self) -> str | None:
        """The ``auth_scheme`` claim (4.18+), or None (4.17 tokens carry ``infra_env_id`` instead)."""
        scheme = self.claims.get("auth_scheme")
        return scheme if isinstance(scheme, str) and scheme else None

    @property
    def expiry(self) -> datetime.datetime | None:
        exp = self.claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            return None
        with contextlib.suppress(OverflowError, OSError, ValueError):  # out of range: unknown
            return datetime.datetime.fromtimestamp(exp, tz=datetime.timezone.utc)
        return None

    def header(self, version: Any = None) -> str:
        """The header to send this token in first: by persona, else by the cluster's release (unknown: the header
        of 4.18 and later). The caller tries the other one once when the agent refuses it."""
        if self.persona == WATCHER_PERSONA:
            return WATCHER_HEADER
        if self.persona is not None or "infra_env_id" in self.claims:
            return USER_HEADER
        minor = parse_version(version)
        return WATCHER_HEADER if minor is None or minor >= since("watcher_header") else USER_HEADER

    def describe(self) -> str:
        """Where the token came from and what it is, without its value."""
        source = f"key {self.key} of Secret {SECRET_NAMESPACE}/{SECRET_NAME}" if self.key else "the given token"
        if self.persona:
            kind = f"persona {self.persona}"
        elif "infra_env_id" in self.claims:
            kind = "4.17 agent token with infra_env_id"
        else:
            kind = "no persona" if self.claims else "no readable claims"
        # The sha256 an ISO's sidecar records of the tokens it carries (token_digests, its first 16 digits here): a user
        # can tell whether the ISO a host booted carries this token.
        until = f", expires {self.info()['expires']}" if self.expiry else ""
        return f"{source} ({kind}, sha256 {hashlib.sha256(self.value.encode()).hexdigest()[:16]}{until})"

    def info(self) -> dict[str, Any]:
        """Source, persona and expiry for a result; never the value."""
        return {
            "source": "secret" if self.key else "option",
            "key": self.key,
            "persona": self.persona,
            "expires": self.expiry.strftime("%Y-%m-%dT%H:%M:%SZ") if self.expiry else None,
        }


def other_header(header: str) -> str:
    return USER_HEADER if header == WATCHER_HEADER else WATCHER_HEADER


def is_refusal(status: int, message: str | None) -> bool:
    """Whether an agent's HTTP status and error message mean it refused the token in that header."""
    text = message or ""
    return (
        status in (401, 403) or (status == 500 and MALFORMED_CLAIM in text) or (status == 400 and MISSING_CLAIM in text)
    )


def refusal_advice(token: AgentToken, messages: list[str]) -> str:
    """What to do when the agent refused ``token`` in every header; ``messages`` are the agent's texts."""
    text = " ".join(messages).lower()
    causes = []
    if "expired" in text:
        causes.append("the token has expired (tokens live 48 h from the ISO build)")
    if "authclaim" in text and "unauthorized" in text and token.persona != WATCHER_PERSONA:
        persona = token.persona or "(none)"
        causes.append(f"a token of persona {persona} cannot follow the install: the agent wants the watcher token")
    if MALFORMED_CLAIM in text:
        causes.append("a 4.17 token (no auth_scheme claim) reached an agent of 4.18 or later")
    if "claims are incorrectly formatted" in text:
        causes.append("a 4.18+ token (no infra_env_id claim) reached an agent of 4.17")
    if any(word in text for word in ("verification error", "segments", "signing method")):
        causes.append(
            "the host runs an ISO signed with another key than the cluster's current token: an ISO built before "
            f"Secret {SECRET_NAMESPACE}/{SECRET_NAME} was deleted or replaced (the image step then builds a new "
            "one), or an ISO of another cluster. Boot the host again from the ISO this run built or reused"
        )
    likely = f"Likely cause: {'; '.join(causes)}. " if causes else ""
    return (
        f"{likely}Rebuild the ISO with day2_iso (force: true) and boot it again when the token expired or the ISO "
        "comes from another build; or pass token: the watcher token of the ISO the host runs (key watcherAuthToken "
        f"of Secret {SECRET_NAMESPACE}/{SECRET_NAME}, 4.18 and later; agentAuthToken on 4.17) as it was when that "
        "ISO was built"
    )


def secret_tokens(secret: dict[str, Any] | None) -> list[AgentToken]:
    """Every ``*AuthToken`` entry of the Secret, in key order; undecodable entries skipped."""
    tokens = []
    data = (secret or {}).get("data") or {}
    for key in sorted(k for k in data if k.endswith("AuthToken") and isinstance(data[k], str)):
        with contextlib.suppress(binascii.Error, ValueError, UnicodeDecodeError):  # undecodable: skipped
            value = base64.b64decode(data[key], validate=True).decode("utf-8").strip()
            if value:
                tokens.append(AgentToken(value, key))
    return tokens


def _watch_rank(token: AgentToken) -> int:
    """The watcher persona first, then the 4.17 agent token, then the user persona, then any other."""
    if token.persona == WATCHER_PERSONA:
        return 0
    if token.persona is None and "infra_env_id" in token.claims:
        return 1
    return 2 if token.persona == USER_PERSONA else 3


def watch_token(secret: dict[str, Any] | None) -> AgentToken:
    """The token to follow the hosts with; AgentTokenError naming what the Secret holds when none is usable."""
    if secret is None:
        raise AgentTokenError(
            f"Secret {SECRET_NAMESPACE}/{SECRET_NAME} does not exist. node-joiner creates it when it builds the ISO: "
            "build the ISO first (day2_iso), or pass the token"
        )
    if tokens := secret_tokens(secret):
        return min(tokens, key=_watch_rank)  # the first in key order among equals
    raise AgentTokenError(
        f"Secret {SECRET_NAMESPACE}/{SECRET_NAME} holds no readable *AuthToken key (keys: "
        f"{', '.join(sorted(secret.get('data') or {})) or 'none'}). Build the ISO again (day2_iso with force: true), "
        "which makes node-joiner write a new token, or pass the token"
    )


def secret_expiry(secret: dict[str, Any] | None) -> datetime.datetime | None:
    """When the tokens of the Secret expire (the earliest ``exp``), or None when unknown."""
    return min((token.expiry for token in secret_tokens(secret) if token.expiry is not None), default=None)
