"""ES256 JSON Web Tokens as node-joiner mints them for the agent API (RFC 7515/7518).

node-joiner signs ``{"infra_env_id": ..., "exp": ...}`` with a fresh P-256 key,
keeps only the public key (in Secret ``openshift-config/agent-auth-token``) and
discards the private key: an unexpired token is reused, an old one replaced by a
new key pair and token.
"""

import base64
import json
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

HEADER = {"alg": "ES256", "typ": "JWT"}
COORDINATE_BYTES = 32  # P-256


class TokenError(Exception):
    """The token is malformed, wrongly signed or expired."""


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode(text):
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise TokenError("token segment is not base64url: %s" % exc)


def new_key():
    """A fresh P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(private_key):
    """The PEM of the public key, with the "EC PUBLIC KEY" label node-joiner writes
    (the body is a standard SubjectPublicKeyInfo)."""
    pem = (
        private_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return pem.replace("BEGIN PUBLIC KEY", "BEGIN EC PUBLIC KEY").replace("END PUBLIC KEY", "END EC PUBLIC KEY")


def load_public_pem(pem):
    """Load a P-256 public key from PEM, labelled "PUBLIC KEY" or "EC PUBLIC KEY"."""
    if isinstance(pem, bytes):
        pem = pem.decode()
    normal = pem.replace("BEGIN EC PUBLIC KEY", "BEGIN PUBLIC KEY").replace("END EC PUBLIC KEY", "END PUBLIC KEY")
    try:
        key = serialization.load_pem_public_key(normal.encode())
    except ValueError as exc:
        raise TokenError("cannot load the public key: %s" % exc)
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise TokenError("the public key is not an ECDSA P-256 key")
    return key


def mint(private_key, infra_env_id, exp):
    """A compact ES256 JWT with claims infra_env_id and exp (unix seconds): a 4.17 token."""
    return mint_claims(private_key, {"infra_env_id": infra_env_id, "exp": int(exp)})


def mint_claims(private_key, claims, header=None):
    """A compact JWT with these claims, signed ES256 with ``private_key`` (``header`` overrides the JOSE
    header, e.g. to forge another ``alg``; the signature is ES256 all the same)."""
    header = _b64url(json.dumps(header or HEADER, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = "%s.%s" % (header, payload)
    der = private_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    # JWS uses the raw r||s form (RFC 7518 section 3.4), not DER.
    raw = r.to_bytes(COORDINATE_BYTES, "big") + s.to_bytes(COORDINATE_BYTES, "big")
    return "%s.%s" % (signing_input, _b64url(raw))


def unverified_claims(token):
    """The claims of a token without checking anything (to read ``exp``)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("token must have 3 dot-separated segments, found %d" % len(parts))
    try:
        return json.loads(_b64url_decode(parts[1]))
    except ValueError:
        raise TokenError("token claims are not JSON")


def verify(token, public_pem_text, now=None):
    """Return the claims of ``token`` after checking its ES256 signature and expiry.

    Raises TokenError naming what is wrong.
    """
    if now is None:
        now = time.time()
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("token must have 3 dot-separated segments, found %d" % len(parts))
    try:
        header = json.loads(_b64url_decode(parts[0]))
    except ValueError:
        raise TokenError("token header is not JSON")
    if header.get("alg") != "ES256":
        raise TokenError("unexpected signing method %r, expected ES256" % header.get("alg"))
    raw = _b64url_decode(parts[2])
    if len(raw) != 2 * COORDINATE_BYTES:
        raise TokenError("ES256 signature must be %d bytes, found %d" % (2 * COORDINATE_BYTES, len(raw)))
    der = encode_dss_signature(
        int.from_bytes(raw[:COORDINATE_BYTES], "big"), int.from_bytes(raw[COORDINATE_BYTES:], "big")
    )
    signing_input = ("%s.%s" % (parts[0], parts[1])).encode()
    try:
        load_public_pem(public_pem_text).verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise TokenError("token signature is invalid")
    claims = unverified_claims(token)
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)):
        raise TokenError("token has no numeric exp claim")
    if now >= exp:
        raise TokenError(
            "token is expired (exp %s, now %s)"
            % (
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp)),
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            )
        )
    return claims


