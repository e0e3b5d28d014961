// Written by `cargo xtask regen` from translator/compat/candle_hip_wmma.h (candle-rocm's own code). Do not edit here.
// candle-rocm compat: a portable subset of the warp matrix-multiply API,
// the target of the translator's wmma mapping (namespace `candle_wmma`;
// load/store/mma are named wmma_load_matrix, wmma_store_matrix, wmma_mma).
// Correct on every AMD arch, built from shuffles only: no matrix
// instructions yet (MFMA / RDNA3 WMMA tuning comes later).
//
// Supported: tiles (M, N, K) = 16x16x16, 32x8x16, 8x32x16; A and B of a
// 2-byte float type (__half, candle_bf16, ...: anything with
// static_cast<float>), row_major or col_major; accumulators of float (or
// __half / another type constructible from float).
//
// Semantics follow the original API: every operation is collective over a
// logical warp of 32 threads, whose lane is (linear thread id in the block)
// % 32. This holds on wave32 and on wave64 hardware alike (each half of a
// 64-wide wavefront is its own logical warp): shuffles always pass width 32.
//
// Element-to-lane mapping (the original leaves it unspecified, so any
// element-wise code over `x[0 .. num_elements)` stays valid):
//   matrix_a (M x K): A(i, k) is index i*K + k; lane l holds indices
//                     l*EA .. l*EA+EA-1 (EA = M*K/32), slot = index % EA.
//   matrix_b (K x N): B(k, n) is index n*K + k; same scheme with EB = K*N/32.
//   Since EA and EB divide K = 16, A(i, k) and B(k, n) sit in slot k % E of
//   their lane, the same slot in every lane: one shuffle fetches any of them.
//   accumulator (M x N): lane l holds a 2 x 4 block, rows 2*(l / (N/4)) + r,
//                     columns 4*(l % (N/4)) + c, slot r*4 + c, so that one
//                     mma step (fixed k) needs only 2 A and 4 B values.
#pragma once

// A test shim may define CANDLE_COMPAT_NO_HIP_INCLUDE and supply the HIP names itself.
#ifndef CANDLE_COMPAT_NO_HIP_INCLUDE
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#endif
#include <type_traits>

namespace candle_wmma {

// Tags, as in the original API.
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

constexpr int kLanes = 32;  // a logical warp, on every wavefront size
constexpr int kRows = 2;    // accumulator block per lane: kRows x kCols
constexpr int kCols = 4;

template <class Use, int M, int N, int K>
struct tile;  // elements of the tile
template <int M, int N, int K>
struct tile<matrix_a, M, N, K> { static constexpr int size = M * K; };
template <int M, int N, int K>
struct tile<matrix_b, M, N, K> { static constexpr int size = K * N; };
template <int M, int N, int K>
struct tile<accumulator, M, N, K> { static constexpr int size = M * N; };

template <class T>
struct same_type { using type = T; };  // blocks template deduction

// Lane of the calling thread within its logical 32-lane warp.
__device__ __forceinline__ int lane() {
    const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return static_cast<int>(linear % kLanes);
}

// Conversions: generic through static_cast, __half through its intrinsics.
template <class T>
__device__ __forceinline__ float to_float(const T& v) { return static_cast<float>(v); }
__device__ __forceinline__ float to_float(const __half& v) { return __half2float(v); }

template <class T>
struct from_float {
    __device__ __forceinline__ static T conv(float v) { return static_cast<T>(v); }
};
template <>
struct from_float<__half> {
    __device__ __forceinline__ static __half conv(float v) { return __float2half(v); }
};

__device__ __forceinline__ float shfl32(float v, int src_lane) { return __shfl(v, src_lane, 32); }

}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static_assert(K == 16 && ((M == 16 && N == 16) || (M == 32 && N == 8) || (M == 8 && N == 32)),
                  "candle_wmma supports the 16x16x16, 32x8x16 and 8x32x16 tiles");
    static_assert(std::is_same<Use, accumulator>::value || sizeof(T) == 2, "candle_wmma: A and B must be 2-byte float types");
    using element_type = T;
    using storage_element_type = T;
    static constexpr int num_elements = detail::tile<Use, M, N, K>::size / detail::kLanes;
    T x[num_elements];
};

template <class Use, int M, int N, int K, class T, class Layout, class V>
__device__ __forceinline__ void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& value) {
    const T v = detail::from_float<T>::conv(static_cast<float>(value));
#pragma unroll
    for (int s = 0; s < f.num_elements; ++s) f.x[s] = v;
}

// A (M x K); row_major memory holds A(i, k) at p[i*ldm + k], col_major at p[k*ldm + i].
template <int M, int N, int K, class T, class Layout>
__device__ __forceinline__ void wmma_load_matrix(fragment<matrix_a, M, N, K, T, Layout>& f, const typename detail::same_type<T>::type* p,
                                                 unsigned ldm) {
    static_assert(std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value, "matrix_a needs a layout");
    constexpr int E = fragment<matrix_a, M, N, K, T, Layout>::num_elements;
    const int base = detail::lane() * E;
#pragma unroll
    for (int s = 0; s < E; ++s) {
        const unsigned i = (base + s) / K, k = (base + s) % K;
        f.x[s] = std::is_same<Layout, row_major>::value ? p[i * ldm + k] : p[k * ldm + i];
    }
}

