#!/usr/bin/env bash
# bench/kernels/run-kernel-bench.sh ORIGINAL_SRC GENERATED_KERNELS OUT_DIR
#
# Kernel-throughput benchmark of the ORIGINAL candle-kernels (CUDA, nvcc) against
# OUR translation (generated/kernels HIP, nvcc through hip-on-cuda/include), on the
# GPU machine (NVIDIA GPU, nvcc on PATH or in /usr/local/cuda/bin; no Rust needed):
#
#   ORIGINAL_SRC       upstream candle-kernels/src (e.g. device-carry/candle-kernels/src
#                      after tools/stage_upstream_kernels.sh)
#   GENERATED_KERNELS  our generated/kernels
#   OUT_DIR            gets kernels-h100.tsv (the table) and kernels-h100.txt (stdout)
#
# Steps, compiles in parallel (xargs -P, JOBS = nproc by default):
#   1. original code-object units (every src/**.cu that is not a static-library unit)
#      -> BUILD_DIR/original/<stem>.cubin with upstream's flags
#      (-cubin -arch=sm_90 -std=c++17 -O3 --expt-relaxed-constexpr);
#   2. original static-library units (moe/moe_*.cu, mmvq_gguf.cu, mmq_gguf/mmq_*.cu)
#      -> BUILD_DIR/original/liboriginal_launchers.so, built the way
#      hip-on-cuda/build-kernels.sh builds ours (-c -Xcompiler -fPIC, same flags,
#      nvcc -shared -cudart static, only the extern "C" launchers exported);
#   3. ours: hip-on-cuda/build-kernels.sh GENERATED_KERNELS BUILD_DIR/translated
#      (same flags plus -x cu -I hip-on-cuda/include), run alongside 1-2; or set
#      TRANSLATED_BUILD_DIR to a directory it already built (<stem>.co +
#      libcandle_rocm_launchers.so) to skip it;
#   4. bench/kernels/throughput.cu -> BUILD_DIR/throughput, then runs it.
#
# On the H100 machine (16 cores, CUDA 13.0): builds about 120 s (both sides at once),
# benchmark about 70 s. BUILD_DIR outside OUT_DIR keeps the build out of what comes back.
#
# Environment: NVCC, ARCH (default sm_90), JOBS, BUILD_DIR (default OUT_DIR/build),
# TRANSLATED_BUILD_DIR, BENCH_ARGS (extra throughput options, e.g. "--only moe,mmq").
# Example on the device machine (repo root, after tools/stage_upstream_kernels.sh):
#   BUILD_DIR=/tmp/kbench bench/kernels/run-kernel-bench.sh device-carry/candle-kernels/src generated/kernels $OUT
set -euo pipefail

