# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Mutation check of the CSR approval policy: is every rule needed by some test?

Disables one rule of the policy in plugins/module_utils/_join/csr.py at a time (a check of CSR_CHECKS,
CLIENT_CHECKS or SERVING_CHECKS that always passes; host_csrs without its grouping of a host's client CSRs by
public key, or approving every valid serving CSR instead of the newest one, or once more after one is approved;
a flood guard that never fires), runs the unit tests of the policy and of the engine that applies it against that
mutant in a fresh interpreter and reports whether the tests noticed ("killed") or not ("survived").

    PYTHONPATH=.collections .venv/bin/python tests/mutation/csr_policy_mutations.py

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
POLICY_MODULE = "ansible_collections.openshift_agent.day2.plugins.module_utils._join.csr"
TEST_DIR = os.path.join("tests", "unit", "plugins", "module_utils")
TEST_FILES = [os.path.join(TEST_DIR, name) for name in ("test_join_csr.py", "test_join_engine.py")]
RULE_LISTS = ("CSR_CHECKS", "CLIENT_CHECKS", "SERVING_CHECKS")
BASELINE = "none"
# pytest exit status 1 means "some tests failed": the mutant was noticed.
PYTEST_TESTS_FAILED = 1


def policy():
    import importlib

    return importlib.import_module(POLICY_MODULE)


def _valid_serving(module, csrs, ctx, host):
    """The pending serving CSRs of ``host`` that pass every check (host_csrs' candidates)."""
    return [
        csr
        for csr in csrs
        if csr.host == host and csr.signer == module.SERVING_SIGNER and module.first_finding(csr, ctx) is None
    ]


def without_key_grouping(module, original):
    """Every pending client CSR counts as the kubelet's, whatever its key: no rogue, no ambiguous keys."""

    def host_csrs(csrs, ctx, host):
        found = original(csrs, ctx, host)
        found.client = sorted(found.pending, key=lambda csr: (csr.created_text or "", csr.name or ""))
        found.rogue, found.ambiguous, found.key = [], [], None
        return found

    return host_csrs


def every_valid_serving(module, original):
    """Every valid pending serving CSR is approved, not only the newest."""

    def host_csrs(csrs, ctx, host):
        found = original(csrs, ctx, host)
        found.serving = _valid_serving(module, csrs, ctx, host) if found.serving else []
        return found

    return host_csrs


def serving_again(module, original):
    """The newest serving CSR is approved even after one of this installation is approved."""

    def host_csrs(csrs, ctx, host):
        found = original(csrs, ctx, host)
        valid = _valid_serving(module, csrs, ctx, host)
        found.serving = [max(valid, key=lambda csr: (csr.created_text or "", csr.name or ""))] if valid else []
        return found

    return host_csrs


# Mutants of host_csrs (the CSRs of one host together) and of the flood guard, by name.
GROUPING = {
    "host_csrs.client_keys": without_key_grouping,
    "host_csrs.newest_serving": every_valid_serving,
    "host_csrs.one_serving": serving_again,
}
FLOOD = "flood"


def mutant_names():
    module = policy()
    names = ["%s.%s" % (list_name, rule.__name__) for list_name in RULE_LISTS for rule in getattr(module, list_name)]
    return [*names, *GROUPING, FLOOD]


def apply_mutant(mutant):
    """Disable the named rule inside the imported policy module (the engine and the tests call it through the
    module object, the rule lists are changed in place)."""
    module = policy()
    if mutant == FLOOD:
        module.flood = lambda csrs, hosts, now: None
        return
    if mutant in GROUPING:
        module.host_csrs = GROUPING[mutant](module, module.host_csrs)
        return
    list_name, rule_name = mutant.split(".")
    rules = getattr(module, list_name)
    rules[[rule.__name__ for rule in rules].index(rule_name)] = lambda csr, ctx: None


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
