# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Mutation check of the CSR approval policy: is every rule needed by some test?

Disables one rule of the policy in plugins/module_utils/_join/ at a time (a check
of checks.py that always passes, a group rule of policy.py that refuses nothing,
a flood guard of flood.py that never fires), runs the policy's unit tests against
that mutant in a fresh interpreter and reports whether the tests noticed
("killed") or not ("survived").

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
JOIN_PACKAGE = "ansible_collections.openshift_agent.day2.plugins.module_utils._join"
TEST_DIR = os.path.join("tests", "unit", "plugins", "module_utils")
TEST_FILES = [os.path.join(TEST_DIR, name) for name in ("test_csr_checks.py", "test_csr_policy.py")]
# The rule lists, by the module (of JOIN_PACKAGE) that holds them.
RULE_LISTS = {
    "CSR_CHECKS": "checks",
    "CLIENT_CHECKS": "checks",
    "SERVING_CHECKS": "checks",
    "GROUP_RULES": "policy",
}
FLOOD_GUARD = "flood_guard"
BASELINE = "none"
# pytest exit status 1 means "some tests failed": the mutant was noticed.
PYTEST_TESTS_FAILED = 1


def join_module(name):
    import importlib

    return importlib.import_module("%s.%s" % (JOIN_PACKAGE, name))


def mutant_names():
    names = []
    for list_name, module in RULE_LISTS.items():
        names += ["%s.%s" % (list_name, rule.__name__) for rule in getattr(join_module(module), list_name)]
    return [*names, FLOOD_GUARD]


def apply_mutant(mutant):
    """Disable the named rule inside the already imported policy modules (the lists are changed in place)."""
    if mutant == FLOOD_GUARD:
        flood = join_module("flood")

        def never_flood(csrs, expected_names, now, threshold):
            return flood.FloodVerdict(False, 0, threshold, "disabled")

        flood.flood_guard = never_flood
        return
    list_name, rule_name = mutant.split(".")
    rules = getattr(join_module(RULE_LISTS[list_name]), list_name)
    index = [rule.__name__ for rule in rules].index(rule_name)
    if list_name == "GROUP_RULES":
        rules[index] = lambda group: {}
    else:
        rules[index] = lambda csr, ctx: None


def run_child(mutant):
    """In a child interpreter: mutate, then run the unit tests; exit with pytest's status."""
    import pytest

    if mutant != BASELINE:
        apply_mutant(mutant)
    return pytest.main(["-q", "-x", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", *TEST_FILES])


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
    mutants = mutant_names()
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
