// amd_gfx_emulation_test.cu - runs the AMD builtins emulated by
// tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h on an NVIDIA GPU (one 32-lane warp
// standing in for an RDNA wave32) and checks them:
//   (a) hand cases at the positions AMD's layout tables give (single nonzero
//       A and B elements; the product must appear in exactly the documented
//       lane/register of D, or nowhere when their K differ);
//   (b) random matrices packed per the documented layout against a CPU matrix
//       product, for every WMMA builtin, every signedness/clamp combination of
//       the iu8 ones, identity matrices;
//   (c) __builtin_amdgcn_perm / sdot4 / sudot4 against CPU references on edge
//       and random values;
//   (d) RDNA3 operands whose lanes 16-31 differ from lanes 0-15 must trap (in a
//       child process: a trap ends the CUDA context).
// The WMMA arithmetic model (exact products summed in double, one rounding;
// see the header) is the reference's too, so results are compared bit for bit.
//
//   nvcc -std=c++17 -O2 -arch=sm_90 -I hip-on-cuda/include \
//        -include tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h \
//        tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_test.cu -o /tmp/amd_emu_test && /tmp/amd_emu_test
//
// Prints "<n> passed, <m> failed"; exit status 1 on any failure.
// SPDX-License-Identifier: MIT OR Apache-2.0
#include "amd_gfx_emulation.h"  // force-included as in the kernel build; included again harmlessly

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

// The kernels' aliases after build-kernels.sh's rewrite compile to these.
static_assert(std::is_same<candle_emu_vector<_Float16, 8>, candle_emu_vector<__half, 8>>::value, "_Float16 is __half");
static_assert(std::is_same<candle_emu_vector<__bf16, 8>, candle_emu_vector<__nv_bfloat16, 8>>::value,
              "__bf16 is __nv_bfloat16");
// Sizes as AMD's vector types; alignment only the element's (amd_gfx_emulation.h says why).
static_assert(sizeof(candle_emu_vector<_Float16, 16>) == 32 && alignof(candle_emu_vector<_Float16, 16>) == 2, "");
static_assert(sizeof(candle_emu_vector<__bf16, 8>) == 16 && alignof(candle_emu_vector<__bf16, 8>) == 2, "");
static_assert(sizeof(candle_emu_vector<int, 2>) == 8 && alignof(candle_emu_vector<int, 2>) == 4, "");
static_assert(sizeof(candle_emu_vector<int, 8>) == 32 && alignof(candle_emu_vector<int, 8>) == 4, "");
static_assert(sizeof(candle_emu_vector<float, 8>) == 32, "");

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

#define CUDA_OK(x)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);  \
            std::exit(2);                                                                          \
        }                                                                                          \
    } while (0)

// ---------------------------------------------------------------------------
// The builtins under test, one kernel each (one warp).
// ---------------------------------------------------------------------------
enum Op { F32_F16_W32, F32_BF16_W32, I32_IU8_W32, F32_F16_GFX12, F32_BF16_GFX12, F16_F16_GFX12, I32_IU8_GFX12 };

struct OpInfo {
    const char* name;
    int gfx;
    int bits;   // A/B element width
    int kind;   // A/B: 0 f16, 1 bf16, 2 iu8
    int out;    // C/D: 0 f32, 1 i32, 2 f16
    int ab_words, cd_words;  // 32-bit words per lane
};
static const OpInfo kOps[] = {
    {"wmma_f32_16x16x16_f16_w32", 11, 16, 0, 0, 8, 8},
    {"wmma_f32_16x16x16_bf16_w32", 11, 16, 1, 0, 8, 8},
    {"wmma_i32_16x16x16_iu8_w32", 11, 8, 2, 1, 4, 8},
    {"wmma_f32_16x16x16_f16_w32_gfx12", 12, 16, 0, 0, 4, 8},
    {"wmma_f32_16x16x16_bf16_w32_gfx12", 12, 16, 1, 0, 4, 8},
    {"wmma_f16_16x16x16_f16_w32_gfx12", 12, 16, 0, 2, 4, 4},
    {"wmma_i32_16x16x16_iu8_w32_gfx12", 12, 8, 2, 1, 2, 8},
};

template <class V>
__device__ V load_lane(const uint32_t* p) {
    V v;
    memcpy(&v, p + threadIdx.x * (sizeof(V) / 4), sizeof(V));
    return v;
}
template <class V>
__device__ void store_lane(uint32_t* p, const V& v) {
    memcpy(p + threadIdx.x * (sizeof(V) / 4), &v, sizeof(V));
}

