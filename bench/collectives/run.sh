#!/usr/bin/env bash
# bench/collectives/run.sh OUT_DIR [N]
#
# On the GPU machine, from the repository root: what `cargo xtask gpu-program collectives` built,
# through hip-on-cuda (HIP over CUDA, RCCL over NCCL), with N processes, one per GPU
# (default: every GPU):
#   1. allreduce-bandwidth: the all-reduce over 8 KiB ... 1 GiB through our HIP layer's
#      RCCL module and through NCCL directly (cudarc), side by side
#      -> OUT_DIR/collectives-worldN-h100.tsv
#   2. the tensor-parallel model (tests/tensor-parallel), greedy steps: its tokens/s with one
#      process (--single) and with N ranks over RCCL, and the all-reduce time per token, for
#      the tiny shape (f32, bf16; 32 steps after 8 prompt tokens) and llama-7B's widths (bf16,
#      16 steps after 8, 512 and 2048 prompt tokens: no KV cache, so each step is a prefill)
#      -> OUT_DIR/tensor-parallel-speed-worldN-h100.tsv (shape, dtype, prompt, steps, world,
#         tokens_per_s, single_tokens_per_s, all_reduce_ms_per_token, all_reduce_pct,
#         all_reduce_host_ms_per_token)
#   OUT_DIR/logs/: every process's output.
# Then: cp OUT_DIR/*.tsv bench/results/ && cargo xtask bench report
# Needs: N NVIDIA GPUs (N = 1 runs everything at world size 1: the layer's overhead, no
# data between GPUs) and NVIDIA's NCCL, libnccl.so.2: HIP_ON_CUDA_NCCL=PATH, else the ld.so
# cache, CUDA's lib64, a Python's site-packages/nvidia/nccl/lib (PyTorch's wheel), else a
# search of the file system. cudarc looks for NCCL as libnccl.so (not .so.2): a link to it
# is made in WORK_DIR and put on LD_LIBRARY_PATH, and HIP_ON_CUDA_NCCL points hip-on-cuda's
# forwarder at the same file, so both paths run the same NCCL.
# Environment: BIN_DIR (default device-carry/collectives[.tar.xz]), KERNELS_DIR, WORK_DIR as
# bench/backend/setup.sh; MAX_BYTES (default 1073741824); TP_CASES (default below: lines of
# `shape dtype prompt steps`).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR [N]" >&2; exit 2; }
out=$(realpath -m "$1")
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "error: no NVIDIA GPU here: this needs ${2:-1 or more} NVIDIA GPU(s) (N, default every GPU), their driver and NVIDIA's NCCL (libnccl.so.2)" >&2
  exit 1
fi
setup_bin=device-carry/collectives
setup_required="allreduce-bandwidth tensor-parallel lib/librccl.so.1"
setup_build="cargo xtask gpu-program collectives"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
gpus=$(nvidia-smi -L | grep -c '^GPU')
n=${2:-$gpus}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "error: N \`$n\` is not a positive number" >&2; exit 2; }
(( n <= gpus )) || { echo "error: $n processes need $n GPUs, this machine has $gpus (give N <= $gpus)" >&2; exit 2; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)

# NVIDIA's NCCL, found once; both paths load this file
# shellcheck source=hip-on-cuda/find-nccl.sh
source hip-on-cuda/find-nccl.sh
find_nccl "$cuda_libs"
if [[ -z $nccl ]]; then
  echo "error: this needs NVIDIA's NCCL (libnccl.so.2), found $nccl_from; set HIP_ON_CUDA_NCCL=PATH" >&2
  exit 2
fi
link_dir=$scratch/nccl-link
mkdir -p "$link_dir"
ln -sf "$nccl" "$link_dir/libnccl.so"
echo "nccl: $nccl (cudarc loads it as $link_dir/libnccl.so)"
env_=("${rocm_env[@]}")
for i in "${!env_[@]}"; do
  [[ ${env_[$i]} == LD_LIBRARY_PATH=* ]] && env_[$i]="${env_[$i]}:$link_dir:$(dirname "$nccl")"
done
env_+=(HIP_ON_CUDA_NCCL="$nccl" NCCL_DEBUG=WARN)
status=0
work=$scratch/collectives
mkdir -p "$work"

# `ranks NAME WORLD PROGRAM ARGS...`: WORLD processes of PROGRAM, rank r on GPU r, its
# output in OUT_DIR/logs/NAME.rankR.log; prints the exit codes
# shellcheck source=bench/launch-ranks.sh
source bench/launch-ranks.sh
ranks() { launch_ranks "$work/$1.id" "$out/logs/$1" "$2" 900 "${env_[@]}" "$bin/$3" "${@:4}"; }
all_zero() { [[ $1 =~ ^(0 ?)+$ ]]; }

