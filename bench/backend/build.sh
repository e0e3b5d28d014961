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
#                                linked against the hip-on-cuda forwarder like the GPU bundle
#   OUT_DIR/lib/libamdhip64.so.5 the forwarder (HIP runtime + rocBLAS + rocRAND over CUDA)
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
# The ROCm build reuses `cargo xtask gpu-bundle`'s environment and target
# directory (target/gpu-bundle), so the dependencies it shares with the bundle
# are not rebuilt.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-device-carry/bench-backend}")
mkdir -p "$out/lib"
nice=(nice -n 19)

# --- ROCm binary -------------------------------------------------------------
echo "== the forwarding runtime (hip-on-cuda), release"
"${nice[@]}" cargo build --release -p hip-on-cuda
forwarder=$root/target/release/libamdhip64.so
bundle_target=$root/target/gpu-bundle
# as gpu_bundle.rs: a library directory whose amdhip64, rocblas and rocrand are the forwarder
rocm_lib=$bundle_target/rocm/lib
mkdir -p "$rocm_lib"
for name in libamdhip64.so librocblas.so librocrand.so; do
  cmp -s "$forwarder" "$rocm_lib/$name" || cp "$forwarder" "$rocm_lib/$name"
done
echo "== backend-bench-rocm: feature rocm, release, linked against the forwarder"
env CANDLE_ROCM_LIB_DIR="$rocm_lib" \
    CANDLE_ROCM_LINK_ROCBLAS=1 CANDLE_ROCM_LINK_ROCRAND=1 \
    CANDLE_ROCM_ARCHS="${CANDLE_ROCM_ARCHS:-gfx90a}" \
    CANDLE_ROCM_LAUNCHERS=shared \
    CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols \
    "${nice[@]}" cargo build --release \
      --manifest-path bench/backend/rocm/Cargo.toml --target-dir "$bundle_target"
cp "$bundle_target/release/backend-bench-rocm" "$out/backend-bench-rocm"
cp "$forwarder" "$out/lib/libamdhip64.so.5"

# --- the investigation's LD_PRELOAD probe (bench/backend/probe.sh) -------------
mkdir -p "$out/probe"
gcc -O2 -shared -fPIC -o "$out/probe/libbackend_probe.so" bench/backend/probe/backend_probe.c -ldl

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
