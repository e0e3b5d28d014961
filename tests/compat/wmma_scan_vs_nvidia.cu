// Compares candle-rocm's portable candle_wmma, candle_cub::BlockScan and
// candle_thrust::inclusive_scan (translator/compat/) with NVIDIA's wmma and
// CPU references, on an NVIDIA GPU. Build and run from the repo root:
//   nvcc -O2 -std=c++17 -arch=sm_90 -I tests/compat/nvidia_shim -I translator/compat \
//        -o /tmp/wmma_scan_vs_nvidia tests/compat/wmma_scan_vs_nvidia.cu && /tmp/wmma_scan_vs_nvidia
// Prints "N passed, M failed" and exits non-zero on any failure.
#include <mma.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

#include "candle_hip_wmma.h"
#include "candle_hip_cub.h"
#include "candle_hip_thrust.h"

static int passed = 0, failed = 0;
static void check(bool ok, const char* what) {
    if (ok) ++passed; else { ++failed; printf("FAILED: %s\n", what); }
}

// Each of the 4 warps of a (32, 4) block computes its own tile: tile w uses
// A + w*M*lda, B + w*N*ldb, C + w*M*ldc. USE_CANDLE picks the implementation.
template <bool USE_CANDLE, int M, int N, int K, class T>
__global__ void tile_mma(const T* a, const T* b, float* c, int lda, int ldb, int ldc) {
    const int w = threadIdx.y;
    const T* A = a + w * M * lda;
    const T* B = b + w * N * ldb;
    float* C = c + w * M * ldc;
    if constexpr (USE_CANDLE) {
        using namespace candle_wmma;
        fragment<accumulator, M, N, K, float> acc;
        fill_fragment(acc, 0.0f);
        wmma_load_matrix(acc, C, ldc, mem_row_major);
        fragment<matrix_a, M, N, K, T, row_major> fa;
        fragment<matrix_b, M, N, K, T, col_major> fb;
        wmma_load_matrix(fa, A, lda);
        wmma_load_matrix(fb, B, ldb);
        wmma_mma(acc, fa, fb, acc);
        wmma_store_matrix(C, acc, ldc, mem_row_major);
    } else {
        using namespace nvcuda::wmma;
        fragment<accumulator, M, N, K, float> acc;
        load_matrix_sync(acc, C, ldc, mem_row_major);
        fragment<matrix_a, M, N, K, T, row_major> fa;
        fragment<matrix_b, M, N, K, T, col_major> fb;
        load_matrix_sync(fa, A, lda);
        load_matrix_sync(fb, B, ldb);
        mma_sync(acc, fa, fb, acc);
        store_matrix_sync(C, acc, ldc, mem_row_major);
    }
}

