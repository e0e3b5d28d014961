#!/usr/bin/env bash
# bench/backend/probe.sh OUT_DIR
#
# The investigation beside run-backend-bench.sh, on the GPU machine, from the repository
# root, with the same build (BIN_DIR, KERNELS_DIR, WORK_DIR as there):
#
#   A. call counts: both binaries once with --fixed-iters $PROBE_ITERS, the LD_PRELOAD probe
#      (probe/libbackend_probe.so) and BENCH_PROBE=1; OUT_DIR/probe-counts.tsv gets, per
#      benchmark and per timed iteration, the kernel launches, host-to-device copies, stream
#      synchronizations and allocations of each backend (raw lines: OUT_DIR/probe-*.log);
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

echo "== A. runtime calls per timed iteration (--fixed-iters $iters)"
for side in cuda rocm; do
  if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
  "${envs[@]}" BENCH_PROBE=1 LD_PRELOAD="$probe" "$bin/backend-bench-$side" --fixed-iters "$iters" \
    >"$out/probe-$side.stdout" 2>"$out/probe-$side.log"
  echo "$side: exit $?, $(grep -c '^probe	timed' "$out/probe-$side.log") benchmarks counted"
done
# probe<TAB>timed<TAB>KEY<TAB>n=N<TAB>name=count...  ->  per iteration
awk -F'\t' '
  FNR == 1 { side = (FILENAME ~ /probe-cuda/) ? "cuda" : "rocm" }
  $1 == "probe" && $2 == "timed" {
    key = $3; n = substr($4, 3) + 0; if (!(key in seen)) { seen[key] = 1; order[++k] = key }
    for (i = 5; i <= NF; i++) { split($i, kv, "="); v[side, key, kv[1]] = kv[2] / n }
  }
  END {
    print "benchmark\tcuda_launch\trocm_launch\tcuda_h2d\trocm_h2d\tcuda_stream_sync\trocm_stream_sync\tcuda_alloc\trocm_alloc"
    for (j = 1; j <= k; j++) {
      key = order[j]
      printf "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n", key,
        v["cuda", key, "cu_launch"], v["rocm", key, "hip_launch"], v["cuda", key, "cu_h2d"], v["rocm", key, "hip_h2d"],
        v["cuda", key, "cu_stream_sync"], v["rocm", key, "hip_stream_sync"], v["cuda", key, "cu_alloc_async"], v["rocm", key, "hip_malloc_async"] + v["rocm", key, "hip_malloc"]
    }
  }' "$out/probe-cuda.log" "$out/probe-rocm.log" >"$out/probe-counts.tsv"
awk -F'\t' '{ printf "%-64s", $1; for (i = 2; i <= NF; i++) printf " %9s", $i; print "" }' "$out/probe-counts.tsv"
# event records / waits per iteration (the stock CUDA backend makes none with one stream)
awk -F'\t' '$1 == "probe" && $2 == "timed" { n = substr($4, 3); r = 0; w = 0
    for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "hip_event_record") r = kv[2]; if (kv[1] == "hip_stream_wait_event") w = kv[2] }
    printf "%-64s hipEventRecord/iter %7.1f  hipStreamWaitEvent/iter %7.1f\n", $3, r / n, w / n }' "$out/probe-rocm.log"

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
