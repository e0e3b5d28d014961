// fp_convert_test.cpp - CPU tests of translator/compat/candle_fp_convert.h
// against independent oracles (value formulas + nearest-value search, no bit
// tricks shared with the code under test).
//
//   g++ -std=c++17 -O2 -I translator/compat tests/compat/fp_convert_test.cpp -o /tmp/fp_convert_test
//   /tmp/fp_convert_test        # exits non-zero on any failure
//
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "candle_fp_convert.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace {

int g_failed_groups = 0;

struct Group {
    const char* name;
    uint64_t passed = 0, failed = 0;
    explicit Group(const char* n) : name(n) {}
    void check(bool ok, const char* what, unsigned long long input, unsigned long long got, unsigned long long want) {
        if (ok) {
            ++passed;
            return;
        }
        if (++failed <= 10)
            std::printf("  FAIL %s: %s input=0x%llx got=0x%llx want=0x%llx\n", name, what, input, got, want);
    }
    ~Group() {
        std::printf("%-40s %llu passed, %llu failed\n", name, (unsigned long long)passed, (unsigned long long)failed);
        if (failed) ++g_failed_groups;
    }
};

// Deterministic 64-bit generator (splitmix64).
uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint64_t next_u64() {
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t bits32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
double f64(uint64_t u) { double d; std::memcpy(&d, &u, 8); return d; }

// ---- Independent value formulas --------------------------------------------
// OCP E4M3FN: bias 7; exponent field 0 is subnormal; S.1111.111 is NaN.
long double e4m3_value(unsigned code) { // magnitude code 0..0x7E
    const unsigned e = (code >> 3) & 15, m = code & 7;
    if (e == 0) return std::ldexp((long double)m / 8, 1 - 7);
    return std::ldexp(1 + (long double)m / 8, (int)e - 7);
}
// bf16 magnitude; code 0x7F80 (and beyond) is read as 2^128 "unbounded".
long double bf16_value(unsigned code) {
    const unsigned e = (code >> 7) & 0xFF, m = code & 0x7F;
    if (e == 0) return std::ldexp((long double)m / 128, 1 - 127);
    return std::ldexp(1 + (long double)m / 128, (int)e - 127);
}
// IEEE binary16 bits -> value (NaN reported separately).
long double f16_value(uint16_t h, bool* is_nan) {
    const unsigned s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    *is_nan = (e == 31 && m != 0);
    long double v = e == 0 ? std::ldexp((long double)m / 1024, -14)
                           : (e == 31 ? INFINITY : std::ldexp(1 + (long double)m / 1024, (int)e - 15));
    return s ? -v : v;
}

// Nearest magnitude code to a >= 0 among codes 0..max_code (values ascending
// with the code), ties to the even code. Beyond max_code: saturate, or compare
// with code max_code + 1 read through value() (bf16: infinity at 2^128).
template <typename ValueFn>
unsigned nearest_code(long double a, unsigned max_code, bool saturate, ValueFn value) {
    if (a >= value(max_code)) {
        if (saturate) return max_code;
        const long double lo = value(max_code), hi = value(max_code + 1);
        if (a >= hi) return max_code + 1;
        const long double dl = a - lo, dh = hi - a;
        return dl < dh ? max_code : (dh < dl ? max_code + 1 : ((max_code & 1) ? max_code + 1 : max_code));
    }
    unsigned lo = 0, hi = max_code; // value(lo) <= a < value(hi)
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        if (value(mid) <= a) lo = mid; else hi = mid;
    }
    const long double dl = a - value(lo), dh = value(hi) - a;
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return (lo & 1) ? hi : lo;
}