echo "== all-reduce: $n processes, 8 KiB ... ${MAX_BYTES:-1073741824} bytes, our layer (RCCL API) and NCCL directly"
rcs=$(ranks allreduce "$n" allreduce-bandwidth --out "$out/collectives-world$n-h100.tsv" --max-bytes "${MAX_BYTES:-1073741824}")
if all_zero "$rcs"; then
  grep -v '^#' "$out/collectives-world$n-h100.tsv"
else
  echo "error: allreduce-bandwidth: exit codes $rcs:"; tail -3 "$out"/logs/allreduce.rank*.log; status=1
fi

echo "== the tensor-parallel model: one process, and $n ranks over RCCL"
speed_tsv=$out/tensor-parallel-speed-world$n-h100.tsv
{
  echo "# gpu: $gpu"
  echo "# model: tests/tensor-parallel (made-up llama-shaped weights, greedy decoding; shapes: tiny = hidden 256, 8 heads, MLP 768, 2 layers, vocab 512; llama-7b = hidden 4096, 32 heads of which 8 key/value heads, MLP 11008, 8 layers, vocab 32000); no KV cache: each step runs the whole sequence (prompt + tokens so far); tokens/s as rank 0 prints it: the steps after the first (which loads the kernels) over their wall time, every all-reduce included"
  echo "# single: one process, the whole model on GPU 0, no communicator; world N: N processes, rank r on GPU r, column/row-parallel linears with an all-reduce over RCCL (hip-on-cuda: NCCL)"
  echo "# all-reduce: rank 0's GPU time between timing events around each all-reduce (waiting for the other ranks included), per generated token, and as a share of the step time; host: rank 0's time inside the all-reduce calls (enqueueing), per token"
  printf 'shape\tdtype\tprompt\tsteps\tworld\ttokens_per_s\tsingle_tokens_per_s\tall_reduce_ms_per_token\tall_reduce_pct\tall_reduce_host_ms_per_token\n'
} >"$speed_tsv"
speed() { grep -o '[0-9.]* tokens/s' "$1" 2>/dev/null | head -1 | cut -d' ' -f1; }
# "all-reduce: G ms per token (P% of the step time) on the GPU, H ms (Q%) on the host in the calls" -> "G P H"
reduce_ms() { grep -oE 'all-reduce: [0-9.]+ ms per token \([0-9.]+% of the step time\) on the GPU, [0-9.]+ ms' "$1" 2>/dev/null | grep -oE '[0-9.]+' | head -3 | paste -sd' '; }
cases=${TP_CASES:-"tiny f32 8 32
tiny bf16 8 32
llama-7b bf16 8 16
llama-7b bf16 512 16
llama-7b bf16 2048 16"}
while read -r shape dtype prompt steps; do
  [[ -z $shape ]] && continue
  name=$shape-$dtype-p$prompt
  args=(--shape "$shape" --dtype "$dtype" --prompt-len "$prompt" --steps "$steps")
  "${env_[@]}" timeout 900 "$bin/tensor-parallel" --single "${args[@]}" --out "$work/single-$name" \
    >"$out/logs/tp-single-$name.log" 2>&1 || { echo "error: tensor-parallel --single ${args[*]}: $(tail -1 "$out/logs/tp-single-$name.log")"; status=1; }
  rcs=$(ranks "tp-$name" "$n" tensor-parallel "${args[@]}" --out "$work/tp-$name")
  all_zero "$rcs" || { echo "error: tensor-parallel world $n ${args[*]}: exit codes $rcs: $(tail -1 "$out/logs/tp-$name.rank0.log")"; status=1; }
  single=$(speed "$out/logs/tp-single-$name.log"); multi=$(speed "$out/logs/tp-$name.rank0.log")
  read -r ar_ms ar_pct ar_host <<<"$(reduce_ms "$out/logs/tp-$name.rank0.log")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$dtype" "$prompt" "$steps" "$n" "${multi:-failed}" "${single:-failed}" \
    "${ar_ms:-NA}" "${ar_pct:-NA}" "${ar_host:-NA}" >>"$speed_tsv"
done <<<"$cases"
cat "$speed_tsv"
if ps -eo pid,comm | grep -E -w 'allreduce-bandw|tensor-parallel'; then echo "error: a benchmark process is left"; status=1; fi
exit $status
