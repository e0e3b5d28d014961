#!/usr/bin/env bash
# tests/tensor-parallel/build.sh [OUT_DIR]
#
# Builds, here, the tensor-parallel program (generated candle-core/candle-nn, features
# `rocm` and `rccl`, release) linked as the GPU bundle's binaries are: ROCm 7.2's ABI,
# libamdhip64.so.7 and librccl.so.1 (cargo xtask gpu-bundle --link-only), and packs
#   OUT_DIR/tensor-parallel, OUT_DIR/lib/ (the forwarder: HIP over CUDA, RCCL over NCCL)
#   OUT_DIR.tar.xz   what is carried to the GPU machine, where run.sh runs it
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-device-carry/tensor-parallel}")
nice=(nice -n 19)
mkdir -p "$out"
# shellcheck source=bench/gpu-bundle-link.sh
source bench/gpu-bundle-link.sh
gpu_bundle_link "$out/lib"
env "${bundle_env[@]}" CARGO_PROFILE_RELEASE_DEBUG=false "${nice[@]}" cargo build --release \
  --manifest-path tests/tensor-parallel/Cargo.toml --target-dir "$root/target/gpu-bundle"
cp "$root/target/gpu-bundle/release/tensor-parallel" "$out/"
strip "$out/tensor-parallel"
gpu_bundle_check "$out/lib" "$out/tensor-parallel"
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -6 -T0 >"$out.tar.xz.partial"
mv "$out.tar.xz.partial" "$out.tar.xz"
ls -la "$out" "$out/lib" "$out.tar.xz"
