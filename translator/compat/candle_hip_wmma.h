// candle-rocm compat: a portable subset of the warp matrix-multiply API,
// the target of the translator's wmma mapping (namespace `candle_wmma`;
// load/store/mma are named wmma_load_matrix, wmma_store_matrix, wmma_mma).
// Correct on every AMD arch from shuffles alone; the 16x16x16 tile of
// 2-byte floats with a float accumulator takes the matrix instructions where
// the arch has them (CDNA2-4 MFMA, RDNA3/4 WMMA; "Matrix cores" below).
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

// An extension of the original API (which cannot say which rows a lane holds): accumulator
// row i multiplied by scale[i], i < M, each logical warp passing its own `scale` (as for a
// load). For row-wise rescaling in registers (an online softmax's correction).
template <int M, int N, int K, class T>
__device__ __forceinline__ void wmma_scale_rows(fragment<accumulator, M, N, K, T>& f, const float* scale) {
    const int l = detail::lane();
    const unsigned i0 = detail::kRows * (l / (N / detail::kCols));
#pragma unroll
    for (int s = 0; s < f.num_elements; ++s) f.x[s] = detail::from_float<T>::conv(detail::to_float(f.x[s]) * scale[i0 + s / detail::kCols]);
}

// An extension for row-wise work in registers (an online softmax over the 16x16 float
// accumulator of Q·Kᵀ, then the probabilities as the A operand of P·V), in the layout each
// path holds: acc16_rows (below) says where a lane's accumulator slots lie, as data.
//   groups        the rows a lane holds a share of; slots of one group lie on one row
//   group(slot)   a slot's group, the same in every lane (a compile-time constant)
//   tile(g)       which logical warp of the wavefront owns that row's tile (0 on wave32;
//                 0 or 1 on CDNA's wave64, whose lanes hold shares of both tiles)
//   row(g)        the row (0..15) of group g in this lane; col(slot): a slot's column
//   lanes         the lanes that hold one row (this lane xor 1 .. lanes/2): max / sum
//                 combine a value over them; lane_in_row() == 0 holds the row's column 0
// wmma_acc_to_a: the accumulator, rounded to T, as the A operand of the next product:
// register moves where the two layouts coincide (acc16_rows::acc_is_a: NVIDIA's m16n8k16),
// else through `scratch` (this logical warp's own 16 x ldm elements of LDS) and a
// wavefront barrier.
namespace detail {
__device__ __forceinline__ void wave_barrier() {
#if defined(__HIP_PLATFORM_NVIDIA__)
    __syncwarp();
#else
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

// A row's max and sum over the LANES lanes that hold it (this lane xor 1 .. LANES/2,
// shuffles of WIDTH lanes).
template <int LANES, int WIDTH>
struct row_lanes {
    static constexpr int lanes = LANES;
    __device__ static float max(float v) {
#pragma unroll
        for (int m = 1; m < LANES; m <<= 1) v = fmaxf(v, __shfl_xor(v, m, WIDTH));
        return v;
    }
    __device__ static float sum(float v) {
#pragma unroll
        for (int m = 1; m < LANES; m <<= 1) v += __shfl_xor(v, m, WIDTH);
        return v;
    }
};

// The portable accumulator (above): lane l holds rows 2*(l/4) + r, columns 4*(l%4) + c.
struct acc16_rows_portable : row_lanes<16 / kCols, kLanes> {
    static constexpr int groups = kRows, tiles = 1;
    static constexpr bool acc_is_a = false;
    __device__ static constexpr int group(int slot) { return slot / kCols; }
    __device__ static constexpr int tile(int) { return 0; }
    __device__ static int row(int g) { return kRows * (lane() / lanes) + g; }
    __device__ static int col(int slot) { return kCols * (lane() % lanes) + slot % kCols; }
    __device__ static int lane_in_row() { return lane() % lanes; }
    // element (i, j) of this logical warp's tile, for each slot: f(slot, i, j)
    template <class P, class F>
    __device__ static void each(P* p, unsigned ldm, F f) {
#pragma unroll
        for (int s = 0; s < kRows * kCols; ++s) f(s, p, ldm, unsigned(row(group(s))), unsigned(col(s)));
    }
};
}  // namespace detail

// ---------------------------------------------------------------------------
// Matrix cores: the 16x16x16 and 8x32x16 tiles (A, B of __half or
// candle_bf16, a float accumulator) on the AMD matrix instructions, in a device pass for an arch
// that has them and a HIP of 6 or later (HIP 5's clang has no __bf16);
// CANDLE_HIP_NO_WMMA_MATRIX_CORES keeps the shuffles above everywhere.
// Other tiles (32x8x16) and types always take the shuffles. The instructions are the
// ones ggml's mma.cuh (generated/kernels/mmq_gguf/mmq_mma.cuh) and rocWMMA's
// mma_sync use for this tile:
//   CDNA2/3/4 (gfx90a, gfx94x, gfx950), wave64:
//     v_mfma_f32_16x16x16_f16 / v_mfma_f32_16x16x16_bf16 (_1k)
//   RDNA3/3.5 (gfx110x, gfx115x), wave32: v_wmma_f32_16x16x16_{f16,bf16}
//   RDNA4 (gfx120x), wave32: v_wmma_f32_16x16x16_{f16,bf16} (gfx12 layout)
// Register layouts (lane l of the wavefront, element e of the lane's operand
// vector, VGPR r of its result; AMD's ISA guides' matrix tables as AMD's
// Matrix Instruction Calculator prints them; the emulations
// tests/amd_emulation/mmq_wave64/mfma_cpu.h and
// tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h implement the same tables):
//   MFMA:   A[i][k]: i = l%16, k = 4*(l/16) + e    B[k][j]: j = l%16, k as A
//           D[i][j]: i = 4*(l/16) + r, j = l%16
//   gfx11:  A[i][k]: i = l%16, k = e (lanes l and l+16 hold the same)
//           D[i][j]: i = 2*r + l/16, j = l%16
//   gfx12:  A[i][k]: i = l%16, k = 8*(e/4) + 4*(l/16) + e%4
//           D[i][j]: i = 8*(l/16) + r, j = l%16
//   HIP's NVIDIA platform (hip-on-cuda's own runs, sm_80+): NVIDIA's
//     mma.sync m16n8k16, two per tile, on the PTX ISA's tables, from
//     hip-on-cuda/include/hip/nvidia_tensor_cores.h (found by __has_include)
// A logical warp is 32 lanes (the original API's warp); a 64-lane CDNA
// wavefront holds two, each with its own tile. There every operation works
// on both tiles at once, one MFMA per tile: a lane holds its share of both,
// and the addresses of each logical warp's tile come from its first lane
// (lane 0 or 32 of the wavefront). All 64 lanes must take part (as on NVIDIA
// all 32 lanes of a warp must): a block whose thread count is not a
// multiple of 64 traps. On wave32 RDNA a logical warp is the wavefront.
// ---------------------------------------------------------------------------
#if defined(__HIP_PLATFORM_AMD__) && defined(HIP_VERSION_MAJOR) && HIP_VERSION_MAJOR < 6
#define CANDLE_HIP_NO_WMMA_MATRIX_CORES
#endif
#if !defined(CANDLE_HIP_NO_WMMA_MATRIX_CORES)
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define CANDLE_WMMA_MFMA 1
#elif defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || defined(__gfx1150__) || \
    defined(__gfx1151__) || defined(__gfx1152__) || defined(__gfx1153__)
#define CANDLE_WMMA_GFX11 1
#elif defined(__gfx1200__) || defined(__gfx1201__)
#define CANDLE_WMMA_GFX12 1
#elif defined(__HIP_PLATFORM_NVIDIA__) && defined(__HIP_DEVICE_COMPILE__) && __has_include(<hip/nvidia_tensor_cores.h>)
// HIP's NVIDIA platform (hip-on-cuda): its tensor cores where it offers them (sm_80+)
#include <hip/nvidia_tensor_cores.h>
#if defined(HIP_ON_CUDA_TENSOR_CORES)
#define CANDLE_WMMA_NVIDIA 1
#endif
#endif
#endif

#if defined(CANDLE_WMMA_MFMA) || defined(CANDLE_WMMA_GFX11) || defined(CANDLE_WMMA_GFX12) || defined(CANDLE_WMMA_NVIDIA)
#define CANDLE_WMMA_MATRIX_CORES 1

namespace detail {
#if defined(CANDLE_WMMA_MFMA)
constexpr int kWave = 64;
constexpr int kCoreAB = 4;  // A / B elements per lane and tile
using core_f16 = __attribute__((ext_vector_type(4))) _Float16;
using core_bf16 = __attribute__((ext_vector_type(4))) __bf16;
using core_b16 = __attribute__((ext_vector_type(4))) uint16_t;
using core_f32 = __attribute__((ext_vector_type(4))) float;
#elif defined(CANDLE_WMMA_NVIDIA)
constexpr int kWave = 32;
constexpr int kCoreAB = hip_on_cuda_tensor_cores::kAB;
// the operands as the registers the instruction takes (two elements each), the result as floats
struct core_b16 {
    uint16_t v[kCoreAB];
    __device__ __forceinline__ uint16_t& operator[](int e) { return v[e]; }
};
struct core_f16 { uint32_t r[kCoreAB / 2]; };
struct core_bf16 { uint32_t r[kCoreAB / 2]; };
struct core_f32 {
    float v[hip_on_cuda_tensor_cores::kC];
    __device__ __forceinline__ float& operator[](int e) { return v[e]; }
    __device__ __forceinline__ const float& operator[](int e) const { return v[e]; }
};
#else
constexpr int kWave = 32;
#if defined(CANDLE_WMMA_GFX11)
constexpr int kCoreAB = 16;
using core_f16 = __attribute__((ext_vector_type(16))) _Float16;
using core_bf16 = __attribute__((ext_vector_type(16))) __bf16;
using core_b16 = __attribute__((ext_vector_type(16))) uint16_t;
#else
constexpr int kCoreAB = 8;
using core_f16 = __attribute__((ext_vector_type(8))) _Float16;
using core_bf16 = __attribute__((ext_vector_type(8))) __bf16;
using core_b16 = __attribute__((ext_vector_type(8))) uint16_t;
#endif
using core_f32 = __attribute__((ext_vector_type(8))) float;
#endif
constexpr int kCoreTiles = kWave / kLanes;  // logical warps (tiles) per wavefront
constexpr int kCoreC = 16 * 16 / kWave;          // accumulator elements per lane and tile: 4 (MFMA) or 8

// Lane of the calling thread in its wavefront.
__device__ __forceinline__ int wave_lane() {
    const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return static_cast<int>(linear % kWave);
}

// (row, column) of A (row: i, column: k) element e of lane l.
__device__ __forceinline__ void core_ab_index(int l, int e, unsigned& outer, unsigned& k) {
#if defined(CANDLE_WMMA_NVIDIA)
    hip_on_cuda_tensor_cores::a_index(l, e, outer, k);
#else
    outer = l % 16;
#if defined(CANDLE_WMMA_MFMA)
    k = 4 * (l / 16) + e;
#elif defined(CANDLE_WMMA_GFX11)
    k = e;
#else
    k = 8 * (e / 4) + 4 * (l / 16) + e % 4;
#endif
#endif
}

// (row: j, column: k) of B element e of lane l: A's table on AMD.
__device__ __forceinline__ void core_b_index(int l, int e, unsigned& outer, unsigned& k) {
#if defined(CANDLE_WMMA_NVIDIA)
    hip_on_cuda_tensor_cores::b_index(l, e, outer, k);
#else
    core_ab_index(l, e, outer, k);
#endif
}

// (row i, column j) of accumulator element r of lane l.
__device__ __forceinline__ void core_c_index(int l, int r, unsigned& i, unsigned& j) {
#if defined(CANDLE_WMMA_NVIDIA)
    hip_on_cuda_tensor_cores::c_index(l, r, i, j);
#else
    j = l % 16;
#if defined(CANDLE_WMMA_MFMA)
    i = 4 * (l / 16) + r;
#elif defined(CANDLE_WMMA_GFX11)
    i = 2 * r + l / 16;
#else
    i = 8 * (l / 16) + r;
#endif
#endif
}

// The address (and leading dimension) that logical warp `tile` of this
// wavefront passed: on wave64 each tile's come from its first lane.
template <class P>
__device__ __forceinline__ P* tile_pointer(P* p, int tile) {
#if defined(CANDLE_WMMA_MFMA)
    if ((blockDim.x * blockDim.y * blockDim.z) % kWave != 0) __builtin_trap();  // a partial wavefront: see above
    // as an offset from this lane's own pointer: the result stays derived from `p`, so the
    // compiler keeps its address space (an LDS tile is read with ds_read; a pointer made
    // from the shuffled integer was generic: flat loads, 64-bit addresses in VGPRs)
    // (read with v_readlane, a uniform lane's register into a scalar one: the tile is a
    // constant of the unrolled loops, where a shuffle was an LDS round trip per tile)
    const long long own = static_cast<long long>(reinterpret_cast<uintptr_t>(p));
    const unsigned lo = static_cast<unsigned>(__builtin_amdgcn_readlane(static_cast<int>(own), tile * kLanes));
    const unsigned hi = static_cast<unsigned>(__builtin_amdgcn_readlane(static_cast<int>(own >> 32), tile * kLanes));
    const long long theirs = static_cast<long long>((static_cast<unsigned long long>(hi) << 32) | lo);
    using Byte = typename std::conditional<std::is_const<P>::value, const char, char>::type;
    return reinterpret_cast<P*>(reinterpret_cast<Byte*>(p) + (theirs - own));
#else
    (void)tile;
    return p;
#endif
}
__device__ __forceinline__ unsigned tile_ldm(unsigned ldm, int tile) {
#if defined(CANDLE_WMMA_MFMA)
    return static_cast<unsigned>(__builtin_amdgcn_readlane(static_cast<int>(ldm), tile * kLanes));
#else
    (void)tile;
    return ldm;
#endif
}

__device__ __forceinline__ uint16_t bits16(const __half& v) { return __half_as_ushort(v); }
template <class T>
__device__ __forceinline__ uint16_t bits16(const T& v) { return v.bits; }  // candle_bf16

template <class T> struct core_vector;
template <> struct core_vector<__half> { using type = core_f16; };
template <class T> struct core_vector { using type = core_bf16; };

#if defined(CANDLE_WMMA_NVIDIA)
__device__ __forceinline__ core_f32 core_mma(const core_f16& a, const core_f16& b, const core_f32& c) {
    core_f32 d;
    hip_on_cuda_tensor_cores::mma_f16(a.r, b.r, c.v, d.v);
    return d;
}
__device__ __forceinline__ core_f32 core_mma(const core_bf16& a, const core_bf16& b, const core_f32& c) {
    core_f32 d;
    hip_on_cuda_tensor_cores::mma_bf16(a.r, b.r, c.v, d.v);
    return d;
}
#else
__device__ __forceinline__ core_f32 core_mma(const core_f16& a, const core_f16& b, const core_f32& c) {
#if defined(CANDLE_WMMA_MFMA)
    return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
#elif defined(CANDLE_WMMA_GFX11)
    return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c);
#else
    return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c);
#endif
}
__device__ __forceinline__ core_f32 core_mma(const core_bf16& a, const core_bf16& b, const core_f32& c) {
#if defined(CANDLE_WMMA_MFMA)
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
#elif defined(CANDLE_WMMA_GFX11)
    return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a, b, c);
