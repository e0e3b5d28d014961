// amd_gfx_emulation_cpu.cpp - the CPU half of the checks of
// tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h (its plain C++ part 1): the WMMA
// layout functions against AMD's tables, the consistency of those layouts,
// ggml's RDNA3/RDNA4 tile layouts run through the shuffle-free WMMA model, and
// the perm / dot4 / f16 reference arithmetic. The GPU half is
// amd_gfx_emulation_test.cu.
//
//   g++ -std=c++17 -O2 -Wall -Wextra -I hip-on-cuda/include
//       tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_cpu.cpp -o /tmp/amd_emu_cpu && /tmp/amd_emu_cpu
//
// Prints "<n> passed, <m> failed"; exit status 1 on any failure.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "amd_gfx_emulation.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

static int g_pass = 0, g_fail = 0;
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (cond) {                                             \
            ++g_pass;                                           \
        } else {                                                \
            ++g_fail;                                           \
            std::printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            std::printf(__VA_ARGS__);                           \
            std::printf("\n");                                  \
        }                                                       \
    } while (0)

using L11 = candle_emu_wmma_layout<11>;
using L12 = candle_emu_wmma_layout<12>;

// ---------------------------------------------------------------------------
// 1. The layout functions against AMD's tables, transcribed by hand.
// ---------------------------------------------------------------------------
// AMD's RDNA3 / RDNA4 ISA guides, "Wave Matrix Multiply Accumulate (WMMA)",
// as printed by AMD's Matrix Instruction Calculator (ROCm/
// amd_matrix_instruction_calculator @ 2ef9189, --matrix-layout). In every
// table the outer index (A row, B column, C/D column) of lane l is l % 16; the
// per-element index depends only on the lane half h = l / 16:
//   K of A/B element e, lanes 0-15 / 16-31 (A[i][K] in the lane's v0.[15:0],
//   v0.[31:16], v1.[15:0], ... for 16-bit; v0.[7:0], v0.[15:8], ... for 8-bit):
static const int kTabGfx11Ab[2][16] = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
                                       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}};
static const int kTabGfx12Ab16[2][8] = {{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}};
static const int kTabGfx12Ab8[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};
//   row M of C/D element v (v0..v7 for 32-bit; v0.[15:0], v0.[31:16], ... for
//   gfx12's 16-bit C/D), lanes 0-15 / 16-31:
static const int kTabGfx11Cd[2][8] = {{0, 2, 4, 6, 8, 10, 12, 14}, {1, 3, 5, 7, 9, 11, 13, 15}};
static const int kTabGfx12Cd[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}};

// Single entries as the calculator prints them ("A[3][9] = v2{19}.[15:8]").
struct Entry {
    int gfx;
    char mat;    // 'A', 'B', 'D'
    int bits;    // element width of that matrix
    int row, col;
    int vgpr, lane, lo_bit;
};
static const Entry kEntries[] = {
    {11, 'A', 16, 3, 9, 4, 3, 16},   {11, 'A', 16, 3, 9, 4, 19, 16},  {11, 'B', 16, 9, 6, 4, 6, 16},
    {11, 'B', 16, 9, 6, 4, 22, 16},  {11, 'D', 32, 3, 6, 1, 22, 0},   {11, 'A', 16, 14, 0, 0, 14, 0},
    {11, 'A', 16, 14, 0, 0, 30, 0},  {11, 'B', 16, 0, 15, 0, 15, 0},  {11, 'B', 16, 0, 15, 0, 31, 0},
    {11, 'D', 32, 14, 15, 7, 15, 0}, {11, 'A', 8, 3, 9, 2, 3, 8},     {11, 'A', 8, 3, 9, 2, 19, 8},
    {11, 'B', 8, 9, 6, 2, 6, 8},     {11, 'B', 8, 9, 6, 2, 22, 8},    {11, 'D', 32, 1, 0, 0, 16, 0},
    {12, 'A', 16, 0, 4, 0, 16, 0},   {12, 'B', 16, 4, 5, 0, 21, 0},   {12, 'D', 32, 0, 5, 0, 5, 0},
    {12, 'A', 16, 12, 10, 3, 12, 0}, {12, 'B', 16, 10, 7, 3, 7, 0},   {12, 'D', 32, 12, 7, 4, 23, 0},
    {12, 'A', 16, 0, 8, 2, 0, 0},    {12, 'A', 16, 15, 15, 3, 31, 16}, {12, 'A', 16, 8, 15, 3, 24, 16},
    {12, 'B', 16, 15, 2, 3, 18, 16}, {12, 'D', 32, 8, 2, 0, 18, 0},   {12, 'A', 8, 3, 9, 0, 19, 8},
    {12, 'B', 8, 9, 6, 0, 22, 8},    {12, 'D', 32, 3, 6, 3, 6, 0},    {12, 'D', 32, 8, 0, 0, 16, 0},
    {12, 'A', 16, 9, 1, 0, 9, 16},   {12, 'B', 16, 1, 3, 0, 3, 16},   {12, 'D', 16, 9, 3, 0, 19, 16},
    {12, 'D', 16, 1, 1, 0, 1, 16},
};

