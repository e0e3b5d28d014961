// mfma_cpu.h - the AMD GPU builtins that ggml's MMQ code calls on CDNA, in
// software, for the wave64 CPU emulation of hip_cpu_device.h. Include it
// after hip_cpu_device.h, in a translation unit where the arch macro
// (__gfx90a__, __gfx942__, ...) of the pass being emulated is defined.
//
// The four int8 MFMA instructions and the two 16x16x16 f16/bf16 ones are wave-wide: every one of the 64 lanes
// deposits its A and B operands, the lanes of the wavefront meet at a barrier,
// every lane computes its own D registers from all lanes' operands and its own
// C registers, and the lanes meet again before the scratch area is reused. All
// 64 lanes must be active and in the same instruction (else: abort).
//
// Sources for the operand layouts:
//   [ISA2] "AMD Instinct MI200 (CDNA2) Instruction Set Architecture Reference
//          Guide", chapter "Matrix Arithmetic Instructions" (MFMA) and the
//          VOP3P-MAI opcode list (V_MFMA_I32_32X32X8I8, V_MFMA_I32_16X16X16I8).
//   [ISA3] "AMD Instinct MI300 (CDNA3) Instruction Set Architecture Reference
//          Guide", same chapter (V_MFMA_I32_32X32X16_I8, V_MFMA_I32_16X16X32_I8;
//          CDNA3 has no V_MFMA_I32_16X16X16I8 / 32X32X8I8).
//   [CALC] AMD Matrix Instruction Calculator (github.com/ROCm/
//          amd_matrix_instruction_calculator, commit 2ef9189), which encodes
//          those guides' tables: `matrix_calculator.py -a CDNA2|CDNA3 -i <insn>
//          --detail-instruction` prints the element <-> (GPR, lane) mapping
//          quoted at each instruction below (and -R / -g print whole tables
//          and single entries; mfma_selftest.cpp checks entries taken from
//          them). The guides' PDFs were not available to this work; the
//          formulas are the calculator's.
//   [LLVM] builtin signatures: llvm/test/CodeGen/AMDGPU/llvm.amdgcn.mfma.i8.ll
//          (<16 x i32> @llvm.amdgcn.mfma.i32.32x32x8i8(i32, i32, <16 x i32>,
//          i32 cbsz, i32 abid, i32 blgp), <4 x i32> ...16x16x16i8(i32, i32,
//          <4 x i32>, ...)) and llvm.amdgcn.mfma.gfx940.ll (<4 x i32>
//          ...16x16x32.i8(i64, i64, <4 x i32>, ...), <16 x i32>
//          ...32x32x16.i8(i64, i64, <16 x i32>, ...)).
// A and B elements are signed 8-bit, C and D signed 32-bit; the sums wrap
// modulo 2^32 (they cannot overflow for int8 inputs at these K). A 64-bit
// operand (the CDNA3 _i8 forms) is a VGPR pair: GPR 0 is bits 31:0 of the i64.
// Only cbsz = abid = blgp = 0 is emulated; anything else aborts.
#pragma once

#include "hip_cpu_device.h"

#if defined(__gfx908__)
#define EMU_GFX 0x908
#elif defined(__gfx90a__)
#define EMU_GFX 0x90a
#elif defined(__gfx940__)
#define EMU_GFX 0x940
#elif defined(__gfx941__)
#define EMU_GFX 0x941
#elif defined(__gfx942__)
#define EMU_GFX 0x942
#elif defined(__gfx950__)
#define EMU_GFX 0x950
#else
#define EMU_GFX 0
#endif

typedef int emu_i32x4 __attribute__((__vector_size__(4 * sizeof(int))));
typedef int emu_i32x16 __attribute__((__vector_size__(16 * sizeof(int))));

// clang's ext_vector_type, for the float/half MFMA helpers of mmq_mma.cuh that
// must compile but are never run here: g++ has no such attribute, and the
// macro gives vectors of n 4-byte units (right for float, twice the lanes for
// _Float16 and the 2-byte __bf16 stand-in). g++ 12 has no __bf16 at all.
#define ext_vector_type(n) __vector_size__((n) * 4)
typedef unsigned short emu_bf16_storage;
#define __bf16 emu_bf16_storage

inline bool emu_gfx_is_cdna12(int gfx) { return gfx == 0x908 || gfx == 0x90a; }
inline bool emu_gfx_is_cdna34(int gfx) { return gfx == 0x940 || gfx == 0x941 || gfx == 0x942 || gfx == 0x950; }

