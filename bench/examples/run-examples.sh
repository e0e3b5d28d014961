#!/usr/bin/env bash
# bench/examples/run-examples.sh OUT_DIR
#
# On the GPU machine (NVIDIA, CUDA 13, no Rust), from the repository root: runs each case
# of bench/examples/cases.tsv with the stock CUDA build (OUT/cuda/EXAMPLE) and the ROCm
# build through hip-on-cuda (OUT/rocm/EXAMPLE) of `cargo xtask gpu-program examples-parity`, with identical
# arguments on the same made-up models (written here first by make-models: random weights
# do not compress, so they are not carried), and writes
#
#   OUT_DIR/examples-h100.tsv   per case: agreement and both sides' speeds (the example's own
#                               tokens/s or ms, and the process wall time), each side against
#                               the CPU, repeatability, for
#                               bench/results/ and `cargo xtask bench report`
#   OUT_DIR/logs/CASE.{cuda,rocm}.{1,2}.log, CASE.cpu.1.log   each run's stdout and stderr
#                               (also packed as OUT_DIR/logs.tar.gz)
#
# Each GPU side runs twice (cuda, rocm, cuda, rocm): the second run is the one compared and
# timed (the first JIT-compiles the stock build's PTX: 30 s on a fresh machine), and run 1
# against run 2 of one side says whether that side repeats itself. The stock build also runs
# once with --cpu: Candle's CPU backend, the reference both GPU sides are compared with.
# With SPEED_RUNS=N (default 1), each GPU side runs N timed times, alternating (cuda.2, rocm.2,
# cuda.3, rocm.3, ...), and each side's best speed is the one written (these programs take
# a fraction of a second to generate, and one run of the same binary can differ from the
# next by 30% on the shared host); the agreement is still run 2's.
#
# Environment: BIN_DIR (the build's output folder or its .tar.xz; default
# device-carry/examples-parity, else device-carry/examples-parity.tar.xz), KERNELS_DIR,
# WORK_DIR (as bench/backend/setup.sh), MODELS_DIR (made-up models to reuse; default
# WORK_DIR/models, made now), CASES (space-separated case names; default all),
# SET=flash-attn: the cases of bench/examples/cases-flash-attn.tsv with the binaries of
# `cargo xtask gpu-program examples-flash-attn` (default device-carry/examples-flash-attn),
# written to OUT_DIR/examples-flash-attn-h100.tsv; Dao's kernels for the stock build are
# compiled first (bench/flash-attn/build-dao.sh, the units DAO_UNITS names, default the
# made-up Llama's head dim 64), and the CPU reference runs without --use-flash-attn.
# SET=multiprocess (two GPUs or more): the cases of bench/examples/cases-multiprocess.tsv
# (llama_multiprocess: one process per GPU, all-reduce over NCCL through cudarc on the stock
# side, over RCCL through hip-on-cuda on ours) with the same binaries, written to
# OUT_DIR/examples-multiprocess-h100.tsv; NVIDIA's NCCL found as hip-on-cuda/find-nccl.sh
# finds it (the stock build links libnccl.so.2, its folder goes on LD_LIBRARY_PATH; the
# forwarder loads it through HIP_ON_CUDA_NCCL), NCCL_NVLS_ENABLE=0. A case may name its CPU reference (column `cpu`: EXAMPLE
# ARGS, run from the stock build with --cpu) and how its log is compared (column `cpu_param`).
# Exit status: 0 when every case agrees, 1 otherwise (a missing model file, a failed run, a
# disagreement: each said on its line).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
set_name=${SET:-parity}
case $set_name in
  parity) cases_file=bench/examples/cases.tsv tsv_name=examples-h100.tsv cuda_features=cuda rocm_features=rocm ;;
  flash-attn) cases_file=bench/examples/cases-flash-attn.tsv tsv_name=examples-flash-attn-h100.tsv cuda_features=cuda,flash-attn rocm_features=rocm,flash-attn ;;
  multiprocess) cases_file=bench/examples/cases-multiprocess.tsv tsv_name=examples-multiprocess-h100.tsv cuda_features=cuda,flash-attn,nccl rocm_features=rocm,flash-attn,rccl ;;
  *) echo "error: SET=$set_name: parity, flash-attn or multiprocess" >&2; exit 2 ;;
