#!/usr/bin/env bash
# bench/mistralrs/run.sh OUT_DIR
#
# On the GPU machine (NVIDIA, CUDA 13, no Rust), from the repository root: mistral.rs 0.8.1's CLI
# as `cargo xtask gpu-program mistralrs` builds it twice: ported (feature rocm, run on the NVIDIA
# GPU through hip-on-cuda: OUT/rocm/mistralrs) and stock (feature cuda: OUT/cuda/mistralrs), on
# the same GPU in the same call.
#
# Agreement, on the made-up Llama (`make-models mistralrs`: a local model folder, greedy by its
# generation_config.json, and the same model as GGUF Q4_K), one 32-word prompt per case, 128
# tokens. Each case runs on the ROCm build, on the CUDA build, and on the CUDA build's CPU
# backend (`--cpu`, paged attention off: mistral.rs has none on the CPU; f32 where the case is
# bf16: Candle 0.10.2's CPU matmul has no bf16). The ISQ cases quantize at load: Q4K with
# Candle's quantized kernels, AFQ with mistralrs-quant's own. Every case names its dtype: `auto`
# asks nvidia-smi (docs/mistralrs.md). Then each case again through the OpenAI-compatible server
# (`mistralrs serve`), a CUDA server and a ROCm one, teacher-forced along the CUDA build's greedy
# words (bench/mistralrs/teacher_forced.py: both sides see the same prefix at every step, so a
# near-tie decided differently does not derail the rest); and the plain f32 case's servers answer
# a chat request (before the teacher forcing): ROCm's words must be CUDA's answer, or else the CPU's words.
#
# Speed, on a larger made-up Llama (`make-models mistralrs-speed`: 0.73B weights), a 512-word
# prompt and 128 tokens: mistral.rs's own prompt and decode rates, each side's best of RUNS runs (runs
# alternate between the sides; a run that exits non-zero is counted and its rates left out).
#
# Writes
#   OUT_DIR/mistralrs-gpu.tsv    (first line: the GPU) per case: whether ROCm's generated tokens
#                                are CUDA's, teacher-forced over TF_STEPS steps (top-1 agreement,
#                                the largest score difference of CUDA's top-1 word, CUDA's largest
#                                top-1 margin where the two differ: a near-tie when it is below the
#                                score difference), how far each GPU side's greedy words follow
#                                the CPU's, and both sides' prompt and decode tokens/s
#   OUT_DIR/mistralrs-speed.tsv  per speed case: both sides' prompt and decode tokens/s and
#                                ROCm/CUDA, the runs that exited non-zero, whether their greedy
#                                words are the same, and where they part, teacher-forced as above
#   OUT_DIR/logs/CASE.{rocm,cuda,cpu}.log, CASE.server-{rocm,cuda}.log, chat-{cuda,rocm}.json, speed-*.log
#
# Environment: BIN_DIR, KERNELS_DIR, WORK_DIR (as bench/backend/setup.sh: Candle 0.10.2's kernels,
# carried in the program's candle-0.10.2/, are built with nvcc here first), CASES (names, of
# either set; default all), PORT (the CUDA server's; the ROCm one's is PORT+1; default 8080),
# TF_STEPS (default 32), RUNS (default 6).
# Exit status: 0 when every case agrees with CUDA (identical greedy words, else every
# teacher-forced top-1), and the chat answer is right; 1 otherwise. Speeds do not decide it.
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
setup_bin=device-carry/mistralrs
setup_required="make-models rocm/mistralrs cuda/mistralrs"
setup_build="cargo xtask gpu-program mistralrs"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
selected() { [[ -z ${CASES:-} || " $CASES " == *" $1 "* ]]; }

