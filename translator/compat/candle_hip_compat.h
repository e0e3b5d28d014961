// candle_hip_compat.h - the prelude that every translated Candle kernel file
// includes first.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The translator renames the NVIDIA-specific types and intrinsics used by
// Candle's kernels to the `candle_*` names defined here (see the IDENTIFIERS
// table in translator/src/kernels/mapping.rs). This header never defines a
// HIP or CUDA name: everything it adds is spelled `candle_*` / `CANDLE_*`, so
// it compiles unchanged with Debian's HIP 5.2.3 (which has no bf16 header)
// and with ROCm 6.x / 7.x (whose headers provide their own __hmax, bf16
// types, ...). It deliberately does not include HIP's bf16 or fp8 headers.
//
// Contents
//   1. candle_bf16, candle_bf16x2         bfloat16 scalar / pair
//   2. candle_fp8_e4m3, candle_fp8_e5m2   OCP fp8 E4M3FN (never AMD's FNUZ) and E5M2
//   3. half/bf16 helpers                  candle_hmax, candle_hisnan, candle_hsqrt, ...
//   4. integer SIMD                       candle_dp4a, candle_vsub4, ... (candle_fp_convert.h)
//   5. logical 32-lane warp reductions    candle_reduce_{add,min,max}_w32,
//      and shuffles that also move 16-bit floats: candle_shfl, candle_shfl_xor, ...;
//      CANDLE_ROW_WAVE, the wavefront the row kernels (softmax, norms) reduce over
//   6. candle_trap
//   7. candle_atomic_add                  atomicAdd that also takes __half / candle_bf16
//   8. candle_hip_overloads.h             min/max/atomicMax/atomicMin/... overloads HIP lacks
//   9. candle_elementwise.h               the contiguous elementwise loops on 16-byte packs
//
// The bit-level conversions live in candle_fp_convert.h (plain C++, unit
// tested on the CPU by tests/compat/fp_convert_test.cpp).
#pragma once

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "candle_fp_convert.h"

// HIP's amd_device_functions.h leaves two macros of its own defined, with names a kernel may
// use for itself (flashinfer's `constexpr int MASK1 = ...`); CUDA's headers define neither.
// Their uses are inside that header's functions, already expanded.
#undef MASK1
#undef MASK2

#define CANDLE_HDI __host__ __device__ __forceinline__
#define CANDLE_DI __device__ __forceinline__
// CUDA's __grid_constant__ (a kernel parameter that stays in constant memory even when its
// address is taken): HIP's kernel arguments are read-only already, so it means nothing there
#ifndef __grid_constant__
#define __grid_constant__
#endif

// ===========================================================================
// 1. bfloat16
// ===========================================================================
//
// Same layout as CUDA's bf16 type (2 bytes, align 2, trivially copyable and
// trivially default-constructible, so it can live in __shared__ arrays and be
// reinterpret_cast from float4 loads). Conversions mirror CUDA's:
//   * implicit from float / double / integers, round to nearest even, each in
//     a single rounding step; NaN becomes the canonical NaN 0x7FFF;
//   * implicit to float (exact). Casts to double or integers go through float
//     (float -> integer uses the GPU's saturating conversion, NaN -> 0);
//   * explicit from __half (through float, exact then RNE).
// Arithmetic is done in float and rounded back (RNE). For + - * / this equals
// a correctly rounded bf16 operation: float keeps more than 2*8+2 significant
// bits, so the double rounding is harmless.
struct alignas(2) candle_bf16 {
    uint16_t bits;

    candle_bf16() = default;
    CANDLE_HDI candle_bf16(float f) : bits(candle_f32_to_bf16_bits(f)) {}
    CANDLE_HDI candle_bf16(double d) : bits(candle_f64_to_bf16_bits(d)) {}
    // int-like types narrower than int (bool, char, short, ...) promote to int.
    CANDLE_HDI candle_bf16(int v) : bits(candle_i64_to_bf16_bits(v)) {}
    CANDLE_HDI candle_bf16(unsigned int v) : bits(candle_u64_to_bf16_bits(v)) {}
    CANDLE_HDI candle_bf16(long v) : bits(candle_i64_to_bf16_bits((int64_t)v)) {}
    CANDLE_HDI candle_bf16(unsigned long v) : bits(candle_u64_to_bf16_bits((uint64_t)v)) {}
    CANDLE_HDI candle_bf16(long long v) : bits(candle_i64_to_bf16_bits((int64_t)v)) {}
    CANDLE_HDI candle_bf16(unsigned long long v) : bits(candle_u64_to_bf16_bits((uint64_t)v)) {}
    CANDLE_HDI explicit candle_bf16(__half h) : bits(candle_f32_to_bf16_bits(static_cast<float>(h))) {}

    CANDLE_HDI operator float() const { return candle_bf16_bits_to_f32(bits); }

    CANDLE_HDI static candle_bf16 from_bits(uint16_t b) {
        candle_bf16 r;
        r.bits = b;
        return r;
    }

    // One correctly rounded bf16 operation each. A platform layer may name native
    // instructions with exactly these results for the device pass by defining
    // CANDLE_PLATFORM_BF16_ADD / _SUB / _MUL (a_bits, b_bits) -> bits before this
    // header (the HIP-on-NVIDIA headers of hip-on-cuda do, for sm_80+); HIP on AMD
    // defines none.
    CANDLE_HDI static candle_bf16 add_rn(candle_bf16 a, candle_bf16 b) {
#if defined(CANDLE_PLATFORM_BF16_ADD)
        return from_bits(CANDLE_PLATFORM_BF16_ADD(a.bits, b.bits));
#else
        return candle_bf16(float(a) + float(b));
#endif
    }
    CANDLE_HDI static candle_bf16 sub_rn(candle_bf16 a, candle_bf16 b) {
#if defined(CANDLE_PLATFORM_BF16_SUB)
        return from_bits(CANDLE_PLATFORM_BF16_SUB(a.bits, b.bits));
#else
        return candle_bf16(float(a) - float(b));
#endif
    }
    CANDLE_HDI static candle_bf16 mul_rn(candle_bf16 a, candle_bf16 b) {
#if defined(CANDLE_PLATFORM_BF16_MUL)
        return from_bits(CANDLE_PLATFORM_BF16_MUL(a.bits, b.bits));
#else
        return candle_bf16(float(a) * float(b));
#endif
    }

    CANDLE_HDI candle_bf16& operator+=(candle_bf16 o) { return *this = add_rn(*this, o); }
    CANDLE_HDI candle_bf16& operator-=(candle_bf16 o) { return *this = sub_rn(*this, o); }
    CANDLE_HDI candle_bf16& operator*=(candle_bf16 o) { return *this = mul_rn(*this, o); }
    CANDLE_HDI candle_bf16& operator/=(candle_bf16 o) { return *this = candle_bf16(float(*this) / float(o)); }
};

CANDLE_HDI candle_bf16 operator+(candle_bf16 a, candle_bf16 b) { return candle_bf16::add_rn(a, b); }
CANDLE_HDI candle_bf16 operator-(candle_bf16 a, candle_bf16 b) { return candle_bf16::sub_rn(a, b); }
CANDLE_HDI candle_bf16 operator*(candle_bf16 a, candle_bf16 b) { return candle_bf16::mul_rn(a, b); }
CANDLE_HDI candle_bf16 operator/(candle_bf16 a, candle_bf16 b) { return candle_bf16(float(a) / float(b)); }
CANDLE_HDI candle_bf16 operator+(candle_bf16 a) { return a; }
// Negation flips the sign bit; a NaN becomes the canonical NaN 0x7FFF, as on
// NVIDIA GPUs.
CANDLE_HDI candle_bf16 operator-(candle_bf16 a) {
    return candle_bf16::from_bits((a.bits & 0x7FFFu) > 0x7F80u ? (uint16_t)0x7FFFu : (uint16_t)(a.bits ^ 0x8000u));
}

