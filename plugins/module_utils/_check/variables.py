# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a new worker's inventory variables are settings of this collection, which are mistakes, and which
belong to something else.

A host's variables in a play are everything Ansible knows about it: its own, its groups', ``all``'s, the extra
variables and Ansible's own. Settings (the known host keys) are always read from the host. Of the other names:

- Ansible's own, those every host of the play has alike (``all``, extra variables: what the play's own host sees
  too) and the login variables the playbooks read from the group (``kubeconfig``...) are nobody's mistake;
- a name that resembles a host key (``gatway``, ``dns_server``, ``mac``, ``bmc_user``, ``rootDeviceHints``) is a
  typo and refused, naming the key;
- a play variable of this collection (``day2_*``, a role option such as ``boot_method``) set on the new workers
  only is refused: the roles read it from the play, where it would be missing;
- any other name is left alone and reported, since other plays' groups may set it on the same hosts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any

from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import secret_host_keys

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
# The login of every run, which playbooks/vars/auth.yml reads from the play or from the new workers' group.
LOGIN_VARIABLES = frozenset(("kubeconfig", "context", "k8s_host", "k8s_api_key", "k8s_validate_certs", "k8s_ca_cert"))
# The collection's own namespace of play variables.
PLAY_PREFIX = "day2_"
# How alike a name must be to a known key to be called its typo (difflib ratio): "gatway" and "dns_server" are,
# "rack" is not. With as many words as the key, every word must also be alike, so "ntp_servers" is no typo of
# "dns_servers"; with another number of words the whole name must be closer.
TYPO_RATIO = 0.75
WORD_RATIO = 0.5
TYPO_RATIO_OTHER_WORDS = 0.85
# A name that begins a key ("mac", "bmc_user", "root_device") or ends one ("username") must be this long.
MIN_PART = 3
# Other names people give the host keys (as normalized by ``normalized``).
SYNONYMS = {
    "ipv4": "ip",
    "ipv4_address": "ip",
    "ip_address": "ip",
    "address": "ip",
    "netmask": "prefix_length",
    "mask": "prefix_length",
    "cidr": "prefix_length",
    "ipv4_prefix": "prefix_length",
    "ipv4_prefix_length": "prefix_length",
    "ipv4_gateway": "gateway",
    "gw": "gateway",
    "ipv6_gw": "ipv6_gateway",
    "ipv6_address": "ipv6",
    "nameservers": "dns_servers",
    "name_servers": "dns_servers",
    "resolvers": "dns_servers",
    "nmstate": "network_config",
    "nic": "interface",
    "nics": "interfaces",
    "arch": "cpu_architecture",
    "architecture": "cpu_architecture",
    "disk": "root_device_hints",
    "install_disk": "root_device_hints",
    "installation_disk": "root_device_hints",
    "bmc": "bmc_address",
    "bmc_ip": "bmc_address",
    "bmc_url": "bmc_address",
    "bmc_host": "bmc_address",
    "ipmi_address": "bmc_address",
    "redfish_address": "bmc_address",
    "redfish_url": "bmc_address",
    "bmc_pass": "bmc_password",
    "bmc_user": "bmc_username",
    "bmc_login": "bmc_username",
}
# A value of a name that looks like this is never shown (it may be a password under a misspelt name).
SECRET_NAME = re.compile(r"pas+w|secret|token|credential|api_?key", re.IGNORECASE)
NOT_SHOWN = "(not shown)"


class HostVariables:
    """One host's variables, sorted: ``settings`` (known key -> value), ``typos`` ([(name, known key, value
    shown)]), ``misplaced`` ([(name, value shown)]: play variables set on the host only), ``foreign`` (names
    left alone), ``unreadable`` (host keys whose value cannot be templated, and why) and ``source`` (where the host
    is defined: "" for the inventory, else the path of the day-1 agent-config.yaml)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = ""
        self.settings: dict[str, Any] = {}
        self.typos: list[tuple[str, str, Any]] = []
        self.misplaced: list[tuple[str, Any]] = []
        self.foreign: list[str] = []
        self.unreadable: list[tuple[str, str]] = []  # (host key, why its value cannot be templated)


def normalized(name: str) -> str:
    """``rootDeviceHints``, ``Root-Device-Hints`` and ``ROOT_DEVICE_HINTS`` all become ``root_device_hints``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return re.sub(r"[-_\s.]+", "_", spaced).strip("_").lower()


