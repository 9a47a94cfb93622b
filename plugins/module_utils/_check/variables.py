# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a new worker's inventory variables are settings of this collection, which are typos of one, and
which belong to something else.

A host's variables in a play are everything Ansible knows about it: its own, its groups', ``all``'s, the extra
variables and Ansible's own. Settings (the known host keys) are always read from the host. Of the other names,
Ansible's own and those every host of the play has alike (``all``, extra variables: what the play's own host
sees too) are nobody's mistake; a name close to a known key is a typo and refused, naming the key it resembles;
any other name is left alone and reported, since other plays may set it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any

# Ansible's own variables, present on every host ("Special Variables" of the Ansible documentation).
MAGIC_VARIABLES = frozenset(
    (
        "environment",
        "group_names",
        "groups",
        "hostvars",
        "inventory_dir",
        "inventory_file",
        "inventory_hostname",
        "inventory_hostname_short",
        "omit",
        "play_hosts",
        "playbook_dir",
        "role_name",
        "role_names",
        "role_path",
        "vars",
    )
)
# How alike a name must be to a known key to be called its typo (difflib ratio): "gatway" and "dns_server" are,
# "rack" is not.
TYPO_RATIO = 0.75


class HostVariables:
    """One host's variables, sorted: ``settings`` (known key -> value), ``typos`` ([(name, known key)]) and
    ``foreign`` (names left alone)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.settings: dict[str, Any] = {}
        self.typos: list[tuple[str, str]] = []
        self.foreign: list[str] = []


def is_own_or_shared(name: str, shared: Container[str]) -> bool:
    """Ansible's variables and those every host of the play has alike are nobody's host setting."""
    return name.startswith("ansible_") or name in MAGIC_VARIABLES or name in shared


def sort_variables(
    host: str, names: Iterable[str], read: Callable[[str], Any], known: Sequence[str], shared: Container[str]
) -> HostVariables:
    """Sort the variable ``names`` of ``host``; ``read(name)`` gives a value (only known keys are read)."""
    found = HostVariables(host)
    for name in sorted(names):
        if name in known:
            found.settings[name] = read(name)
        elif not is_own_or_shared(name, shared):
            close = difflib.get_close_matches(name, known, n=1, cutoff=TYPO_RATIO)
            if close:
                found.typos.append((name, close[0]))
            else:
                found.foreign.append(name)
    return found
