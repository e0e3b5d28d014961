#!/usr/bin/env bash
# Dao's flash-attention kernels as stock candle-flash-attn 0.11.1 builds them, on the GPU
# machine: its kernels/ and the CUTLASS headers of the commit its build script pins (OUT/dao
# of `cargo xtask gpu-program flash-attn`), compiled with the flags that build script gives
# nvcc (cudaforge, CUDA_COMPUTE_CAP=90: sm_90a), into DEST/libflashattention.so, which
# flash-attn-bench-cuda loads (it is linked against a stub of it).
#
# Usage: build-dao.sh DAO_DIR DEST [UNITS_REGEX]
#   UNITS_REGEX selects the kernel units (default: all 52 with flash_api.cu). A unit left out
#   leaves its launcher unresolved: calling it stops the program ("symbol lookup error").
#   Objects already in DEST are kept (a second run finishes an interrupted build).
set -euo pipefail
dao=$(cd "$1" && pwd) dest=$2 units=${3:-.}
mkdir -p "$dest" && dest=$(cd "$dest" && pwd)
nvcc=${NVCC:-nvcc}
cut="$dao/cutlass"
flags=(-gencode=arch=compute_90a,code=sm_90a --default-stream per-thread -std=c++17 -O3
  -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ -U__CUDA_NO_HALF2_OPERATORS__
  -U__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math
  -Xcompiler -fPIC -I"$cut" -I"$cut/include" -I"$cut/tools/util/include" -DUSE_CUTLASS)
cd "$dao"
mapfile -t sources < <(ls kernels/flash_fwd_*.cu | grep -E "$units"; echo kernels/flash_api.cu)
echo "build-dao: ${#sources[@]} units, $(nproc) jobs, $("$nvcc" --version | grep -o 'release [0-9.]*')"
compile() { # one unit into DEST/<stem>.o (written whole: a killed compile leaves no object)
  local src=$1 obj="$dest/$(basename "${1%.cu}").o"
  [ -s "$obj" ] && return 0
  local t=$SECONDS
  "$nvcc" -c -o "$obj.part" "${flags[@]}" "$src" 2> >(grep -v "deprecated" >&2) && mv "$obj.part" "$obj"
  echo "  $((SECONDS - t)) s  $src"
}
export -f compile; export dest nvcc
start=$SECONDS
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} bash -c "$(declare -p flags); compile {}"
g++ -shared -Wl,-soname,libflashattention.so -o "$dest/libflashattention.so" "$dest"/*.o \
  -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lcudart
echo "build-dao: libflashattention.so in $((SECONDS - start)) s ($(du -h "$dest/libflashattention.so" | cut -f1))"
