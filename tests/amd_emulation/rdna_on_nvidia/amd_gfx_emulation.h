// hip-on-cuda: AMD RDNA3 / RDNA4 (gfx11 / gfx12, wave32) builtins, emulated on
// 32-lane NVIDIA warps, so that the AMD matrix-core branches of the generated
// kernels (ggml's MMQ code in generated/kernels/mmq_gguf/mmq_mma.cuh under
// AMD_WMMA_AVAILABLE + RDNA3 / RDNA4) can run, and be checked, on an H100.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Only the emulated build uses it: hip-on-cuda/build-kernels.sh with
// AMD_ARCH=gfxNNNN force-includes it (`nvcc -include .../amd_gfx_emulation.h
// -D__gfxNNNN__ -D__GFX11__|__GFX12__`) into a copy of the kernels whose AMD
// vector aliases (`__attribute__((ext_vector_type(K))) T`,
// `__attribute__((__vector_size__(K * sizeof(T)))) T`) were rewritten to
// candle_emu_vector<T, K> (nvcc rejects GCC/clang vector types in device code).
// The ordinary hip-on-cuda build never sees this file.
//
// What it provides
//   1. candle_emu_vector<T, N>       the stand-in for an AMD vector of N T
//   2. _Float16 -> __half, __bf16 -> __nv_bfloat16 (macros, nvcc only; see there)
//   3. WMMA, exactly the builtins the generated kernels call (grep
//      __builtin_amdgcn_wmma generated/kernels), with LLVM's operand types
//      (clang/include/clang/Basic/BuiltinsAMDGPU.def; gfx12 forms as in
//      clang/test/CodeGenOpenCL/builtins-amdgcn-gfx12-wmma-w32.cl):
//        gfx11: __builtin_amdgcn_wmma_f32_16x16x16_f16_w32 (half16 A, half16 B, float8 C) -> float8
//               __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(bf16x16 A, bf16x16 B, float8 C) -> float8
//               __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32 (bool A signed, int4 A, bool B signed, int4 B,
//                                                          int8 C, bool clamp) -> int8
//        gfx12: __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12 (half8 A, half8 B, float8 C) -> float8
//               __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(bf16x8 A, bf16x8 B, float8 C) -> float8
//               __builtin_amdgcn_wmma_f16_16x16x16_f16_w32_gfx12 (half8 A, half8 B, half8 C) -> half8
//               __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12 (bool, int2 A, bool, int2 B, int8 C,
//                                                                bool clamp) -> int8
//      D = A * B + C with A 16x16 (M x K), B 16x16 (K x N), C/D 16x16 (M x N).
//   4. __builtin_amdgcn_perm (V_PERM_B32), __builtin_amdgcn_sdot4 (V_DOT4_I32_I8),
//      __builtin_amdgcn_sudot4 (V_DOT4_I32_IU8), __builtin_amdgcn_mov_dpp (the DPP16 moves
//      of ../dpp16.h).
// The builtin names are function-like macros onto candle_emu_* functions (no
// declaration of a __builtin_ name, which GCC/EDG reserve). Part 1 below is
// plain C++ (the layouts, the reference arithmetic, a shuffle-free model of a
// WMMA) and compiles with g++ for tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_cpu.cpp;
// part 2 (nvcc only) is the device emulation.
//
// WMMA emulation rules
//   * All 32 lanes of the warp must call each WMMA builtin together (as on AMD,
//     where WMMA is wave-wide): the emulation gathers operands with
//     __shfl_sync(0xffffffff, ...). A lane is its linear thread id mod 32.
//   * RDNA3 (gfx11) wave32 keeps every A row / B column in two lanes, l and
//     l+16 (the ISA tables list each A/B element in both). What the hardware
//     does when the two copies differ is not documented, so the emulation does
//     not pick one: it prints a message and traps (__trap) when they differ.
//   * Arithmetic. iu8: exact integer products and sum; without clamp the i32
//     result wraps around (mod 2^32), with clamp it saturates to
//     [INT32_MIN, INT32_MAX]. f16/bf16 inputs: the products are exact (they fit
//     a float), summed in double in k order 0..15, then C is added in double
//     and the sum is rounded once to the destination (float, or f16 with round
//     to nearest even). AMD does not document the internal precision or order
//     of the WMMA sum, so last-bit differences from the hardware are possible.
//     The emulated result is the correctly rounded A*B + C whenever the double
//     sum is exact: always for iu8, and for f16/bf16 unless the terms span more
//     than 53 bits of magnitude. Denormal inputs are used as they are.
//
// WMMA register layouts (wave32). Lane l = 0..31, h = l / 16 (lane half),
// i = l % 16. "Element e" of a lane is the e-th 16-bit (f16, bf16) or 8-bit
// (iu8) field of the lane's registers of that operand, counting from bit 0 of
// its first VGPR: VGPR (e*bits)/32, bits [(e*bits)%32 + bits-1 : (e*bits)%32].
// That is also element e of the operand's vector in the builtin (AMD vectors
// put element 0 in the low bits), so e is the index into candle_emu_vector.
//
//   operand            gfx11 = RDNA3                       gfx12 = RDNA4
//   A[m][k]            m = i,  k = e  (e = 0..15)          m = i,  16-bit: k = 8*(e/4) + 4*h + e%4
//                      (lanes l and l^16 hold the same)            8-bit:  k = 8*h + e     (e = 0..7)
//   B[k][n]            n = i,  k as for A                  n = i,  k as for A
//   C/D[m][n] 32-bit   n = i,  m = 2*v + h  (VGPR v=0..7)  n = i,  m = 8*h + v  (VGPR v = 0..7)
//   C/D[m][n] 16-bit   (not used by the kernels; not       n = i,  m = 8*h + e  (e = 0..7: VGPR e/2,
//                       emulated)                                  bits [16*(e%2)+15 : 16*(e%2)])
//
// For example (register.[bits]{lane}):
//   gfx11 f16 A[3][9]  = v4.[31:16]{3} and v4.[31:16]{19};  gfx11 iu8 A[3][9] = v2.[15:8]{3} and {19}
//   gfx11 D[1][0] = v0{16}, D[14][15] = v7{15}, D[3][6] = v1{22}
//   gfx12 f16 A[0][4] = v0.[15:0]{16}, A[0][8] = v2.[15:0]{0}, A[15][15] = v3.[31:16]{31}
//   gfx12 f16 B[8][5] = v2.[15:0]{5};   gfx12 iu8 A[3][9] = v0.[15:8]{19}, B[9][6] = v0.[15:8]{22}
//   gfx12 D[8][0] = v0{16}, D[12][7] = v4{23};  gfx12 f16 D[1][1] = v0.[31:16]{1}
//
// Source: AMD's "RDNA3 Instruction Set Architecture Reference Guide" and "RDNA4
// Instruction Set Architecture Reference Guide", section "Wave Matrix Multiply
// Accumulate (WMMA)" of the vector ALU chapter, and its matrix-layout tables
// (dense 16-bit / 8-bit A and B, 32-bit and 16-bit C/D). The PDFs could not be
// opened where this was written; the tables were read as AMD's Matrix
// Instruction Calculator prints them (github.com/ROCm/
// amd_matrix_instruction_calculator, commit 2ef9189, `--matrix-layout`, classes
// InstCalcGfx11 / InstCalcGfx12): the formulas above match all 6912
// register.bits{lane} entries of A, B and D of the f16, bf16 and iu8 WMMAs of
// both generations and of gfx12's f16-output WMMA. The RDNA3 order (A row /
// B column = lane % 16 from lanes 0-15; C/D lane l, VGPR v -> M = 2*v + l/16)
// is also what the RDNA3 emulator Qazalin/remu implements, and the C/D order
// what ROCm/FlyDSL PR #485 reports validating on gfx1151 hardware. The layouts
// agree with ggml's own tiles (mmq_mma.cuh, AMD_WMMA_AVAILABLE:
// tile<16,16,T,J_MAJOR> C with get_i(l) = 2*l + lane/16 on RDNA3 and
// 8*(lane/16) + l on RDNA4; RDNA3 A/B tiles DATA_LAYOUT_I_MAJOR_MIRRORED, one
// whole row per lane, repeated in lanes 16-31). Note: gfx12's 16-bit A/B put K
// 0-3 and 8-11 in lanes 0-15 and K 4-7, 12-15 in lanes 16-31, while ggml's
// RDNA4 tile<16,8,half2> gives lanes 0-15 K 0-7 and lanes 16-31 K 8-15. As A
// and B share that K order, the product is the same (a K permutation applied to
// both operands cancels); tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_cpu.cpp checks it.
//
// V_PERM_B32 (RDNA3 ISA guide, V_PERM_B32's pseudocode; agrees with remu's):
// D.byte[j] = BYTE_PERMUTE({src0, src1}, sel.byte[j]) where {src0, src1} is
// the 64-bit value with src0 in bits 63:32 (in[0..3] = bytes of src1, in[4..7]
// = bytes of src0) and a selector byte s gives in[s] for s = 0..7,
// 0xff * sign bit of in[1], in[3], in[5], in[7] for s = 8, 9, 10, 11, 0x00 for
// s = 12 and 0xff for s >= 13.
// V_DOT4_I32_I8 / V_DOT4_I32_IU8: D = C + sum of the four byte products (bytes
// signed or unsigned per operand), wrapping mod 2^32, or saturated with clamp.
#pragma once
#ifndef CANDLE_AMD_GFX_EMULATION_H
#define CANDLE_AMD_GFX_EMULATION_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
// First, before the type macros of part 2 (include guards keep the kernels'
// later #includes of these from re-reading them under the macros).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#endif

