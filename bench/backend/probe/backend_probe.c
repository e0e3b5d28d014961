/* backend_probe.c: an LD_PRELOAD interposer for the backend benchmark's investigation.
 *
 * It counts, per benchmark, the runtime calls each backend makes:
 *   ROCm binary (HIP entry points of the hip-on-cuda forwarder): hipModuleLaunchKernel,
 *     hipMemcpyAsync by direction, hipStreamSynchronize, hipDeviceSynchronize,
 *     hipEventSynchronize, hipEventRecord, hipStreamWaitEvent, hipMallocAsync/hipFreeAsync,
 *     hipMalloc/hipFree;
 *   CUDA binary (driver entry points cudarc links by name): cuLaunchKernel,
 *     cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuStreamSynchronize, cuEventRecord,
 *     cuStreamWaitEvent, cuMemAllocAsync/cuMemFreeAsync.
 * The benchmark program, run with BENCH_PROBE=1, calls backend_probe_mark(label) (found
 * with dlsym) after each benchmark's setup + warm-up and after its timed loop; each mark
 * prints the counts since the previous mark on stderr as `probe\tLABEL\tname=count...`.
 *
 * Build: gcc -O2 -shared -fPIC -o libbackend_probe.so backend_probe.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    C_HIP_LAUNCH, C_HIP_H2D, C_HIP_D2H, C_HIP_D2D, C_HIP_STREAM_SYNC,
    C_HIP_DEVICE_SYNC, C_HIP_EVENT_SYNC, C_HIP_MALLOC_ASYNC, C_HIP_FREE_ASYNC, C_HIP_MALLOC, C_HIP_FREE,
    C_HIP_EVENT_RECORD, C_HIP_STREAM_WAIT_EVENT,
    C_CU_LAUNCH, C_CU_H2D, C_CU_D2H, C_CU_STREAM_SYNC, C_CU_ALLOC_ASYNC, C_CU_FREE_ASYNC,
    C_CU_EVENT_RECORD, C_CU_STREAM_WAIT_EVENT,
    C_COUNT
};
static const char *NAMES[C_COUNT] = {
    "hip_launch", "hip_h2d", "hip_d2h", "hip_d2d", "hip_stream_sync",
    "hip_device_sync", "hip_event_sync", "hip_malloc_async", "hip_free_async", "hip_malloc", "hip_free",
    "hip_event_record", "hip_stream_wait_event",
    "cu_launch", "cu_h2d", "cu_d2h", "cu_stream_sync", "cu_alloc_async", "cu_free_async",
    "cu_event_record", "cu_stream_wait_event",
};
static atomic_ulong counts[C_COUNT];
static unsigned long last[C_COUNT];

static void *next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "backend_probe: %s not found\n", name);
        abort();
    }
    return p;
}
#define NEXT(type, name) static __typeof__(type) real; if (!real) real = (__typeof__(type))next(name)
#define COUNT(c) atomic_fetch_add_explicit(&counts[c], 1, memory_order_relaxed)

void backend_probe_mark(const char *label) {
    fprintf(stderr, "probe\t%s", label);
    for (int i = 0; i < C_COUNT; i++) {
        unsigned long v = atomic_load(&counts[i]);
        if (v - last[i])
            fprintf(stderr, "\t%s=%lu", NAMES[i], v - last[i]);
        last[i] = v;
    }
    fputc('\n', stderr);
}

/* ---- HIP (resolved in the forwarder, libamdhip64.so.5) ---- */
typedef int hip_err;
hip_err hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shm, void *stream, void **params, void **extra) {
    NEXT(hip_err (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **),
         "hipModuleLaunchKernel");
    COUNT(C_HIP_LAUNCH);
    return real(f, gx, gy, gz, bx, by, bz, shm, stream, params, extra);
}
hip_err hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, void *stream) {
    NEXT(hip_err (*)(void *, const void *, size_t, int, void *), "hipMemcpyAsync");
    COUNT(kind == 1 ? C_HIP_H2D : kind == 2 ? C_HIP_D2H : C_HIP_D2D);
    return real(dst, src, bytes, kind, stream);
}
hip_err hipStreamSynchronize(void *stream) {
    NEXT(hip_err (*)(void *), "hipStreamSynchronize");
    COUNT(C_HIP_STREAM_SYNC);
    return real(stream);
}
hip_err hipDeviceSynchronize(void) {
    NEXT(hip_err (*)(void), "hipDeviceSynchronize");
    COUNT(C_HIP_DEVICE_SYNC);
    return real();
}
hip_err hipEventSynchronize(void *event) {
    NEXT(hip_err (*)(void *), "hipEventSynchronize");
    COUNT(C_HIP_EVENT_SYNC);
    return real(event);
}
hip_err hipMallocAsync(void **p, size_t size, void *stream) {
    NEXT(hip_err (*)(void **, size_t, void *), "hipMallocAsync");
    COUNT(C_HIP_MALLOC_ASYNC);
    return real(p, size, stream);
}
hip_err hipFreeAsync(void *p, void *stream) {
    NEXT(hip_err (*)(void *, void *), "hipFreeAsync");
    COUNT(C_HIP_FREE_ASYNC);
    return real(p, stream);
}
hip_err hipMalloc(void **p, size_t size) {
    NEXT(hip_err (*)(void **, size_t), "hipMalloc");
    COUNT(C_HIP_MALLOC);
    return real(p, size);
}
hip_err hipFree(void *p) {
    NEXT(hip_err (*)(void *), "hipFree");
    COUNT(C_HIP_FREE);
    return real(p);
}

