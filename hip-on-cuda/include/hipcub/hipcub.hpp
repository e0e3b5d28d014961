// hip-on-cuda: <hipcub/hipcub.hpp> for nvcc.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// hipCUB on NVIDIA is CUB: hipCUB's own NVIDIA backend wraps CUB's names in namespace
// hipcub, and this does the same with CUDA's CUB (CCCL, shipped with nvcc). The kernels reach
// it through candle_hip_cub.h, which looks up in hipcub what candle_cub does not declare
// itself (BlockLoad, BlockStore, DeviceReduce, ...): mistral.rs's quantization kernels.
//
// One difference from CUB as CUDA 13 ships it: CCCL 3 removed cub::TransformInputIterator and
// cub::CountingInputIterator (deprecated for thrust::transform_iterator and
// thrust::counting_iterator, which take the same arguments in the same order); hipCUB still
// has them, so they are declared here over thrust's.
#pragma once

#if !defined(__CUDACC__)
#error "hip-on-cuda/include is for nvcc (CUDA C++) only; build AMD code with hipcc and ROCm's own hipCUB"
#endif

#include <cub/cub.cuh>

namespace hipcub {
using namespace ::cub;
}  // namespace hipcub

#if defined(CCCL_MAJOR_VERSION) && CCCL_MAJOR_VERSION >= 3
#include <cstddef>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
namespace hipcub {
template <typename ValueType, typename OffsetT = std::ptrdiff_t>
using CountingInputIterator = ::thrust::counting_iterator<ValueType>;
template <typename ValueType, typename ConversionOp, typename InputIteratorT, typename OffsetT = std::ptrdiff_t>
using TransformInputIterator = ::thrust::transform_iterator<ConversionOp, InputIteratorT, ValueType>;
}  // namespace hipcub
#endif
