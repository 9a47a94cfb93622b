#!/usr/bin/env bash
# Start the lab, run the cluster summary playbook against it, stop the lab (also on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${DEMO_STATE:-$PWD/.cache/demo}
VARIANT=${DEMO_VARIANT:-default}
rm -rf "$STATE"
tests/lab/labctl start --state "$STATE" --variant "$VARIANT"
trap 'tests/lab/labctl stop --state "$STATE"' EXIT
export PATH=$PWD/.venv/bin:$PATH
ansible-playbook playbooks/cluster_summary.yml -i "$STATE/inventory.yml" -e "kubeconfig=$STATE/kubeconfig"
