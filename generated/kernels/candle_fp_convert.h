// Written by `cargo xtask regen` from translator/compat/candle_fp_convert.h (candle-rocm's own code). Do not edit here.
// candle_fp_convert.h - bit-exact, portable number-format helpers for the
// HIP translation of Candle's GPU kernels.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Everything here is plain C++ on integer bit patterns: it needs only
// <stdint.h>, <string.h> and <math.h>, so the same code runs on the GPU (under
// hipcc, CANDLE_HD adds __host__ __device__) and in a CPU unit test built with
// g++ (tests/compat/fp_convert_test.cpp).
//
// Formats:
//   bf16      1 sign, 8 exponent (bias 127), 7 fraction bits; IEEE-like.
//   fp8 e4m3  OCP "E4M3FN" (Candle's F8E4M3, the `float8` crate): 1 sign,
//             4 exponent (bias 7), 3 fraction bits, subnormals, NO infinities,
//             NaN encodings 0x7F and 0xFF only, largest finite 448 (0x7E).
//             This is not AMD's "FNUZ" variant (bias 8, NaN 0x80).
//
// Rounding is always round-to-nearest, ties-to-even (RNE). The fp8 encoders
// follow the NVIDIA CUDA toolkit's satfinite constructors bit for bit:
//   * finite values whose rounded magnitude exceeds 448, and +-inf, give +-448;
//   * from float (and from anything converted through float) every NaN gives
//     0x7F (the sign of a NaN is dropped);
//   * from double a NaN keeps its sign (0x7F or 0xFF), as CUDA's double path does;
//   * zero and underflow keep the sign (-0 gives 0x80).
#pragma once

#include <stdint.h>
#include <string.h>
#include <math.h>

#if defined(__HIPCC__)
#define CANDLE_HD __host__ __device__
#else
#define CANDLE_HD
#endif

// ---------------------------------------------------------------------------
// Bit casts
// ---------------------------------------------------------------------------
CANDLE_HD inline uint32_t candle_f32_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
}
CANDLE_HD inline float candle_f32_from_bits(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
}
CANDLE_HD inline uint64_t candle_f64_bits(double d) {
    uint64_t u;
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
}

// ---------------------------------------------------------------------------
// Generic RNE rounding of a positive magnitude to a small binary format.
//
// The value is sig * 2^(exp - top), where bit `top` is the leading one of sig
// (so the value lies in [2^exp, 2^(exp+1))). The target format has `mbits`
// fraction bits and exponent bias `bias`. Returns the magnitude encoding
// (biased exponent << mbits | fraction), rounded to nearest even, with
// subnormals. A carry out of the fraction correctly bumps the exponent, so a
// result past the largest finite encoding signals overflow to the caller.
// ---------------------------------------------------------------------------
CANDLE_HD inline uint32_t candle_round_magnitude(uint64_t sig, int top, int exp, int mbits, int bias) {
    const int biased = exp + bias;
    int shift;
    uint32_t base;
    if (biased >= 1) { // normal: the leading one becomes the implicit bit
        shift = top - mbits;
        base = (uint32_t)(biased - 1) << mbits;
    } else { // subnormal: shift further right, exponent field 0
        shift = top - mbits + (1 - biased);
        base = 0;
    }
    if (shift <= 0) return base + (uint32_t)(sig << (-shift)); // exact (small integers)
    if (shift > 62) return 0; // below half of the smallest subnormal
    const uint64_t q = sig >> shift;
    const uint64_t rem = sig & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    const uint64_t up = (rem > half || (rem == half && (q & 1))) ? 1 : 0;
    return base + (uint32_t)(q + up);
}

// Position of the leading one of a nonzero 64-bit integer.
CANDLE_HD inline int candle_top_bit(uint64_t v) { return 63 - __builtin_clzll(v); }

// ---------------------------------------------------------------------------
// bf16
// ---------------------------------------------------------------------------
#define CANDLE_BF16_CANONICAL_NAN 0x7FFFu

CANDLE_HD inline float candle_bf16_bits_to_f32(uint16_t b) { return candle_f32_from_bits((uint32_t)b << 16); }

