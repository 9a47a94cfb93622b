"""Who may call the agent: assisted-service's agent-local authentication and authorization, per release.

The agent checks every token with the public key of its own ISO (``EC_PUBLIC_KEY_PEM`` in assisted-service.env),
not with anything in the cluster. Sources (``repo path@commit``):

- security definitions and each operation's ``security`` list, in order: openshift/assisted-service
  swagger.yaml@c18512cd02435454b6c92e8a708ddd5b1f188dcd (4.17: userAuth ``Authorization``, agentAuth
  ``X-Secret-Key``, urlAuth query ``api_key``; no watcherAuth) and
  swagger.yaml@73206081d00ddfc1a2d9b385b1560564642b79ee (4.18; the same on release-4.19..4.21
  de5d04b1db10aa8b3864d1e8f42a7fc23aadd4ae, 4e399454ffb97a17837bb2362518f5442f7dd086,
  3977af16577a830b9c9c8822fe8f2925b38eac9c): watcherAuth ``Watcher-Authorization`` on four GETs;
- the order: go-openapi runtime, vendored at those commits -- middleware/router.go
  (``RouteAuthenticators.Authenticate``: schemes in swagger order, an absent header does not apply, a failure
  is remembered and the next scheme tried, the first success wins), middleware/context.go (``Authorize``:
  nothing applied -> 401 ``unauthenticated for invalid credentials``), security/authenticator.go
  (``APIKeyAuth``), errors/api.go (``ServeError``: ``{"code","message"}``, Content-Type application/json);
- 4.17 authentication: pkg/auth/agent_local_authenticator.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd (userAuth and
  urlAuth are agentAuth; the token must carry a string ``infra_env_id``) and pkg/auth/local_authenticator.go
  (``validateToken``: ``Failed to parse token: %v\\n``); no authorization (pkg/auth/authz.go, ``NoneHandler``);
- 4.18+ authentication: pkg/auth/agent_local_authenticator.go@73206081d00ddfc1a2d9b385b1560564642b79ee (signature
  and exp only; urlAuth refused); authorization:
  pkg/auth/agent_local_authz_handler.go@73206081d00ddfc1a2d9b385b1560564642b79ee (claim ``auth_scheme`` against the
  scheme that authenticated).
"""

from __future__ import annotations

import time

from .. import jwt

USER, AGENT, WATCHER, URL = "userAuth", "agentAuth", "watcherAuth", "urlAuth"
# scheme -> (in, name): the swagger securityDefinitions (all apiKey).
SCHEMES = {
    USER: ("header", "Authorization"),
    AGENT: ("header", "X-Secret-Key"),
    WATCHER: ("header", "Watcher-Authorization"),
    URL: ("query", "api_key"),
}
# operationId -> its security list, in swagger order. Operations without their own list use the global
# [userAuth]. The last four are what the host's own services call (import, registration, install, progress).
SECURITY_4_17 = {
    "v2ListClusters": (USER,),
    "v2GetCluster": (USER, AGENT),
    "ListInfraEnvs": (USER,),
    "v2ListEvents": (USER, URL),
    "v2ListHosts": (USER, AGENT),
    "v2ImportCluster": (USER,),
    "v2RegisterHost": (AGENT,),
    "v2InstallHost": (USER,),
    "v2UpdateHostInstallProgress": (AGENT,),
}
SECURITY_4_18 = dict(
    SECURITY_4_17,
    v2ListClusters=(USER, WATCHER),
    v2GetCluster=(USER, AGENT, WATCHER),
    ListInfraEnvs=(USER, WATCHER),
    v2ListEvents=(USER, URL, WATCHER),
)
CUSTOM_EXPIRED = "The provided authentication token has expired. Please generate a new token and try again."


class AuthError(Exception):
    """A refused request: the HTTP status and the ``message`` of assisted-service's JSON error body."""

    def __init__(self, status, message):
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message

    def body(self):
        return {"code": self.status, "message": self.message}


def security(profile, operation):
    return (SECURITY_4_18 if profile.watcher_scheme else SECURITY_4_17)[operation]


def credential(scheme, headers, query):
    where, name = SCHEMES[scheme]
    return (headers if where == "header" else query).get(name, "")


def authorize(profile, public_pem, operation, headers, query=None, now=None):
    """The scheme that lets this request call ``operation``, or AuthError as the agent answers it."""
    last = None
    for scheme in security(profile, operation):
        token = credential(scheme, headers, query or {})
        if not token:
            continue  # this scheme does not apply
        try:
            claims = authenticate(profile, scheme, token, public_pem, now)
        except AuthError as exc:
            last = exc
            continue
        check_persona(profile, scheme, claims)
        return scheme
    raise last or AuthError(401, "unauthenticated for invalid credentials")


def authenticate(profile, scheme, token, public_pem, now=None):
    """The token's claims if the agent-local authenticator of this release accepts it for ``scheme``."""
    if profile.watcher_scheme and scheme == URL:
        raise AuthError(401, "URL Authentication not allowed for agent local auth")
    try:
        claims = jwt.parse_like_golang_jwt(token, public_pem, now)
    except jwt.TokenError as exc:
        raise AuthError(401, f"Failed to parse token: {exc}\n") from None
    if not profile.watcher_scheme and not isinstance(claims.get("infra_env_id"), str):
        raise AuthError(401, "claims are incorrectly formatted")
    exp = claims.get("exp")
    is_number = isinstance(exp, (int, float)) and not isinstance(exp, bool)
    if is_number and int(exp) < (time.time() if now is None else now):
        raise AuthError(401, CUSTOM_EXPIRED)  # golang-jwt lets exp 0 through; this check does not
    return claims


def check_persona(profile, scheme, claims):
    """4.18+: the token's ``auth_scheme`` must name the scheme it authenticated with (4.17 checks nothing)."""
    if not profile.watcher_scheme:
        return
    claim = claims.get("auth_scheme")
    if not isinstance(claim, str):
        raise AuthError(500, "malformed auth_scheme claim")
    if not claim:
        raise AuthError(400, "token missing authClaim or endpoint is missing authScheme")
    if claim != scheme:
        raise AuthError(403, f"authClaim {claim} is unauthorized to access")
