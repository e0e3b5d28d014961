// Compares candle-rocm's portable candle_wmma, candle_cub::BlockScan and
// candle_thrust::inclusive_scan (translator/compat/) with NVIDIA's wmma and
// with CPU references, on an NVIDIA GPU (sm_80 or newer). From the repo root:
//   nvcc -std=c++17 -O2 -arch=sm_90 -I translator/compat -o /tmp/wmma_vs_cuda tests/compat_collective/wmma_vs_cuda.cu && /tmp/wmma_vs_cuda
// Prints "N passed, M failed" and exits non-zero on any failure.
//
// wmma: every shape the headers support (16x16x16, 8x32x16, 32x8x16), __half
// and __nv_bfloat16, A row/col-major, B col/row-major, C loaded and stored
// row/col-major, padded ldm, several block shapes (lane = linear thread id % 32).
// Small dyadic inputs make every product and sum exact: candle, NVIDIA and the
// CPU must agree bit for bit. Random inputs are compared within 1e-3 relative.
#include "nvcc_shim.h"  // first: CANDLE_COMPAT_NO_HIP_INCLUDE, HIP spellings

#include "candle_hip_wmma.h"
#include "candle_hip_cub.h"
#include "candle_hip_thrust.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

static int passed = 0, failed = 0;
static void check(bool ok, const char* what) {
    if (ok) ++passed; else { ++failed; printf("FAILED: %s\n", what); }
}
#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(2); } } while (0)

template <class T> static T to_t(float v);
template <> __half to_t<__half>(float v) { return __float2half(v); }
template <> __nv_bfloat16 to_t<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
static float to_f(__half v) { return __half2float(v); }
static float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

// Warp w (linear thread id / 32) of the block computes D_w = A_w B_w + C_w in
// place; tile w starts at w * *_tile. USE_CANDLE picks the implementation.
template <bool USE_CANDLE, int M, int N, int K, class T, bool A_ROW, bool B_COL>
__global__ void tile_mma(const T* a, const T* b, float* c, unsigned lda, unsigned ldb, unsigned ldc, unsigned a_tile, unsigned b_tile,
                         unsigned c_tile, bool c_row_in, bool c_row_out) {
    const unsigned w = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32;
    const T* A = a + w * a_tile;
    const T* B = b + w * b_tile;
    float* C = c + w * c_tile;
    if constexpr (USE_CANDLE) {
        using namespace candle_wmma;
        using LA = typename std::conditional<A_ROW, row_major, col_major>::type;
        using LB = typename std::conditional<B_COL, col_major, row_major>::type;
        fragment<accumulator, M, N, K, float> acc;
        fill_fragment(acc, 0.0f);
        wmma_load_matrix(acc, C, ldc, c_row_in ? mem_row_major : mem_col_major);
        fragment<matrix_a, M, N, K, T, LA> fa;
        fragment<matrix_b, M, N, K, T, LB> fb;
        wmma_load_matrix(fa, A, lda);
        wmma_load_matrix(fb, B, ldb);
        wmma_mma(acc, fa, fb, acc);
        wmma_store_matrix(C, acc, ldc, c_row_out ? mem_row_major : mem_col_major);
    } else {
        using namespace nvcuda::wmma;
        using LA = typename std::conditional<A_ROW, row_major, col_major>::type;
        using LB = typename std::conditional<B_COL, col_major, row_major>::type;
        fragment<accumulator, M, N, K, float> acc;
        load_matrix_sync(acc, C, ldc, c_row_in ? mem_row_major : mem_col_major);
        fragment<matrix_a, M, N, K, T, LA> fa;
        fragment<matrix_b, M, N, K, T, LB> fb;
        load_matrix_sync(fa, A, lda);
        load_matrix_sync(fb, B, ldb);
        mma_sync(acc, fa, fb, acc);
        store_matrix_sync(C, acc, ldc, c_row_out ? mem_row_major : mem_col_major);
    }
}

