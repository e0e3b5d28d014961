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
 * With PROBE_AT_EXIT=1 it also prints, when the process exits, the totals since it started
 * (bench/examples/probe-examples.sh: real programs, which call no mark):
 *     probe<TAB>exit<TAB>wall_ns=W<TAB>name=calls:ns...
 * The counters are never reset (a mark prints the differences), so these are cumulative.
 *
 * hipMemcpyAsync is counted per direction (its kind: hipMemcpyAsync_HtoD, _DtoH, _DtoD,
 * _HtoH, _Default), to line up with cuMemcpy{HtoD,DtoH,DtoD}Async_v2.
 * cudaLaunchKernel (CUDA runtime) is the launch of the kernels' extern "C" launchers
 * (quantized matmul-vector, ...): the stock binary links them against the shared libcudart,
 * so it is counted there; on the ROCm side the same launchers (nvcc-built by
 * candle-rocm-build for hip-on-cuda) and cudart_static are linked into the binary, resolved
 * at link time: those launches are not seen, on that side only.
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
#include <string.h>
#include <time.h>

typedef int st; /* hipError_t / CUresult */
typedef void *p;
typedef unsigned u;
typedef unsigned long long dptr; /* CUdeviceptr */
typedef struct {
    unsigned x, y, z;
} dim3; /* CUDA's dim3, passed by value */

/* X(name, (parameters), (arguments)): every function returns a status (int). */
#define CALLS(X)                                                                                         \
    /* HIP runtime (hip-on-cuda's libamdhip64.so.5) */                                                   \
    X(hipModuleLaunchKernel, (p f, u gx, u gy, u gz, u bx, u by, u bz, u shm, p s, p *a, p *e),          \
      (f, gx, gy, gz, bx, by, bz, shm, s, a, e))                                                         \
    X(hipModuleGetFunction, (p * f, p m, const char *n), (f, m, n))                                      \
    X(hipSetDevice, (int d), (d))                                                                        \
    X(hipGetDevice, (int *d), (d))                                                                       \
    X(hipDeviceGetAttribute, (int *v, u a, int d), (v, a, d))                                            \
    X(hipMemcpyHtoDAsync, (p d, const void *s, size_t n, p st_), (d, s, n, st_))                        \
    X(hipMemcpyDtoHAsync, (void *d, p s, size_t n, p st_), (d, s, n, st_))                              \
    X(hipMemcpyDtoDAsync, (p d, p s, size_t n, p st_), (d, s, n, st_))                                  \
    X(hipMemcpyPeerAsync, (p d, int dd, const void *s, int sd, size_t n, p st_), (d, dd, s, sd, n, st_)) \
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
    X(hipEventSynchronize, (p e), (e))                                                                   \
    X(hipModuleLoadData, (p * m, const void *i), (m, i))                                                 \
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
    X(cuMemAlloc_v2, (dptr * d, size_t n), (d, n))                                                       \
    X(cuMemFree_v2, (dptr d), (d))                                                                       \
    X(cuMemcpyPeerAsync, (dptr d, p dc, dptr s, p sc, size_t n, p st_), (d, dc, s, sc, n, st_))          \
    X(cuEventCreate, (p * e, u f), (e, f))                                                               \
    X(cuEventDestroy_v2, (p e), (e))                                                                     \
    X(cuEventRecord, (p e, p s), (e, s))                                                                 \
    X(cuStreamWaitEvent, (p s, p e, u f), (s, e, f))                                                     \
    X(cuStreamSynchronize, (p s), (s))                                                                   \
    X(cuCtxSynchronize, (void), ())                                                                      \
    X(cuEventSynchronize, (p e), (e))                                                                    \
    X(cuModuleLoadData, (p * m, const void *i), (m, i))                                                  \
    X(cuStreamIsCapturing, (p s, int *c), (s, c))                                                        \
    X(cublasGemmStridedBatchedEx,                                                                        \
      (p h, int ta, int tb, int m, int n, int k, const void *al, const void *a, int at, int lda,         \
       long long sa, const void *b, int bt, int ldb, long long sb, const void *be, void *c, int ct,      \
       int ldc, long long sc, int bc, int ctype, int algo),                                              \
      (h, ta, tb, m, n, k, al, a, at, lda, sa, b, bt, ldb, sb, be, c, ct, ldc, sc, bc, ctype, algo))     \
    /* CUDA runtime (the stock binary's kernel launchers, through the shared libcudart) */               \
    X(cudaLaunchKernel, (const void *f, dim3 g, dim3 b, void **a, size_t shm, p s), (f, g, b, a, shm, s))

/* hipMemcpyAsync's counters, one per kind (hipMemcpyKind: 0 HostToHost .. 4 Default) */
#define MEMCPY_KINDS(Y) Y(HtoH) Y(HtoD) Y(DtoH) Y(DtoD) Y(Default)

#define ENUM(name, params, args) I_##name,
#define KIND_ENUM(kind) I_hipMemcpyAsync_##kind,
enum { CALLS(ENUM) MEMCPY_KINDS(KIND_ENUM) I_COUNT };
#define NAME(name, params, args) #name,
#define KIND_NAME(kind) "hipMemcpyAsync_" #kind,
static const char *NAMES[I_COUNT] = {CALLS(NAME) MEMCPY_KINDS(KIND_NAME)};

static atomic_ulong calls[I_COUNT], nanos[I_COUNT];
static unsigned long last_calls[I_COUNT], last_nanos[I_COUNT];
static uint64_t last_mark, start;

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

static void count(int i, uint64_t t0) {
    atomic_fetch_add_explicit(&nanos[i], now() - t0, memory_order_relaxed);
    atomic_fetch_add_explicit(&calls[i], 1, memory_order_relaxed);
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

#define DEFINE(name, params, args)                   \
    st name params {                                 \
        static st(*real) params;                     \
        if (!real) real = (st(*) params)next(#name); \
        uint64_t t0 = now();                         \
        st r = real args;                            \
        count(I_##name, t0);                         \
        return r;                                    \
    }
CALLS(DEFINE)

st hipMemcpyAsync(p d, const void *s, size_t n, int k, p st_) {
    static st (*real)(p, const void *, size_t, int, p);
    if (!real) real = (st(*)(p, const void *, size_t, int, p))next("hipMemcpyAsync");
    uint64_t t0 = now();
    st r = real(d, s, n, k, st_);
    count(I_hipMemcpyAsync_HtoH + (k >= 0 && k <= 4 ? k : 4), t0);
    return r;
}

/* PROBE_AT_EXIT=1: the totals since the process started, when it exits */
__attribute__((constructor)) static void probe_start(void) { start = now(); }

__attribute__((destructor)) static void probe_exit(void) {
    const char *e = getenv("PROBE_AT_EXIT");
    if (!e || strcmp(e, "1")) return;
    fprintf(stderr, "probe\texit\twall_ns=%lu", (unsigned long)(now() - start));
    for (int i = 0; i < I_COUNT; i++) {
        unsigned long c = atomic_load(&calls[i]), n = atomic_load(&nanos[i]);
        if (c) fprintf(stderr, "\t%s=%lu:%lu", NAMES[i], c, n);
    }
    fputc('\n', stderr);
}
