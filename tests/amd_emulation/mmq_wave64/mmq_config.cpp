// One emulated configuration of the generated MMQ code: compiled once per
// (arch, switch) with g++, e.g.
//   -D__gfx942__ -DEMU_CFG=cdna3_mfma   (MFMA: the default; -DCANDLE_HIP_NO_MMQ_MFMA for the dp4a tiles)
// and linked with the others into mmq_wave64 (run.sh). It includes the
// generated headers unchanged and the instance / quantize launcher files with
// only their launch syntax rewritten (run.sh: `k<<<g, b, s, st>>>(a)` becomes
// `emu_launch_kernel(g, b, s, st, k, a)`), all inside namespace EMU_CFG so
// that the four configurations can live in one program; the launchers' C
// names get an EMU_CFG prefix.
#include "hip_cpu_device.h"
#include "mfma_cpu.h"
#include "mmq_config_api.h"

// The system headers the generated code includes, included here first so that
// their own inclusion inside the namespace below is a no-op.
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#ifndef EMU_CFG
#error "define EMU_CFG (the configuration's name)"
#endif

#define launch_mmq_gguf_q4_0 EMU_CAT(EMU_CFG, _launch_mmq_gguf_q4_0)
#define launch_mmq_gguf_q4_1 EMU_CAT(EMU_CFG, _launch_mmq_gguf_q4_1)
#define launch_mmq_gguf_q5_0 EMU_CAT(EMU_CFG, _launch_mmq_gguf_q5_0)
#define launch_mmq_gguf_q5_1 EMU_CAT(EMU_CFG, _launch_mmq_gguf_q5_1)
#define launch_mmq_gguf_q8_0 EMU_CAT(EMU_CFG, _launch_mmq_gguf_q8_0)
#define launch_mmq_gguf_q2_k EMU_CAT(EMU_CFG, _launch_mmq_gguf_q2_k)
#define launch_mmq_gguf_q3_k EMU_CAT(EMU_CFG, _launch_mmq_gguf_q3_k)
#define launch_mmq_gguf_q4_k EMU_CAT(EMU_CFG, _launch_mmq_gguf_q4_k)
#define launch_mmq_gguf_q5_k EMU_CAT(EMU_CFG, _launch_mmq_gguf_q5_k)
#define launch_mmq_gguf_q6_k EMU_CAT(EMU_CFG, _launch_mmq_gguf_q6_k)
#define launch_mmq_quantize_q8_1_D4 EMU_CAT(EMU_CFG, _launch_mmq_quantize_q8_1_D4)
#define launch_mmq_quantize_q8_1_DS4 EMU_CAT(EMU_CFG, _launch_mmq_quantize_q8_1_DS4)
#define launch_mmq_quantize_q8_1_D2S6 EMU_CAT(EMU_CFG, _launch_mmq_quantize_q8_1_D2S6)

