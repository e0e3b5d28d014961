#!/usr/bin/env bash
# bench/run-on-gpu.sh [OUT_DIR]  (default $OUT/bench)
#
# On the GPU machine (NVIDIA H100, CUDA 13, PyTorch, no Rust), from the repository
# root, after bench/stage-for-gpu.sh here and with device-carry/ carried:
#   1. regen speed beside PyTorch's torch.utils.hipify (the carried xtask binary,
#      `bench regen`): OUT_DIR/regen-gpu-host.tsv
#   2. our generated kernels compiled once with nvcc (hip-on-cuda/build-kernels.sh),
#      shared by 3 and 4
#   3. kernel throughput, original vs translated: OUT_DIR/kernels-h100.tsv
#   4. backend end to end, Candle's CUDA backend vs our ROCm backend: OUT_DIR/backend-h100.tsv
# Copy OUT_DIR's *.tsv into bench/results/ and run `cargo xtask bench report`.
# Environment: SKIP (comma list of regen,kernels,backend to leave out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-${OUT:?set OUT or pass OUT_DIR}/bench}")
mkdir -p "$out"
skip=",${SKIP:-},"
status=0
step() { echo; echo "== $* ($(date -u +%T))"; }

if [[ $skip != *,regen,* ]]; then
  step "regen vs torch.utils.hipify"
  CARGO_HOME=$PWD/device-carry/bench/cargo-home device-carry/bench/xtask bench regen --out "$out/regen-gpu-host.tsv" || status=1
fi

work=$(mktemp -d)
step "generated kernels with nvcc"
bash hip-on-cuda/build-kernels.sh generated/kernels "$work/translated" > "$out/build-kernels.log" 2>&1 || { tail -20 "$out/build-kernels.log"; exit 1; }
tail -3 "$out/build-kernels.log"

if [[ $skip != *,kernels,* ]]; then
  step "kernel throughput"
  TRANSLATED_BUILD_DIR=$work/translated BUILD_DIR=$work/kbench bash bench/kernels/run-kernel-bench.sh device-carry/candle-kernels/src generated/kernels "$out" || status=1
fi
if [[ $skip != *,backend,* ]]; then
  step "backend end to end"
  KERNELS_DIR=$work/translated WORK_DIR=$work/backend bash bench/backend/run-backend-bench.sh "$out" || status=1
fi
ls -la "$out"
exit $status
