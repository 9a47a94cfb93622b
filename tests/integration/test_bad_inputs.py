"""The bad-input corpus: realistic inventory and variable mistakes, each refused before any write to the cluster.

Every row of bad_inputs.yml is one mistake: the inventory snippet (host, group, extra variables) and what the
refusal must say. Each runs the real playbook, playbooks/add_workers.yml, against one lab per xdist worker (reset
between cases) and must end with rc != 0, a problem naming the host, the field and the value with the expected
words (or, for a setting of the wrong type, the role's argument validation naming the setting and the value), and
no write request in the lab's log.
"""

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO, VENV_BIN, ansible_env, lab_env, run_ansible

PLAYBOOK = REPO / "playbooks" / "add_workers.yml"
CASES = yaml.safe_load((Path(__file__).with_name("bad_inputs.yml")).read_text())
HOST_KEYS = ("ip", "mac_address", "prefix_length", "gateway", "dns_servers")
MAX_SHOWN = 120  # a message shows a value's JSON up to this length
PASSWORD = "BMC-PASSWORD-never-shown-5c1e"
BMC = {
    "bmc_address": "redfish-virtualmedia+https://127.0.0.1:9/redfish/v1/Systems/1",
    "bmc_username": "admin",
    "bmc_password": PASSWORD,
}


@pytest.fixture(scope="module")
def labs(lab_factory):
    """One lab per variant, started on first use by this worker and kept for every case it runs."""
    started = {}

    def get(variant):
        if variant not in started:
            started[variant] = lab_factory("--variant", variant, "--hosts", "2")
        return started[variant]

    return get


def merged(base, changes):
    """base updated with changes; a null value removes the variable."""
    result = dict(base)
    for key, value in (changes or {}).items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def inventory(lab, case, path):
    """The lab's two good hosts with the case's mistakes, written as YAML (what a user writes)."""
    base = [{key: host[key] for key in HOST_KEYS} for host in lab.info["hosts"]]
    names = [host["name"] for host in lab.info["hosts"]]
    hosts = {}
    for index, (name, variables) in enumerate(zip(names, base)):
        if case.get("redfish"):
            variables = dict(variables, **BMC)
        variables = merged(variables, case.get("host%d" % index))
        hosts[(case.get("rename") or {}).get(name, name)] = variables
    hosts.update(case.get("hosts") or {})
    group = merged({}, case.get("group"))
    play = merged({"kubeconfig": lab.kubeconfig}, case.get("all"))
    document = {"all": {"vars": play, "children": {"new_workers": {"hosts": hosts, "vars": group}}}}
    document["all"]["children"].update(case.get("groups") or {})
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def run(lab, case, tmp_path):
    inventory_path = tmp_path / "inventory.yml"
    inventory(lab, case, inventory_path)
    extra = dict({"day2_workdir": str(tmp_path / "work")}, **(case.get("extra") or {}))
    if case.get("redfish"):
        extra.setdefault("day2_boot_method", "redfish")
        extra.setdefault("day2_iso_url", "http://127.0.0.1:9/node.x86_64.iso")
    command = [str(VENV_BIN / "ansible-playbook"), str(PLAYBOOK), "-i", str(inventory_path), "-e", json.dumps(extra)]
    proc = run_ansible(command, ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", **lab_env(lab)), 300)
    return proc.returncode, proc.stdout, proc.stderr


def failures(stdout):
    """The failed task results of the run (the JSON callback's document)."""
    document = json.loads(stdout[stdout.index("{") :])
    return [
        result
        for play in document["plays"]
        for task in play["tasks"]
        for result in task["hosts"].values()
        if result.get("failed")
    ]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_mistake_is_refused_before_any_write(labs, case, tmp_path):
    lab = labs(case.get("lab", "default"))
    lab.reset_log()
    rc, stdout, stderr = run(lab, case, tmp_path)
    assert rc != 0, stdout[-3000:]
    assert lab.writes() == [], "written before the refusal: %s" % lab.writes()
    expect = case["expect"]
    if "argument" in expect:  # refused by the role's argument validation, before any task
        errors = [
            error
            for result in failures(stdout)
            if result.get("action") == "ansible.builtin.validate_argument_spec"
            for error in result.get("argument_errors") or []
        ]
        named = ("argument '%s' " % expect["argument"], "value of %s " % expect["argument"])
        matching = [error for error in errors if error.startswith(named) and expect["says"] in error]
        assert matching and str(expect["value"]) in matching[0], errors or stdout[-3000:]
        assert PASSWORD not in stdout + stderr
        return
    problems = [problem for result in failures(stdout) for problem in result.get("problems") or []]
    for named in [expect, *case.get("also", [])]:  # ("also": more problems the same round must name)
        assert_named(problems, named, stdout)
    assert PASSWORD not in stdout + stderr


def assert_named(problems, expect, stdout):
    matching = [
        problem
        for problem in problems
        if problem["host"] == expect["host"]
        and problem["field"] == expect["field"]
        and expect["says"] in problem["message"]
    ]
    assert matching, "no problem of host %s, field %s saying %r among:\n%s" % (
        expect["host"],
        expect["field"],
        expect["says"],
        "\n".join(problem["message"] for problem in problems) or stdout[-3000:],
    )
    problem = matching[0]
    if "value" in expect:
        assert problem["value"] == expect["value"], problem
    # The message names the host (or the play's scope), the field and the value.
    scope = expect["host"][1:-1] if expect["host"].startswith("(") else "host %s" % expect["host"]
    shown = json.dumps(problem["value"], sort_keys=True)
    shown = shown if len(shown) <= MAX_SHOWN else shown[:MAX_SHOWN] + "..."
    assert problem["message"].startswith('%s: field "%s" value %s ' % (scope, expect["field"], shown)), problem