// float -> bf16, RNE; NaN -> canonical 0x7FFF; overflow rounds to +-inf.
// A platform layer may name a native conversion with exactly these results for
// the device pass by defining CANDLE_PLATFORM_F32_TO_BF16_BITS(f) before this
// header (the HIP-on-NVIDIA headers of hip-on-cuda do, for sm_80+). HIP on AMD
// defines none: CDNA2/CDNA3 and RDNA2/RDNA3 have no such instruction.
CANDLE_HD inline uint16_t candle_f32_to_bf16_bits(float f) {
#if defined(CANDLE_PLATFORM_F32_TO_BF16_BITS)
    return CANDLE_PLATFORM_F32_TO_BF16_BITS(f);
#endif
    const uint32_t u = candle_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)CANDLE_BF16_CANONICAL_NAN;
    // Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even.
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// double -> bf16 in ONE rounding step (rounding through float first can be
// off by one ulp at ties). NaN -> 0x7FFF.
CANDLE_HD inline uint16_t candle_f64_to_bf16_bits(double d) {
    const uint64_t u = candle_f64_bits(d);
    const uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    const uint64_t a = u & 0x7FFFFFFFFFFFFFFFull;
    if (a > 0x7FF0000000000000ull) return (uint16_t)CANDLE_BF16_CANONICAL_NAN;
    if (a == 0x7FF0000000000000ull) return (uint16_t)(sign | 0x7F80u);
    const int e = (int)(a >> 52);
    if (e == 0) return sign; // zero or double subnormal: far below bf16's range
    uint32_t m = candle_round_magnitude((a & 0xFFFFFFFFFFFFFull) | (1ull << 52), 52, e - 1023, 7, 127);
    if (m > 0x7F80u) m = 0x7F80u; // overflow -> inf
    return (uint16_t)(sign | m);
}

// 64-bit integers -> bf16 in one rounding step.
CANDLE_HD inline uint16_t candle_u64_to_bf16_bits(uint64_t v) {
    if (v == 0) return 0;
    const int top = candle_top_bit(v);
    return (uint16_t)candle_round_magnitude(v, top, top, 7, 127);
}
CANDLE_HD inline uint16_t candle_i64_to_bf16_bits(int64_t v) {
    const uint64_t mag = v < 0 ? 0ull - (uint64_t)v : (uint64_t)v;
    return (uint16_t)((v < 0 ? 0x8000u : 0u) | candle_u64_to_bf16_bits(mag));
}

// ---------------------------------------------------------------------------
// fp8 e4m3 (OCP E4M3FN)
// ---------------------------------------------------------------------------
#define CANDLE_FP8_E4M3_MAX_BITS 0x7Eu // 448
#define CANDLE_FP8_E4M3_NAN_BITS 0x7Fu

CANDLE_HD inline bool candle_fp8_e4m3_is_nan(uint8_t b) { return (b & 0x7Fu) == 0x7Fu; }

// float -> e4m3, RNE; any NaN -> 0x7F. `satfinite` (CUDA's __NV_SATFINITE): values beyond
// +-448 and +-inf saturate to +-448; else (__NV_NOSAT) they give NaN (0x7F | sign).
CANDLE_HD inline uint8_t candle_f32_to_fp8_e4m3_mode(float f, bool satfinite) {
    const uint32_t u = candle_f32_bits(f);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint8_t)CANDLE_FP8_E4M3_NAN_BITS;
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    const uint8_t overflow = satfinite ? CANDLE_FP8_E4M3_MAX_BITS : CANDLE_FP8_E4M3_NAN_BITS;
    if (a == 0x7F800000u) return (uint8_t)(sign | overflow);
    const int e = (int)(a >> 23);
    if (e == 0) return sign; // zero or float subnormal (< 2^-126): rounds to 0
    const uint32_t m = candle_round_magnitude((a & 0x7FFFFFu) | 0x800000u, 23, e - 127, 3, 7);
    return (uint8_t)(sign | (m > CANDLE_FP8_E4M3_MAX_BITS ? overflow : m));
}

// float -> e4m3, RNE, saturating to +-448; any NaN -> 0x7F.
CANDLE_HD inline uint8_t candle_f32_to_fp8_e4m3(float f) { return candle_f32_to_fp8_e4m3_mode(f, true); }

// e5m2 -> IEEE binary16 bits: the upper byte of a binary16, exact; NaN -> the canonical
// f16 NaN 0x7FFF (sign and payload dropped), as CUDA does (checked on an H100/H200).
CANDLE_HD inline uint16_t candle_fp8_e5m2_to_f16_bits(uint8_t b) {
    return (b & 0x7Fu) > 0x7Cu ? (uint16_t)0x7FFFu : (uint16_t)(b << 8);
}