#else
    return __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(a, b, c);
#endif
}
#endif
}  // namespace detail

namespace detail {
// The tiles on matrix cores: M x N (K = 16) as 16x16x16 instructions. 8x32
// (the MoE decode tile) is two of them with A's rows 8-15 zero, of whose
// results rows 0-7 are kept: half the instruction's work is spent, against
// the 32 shuffles per k of the portable path.
template <int M, int N>
struct core_shape {
    static constexpr bool ok = false;
};
template <>
struct core_shape<16, 16> {
    static constexpr bool ok = true;
    static constexpr int rows = 16, nsub = 1;
};
template <>
struct core_shape<8, 32> {
    static constexpr bool ok = true;
    static constexpr int rows = 8, nsub = 2;
};
template <int M, int N>
using if_core = typename std::enable_if<core_shape<M, N>::ok, int>::type;

// A: one 16x16 operand per tile; B and the accumulator: nsub each (columns
// 16*s .. 16*s+15), tiles outermost: element (t, s, e) at (t*nsub + s)*E + e.
template <class Use, int M, int N, class T>
struct core_fragment {
    static_assert(std::is_same<Use, accumulator>::value ? std::is_same<T, float>::value : sizeof(T) == 2,
                  "candle_wmma: A and B of 2-byte float types, a float accumulator");
    static constexpr int per_tile = std::is_same<Use, matrix_a>::value   ? kCoreAB
                                    : std::is_same<Use, matrix_b>::value ? core_shape<M, N>::nsub * kCoreAB
                                                                         : core_shape<M, N>::nsub * kCoreC;
    using element_type = T;
    using storage_element_type = T;
    static constexpr int num_elements = kCoreTiles * per_tile;
    T x[num_elements];
};
}  // namespace detail