// Element (row i, col j) of the M x M result held by a lane's register reg.
// [CALC] for 16x16 (V_MFMA_I32_16X16X16I8, V_MFMA_I32_16X16X32_I8):
//   C or D[i][j]: GPR (i % 4), lane 16 * floor(i / 4) + j
//   so GPR r of lane l holds i = 4 * floor(l / 16) + r, j = l % 16.
// [CALC] for 32x32 (V_MFMA_I32_32X32X8I8, V_MFMA_I32_32X32X16_I8):
//   C or D[i][j]: GPR 4 * floor(i / 8) + (i % 4), lane (32 * floor(i / 4)) % 64 + j
//   so GPR r of lane l holds i = 8 * floor(r / 4) + 4 * floor(l / 32) + r % 4, j = l % 32.
inline void emu_mfma_d_entry(int m, int lane, int reg, int& i, int& j) {
    if (m == 16) {
        i = 4 * (lane / 16) + reg;
        j = lane % 16;
    } else {
        i = 8 * (reg / 4) + 4 * (lane / 32) + reg % 4;
        j = lane % 32;
    }
}

// A[i][k] and B[k][j] of an M x K by K x M product whose operands hold
// `bytes` int8 values per lane (4: one VGPR, 8: a VGPR pair):
//   A[i][k]: lane M * floor(k / bytes) + i, byte k % bytes of that lane's operand
//   B[k][j]: lane M * floor(k / bytes) + j, byte k % bytes
// [CALC], per instruction:
//   V_MFMA_I32_16X16X16I8 (CDNA1/2, K 16):  A[i][k].block GPR: 0.[8*(k % 4)+7 : 8*(k % 4)],
//       Lane: 16 * floor(k / 4) + i;  B[k][j] the same with j for i.
//   V_MFMA_I32_32X32X8I8  (CDNA1/2, K 8):   GPR 0.[8*(k % 4)+7 : 8*(k % 4)], Lane: 32 * floor(k / 4) + i (j).
//   V_MFMA_I32_16X16X32_I8 (CDNA3, K 32):   GPR (floor(k / 4) % 2).[8*(k % 4)+7 : 8*(k % 4)],
//       Lane: 16 * floor(k / 8) + i (j)  -- byte k % 8 of the i64 (GPR 0 = bits 31:0).
//   V_MFMA_I32_32X32X16_I8 (CDNA3, K 16):   GPR (floor(k / 4) % 2).[...], Lane: 32 * floor(k / 8) + i (j).
inline int8_t emu_mfma_operand_byte(const uint64_t* ops, int m, int bytes, int row_or_col, int k) {
    const int lane = m * (k / bytes) + row_or_col;
    return static_cast<int8_t>(static_cast<uint8_t>(ops[lane] >> (8 * (k % bytes))));
}

// Aborts unless the instruction exists on the emulated arch and its
// broadcast / swizzle modifiers are the only ones emulated (0, 0, 0).
inline void emu_mfma_check(const char* name, int gfx, bool available, int cbsz, int abid, int blgp) {
    if (!available) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s does not exist on the emulated arch (gfx%x)", name, gfx);
        emu_fatal(msg);
    }
    if (cbsz != 0 || abid != 0 || blgp != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s with cbsz=%d abid=%d blgp=%d: only 0, 0, 0 is emulated", name, cbsz, abid, blgp);
        emu_fatal(msg);
    }
}

template <class Acc, int M, int BYTES>
inline Acc emu_mfma_i8(const char* name, int gfx, bool available, uint64_t a, uint64_t b, Acc c, int cbsz, int abid, int blgp) {
    constexpr int NREG = M * M / EMU_WAVE, K = (EMU_WAVE / M) * BYTES;
    static_assert(sizeof(Acc) == NREG * sizeof(int), "accumulator size");
    emu_mfma_check(name, gfx, available, cbsz, abid, blgp);
    emu_wave& w = emu_cur_wave();
    const int lane = emu_lane_id();
    w.opa[lane] = a;
    w.opb[lane] = b;
    w.tag[lane] = name;
    w.bar.arrive_and_wait();
    emu_check_converged(w, name, true);
    Acc d;
    for (int r = 0; r < NREG; ++r) {
        int i, j;
        emu_mfma_d_entry(M, lane, r, i, j);
        uint32_t acc = static_cast<uint32_t>(c[r]);
        for (int k = 0; k < K; ++k) {
            const int av = emu_mfma_operand_byte(w.opa, M, BYTES, i, k);
            const int bv = emu_mfma_operand_byte(w.opb, M, BYTES, j, k);
            acc += static_cast<uint32_t>(av * bv);
        }
        d[r] = static_cast<int>(acc);
    }
    w.bar.arrive_and_wait();
    return d;
}

