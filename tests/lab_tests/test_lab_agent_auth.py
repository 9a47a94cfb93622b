"""The agent's authentication and authorization per release (lab/hosts/auth.py) and the golang-jwt checks it
relies on (lab/jwt.py ``parse_like_golang_jwt``), without a lab: every token here is minted in the test."""

from __future__ import annotations

import time

import pytest
from lab import jwt, versions
from lab.hosts import auth

NOW = 1_900_000_000
KEY = jwt.new_key()
PEM = jwt.public_pem(KEY)
OTHER = jwt.new_key()
V417, NEWER = versions.PROFILES[0], versions.PROFILES[1:]
ALL = pytest.mark.parametrize("profile", versions.PROFILES, ids=lambda p: p.name)
NEWER_ONLY = pytest.mark.parametrize("profile", NEWER, ids=lambda p: p.name)


def persona(scheme, exp=NOW + 3600, key=KEY):
    return jwt.mint_claims(key, {"auth_scheme": scheme, "exp": exp})


def v417_token(exp=NOW + 3600, key=KEY):
    return jwt.mint(key, "6bd6bc0a-8cc3-4b8e-9f0c-6f8b1c1b1c1b", exp)


def call(profile, operation, headers=None, query=None):
    """The scheme that authenticated, or (status, message) of the refusal."""
    try:
        return auth.authorize(profile, PEM, operation, headers or {}, query or {}, now=NOW)
    except auth.AuthError as exc:
        return exc.status, exc.message


# ----- golang-jwt v4 texts -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "token, text",
    [
        ("not-a-jwt", "token contains an invalid number of segments"),
        ("a.b.c.d", "token contains an invalid number of segments"),
        (lambda: persona("userAuth", exp=NOW), "Token is expired"),
        (lambda: persona("userAuth", exp=NOW - 60), "Token is expired"),
        (lambda: persona("userAuth", key=OTHER), "crypto/ecdsa: verification error"),
        (lambda: persona("userAuth", exp=NOW - 60, key=OTHER), "crypto/ecdsa: verification error"),
        (
            lambda: jwt.mint_claims(KEY, {"exp": NOW + 60}, header={"alg": "HS256", "typ": "JWT"}),
            "signing method HS256 is invalid",
        ),
        (
            lambda: jwt.mint_claims(KEY, {"exp": NOW + 60}, header={"typ": "JWT"}),
            "signing method (alg) is unspecified.",
        ),
        (
            lambda: jwt.mint_claims(KEY, {"exp": NOW + 60}, header={"alg": "XS1"}),
            "signing method (alg) is unavailable.",
        ),
        (lambda: jwt.mint_claims(KEY, {"nbf": NOW + 60}), "Token is not valid yet"),
        (lambda: jwt.mint_claims(KEY, {"iat": NOW + 60}), "Token used before issued"),
        (lambda: jwt.mint_claims(KEY, {"exp": "tomorrow"}), "Token is expired"),
        (lambda: "Bearer " + persona("userAuth"), "tokenstring should not contain 'bearer '"),
        (lambda: persona("userAuth")[:-4], "crypto/ecdsa: verification error"),
        ("eyJhbGciOiJFUzI1NiJ9.e30.c2ln=", "illegal base64 data at input byte 4"),
        ("e30=.e30.c2ln", "illegal base64 data at input byte 3"),
    ],
)
def test_golang_jwt_texts(token, text):
    with pytest.raises(jwt.TokenError) as raised:
        jwt.parse_like_golang_jwt(token() if callable(token) else token, PEM, now=NOW)
    assert str(raised.value) == text


def test_golang_jwt_accepts_a_good_token_and_one_without_exp():
    assert jwt.parse_like_golang_jwt(persona("agentAuth"), PEM, now=NOW)["auth_scheme"] == "agentAuth"
    assert jwt.parse_like_golang_jwt(jwt.mint_claims(KEY, {"auth_scheme": "x"}), PEM, now=NOW) == {"auth_scheme": "x"}


# ----- 4.17: no watcherAuth, no personas, infra_env_id required ------------------------------------------
def test_4_17_security_lists_and_headers():
    token = v417_token()
    assert call(V417, "v2ListClusters", {"Authorization": token}) == "userAuth"
    assert call(V417, "v2GetCluster", {"X-Secret-Key": token}) == "agentAuth"
    assert call(V417, "v2ListEvents", query={"api_key": token}) == "urlAuth"
    assert call(V417, "ListInfraEnvs", {"X-Secret-Key": token}) == (401, "unauthenticated for invalid credentials")
    # Watcher-Authorization is no scheme of 4.17: the header is ignored.
    for operation in ("v2ListClusters", "v2GetCluster", "ListInfraEnvs", "v2ListEvents"):
        assert call(V417, operation, {"Watcher-Authorization": token}) == (
            401,
            "unauthenticated for invalid credentials",
        )


