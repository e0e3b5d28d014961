// Rotary position embedding (the non-interleaved form of candle-nn's `rope`), fused:
// x is (b*h, t, d) contiguous, cos and sin are (t, d/2); for i < d/2
//   out[i]       = x[i] * cos[i] - x[i + d/2] * sin[i]
//   out[i + d/2] = x[i] * sin[i] + x[i + d/2] * cos[i]
// computed in f32 for f32, f16 and bf16. One launcher per dtype, called from Rust.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

template <typename T> __device__ __forceinline__ float load_f32(const T *p, uint32_t i);
template <> __device__ __forceinline__ float load_f32<float>(const float *p, uint32_t i) { return p[i]; }
template <> __device__ __forceinline__ float load_f32<__half>(const __half *p, uint32_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float load_f32<__nv_bfloat16>(const __nv_bfloat16 *p, uint32_t i) { return __bfloat162float(p[i]); }

template <typename T> __device__ __forceinline__ void store_f32(T *p, uint32_t i, float v);
template <> __device__ __forceinline__ void store_f32<float>(float *p, uint32_t i, float v) { p[i] = v; }
template <> __device__ __forceinline__ void store_f32<__half>(__half *p, uint32_t i, float v) { p[i] = __float2half(v); }
template <> __device__ __forceinline__ void store_f32<__nv_bfloat16>(__nv_bfloat16 *p, uint32_t i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__global__ void rotary_kernel(const T *x, const T *cos, const T *sin, T *out, uint32_t bh, uint32_t t, uint32_t d) {
    const uint32_t half_d = d / 2;
    const uint32_t n = bh * t * half_d;
    for (uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += blockDim.x * gridDim.x) {
        const uint32_t i = idx % half_d;
        const uint32_t row = idx / half_d;
        const uint32_t pos = row % t;
        const float c = load_f32(cos, pos * half_d + i);
        const float s = load_f32(sin, pos * half_d + i);
        const float x1 = load_f32(x, row * d + i);
        const float x2 = load_f32(x, row * d + i + half_d);
        store_f32(out, row * d + i, x1 * c - x2 * s);
        store_f32(out, row * d + i + half_d, x1 * s + x2 * c);
    }
}

template <typename T>
static int launch_rotary(const void *x, const void *cos, const void *sin, void *out, uint32_t bh, uint32_t t, uint32_t d, void *stream) {
    const uint32_t n = bh * t * (d / 2);
    const uint32_t block = 256;
    uint32_t grid = (n + block - 1) / block;
    if (grid > 65535) grid = 65535;
    if (n == 0) return 0;
    rotary_kernel<T><<<grid, block, 0, (cudaStream_t)stream>>>((const T *)x, (const T *)cos, (const T *)sin, (T *)out, bh, t, d);
    return (int)cudaGetLastError();
}

extern "C" int run_rotary_f32(const void *x, const void *cos, const void *sin, void *out, uint32_t bh, uint32_t t, uint32_t d, void *stream) {
    return launch_rotary<float>(x, cos, sin, out, bh, t, d, stream);
}

extern "C" int run_rotary_f16(const void *x, const void *cos, const void *sin, void *out, uint32_t bh, uint32_t t, uint32_t d, void *stream) {
    return launch_rotary<__half>(x, cos, sin, out, bh, t, d, stream);
}

extern "C" int run_rotary_bf16(const void *x, const void *cos, const void *sin, void *out, uint32_t bh, uint32_t t, uint32_t d, void *stream) {
    return launch_rotary<__nv_bfloat16>(x, cos, sin, out, bh, t, d, stream);
}
