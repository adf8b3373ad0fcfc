#!/bin/bash
# Round 2: prime the package's configurations in parallel, then the benchmarks as a user runs them
# and the GEMM kernel-only comparison.   cd .perf && bash scripts/perf_call2.sh
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1 PERF_ROUND=2
OUT=${OUT:-/tmp}
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
N=14
for i in $(seq 0 $((N-1))); do python3 scripts/perf_sweep.py prime $i $N > /tmp/prime$i.log 2>&1 & done
wait
cat /tmp/prime*.log > $OUT/prime.log; grep -v ": ok" $OUT/prime.log | head -30
echo "prime took $(( $(date +%s) - t0 )) s"
( python3 -m gpudl bench conv 2>&1 | tee $OUT/conv.log ) | tail -14
echo "conv done at $(( $(date +%s) - t0 )) s"
PERF_BUDGET=$(( 300 - ($(date +%s) - t0) )) python3 scripts/perf_sweep.py run gemm2 2>&1 | tee $OUT/gemm2.log
echo "gemm2 done at $(( $(date +%s) - t0 )) s"
timeout $(( 515 - ($(date +%s) - t0) )) python3 -m gpudl bench attention 2>&1 | tee $OUT/attn.log
echo "attention done at $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv
