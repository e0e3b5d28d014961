#!/usr/bin/env bash
# bench/examples/probe-examples.sh OUT_DIR
#
# On the GPU machine, from the repository root, with the binaries of run-examples.sh
# (`cargo xtask gpu-program examples-parity`; BIN_DIR, KERNELS_DIR, WORK_DIR, MODELS_DIR as
# there): runtime calls per generated token of real Candle programs, the stock CUDA build
# (CUDA driver calls, plus the CUDA runtime's cudaLaunchKernel of the kernels' launchers)
# against the ROCm build through hip-on-cuda (HIP calls), counted by the LD_PRELOAD probe
# bench/backend/probe/backend_probe.c (built here with gcc) with PROBE_AT_EXIT=1: one line of
# totals per process.
#
# Per case of bench/examples/cases.tsv in CASES (default: quantized-q4k-split-prompt
# quantized-q8_0-split-prompt mamba qwen3 t5-decode bert) and side (cuda, rocm): one run
# without the probe (the stock build JIT-compiles its PTX on its first run), then two with it,
# the case's arguments with a long and a short length (its -n / --n replaced):
#   sample length (quantized, qwen, mamba): PROBE_LONG / PROBE_SHORT tokens (200 / 100),
#   the unit is a generated token (as many as the run's "N tokens generated" says);
#   bert: --n PROBE_LONG_FORWARDS / PROBE_SHORT_FORWARDS (20 / 10) forward passes of the
#   prompt, the unit is a forward pass (as many as the run printed "Took ..." lines);
#   t5 is skipped: it has no length flag (it decodes until EOS or 512 tokens).
# probe_summary.py then divides the difference of the two runs (long - short: loading, the
# prompt and start-up cancel) by the difference of their units.
#
# Writes OUT_DIR/probe-CASE-SIDE-{long,short,warmup}.{out,log} (stdout, stderr: the probe's
# line), OUT_DIR/probe-cases.tsv (case, example, unit, the two lengths asked for, or
# `skipped` and why), and probe_summary.py's OUT_DIR/examples-calls*.tsv.
# Exit status: 0 when every run succeeded, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
setup_bin=device-carry/examples-parity
setup_required="make-models"
setup_build="cargo xtask gpu-program examples-parity"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
# shellcheck source=bench/examples/lib.sh
source bench/examples/lib.sh
make_models "$out/make-models.log"
probe=$scratch/libbackend_probe.so
gcc -O2 -Wall -shared -fPIC -o "$probe" bench/backend/probe/backend_probe.c -ldl || { echo "error: the probe does not build"; exit 1; }
cases=${CASES:-quantized-q4k-split-prompt quantized-q8_0-split-prompt mamba qwen3 t5-decode bert}

# `set_length FLAG N`: argv with FLAG's value replaced by N (FLAG N appended when absent)
set_length() {
  local i
  for i in "${!argv[@]}"; do
    case ${argv[$i]} in
      -n | --n | --sample-len) argv[i+1]=$2; return ;;
    esac
  done
  argv+=("$1" "$2")
}

manifest=$out/probe-cases.tsv
printf 'case\texample\tunit\tlong\tshort\n' >"$manifest"
status=0
while IFS=$'\t' read -r case example _model _dtype _kind _param files args _; do
  [[ $case == \#* || $case == case || -z $case ]] && continue
  [[ " $cases " != *" $case "* ]] && continue
  case $example in
    bert) unit=forward flag=--n long=${PROBE_LONG_FORWARDS:-20} short=${PROBE_SHORT_FORWARDS:-10} ;;
    quantized | qwen | mamba) unit=token flag=-n long=${PROBE_LONG:-200} short=${PROBE_SHORT:-100} ;;
    *)
      why="no length flag"
      [[ $example == t5 ]] && why="no length flag (t5 decodes until EOS or 512 tokens)"
      printf '%s\t%s\tskipped\t%s\t\n' "$case" "$example" "$why" >>"$manifest"
      echo "$case: skipped: $why"; continue ;;
  esac
  missing_files "$files"
  if (( ${#missing[@]} )); then echo "error: $case: made-up model file(s) missing: ${missing[*]}"; status=1; continue; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$case" "$example" "$unit" "$long" "$short" >>"$manifest"
  for side in cuda rocm; do
    if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
    for run in warmup long short; do
      expand "$args"
      preload=(LD_PRELOAD="$probe" PROBE_AT_EXIT=1)
      case $run in
        warmup) set_length "$flag" "$short"; preload=() ;;
        long) set_length "$flag" "$long" ;;
        short) set_length "$flag" "$short" ;;
      esac
      o=$out/probe-$case-$side-$run
      start=$(date +%s.%N)
      timeout "${PROBE_TIMEOUT:-600}" "${envs[@]}" HF_HOME="$models/hf-home" "${preload[@]}" "$bin/$side/$example" "${argv[@]}" \
        </dev/null >"$o.out" 2>"$o.log"
      rc=$?
      if [[ $unit == token ]]; then units=$(grep -oE '[0-9]+ tokens generated' "$o.out"); else units="$(grep -c '^Took ' "$o.out") forward passes"; fi
      echo "$case $side $run: exit $rc, $(since "$start") s, $units"
      if [[ $rc != 0 ]]; then tail -15 "$o.log"; status=1; fi
    done
  done
done <bench/examples/cases.tsv
python3 bench/examples/probe_summary.py "$out" || status=1
exit $status
