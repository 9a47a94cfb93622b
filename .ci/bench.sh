#!/usr/bin/env bash
# Usage: .ci/bench.sh [--quick]
#
# Every benchmark of docs/performance.md, each printing its figures beside its baseline. --quick runs them at
# small sizes (a minute or two) to check they work; without it they run at the sizes the document reports.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if [ "${1:-}" = "--quick" ]; then
    $PY tests/benchmarks/iso_bench.py --size-mib 64 --runs 5 --copies 2
    $PY tests/benchmarks/iso_stream_bench.py --size-mib 64 --runs 1
    $PY tests/benchmarks/engine_bench.py --hosts 1 --hosts 5 --playbook-hosts 5 --install-seconds 10
else
    $PY tests/benchmarks/iso_bench.py
    $PY tests/benchmarks/iso_stream_bench.py
    $PY tests/benchmarks/engine_bench.py
fi
