#!/usr/bin/env bash
# tests/tensor-parallel/run.sh OUT_DIR [N]
#
# On the GPU machine, from the repository root: the tensor-parallel program of `cargo xtask gpu-program tensor-parallel`
# through hip-on-cuda (HIP over CUDA, RCCL over NCCL), N processes (default: every GPU),
# against one process on one GPU without a communicator, per case (the tiny shape in f32 and
# bf16; llama-7B's widths with 8 key/value heads in bf16, teacher-forced only):
#   1. --single: the reference greedy tokens and logits;
#   2. N ranks over RCCL, greedy: same tokens?
#   3. N ranks teacher-forced on the reference tokens: per step top-1 and logits NMSE, within
#      the dtype's bounds (`tensor-parallel --compare`: f32 every top-1, NMSE <= 1e-9; bf16
#      top-1 at >= 90% of the steps, NMSE <= 2e-3; src/logits.rs, the bounds the one-GPU
#      shard check asserts too);
#   4. the bad inputs one GPU allows: a world larger than the GPUs, a corrupt and a
#      truncated id file, a rank that never joins (world 2 with one rank started: a timeout),
#      ranks with different dtypes (needs 2 GPUs): each must fail with its error, in time.
# Writes OUT_DIR/tensor-parallel.tsv (case, result, detail) and OUT_DIR/logs/.
# Environment: BIN_DIR (default device-carry/tensor-parallel[.tar.xz]), KERNELS_DIR, WORK_DIR
# as bench/backend/setup.sh; HIP_ON_CUDA_NCCL (NVIDIA's libnccl.so.2; default: the dlopen
# search, else a Python's site-packages/nvidia/nccl/lib).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR [N]" >&2; exit 2; }
out=$(realpath -m "$1")
setup_bin=device-carry/tensor-parallel
setup_required="tensor-parallel"
setup_build="cargo xtask gpu-program tensor-parallel"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
gpus=$(nvidia-smi -L | grep -c '^GPU')
n=${2:-$gpus}
# shellcheck source=hip-on-cuda/find-nccl.sh
source hip-on-cuda/find-nccl.sh
find_nccl "$cuda_libs"
[[ -n $nccl ]] || { echo "error: this needs NVIDIA's NCCL (libnccl.so.2), found $nccl_from; set HIP_ON_CUDA_NCCL=PATH" >&2; exit 2; }
echo "nccl: $nccl (from $nccl_from)"
tp=("${rocm_env[@]}" HIP_ON_CUDA_NCCL="$nccl" NCCL_DEBUG=WARN "$bin/tensor-parallel")
tsv=$out/tensor-parallel.tsv
printf 'case\tresult\tdetail\n' >"$tsv"
status=0
row() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$tsv"; echo "$1: $2 ($3)"; [[ $2 == fail ]] && status=1; }
scratch_tp=$scratch/tp
mkdir -p "$scratch_tp"

# `ranks NAME WORLD ARGS...`: WORLD processes, rank r on GPU r, waits for all; prints rc of each
# shellcheck source=bench/launch-ranks.sh
source bench/launch-ranks.sh
ranks() { launch_ranks "$scratch_tp/$1.id" "$out/logs/$1" "$2" 300 "${tp[@]}" "${@:3}"; }

while read -r shape dtype steps greedy; do
  name=$shape-$dtype
  args=(--shape "$shape" --dtype "$dtype" --steps "$steps")
  ref=$scratch_tp/single-$name
  "${tp[@]}" --single "${args[@]}" --out "$ref" >"$out/logs/single-$name.log" 2>&1 \
    || { row "single-$name" fail "$(tail -1 "$out/logs/single-$name.log")"; continue; }
  single_speed=$(grep -o '[0-9.]* tokens/s' "$out/logs/single-$name.log")
  if [[ $greedy == greedy ]]; then
    rcs=$(ranks "greedy-$name" "$n" "${args[@]}" --out "$scratch_tp/rccl-$name")
    if [[ $rcs =~ ^(0 ?)+$ ]]; then
      speed=$(grep -o '[0-9.]* tokens/s' "$out/logs/greedy-$name.rank0.log")
      if cmp -s "$ref.tokens" "$scratch_tp/rccl-$name.tokens"; then
        row "greedy-$name-world$n" pass "same $(wc -w <"$ref.tokens") tokens as one process; $speed over RCCL, $single_speed single"
      else
        row "greedy-$name-world$n" fail "tokens differ: $(head -c 200 "$scratch_tp/rccl-$name.tokens") vs $(head -c 200 "$ref.tokens")"
      fi
    else
      row "greedy-$name-world$n" fail "exit codes $rcs: $(tail -1 "$out/logs/greedy-$name.rank0.log")"
    fi
  fi
  rcs=$(ranks "forced-$name" "$n" "${args[@]}" --tokens "$ref.tokens" --out "$scratch_tp/forced-$name")
  if [[ $rcs =~ ^(0 ?)+$ ]]; then
    if detail=$("${tp[@]}" --compare "$ref.logits" "$scratch_tp/forced-$name.logits" --dtype "$dtype" 2>&1); then
      row "forced-$name-world$n" pass "$detail"
    else
      row "forced-$name-world$n" fail "$detail"
    fi
  else
    row "forced-$name-world$n" fail "exit codes $rcs: $(tail -1 "$out/logs/forced-$name.rank0.log")"
  fi
