// hip-on-cuda: <hip/hip_runtime.h> for nvcc.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// candle-rocm's own, minimal stand-in for HIP's NVIDIA platform, used only to
// run the generated HIP kernels (generated/kernels) on an NVIDIA GPU for
// testing. HIP 5.2.3's own hip/nvidia_detail headers do not compile against
// CUDA 13, so this header maps exactly the HIP names that the generated
// kernels and their compat preludes (candle_hip_compat.h, ...) use onto CUDA,
// and nothing else. It defines HIP names only (one NVIDIA-only workaround
// aside: __builtin_trap in device code, at the end): never a `candle_*` name,
// never __HIP_PLATFORM_AMD__ or a __gfx*__ macro, so every AMD-only branch of
// the generated code stays off and nvcc compiles the portable path.
//
// Used by hip-on-cuda/build-kernels.sh (`nvcc -x cu -I hip-on-cuda/include`).
//
// Where a mapping is not identical to HIP on AMD, the entry says so
// (NVIDIA-FINDINGS.md has the full list):
//   * warpSize is 32 on NVIDIA (64 on CDNA): the shuffles' default width is 32.
//   * the mask-less shuffles become the *_sync forms with the full mask
//     0xffffffff, as HIP's own NVIDIA platform does: all 32 lanes of the warp
//     must reach the call (on AMD a mask-less shuffle from divergent code just
//     reads whatever an inactive lane holds; on NVIDIA it is undefined).
//   * hipError_t is cudaError_t. HIP numbers its errors like CUDA for every
//     code the kernels can see (0 success, 1 invalid value, 2 out of memory,
//     9 invalid configuration, 98 invalid device function, 209 no binary for
//     GPU, 700 illegal address, 701 out of resources, 719 launch failure,
//     999 unknown, ...); other CUDA codes pass through unconverted.
//   * __builtin_trap() in device code becomes CUDA's __trap() (nvcc would
//     otherwise drop it from device code).
#pragma once

#if !defined(__CUDACC__)
#error "hip-on-cuda/include is for nvcc (CUDA C++) only; build AMD code with hipcc and ROCm's own HIP headers"
#endif
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#error "hip-on-cuda: __HIP_PLATFORM_AMD__ is defined, but this header maps HIP onto CUDA"
#endif

#include <cuda_runtime.h>
// ROCm's hip_runtime.h brings the C++ standard exceptions in through its own headers, and
// kernels written against it throw std::runtime_error without including <stdexcept>
// (mistral.rs's MoE gemm); CUDA's headers do not bring it, so it is included here.
#include <stdexcept>
// Before the shuffle macros below: CUDA's fp16 header declares (deprecated,
// pre-sm_70) mask-less __shfl* overloads that the macros must not rewrite.
#include <cuda_fp16.h>

// ---------------------------------------------------------------------------
// Platform macros, as HIP's hip_common.h sets them for nvcc.
// ---------------------------------------------------------------------------
#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#ifndef __HIPCC__
#define __HIPCC__ 1
#endif
// Set in the device pass only (nvcc's __CUDA_ARCH__), like hipcc's
// __HIP_DEVICE_COMPILE__ on AMD.
#if defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define __HIP_DEVICE_COMPILE__ 1
#endif

// ---------------------------------------------------------------------------
// Types and constants.
// ---------------------------------------------------------------------------
typedef cudaStream_t hipStream_t;
typedef cudaError_t hipError_t;
static constexpr hipError_t hipSuccess = cudaSuccess;

