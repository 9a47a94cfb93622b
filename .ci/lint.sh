#!/usr/bin/env bash
# Usage: .ci/lint.sh
#
# ansible-lint (profile production, configured in .ansible-lint) over the repository, with the
# collection resolved through .collections (the link .ci/setup.sh makes), then
# `antsibull-changelog lint` for the changelog fragments.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

run() {
    echo "+ $*" >&2
    "$@"
}

export PATH=$ROOT/.venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$ROOT/.collections

run ansible-lint --profile production
run antsibull-changelog lint
