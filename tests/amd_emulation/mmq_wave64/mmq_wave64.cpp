// Runs the generated MMQ code (generated/kernels/mmq_gguf/) on ggml's CDNA
// paths in a CPU emulation of 64-lane wavefronts (hip_cpu_device.h, with the
// int8 MFMA instructions of mfma_cpu.h), for gfx942 (CDNA3) and gfx90a (CDNA2),
// each with ggml's MFMA tiles (the default) and with CANDLE_HIP_NO_MMQ_MFMA (its dp4a tiles on
// 64-lane physical warps), and for gfx950 (CDNA4) with its MFMA tiles (CDNA3's
// instructions), and compares every result with an f64 reference.
// Built and run by run.sh (g++ only, no GPU).
//
// Per configuration, type and shape:
//   - random weight blocks in mmq_common.cuh's layouts;
//   - f32 activations quantized to block_q8_1_mmq by the generated quantize
//     kernel (launch_mmq_quantize_q8_1_<layout> of mmq_quantize.hip, run in
//     the emulation), its output checked byte for byte against the expected
//     quantization;
//   - launch_mmq_gguf_<type> (mmq_instance_<type>.hip) called as candle-core's
//     rocm_fast_mmq.rs calls it (cc = 0x1000000 + gfx id, warp_size 64,
//     64 KiB of shared memory per block), which picks mmq_x, mmq_y, nwarps and
//     the shared memory size with ggml's host functions and launches
//     mul_mat_q<type, mmq_x, need_check> (no stream-k on AMD);
//   - reference: f64 dot products of the dequantized weights (ggml's
//     dequantize_row_* formulas, written out below) with the quantized
//     activations read back from the kernel's own block_q8_1_mmq buffer.
//
// The data make every half-precision step of the kernels exact, so that the
// reference is what the kernels compute up to float32 rounding:
//   - activations: x = q * 2^-e with integer q in [-127, 127], one |q| = 127
//     in every 32 values (64 for the D2S6 layout, whose scale spans 64), e
//     constant per 64 values, |sum of 32 q| < 2048: the
//     quantize kernel then reproduces q and d = 2^-e exactly, and its partial
//     sums (stored as half, used by Q4_0's dp4a path, Q4_1/Q5_1/Q4_K/Q5_K/Q2_K)
//     equal d * sum(q) exactly;
//   - weight scales: d (and Q4_1/Q5_1's m) with at most 5 significant bits,
//     K-quant dmin and the mins a power of two: the half2 products the kernels
//     form (Q4_K/Q5_K/Q2_K tile loads: d * sc and dmin * m in half; the dp4a
//     Q4_1/Q5_1 dot: d4 * d8 and m4 * s8 in half) are then exact.
// What remains is float32 rounding of the per-block products and of the sum
// over K (at most K/4 terms per output, each rounded at 2^-24): an NMSE of
// order 1e-14. A case passes at NMSE < 1e-10, four orders above that and ten
// below the O(1) of any misplaced element, lane or scale; outputs the kernel
// did not write (left NaN) or writes outside dst fail too.
#include "hip_cpu_device.h"
#include "suite.h"
#include "mfma_cpu.h"
#include "mmq_config_api.h"

#include <string>
#include <vector>

emu_mmq_api emu_api_cdna3_mfma();
emu_mmq_api emu_api_cdna3_dp4a();
emu_mmq_api emu_api_cdna2_mfma();
emu_mmq_api emu_api_cdna2_dp4a();
emu_mmq_api emu_api_cdna4_mfma();
void run_mfma_selftests(int* passed, int* failed);

namespace {

// ---------------------------------------------------------------------------
// Deterministic random numbers
// ---------------------------------------------------------------------------
struct rng {
    uint64_t s;
    explicit rng(uint64_t seed) : s(seed) {}
    uint64_t next() {  // splitmix64
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    int range(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1)); }
    uint8_t byte() { return static_cast<uint8_t>(next()); }
};

