"""An SSH public key checked as node-joiner checks nodes-config's ``sshKey``, with Go's error texts.

node-joiner loads ``sshKey`` with ``validate.SSHPublicKey`` -- openshift/installer
pkg/asset/agent/joiner/addnodesconfig.go@d465fb6e27edadc0b118f98018ad1170666fddd4 (``validateSSHKey``, since installer
PR #8779, merged 2024-07-30 before 4.17 branched: the same on every profile),
pkg/validate/validate.go@5c29e90536dec16718461d04674f751f6d1a0456 -- which is golang.org/x/crypto's
``ssh.ParseAuthorizedKey`` (golang/crypto ssh/keys.go@0aef1c2502a4ecc25c487db9602dd7ee4e7aa84f):

- lines are tried one by one; blank and ``#`` lines are skipped, a line without a blank too;
- the text after the first word is the key (the key type word is not read: the blob names its algorithm); when it
  does not parse, a leading options field (commas, quotes) is skipped and the text after the next word is tried;
- the key is standard base64 (``encoding/base64`` ``StdEncoding``: padding required, CR/LF skipped, the offset of
  the first bad byte reported), then the SSH wire format: a string naming the algorithm, the fields of that
  algorithm, nothing after them;
- with no key found: ``ssh: no key found``, plus ``; last parsing error for ignored line: <error>`` when a line was
  tried. The installer's own fixture: ``not a valid ssh key`` gives ``ssh: no key found; last parsing error for
  ignored line: illegal base64 data at input byte 4`` (pkg/asset/agent/joiner/addnodesconfig_test.go@
  24a06e10850970962647ac7893400f2bb843e65c).
"""

import base64
import binascii

ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
SHORT_READ = "ssh: short read"
# The wire fields after the algorithm name: "mpint", "string" (ssh/keys.go parseRSA, parseDSA, parseECDSA...).
FIELDS = {
    "ssh-rsa": ("mpint", "mpint"),
    "ssh-dss": ("mpint",) * 4,
    "ecdsa-sha2-nistp256": ("curve", "point"),
    "ecdsa-sha2-nistp384": ("curve", "point"),
    "ecdsa-sha2-nistp521": ("curve", "point"),
    "sk-ecdsa-sha2-nistp256@openssh.com": ("curve", "point", "string"),
    "ssh-ed25519": ("ed25519",),
    "sk-ssh-ed25519@openssh.com": ("ed25519", "string"),
}
CURVE_BYTES = {"nistp256": 32, "nistp384": 48, "nistp521": 66}
SIGNATURE_ONLY = {"rsa-sha2-256": "ssh-rsa", "rsa-sha2-512": "ssh-rsa"}  # keyFormatForAlgorithm


class KeyProblem(Exception):
    """One line that is no key; ``str()`` is Go's error text."""


def b64_error_offset(data):
    """The offset Go's ``base64.StdEncoding.Decode`` reports for ``data`` (``decodeQuantum``), None if valid."""
    si = 0
    while si < len(data):
        j = 0
        while j < 4:
            if si == len(data):
                if j == 0:
                    return None
                return si - j  # a partial quantum: StdEncoding wants padding
            char = data[si : si + 1]
            si += 1
            if char in b"\r\n":
                continue
            if char != b"=":
                if char not in ALPHABET:
                    return si - 1
                j += 1
                continue
            if j < 2:
                return si - 1  # padding too early
            if j == 2:  # "==": the second "=" must follow (newlines skipped)
                while si < len(data) and data[si : si + 1] in b"\r\n":
                    si += 1
                if si == len(data):
                    return len(data)
                if data[si : si + 1] != b"=":
                    return si - 1
                si += 1
            while si < len(data) and data[si : si + 1] in b"\r\n":
                si += 1
            return si if si < len(data) else None  # anything after the padding is garbage
    return None


def _take(blob):
    if len(blob) < 4 or len(blob) - 4 < int.from_bytes(blob[:4], "big"):
        raise KeyProblem(SHORT_READ)
    size = int.from_bytes(blob[:4], "big")
    return blob[4 : 4 + size], blob[4 + size :]


def parse_public_key(blob):
    """``ssh.ParsePublicKey``: the algorithm name and its fields; raise KeyProblem."""
    name, rest = _take(blob)
    algorithm = name.decode("latin-1")
    if algorithm in SIGNATURE_ONLY:
        raise KeyProblem(
            'ssh: signature algorithm "%s" isn\'t a key format; key is malformed and should be re-encoded with type '
            '"%s"' % (algorithm, SIGNATURE_ONLY[algorithm])
        )
    if algorithm not in FIELDS:
        raise KeyProblem("ssh: unknown key algorithm: %s" % algorithm)
    curve = None
    for index, kind in enumerate(FIELDS[algorithm]):
        value, rest = _take(rest)
        if kind == "ed25519" and len(value) != 32:
            raise KeyProblem("invalid size %d for Ed25519 public key" % len(value))
        if kind == "curve":
            curve = CURVE_BYTES.get(value.decode("latin-1"))
            if curve is None:
                raise KeyProblem("ssh: unsupported curve")
        if kind == "point" and (value[:1] != b"\x04" or len(value) != 1 + 2 * curve):
            raise KeyProblem("ssh: invalid curve point")  # elliptic.Unmarshal's shape only, not on-curve
        if algorithm == "ssh-rsa" and index == 0:  # the exponent comes first
            exponent = int.from_bytes(value, "big")
            if exponent.bit_length() > 24:
                raise KeyProblem("ssh: exponent too large")
            if exponent < 3 or exponent % 2 == 0:
                raise KeyProblem("ssh: incorrect exponent")
    if rest:
        raise KeyProblem("ssh: trailing junk in public key")
    return algorithm


def _parse_key_field(text):
    """``parseAuthorizedKey``: the base64 blob up to the next blank, decoded and parsed."""
    text = text.strip()
    blob = text[: _first_blank(text)] if _first_blank(text) is not None else text
    offset = b64_error_offset(blob)
    if offset is not None:
        raise KeyProblem("illegal base64 data at input byte %d" % offset)
    try:
        return parse_public_key(base64.b64decode(blob))
    except binascii.Error as exc:  # not reached: the offsets above are Go's checks
        raise KeyProblem(str(exc))


def _first_blank(line):
    found = [i for i in (line.find(b" "), line.find(b"\t")) if i >= 0]
    return min(found) if found else None


def _after_options(line):
    """The line after a leading options field (``ParseAuthorizedKey``'s quote-aware scan), or None."""
    in_quote, i = False, 0
    for i, char in enumerate(line):
        if not in_quote and char in b" \t":
            break
        if char == ord('"') and (i == 0 or line[i - 1] != ord("\\")):
            in_quote = not in_quote
    else:
        i = len(line)
    while i < len(line) and line[i] in b" \t":
        i += 1
    return line[i:] if i < len(line) else None


def authorized_key_error(text):
    """Go's error text for ``text`` as an authorized_keys entry, None when it holds a key."""
    last = None
    for raw in str(text).encode().split(b"\n"):
        line = raw.split(b"\r", 1)[0].strip()
        if not line or line.startswith(b"#"):
            continue
        for candidate in (line, _after_options(line)):
            blank = _first_blank(candidate) if candidate is not None else None
            if blank is None:
                break
            try:
                _parse_key_field(candidate[blank:])
                return None
            except KeyProblem as exc:
                last = str(exc)
    return "ssh: no key found" + ("; last parsing error for ignored line: " + last if last else "")
