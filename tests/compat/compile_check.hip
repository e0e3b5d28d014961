// compile_check.hip - instantiates everything candle_hip_compat.h defines, in
// device code, so that a header change that breaks any overload or operator
// fails to compile. Build (must be warning-free):
//   HIP_PLATFORM=amd hipcc -x hip --offload-arch=gfx90a --offload-arch=gfx1030 \
//     -O3 --genco -I translator/compat tests/compat/compile_check.hip -o /tmp/cc.co
// and, for the host side of the __host__ __device__ parts:
//   HIP_PLATFORM=amd hipcc -x hip --offload-arch=gfx90a -O3 -c \
//     -I translator/compat tests/compat/compile_check.hip -o /tmp/cc.o
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "candle_hip_compat.h"

#include <type_traits>

static_assert(std::is_trivially_copyable<candle_bf16>::value, "bf16 trivially copyable");
static_assert(std::is_trivially_default_constructible<candle_bf16>::value, "bf16 trivial default ctor");
static_assert(std::is_trivially_copyable<candle_bf16x2>::value, "bf16x2 trivially copyable");
static_assert(std::is_trivially_default_constructible<candle_bf16x2>::value, "bf16x2 trivial default ctor");
static_assert(std::is_trivially_copyable<candle_fp8_e4m3>::value, "fp8 trivially copyable");
static_assert(std::is_trivially_default_constructible<candle_fp8_e4m3>::value, "fp8 trivial default ctor");
static_assert(sizeof(candle_fp8_e4m3) == 1, "fp8 size");

// bf16: construction from every arithmetic type, conversions, operators.
extern "C" __global__ void cc_bf16(const float* f, const double* d, const int* i, const unsigned* u,
                                   const long long* ll, const unsigned long long* ull, const size_t* sz,
                                   const uint8_t* u8, const __half* h, const candle_bf16* in, candle_bf16* out,
                                   float* fo, double* dout, int* io, unsigned* uo, uint8_t* u8o, __half* ho,
                                   bool* bo) {
    __shared__ candle_bf16 sh[64];
    const int t = threadIdx.x;
    candle_bf16 one = 1.0;        // double
    candle_bf16 two = 2.0f;       // float
    candle_bf16 three = 3;        // int
    candle_bf16 z = 0.;
    candle_bf16 a = in[t], b = in[t + 1];
    candle_bf16 c = candle_bf16(f[t]) + candle_bf16(d[t]) + candle_bf16(i[t]) + candle_bf16(u[t]) + candle_bf16(ll[t]) +
                    candle_bf16(ull[t]) + candle_bf16(sz[t]) + candle_bf16(u8[t]) + (candle_bf16)h[t] +
                    static_cast<candle_bf16>(i[t] > 0) + (candle_bf16)(int64_t)t + candle_bf16((long)t) +
                    candle_bf16((short)t) + candle_bf16((unsigned short)t);
    c = c * a - b / two + one - three;
    c += a;
    c -= b;
    c *= two;
    c /= three;
    c = -c;
    c = +c;
    c = i[t] ? a : z;
    c = -INFINITY;
    c = static_cast<candle_bf16>(0.044715) * a;
    sh[t] = c;
    __syncthreads();
    sh[t] += sh[t ^ 1];
    out[t] = t < 2 ? sh[t] : (in ? in[t] : out[t]);
    out[t + 64] = candle_float2bf16(f[t]);
    fo[t] = candle_bf162float(a) + (float)b + float(c) + static_cast<float>(a);
    float acc = 0.0f;
    acc += a;
    fo[t + 64] = acc;
    dout[t] = (double)a;
    dout[t + 64] = a;
    io[t] = (int)a;
    uo[t] = a;
    u8o[t] = static_cast<uint8_t>(static_cast<float>(a));
    ho[t] = static_cast<__half>(static_cast<float>(a)) + candle_bf162half(a) + static_cast<__half>(a);
    out[t + 128] = static_cast<candle_bf16>(static_cast<float>(h[t])) + candle_half2bf16(h[t]);
    bo[t] = (a == b) + (a != b) + (a < b) + (a <= b) + (a > b) + (a >= b);
    bo[t + 64] = candle_hisnan(a);
    candle_bf16 m = candle_hmax(a, b);
    m = candle_hmin(m, b);
    m = candle_hmax_nan(m, b);
    m = candle_hmin_nan(m, b);
    m = candle_hsqrt(m) + candle_hcos(m) + candle_hsin(m) + candle_hlog(m) + candle_hexp(m) + candle_habs(m);
    out[t + 192] = m;
    out[t + 256] = candle_bf16::from_bits(0x7FFF);
}

