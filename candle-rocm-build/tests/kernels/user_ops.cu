// Kernels as a Candle user writes them for a CustomOp's cuda_fwd: an elementwise op in
// f32 and bf16, and a row sum reduced over a warp's shuffles.
#include <cuda_bf16.h>
#include <stdint.h>

#include "warp_reduce.cuh"

extern "C" __global__ void scaled_add_f32(const float* x, const float* y, float* out, float alpha, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + alpha * y[i];
}

extern "C" __global__ void scaled_add_bf16(const __nv_bfloat16* x, const __nv_bfloat16* y, __nv_bfloat16* out, float alpha, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(__bfloat162float(x[i]) + alpha * __bfloat162float(y[i]));
}

// One warp of 32 lanes per row.
extern "C" __global__ void row_sum_f32(const float* x, float* out, uint32_t cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (uint32_t c = threadIdx.x; c < cols; c += 32) s += row[c];
    s = warp_sum(s);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
