// Tests of the emulated MFMA instructions (mfma_cpu.h: int8, and f16 / bf16
// 16x16x16) on their own, one
// 64-lane wavefront each:
//   1. single-entry cases whose lanes and registers are AMD's: the (GPR, lane)
//      of A[i][k], B[k][j] and D[i][j] printed by the Matrix Instruction
//      Calculator (commit 2ef9189), e.g.
//        matrix_calculator.py -a CDNA3 -i v_mfma_i32_16x16x32_i8 -g -A -I 5 -K 13
//          A[5][13] = v1{21}.[15:8]      (lane 21, byte 1*4 + 1 = 5 of the i64)
//      A holds one nonzero at A[i][k], B one at B[k][j], C a distinct value
//      in every register of every lane: D must equal C everywhere but in the
//      register and lane of D[i][j], which gains the product;
//   2. random A, B, C against a CPU product, the operands distributed and the
//      result read back with the calculator's register-to-element formulas
//      ("Register to matrix element mapping" of --detail-instruction), the
//      inverse direction of what mfma_cpu.h implements;
//   3. the loud failures: cbsz/abid/blgp != 0, an instruction the arch lacks,
//      a wavefront with inactive lanes, lanes in different wave operations
//      (each run in a forked child that must abort with the message).
#include "hip_cpu_device.h"
#include "mfma_cpu.h"

#include <string>