// bf16 pairs, e.g. through a float4 load as in the vectorised kernels.
extern "C" __global__ void cc_bf16x2(const float4* a4, const float4* b4, float4* o4, float* fo) {
    const int t = threadIdx.x;
    float4 a = a4[t], b = b4[t];
    candle_bf16x2* a2 = reinterpret_cast<candle_bf16x2*>(&a);
    candle_bf16x2* b2 = reinterpret_cast<candle_bf16x2*>(&b);
#pragma unroll
    for (int j = 0; j < 4; j++) a2[j] = candle_hadd2(candle_hmul2(a2[j], b2[j]), candle_hsub2(a2[j], b2[j]));
    o4[t] = a;
    candle_bf16 d = a2[0].x;
    candle_bf16x2 p = {d, d};
    fo[t] = candle_low2float(p) + candle_high2float(p);
}

// fp8 e4m3.
#define F8_TO_FLOAT(x) __half2float(candle_cvt_fp8_to_halfraw(x.__x, CANDLE_FP8_E4M3_INTERP))
extern "C" __global__ void cc_fp8(const candle_fp8_e4m3* in, candle_fp8_e4m3* out, const float* f, const double* d,
                                  const __half* h, const candle_bf16* bf, const int* i, const uint8_t* u8,
                                  const int64_t* i64, const unsigned* u, float* fo, double* dout, __half* ho,
                                  candle_fp8_e4m3 value) {
    const int t = threadIdx.x;
    candle_fp8_e4m3 x = in[t];
    out[t] = candle_fp8_e4m3(F8_TO_FLOAT(x) * F8_TO_FLOAT(in[t + 1]) + 1.0f);
    out[t + 64] = candle_fp8_e4m3(1. / F8_TO_FLOAT(x)); // double
    out[t + 128] = candle_fp8_e4m3((float)f[t]);
    out[t + 192] = candle_fp8_e4m3(d[t]);
    out[t + 256] = candle_fp8_e4m3(h[t]);
    out[t + 320] = candle_fp8_e4m3(bf[t]);
    out[t + 384] = candle_fp8_e4m3(i[t]);
    out[t + 448] = candle_fp8_e4m3(u8[t]);
    out[t + 512] = candle_fp8_e4m3(i64[t]);
    out[t + 576] = candle_fp8_e4m3(u[t]);
    out[t + 640] = candle_fp8_e4m3(-F8_TO_FLOAT(x));
    out[t + 704] = value;
    fo[t] = (float)x + static_cast<float>(in[t + 2]) + float(in[t + 3]);
    dout[t] = (double)x;
    ho[t] = candle_cvt_fp8_to_halfraw(x.__x, CANDLE_FP8_E4M3_INTERP);
#if defined(CANDLE_FP8_TYPES_EXIST)
    fo[t + 64] = isnan(F8_TO_FLOAT(x)) ? 1.0f : 0.0f;
#endif
}

// __half helpers.
extern "C" __global__ void cc_half(const __half* in, __half* out, const __half2* in2, __half2* out2, float* fo,
                                   bool* bo) {
    const int t = threadIdx.x;
    __half a = in[t], b = in[t + 1];
    bo[t] = candle_hisnan(a);
    __half m = candle_hmax(a, b);
    m = candle_hmin(m, b);
    m = candle_hmax_nan(m, __ushort_as_half(__half_as_ushort(b)));
    m = candle_hmin_nan(m, b);
    out[t] = candle_hsqrt(m);
    out[t + 64] = candle_hcos(m);
    out[t + 128] = candle_hsin(m);
    out[t + 192] = candle_hlog(m);
    out[t + 256] = candle_hexp(m);
    out[t + 320] = candle_habs(m);
    out2[t] = candle_hadd2(candle_hmul2(in2[t], in2[t + 1]), candle_hsub2(in2[t], in2[t + 1]));
    fo[t] = candle_low2float(in2[t]) + candle_high2float(in2[t]);
}

