// hip_cpu_device.h - the HIP device environment on the CPU, as a 64-lane
// (CDNA) wavefront machine: every GPU thread of a block is a std::thread,
// a wavefront is 64 consecutive threads of the block (linear thread id / 64),
// __syncthreads is a block barrier and the cross-lane operations (__shfl*,
// and the MFMA instructions of mfma_cpu.h) are wave-wide exchanges through a
// per-wavefront scratch area between two barriers of that wavefront's lanes.
// Blocks of a grid run one after another.
//
// It stands in for <hip/hip_runtime.h> and <hip/hip_fp16.h> (include/hip/
// redirects both here), so the generated kernels and candle_hip_compat.h
// compile unchanged with g++. It defines:
//   - the qualifiers (__device__, __global__, __host__, __forceinline__,
//     __launch_bounds__, __shared__) and __HIP_DEVICE_COMPILE__ (this is the
//     device pass: NO_DEVICE_CODE traps, candle_dp4a uses the gfx builtin);
//   - threadIdx / blockIdx / blockDim / gridDim, dim3, __syncthreads,
//     __shfl / __shfl_xor / __shfl_up / __shfl_down (HIP's lane arithmetic,
//     widths 1..64, over the 64-lane wavefront), __builtin_amdgcn_readlane and _mov_dpp, the atomics the compat
//     headers name, __popc;
//   - __float_as_uint and the other bit casts, rsqrtf, normcdff / normcdf, HIP's
//     integer min / max;
//   - __half / __half2 (IEEE binary16, every operation rounded to nearest
//     even, subnormals and overflow included) and the intrinsics on them;
//   - int2/int4/uint4/float2/float4/uint2/char4 and make_* (8/16-byte int2/int4/uint4
//     copies count misaligned addresses: emu_misaligned_vector_accesses);
//   - the host API names the launchers use (hipStream_t, hipGetDevice,
//     hipFuncSetAttribute, hipMemsetAsync, hipMallocAsync, hipFreeAsync, hipGetLastError,
//     hipLaunchKernelGGL) and emu_launch_kernel, which the
//     launch syntax `k<<<grid, block, shmem, stream>>>(args)` is rewritten to
//     (run.sh does that textual rewrite on a copy of the launcher files).
//
// Dynamic shared memory: `extern __shared__ int name[];` becomes an extern
// array; declare each such name before including the kernels with
// EMU_DYNAMIC_SHARED(type, name) so that all of them name the one buffer
// emu_dynamic_shared, which emu_launch fills with a poison pattern before
// every block and whose guard bytes past the launch's size it checks after.
// A non-extern __shared__ variable would be per-lane here: the only one in
// the MMQ code is in mul_mat_q_stream_k_fixup, which AMD never launches
// (use_stream_k is false for AMD cc), so it is compiled but not run here.
//
// emu_run_in_child runs a function in a forked child and captures what it
// prints, for tests that a failure stops loudly.
//
// Failures (divergent wave operations, a shuffle reading an exited lane, an
// out-of-bounds shared write, a deadlock) print a message and abort.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "../dpp16.h"

#ifndef __HIP_DEVICE_COMPILE__
#define __HIP_DEVICE_COMPILE__ 1
#endif
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__

// ---------------------------------------------------------------------------
// Failure reporting
// ---------------------------------------------------------------------------
[[noreturn]] inline void emu_fatal(const char* what) {
    fprintf(stderr, "hip_cpu_device: %s\n", what);
    fflush(stdout);
    fflush(stderr);
    abort();
}

// Naming for a test compiled once per configuration (-DEMU_CFG=name):
// EMU_CAT(EMU_CFG, _suffix) pastes, EMU_STR(EMU_CFG) is the name as a string.
#define EMU_CAT2(a, b) a##b
#define EMU_CAT(a, b) EMU_CAT2(a, b)
#define EMU_STR2(a) #a
#define EMU_STR(a) EMU_STR2(a)

