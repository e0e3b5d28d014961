// Written by `cargo xtask regen` from translator/compat/candle_hip_wmma.h (candle-rocm's own code). Do not edit here.
// candle-rocm compat: a portable subset of the warp matrix API (the tile
// shapes with K = 16: 16x16x16, 32x8x16, 8x32x16), the target of the
// translator's `nvcuda::wmma` -> `candle_wmma` mapping. Correct on every AMD
// arch; not yet tuned with MFMA (CDNA) or WMMA (RDNA3) instructions.
//
// Semantics follow the original API: every operation is collective over a
// logical warp of 32 threads, the lane being the linear thread index modulo
// 32 (on 64-wide CDNA wavefronts each half is its own logical warp). Needs
// candle_hip_compat.h (candle_shfl), which every generated file includes
// first. A tile of R x C elements is spread over the 32 lanes, E = R*C/32
// each, element index e living in lane e / E, slot e % E, with
//   matrix_a    (M x K) element (i, k) at index i*K + k,
//   matrix_b    (K x N) element (k, n) at index n*K + k,
//   accumulator (M x N) element (i, n) at index i*N + n.
// Since E divides K = 16, the slot of A(i, k) and B(k, n) is k % E in every
// lane, so mma fetches each operand with one width-32 shuffle. Element-wise
// code over `frag.x[0 .. frag.num_elements)` is valid for any such mapping.
#pragma once

#include <hip/hip_runtime.h>
#include <type_traits>

namespace candle_wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

constexpr int kLanes = 32;
constexpr int kK = 16;

template <class Use, int M, int N, int K>
struct tile_elements;
template <int M, int N, int K>
struct tile_elements<matrix_a, M, N, K> { static constexpr int value = M * K; };
template <int M, int N, int K>
struct tile_elements<matrix_b, M, N, K> { static constexpr int value = K * N; };
template <int M, int N, int K>
struct tile_elements<accumulator, M, N, K> { static constexpr int value = M * N; };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static_assert(K == kK && M * N == 256 && (M == 8 || M == 16 || M == 32), "candle_wmma supports 16x16x16, 32x8x16 and 8x32x16 tiles");
    static constexpr int num_elements = tile_elements<Use, M, N, K>::value / kLanes;
    T x[num_elements];
};

__device__ __forceinline__ int lane_id() {
    const unsigned int linear = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
    return static_cast<int>(linear % kLanes);
}

template <class T>
__device__ __forceinline__ float to_float(T v) {
    return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float to_float<__half>(__half v) {
    return __half2float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
    return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
    return __float2half(v);
}

template <class Use, int M, int N, int K, class T, class Layout, class V>
__device__ __forceinline__ void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, V value) {
    for (int s = 0; s < f.num_elements; ++s) f.x[s] = static_cast<T>(value);
}

// A (M x K): index i*K + k. Row-major memory holds (i, k) at i*ldm + k.
template <int M, int N, int K, class T, class Layout>
__device__ __forceinline__ void wmma_load_matrix(fragment<matrix_a, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
    for (int s = 0; s < f.num_elements; ++s) {
        const int e = lane_id() * f.num_elements + s, i = e / K, k = e % K;
        f.x[s] = std::is_same<Layout, col_major>::value ? p[k * ldm + i] : p[i * ldm + k];
    }
}

// B (K x N): index n*K + k. Column-major memory holds (k, n) at n*ldm + k.
template <int M, int N, int K, class T, class Layout>
__device__ __forceinline__ void wmma_load_matrix(fragment<matrix_b, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
    for (int s = 0; s < f.num_elements; ++s) {
        const int e = lane_id() * f.num_elements + s, n = e / K, k = e % K;
        f.x[s] = std::is_same<Layout, row_major>::value ? p[k * ldm + n] : p[n * ldm + k];
    }
}

// C (M x N): index i*N + n.
template <int M, int N, int K, class T>
__device__ __forceinline__ void wmma_load_matrix(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t layout) {
    for (int s = 0; s < f.num_elements; ++s) {
        const int e = lane_id() * f.num_elements + s, i = e / N, n = e % N;
        f.x[s] = layout == mem_col_major ? p[n * ldm + i] : p[i * ldm + n];
    }
}

template <int M, int N, int K, class T>
__device__ __forceinline__ void wmma_store_matrix(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
    for (int s = 0; s < f.num_elements; ++s) {
        const int e = lane_id() * f.num_elements + s, i = e / N, n = e % N;
        if (layout == mem_col_major) {
            p[n * ldm + i] = f.x[s];
        } else {
            p[i * ldm + n] = f.x[s];
        }
    }
}

// D = A * B + C, accumulated in float, one k at a time: every lane
// contributes its slot k % E of A and B, and reads the A(i, k) and B(k, n) of
// its own C elements from the lanes that hold them.
template <int M, int N, int K, class TAB, class LA, class LB, class TC>
__device__ __forceinline__ void wmma_mma(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TAB, LA>& a,
                                         const fragment<matrix_b, M, N, K, TAB, LB>& b, const fragment<accumulator, M, N, K, TC>& c) {
    constexpr int EA = fragment<matrix_a, M, N, K, TAB, LA>::num_elements;
    constexpr int EB = fragment<matrix_b, M, N, K, TAB, LB>::num_elements;
    constexpr int EC = fragment<accumulator, M, N, K, TC>::num_elements;
    const int lane = lane_id();
    float acc[EC];
    for (int s = 0; s < EC; ++s) acc[s] = to_float(c.x[s]);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const float a_mine = to_float(a.x[k % EA]);
        const float b_mine = to_float(b.x[k % EB]);
#pragma unroll
        for (int s = 0; s < EC; ++s) {
            const int e = lane * EC + s, i = e / N, n = e % N;
            const float a_ik = candle_shfl(a_mine, (i * K + k) / EA, kLanes);
            const float b_kn = candle_shfl(b_mine, (n * K + k) / EB, kLanes);
            acc[s] += a_ik * b_kn;
        }
    }
    for (int s = 0; s < EC; ++s) d.x[s] = from_float<TC>(acc[s]);
}

}  // namespace candle_wmma

// `using namespace nvcuda;` followed by `wmma::...` in the original sources.
namespace candle_nvcuda {
namespace wmma = ::candle_wmma;
}