namespace EMU_CFG {
// Both extern __shared__ arrays of mul_mat_q name the launch's dynamic shared memory.
EMU_DYNAMIC_SHARED(int, data_mul_mat_q);
EMU_DYNAMIC_SHARED(int, ids_dst_shared);

#include "mmq_instance_q4_0.hip"
#include "mmq_instance_q4_1.hip"
#include "mmq_instance_q5_0.hip"
#include "mmq_instance_q5_1.hip"
#include "mmq_instance_q8_0.hip"
#include "mmq_instance_q2_k.hip"
#include "mmq_instance_q3_k.hip"
#include "mmq_instance_q4_k.hip"
#include "mmq_instance_q5_k.hip"
#include "mmq_instance_q6_k.hip"
#include "mmq_quantize.hip"

static constexpr int kCc = GGML_CUDA_CC_OFFSET_AMD + EMU_GFX;
static constexpr int kWarpSizeHost = 64;  // what candle passes on CDNA (the wavefront size)

template <ggml_type type>
static size_t nbytes_shared_t(int mmq_x) {
    const int mmq_y = get_mmq_y_host(kCc);
    return mmq_get_nbytes_shared<type>(mmq_x, mmq_y, kCc, kWarpSizeHost, mmq_get_nwarps_host(kCc, kWarpSizeHost));
}

static size_t nbytes_shared(int t, int mmq_x) {
    switch (static_cast<ggml_type>(t)) {
        case GGML_TYPE_Q4_0: return nbytes_shared_t<GGML_TYPE_Q4_0>(mmq_x);
        case GGML_TYPE_Q4_1: return nbytes_shared_t<GGML_TYPE_Q4_1>(mmq_x);
        case GGML_TYPE_Q5_0: return nbytes_shared_t<GGML_TYPE_Q5_0>(mmq_x);
        case GGML_TYPE_Q5_1: return nbytes_shared_t<GGML_TYPE_Q5_1>(mmq_x);
        case GGML_TYPE_Q8_0: return nbytes_shared_t<GGML_TYPE_Q8_0>(mmq_x);
        case GGML_TYPE_Q2_K: return nbytes_shared_t<GGML_TYPE_Q2_K>(mmq_x);
        case GGML_TYPE_Q3_K: return nbytes_shared_t<GGML_TYPE_Q3_K>(mmq_x);
        case GGML_TYPE_Q4_K: return nbytes_shared_t<GGML_TYPE_Q4_K>(mmq_x);
        case GGML_TYPE_Q5_K: return nbytes_shared_t<GGML_TYPE_Q5_K>(mmq_x);
        case GGML_TYPE_Q6_K: return nbytes_shared_t<GGML_TYPE_Q6_K>(mmq_x);
        default: emu_fatal("nbytes_shared: type without MMQ");
    }
}

// launch_mmq_case_<type>'s choice, for the table (the launch itself makes its own).
static int chosen_mmq_x(int t, int64_t ncols, int64_t smpbo) {
    const int mmq_x_max = get_mmq_x_max_host(kCc);
    int best = 0, ntiles_best = INT_MAX;
    for (int mmq_x = 8; mmq_x <= mmq_x_max && ntiles_best > 1; mmq_x += 8) {
        if (mmq_x % mmq_get_granularity_host(mmq_x, kCc) != 0) continue;
        if (static_cast<int64_t>(nbytes_shared(t, mmq_x)) > smpbo) continue;
        const int ntiles = static_cast<int>((ncols + mmq_x - 1) / mmq_x);
        if (ntiles < ntiles_best) {
            best = mmq_x;
            ntiles_best = ntiles;
        }
    }
    return best;
}

static int ds_layout(int t) { return mmq_get_q8_1_ds_layout(static_cast<ggml_type>(t)); }
static int mmq_y_host() { return get_mmq_y_host(kCc); }
static int nwarps_host() { return mmq_get_nwarps_host(kCc, kWarpSizeHost); }

static void report(int* passed, int* failed, bool ok, const char* what) {
    printf("  %s  %s\n", ok ? "ok    " : "FAILED", what);
    ++*(ok ? passed : failed);
}

// ggml's MFMA tiles (mmq_mma.cuh) on the emulated instructions, one wavefront.
static void tile_selftest(int* passed, int* failed) {
#if defined(AMD_MFMA_AVAILABLE)
    using namespace ggml_cuda_mma;
    uint64_t seed = 0x5eed0000 + EMU_GFX;
    auto rnd8 = [&] {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<int8_t>(seed >> 56);
    };
    char what[200];
    // tile<16,8,int> A, B (16 rows x 32 int8) -> tile<16,16,int,J_MAJOR>, as vec_dot_q8_0_q8_1_mma uses them.
    {
        alignas(16) int8_t a[16][32], b[16][32];
        for (auto& r : a) for (auto& v : r) v = rnd8();
        for (auto& r : b) for (auto& v : r) v = rnd8();
        a[3][5] = b[7][5] = -128;
        int out[16][16];
        for (auto& r : out) for (auto& v : r) v = INT_MIN;
        emu_launch(dim3(1), dim3(64), 0, [&] {
            tile<16, 8, int> A, B;
            load_generic(A, reinterpret_cast<const int*>(a), 8);
            load_generic(B, reinterpret_cast<const int*>(b), 8);
            tile<16, 16, int, DATA_LAYOUT_J_MAJOR> C;
            mma(C, A, B);
            for (int l = 0; l < C.ne; ++l) out[C.get_i(l)][C.get_j(l)] = C.x[l];
        });
        bool ok = true;
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) {
                int s = 0;
                for (int k = 0; k < 32; ++k) s += a[i][k] * b[j][k];
                ok &= out[i][j] == s;
            }
        snprintf(what, sizeof what, "%s: mma(tile<16,16,int,J_MAJOR>, tile<16,8,int>, tile<16,8,int>) == A * B^T (K = 32 int8)",
                 EMU_STR(EMU_CFG));
        report(passed, failed, ok, what);
    }
    // The <16,4> operands loaded as tile<64,2,int> and used as tile<16,8,int>
    // (vec_dot_q8_0_16_q8_1_mma, q2_K, q6_K): every int8 appears twice in K, so
    // the result is twice the 16-deep product (the callers halve dB).
    {
        alignas(16) int8_t a[16][16], b[16][16];
        for (auto& r : a) for (auto& v : r) v = rnd8();
        for (auto& r : b) for (auto& v : r) v = rnd8();
        int out[16][16];
        for (auto& r : out) for (auto& v : r) v = INT_MIN;
        emu_launch(dim3(1), dim3(64), 0, [&] {
            typedef tile<64, 2, int> tile_load;
            tile<16, 8, int> A[1], B[1];
            load_generic(reinterpret_cast<tile_load*>(A)[0], reinterpret_cast<const int*>(a), 4);
            load_generic(reinterpret_cast<tile_load*>(B)[0], reinterpret_cast<const int*>(b), 4);
            tile<16, 16, int, DATA_LAYOUT_J_MAJOR> C;
            mma(C, A[0], B[0]);
            for (int l = 0; l < C.ne; ++l) out[C.get_i(l)][C.get_j(l)] = C.x[l];
        });
        bool ok = true;
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) {
                int s = 0;
                for (int k = 0; k < 16; ++k) s += a[i][k] * b[j][k];
                ok &= out[i][j] == 2 * s;
            }
        snprintf(what, sizeof what, "%s: tile<64,2,int> loads of 16 x 4-int operands give 2 * A * B^T (K = 16 int8)", EMU_STR(EMU_CFG));
        report(passed, failed, ok, what);
    }
    // tile<32,4,int> A, B (32 rows x 16 int8) -> tile<32,32,int> (not used by MMQ).
    {
        alignas(16) int8_t a[32][16], b[32][16];
        for (auto& r : a) for (auto& v : r) v = rnd8();
        for (auto& r : b) for (auto& v : r) v = rnd8();
        int out[32][32];
        for (auto& r : out) for (auto& v : r) v = INT_MIN;
        emu_launch(dim3(1), dim3(64), 0, [&] {
            tile<32, 4, int> A, B;
            load_generic(A, reinterpret_cast<const int*>(a), 4);
            load_generic(B, reinterpret_cast<const int*>(b), 4);
            tile<32, 32, int> D;
            mma(D, A, B);
            for (int l = 0; l < D.ne; ++l) out[D.get_i(l)][D.get_j(l)] = D.x[l];
        });
        bool direct = true, transposed = true;
        for (int i = 0; i < 32; ++i)
            for (int j = 0; j < 32; ++j) {
                int s = 0;
                for (int k = 0; k < 16; ++k) s += a[i][k] * b[j][k];
                direct &= out[i][j] == s;
                transposed &= out[j][i] == s;
            }
        // Informational: this tile is unused by MMQ; say which way round it is.
        printf("  info    %s: mma(tile<32,32,int>, tile<32,4,int>, tile<32,4,int>) read through tile<32,32,int>::get_i/get_j "
               "gives %s\n",
               EMU_STR(EMU_CFG), direct ? "A * B^T" : transposed ? "(A * B^T)^T (its I-major get_i/get_j index the hardware's "
                                                                    "J-major D)"
                                                                  : "neither A * B^T nor its transpose");
        report(passed, failed, direct || transposed, "  (the 32x32 product is A*B^T in one of the two index orders)");
    }
