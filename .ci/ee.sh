#!/usr/bin/env bash
# The execution environment: ansible-builder reads this collection's meta/execution-environment.yml
# (introspect) and writes a build context for an EE holding it (create). No container engine is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/.venv/bin:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ansible-builder introspect --sanitize .collections --write-pip "$work/python.txt" --write-bindep "$work/bindep.txt" >/dev/null
for dep in kubernetes netaddr cryptography; do
    grep -q "^$dep.*openshift_agent.day2" "$work/python.txt" || { echo "ee: $dep missing from the EE's Python requirements" >&2; exit 1; }
done
grep -q "openshift_agent.day2" "$work/bindep.txt" || { echo "ee: bindep.txt not picked up" >&2; exit 1; }

cat > "$work/execution-environment.yml" <<YAML
---
version: 3
images:
  base_image:
    name: registry.redhat.io/ansible-automation-platform-25/ee-minimal-rhel9:latest
dependencies:
  galaxy:
    collections:
      - name: kubernetes.core
      - name: community.general
  python: $PWD/requirements.txt
  system: $PWD/bindep.txt
YAML
ansible-builder create -f "$work/execution-environment.yml" --context "$work/context" --output-filename Containerfile >/dev/null
test -s "$work/context/Containerfile"
for dep in kubernetes netaddr cryptography; do
    grep -q "^$dep" "$work/context/_build/requirements.txt" || { echo "ee: $dep missing from the build context" >&2; exit 1; }
done
echo "ee: introspect and create passed ($(wc -l < "$work/python.txt") Python requirements, Containerfile written)"
