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

pids=()
build_cfg() { emu_build_cfg "$here/mmq_config.cpp" "$@"; }  # name gfx-macro [extra flags]
build_cfg cdna3_mfma __gfx942__ & pids+=($!)
build_cfg cdna3_dp4a __gfx942__ -DCANDLE_HIP_NO_MMQ_MFMA & pids+=($!)
wait "${pids[@]}"
pids=()
build_cfg cdna2_mfma __gfx90a__ & pids+=($!)
build_cfg cdna2_dp4a __gfx90a__ -DCANDLE_HIP_NO_MMQ_MFMA & pids+=($!)
wait "${pids[@]}"
# gfx950 (CDNA4): CDNA3's int8 MFMA instructions (rule ggml-cdna4-mma); its dp4a tiles are
# gfx942's code
build_cfg cdna4_mfma __gfx950__
"${cxx[@]}" -c "$emu/mfma_selftest.cpp" -o "$build/mfma_selftest.o"
"${cxx[@]}" -c "$here/mmq_wave64.cpp" -o "$build/mmq_wave64.o"
"${cxx[@]}" "$build"/cdna3_mfma.o "$build"/cdna3_dp4a.o "$build"/cdna2_mfma.o "$build"/cdna2_dp4a.o "$build"/cdna4_mfma.o \
    "$build/mfma_selftest.o" "$build/mmq_wave64.o" -o "$build/mmq_wave64"
"$build/mmq_wave64"