// Runs fn in a forked child with its stdout and stderr captured into *out;
// returns the signal that ended the child (0 if it exited). For the tests
// that a failure stops loudly (an abort, a trap) with its message.
inline int emu_run_in_child(const std::function<void()>& fn, std::string* out) {
    fflush(stdout);
    fflush(stderr);
    int fds[2];
    if (pipe(fds) != 0) emu_fatal("pipe");
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        fn();
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    out->clear();
    char buf[256];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out->append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

// ---------------------------------------------------------------------------
// Barrier for a set of threads that may shrink (threads that return from the
// kernel drop out, as exited waves do on the GPU). State packs the expected
// count (high 32 bits) and the arrived count (low 32 bits).
// ---------------------------------------------------------------------------
inline std::atomic<uint64_t> emu_progress{0};  // phases completed, for the watchdog

class emu_barrier {
    std::atomic<uint64_t> state_{0};
    std::atomic<uint32_t> generation_{0};

    void complete_phase() {
        generation_.fetch_add(1, std::memory_order_acq_rel);
        generation_.notify_all();
        emu_progress.fetch_add(1, std::memory_order_relaxed);
    }

public:
    void reset(uint32_t n) { state_.store(static_cast<uint64_t>(n) << 32); }

    void arrive_and_wait() {
        const uint32_t gen = generation_.load(std::memory_order_acquire);
        uint64_t s = state_.load(std::memory_order_acquire);
        for (;;) {
            const uint32_t arrived = static_cast<uint32_t>(s), expected = static_cast<uint32_t>(s >> 32);
            if (arrived + 1 == expected) {
                if (state_.compare_exchange_weak(s, static_cast<uint64_t>(expected) << 32, std::memory_order_acq_rel)) {
                    complete_phase();
                    return;
                }
            } else if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
                break;
            }
        }
        while (generation_.load(std::memory_order_acquire) == gen) generation_.wait(gen, std::memory_order_acquire);
    }

    void arrive_and_drop() {
        uint64_t s = state_.load(std::memory_order_acquire);
        for (;;) {
            const uint32_t arrived = static_cast<uint32_t>(s), expected = static_cast<uint32_t>(s >> 32) - 1;
            const bool completes = expected > 0 && arrived == expected;
            const uint64_t next = static_cast<uint64_t>(expected) << 32 | (completes ? 0u : arrived);
            if (state_.compare_exchange_weak(s, next, std::memory_order_acq_rel)) {
                if (completes) complete_phase();
                return;
            }
        }
    }
};

// ---------------------------------------------------------------------------
// Built-in variables and the block / wavefront state
// ---------------------------------------------------------------------------
struct emu_uint3 {
    uint32_t x, y, z;
};
struct dim3 {
    uint32_t x, y, z;
    constexpr dim3(uint32_t x_ = 1, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local emu_uint3 threadIdx, blockIdx, blockDim, gridDim;

constexpr int EMU_WAVE = 64;  // CDNA wavefront

struct emu_wave {
    emu_barrier bar;
    std::atomic<uint64_t> exited{0};  // lanes that returned from the kernel
    int lanes = 0;                    // lanes in this wavefront (64 but for a partial last one)
    alignas(16) unsigned char slot[EMU_WAVE][16];  // shuffle values
    uint64_t opa[EMU_WAVE], opb[EMU_WAVE];          // MFMA A and B operands
    const char* tag[EMU_WAVE];                      // which wave operation each lane is in
};

struct emu_block_state {
    emu_barrier bar;
    std::vector<std::unique_ptr<emu_wave>> waves;
};
inline emu_block_state* emu_block = nullptr;

inline thread_local int emu_tl_lane = 0, emu_tl_wave = 0;
inline int emu_lane_id() { return emu_tl_lane; }
inline emu_wave& emu_cur_wave() { return *emu_block->waves[emu_tl_wave]; }

inline void __syncthreads() { emu_block->bar.arrive_and_wait(); }

// Every active lane of the calling wavefront is between the two barriers of a
// wave operation: check that all of them are in the same one (no divergence).
inline void emu_check_converged(const emu_wave& w, const char* op, bool need_full_wave) {
    const uint64_t exited = w.exited.load(std::memory_order_acquire);
    if (need_full_wave && (exited != 0 || w.lanes != EMU_WAVE)) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s needs all 64 lanes of the wavefront active (EXEC all ones)", op);
        emu_fatal(msg);
    }
    for (int l = 0; l < w.lanes; ++l) {
        if ((exited >> l) & 1) continue;
        if (w.tag[l] != op) {
            char msg[200];
            snprintf(msg, sizeof msg, "divergent wave operation: lane %d is in %s while lane %d is in %s", l,
                     w.tag[l] ? w.tag[l] : "(none)", emu_lane_id(), op);
            emu_fatal(msg);
        }
    }
}

// ---------------------------------------------------------------------------
// Shuffles: HIP's definitions (amd_warp_functions.h) over ds_bpermute, whose
// lane index is taken modulo 64. Any trivially copyable type of up to 8 bytes
// (HIP moves 8-byte types as two 32-bit halves through the same index).
// ---------------------------------------------------------------------------
inline void emu_check_width(int width) {
    if (width < 1 || width > EMU_WAVE || (width & (width - 1)) != 0) {
        char msg[80];
        snprintf(msg, sizeof msg, "shuffle width %d is not a power of two in 1..64", width);
        emu_fatal(msg);
    }
}

template <class T>
inline T emu_wave_exchange(T v, int src, const char* op) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffle of an unsupported type");
    emu_wave& w = emu_cur_wave();
    const int lane = emu_lane_id();
    memcpy(w.slot[lane], &v, sizeof(T));
    w.tag[lane] = op;
    w.bar.arrive_and_wait();
    emu_check_converged(w, op, false);
    src &= EMU_WAVE - 1;
    if (src >= w.lanes || ((w.exited.load() >> src) & 1)) {
        char msg[120];
        snprintf(msg, sizeof msg, "%s: lane %d reads lane %d, which is not active", op, lane, src);
        emu_fatal(msg);
    }
    T r;
    memcpy(&r, w.slot[src], sizeof(T));
    w.bar.arrive_and_wait();
    return r;
}

