# bench/cuda13-toolchain.sh: sourced (from the repository root, after `root` is set) by the
# builds of stock crates.io Candle with feature `cuda` (bench/backend/build.sh,
# bench/examples/build.sh). Defines `cuda13_toolchain FETCH_MANIFEST`, which sets up, here
# (no GPU, no CUDA install), what such a build needs and sets the array `cuda13_env`, an
# `env` prefix to run cargo under.
#
# candle-kernels compiles its PTX and its static MMQ/MMVQ/MoE library with nvcc at build
# time, for CUDA_COMPUTE_CAP=90 (cudaforge makes that sm_90a / compute_90a). Debian's nvcc
# here is CUDA 11.8, which has no sm_90a, so this uses CUDA 13.0's nvcc from NVIDIA's PyPI
# wheels (the version the GPU machine has, and the one hip-on-cuda/build-kernels.sh compiles
# the ROCm side's kernels with there), unpacked once into target/bench-backend/cuda13.
# candle-core 0.11.1 turns on cudarc's `dynamic-linking` feature, and cudarc's build script
# refuses `dynamic-loading` beside it, so dynamic loading cannot be chosen without patching
# candle: the binaries link the CUDA libraries by soname instead. CUDARC_CUDA_VERSION=13000
# selects cudarc's CUDA 13.0 bindings, and the link is made against stub libraries with
# CUDA 13's sonames (libcuda.so.1, libcublas.so.13, libcublasLt.so.13, libcurand.so.10,
# libnvrtc.so.13; libcudart.so.13 is the real one from the wheel), so at run time the GPU
# machine's CUDA 13 libraries are the ones loaded. Nothing of CUDA 11 is linked.
#
# FETCH_MANIFEST: a Cargo.toml whose `cargo fetch` brings cudarc 0.19.10's source into the
# registry when it is not there yet (its bindings list the stubs' functions).
#
# `cuda13_check_binary BIN`: fails when BIN needs a CUDA 11/12 library.

cuda13_toolchain() {
  local fetch_manifest=$1
  local tk_base=$root/target/bench-backend/cuda13
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
    local w
    for w in "$tk_base"/wheels/*.whl; do unzip -qo "$w" -d "$tk_base/root"; done
  fi
  ln -sf libcudart.so.13 "$cu13/lib/libcudart.so"

  # Stub libraries with CUDA 13's sonames, exporting every function cudarc's
  # bindings of that library declare (all versions: a stub's extra names are harmless).
  local stubs=$cu13/lib/stubs
  local cudarc_src
  cudarc_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.10 2>/dev/null | head -1)
  if [[ -z $cudarc_src ]]; then
    cargo fetch --quiet --manifest-path "$fetch_manifest"
    cudarc_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.10 | head -1)
  fi
  mkdir -p "$stubs"
  local spec lib sys soname
  for spec in cuda:driver:libcuda.so.1 cublas:cublas:libcublas.so.13 cublasLt:cublaslt:libcublasLt.so.13 \
              curand:curand:libcurand.so.10 nvrtc:nvrtc:libnvrtc.so.13; do
    IFS=: read -r lib sys soname <<<"$spec"
    # inside cudarc's `extern "C" { fn NAME(...) }` blocks (the dynamic-linking path)
    grep -oE '^ +fn [A-Za-z_][A-Za-z0-9_]*\(' "$cudarc_src/src/$sys/sys/mod.rs" \
      | sed -E 's/^ +fn ([A-Za-z0-9_]+)\(/void \1(void) {}/' | sort -u >"$stubs/$lib.c"
    gcc -shared -fPIC -o "$stubs/lib$lib.so" -Wl,-soname,"$soname" "$stubs/$lib.c"
  done
  cuda13_nvcc_version=$("$cu13/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  cuda13_env=(env PATH="$cu13/bin:$PATH" NVCC="$cu13/bin/nvcc" CUDA_HOME="$cu13"
              CUDARC_CUDA_VERSION=13000 CUDA_COMPUTE_CAP=90
              CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols)
}

cuda13_check_binary() {
  readelf -d "$1" | grep NEEDED
  if readelf -d "$1" | grep -E 'NEEDED.*\.so\.11|libcublas\.so\.1[12]\b|libcudart\.so\.1[12]'; then
    echo "error: $1 needs a CUDA 11/12 library" >&2; return 1
  fi
}
