#!/usr/bin/env bash
# Usage: .ci/collection-copy.sh DEST_PARENT
#
# Copy this collection into DEST_PARENT/ansible_collections/openshift_agent/day2 and print that path.
# ansible-test only runs from a directory named ansible_collections/<namespace>/<name>; the
# .collections symlink is not enough (ansible-test resolves it back to the repository, which has no
# ansible_collections parent). The copy holds exactly the files git tracks or would track
# (`git ls-files -co --exclude-standard`), so a virtualenv, build output or other ignored files in
# the working tree never reach the sanity tests.
#
# The collections named in galaxy.yml `dependencies` are linked beside the copy from the `ansible`
# package in .venv: ansible-test resolves a collection's dependencies only inside the same
# ansible_collections tree (validate-modules and ansible-doc need kubernetes.core's doc fragments).
#
# ansible-test's own work directory tests/output/.tmp/delegation (the --venv controller virtualenv)
# survives a fresh copy, so a re-run does not rebuild it; everything else is replaced.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ $# -ne 1 ]; then
    echo "usage: $0 DEST_PARENT" >&2
    exit 2
fi
mkdir -p "$1"
DEST_PARENT=$(cd "$1" && pwd)
NAMESPACE=openshift_agent
NAME=day2
DEST=$DEST_PARENT/ansible_collections/$NAMESPACE/$NAME
KEEP=tests/output/.tmp/delegation

case "$DEST/" in
    "$ROOT/") echo "collection-copy: refusing to copy the repository onto itself" >&2; exit 2 ;;
esac

saved=
if [ -d "$DEST/$KEEP" ]; then
    saved=$(mktemp -d "$DEST_PARENT/.keep.XXXXXX")
    mv "$DEST/$KEEP" "$saved/"
fi
rm -rf "$DEST"
mkdir -p "$DEST"

# Tracked files deleted in the working tree are still listed by git: copy only what exists.
git ls-files -z -co --exclude-standard \
    | while IFS= read -r -d '' f; do
        if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
      done \
    | tar --null --no-recursion -T - -cf - \
    | tar -xf - -C "$DEST"

if [ -n "$saved" ]; then
    mkdir -p "$DEST/$(dirname "$KEEP")"
    mv "$saved/$(basename "$KEEP")" "$DEST/$KEEP"
    rmdir "$saved"
fi

PY=$ROOT/.venv/bin/python
if [ -x "$PY" ]; then
    site_collections=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/ansible_collections
    deps=$("$PY" -c 'import sys, yaml; print("\n".join((yaml.safe_load(open(sys.argv[1])) or {}).get("dependencies") or {}))' galaxy.yml)
    for dep in $deps; do
        src=$site_collections/${dep//.//}
        if [ ! -d "$src" ]; then
            echo "collection-copy: dependency $dep not found in $site_collections (run .ci/setup.sh)" >&2
            exit 1
        fi
        mkdir -p "$DEST_PARENT/ansible_collections/${dep%%.*}"
        ln -sfn "$src" "$DEST_PARENT/ansible_collections/${dep//.//}"
    done
fi

echo "$DEST"
