// candle-rocm compat: the block-wide prefix sum the kernels take from cub
// (`cub::BlockScan<T, BLOCK_THREADS>` -> `candle_cub::BlockScan`). Needs
// blockDim == BLOCK_THREADS, as the original does; independent of the
// wavefront size (shared memory and __syncthreads only).
#pragma once

#include <hip/hip_runtime.h>

namespace candle_cub {

template <class T, int BLOCK_THREADS>
class BlockScan {
public:
    struct TempStorage {
        T values[BLOCK_THREADS];
    };

    __device__ explicit BlockScan(TempStorage& storage) : storage_(storage) {}

    // output = input of threads 0..=self, summed (Hillis-Steele doubling).
    __device__ void InclusiveSum(T input, T& output) {
        const int tid = static_cast<int>(threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y);
        storage_.values[tid] = input;
        __syncthreads();
        for (int offset = 1; offset < BLOCK_THREADS; offset <<= 1) {
            const T add = tid >= offset ? storage_.values[tid - offset] : T(0);
            __syncthreads();
            storage_.values[tid] += add;
            __syncthreads();
        }
        output = storage_.values[tid];
        __syncthreads();  // the storage may be reused right after
    }

    // output = input of threads 0..self, summed (0 for thread 0).
    __device__ void ExclusiveSum(T input, T& output) {
        T inclusive;
        InclusiveSum(input, inclusive);
        output = inclusive - input;
    }

private:
    TempStorage& storage_;
};

}  // namespace candle_cub