template <class T, class Layout>
struct fragment<matrix_a, 16, 16, 16, T, Layout> : detail::core_fragment<matrix_a, 16, 16, T> {};
template <class T, class Layout>
struct fragment<matrix_b, 16, 16, 16, T, Layout> : detail::core_fragment<matrix_b, 16, 16, T> {};
template <>
struct fragment<accumulator, 16, 16, 16, float, void> : detail::core_fragment<accumulator, 16, 16, float> {};
template <class T, class Layout>
struct fragment<matrix_a, 8, 32, 16, T, Layout> : detail::core_fragment<matrix_a, 8, 32, T> {};
template <class T, class Layout>
struct fragment<matrix_b, 8, 32, 16, T, Layout> : detail::core_fragment<matrix_b, 8, 32, T> {};
template <>
struct fragment<accumulator, 8, 32, 16, float, void> : detail::core_fragment<accumulator, 8, 32, float> {};

#if defined(CANDLE_WMMA_NVIDIA)
namespace detail {
// A 16x16 operand of mma.sync from shared memory with one ldmatrix (x4), where its rows are
// 16-byte aligned: `outer_first` says whether memory rows run along the fragment's outer index
// (A's i, B's j: the registers' order is then (outer, k) = (0,0), (8,0), (0,8), (8,8) for A
// and (0,0), (0,8), (8,0), (8,8) for B) or along k (then transposed). false: not shared
// memory, or not aligned; the caller loads element by element.
template <class T>
__device__ __forceinline__ void ldmatrix16_at(T (&x)[8], const T* p, unsigned ldm, bool is_a, bool outer_first) {
    const int l = wave_lane(), m = l / 8, rr = l % 8;
    // matrix m covers outer 8*mo .. +8, k 8*mk .. +8
    const int mo = is_a ? m % 2 : m / 2, mk = is_a ? m / 2 : m % 2;
    const T* row = outer_first ? p + (rr + 8 * mo) * ldm + 8 * mk : p + (rr + 8 * mk) * ldm + 8 * mo;
    uint32_t r[4];
    hip_on_cuda_tensor_cores::ldmatrix_x4(r, row, !outer_first);
    __builtin_memcpy(x, r, sizeof r);
}
template <class T>
__device__ __forceinline__ bool ldmatrix16(T (&x)[8], const T* p, unsigned ldm, bool is_a, bool outer_first) {
    if (!__isShared(p) || (reinterpret_cast<uintptr_t>(p) % 16) != 0 || (ldm * sizeof(T)) % 16 != 0) return false;
    ldmatrix16_at(x, p, ldm, is_a, outer_first);
    return true;
}
}  // namespace detail
#endif

