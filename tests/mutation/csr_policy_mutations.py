# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Mutation check of the CSR approval policy: is every rule needed by some test?

Disables one rule of plugins/module_utils/_join/policy.py at a time (a check that
always passes, a group rule that refuses nothing, a flood guard that never
fires), runs the unit table against that mutant in a fresh interpreter and
reports whether the tests noticed ("killed") or not ("survived").

    .venv/bin/python tests/mutation/csr_policy_mutations.py

Exit status 0 only when the unmutated policy passes and every mutant is killed.
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICY_MODULE = "ansible_collections.openshift_agent.day2.plugins.module_utils._join.policy"
TEST_FILE = os.path.join("tests", "unit", "plugins", "module_utils", "test_csr_policy.py")
RULE_LISTS = ("CSR_CHECKS", "CLIENT_CHECKS", "SERVING_CHECKS", "GROUP_RULES")
FLOOD_GUARD = "flood_guard"
BASELINE = "none"
# pytest exit status 1 means "some tests failed": the mutant was noticed.
PYTEST_TESTS_FAILED = 1


def mutant_names(policy):
    names = []
    for list_name in RULE_LISTS:
        names += ["%s.%s" % (list_name, rule.__name__) for rule in getattr(policy, list_name)]
    return [*names, FLOOD_GUARD]


def apply_mutant(policy, mutant):
    """Disable the named rule inside the already imported policy module."""
    if mutant == FLOOD_GUARD:

        def never_flood(parsed_csrs, expected_names, now):
            return policy.FloodVerdict(False, 0, policy.flood_threshold(len(expected_names)), "disabled")

        policy.flood_guard = never_flood
        return
    list_name, rule_name = mutant.split(".")
    rules = getattr(policy, list_name)
    index = [rule.__name__ for rule in rules].index(rule_name)
    if list_name == "GROUP_RULES":
        rules[index] = lambda group: {}
    else:
        rules[index] = lambda csr, ctx: None


def run_child(mutant):
    """In a child interpreter: mutate, then run the unit tests; exit with pytest's status."""
    import importlib

    import pytest

    policy = importlib.import_module(POLICY_MODULE)
    if mutant != BASELINE:
        apply_mutant(policy, mutant)
    return pytest.main(["-q", "-x", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", TEST_FILE])


def collections_path():
    """A directory where ansible_collections.openshift_agent.day2 is this repository."""
    parent = tempfile.mkdtemp(prefix="csr-mutation-")
    namespace = os.path.join(parent, "ansible_collections", "openshift_agent")
    os.makedirs(namespace)
    os.symlink(REPO_ROOT, os.path.join(namespace, "day2"))
    return parent


def run_mutant_process(mutant, env):
    # A failing child is a result to report, not an error: check=False.
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mutant],
        cwd=REPO_ROOT,
        env=env,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return mutant, proc.returncode, proc.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_child(args.child)

    collections = collections_path()
    try:
        return run_all(collections)
    finally:
        shutil.rmtree(collections)  # removes the symlink, never what it points to


def run_all(collections):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [collections, env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    _mutant, status, output = run_mutant_process(BASELINE, env)
    if status != 0:
        print(output)
        print("the unmutated policy does not pass its tests (pytest status %d): fix that first" % status)
        return 2

    sys.path.insert(0, collections)
    import importlib

    mutants = mutant_names(importlib.import_module(POLICY_MODULE))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda m: run_mutant_process(m, env), mutants))

    width = max(len(m) for m in mutants)
    survivors = 0
    print("%-*s  result" % (width, "disabled rule"))
    for mutant, status, output in results:
        if status == PYTEST_TESTS_FAILED:
            verdict = "killed"
        elif status == 0:
            verdict = "SURVIVED"
            survivors += 1
        else:
            verdict = "ERROR (pytest status %d)" % status
            survivors += 1
            print(output)
        print("%-*s  %s" % (width, mutant, verdict))
    print("%d mutants, %d killed, %d survived or errored" % (len(results), len(results) - survivors, survivors))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