// (row, col) of element e of lane l, per the layout functions.
template <class L>
static void ab_pos(char mat, int bits, int lane, int e, int& row, int& col) {
    const int outer = lane % 16, k = L::ab_k(bits, lane / 16, e);
    if (mat == 'A') row = outer, col = k;
    else row = k, col = outer;
}
template <class L>
static void cd_pos(int lane, int v, int& row, int& col) {
    row = L::cd_m(lane / 16, v);
    col = lane % 16;
}

static void test_layout_tables() {
    for (int lane = 0; lane < 32; ++lane) {
        const int h = lane / 16;
        for (int e = 0; e < 16; ++e)
            for (int bits : {8, 16}) CHECK(L11::ab_k(bits, h, e) == kTabGfx11Ab[h][e], "gfx11 ab_k(%d,%d,%d)", bits, h, e);
        for (int e = 0; e < 8; ++e) {
            CHECK(L12::ab_k(16, h, e) == kTabGfx12Ab16[h][e], "gfx12 16-bit ab_k(%d,%d)", h, e);
            CHECK(L12::ab_k(8, h, e) == kTabGfx12Ab8[h][e], "gfx12 8-bit ab_k(%d,%d)", h, e);
            CHECK(L11::cd_m(h, e) == kTabGfx11Cd[h][e], "gfx11 cd_m(%d,%d)", h, e);
            CHECK(L12::cd_m(h, e) == kTabGfx12Cd[h][e], "gfx12 cd_m(%d,%d)", h, e);
        }
    }
    for (const Entry& x : kEntries) {
        const int bit = 32 * x.vgpr + x.lo_bit;
        CHECK(bit % x.bits == 0, "entry bit alignment");
        const int e = bit / x.bits;
        int row = -1, col = -1;
        if (x.mat == 'D') {
            if (x.gfx == 11) cd_pos<L11>(x.lane, e, row, col);
            else cd_pos<L12>(x.lane, e, row, col);
        } else {
            if (x.gfx == 11) ab_pos<L11>(x.mat, x.bits, x.lane, e, row, col);
            else ab_pos<L12>(x.mat, x.bits, x.lane, e, row, col);
        }
        CHECK(row == x.row && col == x.col, "gfx%d %c[%d][%d] = v%d{%d}.[%d]: layout says [%d][%d]", x.gfx, x.mat,
              x.row, x.col, x.vgpr, x.lane, x.lo_bit, row, col);
    }
}

// ---------------------------------------------------------------------------
// 2. Consistency: coverage and replication.
// ---------------------------------------------------------------------------
static void test_layout_coverage() {
    // gfx12 A/B: each (outer, k) exactly once over 32 lanes x 8 elements.
    for (int bits : {8, 16}) {
        int count[16][16] = {};
        for (int lane = 0; lane < 32; ++lane)
            for (int e = 0; e < L12::ab_elems(); ++e) ++count[lane % 16][L12::ab_k(bits, lane / 16, e)];
        bool once = true;
        for (auto& r : count)
            for (int c : r) once &= c == 1;
        CHECK(once, "gfx12 %d-bit A/B: every element held exactly once", bits);
    }
    // gfx11 A/B: each (outer, k) exactly twice, in lanes l and l + 16 at the same element index.
    for (int bits : {8, 16}) {
        int count[16][16] = {};
        bool replica = true;
        for (int lane = 0; lane < 32; ++lane)
            for (int e = 0; e < L11::ab_elems(); ++e) {
                ++count[lane % 16][L11::ab_k(bits, lane / 16, e)];
                replica &= L11::ab_k(bits, lane / 16, e) == L11::ab_k(bits, (lane ^ 16) / 16, e);
            }
        bool twice = true;
        for (auto& r : count)
            for (int c : r) twice &= c == 2;
        CHECK(twice, "gfx11 %d-bit A/B: every element held exactly twice", bits);
        CHECK(replica, "gfx11 %d-bit A/B: lanes l and l^16 hold the same element at the same index", bits);
    }
    // C/D: each (m, n) exactly once over 32 lanes x 8 elements (gfx12's 16-bit C/D too).
    for (int gfx : {11, 12}) {
        int count[16][16] = {};
        for (int lane = 0; lane < 32; ++lane)
            for (int v = 0; v < 8; ++v) {
                int row, col;
                if (gfx == 11) cd_pos<L11>(lane, v, row, col);
                else cd_pos<L12>(lane, v, row, col);
                ++count[row][col];
            }
        bool once = true;
        for (auto& r : count)
            for (int c : r) once &= c == 1;
        CHECK(once, "gfx%d C/D: every element held exactly once", gfx);
    }
}

