// hip-on-cuda: NVIDIA's tensor cores for the 16x16x16 matrix tile, in the shape of the AMD
// matrix instructions that candle_wmma (generated/kernels/candle_hip_wmma.h) takes on RDNA
// and CDNA: a product of 16x16 operands of 2-byte floats into a 16x16 f32 accumulator, the
// operands spread over the 32 lanes of a warp by fixed tables. candle_wmma includes this
// header when it finds it in an NVIDIA device pass; there, with HIP_ON_CUDA_TENSOR_CORES
// defined (sm_80 and later), its matrix-core tiles run on `mma.sync.m16n8k16` (two per
// tile, one per 8-column half), so that hip-on-cuda's timings compare tensor cores with
// tensor cores. Without it (older GPUs) candle_wmma keeps its shuffles. It also offers
// sm_80's asynchronous copy into shared memory (async_copy16, below).
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The tables are the PTX ISA's fragment layouts for mma.m16n8k16 with .f16/.bf16 operands
// and an .f32 accumulator (groupID g = lane / 4, threadID_in_group t = lane % 4):
//   A (16 x 16, row i, column k), elements a0..a7 (a register holds two):
//     i = g + 8 * ((e / 2) % 2), k = 2t + e % 2 + 8 * (e / 4)
//   B (16 x 8, row k, column j), elements b0..b3 per 8-column half h (e = 4h + b):
//     j = g + 8h, k = 2t + b % 2 + 8 * (b / 2)
//   C, D (16 x 8, row i, column j), elements c0..c3 per half h (e = 4h + c):
//     i = g + 8 * (c / 2), j = 2t + c % 2 + 8h
// Element 2r sits in the low 16 bits of register r.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HIP_ON_CUDA_TENSOR_CORES 1
#include <stdint.h>

namespace hip_on_cuda_tensor_cores {

constexpr int kAB = 8;  // A or B elements per lane for one 16x16 tile
constexpr int kC = 8;   // accumulator elements per lane

__device__ __forceinline__ void a_index(int lane, int e, unsigned& i, unsigned& k) {
    i = lane / 4 + 8 * ((e / 2) % 2);
    k = 2 * (lane % 4) + e % 2 + 8 * (e / 4);
}
__device__ __forceinline__ void b_index(int lane, int e, unsigned& j, unsigned& k) {
    const int b = e % 4;
    j = lane / 4 + 8 * (e / 4);
    k = 2 * (lane % 4) + b % 2 + 8 * (b / 2);
}
__device__ __forceinline__ void c_index(int lane, int e, unsigned& i, unsigned& j) {
    const int c = e % 4;
    i = lane / 4 + 8 * (c / 2);
    j = 2 * (lane % 4) + c % 2 + 8 * (e / 4);
}

// d = a * b + c over one 16x16x16 tile; a, b: four registers of two elements each (TYPE: f16
// or bf16).
#define HIP_ON_CUDA_MMA_16X16X16(NAME, TYPE)                                                                              \
    __device__ __forceinline__ void NAME(const uint32_t (&a)[4], const uint32_t (&b)[4], const float (&c)[8], float (&d)[8]) { \
        _Pragma("unroll") for (int h = 0; h < 2; ++h) asm("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE                \
                                                          ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"      \
                                                          : "=f"(d[4 * h]), "=f"(d[4 * h + 1]), "=f"(d[4 * h + 2]), "=f"(d[4 * h + 3]) \
                                                          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]),      \
                                                            "r"(b[2 * h + 1]), "f"(c[4 * h]), "f"(c[4 * h + 1]),             \
                                                            "f"(c[4 * h + 2]), "f"(c[4 * h + 3]));                          \
    }
HIP_ON_CUDA_MMA_16X16X16(mma_f16, "f16")
HIP_ON_CUDA_MMA_16X16X16(mma_bf16, "bf16")
#undef HIP_ON_CUDA_MMA_16X16X16

// ldmatrix: four 8x8 matrices of 16-bit elements from shared memory, the operand loads of
// mma.sync: lane l gives the address of row l%8 of matrix l/8 (16-byte aligned); register m
// receives row l/4, columns 2*(l%4) and 2*(l%4) + 1 of matrix m (of its transpose with
// `trans`), the lower column in the low 16 bits.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row, bool trans) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
}

// Asynchronous copies, global memory to shared memory (sm_80's cp.async): a kernel that
// stages tiles issues the next tile's copies before working on the current one (candle's
// flash attention, generated/kernels/candle_flash_attn.hip). 16 bytes, both addresses
// 16-byte aligned; async_wait_all: the calling thread's copies have landed (a block barrier
// after it makes them everyone's).
#define HIP_ON_CUDA_ASYNC_COPY 1
__device__ __forceinline__ void async_copy16(void* shared_dst, const void* global_src) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(global_src) : "memory");
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// 2^x by the special-function unit alone (ex2.approx.ftz: MUFU.EX2, results below 2^-126
// flushed to zero), as AMD's v_exp_f32 (candle_wmma::exp2_approx): exp2f adds a denormal
// range fix of three instructions per call, which flash attention's softmax (one call per
// score) cannot afford.
#define HIP_ON_CUDA_EXP2_APPROX 1
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

}  // namespace hip_on_cuda_tensor_cores
#endif
