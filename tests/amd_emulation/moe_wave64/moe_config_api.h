// What one emulated configuration of the generated MoE code (moe_config.cpp)
// hands the test driver (moe_wave64.cpp): its launchers, called as candle-core
// calls them (generated/candle-core/src/rocm_backend ... moe), and a maker of
// valid GGUF blocks for moe_wmma_gguf.hip's types.
#pragma once
#include <cstddef>
#include <cstdint>

struct emu_moe_api {
    const char* name;
    // moe_wmma.hip: data_type 0 = f16, 1 = bf16; is_prefill picks the 16x16x16
    // tile (prefill) or the 8x32x16 one (decode)
    void (*gemm_wmma)(const void* input, const void* weights, const int32_t* sorted_token_ids, const int32_t* expert_ids,
                      const float* topk_weights, void* output, int32_t* expert_counts, int32_t* expert_offsets, int num_experts, int topk,
                      int size_m, int size_n, int size_k, int data_type, bool is_prefill, void* stream);
    // moe_wmma_gguf.hip: input_dtype 0 = f16, 1 = bf16; gguf_type 0 = Q8_0, 1 = Q4_K, ..., 5 = Q6_K
    void (*gemm_gguf_prefill)(const void* input, const uint8_t* weights, const int32_t* sorted_token_ids, const int32_t* expert_ids,
                              const float* topk_weights, float* output, int num_experts, int topk, int size_m, int size_n, int size_k,
                              int input_dtype, int gguf_type, void* stream);
    // bytes of one block and values per block of gguf_type
    size_t (*gguf_block_bytes)(int gguf_type);
    int (*gguf_block_values)(int gguf_type);
    // fills n blocks: random quants, scales that keep every dequantized value
    // exact in f16 and bf16 (d a power of two; for Q8_0 |q| <= 127 and d = 2^-6)
    void (*gguf_fill)(int gguf_type, uint8_t* blocks, size_t n, uint64_t seed);
    // the dequantized values of n Q8_0 blocks (the others are compared between paths)
    void (*q8_0_dequantize)(const uint8_t* blocks, size_t n, double* out);
};

emu_moe_api emu_moe_api_cdna3_cores();
emu_moe_api emu_moe_api_cdna3_shuffles();
emu_moe_api emu_moe_api_cdna2_cores();