// ---------------------------------------------------------------------------
// 3. The WMMA model (candle_emu_wmma_dots, the code the GPU runs with shuffles)
// against a plain matrix product, with operands packed per the layout.
// ---------------------------------------------------------------------------
static uint16_t f32_to_bf16_bits(float f) {  // round to nearest even (finite inputs)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// Packs a logical 16x16 matrix of field values (A: [m][k]; B: [k][n]) into
// 32 lanes x NW words per the layout of GFX.
template <int GFX, int BITS>
static void pack_ab(char mat, const uint32_t (&x)[16][16], std::vector<uint32_t>& words) {
    using L = candle_emu_wmma_layout<GFX>;
    const int nw = L::ab_elems() * BITS / 32;
    words.assign(32 * nw, 0);
    for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < L::ab_elems(); ++e) {
            int row, col;
            ab_pos<L>(mat, BITS, lane, e, row, col);
            words[lane * nw + e * BITS / 32] |= x[row][col] << (e * BITS % 32);
        }
}

template <int GFX, int BITS, class Dec>
static void model_vs_product(const char* name, const Dec& dec, std::mt19937& rng, uint32_t (*gen)(std::mt19937&)) {
    using L = candle_emu_wmma_layout<GFX>;
    for (int trial = 0; trial < 20; ++trial) {
        uint32_t a[16][16], b[16][16];
        for (auto& r : a)
            for (auto& v : r) v = gen(rng);
        for (auto& r : b)
            for (auto& v : r) v = gen(rng);
        std::vector<uint32_t> aw, bw;
        pack_ab<GFX, BITS>('A', a, aw);
        pack_ab<GFX, BITS>('B', b, bw);
        const int nw = L::ab_elems() * BITS / 32;
        bool ok = true;
        for (int lane = 0; lane < 32; ++lane) {
            double dot[8];
            candle_emu_wmma_dots<GFX, BITS>(lane, candle_emu_lanes_fetch{aw.data(), nw},
                                            candle_emu_lanes_fetch{bw.data(), nw}, dec, dec, dot);
            for (int v = 0; v < 8; ++v) {
                int m, n;
                cd_pos<L>(lane, v, m, n);
                double want = 0;
                for (int k = 0; k < 16; ++k) want += (double)dec(a[m][k]) * (double)dec(b[k][n]);
                ok &= dot[v] == want;
            }
        }
        CHECK(ok, "%s: model == product (trial %d)", name, trial);
    }
}

static uint32_t gen_f16(std::mt19937& r) {
    return candle_emu_f64_to_f16_bits(std::uniform_real_distribution<double>(-4, 4)(r));
}
static uint32_t gen_bf16(std::mt19937& r) { return f32_to_bf16_bits(std::uniform_real_distribution<float>(-4, 4)(r)); }
static uint32_t gen_u8(std::mt19937& r) { return r() & 0xffu; }

