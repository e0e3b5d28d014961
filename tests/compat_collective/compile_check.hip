// Compile check of translator/compat/candle_hip_{wmma,thrust,cub}.h for AMD:
// instantiates every shape, element type and layout the MoE kernels use (and
// the other supported ones), BlockScan, and the stream scan. From the repo root:
//   HIP_PLATFORM=amd hipcc -x hip --offload-arch=gfx90a --offload-arch=gfx1030 -O3 --genco \
//       -I translator/compat tests/compat_collective/compile_check.hip -o /tmp/x.co
//   HIP_PLATFORM=amd hipcc -x hip --offload-arch=gfx90a --offload-arch=gfx1030 -O3 -c \
//       -I translator/compat tests/compat_collective/compile_check.hip -o /tmp/x.o
// Add -DCANDLE_USE_REAL_COMPAT to use candle_hip_compat.h's candle_bf16 (and
// to check that the headers coexist with it) instead of the stand-in below.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#ifdef CANDLE_USE_REAL_COMPAT
#include "candle_hip_compat.h"
#else
// Minimal stand-in for candle_hip_compat.h's 2-byte bfloat16.
struct candle_bf16 {
    unsigned short bits;
    candle_bf16() = default;
    __host__ __device__ candle_bf16(float f) {
        unsigned u;
        __builtin_memcpy(&u, &f, 4);
        bits = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
    }
    __host__ __device__ operator float() const {
        const unsigned u = static_cast<unsigned>(bits) << 16;
        float f;
        __builtin_memcpy(&f, &u, 4);
        return f;
    }
};
#endif

#include "candle_hip_wmma.h"
#include "candle_hip_cub.h"
#include "candle_hip_thrust.h"

// As the translated kernels spell it: a global using-directive.
using namespace candle_wmma;

template <int M, int N, int K, class T, class LB, class TC>
__global__ void tile_kernel(const T* a, const T* b, TC* c, unsigned lda, unsigned ldb, unsigned ldc) {
    fragment<accumulator, M, N, K, TC> acc;
    fill_fragment(acc, 0.0f);
    wmma_load_matrix(acc, c, ldc, mem_col_major);
    fragment<matrix_a, M, N, K, T, row_major> fa;
    fragment<matrix_b, M, N, K, T, LB> fb;
    wmma_load_matrix(fa, a, lda);
    wmma_load_matrix(fb, b, ldb);
    wmma_mma(acc, fa, fb, acc);
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = acc.x[i] * TC(2.0f);  // element-wise use
    wmma_store_matrix(c, acc, ldc, mem_row_major);
}

// The wmma_gguf spelling: `using namespace candle_nvcuda;` then `wmma::` names.
__global__ void alias_kernel(const __half* a, const __half* b, float* c) {
    using namespace candle_nvcuda;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::wmma_load_matrix(fa, a, 16);
    wmma::wmma_load_matrix(fb, b, 16);
    wmma::wmma_mma(acc, fa, fb, acc);
    wmma::wmma_store_matrix(c, acc, 16, wmma::mem_row_major);
}

template __global__ void tile_kernel<16, 16, 16, __half, col_major, float>(const __half*, const __half*, float*, unsigned, unsigned, unsigned);
template __global__ void tile_kernel<8, 32, 16, __half, col_major, float>(const __half*, const __half*, float*, unsigned, unsigned, unsigned);
template __global__ void tile_kernel<32, 8, 16, __half, row_major, float>(const __half*, const __half*, float*, unsigned, unsigned, unsigned);
template __global__ void tile_kernel<16, 16, 16, candle_bf16, col_major, float>(const candle_bf16*, const candle_bf16*, float*, unsigned, unsigned, unsigned);
template __global__ void tile_kernel<8, 32, 16, candle_bf16, col_major, float>(const candle_bf16*, const candle_bf16*, float*, unsigned, unsigned, unsigned);
template __global__ void tile_kernel<32, 8, 16, candle_bf16, row_major, float>(const candle_bf16*, const candle_bf16*, float*, unsigned, unsigned, unsigned);
template __global__ void tile_kernel<16, 16, 16, __half, col_major, __half>(const __half*, const __half*, __half*, unsigned, unsigned, unsigned);

// moe_align's use: 1024 threads, exclusive sum; plus the other entry points.
__global__ void scan_kernel(const int32_t* in, int32_t* ex, int32_t* inc, int32_t* total) {
    using BlockScan = candle_cub::BlockScan<int32_t, 1024>;
    __shared__ typename BlockScan::TempStorage temp_storage;
    int32_t e, i, agg;
    BlockScan(temp_storage).ExclusiveSum(in[threadIdx.x], e);
    BlockScan(temp_storage).InclusiveSum(in[threadIdx.x], i, agg);
    ex[threadIdx.x] = e;
    inc[threadIdx.x] = i;
    if (threadIdx.x == 0) *total = agg;
}
__global__ void scan_kernel_2d(const float* in, float* out) {  // 64 threads as 16 x 4
    using BlockScan = candle_cub::BlockScan<float, 64>;
    __shared__ typename BlockScan::TempStorage temp_storage;
    const int t = threadIdx.x + 16 * threadIdx.y;
    float r, agg;
    BlockScan(temp_storage).ExclusiveSum(in[t], r, agg);
    out[t] = r + agg;
}

// moe_utils' use, on a stream.
void offsets_from_counts(const int32_t* d_counts, int32_t* d_offsets, int num_experts, hipStream_t stream) {
    candle_thrust::device_ptr<const int32_t> counts(d_counts);
    candle_thrust::device_ptr<int32_t> offsets(d_offsets);
    candle_thrust::inclusive_scan(candle_thrust::hip::par.on(stream), counts, counts + num_experts, offsets + 1);
    hipMemsetAsync(d_offsets, 0, sizeof(int32_t), stream);
}
void scan_raw(const int32_t* in, int32_t* out, long n, hipStream_t stream) {
    candle_thrust::inclusive_scan(candle_thrust::hip::par.on(stream), in, in + n, out);
}
