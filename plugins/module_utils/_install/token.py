# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent auth token node-joiner keeps in Secret ``openshift-config/agent-auth-token``, and how to send it.

Pure: decodes the Secret the caller read. What differs by release (upstream sources):

* 4.17: one token under ``agentAuthToken`` with claims ``infra_env_id`` and ``exp``
  (openshift/installer pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d); the
  monitor sends it raw in ``Authorization`` (``UserAuthHeaderWriter``,
  openshift/installer pkg/agent/rest.go@3075c3231aef1a206c4ce065b74b61187ecf6229): assisted-service 4.17 has no
  ``watcherAuth`` scheme (openshift/assisted-service swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd).
* 4.18+: ``agentAuthToken``, ``userAuthToken`` and ``watcherAuthToken``, each with claims ``auth_scheme`` (the
  persona) and ``exp`` (installer PR #9210; personas in
  openshift/installer pkg/asset/agent/gencrypto/authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb); the monitor
  sends the watcher token in ``Watcher-Authorization``
  (openshift/installer pkg/agent/rest.go@013f25cacd773a040b1b2f40ff7d211314bbb8b0).
  A token of another persona gets ``403 authClaim <persona> is unauthorized to access``
  (openshift/assisted-service pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee).

Every ``*AuthToken`` key is read and its claims decoded without verification (only the node holds the key to
verify them); the watcher persona is preferred. ``choose`` also reads the cluster's release (ClusterVersion),
through a client the caller connected.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import (
    ApiAccessError,
    ApiClient,
    core_target,
    group_target,
)

SECRET_NAMESPACE = "openshift-config"
SECRET_NAME = "agent-auth-token"
TOKEN_KEY_SUFFIX = "AuthToken"

WATCHER_HEADER = "Watcher-Authorization"
USER_HEADER = "Authorization"
HEADERS = (WATCHER_HEADER, USER_HEADER)

WATCHER_PERSONA = "watcherAuth"
USER_PERSONA = "userAuth"
# The release whose agent API first has the watcherAuth scheme.
WATCHER_SINCE = (4, 18)


class AgentTokenError(Day2Error):
    """The Secret holds no usable token."""