// ---------------------------------------------------------------------------
// 4. ggml's tiles (generated/kernels/mmq_gguf/mmq_mma.cuh, AMD_WMMA_AVAILABLE)
// through the model: the int8 mma() the MMQ kernels call, and the f16 one.
// ggml's tile<I, J, T> holds ne elements x[l] per lane at (get_i(l), get_j(l))
// with j in units of 32-bit T; mma(D, A, B) must give D[i][j] = sum_k
// A[i][k] * B[j][k] (ggml: "A @ B = C", B column-major).
// ---------------------------------------------------------------------------
// RDNA3: A/B tile<16, J, T, DATA_LAYOUT_I_MAJOR_MIRRORED>: get_i = lane % 16, get_j(l) = l, ne = J.
// RDNA4: A/B tile<16, J, T> (I_MAJOR): get_i = lane % 16, get_j(l) = ne * (lane / 16) + l, ne = J / 2.
// C: tile<16, 16, T, DATA_LAYOUT_J_MAJOR>: get_i(l) = I_MAJOR's get_j(l), get_j(l) = I_MAJOR's get_i(l):
//    RDNA3: get_i(l) = 2 * l + lane / 16; RDNA4: get_i(l) = 8 * (lane / 16) + l; get_j(l) = lane % 16.
static int ggml_ab_get_j(int gfx, int J, int lane, int l) { return gfx == 11 ? l : (J / 2) * (lane / 16) + l; }
static int ggml_ab_ne(int gfx, int J) { return gfx == 11 ? J : J / 2; }
static int ggml_c_get_i(int gfx, int lane, int l) { return gfx == 11 ? 2 * l + lane / 16 : 8 * (lane / 16) + l; }

// The int8 mma of tile<16, J, int> (J = 8: two WMMAs with clamp, as in mmq_mma.cuh; J = 4: one, no clamp).
template <int GFX>
static void ggml_int8_mma(int J, std::mt19937& rng) {
    using L = candle_emu_wmma_layout<GFX>;
    const int ne = ggml_ab_ne(GFX, J);          // ints per lane
    const int nw = L::ab_elems() / 4;           // ints per WMMA operand
    const int nwmma = ne / nw;                  // a_vec[0], a_vec[1], ...
    int8_t a[16][32], b[16][32];                 // ggml tiles: 16 rows x 4*J bytes
    for (auto& r : a)
        for (auto& v : r) v = (int8_t)(rng() & 0xff);
    for (auto& r : b)
        for (auto& v : r) v = (int8_t)(rng() & 0xff);
    // Per-lane x[] as load_generic fills it: x[l] = tile[get_i(l)][get_j(l)] (one int = 4 bytes).
    std::vector<uint32_t> ax(32 * ne), bx(32 * ne);
    for (int lane = 0; lane < 32; ++lane)
        for (int l = 0; l < ne; ++l) {
            const int i = lane % 16, j = ggml_ab_get_j(GFX, J, lane, l);
            std::memcpy(&ax[lane * ne + l], &a[i][4 * j], 4);
            std::memcpy(&bx[lane * ne + l], &b[i][4 * j], 4);
        }
    int64_t acc[32][8] = {};
    for (int w = 0; w < nwmma; ++w) {
        std::vector<uint32_t> aw(32 * nw), bw(32 * nw);
        for (int lane = 0; lane < 32; ++lane)
            for (int q = 0; q < nw; ++q) {
                aw[lane * nw + q] = ax[lane * ne + w * nw + q];
                bw[lane * nw + q] = bx[lane * ne + w * nw + q];
            }
        for (int lane = 0; lane < 32; ++lane) {
            double dot[8];
            candle_emu_wmma_dots<GFX, 8>(lane, candle_emu_lanes_fetch{aw.data(), nw},
                                         candle_emu_lanes_fetch{bw.data(), nw}, candle_emu_dec_i8{true},
                                         candle_emu_dec_i8{true}, dot);
            for (int v = 0; v < 8; ++v) acc[lane][v] = candle_emu_i32_result((int64_t)dot[v] + acc[lane][v], J == 8);
        }
    }
    bool ok = true;
    for (int lane = 0; lane < 32; ++lane)
        for (int l = 0; l < 8; ++l) {
            const int i = ggml_c_get_i(GFX, lane, l), j = lane % 16;
            int64_t want = 0;
            for (int k = 0; k < 4 * J; ++k) want += a[i][k] * b[j][k];
            ok &= acc[lane][l] == want;
        }
    CHECK(ok, "ggml gfx%d mma(tile<16,16,int,J_MAJOR>, tile<16,%d,int>, tile<16,%d,int>) == A * B^T", GFX, J, J);
}