template <int M, int N, int K, class T, bool A_ROW, bool B_COL>
static void compare_mma(const char* tname, bool dyadic, unsigned pad, dim3 block, bool c_row_in, bool c_row_out) {
    // ldm: multiple of 8 (16-bit) / 4 (float) and 32-byte aligned tiles, as NVIDIA's wmma requires.
    const unsigned lda = (A_ROW ? K : M) + pad, ldb = (B_COL ? K : N) + pad, ldc = 32 + pad;  // C fits either layout
    const unsigned warps = block.x * block.y * block.z / 32;
    const unsigned a_tile = (A_ROW ? M : K) * lda, b_tile = (B_COL ? N : K) * ldb, c_tile = 32 * ldc;
    std::vector<T> ha(warps * a_tile), hb(warps * b_tile);
    std::vector<float> hc(warps * c_tile);
    auto rnd = [&](int span, float scale) { return dyadic ? (rand() % (2 * span + 1) - span) / scale : (rand() / (float)RAND_MAX * 2 - 1); };
    for (auto& v : ha) v = to_t<T>(rnd(8, 4.0f));
    for (auto& v : hb) v = to_t<T>(rnd(8, 8.0f));
    for (auto& v : hc) v = rnd(4, 2.0f);
    // CPU reference (double) and the scale of each sum, for the tolerance
    std::vector<float> expect(hc);
    std::vector<double> scale(hc.size(), 0.0);
    for (unsigned w = 0; w < warps; ++w)
        for (int i = 0; i < M; ++i)
            for (int n = 0; n < N; ++n) {
                const float c0 = hc[w * c_tile + (c_row_in ? i * ldc + n : n * ldc + i)];
                double s = c0, mag = fabs(c0);
                for (int k = 0; k < K; ++k) {
                    const double p = (double)to_f(ha[w * a_tile + (A_ROW ? i * lda + k : k * lda + i)]) *
                                     to_f(hb[w * b_tile + (B_COL ? n * ldb + k : k * ldb + n)]);
                    s += p;
                    mag += fabs(p);
                }
                const unsigned at = w * c_tile + (c_row_out ? i * ldc + n : n * ldc + i);
                expect[at] = (float)s;
                scale[at] = mag;
            }
    T *da, *db;
    float *dref, *dours;
    CK(cudaMalloc(&da, ha.size() * sizeof(T)));
    CK(cudaMalloc(&db, hb.size() * sizeof(T)));
    CK(cudaMalloc(&dref, hc.size() * 4));
    CK(cudaMalloc(&dours, hc.size() * 4));
    CK(cudaMemcpy(da, ha.data(), ha.size() * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size() * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dref, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dours, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
    tile_mma<false, M, N, K, T, A_ROW, B_COL><<<1, block>>>(da, db, dref, lda, ldb, ldc, a_tile, b_tile, c_tile, c_row_in, c_row_out);
    CK(cudaGetLastError());
    tile_mma<true, M, N, K, T, A_ROW, B_COL><<<1, block>>>(da, db, dours, lda, ldb, ldc, a_tile, b_tile, c_tile, c_row_in, c_row_out);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> ref(hc.size()), ours(hc.size());
    CK(cudaMemcpy(ref.data(), dref, ref.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ours.data(), dours, ours.size() * 4, cudaMemcpyDeviceToHost));
    double worst_nv = 0, worst_cpu = 0;
    bool ok = true;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d_nv = fabs((double)ours[i] - ref[i]), d_cpu = fabs((double)ours[i] - expect[i]);
        worst_nv = fmax(worst_nv, d_nv);
        worst_cpu = fmax(worst_cpu, d_cpu);
        if (dyadic) ok &= d_nv == 0 && d_cpu == 0 && ref[i] == expect[i];
        else ok &= d_nv <= 1e-3 * scale[i] + 1e-6 && d_cpu <= 1e-3 * scale[i] + 1e-6;
    }
    char what[256];
    snprintf(what, sizeof what, "wmma %dx%dx%d %s %s A %s B %s C %s->%s ldm+%u block (%u,%u,%u): max |ours-nvidia| %g, |ours-cpu| %g", M, N, K,
             tname, dyadic ? "dyadic" : "random", A_ROW ? "row" : "col", B_COL ? "col" : "row", c_row_in ? "row" : "col",
             c_row_out ? "row" : "col", pad, block.x, block.y, block.z, worst_nv, worst_cpu);
    check(ok, what);
    if (!ok || !dyadic) printf("%s\n", what);
    cudaFree(da); cudaFree(db); cudaFree(dref); cudaFree(dours);
}

template <class T>
static void compare_type(const char* tname) {
    for (unsigned pad : {0u, 8u}) {
        for (dim3 block : {dim3(32, 4), dim3(64, 2), dim3(16, 4), dim3(8, 4, 2)}) {
            compare_mma<16, 16, 16, T, true, true>(tname, true, pad, block, true, true);  // the MoE kernels' use
            compare_mma<8, 32, 16, T, true, true>(tname, true, pad, block, true, true);
            compare_mma<32, 8, 16, T, true, true>(tname, true, pad, block, true, true);
        }
        compare_mma<16, 16, 16, T, false, false>(tname, true, pad, dim3(32, 2), false, false);
        compare_mma<8, 32, 16, T, false, false>(tname, true, pad, dim3(32, 2), false, true);
        compare_mma<32, 8, 16, T, false, true>(tname, true, pad, dim3(32, 2), true, false);
        compare_mma<16, 16, 16, T, true, false>(tname, true, pad, dim3(32, 2), false, true);
    }
    compare_mma<16, 16, 16, T, true, true>(tname, false, 0, dim3(32, 4), true, true);
    compare_mma<8, 32, 16, T, true, true>(tname, false, 8, dim3(32, 4), true, true);
    compare_mma<32, 8, 16, T, true, true>(tname, false, 0, dim3(32, 4), true, true);
}

template <int NT>
__global__ void block_scan(const int* in, int* ex, int* inc, int* agg) {
    using Scan = candle_cub::BlockScan<int, NT>;
    __shared__ typename Scan::TempStorage storage;
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int e, i, a;
    Scan(storage).ExclusiveSum(in[t], e);
    Scan(storage).InclusiveSum(in[t], i, a);  // the storage is reusable right away
    ex[t] = e;
    inc[t] = i;
    agg[t] = a;
}

template <int NT>
static void compare_block_scan(dim3 block) {
    std::vector<int> h(NT), e(NT), i(NT), a(NT);
    for (auto& v : h) v = rand() % 100 - 20;
    int *din, *de, *di, *da;
    CK(cudaMalloc(&din, NT * 4)); CK(cudaMalloc(&de, NT * 4)); CK(cudaMalloc(&di, NT * 4)); CK(cudaMalloc(&da, NT * 4));
    CK(cudaMemcpy(din, h.data(), NT * 4, cudaMemcpyHostToDevice));
    block_scan<NT><<<1, block>>>(din, de, di, da);
    CK(cudaGetLastError());
    CK(cudaMemcpy(e.data(), de, NT * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(i.data(), di, NT * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(a.data(), da, NT * 4, cudaMemcpyDeviceToHost));
    int run = 0;
    bool ok = true;
    for (int t = 0; t < NT; ++t) { ok &= e[t] == run; run += h[t]; ok &= i[t] == run; }
    for (int t = 0; t < NT; ++t) ok &= a[t] == run;
    char what[100];
    snprintf(what, sizeof what, "candle_cub::BlockScan<int, %d> block (%u,%u)", NT, block.x, block.y);
    check(ok, what);
    cudaFree(din); cudaFree(de); cudaFree(di); cudaFree(da);
}

// As moe_utils does it: counts -> offsets + 1 on a stream, then offsets[0] = 0.
static void compare_thrust_scan(int n, bool wrapped) {
    std::vector<int> h(n + 1);
    for (auto& v : h) v = rand() % 50 - 10;
    int *din, *dout;
    CK(cudaMalloc(&din, (n + 1) * 4));
    CK(cudaMalloc(&dout, (n + 2) * 4));
    CK(cudaMemcpy(din, h.data(), (n + 1) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dout, 0xff, (n + 2) * 4));  // -1 everywhere: detects stray writes
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    bool ret_ok;
    if (wrapped) {
        candle_thrust::device_ptr<const int> first(din);
        candle_thrust::device_ptr<int> out(dout);
        ret_ok = candle_thrust::inclusive_scan(candle_thrust::hip::par.on(s), first, first + n, out + 1) == out + 1 + n;
    } else {
        ret_ok = candle_thrust::inclusive_scan(candle_thrust::hip::par.on(s), (const int*)din, (const int*)din + n, dout + 1) == dout + 1 + n;
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    std::vector<int> r(n + 2);
    CK(cudaMemcpy(r.data(), dout, (n + 2) * 4, cudaMemcpyDeviceToHost));
    int run = 0;
    bool ok = ret_ok && r[0] == -1 && r[n + 1] == -1;
    for (int t = 0; t < n; ++t) { run += h[t]; ok &= r[t + 1] == run; }
    char what[100];
    snprintf(what, sizeof what, "candle_thrust::inclusive_scan n=%d (%s)", n, wrapped ? "device_ptr" : "raw pointers");
    check(ok, what);
    CK(cudaStreamDestroy(s));
    cudaFree(din); cudaFree(dout);
}

int main() {
    srand(1234);
    compare_type<__half>("f16");
    compare_type<__nv_bfloat16>("bf16");
    compare_block_scan<1024>(dim3(1024));
    compare_block_scan<64>(dim3(16, 4));
    compare_block_scan<100>(dim3(100));
    for (int n : {0, 1, 7, 64, 255, 256, 1023, 1024, 1025, 5000, 70001}) compare_thrust_scan(n, n % 2 == 0);
    compare_thrust_scan(33, true);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