// Comparisons follow IEEE float semantics (NaN compares unordered; != is true).
CANDLE_HDI bool operator==(candle_bf16 a, candle_bf16 b) { return float(a) == float(b); }
CANDLE_HDI bool operator!=(candle_bf16 a, candle_bf16 b) { return float(a) != float(b); }
CANDLE_HDI bool operator<(candle_bf16 a, candle_bf16 b) { return float(a) < float(b); }
CANDLE_HDI bool operator<=(candle_bf16 a, candle_bf16 b) { return float(a) <= float(b); }
CANDLE_HDI bool operator>(candle_bf16 a, candle_bf16 b) { return float(a) > float(b); }
CANDLE_HDI bool operator>=(candle_bf16 a, candle_bf16 b) { return float(a) >= float(b); }

// A pair of bf16 values, laid out like CUDA's bf16 pair type (x low, y high).
struct alignas(4) candle_bf16x2 {
    candle_bf16 x;
    candle_bf16 y;
};

// cuda_bf16.h's raw storage types: the bits, converting to and from the values.
struct candle_bf16_raw {
    unsigned short x;
    candle_bf16_raw() = default;
    CANDLE_HDI candle_bf16_raw(candle_bf16 b) : x(b.bits) {}
    CANDLE_HDI operator candle_bf16() const { return candle_bf16::from_bits(x); }
};
struct candle_bf16x2_raw {
    unsigned short x;
    unsigned short y;
    candle_bf16x2_raw() = default;
    CANDLE_HDI candle_bf16x2_raw(candle_bf16x2 b) : x(b.x.bits), y(b.y.bits) {}
    CANDLE_HDI operator candle_bf16x2() const { return {candle_bf16::from_bits(x), candle_bf16::from_bits(y)}; }
};

static_assert(sizeof(candle_bf16) == 2 && alignof(candle_bf16) == 2, "candle_bf16 layout");
static_assert(sizeof(candle_bf16x2) == 4 && alignof(candle_bf16x2) == 4, "candle_bf16x2 layout");

// Named conversions (the translator maps the toolkit's float<->bf16
// conversion functions, including the _rn variant, onto these).
CANDLE_HDI candle_bf16 candle_float2bf16(float f) { return candle_bf16(f); }
CANDLE_HDI float candle_bf162float(candle_bf16 b) { return float(b); }
CANDLE_HDI candle_bf16 candle_half2bf16(__half h) { return candle_bf16(h); }
CANDLE_HDI __half candle_bf162half(candle_bf16 b) { return __half(float(b)); }
// cuda_bf16.h's pair and integer conversions (each element rounded to nearest even)
CANDLE_HDI candle_bf16 candle_int2bf16(int v) { return candle_bf16((float)v); }
CANDLE_HDI candle_bf16 candle_uint2bf16(unsigned int v) { return candle_bf16((float)v); }
CANDLE_HDI candle_bf16x2 candle_float22bf162(float2 f) { return {candle_bf16(f.x), candle_bf16(f.y)}; }
CANDLE_HDI candle_bf16x2 candle_floats2bf162(float a, float b) { return {candle_bf16(a), candle_bf16(b)}; }
CANDLE_HDI candle_bf16x2 candle_float2bf162(float a) { return {candle_bf16(a), candle_bf16(a)}; }
CANDLE_HDI candle_bf16x2 candle_halves2bf162(candle_bf16 lo, candle_bf16 hi) { return {lo, hi}; }
CANDLE_HDI candle_bf16x2 candle_bf162bf162(candle_bf16 a) { return {a, a}; }
CANDLE_HDI float2 candle_bf1622float2(candle_bf16x2 a) { return make_float2(float(a.x), float(a.y)); }

// the bits of a bf16 and back (cuda_bf16.h's __bfloat16_as_ushort / __ushort_as_bfloat16)
CANDLE_HDI unsigned short candle_bf16_as_ushort(candle_bf16 b) { return b.bits; }
CANDLE_HDI candle_bf16 candle_ushort_as_bf16(unsigned short u) { return candle_bf16::from_bits(u); }

// ===========================================================================
// 2. fp8: OCP E4M3FN (bias 7, no infinities, NaN 0x7F / 0xFF, max 448) and E5M2
// ===========================================================================
//
// The formats' bit-level conversions (candle_fp_convert.h), by format.
struct candle_fp8_e4m3_codec {
    static CANDLE_HDI uint8_t encode(float f) { return candle_f32_to_fp8_e4m3(f); }
    // in one rounding step
    static CANDLE_HDI uint8_t encode(double d) { return candle_f64_to_fp8_e4m3(d); }
    static CANDLE_HDI float decode(uint8_t b) { return candle_fp8_e4m3_to_f32(b); }
    static CANDLE_HDI uint16_t to_f16_bits(uint8_t b) { return candle_fp8_e4m3_to_f16_bits(b); }
};
struct candle_fp8_e5m2_codec {
    static CANDLE_HDI uint8_t encode(float f) { return candle_f32_to_fp8_e5m2_mode(f, true); }
    // through float, as candle_cvt_double_to_fp8 does for e5m2
    static CANDLE_HDI uint8_t encode(double d) { return candle_f32_to_fp8_e5m2_mode((float)d, true); }
    static CANDLE_HDI float decode(uint8_t b) { return candle_fp8_e5m2_to_f32(b); }
    static CANDLE_HDI uint16_t to_f16_bits(uint8_t b) { return candle_fp8_e5m2_to_f16_bits(b); }
};

// cuda_fp8.h's scalar types (__nv_fp8_e4m3, __nv_fp8_e5m2): one byte named __x (kernels read
// `v.__x`); explicit constructors round to nearest even and saturate to the largest finite
// value (CUDA's satfinite mode, as its constructors); explicit conversions to float, double,
// __half and bf16, all exact.
template <class Codec> struct alignas(1) candle_fp8 {
    uint8_t __x;

    candle_fp8() = default;
    CANDLE_HDI explicit candle_fp8(float f) : __x(Codec::encode(f)) {}
    CANDLE_HDI explicit candle_fp8(double d) : __x(Codec::encode(d)) {}
    CANDLE_HDI explicit candle_fp8(__half h) : __x(Codec::encode(static_cast<float>(h))) {}
    CANDLE_HDI explicit candle_fp8(candle_bf16 b) : __x(Codec::encode(float(b))) {}
    // Integers convert to float first, as CUDA's constructors do.
    CANDLE_HDI explicit candle_fp8(int v) : __x(Codec::encode((float)v)) {}
    CANDLE_HDI explicit candle_fp8(unsigned int v) : __x(Codec::encode((float)v)) {}
    CANDLE_HDI explicit candle_fp8(long v) : __x(Codec::encode((float)v)) {}
    CANDLE_HDI explicit candle_fp8(unsigned long v) : __x(Codec::encode((float)v)) {}
    CANDLE_HDI explicit candle_fp8(long long v) : __x(Codec::encode((float)v)) {}
    CANDLE_HDI explicit candle_fp8(unsigned long long v) : __x(Codec::encode((float)v)) {}

    CANDLE_HDI explicit operator float() const { return Codec::decode(__x); }
    CANDLE_HDI explicit operator double() const { return (double)Codec::decode(__x); }
    CANDLE_HDI explicit operator __half() const {
        const uint16_t bits = Codec::to_f16_bits(__x);
        __half h;
        __builtin_memcpy(&h, &bits, sizeof h);
        return h;
    }
    CANDLE_HDI explicit operator candle_bf16() const { return candle_bf16(Codec::decode(__x)); }
};
// OCP e4m3fn: bias 7, no infinities, NaN 0x7F / 0xFF, max 448
typedef candle_fp8<candle_fp8_e4m3_codec> candle_fp8_e4m3;
// e5m2: bias 15, infinities, max 57344
typedef candle_fp8<candle_fp8_e5m2_codec> candle_fp8_e5m2;