// The f16 mma of tile<16, 8, half2> into tile<16, 16, float, J_MAJOR> (one WMMA, K = 16).
template <int GFX>
static void ggml_f16_mma(std::mt19937& rng) {
    const int ne = ggml_ab_ne(GFX, 8);   // half2 per lane (8 on RDNA3, 4 on RDNA4)
    uint32_t a[16][16], b[16][16];       // f16 bits, 16 rows x 16 halves
    for (auto& r : a)
        for (auto& v : r) v = gen_f16(rng);
    for (auto& r : b)
        for (auto& v : r) v = gen_f16(rng);
    std::vector<uint32_t> aw(32 * ne), bw(32 * ne);
    for (int lane = 0; lane < 32; ++lane)
        for (int l = 0; l < ne; ++l) {
            const int i = lane % 16, j = ggml_ab_get_j(GFX, 8, lane, l);  // j: half2 index
            aw[lane * ne + l] = a[i][2 * j] | a[i][2 * j + 1] << 16;
            bw[lane * ne + l] = b[i][2 * j] | b[i][2 * j + 1] << 16;
        }
    bool ok = true;
    for (int lane = 0; lane < 32; ++lane) {
        double dot[8];
        candle_emu_wmma_dots<GFX, 16>(lane, candle_emu_lanes_fetch{aw.data(), ne},
                                      candle_emu_lanes_fetch{bw.data(), ne}, candle_emu_dec_f16{},
                                      candle_emu_dec_f16{}, dot);
        for (int l = 0; l < 8; ++l) {
            const int i = ggml_c_get_i(GFX, lane, l), j = lane % 16;
            double want = 0;
            for (int k = 0; k < 16; ++k)
                want += (double)candle_emu_f16_bits_to_float(a[i][k]) * candle_emu_f16_bits_to_float(b[j][k]);
            // Same products, possibly another order on RDNA4 (ggml's K order differs from the hardware's).
            ok &= std::fabs(dot[l] - want) <= 1e-12 * (1 + std::fabs(want));
        }
    }
    CHECK(ok, "ggml gfx%d mma(tile<16,16,float,J_MAJOR>, tile<16,8,half2>, tile<16,8,half2>) == A * B^T", GFX);
}

// ---------------------------------------------------------------------------
// 5. perm and dot4: an independent spelling of the ISA pseudocode, hand values.
// ---------------------------------------------------------------------------
static uint32_t perm_ref2(uint32_t s0, uint32_t s1, uint32_t sel) {
    uint8_t in[8];
    for (int b = 0; b < 4; ++b) {
        in[b] = (uint8_t)(s1 >> (8 * b));
        in[4 + b] = (uint8_t)(s0 >> (8 * b));
    }
    uint32_t d = 0;
    for (int b = 0; b < 4; ++b) {
        const unsigned s = (sel >> (8 * b)) & 0xff;
        uint8_t out;
        switch (s) {
            case 8: out = in[1] & 0x80 ? 0xff : 0; break;
            case 9: out = in[3] & 0x80 ? 0xff : 0; break;
            case 10: out = in[5] & 0x80 ? 0xff : 0; break;
            case 11: out = in[7] & 0x80 ? 0xff : 0; break;
            case 12: out = 0; break;
            default: out = s < 8 ? in[s] : 0xff;
        }
        d |= (uint32_t)out << (8 * b);
    }
    return d;
}

static void test_perm(std::mt19937& rng) {
    // Hand-computed: src1 = bytes in[0..3], src0 = bytes in[4..7].
    const uint32_t s0 = 0x8877f655u, s1 = 0x44b32211u;  // in = 11 22 b3 44 55 f6 77 88
    CHECK(candle_emu_ref_perm(s0, s1, 0x03020100u) == s1, "perm identity low");
    CHECK(candle_emu_ref_perm(s0, s1, 0x07060504u) == s0, "perm identity high");
    // bytes in[3], in[2], in[1], in[0] = 44 b3 22 11 into result bytes 0..3
    CHECK(candle_emu_ref_perm(s0, s1, 0x00010203u) == 0x1122b344u, "perm reverse low");
    CHECK(candle_emu_ref_perm(s0, s1, 0x0c0c0c0cu) == 0u, "perm sel 12 -> 0x00");
    CHECK(candle_emu_ref_perm(s0, s1, 0x0d0eff0du) == 0xffffffffu, "perm sel >= 13 -> 0xff");
    // sel 8..11: sign of in[1] (0x22: +), in[3] (0x44: +), in[5] (0xf6: -), in[7] (0x88: -).
    CHECK(candle_emu_ref_perm(s0, s1, 0x0b0a0908u) == 0xffff0000u, "perm sign replication");
    // V_PERM_B32 v15, v1, v0, 0x05040100 with v1 = 15944, v0 = 84148480 -> 1044906240
    // (the unit test of V_PERM_B32 in Qazalin/remu, an RDNA3 emulator).
    CHECK(candle_emu_ref_perm(15944u, 84148480u, 0x05040100u) == 1044906240u, "perm remu vector");
    // ggml's get_int_from_table_16 use: perm(values[1], values[0], idx & 0x07070707) picks table[idx].
    const uint32_t t0 = 0x03020100u, t1 = 0x07060504u;  // table[i] = i
    CHECK(candle_emu_ref_perm(t1, t0, 0x07050301u) == 0x07050301u, "perm table lookup");
    // Every selector byte value in every position, and random words.
    bool ok = true;
    for (uint32_t s = 0; s < 256; ++s)
        for (int pos = 0; pos < 4; ++pos) {
            const uint32_t sel = (rng() & ~(0xffu << (8 * pos))) | (s << (8 * pos));
            const uint32_t a = rng(), b = rng();
            ok &= candle_emu_ref_perm(a, b, sel) == perm_ref2(a, b, sel);
        }
    for (int t = 0; t < 100000; ++t) {
        const uint32_t a = rng(), b = rng(), sel = rng();
        ok &= candle_emu_ref_perm(a, b, sel) == perm_ref2(a, b, sel);
    }
    CHECK(ok, "perm == independent reference (all selectors, random words)");
}