die() { echo "run-kernel-bench: error: $*" >&2; exit 1; }
[[ $# -eq 3 ]] || die "usage: $0 ORIGINAL_SRC GENERATED_KERNELS OUT_DIR"
START=$SECONDS
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[[ -d $1 ]] || die "ORIGINAL_SRC $1 is not a directory"
[[ -d $2 ]] || die "GENERATED_KERNELS $2 is not a directory"
ORIG=$(cd "$1" && pwd)
GEN=$(cd "$2" && pwd)
OUT=$(realpath -m "$3")
BUILD=$(realpath -m "${BUILD_DIR:-$OUT/build}")
ARCH=${ARCH:-sm_90}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT" "$BUILD/original" "$BUILD/logs" "$BUILD/obj"

if [[ -n ${NVCC:-} ]]; then :
elif command -v nvcc >/dev/null 2>&1; then NVCC=$(command -v nvcc)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc
else die "nvcc not found (set NVCC, put it on PATH, or install CUDA in /usr/local/cuda)"; fi
export NVCC
CUOBJDUMP=$(dirname "$NVCC")/cuobjdump
[[ -x $CUOBJDUMP ]] || CUOBJDUMP=$(command -v cuobjdump) || die "cuobjdump not found"
NVCC_VERSION=$("$NVCC" --version | grep -E 'release|Build' | tr '\n' ' ' | sed 's/ *$//')
echo "run-kernel-bench: $NVCC_VERSION, $ARCH, $JOBS jobs"

# --- 3. ours, in the background --------------------------------------------------
TRANSLATED=${TRANSLATED_BUILD_DIR:-}
OURS_PID=
if [[ -n $TRANSLATED ]]; then
    TRANSLATED=$(realpath "$TRANSLATED")
    [[ -f $TRANSLATED/libcandle_rocm_launchers.so && -f $TRANSLATED/unary.co ]] || die "TRANSLATED_BUILD_DIR $TRANSLATED lacks unary.co / libcandle_rocm_launchers.so"
    echo "run-kernel-bench: using the translated build in $TRANSLATED"
else
    TRANSLATED=$BUILD/translated
    echo "run-kernel-bench: building ours with hip-on-cuda/build-kernels.sh -> $TRANSLATED (log: $BUILD/logs/build-kernels.log)"
    ( NVCC=$NVCC JOBS=$JOBS "$ROOT/hip-on-cuda/build-kernels.sh" "$GEN" "$TRANSLATED" "$ARCH" >"$BUILD/logs/build-kernels.log" 2>&1 ) &
    OURS_PID=$!
fi

# --- 1-2. the original ------------------------------------------------------------
# Upstream's flags (candle-kernels build.rs), the same that build-kernels.sh gives ours.
FLAGS="-std=c++17 -O3 --expt-relaxed-constexpr"
STATIC_PATTERNS=("moe/moe_*.cu" "mmvq_gguf.cu" "mmq_gguf/mmq_*.cu")
CO_UNITS=() LIB_UNITS=()
while IFS= read -r rel; do
    kind=co
    for p in "${STATIC_PATTERNS[@]}"; do
        # shellcheck disable=SC2053 # $p is a glob on purpose
        [[ $rel == $p ]] && kind=lib
    done
    if [[ $kind == lib ]]; then LIB_UNITS+=("$rel"); else CO_UNITS+=("$rel"); fi
done < <(cd "$ORIG" && find . -name '*.cu' -type f | sed 's|^\./||' | LC_ALL=C sort)
[[ ${#CO_UNITS[@]} -gt 0 && ${#LIB_UNITS[@]} -gt 0 ]] || die "no .cu units under $ORIG"

compile_orig() {
    local kind=$1 rel=$2 src out log
    src="$ORIG/$rel"
    log="$BUILD/logs/original__${rel//\//__}.log"
    if [[ $kind == co ]]; then
        out="$BUILD/original/${rel%.cu}.cubin"
        # shellcheck disable=SC2086 # FLAGS is a word list
        set -- "$NVCC" -cubin -arch="$ARCH" $FLAGS -I "$ORIG" -I "$(dirname "$src")" "$src" -o "$out"
    else
        out="$BUILD/obj/${rel%.cu}.o"
        # shellcheck disable=SC2086
        set -- "$NVCC" -c -arch="$ARCH" -Xcompiler -fPIC $FLAGS -I "$ORIG" -I "$(dirname "$src")" "$src" -o "$out"
    fi
    mkdir -p "$(dirname "$out")"
    local t0=$SECONDS
    { printf '%q ' "$@"; echo; } >"$log"
    if "$@" >>"$log" 2>&1; then
        echo "run-kernel-bench: ok   original $rel ($((SECONDS - t0)) s)"
    else
        echo "run-kernel-bench: FAIL original $rel (log: $log)" >&2
        echo "$rel" >"$BUILD/logs/FAILED.original__${rel//\//__}"
    fi
}
export -f compile_orig
export ORIG BUILD ARCH FLAGS
rm -f "$BUILD"/logs/FAILED.*
{
    for u in "${LIB_UNITS[@]}"; do printf 'lib\0%s\0' "$u"; done   # the big ones first
    for u in "${CO_UNITS[@]}"; do printf 'co\0%s\0' "$u"; done
} | xargs -0 -n 2 -P "$JOBS" bash -c 'compile_orig "$1" "$2"' _ || true

# Ours first: its failure is the more likely one to need reading.
if [[ -n $OURS_PID ]]; then
    if ! wait "$OURS_PID"; then
        tail -30 "$BUILD/logs/build-kernels.log" >&2
        die "hip-on-cuda/build-kernels.sh failed (log: $BUILD/logs/build-kernels.log)"
    fi
    tail -3 "$BUILD/logs/build-kernels.log"
fi
shopt -s nullglob
failed=("$BUILD"/logs/FAILED.*)
if [[ ${#failed[@]} -gt 0 ]]; then
    for f in "${failed[@]}"; do
        rel=$(cat "$f")
        grep -E 'error' "$BUILD/logs/original__${rel//\//__}.log" | head -10 >&2 || true
    done
    die "${#failed[@]} original unit(s) failed to compile: $(cat "${failed[@]}" | tr '\n' ' ')"
fi
shopt -u nullglob

# Link the original launchers like build-kernels.sh links ours: export the extern "C"
# host functions (unmangled global text symbols that are not kernel entries) only.
LIB=$BUILD/original/liboriginal_launchers.so
objs=()
for u in "${LIB_UNITS[@]}"; do objs+=("$BUILD/obj/${u%.cu}.o"); done
for o in "${objs[@]}"; do "$CUOBJDUMP" -symbols "$o"; done | awk '$3=="STO_ENTRY" {print $4}' | LC_ALL=C sort -u >"$BUILD/obj/kernel-entries.txt"
mapfile -t c_functions < <(nm --defined-only -g "${objs[@]}" | awk '$2=="T" && $3 !~ /^_Z/ && $3 !~ /^__/ {print $3}' \
    | LC_ALL=C sort -u | LC_ALL=C comm -23 - "$BUILD/obj/kernel-entries.txt")
[[ ${#c_functions[@]} -gt 0 ]] || die "the original static-library units define no extern \"C\" function"
{ echo "{ global:"; printf '  %s;\n' "${c_functions[@]}"; echo "  local: *; };"; } >"$BUILD/obj/exports.map"
"$NVCC" -shared -arch="$ARCH" -cudart static -o "$LIB" "${objs[@]}" \
    -Xlinker -soname=liboriginal_launchers.so -Xlinker --version-script="$BUILD/obj/exports.map" \
    -Xlinker --no-undefined >"$BUILD/logs/liboriginal_launchers.log" 2>&1 \
    || { cat "$BUILD/logs/liboriginal_launchers.log" >&2; die "linking $LIB failed"; }
echo "run-kernel-bench: original: ${#CO_UNITS[@]} cubins + $LIB (${#c_functions[@]} launchers)"

# --- 4. the benchmark ----------------------------------------------------------------
"$NVCC" -std=c++17 -O2 -o "$BUILD/throughput" "$HERE/throughput.cu" -lcuda >"$BUILD/logs/throughput.log" 2>&1 \
    || { cat "$BUILD/logs/throughput.log" >&2; die "compiling throughput.cu failed"; }
echo "run-kernel-bench: builds done in $((SECONDS - START)) s; running the benchmark"
set -o pipefail
# shellcheck disable=SC2086 # BENCH_ARGS is a word list
"$BUILD/throughput" --orig-dir "$BUILD/original" --gen-dir "$TRANSLATED" \
    --orig-so "$LIB" --gen-so "$TRANSLATED/libcandle_rocm_launchers.so" \
    --tsv "$OUT/kernels-h100.tsv" --nvcc "$NVCC_VERSION" ${BENCH_ARGS:-} | tee "$OUT/kernels-h100.txt"
echo "run-kernel-bench: done in $((SECONDS - START)) s -> $OUT/kernels-h100.tsv, $OUT/kernels-h100.txt"