unsigned fp8_oracle(long double x, bool nan_keeps_sign) {
    const bool neg = std::signbit(x);
    if (std::isnan(x)) return (nan_keeps_sign && neg) ? 0xFF : 0x7F;
    const long double a = std::fabs(x);
    const unsigned code = std::isinf(a) ? 0x7E : nearest_code(a, 0x7E, true, e4m3_value);
    return (neg ? 0x80u : 0u) | code;
}
unsigned bf16_oracle(long double x) {
    if (std::isnan(x)) return 0x7FFF;
    const bool neg = std::signbit(x);
    const long double a = std::fabs(x);
    const unsigned code = std::isinf(a) ? 0x7F80 : nearest_code(a, 0x7F7F, false, bf16_value);
    return (neg ? 0x8000u : 0u) | code;
}

// Low 12-bit patterns combined with every top-20-bit prefix of a float.
const uint32_t kLowPatterns[] = {0x000, 0x001, 0x7FF, 0x800, 0x801, 0xFFF};

long double e5m2_value(unsigned code) {
    const unsigned e = (code >> 2) & 0x1F, m = code & 3;
    if (e == 0) return std::ldexp((long double)m / 4, 1 - 15);
    return std::ldexp(1 + (long double)m / 4, (int)e - 15);
}

// float -> e5m2 in both modes against the exact oracle (0x7C: infinity, the code after max)
void check_f32_to_e5m2(Group& g, uint32_t u) {
    const long double x = (long double)f32(u);
    for (bool sat : {true, false}) {
        unsigned want;
        if (std::isnan(x)) want = 0x7F;
        else {
            const long double a = std::fabs(x);
            const unsigned code = std::isinf(a) ? (sat ? 0x7B : 0x7C) : nearest_code(a, 0x7B, sat, e5m2_value);
            want = (std::signbit(x) ? 0x80u : 0u) | code;
        }
        const unsigned got = candle_f32_to_fp8_e5m2_mode(f32(u), sat);
        g.check(got == want, sat ? "f32->e5m2 satfinite" : "f32->e5m2 nosat", u, got, want);
    }
}

void test_f32_to_e5m2() {
    Group g("f32 -> fp8 e5m2 (sweep)");
    for (uint32_t hi = 0; hi < (1u << 20); hi += 3) {
        for (uint32_t lo : kLowPatterns) check_f32_to_e5m2(g, (hi << 12) | lo);
    }
    for (unsigned c = 0; c < 0x7C; ++c) {
        const float mid = (float)((e5m2_value(c) + e5m2_value(c + 1)) / 2);
        for (int d = -2; d <= 2; ++d) {
            check_f32_to_e5m2(g, bits32(mid) + (uint32_t)d);
            check_f32_to_e5m2(g, (bits32(mid) + (uint32_t)d) | 0x80000000u);
        }
    }
    for (uint32_t u : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x477FE000u /*65504*/, 0x47600000u /*57344*/}) check_f32_to_e5m2(g, u);
    // decode: every code's binary16 is the code's value (NaNs: the canonical 0x7FFF)
    for (unsigned c = 0; c < 256; ++c) {
        const uint16_t h = candle_fp8_e5m2_to_f16_bits((uint8_t)c);
        bool nan = false;
        const long double v = f16_value(h, &nan);
        const bool code_nan = (c & 0x7F) > 0x7C;
        const long double want = (c & 0x7F) == 0x7C ? INFINITY : e5m2_value(c & 0x7F);
        const bool ok = code_nan ? h == 0x7FFF : (!nan && std::fabs(v) == want && std::signbit(v) == ((c & 0x80) != 0));
        g.check(ok, "e5m2 -> f16", c, h, 0);
        // and to float: the same value (NaNs: 0x7FFFFFFF)
        const float f = candle_fp8_e5m2_to_f32((uint8_t)c);
        const bool fok = code_nan ? bits32(f) == 0x7FFFFFFFu : ((long double)std::fabs(f) == want && std::signbit(f) == ((c & 0x80) != 0));
        g.check(fok, "e5m2 -> f32", c, bits32(f), 0);
    }
}