template <int OP>
__global__ void wmma_kernel(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* d, int a_signed,
                            int b_signed, int clamp) {
    if constexpr (OP == F32_F16_W32) {
        using AB = candle_emu_vector<_Float16, 16>;
        using CD = candle_emu_vector<float, 8>;
        store_lane(d, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(load_lane<AB>(a), load_lane<AB>(b), load_lane<CD>(c)));
    } else if constexpr (OP == F32_BF16_W32) {
        using AB = candle_emu_vector<__bf16, 16>;
        using CD = candle_emu_vector<float, 8>;
        store_lane(d, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(load_lane<AB>(a), load_lane<AB>(b), load_lane<CD>(c)));
    } else if constexpr (OP == I32_IU8_W32) {
        using AB = candle_emu_vector<int, 4>;
        using CD = candle_emu_vector<int, 8>;
        store_lane(d, __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(a_signed != 0, load_lane<AB>(a), b_signed != 0,
                                                                 load_lane<AB>(b), load_lane<CD>(c), clamp != 0));
    } else if constexpr (OP == F32_F16_GFX12) {
        using AB = candle_emu_vector<_Float16, 8>;
        using CD = candle_emu_vector<float, 8>;
        store_lane(d, __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(load_lane<AB>(a), load_lane<AB>(b),
                                                                       load_lane<CD>(c)));
    } else if constexpr (OP == F32_BF16_GFX12) {
        using AB = candle_emu_vector<__bf16, 8>;
        using CD = candle_emu_vector<float, 8>;
        store_lane(d, __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(load_lane<AB>(a), load_lane<AB>(b),
                                                                        load_lane<CD>(c)));
    } else if constexpr (OP == F16_F16_GFX12) {
        using AB = candle_emu_vector<_Float16, 8>;
        store_lane(d, __builtin_amdgcn_wmma_f16_16x16x16_f16_w32_gfx12(load_lane<AB>(a), load_lane<AB>(b),
                                                                       load_lane<AB>(c)));
    } else {
        using AB = candle_emu_vector<int, 2>;
        using CD = candle_emu_vector<int, 8>;
        store_lane(d, __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(a_signed != 0, load_lane<AB>(a), b_signed != 0,
                                                                       load_lane<AB>(b), load_lane<CD>(c), clamp != 0));
    }
}

struct Flags {
    int a_signed = 1, b_signed = 1, clamp = 0;
};

// Runs one WMMA on the GPU: words per lane in, words per lane out. Returns the
// kernel's CUDA error (reported), cudaSuccess if it ran.
static cudaError_t run_wmma(Op op, const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                     const std::vector<uint32_t>& c, std::vector<uint32_t>& d, Flags f = Flags()) {
    const OpInfo& info = kOps[op];
    uint32_t *da, *db, *dc, *dd;
    const size_t ab_bytes = 32 * info.ab_words * 4, cd_bytes = 32 * info.cd_words * 4;
    CUDA_OK(cudaMalloc(&da, ab_bytes));
    CUDA_OK(cudaMalloc(&db, ab_bytes));
    CUDA_OK(cudaMalloc(&dc, cd_bytes));
    CUDA_OK(cudaMalloc(&dd, cd_bytes));
    CUDA_OK(cudaMemcpy(da, a.data(), ab_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, b.data(), ab_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dc, c.data(), cd_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dd, 0xee, cd_bytes));
    switch (op) {
        case F32_F16_W32: wmma_kernel<F32_F16_W32><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
        case F32_BF16_W32: wmma_kernel<F32_BF16_W32><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
        case I32_IU8_W32: wmma_kernel<I32_IU8_W32><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
        case F32_F16_GFX12: wmma_kernel<F32_F16_GFX12><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
        case F32_BF16_GFX12: wmma_kernel<F32_BF16_GFX12><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
        case F16_F16_GFX12: wmma_kernel<F16_F16_GFX12><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
        case I32_IU8_GFX12: wmma_kernel<I32_IU8_GFX12><<<1, 32>>>(da, db, dc, dd, f.a_signed, f.b_signed, f.clamp); break;
    }
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        std::printf("%s: CUDA error %s\n", info.name, cudaGetErrorString(e));
        return e;
    }
    d.assign(32 * info.cd_words, 0);
    CUDA_OK(cudaMemcpy(d.data(), dd, cd_bytes, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(da));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(dc));
    CUDA_OK(cudaFree(dd));
    return cudaSuccess;
}

