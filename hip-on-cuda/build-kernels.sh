#!/usr/bin/env bash
# hip-on-cuda/build-kernels.sh KERNELS_DIR OUT_DIR [ARCH]
#
# Compiles candle-rocm's generated HIP kernels (generated/kernels) with nvcc for
# an NVIDIA GPU, through our HIP-on-CUDA headers (hip-on-cuda/include), so the
# HIP sources can be run and checked on NVIDIA hardware:
#
#   * every code-object unit (a KERNELS_DIR/**.hip that is not a static-library
#     unit) -> OUT_DIR/<stem>.co, a cubin for ARCH (default sm_90), loaded at run
#     time with hipModuleLoadData (cuModuleLoadData underneath);
#   * the static-library units ([kernels] static_library in
#     KERNELS_DIR/../MANIFEST.toml, or STATIC_LIBRARY: upstream .cu patterns,
#     matched against <path>.hip renamed to .cu) -> ONE
#     OUT_DIR/lib$LAUNCHERS_LIB.so (default libcandle_rocm_launchers.so) with
#     the extern "C" launchers (cudart linked statically). Only the extern "C"
#     functions of those units are exported (a linker version script).
#   MANIFEST.toml's [kernels] unit_flags are hipcc (AMDGPU) flags: nvcc takes none
#   of them, in the emulated AMD build too.
#
# Then checks the outputs:
#   * every .co has entries; with a reference (CANDLE_KERNELS_REFERENCE, else
#     the repository's tests/fixtures/cuda-kernels-<candle-kernels version>.txt)
#     each module's entries must equal the CUDA build's `kernel MODULE NAME` list;
#   * the .so must export every function declared in KERNELS_DIR/ffi.rs;
#     other exports (extern "C" functions ffi.rs does not declare) are listed.
# and writes OUT_DIR/kernels.txt (`kernel MODULE NAME` / `launcher NAME`, the
# reference's format) and OUT_DIR/logs/<unit>.log (compiler output per unit).
#
# Environment: NVCC (else nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# JOBS (parallel compiles, default nproc), NVCC_EXTRA_FLAGS (appended),
# CANDLE_KERNELS_REFERENCE (a reference file, or "none" to skip that check),
# STATIC_LIBRARY (space-separated patterns instead of MANIFEST.toml's) and
# LAUNCHERS_LIB (the library's name) for a crate's own launchers (candle-rocm-build),
# AMD_ARCH (optional, an RDNA arch gfx10xx/gfx11xx/gfx12xx such as gfx1100 or
# gfx1201): an emulated AMD build. KERNELS_DIR and its ../MANIFEST.toml are
# copied to OUT_DIR/amd-emu-src/, the AMD vector aliases in its .h/.cuh/.hip
# files (`__attribute__((__vector_size__(K * sizeof(T)))) T`,
# `__attribute__((ext_vector_type(K))) T`, `typedef T name __attribute__((ext_vector_type(K)));`,
# which nvcc rejects in device code)
# are rewritten to candle_emu_vector<T, K> (any vector type left over is an
# error, named by file:line), and that copy is compiled with
# `-include tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h -D__gfxNNNN__
# -D__GFXnn__` (the macros
# clang defines for the arch): the arch's branches of the kernels (and ggml's
# RDNA3/RDNA4 WMMA ones, once NVCC_EXTRA_FLAGS defines ggml's GGML_USE_HIP,
# RDNA3 or RDNA4, AMD_WMMA_AVAILABLE) then run on the NVIDIA GPU with the AMD
# builtins emulated in software (RDNA's wave32 on 32-lane warps; wave64 gfx9 is
# refused). kernels.txt's first line says so. Without AMD_ARCH nothing changes.
# Works with CUDA 11.8+ (sm_90 needs 11.8) and CUDA 13. Never writes to KERNELS_DIR.
set -euo pipefail