def test_4_17_needs_infra_env_id_and_checks_no_persona():
    assert call(V417, "v2ListClusters", {"Authorization": persona("watcherAuth")}) == (
        401,
        "claims are incorrectly formatted",
    )
    token = jwt.mint_claims(KEY, {"infra_env_id": "x", "auth_scheme": "agentAuth", "exp": NOW + 60})
    assert call(V417, "v2ListClusters", {"Authorization": token}) == "userAuth"
    assert call(V417, "v2ListClusters", {"Authorization": v417_token(exp=NOW - 1)}) == (
        401,
        "Failed to parse token: Token is expired\n",
    )


# ----- 4.18+: watcherAuth, persona authorization, no urlAuth ----------------------------------------------
@NEWER_ONLY
def test_each_persona_in_its_header(profile):
    for operation in ("v2ListClusters", "v2GetCluster", "ListInfraEnvs", "v2ListEvents"):
        assert call(profile, operation, {"Watcher-Authorization": persona("watcherAuth")}) == "watcherAuth"
        assert call(profile, operation, {"Authorization": persona("userAuth")}) == "userAuth"
    assert call(profile, "v2GetCluster", {"X-Secret-Key": persona("agentAuth")}) == "agentAuth"
    assert call(profile, "v2ListHosts", {"X-Secret-Key": persona("agentAuth")}) == "agentAuth"
    assert call(profile, "v2ListHosts", {"Watcher-Authorization": persona("watcherAuth")}) == (
        401,
        "unauthenticated for invalid credentials",
    )


@NEWER_ONLY
def test_a_persona_in_another_header_is_forbidden(profile):
    assert call(profile, "v2ListClusters", {"Authorization": persona("watcherAuth")}) == (
        403,
        "authClaim watcherAuth is unauthorized to access",
    )
    assert call(profile, "v2GetCluster", {"Watcher-Authorization": persona("agentAuth")}) == (
        403,
        "authClaim agentAuth is unauthorized to access",
    )
    # Both headers: userAuth comes first in every list and authenticates, so its persona is checked.
    both = {"Authorization": persona("watcherAuth"), "Watcher-Authorization": persona("watcherAuth")}
    assert call(profile, "v2ListClusters", both) == (403, "authClaim watcherAuth is unauthorized to access")
    # A header that fails authentication is passed over for the next scheme.
    assert (
        call(profile, "v2ListClusters", {"Authorization": "garbage", "Watcher-Authorization": persona("watcherAuth")})
        == "watcherAuth"
    )


@NEWER_ONLY
def test_claims_the_authorizer_refuses(profile):
    headers = {"Watcher-Authorization": v417_token()}
    assert call(profile, "v2ListClusters", headers) == (500, "malformed auth_scheme claim")
    assert call(profile, "v2ListClusters", {"Authorization": persona("")}) == (
        400,
        "token missing authClaim or endpoint is missing authScheme",
    )
    assert call(profile, "v2ListEvents", query={"api_key": persona("userAuth")}) == (
        401,
        "URL Authentication not allowed for agent local auth",
    )


@ALL
def test_token_errors_are_401_with_the_parser_text(profile):
    header = "Authorization"
    token = v417_token if profile is V417 else (lambda **kw: persona("userAuth", **kw))
    assert call(profile, "v2ListClusters", {header: token(exp=NOW - 5)}) == (
        401,
        "Failed to parse token: Token is expired\n",
    )
    assert call(profile, "v2ListClusters", {header: token(key=OTHER)}) == (
        401,
        "Failed to parse token: crypto/ecdsa: verification error\n",
    )
    assert call(profile, "v2ListClusters", {header: "x"}) == (
        401,
        "Failed to parse token: token contains an invalid number of segments\n",
    )
    assert call(profile, "v2ListClusters", {}) == (401, "unauthenticated for invalid credentials")
    # exp 0 passes golang-jwt but not assisted-service's own expiry check.
    zero = jwt.mint_claims(KEY, {"infra_env_id": "x", "auth_scheme": "userAuth", "exp": 0})
    assert call(profile, "v2ListClusters", {header: zero}) == (401, auth.CUSTOM_EXPIRED)


def test_real_time_is_the_default():
    assert (
        auth.authorize(
            versions.NEWEST, PEM, "v2ListClusters", {"Authorization": persona("userAuth", exp=time.time() + 60)}
        )
        == "userAuth"
    )