esac
program=examples-$set_name
[[ $set_name == multiprocess ]] && program=examples-flash-attn
setup_bin=device-carry/$program
setup_required="make-models"
setup_build="cargo xtask gpu-program $program"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
# shellcheck source=bench/examples/lib.sh
source bench/examples/lib.sh
mkdir -p "$out/logs"
if [[ $set_name == multiprocess ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  (( gpus >= 2 )) || { echo "error: SET=multiprocess runs one process per GPU: it needs two NVIDIA GPUs or more, this machine has $gpus" >&2; exit 2; }
  # shellcheck source=hip-on-cuda/find-nccl.sh
  source hip-on-cuda/find-nccl.sh
  find_nccl "$cuda_libs"
  [[ -n $nccl ]] || { echo "error: SET=multiprocess needs NVIDIA's NCCL (libnccl.so.2), found $nccl_from; set HIP_ON_CUDA_NCCL=PATH" >&2; exit 2; }
  echo "nccl: $nccl (from $nccl_from; the stock build links libnccl.so.2, the forwarder loads HIP_ON_CUDA_NCCL)"
  base_ld="$(dirname "$nccl"):$base_ld"
  cuda_env=(env LD_LIBRARY_PATH="$base_ld" NCCL_NVLS_ENABLE=0)
  rocm_env=(env LD_LIBRARY_PATH="$bin/lib:$kernels:$base_ld" CANDLE_ROCM_CODE_OBJECTS_DIR="$kernels" HIP_ON_CUDA_NCCL="$nccl" NCCL_NVLS_ENABLE=0)
fi
if [[ $set_name != parity ]]; then
  # shellcheck source=bench/flash-attn/dao-lib.sh
  source bench/flash-attn/dao-lib.sh
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)

# every binary's libraries: CUDA 13's for the stock build, the forwarder and the kernels'
# launchers for the ROCm build
for side in cuda rocm; do
  if [[ $side == cuda ]]; then envs=("${cuda_env[@]}"); else envs=("${rocm_env[@]}"); fi
  for b in "$bin/$side"/*; do echo "== ldd $side/${b##*/}"; "${envs[@]}" ldd "$b"; done
done >"$out/logs/ldd.txt" 2>&1
grep -E "== ldd (cuda|rocm)/(quantized|llama)" -A30 "$out/logs/ldd.txt" | grep -E "==|libcu|nvrtc|amdhip|roc|launchers"
if grep -q "not found" "$out/logs/ldd.txt"; then grep -E "==|not found" "$out/logs/ldd.txt"; echo "error: a library is missing (logs/ldd.txt)"; exit 1; fi

make_models "$out/logs/make-models.log"

tsv=$out/$tsv_name
{
  echo "# gpu: $gpu"
  echo "# CUDA: stock crates.io candle-examples 0.11.1 --features $cuda_features (llama_multiprocess with regen's upstream repairs, rule upstream-repairs); ROCm: generated/candle-examples --features $rocm_features through hip-on-cuda (kernels: nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
  if (( ${SPEED_RUNS:-1} > 1 )); then
    echo "# speeds: each side's best of ${SPEED_RUNS} timed runs after the first, alternating cuda and rocm; agreement: run 2's"
  fi
  echo "# runs: each GPU side twice, the second measured (the first JIT-compiles the CUDA build's PTX); cpu: the stock build with --cpu, the reference both GPU sides are also compared with; repeatable: run 1 and run 2 of each GPU side agree"
  printf 'case\texample\tmodel\tdtype\tagree\tagreement\tcuda\trocm\tunit\tcuda_wall_s\trocm_wall_s\tcuda_vs_cpu\trocm_vs_cpu\trepeatable\n'
} >"$tsv"

# `compare KIND PARAM LOG_A LOG_B`: make-models compare's fields, or a line saying why not
compare() {
  local r rc
  r=$("$bin/make-models" compare "$1" "$3" "$4" "$2" 2>&1)
  rc=$?
  if [[ $rc != 0 && $rc != 3 ]]; then r=$(printf 'no\tcompare failed: %s\tNA\tNA\tNA' "${r//$'\n'/ }"); fi
  echo "$r"
}

