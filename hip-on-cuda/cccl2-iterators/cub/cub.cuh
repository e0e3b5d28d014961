// <cub/cub.cuh> with the two iterators CCCL 3 removed, for nvcc of CUDA 13.
//
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// CCCL 3 (CUDA 13) removed cub::CountingInputIterator and cub::TransformInputIterator,
// deprecated for thrust::counting_iterator and thrust::transform_iterator, which take the same
// arguments. Code written for CUDA 12 still names them: mistral.rs 0.8.1's
// mistralrs-quant/kernels/ops/ops.cu, and hipCUB, which keeps them. This header is CUB as
// CCCL 3 ships it (#include_next) with the two declared over thrust's:
// - hip-on-cuda's <hipcub/hipcub.hpp> includes it, so hipcub:: has them too;
// - a stock CUDA build finds it first with `-I hip-on-cuda/cccl2-iterators` (the mistralrs row
//   of `cargo xtask gpu-program` puts it in NVCC_PREPEND_FLAGS): the sources stay as published.
#pragma once

#include_next <cub/cub.cuh>

#if defined(CCCL_MAJOR_VERSION) && CCCL_MAJOR_VERSION >= 3
#include <cstddef>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
namespace cub {
template <typename ValueType, typename OffsetT = std::ptrdiff_t>
using CountingInputIterator = ::thrust::counting_iterator<ValueType>;
template <typename ValueType, typename ConversionOp, typename InputIteratorT, typename OffsetT = std::ptrdiff_t>
using TransformInputIterator = ::thrust::transform_iterator<ConversionOp, InputIteratorT, ValueType>;
}  // namespace cub
#endif