static_assert(sizeof(candle_fp8_e4m3) == 1 && alignof(candle_fp8_e4m3) == 1 && sizeof(candle_fp8_e5m2) == 1, "fp8 layout");

// The interpretations of cuda_fp8.h's conversions: OCP e4m3fn and e5m2.
enum candle_fp8_interpretation { CANDLE_FP8_E4M3_INTERP = 0, CANDLE_FP8_E5M2_INTERP = 1 };
// Stand-in for the toolkit's "fp8 types exist" feature macro.
#define CANDLE_FP8_TYPES_EXIST 1


// fp8 e4m3 bits -> __half, exact (NaN -> the canonical f16 NaN 0x7FFF).
CANDLE_DI __half candle_cvt_fp8_to_halfraw(uint8_t bits, int interp) {
    return __ushort_as_half(interp == CANDLE_FP8_E5M2_INTERP ? candle_fp8_e5m2_to_f16_bits(bits) : candle_fp8_e4m3_to_f16_bits(bits));
}

// cuda_fp8.h's conversions into fp8 (OCP e4m3fn or e5m2 on every arch, never FNUZ): with
// CANDLE_FP8_SATFINITE (__NV_SATFINITE) out-of-range values saturate to the largest finite
// value, else they give NaN (e4m3) or infinity (e5m2).
enum candle_fp8_saturation { CANDLE_FP8_NOSAT = 0, CANDLE_FP8_SATFINITE = 1 };
typedef uint8_t candle_fp8_storage;
CANDLE_HDI uint8_t candle_cvt_float_to_fp8(float x, int saturate, int interp) {
    return interp == CANDLE_FP8_E5M2_INTERP ? candle_f32_to_fp8_e5m2_mode(x, saturate == CANDLE_FP8_SATFINITE)
                                            : candle_f32_to_fp8_e4m3_mode(x, saturate == CANDLE_FP8_SATFINITE);
}
CANDLE_HDI uint8_t candle_cvt_double_to_fp8(double x, int saturate, int interp) {
    // e4m3 with saturation in one rounding step; the other modes round through float
    return interp != CANDLE_FP8_E5M2_INTERP && saturate == CANDLE_FP8_SATFINITE ? candle_f64_to_fp8_e4m3(x) : candle_cvt_float_to_fp8((float)x, saturate, interp);
}
// a half converts exactly to float, so one rounding step as CUDA's
CANDLE_DI uint8_t candle_cvt_halfraw_to_fp8(__half x, int saturate, int interp) {
    return candle_cvt_float_to_fp8(__half2float(x), saturate, interp);
}
CANDLE_DI uint8_t candle_cvt_bfloat16raw_to_fp8(candle_bf16 x, int saturate, int interp) {
    return candle_cvt_float_to_fp8(float(x), saturate, interp);
}
// pairs: the first value in the low byte (cuda_fp8.h's fp8x2 storage)
typedef uint16_t candle_fp8x2_storage;
CANDLE_DI uint16_t candle_cvt_float2_to_fp8x2(float2 x, int saturate, int interp) {
    return (uint16_t)(candle_cvt_float_to_fp8(x.x, saturate, interp) | (candle_cvt_float_to_fp8(x.y, saturate, interp) << 8));
}
CANDLE_DI uint16_t candle_cvt_halfraw2_to_fp8x2(__half2 x, int saturate, int interp) {
    return candle_cvt_float2_to_fp8x2(__half22float2(x), saturate, interp);
}
// cuda_fp16.h's __half2_raw: two raw halves, each an unsigned short (ROCm 6+'s has __half_raw
// members, HIP 5.2.3's unsigned shorts); converts to and from __half2 bit for bit.
struct candle_half2_raw {
    unsigned short x;
    unsigned short y;
    candle_half2_raw() = default;
    CANDLE_HDI candle_half2_raw(__half2 h) { __builtin_memcpy(this, &h, sizeof h); }
    CANDLE_HDI operator __half2() const {
        __half2 h;
        __builtin_memcpy(&h, this, sizeof h);
        return h;
    }
};
static_assert(sizeof(candle_half2_raw) == sizeof(__half2), "candle_half2_raw is two halves");

// cuda_fp16.h's __half2 / half2, whose members x and y are __half values. ROCm 6+'s __half2 has
// them too, and candle_half2 is that very type. HIP 5.2.3's names its halves x and y as raw
// unsigned shorts: `__half2float(h2.x)` would convert the bit pattern as an integer. There
// candle_half2 is candle_half2_of_halves: the same four bytes, x and y __half, converting to
// and from __half2 bit for bit, with __half2's operators.
#ifndef CANDLE_COMPAT_NO_HIP_INCLUDE
struct candle_half2_of_halves {
    __half x;
    __half y;
    candle_half2_of_halves() = default;
    CANDLE_HDI candle_half2_of_halves(const __half2& p) { __builtin_memcpy(this, &p, sizeof p); }
    CANDLE_HDI candle_half2_of_halves(const __half& lo, const __half& hi) : x(lo), y(hi) {}
    CANDLE_HDI operator __half2() const {
        __half2 p;
        __builtin_memcpy(&p, this, sizeof p);
        return p;
    }
    CANDLE_DI candle_half2_of_halves& operator+=(const candle_half2_of_halves& o) { return *this = __hadd2(*this, o); }
    CANDLE_DI candle_half2_of_halves& operator-=(const candle_half2_of_halves& o) { return *this = __hsub2(*this, o); }
    CANDLE_DI candle_half2_of_halves& operator*=(const candle_half2_of_halves& o) { return *this = __hmul2(*this, o); }
    CANDLE_DI candle_half2_of_halves& operator/=(const candle_half2_of_halves& o) { return *this = __h2div(*this, o); }
    CANDLE_DI candle_half2_of_halves operator+() const { return *this; }
    CANDLE_DI candle_half2_of_halves operator-() const { return __hneg2(*this); }
    CANDLE_DI friend candle_half2_of_halves operator+(candle_half2_of_halves a, const candle_half2_of_halves& b) { return a += b; }
    CANDLE_DI friend candle_half2_of_halves operator-(candle_half2_of_halves a, const candle_half2_of_halves& b) { return a -= b; }
    CANDLE_DI friend candle_half2_of_halves operator*(candle_half2_of_halves a, const candle_half2_of_halves& b) { return a *= b; }
    CANDLE_DI friend candle_half2_of_halves operator/(candle_half2_of_halves a, const candle_half2_of_halves& b) { return a /= b; }
    CANDLE_DI friend bool operator==(const candle_half2_of_halves& a, const candle_half2_of_halves& b) { return __hbeq2(a, b); }
    CANDLE_DI friend bool operator!=(const candle_half2_of_halves& a, const candle_half2_of_halves& b) { return __hbne2(a, b); }
};
static_assert(sizeof(candle_half2_of_halves) == sizeof(__half2), "candle_half2_of_halves is two halves");
typedef std::conditional<std::is_same<decltype(__half2{}.x), __half>::value, __half2, candle_half2_of_halves>::type candle_half2;
#else
// (the CPU emulations' shims: their own __half2)
typedef __half2 candle_half2;
#endif
CANDLE_DI candle_half2_raw candle_cvt_fp8x2_to_halfraw2(uint16_t bits, int interp) {
    return __halves2half2(candle_cvt_fp8_to_halfraw((uint8_t)(bits & 0xFFu), interp), candle_cvt_fp8_to_halfraw((uint8_t)(bits >> 8), interp));
}

