#!/usr/bin/env bash
# bench/numerics/build.sh [OUT_DIR]
#
# Builds, here (no GPU, no Rust on the GPU machine), the two binaries of the numerics
# program, both from bench/numerics/src/main.rs, in release:
#
#   OUT_DIR/numerics-cuda   stock crates.io candle-core/candle-nn/candle-transformers 0.11.1,
#                           feature `cuda`; built in the examples harness's target directory
#                           (target/examples-parity/cuda-target) with candle-examples 0.11.1's
#                           Cargo.lock, so candle-kernels' nvcc build is shared with it
#   OUT_DIR/numerics-rocm   generated/candle-core, candle-nn and candle-transformers, feature
#                           `rocm`, linked as the GPU bundle's binaries (ROCm 7.2's ABI)
#   OUT_DIR/make-models     bench/examples/make-models (the made-up models it reads)
#   OUT_DIR/lib/            the GPU bundle's lib/ (the forwarder over CUDA)
#   OUT_DIR.tar.xz          what is carried to the GPU machine, where bench/numerics/run.sh
#                           runs both
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-device-carry/numerics}")
nice=(nice -n 19)
mkdir -p "$out"

echo "== the forwarding runtime, the link directory and OUT_DIR/lib (cargo xtask gpu-bundle --link-only)"
# shellcheck source=bench/gpu-bundle-link.sh
source bench/gpu-bundle-link.sh
gpu_bundle_link "$out/lib"
env "${bundle_env[@]}" CARGO_PROFILE_RELEASE_DEBUG=false "${nice[@]}" cargo build --release \
  --manifest-path bench/numerics/rocm/Cargo.toml --target-dir "$root/target/gpu-bundle"
cp "$root/target/gpu-bundle/release/numerics-rocm" "$out/"
strip "$out/numerics-rocm"
gpu_bundle_check "$out/lib" "$out/numerics-rocm"

# shellcheck source=bench/cuda13-toolchain.sh
source bench/cuda13-toolchain.sh
cuda13_toolchain bench/numerics/cuda/Cargo.toml
echo "== numerics-cuda: stock candle-core 0.11.1, feature cuda (nvcc $cuda13_nvcc_version)"
"${cuda13_env[@]}" "${nice[@]}" cargo build --release \
  --manifest-path bench/numerics/cuda/Cargo.toml --target-dir "$root/target/examples-parity/cuda-target"
cp "$root/target/examples-parity/cuda-target/release/numerics-cuda" "$out/"
cuda13_check_binary "$out/numerics-cuda"

echo "== make-models (bench/examples/make-models, stock candle-core 0.11.1, CPU)"
"${nice[@]}" cargo build --release --quiet --manifest-path bench/examples/make-models/Cargo.toml \
  --target-dir "$root/target/examples-parity/make-models"
cp "$root/target/examples-parity/make-models/release/make-models" "$out/make-models"

tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -6 -T0 >"$out.tar.xz.partial"
mv "$out.tar.xz.partial" "$out.tar.xz"
ls -la "$out" "$out.tar.xz"
