#!/usr/bin/env bash
# bench/backend/run-backend-bench.sh OUT_DIR
#
# On the GPU machine (NVIDIA, CUDA 13, no Rust), from the repository root: runs the
# backend benchmark built by `cargo xtask gpu-program bench-backend` on Candle's own CUDA backend
# (backend-bench-cuda, stock candle 0.11.1) and on the generated ROCm backend through
# hip-on-cuda (backend-bench-rocm), alternating cuda / rocm RUNS times, then writes
#
#   OUT_DIR/backend-cuda.tsv    per benchmark the minimum and the maximum over the runs (header benchmark shape dtype us us_max)
#   OUT_DIR/backend-rocm.tsv    the same for the ROCm backend
#   OUT_DIR/backend-h100.tsv    joined: benchmark shape dtype cuda_us rocm_us ratio (ratio = cuda_us / rocm_us, of the
#                               minima); its `# spread:` line: the rows below 0.95 whose ROCm minimum is above CUDA's maximum
#   OUT_DIR/runs/               every run's TSV, its log, and noise-{cuda,rocm}.tsv (run 1 against run 2 of the same binary)
#
# Environment: BIN_DIR (the build's output folder or its .tar.xz; default
# device-carry/bench-backend, else device-carry/bench-backend.tar.xz, what is carried),
# KERNELS_DIR (an existing hip-on-cuda/build-kernels.sh output to reuse; otherwise
# generated/kernels is compiled with nvcc into WORK_DIR, about 70 s), WORK_DIR (scratch,
# default a temp dir), RUNS (default 2), FIRST_RUN (default 1: the number of the first
# run; a later device call can add runs to the same OUT_DIR, and every run there is
# merged), BENCH_ARGS (extra arguments for both binaries, e.g. "--filter llama --reps 5").
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
runs=${RUNS:-2}
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/runs"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)

{
  echo "== ldd backend-bench-cuda"; "${cuda_env[@]}" ldd "$bin/backend-bench-cuda"
  echo "== ldd backend-bench-rocm"; "${rocm_env[@]}" ldd "$bin/backend-bench-rocm"
} >"$out/runs/ldd.txt" 2>&1
grep -E "cu|nvrtc|amdhip|roc|launchers|not found" "$out/runs/ldd.txt"
if grep -q "not found" "$out/runs/ldd.txt"; then echo "error: a library is missing (runs/ldd.txt)"; exit 1; fi

nvcc_version=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
notes=(--note "gpu: $gpu" --note "run on the GPU machine's CUDA ${nvcc_version:-?} (nvcc of the ROCm side's kernels)")
status=0
first=${FIRST_RUN:-1}
for i in $(seq "$first" $((first + runs - 1))); do
  for side in cuda rocm; do
    if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
    start=$(date +%s)
    # shellcheck disable=SC2086
    "${envs[@]}" "$bin/backend-bench-$side" --out "$out/runs/backend-$side.run$i.tsv" "${notes[@]}" ${BENCH_ARGS:-} \
      >"$out/runs/backend-$side.run$i.log" 2>&1
    rc=$?
    echo "run $i $side: exit $rc, $(( $(date +%s) - start )) s, $(grep -c . "$out/runs/backend-$side.run$i.tsv" 2>/dev/null) lines, $(grep -c '^# error' "$out/runs/backend-$side.run$i.tsv" 2>/dev/null) errors"
    if [[ $rc != 0 ]]; then status=1; tail -20 "$out/runs/backend-$side.run$i.log"; fi
  done
done

j="$bin/backend-bench-cuda"
for side in cuda rocm; do
  files=("$out/runs/backend-$side".run*.tsv)
  "$j" --merge "${files[@]}" --out "$out/backend-$side.tsv" || status=1
  if [[ -f $out/runs/backend-$side.run2.tsv ]]; then
    "$j" --join "$out/runs/backend-$side.run1.tsv" "$out/runs/backend-$side.run2.tsv" --out "$out/runs/noise-$side.tsv" >/dev/null
    # ratio = run1 / run2 of the same binary: how far two runs disagree
    awk -F'\t' -v s="$side" '!/^#/ && $6 != "ratio" && $6 != "NA" { d = $6 > 1 ? $6 - 1 : 1 / $6 - 1; n++; sum += d; if (d > max) { max = d; worst = $1 " " $2 " " $3 } }
      END { if (n) printf "noise %s: run1 vs run2 over %d benchmarks: mean |diff| %.1f%%, max %.1f%% (%s)\n", s, n, 100 * sum / n, 100 * max, worst }' "$out/runs/noise-$side.tsv"
  fi
done
"$j" --join "$out/backend-cuda.tsv" "$out/backend-rocm.tsv" --out "$out/backend-h100.tsv" || status=1
echo "written: $out/backend-cuda.tsv $out/backend-rocm.tsv $out/backend-h100.tsv"
exit $status
