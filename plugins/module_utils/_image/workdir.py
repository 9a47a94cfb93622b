# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work directory (``day2_workdir``, day2_iso's ``dest``): the ISO and PXE files in it carry the pull secret
and the agent token, so only the user that runs the play may write it, and none of the files the collection writes
or reads there may be a symbolic link.

A directory another user owns, or one others can write, lets them put a symlink where an artifact or a sidecar
goes, swap a file between its check and its use, or read what is written. It is refused before anything is
written, to the cluster or to the directory: preflight (workers_check) and day2_iso both ask :func:`check`.

What is written there never follows a symlink anyway: every file is created as a new temporary file
(``tempfile.mkstemp``: ``O_CREAT | O_EXCL``, which fails on any existing name, a symlink included) and renamed
over the final name (a rename replaces a symlink, it never writes through it); the sidecars and files read back
are opened with ``O_NOFOLLOW`` (:func:`open_nofollow`).

Loaded by the check step too: this file imports neither the pod exec nor the ISO reader.
"""

from __future__ import annotations

import os
import pwd
import stat
from typing import IO, Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems

# What the collection writes into the work directory: node.<arch>.iso and agentconfig.noarch.iso with their
# sidecars, boot-artifacts/ (and everything under it), the ISO server's pidfile, token and log.
ARTIFACT_PREFIXES = ("node.", "agentconfig.", "boot-artifacts", "iso-serve.")


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def symlinks(path: str) -> list[str]:
    """The entries of ``path`` the collection writes or reads (everything under a real boot-artifacts/ too) that are
    symbolic links."""
    top = [os.path.join(path, name) for name in sorted(os.listdir(path)) if name.startswith(ARTIFACT_PREFIXES)]
    below = [os.path.join(r, n) for e in top if not os.path.islink(e) for r, ds, fs in os.walk(e) for n in ds + fs]
    return [entry for entry in top + sorted(below) if os.path.islink(entry)]


def check(path: str, scope: str, field: str, problems: Problems | None = None) -> Problems:
    """``problems`` (else new ones) with what makes the work directory ``path`` unsafe, as ``scope``'s ``field``:
    owned by another user, writable by others, an artifact that is a symlink. A directory that does not exist yet is
    fine (preflight creates it, mode 0700)."""
    problems, uid, fixed = problems or Problems(), os.geteuid(), os.path.expanduser(path)
    where = f"{path} ({fixed})" if fixed != path else path

    def add(what: str, fix: str) -> None:
        problems.add(scope, field, path, what, fix + "; it holds the pull secret and the agent token")

    try:
        link, info = os.lstat(fixed), os.stat(fixed)
    except FileNotFoundError:
        return problems
    if stat.S_ISLNK(link.st_mode) and link.st_uid != uid:
        add(f"is a symbolic link owned by user {_user(link.st_uid)}", "use a directory of your own instead")
        return problems
    if not stat.S_ISDIR(info.st_mode):
        add("is not a directory", "give a directory, or a path where one can be created")
        return problems
    if info.st_uid != uid:
        add(
            f"is owned by user {_user(info.st_uid)} (uid {info.st_uid}), not by {_user(uid)} (uid {uid}) that runs it",
            f"use a directory of your own, or have its owner give it to you (chown {_user(uid)} {where})",
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        add(f"can be written by others (mode {stat.S_IMODE(info.st_mode):04o})", f"chmod 0700 {where}")
    for entry in symlinks(fixed) if os.access(fixed, os.R_OK | os.X_OK) else []:
        what = f"holds {entry}, a symbolic link (to {os.readlink(entry)}), where the run writes or reads its files"
        add(what, f"remove the link (rm {entry}): the run never follows one")
    return problems


def open_nofollow(path: str, mode: str = "rb") -> IO[Any]:
    """``path`` opened for reading without following a symbolic link (OSError ELOOP for one)."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), mode)
