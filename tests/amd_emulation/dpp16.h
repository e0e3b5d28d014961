// dpp16.h - which lane a DPP16 move reads (AMD's CDNA3 and RDNA3 ISA guides, "Data
// Parallel Processing": the DPP_CTRL values of v_mov_b32_dpp and of every VALU
// instruction with a DPP operand), for the emulators of tests/amd_emulation: the CPU
// wavefront machine (cdna_on_cpu/hip_cpu_device.h, wave64) and the RDNA emulation on
// NVIDIA warps (rdna_on_nvidia/amd_gfx_emulation.h, wave32). Plain C++, host and device.
//
// A DPP16 row is 16 consecutive lanes (lanes 16r .. 16r + 15). Controls emulated:
//   0x000-0x0ff quad_perm: within each 4 lanes, lane q reads lane (ctrl >> 2q) & 3
//   0x101-0x10f row_shl n: lane i of a row reads lane i + n of the row
//   0x111-0x11f row_shr n: lane i of a row reads lane i - n of the row
//   0x140       row_mirror: lane i of a row reads lane 15 - i
//   0x141       row_half_mirror: lane i of each 8 reads lane 7 - i
// SPDX-License-Identifier: MIT OR Apache-2.0
#pragma once

#if defined(__CUDACC__)
#define CANDLE_DPP16_HD __host__ __device__ inline
#else
#define CANDLE_DPP16_HD inline
#endif

// The source lane of `lane` under `ctrl`: a lane, kDpp16OutOfRow where the source lies
// past the row (the instruction then writes 0 with bound_ctrl, else leaves the lane), or
// kDpp16NotEmulated for a control not listed above.
constexpr int kDpp16OutOfRow = -1, kDpp16NotEmulated = -2;
CANDLE_DPP16_HD constexpr int candle_dpp16_source(int lane, int ctrl) {
    const int in_row = lane & 15;
    return ctrl >= 0 && ctrl <= 0xff       ? (lane & ~3) | ((ctrl >> (2 * (lane & 3))) & 3)
           : ctrl >= 0x101 && ctrl <= 0x10f ? (in_row + (ctrl - 0x100) < 16 ? lane + (ctrl - 0x100) : kDpp16OutOfRow)
           : ctrl >= 0x111 && ctrl <= 0x11f ? (in_row - (ctrl - 0x110) >= 0 ? lane - (ctrl - 0x110) : kDpp16OutOfRow)
           : ctrl == 0x140                  ? (lane & ~15) + 15 - in_row
           : ctrl == 0x141                  ? (lane & ~7) + 7 - (lane & 7)
                                            : kDpp16NotEmulated;
}
