"""Who is calling (bearer token or client certificate) and what they may do (a fixed, small RBAC)."""

from __future__ import annotations

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
    """One authorization question, with the fields kube-apiserver's RBAC looks at."""

    verb: str
    kind: object
    resource: str  # plural or plural/subresource
    namespace: str | None
    name: str | None


def _admin_rule(identity: Identity, attrs: Attributes):
    return True if identity.is_admin else None


def _readonly_rule(identity: Identity, attrs: Attributes):
    if identity.name == READONLY.name:
        return attrs.verb in ("get", "list", "watch")
    return None


def _bootstrapper_rule(identity: Identity, attrs: Attributes):
    if identity.name == BOOTSTRAPPER.name:
        return attrs.resource == "certificatesigningrequests" and attrs.verb in ("create", "get", "list", "watch")
    return None


def _node_rule(identity: Identity, attrs: Attributes):
    """The part of the Node authorizer + system:node role a kubelet needs to join."""
    if not identity.name.startswith("system:node:") or "system:nodes" not in identity.groups:
        return None
    node_name = identity.name[len("system:node:") :]
    if attrs.resource == "certificatesigningrequests":
        return attrs.verb in ("create", "get", "list", "watch")
    if attrs.resource == "nodes" and attrs.verb in ("get", "list", "watch"):
        return True
    if attrs.resource in ("nodes", "nodes/status") and attrs.verb in ("create", "update", "patch"):
        return attrs.name == node_name
    return False


# Rules are asked in order; the first that answers True/False decides; nobody answering means "denied".
# Components may append rules (e.g. for service-account tokens of simulated pods).
RULES: list = [_admin_rule, _readonly_rule, _bootstrapper_rule, _node_rule]


def allowed(identity: Identity, attrs: Attributes) -> bool:
    for rule in RULES:
        answer = rule(identity, attrs)
        if answer is not None:
            return answer
    return False
