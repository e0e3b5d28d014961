// Written by `cargo xtask regen` from translator/compat/candle_elementwise.h (candle-rocm's own code). Do not edit here.
// candle_elementwise.h - the contiguous loops of Candle's elementwise kernels
// (unary, affine, binary, cast) moving 16-byte packs.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Upstream's contiguous loops read and write one element per thread and
// iteration (`out[i] = FUNC(inp[i])`): 2- and 4-byte accesses, which leave
// HBM well below its peak. The translator's rule `elementwise-packs`
// (kernels::mapping::ELEMENTWISE_PACK_EDITS) replaces each such loop by one
// call below, with upstream's expression as the function of one element:
//
//   candle_ew_map1(numel, src, out, f)       out[i] = f(src[i])
//   candle_ew_map2(numel, lhs, rhs, out, f)  out[i] = f(lhs[i], rhs[i])
//
// Each thread takes packs of N consecutive elements, N = 16 bytes over the
// widest element type, loaded and stored as one machine word each
// (global_load_dwordx4 on CDNA/RDNA for 16 bytes), then the tail of fewer
// than N elements one by one. Any pointer not aligned to its pack falls back
// to upstream's one-element loop. Every element gets the same expression with
// the same conversions as upstream's loop, so the results are bit-identical;
// only the memory accesses are wider.
//
// The loops are grid-stride loops, correct for any grid. The ROCm backend
// launches them with one thread per pack when the layout is contiguous and
// aligned (backend rule `elementwise-launches`, LaunchConfig::for_packed_elems:
// the same pack size, `candle_ew_pack_elems`).
#pragma once

#include <stddef.h>
#include <stdint.h>

// The vectors of 32-bit lanes that move 8 and 16 bytes as one load or store,
// and lane I (member M) of one: clang's own vectors, lanes by subscript (GCC's
// vectors too, in the CPU emulation); a compiler without ext_vector_type
// defines CANDLE_PLATFORM_EW_U32X2/X4 to types with members x, y, z, w
// (hip-on-cuda: CUDA's uint2/uint4).
#if defined(CANDLE_PLATFORM_EW_U32X4)
typedef CANDLE_PLATFORM_EW_U32X2 candle_ew_u32x2;
typedef CANDLE_PLATFORM_EW_U32X4 candle_ew_u32x4;
#define CANDLE_EW_LANE(v, I, M) ((v).M)
#else
typedef uint32_t candle_ew_u32x2 __attribute__((ext_vector_type(2)));
typedef uint32_t candle_ew_u32x4 __attribute__((ext_vector_type(4)));
#define CANDLE_EW_LANE(v, I, M) ((v)[I])
#endif

// An 8- or 16-byte word as an array of 32-bit lanes, moved through global
// memory as one vector. Not a vector itself (HIP's uint2/uint4 were): HIP 5.2's
// clang 15 could not keep a vector read or written element by element via a T
// pointer in registers, and staged such packs in LDS (16-32 KB per workgroup,
// in most of the 2- and 1-byte elementwise kernels for gfx90a and gfx1030) or
// scratch. An array of lanes it splits into registers.
template <int LANES>
struct candle_ew_lanes {
    uint32_t lane[LANES];
};
typedef candle_ew_lanes<2> candle_ew_word8;
typedef candle_ew_lanes<4> candle_ew_word16;

// Moves a word: as itself, or a lanes word as its vector.
template <typename W>
__device__ __forceinline__ W candle_ew_load(const W* p) { return *p; }
template <typename W>
__device__ __forceinline__ void candle_ew_store(W* p, const W& w) { *p = w; }
template <>
__device__ __forceinline__ candle_ew_word8 candle_ew_load(const candle_ew_word8* p) {
    const candle_ew_u32x2 v = *reinterpret_cast<const candle_ew_u32x2*>(p);
    candle_ew_word8 w;
    w.lane[0] = CANDLE_EW_LANE(v, 0, x); w.lane[1] = CANDLE_EW_LANE(v, 1, y);
    return w;
}
template <>
__device__ __forceinline__ void candle_ew_store(candle_ew_word8* p, const candle_ew_word8& w) {
    candle_ew_u32x2 v;
    CANDLE_EW_LANE(v, 0, x) = w.lane[0]; CANDLE_EW_LANE(v, 1, y) = w.lane[1];
    *reinterpret_cast<candle_ew_u32x2*>(p) = v;
}
template <>
__device__ __forceinline__ candle_ew_word16 candle_ew_load(const candle_ew_word16* p) {
    const candle_ew_u32x4 v = *reinterpret_cast<const candle_ew_u32x4*>(p);
    candle_ew_word16 w;
    w.lane[0] = CANDLE_EW_LANE(v, 0, x); w.lane[1] = CANDLE_EW_LANE(v, 1, y); w.lane[2] = CANDLE_EW_LANE(v, 2, z); w.lane[3] = CANDLE_EW_LANE(v, 3, w);
    return w;
}
template <>
__device__ __forceinline__ void candle_ew_store(candle_ew_word16* p, const candle_ew_word16& w) {
    candle_ew_u32x4 v;
    CANDLE_EW_LANE(v, 0, x) = w.lane[0]; CANDLE_EW_LANE(v, 1, y) = w.lane[1]; CANDLE_EW_LANE(v, 2, z) = w.lane[2]; CANDLE_EW_LANE(v, 3, w) = w.lane[3];
    *reinterpret_cast<candle_ew_u32x4*>(p) = v;
}