def _alike(name: str, key: str) -> bool:
    """A misspelling (difflib), word by word when both have as many words."""
    if difflib.SequenceMatcher(None, name, key).ratio() < TYPO_RATIO:
        return False
    words, key_words = name.split("_"), key.split("_")
    if len(words) != len(key_words):
        return difflib.SequenceMatcher(None, name, key).ratio() >= TYPO_RATIO_OTHER_WORDS
    return all(difflib.SequenceMatcher(None, a, b).ratio() >= WORD_RATIO for a, b in zip(words, key_words))


def close_key(name: str, known: Sequence[str]) -> str | None:
    """The known key ``name`` is most likely a mistake for, or None.

    In this order: equal but for case, ``-``/``_`` and camelCase (``rootDeviceHints``, ``vlanid``); another name
    people use (``netmask``, ``gw``); the beginning of a key (``mac``, ``bmc_user``, ``root_device``); a key with
    more words after it (``ip_address``, ``gateway_ip``) or before it (``default_gateway``); a misspelling
    (``gatway``, ``dns_server``, ``root_device_hint``).
    """
    norm = normalized(name)
    squashed = norm.replace("_", "")
    for key in known:
        if squashed == key.replace("_", ""):
            return key
    if SYNONYMS.get(norm) in known:
        return SYNONYMS[norm]
    if len(norm) >= MIN_PART:
        starts = sorted((key for key in known if key.startswith(norm)), key=len)
        if starts:
            return starts[0]
    close = [key for key in difflib.get_close_matches(norm, known, n=3, cutoff=TYPO_RATIO) if _alike(norm, key)]
    if close:
        return close[0]
    longer = sorted((key for key in known if norm.startswith(key + "_") or norm.endswith("_" + key)), key=len)
    if longer:
        return longer[-1]
    ends = sorted((key for key in known if len(norm) > MIN_PART and key.endswith("_" + norm)), key=len)
    return ends[0] if ends else None


def is_own_or_shared(name: str, shared: Container[str]) -> bool:
    """Ansible's variables, the login and those every host of the play has alike are nobody's host setting."""
    return name.startswith("ansible_") or name in MAGIC_VARIABLES or name in LOGIN_VARIABLES or name in shared


def shown(name: str, key: str, read: Callable[[str], Any], secret_keys: Container[str]) -> Any:
    """The value of a variable as a message may show it: never a secret's, nor one that cannot be read."""
    if key in secret_keys or SECRET_NAME.search(name):
        return NOT_SHOWN
    try:
        return read(name)
    except Day2Error:
        return "(cannot be templated)"


def sort_variables(
    host: str,
    names: Iterable[str],
    read: Callable[[str], Any],
    known: Sequence[str],
    shared: Container[str],
    play_variables: Container[str] = (),
) -> HostVariables:
    """Sort the variable ``names`` of ``host``; ``read(name)`` gives a value (raises Day2Error when it cannot be
    templated). ``play_variables``: the role options of this collection (read from the play, not from hosts).
    The value of a mistake is shown unless it is, or resembles, a secret host key (``bmc_pasword``)."""
    found = HostVariables(host)
    secret_keys = secret_host_keys()
    for name in sorted(names):
        if name in known:
            try:
                found.settings[name] = read(name)
            except Day2Error as error:
                found.unreadable.append((name, error.message))
        elif is_own_or_shared(name, shared):
            continue
        elif name.startswith(PLAY_PREFIX) or name in play_variables:
            found.misplaced.append((name, shown(name, name, read, secret_keys)))
        else:
            key = close_key(name, known)
            if key:
                found.typos.append((name, key, shown(name, key, read, secret_keys)))
            else:
                found.foreign.append(name)
    return found