// Integer SIMD and warp reductions.
extern "C" __global__ void cc_int(const int* a, const int* b, const unsigned* ua, const unsigned* ub, int* o,
                                  unsigned* uo) {
    const int t = threadIdx.x;
    o[t] = candle_dp4a(a[t], b[t], o[t]);
    uo[t] = candle_dp4a(ua[t], ub[t], uo[t]);
    const uint2 grid_pos = make_uint2(ua[t], ub[t]);
    const uint32_t signs = ua[t + 1];
    const int signs0 = candle_vcmpne4(signs & 0x08040201, 0);
    const int grid0 = candle_vsub4(grid_pos.x ^ signs0, signs0);
    const int vi = candle_vsubss4(a[t] | b[t], 0x20202020);
    o[t + 64] = grid0 + vi + candle_vsub4(a[t], b[t]) + candle_vcmpne4(ua[t], ub[t]);
    o[t + 128] = candle_reduce_add_w32(a[t]) + candle_reduce_max_w32(b[t]) + candle_reduce_min_w32(b[t]);
    uo[t + 128] = candle_reduce_add_w32(ua[t]) + candle_reduce_max_w32(ub[t]) + candle_reduce_min_w32(ub[t]);
    if (a[t] == 12345) candle_trap();
}

// Shuffles of every element type the kernels move between lanes.
extern "C" __global__ void cc_shfl(const __half* h, const candle_bf16* b, const float* f, const int* i,
                                   const unsigned* u, __half* ho, candle_bf16* bo, float* fo, int* io, unsigned* uo) {
    const int t = threadIdx.x;
    ho[t] = candle_shfl_xor(h[t], 1, 32) + candle_shfl(h[t], 0, 32) + candle_shfl_up(h[t], 1u, 32) +
            candle_shfl_down(h[t], 1u, 32);
    bo[t] = candle_shfl_xor(b[t], 1, 32) + candle_shfl(b[t], 0, 32) + candle_shfl_up(b[t], 1u, 32) +
            candle_shfl_down(b[t], 1u);
    fo[t] = candle_shfl_xor(f[t], 16, 32) + candle_shfl(f[t], 3);
    io[t] = candle_shfl_xor(i[t], 8, 32) + candle_shfl_down(i[t], 2u, 32);
    uo[t] = candle_shfl_xor(u[t], 4, 32) + candle_shfl_up(u[t], 2u, 32);
}

// Four fp8 e4m3 values at once, from floats, half and bf16 pairs, and back.
extern "C" __global__ void cc_fp8x4(const float4* f, const __half2* h, const candle_bf16x2* b, uint32_t* o, float4* back) {
    const int t = threadIdx.x;
    const candle_fp8x4_e4m3 a(f[t]), c(h[2 * t], h[2 * t + 1]), d(b[2 * t], b[2 * t + 1]);
    o[3 * t] = a.__x;
    o[3 * t + 1] = c.__x;
    o[3 * t + 2] = d.__x;
    back[t] = static_cast<float4>(a);
}

// fp8 e5m2 and the fp8x2 / fp8x4 types of both formats.
extern "C" __global__ void cc_fp8_more(const float* f, const candle_half2* h, const candle_bf16x2* b, uint32_t* o, float* back) {
    const int t = threadIdx.x;
    const candle_fp8_e5m2 e(f[t]), e2(h[t].x), e3(b[t].x), e4(3);
    const candle_fp8x2_e4m3 p(make_float2(f[t], f[t + 1])), q(h[t]), r(b[t]);
    const candle_fp8x2_e5m2 u(make_float2(f[t], f[t + 1])), v(h[t]), w(b[t]);
    const candle_fp8x4_e5m2 x(make_float4(f[t], f[t + 1], f[t + 2], f[t + 3])), y(h[t], h[t + 1]), z(b[t], b[t + 1]);
    const candle_fp8x4_storage s4 = x.__x | y.__x | z.__x;
    o[t] = e.__x + e2.__x + e3.__x + e4.__x + p.__x + q.__x + r.__x + u.__x + v.__x + w.__x + s4;
    back[t] = float(e) + static_cast<float2>(p).x + static_cast<float2>(u).y + static_cast<float4>(x).w + (float)(double)e2;
}