// ===========================================================================
// 3. Half helpers, for __half and candle_bf16 alike
// ===========================================================================
//
// Values are computed in float and rounded to nearest even. min/max return one
// of their inputs (or the canonical NaN 0x7FFF) with CUDA's rules:
//   candle_hmax / candle_hmin          NaN-ignoring (IEEE maxNum/minNum): a
//                                      NaN operand yields the other one; two
//                                      NaNs yield the canonical NaN.
//   candle_hmax_nan / candle_hmin_nan  NaN-propagating: any NaN operand
//                                      yields the canonical NaN.
//   For equal operands +0 counts as greater than -0.

// Per-type access used by the shared templates below.
template <typename H> struct candle_half_traits;
template <> struct candle_half_traits<__half> {
    static constexpr uint16_t inf_bits = 0x7C00u;
    static CANDLE_DI uint16_t to_bits(__half h) { return __half_as_ushort(h); }
    static CANDLE_DI __half from_bits(uint16_t b) { return __ushort_as_half(b); }
    static CANDLE_DI float to_float(__half h) { return __half2float(h); }
    static CANDLE_DI __half from_float(float f) { return __float2half(f); }
};
template <> struct candle_half_traits<candle_bf16> {
    static constexpr uint16_t inf_bits = 0x7F80u;
    static CANDLE_DI uint16_t to_bits(candle_bf16 h) { return h.bits; }
    static CANDLE_DI candle_bf16 from_bits(uint16_t b) { return candle_bf16::from_bits(b); }
    static CANDLE_DI float to_float(candle_bf16 h) { return float(h); }
    static CANDLE_DI candle_bf16 from_float(float f) { return candle_bf16(f); }
};

template <typename H> CANDLE_DI bool candle_hisnan_impl(H a) {
    return (candle_half_traits<H>::to_bits(a) & 0x7FFFu) > candle_half_traits<H>::inf_bits;
}

// The result is chosen as bits, not as one of two H objects: HIP 5.2's clang kept a
// choice between two half/bf16 structs as a choice between their addresses, in 8 bytes of
// scratch per thread (the f16/bf16 minimum/maximum kernels). Every case is worked out and
// then selected, without branches (ROCm 7.2's clang otherwise branches per case).
template <typename H> CANDLE_DI H candle_minmax_impl(H a, H b, bool want_max, bool propagate_nan) {
    typedef candle_half_traits<H> T;
    const uint16_t ab = T::to_bits(a), bb = T::to_bits(b);
    const bool a_nan = candle_hisnan_impl(a), b_nan = candle_hisnan_impl(b);
    const uint16_t if_nan = (propagate_nan || (a_nan && b_nan)) ? uint16_t(0x7FFFu) : (a_nan ? bb : ab);
    const float fa = T::to_float(a), fb = T::to_float(b);
    // equal values: only +0 / -0 can differ in bits
    const uint16_t if_equal = (want_max == ((ab & 0x8000u) != 0)) ? bb : ab;
    const uint16_t if_ordered = (want_max ? fa > fb : fa < fb) ? ab : bb;
    return T::from_bits((a_nan || b_nan) ? if_nan : (fa == fb ? if_equal : if_ordered));
}

// A platform may name native min/max instructions for the device pass by
// defining CANDLE_PLATFORM_F16_MINMAX / CANDLE_PLATFORM_BF16_MINMAX
// (a_bits, b_bits, want_max, propagate_nan) -> bits before this header, with
// exactly candle_minmax_impl's results (want_max and propagate_nan are
// constants at every call).
CANDLE_DI __half candle_minmax(__half a, __half b, bool want_max, bool propagate_nan) {
#if defined(CANDLE_PLATFORM_F16_MINMAX)
    return __ushort_as_half(CANDLE_PLATFORM_F16_MINMAX(__half_as_ushort(a), __half_as_ushort(b), want_max, propagate_nan));
#else
    return candle_minmax_impl(a, b, want_max, propagate_nan);
#endif
}
CANDLE_DI candle_bf16 candle_minmax(candle_bf16 a, candle_bf16 b, bool want_max, bool propagate_nan) {
#if defined(CANDLE_PLATFORM_BF16_MINMAX)
    return candle_bf16::from_bits(CANDLE_PLATFORM_BF16_MINMAX(a.bits, b.bits, want_max, propagate_nan));
#else
    return candle_minmax_impl(a, b, want_max, propagate_nan);
#endif
}

// e^a in float, rounded once. A platform may name its own half exp for the
// device pass (CANDLE_PLATFORM_F16_EXP(bits) -> bits): its vendor's hexp, which
// may differ from the float path in the last bit (upstream's kernels call hexp).
template <typename H> CANDLE_DI H candle_hexp_impl(H a) {
    return candle_half_traits<H>::from_float(expf(candle_half_traits<H>::to_float(a)));
}
CANDLE_DI __half candle_hexp(__half a) {
#if defined(CANDLE_PLATFORM_F16_EXP)
    return __ushort_as_half(CANDLE_PLATFORM_F16_EXP(__half_as_ushort(a)));
#else
    return candle_hexp_impl(a);
#endif
}
CANDLE_DI candle_bf16 candle_hexp(candle_bf16 a) { return candle_hexp_impl(a); }

// |a| clears the sign bit; a NaN becomes the canonical NaN 0x7FFF, as on
// NVIDIA GPUs.
template <typename H> CANDLE_DI H candle_habs_impl(H a) {
    typedef candle_half_traits<H> T;
    return T::from_bits(candle_hisnan_impl(a) ? (uint16_t)0x7FFFu : (uint16_t)(T::to_bits(a) & 0x7FFFu));
}

#define CANDLE_HALF_HELPERS(H)                                                                                  \
    CANDLE_DI bool candle_hisnan(H a) { return candle_hisnan_impl(a); }                                         \
    CANDLE_DI H candle_hmax(H a, H b) { return candle_minmax(a, b, true, false); }                         \
    CANDLE_DI H candle_hmin(H a, H b) { return candle_minmax(a, b, false, false); }                        \
    CANDLE_DI H candle_hmax_nan(H a, H b) { return candle_minmax(a, b, true, true); }                      \
    CANDLE_DI H candle_hmin_nan(H a, H b) { return candle_minmax(a, b, false, true); }                     \
    CANDLE_DI H candle_habs(H a) { return candle_habs_impl(a); }                                                \
    CANDLE_DI H candle_hsqrt(H a) { return candle_half_traits<H>::from_float(sqrtf(candle_half_traits<H>::to_float(a))); } \
    CANDLE_DI H candle_hcos(H a) { return candle_half_traits<H>::from_float(cosf(candle_half_traits<H>::to_float(a))); }   \
    CANDLE_DI H candle_hsin(H a) { return candle_half_traits<H>::from_float(sinf(candle_half_traits<H>::to_float(a))); }   \
    CANDLE_DI H candle_hlog(H a) { return candle_half_traits<H>::from_float(logf(candle_half_traits<H>::to_float(a))); }

