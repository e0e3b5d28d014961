#!/usr/bin/env bash
# bench/mistralrs/run.sh OUT_DIR
#
# On the GPU machine (NVIDIA, CUDA 13, no Rust), from the repository root: mistral.rs 0.8.1's CLI
# as `cargo xtask gpu-program mistralrs` ports and builds it (feature rocm, run on the H100 through
# hip-on-cuda: OUT/rocm/mistralrs), on the made-up Llama (written here by `make-models mistralrs`:
# a local model folder, greedy by its generation_config.json, and the same model as GGUF Q4_K),
# one 32-word prompt per case. Each case runs on the GPU and, as the reference, on the same
# binary's CPU backend (`--cpu`, paged attention off: mistral.rs has none on the CPU). Then the
# OpenAI-compatible server (`mistralrs serve`) answers a chat request with the plain f32 case's
# arguments, and its words must be that case's. Writes
#
#   OUT_DIR/mistralrs-h100.tsv   per case: whether the GPU's generated tokens are the CPU's,
#                                and the GPU's and the CPU's prompt and decode tokens/s
#                                (mistral.rs's own `Prompt:` / `Decode:` lines)
#   OUT_DIR/logs/CASE.{rocm,cpu}.log, server.log, chat.json
#
# Environment: BIN_DIR, KERNELS_DIR, WORK_DIR (as bench/backend/setup.sh: Candle 0.10.2's kernels,
# carried in the program's candle-0.10.2/, are built with nvcc here first), CASES (names; default
# all), PORT (the server's, default 8080). Exit status: 0 when every case agrees, 1 otherwise.
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
gguf="--format gguf -m $models -f llama-q4k.gguf --tok-model-id $models/llama"

# name | the model's arguments (after `text`) | paged attention on the GPU
cases=(
  "plain-f32|$llama --dtype f32|off"
  "plain-f32-paged|$llama --dtype f32|on"
  "plain-bf16|$llama --dtype bf16|off"
  "plain-bf16-paged|$llama --dtype bf16|on"
  "gguf-q4k|$gguf|off"
  "gguf-q4k-paged|$gguf|on"
  "isq-q4k|$llama --dtype bf16 --isq q4k|off"
  "isq-afq4|$llama --dtype bf16 --isq afq4|off"
  "isq-hqq4|$llama --dtype bf16 --isq hqq4|off"
)

# `speed LOG WHAT`: mistral.rs's `WHAT: N tokens, X T/s` rate
speed() { sed -n "s/^$2: [0-9]* tokens, \([0-9.]*\) T\/s.*/\1/p" "$1" | tail -1; }
mistralrs() { RUST_LOG=error "$@"; }

tsv=$out/mistralrs-h100.tsv
printf 'case\tagree\tagreement\trocm_prompt_tok_s\trocm_decode_tok_s\tcpu_prompt_tok_s\tcpu_decode_tok_s\n' >"$tsv"
failed=0
for c in "${cases[@]}"; do
  IFS='|' read -r name args paged <<<"$c"
  [[ -n ${CASES:-} && " $CASES " != *" $name "* ]] && continue
  # shellcheck disable=SC2086
  mistralrs "${rocm_env[@]}" "$bin/rocm/mistralrs" --seed 0 --token-source none run -i "$prompt" text $args --paged-attn "$paged" \
    >"$out/logs/$name.rocm.log" 2>&1
  rc_rocm=$?
  # shellcheck disable=SC2086
  mistralrs "${rocm_env[@]}" "$bin/rocm/mistralrs" --seed 0 --token-source none run -i "$prompt" text $args --paged-attn off --cpu \
    >"$out/logs/$name.cpu.log" 2>&1
  rc_cpu=$?
  if (( rc_rocm != 0 || rc_cpu != 0 )); then
    line="no	failed (exit rocm $rc_rocm, cpu $rc_cpu): $(grep -m1 -i 'error\|panick' "$out/logs/$name.rocm.log" "$out/logs/$name.cpu.log" | head -1 | cut -c1-200)"
  else
    line=$("$bin/make-models" compare tokens "$out/logs/$name.cpu.log" "$out/logs/$name.rocm.log" | cut -f1,2)
  fi
  [[ $line == yes* ]] || failed=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$line" \
    "$(speed "$out/logs/$name.rocm.log" Prompt)" "$(speed "$out/logs/$name.rocm.log" Decode)" \
    "$(speed "$out/logs/$name.cpu.log" Prompt)" "$(speed "$out/logs/$name.cpu.log" Decode)" >>"$tsv"
  tail -1 "$tsv"
done

# the server: an OpenAI-style chat request, greedy, answered with plain-f32's words
if [[ -z ${CASES:-} || " $CASES " == *" server "* ]]; then
  port=${PORT:-8080}
  # shellcheck disable=SC2086
  mistralrs "${rocm_env[@]}" "$bin/rocm/mistralrs" --seed 0 --token-source none serve -p "$port" --host 127.0.0.1 \
    text $llama --dtype f32 --paged-attn off >"$out/logs/server.log" 2>&1 &
  server=$!
  request=$(printf '{"model":"default","messages":[{"role":"user","content":"%s"}],"max_tokens":128,"temperature":0}' "$prompt")
  answered=no
  for _ in $(seq 120); do
    if curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' -d "$request" \
      >"$out/logs/chat.json" 2>/dev/null; then
      answered=yes
      break
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 1
  done
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  if [[ $answered == yes ]]; then
    line=$("$bin/make-models" compare tokens "$out/logs/plain-f32.cpu.log" "$out/logs/chat.json" | cut -f1,2)
  else
    line="no	the server did not answer: $(tail -3 "$out/logs/server.log" | tr '\n' ' ' | cut -c1-200)"
  fi
  [[ $line == yes* ]] || failed=1
  printf 'server-chat\t%s\t\t\t\t\n' "$line" >>"$tsv"
  tail -1 "$tsv"
fi
tar -czf "$out/logs.tar.gz" -C "$out" logs
exit $failed