done <<'CASES'
tiny f32 32 greedy
tiny bf16 32 greedy
llama-7b bf16 8 forced-only
CASES

# bad inputs: each must fail, with its message, well within the timeout given
expect() {  # expect NAME PATTERN LOG RC SECONDS
  if [[ $4 != 0 ]] && grep -q "$2" "$3"; then row "$1" pass "exit $4 in $5 s: $(grep -m1 "$2" "$3")"; else row "$1" fail "exit $4 in $5 s: $(tail -2 "$3" | tr '\n' ' ')"; fi
}
printf '0%.0s' {1..256} >"$scratch_tp/big.id"   # a well-formed id: the GPU count is what fails
t0=$(date +%s)
"${tp[@]}" --rank "$gpus" --world $((gpus + 1)) --id-file "$scratch_tp/big.id" --out "$scratch_tp/big" >"$out/logs/bad-world.log" 2>&1
expect bad-world-larger-than-gpus "needs $((gpus + 1)) GPUs, this machine has $gpus" "$out/logs/bad-world.log" $? $(( $(date +%s) - t0 ))
printf 'zz%.0s' {1..128} >"$scratch_tp/corrupt.id"
t0=$(date +%s)
"${tp[@]}" --rank 1 --world 2 --id-file "$scratch_tp/corrupt.id" --out "$scratch_tp/c" --timeout-s 20 >"$out/logs/bad-corrupt-id.log" 2>&1
expect bad-corrupt-id-file "not a communicator id" "$out/logs/bad-corrupt-id.log" $? $(( $(date +%s) - t0 ))
head -c 100 /dev/zero | tr '\0' 'a' >"$scratch_tp/short.id"
t0=$(date +%s)
"${tp[@]}" --rank 1 --world 2 --id-file "$scratch_tp/short.id" --out "$scratch_tp/s" --timeout-s 20 >"$out/logs/bad-short-id.log" 2>&1
expect bad-truncated-id-file "100 characters" "$out/logs/bad-short-id.log" $? $(( $(date +%s) - t0 ))
rm -f "$scratch_tp/lonely.id"
t0=$(date +%s)
timeout 120 "${tp[@]}" --rank 0 --world 2 --id-file "$scratch_tp/lonely.id" --out "$scratch_tp/l" --timeout-s 15 >"$out/logs/bad-rank-never-joins.log" 2>&1
expect bad-rank-never-joins "a rank never joined" "$out/logs/bad-rank-never-joins.log" $? $(( $(date +%s) - t0 ))
if (( gpus >= 2 )); then
  rm -f "$scratch_tp/mixed.id"
  t0=$(date +%s)
  timeout 120 "${tp[@]}" --rank 0 --world 2 --id-file "$scratch_tp/mixed.id" --out "$scratch_tp/m" --dtype f32 >"$out/logs/bad-dtypes.rank0.log" 2>&1 &
  p0=$!
  timeout 120 "${tp[@]}" --rank 1 --world 2 --id-file "$scratch_tp/mixed.id" --out "$scratch_tp/m" --dtype bf16 >"$out/logs/bad-dtypes.rank1.log" 2>&1
  rc1=$?; wait $p0
  expect bad-mismatched-dtypes "runs with other settings" "$out/logs/bad-dtypes.rank1.log" $rc1 $(( $(date +%s) - t0 ))
else
  row bad-mismatched-dtypes "not run" "needs 2 GPUs, this machine has $gpus"
fi
ps -eo pid,comm | grep -w tensor-parall && { echo "error: a tensor-parallel process is left"; status=1; }
cat "$tsv"
exit $status
