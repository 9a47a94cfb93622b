#!/usr/bin/env bash
# Usage: .ci/sanity.sh [extra ansible-test sanity arguments, e.g. --test pep8]
#
# `ansible-test sanity` with every default test and no ignore file, once per supported
# ansible-core line: 2.21 from .venv and the newest 2.20.x in .venv-core220 (the two newest
# releases installable here). One Python (3.12) keeps the run short; plugins' Python 3.9
# compatibility is the job of code review and the units, not of this script.
#
# --venv: ansible-test builds the virtualenvs its tests need (cached in ~/.ansible/test/venv,
# reused across runs) and installs their pinned requirements from the package index. It bootstraps
# pip in them with a get-pip.py it downloads from a host CI cannot reach, so the offline shim
# .ci/get-pip.py is installed in its cache first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON_VERSION=3.12
CORE220_VENV=$ROOT/.venv-core220
# The collection copies must live outside this git work tree: inside it (even in an ignored
# directory) ansible-test lists files through the enclosing repository and finds no targets.
# One directory per clone, so two clones never share a copy.
WORK=${XDG_CACHE_HOME:-$HOME/.cache}/openshift_agent.day2-ci/$(printf %s "$ROOT" | sha256sum | cut -c1-12)

run() {
    echo "+ $*" >&2
    "$@"
}

# Without the tool ansible-test only warns and skips the default sanity test "shellcheck".
ensure_shellcheck() {
    command -v shellcheck >/dev/null && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "sanity: installing shellcheck (Debian)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq --no-install-recommends shellcheck >/dev/null 2>&1 \
            || { apt-get update -qq && apt-get install -y -qq --no-install-recommends shellcheck >/dev/null; }
    else
        echo "sanity: shellcheck is missing; install it or the shellcheck test is skipped" >&2
    fi
}

ensure_core220_venv() {
    if [ ! -x "$CORE220_VENV/bin/python" ]; then
        local base
        base=$("$ROOT/.venv/bin/python" -c 'import sys; print(sys._base_executable)')
        run "$base" -m venv "$CORE220_VENV"
    fi
    # Upgrading each run keeps it on the newest 2.20.x; when it is current this is one index query.
    run "$CORE220_VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade 'ansible-core>=2.20,<2.21'
}

# $1: python of an ansible-core installation. Puts the shim where that ansible-test looks for
# get-pip.py of the pip version it bootstraps.
install_get_pip_shim() {
    local pip_version cache
    pip_version=$("$1" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$PYTHON_VERSION"'"))["pip"])')
    cache=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
    mkdir -p "$(dirname "$cache")"
    cp .ci/get-pip.py "$cache"
}

# $1: label, $2: bin directory holding ansible-test; remaining: extra ansible-test arguments.
sanity_with() {
    local label=$1 bindir=$2 dest start
    shift 2
    start=$SECONDS
    install_get_pip_shim "$bindir/python"
    dest=$(.ci/collection-copy.sh "$WORK/sanity-$label")
    echo "sanity: ansible-core $("$bindir/python" -c 'from ansible.release import __version__; print(__version__)') in $dest" >&2
    if (cd "$dest" && run "$bindir/ansible-test" sanity --venv --python "$PYTHON_VERSION" --color no -v "$@"); then
        echo "sanity: ansible-core $label: passed in $((SECONDS - start)) s" >&2
    else
        echo "sanity: ansible-core $label: FAILED in $((SECONDS - start)) s" >&2
        failed+=("$label")
    fi
}

failed=()
ensure_shellcheck
ensure_core220_venv
# Both lines run even when the first fails, so one run shows every version-specific failure.
sanity_with 2.21 "$ROOT/.venv/bin" "$@"
sanity_with 2.20 "$CORE220_VENV/bin" "$@"
if [ ${#failed[@]} -gt 0 ]; then
    echo "sanity: failed for ansible-core ${failed[*]}" >&2
    exit 1
fi