#include "../dpp16.h"

#if defined(__CUDACC__)
#define CANDLE_EMU_HD __host__ __device__
#define CANDLE_EMU_HDI __host__ __device__ __forceinline__
#else
#define CANDLE_EMU_HD
#define CANDLE_EMU_HDI inline
#endif
#if defined(__CUDA_ARCH__)
#define CANDLE_EMU_UNROLL _Pragma("unroll")
#else
#define CANDLE_EMU_UNROLL
#endif

// ===========================================================================
// Part 1: plain C++ (host and device)
// ===========================================================================

// ---------------------------------------------------------------------------
// 1. candle_emu_vector<T, N>: N elements of T, laid out and aligned like the
// AMD vector type (clang's ext_vector_type / GCC's vector_size: size N *
// sizeof(T), element 0 first). Only what the generated code does with those
// aliases: copy, element access with []. Aligned to T, not to its size as on
// AMD: ggml casts 4-byte-aligned int arrays to these types (registers on AMD);
// where nvcc puts such an array in local memory, a size-aligned vector access
// could fault, which would be a fault of this emulation, not of the code.
// ---------------------------------------------------------------------------
template <class T, int N>
struct candle_emu_vector {
    static_assert(N > 0 && ((sizeof(T) * N) & (sizeof(T) * N - 1)) == 0,
                  "candle_emu_vector: size must be a power of two, as for the AMD vector types used");
    T v[N];
    CANDLE_EMU_HDI T& operator[](int i) { return v[i]; }
    CANDLE_EMU_HDI const T& operator[](int i) const { return v[i]; }
};