// ---------------------------------------------------------------------------
// binary16, independent of the emulator's conversions: values are built
// exactly representable, and encoding checks that they are.
// ---------------------------------------------------------------------------
double half_value(uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}
uint16_t half_exact(double v) {
    if (v == 0) return std::signbit(v) ? 0x8000 : 0;
    const uint16_t sign = v < 0 ? 0x8000 : 0;
    int exp;
    const double f = std::frexp(std::fabs(v), &exp);  // |v| = f * 2^exp, f in [0.5, 1)
    const int be = exp - 1 + 15;
    if (be < 1 || be > 30) emu_fatal("half_exact: out of the normal half range");
    const double m = std::ldexp(f, 11) - 1024;  // 10 fraction bits
    if (m != std::floor(m)) emu_fatal("half_exact: not representable in half");
    return static_cast<uint16_t>(sign | (be << 10) | static_cast<int>(m));
}
// d with at most 5 significant bits: +-(16..31) * 2^-(10..12), about 0.004 .. 0.03.
uint16_t scale5(rng& r, bool allow_negative = true) {
    const double v = std::ldexp(r.range(16, 31), -r.range(10, 12));
    return half_exact(allow_negative && (r.next() & 1) ? -v : v);
}
// +-2^-(7..10): a min whose products with anything of at most 11 bits are exact in half.
uint16_t pow2(rng& r) {
    const double v = std::ldexp(1.0, -r.range(7, 10));
    return half_exact((r.next() & 1) ? -v : v);
}
void put16(uint8_t* p, uint16_t v) { memcpy(p, &v, 2); }
double get_half(const uint8_t* p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return half_value(v);
}

// ---------------------------------------------------------------------------
// Weight types: block layouts of mmq_common.cuh and ggml's dequantize_row_*
// ---------------------------------------------------------------------------
enum : int { Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14 };

struct wtype {
    int id;
    const char* name;
    int qk;
    size_t bytes;
    void (*gen)(rng&, uint8_t*);
    void (*dequant)(const uint8_t*, double*);
};