class AgentToken:
    """One token: its value, the Secret key it came from (None when given directly) and its claims."""

    def __init__(self, value: str, key: str | None = None) -> None:
        self.value = value
        self.key = key
        self.claims = decode_claims(value)

    @property
    def persona(self) -> str | None:
        """The ``auth_scheme`` claim (4.18+), or None (4.17 tokens carry ``infra_env_id`` instead)."""
        scheme = self.claims.get("auth_scheme")
        return scheme if isinstance(scheme, str) and scheme else None

    @property
    def expiry(self) -> datetime.datetime | None:
        """The ``exp`` claim as an aware UTC datetime, or None."""
        exp = self.claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            return None
        try:
            return datetime.datetime.fromtimestamp(exp, tz=datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None

    def header(self, cluster_minor: tuple[int, int] | None = None) -> str:
        """The header to send this token in first: by persona, else by the cluster's release.

        A token without ``auth_scheme`` and without ``infra_env_id`` (not a readable JWT) follows the release;
        when the release is unknown it starts with ``Watcher-Authorization``, the header of 4.18 and later. The
        caller tries the other header once when the agent refuses it (``is_refusal``).
        """
        if self.persona == WATCHER_PERSONA:
            return WATCHER_HEADER
        if self.persona is not None or "infra_env_id" in self.claims:
            return USER_HEADER
        if cluster_minor is None or cluster_minor >= WATCHER_SINCE:
            return WATCHER_HEADER
        return USER_HEADER

    def describe(self) -> str:
        """Where the token came from and what it is, without its value."""
        return "%s (%s)" % (self.source(), self.kind())

    def source(self) -> str:
        if self.key:
            return "key %s of Secret %s/%s" % (self.key, SECRET_NAMESPACE, SECRET_NAME)
        return "the given token"

    def kind(self) -> str:
        if self.persona:
            return "persona %s" % self.persona
        if "infra_env_id" in self.claims:
            return "4.17 agent token with infra_env_id"
        return "no readable claims" if not self.claims else "no persona"

    def info(self) -> dict[str, Any]:
        """Source, persona and expiry for the module result; never the value."""
        expiry = self.expiry
        return {
            "source": "secret" if self.key else "option",
            "key": self.key,
            "persona": self.persona,
            "expires": expiry.strftime("%Y-%m-%dT%H:%M:%SZ") if expiry else None,
        }


def release_minor(version: str | None) -> tuple[int, int] | None:
    """``(4, 18)`` for a version such as ``4.18.3``; None when unknown."""
    parts = str(version or "").lstrip("v").split(".")
    try:
        return (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return None


def cluster_version(clusterversion: dict[str, Any] | None) -> str | None:
    """``status.desired.version`` of a ClusterVersion, else ``status.history[0].version`` (what node-joiner reads)."""
    status = (clusterversion or {}).get("status") or {}
    desired = (status.get("desired") or {}).get("version")
    if desired:
        return desired
    history = status.get("history") or []
    return (history[0] or {}).get("version") if history and isinstance(history[0], dict) else None


def other_header(header: str) -> str:
    return USER_HEADER if header == WATCHER_HEADER else WATCHER_HEADER


# What the agent answers when it does not accept the token in the header it came in (openshift/assisted-service
# agent-local auth, release-4.17 .. release-4.21): 401 for a missing scheme header (go-openapi "unauthenticated
# for invalid credentials"), a bad signature or an expired token ("Failed to parse token: ...",
# pkg/auth/local_authenticator.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd) and, on 4.17, a token without
# infra_env_id ("claims are incorrectly formatted",
# pkg/auth/agent_local_authenticator.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd);
# from 4.18, 403 "authClaim <persona> is unauthorized to access" for a persona that is not the scheme's, 500
# "malformed auth_scheme claim" for a token without auth_scheme and 400 "token missing authClaim ..." for an
# empty one (pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee).
MALFORMED_CLAIM = "malformed auth_scheme claim"
MISSING_CLAIM = "token missing authClaim"


def is_refusal(status: int, message: str | None) -> bool:
    """Whether an agent's HTTP status and error message mean it refused the token in that header."""
    text = message or ""
    return (
        status in (401, 403) or (status == 500 and MALFORMED_CLAIM in text) or (status == 400 and MISSING_CLAIM in text)
    )


def refusal_advice(token: AgentToken, messages: list[str]) -> str:
    """What to do when the agent refused ``token`` in every header; ``messages`` are the agent's texts."""
    text = " ".join(messages).lower()
    causes: list[str] = []
    if "expired" in text:
        causes.append("the token has expired (tokens live 48 h from the ISO build)")
    if "authclaim" in text and "unauthorized" in text and token.persona != WATCHER_PERSONA:
        causes.append(
            "a token of persona %s cannot follow the install: the agent wants the watcher token"
            % (token.persona or "(none)")
        )
    if MALFORMED_CLAIM in text:
        causes.append("a 4.17 token (no auth_scheme claim) reached an agent of 4.18 or later")
    if "claims are incorrectly formatted" in text:
        causes.append("a 4.18+ token (no infra_env_id claim) reached an agent of 4.17")
    if "verification error" in text or "segments" in text or "signing method" in text:
        causes.append(
            "the token was not signed by the key of the ISO the host runs (the ISO comes from "
            "another build or another cluster)"
        )
    return (
        "%sRebuild the ISO with day2_iso (force: true) and boot it again when the token expired or the ISO "
        "comes from another build; or pass token: the watcher token of the ISO the host runs (key %s of Secret "
        "%s/%s, 4.18 and later; agentAuthToken on 4.17) as it was when that ISO was built"
        % (
            "Likely cause: %s. " % "; ".join(causes) if causes else "",
            "watcherAuthToken",
            SECRET_NAMESPACE,
            SECRET_NAME,
        )
    )


def decode_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT as a dict, unverified; {} when it is not a readable JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8"))
    except (AttributeError, IndexError, TypeError, ValueError, UnicodeDecodeError, binascii.Error):
        return {}
    return claims if isinstance(claims, dict) else {}


def secret_tokens(secret: dict[str, Any] | None) -> list[AgentToken]:
    """Every ``*AuthToken`` entry of the Secret as AgentToken, in key order; undecodable entries skipped."""
    tokens: list[AgentToken] = []
    data = (secret or {}).get("data") or {}
    for key in sorted(data):
        if not key.endswith(TOKEN_KEY_SUFFIX) or not isinstance(data[key], str):
            continue
        try:
            value = base64.b64decode(data[key], validate=True).decode("utf-8").strip()
        except (binascii.Error, ValueError, UnicodeDecodeError):
            continue
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
    """The token to follow the hosts with: the watcher persona, else the 4.17 agent token, else any.

    Raises AgentTokenError naming what the Secret holds when none is usable.
    """
    if secret is None:
        raise AgentTokenError(
            "Secret %s/%s does not exist. node-joiner creates it when it builds the ISO: build the ISO first "
            "(day2_iso), or pass the token" % (SECRET_NAMESPACE, SECRET_NAME)
        )
    tokens = secret_tokens(secret)
    if tokens:
        return min(tokens, key=_watch_rank)  # the first in key order among equals
    keys = sorted((secret.get("data") or {}).keys())
    raise AgentTokenError(
        "Secret %s/%s holds no readable *AuthToken key (keys: %s). Build the ISO again (day2_iso with force: true), "
        "which makes node-joiner write a new token, or pass the token"
        % (SECRET_NAMESPACE, SECRET_NAME, ", ".join(keys) or "none")
    )


def secret_expiry(secret: dict[str, Any] | None) -> datetime.datetime | None:
    """When the tokens of the Secret expire (the earliest ``exp``), or None when unknown."""
    expiries = [token.expiry for token in secret_tokens(secret) if token.expiry is not None]
    return min(expiries) if expiries else None


SECRET_TARGET = core_target("secrets", SECRET_NAME, SECRET_NAMESPACE)
CLUSTER_VERSION_TARGET = group_target("config.openshift.io", "v1", "clusterversions", "version")


def choose(
    given: str | None = None, reader: ApiClient | None = None
) -> tuple[AgentToken, str, dict[str, Any], list[str]]:
    """``(AgentToken, first header, info, warnings)`` for a given token, else read with ``reader`` (two GETs).

    ``reader`` is a ``_common.k8s.ApiClient``; its errors other than a forbidden ClusterVersion propagate. ``info`` is
    the token's source, persona and expiry, the cluster's version and the first header; never the value.
    """
    warnings: list[str] = []
    version = None
    if given:
        token = AgentToken(given.strip())
    else:
        if reader is None:
            raise AgentTokenError(
                "no token given and no API client to read Secret %s/%s with" % (SECRET_NAMESPACE, SECRET_NAME)
            )
        token = watch_token(reader.get(SECRET_TARGET))
        try:
            version = cluster_version(reader.get(CLUSTER_VERSION_TARGET))
        except ApiAccessError as error:
            if error.status != 403:
                raise
            # Only a token without readable claims needs the release, and the other header is tried anyway.
            warnings.append("cannot read the cluster's version (%s); the header follows the token's claims" % error)
    first = token.header(release_minor(version))
    info = token.info()
    info.update(cluster_version=version, first_header=first)
    return token, first, info, warnings