// v_readlane_b32 (__builtin_amdgcn_readlane): lane `src`'s 32-bit register, the same for
// every lane. The hardware takes the lane select from an SGPR or a constant (the compiler
// makes a non-uniform one a loop over its values: each lane then gets its own selection's,
// which is what this gives); reading an inactive lane is an error here.
inline int emu_readlane(int v, int src) { return emu_wave_exchange(v, src, "__builtin_amdgcn_readlane"); }
#define __builtin_amdgcn_readlane(v, lane) emu_readlane((v), (lane))

// v_mov_b32 with DPP (__builtin_amdgcn_mov_dpp): lane l reads the lane its DPP_CTRL names
// within l's row of 16 lanes (../dpp16.h). A source past the row gives 0 with bound_ctrl,
// else the lane's own value here (the instruction leaves the lane unwritten). Controls
// dpp16.h does not list, and row or bank masks other than 0xf (all rows and banks
// written), are errors here.
inline int emu_mov_dpp(int v, int ctrl, int row_mask, int bank_mask, bool bound_ctrl) {
    if (row_mask != 0xf || bank_mask != 0xf) emu_fatal("__builtin_amdgcn_mov_dpp: row/bank masks other than 0xf are not emulated");
    const int lane = emu_lane_id(), src = candle_dpp16_source(lane, ctrl);
    if (src == kDpp16NotEmulated) {
        char msg[80];
        snprintf(msg, sizeof msg, "__builtin_amdgcn_mov_dpp: DPP_CTRL 0x%x is not emulated", ctrl);
        emu_fatal(msg);
    }
    // every lane takes part in the exchange (an out-of-row source reads its own lane)
    const int r = emu_wave_exchange(v, src < 0 ? lane : src, "__builtin_amdgcn_mov_dpp");
    return src < 0 ? (bound_ctrl ? 0 : v) : r;
}
#define __builtin_amdgcn_mov_dpp(v, ctrl, row_mask, bank_mask, bound_ctrl) emu_mov_dpp((v), (ctrl), (row_mask), (bank_mask), (bound_ctrl))

// The wavefront barrier (candle_wmma's wave_sync around LDS a wavefront's lanes pass to
// each other): every active lane of the wavefront arrives before any leaves; the fences on
// either side of it are sequentially consistent fences here.
inline void emu_wave_barrier() {
    emu_wave& w = emu_cur_wave();
    w.tag[emu_lane_id()] = "__builtin_amdgcn_wave_barrier";
    w.bar.arrive_and_wait();
    emu_check_converged(w, "__builtin_amdgcn_wave_barrier", false);
    w.bar.arrive_and_wait();
}
#define __builtin_amdgcn_wave_barrier() emu_wave_barrier()
#define __builtin_amdgcn_fence(order, scope) std::atomic_thread_fence(std::memory_order_seq_cst)