static int64_t dot4_wide(bool as, uint32_t a, bool bs, uint32_t b, int32_t c) {
    int64_t s = c;
    for (int j = 0; j < 4; ++j) {
        const int x = as ? (int)(int8_t)(a >> (8 * j)) : (int)((a >> (8 * j)) & 0xff);
        const int y = bs ? (int)(int8_t)(b >> (8 * j)) : (int)((b >> (8 * j)) & 0xff);
        s += (int64_t)x * y;
    }
    return s;
}

static void test_dot4(std::mt19937& rng) {
    // Hand values.
    CHECK(candle_emu_ref_dot4(true, 0x80808080u, true, 0x80808080u, 0, false) == 65536, "sdot4 (-128)^2 * 4");
    CHECK(candle_emu_ref_dot4(true, 0xffffffffu, false, 0xffffffffu, 0, false) == -1020, "(-1) * 255 * 4");
    CHECK(candle_emu_ref_dot4(false, 0xffffffffu, false, 0xffffffffu, 0, false) == 260100, "255 * 255 * 4");
    CHECK(candle_emu_ref_dot4(true, 0x01020304u, true, 0x05060708u, 10, false) == 10 + 4 * 8 + 3 * 7 + 2 * 6 + 5,
          "small");
    CHECK(candle_emu_ref_dot4(true, 0x7f7f7f7fu, true, 0x7f7f7f7fu, INT32_MAX, false) ==
              (int32_t)(uint32_t)((uint64_t)INT32_MAX + 4 * 127 * 127),
          "wrap above INT32_MAX");
    CHECK(candle_emu_ref_dot4(true, 0x7f7f7f7fu, true, 0x7f7f7f7fu, INT32_MAX, true) == INT32_MAX, "clamp high");
    CHECK(candle_emu_ref_dot4(true, 0x80808080u, true, 0x7f7f7f7fu, INT32_MIN, true) == INT32_MIN, "clamp low");
    CHECK(candle_emu_ref_dot4(true, 0x80808080u, true, 0x7f7f7f7fu, INT32_MIN, false) ==
              (int32_t)(uint32_t)((uint64_t)(int64_t)INT32_MIN - 4 * 128 * 127),
          "wrap below INT32_MIN");
    bool ok = true;
    const uint32_t edge[] = {0u, 1u, 0x7fu, 0x80u, 0xffu, 0x7f7f7f7fu, 0x80808080u, 0xffffffffu, 0x017f80ffu};
    const int32_t edge_c[] = {0, 1, -1, INT32_MAX, INT32_MIN, INT32_MAX - 1000, INT32_MIN + 1000};
    for (int as = 0; as < 2; ++as)
        for (int bs = 0; bs < 2; ++bs)
            for (int cl = 0; cl < 2; ++cl) {
                auto one = [&](uint32_t a, uint32_t b, int32_t c) {
                    const int64_t w = dot4_wide(as, a, bs, b, c);
                    const int32_t want = cl ? (int32_t)(w > INT32_MAX ? INT32_MAX : w < INT32_MIN ? INT32_MIN : w)
                                            : (int32_t)(uint32_t)(uint64_t)w;
                    ok &= candle_emu_ref_dot4(as, a, bs, b, c, cl) == want;
                };
                for (uint32_t a : edge)
                    for (uint32_t b : edge)
                        for (int32_t c : edge_c) one(a, b, c);
                for (int t = 0; t < 20000; ++t) one(rng(), rng(), (int32_t)rng());
            }
    CHECK(ok, "dot4 == independent reference (signedness x clamp, edge and random values)");
}

