"""The agent auth tokens of an add-nodes run and Secret ``openshift-config/agent-auth-token``, per release.

- 4.17: one token ``agentAuthToken`` with claims ``infra_env_id`` and ``exp``; annotation ``updatedAt`` --
  openshift/installer pkg/asset/agent/gencrypto/authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d;
- 4.18+: ``agentAuthToken``, ``userAuthToken``, ``watcherAuthToken`` with claims ``auth_scheme`` (``agentAuth``,
  ``userAuth``, ``watcherAuth``) and ``exp``; annotations ``updatedAt`` and ``expiresAt`` -- installer PR #9210,
  authconfig_test.go ("for OCP 4.18+"); persona names, ``auth_scheme`` and ``expiresAt`` from
  authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb (whose own Secret holds only ``watcherAuthToken``).

Common: ES256 with a fresh P-256 key whose private half is thrown away; ``authTokenPublicKey`` is base64 of the
PEM labelled ``EC PUBLIC KEY``; tokens live 48 h; a Secret whose token has more than 24 h left is reused
(its tokens and public key), otherwise new ones replace it (``updatedAt`` = now); a missing Secret is created
(``updatedAt`` = ""). Go's ``jwt.MapClaims`` encode with sorted keys, so the lab mints them that way too.

The expiry the run writes into ``add-nodes.env`` (``expiry``): the tokens' own ``exp``, except that 4.17 keeps the
now + 48 h it computed first when it reuses an older token (``profile.fresh_expiry_on_reuse``; ``exp`` stays the
token's) -- authconfig.go@1264c98ee7f97ed4edfae4dd14c2aec668bfe89d, while
authconfig.go@5e705f0f658f4030865683bee11bc0e45bf61cfb takes the reused token's.
"""

import base64
import datetime
import json
import uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from . import jwt
from .versions import AGENT_PERSONA, USER_PERSONA, WATCHER_PERSONA

TOKEN_LIFETIME = 48 * 3600
TOKEN_REUSE_MARGIN = 24 * 3600
SECRET_NAMESPACE = "openshift-config"
SECRET_NAME = "agent-auth-token"
PERSONAS = {"agentAuthToken": AGENT_PERSONA, "userAuthToken": USER_PERSONA, "watcherAuthToken": WATCHER_PERSONA}


class TokenSecretError(Exception):
    """The Secret exists but cannot be used (the text is node-joiner's)."""


def rfc3339(epoch):
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(private_key, claims):
    """A compact ES256 JWT of ``claims`` (keys sorted, as Go encodes a map), raw r||s signature."""
    header = _b64url(json.dumps({"alg": "ES256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    signing_input = "%s.%s" % (header, payload)
    r, s = decode_dss_signature(private_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return "%s.%s" % (signing_input, _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


def _decode(data, key):
    return base64.b64decode(data.get(key) or "").decode()


def new_tokens(profile, now, infra_env_id=None):
    """``({data key: token}, public key base64 of PEM, exp)`` freshly minted for ``profile``."""
    key = jwt.new_key()
    exp = int(now) + TOKEN_LIFETIME
    if profile.token_claim == "infra_env_id":
        tokens = {"agentAuthToken": mint(key, {"infra_env_id": infra_env_id or str(uuid.uuid4()), "exp": exp})}
    else:
        tokens = {name: mint(key, {"auth_scheme": PERSONAS[name], "exp": exp}) for name in profile.token_keys}
    return tokens, base64.b64encode(jwt.public_pem(key).encode()).decode(), exp


def resolve(profile, secret, now, infra_env_id=None):
    """Decide what the run uses and what it writes.

    Returns ``(auth, secret to write or None)``; ``auth`` is ``{agent, user, watcher, expiry, exp,
    public_key_b64, reused}``: ``exp`` the tokens' claim, ``expiry`` what add-nodes.env says (RFC 3339). Raises
    TokenSecretError for a Secret missing its token.
    """
    data = (secret or {}).get("data") or {}
    # The key whose exp decides: the agent token on 4.17, the watcher token from 4.18.
    decisive = "agentAuthToken" if profile.token_claim == "infra_env_id" else "watcherAuthToken"
    if (
        secret is not None
        and decisive not in data
        and profile.token_claim != "infra_env_id"
        and data.get("agentAuthToken")
    ):
        # A 4.18+ run finding a Secret a 4.17 node-joiner wrote (no watcherAuthToken): the lab regenerates all
        # three tokens, as if it had expired, so user and watcher tokens share one key with the agent token.
        secret_usable = False
    else:
        secret_usable = secret is not None
        if secret_usable and not _decode(data, decisive):
            raise TokenSecretError(
                "auth token secret %s/%s does not contain the key %s or is empty"
                % (SECRET_NAMESPACE, SECRET_NAME, decisive)
            )
    if secret_usable:
        exp = jwt.unverified_claims(_decode(data, decisive))["exp"]
        if now < exp - TOKEN_REUSE_MARGIN:
            tokens = {name: _decode(data, name) for name in profile.token_keys}
            written = int(now) + TOKEN_LIFETIME if profile.fresh_expiry_on_reuse else exp
            return _auth(profile, tokens, _decode(data, "authTokenPublicKey"), exp, True, written), None
    tokens, public_b64, exp = new_tokens(profile, now, infra_env_id)
    encoded = {name: base64.b64encode(value.encode()).decode() for name, value in tokens.items()}
    encoded["authTokenPublicKey"] = base64.b64encode(public_b64.encode()).decode()
    if secret is not None:
        written = json.loads(json.dumps(secret))
        written["data"] = dict(written.get("data") or {}, **encoded)
        annotations = dict((written.get("metadata") or {}).get("annotations") or {}, updatedAt=rfc3339(now))
    else:
        written = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": SECRET_NAME, "namespace": SECRET_NAMESPACE},
            "data": encoded,
        }
        annotations = {"updatedAt": ""}
    if "expiresAt" in profile.secret_annotations:
        annotations["expiresAt"] = rfc3339(exp)
    written.setdefault("metadata", {})["annotations"] = annotations
    return _auth(profile, tokens, public_b64, exp, False), written


def _auth(profile, tokens, public_b64, exp, reused, written=None):
    agent = tokens.get("agentAuthToken", "")
    return {
        "agent": agent,
        "user": tokens.get("userAuthToken", ""),
        "watcher": tokens.get("watcherAuthToken", ""),
        "expiry": rfc3339(exp if written is None else written),
        "exp": exp,
        "public_key_b64": public_b64,
        "reused": reused,
    }
