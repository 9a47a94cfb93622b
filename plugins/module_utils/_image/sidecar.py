# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sidecar records of built artifacts, and the one decision whether an artifact (ISO or PXE files) can be reused.

A JSON sidecar next to each artifact (``node.<arch>.iso.json``, ``boot-artifacts/<arch>.json``) records the digest
of every input, each file written with its sha256 and size, the agent token expiry read from the artifact when
it was built and the nodes-config it was built from, secrets redacted (``nodes_config``, the "before" of the
next run's --diff). It holds no secret. A re-run with the same inputs, files that still have their sha256 and a
token valid long enough reuses the artifact.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import tempfile
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.clock import parse_rfc3339

SIDECAR_SUFFIX = ".json"
# 2: one shape for ISO and PXE (``files``); a sidecar of another version is not read, the artifact is rebuilt.
SIDECAR_VERSION = 2


def inputs_digest(inputs: dict[str, Any]) -> str:
    """sha256 of a canonical JSON rendering of the inputs dict."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: str, chunk: int = 4 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            block = handle.read(chunk)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def sidecar_path(artifact_path: str) -> str:
    return artifact_path.rstrip(os.sep) + SIDECAR_SUFFIX


def read_sidecar(artifact_path: str) -> dict[str, Any] | None:
    """The sidecar record of ``artifact_path``; None when it is missing, unreadable or of another version."""
    try:
        with open(sidecar_path(artifact_path)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == SIDECAR_VERSION else None


def write_sidecar(artifact_path: str, record: dict[str, Any]) -> str:
    """Write the sidecar atomically (temp file in the same directory, then rename); return its path."""
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
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return path


def reuse_decision(
    artifact_path: str, digest: str, now: datetime.datetime, min_validity_seconds: float
) -> tuple[bool, str]:
    """Return (reusable, reason) for the artifact at ``artifact_path`` (an ISO, or a directory of PXE files).

    Reusable when its sidecar records the inputs ``digest``, every file it records still has its sha256, and the
    agent token it recorded is valid for at least ``min_validity_seconds`` after ``now``.
    """
    record = read_sidecar(artifact_path)
    if record is None:
        if not os.path.exists(artifact_path):
            return False, "%s does not exist" % artifact_path
        return False, "%s has no readable sidecar %s" % (artifact_path, sidecar_path(artifact_path))
    if record.get("inputs_digest") != digest:
        return False, "the inputs changed since %s was built" % artifact_path
    files = [entry for entry in record.get("files") or [] if isinstance(entry, dict)]
    if not files:
        return False, "the sidecar %s records no files" % sidecar_path(artifact_path)
    for entry in files:
        path = entry.get("path")
        if not isinstance(path, str) or not os.path.isfile(path):
            return False, "%s does not exist" % path
        if entry.get("sha256") != file_sha256(path):
            return False, "%s was modified or damaged since it was built (sha256 differs)" % path
    try:
        expiry = parse_rfc3339(record.get("token_expiry"))
    except ValueError:
        expiry = None
    if expiry is None:
        return False, "the agent token expiry of %s is unknown" % artifact_path
    left = (expiry - now).total_seconds()
    if left < min_validity_seconds:
        return False, "the agent token in %s expires at %s, %s from now, less than min_token_validity (%s)" % (
            artifact_path,
            expiry.isoformat(),
            _human(left),
            _human(min_validity_seconds),
        )
    return True, "inputs unchanged, %s intact, token valid until %s" % (artifact_path, expiry.isoformat())


def _human(seconds: float) -> str:
    whole = int(seconds)
    sign = "-" if whole < 0 else ""
    whole = abs(whole)
    return "%s%dh%02dm" % (sign, whole // 3600, (whole % 3600) // 60)