// block_q4_0 {half d; uint8 qs[16]}
void gen_q4_0(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    for (int i = 0; i < 16; ++i) b[2 + i] = r.byte();
}
void deq_q4_0(const uint8_t* b, double* y) {
    const double d = get_half(b);
    for (int j = 0; j < 16; ++j) {
        y[j] = ((b[2 + j] & 0xF) - 8) * d;
        y[j + 16] = ((b[2 + j] >> 4) - 8) * d;
    }
}
// block_q4_1 {half2 dm; uint8 qs[16]}
void gen_q4_1(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    put16(b + 2, pow2(r));
    for (int i = 0; i < 16; ++i) b[4 + i] = r.byte();
}
void deq_q4_1(const uint8_t* b, double* y) {
    const double d = get_half(b), m = get_half(b + 2);
    for (int j = 0; j < 16; ++j) {
        y[j] = (b[4 + j] & 0xF) * d + m;
        y[j + 16] = (b[4 + j] >> 4) * d + m;
    }
}
// block_q5_0 {half d; uint8 qh[4]; uint8 qs[16]}
void gen_q5_0(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    for (int i = 0; i < 20; ++i) b[2 + i] = r.byte();
}
void deq_q5_0(const uint8_t* b, double* y) {
    const double d = get_half(b);
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    for (int j = 0; j < 16; ++j) {
        const int xh0 = ((qh >> j) << 4) & 0x10, xh1 = (qh >> (j + 12)) & 0x10;
        y[j] = (((b[6 + j] & 0xF) | xh0) - 16) * d;
        y[j + 16] = (((b[6 + j] >> 4) | xh1) - 16) * d;
    }
}
// block_q5_1 {half2 dm; uint8 qh[4]; uint8 qs[16]}
void gen_q5_1(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    put16(b + 2, pow2(r));
    for (int i = 0; i < 20; ++i) b[4 + i] = r.byte();
}
void deq_q5_1(const uint8_t* b, double* y) {
    const double d = get_half(b), m = get_half(b + 2);
    uint32_t qh;
    memcpy(&qh, b + 4, 4);
    for (int j = 0; j < 16; ++j) {
        const int xh0 = ((qh >> j) << 4) & 0x10, xh1 = (qh >> (j + 12)) & 0x10;
        y[j] = ((b[8 + j] & 0xF) | xh0) * d + m;
        y[j + 16] = ((b[8 + j] >> 4) | xh1) * d + m;
    }
}
// block_q8_0 {half d; int8 qs[32]}
void gen_q8_0(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    for (int i = 0; i < 32; ++i) b[2 + i] = r.byte();
}
void deq_q8_0(const uint8_t* b, double* y) {
    const double d = get_half(b);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<int8_t>(b[2 + j]) * d;
}
// block_q2_K {uint8 scales[16]; uint8 qs[64]; half2 dm (d, dmin)}
void gen_q2_k(rng& r, uint8_t* b) {
    for (int i = 0; i < 80; ++i) b[i] = r.byte();
    put16(b + 80, scale5(r));
    put16(b + 82, pow2(r));
}
void deq_q2_k(const uint8_t* b, double* y) {
    const double d = get_half(b + 80), dmin = get_half(b + 82);
    const uint8_t* q = b + 16;
    int is = 0;
    for (int n = 0; n < 256; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; ++half) {
                const uint8_t sc = b[is++];
                const double dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
                for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
            }
        }
        q += 32;
    }
}
// block_q3_K {uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; half d}
void gen_q3_k(rng& r, uint8_t* b) {
    for (int i = 0; i < 108; ++i) b[i] = r.byte();
    put16(b + 108, scale5(r));
}
void deq_q3_k(const uint8_t* b, double* y) {
    const double d = get_half(b + 108);
    const uint8_t *hm = b, *q = b + 32;
    uint32_t aux[4];
    memcpy(aux, b + 96, 12);
    const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f, tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16];
    memcpy(scales, aux, 16);
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < 256; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; ++half) {
                const double dl = d * (scales[is++] - 32);
                for (int l = 16 * half; l < 16 * half + 16; ++l) *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
            }
            m <<= 1;
        }
        q += 32;
    }
}
// get_scale_min_k4 of ggml-quants.c
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}
// block_q4_K {half2 dm (d, dmin); uint8 scales[12]; uint8 qs[128]}
void gen_q4_k(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    put16(b + 2, pow2(r));
    for (int i = 4; i < 144; ++i) b[i] = r.byte();
}
void deq_q4_k(const uint8_t* b, double* y) {
    const double d = get_half(b), dmin = get_half(b + 2);
    const uint8_t* q = b + 16;
    for (int is = 0; is < 8; is += 2, q += 32) {
        int sc1, m1, sc2, m2;
        scale_min_k4(is, b + 4, sc1, m1);
        scale_min_k4(is + 1, b + 4, sc2, m2);
        for (int l = 0; l < 32; ++l) *y++ = d * sc1 * (q[l] & 0xF) - dmin * m1;
        for (int l = 0; l < 32; ++l) *y++ = d * sc2 * (q[l] >> 4) - dmin * m2;
    }
}
// block_q5_K {half2 dm; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]}
void gen_q5_k(rng& r, uint8_t* b) {
    put16(b, scale5(r));
    put16(b + 2, pow2(r));
    for (int i = 4; i < 176; ++i) b[i] = r.byte();
}
void deq_q5_k(const uint8_t* b, double* y) {
    const double d = get_half(b), dmin = get_half(b + 2);
    const uint8_t *qh = b + 16, *ql = b + 48;
    int u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
        int sc1, m1, sc2, m2;
        scale_min_k4(is, b + 4, sc1, m1);
        scale_min_k4(is + 1, b + 4, sc2, m2);
        for (int l = 0; l < 32; ++l) *y++ = d * sc1 * ((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - dmin * m1;
        for (int l = 0; l < 32; ++l) *y++ = d * sc2 * ((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - dmin * m2;
    }
}
// block_q6_K {uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d}
void gen_q6_k(rng& r, uint8_t* b) {
    for (int i = 0; i < 208; ++i) b[i] = r.byte();
    put16(b + 208, scale5(r));
}
void deq_q6_k(const uint8_t* b, double* y) {
    const double d = get_half(b + 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
    }
}

const wtype kTypes[] = {
    {Q4_0, "q4_0", 32, 18, gen_q4_0, deq_q4_0},   {Q4_1, "q4_1", 32, 20, gen_q4_1, deq_q4_1},
    {Q5_0, "q5_0", 32, 22, gen_q5_0, deq_q5_0},   {Q5_1, "q5_1", 32, 24, gen_q5_1, deq_q5_1},
    {Q8_0, "q8_0", 32, 34, gen_q8_0, deq_q8_0},   {Q2_K, "q2_K", 256, 84, gen_q2_k, deq_q2_k},
    {Q3_K, "q3_K", 256, 110, gen_q3_k, deq_q3_k}, {Q4_K, "q4_K", 256, 144, gen_q4_k, deq_q4_k},
    {Q5_K, "q5_K", 256, 176, gen_q5_k, deq_q5_k}, {Q6_K, "q6_K", 256, 210, gen_q6_k, deq_q6_k},
};

// ---------------------------------------------------------------------------
// Activations and their expected block_q8_1_mmq form
// ---------------------------------------------------------------------------
constexpr int kMatrixRowPadding = 512;  // MATRIX_ROW_PADDING
constexpr size_t kQ8Block = 144;        // block_q8_1_mmq: 16 bytes of scales/sums + 128 int8

struct activations {
    int K, ncols;
    std::vector<float> x;   // [ncols][K]
    std::vector<int8_t> q;  // [ncols][K]
    std::vector<int> e;     // [ncols][K / 64]: x = q * 2^-e
};

// One |q| = 127 in every `span` values (32, or 64 for the D2S6 layout, whose
// scale covers 64 values: then the other 32 of a 64-group may peak lower, so
// that the kernel's 64-wide amax reduction matters).
activations make_activations(int K, int ncols, int span, uint64_t seed) {
    rng r(seed);
    activations a{K, ncols, std::vector<float>(static_cast<size_t>(K) * ncols), std::vector<int8_t>(static_cast<size_t>(K) * ncols),
                  std::vector<int>(static_cast<size_t>(K / 64) * ncols)};
    for (int c = 0; c < ncols; ++c)
        for (int g = 0; g < K / 64; ++g) {
            const int e = r.range(3, 8);
            a.e[static_cast<size_t>(c) * (K / 64) + g] = e;
            int8_t* q = &a.q[static_cast<size_t>(c) * K + 64 * g];
            for (int s0 = 0; s0 < 64; s0 += span) {
                const int peak = s0 + r.range(0, span - 1);
                for (int s = s0; s < s0 + span; s += 32) {
                    // 32 values with |sum| < 2048, the peak (if here) set to +-127, the rest in [-126, 126]
                    for (;;) {
                        int sum = 0;
                        for (int i = s; i < s + 32; ++i) {
                            q[i] = static_cast<int8_t>(i == peak ? ((r.next() & 1) ? 127 : -127) : r.range(-126, 126));
                            sum += q[i];
                        }
                        if (std::abs(sum) < 2048) break;
                    }
                }
            }
            for (int i = 0; i < 64; ++i) a.x[static_cast<size_t>(c) * K + 64 * g + i] = std::ldexp(static_cast<float>(q[i]), -e);
        }
    return a;
}

size_t q8_buffer_bytes(int K, int ncols) {  // as rocm_fast_mmq.rs sizes its workspace
    const int k_padded = (K + kMatrixRowPadding - 1) / kMatrixRowPadding * kMatrixRowPadding;
    return static_cast<size_t>(ncols) * (k_padded / 128) * kQ8Block + 128 * kQ8Block;
}

// The block_q8_1_mmq bytes the quantize kernel must write for 128-block kb of column c.
void expected_q8_block(const activations& a, int layout, int c, int kb, uint8_t* out) {
    const int8_t* q = &a.q[static_cast<size_t>(c) * a.K + 128 * kb];
    auto e_of = [&](int k) { return a.e[static_cast<size_t>(c) * (a.K / 64) + (128 * kb + k) / 64]; };
    auto sum_of = [&](int k0, int n) {
        int s = 0;
        for (int i = 0; i < n; ++i) s += q[k0 + i];
        return s;
    };
    memset(out, 0, 16);
    for (int s = 0; s < 4; ++s) {
        const double d = std::ldexp(1.0, -e_of(32 * s));
        if (layout == EMU_DS_D4) {
            const float f = static_cast<float>(d);
            memcpy(out + 4 * s, &f, 4);
        } else if (layout == EMU_DS_DS4) {
            put16(out + 4 * s, half_exact(d));
            put16(out + 4 * s + 2, half_exact(d * sum_of(32 * s, 32)));
        }
    }
    if (layout == EMU_DS_D2S6) {
        put16(out + 0, half_exact(std::ldexp(1.0, -e_of(0))));
        put16(out + 2, half_exact(std::ldexp(1.0, -e_of(64))));
        for (int t = 0; t < 6; ++t) put16(out + 4 + 2 * t, half_exact(std::ldexp(1.0, -e_of(16 * t)) * sum_of(16 * t, 16)));
    }
    memcpy(out + 16, q, 128);
}

// Activation k of column c as the kernels see it: q * d from the kernel's buffer.
double q8_value(const uint8_t* buf, int layout, int ncols, int c, int k) {
    const uint8_t* blk = buf + (static_cast<size_t>(k / 128) * ncols + c) * kQ8Block;
    const int kk = k % 128;
    double d;
    if (layout == EMU_DS_D4) {
        float f;
        memcpy(&f, blk + 4 * (kk / 32), 4);
        d = f;
    } else if (layout == EMU_DS_DS4) {
        d = get_half(blk + 4 * (kk / 32));
    } else {
        d = get_half(blk + 2 * (kk / 64));
    }
    return static_cast<int8_t>(blk[16 + kk]) * d;
}

// ---------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------
struct shape {
    int rows, K, ncols;
};
const shape kShapes[] = {
    {128, 256, 8},    // one row tile; a single partial column tile
    {200, 512, 37},   // rows not a multiple of mmq_y (need_check), two K iterations, partial column tile
    {256, 256, 250},  // several row and column tiles; MFMA picks mmq_x = 128 (granularity 32, two x minitiles per warp)
};

struct result {
    std::vector<float> y;
    double nmse = 0, max_abs = 0;
    bool pass = false;
};

uint64_t case_seed(int type, int shape_index) { return 0x1234567ull * static_cast<uint64_t>(type) + 977ull * shape_index; }

result run_case(const emu_mmq_api& api, const wtype& t, int si, const std::vector<uint8_t>& q8buf) {
    const shape sh = kShapes[si];
    const int nblk = sh.K / t.qk;
    // weights, padded at the end as candle's QRocmStorage pads them
    rng r(case_seed(t.id, si));
    const size_t wbytes = static_cast<size_t>(sh.rows) * nblk * t.bytes, wpad = kMatrixRowPadding * t.bytes / t.qk;
    std::vector<uint8_t> w(wbytes + wpad);
    for (size_t b = 0; b < static_cast<size_t>(sh.rows) * nblk; ++b) t.gen(r, &w[b * t.bytes]);
    for (size_t i = wbytes; i < w.size(); ++i) w[i] = r.byte();
    // dst with NaN (not written) and a guard after it
    constexpr size_t kGuard = 1024;
    const size_t nout = static_cast<size_t>(sh.rows) * sh.ncols;
    std::vector<float> dst(nout + kGuard, std::nanf(""));
    std::vector<float> fixup(16);
    const int layout = api.ds_layout(t.id);
    api.mmq[t.id](fixup.data(), w.data(), q8buf.data(), dst.data(), sh.K, sh.rows, sh.ncols, nblk, sh.rows, api.cc, 304, 65536, 64, nullptr);
    bool guard_ok = true;
    for (size_t i = nout; i < dst.size(); ++i) guard_ok &= std::isnan(dst[i]);
    // reference
    std::vector<double> wrow(static_cast<size_t>(sh.K)), ycol(static_cast<size_t>(sh.K) * sh.ncols);
    for (int c = 0; c < sh.ncols; ++c)
        for (int k = 0; k < sh.K; ++k) ycol[static_cast<size_t>(c) * sh.K + k] = q8_value(q8buf.data(), layout, sh.ncols, c, k);
    double se = 0, sr = 0, max_abs = 0;
    bool finite = true;
    for (int i = 0; i < sh.rows; ++i) {
        for (int b = 0; b < nblk; ++b) t.dequant(&w[(static_cast<size_t>(i) * nblk + b) * t.bytes], &wrow[static_cast<size_t>(b) * t.qk]);
        for (int c = 0; c < sh.ncols; ++c) {
            double ref = 0;
            const double* yc = &ycol[static_cast<size_t>(c) * sh.K];
            for (int k = 0; k < sh.K; ++k) ref += wrow[k] * yc[k];
            const double got = dst[static_cast<size_t>(c) * sh.rows + i];
            finite &= std::isfinite(got);
            se += (got - ref) * (got - ref);
            sr += ref * ref;
            max_abs = std::max(max_abs, std::fabs(got - ref));
        }
    }
    result res;
    res.y.assign(dst.begin(), dst.begin() + static_cast<long>(nout));
    res.nmse = finite ? se / sr : NAN;
    res.max_abs = finite ? max_abs : NAN;
    res.pass = finite && guard_ok && res.nmse < 1e-10;
    if (!guard_ok) printf("  FAILED  %s %s: wrote past the end of dst\n", api.name, t.name);
    return res;
}

double nmse_between(const std::vector<float>& a, const std::vector<float>& b) {
    double se = 0, sr = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        se += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        sr += static_cast<double>(b[i]) * b[i];
    }
    return se / sr;
}

}  // namespace

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const auto t0 = std::chrono::steady_clock::now();
    printf("== emulated MFMA instructions (mfma_cpu.h) ==\n");
    run_mfma_selftests(&g_passed, &g_failed);

    // the configurations run.sh built (MMQ_CFG_name; all five but in a sample)
    const std::vector<emu_mmq_api> apis = {
#ifdef MMQ_CFG_cdna3_mfma
        emu_api_cdna3_mfma(),
#endif
#ifdef MMQ_CFG_cdna3_dp4a
        emu_api_cdna3_dp4a(),
#endif
#ifdef MMQ_CFG_cdna2_mfma
        emu_api_cdna2_mfma(),
#endif
#ifdef MMQ_CFG_cdna2_dp4a
        emu_api_cdna2_dp4a(),
#endif
#ifdef MMQ_CFG_cdna4_mfma
        emu_api_cdna4_mfma(),
#endif
    };
    constexpr int kMaxConfigs = 5;
    const int kConfigs = static_cast<int>(apis.size());
    check(kConfigs > 0, "at least one configuration built");
    // results[config][type][shape]
    static result results[kMaxConfigs][sizeof kTypes / sizeof kTypes[0]][sizeof kShapes / sizeof kShapes[0]];

    printf("\n== configurations ==\n");
    for (const emu_mmq_api& api : apis) {
        printf("%s (%s) MFMA %-3s: cc 0x%x, device AMD_MFMA_AVAILABLE %d, host amd_mfma_available %d, physical warp %d, "
               "mmq_y %d, nwarps %d\n",
               api.name, api.family, api.mfma ? "on" : "off", api.cc, api.mfma, api.mfma_host, api.physical_warp, api.mmq_y(), api.nwarps());
        check(api.mfma == api.mfma_host, std::string(api.name) + ": host and device agree on the MFMA path");
        check(api.physical_warp == 64, std::string(api.name) + ": 64-lane physical warp");
        check(api.q8_1_mmq_bytes == kQ8Block, "sizeof(block_q8_1_mmq) == 144");
        for (const wtype& t : kTypes) check(api.block_bytes[t.id] == t.bytes, std::string("sizeof(block_") + t.name + ") matches the reference's layout");
        api.tile_selftest(&g_passed, &g_failed);
    }

    printf("\n== mul_mat_q against the f64 reference (NMSE = sum((y-ref)^2)/sum(ref^2); pass: NMSE < 1e-10) ==\n");
    printf("%-7s %-6s %-4s %-5s %-14s %6s %-9s %-8s %6s %11s %11s  %s\n", "arch", "family", "MFMA", "type", "rows x K x cols", "mmq_x",
           "grid", "block", "shmem", "NMSE", "max|err|", "result");
    for (int ci = 0; ci < kConfigs; ++ci) {
        const emu_mmq_api& api = apis[ci];
        for (int si = 0; si < static_cast<int>(sizeof kShapes / sizeof kShapes[0]); ++si) {
            const shape sh = kShapes[si];
            const int k_padded = (sh.K + kMatrixRowPadding - 1) / kMatrixRowPadding * kMatrixRowPadding;
            std::vector<uint8_t> q8[3];
            for (int layout = 0; layout < 3; ++layout) {
                const activations act = make_activations(sh.K, sh.ncols, layout == EMU_DS_D2S6 ? 64 : 32, 0xac7ull + 16 * si + layout);
                // the generated quantize kernel, launched as rocm_fast_mmq.rs launches it
                q8[layout].assign(q8_buffer_bytes(sh.K, sh.ncols), 0xA5);
                api.quantize[layout](act.x.data(), nullptr, q8[layout].data(), 0, sh.K, sh.K, 0, 0, k_padded, sh.ncols, 1, 1, nullptr);
                bool ok = true;
                uint8_t want[kQ8Block];
                for (int c = 0; c < sh.ncols; ++c)
                    for (int kb = 0; kb < sh.K / 128; ++kb) {
                        expected_q8_block(act, layout, c, kb, want);
                        ok &= memcmp(want, &q8[layout][(static_cast<size_t>(kb) * sh.ncols + c) * kQ8Block], kQ8Block) == 0;
                    }
                char what[160];
                snprintf(what, sizeof what, "%s: quantize_mmq_q8_1<%s> of %d x %d activations is the exact quantization", api.name,
                         layout == 0 ? "D4" : layout == 1 ? "DS4" : "D2S6", sh.ncols, sh.K);
                check(ok, what);
            }
            for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ++ti) {
                const wtype& t = kTypes[ti];
                result& res = results[ci][ti][si];
                res = run_case(api, t, si, q8[api.ds_layout(t.id)]);
                const int mmq_x = api.chosen_mmq_x(t.id, sh.ncols, 65536);
                const bool config_ok = emu_last_block.x == 64 && emu_last_block.y == static_cast<uint32_t>(api.nwarps()) &&
                                       emu_last_grid.x == static_cast<uint32_t>((sh.rows + api.mmq_y() - 1) / api.mmq_y()) &&
                                       emu_last_grid.y == static_cast<uint32_t>((sh.ncols + mmq_x - 1) / mmq_x) &&
                                       emu_last_shmem == api.nbytes_shared(t.id, mmq_x);
                char dims[32], grid[16], block[16];
                snprintf(dims, sizeof dims, "%dx%dx%d", sh.rows, sh.K, sh.ncols);
                snprintf(grid, sizeof grid, "%ux%ux%u", emu_last_grid.x, emu_last_grid.y, emu_last_grid.z);
                snprintf(block, sizeof block, "%ux%u", emu_last_block.x, emu_last_block.y);
                printf("%-7s %-6s %-4s %-5s %-14s %6d %-9s %-8s %6zu %11.3e %11.3e  %s\n", api.name, api.family, api.mfma ? "on" : "off", t.name,
                       dims, mmq_x, grid, block, emu_last_shmem, res.nmse, res.max_abs, res.pass && config_ok ? "pass" : "FAIL");
                char what[160];
                snprintf(what, sizeof what, "%s MFMA %s %s %s against the reference", api.name, api.mfma ? "on" : "off", t.name, dims);
                check(res.pass, what);
                snprintf(what, sizeof what, "%s MFMA %s %s %s launch is (64, nwarps) x (rows/mmq_y, cols/mmq_x) with the expected shared size",
                         api.name, api.mfma ? "on" : "off", t.name, dims);
                check(config_ok, what);
            }
        }
    }

    // where the four CDNA2/3 configurations were built, results 0-3 are theirs (apis' order)
