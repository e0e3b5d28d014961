// Runs translator/compat/candle_hip_{wmma,cub,thrust}.h on the CPU: every GPU
// thread of a block is a std::thread, __syncthreads a block barrier, and
// __shfl(v, lane, 32) an exchange within each logical 32-lane warp. Checks
// candle_wmma against a CPU matrix product (every shape, A/B type, layout,
// ldm, block shape), BlockScan and inclusive_scan against CPU prefix sums.
// No GPU needed. From the repo root:
//   g++ -std=c++20 -O1 -pthread -I translator/compat -o /tmp/compat_emu \
//       tests/compat_collective/cpu_emulation.cpp && /tmp/compat_emu
// Prints "N passed, M failed"; exits non-zero on failure.
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

// ---- the emulated device ---------------------------------------------------
#define CANDLE_COMPAT_NO_HIP_INCLUDE 1
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static  // one block runs at a time: a static is the block's shared memory

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
thread_local dim3 threadIdx, blockDim, blockIdx;
typedef int hipStream_t;

static std::barrier<>* g_block_barrier;
static std::vector<std::unique_ptr<std::barrier<>>> g_warp_barriers;
static float g_exchange[32][32];  // [warp][lane]

inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }

inline unsigned emu_linear() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

// Width-32 shuffle within the calling thread's logical warp.
inline float __shfl(float v, int src_lane, int width) {
    if (width != 32) { fprintf(stderr, "width %d\n", width); abort(); }
    const unsigned lin = emu_linear(), warp = lin / 32, lane = lin % 32;
    g_exchange[warp][lane] = v;
    g_warp_barriers[warp]->arrive_and_wait();
    const float r = g_exchange[warp][static_cast<unsigned>(src_lane) % 32];
    g_warp_barriers[warp]->arrive_and_wait();
    return r;
}

// What candle_hip_wmma.h's row and staging helpers (acc16_rows, lds_copy16, wmma_acc_to_a)
// name: the xor shuffle, the 16-byte vector, the wavefront barrier and fences (a logical
// warp's barrier here).
inline float __shfl_xor(float v, int lane_mask, int width) { return __shfl(v, static_cast<int>(emu_linear() % 32) ^ lane_mask, width); }
struct uint4 {
    unsigned x, y, z, w;
};
inline void emu_wave_barrier() { g_warp_barriers[emu_linear() / 32]->arrive_and_wait(); }
#define __builtin_amdgcn_wave_barrier() emu_wave_barrier()
#define __builtin_amdgcn_fence(order, scope) std::atomic_thread_fence(std::memory_order_seq_cst)

// Runs fn on every thread of every block (blocks one after the other).
static void emu_launch(dim3 grid, dim3 block, const std::function<void()>& fn) {
    const unsigned n = block.x * block.y * block.z;
    std::barrier<> block_barrier(n);
    g_block_barrier = &block_barrier;
    g_warp_barriers.clear();
    for (unsigned w = 0; w < (n + 31) / 32; ++w) g_warp_barriers.emplace_back(new std::barrier<>(n - 32 * w < 32 ? n - 32 * w : 32));
    for (unsigned b = 0; b < grid.x * grid.y * grid.z; ++b) {
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < n; ++t)
            threads.emplace_back([&, t, b] {
                blockDim = block;
                threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                blockIdx = dim3(b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y));
                fn();
            });
        for (auto& th : threads) th.join();
    }
}
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) emu_launch(grid, block, [=] { kernel(__VA_ARGS__); })

// 2-byte float types (exact for normal numbers and zero, round to nearest even).
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
struct __half { uint16_t bits; };
inline float __half2float(__half h) {
    const uint32_t s = (h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1f, m = h.bits & 0x3ff;
    if (e == 0 && m == 0) return u2f(s);
    if (e == 0 || e == 31) abort();  // not needed by the tests
    return u2f(s | ((e - 15 + 127) << 23) | (m << 13));
}
inline __half __float2half(float f) {
    const uint32_t u = f2u(f), s = (u >> 16) & 0x8000u;
    const int e = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
    if ((u & 0x7fffffffu) == 0) return __half{static_cast<uint16_t>(s)};
    if (e <= 0 || e >= 31) abort();
    uint32_t m = u & 0x7fffffu, h = (static_cast<uint32_t>(e) << 10) | (m >> 13);
    const uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
    return __half{static_cast<uint16_t>(s | h)};
}
struct candle_bf16 {
    uint16_t bits;
    candle_bf16() = default;
    candle_bf16(float f) { const uint32_t u = f2u(f); bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); }
    operator float() const { return u2f(static_cast<uint32_t>(bits) << 16); }
};

