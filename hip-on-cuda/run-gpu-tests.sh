#!/usr/bin/env bash
# Runs the ROCm test binaries of a GPU bundle (`cargo xtask gpu-bundle`) through
# hip-on-cuda: on a machine with an NVIDIA GPU it first compiles
# generated/kernels with nvcc (hip-on-cuda/build-kernels.sh), then runs every
# binary with the forwarding runtime as its HIP runtime, rocBLAS, rocRAND and RCCL
# (ROCm 7.2's sonames: first it checks with LD_DEBUG=bindings that every HIP,
# rocBLAS, rocRAND and RCCL reference of every binary binds to lib/libamdhip64.so.7),
# then (with --sanitize) compute-sanitizer memcheck and racecheck over the
# ROCm tests (CUDA API errors are not counted: the ROCm-vs-CPU tests ask for
# kernels the CUDA build lacks on purpose, and expect the error). Without a GPU it says so and runs the same binaries on the CPU,
# where every ROCm test must say that it skipped.
#
#   bash hip-on-cuda/run-gpu-tests.sh [--sanitize] [BUNDLE]
#
# BUNDLE: the bundle folder or its .tar.xz (default target/gpu-bundle/bundle,
# else target/gpu-bundle/bundle.tar.xz: the file carried to the GPU machine).
#
# Logs go to $OUT/gpu-run/logs (the device tool's output folder) or a temp dir;
# the unpacked bundle and the nvcc build go to a scratch dir ($WORK_DIR or a temp dir);
# KERNELS_DIR names an nvcc build of generated/kernels to use instead of building one.
# RCCL's calls go to NVIDIA's NCCL (libnccl.so.2): HIP_ON_CUDA_NCCL=PATH names it; else
# the dlopen search finds it, and when it would not (PyTorch's pip wheels keep it in
# site-packages/nvidia/nccl/lib) this script adds that directory to LD_LIBRARY_PATH.
# Exit status: 0 when every binary passed (and the sanitizers found 0 errors).
# SANITIZE_TOOLS (default "memcheck racecheck") and SANITIZE_TIMEOUT (seconds
# per binary, default 540) bound the sanitizer part; RUN_TESTS=0 leaves out
# the plain test run (to spend a device call on the sanitizers alone).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

