// candle-rocm compat: functions whose HIP overload set differs from the
// CUDA one the kernels were written against. The translator's `call-renames`
// rule points calls of min/max/atomicMax/atomicMin and the
// function-attribute API here; each forwards to HIP where HIP has the
// overload, and supplies the missing ones. Included by candle_hip_compat.h
// after the candle_bf16 type is declared.
#pragma once

#include <type_traits>

// min/max as CUDA's math API defines them: mixed integer arguments take the
// common type (int and unsigned give unsigned, as CUDA's umin/umax), floating
// point arguments follow fmin/fmax (a NaN operand yields the other operand).
template <class A, class B>
__host__ __device__ __forceinline__ typename std::common_type<A, B>::type candle_min(A a, B b) {
    using T = typename std::common_type<A, B>::type;
    if constexpr (std::is_same<T, float>::value) {
        return fminf(a, b);
    } else if constexpr (std::is_same<T, double>::value) {
        return fmin(a, b);
    } else {
        return static_cast<T>(a) < static_cast<T>(b) ? static_cast<T>(a) : static_cast<T>(b);
    }
}

template <class A, class B>
__host__ __device__ __forceinline__ typename std::common_type<A, B>::type candle_max(A a, B b) {
    using T = typename std::common_type<A, B>::type;
    if constexpr (std::is_same<T, float>::value) {
        return fmaxf(a, b);
    } else if constexpr (std::is_same<T, double>::value) {
        return fmax(a, b);
    } else {
        return static_cast<T>(a) < static_cast<T>(b) ? static_cast<T>(b) : static_cast<T>(a);
    }
}

// Atomics: HIP's own overloads where they exist (candle_atomic_add, with its
// 16-bit float overloads, lives in candle_hip_compat.h).
template <class T, class V>
__device__ __forceinline__ T candle_atomic_max(T* address, V value) {
    return atomicMax(address, static_cast<T>(value));
}
template <class T, class V>
__device__ __forceinline__ T candle_atomic_min(T* address, V value) {
    return atomicMin(address, static_cast<T>(value));
}

// Signed 64-bit max/min, which HIP 5.2 lacks: a compare-and-swap loop.
__device__ __forceinline__ long long candle_atomic_max(long long* address, long long value) {
    unsigned long long* bits = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *bits, assumed;
    do {
        assumed = old;
        if (static_cast<long long>(assumed) >= value) break;
        old = atomicCAS(bits, assumed, static_cast<unsigned long long>(value));
    } while (assumed != old);
    return static_cast<long long>(old);
}
__device__ __forceinline__ long long candle_atomic_min(long long* address, long long value) {
    unsigned long long* bits = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *bits, assumed;
    do {
        assumed = old;
        if (static_cast<long long>(assumed) <= value) break;
        old = atomicCAS(bits, assumed, static_cast<unsigned long long>(value));
    } while (assumed != old);
    return static_cast<long long>(old);
}

// The runtime API's typed overload: HIP takes the kernel as `const void*`.
template <class Kernel>
__host__ inline hipError_t candle_func_set_attribute(Kernel* kernel, hipFuncAttribute attribute, int value) {
    return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}

// Warp shuffles over a logical warp of `width` lanes (the translator always
// passes the width; CUDA's implicit one is 32). HIP's overloads for the
// built-in types; 16-bit float types travel as their bits, as CUDA's
// cuda_fp16/cuda_bf16 overloads do.
template <class T>
__device__ __forceinline__ T candle_shfl(T var, int src_lane, int width) {
    return __shfl(var, src_lane, width);
}
template <class T>
__device__ __forceinline__ T candle_shfl_xor(T var, int lane_mask, int width) {
    return __shfl_xor(var, lane_mask, width);
}
template <class T>
__device__ __forceinline__ T candle_shfl_up(T var, unsigned int delta, int width) {
    return __shfl_up(var, delta, width);
}
template <class T>
__device__ __forceinline__ T candle_shfl_down(T var, unsigned int delta, int width) {
    return __shfl_down(var, delta, width);
}

#define CANDLE_SHFL_16BIT(TYPE)                                                                            \
    __device__ __forceinline__ TYPE candle_shfl_bits16(TYPE var, int lane, int width, int kind) {          \
        unsigned short bits;                                                                               \
        memcpy(&bits, &var, 2);                                                                            \
        int v = bits;                                                                                      \
        v = kind == 0 ? __shfl(v, lane, width)                                                             \
          : kind == 1 ? __shfl_xor(v, lane, width)                                                         \
          : kind == 2 ? __shfl_up(v, (unsigned int)lane, width)                                            \
                      : __shfl_down(v, (unsigned int)lane, width);                                         \
        bits = (unsigned short)v;                                                                          \
        TYPE out;                                                                                          \
        memcpy(&out, &bits, 2);                                                                            \
        return out;                                                                                        \
    }                                                                                                      \
    template <> __device__ __forceinline__ TYPE candle_shfl<TYPE>(TYPE v, int l, int w) { return candle_shfl_bits16(v, l, w, 0); } \
    template <> __device__ __forceinline__ TYPE candle_shfl_xor<TYPE>(TYPE v, int l, int w) { return candle_shfl_bits16(v, l, w, 1); } \
    template <> __device__ __forceinline__ TYPE candle_shfl_up<TYPE>(TYPE v, unsigned int d, int w) { return candle_shfl_bits16(v, (int)d, w, 2); } \
    template <> __device__ __forceinline__ TYPE candle_shfl_down<TYPE>(TYPE v, unsigned int d, int w) { return candle_shfl_bits16(v, (int)d, w, 3); }

CANDLE_SHFL_16BIT(__half)
CANDLE_SHFL_16BIT(candle_bf16)
#undef CANDLE_SHFL_16BIT