#include "candle_hip_wmma.h"
#include "candle_hip_cub.h"
#include "candle_hip_thrust.h"

// ---- checks ----------------------------------------------------------------
static int passed = 0, failed = 0;
static void check(bool ok, const char* what) {
    if (ok) ++passed; else { ++failed; printf("FAILED: %s\n", what); }
}

template <class T> static T make(float v);
template <> __half make<__half>(float v) { return __float2half(v); }
template <> candle_bf16 make<candle_bf16>(float v) { return candle_bf16(v); }
static float val(__half h) { return __half2float(h); }
static float val(candle_bf16 b) { return static_cast<float>(b); }

// Each warp w of the block computes tile w: D_w = A_w * B_w + C_w, C loaded
// with layout lc_in and stored with lc_out; tile w starts at w * *_tile.
template <int M, int N, int K, class T, class LA, class LB>
static void tile_kernel(const T* a, const T* b, float* c, unsigned lda, unsigned ldb, unsigned ldc, unsigned a_tile, unsigned b_tile,
                        unsigned c_tile, candle_wmma::layout_t lc_in, candle_wmma::layout_t lc_out) {
    using namespace candle_wmma;
    const unsigned w = emu_linear() / 32;
    fragment<accumulator, M, N, K, float> acc;
    fill_fragment(acc, 0.0f);
    wmma_load_matrix(acc, c + w * c_tile, ldc, lc_in);
    fragment<matrix_a, M, N, K, T, LA> fa;
    fragment<matrix_b, M, N, K, T, LB> fb;
    wmma_load_matrix(fa, a + w * a_tile, lda);
    wmma_load_matrix(fb, b + w * b_tile, ldb);
    wmma_mma(acc, fa, fb, acc);
    wmma_store_matrix(c + w * c_tile, acc, ldc, lc_out);
}

template <int M, int N, int K, class T, class LA, class LB>
static void test_tile(const char* tname, int pad, dim3 block, candle_wmma::layout_t lc_in, candle_wmma::layout_t lc_out) {
    using namespace candle_wmma;
    constexpr bool a_row = std::is_same<LA, row_major>::value, b_col = std::is_same<LB, col_major>::value;
    const unsigned lda = (a_row ? K : M) + pad, ldb = (b_col ? K : N) + pad, ldc = 32 + pad;  // C fits either layout
    const unsigned warps = block.x * block.y * block.z / 32;
    const unsigned a_tile = (a_row ? M : K) * lda, b_tile = (b_col ? N : K) * ldb, c_tile = 32 * ldc;
    std::vector<T> A(warps * a_tile), B(warps * b_tile);
    std::vector<float> C(warps * c_tile);
    for (auto& v : A) v = make<T>((rand() % 17 - 8) / 4.0f);
    for (auto& v : B) v = make<T>((rand() % 17 - 8) / 8.0f);
    for (auto& v : C) v = (rand() % 9 - 4) / 2.0f;
    std::vector<float> expect(C);  // entries the store does not write stay as they are
    for (unsigned w = 0; w < warps; ++w)
        for (int i = 0; i < M; ++i)
            for (int n = 0; n < N; ++n) {
                double s = C[w * c_tile + (lc_in == mem_row_major ? i * ldc + n : n * ldc + i)];
                for (int k = 0; k < K; ++k) {
                    const float av = val(A[w * a_tile + (a_row ? i * lda + k : k * lda + i)]);
                    const float bv = val(B[w * b_tile + (b_col ? n * ldb + k : k * ldb + n)]);
                    s += static_cast<double>(av) * bv;
                }
                expect[w * c_tile + (lc_out == mem_row_major ? i * ldc + n : n * ldc + i)] = static_cast<float>(s);
            }
    const T *pa = A.data(), *pb = B.data();
    float* pc = C.data();
    emu_launch(dim3(1), block, [=] { tile_kernel<M, N, K, T, LA, LB>(pa, pb, pc, lda, ldb, ldc, a_tile, b_tile, c_tile, lc_in, lc_out); });
    char what[200];
    snprintf(what, sizeof what, "wmma %dx%dx%d %s A %s B %s C %s->%s pad %d block (%u,%u,%u)", M, N, K, tname, a_row ? "row" : "col",
             b_col ? "col" : "row", lc_in == mem_row_major ? "row" : "col", lc_out == mem_row_major ? "row" : "col", pad, block.x, block.y, block.z);
    check(C == expect, what);  // small dyadic inputs: every sum is exact
}