inline emu_i32x4 emu_mfma_i32_16x16x16i8(int gfx, int a, int b, emu_i32x4 c, int cbsz, int abid, int blgp) {
    return emu_mfma_i8<emu_i32x4, 16, 4>("v_mfma_i32_16x16x16i8", gfx, emu_gfx_is_cdna12(gfx), static_cast<uint32_t>(a),
                                         static_cast<uint32_t>(b), c, cbsz, abid, blgp);
}
inline emu_i32x16 emu_mfma_i32_32x32x8i8(int gfx, int a, int b, emu_i32x16 c, int cbsz, int abid, int blgp) {
    return emu_mfma_i8<emu_i32x16, 32, 4>("v_mfma_i32_32x32x8i8", gfx, emu_gfx_is_cdna12(gfx), static_cast<uint32_t>(a),
                                          static_cast<uint32_t>(b), c, cbsz, abid, blgp);
}
inline emu_i32x4 emu_mfma_i32_16x16x32_i8(int gfx, int64_t a, int64_t b, emu_i32x4 c, int cbsz, int abid, int blgp) {
    return emu_mfma_i8<emu_i32x4, 16, 8>("v_mfma_i32_16x16x32_i8", gfx, emu_gfx_is_cdna34(gfx), static_cast<uint64_t>(a),
                                         static_cast<uint64_t>(b), c, cbsz, abid, blgp);
}
inline emu_i32x16 emu_mfma_i32_32x32x16_i8(int gfx, int64_t a, int64_t b, emu_i32x16 c, int cbsz, int abid, int blgp) {
    return emu_mfma_i8<emu_i32x16, 32, 8>("v_mfma_i32_32x32x16_i8", gfx, emu_gfx_is_cdna34(gfx), static_cast<uint64_t>(a),
                                          static_cast<uint64_t>(b), c, cbsz, abid, blgp);
}
#define __builtin_amdgcn_mfma_i32_16x16x16i8(...) emu_mfma_i32_16x16x16i8(EMU_GFX, __VA_ARGS__)
#define __builtin_amdgcn_mfma_i32_32x32x8i8(...) emu_mfma_i32_32x32x8i8(EMU_GFX, __VA_ARGS__)
#define __builtin_amdgcn_mfma_i32_16x16x32_i8(...) emu_mfma_i32_16x16x32_i8(EMU_GFX, __VA_ARGS__)
#define __builtin_amdgcn_mfma_i32_32x32x16_i8(...) emu_mfma_i32_32x32x16_i8(EMU_GFX, __VA_ARGS__)

// V_MFMA_F32_16X16X16F16 and V_MFMA_F32_16X16X16BF16_1K (the 16x16x16 tile
// of candle_wmma's matrix-core path, generated/kernels/candle_hip_wmma.h,
// and of ggml's MMF tiles): A and B are four 16-bit floats per lane, a VGPR
// pair (element e = bits [16e+15 : 16e] of the 64-bit operand, GPR 0 = bits
// 31:0), C and D four floats.
// [CALC] V_MFMA_F32_16X16X16F16 (CDNA1-3), V_MFMA_F32_16X16X16BF16_1K (CDNA2/3):
//   A[i][k]: GPR floor((k % 4) / 2).[16*(k % 2)+15 : 16*(k % 2)], Lane 16 * floor(k / 4) + i
//   B[k][j]: the same with j for i;  C or D[i][j]: as the 16x16 int8 forms above
//   (GPR r of lane l: i = 4 * floor(l / 16) + r, j = l % 16).
// Arithmetic: the products of two 16-bit floats are exact in double; they
// are summed in double, k = 0..15, C added, and the sum rounded once to
// float. AMD does not document the order or precision of the hardware's sum,
// so last-bit differences from an MI-series GPU are possible. Denormal inputs
// are used as they are.
typedef float emu_f32x4 __attribute__((__vector_size__(4 * sizeof(float))));

inline double emu_b16_value(uint16_t bits, bool bf16) {
    if (bf16) return static_cast<double>(emu_f32_from_bits(static_cast<uint32_t>(bits) << 16));
    return static_cast<double>(emu_f16_to_f32(bits));
}

template <class V>
inline uint64_t emu_b16x4_bits(const V& v) {  // the first four 16-bit elements of an operand vector
    static_assert(sizeof(V) >= 8, "16-bit x4 operand");
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
}

