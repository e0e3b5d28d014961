# bench/backend/setup.sh: sourced by run-backend-bench.sh, probe.sh and
# bench/examples/run-examples.sh (from the repository root, after `out` is set): the
# binaries, the ROCm side's kernels and the environments of both sides.
#   bin       BIN_DIR, else $setup_bin (default device-carry/bench-backend), else its .tar.xz
#             unpacked into scratch; it must hold $setup_required (default the two benchmark
#             binaries) and the GPU bundle's lib/
#   scratch   WORK_DIR, else a temp dir
#   kernels   KERNELS_DIR if it holds an nvcc build of generated/kernels, else one built now (of the
#             kernels a program built against another Candle release carries, bin/candle-VERSION/kernels)
#   cuda_env / rocm_env   `env` prefixes: CUDA 13's libraries; plus the forwarder, the
#             launchers and CANDLE_ROCM_CODE_OBJECTS_DIR for the ROCm binary
setup_bin=${setup_bin:-device-carry/bench-backend}
setup_required=${setup_required:-backend-bench-cuda backend-bench-rocm}
setup_build=${setup_build:-cargo xtask gpu-program bench-backend}
bin=${BIN_DIR:-$setup_bin}
[[ -z ${BIN_DIR:-} && ! -d $bin ]] && bin=$setup_bin.tar.xz
scratch=${WORK_DIR:-$(mktemp -d)}
mkdir -p "$out" "$scratch"
if [[ -f $bin && $bin == *.tar.xz ]]; then
  if [[ ! -d $scratch/unpacked ]]; then
    mkdir -p "$scratch/unpacked"
    tar -xJf "$bin" -C "$scratch/unpacked" || { echo "error: cannot unpack $bin" >&2; exit 2; }
  fi
  bin=$(ls -d "$scratch/unpacked"/*/ | head -1)
fi
bin=$(realpath -m "$bin")
# lib/: the GPU bundle's (cargo xtask gpu-bundle --link-only): the forwarder as ROCm 7.2's
# libamdhip64.so.7, with librocblas.so.5 / librocrand.so.1 depending on it
# shellcheck disable=SC2086
for b in $setup_required lib/libamdhip64.so.7 lib/librocblas.so.5 lib/librocrand.so.1; do
  [[ -f $bin/$b ]] || { echo "error: $bin/$b not found: build with $setup_build and carry $bin" >&2; exit 2; }
done
nvidia-smi -L || { echo "error: no NVIDIA GPU here" >&2; exit 1; }
export PATH="$PATH:/usr/local/cuda/bin"

kernels=${KERNELS_DIR:-}
kernels_src=generated/kernels
for carried in "$bin"/candle-*/kernels; do [[ -d $carried ]] && kernels_src=$carried; done
if [[ -z $kernels ]] || ! ls "$kernels"/*.co >/dev/null 2>&1; then
  kernels=$scratch/kernels
  start=$(date +%s)
  bash hip-on-cuda/build-kernels.sh "$kernels_src" "$kernels" sm_90 >"$out/build-kernels.log" 2>&1 \
    || { tail -30 "$out/build-kernels.log"; echo "error: the nvcc build of $kernels_src failed"; exit 1; }
  echo "kernels for sm_90 built in $(( $(date +%s) - start )) s"
fi
kernels=$(realpath "$kernels")

# CUDA 13 libraries: the stock binary links them by soname, the forwarder loads them
cuda_libs=$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../lib64
extra=""
if [[ ! -e $cuda_libs/libcublas.so.13 ]]; then
  found=$(find / -xdev -name 'libcublas.so.13' -path '*lib*' 2>/dev/null | head -1)
  [[ -n $found ]] && extra=$(dirname "$found")
fi
base_ld="$cuda_libs${extra:+:$extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cuda_env=(env LD_LIBRARY_PATH="$base_ld")
rocm_env=(env LD_LIBRARY_PATH="$bin/lib:$kernels:$base_ld" CANDLE_ROCM_CODE_OBJECTS_DIR="$kernels")