// A: row_major memory holds A(i, k) at p[i*ldm + k], col_major at p[k*ldm + i]
// (rows i >= M of the padded operand are zero, not read);
// B: col_major holds B(k, j) at p[j*ldm + k], row_major at p[k*ldm + j].
template <int M, int N, class T, class Layout, detail::if_core<M, N> = 0>
__device__ __forceinline__ void wmma_load_matrix(fragment<matrix_a, M, N, 16, T, Layout>& f, const typename detail::same_type<T>::type* p,
                                                 unsigned ldm) {
    static_assert(std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value, "matrix_a needs a layout");
#if defined(CANDLE_WMMA_NVIDIA)
    if (M == 16 && detail::ldmatrix16(f.x, p, ldm, true, std::is_same<Layout, row_major>::value)) return;
#endif
    const int l = detail::wave_lane();
#pragma unroll
    for (int t = 0; t < detail::kCoreTiles; ++t) {
        const T* pt = detail::tile_pointer(p, t);
        const unsigned lt = detail::tile_ldm(ldm, t);
#pragma unroll
        for (int e = 0; e < detail::kCoreAB; ++e) {
            unsigned i, k;
            detail::core_ab_index(l, e, i, k);
            f.x[t * detail::kCoreAB + e] =
                i >= unsigned(M) ? T(0.0f) : std::is_same<Layout, row_major>::value ? pt[i * lt + k] : pt[k * lt + i];
        }
    }
}
template <int M, int N, class T, class Layout, detail::if_core<M, N> = 0>
__device__ __forceinline__ void wmma_load_matrix(fragment<matrix_b, M, N, 16, T, Layout>& f, const typename detail::same_type<T>::type* p,
                                                 unsigned ldm) {
    static_assert(std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value, "matrix_b needs a layout");
    constexpr int nsub = detail::core_shape<M, N>::nsub;
#if defined(CANDLE_WMMA_NVIDIA)
    if (nsub == 1) {
        T (&x)[8] = *reinterpret_cast<T(*)[8]>(f.x);
        if (detail::ldmatrix16(x, p, ldm, false, std::is_same<Layout, col_major>::value)) return;
    }
#endif
    const int l = detail::wave_lane();
#pragma unroll
    for (int t = 0; t < detail::kCoreTiles; ++t) {
        const T* pt = detail::tile_pointer(p, t);
        const unsigned lt = detail::tile_ldm(ldm, t);
#pragma unroll
        for (int sub = 0; sub < nsub; ++sub)
#pragma unroll
            for (int e = 0; e < detail::kCoreAB; ++e) {
                unsigned j, k;
                detail::core_b_index(l, e, j, k);
                j += 16 * sub;
                f.x[(t * nsub + sub) * detail::kCoreAB + e] = std::is_same<Layout, col_major>::value ? pt[j * lt + k] : pt[k * lt + j];
            }
    }
}