// float -> fp8 e5m2 (IEEE-like: bias 15, infinities 0x7C, NaN 0x7F, max 57344 = 0x7B), RNE;
// any NaN -> 0x7F. `satfinite`: beyond +-57344 and +-inf saturate to it; else they give +-inf.
#define CANDLE_FP8_E5M2_MAX_BITS 0x7Bu
CANDLE_HD inline uint8_t candle_f32_to_fp8_e5m2_mode(float f, bool satfinite) {
    const uint32_t u = candle_f32_bits(f);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return 0x7Fu;
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    const uint8_t overflow = satfinite ? CANDLE_FP8_E5M2_MAX_BITS : 0x7Cu;
    if (a == 0x7F800000u) return (uint8_t)(sign | overflow);
    const int e = (int)(a >> 23);
    if (e == 0) return sign;
    const uint32_t m = candle_round_magnitude((a & 0x7FFFFFu) | 0x800000u, 23, e - 127, 2, 15);
    return (uint8_t)(sign | (m > CANDLE_FP8_E5M2_MAX_BITS ? overflow : m));
}

// double -> e4m3 in one rounding step, saturating; NaN -> 0x7F | sign.
CANDLE_HD inline uint8_t candle_f64_to_fp8_e4m3(double d) {
    const uint64_t u = candle_f64_bits(d);
    const uint8_t sign = (uint8_t)((u >> 56) & 0x80u);
    const uint64_t a = u & 0x7FFFFFFFFFFFFFFFull;
    if (a > 0x7FF0000000000000ull) return (uint8_t)(sign | CANDLE_FP8_E4M3_NAN_BITS);
    if (a == 0x7FF0000000000000ull) return (uint8_t)(sign | CANDLE_FP8_E4M3_MAX_BITS);
    const int e = (int)(a >> 52);
    if (e == 0) return sign;
    uint32_t m = candle_round_magnitude((a & 0xFFFFFFFFFFFFFull) | (1ull << 52), 52, e - 1023, 3, 7);
    if (m > CANDLE_FP8_E4M3_MAX_BITS) m = CANDLE_FP8_E4M3_MAX_BITS;
    return (uint8_t)(sign | m);
}

// e4m3 -> IEEE binary16 bits. Exact: every e4m3 value is a normal f16.
// NaN -> canonical f16 NaN 0x7FFF (sign dropped), as CUDA does.
CANDLE_HD inline uint16_t candle_fp8_e4m3_to_f16_bits(uint8_t b) {
    if (candle_fp8_e4m3_is_nan(b)) return 0x7FFFu;
    const uint16_t sign = (uint16_t)((b & 0x80u) << 8);
    const uint32_t e = (b >> 3) & 0xFu;
    uint32_t m = b & 0x7u;
    if (e != 0) return (uint16_t)(sign | ((e + 8u) << 10) | (m << 7)); // rebias 7 -> 15
    if (m == 0) return sign;                                           // +-0
    // Subnormal m * 2^-9: normalise (m = 1.f * 2^p, p in 0..2).
    const uint32_t p = m >= 4 ? 2u : (m >= 2 ? 1u : 0u);
    m = (m - (1u << p)) << (10 - p); // fraction bits after the leading one
    return (uint16_t)(sign | ((p + 6u) << 10) | m); // exponent p - 9 + 15
}

// e4m3 -> float, exact. NaN -> positive quiet NaN 0x7FFFFFFF.
CANDLE_HD inline float candle_fp8_e4m3_to_f32(uint8_t b) {
    if (candle_fp8_e4m3_is_nan(b)) return candle_f32_from_bits(0x7FFFFFFFu);
    const uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    const uint32_t e = (b >> 3) & 0xFu;
    const uint32_t m = b & 0x7u;
    if (e != 0) return candle_f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
    // Subnormal or zero: m * 2^-9 is exact in float arithmetic.
    const float v = (float)m * (1.0f / 512.0f);
    return (b & 0x80u) ? -v : v;
}

// IEEE binary16 bits -> float, exact. NaN -> positive quiet NaN 0x7FFFFFFF, as NVIDIA's
// conversions give (and candle_fp8_e4m3_to_f32).
CANDLE_HD inline float candle_f16_bits_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1Fu;
    const uint32_t m = h & 0x3FFu;
    if (e == 0x1Fu) return candle_f32_from_bits(m ? 0x7FFFFFFFu : (sign | 0x7F800000u));
    if (e != 0) return candle_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    // Subnormal or zero: m * 2^-24 is exact in float arithmetic.
    const float v = (float)m * (1.0f / 16777216.0f);
    return sign ? -v : v;
}

// e5m2 -> float, exact (through its binary16 bits). NaN -> 0x7FFFFFFF.
CANDLE_HD inline float candle_fp8_e5m2_to_f32(uint8_t b) { return candle_f16_bits_to_f32(candle_fp8_e5m2_to_f16_bits(b)); }

// ---------------------------------------------------------------------------
// Per-byte integer SIMD, exact per NVIDIA's documented semantics
// (all lanes are bytes of a 32-bit word; results wrap modulo 2^32).
// ---------------------------------------------------------------------------

