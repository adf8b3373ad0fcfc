#!/bin/bash
# One device call: compile every candidate in parallel processes, then time them in one process.
#   cd .perf && bash scripts/perf_call.sh [attn] [gemm] [conv]      (OUT: where the logs go)
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
N=${PRIME:-14}
LIMIT=${LIMIT:-500}
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
if [ "$N" -gt 0 ]; then
  for i in $(seq 0 $((N-1))); do python3 scripts/perf_sweep.py prime $i $N > /tmp/prime$i.log 2>&1 & done
  wait
  cat /tmp/prime*.log > $OUT/prime.log
  grep -v ": ok" $OUT/prime.log | head -40
fi
echo "prime took $(( $(date +%s) - t0 )) s"
PERF_BUDGET=$(( LIMIT - ($(date +%s) - t0) )) python3 scripts/perf_sweep.py run "$@" 2>&1 | tee $OUT/log
