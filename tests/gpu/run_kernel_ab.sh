#!/usr/bin/env bash
# On the GPU machine (nvcc + an NVIDIA GPU), from the repo root, after
# tools/stage_upstream_kernels.sh: builds the original and the translated
# unary, binary and reduce modules as cubins and compares the elementwise
# kernels, softmax and rmsnorm.
# Measured on an H100 (nvcc 13.0): binary 18/18, softmax 3/3, rmsnorm 3/3 and unary 62 of 63
# kernels bit-identical on 65536 (rows: 131072)
# inputs; ugelu_bf16 differs on 468 values only because nvcc contracts the
# original's native bf16 a*b+c into one fused bf16 FMA (with -fmad=false on the
# original it is bit-identical too); candle_bf16 rounds after every operation.
set -u
orig=device-carry/candle-kernels/src
gen=generated/kernels
tmp=$(mktemp -d)
flags="-cubin -arch=sm_90 -std=c++17 -O3 --expt-relaxed-constexpr"
for m in unary binary reduce; do
  nvcc $flags -I $orig -o $tmp/$m.orig.cubin $orig/$m.cu
  nvcc $flags -I hip-on-cuda/include -I $gen -x cu -o $tmp/$m.gen.cubin $gen/$m.hip
done
nvcc -std=c++17 -O2 -o $tmp/kernel_ab tests/gpu/kernel_ab.cu -lcuda
unary=$(grep -oE "^kernel unary u[a-z0-9]+_(f32|f16|bf16)$" tests/fixtures/cuda-kernels-0.11.1.txt | awk '{print $3}' | grep -vE "^u(elu|powf)_")
binary=$(grep -oE "^kernel binary b[a-z]+_(f32|f16|bf16)$" tests/fixtures/cuda-kernels-0.11.1.txt | awk '{print $3}')
status=0
$tmp/kernel_ab $tmp/unary.orig.cubin $tmp/unary.gen.cubin $unary || status=1
$tmp/kernel_ab --binary $tmp/binary.orig.cubin $tmp/binary.gen.cubin $binary || status=1
$tmp/kernel_ab --softmax $tmp/reduce.orig.cubin $tmp/reduce.gen.cubin softmax_f32 softmax_f16 softmax_bf16 || status=1
$tmp/kernel_ab --rmsnorm $tmp/reduce.orig.cubin $tmp/reduce.gen.cubin rmsnorm_f32 rmsnorm_f16 rmsnorm_bf16 || status=1
exit $status
