#!/usr/bin/env bash
# Set up everything the demo and the tests need; safe to re-run.
#  - Debian packages (only when root and missing)
#  - .venv with Python >= 3.12 (ansible-core 2.20+ needs it) and requirements-dev.txt
#  - .collections/ansible_collections/openshift_agent/day2 -> this repository
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

APT_PACKAGES=(xorriso isolinux syslinux-common ignition xz-utils cpio dosfstools shellcheck hyperfine git make)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
fi

find_python() {
    local c
    for c in "${PYTHON:-}" python3.13 python3.12 /root/.pyenv/versions/3.12*/bin/python3 \
             /root/.pyenv/versions/3.13*/bin/python3 python3; do
        [ -n "$c" ] || continue
        command -v "$c" >/dev/null 2>&1 || continue
        if "$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$c"; return 0
        fi
    done
    echo "setup: no Python >= 3.12 found (set PYTHON=/path/to/python3.12)" >&2
    return 1
}

if [ ! -x .venv/bin/python ]; then
    py=$(find_python)
    echo "setup: creating .venv with $py"
    "$py" -m venv .venv
fi
want=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
have=$(cat .venv/.requirements.sha256 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    echo "setup: installing Python packages into .venv"
    .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
    echo "$want" > .venv/.requirements.sha256
fi

mkdir -p .collections/ansible_collections/openshift_agent
ln -sfn "$ROOT" .collections/ansible_collections/openshift_agent/day2
echo "setup: ready ($(.venv/bin/ansible --version 2>/dev/null | sed -n 1p))"