# `speed LOG WHAT`: mistral.rs's `WHAT: N tokens, X T/s` rate
speed() { sed -n "s/^$2: [0-9]* tokens, \([0-9.]*\) T\/s.*/\1/p" "$1" | tail -1; }
# `median V...`: the median of the numbers given (the mean of the middle two when even), empty when none
median() { printf '%s\n' "$@" | sort -g | awk 'NF { v[n++] = $1 } END { if (n) printf "%.2f\n", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'; }
# `ratio A B`: A/B to two places, NA when either is missing
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "NA"; else printf "%.2f\n", a / b }'; }
# `follows REFERENCE_LOG LOG`: how far LOG's greedy words are REFERENCE_LOG's ("128/128", "17/128")
follows() {
  local c
  c=$("$bin/make-models" compare tokens "$1" "$2" | cut -f2)
  case $c in
    "first "*) sed 's/^first \([0-9]*\) of \([0-9]*\)\/.*/\1\/\2/' <<<"$c" ;;
    *identical*) sed 's/^\([0-9]*\/[0-9]*\) .*/\1/' <<<"$c" ;;
    *) echo "NA" ;;
  esac
}
# a run that dies of a signal writes its stack and mappings into its log (crash_trace.c; the
# addresses are resolved where the unstripped binaries were built)
trace=()
if gcc -shared -fPIC -O1 -o "$scratch/crash_trace.so" bench/mistralrs/crash_trace.c 2>"$out/logs/crash_trace.log"; then
  trace=(LD_PRELOAD="$scratch/crash_trace.so")
else
  echo "warning: crash_trace.so not built (no stacks for crashes): $(head -1 "$out/logs/crash_trace.log")"
fi
# the programs and their environments (env prefixes)
rocm_cmd=("${rocm_env[@]}" "${trace[@]}" RUST_LOG=error "$bin/rocm/mistralrs" --token-source none)
cuda_cmd=("${cuda_env[@]}" "${trace[@]}" RUST_LOG=error "$bin/cuda/mistralrs" --token-source none)
# `program SIDE ARGS...`: exec's SIDE's mistralrs (cpu: the CUDA build's CPU backend), so that a
# background one's $! is its own pid
program() {
  local s=$1
  shift
  case $s in
    rocm) exec "${rocm_cmd[@]}" "$@" ;;
    cuda) exec "${cuda_cmd[@]}" "$@" ;;
    cpu) exec "${cuda_cmd[@]}" "$@" --cpu ;;
  esac
}