die() { echo "build-kernels: error: $*" >&2; exit 1; }

[[ $# -ge 2 && $# -le 3 ]] || die "usage: $0 KERNELS_DIR OUT_DIR [ARCH, default sm_90]"
START=$(date +%s.%N)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INCLUDE="$HERE/include"
[[ -d $1 ]] || die "KERNELS_DIR $1 is not a directory"
KERNELS=$(cd "$1" && pwd)
OUT=$(realpath -m "$2")
ARCH=${3:-sm_90}
[[ $ARCH =~ ^sm_[0-9]+[af]?$ ]] || die "ARCH must look like sm_90 (got '$ARCH')"
case "$OUT/" in "$(realpath "$KERNELS")"/*) die "OUT_DIR $OUT is inside KERNELS_DIR $KERNELS (it must not be modified)" ;; esac
mkdir -p "$OUT"

# --- emulated AMD build (AMD_ARCH): a rewritten copy of the kernels --------------
EMU_FLAGS=()
if [[ -n ${AMD_ARCH:-} ]]; then
    [[ $AMD_ARCH =~ ^gfx1[0-2][0-9]{2}$ ]] ||
        die "AMD_ARCH must be an RDNA (wave32) arch gfx10xx/gfx11xx/gfx12xx such as gfx1100 or gfx1201, got '$AMD_ARCH' (gfx9/CDNA runs wave64, which a 32-lane warp cannot stand in for)"
    EMU_SRC="$OUT/amd-emu-src"
    rm -rf "$EMU_SRC"
    mkdir -p "$EMU_SRC"
    cp -R "$KERNELS" "$EMU_SRC/kernels"
    if [[ -f $KERNELS/../MANIFEST.toml ]]; then cp "$KERNELS/../MANIFEST.toml" "$EMU_SRC/MANIFEST.toml"; fi
    find "$EMU_SRC/kernels" -type f \( -name '*.h' -o -name '*.cuh' -o -name '*.hip' \) -print0 | xargs -0 -r sed -E -i \
        -e 's/__attribute__\(\(__vector_size__\(([0-9]+)[[:space:]]*\*[[:space:]]*sizeof\(([A-Za-z_][A-Za-z0-9_]*)\)\)\)\)[[:space:]]+\2\b/candle_emu_vector<\2, \1>/g' \
        -e 's/__attribute__\(\(ext_vector_type\(([0-9]+)\)\)\)[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)\b/candle_emu_vector<\2, \1>/g' \
        -e 's/typedef[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)[[:space:]]+__attribute__\(\(ext_vector_type\(([0-9]+)\)\)\);/typedef candle_emu_vector<\1, \3> \2;/g'
    # comment lines name the attributes too (candle_elementwise.h): only code counts
    left=$(cd "$EMU_SRC/kernels" && grep -rnE --include='*.h' --include='*.cuh' --include='*.hip' 'vector_size|ext_vector_type' . | sed 's|^\./||' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
    [[ -z $left ]] || die "AMD_ARCH=$AMD_ARCH: vector types left after the rewrite to candle_emu_vector (nvcc rejects them in device code):
$left"
    EMU_FLAGS=(-include "$HERE/../tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h" "-D__${AMD_ARCH}__" "-D__GFX${AMD_ARCH:3:2}__")
    echo "build-kernels: AMD_ARCH=$AMD_ARCH: compiling a rewritten copy of $KERNELS ($EMU_SRC/kernels) with ${EMU_FLAGS[*]}"
    KERNELS_ORIG=$KERNELS
    KERNELS="$EMU_SRC/kernels"
fi

# --- tools -------------------------------------------------------------------
if [[ -n ${NVCC:-} ]]; then :
elif command -v nvcc >/dev/null 2>&1; then NVCC=$(command -v nvcc)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc
else die "nvcc not found (set NVCC, put it on PATH, or install CUDA in /usr/local/cuda)"; fi
CUOBJDUMP=$(dirname "$NVCC")/cuobjdump
[[ -x $CUOBJDUMP ]] || CUOBJDUMP=$(command -v cuobjdump) || die "cuobjdump not found beside $NVCC nor on PATH"
command -v nm >/dev/null || die "nm (binutils) not found"
CUDA_VERSION=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')

# --- which units are which -----------------------------------------------------
MANIFEST="$KERNELS/../MANIFEST.toml"
OWN_UNITS=()
if [[ -n ${STATIC_LIBRARY:-} ]]; then
    # shellcheck disable=SC2206 # the patterns are space-separated on purpose
    set -f; STATIC_PATTERNS=($STATIC_LIBRARY); set +f
elif [[ -f $MANIFEST ]]; then
    # [kernels] static_library = ["moe/moe_*.cu", ...]
    mapfile -t STATIC_PATTERNS < <(awk '/^\[/{s=($0=="[kernels]")} s && /^static_library *=/' "$MANIFEST" | grep -oE '"[^"]+"' | tr -d '"')
    [[ ${#STATIC_PATTERNS[@]} -gt 0 ]] || die "$MANIFEST: no [kernels] static_library list"
    # [kernels] own_units = ["candle_flash_attn.hip"]: candle-rocm's own units (not
    # translations): their launchers are not in ffi.rs nor in the CUDA build
    mapfile -t OWN_UNITS < <(awk '/^\[/{s=($0=="[kernels]")} s && /^own_units *=/' "$MANIFEST" | grep -oE '"[^"]+"' | tr -d '"')
else
    STATIC_PATTERNS=("moe/moe_*.cu" "mmvq_gguf.cu" "mmq_gguf/mmq_*.cu")
    echo "build-kernels: no $MANIFEST, using the default static_library list: ${STATIC_PATTERNS[*]}" >&2
fi

CO_UNITS=() LIB_UNITS=()
while IFS= read -r rel; do
    upstream="${rel%.hip}.cu" kind=co
    for p in "${STATIC_PATTERNS[@]}"; do
        # shellcheck disable=SC2053 # $p is a glob on purpose; * also matches '/'
        [[ $upstream == $p ]] && kind=lib
    done
    if [[ $kind == lib ]]; then LIB_UNITS+=("$rel"); else CO_UNITS+=("$rel"); fi
done < <(cd "$KERNELS" && find . -name '*.hip' -type f | sed 's|^\./||' | LC_ALL=C sort)
[[ ${#CO_UNITS[@]} -gt 0 || ${#LIB_UNITS[@]} -gt 0 ]] || die "no .hip files under $KERNELS"

# --- compile -------------------------------------------------------------------
# Upstream candle-kernels' flags (C++17, -O3, relaxed constexpr) plus the HIP
# headers first, then the kernel tree (candle_hip_compat.h, *.cuh).
COMMON=(-std=c++17 -O3 --expt-relaxed-constexpr -x cu -I "$INCLUDE" -I "$KERNELS")
[[ ${#EMU_FLAGS[@]} -eq 0 ]] || COMMON+=("${EMU_FLAGS[@]}")
# shellcheck disable=SC2206 # word splitting of extra flags is intended
EXTRA=(${NVCC_EXTRA_FLAGS:-})
LOGS="$OUT/logs" OBJS="$OUT/obj"
rm -rf "$LOGS" "$OBJS"
mkdir -p "$LOGS" "$OBJS"

# One job: "co REL" or "lib REL". Writes the output atomically, the compiler's
# output to logs/<REL with / as __>.log, and "REL" to failed/ on failure.
compile_one() {
    local kind=$1 rel=$2 src out tmp log
    src="$KERNELS/$rel"
    log="$LOGS/${rel//\//__}.log"
    if [[ $kind == co ]]; then
        out="$OUT/${rel%.hip}.co"
        mkdir -p "$(dirname "$out")"
        tmp="$out.tmp.$$"
        set -- "$NVCC" -cubin -arch="$ARCH" "${COMMON[@]}" -I "$(dirname "$src")" "${EXTRA[@]}" "$src" -o "$tmp"
    else
        out="$OBJS/${rel%.hip}.o"
        mkdir -p "$(dirname "$out")"
        tmp="$out.tmp.$$.o"
        set -- "$NVCC" -c -arch="$ARCH" -Xcompiler -fPIC "${COMMON[@]}" -I "$(dirname "$src")" "${EXTRA[@]}" "$src" -o "$tmp"
    fi
    local t0=$SECONDS
    { printf '%q ' "$@"; echo; } >"$log"
    if "$@" >>"$log" 2>&1; then
        mv -f "$tmp" "$out"
        echo "build-kernels: ok   $rel ($((SECONDS - t0)) s)"
    else
        rm -f "$tmp"
        echo "$rel" >"$LOGS/FAILED.${rel//\//__}"
        echo "build-kernels: FAIL $rel (log: $log)" >&2
    fi
}
export -f compile_one
# Arrays cannot be exported: hand them over as newline-separated text.
COMMON_STR=$(printf '%s\n' "${COMMON[@]}") EXTRA_STR=$(printf '%s\n' "${EXTRA[@]+"${EXTRA[@]}"}")
export NVCC ARCH KERNELS OUT LOGS OBJS COMMON_STR EXTRA_STR
JOBS=${JOBS:-$(nproc)}
{
    for u in "${LIB_UNITS[@]+"${LIB_UNITS[@]}"}"; do printf 'lib\0%s\0' "$u"; done  # the big ones first
    for u in "${CO_UNITS[@]+"${CO_UNITS[@]}"}"; do printf 'co\0%s\0' "$u"; done
} | xargs -0 -n 2 -P "$JOBS" bash -c '
    set -euo pipefail
    mapfile -t COMMON <<<"$COMMON_STR"
    EXTRA=(); [[ -n $EXTRA_STR ]] && mapfile -t EXTRA <<<"$EXTRA_STR"
    compile_one "$1" "$2"' _ || true

shopt -s nullglob
failed=("$LOGS"/FAILED.*)
if [[ ${#failed[@]} -gt 0 ]]; then
    for f in "${failed[@]}"; do
        rel=$(cat "$f")
        echo "---- $rel: errors from $LOGS/${rel//\//__}.log" >&2
        grep -E 'error|Error' "$LOGS/${rel//\//__}.log" | head -20 >&2 || true
    done
    die "${#failed[@]} unit(s) failed to compile: $(cat "${failed[@]}" | tr '\n' ' ')"
fi

# --- link the launcher library -------------------------------------------------
LIB_NAME=${LAUNCHERS_LIB:-candle_rocm_launchers}
[[ $LIB_NAME =~ ^[A-Za-z0-9_]+$ ]] || die "LAUNCHERS_LIB must be a library name such as my_ops (got '$LIB_NAME')"
LIB="$OUT/lib$LIB_NAME.so"
if [[ ${#LIB_UNITS[@]} -gt 0 ]]; then
    objs=()
    for u in "${LIB_UNITS[@]}"; do objs+=("$OBJS/${u%.hip}.o"); done
    # Export the extern "C" host functions the units define (unmangled global
    # text symbols), nothing else: not C++ helpers, not the static cudart, not
    # the host stubs of extern "C" __global__ kernels (the device entries of
    # the embedded cubins, which cuobjdump lists).
    for o in "${objs[@]}"; do "$CUOBJDUMP" -symbols "$o"; done | awk '$3=="STO_ENTRY" {print $4}' | LC_ALL=C sort -u >"$OBJS/kernel-entries.txt"
    mapfile -t c_functions < <(nm --defined-only -g "${objs[@]}" | awk '$2=="T" && $3 !~ /^_Z/ && $3 !~ /^__/ {print $3}' \
        | LC_ALL=C sort -u | LC_ALL=C comm -23 - "$OBJS/kernel-entries.txt")
    [[ ${#c_functions[@]} -gt 0 ]] || die "the static-library units define no extern \"C\" function"
    { echo "{ global:"; printf '  %s;\n' "${c_functions[@]}"; echo "  local: *; };"; } >"$OBJS/exports.map"
    # the toolkit's own library directory (lib64 in CUDA's installs, lib in the pip wheels')
    link_dirs=()
    for d in "$(dirname "$NVCC")/../lib64" "$(dirname "$NVCC")/../lib"; do [[ ! -f $d/libcudart_static.a ]] || link_dirs+=("-L$d"); done
    if ! "$NVCC" -shared -arch="$ARCH" -cudart static "${link_dirs[@]+"${link_dirs[@]}"}" -o "$LIB.tmp" "${objs[@]}" \
        -Xlinker -soname="lib$LIB_NAME.so" -Xlinker --version-script="$OBJS/exports.map" \
        -Xlinker --no-undefined >"$LOGS/lib$LIB_NAME.log" 2>&1; then
        cat "$LOGS/lib$LIB_NAME.log" >&2
        rm -f "$LIB.tmp"
        die "linking lib$LIB_NAME.so failed (log: $LOGS/lib$LIB_NAME.log)"
    fi
    mv -f "$LIB.tmp" "$LIB"
fi

# --- check the outputs ----------------------------------------------------------
REPORT="$OUT/kernels.txt"
{
    if [[ -n ${AMD_ARCH:-} ]]; then
        echo "# Kernel names of the emulated AMD_ARCH=$AMD_ARCH hip-on-cuda build (nvcc $CUDA_VERSION, $ARCH; AMD builtins emulated by amd_gfx_emulation.h) of $KERNELS_ORIG (rewritten copy: $KERNELS)."
    else
        echo "# Kernel names of the hip-on-cuda build (nvcc $CUDA_VERSION, $ARCH) of $KERNELS."
    fi
    for u in "${CO_UNITS[@]+"${CO_UNITS[@]}"}"; do
        module=${u%.hip}
        entries=$("$CUOBJDUMP" -symbols "$OUT/$module.co" | awk '$3=="STO_ENTRY" {print $4}' | LC_ALL=C sort -u)
        [[ -n $entries ]] || die "$OUT/$module.co has no kernel entry"
        while IFS= read -r e; do echo "kernel ${module//\//_} $e"; done <<<"$entries"
    done
    if [[ -f $LIB ]]; then
        nm -D --defined-only "$LIB" | awk '$2=="T" {print "launcher " $3}' | LC_ALL=C sort -u
    fi
} >"$REPORT"

problems=0
REF=${CANDLE_KERNELS_REFERENCE:-}
if [[ -z $REF && -f $MANIFEST ]]; then
    version=$(sed -n 's/^"candle-kernels" *= *"\(.*\)"/\1/p' "$MANIFEST" | head -1)
    [[ -n $version && -f $HERE/../tests/fixtures/cuda-kernels-$version.txt ]] && REF="$HERE/../tests/fixtures/cuda-kernels-$version.txt"
fi
[[ -z $REF || $REF == none || -f $REF ]] || die "reference $REF not found"
[[ $REF != none ]] || REF=

exported=$(awk '$1=="launcher" {print $2}' "$REPORT")
# the launchers of candle-rocm's own units (run_mha): checked against nothing upstream
own_launchers=
if [[ -f $LIB && ${#OWN_UNITS[@]} -gt 0 ]]; then
    own_objs=()
    for u in "${OWN_UNITS[@]}"; do own_objs+=("$OBJS/${u%.hip}.o"); done
    own_launchers=$(nm --defined-only -g "${own_objs[@]}" | awk '$2=="T" {print $3}' | LC_ALL=C sort -u | LC_ALL=C comm -12 - <(echo "$exported"))
    exported=$(LC_ALL=C comm -23 <(echo "$exported") <(echo "$own_launchers"))
    echo "build-kernels: launchers of candle-rocm's own units (${OWN_UNITS[*]}):" $own_launchers
fi
if [[ -f $LIB && -f $KERNELS/ffi.rs ]]; then
    declared=$(grep -oE 'pub fn [A-Za-z_][A-Za-z0-9_]*' "$KERNELS/ffi.rs" | awk '{print $3}' | LC_ALL=C sort -u)
    missing=$(LC_ALL=C comm -23 <(echo "$declared") <(echo "$exported"))
    extra=$(LC_ALL=C comm -13 <(echo "$declared") <(echo "$exported"))
    if [[ -n $missing ]]; then
        echo "build-kernels: libcandle_rocm_launchers.so lacks launchers that ffi.rs declares:" $missing >&2
        problems=1
    fi
    if [[ -n $extra ]]; then
        # An extern "C" launcher that ffi.rs does not declare (upstream declares
        # candle_launch_moe_align only under a feature the translation drops).
        if [[ -n $REF ]] && [[ -z $(LC_ALL=C comm -23 <(echo "$extra") <(awk '$1=="launcher" {print $2}' "$REF" | LC_ALL=C sort -u)) ]]; then
            echo "build-kernels: note: libcandle_rocm_launchers.so also exports" $extra "(not in ffi.rs; a launcher of the CUDA build too)"
        else
            echo "build-kernels: libcandle_rocm_launchers.so exports extern \"C\" functions that ffi.rs does not declare:" $extra >&2
            problems=1
        fi
    fi
fi

if [[ -n $REF ]]; then
    # Kernels: those of the modules built here, module by module.
    built_modules=$(awk '$1=="kernel" {print $2}' "$REPORT" | LC_ALL=C sort -u)
    d=$(diff <(awk '$1=="kernel"' "$REPORT" | LC_ALL=C sort) \
             <(awk -v mods="$built_modules" 'BEGIN{n=split(mods,m,"\n"); for(i=1;i<=n;i++) ok[m[i]]=1} $1=="kernel" && ok[$2]' "$REF" | LC_ALL=C sort) || true)
    unbuilt=$(LC_ALL=C comm -13 <(echo "$built_modules") <(awk '$1=="kernel" {print $2}' "$REF" | LC_ALL=C sort -u))
    # Launchers: all of them.
    dl=$(diff <(echo "$exported" | sed '/^$/d') <(awk '$1=="launcher" {print $2}' "$REF" | LC_ALL=C sort -u) || true)
    if [[ -n $d || -n $unbuilt || -n $dl ]]; then
        echo "build-kernels: differences from $REF ('<' only here, '>' only in the CUDA build):" >&2
        [[ -z $d ]] || echo "$d" | grep -E '^[<>]' >&2
        [[ -z $dl ]] || echo "$dl" | grep -E '^[<>]' | sed 's/^\([<>]\) /\1 launcher /' >&2
        [[ -z $unbuilt ]] || echo "build-kernels: modules of the reference not built here:" $unbuilt >&2
        problems=1
    else
        echo "build-kernels: kernels of all $(echo "$built_modules" | wc -l) modules and all launchers equal $(basename "$REF")"
    fi
fi

nk=$(grep -c '^kernel ' "$REPORT" || true) nl=$(grep -c '^launcher ' "$REPORT" || true)
secs=$(awk -v a="$START" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
echo "build-kernels: ${#CO_UNITS[@]} code objects ($nk kernels) + ${#LIB_UNITS[@]} units in lib$LIB_NAME.so ($nl launchers), nvcc $CUDA_VERSION $ARCH, $JOBS jobs, ${secs} s -> $OUT"
[[ $problems -eq 0 ]] || die "output checks failed (see above)"
