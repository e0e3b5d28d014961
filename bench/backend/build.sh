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
# The CUDA build: candle-kernels compiles its PTX and its static MMQ/MMVQ/MoE
# library with nvcc at build time, for CUDA_COMPUTE_CAP=90 (cudaforge makes that
# sm_90a / compute_90a). Debian's nvcc here is CUDA 11.8, which has no sm_90a,
# so this script uses CUDA 13.0's nvcc from NVIDIA's PyPI wheels (the version
# the GPU machine has, and the one hip-on-cuda/build-kernels.sh compiles the ROCm
# side's kernels with there). candle-core 0.11.1 turns on cudarc's
# `dynamic-linking` feature, and cudarc's build script refuses `dynamic-loading`
# beside it, so dynamic loading cannot be chosen without patching candle: the
# binary links the CUDA libraries by soname instead. CUDARC_CUDA_VERSION=13000
# selects cudarc's CUDA 13.0 bindings, and the link is made against stub
# libraries with CUDA 13's sonames (libcuda.so.1, libcublas.so.13,
# libcublasLt.so.13, libcurand.so.10, libnvrtc.so.13; libcudart.so.13 is the
# real one from the wheel), so at run time the GPU machine's CUDA 13 libraries
# are the ones loaded (`ldd` shows it). Nothing of CUDA 11 is linked.
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
rm -rf "$out/lib"
mkdir -p "$out"
archs=()
[[ -n ${CANDLE_ROCM_ARCHS:-} ]] && archs=(--archs "$CANDLE_ROCM_ARCHS")
bundle_env_lines=$("${nice[@]}" cargo xtask gpu-bundle --link-only "$out/lib" "${archs[@]}")
mapfile -t bundle_env <<<"$bundle_env_lines"
printf '   %s\n' "${bundle_env[@]}"
bundle_target=$root/target/gpu-bundle
echo "== backend-bench-rocm: feature rocm, release, linked as the GPU bundle's binaries"
env "${bundle_env[@]}" "${nice[@]}" cargo build --release \
  --manifest-path bench/backend/rocm/Cargo.toml --target-dir "$bundle_target"
cp "$bundle_target/release/backend-bench-rocm" "$out/backend-bench-rocm"
"${nice[@]}" cargo xtask gpu-bundle --link-only "$out/lib" "${archs[@]}" \
  --check-imports "$out/backend-bench-rocm" >/dev/null

echo "== the ROCm binary's libraries (ROCm 7.2's sonames, resolved to OUT_DIR/lib)"
readelf -d "$out/backend-bench-rocm" | grep NEEDED
resolved=$(LD_LIBRARY_PATH="$out/lib" ldd "$out/backend-bench-rocm")
for soname in libamdhip64.so.7 librocblas.so.5 librocrand.so.1; do
  readelf -d "$out/backend-bench-rocm" | grep -q "NEEDED.*\[$soname\]" \
    || { echo "error: backend-bench-rocm does not need $soname" >&2; exit 1; }
  grep -qF "$soname => $out/lib/$soname " <<<"$resolved" \
    || { echo "error: $soname does not resolve to $out/lib:" >&2; echo "$resolved" >&2; exit 1; }
done
# libcandle_rocm_launchers.so comes from the kernels' nvcc build on the GPU machine
grep -v "libcandle_rocm_launchers.so" <<<"$resolved" | grep "not found" && { echo "error: a library is missing" >&2; exit 1; }

# --- the investigation's LD_PRELOAD probe (bench/backend/probe.sh) -------------
mkdir -p "$out/probe"
gcc -O2 -shared -fPIC -o "$out/probe/libbackend_probe.so" bench/backend/probe/backend_probe.c -ldl

if [[ $skip == *,cuda,* ]]; then
  echo "== SKIP=cuda: no CUDA binary, nothing packed"
  ls -la "$out" "$out/lib"
  exit 0
fi

# --- CUDA 13.0 toolkit pieces for the stock CUDA build ------------------------
tk_base=$root/target/bench-backend/cuda13
cu13=$tk_base/root/nvidia/cu13
if [[ ! -x $cu13/bin/nvcc ]]; then
  echo "== CUDA 13.0 nvcc, headers and cudart from NVIDIA's PyPI wheels -> $tk_base"
  mkdir -p "$tk_base/wheels" "$tk_base/root"
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    --python-version 3.11 -d "$tk_base/wheels" \
    nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  for w in "$tk_base"/wheels/*.whl; do unzip -qo "$w" -d "$tk_base/root"; done
fi
ln -sf libcudart.so.13 "$cu13/lib/libcudart.so"

# Stub libraries with CUDA 13's sonames, exporting every function cudarc's
# bindings of that library declare (all versions: a stub's extra names are harmless).
stubs=$cu13/lib/stubs
cudarc_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.10 2>/dev/null | head -1)
if [[ -z $cudarc_src ]]; then
  (cd bench/backend/cuda && cargo fetch --quiet)
  cudarc_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.10 | head -1)
fi
mkdir -p "$stubs"
for spec in cuda:driver:libcuda.so.1 cublas:cublas:libcublas.so.13 cublasLt:cublaslt:libcublasLt.so.13 \
            curand:curand:libcurand.so.10 nvrtc:nvrtc:libnvrtc.so.13; do
  IFS=: read -r lib sys soname <<<"$spec"
  # inside cudarc's `extern "C" { fn NAME(...) }` blocks (the dynamic-linking path)
  grep -oE '^ +fn [A-Za-z_][A-Za-z0-9_]*\(' "$cudarc_src/src/$sys/sys/mod.rs" \
    | sed -E 's/^ +fn ([A-Za-z0-9_]+)\(/void \1(void) {}/' | sort -u >"$stubs/$lib.c"
  gcc -shared -fPIC -o "$stubs/lib$lib.so" -Wl,-soname,"$soname" "$stubs/$lib.c"
done

echo "== backend-bench-cuda: stock candle 0.11.1, feature cuda, release (nvcc $("$cu13/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), cudarc bindings CUDA 13.0)"
env PATH="$cu13/bin:$PATH" NVCC="$cu13/bin/nvcc" CUDA_HOME="$cu13" \
    CUDARC_CUDA_VERSION=13000 CUDA_COMPUTE_CAP=90 \
    CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols \
    "${nice[@]}" cargo build --release \
      --manifest-path bench/backend/cuda/Cargo.toml --target-dir "$root/target/bench-backend/cuda-target"
cp "$root/target/bench-backend/cuda-target/release/backend-bench-cuda" "$out/backend-bench-cuda"

echo "== the CUDA binary's libraries (no CUDA 11 soname may appear)"
readelf -d "$out/backend-bench-cuda" | grep NEEDED
if readelf -d "$out/backend-bench-cuda" | grep -E 'NEEDED.*\.so\.11|libcublas\.so\.1[12]\b|libcudart\.so\.1[12]'; then
  echo "error: the CUDA binary needs a CUDA 11/12 library" >&2; exit 1
fi
# what is carried to the GPU machine (the device tool's limit is 64 MiB): the folder packed
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -6 -T0 >"$out.tar.xz.partial"
mv "$out.tar.xz.partial" "$out.tar.xz"
ls -la "$out" "$out/lib" "$out.tar.xz"
