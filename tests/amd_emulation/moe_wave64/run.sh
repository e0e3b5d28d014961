#!/usr/bin/env bash
# Builds and runs the wave64 CPU emulation of the generated MoE GEMMs (see
# moe_wave64.cpp). Needs bash, perl and g++ (C++20); no GPU. From anywhere:
#   tests/amd_emulation/moe_wave64/run.sh [build-dir]
# Prints one row per case and "N passed, M failed"; exits non-zero on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/amd_emulation/cdna_on_cpu/harness.sh
source "$here/../cdna_on_cpu/harness.sh"  # the HIP device environment on the CPU
emu_suite_setup "$@"

# The launcher files with their launch syntax rewritten for the emulator, `extern "C"`
# removed and `extern __shared__` spelled `extern` (line numbers kept).
for f in moe/moe_wmma.hip moe/moe_wmma_gguf.hip moe/moe_utils.cuh; do
    out="$build/rewritten/$(basename "$f")"
    emu_rewrite_launches "$gen/$f" "$build/launches.tmp"
    perl -pe 's/extern "C" //g; s/extern __shared__ /extern /g' "$build/launches.tmp" >"$out"
    if grep -qE 'extern "C"|extern __shared__' "$out"; then
        echo "run.sh: could not rewrite $f" >&2
        exit 1
    fi
done

cxx=(g++ -std=c++20 -O1 -pthread -Wall -Wextra -Wno-unknown-pragmas -Wno-unused-parameter -Wno-unused-function -Wno-unused-variable
    -Wno-sign-compare -Wno-psabi -Wno-missing-field-initializers -I "$here" -I "$emu" -I "$emu/include")
gen_inc=(-I "$build/rewritten" -I "$gen/moe" -I "$gen")

pids=()
build_cfg() { emu_build_cfg "$here/moe_config.cpp" "$@"; }  # name gfx-macro [extra flags]
build_cfg cdna3_cores __gfx942__ & pids+=($!)
build_cfg cdna3_shuffles __gfx942__ -DCANDLE_HIP_NO_WMMA_MATRIX_CORES & pids+=($!)
wait "${pids[@]}"
build_cfg cdna2_cores __gfx90a__
"${cxx[@]}" -c "$here/moe_wave64.cpp" -o "$build/moe_wave64.o"
"${cxx[@]}" "$build"/cdna3_cores.o "$build"/cdna3_shuffles.o "$build"/cdna2_cores.o "$build/moe_wave64.o" -o "$build/moe_wave64"
"$build/moe_wave64"
