// Test-only shim: lets nvcc compile translator/compat/candle_hip_{wmma,cub,thrust}.h
// unchanged on an NVIDIA GPU, so that they can be compared with NVIDIA's own
// wmma. Include it before the compat headers. The shuffle macros come after
// every NVIDIA header, so that only the compat headers' calls are rewritten.
#pragma once
#define CANDLE_COMPAT_NO_HIP_INCLUDE 1
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>

typedef cudaStream_t hipStream_t;
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
// The compat headers call the HIP spellings (all 32 lanes always take part).
#define __shfl(v, lane, width) __shfl_sync(0xffffffffu, (v), (lane), (width))
#define __shfl_xor(v, mask, width) __shfl_xor_sync(0xffffffffu, (v), (mask), (width))