// ---------------------------------------------------------------------------
// 2. WMMA layouts (see the table at the top). The outer index (A row m,
// B column n, C/D column n) is lane % 16 on both generations.
// ---------------------------------------------------------------------------
template <int GFX>
struct candle_emu_wmma_layout;

template <>
struct candle_emu_wmma_layout<11> {  // RDNA3, wave32
    // Lanes l and l+16 hold the same A row / B column (all 16 K values).
    static constexpr bool ab_replicated = true;
    // K index of element e of an A/B lane in lane half h, for `bits`-bit inputs.
    CANDLE_EMU_HD static constexpr int ab_k(int /*bits*/, int /*h*/, int e) { return e; }
    // Elements of A (or B) per lane.
    CANDLE_EMU_HD static constexpr int ab_elems() { return 16; }
    // Row m of C/D element (32-bit VGPR) v of a lane in lane half h; column = lane % 16.
    CANDLE_EMU_HD static constexpr int cd_m(int h, int v) { return 2 * v + h; }
};

template <>
struct candle_emu_wmma_layout<12> {  // RDNA4, wave32
    static constexpr bool ab_replicated = false;
    CANDLE_EMU_HD static constexpr int ab_k(int bits, int h, int e) {
        return bits == 16 ? 8 * (e / 4) + 4 * h + e % 4 : 8 * h + e;
    }
    CANDLE_EMU_HD static constexpr int ab_elems() { return 8; }
    // 32-bit C/D: VGPR v; 16-bit C/D (f16 output): element v (VGPR v/2, half v%2).
    CANDLE_EMU_HD static constexpr int cd_m(int h, int v) { return 8 * h + v; }
};

