# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The agent auth token node-joiner keeps in Secret ``openshift-config/agent-auth-token``, and how to send it.

Pure: decodes the Secret the caller read. What differs by release (upstream sources):

* 4.17: one token under ``agentAuthToken`` with claims ``infra_env_id`` and ``exp``
  (openshift/installer pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d); the
  monitor sends it raw in ``Authorization`` (openshift/installer pkg/agent/rest.go@3075c3231aef1a206c4ce065b74b61187ecf6229,
  ``UserAuthHeaderWriter``): assisted-service 4.17 has no ``watcherAuth`` scheme
  (openshift/assisted-service swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd).
* 4.18+: ``agentAuthToken``, ``userAuthToken`` and ``watcherAuthToken``, each with claims ``auth_scheme`` (the
  persona) and ``exp`` (installer PR #9210; personas in
  openshift/installer pkg/asset/agent/gencrypto/authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb); the monitor
  sends the watcher token in ``Watcher-Authorization`` (openshift/installer pkg/agent/rest.go@013f25cacd773a040b1b2f40ff7d211314bbb8b0).
  A token of another persona gets ``403 authClaim <persona> is unauthorized to access``
  (openshift/assisted-service pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee).

Every ``*AuthToken`` key is read and its claims decoded without verification (only the node holds the key to
verify them); the watcher persona is preferred.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import datetime
import json

SECRET_NAMESPACE = "openshift-config"
SECRET_NAME = "agent-auth-token"
TOKEN_KEY_SUFFIX = "AuthToken"

WATCHER_HEADER = "Watcher-Authorization"
USER_HEADER = "Authorization"
HEADERS = (WATCHER_HEADER, USER_HEADER)

WATCHER_PERSONA = "watcherAuth"
USER_PERSONA = "userAuth"
AGENT_PERSONA = "agentAuth"
# The release whose agent API first has the watcherAuth scheme.
WATCHER_SINCE = (4, 18)


class AgentTokenError(Exception):
    """The Secret holds no usable token."""


class AgentToken:
    """One token: its value, the Secret key it came from (None when given directly) and its claims."""

    def __init__(self, value, key=None):
        self.value = value
        self.key = key
        self.claims = decode_claims(value)

    @property
    def persona(self):
        """The ``auth_scheme`` claim (4.18+), or None (4.17 tokens carry ``infra_env_id`` instead)."""
        scheme = self.claims.get("auth_scheme")
        return scheme if isinstance(scheme, str) and scheme else None

    @property
    def expiry(self):
        """The ``exp`` claim as an aware UTC datetime, or None."""
        exp = self.claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            return None
        try:
            return datetime.datetime.fromtimestamp(exp, tz=datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None

    def header(self, cluster_minor=None):
        """The header the monitor sends this token in: by persona, else by the cluster's release."""
        if self.persona == WATCHER_PERSONA:
            return WATCHER_HEADER
        if self.persona is not None:
            return USER_HEADER
        if cluster_minor is not None and tuple(cluster_minor) >= WATCHER_SINCE and "infra_env_id" not in self.claims:
            return WATCHER_HEADER
        return USER_HEADER

    def describe(self):
        """Where the token came from and what it is, without its value."""
        source = "key %s of Secret %s/%s" % (self.key, SECRET_NAMESPACE, SECRET_NAME) if self.key else "the given token"
        persona = self.persona or ("agent token with infra_env_id" if "infra_env_id" in self.claims else "no persona")
        return "%s (%s)" % (source, persona)


def other_header(header):
    return USER_HEADER if header == WATCHER_HEADER else WATCHER_HEADER


def decode_claims(token):
    """The payload of a JWT as a dict, unverified; {} when it is not a readable JWT."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8"))
    except (AttributeError, IndexError, TypeError, ValueError, UnicodeDecodeError, binascii.Error):
        return {}
    return claims if isinstance(claims, dict) else {}


def secret_tokens(secret):
    """Every ``*AuthToken`` entry of the Secret as AgentToken, in key order; undecodable entries skipped."""
    tokens = []
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


def watch_token(secret):
    """The token to follow the hosts with: the watcher persona, else the 4.17 agent token, else any.

    Raises AgentTokenError naming what the Secret holds when none is usable.
    """
    if secret is None:
        raise AgentTokenError(
            "Secret %s/%s does not exist. node-joiner creates it when it builds the ISO: build the ISO first "
            "(day2_iso), or pass the token" % (SECRET_NAMESPACE, SECRET_NAME))
    tokens = secret_tokens(secret)
    for wanted in (lambda t: t.persona == WATCHER_PERSONA,
                   lambda t: t.persona is None and "infra_env_id" in t.claims,
                   lambda t: t.persona == USER_PERSONA,
                   lambda t: True):
        for token in tokens:
            if wanted(token):
                return token
    keys = sorted((secret.get("data") or {}).keys())
    raise AgentTokenError(
        "Secret %s/%s holds no readable *AuthToken key (keys: %s). Build the ISO again (day2_iso with force: true), "
        "which makes node-joiner write a new token, or pass the token" % (
            SECRET_NAMESPACE, SECRET_NAME, ", ".join(keys) or "none"))


def secret_expiry(secret):
    """When the tokens of the Secret expire (the earliest ``exp``), or None when unknown."""
    expiries = [token.expiry for token in secret_tokens(secret) if token.expiry is not None]
    return min(expiries) if expiries else None