namespace detail {
// Calls f(slot, tile address, tile ldm, i, j) for each accumulator element
// (i, j) this lane holds, i < 16 (rows past M included: the caller skips them).
template <int M, int N, class P, class F>
__device__ __forceinline__ void core_c_each(P* p, unsigned ldm, F f) {
    constexpr int nsub = core_shape<M, N>::nsub;
    const int l = wave_lane();
#pragma unroll
    for (int t = 0; t < kCoreTiles; ++t) {
        P* pt = tile_pointer(p, t);
        const unsigned lt = tile_ldm(ldm, t);
#pragma unroll
        for (int sub = 0; sub < nsub; ++sub)
#pragma unroll
            for (int r = 0; r < kCoreC; ++r) {
                unsigned i, j;
                core_c_index(l, r, i, j);
                f((t * nsub + sub) * kCoreC + r, pt, lt, i, j + 16 * sub);
            }
    }
}
}  // namespace detail

// Accumulator element (i, j) is at p[i*ldm + j] (mem_row_major) or p[j*ldm + i];
// rows i >= M are neither read (zero) nor written. On wave64 every lane
// handles its share of both tiles.
template <int M, int N, detail::if_core<M, N> = 0>
__device__ __forceinline__ void wmma_load_matrix(fragment<accumulator, M, N, 16, float>& f, const float* p, unsigned ldm, layout_t layout) {
    detail::core_c_each<M, N>(p, ldm, [&](int slot, const float* pt, unsigned lt, unsigned i, unsigned j) {
        f.x[slot] = i >= unsigned(M) ? 0.0f : layout == mem_row_major ? pt[i * lt + j] : pt[j * lt + i];
    });
}
template <int M, int N, detail::if_core<M, N> = 0>
__device__ __forceinline__ void wmma_store_matrix(float* p, const fragment<accumulator, M, N, 16, float>& f, unsigned ldm, layout_t layout) {
    detail::core_c_each<M, N>(p, ldm, [&](int slot, float* pt, unsigned lt, unsigned i, unsigned j) {
        if (i < unsigned(M)) (layout == mem_row_major ? pt[i * lt + j] : pt[j * lt + i]) = f.x[slot];
    });
}