// Device attributes: the ones the kernels ask for, under HIP's names.
typedef cudaDeviceAttr hipDeviceAttribute_t;
static constexpr hipDeviceAttribute_t hipDeviceAttributeSharedMemPerBlockOptin = cudaDevAttrMaxSharedMemoryPerBlockOptin;
static constexpr hipDeviceAttribute_t hipDeviceAttributeMultiprocessorCount = cudaDevAttrMultiProcessorCount;
// On AMD these answer the arch's gfx major/minor (9 and 4 on gfx942); here the NVIDIA ones.
static constexpr hipDeviceAttribute_t hipDeviceAttributeComputeCapabilityMajor = cudaDevAttrComputeCapabilityMajor;
static constexpr hipDeviceAttribute_t hipDeviceAttributeComputeCapabilityMinor = cudaDevAttrComputeCapabilityMinor;
typedef cudaDeviceProp hipDeviceProp_t;

// Copy directions: HIP numbers them as CUDA does (0 host to host ... 4 default).
typedef cudaMemcpyKind hipMemcpyKind;
static constexpr hipMemcpyKind hipMemcpyHostToHost = cudaMemcpyHostToHost;
static constexpr hipMemcpyKind hipMemcpyHostToDevice = cudaMemcpyHostToDevice;
static constexpr hipMemcpyKind hipMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
static constexpr hipMemcpyKind hipMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
static constexpr hipMemcpyKind hipMemcpyDefault = cudaMemcpyDefault;

typedef cudaFuncAttribute hipFuncAttribute;
static constexpr hipFuncAttribute hipFuncAttributeMaxDynamicSharedMemorySize =
    cudaFuncAttributeMaxDynamicSharedMemorySize;

// ---------------------------------------------------------------------------
// Runtime API (host side), same signatures as HIP's.
// ---------------------------------------------------------------------------
static inline hipError_t hipGetLastError(void) { return cudaGetLastError(); }
static inline const char* hipGetErrorString(hipError_t error) { return cudaGetErrorString(error); }
static inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device) { return cudaGetDeviceProperties(prop, device); }
static inline hipError_t hipMemcpy(void* dst, const void* src, size_t size_bytes, hipMemcpyKind kind) {
    return cudaMemcpy(dst, src, size_bytes, kind);
}
// HIP takes the kernel as `const void*` (its host-side stub), as CUDA's C API does.
static inline hipError_t hipLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared_bytes = 0, hipStream_t stream = 0) {
    return cudaLaunchKernel(func, grid, block, args, shared_bytes, stream);
}
template <class Kernel>
static inline hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel func, int block_size, size_t shared_bytes) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, block_size, shared_bytes);
}
static inline hipError_t hipMemset(void* dst, int value, size_t size_bytes) { return cudaMemset(dst, value, size_bytes); }
static inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size_bytes, hipMemcpyKind kind, hipStream_t stream = 0) {
    return cudaMemcpyAsync(dst, src, size_bytes, kind, stream);
}
static inline hipError_t hipGetDevice(int* device) { return cudaGetDevice(device); }
static inline hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int device) {
    return cudaDeviceGetAttribute(value, attr, device);
}

// Stream-ordered allocation (CUDA 11.2+).
static inline hipError_t hipMallocAsync(void** dev_ptr, size_t size, hipStream_t stream) {
    return cudaMallocAsync(dev_ptr, size, stream);
}
// HIP's typed overload (hip_runtime_api.h), so `int32_t* p; hipMallocAsync(&p, ...)` compiles.
template <class T>
static inline hipError_t hipMallocAsync(T** dev_ptr, size_t size, hipStream_t stream) {
    return cudaMallocAsync(reinterpret_cast<void**>(dev_ptr), size, stream);
}
static inline hipError_t hipFreeAsync(void* dev_ptr, hipStream_t stream) { return cudaFreeAsync(dev_ptr, stream); }
static inline hipError_t hipMemsetAsync(void* dst, int value, size_t size_bytes, hipStream_t stream = 0) {
    return cudaMemsetAsync(dst, value, size_bytes, stream);
}

// HIP takes the kernel as `const void*` (its host-side stub), as CUDA's C API does.
static inline hipError_t hipFuncSetAttribute(const void* func, hipFuncAttribute attr, int value) {
    return cudaFuncSetAttribute(func, attr, value);
}

