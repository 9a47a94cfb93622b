# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent-auth-token Secret as each release writes it, and the header each release's agent takes."""

import base64
import datetime
import json

import pytest

from ansible_collections.openshift_agent.day2.plugins.module_utils._install import token as tok

EXP = 1893456000  # 2030-01-01T00:00:00Z


def jwt(claims):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return "%s.%s.c2ln" % (part({"alg": "ES256", "typ": "JWT"}), part(claims))


def secret(**tokens):
    data = {key: base64.b64encode(value.encode()).decode() for key, value in tokens.items()}
    data["authTokenPublicKey"] = base64.b64encode(b"LS0tLS1CRUdJTi...").decode()
    return {"apiVersion": "v1", "kind": "Secret", "data": data}


V417 = secret(agentAuthToken=jwt({"infra_env_id": "3f2b", "exp": EXP}))
V418 = secret(
    agentAuthToken=jwt({"auth_scheme": "agentAuth", "exp": EXP}),
    userAuthToken=jwt({"auth_scheme": "userAuth", "exp": EXP}),
    watcherAuthToken=jwt({"auth_scheme": "watcherAuth", "exp": EXP - 60}),
)


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


def test_a_token_without_claims_follows_the_release_else_starts_with_the_newest_header():
    token = tok.AgentToken("not-a-jwt")
    assert token.claims == {} and token.expiry is None
    assert token.header((4, 17)) == "Authorization"
    assert token.header((4, 19)) == tok.WATCHER_HEADER
    assert token.header(None) == tok.WATCHER_HEADER
    assert tok.AgentToken(jwt({"infra_env_id": "x"})).header(None) == "Authorization"


def test_only_watcher_key_still_found():
    only = secret(watcherAuthToken=jwt({"auth_scheme": "watcherAuth", "exp": EXP}))
    assert tok.watch_token(only).key == "watcherAuthToken"


def test_user_token_preferred_over_agent_token_without_watcher():
    both = secret(
        agentAuthToken=jwt({"auth_scheme": "agentAuth", "exp": EXP}),
        userAuthToken=jwt({"auth_scheme": "userAuth", "exp": EXP}),
    )
    assert tok.watch_token(both).key == "userAuthToken"


def test_expiry_is_the_earliest_exp():
    assert tok.secret_expiry(V418) == datetime.datetime.fromtimestamp(EXP - 60, tz=datetime.timezone.utc)
    assert tok.secret_expiry(V417) == datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert tok.secret_expiry({"data": {}}) is None


def test_missing_secret_and_empty_secret_say_what_to_do():
    with pytest.raises(tok.AgentTokenError, match=r"does not exist.*build the ISO first"):
        tok.watch_token(None)
    broken = {"data": {"agentAuthToken": "%%%", "authTokenPublicKey": "eA=="}}
    with pytest.raises(tok.AgentTokenError, match="keys: agentAuthToken, authTokenPublicKey"):
        tok.watch_token(broken)


def test_describe_and_info_never_show_the_value():
    token = tok.watch_token(V418)
    text = token.describe()
    assert token.value not in text
    assert text == "key watcherAuthToken of Secret openshift-config/agent-auth-token (persona watcherAuth)"
    assert token.info() == {
        "source": "secret",
        "key": "watcherAuthToken",
        "persona": "watcherAuth",
        "expires": "2029-12-31T23:59:00Z",
    }
    assert tok.watch_token(V417).describe().endswith("(4.17 agent token with infra_env_id)")
    given = tok.AgentToken("opaque")
    assert given.describe() == "the given token (no readable claims)"
    assert given.info() == {"source": "option", "key": None, "persona": None, "expires": None}


# The agent's refusals (assisted-service agent-local auth, 4.17-4.21), and answers that are not refusals.
@pytest.mark.parametrize(
    "status, message, refused",
    [
        (401, "unauthenticated for invalid credentials", True),
        (401, "Failed to parse token: Token is expired\n", True),
        (401, "claims are incorrectly formatted", True),
        (403, "authClaim agentAuth is unauthorized to access", True),
        (500, "malformed auth_scheme claim", True),
        (400, "token missing authClaim or endpoint is missing authScheme", True),
        (500, "internal error: database is locked", False),
        (400, "bad request", False),
        (404, "not found", False),
        (200, "", False),
    ],
)
def test_is_refusal(status, message, refused):
    assert tok.is_refusal(status, message) is refused


