# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of openshift_agent.day2.workers_check (documented in plugins/modules/workers_check.py).

It runs on the controller because it reads the inventory and the play itself: every variable of every host of the
group, without passing them (secrets included) through module arguments, and the play's settings as the role will
see them. The checks are module_utils code (``_check``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Callable

import jinja2
import jinja2.meta
from ansible.errors import AnsibleError

from ansible_collections.openshift_agent.day2.plugins.module_utils._check import agent_config as files
from ansible_collections.openshift_agent.day2.plugins.module_utils._check import variables
from ansible_collections.openshift_agent.day2.plugins.module_utils._check.workers import check_workers, connection_lines
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.errors import Day2Error
from ansible_collections.openshift_agent.day2.plugins.module_utils._common.problems import Problems
from ansible_collections.openshift_agent.day2.plugins.module_utils._image import workdir
from ansible_collections.openshift_agent.day2.plugins.module_utils._image.hosts import HOST_KEYS
from ansible_collections.openshift_agent.day2.plugins.plugin_utils.action import Day2Action

FILE_OPTIONS = ("agent_config", "nodes_config")  # the files of hosts
ARGUMENT_SPEC = {
    "group": {"type": "str", "default": "new_workers"},
    "cluster": {"type": "dict", "required": True},
    "require_healthy": {"type": "bool", "default": True},
    "boot_method": {"type": "str", "default": "manual"},
    "serve_iso": {"type": "bool"},
    **{key: {"type": "str", "default": ""} for key in ("replace_node", "iso_url", *FILE_OPTIONS)},
    **{key: {"type": "str", "default": ""} for key in ("cluster_name", "base_domain", *files.IMAGE_FIELDS.values())},
    "openshift_version": {"type": "raw", "default": ""},
    "serve": {"type": "dict", "default": {}},
    "node_labels": {"type": "raw", "default": {}},
    "node_taints": {"type": "raw", "default": []},
}
# The options that describe the play (the cluster meant, the play-wide marks, the files of hosts) rather than a check.
PLAY_OPTIONS = ("cluster_name", "base_domain", "openshift_version", "node_labels", "node_taints", *FILE_OPTIONS)
# plugins/action/ -> the collection's root (roles/, playbooks/).
VAULT_HEADER = b"$ANSIBLE_VAULT;"
COLLECTION_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _templated(value: Any, found: set[str]) -> set[str]:
    """The variables the templates in ``value`` (a raw, untemplated variable) use, as Jinja's own parser finds them."""
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        with contextlib.suppress(jinja2.TemplateError):
            found |= jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(value))
    for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        _templated(item, found)
    return found


@functools.cache
def _encrypted(path: str) -> bool:
    with contextlib.suppress(OSError), open(path, "rb") as stream:
        return stream.read(len(VAULT_HEADER)) == VAULT_HEADER
    return False


def _feeding(raw: dict[str, Any]) -> set[str]:
    """Of a host's raw variables, those that feed another one: used in its templates, or read from an encrypted file
    (known from where ansible-core 2.19 and later says a value was read: its Origin tag)."""
    used = _templated(list(raw.values()), set())
    try:
        from ansible._internal._datatag._tags import Origin  # (no public accessor of a value's origin)
    except ImportError:  # (ansible-core before 2.19)
        return used
    origins = {name: getattr(Origin.get_tag(value), "path", None) for name, value in raw.items()}
    return used | {name for name, path in origins.items() if path and _encrypted(path)}


def _read(get: Callable[[Any], Any], key: Any) -> Any:
    """``get(key)``: a variable's value, templated; Day2Error naming the cause when it cannot be templated."""
    try:
        return get(key)
    except AnsibleError as error:
        raise Day2Error(str(error).splitlines()[0] if str(error) else type(error).__name__)


class ActionModule(Day2Action):
    NAME = "workers_check"
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        problems = Problems()
        settings, known = variables.load_settings(COLLECTION_DIR)
        # The settings' values, templated as the role will see them (one that cannot be is a problem of the play).
        read = functools.partial(_read, lambda name: self._templar.template(task_vars[name]))
        given = variables.sort_variables(variables.PLAY, set(settings) & set(task_vars), read, list(settings), ())
        problems.items += given.problems
        variables.check_settings(given.settings, settings, args["cluster"], problems)
        if given.settings.get("day2_workdir"):  # before preflight creates it, and long before anything is written
            workdir.check(str(given.settings["day2_workdir"]), variables.PLAY, "day2_workdir", problems)
        variables.check_play_names(task_vars, known, problems)
        hosts = self._hosts(task_vars, args, known - set(settings))
        playbook_dir = task_vars.get("playbook_dir")
        agent_hosts, left_alone = files.read_agent_config(args["agent_config"], playbook_dir, problems)
        nodes_hosts, from_file = files.read_nodes_config(args["nodes_config"], playbook_dir, problems)
        image = {key: args.pop(key) for key in files.IMAGE_FIELDS.values()}
        image = files.image_settings(from_file, image, args["nodes_config"], problems)
        play, groups = {key: args.pop(key) for key in PLAY_OPTIONS}, list(task_vars["groups"])
        found: dict[str, Any] = {"agent_hosts": agent_hosts, "nodes_hosts": nodes_hosts, "groups": groups}
        outcome = check_workers(hosts, play=play, problems=problems, **found, **args)
        outcome["image"] = image
        follow_from = str(given.settings.get("day2_follow_from") or "auto")
        outcome["summary"] += connection_lines(args["cluster"], outcome["hosts"], follow_from)
        if left_alone:
            outcome["ignored"]["(agent-config)"] = left_alone
        return dict(outcome, changed=False)

    def _hosts(self, task_vars: dict[str, Any], args: dict[str, Any], ours: set[str]) -> list[Any]:
        """The group's hosts that the run's --limit selects, their variables sorted; ``args`` gets the limit and the
        hosts it left out. ``ours``: the run's own variables (registered, set as facts)."""
        hostvars, members = task_vars["hostvars"], task_vars["groups"].get(args["group"]) or []
        # What every host of the play sees alike (all, extra vars) is what the controller's own host sees. The host
        # the play runs on (localhost, or the limit's first host: playbooks/add_workers.yml) also holds the run's own
        # variables and facts.
        shared = set(hostvars["localhost"])
        own = {task_vars.get("inventory_hostname"): shared | ours | set(task_vars.get("ansible_facts") or {})}
        # The limit: the group's hosts ansible's own inventory manager selects with its patterns (the play's batch
        # restriction aside). HostVars holds the InventoryManager; it has no public accessor.
        chosen = {host.name for host in hostvars._inventory.get_hosts(args["group"], ignore_restrictions=True)}
        args.update(limit=task_vars.get("ansible_limit") or "", left_out=[n for n in members if n not in chosen])
        hosts = []
        for name in (name for name in members if name in chosen):
            read, feeding = functools.partial(_read, hostvars[name].__getitem__), _feeding(dict(hostvars.raw_get(name)))
            found = variables.sort_variables(name, hostvars[name], read, HOST_KEYS, own.get(name, shared), feeding)
            hosts.append(found)
        return hosts
