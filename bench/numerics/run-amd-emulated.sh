#!/usr/bin/env bash
# bench/numerics/run-amd-emulated.sh OUT_DIR [ARCH...]   (default: gfx1100 gfx1201 gfx1030)
#
# On the GPU machine, from the repository root: ggml's AMD MMQ paths of the generated kernels,
# run on the NVIDIA GPU by emulation, against the same f64 references as bench/numerics/run.sh.
#
#   1. tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_test.cu: the emulated AMD builtins (RDNA3/RDNA4
#      WMMA, v_perm_b32, v_dot4) against AMD's layout tables and a CPU product, on the GPU.
#   2. per ARCH (wave32 arches only: RDNA's wavefront is an NVIDIA warp): the kernels built by
#      hip-on-cuda/build-kernels.sh with AMD_ARCH=ARCH (clang's __gfxNNNN__ defined, so
#      generated/kernels/candle_ggml_hip_arch.h selects that arch's ggml profile: WMMA tiles on
#      RDNA3/RDNA4, ggml's HIP dp4a tiles on RDNA2; the AMD builtins from
#      tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h), then `numerics-rocm qmatmul` with
#      HIP_ON_CUDA_GCN_ARCH_NAME=ARCH, so the backend hands the launchers that arch's ggml
#      compute capability and they pick that arch's tiles. The plain sm_90 build is the
#      portable path beside it.
#
#   OUT_DIR/qmatmul-amd-emulated-h100.tsv   `numerics qmatmul` rows of every build, `backend`
#                                           = rocm (sm_90 build) or rocm-emulated-ARCH
#   OUT_DIR/amd-emulation-test.txt          the builtins' test output
#   OUT_DIR/logs/                           every build's and run's output
# Emulated runs check numbers, not speed: their timings mean nothing and are not reported.
# Environment: BIN_DIR, KERNELS_DIR, WORK_DIR as bench/backend/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR [ARCH...]" >&2; exit 2; }
out=$(realpath -m "$1")
shift
arches=("$@")
[[ ${#arches[@]} -gt 0 ]] || arches=(gfx1100 gfx1201 gfx1030)
setup_bin=device-carry/numerics
setup_required="numerics-rocm"
setup_build="cargo xtask gpu-program numerics"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
status=0

echo "== the emulated AMD builtins (tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_test.cu)"
nvcc -std=c++17 -O2 -arch=sm_90 -I hip-on-cuda/include -include tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h \
  tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_test.cu -o "$scratch/amd_gfx_emulation_test" >"$out/logs/amd-emulation-test-build.log" 2>&1 \
  && "$scratch/amd_gfx_emulation_test" >"$out/amd-emulation-test.txt" 2>&1 \
  || status=1
tail -1 "$out/amd-emulation-test.txt" 2>/dev/null || tail -20 "$out/logs/amd-emulation-test-build.log"

tsv=$out/qmatmul-amd-emulated-h100.tsv
run_qmatmul() { # NAME KERNELS [ENV...]
  local name=$1 k=$2
  shift 2
  env LD_LIBRARY_PATH="$bin/lib:$k:$base_ld" CANDLE_ROCM_CODE_OBJECTS_DIR="$k" "$@" "$bin/numerics-rocm" qmatmul \
    >"$out/logs/qmatmul-$name.tsv" 2>"$out/logs/qmatmul-$name.log" || { status=1; tail "$out/logs/qmatmul-$name.log"; return; }
  awk -F'\t' -v OFS='\t' -v b="$name" 'NR > 1 && $1 != "cpu" { $1 = b; print }' "$out/logs/qmatmul-$name.tsv" >>"$tsv"
}

echo "== numerics qmatmul: the sm_90 build (portable path)"
{
  echo "# gpu: $gpu; NMSE against f64 references (bench/numerics/src/qmatmul.rs); rocm-emulated-ARCH: generated/kernels built by nvcc as ARCH (hip-on-cuda/build-kernels.sh AMD_ARCH=ARCH, AMD builtins emulated), run with HIP_ON_CUDA_GCN_ARCH_NAME=ARCH; numbers only, no timings"
  printf 'backend\tdtype\trows\tpath\tvs_exact\tvs_q8f\tvs_q8h\tmaxrel_exact\tcpu_vs_exact\tgpu_vs_cpu\n'
} >"$tsv"
run_qmatmul rocm "$kernels"

for arch in "${arches[@]}"; do
  echo "== $arch: emulated build and numerics qmatmul"
  k=$scratch/kernels-$arch
  start=$(date +%s)
  if ! AMD_ARCH=$arch bash hip-on-cuda/build-kernels.sh generated/kernels "$k" sm_90 >"$out/logs/build-kernels-$arch.log" 2>&1; then
    status=1; tail -30 "$out/logs/build-kernels-$arch.log"; continue
  fi
  echo "   built in $(( $(date +%s) - start )) s"
  run_qmatmul "rocm-emulated-$arch" "$k" HIP_ON_CUDA_GCN_ARCH_NAME="$arch"
done
echo "== wrote $tsv"
exit $status