namespace {

int* g_passed;
int* g_failed;
void check(bool ok, const std::string& what) {
    if (!ok) printf("  FAILED  %s\n", what.c_str());
    ++*(ok ? g_passed : g_failed);
}

struct insn {
    const char* name;
    int gfx;    // an arch that has it
    int m, k;   // M = N, K
    int bytes;  // int8 per lane per operand
};
const insn kInsns[] = {
    {"v_mfma_i32_16x16x16i8", 0x90a, 16, 16, 4},
    {"v_mfma_i32_32x32x8i8", 0x90a, 32, 8, 4},
    {"v_mfma_i32_16x16x32_i8", 0x942, 16, 32, 8},
    {"v_mfma_i32_32x32x16_i8", 0x942, 32, 16, 8},
};

// Runs the instruction on one wavefront: lane l passes a[l], b[l] and c[l][0..nreg).
void run_insn(const insn& in, const uint64_t* a, const uint64_t* b, const int (*c)[16], int (*d)[16], int cbsz = 0) {
    emu_launch(dim3(1), dim3(64), 0, [&] {
        const int l = emu_lane_id();
        if (in.m == 16) {
            emu_i32x4 cv, dv;
            for (int r = 0; r < 4; ++r) cv[r] = c[l][r];
            if (in.bytes == 4) dv = emu_mfma_i32_16x16x16i8(in.gfx, static_cast<int>(a[l]), static_cast<int>(b[l]), cv, cbsz, 0, 0);
            else dv = emu_mfma_i32_16x16x32_i8(in.gfx, static_cast<int64_t>(a[l]), static_cast<int64_t>(b[l]), cv, cbsz, 0, 0);
            for (int r = 0; r < 4; ++r) d[l][r] = dv[r];
        } else {
            emu_i32x16 cv, dv;
            for (int r = 0; r < 16; ++r) cv[r] = c[l][r];
            if (in.bytes == 4) dv = emu_mfma_i32_32x32x8i8(in.gfx, static_cast<int>(a[l]), static_cast<int>(b[l]), cv, cbsz, 0, 0);
            else dv = emu_mfma_i32_32x32x16_i8(in.gfx, static_cast<int64_t>(a[l]), static_cast<int64_t>(b[l]), cv, cbsz, 0, 0);
            for (int r = 0; r < 16; ++r) d[l][r] = dv[r];
        }
    });
}

// {i, k, j, A lane, A byte, B lane, B byte, D lane, D GPR}, from the calculator
// (-g -A -I i -K k / -g -B -K k -J j / -g -D -I i -J j; byte = 4 * GPR + low bit / 8).
struct entry_case {
    int i, k, j, a_lane, a_byte, b_lane, b_byte, d_lane, d_reg;
};
const entry_case kCases16x16x16[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0},           // v0{0}.[7:0] v0{0}.[7:0] v0{0}
    {15, 15, 15, 63, 3, 63, 3, 63, 3},     // v0{63}.[31:24] v0{63}.[31:24] v3{63}
    {10, 4, 12, 26, 0, 28, 0, 44, 2},      // v0{26}.[7:0] v0{28}.[7:0] v2{44}
    {1, 2, 3, 1, 2, 3, 2, 3, 1},           // v0{1}.[23:16] v0{3}.[23:16] v1{3}
    {11, 1, 6, 11, 1, 6, 1, 38, 3},        // v0{11}.[15:8] v0{6}.[15:8] v3{38}
    {1, 2, 13, 1, 2, 13, 2, 13, 1},        // v0{1}.[23:16] v0{13}.[23:16] v1{13}
    {13, 2, 7, 13, 2, 7, 2, 55, 1},        // v0{13}.[23:16] v0{7}.[23:16] v1{55}
    {2, 13, 1, 50, 1, 49, 1, 1, 2},        // v0{50}.[15:8] v0{49}.[15:8] v2{1}
};
const entry_case kCases32x32x8[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0},           // v0{0}.[7:0] v0{0}.[7:0] v0{0}
    {31, 7, 31, 63, 3, 63, 3, 63, 15},     // v0{63}.[31:24] v0{63}.[31:24] v15{63}
    {7, 3, 3, 7, 3, 3, 3, 35, 3},          // v0{7}.[31:24] v0{3}.[31:24] v3{35}
    {25, 0, 14, 25, 0, 14, 0, 14, 13},     // v0{25}.[7:0] v0{14}.[7:0] v13{14}
    {2, 2, 18, 2, 2, 18, 2, 18, 2},        // v0{2}.[23:16] v0{18}.[23:16] v2{18}
    {26, 2, 7, 26, 2, 7, 2, 7, 14},        // v0{26}.[23:16] v0{7}.[23:16] v14{7}
    {19, 2, 6, 19, 2, 6, 2, 6, 11},        // v0{19}.[23:16] v0{6}.[23:16] v11{6}
    {12, 5, 6, 44, 1, 38, 1, 38, 4},       // v0{44}.[15:8] v0{38}.[15:8] v4{38}
};
const entry_case kCases16x16x32[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0},           // v0{0}.[7:0] v0{0}.[7:0] v0{0}
    {15, 31, 15, 63, 7, 63, 7, 63, 3},     // v1{63}.[31:24] v1{63}.[31:24] v3{63}
    {2, 3, 6, 2, 3, 6, 3, 6, 2},           // v0{2}.[31:24] v0{6}.[31:24] v2{6}
    {15, 27, 10, 63, 3, 58, 3, 58, 3},     // v0{63}.[31:24] v0{58}.[31:24] v3{58}
    {14, 29, 11, 62, 5, 59, 5, 59, 2},     // v1{62}.[15:8] v1{59}.[15:8] v2{59}
    {9, 15, 5, 25, 7, 21, 7, 37, 1},       // v1{25}.[31:24] v1{21}.[31:24] v1{37}
    {7, 5, 9, 7, 5, 9, 5, 25, 3},          // v1{7}.[15:8] v1{9}.[15:8] v3{25}
    {15, 21, 14, 47, 5, 46, 5, 62, 3},     // v1{47}.[15:8] v1{46}.[15:8] v3{62}
};
const entry_case kCases32x32x16[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0},           // v0{0}.[7:0] v0{0}.[7:0] v0{0}
    {31, 15, 31, 63, 7, 63, 7, 63, 15},    // v1{63}.[31:24] v1{63}.[31:24] v15{63}
    {18, 2, 7, 18, 2, 7, 2, 7, 10},        // v0{18}.[23:16] v0{7}.[23:16] v10{7}
    {26, 5, 21, 26, 5, 21, 5, 21, 14},     // v1{26}.[15:8] v1{21}.[15:8] v14{21}
    {9, 15, 26, 41, 7, 58, 7, 26, 5},      // v1{41}.[31:24] v1{58}.[31:24] v5{26}
    {2, 2, 20, 2, 2, 20, 2, 20, 2},        // v0{2}.[23:16] v0{20}.[23:16] v2{20}
    {21, 11, 31, 53, 3, 63, 3, 63, 9},     // v0{53}.[31:24] v0{63}.[31:24] v9{63}
    {29, 2, 5, 29, 2, 5, 2, 37, 13},       // v0{29}.[23:16] v0{5}.[23:16] v13{37}
};