// ---------------------------------------------------------------------------
// 6. f16 conversions against the compiler's _Float16 (g++ 12+ on x86-64).
// ---------------------------------------------------------------------------
static void test_f16(std::mt19937& rng) {
#if defined(__FLT16_MAX__)
    bool ok = true;
    for (uint32_t h = 0; h < 65536; ++h) {
        _Float16 x;
        const uint16_t hb = (uint16_t)h;
        std::memcpy(&x, &hb, 2);
        const float want = (float)x, got = candle_emu_f16_bits_to_float(h);
        uint32_t wb, gb;
        std::memcpy(&wb, &want, 4);
        std::memcpy(&gb, &got, 4);
        if (std::isnan(want)) ok &= std::isnan(got) && ((wb ^ gb) & 0x80000000u) == 0;
        else ok &= wb == gb;
    }
    CHECK(ok, "f16 bits -> float == (float)_Float16, all 65536 patterns");
    auto conv_ok = [](double d) {
        const _Float16 w = (_Float16)d;
        uint16_t wb;
        std::memcpy(&wb, &w, 2);
        const uint16_t gb = candle_emu_f64_to_f16_bits(d);
        if (std::isnan(d)) return (gb & 0x7fffu) == 0x7e00u;
        return gb == wb;
    };
    ok = true;
    const double edge[] = {0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 65536.0, 1e300, -1e300, INFINITY, -INFINITY,
                           NAN, 0x1p-14, 0x1p-24, 0x1p-25, 0x1.0000000000001p-25, 0x1.8p-24, 0x1.8p-25, 0x1p-26,
                           0x1.ffcp-15, 0x1.ffep-15, 1.0 + 0x1p-11, 1.0 + 0x1p-11 + 0x1p-40, 1.0 + 3 * 0x1p-11,
                           5e-324, 2.2250738585072014e-308};
    for (double d : edge) ok &= conv_ok(d) && conv_ok(-d);
    std::uniform_int_distribution<uint64_t> any_bits;
    for (int t = 0; t < 200000; ++t) {
        // doubles near the binary16 range, and ties: f16 value +- half an ulp (+- 1 double ulp)
        const double d = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng), (int)(rng() % 50) - 30);
        ok &= conv_ok(d) && conv_ok(-d);
        const uint64_t u = any_bits(rng);
        double r;
        std::memcpy(&r, &u, 8);
        ok &= conv_ok(r);
        const double f = candle_emu_f16_bits_to_float(rng() & 0x7bffu);
        const double ulp_half = std::ldexp(1.0, std::ilogb(f == 0 ? 0x1p-14 : f) - 11);
        for (double t2 : {f + ulp_half, f - ulp_half, std::nextafter(f + ulp_half, 0.0), std::nextafter(f + ulp_half, 1e9)})
            ok &= conv_ok(t2);
    }
    CHECK(ok, "double -> f16 bits == (_Float16)double (edge, ties, random)");
#else
    (void)rng;
    std::printf("note: this compiler has no _Float16; f16 conversion checks skipped\n");
#endif
    CHECK(candle_emu_f64_to_f16_bits(1.0) == 0x3c00 && candle_emu_f64_to_f16_bits(-2.0) == 0xc000 &&
              candle_emu_f64_to_f16_bits(65504.0) == 0x7bff && candle_emu_f64_to_f16_bits(65520.0) == 0x7c00 &&
              candle_emu_f64_to_f16_bits(0x1p-24) == 0x0001 && candle_emu_f64_to_f16_bits(0x1p-25) == 0x0000 &&
              candle_emu_f64_to_f16_bits(0x1.8p-24) == 0x0002,
          "double -> f16 hand values");
    CHECK(candle_emu_bf16_bits_to_float(0x3f80) == 1.0f && candle_emu_bf16_bits_to_float(0xc040) == -3.0f,
          "bf16 bits -> float hand values");
}

