#!/usr/bin/env bash
# bench/mistralrs/run.sh OUT_DIR
#
# On the GPU machine (NVIDIA, CUDA 13, no Rust), from the repository root: mistral.rs 0.8.1's CLI
# as `cargo xtask gpu-program mistralrs` ports and builds it (feature rocm, run on the NVIDIA GPU
# through hip-on-cuda: OUT/rocm/mistralrs), on the made-up Llama (written here by `make-models
# mistralrs`: a local model folder, greedy by its generation_config.json, and the same model as
# GGUF Q4_K), one 32-word prompt per case, 128 tokens. Each case runs on the GPU and, as the
# reference, on the same binary's CPU backend (`--cpu`, paged attention off: mistral.rs has none
# on the CPU; f32 where the case is bf16: Candle 0.10.2's CPU matmul has no bf16). The ISQ cases quantize at load: Q4K with Candle's quantized kernels, AFQ with
# mistralrs-quant's own (HQQ is left out: mistral.rs has no CPU path for it to be compared with).
# Every case names its dtype: `auto` asks nvidia-smi (docs/mistralrs.md). Then each case again
# through the OpenAI-compatible server (`mistralrs serve`), a GPU server and a CPU one,
# teacher-forced along the CPU's greedy words (bench/mistralrs/teacher_forced.py: both sides
# see the same prefix at every step, so a near-tie decided differently does not derail the rest);
# and the plain f32 case's GPU server answers a chat request, whose words must be that case's. Writes
#
#   OUT_DIR/mistralrs-gpu.tsv    (first line: the GPU) per case: whether the GPU's generated tokens are the CPU's,
#                                and the GPU's and the CPU's prompt and decode tokens/s
#                                (mistral.rs's own `Prompt:` / `Decode:` lines), and teacher-forced
#                                over TF_STEPS steps: top-1 agreement, the largest score difference
#                                of the CPU's top-1 word, the CPU's largest top-1 margin where
#                                the two differ (a near-tie when it is below the score difference)
#   OUT_DIR/logs/CASE.{rocm,cpu}.log, CASE.server-{rocm,cpu}.log, chat.json
#
# Environment: BIN_DIR, KERNELS_DIR, WORK_DIR (as bench/backend/setup.sh: Candle 0.10.2's kernels,
# carried in the program's candle-0.10.2/, are built with nvcc here first), CASES (names; default
# all), PORT (the GPU server's; the CPU one's is PORT+1; default 8080), TF_STEPS (default 32).
# Exit status: 0 when every case agrees (identical greedy words, else every teacher-forced
# top-1), and the chat answer is right; 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
setup_bin=device-carry/mistralrs
setup_required="make-models rocm/mistralrs"
setup_build="cargo xtask gpu-program mistralrs"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
models=$scratch/mistralrs-models
[[ -f $models/llama/config.json ]] || "$bin/make-models" mistralrs "$models" >"$out/logs/make-models.log" 2>&1 \
  || { cat "$out/logs/make-models.log"; echo "error: make-models mistralrs failed"; exit 1; }
prompt=$("$bin/make-models" prompt 32)
llama="-m $models/llama -a llama"
gguf="--format gguf -m $models -f llama-q4k.gguf --tok-model-id $models/llama --dtype f32"

# name | the model's arguments (after `text`) | paged attention on the GPU
cases=(
  "plain-f32|$llama --dtype f32|off"
  "plain-f32-paged|$llama --dtype f32|on"
  "plain-bf16|$llama --dtype bf16|off"
  "plain-bf16-paged|$llama --dtype bf16|on"
  "gguf-q4k|$gguf|off"
  "gguf-q4k-paged|$gguf|on"
  "isq-q4k|$llama --dtype f32 --isq q4k|off"
  "isq-afq4|$llama --dtype f32 --isq afq4|off"
  "isq-afq8|$llama --dtype f32 --isq afq8|off"
)

# `speed LOG WHAT`: mistral.rs's `WHAT: N tokens, X T/s` rate
speed() { sed -n "s/^$2: [0-9]* tokens, \([0-9.]*\) T\/s.*/\1/p" "$1" | tail -1; }
# the program and its environment (rocm_env is an `env` prefix: the program is exec'd, so a
# background one's $! is its own pid)
mistralrs=("${rocm_env[@]}" RUST_LOG=error "$bin/rocm/mistralrs" --token-source none)

tsv=$out/mistralrs-gpu.tsv
printf '# gpu: %s\n' "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >"$tsv"
printf 'case\tagree\tgreedy\tteacher_forced_top1\tmax_score_diff\tmax_margin_at_difference\trocm_prompt_tok_s\trocm_decode_tok_s\tcpu_prompt_tok_s\tcpu_decode_tok_s\n' >>"$tsv"
base_port=${PORT:-8080}
steps=${TF_STEPS:-32}