void test_entry_cases(const insn& in, const entry_case* cases, size_t n) {
    const int nreg = in.m * in.m / 64;
    for (size_t t = 0; t < n; ++t) {
        const entry_case& e = cases[t];
        uint64_t a[64] = {}, b[64] = {};
        int c[64][16], d[64][16];
        const int av = static_cast<int>(t % 2 ? -128 : 7) , bv = -3 - static_cast<int>(t);
        a[e.a_lane] = static_cast<uint64_t>(static_cast<uint8_t>(av)) << (8 * e.a_byte);
        b[e.b_lane] = static_cast<uint64_t>(static_cast<uint8_t>(bv)) << (8 * e.b_byte);
        for (int l = 0; l < 64; ++l)
            for (int r = 0; r < 16; ++r) c[l][r] = 1000 * l + r;
        run_insn(in, a, b, c, d);
        bool ok = true;
        for (int l = 0; l < 64; ++l)
            for (int r = 0; r < nreg; ++r) ok &= d[l][r] == c[l][r] + (l == e.d_lane && r == e.d_reg ? av * bv : 0);
        char what[200];
        snprintf(what, sizeof what, "%s: A[%d][%d] at lane %d byte %d, B[%d][%d] at lane %d byte %d -> D[%d][%d] at lane %d reg %d", in.name,
                 e.i, e.k, e.a_lane, e.a_byte, e.k, e.j, e.b_lane, e.b_byte, e.i, e.j, e.d_lane, e.d_reg);
        check(ok, what);
    }
}

// The calculator's register-to-element formulas (--detail-instruction):
//   A i: lane % M; A k: bytes * floor(lane / M) + 4 * GPR_num + floor(GPR_bits / 8)   (B: j for i)
//   16x16 D: i = 4 * floor(lane / 16) + (GPR_num % 4), j = lane % 16
//   32x32 D: i = (8 * floor(GPR_num / 4) % 32) + 4 * floor(lane / 32) + (GPR_num % 4), j = lane % 32
void test_random(const insn& in, uint64_t& seed) {
    auto rnd = [&] {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(seed >> 32);
    };
    const int m = in.m, k = in.k, nreg = m * m / 64;
    std::vector<int> A(m * k), B(k * m), C(m * m);
    for (auto& v : A) v = static_cast<int8_t>(rnd());
    for (auto& v : B) v = static_cast<int8_t>(rnd());
    for (auto& v : C) v = static_cast<int>(rnd() % 2000001) - 1000000;
    A[0] = B[0] = -128;
    uint64_t a[64] = {}, b[64] = {};
    int c[64][16] = {}, d[64][16];
    for (int l = 0; l < 64; ++l)
        for (int g = 0; g < in.bytes; ++g) {
            const int kk = in.bytes * (l / m) + 4 * (g / 4) + g % 4;
            a[l] |= static_cast<uint64_t>(static_cast<uint8_t>(A[(l % m) * k + kk])) << (8 * g);
            b[l] |= static_cast<uint64_t>(static_cast<uint8_t>(B[kk * m + l % m])) << (8 * g);
        }
    auto d_entry = [&](int l, int r, int& i, int& j) {
        if (m == 16) {
            i = 4 * (l / 16) + r % 4;
            j = l % 16;
        } else {
            i = (8 * (r / 4)) % 32 + 4 * (l / 32) + r % 4;
            j = l % 32;
        }
    };
    for (int l = 0; l < 64; ++l)
        for (int r = 0; r < nreg; ++r) {
            int i, j;
            d_entry(l, r, i, j);
            c[l][r] = C[i * m + j];
        }
    run_insn(in, a, b, c, d);
    bool ok = true;
    std::vector<int> seen(m * m, 0);
    for (int l = 0; l < 64; ++l)
        for (int r = 0; r < nreg; ++r) {
            int i, j;
            d_entry(l, r, i, j);
            ++seen[i * m + j];
            int64_t s = C[i * m + j];
            for (int kk = 0; kk < k; ++kk) s += A[i * k + kk] * B[kk * m + j];
            ok &= d[l][r] == s;
        }
    for (int v : seen) ok &= v == 1;  // every D element in exactly one lane/register
    check(ok, std::string(in.name) + ": random A, B, C against the CPU product D = A * B + C");
}

// Runs fn in a forked child; it must abort and print `expect` on stderr.
// ---- v_mfma_f32_16x16x16f16 / v_mfma_f32_16x16x16bf16_1k -----------------
// Element e (0..3) of a lane's 16-bit x4 operand is the calculator's
// v(e/2).[16*(e%2)+15 : 16*(e%2)]. The calculator prints the same tables for
// CDNA2's f16 / bf16_1k and CDNA3's _f16 / _bf16 (checked entry by entry).
typedef uint16_t emu_b16x4 __attribute__((__vector_size__(4 * sizeof(uint16_t))));