CANDLE_HALF_HELPERS(__half)
CANDLE_HALF_HELPERS(candle_bf16)
#undef CANDLE_HALF_HELPERS

// Pair arithmetic. HIP provides these for __half2 natively; the bf16 pair
// versions are needed because Candle's vectorised bf16 binary kernels call the
// pair intrinsics on bf16 pairs. Each lane is rounded to nearest even.
CANDLE_DI __half2 candle_hadd2(__half2 a, __half2 b) { return __hadd2(a, b); }
CANDLE_DI __half2 candle_hsub2(__half2 a, __half2 b) { return __hsub2(a, b); }
CANDLE_DI __half2 candle_hmul2(__half2 a, __half2 b) { return __hmul2(a, b); }
CANDLE_DI candle_bf16x2 candle_hadd2(candle_bf16x2 a, candle_bf16x2 b) { return {a.x + b.x, a.y + b.y}; }
CANDLE_DI candle_bf16x2 candle_hsub2(candle_bf16x2 a, candle_bf16x2 b) { return {a.x - b.x, a.y - b.y}; }
CANDLE_DI candle_bf16x2 candle_hmul2(candle_bf16x2 a, candle_bf16x2 b) { return {a.x * b.x, a.y * b.y}; }
CANDLE_DI __half2 candle_hfma2(__half2 a, __half2 b, __half2 c) { return __hfma2(a, b, c); }
CANDLE_DI candle_bf16x2 candle_hfma2(candle_bf16x2 a, candle_bf16x2 b, candle_bf16x2 c) {
    return {candle_bf16(fmaf(float(a.x), float(b.x), float(c.x))), candle_bf16(fmaf(float(a.y), float(b.y), float(c.y)))};
}

// Scalar bf16 arithmetic under the names cuda_bf16.h overloads for it (HIP's are __half's).
// Templates that take candle_bf16 only: no implicit conversion reaches them, so a call HIP's
// own overloads answer is never made ambiguous.
#define CANDLE_BF16_ONLY template <class T, typename std::enable_if<std::is_same<T, candle_bf16>::value, int>::type = 0>
CANDLE_BF16_ONLY CANDLE_HDI T __hadd(T a, T b) { return a + b; }
CANDLE_BF16_ONLY CANDLE_HDI T __hsub(T a, T b) { return a - b; }
CANDLE_BF16_ONLY CANDLE_HDI T __hmul(T a, T b) { return a * b; }
CANDLE_BF16_ONLY CANDLE_HDI T __hdiv(T a, T b) { return T(float(a) / float(b)); }
// (through a float fma, then one rounding to bf16: the product of two bf16 is exact in float)
CANDLE_BF16_ONLY CANDLE_HDI T __hfma(T a, T b, T c) { return T(fmaf(float(a), float(b), float(c))); }
#undef CANDLE_BF16_ONLY

template <class T>
CANDLE_DI T candle_ldg(const T* p) { return *p; }

// Lane extraction to float, for half pairs (forwarded to HIP) and bf16 pairs.
CANDLE_DI float candle_low2float(__half2 a) { return __low2float(a); }
CANDLE_DI float candle_high2float(__half2 a) { return __high2float(a); }
CANDLE_DI float candle_low2float(candle_bf16x2 a) { return float(a.x); }
CANDLE_DI float candle_high2float(candle_bf16x2 a) { return float(a.y); }

// ===========================================================================
// 4. Integer SIMD: candle_dp4a, candle_vsub4, candle_vsubss4, candle_vcmpne4
// ===========================================================================
// Defined in candle_fp_convert.h (host and device, CPU-tested).

// ===========================================================================
// 5. Reductions and shuffles over a logical 32-lane warp
// ===========================================================================
// A butterfly over lanes 0..31 of each 32-lane group (width 32), so the result
// is the same on wave32 and wave64 hardware. Every lane gets the result.
// Integer addition wraps modulo 2^32, as the hardware reductions do.
CANDLE_DI int candle_reduce_add_w32(int x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x = (int)((unsigned int)x + (unsigned int)__shfl_xor(x, offset, 32));
    return x;
}
CANDLE_DI unsigned int candle_reduce_add_w32(unsigned int x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x += (unsigned int)__shfl_xor((int)x, offset, 32);
    return x;
}
CANDLE_DI int candle_reduce_min_w32(int x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const int y = __shfl_xor(x, offset, 32);
        x = y < x ? y : x;
    }
    return x;
}
CANDLE_DI unsigned int candle_reduce_min_w32(unsigned int x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const unsigned int y = (unsigned int)__shfl_xor((int)x, offset, 32);
        x = y < x ? y : x;
    }
    return x;
}
CANDLE_DI int candle_reduce_max_w32(int x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const int y = __shfl_xor(x, offset, 32);
        x = y > x ? y : x;
    }
    return x;
}
CANDLE_DI unsigned int candle_reduce_max_w32(unsigned int x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const unsigned int y = (unsigned int)__shfl_xor((int)x, offset, 32);
        x = y > x ? y : x;
    }
    return x;
}

// The wavefront Candle's row kernels (softmax, rms norm, layer norm) reduce
// over (translator rule wave-rows): 64 in a device pass for a GFX9 arch (GCN
// and CDNA run wave64 only), else 32 (RDNA builds are wave32, NVIDIA's warp,
// the host pass). The ROCm host code launches those kernels with the
// device's wavefront size (rule wave-launches), which is the same number.
#if defined(__GFX9__)
#define CANDLE_ROW_WAVE 64
#else
#define CANDLE_ROW_WAVE 32
#endif

// Shuffles that also move __half and candle_bf16 (HIP 5.2.3's __shfl* have
// no 16-bit float overloads, and CUDA's do). Other types forward to HIP.
// The width defaults to a logical 32-lane warp, like CUDA's.
template <typename T> CANDLE_DI T candle_shfl(T var, int src_lane, int width = 32) { return __shfl(var, src_lane, width); }
template <typename T> CANDLE_DI T candle_shfl_xor(T var, int lane_mask, int width = 32) { return __shfl_xor(var, lane_mask, width); }
template <typename T> CANDLE_DI T candle_shfl_up(T var, unsigned int delta, int width = 32) { return __shfl_up(var, delta, width); }
template <typename T> CANDLE_DI T candle_shfl_down(T var, unsigned int delta, int width = 32) { return __shfl_down(var, delta, width); }