// Votes, matches and the active mask over the logical 32-lane warp.
extern "C" __global__ void cc_votes(const int* i, const float* f, const long long* l, const double* d, unsigned* o) {
    const int t = threadIdx.x;
    int same = 0;
    o[t] = candle_ballot_w32(i[t] & 1) + candle_any_w32(i[t]) + candle_all_w32(i[t]) + candle_activemask_w32() +
           candle_match_any_w32(i[t]) + candle_match_any_w32(f[t]) + candle_match_any_w32(l[t]) + candle_match_any_w32(d[t]) +
           candle_match_all_w32((unsigned)i[t], &same) + (unsigned)same + candle_lane_id();
    candle_syncwarp();
    // with a partial mask (the mask's lanes only)
    const unsigned m = 0xffu << (candle_lane_id() & 24u);
    if (i[t] & 2) {
        o[t] += candle_ballot_w32_in(m, i[t] & 1) + candle_any_w32_in(m, i[t]) + candle_all_w32_in(m, i[t]) +
                candle_match_any_w32_in(m, f[t]) + candle_match_all_w32_in(m, l[t], &same) + (unsigned)same +
                candle_reduce_add_w32_in(m, i[t]) + candle_reduce_max_w32_in(m, (unsigned)i[t]) + candle_reduce_min_w32_in(m, i[t]);
    }
}

// cuda_fp16.h's pair: x and y are __half on every release (HIP 5.2.3's own __half2 has raw
// unsigned shorts there), the same four bytes as __half2, with its operators.
static_assert(std::is_same<decltype(candle_half2{}.x), __half>::value, "candle_half2's x is a __half");
static_assert(std::is_same<decltype(candle_half2{}.y), __half>::value, "candle_half2's y is a __half");
static_assert(sizeof(candle_half2) == 4 && std::is_trivially_copyable<candle_half2>::value, "candle_half2 is four bytes");
extern "C" __global__ void cc_half2(const candle_half2* in, candle_half2* out, float* f, bool* eq) {
    const int t = threadIdx.x;
    candle_half2 a = in[t], b = __halves2half2(in[t].y, in[t].x);
    candle_half2 c = a + b * a - b / a;
    c += a;
    c -= b;
    c *= a;
    c /= b;
    c = -c;
    c.x = __hadd(a.x, b.y);
    out[t] = __hfma2(c, a, b);
    f[t] = __half2float(c.x) + __low2float(c) + __half22float2(a).y;
    eq[t] = a == b || a != c;
    const __half2 plain = c;
    out[t + 1] = candle_half2(plain);
}

// cudaLaunchKernelEx with programmatic dependent launch: an ordinary launch.
__global__ void cc_pdl_kernel(const float* in, float* out, int n) {
    candle_grid_dependency_synchronize();
    if ((int)threadIdx.x < n) out[threadIdx.x] = in[threadIdx.x];
    candle_trigger_programmatic_launch_completion();
}
hipError_t cc_pdl_launch(const float* in, float* out, int n, hipStream_t stream) {
    candle_launch_attribute attribute[1];
    attribute[0].id = CANDLE_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    candle_launch_config config;
    config.attrs = attribute;
    config.numAttrs = 1;
    config.gridDim = dim3(1);
    config.blockDim = dim3(64);
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    return candle_launch_kernel_ex(&config, cc_pdl_kernel, in, out, n);
}

// The host/device parts also work in host code.
__host__ float cc_host(float x, double d, int i) {
    candle_bf16 a = x, b = d, c = i;
    a = a * b + c - a / b;
    a += candle_bf16(1.5f);
    const candle_fp8_e4m3 f8(x), g8(d), h8(i);
    return float(a) + (float)f8 + (float)g8 + (float)h8 + candle_bf162float(candle_float2bf16(x)) +
           (float)candle_dp4a(i, i, i) + (float)candle_vsub4(1u, 2u) + (float)candle_vsubss4(1u, 2u) +
           (float)candle_vcmpne4(1u, 2u) + float(-a) + (a < b ? 1.0f : 0.0f);
}

// Atomics (as in Candle's sum kernels) for every element type.
template <typename T> __device__ void cc_atomic(T* out, const T* in) {
    const int t = threadIdx.x;
    candle_atomic_add(out + (t & 3), in[t]);
}
extern "C" __global__ void cc_atomics(__half* h, const __half* hi, candle_bf16* b, const candle_bf16* bi, float* f,
                                      const float* fi, double* d, const double* di, uint32_t* u, const uint32_t* ui,
                                      int* i) {
    cc_atomic(h, hi);
    cc_atomic(b, bi);
    cc_atomic(f, fi);
    cc_atomic(d, di);
    cc_atomic(u, ui);
    candle_atomic_add(u, 1);
    candle_atomic_add(i, 1);
    candle_bf16 old = candle_atomic_add(b + 7, 0.5f);
    (void)old;
}
