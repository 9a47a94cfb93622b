"""Who is calling (bearer token or client certificate) and the question an authorizer answers (``Attributes``).

What each identity may do is ``lab.rbac``'s: RBAC from the stored roles and bindings, system:masters and the
node authorizer.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from .errors import UNAUTHORIZED

AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class Identity:
    name: str
    groups: tuple
    uid: str = ""

    @property
    def is_admin(self) -> bool:
        return "system:masters" in self.groups

    def as_json(self) -> dict:
        return {"user": self.name, "groups": list(self.groups)}


ADMIN = Identity("system:admin", ("system:masters", AUTHENTICATED))
READONLY = Identity("lab-readonly", (AUTHENTICATED,))
BOOTSTRAPPER = Identity(
    "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
    ("system:serviceaccounts:openshift-machine-config-operator", "system:serviceaccounts", AUTHENTICATED),
)
ANONYMOUS = Identity("system:anonymous", ("system:unauthenticated",))

# Paths a real cluster serves to system:unauthenticated.
ANONYMOUS_PATHS = ("/version", "/healthz", "/readyz", "/livez")


class Authenticator:
    def __init__(self):
        self.tokens: dict = {}

    def add_token(self, identity: Identity, token: str | None = None) -> str:
        token = token or secrets.token_urlsafe(32)
        self.tokens[token] = identity
        return token

    def identify(self, authorization_header: str | None, peercert: dict | None) -> Identity | None:
        """The caller's identity; None when anonymous; raises 401 for an unknown token.

        A client certificate wins over a token, as kube-apiserver tries x509 first.
        """
        if peercert:
            return identity_from_peercert(peercert)
        if authorization_header:
            scheme, _sep, token = authorization_header.partition(" ")
            identity = self.tokens.get(token.strip()) if scheme.lower() == "bearer" else None
            if identity is None:
                raise UNAUTHORIZED
            return identity
        return None


def identity_from_peercert(peercert: dict) -> Identity:
    """CN = user, O values = groups, plus system:authenticated (kube-apiserver's x509 authenticator)."""
    common_name, organizations = "", []
    for rdn in peercert.get("subject", ()):
        for attribute, value in rdn:
            if attribute == "commonName":
                common_name = value
            elif attribute == "organizationName":
                organizations.append(value)
    return Identity(common_name, (*tuple(organizations), AUTHENTICATED))


@dataclass(frozen=True)
class Attributes:
    """One authorization question, with the fields kube-apiserver's authorizers look at.

    Empty strings, not None, for what a request does not have (an unnamed create or list, a cluster-scoped
    resource), as kube-apiserver's ``authorizer.AttributesRecord`` has them.
    """

    verb: str
    group: str = ""
    resource: str = ""  # the plural, without the subresource
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # a non-resource request (``/version``, ``/apis``...)
    resource_request: bool = True

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def non_resource(verb: str, path: str) -> Attributes:
    return Attributes(verb, path=path, resource_request=False)


async def setup(ctx) -> None:
    """``POST /users`` on the control API (``labctl user``): ``{"name", "groups"}`` -> a new bearer token.

    The identity is the name with the groups and ``system:authenticated``; it may do nothing until a binding
    names it (or one of its groups), except what every authenticated user may (discovery, reviews).
    """
    from aiohttp import web

    async def new_user(request: web.Request) -> web.Response:
        try:
            wanted = json.loads(await request.read() or b"{}")
            name, groups = wanted["name"], list(wanted.get("groups") or [])
            if not name or not isinstance(name, str) or not all(isinstance(g, str) and g for g in groups):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return web.json_response({"error": 'the body must be {"name": NAME, "groups": [GROUP, ...]}'}, status=400)
        identity = Identity(name, tuple(dict.fromkeys([*groups, AUTHENTICATED])))
        token = ctx.auth.add_token(identity)
        return web.json_response({"user": identity.name, "groups": list(identity.groups), "token": token})

    ctx.control_routes.append(("POST", "/users", new_user))