// ---------------------------------------------------------------------------
// Host helpers: element values and the documented layout.
// ---------------------------------------------------------------------------
static uint16_t f32_to_bf16_bits(float f) {  // round to nearest even (finite inputs)
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
// Field value (f16/bf16 bits or a byte) of a small integer.
static uint32_t enc(int kind, int x) {
    if (kind == 0) return candle_emu_f64_to_f16_bits(x);
    if (kind == 1) return f32_to_bf16_bits((float)x);
    return (uint32_t)x & 0xffu;
}
static double dec(int kind, uint32_t x, bool is_signed = true) {
    if (kind == 0) return candle_emu_f16_bits_to_float(x);
    if (kind == 1) return candle_emu_bf16_bits_to_float(x);
    return is_signed ? (double)(int8_t)x : (double)(x & 0xffu);
}

// Field e (of `bits` bits: 8, 16 or 32) of a lane's words.
static uint32_t field_mask(int bits) { return bits == 32 ? 0xffffffffu : (1u << bits) - 1u; }
static void set_field(std::vector<uint32_t>& words, int nwords, int bits, int lane, int e, uint32_t v) {
    uint32_t& w = words[lane * nwords + e * bits / 32];
    const int sh = e * bits % 32;
    w = (w & ~(field_mask(bits) << sh)) | (v << sh);
}
static uint32_t get_field(const std::vector<uint32_t>& words, int nwords, int bits, int lane, int e) {
    return (words[lane * nwords + e * bits / 32] >> (e * bits % 32)) & field_mask(bits);
}

// (row, col) of A/B element e of a lane, and of C/D element v, per the header's layout functions.
static void ab_pos(int gfx, char mat, int bits, int lane, int e, int& row, int& col) {
    const int k = gfx == 11 ? candle_emu_wmma_layout<11>::ab_k(bits, lane / 16, e)
                            : candle_emu_wmma_layout<12>::ab_k(bits, lane / 16, e);
    if (mat == 'A') row = lane % 16, col = k;
    else row = k, col = lane % 16;
}
static void cd_pos(int gfx, int lane, int v, int& row, int& col) {
    row = gfx == 11 ? candle_emu_wmma_layout<11>::cd_m(lane / 16, v) : candle_emu_wmma_layout<12>::cd_m(lane / 16, v);
    col = lane % 16;
}
static int ab_elems(int gfx) { return gfx == 11 ? 16 : 8; }

// Logical 16x16 field matrix (A: [m][k], B: [k][n]) -> lane words.
static std::vector<uint32_t> pack_ab(const OpInfo& info, char mat, const uint32_t (&x)[16][16]) {
    std::vector<uint32_t> w(32 * info.ab_words, 0);
    for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < ab_elems(info.gfx); ++e) {
            int r, c;
            ab_pos(info.gfx, mat, info.bits, lane, e, r, c);
            set_field(w, info.ab_words, info.bits, lane, e, x[r][c]);
        }
    return w;
}
// C/D: 32-bit words, or 16-bit fields (f16 output).
static std::vector<uint32_t> pack_cd(const OpInfo& info, const uint32_t (&x)[16][16]) {
    const int bits = info.out == 2 ? 16 : 32;
    std::vector<uint32_t> w(32 * info.cd_words, 0);
    for (int lane = 0; lane < 32; ++lane)
        for (int v = 0; v < 8; ++v) {
            int r, c;
            cd_pos(info.gfx, lane, v, r, c);
            if (bits == 32) w[lane * info.cd_words + v] = x[r][c];
            else set_field(w, info.cd_words, 16, lane, v, x[r][c]);
        }
    return w;
}
static void unpack_cd(const OpInfo& info, const std::vector<uint32_t>& w, uint32_t (&x)[16][16]) {
    for (int lane = 0; lane < 32; ++lane)
        for (int v = 0; v < 8; ++v) {
            int r, c;
            cd_pos(info.gfx, lane, v, r, c);
            x[r][c] = info.out == 2 ? get_field(w, info.cd_words, 16, lane, v) : w[lane * info.cd_words + v];
        }
}

