#!/usr/bin/env bash
# Runs on the GPU machine: builds upstream candle-kernels' PTX modules with nvcc
# as its build.rs does (sm_90, -std=c++17 -O3 --expt-relaxed-constexpr) and
# lists the .entry (kernel) names per module into $OUT/entries.txt.
set -u
# Usage (from the repo root, sources copied by tools/stage_upstream_kernels.sh): bash tools/cuda_ptx_entries.sh
src=device-carry/candle-kernels/src
nvcc --version | tail -2 > "$OUT/nvcc-version.txt"
ls $src/*.cu | grep -v mmvq_gguf | xargs -P 16 -I{} sh -c 'f={}; b=$(basename $f .cu); nvcc --ptx -arch=sm_90 --expt-relaxed-constexpr -std=c++17 -O3 -I '$src' -o /tmp/$b.ptx $f && grep -oE "\.entry [A-Za-z0-9_]+" /tmp/$b.ptx | sed "s/^\.entry /$b /" > /tmp/$b.entries'
cat /tmp/*.entries | sort > "$OUT/entries.txt"
wc -l "$OUT/entries.txt"