// Values HIP's __shfl* have no overload for (16-bit floats: HIP 5.2.3 has none, CUDA has;
// 16-bit float pairs, HIP 5.2.3's candle_half2 among them) move as their bits in an int.
template <typename T> CANDLE_DI int candle_shfl_bits_in(T var) {
    static_assert(sizeof(T) <= sizeof(int), "shuffled as one int");
    int bits = 0;
    __builtin_memcpy(&bits, &var, sizeof var);
    return bits;
}
template <typename T> CANDLE_DI T candle_shfl_bits_out(int bits) {
    T var;
    __builtin_memcpy(&var, &bits, sizeof var);
    return var;
}
#define CANDLE_SHFL_AS_BITS(T)                                                                                     \
    CANDLE_DI T candle_shfl(T var, int src_lane, int width = 32) {                                                 \
        return candle_shfl_bits_out<T>(__shfl(candle_shfl_bits_in(var), src_lane, width));                         \
    }                                                                                                              \
    CANDLE_DI T candle_shfl_xor(T var, int lane_mask, int width = 32) {                                            \
        return candle_shfl_bits_out<T>(__shfl_xor(candle_shfl_bits_in(var), lane_mask, width));                    \
    }                                                                                                              \
    CANDLE_DI T candle_shfl_up(T var, unsigned int delta, int width = 32) {                                        \
        return candle_shfl_bits_out<T>(__shfl_up(candle_shfl_bits_in(var), delta, width));                         \
    }                                                                                                              \
    CANDLE_DI T candle_shfl_down(T var, unsigned int delta, int width = 32) {                                      \
        return candle_shfl_bits_out<T>(__shfl_down(candle_shfl_bits_in(var), delta, width));                       \
    }

CANDLE_SHFL_AS_BITS(__half)
CANDLE_SHFL_AS_BITS(candle_bf16)
CANDLE_SHFL_AS_BITS(__half2)
CANDLE_SHFL_AS_BITS(candle_half2_of_halves)
CANDLE_SHFL_AS_BITS(candle_bf16x2)
#undef CANDLE_SHFL_AS_BITS

// (Not in the CPU emulations' shims, CANDLE_COMPAT_NO_HIP_INCLUDE: the kernels they run use none of these.)
#ifndef CANDLE_COMPAT_NO_HIP_INCLUDE
// The lane within the logical 32-lane warp (PTX's %laneid), and a warp's memory barrier
// (__syncwarp): a wavefront runs its lanes together, so only the ordering of their shared
// and global accesses is left, a fence at wavefront scope on each side of the barrier.
CANDLE_DI unsigned int candle_lane_id() {
#if defined(__HIP_PLATFORM_AMD__)
    return __lane_id() & 31u;
#else
    // warps are made of consecutive linear thread indices of the block
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
#endif
}

CANDLE_DI void candle_syncwarp(unsigned long long mask = ~0ull) {
#if defined(__HIP_PLATFORM_AMD__)
    (void)mask;
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
    __syncwarp((unsigned int)mask);
#endif
}

// Votes over the logical 32-lane warp (__ballot_sync, __any_sync, __all_sync with a full
// mask): bit i of the ballot is lane i's predicate, the same on wave32 and wave64.
CANDLE_DI unsigned int candle_ballot_w32(int pred) {
    unsigned int x = pred ? (1u << candle_lane_id()) : 0u;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) x |= (unsigned int)__shfl_xor((int)x, offset, 32);
    return x;
}
CANDLE_DI int candle_any_w32(int pred) { return candle_ballot_w32(pred) != 0u; }
CANDLE_DI int candle_all_w32(int pred) { return candle_ballot_w32(!pred) == 0u; }

// __activemask(): the active lanes of the thread's logical 32-lane warp, bit i for lane i
// (on wave64 the half of the EXEC mask the lane sits in).
CANDLE_DI unsigned int candle_activemask_w32() {
#if defined(__HIP_PLATFORM_AMD__)
    return (unsigned int)(__builtin_amdgcn_read_exec() >> (__lane_id() & ~31u));
#else
    return __activemask();
#endif
}

// __match_any_sync / __match_all_sync with a full mask: the lanes of the logical warp whose
// value has the same bits as this lane's (PTX match.sync compares bits: -0.0f and 0.0f
// differ, a NaN matches its own bits). 32 shuffles: exact on wave32 and wave64.
CANDLE_DI unsigned int candle_match_lanes(unsigned int bits) {
    unsigned int same = 0u;
#pragma unroll
    for (int lane = 0; lane < 32; ++lane) same |= ((unsigned int)__shfl((int)bits, lane, 32) == bits) ? (1u << lane) : 0u;
    return same;
}
CANDLE_DI unsigned int candle_match_lanes(unsigned long long bits) {
    unsigned int same = 0u;
#pragma unroll
    for (int lane = 0; lane < 32; ++lane) same |= ((unsigned long long)__shfl((long long)bits, lane, 32) == bits) ? (1u << lane) : 0u;
    return same;
}
template <typename T> CANDLE_DI unsigned int candle_match_any_w32(T value) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_any_sync takes 32- and 64-bit values");
    typedef typename std::conditional<sizeof(T) == 4, unsigned int, unsigned long long>::type bits_t;
    bits_t bits;
    __builtin_memcpy(&bits, &value, sizeof(T));
    return candle_match_lanes(bits);
}
template <typename T> CANDLE_DI unsigned int candle_match_all_w32(T value, int *pred) {
    const bool all = candle_match_any_w32(value) == 0xffffffffu;
    *pred = all;
    return all ? 0xffffffffu : 0u;
}

// The same intrinsics with a partial mask (`__shfl_xor_sync(group_mask, ...)`,
// `__ballot_sync(__activemask(), ...)`): only the lanes the mask names count. CUDA requires
// those lanes to execute the call together; the others may be inactive, so nothing here reads
// a value of a lane outside the mask and keeps it. (Shuffles need no variant: a lane reads the
// lane it names, which CUDA requires to be in the mask.)
CANDLE_DI unsigned int candle_ballot_w32_in(unsigned int mask, int pred) {
    // a ballot of the active lanes (inactive ones are 0), then the mask
#if defined(__HIP_PLATFORM_AMD__)
    // HIP's; on wave64 the thread's half of it
    return (unsigned int)(__ballot(pred) >> (__lane_id() & ~31u)) & mask;
#elif defined(CANDLE_PLATFORM_BALLOT)
    // the platform's (hip-on-cuda: CUDA's, over __activemask())
    return (unsigned int)CANDLE_PLATFORM_BALLOT(pred) & mask;
#else
    // (the CPU emulations, whose kernels never vote: the full warp's shuffle ballot)
    return candle_ballot_w32(pred) & mask;
#endif
}
CANDLE_DI int candle_any_w32_in(unsigned int mask, int pred) { return candle_ballot_w32_in(mask, pred) != 0u; }
CANDLE_DI int candle_all_w32_in(unsigned int mask, int pred) { return candle_ballot_w32_in(mask, !pred) == 0u; }
template <typename T> CANDLE_DI unsigned int candle_match_any_w32_in(unsigned int mask, T value) {
    return candle_match_any_w32(value) & mask;
}
template <typename T> CANDLE_DI unsigned int candle_match_all_w32_in(unsigned int mask, T value, int *pred) {
    const bool all = (candle_match_any_w32(value) & mask) == mask;
    *pred = all;
    return all ? mask : 0u;
}
// Reductions over the mask's lanes: every lane reads each of the 32 lanes in turn (uniform
// control flow) and keeps the values of the mask's lanes only.
#define CANDLE_REDUCE_W32_IN(NAME, T, INIT, COMBINE)                                         \
    CANDLE_DI T NAME(unsigned int mask, T x) {                                               \
        T acc = INIT;                                                                        \
        _Pragma("unroll") for (int lane = 0; lane < 32; ++lane) {                            \
            const T y = (T)__shfl((int)x, lane, 32);                                         \
            if ((mask >> lane) & 1u) acc = COMBINE;                                          \
        }                                                                                    \
        return acc;                                                                          \
    }