// d = a * b + c on the matrix instruction, one per tile and 16-column block. d may be c.
template <int M, int N, class T, class LA, class LB, detail::if_core<M, N> = 0>
__device__ __forceinline__ void wmma_mma(fragment<accumulator, M, N, 16, float>& d, const fragment<matrix_a, M, N, 16, T, LA>& a,
                                         const fragment<matrix_b, M, N, 16, T, LB>& b, const fragment<accumulator, M, N, 16, float>& c) {
    using V = typename detail::core_vector<T>::type;
    constexpr int nsub = detail::core_shape<M, N>::nsub;
#pragma unroll
    for (int t = 0; t < detail::kCoreTiles; ++t) {
        detail::core_b16 ab;
#pragma unroll
        for (int e = 0; e < detail::kCoreAB; ++e) ab[e] = detail::bits16(a.x[t * detail::kCoreAB + e]);
        V av;
        static_assert(sizeof(av) == sizeof(ab), "operand vectors");
        __builtin_memcpy(&av, &ab, sizeof av);
#pragma unroll
        for (int sub = 0; sub < nsub; ++sub) {
            const int base = t * nsub + sub;
            detail::core_b16 bb;
            detail::core_f32 cv;
#pragma unroll
            for (int e = 0; e < detail::kCoreAB; ++e) bb[e] = detail::bits16(b.x[base * detail::kCoreAB + e]);
#pragma unroll
            for (int r = 0; r < detail::kCoreC; ++r) cv[r] = c.x[base * detail::kCoreC + r];
            V bv;
            __builtin_memcpy(&bv, &bb, sizeof bv);
            const detail::core_f32 dv = detail::core_mma(av, bv, cv);
#pragma unroll
            for (int r = 0; r < detail::kCoreC; ++r) d.x[base * detail::kCoreC + r] = dv[r];
        }
    }
}