# `serve LOG PORT SIDE MODEL_ARGS...`: SIDE's `mistralrs serve` on PORT in the background (pid in
# $served), waited for until it answers (a one-token completion): 0 when it does, 1 when it died first
serve() {
  local log=$1 p=$2 s=$3
  shift 3
  # a server still answering there would be taken for this one
  if curl -s -o /dev/null "http://127.0.0.1:$p/"; then echo "port $p is taken" >"$log"; return 1; fi
  (program "$s" serve -p "$p" --host 127.0.0.1 text "$@") >"$log" 2>&1 &
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
# `teacher_force NAME PORT PROMPT MODEL_ARGS...`: a CUDA server on PORT and a ROCm one on PORT+1
# (logs OUT/logs/NAME.server-{cuda,rocm}.log), the ROCm one teacher-forced along the CUDA one's
# greedy words for $steps steps (bench/mistralrs/teacher_forced.py): sets $tf (top-1 agreement, the
# largest score difference, CUDA's largest margin where they differ; or why there is none). With
# chat_request=yes both servers answer an OpenAI-style chat request, greedy, first
# (OUT/logs/chat-{cuda,rocm}.json)
teacher_force() {
  local name=$1 port=$2 p=$3 cuda_server
  shift 3
  tf="no CUDA server	NA	NA"
  serve "$out/logs/$name.server-cuda.log" "$port" cuda "$@" || return 0
  cuda_server=$served
  if serve "$out/logs/$name.server-rocm.log" $((port + 1)) rocm "$@"; then
    if [[ ${chat_request:-no} == yes ]]; then
      local request side
      request=$(printf '{"model":"default","messages":[{"role":"user","content":"%s"}],"max_tokens":128,"temperature":0}' "$p")
      for side in cuda:$port rocm:$((port + 1)); do
        curl -sf "http://127.0.0.1:${side#*:}/v1/chat/completions" -H 'Content-Type: application/json' -d "$request" >"$out/logs/chat-${side%%:*}.json"
      done
    fi
    tf=$(python3 bench/mistralrs/teacher_forced.py "http://127.0.0.1:$port" "http://127.0.0.1:$((port + 1))" "$p" "$steps" 2>>"$out/logs/$name.server-rocm.log") \
      || tf="failed	NA	NA"
    stop "$served"
  else
    tf="no ROCm server	NA	NA"
  fi
  stop "$cuda_server"
}
# `paged on|off`: the paged-attention arguments; its KV cache sized for 4096 tokens (by default
# mistral.rs takes 90% of the free GPU memory, and two servers share the GPU here)
paged() { if [[ $1 == on ]]; then echo "--paged-attn on --pa-context-len 4096"; else echo "--paged-attn off"; fi; }
# `generate LOG SIDE PROMPT MODEL_ARGS...`: one greedy run; its exit status
generate() {
  local log=$1 s=$2 p=$3
  shift 3
  (program "$s" run -i "$p" text "$@") >"$log" 2>&1
}

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
base_port=${PORT:-8080}
steps=${TF_STEPS:-32}
failed=0

# ---- agreement, on the small made-up Llama
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

# ---- CRASH_HUNT=N: instead of the rest, each selected agreement case N times on each GPU side,
# HUNT_PARALLEL (default 8) runs at a time; OUT/crash-hunt.tsv counts the runs that died of a
# signal, and each one's log holds its stack (crash_trace.c)
if [[ -n ${CRASH_HUNT:-} ]]; then
  htsv=$out/crash-hunt.tsv
  printf '# gpu: %s\ncase\tside\truns\tsignalled\texit_statuses\n' "$gpu" >"$htsv"
  for c in "${cases[@]}"; do
    IFS='|' read -r name args paged <<<"$c"
    selected "$name" || continue
    for s in rocm cuda; do
      for run in $(seq "$CRASH_HUNT"); do
        # shellcheck disable=SC2086
        (generate "$out/logs/hunt-$name.$s.$run.log" "$s" "$prompt" $args $(paged "$paged"); echo $? >"$out/logs/hunt-$name.$s.$run.rc") &
        (( run % ${HUNT_PARALLEL:-8} == 0 )) && wait
      done
      wait
      statuses=$(cat "$out/logs/hunt-$name.$s".*.rc | sort -n | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
      signalled=$(cat "$out/logs/hunt-$name.$s".*.rc | awk '$1 > 128 { n++ } END { print n + 0 }')
      printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$s" "$CRASH_HUNT" "$signalled" "$statuses" >>"$htsv"
      tail -1 "$htsv"
      # the logs of clean runs are not kept
      for rc in "$out/logs/hunt-$name.$s".*.rc; do
        [[ $(cat "$rc") == 0 ]] && rm -f "${rc%.rc}.log"
        rm -f "$rc"
      done
    done
  done
  grep -h -A80 '^== crash_trace: signal' "$out"/logs/hunt-*.log >"$out/crash-traces.txt" 2>/dev/null
  tar -czf "$out/logs.tar.gz" -C "$out" logs && rm -rf "$out/logs"
  exit 0
fi

tsv=$out/mistralrs-gpu.tsv
printf '# gpu: %s\n' "$gpu" >"$tsv"
printf 'case\tagree\tgreedy\tteacher_forced_top1\tmax_score_diff\tmax_margin_at_difference\trocm_follows_cpu\tcuda_follows_cpu\trocm_prompt_tok_s\tcuda_prompt_tok_s\trocm_decode_tok_s\tcuda_decode_tok_s\n' >>"$tsv"
index=0
for c in "${cases[@]}"; do
  IFS='|' read -r name args paged <<<"$c"
  # each case's servers on ports of their own: a port just closed may not be free yet
  port=$((base_port + 2 * index))
  index=$((index + 1))
  selected "$name" || continue
  cpu_args=${args/--dtype bf16/--dtype f32}
  # shellcheck disable=SC2086
  generate "$out/logs/$name.rocm.log" rocm "$prompt" $args $(paged "$paged")
  rc_rocm=$?
  # shellcheck disable=SC2086
  generate "$out/logs/$name.cuda.log" cuda "$prompt" $args $(paged "$paged")
  rc_cuda=$?
  # shellcheck disable=SC2086
  generate "$out/logs/$name.cpu.log" cpu "$prompt" $cpu_args --paged-attn off
  rc_cpu=$?
  if (( rc_rocm != 0 || rc_cuda != 0 )); then
    greedy="no	failed (exit rocm $rc_rocm, cuda $rc_cuda): $(grep -m1 -i 'error\|panick' "$out/logs/$name.rocm.log" "$out/logs/$name.cuda.log" | head -1 | cut -c1-200)"
  else
    greedy=$("$bin/make-models" compare tokens "$out/logs/$name.cuda.log" "$out/logs/$name.rocm.log" | cut -f1,2)
  fi
  if (( rc_cpu == 0 )); then
    rocm_cpu=$(follows "$out/logs/$name.cpu.log" "$out/logs/$name.rocm.log")
    cuda_cpu=$(follows "$out/logs/$name.cpu.log" "$out/logs/$name.cuda.log")
  else
    rocm_cpu="CPU failed"
    cuda_cpu="CPU failed"
  fi
  # the same case through a CUDA server and a ROCm server, teacher-forced along CUDA's words; the
  # plain f32 case's servers answer a chat request too
  chat_request=no
  [[ $name == plain-f32 ]] && chat_request=yes
  # shellcheck disable=SC2086
  teacher_force "$name" "$port" "$prompt" $args $(paged "$paged")
  if [[ $chat_request == yes && -s $out/logs/chat-rocm.json ]]; then
    chat=$("$bin/make-models" compare tokens "$out/logs/chat-cuda.json" "$out/logs/chat-rocm.json" | cut -f1,2)
    chat_cpu=$("$bin/make-models" compare tokens "$out/logs/plain-f32.cpu.log" "$out/logs/chat-rocm.json" | cut -f1,2)
  fi
  # agreement: identical greedy words, else every teacher-forced step's top-1
  agree=no
  [[ $greedy == yes* || ${tf%%	*} == "$steps/$steps" ]] && agree=yes
  [[ $agree == yes ]] || failed=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$agree" "$(cut -f2 <<<"$greedy")" "$tf" "$rocm_cpu" "$cuda_cpu" \
    "$(speed "$out/logs/$name.rocm.log" Prompt)" "$(speed "$out/logs/$name.cuda.log" Prompt)" \
    "$(speed "$out/logs/$name.rocm.log" Decode)" "$(speed "$out/logs/$name.cuda.log" Decode)" >>"$tsv"
  tail -1 "$tsv"
done
if selected plain-f32; then
  [[ ${chat:-no} == yes* || ${chat_cpu:-no} == yes* ]] || failed=1
  printf "# server chat request (plain-f32 arguments), ROCm's answer against CUDA's: %s; against the CPU's words: %s\n" \
    "$(tr '\t' ' ' <<<"${chat:-no answer}")" "$(tr '\t' ' ' <<<"${chat_cpu:-no answer}")" >>"$tsv"
  tail -1 "$tsv"
fi

# ---- speed, on the larger made-up Llama
big=$scratch/mistralrs-speed-models
long_prompt=$("$bin/make-models" prompt 512)
speed_cases=(
  "speed-bf16|-m $big/llama -a llama --dtype bf16|off"
  "speed-bf16-paged|-m $big/llama -a llama --dtype bf16|on"
  "speed-gguf-q4k|--format gguf -m $big -f llama-q4k.gguf --tok-model-id $big/llama --dtype bf16|off"
  "speed-gguf-q4k-paged|--format gguf -m $big -f llama-q4k.gguf --tok-model-id $big/llama --dtype bf16|on"
)
stsv=$out/mistralrs-speed.tsv
printf '# gpu: %s\n' "$gpu" >"$stsv"
runs=${RUNS:-6}
printf '# runs per side and case: %s (the best rate of those that exit 0, and the ratio of the two sides'"'"' medians)\n' "$runs" >>"$stsv"
printf 'case\trocm_prompt_tok_s\tcuda_prompt_tok_s\tprompt_rocm_over_cuda\tprompt_median_ratio\trocm_decode_tok_s\tcuda_decode_tok_s\tdecode_rocm_over_cuda\tdecode_median_ratio\tnonzero_exits\tgreedy\tteacher_forced_top1\tmax_score_diff\tmax_margin_at_difference\n' >>"$stsv"
made=no
for c in "${speed_cases[@]}"; do
  IFS='|' read -r name args paged <<<"$c"
  selected "$name" || continue
  if [[ $made == no && ! -f $big/llama/config.json ]]; then
    "$bin/make-models" mistralrs-speed "$big" >"$out/logs/make-models-speed.log" 2>&1 \
      || { cat "$out/logs/make-models-speed.log"; echo "error: make-models mistralrs-speed failed"; exit 1; }
  fi
  made=yes
  declare -A best=() bad=() rates=()
  for run in $(seq "$runs"); do
    for s in cuda rocm; do
      log=$out/logs/$name.$s.$run.log
      # shellcheck disable=SC2086
      generate "$log" "$s" "$long_prompt" $args $(paged "$paged")
      rc=$?
      if (( rc != 0 )); then
        # counted, and its rates left out (a crash at exit still prints them)
        bad[$s]=$((${bad[$s]:-0} + 1))
        echo "$name: $s run $run exited with $rc: $(grep -m1 -i 'error\|panick' "$log" | cut -c1-200)"
        continue
      fi
      for what in Prompt Decode; do
        v=$(speed "$log" "$what")
        [[ -n $v ]] && rates[$s$what]+=" $v"
        [[ -n $v ]] && awk -v v="$v" -v b="${best[$s$what]:-0}" 'BEGIN { exit !(v > b) }' && best[$s$what]=$v
      done
    done
  done
  greedy=$("$bin/make-models" compare tokens "$out/logs/$name.cuda.1.log" "$out/logs/$name.rocm.1.log" 2>/dev/null | cut -f1,2)
  # where the greedy runs part: teacher-forced along CUDA's words, as the agreement cases are
  tf="NA	NA	NA"
  if [[ $greedy != yes* ]]; then
    port=$((base_port + 2 * index))
    index=$((index + 1))
    chat_request=no
    # shellcheck disable=SC2086
    teacher_force "$name" "$port" "$long_prompt" $args $(paged "$paged")
  fi
  # shellcheck disable=SC2086
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" \
    "${best[rocmPrompt]:-NA}" "${best[cudaPrompt]:-NA}" "$(ratio "${best[rocmPrompt]:-}" "${best[cudaPrompt]:-}")" \
    "$(ratio "$(median ${rates[rocmPrompt]:-})" "$(median ${rates[cudaPrompt]:-})")" \
    "${best[rocmDecode]:-NA}" "${best[cudaDecode]:-NA}" "$(ratio "${best[rocmDecode]:-}" "${best[cudaDecode]:-}")" \
    "$(ratio "$(median ${rates[rocmDecode]:-})" "$(median ${rates[cudaDecode]:-})")" \
    "rocm ${bad[rocm]:-0}, cuda ${bad[cuda]:-0}" "$(cut -f2 <<<"$greedy")" "$tf" >>"$stsv"
  tail -1 "$stsv"
  unset best bad rates
done
tar -czf "$out/logs.tar.gz" -C "$out" logs
exit $failed