CANDLE_REDUCE_W32_IN(candle_reduce_add_w32_in, int, 0, (int)((unsigned int)acc + (unsigned int)y))
CANDLE_REDUCE_W32_IN(candle_reduce_add_w32_in, unsigned int, 0u, acc + y)
CANDLE_REDUCE_W32_IN(candle_reduce_min_w32_in, int, x, (y < acc ? y : acc))
CANDLE_REDUCE_W32_IN(candle_reduce_min_w32_in, unsigned int, x, (y < acc ? y : acc))
CANDLE_REDUCE_W32_IN(candle_reduce_max_w32_in, int, x, (y > acc ? y : acc))
CANDLE_REDUCE_W32_IN(candle_reduce_max_w32_in, unsigned int, x, (y > acc ? y : acc))
#undef CANDLE_REDUCE_W32_IN

// __nanosleep(ns): a wait of about ns nanoseconds (a hint in CUDA too). AMD's s_sleep waits
// 64 x N clocks (N at most 127): at a 1-2 GHz shader clock one step is 32-64 ns.
CANDLE_DI void candle_nanosleep(unsigned int ns) {
#if defined(__HIP_PLATFORM_AMD__)
    // s_sleep takes an immediate: whole steps of 127 groups, then single groups
    unsigned int groups = ns / 32u;
    for (; groups >= 127u; groups -= 127u) __builtin_amdgcn_s_sleep(127);
    for (; groups > 0u; --groups) __builtin_amdgcn_s_sleep(1);
#else
    __nanosleep(ns);
#endif
}

// Programmatic dependent launch (sm_90's PDL): cudaLaunchKernelEx with the attribute
// programmatic stream serialization lets a kernel start before the one ahead of it in the stream
// has ended; each side then orders itself with cudaGridDependencySynchronize (PTX
// griddepcontrol.wait) and cudaTriggerProgrammaticLaunchCompletion (griddepcontrol.
// launch_dependents). Without the attribute a launch waits for the kernel ahead of it, as every
// HIP launch does, and both calls have nothing left to wait for. So candle_launch_kernel_ex is an
// ordinary launch with the config's grid, block, dynamic shared memory and stream, and the two
// calls do nothing. (Other launch attributes, clusters among them, are refused at translation.)
enum candle_launch_attribute_id { CANDLE_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 5 };
struct candle_launch_attribute {
    candle_launch_attribute_id id;
    union {
        char pad[64];
        int programmaticStreamSerializationAllowed;
    } val;
};
struct candle_launch_config {
    dim3 gridDim;
    dim3 blockDim;
    size_t dynamicSmemBytes;
    hipStream_t stream;
    candle_launch_attribute* attrs;
    unsigned int numAttrs;
};
template <typename... Params, typename... Args>
inline hipError_t candle_launch_kernel_ex(const candle_launch_config* config, void (*kernel)(Params...), Args&&... args) {
    hipLaunchKernelGGL(kernel, config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream, static_cast<Params>(args)...);
    return hipGetLastError();
}
CANDLE_DI void candle_grid_dependency_synchronize() {}
CANDLE_DI void candle_trigger_programmatic_launch_completion() {}

// Two f16 in a 32-bit register (PTX .f16x2, GCN v_pk_*_f16): lane-wise, rounded to nearest.
CANDLE_DI __half2 candle_u32_as_half2(uint32_t u) {
    __half2 h;
    __builtin_memcpy(&h, &u, sizeof u);
    return h;
}
CANDLE_DI uint32_t candle_half2_as_u32(__half2 h) {
    uint32_t u;
    __builtin_memcpy(&u, &h, sizeof u);
    return u;
}
CANDLE_DI uint32_t candle_f16x2_add(uint32_t a, uint32_t b) { return candle_half2_as_u32(__hadd2(candle_u32_as_half2(a), candle_u32_as_half2(b))); }
CANDLE_DI uint32_t candle_f16x2_mul(uint32_t a, uint32_t b) { return candle_half2_as_u32(__hmul2(candle_u32_as_half2(a), candle_u32_as_half2(b))); }
// f16 pairs through a float function, each half rounded to nearest (approximate PTX math:
// at least as accurate as NVIDIA's .approx)
CANDLE_DI uint32_t candle_f16x2_exp2(uint32_t a) {
    const float2 f = __half22float2(candle_u32_as_half2(a));
    return candle_half2_as_u32(__floats2half2_rn(exp2f(f.x), exp2f(f.y)));
}
CANDLE_DI uint32_t candle_f16x2_tanh(uint32_t a) {
    const float2 f = __half22float2(candle_u32_as_half2(a));
    return candle_half2_as_u32(__floats2half2_rn(tanhf(f.x), tanhf(f.y)));
}
// Streaming ("evict first") 32-bit loads and stores (PTX ld/st.global.cs): the nontemporal
// hint on AMD (clang's builtin: a GLC/SLC/NT-bit access), a plain access elsewhere.
CANDLE_DI uint32_t candle_ld_cs_b32(const void* p) {
#if defined(__HIP_PLATFORM_AMD__)
    return __builtin_nontemporal_load(static_cast<const uint32_t*>(p));
#else
    return *static_cast<const uint32_t*>(p);
#endif
}
CANDLE_DI void candle_st_cs_b32(void* p, uint32_t v) {
#if defined(__HIP_PLATFORM_AMD__)
    __builtin_nontemporal_store(v, static_cast<uint32_t*>(p));
#else
    *static_cast<uint32_t*>(p) = v;
#endif
}

// PTX volatile 32-bit accesses, and the fences of an acquire load / release store at system
// scope (.sys): a .v4 access is four 32-bit ones (PTX gives a vector access no single-copy
// atomicity across its elements), after a release fence or before an acquire fence.
CANDLE_DI uint32_t candle_ld_volatile_b32(const void* p) { return *static_cast<const volatile uint32_t*>(p); }
CANDLE_DI void candle_st_volatile_b32(void* p, uint32_t v) { *static_cast<volatile uint32_t*>(p) = v; }
CANDLE_DI void candle_fence_acquire_sys() {
#if defined(__HIP_PLATFORM_AMD__)
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");
#else
    __threadfence_system();
#endif
}
CANDLE_DI void candle_fence_release_sys() {
#if defined(__HIP_PLATFORM_AMD__)
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "");
#else
    __threadfence_system();