// binary16 -> float: every code, exact (NaNs: 0x7FFFFFFF)
void test_f16_to_f32() {
    Group g("f16 -> f32 (all 65536)");
    for (uint32_t h = 0; h < 65536; ++h) {
        bool nan = false;
        const long double want = f16_value((uint16_t)h, &nan);
        const float f = candle_f16_bits_to_f32((uint16_t)h);
        const bool ok = nan ? bits32(f) == 0x7FFFFFFFu : ((long double)f == want && std::signbit(f) == ((h & 0x8000) != 0));
        g.check(ok, "f16 -> f32", h, bits32(f), 0);
    }
}

void test_fp8_decode() {
    Group g("fp8 e4m3 decode (all 256)");
    for (unsigned b = 0; b < 256; ++b) {
        const bool nan = (b & 0x7F) == 0x7F;
        const long double want = nan ? 0 : ((b & 0x80) ? -e4m3_value(b & 0x7F) : e4m3_value(b & 0x7F));
        const float f = candle_fp8_e4m3_to_f32((uint8_t)b);
        bool h_nan;
        const uint16_t h = candle_fp8_e4m3_to_f16_bits((uint8_t)b);
        const long double hv = f16_value(h, &h_nan);
        if (nan) {
            g.check(std::isnan(f), "to_f32 NaN", b, bits32(f), 0x7FFFFFFF);
            g.check(h == 0x7FFF, "to_f16 NaN", b, h, 0x7FFF);
        } else {
            g.check((long double)f == want && std::signbit(f) == std::signbit(want), "to_f32", b, bits32(f), 0);
            g.check(!h_nan && hv == want && std::signbit(hv) == std::signbit(want), "to_f16", b, h, 0);
        }
    }
    // Spot values of the format.
    g.check(candle_fp8_e4m3_to_f32(0x7E) == 448.0f, "max", 0x7E, 0, 0);
    g.check(candle_fp8_e4m3_to_f32(0x01) == std::ldexp(1.0f, -9), "min subnormal", 0x01, 0, 0);
    g.check(candle_fp8_e4m3_to_f32(0x08) == std::ldexp(1.0f, -6), "min normal", 0x08, 0, 0);
    g.check(candle_fp8_e4m3_to_f32(0x38) == 1.0f, "one", 0x38, 0, 0);
}

void check_f32_to_fp8(Group& g, uint32_t u) {
    const unsigned got = candle_f32_to_fp8_e4m3(f32(u));
    const unsigned want = fp8_oracle((long double)f32(u), false);
    g.check(got == want, "f32->fp8", u, got, want);
    // __NV_NOSAT: what would round beyond 448 (above 464, the tie that rounds to even 448) and
    // the infinities give NaN with the sign; everything else as the saturating conversion
    const long double a = std::fabs((long double)f32(u));
    const bool overflows = !std::isnan(a) && (std::isinf(a) || a > 464.0L);
    const unsigned nosat = overflows ? ((u >> 24) & 0x80u) | 0x7Fu : want;
    const unsigned got_nosat = candle_f32_to_fp8_e4m3_mode(f32(u), false);
    g.check(got_nosat == nosat, "f32->fp8 nosat", u, got_nosat, nosat);
}

