#!/usr/bin/env bash
# bench/backend/build.sh [OUT_DIR]
#
# Builds, here (no GPU, no Rust on the GPU machine), the two binaries of the
# backend benchmark, both from bench/backend/src/main.rs, in release:
#
#   OUT_DIR/backend-bench-cuda   stock crates.io candle-core/candle-nn/candle-transformers
#                                0.11.1 with feature `cuda` (bench/backend/cuda, no patch)
#   OUT_DIR/backend-bench-rocm   the same program over generated/candle-core and
#                                generated/candle-nn with feature `rocm` (bench/backend/rocm),
#                                linked as the GPU bundle's test binaries are: with ROCm 7.2's
#                                ABI (needs libamdhip64.so.7, librocblas.so.5, librocrand.so.1)
#   OUT_DIR/lib/                 the GPU bundle's lib/: the forwarder (HIP runtime + rocBLAS +
#                                rocRAND over CUDA) as libamdhip64.so.7, and librocblas.so.5 /
#                                librocrand.so.1, empty libraries that depend on it
#   OUT_DIR/probe/libbackend_probe.so  an LD_PRELOAD call counter for bench/backend/probe.sh
#
# OUT_DIR defaults to device-carry/bench-backend (git-ignored); it is also packed into
# OUT_DIR.tar.xz, what is carried to the GPU machine (the folder is over the 64 MiB
# limit), where bench/backend/run-backend-bench.sh unpacks and runs it.
#
# The CUDA build: CUDA 13.0's nvcc from NVIDIA's PyPI wheels and stub libraries with
# CUDA 13's sonames, set up by bench/cuda13-toolchain.sh (which says why); nothing of
# CUDA 11 is linked.
#
# The ROCm build is `cargo xtask gpu-bundle`'s: `gpu-bundle --link-only OUT_DIR/lib`
# builds the forwarder, writes the bundle's stub link directory (stubs of ROCm 7.2's
# libraries from target/rocm/7.2/root, else of the forwarder's own exports:
# target/gpu-bundle/link/...), lays OUT_DIR/lib out as the bundle's lib/ and prints
# the bundle's build environment (CANDLE_ROCM_LIB_DIR = that link directory,
# CANDLE_ROCM_LINK_*, CANDLE_ROCM_ARCHS, CANDLE_ROCM_LAUNCHERS=shared, ...), which
# the benchmark is built with, in the bundle's target directory (target/gpu-bundle),
# so the dependencies it shares with the bundle are not rebuilt. `gpu-bundle
# --check-imports` then checks its HIP/rocBLAS/rocRAND imports as the bundle's.
# CANDLE_ROCM_ARCHS, when set, is passed on as gpu-bundle's --archs (default: gpu-bundle's).
#
# Environment: SKIP=cuda builds the ROCm side only (a check of it here; OUT_DIR then
# lacks backend-bench-cuda and is not packed).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-device-carry/bench-backend}")
skip=",${SKIP:-},"
nice=(nice -n 19)

# --- ROCm binary -------------------------------------------------------------
echo "== the forwarding runtime, the link directory and OUT_DIR/lib (cargo xtask gpu-bundle --link-only)"
# shellcheck source=bench/gpu-bundle-link.sh
source bench/gpu-bundle-link.sh
gpu_bundle_link "$out/lib"
bundle_target=$root/target/gpu-bundle
echo "== backend-bench-rocm: feature rocm, release, linked as the GPU bundle's binaries"
env "${bundle_env[@]}" "${nice[@]}" cargo build --release \
  --manifest-path bench/backend/rocm/Cargo.toml --target-dir "$bundle_target"
cp "$bundle_target/release/backend-bench-rocm" "$out/backend-bench-rocm"
echo "== the ROCm binary's imports and libraries (ROCm 7.2's sonames, resolved to OUT_DIR/lib)"
readelf -d "$out/backend-bench-rocm" | grep NEEDED
gpu_bundle_check "$out/lib" "$out/backend-bench-rocm"

# --- the investigation's LD_PRELOAD probe (bench/backend/probe.sh) -------------
mkdir -p "$out/probe"
gcc -O2 -shared -fPIC -o "$out/probe/libbackend_probe.so" bench/backend/probe/backend_probe.c -ldl

if [[ $skip == *,cuda,* ]]; then
  echo "== SKIP=cuda: no CUDA binary, nothing packed"
  ls -la "$out" "$out/lib"
  exit 0
fi

# --- the stock CUDA build (CUDA 13.0 nvcc and stubs: bench/cuda13-toolchain.sh) ---
# shellcheck source=bench/cuda13-toolchain.sh
source bench/cuda13-toolchain.sh
cuda13_toolchain bench/backend/cuda/Cargo.toml
echo "== backend-bench-cuda: stock candle 0.11.1, feature cuda, release (nvcc $cuda13_nvcc_version, cudarc bindings CUDA 13.0)"
"${cuda13_env[@]}" "${nice[@]}" cargo build --release \
  --manifest-path bench/backend/cuda/Cargo.toml --target-dir "$root/target/bench-backend/cuda-target"
cp "$root/target/bench-backend/cuda-target/release/backend-bench-cuda" "$out/backend-bench-cuda"

echo "== the CUDA binary's libraries (no CUDA 11 soname may appear)"
cuda13_check_binary "$out/backend-bench-cuda"
# what is carried to the GPU machine (the device tool's limit is 64 MiB): the folder packed
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -6 -T0 >"$out.tar.xz.partial"
mv "$out.tar.xz.partial" "$out.tar.xz"
ls -la "$out" "$out/lib" "$out.tar.xz"
