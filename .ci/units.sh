#!/usr/bin/env bash
# Usage: .ci/units.sh [extra ansible-test units arguments, e.g. tests/unit/plugins/module_utils/test_join_csr.py]
#
# `ansible-test units` for the collection, with ansible-core 2.21 from .venv on Python 3.12.
# --venv: ansible-test builds a virtualenv with its pinned pytest stack plus
# tests/unit/requirements.txt; it lives in the collection copy's tests/output/.tmp, which
# .ci/collection-copy.sh keeps across runs. Its pip bootstrap uses the offline shim .ci/get-pip.py
# (see .ci/sanity.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON_VERSION=3.12
ANSIBLE_TEST_BIN=$ROOT/.venv/bin
# Outside this git work tree: inside it ansible-test lists files through the enclosing repository.
WORK=${XDG_CACHE_HOME:-$HOME/.cache}/openshift_agent.day2-ci/$(printf %s "$ROOT" | sha256sum | cut -c1-12)

run() {
    echo "+ $*" >&2
    "$@"
}

pip_version=$("$ANSIBLE_TEST_BIN/python" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$PYTHON_VERSION"'"))["pip"])')
shim=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
mkdir -p "$(dirname "$shim")"
cp .ci/get-pip.py "$shim"

dest=$(.ci/collection-copy.sh "$WORK/units")
cd "$dest"
run "$ANSIBLE_TEST_BIN/ansible-test" units --venv --python "$PYTHON_VERSION" --color no "$@"
