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
#   B. the ROCm binary again with PROBE_SKIP_H2D_SYNC=1 (the stream wait after each
#      host-to-device upload dropped, safe on NVIDIA): OUT_DIR/backend-rocm-nosync.tsv, joined
#      with OUT_DIR/backend-cuda.tsv when run-backend-bench.sh wrote it there:
#      OUT_DIR/backend-h100-nosync.tsv;
#   C. ncu (kernel durations, per kernel name) over NCU_FILTERS ("none": skipped).
#
# PROBE_FILTERS: --filter arguments for B (default: the whole suite).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
bin=${BIN_DIR:-device-carry/bench-backend}
[[ -z ${BIN_DIR:-} && ! -d $bin ]] && bin=device-carry/bench-backend.tar.xz
scratch=${WORK_DIR:-$(mktemp -d)}
mkdir -p "$out" "$scratch"
if [[ -f $bin && $bin == *.tar.xz ]]; then
  if [[ ! -d $scratch/unpacked ]]; then
    mkdir -p "$scratch/unpacked" && tar -xJf "$bin" -C "$scratch/unpacked" || exit 2
  fi
  bin=$(ls -d "$scratch/unpacked"/*/ | head -1)
fi
bin=$(realpath -m "$bin")
export PATH="$PATH:/usr/local/cuda/bin"
kernels=${KERNELS_DIR:-}
if [[ -z $kernels ]] || ! ls "$kernels"/*.co >/dev/null 2>&1; then
  kernels=$scratch/kernels
  bash hip-on-cuda/build-kernels.sh generated/kernels "$kernels" sm_90 >"$out/probe-build-kernels.log" 2>&1 || exit 1
fi
kernels=$(realpath "$kernels")
cuda_libs=$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../lib64
base_ld="$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
probe=$bin/probe/libbackend_probe.so
cuda_env=(env LD_LIBRARY_PATH="$base_ld")
rocm_env=(env LD_LIBRARY_PATH="$bin/lib:$kernels:$base_ld" CANDLE_ROCM_CODE_OBJECTS_DIR="$kernels")
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

echo "== B. ROCm with the stream wait after each host-to-device upload dropped (PROBE_SKIP_H2D_SYNC=1)"
# shellcheck disable=SC2086
"${rocm_env[@]}" PROBE_SKIP_H2D_SYNC=1 LD_PRELOAD="$probe" "$bin/backend-bench-rocm" \
  --out "$out/backend-rocm-nosync.tsv" --note "PROBE_SKIP_H2D_SYNC=1 (LD_PRELOAD probe): no stream wait after host-to-device uploads" \
  ${PROBE_FILTERS:-} >"$out/backend-rocm-nosync.log" 2>&1
echo "exit $?"
if [[ -f $out/backend-cuda.tsv ]]; then
  "$bin/backend-bench-cuda" --join "$out/backend-cuda.tsv" "$out/backend-rocm-nosync.tsv" --out "$out/backend-h100-nosync.tsv" | tail -40
fi

if [[ ${NCU_FILTERS:-none} != none ]] && command -v ncu >/dev/null; then
  echo "== C. ncu: kernel durations (gpu__time_duration.sum) per kernel name, --fixed-iters 2"
  for side in cuda rocm; do
    if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
    # shellcheck disable=SC2086
    timeout "${NCU_TIMEOUT:-60}" "${envs[@]}" ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
      "$bin/backend-bench-$side" --fixed-iters 2 $NCU_FILTERS >"$out/ncu-$side.log" 2>&1
    echo "$side: exit $?"
    grep -E "^  [A-Za-z_].*\(|gpu__time_duration.sum|Invocations" "$out/ncu-$side.log" | head -60
  done
fi
