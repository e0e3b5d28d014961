#!/usr/bin/env bash
# bench/flash-attn/run.sh OUT_DIR
#
# On the GPU machine (NVIDIA, CUDA 13, no Rust), from the repository root: flash attention,
# ours against Dao's, with the binaries of `cargo xtask gpu-program flash-attn`:
#   1. Dao's kernels compiled by build-dao.sh (in the background) into WORK_DIR/dao-build;
#   2. the ROCm side's kernels with nvcc (bench/backend/setup.sh, as the backend benchmark's);
#   3. each side's error table, then (Dao's build done) each side's speed table:
#      OUT_DIR/flash-attn-errors-{cuda,rocm}.tsv, OUT_DIR/flash-attn-speed-{cuda,rocm}.tsv,
#      their logs, build-dao.log.
# Dao's 29 units take minutes: when they are not done within DEADLINE_S (default 500) seconds
# the script stops them and exits 3; run it again with the same WORK_DIR (the objects made
# are kept) to finish. Environment: as bench/backend/setup.sh (BIN_DIR, KERNELS_DIR,
# WORK_DIR), DAO_UNITS (build-dao.sh's regex; default the head dims the cases use),
# SPEED_FILTER (a substring of the speed configurations), SIDES (default "cuda rocm"; "rocm":
# ours alone, without Dao's build), VARIANTS (default none): more nvcc builds of our kernels,
# each giving an error table OUT_DIR/flash-attn-errors-rocm-VARIANT.tsv on the same cases:
# gfx1100 / gfx1201 (RDNA3 / RDNA4, their WMMA emulated: build-kernels.sh AMD_ARCH),
# portable (candle_wmma's shuffles: CANDLE_HIP_NO_WMMA_MATRIX_CORES).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
deadline=$((SECONDS + ${DEADLINE_S:-500}))
setup_bin=device-carry/flash-attn
setup_required="flash-attn-bench-cuda flash-attn-bench-rocm dao/CUTLASS_COMMIT"
setup_build="cargo xtask gpu-program flash-attn"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
dao="$scratch/dao-build"
units=${DAO_UNITS:-(fwd_hdim(64|96|128|256|512)_|splitkv_hdim(64|128)_)}
sides=${SIDES:-cuda rocm}
if [[ $sides == *cuda* && ! -f $dao/libflashattention.so ]]; then
  setsid bash bench/flash-attn/build-dao.sh "$bin/dao" "$dao" "$units" >>"$out/build-dao.log" 2>&1 &
  dao_pid=$!
fi
cuda_env=(env LD_LIBRARY_PATH="$dao:$base_ld")
status=0
run() { # side what args...   (side: cuda, rocm or rocm-VARIANT)
  local side=$1 what=$2; shift 2
  local envs; if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
  if [[ $side == rocm-* ]]; then
    local k=$scratch/kernels-${side#rocm-}
    envs=(env LD_LIBRARY_PATH="$bin/lib:$k:$base_ld" CANDLE_ROCM_CODE_OBJECTS_DIR="$k")
  fi
  local t=$SECONDS
  "${envs[@]}" "$bin/flash-attn-bench-${side%%-*}" "$what" "$out/flash-attn-$what-$side.tsv" "$@" >"$out/flash-attn-$what-$side.log" 2>&1
  local rc=$?
  echo "$side $what: exit $rc, $((SECONDS - t)) s, $(grep -vc '^#' "$out/flash-attn-$what-$side.tsv" 2>/dev/null) rows"
  [[ $rc == 0 ]] || { status=1; tail -5 "$out/flash-attn-$what-$side.log"; }
}
[[ -f $out/flash-attn-errors-rocm.tsv ]] || run rocm errors
for v in ${VARIANTS:-}; do
  case $v in
    portable) flags=(NVCC_EXTRA_FLAGS=-DCANDLE_HIP_NO_WMMA_MATRIX_CORES) ;;
    gfx1*) flags=(AMD_ARCH="$v") ;;
    *) echo "error: unknown variant $v (gfx1100, gfx1201, portable)"; status=1; continue ;;
  esac
  if [[ ! -f $scratch/kernels-$v/libcandle_rocm_launchers.so ]]; then
    env "${flags[@]}" bash hip-on-cuda/build-kernels.sh generated/kernels "$scratch/kernels-$v" sm_90 >"$out/build-kernels-$v.log" 2>&1 \
      || { tail -20 "$out/build-kernels-$v.log"; echo "error: the $v build failed"; status=1; continue; }
  fi
  run "rocm-$v" errors
done
if [[ -n ${dao_pid:-} ]]; then
  while kill -0 "$dao_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 5; done
  if kill -0 "$dao_pid" 2>/dev/null; then
    kill -- -"$dao_pid" 2>/dev/null
    echo "Dao's kernels not done within DEADLINE_S: $(ls "$dao"/*.o 2>/dev/null | wc -l) objects kept in $dao; run again with WORK_DIR=$scratch"
    exit 3
  fi
  wait "$dao_pid" || { tail -20 "$out/build-dao.log"; echo "error: build-dao.sh failed"; exit 1; }
fi
[[ $sides != *cuda* ]] || tail -1 "$out/build-dao.log"
[[ $sides != *cuda* || -f $out/flash-attn-errors-cuda.tsv ]] || run cuda errors
filter=(); [[ -n ${SPEED_FILTER:-} ]] && filter=(--filter "$SPEED_FILTER")
for side in $sides; do run "$side" speed "${filter[@]}"; done
# the GPU's name as a note line of each table (BENCHMARKS.md shows it)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
for f in "$out"/flash-attn-{errors,speed}-{cuda,rocm}*.tsv; do
  [[ -f $f ]] && ! grep -q '^# gpu:' "$f" && sed -i "1i # gpu: $gpu" "$f"
done
exit $status