template <class V>
inline emu_f32x4 emu_mfma_f32_16x16x16_b16(const char* name, bool bf16, int gfx, const V& a, const V& b, emu_f32x4 c, int cbsz, int abid,
                                          int blgp) {
    const bool available = bf16 ? (gfx == 0x90a || emu_gfx_is_cdna34(gfx)) : gfx != 0;
    emu_mfma_check(name, gfx, available, cbsz, abid, blgp);
    emu_wave& w = emu_cur_wave();
    const int lane = emu_lane_id();
    w.opa[lane] = emu_b16x4_bits(a);
    w.opb[lane] = emu_b16x4_bits(b);
    w.tag[lane] = name;
    w.bar.arrive_and_wait();
    emu_check_converged(w, name, true);
    emu_f32x4 d;
    for (int r = 0; r < 4; ++r) {
        int i, j;
        emu_mfma_d_entry(16, lane, r, i, j);
        double acc = 0;
        for (int k = 0; k < 16; ++k) {
            const uint16_t av = static_cast<uint16_t>(w.opa[16 * (k / 4) + i] >> (16 * (k % 4)));
            const uint16_t bv = static_cast<uint16_t>(w.opb[16 * (k / 4) + j] >> (16 * (k % 4)));
            acc += emu_b16_value(av, bf16) * emu_b16_value(bv, bf16);
        }
        d[r] = static_cast<float>(acc + static_cast<double>(c[r]));
    }
    w.bar.arrive_and_wait();
    return d;
}
#define __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, cbsz, abid, blgp) \
    emu_mfma_f32_16x16x16_b16("v_mfma_f32_16x16x16f16", false, EMU_GFX, (a), (b), (c), (cbsz), (abid), (blgp))
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, cbsz, abid, blgp) \
    emu_mfma_f32_16x16x16_b16("v_mfma_f32_16x16x16bf16_1k", true, EMU_GFX, (a), (b), (c), (cbsz), (abid), (blgp))

// The other float MFMA forms in mmq_mma.cuh (ggml's MMF tiles) are compiled
// but not emulated: calling one aborts.
template <class A, class B, class C>
inline C emu_mfma_not_emulated(const char* name, A, B, C c, int, int, int) {
    char msg[120];
    snprintf(msg, sizeof msg, "%s is not emulated", name);
    emu_fatal(msg);
    return c;
}
#define __builtin_amdgcn_mfma_f32_16x16x8_xf32(...) emu_mfma_not_emulated("v_mfma_f32_16x16x8_xf32", __VA_ARGS__)
#define __builtin_amdgcn_mfma_f32_16x16x4f32(...) emu_mfma_not_emulated("v_mfma_f32_16x16x4f32", __VA_ARGS__)
#define __builtin_amdgcn_mfma_f32_16x16x8bf16(...) emu_mfma_not_emulated("v_mfma_f32_16x16x8bf16", __VA_ARGS__)

// V_DOT4_I32_I8 (candle_dp4a's device form on these arches): D = the sum of
// the four signed byte products of S0 and S1, plus S2; clamp saturates the
// result to int32 instead of wrapping.
inline int emu_sdot4(int a, int b, int c, bool clamp) {
    int64_t sum = c;
    for (int i = 0; i < 4; ++i)
        sum += static_cast<int64_t>(static_cast<int8_t>(a >> (8 * i))) * static_cast<int8_t>(b >> (8 * i));
    if (clamp) return static_cast<int>(std::min<int64_t>(std::max<int64_t>(sum, INT32_MIN), INT32_MAX));
    return static_cast<int>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
}
#define __builtin_amdgcn_sdot4(a, b, c, clamp) emu_sdot4((a), (b), (c), (clamp))

// V_PERM_B32 (ggml's get_int_from_table_16, used by the IQ4/MXFP4 loaders,
// compiled but not run here): each result byte is selected from the eight
// bytes of {S0, S1} (S1 = bytes 0-3, S0 = bytes 4-7) by the selector byte,
// 12 gives 0x00 and 13 or more 0xFF. The sign-replicating selectors 8-11 are
// not emulated.
inline uint32_t emu_perm(uint32_t s0, uint32_t s1, uint32_t sel) {
    const uint64_t bytes = static_cast<uint64_t>(s0) << 32 | s1;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
        const uint32_t s = (sel >> (8 * i)) & 0xff;
        uint32_t v;
        if (s < 8) v = (bytes >> (8 * s)) & 0xff;
        else if (s == 12) v = 0;
        else if (s >= 13) v = 0xff;
        else emu_fatal("v_perm_b32 selector 8-11 is not emulated");
        r |= v << (8 * i);
    }
    return r;
}
#define __builtin_amdgcn_perm(s0, s1, sel) emu_perm((s0), (s1), (sel))
