// hip-on-cuda: <hipcub/hipcub.hpp> for nvcc.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// hipCUB on NVIDIA is CUB: hipCUB's own NVIDIA backend wraps CUB's names in namespace
// hipcub, and this does the same with CUDA's CUB (CCCL, shipped with nvcc). The kernels reach
// it through candle_hip_cub.h, which looks up in hipcub what candle_cub does not declare
// itself (BlockLoad, BlockStore, DeviceReduce, ...): mistral.rs's quantization kernels.
//
// CCCL 3 removed cub::TransformInputIterator and cub::CountingInputIterator, which hipCUB
// still has: ../../cccl2-iterators/cub/cub.cuh declares them over thrust's, and hipcub takes
// them from there with the rest of CUB.
#pragma once

#if !defined(__CUDACC__)
#error "hip-on-cuda/include is for nvcc (CUDA C++) only; build AMD code with hipcc and ROCm's own hipCUB"
#endif

// found by its path, its #include_next reaches CUDA's own <cub/cub.cuh>
#include "../../cccl2-iterators/cub/cub.cuh"

namespace hipcub {
using namespace ::cub;
}  // namespace hipcub
