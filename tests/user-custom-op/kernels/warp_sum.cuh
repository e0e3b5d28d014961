// A warp's sum, as CUDA code writes it: 32 lanes, full mask.
#pragma once

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}