// Field j (of 32/BITS) of a 32-bit word.
template <int BITS>
CANDLE_EMU_HDI uint32_t candle_emu_field(uint32_t word, int j) {
    return (word >> (BITS * j)) & ((1u << BITS) - 1u);
}

// ---------------------------------------------------------------------------
// 3. Reference arithmetic.
// ---------------------------------------------------------------------------

// IEEE binary16 bits -> float (exact; NaN payloads kept).
CANDLE_EMU_HDI float candle_emu_f16_bits_to_float(uint32_t h) {
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t f;
    if (exp == 0x1fu) {
        f = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        f = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        f = sign;
    } else {  // subnormal: man * 2^-24, normalized
        uint32_t e = 113;
        while (!(man & 0x400u)) {
            man <<= 1;
            --e;
        }
        f = sign | (e << 23) | ((man & 0x3ffu) << 13);
    }
    float r;
    memcpy(&r, &f, 4);
    return r;
}

// bfloat16 bits -> float (exact).
CANDLE_EMU_HDI float candle_emu_bf16_bits_to_float(uint32_t b) {
    const uint32_t f = (b & 0xffffu) << 16;
    float r;
    memcpy(&r, &f, 4);
    return r;
}

// double -> IEEE binary16 bits, one rounding to nearest even; overflow -> inf,
// NaN -> the quiet NaN 0x7e00 (with the sign).
CANDLE_EMU_HDI uint16_t candle_emu_f64_to_f16_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    const uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    const int exp = (int)((u >> 52) & 0x7ffu);
    const uint64_t frac = u & ((1ull << 52) - 1);
    if (exp == 0x7ff) return (uint16_t)(sign | (frac ? 0x7e00u : 0x7c00u));
    if (exp == 0) return sign;  // zero or a double subnormal (< 2^-1022): rounds to 0
    const int e = exp - 1023;    // value = 1.frac * 2^e
    if (e > 15) return (uint16_t)(sign | 0x7c00u);
    const uint64_t mant = frac | (1ull << 52);  // 53-bit significand
    // Normal binary16 (e >= -14): keep 10 fraction bits (shift 42); subnormal:
    // units of 2^-24, shift 28 - e (>= 43). Rounding up may carry into the
    // exponent (or from subnormal into normal, or to inf): the sum handles it.
    const int shift = e >= -14 ? 42 : 28 - e;
    if (shift > 63) return sign;  // below half the smallest subnormal
    uint64_t q = mant >> shift;
    const uint64_t rem = mant & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    const uint32_t bits = e >= -14 ? ((uint32_t)(e + 15) << 10) + (uint32_t)q - 1024u : (uint32_t)q;
    return (uint16_t)(sign | bits);
}

// An exact integer result to i32: saturated with clamp, else wrapped mod 2^32.
CANDLE_EMU_HDI int32_t candle_emu_i32_result(int64_t x, bool clamp) {
    if (clamp) return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
    return (int32_t)(uint32_t)(uint64_t)x;
}

// V_PERM_B32.
CANDLE_EMU_HDI uint32_t candle_emu_ref_perm(uint32_t src0, uint32_t src1, uint32_t sel) {
    const uint64_t in = ((uint64_t)src0 << 32) | src1;
    uint32_t d = 0;
    for (int j = 0; j < 4; ++j) {
        const uint32_t s = (sel >> (8 * j)) & 0xffu;
        uint32_t byte;
        if (s >= 13) {
            byte = 0xffu;
        } else if (s == 12) {
            byte = 0;
        } else if (s >= 8) {  // sign of in[1], in[3], in[5], in[7]
            byte = ((in >> (8 * (2 * (s - 8) + 1) + 7)) & 1) ? 0xffu : 0;
        } else {
            byte = (uint32_t)(in >> (8 * s)) & 0xffu;
        }
        d |= byte << (8 * j);
    }
    return d;
}