// CPU reference: D = A * B + C in the header's arithmetic model.
static void reference(const OpInfo& info, const uint32_t (&a)[16][16], const uint32_t (&b)[16][16],
                      const uint32_t (&c)[16][16], uint32_t (&d)[16][16], Flags f) {
    for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 16; ++n) {
            double s = 0;
            for (int k = 0; k < 16; ++k)
                s += dec(info.kind, a[m][k], f.a_signed) * dec(info.kind, b[k][n], f.b_signed);
            if (info.out == 0) {
                float cf;
                std::memcpy(&cf, &c[m][n], 4);
                d[m][n] = f32_bits((float)(s + (double)cf));
            } else if (info.out == 1) {
                const int64_t t = (int64_t)s + (int64_t)(int32_t)c[m][n];
                d[m][n] = (uint32_t)(f.clamp ? (t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t)
                                             : (int64_t)(int32_t)(uint32_t)(uint64_t)t);
            } else {
                d[m][n] = candle_emu_f64_to_f16_bits(s + (double)candle_emu_f16_bits_to_float(c[m][n]));
            }
        }
}

static std::string cell(const OpInfo& info, uint32_t x) {
    char buf[64];
    if (info.out == 0) {
        float f;
        std::memcpy(&f, &x, 4);
        std::snprintf(buf, sizeof buf, "%g (0x%08x)", f, x);
    } else if (info.out == 1) {
        std::snprintf(buf, sizeof buf, "%d", (int32_t)x);
    } else {
        std::snprintf(buf, sizeof buf, "%g (0x%04x)", candle_emu_f16_bits_to_float(x), x);
    }
    return buf;
}

// Runs op on logical matrices and compares with the reference; prints the first differences.
static void check_product(Op op, const uint32_t (&a)[16][16], const uint32_t (&b)[16][16],
                          const uint32_t (&c)[16][16], Flags f, const char* what) {
    const OpInfo& info = kOps[op];
    std::vector<uint32_t> d;
    if (run_wmma(op, pack_ab(info, 'A', a), pack_ab(info, 'B', b), pack_cd(info, c), d, f) != cudaSuccess) {
        CHECK(false, "%s %s: kernel failed", info.name, what);
        return;
    }
    uint32_t got[16][16], want[16][16];
    unpack_cd(info, d, got);
    reference(info, a, b, c, want, f);
    int bad = 0;
    for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 16; ++n)
            if (got[m][n] != want[m][n] && bad++ < 4)
                std::printf("  %s %s: D[%d][%d] = %s, expected %s\n", info.name, what, m, n, cell(info, got[m][n]).c_str(),
                            cell(info, want[m][n]).c_str());
    CHECK(bad == 0, "%s %s (signed %d/%d, clamp %d): %d of 256 elements differ", info.name, what, f.a_signed,
          f.b_signed, f.clamp, bad);
}

// ---------------------------------------------------------------------------
// (a) Hand cases from AMD's tables (ISA guides' WMMA layout tables, as AMD's
// Matrix Instruction Calculator prints them: "A[3][9] = v4{3}.[31:16]"):
// A and B zero but one element each; D must be zero but at one documented place.
// Element index = (32 * vgpr + low bit) / element bits. gfx11 A/B elements are
// also written to the replica lane (lane + 16), as the tables list both.
// ---------------------------------------------------------------------------
struct Hand {
    Op op;
    const char* text;
    int a_lane, a_elem, b_lane, b_elem;
    int d_lane, d_elem;  // -1: A's K and B's K differ, D must be all zero
};
static const Hand kHand[] = {
    {F32_F16_W32, "A[3][9]=v4{3,19}.[31:16] B[9][6]=v4{6,22}.[31:16] D[3][6]=v1{22}", 3, 9, 6, 9, 22, 1},
    {F32_F16_W32, "A[3][9] B[8][6]=v4{6,22}.[15:0]: K differ", 3, 9, 6, 8, -1, -1},
    {F32_BF16_W32, "A[14][0]=v0{14,30}.[15:0] B[0][15]=v0{15,31}.[15:0] D[14][15]=v7{15}", 14, 0, 15, 0, 15, 7},
    {I32_IU8_W32, "A[3][9]=v2{3,19}.[15:8] B[9][6]=v2{6,22}.[15:8] D[3][6]=v1{22}", 3, 9, 6, 9, 22, 1},
    {I32_IU8_W32, "A[1][0]=v0{1,17}.[7:0] B[0][0]=v0{0,16}.[7:0] D[1][0]=v0{16}", 1, 0, 0, 0, 16, 0},
    {F32_F16_GFX12, "A[0][4]=v0{16}.[15:0] B[4][5]=v0{21}.[15:0] D[0][5]=v0{5}", 16, 0, 21, 0, 5, 0},
    {F32_F16_GFX12, "A[12][10]=v3{12}.[15:0] B[10][7]=v3{7}.[15:0] D[12][7]=v4{23}", 12, 6, 7, 6, 23, 4},
    {F32_F16_GFX12, "A[0][4]=v0{16}.[15:0] B[8][5]=v2{5}.[15:0]: K differ", 16, 0, 5, 4, -1, -1},
    {F32_BF16_GFX12, "A[8][15]=v3{24}.[31:16] B[15][2]=v3{18}.[31:16] D[8][2]=v0{18}", 24, 7, 18, 7, 18, 0},
    {F16_F16_GFX12, "A[9][1]=v0{9}.[31:16] B[1][3]=v0{3}.[31:16] D[9][3]=v0{19}.[31:16]", 9, 1, 3, 1, 19, 1},
    {I32_IU8_GFX12, "A[3][9]=v0{19}.[15:8] B[9][6]=v0{22}.[15:8] D[3][6]=v3{6}", 19, 1, 22, 1, 6, 3},
    {I32_IU8_GFX12, "A[3][1]=v0{3}.[15:8] B[9][6]=v0{22}.[15:8]: K differ", 3, 1, 22, 1, -1, -1},
};