#endif
}
// cuda_fp8.h's vector types (__nv_fp8x2_e4m3, __nv_fp8x4_e4m3, __nv_fp8x2_e5m2,
// __nv_fp8x4_e5m2): two or four values of one format, the first in the low byte of __x, each
// converted as the scalar type converts one (round to nearest even, satfinite).
typedef uint32_t candle_fp8x4_storage;
template <class Codec> struct alignas(2) candle_fp8x2 {
    candle_fp8x2_storage __x;
    candle_fp8x2() = default;
    static CANDLE_HDI uint16_t pack(float a, float b) { return (uint16_t)(Codec::encode(a) | (Codec::encode(b) << 8)); }
    CANDLE_HDI explicit candle_fp8x2(float2 f) : __x(pack(f.x, f.y)) {}
    CANDLE_DI explicit candle_fp8x2(__half2 h) : __x(pack(__low2float(h), __high2float(h))) {}
    CANDLE_HDI explicit candle_fp8x2(candle_bf16x2 b) : __x(pack(float(b.x), float(b.y))) {}
    CANDLE_HDI explicit operator float2() const { return make_float2(Codec::decode((uint8_t)__x), Codec::decode((uint8_t)(__x >> 8))); }
};
template <class Codec> struct alignas(4) candle_fp8x4 {
    candle_fp8x4_storage __x;
    candle_fp8x4() = default;
    static CANDLE_HDI uint32_t pack(float a, float b, float c, float d) {
        return (uint32_t)Codec::encode(a) | ((uint32_t)Codec::encode(b) << 8) | ((uint32_t)Codec::encode(c) << 16) |
               ((uint32_t)Codec::encode(d) << 24);
    }
    CANDLE_HDI explicit candle_fp8x4(float4 f) : __x(pack(f.x, f.y, f.z, f.w)) {}
    CANDLE_DI explicit candle_fp8x4(__half2 lo, __half2 hi)
        : __x(pack(__low2float(lo), __high2float(lo), __low2float(hi), __high2float(hi))) {}
    CANDLE_HDI explicit candle_fp8x4(candle_bf16x2 lo, candle_bf16x2 hi)
        : __x(pack(float(lo.x), float(lo.y), float(hi.x), float(hi.y))) {}
    CANDLE_HDI explicit operator float4() const {
        return make_float4(Codec::decode((uint8_t)__x), Codec::decode((uint8_t)(__x >> 8)), Codec::decode((uint8_t)(__x >> 16)),
                           Codec::decode((uint8_t)(__x >> 24)));
    }
};
typedef candle_fp8x2<candle_fp8_e4m3_codec> candle_fp8x2_e4m3;
typedef candle_fp8x4<candle_fp8_e4m3_codec> candle_fp8x4_e4m3;
typedef candle_fp8x2<candle_fp8_e5m2_codec> candle_fp8x2_e5m2;
typedef candle_fp8x4<candle_fp8_e5m2_codec> candle_fp8x4_e5m2;
static_assert(sizeof(candle_fp8x2_e4m3) == 2 && sizeof(candle_fp8x4_e4m3) == 4, "fp8 vectors are two or four values");

// PTX max.f32 / min.f32 (a NaN operand yields the other; both NaN: the canonical NaN
// 0x7fffffff; +0 is above -0) and their .NaN forms (any NaN operand: the canonical NaN)
CANDLE_HDI float candle_canonical_nan_ptx() {
    const uint32_t bits = 0x7fffffffu;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}
CANDLE_HDI bool candle_sign_bit_ptx(float a) {
    uint32_t bits;
    __builtin_memcpy(&bits, &a, 4);
    return bits >> 31;
}
// on the bits, so that -ffast-math (nvcc's --use_fast_math becomes it) keeps the NaN tests
CANDLE_HDI bool candle_is_nan_ptx(float a) {
    uint32_t bits;
    __builtin_memcpy(&bits, &a, 4);
    return (bits & 0x7fffffffu) > 0x7f800000u;
}
CANDLE_HDI float candle_fmax_ptx(float a, float b) {
    if (candle_is_nan_ptx(a)) return candle_is_nan_ptx(b) ? candle_canonical_nan_ptx() : b;
    if (candle_is_nan_ptx(b)) return a;
    if (a == b) return candle_sign_bit_ptx(a) ? b : a;
    return a > b ? a : b;
}
CANDLE_HDI float candle_fmin_ptx(float a, float b) {
    if (candle_is_nan_ptx(a)) return candle_is_nan_ptx(b) ? candle_canonical_nan_ptx() : b;
    if (candle_is_nan_ptx(b)) return a;
    if (a == b) return candle_sign_bit_ptx(a) ? a : b;
    return a < b ? a : b;
}
CANDLE_HDI float candle_fmax_nan_ptx(float a, float b) { return candle_is_nan_ptx(a) || candle_is_nan_ptx(b) ? candle_canonical_nan_ptx() : candle_fmax_ptx(a, b); }
CANDLE_HDI float candle_fmin_nan_ptx(float a, float b) { return candle_is_nan_ptx(a) || candle_is_nan_ptx(b) ? candle_canonical_nan_ptx() : candle_fmin_ptx(a, b); }
// PTX lop3.b32: any function of three bit vectors, given as its 8-entry truth table `lut`
// (bit i of lut is the result for a, b, c bits (i >> 2, i >> 1, i) & 1)
CANDLE_HDI uint32_t candle_lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
    uint32_t r = 0;
    for (int i = 0; i < 8; ++i) {
        if ((lut >> i) & 1u) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
    }
    return r;
}
CANDLE_DI uint32_t candle_f16x2_fma(uint32_t a, uint32_t b, uint32_t c) {
    return candle_half2_as_u32(__hfma2(candle_u32_as_half2(a), candle_u32_as_half2(b), candle_u32_as_half2(c)));
}
#endif // CANDLE_COMPAT_NO_HIP_INCLUDE

// ===========================================================================
// 6. Trap
// ===========================================================================
[[noreturn]] CANDLE_HDI void candle_trap() { __builtin_trap(); }

// ===========================================================================
// 7. candle_atomic_add: atomicAdd for every type Candle's kernels use
// ===========================================================================
// HIP 5.2.3 has no 16-bit float atomicAdd, so __half and candle_bf16 use a
// compare-and-swap loop on the aligned 32-bit word holding the value (the sum
// is rounded to nearest even). Every other type forwards to HIP's atomicAdd.
// Returns the old value, like atomicAdd.
template <typename T> struct candle_type_identity { typedef T type; };

// (the result is whatever the atomicAdd found returns: a translated file's own overload,
// such as exllama's `void atomicAdd(half2*, half2)` in its ROCm branch, keeps its type)
template <typename T>
CANDLE_DI auto candle_atomic_add(T* address, typename candle_type_identity<T>::type val) -> decltype(atomicAdd(address, val)) {
    return atomicAdd(address, val);
}

template <typename H> CANDLE_DI H candle_atomic_add_16(H* address, H val) {
    typedef candle_half_traits<H> T;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(address);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~(uintptr_t)3);
    const unsigned int shift = (addr & 2) ? 16u : 0u;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        const H cur = T::from_bits((uint16_t)(assumed >> shift));
        const unsigned int sum = T::to_bits(T::from_float(T::to_float(cur) + T::to_float(val)));
        old = atomicCAS(word, assumed, (assumed & ~(0xFFFFu << shift)) | (sum << shift));
    } while (assumed != old); // integer compare: no endless loop on NaN
    return T::from_bits((uint16_t)(old >> shift));
}
CANDLE_DI __half candle_atomic_add(__half* address, __half val) { return candle_atomic_add_16(address, val); }
CANDLE_DI candle_bf16 candle_atomic_add(candle_bf16* address, candle_bf16 val) { return candle_atomic_add_16(address, val); }

// ===========================================================================
// 8. Overloads of other HIP functions (candle_min, candle_max,
//    candle_atomic_max, ...), which may use the types above.
// ===========================================================================
// That header uses `if constexpr`, which clang accepts before C++17 with a
// -Wc++17-extensions warning (HIP 5.2.3's hipcc defaults to C++14).
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc++17-extensions"
#include "candle_hip_overloads.h"
#pragma clang diagnostic pop

// ===========================================================================
// 9. The contiguous elementwise loops on 16-byte packs (rule elementwise-packs).
// ===========================================================================
#include "candle_elementwise.h"
