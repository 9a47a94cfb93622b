# Copyright (c) openshift_agent.day2 contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's EXAMPLES, checked against the argument spec the module's code validates its task arguments with:
each task of this collection in them uses only options of that module's spec, every required option, and values of
the right type and choices (ansible's ArgumentSpecValidator, as the module or action plugin runs it).

The spec is taken from the code that validates it, not copied: a module's ``AnsibleModule(...)`` (kubernetes.core's
AnsibleK8SModule builds one) is caught when ``main()`` builds it; an action plugin's ``validate_argument_spec(...)``
call is caught when its ``run()`` makes it (plugins/action/*.py, with ``_join/engine.py`` FOLLOW_OPTIONS for
agent_wait and csr_approve). A value that is a Jinja expression is known only when the play runs: its option must
exist, and counts as given, but its type is not checked here. ``ansible-doc`` on the built tarball is run by
tests/integration/test_examples.py. (This file is in tests/unit/plugins/action: ansible-test runs it as controller code,
which may import the action plugins and ansible's task parser.)
"""

import importlib
import pathlib
import types

import pytest
import yaml
from ansible.module_utils import basic
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.testing import patch_module_args
from ansible.parsing.splitter import parse_kv

COLLECTION = pathlib.Path(__file__).resolve().parents[4]
PREFIX = "openshift_agent.day2."
PACKAGE = "ansible_collections.openshift_agent.day2.plugins"
MODULES = sorted(p.stem for p in (COLLECTION / "plugins" / "modules").glob("*.py") if p.name != "__init__.py")
# Keys of a task that are not module names (ansible's task keywords the examples use).
TASK_KEYWORDS = {"name", "register", "loop", "when", "no_log", "tags", "vars", "block", "rescue", "always"}


class Caught(Exception):
    """The argument spec (and its constraints) the code was about to validate with."""

    def __init__(self, spec):
        super().__init__("argument spec caught")
        self.spec = spec


def spec_of(name, monkeypatch):
    """{argument_spec, mutually_exclusive, ...} of module ``name``, from the code that validates its arguments."""
    if (COLLECTION / "plugins" / "action" / (name + ".py")).exists():
        cls = importlib.import_module("%s.action.%s" % (PACKAGE, name)).ActionModule

        def catch_action(self, argument_spec=None, **constraints):
            raise Caught(dict(constraints, argument_spec=argument_spec))

        monkeypatch.setattr(cls, "validate_argument_spec", catch_action)
        task = types.SimpleNamespace(args={}, check_mode=False, async_val=0, action=PREFIX + name, diff=False)
        connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir="/nonexistent"))

        def run():
            return cls(task, connection, None, None, None, None).run(task_vars={})

    else:
        module = importlib.import_module("%s.modules.%s" % (PACKAGE, name))

        def catch_module(self, argument_spec=None, **kwargs):
            keep = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")
            raise Caught(dict({k: v for k, v in kwargs.items() if k in keep}, argument_spec=argument_spec))

        monkeypatch.setattr(basic.AnsibleModule, "__init__", catch_module)

        def run():
            with patch_module_args({}):
                module.main()

    with pytest.raises(Caught) as caught:
        run()
    return caught.value.spec


def tasks_of(tasks):
    """Every task of a list of tasks, those inside blocks too."""
    for task in tasks or []:
        assert isinstance(task, dict), "EXAMPLES holds a task that is not a mapping: %r" % (task,)
        yield task
        for key in ("block", "rescue", "always"):
            yield from tasks_of(task.get(key))


def collection_calls(examples):
    """(module name, its arguments) of every task of EXAMPLES that calls a module of this collection."""
    for task in tasks_of(yaml.safe_load(examples)):
        for key, value in task.items():
            if key in TASK_KEYWORDS:
                continue
            short = key[len(PREFIX) :] if key.startswith(PREFIX) else None
            if short is None:
                continue
            args = parse_kv(value) if isinstance(value, str) else dict(value or {})
            yield short, task.get("name", "(unnamed)"), args


def templated(value):
    return isinstance(value, str) and "{{" in value


def problems_of(spec, args):
    """What ArgumentSpecValidator refuses in ``args``; Jinja values count as given, their type unchecked."""
    known = set(spec["argument_spec"])
    for option in spec["argument_spec"].values():
        known.update(option.get("aliases") or [])
    problems = ["unknown option %r (not in the module's argument spec)" % key for key in args if key not in known]
    concrete = {key: value for key, value in args.items() if key in known and not templated(value)}
    later = {key for key, value in args.items() if templated(value)}
    result = ArgumentSpecValidator(**spec).validate(concrete)
    for error in result.errors:
        message = str(error)
        if (
            type(error).__name__ == "RequiredError"
            and later
            and all(k in later for k in message.rsplit(": ", maxsplit=1)[-1].split(", "))
        ):
            continue  # required, given as an expression
        problems.append(message)
    return problems


def examples_of(name):
    return importlib.import_module("%s.modules.%s" % (PACKAGE, name)).EXAMPLES


def test_every_module_is_found():
    assert {"access_check", "agent_wait", "boot_hosts", "csr_approve", "day1_facts", "day2_iso"} <= set(MODULES)
    assert {"iso_info", "iso_serve", "workers_check"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_every_module_call_it_with_options_of_its_argument_spec(name, monkeypatch):
    examples = examples_of(name)
    calls = list(collection_calls(examples))
    assert any(called == name for called, _task, _args in calls), "the EXAMPLES of %s never call it" % name
    specs = {}
    problems = []
    for called, task, args in calls:
        assert called in MODULES, "%s EXAMPLES task %r calls %s%s, which does not exist" % (name, task, PREFIX, called)
        if called not in specs:
            specs[called] = spec_of(called, monkeypatch)
            monkeypatch.undo()
        problems += ["%s EXAMPLES task %r (%s): %s" % (name, task, called, p) for p in problems_of(specs[called], args)]
    assert problems == []


@pytest.mark.parametrize(
    "name, args, needle",
    [
        ("day2_iso", {"dest": "/d", "hosts": [{"name": "w", "mac_adress": "x"}]}, "mac_adress"),
        ("day2_iso", {"dest": "/d", "hosts": [{"name": "w"}], "pxe": "sometimes"}, "pxe"),
        ("day2_iso", {"dest": "/d"}, "hosts"),
        ("csr_approve", {"hosts": [], "boot_timout": 10}, "boot_timout"),
        ("csr_approve", {"hosts": [], "boot_timeout": "ten"}, "boot_timeout"),
        ("agent_wait", {"hosts": "{{ x }}", "until": "joined-already"}, "until"),
        ("iso_info", {"min_validity": "1h"}, "path"),
        ("access_check", {"plan": ["gather", "dance"]}, "plan"),
    ],
)
def test_the_check_refuses_what_the_module_refuses(name, args, needle, monkeypatch):
    problems = problems_of(spec_of(name, monkeypatch), args)
    assert problems and any(needle in p for p in problems), problems


def test_an_expression_counts_as_given_but_an_unknown_option_does_not():
    spec = {"argument_spec": {"hosts": {"type": "list", "required": True}, "wait": {"type": "bool"}}}
    assert problems_of(spec, {"hosts": "{{ plan.hosts }}", "wait": False}) == []
    assert problems_of(spec, {"hosts": "{{ plan.hosts }}", "waiting": "{{ x }}"}) == [
        "unknown option 'waiting' (not in the module's argument spec)"
    ]
