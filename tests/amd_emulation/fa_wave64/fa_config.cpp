// One emulated configuration of the generated flash attention
// (generated/kernels/candle_flash_attn.hip): compiled once per (arch, switch)
// with g++,
//   -D__gfx942__ -DEMU_CFG=cdna3_cores      candle_wmma's matrix-core tile (v_mfma_f32_16x16x16*)
//   -D__gfx942__ -DCANDLE_HIP_NO_WMMA_MATRIX_CORES -DEMU_CFG=cdna3_shuffles   its portable shuffles
//   -D__gfx90a__ -DEMU_CFG=cdna2_cores      CDNA2's instructions (v_mfma_f32_16x16x16f16 / bf16_1k)
// each with -D__GFX9__, the family macro clang defines beside them (the kernel's block shape
// per GPU family reads it, in the host code as in the device code)
// and linked with the others into fa_wave64 (run.sh). The kernel file is
// included with only its launch syntax rewritten and `extern "C"` removed
// (run.sh), inside namespace EMU_CFG, so that each configuration's run_mha
// and inline functions live in a namespace of their own.
#include "hip_cpu_device.h"
#include "mfma_cpu.h"
#include "fa_config_api.h"

// The system headers the generated code includes, included here first so that
// their own inclusion inside the namespace below is a no-op.
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <type_traits>

#ifndef EMU_CFG
#error "define EMU_CFG (the configuration's name)"
#endif

// The kernels' __shared__ arrays are one per block: blocks run one after
// another here, so a function's static array is that.
#undef __shared__
#define __shared__ static

// The tiles kernel's dynamic LDS (CANDLE_FA_DYNAMIC_LDS) names the launch's dynamic shared
// memory, declared here once.
#define CANDLE_FA_DYNAMIC_LDS(name)

namespace EMU_CFG {
EMU_DYNAMIC_SHARED(unsigned char, candle_fa_lds);
#include "candle_flash_attn.hip"
}  // namespace EMU_CFG

emu_fa_api EMU_CAT(emu_fa_api_, EMU_CFG)() { return {EMU_STR(EMU_CFG), EMU_CFG::run_mha}; }
