// Written by `cargo xtask regen` from translator/compat/candle_hip_cub.h (candle-rocm's own code). Do not edit here.
// candle-rocm compat: the block-wide prefix sum the kernels take from the
// block primitives library, as `candle_cub::BlockScan<T, BLOCK_THREADS>`.
//
// Usage as in the original:
//   using Scan = candle_cub::BlockScan<int32_t, 1024>;
//   __shared__ typename Scan::TempStorage storage;
//   Scan(storage).ExclusiveSum(input, output);
// Every thread of the block must call it (it contains barriers), with
// blockDim.x * blockDim.y * blockDim.z == BLOCK_THREADS. It only uses shared
// memory and __syncthreads, so it does not depend on the wavefront size
// (32 or 64). Unlike the original, the storage may be reused right away: the
// call ends with a barrier.
#pragma once

// A test shim may define CANDLE_COMPAT_NO_HIP_INCLUDE and supply the HIP names itself.
#ifndef CANDLE_COMPAT_NO_HIP_INCLUDE
#include <hip/hip_runtime.h>
#endif

namespace candle_cub {

template <class T, int BLOCK_THREADS>
class BlockScan {
public:
    static_assert(BLOCK_THREADS > 0, "BlockScan needs at least one thread");

    // Two buffers of one value per thread (double-buffered Hillis-Steele).
    struct TempStorage {
        T buf[2][BLOCK_THREADS];
    };

    __device__ __forceinline__ explicit BlockScan(TempStorage& storage) : s_(storage) {}

    // output = sum of the inputs of threads 0..=self.
    __device__ __forceinline__ void InclusiveSum(T input, T& output) {
        T total;
        InclusiveSum(input, output, total);
    }
    // ... and block_aggregate = sum over the whole block, in every thread.
    __device__ __forceinline__ void InclusiveSum(T input, T& output, T& block_aggregate) {
        T exclusive;
        scan(input, output, exclusive, block_aggregate);
    }

    // output = sum of the inputs of threads 0..self-1 (T(0) in thread 0).
    __device__ __forceinline__ void ExclusiveSum(T input, T& output) {
        T total;
        ExclusiveSum(input, output, total);
    }
    __device__ __forceinline__ void ExclusiveSum(T input, T& output, T& block_aggregate) {
        T inclusive;
        scan(input, inclusive, output, block_aggregate);
    }

private:
    TempStorage& s_;

    __device__ __forceinline__ static int tid() {
        return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
    }

    // Hillis-Steele: after the step with distance d, buf[cur][t] holds the
    // sum of the (up to) 2d inputs ending at thread t. One barrier per step;
    // each step reads one buffer and writes the other.
    __device__ __forceinline__ void scan(T input, T& inclusive, T& exclusive, T& block_aggregate) {
        const int t = tid();
        int cur = 0;
        s_.buf[cur][t] = input;
        __syncthreads();
        for (int d = 1; d < BLOCK_THREADS; d <<= 1) {
            const T mine = s_.buf[cur][t];
            s_.buf[cur ^ 1][t] = t >= d ? mine + s_.buf[cur][t - d] : mine;
            cur ^= 1;
            __syncthreads();
        }
        inclusive = s_.buf[cur][t];
        exclusive = t > 0 ? s_.buf[cur][t - 1] : T(0);
        block_aggregate = s_.buf[cur][BLOCK_THREADS - 1];
        __syncthreads();  // everyone has read before the storage is reused
    }
};

}  // namespace candle_cub

// Everything else of the library (BlockLoad, BlockStore, DeviceReduce, the iterators, ...) is
// hipCUB's, where the release has it (ROCm >= 6 ships it; HIP 5.2.3 on Debian does not): a
// name candle_cub does not declare itself is looked up in hipcub. (COMPAT_CUB_NAMES and
// HIPCUB_HEADER in translator/src/kernels/mapping.rs say the same, for `cargo xtask corpus`.)
// On HIP's NVIDIA platform hipCUB is CUB's (hip-on-cuda has its own <hipcub/hipcub.hpp>).
#if (defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_NVIDIA__)) && defined(__has_include)
#if __has_include(<hipcub/hipcub.hpp>)
#include <hipcub/hipcub.hpp>
namespace candle_cub {
using namespace ::hipcub;
}  // namespace candle_cub
#endif
#endif
