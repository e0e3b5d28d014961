// Test-only shim: lets nvcc compile candle-rocm's compat headers on an NVIDIA
// GPU, so that they can be compared with NVIDIA's own implementations.
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef cudaStream_t hipStream_t;
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
template <class T>
__device__ __forceinline__ T candle_shfl(T v, int lane, int width) { return __shfl_sync(0xffffffffu, v, lane, width); }