template <int M, int N, int K, class T>
static void compare_mma(const char* name, int pad) {
    const int lda = K + pad, ldb = K + pad, ldc = N + pad, warps = 4;
    std::vector<T> ha(warps * M * lda), hb(warps * N * ldb);
    std::vector<float> hc(warps * M * ldc);
    for (auto& v : ha) v = T((rand() % 17 - 8) / 4.0f);
    for (auto& v : hb) v = T((rand() % 17 - 8) / 8.0f);
    for (auto& v : hc) v = (rand() % 9 - 4) / 2.0f;
    T *da, *db; float *dref, *dours;
    cudaMalloc(&da, ha.size() * sizeof(T)); cudaMalloc(&db, hb.size() * sizeof(T));
    cudaMalloc(&dref, hc.size() * 4); cudaMalloc(&dours, hc.size() * 4);
    cudaMemcpy(da, ha.data(), ha.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb.data(), hb.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemcpy(dref, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dours, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice);
    tile_mma<false, M, N, K, T><<<1, dim3(32, warps)>>>(da, db, dref, lda, ldb, ldc);
    tile_mma<true, M, N, K, T><<<1, dim3(32, warps)>>>(da, db, dours, lda, ldb, ldc);
    std::vector<float> ref(hc.size()), ours(hc.size());
    cudaMemcpy(ref.data(), dref, ref.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(ours.data(), dours, ours.size() * 4, cudaMemcpyDeviceToHost);
    cudaError_t err = cudaGetLastError();
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = fmax(worst, fabs(ref[i] - ours[i]));
    char what[160];
    snprintf(what, sizeof what, "wmma %s (pad %d): max |ours - nvidia| = %g, %s", name, pad, worst, cudaGetErrorString(err));
    // inputs are small dyadic numbers: every product and sum is exact in float
    check(err == cudaSuccess && worst == 0.0, what);
    printf("%s\n", what);
    cudaFree(da); cudaFree(db); cudaFree(dref); cudaFree(dours);
}

__global__ void block_scan(const int* in, int* exclusive, int* inclusive) {
    using Scan = candle_cub::BlockScan<int, 1024>;
    __shared__ typename Scan::TempStorage storage;
    int e, i;
    Scan(storage).ExclusiveSum(in[threadIdx.x], e);
    Scan(storage).InclusiveSum(in[threadIdx.x], i);
    exclusive[threadIdx.x] = e;
    inclusive[threadIdx.x] = i;
}

static void compare_block_scan() {
    std::vector<int> h(1024);
    for (auto& v : h) v = rand() % 100 - 20;
    int *din, *de, *di;
    cudaMalloc(&din, 4096); cudaMalloc(&de, 4096); cudaMalloc(&di, 4096);
    cudaMemcpy(din, h.data(), 4096, cudaMemcpyHostToDevice);
    block_scan<<<1, 1024>>>(din, de, di);
    std::vector<int> e(1024), i(1024);
    cudaMemcpy(e.data(), de, 4096, cudaMemcpyDeviceToHost);
    cudaMemcpy(i.data(), di, 4096, cudaMemcpyDeviceToHost);
    int run = 0;
    bool ok = true;
    for (int t = 0; t < 1024; ++t) { ok &= e[t] == run; run += h[t]; ok &= i[t] == run; }
    check(ok, "candle_cub::BlockScan exclusive/inclusive sums");
    cudaFree(din); cudaFree(de); cudaFree(di);
}

static void compare_thrust_scan(int n) {
    std::vector<int> h(n);
    for (auto& v : h) v = rand() % 50;
    int *din, *dout;
    cudaMalloc(&din, n * 4); cudaMalloc(&dout, (n + 1) * 4);
    cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice);
    cudaStream_t s; cudaStreamCreate(&s);
    candle_thrust::device_ptr<const int> first(din);
    candle_thrust::device_ptr<int> out(dout);
    candle_thrust::inclusive_scan(candle_thrust::hip::par.on(s), first, first + n, out + 1);
    cudaStreamSynchronize(s);
    std::vector<int> r(n + 1);
    cudaMemcpy(r.data(), dout, (n + 1) * 4, cudaMemcpyDeviceToHost);
    int run = 0;
    bool ok = true;
    for (int t = 0; t < n; ++t) { run += h[t]; ok &= r[t + 1] == run; }
    char what[80];
    snprintf(what, sizeof what, "candle_thrust::inclusive_scan n=%d", n);
    check(ok, what);
    cudaStreamDestroy(s); cudaFree(din); cudaFree(dout);
}

int main() {
    srand(1234);
    for (int pad : {0, 8}) {
        compare_mma<16, 16, 16, __half>("16x16x16 f16", pad);
        compare_mma<32, 8, 16, __half>("32x8x16 f16", pad);
        compare_mma<8, 32, 16, __half>("8x32x16 f16", pad);
        compare_mma<16, 16, 16, __nv_bfloat16>("16x16x16 bf16", pad);
        compare_mma<32, 8, 16, __nv_bfloat16>("32x8x16 bf16", pad);
        compare_mma<8, 32, 16, __nv_bfloat16>("8x32x16 bf16", pad);
    }
    compare_block_scan();
    for (int n : {1, 7, 1024, 1025, 5000}) compare_thrust_scan(n);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