# `serve LOG PORT MODEL_ARGS...`: `mistralrs serve` on PORT in the background (pid in $served),
# waited for until it answers (a one-token completion): 0 when it does, 1 when it died first
serve() {
  local log=$1 p=$2
  shift 2
  # a server still answering there would be taken for this one
  if curl -s -o /dev/null "http://127.0.0.1:$p/"; then echo "port $p is taken" >"$log"; return 1; fi
  "${mistralrs[@]}" serve -p "$p" --host 127.0.0.1 text "$@" >"$log" 2>&1 &
  served=$!
  for _ in $(seq 180); do
    curl -sf "http://127.0.0.1:$p/v1/completions" -H 'Content-Type: application/json' \
      -d '{"model":"default","prompt":"t0000","max_tokens":1,"temperature":0}' >/dev/null 2>&1 && return 0
    kill -0 "$served" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}
stop() { kill "$@" 2>/dev/null; wait "$@" 2>/dev/null; }

failed=0
index=0
for c in "${cases[@]}"; do
  IFS='|' read -r name args paged <<<"$c"
  # each case's servers on ports of their own: a port just closed may not be free yet
  port=$((base_port + 2 * index))
  index=$((index + 1))
  [[ -n ${CASES:-} && " $CASES " != *" $name "* ]] && continue
  cpu_args=${args/--dtype bf16/--dtype f32}
  # shellcheck disable=SC2086
  "${mistralrs[@]}" run -i "$prompt" text $args --paged-attn "$paged" \
    >"$out/logs/$name.rocm.log" 2>&1
  rc_rocm=$?
  # shellcheck disable=SC2086
  "${mistralrs[@]}" run -i "$prompt" text $cpu_args --paged-attn off --cpu \
    >"$out/logs/$name.cpu.log" 2>&1
  rc_cpu=$?
  if (( rc_rocm != 0 || rc_cpu != 0 )); then
    greedy="no	failed (exit rocm $rc_rocm, cpu $rc_cpu): $(grep -m1 -i 'error\|panick' "$out/logs/$name.rocm.log" "$out/logs/$name.cpu.log" | head -1 | cut -c1-200)"
  else
    greedy=$("$bin/make-models" compare tokens "$out/logs/$name.cpu.log" "$out/logs/$name.rocm.log" | cut -f1,2)
  fi
  # the same case through a GPU server and a CPU server, teacher-forced
  # shellcheck disable=SC2086
  if serve "$out/logs/$name.server-rocm.log" "$port" $args --paged-attn "$paged"; then
    rocm_server=$served
    # shellcheck disable=SC2086
    if serve "$out/logs/$name.server-cpu.log" $((port + 1)) $cpu_args --paged-attn off --cpu; then
      tf=$(python3 bench/mistralrs/teacher_forced.py "http://127.0.0.1:$((port + 1))" "http://127.0.0.1:$port" "$prompt" "$steps" 2>>"$out/logs/$name.server-cpu.log") \
        || tf="failed	NA	NA"
    else
      tf="no CPU server	NA	NA"
    fi
    stop "$served"
    if [[ $name == plain-f32 ]]; then
      # an OpenAI-style chat request, greedy, answered with the CPU's words
      request=$(printf '{"model":"default","messages":[{"role":"user","content":"%s"}],"max_tokens":128,"temperature":0}' "$prompt")
      curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' -d "$request" >"$out/logs/chat.json"
      chat=$("$bin/make-models" compare tokens "$out/logs/plain-f32.cpu.log" "$out/logs/chat.json" | cut -f1,2)
    fi
    stop "$rocm_server"
  else
    tf="no GPU server	NA	NA"
  fi
  # agreement: identical greedy words, else every teacher-forced step's top-1
  agree=no
  [[ $greedy == yes* || ${tf%%	*} == "$steps/$steps" ]] && agree=yes
  [[ $agree == yes ]] || failed=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$agree" "$(cut -f2 <<<"$greedy")" "$tf" \
    "$(speed "$out/logs/$name.rocm.log" Prompt)" "$(speed "$out/logs/$name.rocm.log" Decode)" \
    "$(speed "$out/logs/$name.cpu.log" Prompt)" "$(speed "$out/logs/$name.cpu.log" Decode)" >>"$tsv"
  tail -1 "$tsv"
done
if [[ -z ${CASES:-} || " $CASES " == *" plain-f32 "* ]]; then
  [[ ${chat:-no} == yes* ]] || failed=1
  printf '# server chat request (plain-f32 arguments, GPU): %s\n' "$(tr '\t' ' ' <<<"${chat:-no answer}")" >>"$tsv"
  tail -1 "$tsv"
fi
tar -czf "$out/logs.tar.gz" -C "$out" logs
exit $failed
