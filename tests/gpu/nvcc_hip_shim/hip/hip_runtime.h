// Test-only shim: compiles the *generated HIP kernels* with nvcc, so that they
// can be run against the original CUDA kernels on an NVIDIA GPU (see kernel_ab.cu).
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#define __HIPCC__ 1
#ifdef __CUDA_ARCH__
#define __HIP_DEVICE_COMPILE__ 1
#endif
typedef cudaStream_t hipStream_t;
typedef cudaError_t hipError_t;
typedef cudaFuncAttribute hipFuncAttribute;
#define hipSuccess cudaSuccess
#define hipGetLastError cudaGetLastError
#define hipMemsetAsync cudaMemsetAsync
#define hipGetDevice cudaGetDevice
#define hipFuncSetAttribute(f, a, v) cudaFuncSetAttribute(f, a, v)
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
#define __shfl(v, l, w) __shfl_sync(0xffffffffu, v, l, w)
#define __shfl_xor(v, l, w) __shfl_xor_sync(0xffffffffu, v, l, w)
#define __shfl_up(v, l, w) __shfl_up_sync(0xffffffffu, v, l, w)
#define __shfl_down(v, l, w) __shfl_down_sync(0xffffffffu, v, l, w)