static void test_hand() {
    for (const Hand& hc : kHand) {
        const OpInfo& info = kOps[hc.op];
        const int out_bits = info.out == 2 ? 16 : 32;
        for (int with_c = 0; with_c < 2; ++with_c) {
            std::vector<uint32_t> a(32 * info.ab_words, 0), b(32 * info.ab_words, 0), c(32 * info.cd_words, 0), d;
            const int copies = info.gfx == 11 ? 2 : 1;
            for (int r = 0; r < copies; ++r) {
                set_field(a, info.ab_words, info.bits, hc.a_lane + 16 * r, hc.a_elem, enc(info.kind, 2));
                set_field(b, info.ab_words, info.bits, hc.b_lane + 16 * r, hc.b_elem, enc(info.kind, -3));
            }
            // With C: 1 at the checked D position (or at D's (lane 0, element 0) when K differ).
            const int c_lane = hc.d_lane >= 0 ? hc.d_lane : 0, c_elem = hc.d_lane >= 0 ? hc.d_elem : 0;
            const uint32_t one = info.out == 0 ? f32_bits(1.0f) : info.out == 1 ? 1u : 0x3c00u;
            if (with_c) set_field(c, info.cd_words, out_bits, c_lane, c_elem, one);
            if (run_wmma(hc.op, a, b, c, d) != cudaSuccess) {
                CHECK(false, "%s %s: kernel failed", info.name, hc.text);
                continue;
            }
            const int want_at = hc.d_lane >= 0 ? -6 + with_c : 0 + with_c;  // A*B = 2 * -3
            uint32_t want_bits;
            if (info.out == 0) want_bits = f32_bits((float)want_at);
            else if (info.out == 1) want_bits = (uint32_t)want_at;
            else want_bits = candle_emu_f64_to_f16_bits(want_at);
            int bad = 0;
            for (int lane = 0; lane < 32; ++lane)
                for (int v = 0; v < 8; ++v) {
                    const uint32_t got = get_field(d, info.cd_words, out_bits, lane, v);
                    const bool here = lane == c_lane && v == c_elem;
                    const uint32_t want = here ? want_bits : 0u;
                    if (got != want && bad++ < 4)
                        std::printf("  %s [%s]: lane %d element %d = %s, expected %s\n", info.name, hc.text, lane, v,
                                    cell(info, got).c_str(), cell(info, want).c_str());
                }
            CHECK(bad == 0, "%s hand case %s%s", info.name, hc.text, with_c ? " (+C)" : "");
        }
    }
}

