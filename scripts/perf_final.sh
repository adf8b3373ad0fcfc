#!/bin/bash
# The final check on one machine: the three benchmarks as a user runs them, then (time allowing)
# the GEMM kernel-only table and the GPU tests.   cd .perf && bash scripts/perf_final.sh
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1 PERF_ROUND=2
OUT=${OUT:-/tmp}
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
N=14
for i in $(seq 0 $((N-1))); do python3 scripts/perf_sweep.py prime $i $N > /tmp/prime$i.log 2>&1 & done
wait
cat /tmp/prime*.log > $OUT/prime.log; grep -v ": ok" $OUT/prime.log | grep -v OutOfResources | head -20
echo "prime took $(( $(date +%s) - t0 )) s"
echo "### python3 -m gpudl bench conv"
python3 -m gpudl bench conv 2>&1 | tee $OUT/conv.log | tail -12
echo "### python3 -m gpudl bench gemm --gpu-only   (at $(( $(date +%s) - t0 )) s)"
python3 -m gpudl bench gemm --gpu-only 2>&1 | tee $OUT/gemm.log | grep -i "triton \|error\|Trace" | cut -c1-200
echo "### python3 -m gpudl bench attention   (at $(( $(date +%s) - t0 )) s)"
timeout $(( 400 - ($(date +%s) - t0) )) python3 -m gpudl bench attention 2>&1 | tee $OUT/attn.log | \
  grep -v "naive\|torch SDPA" | cut -c1-150
if [ "${SWEEP:-1}" = 1 ]; then
echo "### sweep gemm2   (at $(( $(date +%s) - t0 )) s)"
PERF_BUDGET=$(( 455 - ($(date +%s) - t0) )) python3 scripts/perf_sweep.py run gemm2 > $OUT/gemm2.log 2>&1
grep -A4 "cuBLAS do_bench\|autotuned ->" $OUT/gemm2.log | grep "cuBLAS\|autotuned\|pkg" | head -24 | cut -c1-150
fi
if [ "${TESTS:-1}" = 1 ]; then
echo "### GPU tests   (at $(( $(date +%s) - t0 )) s)"
timeout $(( 530 - ($(date +%s) - t0) )) python3 -m pytest -p no:xdist -p no:cacheprovider -m gpu -q \
  --noconftest tests/test_gemm.py tests/test_conv.py tests/test_attention.py 2>&1 | tee $OUT/pytest.log | tail -6
fi
echo "done at $(( $(date +%s) - t0 )) s"
