#!/usr/bin/env bash
# Local checks of translator/compat/candle_hip_{wmma,thrust,cub}.h (no GPU needed):
# AMD compile (device code object and host+device object, with the stand-in and
# with the real candle_bf16), then the CPU emulation. The NVIDIA comparison is
# wmma_vs_cuda.cu (see its header; needs nvcc and an sm_80+ GPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hip=(env HIP_PLATFORM=amd hipcc -x hip --offload-arch=gfx90a --offload-arch=gfx1030 -O3 -Wall -Wextra -Werror -I translator/compat)
for def in "" -DCANDLE_USE_REAL_COMPAT; do
    "${hip[@]}" $def --genco tests/compat_collective/compile_check.hip -o "$tmp/x.co"
    "${hip[@]}" $def -c tests/compat_collective/compile_check.hip -o "$tmp/x.o"
    echo "compile_check.hip ${def:-(stand-in bf16)}: --genco and -c ok"
done
g++ -std=c++20 -O1 -Wall -Wno-unknown-pragmas -Wno-unused-parameter -Wno-comment -Werror -pthread -I translator/compat \
    -o "$tmp/emu" tests/compat_collective/cpu_emulation.cpp
"$tmp/emu" | tail -1
