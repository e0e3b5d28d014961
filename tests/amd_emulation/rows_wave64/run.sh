#!/usr/bin/env bash
# Builds and runs the wave64 CPU emulation of Candle's row kernels (see
# rows_wave64.cpp). Needs bash, perl and g++ (C++20); no GPU. From anywhere:
#   tests/amd_emulation/rows_wave64/run.sh [build-dir]
# Prints one row per (kernel, type, width) and "N passed, M failed"; exits
# non-zero on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
gen="$root/generated/kernels"
build=${1:-$(mktemp -d)}
mkdir -p "$build"
[ $# -ge 1 ] || trap 'rm -rf "$build"' EXIT

# reduce.hip with C++ linkage for its kernels (`extern "C"` removed) and without its #include lines
# (rows_wave64.cpp includes them first; line numbers kept),
# so that it can be included once per wavefront width
perl -pe 's/extern "C" (__global__)/$1/g; s/^#include .*//' "$gen/reduce.hip" >"$build/reduce_rows.hip"
if grep -q 'extern "C"' "$build/reduce_rows.hip"; then
    echo "run.sh: reduce.hip has an extern \"C\" this script does not rewrite" >&2
    exit 1
fi

emu="$here/../cdna_on_cpu"
g++ -std=c++20 -O1 -pthread -Wall -Wextra -Wno-unknown-pragmas -Wno-unused-parameter -Wno-unused-function \
    -Wno-sign-compare -Wno-psabi -D__GFX9__ -D__gfx942__ -I "$emu" -I "$emu/include" -I "$build" -I "$gen" \
    "$here/rows_wave64.cpp" -o "$build/rows_wave64"
"$build/rows_wave64"
