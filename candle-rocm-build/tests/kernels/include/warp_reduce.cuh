// A header a user's kernels share: a warp-wide sum over shuffles.
#pragma once

__device__ __forceinline__ float warp_sum(float v) {
    for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffff, v, mask);
    return v;
}
