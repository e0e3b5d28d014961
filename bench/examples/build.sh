#!/usr/bin/env bash
# bench/examples/build.sh [OUT_DIR]
#
# Builds, here (no GPU, no Rust on the GPU machine), what bench/examples/run-examples.sh
# runs there: unchanged candle-examples 0.11.1 programs, twice, in release.
#
#   OUT_DIR/cuda/EXAMPLE    stock crates.io candle-examples 0.11.1, feature `cuda` (stock
#                           candle-core/candle-nn/candle-transformers/candle-kernels from
#                           crates.io, versions from the crate's own Cargo.lock), built from a
#                           copy of the registry's crate under target/examples-parity/ (the
#                           registry is never written); CUDA 13.0 toolchain of
#                           bench/cuda13-toolchain.sh
#   OUT_DIR/rocm/EXAMPLE    generated/candle-examples, feature `rocm`, linked as the GPU
#                           bundle's test binaries are (cargo xtask gpu-bundle --link-only:
#                           ROCm 7.2's ABI, libamdhip64.so.7/librocblas.so.5/librocrand.so.1)
#   OUT_DIR/lib/            the GPU bundle's lib/ (the forwarder over CUDA)
#   OUT_DIR/make-models     bench/examples/make-models (stock candle-core 0.11.1, CPU): writes
#                           the made-up models on the GPU machine (random weights do not
#                           compress, so they are made there, not carried)
#   OUT_DIR.tar.xz          what is carried to the GPU machine
#
# The examples: EXAMPLES (default "quantized qwen bert t5 resnet mamba"), the names of
# candle-examples' [[example]] targets. Environment: SKIP=cuda or SKIP=rocm builds one side
# only (nothing is packed then); CANDLE_ROCM_ARCHS is passed on as gpu-bundle's --archs.
# Both builds run under `nice -n 19`; the CUDA one compiles candle-kernels with nvcc (its
# PTX and the MMQ/MMVQ/MoE static library) and candle-examples' own custom-ops kernels
# (cudaforge), which takes long on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-device-carry/examples-parity}")
skip=",${SKIP:-},"
nice=(nice -n 19)
read -r -a examples <<<"${EXAMPLES:-quantized qwen bert t5 resnet mamba}"
example_args=()
for e in "${examples[@]}"; do example_args+=(--example "$e"); done
mkdir -p "$out"

# --- ROCm side ------------------------------------------------------------------------
if [[ $skip != *,rocm,* ]]; then
  echo "== the forwarding runtime, the link directory and OUT_DIR/lib (cargo xtask gpu-bundle --link-only)"
  # shellcheck source=bench/gpu-bundle-link.sh
  source bench/gpu-bundle-link.sh
  gpu_bundle_link "$out/lib"
  bundle_target=$root/target/gpu-bundle
  echo "== generated/candle-examples, feature rocm, release: ${examples[*]}"
  env "${bundle_env[@]}" CARGO_PROFILE_RELEASE_DEBUG=false "${nice[@]}" cargo build --release \
    --manifest-path generated/candle-examples/Cargo.toml --features rocm "${example_args[@]}" \
    --target-dir "$bundle_target"
  mkdir -p "$out/rocm"
  for e in "${examples[@]}"; do
    cp "$bundle_target/release/examples/$e" "$out/rocm/$e"
    strip "$out/rocm/$e"
  done
  echo "== the ROCm binaries' imports and libraries (ROCm 7.2's sonames, resolved to OUT_DIR/lib)"
  gpu_bundle_check "$out/lib" "${examples[@]/#/$out/rocm/}"
fi

# --- CUDA side: stock crates.io candle-examples ----------------------------------------
if [[ $skip != *,cuda,* ]]; then
  # shellcheck source=bench/cuda13-toolchain.sh
  source bench/cuda13-toolchain.sh
  registry_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-examples-0.11.1 2>/dev/null | head -1)
  if [[ -z $registry_src ]]; then
    echo "error: candle-examples 0.11.1 is not in the cargo registry: run cargo xtask regen (it fetches it)" >&2
    exit 1
  fi
  src=$root/target/examples-parity/cuda-src/candle-examples-0.11.1
  if [[ ! -f $src/.copied ]]; then
    rm -rf "$src"; mkdir -p "$(dirname "$src")"
    cp -r "$registry_src" "$src"
    # the copy sits under this repository's workspace root: a [workspace] of its own keeps
    # cargo from taking it as a member (the only change; sources and Cargo.lock as published)
    printf '\n[workspace]\n' >>"$src/Cargo.toml"
    touch "$src/.copied"
  fi
  cuda13_toolchain "$src/Cargo.toml"
  echo "== stock candle-examples 0.11.1, feature cuda, release (nvcc $cuda13_nvcc_version, cudarc bindings CUDA 13.0): ${examples[*]}"
  "${cuda13_env[@]}" "${nice[@]}" cargo build --release --locked \
    --manifest-path "$src/Cargo.toml" --features cuda "${example_args[@]}" \
    --target-dir "$root/target/examples-parity/cuda-target"
  mkdir -p "$out/cuda"
  for e in "${examples[@]}"; do
    cp "$root/target/examples-parity/cuda-target/release/examples/$e" "$out/cuda/$e"
    cuda13_check_binary "$out/cuda/$e" >/dev/null
  done
fi

# --- the model maker (CPU, stock candle) --------------------------------------------
echo "== make-models (bench/examples/make-models, stock candle-core 0.11.1, CPU)"
"${nice[@]}" cargo build --release --quiet --manifest-path bench/examples/make-models/Cargo.toml \
  --target-dir "$root/target/examples-parity/make-models"
cp "$root/target/examples-parity/make-models/release/make-models" "$out/make-models"

if [[ $skip != ,, ]]; then
  echo "== SKIP=${SKIP}: one side only, nothing packed"
  ls -la "$out"/*
  exit 0
fi
echo "== packing $out.tar.xz"
# one stream, one thread and a window larger than a binary: the binaries of a side share
# most of their bytes (the CUDA ones each embed candle-kernels' PTX), so each is stored
# mostly as references to the one before it
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz --lzma2=preset=9,dict=256MiB -T1 >"$out.tar.xz.partial"
mv "$out.tar.xz.partial" "$out.tar.xz"
ls -la "$out"/* "$out.tar.xz"
size=$(stat -c %s "$out.tar.xz")
(( size < 64 * 1024 * 1024 )) || { echo "error: $out.tar.xz is $size bytes, over the 64 MiB carry limit: build fewer EXAMPLES" >&2; exit 1; }