// Runs the f16 (bf16 = false) or bf16 instruction on one wavefront.
void run_b16(bool bf16, int gfx, const uint16_t (*a)[4], const uint16_t (*b)[4], const float (*c)[4], float (*d)[4]) {
    emu_launch(dim3(1), dim3(64), 0, [&] {
        const int l = emu_lane_id();
        emu_b16x4 av, bv;
        emu_f32x4 cv;
        for (int e = 0; e < 4; ++e) av[e] = a[l][e], bv[e] = b[l][e], cv[e] = c[l][e];
        const emu_f32x4 dv = bf16 ? emu_mfma_f32_16x16x16_b16("v_mfma_f32_16x16x16bf16_1k", true, gfx, av, bv, cv, 0, 0, 0)
                                  : emu_mfma_f32_16x16x16_b16("v_mfma_f32_16x16x16f16", false, gfx, av, bv, cv, 0, 0, 0);
        for (int r = 0; r < 4; ++r) d[l][r] = dv[r];
    });
}

// {i, k, j, A lane, A element, B lane, B element, D lane, D GPR}; the entries
// marked * are the calculator's verbatim (-g), e.g. A[3][9] = v0{35}.[31:16]
// (lane 35, element 1), D[10][3] = v2{35}; the others follow its formulas.
const entry_case kCasesF16[] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0},        // A[0][0] = v0{0}.[15:0]*, B[0][0] = v0{0}.[15:0]*, D[0][0] = v0{0}*
    {15, 15, 15, 63, 3, 63, 3, 63, 3},  // A[15][15] = v1{63}.[31:16]*, B[15][15]*, D[15][15] = v3{63}*
    {5, 14, 7, 53, 2, 55, 2, 23, 1},    // A[5][14] = v1{53}.[15:0]*, D[5][7] = v1{23}*
    {12, 2, 12, 12, 2, 12, 2, 60, 0},   // A[12][2] = v1{12}.[15:0]*, B[2][12] = v1{12}.[15:0]*
    {7, 4, 7, 23, 0, 23, 0, 23, 3},     // A[7][4] = v0{23}.[15:0]*, B[4][7] = v0{23}.[15:0]*
    {10, 9, 3, 42, 1, 35, 1, 35, 2},    // B[9][3] = v0{35}.[31:16]*, D[10][3] = v2{35}*
};

// One nonzero in A (2) and in B (3), a distinct C everywhere: D = C but at
// D[i][j], which gains 6.
void test_b16_entries(bool bf16, int gfx) {
    const uint16_t two = bf16 ? 0x4000 : 0x4000, three = bf16 ? 0x4040 : 0x4200;
    for (const entry_case& t : kCasesF16) {
        static uint16_t a[64][4], b[64][4];
        static float c[64][4], d[64][4];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        for (int l = 0; l < 64; ++l)
            for (int r = 0; r < 4; ++r) c[l][r] = static_cast<float>(100 * l + r);
        a[t.a_lane][t.a_byte] = two;
        b[t.b_lane][t.b_byte] = three;
        run_b16(bf16, gfx, a, b, c, d);
        bool ok = true;
        for (int l = 0; l < 64; ++l)
            for (int r = 0; r < 4; ++r) ok = ok && d[l][r] == c[l][r] + (l == t.d_lane && r == t.d_reg ? 6.0f : 0.0f);
        check(ok, std::string(bf16 ? "bf16" : "f16") + " entry A[" + std::to_string(t.i) + "][" + std::to_string(t.k) + "] B[" +
                      std::to_string(t.k) + "][" + std::to_string(t.j) + "]");
    }
}

