# -*- coding: utf-8 -*-
# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent-auth-token Secret as each release writes it, and the header each release's agent takes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils import _agent_token as tok

EXP = 1893456000  # 2030-01-01T00:00:00Z


def jwt(claims):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return "%s.%s.c2ln" % (part({"alg": "ES256", "typ": "JWT"}), part(claims))


def secret(**tokens):
    data = dict((key, base64.b64encode(value.encode()).decode()) for key, value in tokens.items())
    data["authTokenPublicKey"] = base64.b64encode(b"LS0tLS1CRUdJTi...").decode()
    return {"apiVersion": "v1", "kind": "Secret", "data": data}


V417 = secret(agentAuthToken=jwt({"infra_env_id": "3f2b", "exp": EXP}))
V418 = secret(agentAuthToken=jwt({"auth_scheme": "agentAuth", "exp": EXP}),
              userAuthToken=jwt({"auth_scheme": "userAuth", "exp": EXP}),
              watcherAuthToken=jwt({"auth_scheme": "watcherAuth", "exp": EXP - 60}))


def test_4_17_secret_gives_the_agent_token_sent_in_authorization():
    token = tok.watch_token(V417)
    assert token.key == "agentAuthToken"
    assert token.persona is None
    assert token.header((4, 17)) == "Authorization"
    # a 4.17 token on a cluster upgraded to 4.18 (kept while valid) still goes in Authorization
    assert token.header((4, 18)) == "Authorization"


def test_4_18_secret_gives_the_watcher_token_sent_in_watcher_authorization():
    token = tok.watch_token(V418)
    assert token.key == "watcherAuthToken"
    assert token.persona == "watcherAuth"
    assert token.header((4, 18)) == tok.WATCHER_HEADER
    assert token.header(None) == tok.WATCHER_HEADER
    assert tok.other_header(token.header()) == "Authorization"


def test_user_and_agent_personas_go_in_authorization():
    assert tok.AgentToken(jwt({"auth_scheme": "userAuth"})).header((4, 20)) == "Authorization"
    assert tok.AgentToken(jwt({"auth_scheme": "agentAuth"})).header((4, 20)) == "Authorization"


def test_a_token_without_claims_follows_the_release():
    token = tok.AgentToken("not-a-jwt")
    assert token.claims == {} and token.expiry is None
    assert token.header((4, 17)) == "Authorization"
    assert token.header((4, 19)) == tok.WATCHER_HEADER


def test_only_watcher_key_still_found():
    only = secret(watcherAuthToken=jwt({"auth_scheme": "watcherAuth", "exp": EXP}))
    assert tok.watch_token(only).key == "watcherAuthToken"


def test_user_token_preferred_over_agent_token_without_watcher():
    both = secret(agentAuthToken=jwt({"auth_scheme": "agentAuth", "exp": EXP}),
                  userAuthToken=jwt({"auth_scheme": "userAuth", "exp": EXP}))
    assert tok.watch_token(both).key == "userAuthToken"


def test_expiry_is_the_earliest_exp():
    assert tok.secret_expiry(V418) == datetime.datetime.fromtimestamp(EXP - 60, tz=datetime.timezone.utc)
    assert tok.secret_expiry(V417) == datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert tok.secret_expiry({"data": {}}) is None


def test_missing_secret_and_empty_secret_say_what_to_do():
    with pytest.raises(tok.AgentTokenError, match="does not exist.*build the ISO first"):
        tok.watch_token(None)
    broken = {"data": {"agentAuthToken": "%%%", "authTokenPublicKey": "eA=="}}
    with pytest.raises(tok.AgentTokenError, match="keys: agentAuthToken, authTokenPublicKey"):
        tok.watch_token(broken)


def test_describe_never_shows_the_value():
    token = tok.watch_token(V418)
    text = token.describe()
    assert token.value not in text
    assert "watcherAuthToken" in text and "watcherAuth" in text