void test_f32_to_fp8() {
    Group g("f32 -> fp8 e4m3 (dense sweep)");
    for (uint32_t hi = 0; hi < (1u << 20); ++hi) {
        for (uint32_t lo : kLowPatterns) check_f32_to_fp8(g, (hi << 12) | lo);
        check_f32_to_fp8(g, (hi << 12) | (uint32_t)(next_u64() & 0xFFF));
    }
    // Every float in the fp8 range [2^-11, 2^9] with exact mantissa granularity
    // around each rounding boundary (boundary +- 3 ulp of float).
    for (unsigned c = 0; c < 0x7F; ++c) {
        const float mid = (float)((e4m3_value(c) + (c < 0x7E ? e4m3_value(c + 1) : 480.0L)) / 2);
        for (int d = -3; d <= 3; ++d) {
            check_f32_to_fp8(g, bits32(mid) + (uint32_t)d);
            check_f32_to_fp8(g, (bits32(mid) + (uint32_t)d) | 0x80000000u);
        }
    }
    const uint32_t edges[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                              0x7F800001u, 0xFFFFFFFFu, 0x43E00000u /*448*/, 0x43E80000u /*464*/,
                              0x43E80001u, 0x43E7FFFFu, 0x3A800000u /*2^-10*/, 0x3A800001u, 0x7F7FFFFFu};
    for (uint32_t u : edges) check_f32_to_fp8(g, u);
    // NaN: always 0x7F, whatever the sign or payload.
    g.check(candle_f32_to_fp8_e4m3(f32(0xFFC00000u)) == 0x7F, "-NaN", 0xFFC00000u,
            candle_f32_to_fp8_e4m3(f32(0xFFC00000u)), 0x7F);
    g.check(candle_f32_to_fp8_e4m3(INFINITY) == 0x7E && candle_f32_to_fp8_e4m3(-INFINITY) == 0xFE, "inf", 0, 0, 0);
    g.check(candle_f32_to_fp8_e4m3(-0.0f) == 0x80, "-0", 0, 0, 0);
}

void check_f64_to_fp8(Group& g, double d) {
    uint64_t u; std::memcpy(&u, &d, 8);
    const unsigned got = candle_f64_to_fp8_e4m3(d);
    const unsigned want = fp8_oracle((long double)d, true);
    g.check(got == want, "f64->fp8", u, got, want);
}

void test_f64_to_fp8() {
    Group g("f64 -> fp8 e4m3 (random + ties)");
    for (int i = 0; i < 1000000; ++i) {
        // Random exponent in [-14, 10], random 52-bit mantissa, random sign.
        const uint64_t r = next_u64();
        const uint64_t e = (uint64_t)(1023 - 14 + (int)(r % 25));
        check_f64_to_fp8(g, f64((next_u64() & 0x800FFFFFFFFFFFFFull) | (e << 52)));
        check_f64_to_fp8(g, f64(next_u64())); // anything, incl. NaN / huge / tiny
    }
    // Ties broken only by bits below float precision: must round once.
    for (unsigned c = 0; c < 0x7E; ++c) {
        const double mid = (double)((e4m3_value(c) + e4m3_value(c + 1)) / 2);
        for (double eps : {0.0, 1e-12, -1e-12}) {
            check_f64_to_fp8(g, mid * (1 + eps));
            check_f64_to_fp8(g, -mid * (1 + eps));
        }
    }
    check_f64_to_fp8(g, 1.0625 + std::ldexp(1.0, -40)); // rounds up (via float it would tie down)
    g.check(candle_f64_to_fp8_e4m3(1.0625 + std::ldexp(1.0, -40)) == 0x39, "sticky", 0, 0, 0x39);
    g.check(candle_f64_to_fp8_e4m3(f64(0xFFF8000000000000ull)) == 0xFF, "-NaN keeps sign", 0, 0, 0xFF);
    g.check(candle_f64_to_fp8_e4m3(f64(0x7FF8000000000000ull)) == 0x7F, "+NaN", 0, 0, 0x7F);
    check_f64_to_fp8(g, 464.0);
    check_f64_to_fp8(g, std::nextafter(464.0, 0.0));
    check_f64_to_fp8(g, std::nextafter(464.0, 1e9));
    check_f64_to_fp8(g, 1e300);
    check_f64_to_fp8(g, -1e-300);
    check_f64_to_fp8(g, f64(1)); // double subnormal
}

void check_f32_to_bf16(Group& g, uint32_t u) {
    const unsigned got = candle_f32_to_bf16_bits(f32(u));
    const unsigned want = bf16_oracle((long double)f32(u));
    g.check(got == want, "f32->bf16", u, got, want);
}