// ---------------------------------------------------------------------------
// Kernel launch: hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, args...)
// ---------------------------------------------------------------------------
// As in HIP, a kernel name whose template arguments contain a comma must be
// wrapped in parentheses (or named through an alias) by the caller.
#define hipLaunchKernelGGL(kernel_name, num_blocks, num_threads, mem_per_block, stream, ...)         \
    do {                                                                                            \
        (kernel_name)<<<(num_blocks), (num_threads), (mem_per_block), (stream)>>>(__VA_ARGS__);     \
    } while (0)

// ---------------------------------------------------------------------------
// Warp shuffles without a mask: __shfl(var, lane[, width]), __shfl_up/down(var,
// delta[, width]), __shfl_xor(var, mask[, width]).
// ---------------------------------------------------------------------------
// The *_sync forms with the full mask, exactly as HIP's NVIDIA platform maps
// them (nvidia_hip_runtime_api.h). Lane selection for width < 32 is the same
// as HIP on AMD: lanes form groups of `width`; __shfl_up/__shfl_down/
// __shfl_xor return the caller's own value when the source lane lies outside
// its group (below it for up, above it for down and xor). Differences from AMD:
//   * the default width is warpSize = 32 (64 on CDNA);
//   * width must be a power of two <= 32 (AMD allows 64);
//   * __shfl with src_lane outside [0, width): CUDA reads lane
//     src_lane % width of the caller's group; HIP 5.2.3 on AMD reads lane
//     (group base + src_lane) mod 64, i.e. another group (ROCm 6 masks like
//     CUDA). No generated kernel passes such a lane;
//   * all 32 lanes must execute the call (full mask), see the top of the file;
//   * types: CUDA's overload set (int, unsigned, long, long long and unsigned
//     variants, float, double, __half, __half2, ...), a superset of HIP 5.2's.
#define __shfl(...) __shfl_sync(0xffffffffu, __VA_ARGS__)
#define __shfl_up(...) __shfl_up_sync(0xffffffffu, __VA_ARGS__)
#define __shfl_down(...) __shfl_down_sync(0xffffffffu, __VA_ARGS__)
#define __shfl_xor(...) __shfl_xor_sync(0xffffffffu, __VA_ARGS__)
// For candle-rocm's compat header (candle_ballot_w32_in): a vote over the active lanes, bit
// i for lane i, inactive lanes 0, as HIP's __ballot on AMD.
#define CANDLE_PLATFORM_BALLOT(p) __ballot_sync(__activemask(), (p))