sanitize=0
if [[ "${1:-}" == "--sanitize" ]]; then sanitize=1; shift; fi
bundle=${1:-target/gpu-bundle/bundle}
[[ -z "${1:-}" && ! -d "$bundle" ]] && bundle=target/gpu-bundle/bundle.tar.xz
results=${OUT:-$(mktemp -d)}/gpu-run
scratch=${WORK_DIR:-$(mktemp -d)}
mkdir -p "$results/logs" "$scratch"
if [[ -f "$bundle" && "$bundle" == *.tar.xz ]]; then
  mkdir -p "$scratch/unpacked"
  tar -xJf "$bundle" -C "$scratch/unpacked" || { echo "error: cannot unpack $bundle"; exit 2; }
  bundle=$(ls -d "$scratch/unpacked"/*/ | head -1)
fi
bundle=$(realpath "$bundle")
[[ -f "$bundle/tests.tsv" ]] || { echo "error: $bundle/tests.tsv not found: build the bundle with cargo xtask gpu-bundle"; exit 2; }
echo "bundle: $(head -1 "$bundle/BUNDLE.txt")"

gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
if [[ $gpu == 1 ]]; then
  nvidia-smi -L
  export PATH="$PATH:/usr/local/cuda/bin"
  kernels=${KERNELS_DIR:-$scratch/kernels}
  if [[ -n ${KERNELS_DIR:-} ]]; then
    echo "kernels: $kernels (KERNELS_DIR: an earlier hip-on-cuda/build-kernels.sh output)"
  else
    start=$(date +%s)
    bash hip-on-cuda/build-kernels.sh generated/kernels "$kernels" sm_90 >"$results/logs/build-kernels.log" 2>&1 \
      || { tail -40 "$results/logs/build-kernels.log"; echo "error: the nvcc build of generated/kernels failed"; exit 1; }
    tail -1 "$results/logs/build-kernels.log"
    echo "kernels for sm_90 built in $(( $(date +%s) - start )) s"
  fi
  kernels=$(realpath "$kernels")
  export CANDLE_ROCM_CODE_OBJECTS_DIR="$kernels"
  cuda_libs=$(dirname "$(command -v nvcc)")/../lib64
  export LD_LIBRARY_PATH="$bundle/lib:$kernels:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # NCCL for RCCL's calls (hip-on-cuda/src/nccl.rs), named to the forwarder by HIP_ON_CUDA_NCCL
  # shellcheck source=hip-on-cuda/find-nccl.sh
  source hip-on-cuda/find-nccl.sh
  find_nccl "$cuda_libs"
  if [[ -n $nccl ]]; then
    export HIP_ON_CUDA_NCCL=$nccl
    echo "nccl: $nccl (from $nccl_from)"
  else
    echo "nccl: libnccl.so.2 found $nccl_from: the RCCL tests will fail saying so"
  fi
  export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  threads=${TEST_THREADS:-8}
else
  echo "GPU execution skipped: no NVIDIA GPU here (nvidia-smi). The binaries run on the CPU; every ROCm test must say it skipped."
  amd_launchers=${CANDLE_ROCM_AMD_LAUNCHERS_DIR:-$root/target/gpu-bundle/amd-launchers}
  export LD_LIBRARY_PATH="$bundle/lib:$amd_launchers${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  threads=${TEST_THREADS:-2}
fi

# The binaries are linked as against ROCm 7.2 (DT_NEEDED libamdhip64.so.7, librocblas.so.5,
# librocrand.so.1, librccl.so.1; hipMalloc@hip_4.2 ...): every reference of theirs to a HIP, rocBLAS,
# rocRAND or RCCL symbol must bind to the one forwarder, lib/libamdhip64.so.7 (lib/librocblas.so.5,
# lib/librocrand.so.1 and lib/librccl.so.1 are empty and depend on it). They are linked with -z now, so loading a
# binary (--list) makes every binding; LD_DEBUG=bindings shows where each went.
bind_total=0 bind_elsewhere=0
while IFS=$'\t' read -r group cwd bin; do
  [[ "$group" == \#* || -z "$group" ]] && continue
  b=$(realpath "$bundle/$bin")
  trace=$( (cd "$root/$cwd" && LD_DEBUG=bindings "$b" --list) 2>&1 >/dev/null | grep -E "binding file $b \[0\] to .*: normal symbol \`(hip|__hip|rocblas_|rocrand_|nccl)")
  n=$(grep -c . <<<"$trace")
  other=$(grep -v " to $bundle/lib/libamdhip64.so.7 \[0\]" <<<"$trace" | sed '/^$/d')
  bind_total=$((bind_total + n))
  if [[ -n $other ]]; then
    bind_elsewhere=$((bind_elsewhere + $(grep -c . <<<"$other")))
    echo "  $group/$(basename "$bin"): HIP/rocBLAS/rocRAND/RCCL references bound elsewhere than lib/libamdhip64.so.7:"
    head -5 <<<"$other" | sed 's/^[^b]*binding file [^ ]* \[0\] /    /'
  fi
done <"$bundle/tests.tsv"
echo "bindings: $bind_total references of the binaries to HIP/rocBLAS/rocRAND/RCCL symbols, $(( bind_total - bind_elsewhere )) bound to lib/libamdhip64.so.7 (the forwarder), $bind_elsewhere elsewhere"
[[ $bind_elsewhere != 0 || $bind_total == 0 ]] && status_bindings=1 || status_bindings=0

total_pass=0 total_fail=0 total_ignored=0 total_skipped=0 status=$status_bindings
[[ "${RUN_TESTS:-1}" == 0 ]] && echo "plain test run left out (RUN_TESTS=0)"
[[ "${RUN_TESTS:-1}" != 0 ]] && printf '%-16s %-28s %7s %7s %7s %9s %6s\n' group binary passed failed ignored "skipped" secs
while IFS=$'\t' read -r group cwd bin; do
  [[ "$group" == \#* || -z "$group" || "${RUN_TESTS:-1}" == 0 ]] && continue
  name=$(basename "$bin")
  log="$results/logs/$group-$name.log"
  start=$(date +%s)
  (cd "$root/$cwd" && timeout 540 "$bundle/$bin" --test-threads="$threads" --nocapture) >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  read -r pass fail ign < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i } } END { print p+0, f+0, g+0 }' "$log")
  skipped=$(grep -c "skipped: .*no ROCm device" "$log")
  printf '%-16s %-28s %7s %7s %7s %9s %6s\n' "$group" "$name" "$pass" "$fail" "$ign" "$skipped" "$secs"
  total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail)) total_ignored=$((total_ignored + ign)) total_skipped=$((total_skipped + skipped))
  if [[ $rc != 0 ]]; then
    status=1
    echo "  FAILED (exit $rc): $log"
    grep -E "^test .* FAILED$|panicked at|error while loading|^  FAIL |: [0-9]+ cases, " "$log" | head -60 | cut -c1-400 | sed 's/^/    /'
    grep -A6 "panicked at" "$log" | head -50 | cut -c1-400 | sed 's/^/    /'
  fi
  if [[ $gpu == 1 && $skipped != 0 ]]; then
    status=1
    echo "  $skipped tests skipped for want of a device on a GPU machine: the forwarding runtime did not find the GPU"
    grep -m3 "skipped:" "$log" | sed 's/^/    /'
  fi
done <"$bundle/tests.tsv"
echo "total: $total_pass passed, $total_fail failed, $total_ignored ignored, $total_skipped said they skipped (no device)"

if [[ $sanitize == 1 && $gpu == 1 ]]; then
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    errors=0
    while IFS=$'\t' read -r group cwd bin; do
      # candle-nn's own tests are CPU tests; the HIP layer's are not kernels
      [[ "$group" == \#* || -z "$group" || "$group" == candle-rocm-hip || "$group" == candle-nn ]] && continue
      name=$(basename "$bin")
      # candle-core: only the ROCm variants (`<test>_gpu::rocm`); the parity binaries: all their tests
      filter=(); [[ "$group" == candle-core ]] && filter=(rocm)
      log="$results/logs/$tool-$group-$name.log"
      (cd "$root/$cwd" && timeout "${SANITIZE_TIMEOUT:-540}" compute-sanitizer --tool "$tool" --report-api-errors no --print-limit 20 "$bundle/$bin" "${filter[@]}" --test-threads=1) >"$log" 2>&1
      rc=$?
      # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"
      n=$(grep -oE "ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: .*\([0-9]+ errors" "$log" | grep -oE "[0-9]+( errors)?$" | grep -oE "^[0-9]+" | awk '{ s += $1 } END { print s+0 }')
      note=""
      [[ $rc == 124 ]] && note=" (stopped at the ${SANITIZE_TIMEOUT:-540} s limit: $(grep -c '^test .* ok$' "$log") tests finished)"
      grep -qE 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" || note="$note (no summary: see log)"
      echo "$tool $group/$name: $n errors$note"
      [[ $n != 0 ]] && grep -m5 -E "^========= (Invalid|Race|Error|Program hit)" "$log" | sed 's/^/    /'
      errors=$((errors + n))
    done <"$bundle/tests.tsv"
    echo "$tool: $errors errors in all"
    [[ $errors != 0 ]] && status=1
  done
elif [[ $sanitize == 1 ]]; then
  echo "compute-sanitizer skipped: no NVIDIA GPU here"
fi
exit $status