// ---------------------------------------------------------------------------
// (b) Random and identity matrices.
// ---------------------------------------------------------------------------
static void test_random(std::mt19937& rng) {
    for (int op = 0; op < 7; ++op) {
        const OpInfo& info = kOps[op];
        std::vector<Flags> flag_sets;
        if (info.kind == 2) {
            for (int as = 0; as < 2; ++as)
                for (int bs = 0; bs < 2; ++bs)
                    for (int cl = 0; cl < 2; ++cl) flag_sets.push_back(Flags{as, bs, cl});
        } else {
            flag_sets.push_back(Flags{});
        }
        for (const Flags& f : flag_sets)
            for (int trial = 0; trial < 4; ++trial) {
                uint32_t a[16][16], b[16][16], c[16][16];
                for (int i = 0; i < 16; ++i)
                    for (int j = 0; j < 16; ++j) {
                        if (info.kind == 2) {
                            const uint32_t extreme[] = {0x00, 0x01, 0x7f, 0x80, 0x81, 0xff};
                            a[i][j] = rng() % 4 ? rng() & 0xffu : extreme[rng() % 6];
                            b[i][j] = rng() % 4 ? rng() & 0xffu : extreme[rng() % 6];
                        } else {
                            std::uniform_real_distribution<float> u(-8, 8);
                            a[i][j] = info.kind == 0 ? candle_emu_f64_to_f16_bits(u(rng)) : f32_to_bf16_bits(u(rng));
                            b[i][j] = info.kind == 0 ? candle_emu_f64_to_f16_bits(u(rng)) : f32_to_bf16_bits(u(rng));
                        }
                        if (info.out == 0) {
                            c[i][j] = f32_bits(std::uniform_real_distribution<float>(-100, 100)(rng));
                        } else if (info.out == 1) {
                            // near the i32 limits half of the time, so that clamp / wrap-around matter
                            const int32_t near[] = {INT32_MAX, INT32_MIN, INT32_MAX - 500000, INT32_MIN + 500000};
                            c[i][j] = (uint32_t)(rng() % 2 ? near[rng() % 4] : (int32_t)(rng() % 2000001) - 1000000);
                        } else {
                            c[i][j] = candle_emu_f64_to_f16_bits(std::uniform_real_distribution<float>(-100, 100)(rng));
                        }
                    }
                if (trial == 3 && info.kind != 2) {  // f16/bf16 specials: zeros, subnormals, large values
                    a[0][0] = 0x8000u;
                    a[1][1] = 0x0001u;                             // smallest subnormal
                    a[2][3] = info.kind == 0 ? 0x7bffu : 0x7f7fu;  // largest finite
                    b[3][2] = info.kind == 0 ? 0x7bffu : 0x7f7fu;
                }
                char what[32];
                std::snprintf(what, sizeof what, "random #%d", trial);
                check_product((Op)op, a, b, c, f, what);
            }
        // Identities: I * B = B, A * I = A (C = 0).
        uint32_t id[16][16], x[16][16], zero[16][16];
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) {
                id[i][j] = enc(info.kind, i == j);
                x[i][j] = enc(info.kind, (int)(rng() % 15) - 7);
                zero[i][j] = 0;
            }
        check_product((Op)op, id, x, zero, Flags{}, "I * B");
        check_product((Op)op, x, id, zero, Flags{}, "A * I");
        // ... and that the result really is B / A, not only what the reference says.
        uint32_t got[16][16];
        std::vector<uint32_t> d;
        bool ok = run_wmma((Op)op, pack_ab(info, 'A', id), pack_ab(info, 'B', x), pack_cd(info, zero), d) == cudaSuccess;
        if (ok) {
            unpack_cd(info, d, got);
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 16; ++j) {
                    const double v = dec(info.kind, x[i][j]);  // small integers, exact in every type
                    const uint32_t want = info.out == 0   ? f32_bits((float)v)
                                          : info.out == 1 ? (uint32_t)(int32_t)v
                                                          : candle_emu_f64_to_f16_bits(v);
                    ok &= got[i][j] == want;
                }
        }
        CHECK(ok, "%s: I * B == B", info.name);
    }
}

// ---------------------------------------------------------------------------
// (c) perm, sdot4, sudot4.
// ---------------------------------------------------------------------------
__global__ void scalar_kernel(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t x = a[i], y = b[i], z = c[i];
    uint32_t* o = out + 10 * i;
    o[0] = __builtin_amdgcn_perm(x, y, z);
    o[1] = (uint32_t)__builtin_amdgcn_sdot4((int)x, (int)y, (int)z, false);
    o[2] = (uint32_t)__builtin_amdgcn_sdot4((int)x, (int)y, (int)z, true);
    int q = 3;
    for (int as = 0; as < 2; ++as)
        for (int bs = 0; bs < 2; ++bs) {
            o[q++] = (uint32_t)__builtin_amdgcn_sudot4(as != 0, (int)x, bs != 0, (int)y, (int)z, false);
            if (as && bs) o[q++] = (uint32_t)__builtin_amdgcn_sudot4(true, (int)x, true, (int)y, (int)z, true);
        }
    o[8] = (uint32_t)__builtin_amdgcn_sudot4(false, (int)x, false, (int)y, (int)z, true);
    o[9] = (uint32_t)__builtin_amdgcn_sudot4(true, (int)x, false, (int)y, (int)z, true);
}

