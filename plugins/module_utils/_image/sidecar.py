# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Sidecar records of built artifacts: decide whether an ISO can be reused.

A JSON sidecar next to each ISO records the digest of every input, the ISO's
sha256 and the token expiry read from the ISO itself. A re-run with the same
inputs, an intact ISO and a token valid long enough reuses it.
"""

import hashlib
import json
import os
import tempfile

SIDECAR_SUFFIX = ".json"
SIDECAR_VERSION = 1


def inputs_digest(inputs):
    """sha256 of a canonical JSON rendering of the inputs dict."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path, chunk=4 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(chunk)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def sidecar_path(artifact_path):
    return artifact_path + SIDECAR_SUFFIX


def read_sidecar(artifact_path):
    try:
        with open(sidecar_path(artifact_path)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == SIDECAR_VERSION else None


def write_sidecar(artifact_path, record):
    """Write the sidecar atomically (temp file in the same directory, then rename)."""
    path = sidecar_path(artifact_path)
    record = dict(record, version=SIDECAR_VERSION)
    fd, temp = tempfile.mkstemp(
        prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(path) or "."
    )
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return path


def reuse_decision(artifact_paths, digest, now, min_validity_seconds, token_expiry_of, verify_sha=True):
    """Return (reusable, reason) for a set of artifacts built from one input digest.

    ``token_expiry_of(path)`` returns the aware datetime at which the artifact's agent token
    expires (read from the artifact itself), or None if unknown.
    """
    first = artifact_paths[0]
    for path in artifact_paths:
        if not os.path.exists(path):
            return False, "%s does not exist" % path
        record = read_sidecar(path)
        if record is None:
            return False, "%s has no readable sidecar %s" % (path, sidecar_path(path))
        if record.get("inputs_digest") != digest:
            return False, "the inputs changed since %s was built" % path
        if verify_sha and record.get("sha256") != file_sha256(path):
            return False, "%s was modified or damaged since it was built (sha256 differs)" % path
    expiry = token_expiry_of(first)
    if expiry is None:
        return False, "the agent token expiry of %s is unknown" % first
    left = (expiry - now).total_seconds()
    if left < min_validity_seconds:
        return False, "the agent token in %s expires at %s, %s from now, less than min_token_validity (%s)" % (
            first,
            expiry.isoformat(),
            _human(left),
            _human(min_validity_seconds),
        )
    return True, "inputs unchanged, %s intact, token valid until %s" % (first, expiry.isoformat())


def _human(seconds):
    seconds = int(seconds)
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    return "%s%dh%02dm" % (sign, seconds // 3600, (seconds % 3600) // 60)