// The machine word of BYTES bytes (1, 2, 4, 8 or 16).
template <int BYTES> struct candle_ew_word;
template <> struct candle_ew_word<1> { typedef uint8_t type; };
template <> struct candle_ew_word<2> { typedef uint16_t type; };
template <> struct candle_ew_word<4> { typedef uint32_t type; };
template <> struct candle_ew_word<8> { typedef candle_ew_word8 type; };
template <> struct candle_ew_word<16> { typedef candle_ew_word16 type; };

// Elements per pack: 16 bytes of the widest of the types (at least 1).
template <typename A, typename B>
struct candle_ew_pack_elems {
    static constexpr int value = (sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B)) >= 16
        ? 1 : 16 / (int)(sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
};

__device__ __forceinline__ bool candle_ew_aligned(const void* p, size_t bytes) {
    return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// N elements of T, loaded as one word from pack `p` of `base`.
template <typename T, int N>
struct candle_ew_pack {
    typedef typename candle_ew_word<N * (int)sizeof(T)>::type word;
    word w;
    __device__ __forceinline__ const T& operator[](int k) const { return reinterpret_cast<const T*>(&w)[k]; }
    __device__ __forceinline__ T& operator[](int k) { return reinterpret_cast<T*>(&w)[k]; }
    __device__ __forceinline__ static candle_ew_pack load(const T* base, size_t p) {
        candle_ew_pack r;
        r.w = candle_ew_load(reinterpret_cast<const word*>(base) + p);
        return r;
    }
    __device__ __forceinline__ void store(T* base, size_t p) const { candle_ew_store(reinterpret_cast<word*>(base) + p, w); }
};

template <typename In, typename Out, typename F>
__device__ __forceinline__ void candle_ew_map1(const size_t numel, const In* src, Out* out, F f) {
    const int N = candle_ew_pack_elems<In, Out>::value;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    size_t done = 0;
    if (candle_ew_aligned(src, N * sizeof(In)) && candle_ew_aligned(out, N * sizeof(Out))) {
        const size_t packs = numel / N;
        for (size_t p = first; p < packs; p += stride) {
            const candle_ew_pack<In, N> a = candle_ew_pack<In, N>::load(src, p);
            candle_ew_pack<Out, N> r;
#pragma unroll
            for (int k = 0; k < N; ++k) r[k] = f(a[k]);
            r.store(out, p);
        }
        done = packs * N;
    }
    for (size_t i = done + first; i < numel; i += stride) out[i] = f(src[i]);
}

template <typename In, typename Out, typename F>
__device__ __forceinline__ void candle_ew_map2(const size_t numel, const In* lhs, const In* rhs, Out* out, F f) {
    const int N = candle_ew_pack_elems<In, Out>::value;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    size_t done = 0;
    if (candle_ew_aligned(lhs, N * sizeof(In)) && candle_ew_aligned(rhs, N * sizeof(In)) &&
        candle_ew_aligned(out, N * sizeof(Out))) {
        const size_t packs = numel / N;
        for (size_t p = first; p < packs; p += stride) {
            const candle_ew_pack<In, N> a = candle_ew_pack<In, N>::load(lhs, p);
            const candle_ew_pack<In, N> b = candle_ew_pack<In, N>::load(rhs, p);
            candle_ew_pack<Out, N> r;
#pragma unroll
            for (int k = 0; k < N; ++k) r[k] = f(a[k], b[k]);
            r.store(out, p);
        }
        done = packs * N;
    }
    for (size_t i = done + first; i < numel; i += stride) out[i] = f(lhs[i], rhs[i]);
}