void test_bf16() {
    {
        Group g("f32 -> bf16 (dense sweep)");
        for (uint32_t hi = 0; hi < (1u << 20); ++hi) {
            for (uint32_t lo : kLowPatterns) check_f32_to_bf16(g, (hi << 12) | lo);
            check_f32_to_bf16(g, (hi << 12) | (uint32_t)(next_u64() & 0xFFF));
        }
        const uint32_t edges[] = {0x7F7FFFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0xFF7F8000u, 0x00008000u, 0x00018000u,
                                  0x00007FFFu, 0x80008000u, 0x3F808000u, 0x3F818000u, 0x7F800000u, 0xFF800000u};
        for (uint32_t u : edges) check_f32_to_bf16(g, u);
    }
    {
        Group g("bf16 round trip (all 65536)");
        for (uint32_t b = 0; b < 65536; ++b) {
            const float f = candle_bf16_bits_to_f32((uint16_t)b);
            const bool nan = (b & 0x7FFF) > 0x7F80;
            g.check(bits32(f) == (b << 16), "to_f32", b, bits32(f), b << 16);
            const unsigned back = candle_f32_to_bf16_bits(f);
            g.check(back == (nan ? 0x7FFFu : b), "f32->bf16", b, back, nan ? 0x7FFFu : b);
            const unsigned back64 = candle_f64_to_bf16_bits((double)f);
            g.check(back64 == (nan ? 0x7FFFu : b), "f64->bf16", b, back64, nan ? 0x7FFFu : b);
        }
    }
    {
        Group g("bf16 NaN -> 0x7FFF");
        for (int i = 0; i < 100000; ++i) {
            const uint32_t u = (0x7F800001u + (uint32_t)(next_u64() % 0x7FFFFFu)) | ((uint32_t)(next_u64() & 1) << 31);
            g.check(candle_f32_to_bf16_bits(f32(u)) == 0x7FFF, "NaN", u, candle_f32_to_bf16_bits(f32(u)), 0x7FFF);
        }
    }
    {
        Group g("f64 -> bf16 (random + ties)");
        for (int i = 0; i < 1000000; ++i) {
            const uint64_t e = (uint64_t)(1023 - 140 + (int)(next_u64() % 272)); // around bf16's range
            const double d = f64((next_u64() & 0x800FFFFFFFFFFFFFull) | (e << 52));
            const unsigned got = candle_f64_to_bf16_bits(d), want = bf16_oracle((long double)d);
            g.check(got == want, "f64->bf16", e, got, want);
            const double any = f64(next_u64());
            const unsigned got2 = candle_f64_to_bf16_bits(any), want2 = bf16_oracle((long double)any);
            g.check(got2 == want2, "f64->bf16 any", 0, got2, want2);
        }
        // 1 + 2^-8 is a bf16 tie (rounds to 1); a tiny sticky bit must round up.
        const double sticky = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
        g.check(candle_f64_to_bf16_bits(sticky) == 0x3F81, "sticky", 0, candle_f64_to_bf16_bits(sticky), 0x3F81);
        g.check(candle_f64_to_bf16_bits(1.0 + std::ldexp(1.0, -8)) == 0x3F80, "tie", 0, 0, 0x3F80);
    }
    {
        Group g("int -> bf16 (random + edges)");
        auto check_i = [&](int64_t v) {
            const unsigned got = candle_i64_to_bf16_bits(v), want = bf16_oracle((long double)v);
            g.check(got == want, "i64->bf16", (unsigned long long)v, got, want);
        };
        auto check_u = [&](uint64_t v) {
            const unsigned got = candle_u64_to_bf16_bits(v), want = bf16_oracle((long double)v);
            g.check(got == want, "u64->bf16", v, got, want);
        };
        for (int i = 0; i < 300000; ++i) {
            const uint64_t r = next_u64() >> (next_u64() % 64);
            check_u(r);
            check_i((int64_t)r);
            check_i(-(int64_t)(r >> 1));
        }
        for (int64_t v = -70000; v <= 70000; ++v) check_i(v);
        check_i(INT64_MIN);
        check_i(INT64_MAX);
        check_u(UINT64_MAX);
        check_i((1 << 24) + (1 << 16) + 1); // via float this would tie down
        g.check(candle_i64_to_bf16_bits((1 << 24) + (1 << 16) + 1) == 0x4B81, "single rounding", 0, 0, 0x4B81);
    }
}

