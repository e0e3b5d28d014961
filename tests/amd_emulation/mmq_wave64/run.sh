#!/usr/bin/env bash
# Builds and runs the wave64 CPU emulation of the generated MMQ code (see
# mmq_wave64.cpp). Needs bash, perl and g++ (C++20); no GPU. From anywhere:
#   tests/amd_emulation/mmq_wave64/run.sh [build-dir]
# Prints the results table and "N passed, M failed"; exits non-zero on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/amd_emulation/cdna_on_cpu/harness.sh
source "$here/../cdna_on_cpu/harness.sh"  # the HIP device environment on the CPU
emu_suite_setup "$@"

# The launcher files with only their launch syntax rewritten for the emulator (every one
# launches something). The headers they include are used unchanged from generated/.
for f in "$gen"/mmq_gguf/mmq_instance_*.hip "$gen"/mmq_gguf/mmq_quantize.hip; do
    out="$build/rewritten/$(basename "$f")"
    emu_rewrite_launches "$f" "$out"
    if ! grep -q 'emu_launch_kernel' "$out"; then
        echo "run.sh: could not rewrite the launches of $f" >&2
        exit 1
    fi
done

# Warnings the generated code raises under g++ (enum-compare, sign-compare in mmq_gguf.cuh) are off.
cxx=(g++ -std=c++20 -O1 -pthread -Wall -Wextra -Wno-unknown-pragmas -Wno-unused-parameter -Wno-unused-function
    -Wno-enum-compare -Wno-sign-compare -Wno-psabi -I "$here" -I "$emu" -I "$emu/include")
gen_inc=(-I "$build/rewritten" -I "$gen/mmq_gguf" -I "$gen")

# The configurations: name, arch macro, flags. MMQ_WAVE64_CONFIGS (space-separated names;
# default all) runs a subset: CI's sample (tests/tests/compat_headers.rs) takes one MFMA and
# one dp4a configuration; the paths are compared with each other only when all four CDNA2/3
# ones run.
declare -A cfg_arch=([cdna3_mfma]=__gfx942__ [cdna3_dp4a]=__gfx942__ [cdna2_mfma]=__gfx90a__ [cdna2_dp4a]=__gfx90a__
    [cdna4_mfma]=__gfx950__)
declare -A cfg_flags=([cdna3_dp4a]=-DCANDLE_HIP_NO_MMQ_MFMA [cdna2_dp4a]=-DCANDLE_HIP_NO_MMQ_MFMA)
# (gfx950, CDNA4: CDNA3's int8 MFMA instructions, rule ggml-cdna4-mma; its dp4a tiles are
# gfx942's code)
configs=(${MMQ_WAVE64_CONFIGS:-cdna3_mfma cdna3_dp4a cdna2_mfma cdna2_dp4a cdna4_mfma})
objs=() defs=()
for c in "${configs[@]}"; do
    [[ -n ${cfg_arch[$c]:-} ]] || { echo "run.sh: unknown configuration $c (known: ${!cfg_arch[*]})" >&2; exit 1; }
    objs+=("$build/$c.o") defs+=("-DMMQ_CFG_$c")
done
build_cfg() { emu_build_cfg "$here/mmq_config.cpp" "$@"; }  # name gfx-macro [extra flags]
pids=()
for c in "${configs[@]}"; do
    # shellcheck disable=SC2086 # (a flag or none)
    build_cfg "$c" "${cfg_arch[$c]}" ${cfg_flags[$c]:-} & pids+=($!)
    if ((${#pids[@]} == 2)); then wait "${pids[@]}"; pids=(); fi
done
((${#pids[@]} == 0)) || wait "${pids[@]}"
"${cxx[@]}" -c "$emu/mfma_selftest.cpp" -o "$build/mfma_selftest.o"
"${cxx[@]}" "${defs[@]}" -c "$here/mmq_wave64.cpp" -o "$build/mmq_wave64.o"
"${cxx[@]}" "${objs[@]}" "$build/mfma_selftest.o" "$build/mmq_wave64.o" -o "$build/mmq_wave64"
"$build/mmq_wave64"