// V_DOT4_I32_IU8 (and V_DOT4_I32_I8 with both operands signed).
CANDLE_EMU_HDI int32_t candle_emu_ref_dot4(bool a_signed, uint32_t a, bool b_signed, uint32_t b, int32_t c,
                                           bool clamp) {
    // The four products summed in 32 bits (|sum| <= 4 * 255 * 255: exact), then c added with
    // 32-bit wrap-around and, with clamp, saturated where the addition overflowed (operands of
    // one sign, result of the other). No 64-bit sum: accumulating c + products in int64, the
    // nvcc 13 build (-O2, sm_90) wrapped the signed sums at 32 bits before the clamp saw them
    // (the clamp cases failed on the H100).
    int32_t products = 0;
    for (int j = 0; j < 4; ++j) {
        const uint32_t x = (a >> (8 * j)) & 0xffu, y = (b >> (8 * j)) & 0xffu;
        const int32_t xv = a_signed ? (int32_t)(int8_t)x : (int32_t)x;
        const int32_t yv = b_signed ? (int32_t)(int8_t)y : (int32_t)y;
        products += xv * yv;
    }
    const int32_t wrapped = (int32_t)((uint32_t)c + (uint32_t)products);
    if (clamp && ((c ^ wrapped) & (products ^ wrapped)) < 0) return c < 0 ? INT32_MIN : INT32_MAX;
    return wrapped;
}

// Element decoders: field bits -> float (exact).
struct candle_emu_dec_f16 {
    CANDLE_EMU_HDI float operator()(uint32_t x) const { return candle_emu_f16_bits_to_float(x); }
};
struct candle_emu_dec_bf16 {
    CANDLE_EMU_HDI float operator()(uint32_t x) const { return candle_emu_bf16_bits_to_float(x); }
};
struct candle_emu_dec_i8 {
    bool is_signed;
    CANDLE_EMU_HDI float operator()(uint32_t x) const { return is_signed ? (float)(int8_t)x : (float)x; }
};

// ---------------------------------------------------------------------------
// 4. One lane's share of a WMMA, from the layout: dot[v] = sum over k = 0..15
// of A[m_v][k] * B[k][n] for the lane's C/D elements v = 0..7 (m_v =
// cd_m(lane/16, v), n = lane % 16), products exact, summed in double in k
// order. fetch_a(w, src) / fetch_b(w, src) return 32-bit word w of the A / B
// registers of lane src: a shuffle on the GPU, an array read in the CPU model
// (candle_emu_lanes_fetch), so both run this same code.
// ---------------------------------------------------------------------------
template <int GFX, int BITS, class FetchA, class FetchB, class DecA, class DecB>
CANDLE_EMU_HDI void candle_emu_wmma_dots(int lane, const FetchA& fetch_a, const FetchB& fetch_b, const DecA& dec_a,
                                         const DecB& dec_b, double (&dot)[8]) {
    using L = candle_emu_wmma_layout<GFX>;
    constexpr int per_word = 32 / BITS;
    constexpr int words = L::ab_elems() / per_word;     // 32-bit words of A (or B) per lane
    constexpr int halves = L::ab_replicated ? 1 : 2;    // lane halves holding distinct K
    static_assert(L::ab_elems() * halves == 16, "K must be 16");
    const int h = lane / 16, n = lane % 16;

    float b_col[16];  // B[k][n], k = 0..15: lanes n (and n + 16 on gfx12)
CANDLE_EMU_UNROLL
    for (int c = 0; c < halves; ++c) {
CANDLE_EMU_UNROLL
        for (int w = 0; w < words; ++w) {
            const uint32_t x = fetch_b(w, n + 16 * c);
CANDLE_EMU_UNROLL
            for (int j = 0; j < per_word; ++j) b_col[L::ab_k(BITS, c, w * per_word + j)] = dec_b(candle_emu_field<BITS>(x, j));
        }
    }
CANDLE_EMU_UNROLL
    for (int v = 0; v < 8; ++v) {
        const int m = L::cd_m(h, v);
        float a_row[16];  // A[m][k]: lanes m (and m + 16 on gfx12)
CANDLE_EMU_UNROLL
        for (int c = 0; c < halves; ++c) {
CANDLE_EMU_UNROLL
            for (int w = 0; w < words; ++w) {
                const uint32_t x = fetch_a(w, m + 16 * c);
CANDLE_EMU_UNROLL
                for (int j = 0; j < per_word; ++j) a_row[L::ab_k(BITS, c, w * per_word + j)] = dec_a(candle_emu_field<BITS>(x, j));
            }
        }
        double s = 0.0;
CANDLE_EMU_UNROLL
        for (int k = 0; k < 16; ++k) s += (double)a_row[k] * (double)b_col[k];
        dot[v] = s;
    }
}

