// A user's own kernels: an elementwise op (f32 and bf16) and a row reduction over warp
// shuffles, written for CUDA.
#include <cuda_bf16.h>
#include <stdint.h>
#include "warp_sum.cuh"

// y = x * sigmoid(alpha * x) (SiLU with a slope)
extern "C" __global__ void swish_f32(const float* x, float* y, float alpha, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        y[i] = v / (1.0f + expf(-alpha * v));
    }
}

extern "C" __global__ void swish_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, float alpha, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = __bfloat162float(x[i]);
        y[i] = __float2bfloat16(v / (1.0f + expf(-alpha * v)));
    }
}

// one warp per row: y[r, c] = x[r, c] / sqrt(mean(x[r, :]^2) + eps)
extern "C" __global__ void rms_rows_f32(const float* x, float* y, uint32_t cols, float eps) {
    const uint32_t row = blockIdx.x, lane = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float s = 0.f;
    for (uint32_t c = lane; c < cols; c += 32) s += xr[c] * xr[c];
    s = warp_sum(s);
    const float inv = rsqrtf(s / cols + eps);
    for (uint32_t c = lane; c < cols; c += 32) y[(size_t)row * cols + c] = xr[c] * inv;
}