// ---- Integer SIMD against per-byte references ------------------------------
int8_t sbyte(uint32_t v, int i) { return (int8_t)(uint8_t)(v >> (8 * i)); }
uint8_t ubyte(uint32_t v, int i) { return (uint8_t)(v >> (8 * i)); }

void check_simd(Group& g, uint32_t a, uint32_t b, uint32_t c) {
    int64_t sd = (int32_t)c;
    uint64_t ud = c;
    uint32_t sub = 0, subss = 0, ne = 0;
    for (int i = 0; i < 4; ++i) {
        sd += (int64_t)sbyte(a, i) * sbyte(b, i);
        ud += (uint64_t)ubyte(a, i) * ubyte(b, i);
        sub |= (uint32_t)(uint8_t)(ubyte(a, i) - ubyte(b, i)) << (8 * i);
        int d = sbyte(a, i) - sbyte(b, i);
        d = d < -128 ? -128 : (d > 127 ? 127 : d);
        subss |= (uint32_t)(uint8_t)(int8_t)d << (8 * i);
        ne |= (ubyte(a, i) != ubyte(b, i) ? 0xFFu : 0u) << (8 * i);
    }
    const uint32_t dp = (uint32_t)candle_dp4a((int)a, (int)b, (int)c);
    g.check(dp == (uint32_t)sd, "dp4a", ((uint64_t)a << 32) | b, dp, (uint32_t)sd);
    const uint32_t udp = candle_dp4a(a, b, c);
    g.check(udp == (uint32_t)ud, "dp4a unsigned", ((uint64_t)a << 32) | b, udp, (uint32_t)ud);
    g.check(candle_vsub4(a, b) == sub, "vsub4", ((uint64_t)a << 32) | b, candle_vsub4(a, b), sub);
    g.check(candle_vsubss4(a, b) == subss, "vsubss4", ((uint64_t)a << 32) | b, candle_vsubss4(a, b), subss);
    g.check(candle_vcmpne4(a, b) == ne, "vcmpne4", ((uint64_t)a << 32) | b, candle_vcmpne4(a, b), ne);
}

void test_simd() {
    Group g("int SIMD (dp4a/vsub4/vsubss4/vcmpne4)");
    // Every byte pair in every lane, other lanes random.
    for (uint32_t x = 0; x < 256; ++x)
        for (uint32_t y = 0; y < 256; ++y)
            for (int lane = 0; lane < 4; ++lane) {
                const uint32_t mask = 0xFFu << (8 * lane);
                const uint32_t a = ((uint32_t)next_u64() & ~mask) | (x << (8 * lane));
                const uint32_t b = ((uint32_t)next_u64() & ~mask) | (y << (8 * lane));
                check_simd(g, a, b, (uint32_t)next_u64());
            }
    for (int i = 0; i < 200000; ++i) {
        const uint32_t a = (uint32_t)next_u64();
        check_simd(g, a, (uint32_t)next_u64(), (uint32_t)next_u64());
        check_simd(g, a, a ^ (0xFFu << (8 * (i & 3))), 0x7FFFFFFFu); // wrap of the accumulator
    }
    check_simd(g, 0x80808080u, 0x80808080u, 0x7FFFFFFFu);
    check_simd(g, 0x7F7F7F7Fu, 0x80808080u, 0);
    check_simd(g, 0x80808080u, 0x7F7F7F7Fu, 0);
}

} // namespace

int main() {
    test_fp8_decode();
    test_f32_to_fp8();
    test_f32_to_e5m2();
    test_f16_to_f32();
    test_f64_to_fp8();
    test_bf16();
    test_simd();
    if (g_failed_groups) {
        std::printf("FAILED: %d group(s)\n", g_failed_groups);
        return 1;
    }
    std::printf("all passed\n");
    return 0;
}