// Independent of the header: the ISA's BYTE_PERMUTE spelled out.
static uint32_t perm_ref(uint32_t s0, uint32_t s1, uint32_t sel) {
    uint8_t in[8];
    for (int j = 0; j < 4; ++j) {
        in[j] = (uint8_t)(s1 >> (8 * j));
        in[4 + j] = (uint8_t)(s0 >> (8 * j));
    }
    uint32_t d = 0;
    for (int j = 0; j < 4; ++j) {
        const unsigned s = (sel >> (8 * j)) & 0xff;
        uint8_t out;
        switch (s) {
            case 8: out = in[1] & 0x80 ? 0xff : 0; break;
            case 9: out = in[3] & 0x80 ? 0xff : 0; break;
            case 10: out = in[5] & 0x80 ? 0xff : 0; break;
            case 11: out = in[7] & 0x80 ? 0xff : 0; break;
            case 12: out = 0; break;
            default: out = s < 8 ? in[s] : 0xff;
        }
        d |= (uint32_t)out << (8 * j);
    }
    return d;
}
static uint32_t dot4_ref(bool as, uint32_t a, bool bs, uint32_t b, uint32_t c, bool clamp) {
    int64_t s = (int32_t)c;
    for (int j = 0; j < 4; ++j) {
        const int x = as ? (int)(int8_t)(a >> (8 * j)) : (int)((a >> (8 * j)) & 0xff);
        const int y = bs ? (int)(int8_t)(b >> (8 * j)) : (int)((b >> (8 * j)) & 0xff);
        s += (int64_t)x * y;
    }
    if (clamp) s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
    return (uint32_t)(uint64_t)s;
}