// Random A, B (multiples of 1/8 in [-4, 4]: exact in f16 and bf16, and so is
// every sum), placed with the calculator's element -> (lane, element)
// formulas and read back with its register -> element ones, against a CPU product.
void test_b16_random(bool bf16, int gfx, uint64_t& seed) {
    auto next = [&] { seed = seed * 6364136223846793005ull + 1442695040888963407ull; return static_cast<uint32_t>(seed >> 33); };
    double A[16][16], B[16][16], C[16][16];
    static uint16_t a[64][4], b[64][4];
    static float c[64][4], d[64][4];
    auto enc = [&](double v) -> uint16_t {
        const float f = static_cast<float>(v);
        return bf16 ? static_cast<uint16_t>(emu_f32_bits(f) >> 16) : __half(f).bits;
    };
    for (int i = 0; i < 16; ++i)
        for (int k = 0; k < 16; ++k) {
            A[i][k] = (static_cast<int>(next() % 65) - 32) / 8.0;
            B[i][k] = (static_cast<int>(next() % 65) - 32) / 8.0;  // B[k = i][j = k]
            C[i][k] = static_cast<int>(next() % 2001) - 1000;
        }
    for (int i = 0; i < 16; ++i)
        for (int k = 0; k < 16; ++k) {
            a[16 * (k / 4) + i][k % 4] = enc(A[i][k]);
            b[16 * (k / 4) + i][k % 4] = enc(B[k][i]);  // B[k][j = i]
        }
    for (int l = 0; l < 64; ++l)
        for (int r = 0; r < 4; ++r) c[l][r] = static_cast<float>(C[4 * (l / 16) + r][l % 16]);
    run_b16(bf16, gfx, a, b, c, d);
    bool ok = true;
    for (int l = 0; l < 64; ++l)
        for (int r = 0; r < 4; ++r) {
            const int i = 4 * (l / 16) + r, j = l % 16;
            double want = C[i][j];
            for (int k = 0; k < 16; ++k) want += A[i][k] * B[k][j];
            ok = ok && d[l][r] == static_cast<float>(want);
        }
    check(ok, std::string(bf16 ? "bf16" : "f16") + " random product on gfx" + (gfx == 0x90a ? "90a" : "942"));
}

void expect_abort(const char* what, const char* expect, const std::function<void()>& fn) {
    std::string out;
    const int sig = emu_run_in_child(fn, &out);
    const bool ok = sig == SIGABRT && out.find(expect) != std::string::npos;
    check(ok, std::string("fails loudly: ") + what + (ok ? "" : " (output: " + out + ")"));
}

}  // namespace

void run_mfma_selftests(int* passed, int* failed) {
    g_passed = passed;
    g_failed = failed;
    const int before = *failed;
    test_entry_cases(kInsns[0], kCases16x16x16, sizeof kCases16x16x16 / sizeof kCases16x16x16[0]);
    test_entry_cases(kInsns[1], kCases32x32x8, sizeof kCases32x32x8 / sizeof kCases32x32x8[0]);
    test_entry_cases(kInsns[2], kCases16x16x32, sizeof kCases16x16x32 / sizeof kCases16x16x32[0]);
    test_entry_cases(kInsns[3], kCases32x32x16, sizeof kCases32x32x16 / sizeof kCases32x32x16[0]);
    uint64_t seed = 12345;
    for (const insn& in : kInsns)
        for (int rep = 0; rep < 3; ++rep) test_random(in, seed);

    for (bool bf16 : {false, true}) {
        test_b16_entries(bf16, 0x942);
        for (int gfx : {0x90a, 0x942})
            for (int rep = 0; rep < 3; ++rep) test_b16_random(bf16, gfx, seed);
    }

    static const uint64_t zeros[64] = {};
    static const int czero[64][16] = {};
    static int dsink[64][16];
    expect_abort("cbsz = 1", "only 0, 0, 0 is emulated", [] { run_insn(kInsns[2], zeros, zeros, czero, dsink, 1); });
    expect_abort("v_mfma_i32_16x16x16i8 on gfx942", "does not exist on the emulated arch (gfx942)", [] {
        insn in = kInsns[0];
        in.gfx = 0x942;
        run_insn(in, zeros, zeros, czero, dsink);
    });
    expect_abort("v_mfma_i32_16x16x32_i8 on gfx90a", "does not exist on the emulated arch (gfx90a)", [] {
        insn in = kInsns[2];
        in.gfx = 0x90a;
        run_insn(in, zeros, zeros, czero, dsink);
    });
    expect_abort("v_mfma_f32_16x16x16bf16_1k on gfx908", "does not exist on the emulated arch (gfx908)", [] {
        static const uint16_t z[64][4] = {};
        static const float cz[64][4] = {};
        static float dz[64][4];
        run_b16(true, 0x908, z, z, cz, dz);
    });
    expect_abort("MFMA with lanes 32-63 exited", "needs all 64 lanes", [] {
        emu_launch(dim3(1), dim3(64), 0, [] {
            if (emu_lane_id() >= 32) return;
            emu_mfma_i32_16x16x32_i8(0x942, 0, 0, emu_i32x4{}, 0, 0, 0);
        });
    });
    expect_abort("lanes in different wave operations", "divergent wave operation", [] {
        emu_launch(dim3(1), dim3(64), 0, [] {
            if (emu_lane_id() < 16) (void)__shfl_xor(1, 1, 16);
            else emu_mfma_i32_16x16x32_i8(0x942, 0, 0, emu_i32x4{}, 0, 0, 0);
        });
    });
    printf("MFMA instruction tests: %d failed\n", *failed - before);
}