#else
    (void)passed;
    (void)failed;
#endif
}
}  // namespace EMU_CFG

emu_mmq_api EMU_CAT(emu_api_, EMU_CFG)() {
    using namespace EMU_CFG;
    emu_mmq_api api{};
    api.name = EMU_GFX == 0x942 ? "gfx942" : EMU_GFX == 0x90a ? "gfx90a" : EMU_GFX == 0x950 ? "gfx950" : "?";
#if defined(CDNA4)
    api.family = "CDNA4";
#elif defined(CDNA3)
    api.family = "CDNA3";
#elif defined(CDNA2)
    api.family = "CDNA2";
#else
    api.family = "?";
#endif
#if defined(AMD_MFMA_AVAILABLE)
    api.mfma = true;
#endif
    api.mfma_host = amd_mfma_available(kCc);
    api.cc = kCc;
    api.physical_warp = ggml_cuda_get_physical_warp_size();
    api.mmq[GGML_TYPE_Q4_0] = launch_mmq_gguf_q4_0;
    api.mmq[GGML_TYPE_Q4_1] = launch_mmq_gguf_q4_1;
    api.mmq[GGML_TYPE_Q5_0] = launch_mmq_gguf_q5_0;
    api.mmq[GGML_TYPE_Q5_1] = launch_mmq_gguf_q5_1;
    api.mmq[GGML_TYPE_Q8_0] = launch_mmq_gguf_q8_0;
    api.mmq[GGML_TYPE_Q2_K] = launch_mmq_gguf_q2_k;
    api.mmq[GGML_TYPE_Q3_K] = launch_mmq_gguf_q3_k;
    api.mmq[GGML_TYPE_Q4_K] = launch_mmq_gguf_q4_k;
    api.mmq[GGML_TYPE_Q5_K] = launch_mmq_gguf_q5_k;
    api.mmq[GGML_TYPE_Q6_K] = launch_mmq_gguf_q6_k;
    api.block_bytes[GGML_TYPE_Q4_0] = sizeof(block_q4_0);
    api.block_bytes[GGML_TYPE_Q4_1] = sizeof(block_q4_1);
    api.block_bytes[GGML_TYPE_Q5_0] = sizeof(block_q5_0);
    api.block_bytes[GGML_TYPE_Q5_1] = sizeof(block_q5_1);
    api.block_bytes[GGML_TYPE_Q8_0] = sizeof(block_q8_0);
    api.block_bytes[GGML_TYPE_Q2_K] = sizeof(block_q2_K);
    api.block_bytes[GGML_TYPE_Q3_K] = sizeof(block_q3_K);
    api.block_bytes[GGML_TYPE_Q4_K] = sizeof(block_q4_K);
    api.block_bytes[GGML_TYPE_Q5_K] = sizeof(block_q5_K);
    api.block_bytes[GGML_TYPE_Q6_K] = sizeof(block_q6_K);
    api.q8_1_mmq_bytes = sizeof(block_q8_1_mmq);
    api.quantize[MMQ_Q8_1_DS_LAYOUT_D4] = launch_mmq_quantize_q8_1_D4;
    api.quantize[MMQ_Q8_1_DS_LAYOUT_DS4] = launch_mmq_quantize_q8_1_DS4;
    api.quantize[MMQ_Q8_1_DS_LAYOUT_D2S6] = launch_mmq_quantize_q8_1_D2S6;
    static_assert(MMQ_Q8_1_DS_LAYOUT_D4 == EMU_DS_D4 && MMQ_Q8_1_DS_LAYOUT_DS4 == EMU_DS_DS4 && MMQ_Q8_1_DS_LAYOUT_D2S6 == EMU_DS_D2S6,
                  "ds layout order");
    api.ds_layout = ds_layout;
    api.chosen_mmq_x = chosen_mmq_x;
    api.nbytes_shared = nbytes_shared;
    api.mmq_y = mmq_y_host;
    api.nwarps = nwarps_host;
    api.tile_selftest = tile_selftest;
    return api;
}