#if defined(MMQ_CFG_cdna3_mfma) && defined(MMQ_CFG_cdna3_dp4a) && defined(MMQ_CFG_cdna2_mfma) && defined(MMQ_CFG_cdna2_dp4a)
    constexpr bool all_paths = true;
#else
    constexpr bool all_paths = false;
#endif
    printf("\n== the paths against each other (NMSE; float32 sums in different orders: ~1e-14) ==\n");
    if (!all_paths) printf("not compared: a sample of the configurations ran (MMQ_WAVE64_CONFIGS)\n");
    else printf("%-5s %-14s %14s %14s %14s\n", "type", "rows x K x cols", "gfx942 m/dp4a", "gfx90a m/dp4a", "MFMA 942/90a");
    for (size_t ti = 0; all_paths && ti < sizeof kTypes / sizeof kTypes[0]; ++ti)
        for (int si = 0; si < static_cast<int>(sizeof kShapes / sizeof kShapes[0]); ++si) {
            char dims[32];
            snprintf(dims, sizeof dims, "%dx%dx%d", kShapes[si].rows, kShapes[si].K, kShapes[si].ncols);
            const double a = nmse_between(results[0][ti][si].y, results[1][ti][si].y);
            const double b = nmse_between(results[2][ti][si].y, results[3][ti][si].y);
            const double c = nmse_between(results[0][ti][si].y, results[2][ti][si].y);
            printf("%-5s %-14s %14.3e %14.3e %14.3e%s\n", kTypes[ti].name, dims, a, b, c, c == 0 ? " (identical)" : "");
        }

    // Not pass/fail: what the launchers do with the shared-memory limit candle
    // passes (rocm_fast_mmq.rs reads the *opt-in* per-block limit, which HIP
    // 6.0.x reports as 0 (ROCm/hip#3516); its fallback when the query fails is
    // 48 KiB; ggml's HIP build passes sharedMemPerBlock, 64 KiB on CDNA).
    printf("\n== info: mmq_x that launch_mmq_case_<type> picks for 250 columns, by the smpbo candle passes (0: no tile fits) ==\n");
    printf("%-7s %-4s %6s ", "arch", "MFMA", "smpbo");
    for (const wtype& t : kTypes) printf(" %5s", t.name);
    printf("\n");
    for (const emu_mmq_api& api : apis)
        for (int64_t smpbo : {65536, 49152, 0}) {
            printf("%-7s %-4s %6lld ", api.name, api.mfma ? "on" : "off", static_cast<long long>(smpbo));
            for (const wtype& t : kTypes) printf(" %5d", api.chosen_mmq_x(t.id, 250, smpbo));
            printf("\n");
        }
    {
        // The launcher itself, with smpbo 0 (no tile fits): upstream's `default: break;`
        // launched nothing and left dst unwritten; the translation stops loudly as
        // ggml does (rule ggml-host-tiles: GGML_ABORT, here its device-pass form,
        // a message and a trap). Run in a child process, which must die so.
        const emu_mmq_api& api = apis[0];
        std::string out;
        const int sig = emu_run_in_child([&] {
            std::vector<uint8_t> w(128 * 8 * 18 + 1024, 0), y(q8_buffer_bytes(256, 8), 0);
            std::vector<float> dst(128 * 8, -1.0f);
            api.mmq[Q4_0](nullptr, w.data(), y.data(), dst.data(), 256, 128, 8, 8, 128, api.cc, 304, 0, 64, nullptr);
            printf("returned, dst %s\n", dst[0] == -1.0f ? "left unwritten" : "written");
        }, &out);
        const bool stopped = sig != 0 && out.find("GGML_ABORT: mmq_gguf: no MMQ tile fits") != std::string::npos;
        printf("launch_mmq_gguf_q4_0 on %s with smpbo 0: %s\n", api.name, stopped ? "stops with GGML_ABORT (no tile fits)" : out.c_str());
        check(stopped, "a launcher whose shape no tile fits stops loudly");
    }

    const uint64_t misaligned = emu_misaligned_vector_accesses.load();
    printf("\nmisaligned 8/16-byte vector accesses (int2/int4 through ggml_cuda_memcpy_1): %llu\n",
           static_cast<unsigned long long>(misaligned));
    check(misaligned == 0, "every 8/16-byte vector access is aligned");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%llu launches in %.1f s\n", static_cast<unsigned long long>(emu_launches), secs);
    return emu_summary();
}
