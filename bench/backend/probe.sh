#!/usr/bin/env bash
# bench/backend/probe.sh OUT_DIR
#
# The investigation beside run-backend-bench.sh, on the GPU machine, from the repository
# root, with the same build (BIN_DIR, KERNELS_DIR, WORK_DIR as there):
#
#   A. runtime calls and time: both binaries once with --fixed-iters $PROBE_ITERS $PROBE_ARGS, the
#      LD_PRELOAD probe (probe/libbackend_probe.so) and BENCH_PROBE=1; probe/summarize.py
#      writes OUT_DIR/probe-time.tsv (per benchmark and timed iteration: wall time, time
#      inside the runtime, the rest) and OUT_DIR/probe-calls.tsv (calls and ns per call of
#      each runtime function); raw lines: OUT_DIR/probe-*.log;
#   B. ncu (kernel durations, per kernel name) over NCU_FILTERS ("none": skipped).
#
# (Until candle-rocm-hip stopped waiting after uploads, a part B timed the ROCm binary with
# that wait dropped by the probe: the evidence for that fix is in bench/FINDINGS.md.)
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
probe=$bin/probe/libbackend_probe.so
iters=${PROBE_ITERS:-20}

echo "== A. runtime calls and time per timed iteration (--fixed-iters $iters)"
for side in cuda rocm; do
  if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
  "${envs[@]}" BENCH_PROBE=1 LD_PRELOAD="$probe" "$bin/backend-bench-$side" --fixed-iters "$iters" ${PROBE_ARGS:-} \
    >"$out/probe-$side.stdout" 2>"$out/probe-$side.log"
  echo "$side: exit $?, $(grep -c '^probe	timed' "$out/probe-$side.log") benchmarks counted"
done
python3 bench/backend/probe/summarize.py "$out/probe-cuda.log" "$out/probe-rocm.log" "$out"

if [[ ${NCU_FILTERS:-none} != none ]] && command -v ncu >/dev/null; then
  echo "== B. ncu: kernel durations (gpu__time_duration.sum) per kernel name, --fixed-iters 2"
  for side in cuda rocm; do
    if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
    # shellcheck disable=SC2086
    timeout "${NCU_TIMEOUT:-60}" "${envs[@]}" ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
      "$bin/backend-bench-$side" --fixed-iters 2 $NCU_FILTERS >"$out/ncu-$side.log" 2>&1
    echo "$side: exit $?"
    grep -E "^  [A-Za-z_].*\(|gpu__time_duration.sum|Invocations" "$out/ncu-$side.log" | head -60
  done
fi
