#!/usr/bin/env bash
# Per-kernel register, spill and shared-memory use of upstream candle-kernels' CUDA build on sm_90,
# from `ptxas -v`: the reference beside which `cargo xtask bench kernel-resources` puts the AMD figures.
#
# Usage:
#   here:                      bash tools/stage_upstream_kernels.sh
#   GPU machine (device tool, carry device-carry):
#                              bash tools/cuda_kernel_resources.sh compile
#                              -> $OUT/ptxas/*.log (raw ptxas -v output) and $OUT/cuda-kernel-resources.tsv
#   here, from the logs:       bash tools/cuda_kernel_resources.sh parse DIR_OF_LOGS > tests/fixtures/cuda-kernel-resources-<version>-sm_90.tsv
#
# Flags are those of candle-kernels' build.rs (cudaforge) with the arch fixed to sm_90:
#   PTX modules (src/*.cu but moe_*, mmvq_gguf, mmq_*): -std=c++17 -O3 --expt-relaxed-constexpr; upstream ships
#     PTX that the driver compiles at load time, here ptxas compiles it offline for sm_90 (same ptxas, -O3 default).
#   static-library sources (moe/, mmq_gguf/, mmvq_gguf.cu): the same plus -Xcompiler -fPIC (sm_90 >= 80, so no -DNO_BF16_KERNEL).
# Output (tab-separated, sorted by module then kernel): module, kernel (the entry symbol, mangled for C++ templates),
#   registers, spill_store_bytes, spill_load_bytes, stack_frame_bytes, smem_bytes (static shared memory).
set -u

parse() {
    # ptxas -v prints per entry function:
    #   ptxas info    : Compiling entry function 'NAME' for 'sm_90'
    #   ptxas info    : Function properties for NAME
    #       S bytes stack frame, A bytes spill stores, B bytes spill loads
    #   ptxas info    : Used R registers, used N barriers, M bytes smem, C bytes cmem[0]
    # ("M bytes smem" is absent when the kernel has no static shared memory.)
    local dir=$1 nvcc_version
    nvcc_version=$(sed -n 's/^Cuda compilation tools, //p' "$dir/../nvcc-version.txt" 2>/dev/null)
    echo "# what: per-kernel resources of upstream candle-kernels' CUDA build on sm_90, from ptxas -v (nvcc ${nvcc_version:-unknown}), flags as upstream's build.rs"
    echo "# made by: tools/cuda_kernel_resources.sh (GPU machine: compile; here: parse), see its header"
    echo "# smem_bytes: static shared memory only (dynamic shared memory is a launch parameter)"
    printf 'module\tkernel\tregisters\tspill_store_bytes\tspill_load_bytes\tstack_frame_bytes\tsmem_bytes\n'
    for log in "$dir"/*.log; do
        module=$(basename "$log" .log)
        awk -v module="$module" '
            /Compiling entry function/ { match($0, /function '\''[^'\'']+'\''/); entry = substr($0, RSTART + 10, RLENGTH - 11); stack = 0; st = 0; ld = 0; next }
            entry != "" && /bytes stack frame/ { stack = $1; st = $5; ld = $9; next }
            entry != "" && /Used [0-9]+ registers/ {
                regs = 0; smem = 0
                for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^registers/) regs = $i; if ($(i+2) ~ /^smem/) smem = $i }
                printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", module, entry, regs, st, ld, stack, smem
                entry = ""
            }' "$log"
    done | LC_ALL=C sort -t$'\t' -k1,1 -k2,2 | awk -F'\t' '!seen[$1 FS $2]++'
}

compile() {
    local src=device-carry/candle-kernels/src
    mkdir -p "$OUT/ptxas"
    nvcc --version | tail -2 > "$OUT/nvcc-version.txt"
    local common="-arch=sm_90 --expt-relaxed-constexpr -std=c++17 -O3 -Xptxas -v"
    # PTX modules: compiled to a cubin so that ptxas runs
    ls $src/*.cu | grep -v -e mmvq_gguf -e '/moe_' -e '/mmq_' |
        xargs -P 16 -I{} sh -c 'f={}; b=$(basename $f .cu); nvcc --cubin '"$common"' -I '"$src"' -o /tmp/$b.cubin $f > '"$OUT"'/ptxas/$b.log 2>&1 || echo "FAILED $f"'
    # static-library sources
    ls $src/mmvq_gguf.cu $src/moe/moe_gguf.cu $src/moe/moe_wmma.cu $src/moe/moe_wmma_gguf.cu $src/mmq_gguf/mmq_*.cu |
        xargs -P 16 -I{} sh -c 'f={}; b=$(basename $f .cu); nvcc -c '"$common"' -Xcompiler -fPIC -I '"$src"' -o /tmp/$b.o $f > '"$OUT"'/ptxas/$b.log 2>&1 || echo "FAILED $f"'
    parse "$OUT/ptxas" > "$OUT/cuda-kernel-resources.tsv"
    wc -l "$OUT/cuda-kernel-resources.tsv"
}

case "${1:-}" in
    compile) compile ;;
    parse) parse "$2" ;;
    *) echo "usage: $0 compile | parse DIR_OF_PTXAS_LOGS" >&2; exit 2 ;;
esac