// B (K x N); col_major memory holds B(k, n) at p[n*ldm + k], row_major at p[k*ldm + n].
template <int M, int N, int K, class T, class Layout>
__device__ __forceinline__ void wmma_load_matrix(fragment<matrix_b, M, N, K, T, Layout>& f, const typename detail::same_type<T>::type* p,
                                                 unsigned ldm) {
    static_assert(std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value, "matrix_b needs a layout");
    constexpr int E = fragment<matrix_b, M, N, K, T, Layout>::num_elements;
    const int base = detail::lane() * E;
#pragma unroll
    for (int s = 0; s < E; ++s) {
        const unsigned n = (base + s) / K, k = (base + s) % K;
        f.x[s] = std::is_same<Layout, col_major>::value ? p[n * ldm + k] : p[k * ldm + n];
    }
}

// Accumulator element (i, n) is at p[i*ldm + n] (mem_row_major) or p[n*ldm + i].
template <int M, int N, int K, class T>
__device__ __forceinline__ void wmma_load_matrix(fragment<accumulator, M, N, K, T>& f, const typename detail::same_type<T>::type* p,
                                                 unsigned ldm, layout_t layout) {
    const int l = detail::lane();
    const unsigned i0 = detail::kRows * (l / (N / detail::kCols)), n0 = detail::kCols * (l % (N / detail::kCols));
#pragma unroll
    for (int s = 0; s < f.num_elements; ++s) {
        const unsigned i = i0 + s / detail::kCols, n = n0 + s % detail::kCols;
        f.x[s] = layout == mem_row_major ? p[i * ldm + n] : p[n * ldm + i];
    }
}

template <int M, int N, int K, class T>
__device__ __forceinline__ void wmma_store_matrix(typename detail::same_type<T>::type* p, const fragment<accumulator, M, N, K, T>& f,
                                                  unsigned ldm, layout_t layout) {
    const int l = detail::lane();
    const unsigned i0 = detail::kRows * (l / (N / detail::kCols)), n0 = detail::kCols * (l % (N / detail::kCols));
#pragma unroll
    for (int s = 0; s < f.num_elements; ++s) {
        const unsigned i = i0 + s / detail::kCols, n = n0 + s % detail::kCols;
        if (layout == mem_row_major) {
            p[i * ldm + n] = f.x[s];
        } else {
            p[n * ldm + i] = f.x[s];
        }
    }
}

// d = a * b + c, accumulated in float, k = 0..K-1 in order. For each k every
// lane offers slot k % E of its A and B fragments, and reads A(i, k) for its
// 2 rows and B(k, n) for its 4 columns from the lanes holding them.
// d may be c (the usual `mma(c, a, b, c)`).
template <int M, int N, int K, class TAB, class LA, class LB, class TC>
__device__ __forceinline__ void wmma_mma(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TAB, LA>& a,
                                         const fragment<matrix_b, M, N, K, TAB, LB>& b, const fragment<accumulator, M, N, K, TC>& c) {
    using detail::kCols;
    using detail::kRows;
    constexpr int EA = fragment<matrix_a, M, N, K, TAB, LA>::num_elements;
    constexpr int EB = fragment<matrix_b, M, N, K, TAB, LB>::num_elements;
    static_assert(K % EA == 0 && K % EB == 0 && kRows * kCols == 8, "slot of A(i, k) / B(k, n) must be k % E");
    const int l = detail::lane();
    const int i0 = kRows * (l / (N / kCols)), n0 = kCols * (l % (N / kCols));
    float acc[kRows * kCols];
#pragma unroll
    for (int s = 0; s < kRows * kCols; ++s) acc[s] = detail::to_float(c.x[s]);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const float a_offer = detail::to_float(a.x[k % EA]);
        const float b_offer = detail::to_float(b.x[k % EB]);
        float av[kRows], bv[kCols];
#pragma unroll
        for (int r = 0; r < kRows; ++r) av[r] = detail::shfl32(a_offer, ((i0 + r) * K + k) / EA);
#pragma unroll
        for (int q = 0; q < kCols; ++q) bv[q] = detail::shfl32(b_offer, ((n0 + q) * K + k) / EB);
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int q = 0; q < kCols; ++q) acc[r * kCols + q] += av[r] * bv[q];
    }
#pragma unroll
    for (int s = 0; s < kRows * kCols; ++s) d.x[s] = detail::from_float<TC>::conv(acc[s]);
}

}  // namespace candle_wmma

// The translator maps the bare outer namespace of the original API (the
// `using namespace X;` + `wmma::...` spelling) to this alias namespace.
namespace candle_nvcuda {
namespace wmma = ::candle_wmma;
}
