// Written by `cargo xtask regen` from translator/compat/candle_hip_overloads.h (candle-rocm's own code). Do not edit here.
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
