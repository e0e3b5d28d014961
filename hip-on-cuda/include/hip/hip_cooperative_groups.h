// hip-on-cuda: <hip/hip_cooperative_groups.h> for nvcc.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// HIP's cooperative groups are CUDA's, under the same namespace (cooperative_groups) and
// names, as HIP's own NVIDIA platform has them. flashinfer's decode kernels (mistral.rs's
// paged attention) include it for their tile groups.
#pragma once

#if !defined(__CUDACC__)
#error "hip-on-cuda/include is for nvcc (CUDA C++) only; build AMD code with hipcc and ROCm's own HIP headers"
#endif

#include <hip/hip_runtime.h>
#include <cooperative_groups.h>
