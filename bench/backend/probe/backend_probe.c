/* backend_probe.c: an LD_PRELOAD interposer for the backend benchmark's investigation.
 *
 * For every runtime entry point each backend binary imports (the ROCm binary: the HIP
 * functions of the hip-on-cuda forwarder; the stock CUDA binary: the driver functions
 * cudarc links by name), it counts the calls and the wall time spent inside them.
 * The benchmark program, run with BENCH_PROBE=1, calls backend_probe_mark(label) (found with
 * dlsym) after each benchmark's setup + warm-up and after its timed loop; each mark prints,
 * on stderr, the wall time since the previous mark and, per function called since then, the
 * calls and nanoseconds inside it:
 *     probe<TAB>LABEL<TAB>wall_ns=W<TAB>name=calls:ns...
 * So per benchmark: wall time per iteration, time inside the runtime, and the rest (the
 * program's own host code: candle, cudarc or candle-rocm-hip).
 *
 * Timing uses CLOCK_MONOTONIC (vDSO, about 20-40 ns per call pair, charged to each call).
 * Build: gcc -O2 -shared -fPIC -o libbackend_probe.so backend_probe.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int st; /* hipError_t / CUresult */
typedef void *p;
typedef unsigned u;
typedef unsigned long long dptr; /* CUdeviceptr */

/* X(name, (parameters), (arguments)): every function returns a status (int). */
#define CALLS(X)                                                                                         \
    /* HIP runtime (hip-on-cuda's libamdhip64.so.5) */                                                   \
    X(hipModuleLaunchKernel, (p f, u gx, u gy, u gz, u bx, u by, u bz, u shm, p s, p *a, p *e),          \
      (f, gx, gy, gz, bx, by, bz, shm, s, a, e))                                                         \
    X(hipModuleGetFunction, (p * f, p m, const char *n), (f, m, n))                                      \
    X(hipSetDevice, (int d), (d))                                                                        \
    X(hipGetDevice, (int *d), (d))                                                                       \
    X(hipDeviceGetAttribute, (int *v, u a, int d), (v, a, d))                                            \
    X(hipMemcpyAsync, (p d, const void *s, size_t n, int k, p st_), (d, s, n, k, st_))                   \
    X(hipMemsetAsync, (p d, int v, size_t n, p s), (d, v, n, s))                                         \
    X(hipMallocAsync, (p * d, size_t n, p s), (d, n, s))                                                 \
    X(hipFreeAsync, (p d, p s), (d, s))                                                                  \
    X(hipMalloc, (p * d, size_t n), (d, n))                                                              \
    X(hipFree, (p d), (d))                                                                               \
    X(hipEventCreateWithFlags, (p * e, u f), (e, f))                                                     \
    X(hipEventDestroy, (p e), (e))                                                                       \
    X(hipEventRecord, (p e, p s), (e, s))                                                                \
    X(hipStreamWaitEvent, (p s, p e, u f), (s, e, f))                                                    \
    X(hipStreamSynchronize, (p s), (s))                                                                  \
    X(hipDeviceSynchronize, (void), ())                                                                  \
    X(hipStreamIsCapturing, (p s, int *c), (s, c))                                                       \
    X(rocblas_gemm_strided_batched_ex,                                                                   \
      (p h, int ta, int tb, int m, int n, int k, const void *al, const void *a, int at, int lda,         \
       long long sa, const void *b, int bt, int ldb, long long sb, const void *be, const void *c, int ct, \
       int ldc, long long sc, void *d, int dt, int ldd, long long sd, int bc, int ctype, int algo,        \
       int sol, u flags),                                                                                \
      (h, ta, tb, m, n, k, al, a, at, lda, sa, b, bt, ldb, sb, be, c, ct, ldc, sc, d, dt, ldd, sd, bc,   \
       ctype, algo, sol, flags))                                                                         \
    /* CUDA driver (linked by name by the stock binary) */                                              \
    X(cuLaunchKernel, (p f, u gx, u gy, u gz, u bx, u by, u bz, u shm, p s, p *a, p *e),                 \
      (f, gx, gy, gz, bx, by, bz, shm, s, a, e))                                                         \
    X(cuModuleGetFunction, (p * f, p m, const char *n), (f, m, n))                                       \
    X(cuCtxGetCurrent, (p * c), (c))                                                                     \
    X(cuCtxSetCurrent, (p c), (c))                                                                       \
    X(cuDeviceGetAttribute, (int *v, int a, int d), (v, a, d))                                           \
    X(cuMemcpyHtoDAsync_v2, (dptr d, const void *s, size_t n, p st_), (d, s, n, st_))                    \
    X(cuMemcpyDtoHAsync_v2, (void *d, dptr s, size_t n, p st_), (d, s, n, st_))                          \
    X(cuMemcpyDtoDAsync_v2, (dptr d, dptr s, size_t n, p st_), (d, s, n, st_))                           \
    X(cuMemsetD8Async, (dptr d, unsigned char v, size_t n, p s), (d, v, n, s))                           \
    X(cuMemAllocAsync, (dptr * d, size_t n, p s), (d, n, s))                                             \
    X(cuMemFreeAsync, (dptr d, p s), (d, s))                                                             \
    X(cuEventCreate, (p * e, u f), (e, f))                                                               \
    X(cuEventDestroy_v2, (p e), (e))                                                                     \
    X(cuEventRecord, (p e, p s), (e, s))                                                                 \
    X(cuStreamWaitEvent, (p s, p e, u f), (s, e, f))                                                     \
    X(cuStreamSynchronize, (p s), (s))                                                                   \
    X(cuStreamIsCapturing, (p s, int *c), (s, c))                                                        \
    X(cublasGemmStridedBatchedEx,                                                                        \
      (p h, int ta, int tb, int m, int n, int k, const void *al, const void *a, int at, int lda,         \
       long long sa, const void *b, int bt, int ldb, long long sb, const void *be, void *c, int ct,      \
       int ldc, long long sc, int bc, int ctype, int algo),                                              \
      (h, ta, tb, m, n, k, al, a, at, lda, sa, b, bt, ldb, sb, be, c, ct, ldc, sc, bc, ctype, algo))