template <class T>
inline T __shfl(T var, int src_lane, int width = EMU_WAVE) {
    emu_check_width(width);
    const int self = emu_lane_id();
    return emu_wave_exchange(var, (src_lane & (width - 1)) + (self & ~(width - 1)), "__shfl");
}
template <class T>
inline T __shfl_xor(T var, int lane_mask, int width = EMU_WAVE) {
    emu_check_width(width);
    const int self = emu_lane_id();
    int index = self ^ lane_mask;
    index = index >= ((self + width) & ~(width - 1)) ? self : index;
    return emu_wave_exchange(var, index, "__shfl_xor");
}
template <class T>
inline T __shfl_up(T var, unsigned int lane_delta, int width = EMU_WAVE) {
    emu_check_width(width);
    const int self = emu_lane_id();
    int index = self - static_cast<int>(lane_delta);
    index = index < (self & ~(width - 1)) ? self : index;
    return emu_wave_exchange(var, index, "__shfl_up");
}
template <class T>
inline T __shfl_down(T var, unsigned int lane_delta, int width = EMU_WAVE) {
    emu_check_width(width);
    const int self = emu_lane_id();
    int index = self + static_cast<int>(lane_delta);
    index = static_cast<int>((self & (width - 1)) + lane_delta) >= width ? self : index;
    return emu_wave_exchange(var, index, "__shfl_down");
}

