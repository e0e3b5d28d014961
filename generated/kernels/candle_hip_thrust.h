// Written by `cargo xtask regen` from translator/compat/candle_hip_thrust.h (candle-rocm's own code). Do not edit here.
// candle-rocm compat: the slice of the parallel-algorithms library the MoE
// launchers use, as `candle_thrust`:
//   candle_thrust::device_ptr<const int32_t> in(p);   candle_thrust::device_ptr<int32_t> out(q);
//   candle_thrust::inclusive_scan(candle_thrust::hip::par.on(stream), in, in + n, out + 1);
// The scan is one launch of our own kernel on `stream`: asynchronous, no host
// synchronization, nothing allocated. Raw device pointers work as iterators too.
#pragma once

// A test shim may define CANDLE_COMPAT_NO_HIP_INCLUDE and supply the HIP names itself.
#ifndef CANDLE_COMPAT_NO_HIP_INCLUDE
#include <hip/hip_runtime.h>
#endif
#include <stddef.h>
#include <type_traits>

namespace candle_thrust {

// A device pointer wrapper: pointer arithmetic and get(), never dereferenced on the host.
template <class T>
class device_ptr {
public:
    using element_type = T;
    device_ptr() : p_(nullptr) {}
    explicit device_ptr(T* p) : p_(p) {}
    template <class U, class = typename std::enable_if<std::is_convertible<U*, T*>::value>::type>
    device_ptr(const device_ptr<U>& other) : p_(other.get()) {}

    T* get() const { return p_; }
    device_ptr operator+(ptrdiff_t n) const { return device_ptr(p_ + n); }
    device_ptr operator-(ptrdiff_t n) const { return device_ptr(p_ - n); }
    ptrdiff_t operator-(const device_ptr& other) const { return p_ - other.p_; }
    device_ptr& operator+=(ptrdiff_t n) { p_ += n; return *this; }
    device_ptr& operator-=(ptrdiff_t n) { p_ -= n; return *this; }
    bool operator==(const device_ptr& other) const { return p_ == other.p_; }
    bool operator!=(const device_ptr& other) const { return p_ != other.p_; }

private:
    T* p_;
};

template <class T>
device_ptr<T> device_pointer_cast(T* p) { return device_ptr<T>(p); }

// Execution policy: `hip::par.on(stream)` runs on that stream.
struct stream_policy {
    hipStream_t stream;
};
namespace hip {
struct par_t {
    stream_policy on(hipStream_t stream) const { return stream_policy{stream}; }
};
constexpr par_t par{};
}  // namespace hip

namespace detail {

template <class T> T* raw(device_ptr<T> p) { return p.get(); }
template <class T> T* raw(T* p) { return p; }

constexpr int kThreads = 256;  // one block
constexpr int kItems = 4;      // consecutive items per thread and chunk
constexpr int kChunk = kThreads * kItems;

// One block walks [0, n) in chunks of kChunk. Per chunk: each thread sums its
// kItems items serially, the block scans the kThreads partial sums
// (Hillis-Steele, double-buffered), then each thread writes its items' running
// sums plus the total of all previous chunks (`carry`).
// The element types as one template argument (no comma inside the launch macro).
template <class TIn, class TOut, class TAcc>
struct scan_types {
    using in = TIn;
    using out = TOut;
    using acc = TAcc;
};

template <class Types>
__global__ void __launch_bounds__(kThreads)
    inclusive_scan_kernel(const typename Types::in* in, typename Types::out* out, ptrdiff_t n) {
    using Acc = typename Types::acc;
    using TOut = typename Types::out;
    __shared__ Acc partial[2][kThreads];
    const int t = static_cast<int>(threadIdx.x);
    Acc carry = Acc(0);  // same value in every thread
    for (ptrdiff_t base = 0; base < n; base += kChunk) {
        const ptrdiff_t first = base + static_cast<ptrdiff_t>(t) * kItems;
        Acc item[kItems];
        Acc sum = Acc(0);
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            item[j] = first + j < n ? static_cast<Acc>(in[first + j]) : Acc(0);
            sum += item[j];
        }
        int cur = 0;
        partial[cur][t] = sum;
        __syncthreads();
        for (int d = 1; d < kThreads; d <<= 1) {
            const Acc mine = partial[cur][t];
            partial[cur ^ 1][t] = t >= d ? mine + partial[cur][t - d] : mine;
            cur ^= 1;
            __syncthreads();
        }
        Acc running = carry + (t > 0 ? partial[cur][t - 1] : Acc(0));
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            running += item[j];
            if (first + j < n) out[first + j] = static_cast<TOut>(running);
        }
        carry += partial[cur][kThreads - 1];
        __syncthreads();  // partial is rewritten by the next chunk
    }
}

}  // namespace detail

// out[i] = in[0] + ... + in[i] for i in [0, last - first); returns out + n.
// The sum is carried in the input's value type, as the original does.
template <class InPtr, class OutPtr>
OutPtr inclusive_scan(const stream_policy& policy, InPtr first, InPtr last, OutPtr out) {
    const ptrdiff_t n = last - first;
    if (n <= 0) return out;
    auto* in_raw = detail::raw(first);
    auto* out_raw = detail::raw(out);
    using TIn = typename std::remove_cv<typename std::remove_pointer<decltype(in_raw)>::type>::type;
    using TOut = typename std::remove_pointer<decltype(out_raw)>::type;
    using Types = detail::scan_types<TIn, TOut, TIn>;
    hipLaunchKernelGGL(detail::inclusive_scan_kernel<Types>, dim3(1), dim3(detail::kThreads), 0, policy.stream,
                       static_cast<const TIn*>(in_raw), out_raw, n);
    return out + n;
}

}  // namespace candle_thrust
