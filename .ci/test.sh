#!/usr/bin/env bash
# Every test of the project: a Python 3.9 compile check, units, the lab's own tests, integration against the lab,
# the resilience matrix (tests/slow),
# ansible-test sanity (two ansible-core releases), ansible-lint + changelog lint, the execution environment
# definition. Prints a timing table at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/.venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$PWD/.collections

declare -a TIMES=()
step() {
    local name=$1; shift
    local start=$SECONDS
    echo "=== $name: $*"
    "$@"
    TIMES+=("$(printf '%-12s %4ds' "$name" $((SECONDS - start)))")
}

step py39        bash .ci/py39.sh
step units       bash .ci/units.sh
# Labs mostly wait (simulated installs), so three workers fit two cores; every lab takes free ports.
step lab         python -m pytest -q -p no:cacheprovider -n 3 tests/lab_tests
step integration python -m pytest -q -p no:cacheprovider -n 3 tests/integration
# The resilience matrix (docs/resilience.md): every fault, interrupt and spoof against add_workers.yml.
step slow        python -m pytest -q -p no:cacheprovider -n 3 tests/slow
step sanity      bash .ci/sanity.sh
step lint        bash .ci/lint.sh
step ee          bash .ci/ee.sh

echo "=== timings"
printf '%s\n' "${TIMES[@]}"
