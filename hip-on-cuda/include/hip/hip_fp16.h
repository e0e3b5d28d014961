// hip-on-cuda: <hip/hip_fp16.h> for nvcc.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// HIP's half-precision API (__half, __half2, __float2half, __half2float,
// __hadd2, __low2float, __ushort_as_half, ...) has the same names and
// semantics as CUDA's, so this is CUDA's header. Nothing else is defined.
// See hip_runtime.h for what hip-on-cuda is.
#pragma once

#include <hip/hip_runtime.h>
#include <cuda_fp16.h>
