// candle-rocm compat: functions whose HIP overload set differs from the
// CUDA one the kernels were written against. The translator's `call-renames`
// rule points calls of min/max/atomicAdd/atomicMax/atomicMin and the
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

// Atomics: HIP's own overloads where they exist.
template <class T, class V>
__device__ __forceinline__ T candle_atomic_add(T* address, V value) {
    return atomicAdd(address, static_cast<T>(value));
}
template <class T, class V>
__device__ __forceinline__ T candle_atomic_max(T* address, V value) {
    return atomicMax(address, static_cast<T>(value));
}
template <class T, class V>
__device__ __forceinline__ T candle_atomic_min(T* address, V value) {
    return atomicMin(address, static_cast<T>(value));
}

// 16-bit atomic read-modify-write through a compare-and-swap on the aligned
// 32-bit word that holds the value (AMD has no 16-bit compare-and-swap).
template <class T, class Op>
__device__ __forceinline__ T candle_atomic_rmw16(T* address, Op op) {
    static_assert(sizeof(T) == 2, "16-bit types only");
    unsigned int* word = reinterpret_cast<unsigned int*>(reinterpret_cast<size_t>(address) & ~static_cast<size_t>(3));
    const unsigned int shift = (reinterpret_cast<size_t>(address) & 2) ? 16u : 0u;
    unsigned int old = *word;
    unsigned int assumed;
    T old_value;
    do {
        assumed = old;
        unsigned short old_bits = static_cast<unsigned short>((assumed >> shift) & 0xffffu);
        memcpy(&old_value, &old_bits, 2);
        T new_value = op(old_value);
        unsigned short new_bits;
        memcpy(&new_bits, &new_value, 2);
        unsigned int replaced = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(new_bits) << shift);
        old = atomicCAS(word, assumed, replaced);
    } while (assumed != old);  // integer comparison: no hang on NaN
    return old_value;
}

__device__ __forceinline__ __half candle_atomic_add(__half* address, __half value) {
    return candle_atomic_rmw16(address, [value](__half v) { return __float2half(__half2float(v) + __half2float(value)); });
}
__device__ __forceinline__ candle_bf16 candle_atomic_add(candle_bf16* address, candle_bf16 value) {
    return candle_atomic_rmw16(address, [value](candle_bf16 v) { return candle_bf16(static_cast<float>(v) + static_cast<float>(value)); });
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
