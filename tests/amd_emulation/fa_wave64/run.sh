#!/usr/bin/env bash
# Builds and runs the wave64 CPU emulation of the generated flash attention (see
# fa_wave64.cpp). Needs bash, perl and g++ (C++20); no GPU. From anywhere:
#   tests/amd_emulation/fa_wave64/run.sh [build-dir]
# Prints one row per case and configuration and "N passed, M failed"; exits non-zero on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/amd_emulation/cdna_on_cpu/harness.sh
source "$here/../cdna_on_cpu/harness.sh"  # the HIP device environment on the CPU
emu_suite_setup "$@"

# The kernel file with its launch syntax rewritten for the emulator and `extern "C"`
# removed (line numbers kept).
out="$build/rewritten/candle_flash_attn.hip"
emu_rewrite_launches "$gen/candle_flash_attn.hip" "$build/launches.tmp"
perl -pe 's/extern "C" //g' "$build/launches.tmp" >"$out"
if grep -q 'extern "C"' "$out"; then
    echo "run.sh: could not rewrite candle_flash_attn.hip" >&2
    exit 1
fi

cxx=(g++ -std=c++20 -O1 -pthread -Wall -Wextra -Wno-unknown-pragmas -Wno-unused-parameter -Wno-unused-function -Wno-unused-variable
    -Wno-sign-compare -Wno-psabi -Wno-missing-field-initializers -I "$here" -I "$emu" -I "$emu/include")
gen_inc=(-I "$build/rewritten" -I "$gen")

pids=()
build_cfg() { emu_build_cfg "$here/fa_config.cpp" "$@"; }  # name gfx-macro [extra flags]
build_cfg cdna3_cores __gfx942__ -D__GFX9__ & pids+=($!)
build_cfg cdna3_shuffles __gfx942__ -D__GFX9__ -DCANDLE_HIP_NO_WMMA_MATRIX_CORES & pids+=($!)
wait "${pids[@]}"
build_cfg cdna2_cores __gfx90a__ -D__GFX9__
"${cxx[@]}" -c "$here/fa_wave64.cpp" -o "$build/fa_wave64.o"
"${cxx[@]}" "$build"/cdna3_cores.o "$build"/cdna3_shuffles.o "$build"/cdna2_cores.o "$build/fa_wave64.o" -o "$build/fa_wave64"
"$build/fa_wave64"