// ---------------------------------------------------------------------------
// Atomics (real ones: the lanes are threads) and bit helpers
// ---------------------------------------------------------------------------
template <class T>
inline T atomicAdd(T* address, T val) {
    if constexpr (std::is_integral<T>::value) {
        return __atomic_fetch_add(address, val, __ATOMIC_SEQ_CST);
    } else {
        T old = *address, desired = old + val;
        while (!__atomic_compare_exchange(address, &old, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) desired = old + val;
        return old;
    }
}
template <class T>
inline T atomicCAS(T* address, T compare, T val) {
    __atomic_compare_exchange_n(address, &compare, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return compare;
}
template <class T>
inline T atomicMax(T* address, T val) {
    T old = *address;
    while (old < val && !__atomic_compare_exchange_n(address, &old, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <class T>
inline T atomicMin(T* address, T val) {
    T old = *address;
    while (old > val && !__atomic_compare_exchange_n(address, &old, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }

// Bit casts and the float functions HIP's device library adds to <cmath>.
template <class To, class From>
inline To emu_bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From));
    To r;
    std::memcpy(&r, &v, sizeof r);
    return r;
}
inline unsigned int __float_as_uint(float v) { return emu_bit_cast<unsigned int>(v); }
inline int __float_as_int(float v) { return emu_bit_cast<int>(v); }
inline float __uint_as_float(unsigned int v) { return emu_bit_cast<float>(v); }
inline float __int_as_float(int v) { return emu_bit_cast<float>(v); }
inline long long __double_as_longlong(double v) { return emu_bit_cast<long long>(v); }
inline double __longlong_as_double(long long v) { return emu_bit_cast<double>(v); }
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
inline float normcdff(float v) { return 0.5f * std::erfc(-v / std::sqrt(2.0f)); }
inline double normcdf(double v) { return 0.5 * std::erfc(-v / std::sqrt(2.0)); }

// ---------------------------------------------------------------------------
// IEEE binary16, round to nearest even in every conversion and operation.
// ---------------------------------------------------------------------------
inline uint32_t emu_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
inline float emu_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline float emu_f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    if (e == 0x1f) return emu_f32_from_bits(sign | 0x7f800000u | (m << 13));  // inf / nan
    if (e != 0) return emu_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    // zero or subnormal: m * 2^-24, exact in float
    const float v = static_cast<float>(m) * 0x1p-24f;
    return sign ? -v : v;
}
// Correctly rounded (RNE) from double, which also serves float and integers
// (a float, or an integer of up to 53 bits, is exact in double).
inline uint16_t emu_f64_to_f16(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    const uint16_t sign = static_cast<uint16_t>((u >> 48) & 0x8000u);
    if (std::isnan(d)) return static_cast<uint16_t>(sign | 0x7e00u);
    const double mag = std::fabs(d);
    if (std::isinf(d) || mag >= 65520.0) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 rounds to inf
    if (mag == 0.0) return sign;
    int exp;
    std::frexp(mag, &exp);  // mag in [2^(exp-1), 2^exp)
    const int e = std::max(exp - 1, -14);  // binade; below 2^-14 the subnormal spacing 2^-24 applies
    // r = mag / ulp rounded to nearest even (an exact power-of-two scaling,
    // then nearbyint in the default rounding mode). r is in [1024, 2048] for
    // a normal binade (2048: carry into the next one), in [0, 1024] below it.
    const double r = std::nearbyint(std::ldexp(mag, 10 - e));
    // biased exponent (e + 15) << 10 plus the fraction r - 1024 gives
    // ((e + 14) << 10) + r, which also covers the carry and the subnormals.
    const uint32_t bits = (static_cast<uint32_t>(e + 14) << 10) + static_cast<uint32_t>(r);
    return static_cast<uint16_t>(sign | std::min<uint32_t>(bits, 0x7c00u));
}

struct __half {
    uint16_t bits;
    __half() = default;
    __half(float f) : bits(emu_f64_to_f16(f)) {}
    __half(double d) : bits(emu_f64_to_f16(d)) {}
    __half(int v) : bits(emu_f64_to_f16(v)) {}
    __half(unsigned int v) : bits(emu_f64_to_f16(v)) {}
    __half(long v) : bits(emu_f64_to_f16(static_cast<double>(v))) {}
    __half(unsigned long v) : bits(emu_f64_to_f16(static_cast<double>(v))) {}
    __half(long long v) : bits(emu_f64_to_f16(static_cast<double>(v))) {}
    __half(unsigned long long v) : bits(emu_f64_to_f16(static_cast<double>(v))) {}
    operator float() const { return emu_f16_to_f32(bits); }
};
static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && std::is_trivially_copyable<__half>::value, "__half layout");
typedef __half half;

inline __half emu_half_bits(uint16_t b) {
    __half h;
    h.bits = b;
    return h;
}
// One operation, rounded once: float holds more than 2*11+2 bits, so
// computing in float and rounding to half equals a correctly rounded half op.
inline __half operator+(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half operator-(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half operator*(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half operator/(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half operator-(__half a) { return emu_half_bits(static_cast<uint16_t>(a.bits ^ 0x8000u)); }
inline __half& operator+=(__half& a, __half b) { return a = a + b; }
inline __half& operator-=(__half& a, __half b) { return a = a - b; }
inline __half& operator*=(__half& a, __half b) { return a = a * b; }
inline __half& operator/=(__half& a, __half b) { return a = a / b; }

inline float __half2float(__half h) { return float(h); }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __int2half_rn(int v) { return __half(static_cast<double>(v)); }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline __half __ushort_as_half(unsigned short b) { return emu_half_bits(b); }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }

struct __half2 {
    __half x, y;
};
static_assert(sizeof(__half2) == 4 && alignof(__half2) == 2, "__half2 layout");
typedef __half2 half2;

inline __half2 operator+(__half2 a, __half2 b) { return {a.x + b.x, a.y + b.y}; }
inline __half2 operator-(__half2 a, __half2 b) { return {a.x - b.x, a.y - b.y}; }
inline __half2 operator*(__half2 a, __half2 b) { return {a.x * b.x, a.y * b.y}; }
inline __half2& operator+=(__half2& a, __half2 b) { return a = a + b; }
inline __half2& operator*=(__half2& a, __half2 b) { return a = a * b; }
inline __half2 __hadd2(__half2 a, __half2 b) { return a + b; }
inline __half2 __hsub2(__half2 a, __half2 b) { return a - b; }
inline __half2 __hmul2(__half2 a, __half2 b) { return a * b; }
// named by compat helpers no emulated kernel calls (candle_f16x2_fma, candle_syncwarp)
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return a * b + c; }
// (candle_half2_of_halves, the pair HIP 5.2.3 needs)
inline __half2 __h2div(__half2 a, __half2 b) { return {a.x / b.x, a.y / b.y}; }
inline __half2 __hneg2(__half2 a) { return {-a.x, -a.y}; }
inline bool __hbeq2(__half2 a, __half2 b) { return float(a.x) == float(b.x) && float(a.y) == float(b.y); }
inline bool __hbne2(__half2 a, __half2 b) { return float(a.x) != float(b.x) && float(a.y) != float(b.y); }
inline void __syncwarp(unsigned int = 0xffffffffu) {}
inline void __nanosleep(unsigned int) {}
// (candle_activemask_w32: no emulated kernel asks for the active lanes; a call would stop here)
inline unsigned int __activemask() { __builtin_trap(); }
// (candle_fence_*_sys: a fence of the whole system)
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline __half2 make_half2(__half x, __half y) { return {x, y}; }
inline __half2 __halves2half2(__half x, __half y) { return {x, y}; }
inline __half2 __floats2half2_rn(float x, float y) { return {__half(x), __half(y)}; }
inline __half2 __float2half2_rn(float x) { return {__half(x), __half(x)}; }
inline float __low2float(__half2 a) { return float(a.x); }
inline float __high2float(__half2 a) { return float(a.y); }
inline __half __low2half(__half2 a) { return a.x; }
inline __half __high2half(__half2 a) { return a.y; }

// ---------------------------------------------------------------------------
// Vector types. An 8- or 16-byte assignment is what the GPU does as one
// 64/128-bit load/store (ggml_cuda_memcpy_1 casts to int2/int4): count the
// ones whose addresses lack that alignment (a ds_read_b64 that the kernel's
// own comments call undefined behavior).
// ---------------------------------------------------------------------------
inline std::atomic<uint64_t> emu_misaligned_vector_accesses{0};
inline void emu_check_align(const void* p, size_t n) {
    if (reinterpret_cast<uintptr_t>(p) % n != 0) emu_misaligned_vector_accesses.fetch_add(1, std::memory_order_relaxed);
}
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
struct int2 {
    int x, y;
    int2() = default;
    int2(int x_, int y_) : x(x_), y(y_) {}
    int2(const int2&) = default;
    int2& operator=(const int2& o) {
        emu_check_align(this, 8);
        emu_check_align(&o, 8);
        x = o.x;
        y = o.y;
        return *this;
    }
};
struct int4 {
    int x, y, z, w;
    int4() = default;
    int4(int x_, int y_, int z_, int w_) : x(x_), y(y_), z(z_), w(w_) {}
    int4(const int4&) = default;
    int4& operator=(const int4& o) {
        emu_check_align(this, 16);
        emu_check_align(&o, 16);
        x = o.x;
        y = o.y;
        z = o.z;
        w = o.w;
        return *this;
    }
};
struct uint2 {
    unsigned int x, y;
};
struct uint4 {
    unsigned int x, y, z, w;
    uint4() = default;
    uint4(unsigned x_, unsigned y_, unsigned z_, unsigned w_) : x(x_), y(y_), z(z_), w(w_) {}
    uint4(const uint4&) = default;
    uint4& operator=(const uint4& o) {
        emu_check_align(this, 16);
        emu_check_align(&o, 16);
        x = o.x;
        y = o.y;
        z = o.z;
        w = o.w;
        return *this;
    }
};
struct char4 {
    signed char x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return int2(x, y); }
inline int4 make_int4(int x, int y, int z, int w) { return int4(x, y, z, w); }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4(x, y, z, w); }

// HIP's integer min / max (device functions of hip_runtime.h; the compat headers' own
// overloads are named candle_min / candle_max)
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline char4 make_char4(signed char x, signed char y, signed char z, signed char w) { return {x, y, z, w}; }
inline float2 __half22float2(__half2 a) { return {float(a.x), float(a.y)}; }
inline __half2 __float22half2_rn(float2 a) { return {__half(a.x), __half(a.y)}; }

// ---------------------------------------------------------------------------
// Host API names used by the launchers
// ---------------------------------------------------------------------------
typedef void* hipStream_t;
enum hipError_t { hipSuccess = 0 };
enum hipFuncAttribute { hipFuncAttributeMaxDynamicSharedMemorySize = 8 };
inline hipError_t hipGetLastError() { return hipSuccess; }
inline hipError_t hipGetDevice(int* dev) {
    *dev = 0;
    return hipSuccess;
}
inline hipError_t hipFuncSetAttribute(const void*, hipFuncAttribute, int) { return hipSuccess; }
// The stream-ordered memory calls of the MoE launchers: every launch here is
// synchronous, so they act at once.
inline hipError_t hipMemsetAsync(void* p, int value, size_t bytes, hipStream_t) {
    memset(p, value, bytes);
    return hipSuccess;
}
template <class T>
inline hipError_t hipMallocAsync(T** p, size_t bytes, hipStream_t) {
    *p = static_cast<T*>(malloc(bytes));
    if (*p == nullptr) emu_fatal("hipMallocAsync: out of memory");
    return hipSuccess;
}
inline hipError_t hipFreeAsync(void* p, hipStream_t) {
    free(p);
    return hipSuccess;
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------
constexpr size_t EMU_SHARED_BYTES = 64 * 1024;  // LDS per workgroup on CDNA2 and CDNA3
constexpr size_t EMU_SHARED_GUARD = 4096;
extern "C" {
alignas(64) inline unsigned char emu_dynamic_shared[EMU_SHARED_BYTES + EMU_SHARED_GUARD];
}
#define EMU_DYNAMIC_SHARED(type, name) extern type name[] __asm__("emu_dynamic_shared")

inline size_t emu_last_shmem = 0;  // the last launch's configuration
inline dim3 emu_last_grid, emu_last_block;
inline uint64_t emu_launches = 0;

// Runs fn on every thread of every block, blocks one after the other.
inline void emu_launch(dim3 grid, dim3 block, size_t shmem, const std::function<void()>& fn) {
    const uint32_t nthreads = block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > 1024) emu_fatal("block size out of range (1..1024 threads)");
    if (shmem > EMU_SHARED_BYTES) {
        char msg[120];
        snprintf(msg, sizeof msg, "launch asks for %zu bytes of dynamic shared memory, more than the %zu of a CDNA workgroup", shmem,
                 EMU_SHARED_BYTES);
        emu_fatal(msg);
    }
    emu_last_shmem = shmem;
    emu_last_grid = grid;
    emu_last_block = block;
    ++emu_launches;
    const uint32_t nwaves = (nthreads + EMU_WAVE - 1) / EMU_WAVE;
    emu_block_state state;
    for (uint32_t w = 0; w < nwaves; ++w) state.waves.emplace_back(new emu_wave);
    emu_block = &state;

    std::atomic<bool> done{false};
    std::thread watchdog([&] {
        uint64_t last = emu_progress.load();
        int idle = 0;
        while (!done.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const uint64_t now = emu_progress.load();
            idle = now == last ? idle + 1 : 0;
            last = now;
            if (idle > 600) emu_fatal("no barrier completed for 60 s: deadlock (lanes waiting at different barriers?)");
        }
    });

    const uint32_t nblocks = grid.x * grid.y * grid.z;
    for (uint32_t b = 0; b < nblocks; ++b) {
        memset(emu_dynamic_shared, 0xA5, sizeof emu_dynamic_shared);  // uninitialized LDS, and the guard
        state.bar.reset(nthreads);
        for (uint32_t w = 0; w < nwaves; ++w) {
            emu_wave& wave = *state.waves[w];
            wave.lanes = static_cast<int>(std::min<uint32_t>(EMU_WAVE, nthreads - w * EMU_WAVE));
            wave.bar.reset(static_cast<uint32_t>(wave.lanes));
            wave.exited.store(0);
            for (auto& t : wave.tag) t = nullptr;
        }
        std::vector<std::thread> threads;
        threads.reserve(nthreads);
        for (uint32_t t = 0; t < nthreads; ++t) {
            threads.emplace_back([&, t, b] {
                blockDim = {block.x, block.y, block.z};
                gridDim = {grid.x, grid.y, grid.z};
                threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
                blockIdx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
                emu_tl_wave = static_cast<int>(t / EMU_WAVE);
                emu_tl_lane = static_cast<int>(t % EMU_WAVE);
                fn();
                emu_wave& wave = emu_cur_wave();
                wave.exited.fetch_or(uint64_t(1) << emu_tl_lane);
                wave.bar.arrive_and_drop();
                emu_block->bar.arrive_and_drop();
            });
        }
        for (auto& th : threads) th.join();
        for (size_t i = shmem; i < sizeof emu_dynamic_shared; ++i) {
            if (emu_dynamic_shared[i] != 0xA5) {
                char msg[160];
                snprintf(msg, sizeof msg, "block %u wrote dynamic shared memory at byte %zu, past the %zu bytes of the launch", b, i, shmem);
                emu_fatal(msg);
            }
        }
    }
    done.store(true);
    watchdog.join();
    emu_block = nullptr;
}

// What `kernel<<<grid, block, shmem, stream>>>(args...)` is rewritten to.
template <class Kernel, class... Args>
inline void emu_launch_kernel(dim3 grid, dim3 block, size_t shmem, hipStream_t, Kernel kernel, Args... args) {
    emu_launch(grid, block, shmem, [=] { kernel(args...); });
}
// HIP's launch macro (candle_hip_thrust.h's scan uses it).
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) emu_launch_kernel(grid, block, shmem, stream, kernel, __VA_ARGS__)