// DPP16 (../dpp16.h): hand values of each control, and the four moves candle_wmma's
// dpp_row16 reduces a 16-lane row with (quad_perm [1,0,3,2] and [2,3,0,1], row_half_mirror,
// row_mirror) leave every lane of each row of a wave32 and a wave64 with the row's max and
// sum, the same bits in all 16 lanes.
static void test_dpp16(std::mt19937& rng) {
    CHECK(candle_dpp16_source(0, 0xb1) == 1 && candle_dpp16_source(1, 0xb1) == 0 && candle_dpp16_source(2, 0xb1) == 3 &&
              candle_dpp16_source(0, 0x4e) == 2 && candle_dpp16_source(5, 0x4e) == 7 && candle_dpp16_source(0, 0xe4) == 0 &&
              candle_dpp16_source(16, 0x140) == 31 && candle_dpp16_source(47, 0x140) == 32 && candle_dpp16_source(8, 0x141) == 15 &&
              candle_dpp16_source(3, 0x141) == 4 && candle_dpp16_source(14, 0x101) == 15 && candle_dpp16_source(15, 0x101) == kDpp16OutOfRow &&
              candle_dpp16_source(17, 0x111) == 16 && candle_dpp16_source(16, 0x111) == kDpp16OutOfRow &&
              candle_dpp16_source(0, 0x142) == kDpp16NotEmulated && candle_dpp16_source(0, 0x130) == kDpp16NotEmulated,
          "dpp16 source lanes: quad_perm, row_mirror, row_half_mirror, row_shl/shr hand values");
    std::uniform_real_distribution<float> u(-100.f, 100.f);
    bool ok = true;
    for (int wave : {32, 64}) {
        for (int trial = 0; trial < 50; ++trial) {
            std::vector<float> mx(wave), sm(wave);
            for (int l = 0; l < wave; ++l) mx[l] = sm[l] = u(rng);
            std::vector<float> x0 = mx;
            for (int ctrl : {0xb1, 0x4e, 0x141, 0x140}) {
                std::vector<float> m2(wave), s2(wave);
                for (int l = 0; l < wave; ++l) {
                    const int src = candle_dpp16_source(l, ctrl);
                    m2[l] = std::fmax(mx[l], mx[src]);
                    s2[l] = sm[l] + sm[src];
                }
                mx = m2, sm = s2;
            }
            for (int r = 0; r < wave / 16; ++r) {
                float want = x0[16 * r];
                for (int i = 1; i < 16; ++i) want = std::fmax(want, x0[16 * r + i]);
                for (int i = 0; i < 16; ++i) {
                    ok &= mx[16 * r + i] == want;
                    ok &= std::memcmp(&sm[16 * r + i], &sm[16 * r], sizeof(float)) == 0;
                }
                double exact = 0;
                for (int i = 0; i < 16; ++i) exact += x0[16 * r + i];
                ok &= std::fabs(sm[16 * r] - exact) <= 1e-3 * (1 + std::fabs(exact));
            }
        }
    }
    CHECK(ok, "dpp16 row reduction: every lane of a row holds its max and sum, identical bits (wave32, wave64)");
}

// ---------------------------------------------------------------------------
int main() {
    std::mt19937 rng(12345);
    test_layout_tables();
    test_layout_coverage();
    model_vs_product<11, 16>("gfx11 f16", candle_emu_dec_f16{}, rng, gen_f16);
    model_vs_product<11, 16>("gfx11 bf16", candle_emu_dec_bf16{}, rng, gen_bf16);
    model_vs_product<11, 8>("gfx11 iu8 signed", candle_emu_dec_i8{true}, rng, gen_u8);
    model_vs_product<11, 8>("gfx11 iu8 unsigned", candle_emu_dec_i8{false}, rng, gen_u8);
    model_vs_product<12, 16>("gfx12 f16", candle_emu_dec_f16{}, rng, gen_f16);
    model_vs_product<12, 16>("gfx12 bf16", candle_emu_dec_bf16{}, rng, gen_bf16);
    model_vs_product<12, 8>("gfx12 iu8 signed", candle_emu_dec_i8{true}, rng, gen_u8);
    model_vs_product<12, 8>("gfx12 iu8 unsigned", candle_emu_dec_i8{false}, rng, gen_u8);
    for (int t = 0; t < 10; ++t) {
        ggml_int8_mma<11>(8, rng);
        ggml_int8_mma<11>(4, rng);
        ggml_int8_mma<12>(8, rng);
        ggml_int8_mma<12>(4, rng);
        ggml_f16_mma<11>(rng);
        ggml_f16_mma<12>(rng);
    }
    test_perm(rng);
    test_dot4(rng);
    test_f16(rng);
    test_dpp16(rng);
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
