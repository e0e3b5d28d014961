// What one emulated configuration (mmq_config.cpp built for one arch, without or
// with CANDLE_HIP_NO_MMQ_MFMA) gives the driver (mmq_wave64.cpp): the
// generated launchers, called exactly as candle-core's rocm_fast_mmq.rs calls
// them, and a few of the generated host functions.
#pragma once

#include <cstddef>
#include <cstdint>

// launch_mmq_gguf_<type> (mmq_instance_<type>.hip)
typedef void (*emu_mmq_launcher)(void* tmp_fixup, const void* x, const void* y_q8_1_mmq, void* dst, int64_t ncols_x,
                                 int64_t nrows_x, int64_t ncols_y, int64_t stride_row_x, int64_t stride_col_dst, int cc,
                                 int nsm, int64_t smpbo, int warp_size_host, void* stream);
// launch_mmq_quantize_q8_1_{D4,DS4,D2S6} (mmq_quantize.hip)
typedef void (*emu_quantize_launcher)(const void* x_f32, const int32_t* ids, void* vy, int type_x, int64_t ne00, int64_t s01,
                                      int64_t s02, int64_t s03, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, void* stream);

enum { EMU_DS_D4 = 0, EMU_DS_DS4 = 1, EMU_DS_D2S6 = 2 };  // mmq_q8_1_ds_layout's order
constexpr int EMU_MAX_GGML_TYPE = 16;

struct emu_mmq_api {
    const char* name;     // e.g. "gfx942"
    const char* family;   // "CDNA3" / "CDNA2"
    bool mfma;            // AMD_MFMA_AVAILABLE in the (emulated) device pass
    bool mfma_host;       // amd_mfma_available(cc) on the host side
    int cc;               // ggml's cc: 0x1000000 + gfx id
    int physical_warp;    // ggml_cuda_get_physical_warp_size() in the device pass
    emu_mmq_launcher mmq[EMU_MAX_GGML_TYPE];  // by ggml_type; null where absent
    size_t block_bytes[EMU_MAX_GGML_TYPE];    // sizeof(block_<type>) of mmq_common.cuh
    size_t q8_1_mmq_bytes;                    // sizeof(block_q8_1_mmq)
    emu_quantize_launcher quantize[3];        // by EMU_DS_*
    int (*ds_layout)(int ggml_type);          // mmq_get_q8_1_ds_layout
    // The mmq_x that launch_mmq_case_<type> picks for ncols (a copy of its loop
    // over the generated host functions, for the table) and the shared bytes.
    int (*chosen_mmq_x)(int ggml_type, int64_t ncols, int64_t smpbo);
    size_t (*nbytes_shared)(int ggml_type, int mmq_x);
    int (*mmq_y)();
    int (*nwarps)();
    // ggml's tiles (mmq_mma.cuh) on the emulated MFMA instructions, against CPU
    // products; prints its lines, counts into passed/failed. No-op without MFMA.
    void (*tile_selftest)(int* passed, int* failed);
};
