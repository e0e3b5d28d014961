// One emulated configuration of the generated MoE GEMMs (generated/kernels/moe/
// moe_wmma.hip, moe_wmma_gguf.hip): compiled once per (arch, switch) with g++,
//   -D__gfx942__ -DEMU_CFG=cdna3_cores      candle_wmma's matrix-core tile (v_mfma_f32_16x16x16*)
//   -D__gfx942__ -DCANDLE_HIP_NO_WMMA_MATRIX_CORES -DEMU_CFG=cdna3_shuffles   the portable shuffles
// and linked with the others into moe_wave64 (run.sh). Both launcher files
// are included, with only their launch syntax rewritten, `extern "C"`
// removed (so that each configuration's launchers live in its namespace) and
// `extern __shared__` spelled `extern` (run.sh), inside namespace EMU_CFG,
// compat headers included, so that no inline function of two configurations
// shares a name. moe_wmma.hip and moe_wmma_gguf.hip both include
// moe_utils.cuh, whose functions are static: each file goes in a namespace
// of its own.
#include "hip_cpu_device.h"
#include "mfma_cpu.h"
#include "moe_config_api.h"

// The system headers the generated code includes, included here first so that
// their own inclusion inside the namespaces below is a no-op.
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <cassert>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#ifndef EMU_CFG
#error "define EMU_CFG (the configuration's name)"
#endif

// A non-extern __shared__ array (candle_hip_thrust.h's scan) is one per block:
// blocks run one after another here, so a static array is that.
#undef __shared__
#define __shared__ static

namespace EMU_CFG {
// the compat headers both files include, once for the configuration
#include "candle_hip_compat.h"
#include "candle_hip_wmma.h"
#include "candle_hip_thrust.h"
namespace wmma_unit {
namespace vllm_rs {
EMU_DYNAMIC_SHARED(uint8_t, smem_bytes);
}
EMU_DYNAMIC_SHARED(int32_t, temp_storage);
#include "moe_wmma.hip"
}  // namespace wmma_unit
namespace gguf_unit {
EMU_DYNAMIC_SHARED(uint8_t, smem_bytes);
EMU_DYNAMIC_SHARED(int32_t, temp_storage);
#include "moe_wmma_gguf.hip"

size_t block_bytes(int t) {
    switch (t) {
        case 0: return sizeof(block_q8_0);
        case 1: return sizeof(block_q4_K);
        case 2: return sizeof(block_q2_K);
        case 3: return sizeof(block_q3_K);
        case 4: return sizeof(block_q5_K);
        default: return sizeof(block_q6_K);
    }
}
int block_values(int t) { return t == 0 ? QK8_0 : QK_K; }

uint16_t half_bits(float v) { return __half(v).bits; }

void fill(int t, uint8_t* blocks, size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const size_t bytes = block_bytes(t);
    for (size_t i = 0; i < n * bytes; ++i) blocks[i] = static_cast<uint8_t>(rng());
    for (size_t b = 0; b < n; ++b) {
        uint8_t* p = blocks + b * bytes;
        const int e = -static_cast<int>(rng() % 3) - 6;  // d = 2^-6 .. 2^-8
        switch (t) {
            case 0: {
                auto* q = reinterpret_cast<block_q8_0*>(p);
                q->d = __half(std::ldexp(1.0f, -6));
                for (int i = 0; i < QK8_0; ++i)
                    if (q->qs[i] == -128) q->qs[i] = -127;
                break;
            }
            case 1: reinterpret_cast<block_q4_K*>(p)->dm = make_half2(__half(std::ldexp(1.0f, e)), __half(std::ldexp(1.0f, e - 2))); break;
            case 2: reinterpret_cast<block_q2_K*>(p)->dm = make_half2(__half(std::ldexp(1.0f, e)), __half(std::ldexp(1.0f, e - 2))); break;
            case 3: reinterpret_cast<block_q3_K*>(p)->d = __half(std::ldexp(1.0f, e)); break;
            case 4: reinterpret_cast<block_q5_K*>(p)->dm = make_half2(__half(std::ldexp(1.0f, e)), __half(std::ldexp(1.0f, e - 2))); break;
            default: reinterpret_cast<block_q6_K*>(p)->d = __half(std::ldexp(1.0f, e)); break;
        }
    }
}

void q8_0_dequantize(const uint8_t* blocks, size_t n, double* out) {
    for (size_t b = 0; b < n; ++b) {
        const auto* q = reinterpret_cast<const block_q8_0*>(blocks + b * sizeof(block_q8_0));
        for (int i = 0; i < QK8_0; ++i) out[b * QK8_0 + i] = static_cast<double>(float(q->d)) * q->qs[i];
    }
}
}  // namespace gguf_unit

void gemm_wmma(const void* input, const void* weights, const int32_t* sorted, const int32_t* expert_ids, const float* topk_weights,
               void* output, int32_t* counts, int32_t* offsets, int e, int topk, int m, int n, int k, int dtype, bool prefill, void* stream) {
    wmma_unit::moe_gemm_wmma(input, weights, sorted, expert_ids, topk_weights, output, counts, offsets, e, topk, m, n, k, dtype, prefill,
                             static_cast<hipStream_t>(stream));
}
void gemm_gguf_prefill(const void* input, const uint8_t* weights, const int32_t* sorted, const int32_t* expert_ids,
                       const float* topk_weights, float* output, int e, int topk, int m, int n, int k, int dtype, int gguf_type, void* stream) {
    gguf_unit::moe_gemm_gguf_prefill(input, weights, sorted, expert_ids, topk_weights, output, e, topk, m, n, k, dtype, gguf_type,
                                     static_cast<hipStream_t>(stream));
}
}  // namespace EMU_CFG

emu_moe_api EMU_CAT(emu_moe_api_, EMU_CFG)() {
    return {EMU_STR(EMU_CFG),           EMU_CFG::gemm_wmma,           EMU_CFG::gemm_gguf_prefill,          EMU_CFG::gguf_unit::block_bytes,
            EMU_CFG::gguf_unit::block_values, EMU_CFG::gguf_unit::fill, EMU_CFG::gguf_unit::q8_0_dequantize};
}
