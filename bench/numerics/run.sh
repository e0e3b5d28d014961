#!/usr/bin/env bash
# bench/numerics/run.sh OUT_DIR
#
# On the GPU machine, from the repository root: the numerics of the ROCm build (through
# hip-on-cuda) against the stock CUDA build of `cargo xtask gpu-program numerics`, written for
# bench/results/ and `cargo xtask bench report`:
#
#   OUT_DIR/qmatmul-h100.tsv          `numerics qmatmul` of both builds (CPU rows once)
#   OUT_DIR/teacher-forced-h100.tsv   per made-up LLM of the examples harness (make-models,
#                                     written here): the CPU's greedy 100-token continuation
#                                     of a 12-token prompt, then every step's logits on the
#                                     CPU, CUDA and ROCm for that same sequence, compared.
#                                     agree = yes when every step where ROCm's top-1 token
#                                     differs from CUDA's is a tie within rounding (CUDA's two
#                                     best logits closer than the largest logit difference)
#                                     and ROCm's logits are no further from CUDA's (mean
#                                     NMSE) than those of Candle's CPU backend are: the
#                                     tolerance the dtype allows, measured on Candle itself
#                                     (llama-flash-attn in f16 and qwen3 in bf16: candle-flash-attn
#                                     on both GPU sides, Dao's kernels against ours; the CPU's
#                                     unfused attention)
#   OUT_DIR/logs/                     every run's output
# Environment: BIN_DIR, KERNELS_DIR, WORK_DIR as bench/backend/setup.sh; MODELS_DIR (made-up
# models to reuse; default WORK_DIR/models, made now); DAO_UNITS as bench/flash-attn/dao-lib.sh
# (Dao's kernels, which numerics-cuda links, compiled first).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
setup_bin=device-carry/numerics
setup_required="numerics-cuda numerics-rocm make-models dao/CUTLASS_COMMIT"
setup_build="cargo xtask gpu-program numerics"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
# numerics-cuda links Dao's kernels (both builds have feature flash-attn: on the GPU sides
# llama-flash-attn and qwen3 take candle-flash-attn, head dim 64 in f16 and in bf16)
DAO_UNITS=${DAO_UNITS:-fwd_hdim64_(fp16|bf16)_}
# shellcheck source=bench/flash-attn/dao-lib.sh
source bench/flash-attn/dao-lib.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
cuda=("${cuda_env[@]}" "$bin/numerics-cuda")
rocm=("${rocm_env[@]}" "$bin/numerics-rocm")
status=0

"${cuda[@]}" qmatmul >"$out/logs/qmatmul-cuda.tsv" 2>"$out/logs/qmatmul-cuda.log" || { status=1; tail "$out/logs/qmatmul-cuda.log"; }
"${rocm[@]}" qmatmul >"$out/logs/qmatmul-rocm.tsv" 2>"$out/logs/qmatmul-rocm.log" || { status=1; tail "$out/logs/qmatmul-rocm.log"; }
{
  echo "# gpu: $gpu; NMSE = sum((y-ref)^2)/sum(ref^2) against f64 references (bench/numerics/src/qmatmul.rs)"
  head -1 "$out/logs/qmatmul-cuda.tsv"
  awk -F'\t' 'NR > 1 && $1 == "cpu"' "$out/logs/qmatmul-cuda.tsv"
  awk -F'\t' 'NR > 1 && $1 != "cpu"' "$out/logs/qmatmul-cuda.tsv" "$out/logs/qmatmul-rocm.tsv"
} >"$out/qmatmul-h100.tsv"

models=${MODELS_DIR:-$scratch/models}
if [[ ! -f $models/tokenizer.json ]]; then
  "$bin/make-models" models "$models" >"$out/logs/make-models.log" 2>&1 \
    || { cat "$out/logs/make-models.log"; echo "error: make-models failed"; exit 1; }
fi
tsv=$out/teacher-forced-h100.tsv
{
  echo "# gpu: $gpu; teacher-forced: the CPU's greedy continuation (100 tokens) of a 12-token prompt fed to every side; step 0 is the prompt in one call (12 rows), then one token per step (bench/numerics/src/teacher_forced.rs)"
  printf 'model\tdtype\tagree\trocm_vs_cuda\tcuda_vs_cpu\trocm_vs_cpu\n'
} >"$tsv"
for m in q4k:Q4_K/f32 q8_0:Q8_0/f32 qwen3:bf16+flash-attn llama-flash-attn:f16+flash-attn; do
  model=${m%%:*}; dtype=${m#*:}
  w=$scratch/tf-$model
  mkdir -p "$w"
  ok=1
  "${cuda[@]}" greedy "$model" "$models" 100 "$w/tokens.txt" --cpu >"$out/logs/tf-$model.greedy.log" 2>&1 || ok=0
  for side in cpu cuda rocm; do
    case $side in
      cpu) cmd=("${cuda[@]}"); extra=(--cpu) ;;
      cuda) cmd=("${cuda[@]}"); extra=() ;;
      rocm) cmd=("${rocm[@]}"); extra=() ;;
    esac
    "${cmd[@]}" logits "$model" "$models" "$w/tokens.txt" "$w/$side.logits" "${extra[@]}" \
      >"$out/logs/tf-$model.$side.log" 2>&1 || ok=0
  done
  if [[ $ok == 0 ]]; then
    status=1; tail -n 5 "$out/logs/tf-$model".*.log
    printf '%s\t%s\tno\tfailed\tfailed\tfailed\n' "$model" "$dtype" >>"$tsv"; continue
  fi
  rc_=$("${cuda[@]}" compare "$w/cuda.logits" "$w/rocm.logits" 2>&1)
  cc_=$("${cuda[@]}" compare "$w/cpu.logits" "$w/cuda.logits" 2>&1)
  rp_=$("${cuda[@]}" compare "$w/cpu.logits" "$w/rocm.logits" 2>&1)
  # each: ties-only|not-ties, mean NMSE, the description
  IFS=$'\t' read -r rc_ties rc_nmse rc_text <<<"$rc_"
  IFS=$'\t' read -r _ cc_nmse cc_text <<<"$cc_"
  IFS=$'\t' read -r _ _ rp_text <<<"$rp_"
  agree=$(awk -v t="$rc_ties" -v a="$rc_nmse" -v b="$cc_nmse" 'BEGIN { print (t == "ties-only" && a + 0 <= b + 0) ? "yes" : "no" }')
  [[ $agree == yes ]] || status=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$dtype" "$agree" "$rc_text" "$cc_text" "$rp_text" >>"$tsv"
done
cat "$out/qmatmul-h100.tsv" | awk -F'\t' '$1 != "cpu"' | head -3
cat "$tsv"
exit $status