hip_err hipEventRecord(void *event, void *stream) {
    NEXT(hip_err (*)(void *, void *), "hipEventRecord");
    COUNT(C_HIP_EVENT_RECORD);
    return real(event, stream);
}
hip_err hipStreamWaitEvent(void *stream, void *event, unsigned flags) {
    NEXT(hip_err (*)(void *, void *, unsigned), "hipStreamWaitEvent");
    COUNT(C_HIP_STREAM_WAIT_EVENT);
    return real(stream, event, flags);
}

/* ---- CUDA driver (linked by name by the stock binary; the forwarder loads its own with dlopen) ---- */
typedef int cu_res;
typedef unsigned long long cu_ptr;
cu_res cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned shm, void *stream, void **params, void **extra) {
    NEXT(cu_res (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **),
         "cuLaunchKernel");
    COUNT(C_CU_LAUNCH);
    return real(f, gx, gy, gz, bx, by, bz, shm, stream, params, extra);
}
cu_res cuMemcpyHtoDAsync_v2(cu_ptr dst, const void *src, size_t bytes, void *stream) {
    NEXT(cu_res (*)(cu_ptr, const void *, size_t, void *), "cuMemcpyHtoDAsync_v2");
    COUNT(C_CU_H2D);
    return real(dst, src, bytes, stream);
}
cu_res cuMemcpyDtoHAsync_v2(void *dst, cu_ptr src, size_t bytes, void *stream) {
    NEXT(cu_res (*)(void *, cu_ptr, size_t, void *), "cuMemcpyDtoHAsync_v2");
    COUNT(C_CU_D2H);
    return real(dst, src, bytes, stream);
}
cu_res cuStreamSynchronize(void *stream) {
    NEXT(cu_res (*)(void *), "cuStreamSynchronize");
    COUNT(C_CU_STREAM_SYNC);
    return real(stream);
}
cu_res cuMemAllocAsync(cu_ptr *p, size_t size, void *stream) {
    NEXT(cu_res (*)(cu_ptr *, size_t, void *), "cuMemAllocAsync");
    COUNT(C_CU_ALLOC_ASYNC);
    return real(p, size, stream);
}
cu_res cuMemFreeAsync(cu_ptr p, void *stream) {
    NEXT(cu_res (*)(cu_ptr, void *), "cuMemFreeAsync");
    COUNT(C_CU_FREE_ASYNC);
    return real(p, stream);
}
cu_res cuEventRecord(void *event, void *stream) {
    NEXT(cu_res (*)(void *, void *), "cuEventRecord");
    COUNT(C_CU_EVENT_RECORD);
    return real(event, stream);
}
cu_res cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
    NEXT(cu_res (*)(void *, void *, unsigned), "cuStreamWaitEvent");
    COUNT(C_CU_STREAM_WAIT_EVENT);
    return real(stream, event, flags);
}