// The CPU model's fetch: words[src * nwords + w].
struct candle_emu_lanes_fetch {
    const uint32_t* words;
    int nwords;
    CANDLE_EMU_HDI uint32_t operator()(int w, int src) const { return words[src * nwords + w]; }
};

// ===========================================================================
// Part 2: the device emulation (nvcc)
// ===========================================================================
#if defined(__CUDACC__)

// ---------------------------------------------------------------------------
// _Float16 and __bf16, the element types of the kernels' AMD vector aliases.
// Macros, not typedefs: g++ (12 and 13, x86-64) knows _Float16 as a built-in
// type in C++ and g++ 13 also __bf16, so `typedef __half _Float16;` would be an
// error in nvcc's host pass. A macro renames the token in the preprocessor,
// before either compiler sees it, in the host and the device pass alike, so
// both agree on the types (same size and bits: IEEE binary16 / bfloat16).
// Everything that might spell these names itself (libstdc++ does only for
// C++23's std::float16_t / bfloat16_t; the CUDA fp16/bf16 headers) is included
// at the top of this file, before the macros.
// ---------------------------------------------------------------------------
#define _Float16 __half
#define __bf16 __nv_bfloat16

// The calling thread's lane in its warp: CUDA groups the threads of a block
// into warps by consecutive linear thread ids (x fastest, then y, then z), so
// the lane is that id mod 32, the %laneid that __shfl_sync's source lane names.
static __device__ __forceinline__ int candle_emu_lane_id() {
    return (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
}

// The GPU's fetch: word w of lane src, by a full-warp shuffle.
template <int NW>
struct candle_emu_shfl_fetch {
    const uint32_t (&words)[NW];
    CANDLE_EMU_HDI uint32_t operator()(int w, int src) const {
#if defined(__CUDA_ARCH__)
        return __shfl_sync(0xffffffffu, words[w], src);
#else
        return (void)src, words[w];  // never used on the host
#endif
    }
};

// RDNA3: lanes 16-31 must hold the A and B data of lanes 0-15; trap if not.
template <int NW>
static __device__ __forceinline__ void candle_emu_check_replicated(const uint32_t (&a)[NW], const uint32_t (&b)[NW],
                                                                   const char* name) {
#if defined(__CUDA_ARCH__)
    bool differs = false;
#pragma unroll
    for (int w = 0; w < NW; ++w) {
        differs |= __shfl_xor_sync(0xffffffffu, a[w], 16) != a[w];
        differs |= __shfl_xor_sync(0xffffffffu, b[w], 16) != b[w];
    }
    if (__any_sync(0xffffffffu, differs)) {
        if (candle_emu_lane_id() == 0)
            printf("amd_gfx_emulation: %s: the A/B data of lanes 16-31 differ from lanes 0-15; RDNA3 wave32 WMMA "
                   "holds each row/column in both, and what it does otherwise is not documented\n",
                   name);
        __trap();
    }
#endif
}

template <int GFX, int BITS, class V, class DecA, class DecB>
static __device__ __forceinline__ void candle_emu_dev_dots(const V& a, const V& b, const DecA& dec_a,
                                                           const DecB& dec_b, double (&dot)[8], const char* name) {
    constexpr int NW = (int)(sizeof(V) / 4);
    static_assert(NW * 32 / BITS == candle_emu_wmma_layout<GFX>::ab_elems(), "A/B operand of the wrong size");
    uint32_t aw[NW], bw[NW];
    memcpy(aw, &a, sizeof(V));
    memcpy(bw, &b, sizeof(V));
    if constexpr (candle_emu_wmma_layout<GFX>::ab_replicated) candle_emu_check_replicated<NW>(aw, bw, name);
    candle_emu_wmma_dots<GFX, BITS>(candle_emu_lane_id(), candle_emu_shfl_fetch<NW>{aw}, candle_emu_shfl_fetch<NW>{bw},
                                    dec_a, dec_b, dot);
}

template <int GFX, class V, class Dec>
static __device__ __forceinline__ candle_emu_vector<float, 8> candle_emu_dev_wmma_f32(
    const V& a, const V& b, const candle_emu_vector<float, 8>& c, const Dec& dec, const char* name) {
    double dot[8];
    candle_emu_dev_dots<GFX, 16>(a, b, dec, dec, dot, name);
    candle_emu_vector<float, 8> d;
#pragma unroll
    for (int v = 0; v < 8; ++v) d[v] = (float)(dot[v] + (double)c[v]);
    return d;
}

template <int GFX, class V>
static __device__ __forceinline__ candle_emu_vector<int, 8> candle_emu_dev_wmma_iu8(
    bool a_signed, const V& a, bool b_signed, const V& b, const candle_emu_vector<int, 8>& c, bool clamp,
    const char* name) {
    double dot[8];  // |dot| <= 16 * 255 * 255: exact
    candle_emu_dev_dots<GFX, 8>(a, b, candle_emu_dec_i8{a_signed}, candle_emu_dec_i8{b_signed}, dot, name);
    candle_emu_vector<int, 8> d;
#pragma unroll
    for (int v = 0; v < 8; ++v) d[v] = candle_emu_i32_result((int64_t)dot[v] + (int64_t)c[v], clamp);
    return d;
}

// ---- gfx11 (RDNA3) -----------------------------------------------------------
static __device__ __forceinline__ candle_emu_vector<float, 8> candle_emu_wmma_f32_16x16x16_f16_w32(
    const candle_emu_vector<__half, 16>& a, const candle_emu_vector<__half, 16>& b,
    const candle_emu_vector<float, 8>& c) {
    return candle_emu_dev_wmma_f32<11>(a, b, c, candle_emu_dec_f16{}, "wmma_f32_16x16x16_f16_w32");
}
static __device__ __forceinline__ candle_emu_vector<float, 8> candle_emu_wmma_f32_16x16x16_bf16_w32(
    const candle_emu_vector<__nv_bfloat16, 16>& a, const candle_emu_vector<__nv_bfloat16, 16>& b,
    const candle_emu_vector<float, 8>& c) {
    return candle_emu_dev_wmma_f32<11>(a, b, c, candle_emu_dec_bf16{}, "wmma_f32_16x16x16_bf16_w32");
}
static __device__ __forceinline__ candle_emu_vector<int, 8> candle_emu_wmma_i32_16x16x16_iu8_w32(
    bool a_signed, const candle_emu_vector<int, 4>& a, bool b_signed, const candle_emu_vector<int, 4>& b,
    const candle_emu_vector<int, 8>& c, bool clamp) {
    return candle_emu_dev_wmma_iu8<11>(a_signed, a, b_signed, b, c, clamp, "wmma_i32_16x16x16_iu8_w32");
}

// ---- gfx12 (RDNA4) -----------------------------------------------------------
static __device__ __forceinline__ candle_emu_vector<float, 8> candle_emu_wmma_f32_16x16x16_f16_w32_gfx12(
    const candle_emu_vector<__half, 8>& a, const candle_emu_vector<__half, 8>& b,
    const candle_emu_vector<float, 8>& c) {
    return candle_emu_dev_wmma_f32<12>(a, b, c, candle_emu_dec_f16{}, "wmma_f32_16x16x16_f16_w32_gfx12");
}
static __device__ __forceinline__ candle_emu_vector<float, 8> candle_emu_wmma_f32_16x16x16_bf16_w32_gfx12(
    const candle_emu_vector<__nv_bfloat16, 8>& a, const candle_emu_vector<__nv_bfloat16, 8>& b,
    const candle_emu_vector<float, 8>& c) {
    return candle_emu_dev_wmma_f32<12>(a, b, c, candle_emu_dec_bf16{}, "wmma_f32_16x16x16_bf16_w32_gfx12");
}
static __device__ __forceinline__ candle_emu_vector<__half, 8> candle_emu_wmma_f16_16x16x16_f16_w32_gfx12(
    const candle_emu_vector<__half, 8>& a, const candle_emu_vector<__half, 8>& b,
    const candle_emu_vector<__half, 8>& c) {
    double dot[8];
    candle_emu_dev_dots<12, 16>(a, b, candle_emu_dec_f16{}, candle_emu_dec_f16{}, dot,
                                "wmma_f16_16x16x16_f16_w32_gfx12");
    candle_emu_vector<__half, 8> d;
#pragma unroll
    for (int v = 0; v < 8; ++v) {
        const double cv = candle_emu_f16_bits_to_float(__half_as_ushort(c[v]));
        d[v] = __ushort_as_half(candle_emu_f64_to_f16_bits(dot[v] + cv));
    }
    return d;
}
static __device__ __forceinline__ candle_emu_vector<int, 8> candle_emu_wmma_i32_16x16x16_iu8_w32_gfx12(
    bool a_signed, const candle_emu_vector<int, 2>& a, bool b_signed, const candle_emu_vector<int, 2>& b,
    const candle_emu_vector<int, 8>& c, bool clamp) {
    return candle_emu_dev_wmma_iu8<12>(a_signed, a, b_signed, b, c, clamp, "wmma_i32_16x16x16_iu8_w32_gfx12");
}

// ---- byte permute, dot4 -------------------------------------------------------
static __device__ __forceinline__ unsigned int candle_emu_perm(unsigned int src0, unsigned int src1,
                                                               unsigned int sel) {
    return candle_emu_ref_perm(src0, src1, sel);
}
static __device__ __forceinline__ int candle_emu_sdot4(int a, int b, int c, bool clamp) {
    return candle_emu_ref_dot4(true, (uint32_t)a, true, (uint32_t)b, c, clamp);
}
static __device__ __forceinline__ int candle_emu_sudot4(bool a_signed, int a, bool b_signed, int b, int c,
                                                        bool clamp) {
    return candle_emu_ref_dot4(a_signed, (uint32_t)a, b_signed, (uint32_t)b, c, clamp);
}

// v_mov_b32 with DPP on a 32-lane warp (two DPP16 rows): the source lane from ../dpp16.h,
// fetched by a full-warp shuffle; past the row, 0 with bound_ctrl, else the lane's own value
// (the instruction leaves the lane unwritten). Other controls and masks trap.
static __device__ __forceinline__ int candle_emu_mov_dpp(int v, int ctrl, int row_mask, int bank_mask, bool bound_ctrl) {
    const int lane = candle_emu_lane_id(), src = candle_dpp16_source(lane, ctrl);
    if (row_mask != 0xf || bank_mask != 0xf || src == kDpp16NotEmulated) {
        printf("candle_emu_mov_dpp: DPP_CTRL 0x%x with masks 0x%x/0x%x is not emulated\n", ctrl, row_mask, bank_mask);
        __trap();
    }
    const int r = __shfl_sync(0xffffffffu, v, src < 0 ? lane : src);
    return src < 0 ? (bound_ctrl ? 0 : v) : r;
}

#define __builtin_amdgcn_mov_dpp(...) candle_emu_mov_dpp(__VA_ARGS__)
#define __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(...) candle_emu_wmma_f32_16x16x16_f16_w32(__VA_ARGS__)
#define __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(...) candle_emu_wmma_f32_16x16x16_bf16_w32(__VA_ARGS__)
#define __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(...) candle_emu_wmma_i32_16x16x16_iu8_w32(__VA_ARGS__)
#define __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(...) candle_emu_wmma_f32_16x16x16_f16_w32_gfx12(__VA_ARGS__)
#define __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(...) candle_emu_wmma_f32_16x16x16_bf16_w32_gfx12(__VA_ARGS__)
#define __builtin_amdgcn_wmma_f16_16x16x16_f16_w32_gfx12(...) candle_emu_wmma_f16_16x16x16_f16_w32_gfx12(__VA_ARGS__)
#define __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(...) candle_emu_wmma_i32_16x16x16_iu8_w32_gfx12(__VA_ARGS__)
#define __builtin_amdgcn_perm(...) candle_emu_perm(__VA_ARGS__)
#define __builtin_amdgcn_sdot4(...) candle_emu_sdot4(__VA_ARGS__)
#define __builtin_amdgcn_sudot4(...) candle_emu_sudot4(__VA_ARGS__)

#endif  // __CUDACC__

#endif  // CANDLE_AMD_GFX_EMULATION_H