// Device architectures with a native signed byte dot product (same wrap-around
// result as the portable loop below, which every other target uses).
#if defined(__HIP_DEVICE_COMPILE__) &&                                                              \
    (defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) ||    \
     defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__) || defined(__gfx1011__) ||   \
     defined(__gfx1012__) || defined(__gfx1030__) || defined(__gfx1031__) || defined(__gfx1032__) || \
     defined(__gfx1033__) || defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__))
#define CANDLE_DP4A_SDOT4 1 // v_dot4_i32_i8
#elif defined(__HIP_DEVICE_COMPILE__) &&                                                            \
    (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
     defined(__gfx1150__) || defined(__gfx1151__) || defined(__gfx1200__) || defined(__gfx1201__))
#define CANDLE_DP4A_SUDOT4 1 // v_dot4_i32_iu8 with both operands signed
#endif

// A platform layer may supply native byte-SIMD instructions for the device
// pass by defining CANDLE_PLATFORM_DP4A(a, b, c) (both signednesses),
// CANDLE_PLATFORM_VSUB4, CANDLE_PLATFORM_VSUBSS4 and CANDLE_PLATFORM_VCMPNE4
// (a, b) before this header; each must give exactly the portable result. HIP
// on AMD defines none (the gfx builtins above serve); the HIP-on-NVIDIA
// headers of hip-on-cuda map them to the GPU's own instructions.

// Signed 8-bit dot product of the four bytes of a and b, plus c.
CANDLE_HD inline int candle_dp4a(int a, int b, int c) {
#if defined(CANDLE_DP4A_SDOT4)
    return __builtin_amdgcn_sdot4(a, b, c, false);
#elif defined(CANDLE_DP4A_SUDOT4)
    return __builtin_amdgcn_sudot4(true, a, true, b, c, false);
#elif defined(CANDLE_PLATFORM_DP4A)
    return CANDLE_PLATFORM_DP4A(a, b, c);
#else
    int sum = 0;
    for (int i = 0; i < 4; ++i) {
        const int x = (int)(int8_t)(uint8_t)((uint32_t)a >> (8 * i));
        const int y = (int)(int8_t)(uint8_t)((uint32_t)b >> (8 * i));
        sum += x * y; // |sum| <= 4 * 128 * 128: no overflow
    }
    return (int)((uint32_t)c + (uint32_t)sum);
#endif
}
// Unsigned 8-bit dot product plus c.
CANDLE_HD inline unsigned int candle_dp4a(unsigned int a, unsigned int b, unsigned int c) {
#if defined(CANDLE_PLATFORM_DP4A)
    return CANDLE_PLATFORM_DP4A(a, b, c);
#else
    unsigned int sum = 0;
    for (int i = 0; i < 4; ++i) sum += ((a >> (8 * i)) & 0xFFu) * ((b >> (8 * i)) & 0xFFu);
    return c + sum;
#endif
}

// Per-byte a - b, wrapping modulo 256 (no borrow between bytes).
CANDLE_HD inline unsigned int candle_vsub4(unsigned int a, unsigned int b) {
#if defined(CANDLE_PLATFORM_VSUB4)
    return CANDLE_PLATFORM_VSUB4(a, b);
#endif
    // Set each byte's top bit of a and clear it in b so no byte can borrow
    // from its neighbour, then fix the top bits up with a xor.
    return ((a | 0x80808080u) - (b & 0x7F7F7F7Fu)) ^ ((a ^ ~b) & 0x80808080u);
}

// Per-byte signed a - b, saturated to [-128, 127].
CANDLE_HD inline unsigned int candle_vsubss4(unsigned int a, unsigned int b) {
#if defined(CANDLE_PLATFORM_VSUBSS4)
    return CANDLE_PLATFORM_VSUBSS4(a, b);
#endif
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) {
        int d = (int)(int8_t)(uint8_t)(a >> (8 * i)) - (int)(int8_t)(uint8_t)(b >> (8 * i));
        d = d > 127 ? 127 : (d < -128 ? -128 : d);
        r |= ((unsigned int)d & 0xFFu) << (8 * i);
    }
    return r;
}

// Per byte: 0xFF where the bytes of a and b differ, 0x00 where equal.
CANDLE_HD inline unsigned int candle_vcmpne4(unsigned int a, unsigned int b) {
#if defined(CANDLE_PLATFORM_VCMPNE4)
    return CANDLE_PLATFORM_VCMPNE4(a, b);
#endif
    const unsigned int x = a ^ b;
    // Top bit of each byte := (byte != 0), computed without inter-byte carries.
    const unsigned int t = (((x & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | x) & 0x80808080u;
    return (t >> 7) * 0xFFu;
}