// Row i of the accumulator times scale[i] (rows past M: untouched, never read).
template <int M, int N, detail::if_core<M, N> = 0>
__device__ __forceinline__ void wmma_scale_rows(fragment<accumulator, M, N, 16, float>& f, const float* scale) {
    detail::core_c_each<M, N>(scale, 0u, [&](int slot, const float* pt, unsigned, unsigned i, unsigned) {
        if (i < unsigned(M)) f.x[slot] *= pt[i];
    });
}

namespace detail {
#if !defined(CANDLE_WMMA_NVIDIA)
// A row of AMD's accumulators (MFMA, gfx11 and gfx12 WMMA: core_c_index) lies in one 16-lane
// DPP row of the wavefront (lanes 16q .. 16q + 15): its max and sum by four DPP moves folded
// into the arithmetic (quad_perm [1,0,3,2] and [2,3,0,1], row_half_mirror, row_mirror; the
// DPP_CTRL values of AMD's CDNA3 and RDNA3 ISA guides), where shuffles were LDS round trips
// (ds_bpermute). Every lane of the row ends with the same bits: each step combines two equal
// partial results in either order.
struct dpp_row16 {
    static constexpr int lanes = 16;
    template <int CTRL>
    __device__ static float move(float v) {
        return __int_as_float(__builtin_amdgcn_mov_dpp(__float_as_int(v), CTRL, 0xf, 0xf, true));
    }
    __device__ static float max(float v) {
        v = fmaxf(v, move<0xb1>(v));
        v = fmaxf(v, move<0x4e>(v));
        v = fmaxf(v, move<0x141>(v));
        return fmaxf(v, move<0x140>(v));
    }
    __device__ static float sum(float v) {
        v += move<0xb1>(v);
        v += move<0x4e>(v);
        v += move<0x141>(v);
        return v + move<0x140>(v);
    }
};
#endif

// The matrix cores' accumulator (core_c_index): NVIDIA's m16n8k16 pair holds rows l/4 and
// l/4 + 8 (slots (s%4)/2), columns 2*(l%4) + s%2 + 8*(s/4); the AMD instructions hold
// column l%16 and one row per slot (CDNA: 4*(l/16) + r of tile s/4; gfx11: 2r + l/16;
// gfx12: 8*(l/16) + r).
#if defined(CANDLE_WMMA_NVIDIA)
struct acc16_rows_core : row_lanes<4, kWave> {
    static constexpr int groups = 2;
    static constexpr bool acc_is_a = true;
    __device__ static constexpr int group(int slot) { return (slot % 4) / 2; }
#else
struct acc16_rows_core : dpp_row16 {
    static constexpr int groups = kCoreTiles * kCoreC;
    static constexpr bool acc_is_a = false;
    __device__ static constexpr int group(int slot) { return slot; }
#endif
    static constexpr int tiles = kCoreTiles;
    __device__ static constexpr int tile(int g) { return g / (groups / kCoreTiles); }
    __device__ static int row(int g) {
        unsigned i, j;
#if defined(CANDLE_WMMA_NVIDIA)
        core_c_index(wave_lane(), 2 * g, i, j);
#else
        core_c_index(wave_lane(), g % kCoreC, i, j);
#endif
        return int(i);
    }
    __device__ static int col(int slot) {
        unsigned i, j;
        core_c_index(wave_lane(), slot % kCoreC, i, j);
        return int(j);
    }
    __device__ static int lane_in_row() { return wave_lane() % lanes; }
    template <class P, class F>
    __device__ static void each(P* p, unsigned ldm, F f) {
        core_c_each<16, 16>(p, ldm, f);
    }
};
}  // namespace detail
using acc16_rows = detail::acc16_rows_core;
#endif  // matrix cores

#if !defined(CANDLE_WMMA_MATRIX_CORES)
using acc16_rows = detail::acc16_rows_portable;
#endif

// An operand from LDS whose rows are 16-byte aligned (pointer and ldm * sizeof(T) multiples
// of 16), the caller's promise: NVIDIA's ldmatrix (one instruction per 16x16 operand) under
// hip-on-cuda; wmma_load_matrix everywhere else.
template <class Use, int M, int N, int K, class T, class Layout>
__device__ __forceinline__ void wmma_load_matrix_lds(fragment<Use, M, N, K, T, Layout>& f, const typename detail::same_type<T>::type* p,
                                                     unsigned ldm) {
#if defined(CANDLE_WMMA_NVIDIA)
    if constexpr (M == 16 && N == 16 && !std::is_same<Use, accumulator>::value) {
        detail::ldmatrix16_at(f.x, p, ldm, std::is_same<Use, matrix_a>::value,
                              std::is_same<Use, matrix_a>::value == std::is_same<Layout, row_major>::value);
        return;
    }
#endif
    wmma_load_matrix(f, p, ldm);
}

// 2^x by the hardware's instruction alone, results below 2^-126 flushed to zero: v_exp_f32
// on AMD, MUFU.EX2 under hip-on-cuda's tensor-core builds; exp2f elsewhere (which both
// compilers widen with a denormal range fix of three or four instructions)
__device__ __forceinline__ float exp2_approx(float x) {
#if defined(__AMDGCN__) && __has_builtin(__builtin_amdgcn_exp2f)
    return __builtin_amdgcn_exp2f(x);
#elif defined(HIP_ON_CUDA_EXP2_APPROX)
    return hip_on_cuda_tensor_cores::exp2_approx(x);
#else
    return exp2f(x);
#endif
}

// Tiles staged into LDS, 16 bytes per copy (both addresses 16-byte aligned): an asynchronous
// copy where the GPU has one (hip-on-cuda's sm_80 cp.async), else a load and a store.
// lds_copy_wait: this thread's copies have landed (a block barrier after it makes them
// everyone's).
__device__ __forceinline__ void lds_copy16(void* lds, const void* global) {
#if defined(HIP_ON_CUDA_ASYNC_COPY)
    hip_on_cuda_tensor_cores::async_copy16(lds, global);
#else
    *reinterpret_cast<uint4*>(lds) = *reinterpret_cast<const uint4*>(global);
#endif
}
__device__ __forceinline__ void lds_copy_wait() {
#if defined(HIP_ON_CUDA_ASYNC_COPY)
    hip_on_cuda_tensor_cores::async_wait_all();
#endif
}

// The accumulator, rounded to T, as the A operand (row_major) of the next product
// (see acc16_rows above).
template <class T, class L>
__device__ __forceinline__ void wmma_acc_to_a(fragment<matrix_a, 16, 16, 16, T, L>& a, const fragment<accumulator, 16, 16, 16, float>& c,
                                              T* scratch, unsigned ldm) {
    if constexpr (acc16_rows::acc_is_a) {
        (void)scratch;
        (void)ldm;
#pragma unroll
        for (int e = 0; e < a.num_elements; ++e) a.x[e] = detail::from_float<T>::conv(c.x[e]);
    } else {
        acc16_rows::each(scratch, ldm, [&](int slot, T* pt, unsigned lt, unsigned i, unsigned j) {
            pt[i * lt + j] = detail::from_float<T>::conv(c.x[slot]);
        });
        detail::wave_barrier();
        wmma_load_matrix(a, scratch, ldm);
        detail::wave_barrier();
    }
}

}  // namespace candle_wmma

// The translator maps the bare outer namespace of the original API (the
// `using namespace X;` + `wmma::...` spelling) to this alias namespace.
namespace candle_nvcuda {
namespace wmma = candle_wmma;
}