@pytest.mark.parametrize(
    "token, messages, cause",
    [
        (jwt({"auth_scheme": "watcherAuth"}), ["Failed to parse token: Token is expired\n"], "the token has expired"),
        (
            jwt({"auth_scheme": "agentAuth"}),
            ["authClaim agentAuth is unauthorized to access"] * 2,
            "a token of persona agentAuth cannot follow the install: the agent wants the watcher token",
        ),
        (
            jwt({"infra_env_id": "x"}),
            ["malformed auth_scheme claim"] * 2,
            "a 4.17 token (no auth_scheme claim) reached an agent of 4.18 or later",
        ),
        (
            jwt({"auth_scheme": "watcherAuth"}),
            ["unauthenticated for invalid credentials", "claims are incorrectly formatted"],
            "a 4.18+ token (no infra_env_id claim) reached an agent of 4.17",
        ),
        (
            jwt({"auth_scheme": "watcherAuth"}),
            ["Failed to parse token: crypto/ecdsa: verification error\n"],
            "not signed by the key of the ISO the host runs",
        ),
    ],
)
def test_refusal_advice_names_the_cause_and_the_fix(token, messages, cause):
    advice = tok.refusal_advice(tok.AgentToken(token), messages)
    assert advice.startswith("Likely cause: ") and cause in advice
    assert "Rebuild the ISO with day2_iso (force: true)" in advice
    assert "pass token: the watcher token of the ISO the host runs (key watcherAuthToken" in advice
    assert token not in advice


def test_refusal_advice_without_a_known_cause_still_gives_the_fix():
    advice = tok.refusal_advice(tok.AgentToken("x"), ["Unauthorized"])
    assert advice.startswith("Rebuild the ISO with day2_iso (force: true)")


@pytest.mark.parametrize(
    "version, minor",
    [("4.18.3", (4, 18)), ("v4.17.0-rc.1", (4, 17)), ("4", None), ("", None), (None, None), ("x.y", None)],
)
def test_release_minor(version, minor):
    assert tok.release_minor(version) == minor


@pytest.mark.parametrize(
    "status, version",
    [
        ({"desired": {"version": "4.18.3"}, "history": [{"version": "4.17.9"}]}, "4.18.3"),
        ({"desired": {}, "history": [{"version": "4.25.0"}]}, "4.25.0"),
        ({"history": []}, None),
        ({}, None),
    ],
)
def test_cluster_version(status, version):
    assert tok.cluster_version({"status": status}) == version
    assert tok.cluster_version(None) is None


class Reader:
    """A _common.k8s.ApiClient stand-in: answers by path, or raises what it was given."""

    def __init__(self, answers):
        self.answers = answers
        self.paths = []

    def get(self, target):
        self.paths.append(target.path)
        answer = self.answers.get(target.path)
        if isinstance(answer, Exception):
            raise answer
        return answer


CV_PATH = "/apis/config.openshift.io/v1/clusterversions/version"
SECRET_PATH = "/api/v1/namespaces/openshift-config/secrets/agent-auth-token"


@pytest.mark.parametrize(
    "secret_data, version, header",
    [
        (V418, "4.18.3", "Watcher-Authorization"),
        (V417, "4.17.12", "Authorization"),
        (secret(agentAuthToken="opaque-token"), "4.17.12", "Authorization"),
        (secret(agentAuthToken="opaque-token"), "4.20.1", "Watcher-Authorization"),
    ],
)
def test_choose_reads_the_secret_and_the_version(secret_data, version, header):
    reader = Reader({SECRET_PATH: secret_data, CV_PATH: {"status": {"desired": {"version": version}}}})
    token, first, info, warnings = tok.choose(reader=reader)
    assert reader.paths == [SECRET_PATH, CV_PATH]
    assert first == header and info["first_header"] == header and info["cluster_version"] == version
    assert info["source"] == "secret" and warnings == []
    assert token.value not in str(info)


def test_choose_with_a_forbidden_version_warns_and_follows_the_claims():
    from ansible_collections.openshift_agent.day2.plugins.module_utils._common.k8s import ApiAccessError

    reader = Reader({SECRET_PATH: secret(agentAuthToken="opaque"), CV_PATH: ApiAccessError("denied", status=403)})
    _token, first, info, warnings = tok.choose(reader=reader)
    assert first == "Watcher-Authorization" and info["cluster_version"] is None
    assert warnings == ["cannot read the cluster's version (denied); the header follows the token's claims"]
    reader = Reader({SECRET_PATH: V417, CV_PATH: ApiAccessError("boom", status=500)})
    with pytest.raises(ApiAccessError):
        tok.choose(reader=reader)


def test_choose_a_given_token_reads_nothing():
    token, first, info, warnings = tok.choose(" %s\n" % jwt({"auth_scheme": "userAuth", "exp": EXP}))
    assert token.persona == "userAuth" and first == "Authorization"
    assert info == {
        "source": "option",
        "key": None,
        "persona": "userAuth",
        "expires": "2030-01-01T00:00:00Z",
        "cluster_version": None,
        "first_header": "Authorization",
    }
    assert warnings == []