// ---------------------------------------------------------------------------
// Native byte-SIMD for candle-rocm's compat header (candle_fp_convert.h):
// the generated kernels call candle_dp4a / candle_vsub4 / candle_vsubss4 /
// candle_vcmpne4, which fall back to exact portable loops unless the platform
// names its instructions. NVIDIA has them (sm_61+ for dp4a); same results.
// ---------------------------------------------------------------------------
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 610
#define CANDLE_PLATFORM_DP4A(a, b, c) __dp4a(a, b, c)
#endif
// bf16 on sm_80+, the same bits as the portable code (checked on the GPU by
// tests/compat/nvidia_reference_check.cu: every float, random pairs):
// float -> bf16 (round to nearest even, NaN -> 0x7FFF, overflow -> inf): one
// cvt.rn.bf16.f32.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ __forceinline__ unsigned short candle_platform_f32_to_bf16_bits(float f) {
    unsigned short bits;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(f));
    return bits;
}
#define CANDLE_PLATFORM_F32_TO_BF16_BITS(f) candle_platform_f32_to_bf16_bits(f)
// bf16 + - * as one fma.rn.bf16 each (a*1+b, b*-1+a, a*b+-0: the product or sum is
// rounded once, like the portable float-then-round; -0 keeps the signs of zeros).
static __device__ __forceinline__ unsigned short candle_platform_bf16_fma(unsigned short a, unsigned short b, unsigned short c) {
    unsigned short d;
    asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(d) : "h"(a), "h"(b), "h"(c));
    return d;
}
#define CANDLE_PLATFORM_BF16_ADD(a, b) candle_platform_bf16_fma((a), 0x3F80u, (b))
#define CANDLE_PLATFORM_BF16_SUB(a, b) candle_platform_bf16_fma((b), 0xBF80u, (a))
#define CANDLE_PLATFORM_BF16_MUL(a, b) candle_platform_bf16_fma((a), (b), 0x8000u)
// half and bf16 min/max as one instruction each ({max,min}{,.NaN}.{f16,bf16},
// what CUDA's __hmax/__hmin/__hmax_nan/__hmin_nan give upstream's kernels);
// same bits as the portable code (NaN -> 0x7FFF, +0 above -0).
static __device__ __forceinline__ unsigned short candle_platform_f16_minmax(unsigned short a, unsigned short b, bool want_max, bool propagate_nan) {
    const __half x = __ushort_as_half(a), y = __ushort_as_half(b);
    return __half_as_ushort(want_max ? (propagate_nan ? __hmax_nan(x, y) : __hmax(x, y))
                                     : (propagate_nan ? __hmin_nan(x, y) : __hmin(x, y)));
}
static __device__ __forceinline__ unsigned short candle_platform_bf16_minmax(unsigned short a, unsigned short b, bool want_max, bool propagate_nan) {
    unsigned short d;
    if (want_max && propagate_nan) asm("max.NaN.bf16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
    else if (want_max) asm("max.bf16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
    else if (propagate_nan) asm("min.NaN.bf16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
    else asm("min.bf16 %0, %1, %2;" : "=h"(d) : "h"(a), "h"(b));
    return d;
}
#define CANDLE_PLATFORM_F16_MINMAX(a, b, want_max, propagate_nan) candle_platform_f16_minmax((a), (b), (want_max), (propagate_nan))
#define CANDLE_PLATFORM_BF16_MINMAX(a, b, want_max, propagate_nan) candle_platform_bf16_minmax((a), (b), (want_max), (propagate_nan))
#endif
#if defined(__CUDA_ARCH__)
// CUDA's own hexp for half, as upstream's kernels call it (it may differ from
// the portable float path in the last bit: the vendor's half exp on each side).
#define CANDLE_PLATFORM_F16_EXP(a) __half_as_ushort(hexp(__ushort_as_half(a)))
#define CANDLE_PLATFORM_VSUB4(a, b) __vsub4(a, b)
#define CANDLE_PLATFORM_VSUBSS4(a, b) __vsubss4(a, b)
#define CANDLE_PLATFORM_VCMPNE4(a, b) __vcmpne4(a, b)
#endif

// The vectors through which candle_elementwise.h's packs move 8 and 16 bytes:
// nvcc has no ext_vector_type; CUDA's uint2/uint4 are one ld/st.v2/.v4 each.
#define CANDLE_PLATFORM_EW_U32X2 uint2
#define CANDLE_PLATFORM_EW_U32X4 uint4

// ---------------------------------------------------------------------------
// __builtin_trap() in device code (NVIDIA-only workaround, not a HIP name).
// ---------------------------------------------------------------------------
// hipcc (clang) lowers __builtin_trap() in device code to a trap (s_trap on
// AMD). nvcc treats it as a host-only builtin: in a __host__ __device__
// function it warns (#20011-D) and the device code gets no trap at all, so a
// failed device assertion (candle_trap, GGML_ASSERT, NO_DEVICE_CODE) would run
// on through undefined behaviour instead of aborting the kernel. In nvcc's
// device pass only, make it CUDA's __trap() (BPT.TRAP), never returning.
#if defined(__CUDA_ARCH__)
#define __builtin_trap()           \
    do {                           \
        __trap();                  \
        __builtin_unreachable();   \
    } while (0)
#endif
