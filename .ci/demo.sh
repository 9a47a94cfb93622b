#!/usr/bin/env bash
# The demo: start the lab (a simulated cluster and 3 new hosts), print the cluster summary, then run the real
# playbooks/add_workers.yml against it. A background "person at the console" boots each host from the ISO as
# soon as the playbook has written it (the boot step's manual method). The lab is stopped at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${DEMO_STATE:-$PWD/.cache/demo}
VARIANT=${DEMO_VARIANT:-default}
HOSTS=${DEMO_HOSTS:-3}
export PATH=$PWD/.venv/bin:$PATH
# The lab's hosts live on 127.0.0.0/8, which the collection refuses for real hosts.
export OPENSHIFT_AGENT_DAY2_ALLOW_LOOPBACK=1

tests/lab/labctl stop --state "$STATE" >/dev/null 2>&1 || true
rm -rf "$STATE"
tests/lab/labctl start --state "$STATE" --variant "$VARIANT" --hosts "$HOSTS" --install-seconds "${DEMO_INSTALL_SECONDS:-15}" >/dev/null
console_pid=""
cleanup() {
    if [ -n "$console_pid" ]; then
        kill "$console_pid" 2>/dev/null || true
    fi
    tests/lab/labctl stop --state "$STATE"
}
trap cleanup EXIT
echo "demo: lab running (state $STATE); API $(python -c 'import json,sys; print(json.load(open(sys.argv[1]))["api_url"])' "$STATE/lab.json")"

ansible-playbook playbooks/cluster_summary.yml -e "kubeconfig=$STATE/kubeconfig"

# The person at the console: boots every host once the ISO is complete (its sidecar is written last).
(
    for _ in $(seq 1 600); do
        [ -f "$STATE/work/node.x86_64.iso.json" ] && break
        sleep 0.5
    done
    hosts=$(python -c 'import json,sys; print(" ".join(h["name"] for h in json.load(open(sys.argv[1]))["hosts"]))' "$STATE/lab.json")
    echo "demo console: booting $hosts from $STATE/work/node.x86_64.iso"
    # shellcheck disable=SC2086
    tests/lab/labctl boot --state "$STATE" --iso "$STATE/work/node.x86_64.iso" $hosts >/dev/null
) &
console_pid=$!

ansible-playbook playbooks/add_workers.yml -i "$STATE/inventory.yml" \
    -e "day2_workdir=$STATE/work" \
    -e day2_wait_sleep=1
