// Written by `cargo xtask regen` from translator/compat/candle_hip_thrust.h (candle-rocm's own code). Do not edit here.
// candle-rocm compat: the slice of thrust the launchers use
// (`thrust::inclusive_scan(thrust::cuda::par.on(stream), first, last, out)`
// over device pointers), as `candle_thrust`. Asynchronous on the stream.
#pragma once

#include <hip/hip_runtime.h>
#include <type_traits>
#include <stddef.h>

namespace candle_thrust {

template <class T>
class device_ptr {
public:
    explicit device_ptr(T* p) : p_(p) {}
    T* get() const { return p_; }
    device_ptr operator+(ptrdiff_t n) const { return device_ptr(p_ + n); }
    ptrdiff_t operator-(const device_ptr& other) const { return p_ - other.p_; }

private:
    T* p_;
};

struct stream_policy {
    hipStream_t stream;
};

namespace hip {
struct par_t {
    stream_policy on(hipStream_t stream) const { return stream_policy{stream}; }
};
constexpr par_t par{};
}  // namespace hip

constexpr int kScanThreads = 1024;

// One block walks the input in chunks of kScanThreads, scanning each chunk in
// shared memory and carrying the running total to the next.
template <class T>
__global__ void inclusive_scan_kernel(const T* in, T* out, ptrdiff_t n) {
    __shared__ T chunk[kScanThreads];
    __shared__ T carry;
    const int tid = static_cast<int>(threadIdx.x);
    if (tid == 0) carry = T(0);
    __syncthreads();
    for (ptrdiff_t base = 0; base < n; base += kScanThreads) {
        const ptrdiff_t idx = base + tid;
        chunk[tid] = idx < n ? in[idx] : T(0);
        __syncthreads();
        for (int offset = 1; offset < kScanThreads; offset <<= 1) {
            const T add = tid >= offset ? chunk[tid - offset] : T(0);
            __syncthreads();
            chunk[tid] += add;
            __syncthreads();
        }
        if (idx < n) out[idx] = carry + chunk[tid];
        __syncthreads();
        if (tid == 0) carry += chunk[kScanThreads - 1];
        __syncthreads();
    }
}

template <class TIn, class TOut>
inline void inclusive_scan(stream_policy policy, device_ptr<TIn> first, device_ptr<TIn> last, device_ptr<TOut> out) {
    const ptrdiff_t n = last - first;
    if (n <= 0) return;
    using T = typename std::remove_const<TIn>::type;
    hipLaunchKernelGGL(inclusive_scan_kernel<T>, dim3(1), dim3(kScanThreads), 0, policy.stream, first.get(), out.get(), n);
}

}  // namespace candle_thrust
