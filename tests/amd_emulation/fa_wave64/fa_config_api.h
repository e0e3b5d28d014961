// What one emulated configuration of the generated flash attention
// (fa_config.cpp) hands the test driver (fa_wave64.cpp): run_mha, the C ABI
// candle-flash-attn's ROCm code calls (generated/candle-flash-attn/src/ffi.rs),
// with upstream's argument list.
#pragma once
#include <cstdint>

using emu_run_mha = void (*)(void* q, void* k, void* v, void* o, void* lse, void* alibi, int32_t* cu_seqlens_q, int32_t* cu_seqlens_k,
                             uint32_t q_batch_stride, uint32_t k_batch_stride, uint32_t v_batch_stride, uint32_t o_batch_stride,
                             uint32_t alibi_batch_stride, uint32_t q_row_stride, uint32_t k_row_stride, uint32_t v_row_stride,
                             uint32_t o_row_stride, uint32_t q_head_stride, uint32_t k_head_stride, uint32_t v_head_stride,
                             uint32_t o_head_stride, uint32_t b, uint32_t h, uint32_t h_k, uint32_t d, uint32_t d_rounded,
                             float softmax_scale, uint32_t seqlen_q, uint32_t seqlen_k, uint32_t seqlen_q_rounded,
                             uint32_t seqlen_k_rounded, uint32_t total_q, int is_bf16, int is_causal, int unpadded_lse,
                             int window_size_left, int window_size_right, float softcap, int32_t* block_table,
                             uint32_t block_table_batch_stride, int page_block_size, int32_t* mm_prefix_ranges,
                             uint32_t mm_prefix_range_batch_stride, int max_mm_prefix_ranges, void* stream);

struct emu_fa_api {
    const char* name;
    emu_run_mha run_mha;
};

emu_fa_api emu_fa_api_cdna3_cores();
emu_fa_api emu_fa_api_cdna3_shuffles();
emu_fa_api emu_fa_api_cdna2_cores();