template <class T>
static void test_type(const char* tname) {
    using namespace candle_wmma;
    for (int pad : {0, 8, 3}) {
        for (dim3 block : {dim3(32, 4), dim3(64, 2), dim3(128), dim3(16, 4), dim3(8, 4, 4)}) {
            test_tile<16, 16, 16, T, row_major, col_major>(tname, pad, block, mem_row_major, mem_row_major);
            test_tile<8, 32, 16, T, row_major, col_major>(tname, pad, block, mem_row_major, mem_row_major);
            test_tile<32, 8, 16, T, row_major, col_major>(tname, pad, block, mem_row_major, mem_row_major);
        }
        test_tile<16, 16, 16, T, col_major, row_major>(tname, pad, dim3(32, 2), mem_col_major, mem_col_major);
        test_tile<8, 32, 16, T, col_major, row_major>(tname, pad, dim3(32, 2), mem_col_major, mem_col_major);
        test_tile<32, 8, 16, T, col_major, row_major>(tname, pad, dim3(32, 2), mem_col_major, mem_col_major);
        test_tile<16, 16, 16, T, row_major, col_major>(tname, pad, dim3(32, 1), mem_col_major, mem_row_major);
        test_tile<8, 32, 16, T, row_major, col_major>(tname, pad, dim3(32, 1), mem_row_major, mem_col_major);
    }
}

template <class T, int NT>
static void block_scan_kernel(const T* in, T* ex, T* inc, T* agg) {
    using Scan = candle_cub::BlockScan<T, NT>;
    __shared__ typename Scan::TempStorage storage;
    const unsigned t = emu_linear();
    T e, i, a;
    Scan(storage).ExclusiveSum(in[t], e);
    Scan(storage).InclusiveSum(in[t], i, a);
    ex[t] = e;
    inc[t] = i;
    agg[t] = a;
}

template <int NT>
static void test_block_scan(dim3 block) {
    std::vector<int32_t> in(NT), ex(NT), inc(NT), agg(NT);
    for (auto& v : in) v = rand() % 100 - 20;
    const int32_t* pin = in.data();
    int32_t *pe = ex.data(), *pi = inc.data(), *pa = agg.data();
    emu_launch(dim3(1), block, [=] { block_scan_kernel<int32_t, NT>(pin, pe, pi, pa); });
    int32_t run = 0;
    bool ok = true;
    for (int t = 0; t < NT; ++t) { ok &= ex[t] == run; run += in[t]; ok &= inc[t] == run; }
    for (int t = 0; t < NT; ++t) ok &= agg[t] == run;
    char what[100];
    snprintf(what, sizeof what, "BlockScan<int32_t, %d> block (%u,%u)", NT, block.x, block.y);
    check(ok, what);
}

static void test_thrust_scan(long n, bool wrapped) {
    std::vector<int32_t> in(n + 1), out(n + 2, -7);
    for (auto& v : in) v = rand() % 50 - 10;
    const hipStream_t stream = 3;
    if (wrapped) {
        candle_thrust::device_ptr<const int32_t> first(in.data());
        candle_thrust::device_ptr<int32_t> o(out.data());
        auto end = candle_thrust::inclusive_scan(candle_thrust::hip::par.on(stream), first, first + n, o + 1);
        check(end - o == n + 1, "inclusive_scan returns out + n");
    } else {
        int32_t* end = candle_thrust::inclusive_scan(candle_thrust::hip::par.on(stream), in.data(), in.data() + n, out.data() + 1);
        check(end == out.data() + 1 + n, "inclusive_scan returns out + n");
    }
    int32_t run = 0;
    bool ok = out[0] == -7 && out[n + 1] == -7;  // nothing written outside
    for (long t = 0; t < n; ++t) { run += in[t]; ok &= out[t + 1] == run; }
    char what[100];
    snprintf(what, sizeof what, "candle_thrust::inclusive_scan n=%ld (%s)", n, wrapped ? "device_ptr" : "raw pointers");
    check(ok, what);
}

int main() {
    srand(4321);
    test_type<__half>("f16");
    test_type<candle_bf16>("bf16");
    test_block_scan<1024>(dim3(1024));
    test_block_scan<64>(dim3(16, 4));
    test_block_scan<100>(dim3(100));
    test_block_scan<1>(dim3(1));
    for (long n : {0L, 1L, 7L, 255L, 256L, 1023L, 1024L, 1025L, 5000L, 70001L}) test_thrust_scan(n, n % 2 == 0);
    test_thrust_scan(33, true);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
