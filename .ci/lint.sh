#!/usr/bin/env bash
# Usage: .ci/lint.sh
#
# The repository's shape (.ci/layout.py: thin modules, cohesive module_utils, no references outside it,
# docs/architecture.md matching the tree); the code-line figure of plugins/ (.ci/codelines.py, at most 7,000); ruff
# (lint and format check, configured in pyproject.toml) over every Python file; mypy over the collection's
# module_utils and action plugins (typed; run through .collections so the ansible_collections imports resolve);
# ansible-lint (profile production, configured in .ansible-lint) with the collection resolved through .collections
# (the link .ci/setup.sh makes); `antsibull-changelog lint` for the changelog fragments; the release tarball's file list
# (.ci/tarball.py: nothing that needs the absent lab); `antsibull-docs lint-collection-docs --plugin-docs` (the
# modules' and the role's documentation as docs.ansible.com renders it, references to this collection, kubernetes.core,
# community.general and ansible.builtin checked).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

run() {
    echo "+ $*" >&2
    "$@"
}

export PATH=$ROOT/.venv/bin:$PATH
export ANSIBLE_COLLECTIONS_PATH=$ROOT/.collections

run python .ci/layout.py
run python .ci/codelines.py
run python .ci/modules_md.py --check
run python .ci/role_readmes.py --check
run python .ci/tarball.py
run ruff check .
run ruff format --check .
(cd .collections && run mypy --config-file "$ROOT/pyproject.toml" \
    ansible_collections/openshift_agent/day2/plugins/module_utils ansible_collections/openshift_agent/day2/plugins/action)
run ansible-lint --profile production
run antsibull-changelog lint
# antsibull-docs copies the collection and its dependencies (found with ansible-galaxy collection list), a directory
# inside a Git work tree by its tracked files only: the ceiling keeps Git from taking the dependency collections of
# .venv (inside this repository's work tree, ignored) for part of it, which would copy none of their files.
SITE=$(realpath "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')")
GIT_CEILING_DIRECTORIES=$SITE run antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs dependent .