#define ENUM(name, params, args) I_##name,
enum { CALLS(ENUM) I_COUNT };
#define NAME(name, params, args) #name,
static const char *NAMES[I_COUNT] = {CALLS(NAME)};

static atomic_ulong calls[I_COUNT], nanos[I_COUNT];
static unsigned long last_calls[I_COUNT], last_nanos[I_COUNT];
static uint64_t last_mark;

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "backend_probe: %s not found\n", name);
        abort();
    }
    return f;
}

void backend_probe_mark(const char *label) {
    uint64_t t = now();
    fprintf(stderr, "probe\t%s\twall_ns=%lu", label, (unsigned long)(last_mark ? t - last_mark : 0));
    for (int i = 0; i < I_COUNT; i++) {
        unsigned long c = atomic_load(&calls[i]), n = atomic_load(&nanos[i]);
        if (c - last_calls[i])
            fprintf(stderr, "\t%s=%lu:%lu", NAMES[i], c - last_calls[i], n - last_nanos[i]);
        last_calls[i] = c;
        last_nanos[i] = n;
    }
    fputc('\n', stderr);
    last_mark = now();
}

#define DEFINE(name, params, args)                                                   \
    st name params {                                                                 \
        static st(*real) params;                                                     \
        if (!real) real = (st(*) params)next(#name);                                 \
        uint64_t t0 = now();                                                         \
        st r = real args;                                                            \
        atomic_fetch_add_explicit(&nanos[I_##name], now() - t0, memory_order_relaxed); \
        atomic_fetch_add_explicit(&calls[I_##name], 1, memory_order_relaxed);        \
        return r;                                                                    \
    }
CALLS(DEFINE)