status=0
while IFS=$'\t' read -r case example model dtype kind param files args cpu cpu_param; do
  [[ $case == \#* || $case == case || -z $case ]] && continue
  [[ -n ${CASES:-} && " $CASES " != *" $case "* ]] && continue
  # every made-up file the case reads must be there
  missing_files "$files"
  if (( ${#missing[@]} )); then
    echo "error: $case: made-up model file(s) missing: ${missing[*]} (bench/examples/make-models writes them: make-models models DIR)"
    printf '%s\t%s\t%s\t%s\tno\tmissing model files: %s\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\n' "$case" "$example" "$model" "$dtype" "${missing[*]}" >>"$tsv"
    status=1; continue
  fi
  cpu_example=$example
  if [[ -n ${cpu:-} ]]; then
    expand "${cpu#* }"
    cpu_argv=("${argv[@]}")
    cpu_example=${cpu%% *}
  fi
  expand "$args"
  [[ -n ${cpu:-} ]] || cpu_argv=("${argv[@]}")
  declare -A wall=()
  failed=""
  runs=(cuda.1 rocm.1)
  for ((r = 2; r <= ${SPEED_RUNS:-1} + 1; r++)); do runs+=("cuda.$r" "rocm.$r"); done
  for run in "${runs[@]}" cpu.1; do
    side=${run%.*}
    extra=()
    case $side in
      cuda) envs=("${cuda_env[@]}"); exe=$bin/cuda/$example ;;
      rocm) envs=("${rocm_env[@]}"); exe=$bin/rocm/$example ;;
      cpu) envs=("${cuda_env[@]}"); exe=$bin/cuda/$cpu_example; extra=(--cpu) ;;
    esac
    run_argv=("${argv[@]}")
    if [[ $side == cpu ]]; then
      run_argv=()
      for a in "${cpu_argv[@]}"; do [[ $a == --use-flash-attn ]] || run_argv+=("$a"); done
    fi
    # a rank-0 id file left by an earlier run makes llama_multiprocess refuse to start
    for i in "${!run_argv[@]}"; do [[ ${run_argv[$i]} == --comm-file ]] && rm -f "${run_argv[$((i + 1))]}"; done
    log=$out/logs/$case.$run.log
    start=$(date +%s.%N)
    "${envs[@]}" HF_HOME="$models/hf-home" "$exe" "${run_argv[@]}" "${extra[@]}" </dev/null >"$log" 2>&1
    rc=$?
    wall[$side]=$(since "$start")
    if [[ $rc != 0 ]]; then failed+="$run exit $rc; "; echo "== $case $run: exit $rc"; tail -15 "$log"; fi
  done
  if [[ -n $failed ]]; then
    printf '%s\t%s\t%s\t%s\tno\trun failed: %s\tNA\tNA\tNA\t%s\t%s\tNA\tNA\tNA\n' "$case" "$example" "$model" "$dtype" "${failed%; }" "${wall[cuda]}" "${wall[rocm]}" >>"$tsv"
    status=1; continue
  fi
  L=$out/logs/$case
  result=$(compare "$kind" "$param" "$L.cuda.2.log" "$L.rocm.2.log")
  [[ $(cut -f1 <<<"$result") == yes ]] || status=1
  if (( ${SPEED_RUNS:-1} > 1 )); then
    # each side's best speed over its timed runs: tokens/s the highest, ms the lowest
    best=$(for ((r = 2; r <= SPEED_RUNS + 1; r++)); do compare "$kind" "$param" "$L.cuda.$r.log" "$L.rocm.$r.log" | cut -f3-5; done |
      awk -F'\t' '$1 != "NA" { lower = ($3 == "ms"); if (n++ == 0 || (lower ? $1 < c : $1 > c)) c = $1; if (n == 1 || (lower ? $2 < o : $2 > o)) o = $2; u = $3 }
                  END { if (n) printf "%s\t%s\t%s", c, o, u }')
    [[ -n $best ]] && result=$(awk -F'\t' -v OFS='\t' -v b="$best" 'BEGIN { split(b, v, "\t") } { $3 = v[1]; $4 = v[2]; $5 = v[3]; print }' <<<"$result")
  fi
  cuda_cpu=$(compare "$kind" "${cpu_param:-$param}" "$L.cpu.1.log" "$L.cuda.2.log" | cut -f2)
  rocm_cpu=$(compare "$kind" "${cpu_param:-$param}" "$L.cpu.1.log" "$L.rocm.2.log" | cut -f2)
  repeat=$(for side in cuda rocm; do echo "$side $(compare "$kind" "$param" "$L.$side.1.log" "$L.$side.2.log" | cut -f1)"; done | paste -sd, -)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$example" "$model" "$dtype" "$result" "${wall[cuda]}" "${wall[rocm]}" "$cuda_cpu" "$rocm_cpu" "$repeat" >>"$tsv"
  echo "$case: $(cut -f1,2 <<<"$result" | tr '\t' ' ') | cuda $(cut -f3 <<<"$result") rocm $(cut -f4 <<<"$result") $(cut -f5 <<<"$result") | wall cuda ${wall[cuda]} s, rocm ${wall[rocm]} s | vs cpu: cuda: $cuda_cpu; rocm: $rocm_cpu | repeatable: $repeat"
done <"$cases_file"
# the logs, one file (the device tool brings back a limited number of files)
tar -C "$out" -czf "$out/logs.tar.gz" logs
echo "written: $tsv"
exit $status