# ----- what the agent's assisted-service accepts: golang-jwt v4.5.2, word for word ------------------------
# openshift/assisted-service pkg/auth/local_authenticator.go@c18512cd02435454b6c92e8a708ddd5b1f188dcd
# (``validateToken``: ``jwt.Parser{ValidMethods: [ES256]}`` into MapClaims; the same on release-4.18..4.21)
# and its vendored github.com/golang-jwt/jwt/v4 (parser.go, map_claims.go, ecdsa.go, token.go) at that commit.
# The texts of the checks below are golang-jwt's; base64 and JSON errors only approximate Go's wording.
GO_JWT_ALGS = (
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "HS256",
    "HS384",
    "HS512",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "none",
)
_B64URL = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _go_segment(segment):
    """``DecodeSegment``: base64 RawURLEncoding (no padding), with Go's error for the first bad byte."""
    for index, char in enumerate(segment):
        if char not in _B64URL:
            raise TokenError("illegal base64 data at input byte %d" % index)
    if len(segment) % 4 == 1:
        raise TokenError("illegal base64 data at input byte %d" % (len(segment) - 1))
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _go_json_object(data):
    try:
        value = json.loads(data)
    except ValueError:
        stripped = data.strip()
        if not stripped:
            raise TokenError("unexpected end of JSON input")
        raise TokenError("invalid character %r looking for beginning of value" % chr(stripped[0]))
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "bool", type(None): "null"}.get(type(value), "number")
        raise TokenError("json: cannot unmarshal %s into Go value of type map[string]interface {}" % kind)
    return value


def _go_seconds(claims, name):
    """A numeric date claim as golang-jwt compares it: whole seconds; None when absent or 0; False when not a
    number (which fails its check)."""
    if name not in claims:
        return None
    value = claims[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return int(value) or None


def parse_like_golang_jwt(token, public_pem_text, now=None):
    """The claims of ``token`` if golang-jwt v4 with ``ValidMethods: [ES256]`` accepts it, else TokenError
    with golang-jwt's text (e.g. ``Token is expired``, ``crypto/ecdsa: verification error``)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("token contains an invalid number of segments")
    try:
        header_json = _go_segment(parts[0])
    except TokenError:
        if token.lower().startswith("bearer "):
            raise TokenError("tokenstring should not contain 'bearer '")
        raise
    header = _go_json_object(header_json)
    claims = _go_json_object(_go_segment(parts[1]))
    alg = header.get("alg")
    if not isinstance(alg, str):
        raise TokenError("signing method (alg) is unspecified.")
    if alg not in GO_JWT_ALGS:
        raise TokenError("signing method (alg) is unavailable.")
    if alg != "ES256":
        raise TokenError("signing method %s is invalid" % alg)
    raw = _go_segment(parts[2])
    if len(raw) != 2 * COORDINATE_BYTES:
        raise TokenError("crypto/ecdsa: verification error")
    der = encode_dss_signature(
        int.from_bytes(raw[:COORDINATE_BYTES], "big"), int.from_bytes(raw[COORDINATE_BYTES:], "big")
    )
    try:
        load_public_pem(public_pem_text).verify(
            der, ("%s.%s" % (parts[0], parts[1])).encode(), ec.ECDSA(hashes.SHA256())
        )
    except InvalidSignature:
        raise TokenError("crypto/ecdsa: verification error")
    # MapClaims.Valid: exp, then iat, then nbf; the last failing check names the error.
    seconds = int(time.time() if now is None else now)
    problem = None
    exp, iat, nbf = (_go_seconds(claims, name) for name in ("exp", "iat", "nbf"))
    if exp is False or (exp is not None and not seconds < exp):
        problem = "Token is expired"
    if iat is False or (iat is not None and seconds < iat):
        problem = "Token used before issued"
    if nbf is False or (nbf is not None and seconds < nbf):
        problem = "Token is not valid yet"
    if problem:
        raise TokenError(problem)
    return claims