static void test_scalar(std::mt19937& rng) {
    std::vector<uint32_t> a, b, c;
    // Hand values: V_PERM_B32 v15, v1, v0, 0x05040100 with v1 = 15944, v0 = 84148480 gives 1044906240
    // (the V_PERM_B32 unit test of Qazalin/remu, an RDNA3 emulator); ggml's 16-entry table lookup
    // perm(table[4..7], table[0..3], idx) = table[idx] for table[i] = i; sel 12 -> 0x00, >= 13 -> 0xff,
    // 8..11 -> sign of in[1], in[3], in[5], in[7].
    const uint32_t hand[][4] = {{15944u, 84148480u, 0x05040100u, 1044906240u},
                                {0x07060504u, 0x03020100u, 0x07050301u, 0x07050301u},
                                {0x8877f655u, 0x44b32211u, 0x00010203u, 0x1122b344u},
                                {0x8877f655u, 0x44b32211u, 0x0d0cff0cu, 0xff00ff00u},
                                {0x8877f655u, 0x44b32211u, 0x0b0a0908u, 0xffff0000u}};
    for (const auto& h : hand) a.push_back(h[0]), b.push_back(h[1]), c.push_back(h[2]);
    const uint32_t edge[] = {0u, 1u, 0x7fu, 0x80u, 0xffu, 0x7f7f7f7fu, 0x80808080u, 0xffffffffu, 0x017f80ffu, 0x80000000u};
    const uint32_t edge_c[] = {0u, 1u, 0xffffffffu, 0x7fffffffu, 0x80000000u, 0x7ffffc18u, 0x800003e8u};
    for (uint32_t x : edge)
        for (uint32_t y : edge)
            for (uint32_t z : edge_c) a.push_back(x), b.push_back(y), c.push_back(z);
    for (uint32_t s = 0; s < 256; ++s)  // every selector value in every byte
        for (int pos = 0; pos < 4; ++pos)
            a.push_back(rng()), b.push_back(rng()), c.push_back((rng() & ~(0xffu << (8 * pos))) | (s << (8 * pos)));
    for (int t = 0; t < 20000; ++t) a.push_back(rng()), b.push_back(rng()), c.push_back(rng());
    const int n = (int)a.size();
    uint32_t *da, *db, *dc, *dout;
    CUDA_OK(cudaMalloc(&da, n * 4));
    CUDA_OK(cudaMalloc(&db, n * 4));
    CUDA_OK(cudaMalloc(&dc, n * 4));
    CUDA_OK(cudaMalloc(&dout, n * 40));
    CUDA_OK(cudaMemcpy(da, a.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, b.data(), n * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dc, c.data(), n * 4, cudaMemcpyHostToDevice));
    scalar_kernel<<<(n + 255) / 256, 256>>>(da, db, dc, dout, n);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint32_t> out(10 * (size_t)n);
    CUDA_OK(cudaMemcpy(out.data(), dout, n * 40, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(da));
    CUDA_OK(cudaFree(db));
    CUDA_OK(cudaFree(dc));
    CUDA_OK(cudaFree(dout));
    int bad[10] = {};
    for (int i = 0; i < n; ++i) {
        const uint32_t x = a[i], y = b[i], z = c[i];
        const uint32_t want[10] = {perm_ref(x, y, z),
                                   dot4_ref(true, x, true, y, z, false),
                                   dot4_ref(true, x, true, y, z, true),
                                   dot4_ref(false, x, false, y, z, false),
                                   dot4_ref(false, x, true, y, z, false),
                                   dot4_ref(true, x, false, y, z, false),
                                   dot4_ref(true, x, true, y, z, false),
                                   dot4_ref(true, x, true, y, z, true),
                                   dot4_ref(false, x, false, y, z, true),
                                   dot4_ref(true, x, false, y, z, true)};
        for (int q = 0; q < 10; ++q)
            if (out[10 * i + q] != want[q] && bad[q]++ < 3)
                std::printf("  scalar #%d (0x%08x, 0x%08x, 0x%08x): result %d = 0x%08x, expected 0x%08x\n", i, x, y, z, q,
                            out[10 * i + q], want[q]);
    }
    static const char* names[10] = {"perm", "sdot4", "sdot4 clamp", "sudot4 u*u", "sudot4 u*s", "sudot4 s*u",
                                    "sudot4 s*s", "sudot4 s*s clamp", "sudot4 u*u clamp", "sudot4 s*u clamp"};
    for (int q = 0; q < 10; ++q) CHECK(bad[q] == 0, "%s: %d of %d differ", names[q], bad[q], n);
    for (int i = 0; i < (int)(sizeof hand / sizeof hand[0]); ++i)
        CHECK(out[10 * i] == hand[i][3], "perm(0x%08x, 0x%08x, 0x%08x) = 0x%08x, expected 0x%08x", hand[i][0],
              hand[i][1], hand[i][2], out[10 * i], hand[i][3]);
}

// ---------------------------------------------------------------------------
// (d) RDNA3 operands that are not replicated in lanes 16-31 must trap.
// ---------------------------------------------------------------------------
static int unreplicated_child(const char* which) {
    const bool iu8 = std::strcmp(which, "iu8-b") == 0;
    const Op op = iu8 ? I32_IU8_W32 : F32_F16_W32;
    const OpInfo& info = kOps[op];
    std::vector<uint32_t> a(32 * info.ab_words, 0), b(32 * info.ab_words, 0), c(32 * info.cd_words, 0), d;
    for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 16; ++e) {
            set_field(a, info.ab_words, info.bits, lane, e, enc(info.kind, (lane % 16 + e) % 5));
            set_field(b, info.ab_words, info.bits, lane, e, enc(info.kind, (lane % 16 * e) % 3));
        }
    // One element of lane 20 differs from its copy in lane 4.
    set_field(iu8 ? b : a, info.ab_words, info.bits, 20, 5, enc(info.kind, 7));
    const cudaError_t e = run_wmma(op, a, b, c, d);
    if (e == cudaSuccess) {
        std::printf("child %s: the WMMA did not trap\n", which);
        return 0;
    }
    // __trap() ends the kernel with an unspecified launch failure.
    if (e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction || e == cudaErrorAssert) {
        std::printf("child %s: trapped as expected (%s)\n", which, cudaGetErrorString(e));
        return 3;
    }
    return 4;
}

static void test_unreplicated(const char* self) {
    for (const char* which : {"f16-a", "iu8-b"}) {
        const std::string cmd = std::string("'") + self + "' --unreplicated-child " + which;
        std::fflush(stdout);
        const int st = std::system(cmd.c_str());
        CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3,
              "RDNA3 WMMA with lanes 16-31 != lanes 0-15 (%s) traps (child status %d)", which, st);
    }
}

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--unreplicated-child") == 0) return unreplicated_child(argv[2]);
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        std::printf("cannot read /proc/self/exe\n");
        return 2;
    }
    self[len] = 0;
    int dev = 0;
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaGetDeviceProperties(&prop, dev));
    std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);

    std::mt19937 rng(2024);
    test_hand();
    test_random(rng);
    test_scalar(rng);
    test_unreplicated(self);
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
