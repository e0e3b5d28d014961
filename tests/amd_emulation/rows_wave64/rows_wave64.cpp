// Candle's row kernels (softmax, rms norm, layer norm of the generated
// generated/kernels/reduce.hip) in the CPU emulation of 64-lane wavefronts
// (../cdna_on_cpu/hip_cpu_device.h), as CDNA runs them since rules wave-rows
// and wave-launches (one 64-lane wavefront per row below 1024 columns, 1024
// threads = 16 wavefronts above) and as before (32-lane reductions, 32
// threads per row: upstream's code, CANDLE_ROW_WAVE = 32), against an f64
// reference. Built and run by run.sh (g++ only, no GPU).
//
// reduce.hip is included twice, once per wavefront width, each time inside a
// namespace: run.sh hands over a copy whose kernels have C++ linkage (only
// `extern "C"` removed), and __shared__ is `static` here (blocks run one after
// another, so a function's static array is the block's shared memory).
//
// What must hold, per kernel, type and width of row:
//   - every output written and finite;
//   - the wave64 result against the f64 reference within the type's rounding
//     (f32: 1e-5 relative; f16 / bf16: a few units of their last place);
//   - the two widths differ only by the order of the sums (softmax's row
//     maximum, a max-reduction, is the same): reported as the largest
//     |wave64 - wave32| over the largest |reference| of the case;
//   - a control: upstream's 32-lane softmax launched with a whole 64-lane
//     wavefront per row (the launch without the kernel rule) is wrong. (The
//     norms would still be right that way, through their shared-memory stage
//     for blocks of several warps; the rule makes one wavefront need none.)
#include "hip_cpu_device.h"
#include "mfma_cpu.h"  // v_dot4, which candle_dp4a of the compat prelude names
#include "suite.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "candle_hip_compat.h"
#include "cuda_utils.cuh"

static_assert(CANDLE_ROW_WAVE == 64, "built with __GFX9__ (a CDNA device pass): the compat prelude must give 64");

#undef __shared__
#define __shared__ static

namespace wave64 {
#include "reduce_rows.hip"
}
#undef CANDLE_ROW_WAVE
#define CANDLE_ROW_WAVE 32
namespace wave32 {
#include "reduce_rows.hip"
}

namespace {

template <class T> double to_f64(T v) { return static_cast<double>(static_cast<float>(v)); }
template <class T> T from_f64(double v) { return static_cast<T>(static_cast<float>(v)); }

// Relative tolerance of one rounding of T, times a few.
template <class T> double tolerance() {
    if (std::is_same<T, float>::value) return 1e-5;
    if (std::is_same<T, __half>::value) return 4 * 9.8e-4;
    return 4 * 7.9e-3;  // bf16
}

enum class Op { softmax, rmsnorm, layernorm };
const char* name(Op op) { return op == Op::softmax ? "softmax" : op == Op::rmsnorm ? "rmsnorm" : "layernorm"; }

// The launch the ROCm host code makes (generated/candle-nn/src/ops.rs) for a
// device whose wavefront is `wave` lanes.
// W64: the kernels of namespace wave64 (else wave32); `wave`: the lanes the
// host launches per row.
template <bool W64, class T>
void launch(Op op, const T* x, T* dst, const T* alpha, const T* beta, int rows, int cols, unsigned wave = W64 ? 64 : 32) {
    const float eps = 1e-5f;
    if (op == Op::softmax) {
        if constexpr (std::is_same<T, float>::value)
            emu_launch_kernel(dim3(rows), dim3(1, wave, 1), 0, nullptr, W64 ? wave64::softmax_f32 : wave32::softmax_f32, x, dst, cols);
        else if constexpr (std::is_same<T, __half>::value)
            emu_launch_kernel(dim3(rows), dim3(1, wave, 1), 0, nullptr, W64 ? wave64::softmax_f16 : wave32::softmax_f16, x, dst, cols);
        else
            emu_launch_kernel(dim3(rows), dim3(1, wave, 1), 0, nullptr, W64 ? wave64::softmax_bf16 : wave32::softmax_bf16, x, dst, cols);
        return;
    }
    const int block = cols < 1024 ? int(wave) : 1024;
    if (op == Op::rmsnorm) {
        if constexpr (std::is_same<T, float>::value)
            emu_launch_kernel(dim3(rows), dim3(block), 0, nullptr, W64 ? wave64::rmsnorm_f32 : wave32::rmsnorm_f32, x, dst, alpha, cols, block, eps);
        else if constexpr (std::is_same<T, __half>::value)
            emu_launch_kernel(dim3(rows), dim3(block), 0, nullptr, W64 ? wave64::rmsnorm_f16 : wave32::rmsnorm_f16, x, dst, alpha, cols, block, eps);
        else
            emu_launch_kernel(dim3(rows), dim3(block), 0, nullptr, W64 ? wave64::rmsnorm_bf16 : wave32::rmsnorm_bf16, x, dst, alpha, cols, block, eps);
        return;
    }
    if constexpr (std::is_same<T, float>::value)
        emu_launch_kernel(dim3(rows), dim3(block), 0, nullptr, W64 ? wave64::layernorm_f32 : wave32::layernorm_f32, x, dst, alpha, beta, cols, block, eps);
    else if constexpr (std::is_same<T, __half>::value)
        emu_launch_kernel(dim3(rows), dim3(block), 0, nullptr, W64 ? wave64::layernorm_f16 : wave32::layernorm_f16, x, dst, alpha, beta, cols, block, eps);
    else
        emu_launch_kernel(dim3(rows), dim3(block), 0, nullptr, W64 ? wave64::layernorm_bf16 : wave32::layernorm_bf16, x, dst, alpha, beta, cols, block, eps);
}

// f64 reference of one row, from the same (rounded) inputs.
std::vector<double> reference(Op op, const std::vector<double>& x, const std::vector<double>& a, const std::vector<double>& b) {
    const size_t n = x.size();
    std::vector<double> y(n);
    if (op == Op::softmax) {
        double m = -INFINITY, s = 0;
        for (double v : x) m = std::max(m, v);
        for (double v : x) s += std::exp(v - m);
        for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m) / s;
    } else if (op == Op::rmsnorm) {
        double s = 0;
        for (double v : x) s += v * v;
        const double scale = 1 / std::sqrt(s / n + 1e-5);
        for (size_t i = 0; i < n; ++i) y[i] = x[i] * scale * a[i];
    } else {
        double s = 0, s2 = 0;
        for (double v : x) s += v, s2 += v * v;
        const double mean = s / n, inv = 1 / std::sqrt(s2 / n - mean * mean + 1e-5);
        for (size_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * a[i] + b[i];
    }
    return y;
}

template <class T>
void run_case(Op op, int cols, const char* type, double* worst) {
    const int rows = 3;
    std::mt19937 rng(1000 * cols + int(op));
    std::uniform_real_distribution<double> dist(-4, 4), pos(0.5, 1.5);
    std::vector<T> x(rows * cols), a(cols), b(cols);
    for (auto& v : x) v = from_f64<T>(dist(rng));
    for (auto& v : a) v = from_f64<T>(pos(rng));
    for (auto& v : b) v = from_f64<T>(dist(rng) / 4);
    const T nan = from_f64<T>(NAN);
    std::vector<T> y64(rows * cols, nan), y32(rows * cols, nan);
    launch<true>(op, x.data(), y64.data(), a.data(), b.data(), rows, cols);
    launch<false>(op, x.data(), y32.data(), a.data(), b.data(), rows, cols);
    std::vector<double> ad(cols), bd(cols);
    for (int i = 0; i < cols; ++i) ad[i] = to_f64(a[i]), bd[i] = to_f64(b[i]);
    double err64 = 0, err32 = 0, scale = 0, diff = 0;
    bool finite = true;
    for (int r = 0; r < rows; ++r) {
        std::vector<double> xd(cols);
        for (int i = 0; i < cols; ++i) xd[i] = to_f64(x[r * cols + i]);
        const auto ref = reference(op, xd, ad, bd);
        for (int i = 0; i < cols; ++i) {
            const double v64 = to_f64(y64[r * cols + i]), v32 = to_f64(y32[r * cols + i]);
            finite = finite && std::isfinite(v64) && std::isfinite(v32);
            scale = std::max(scale, std::fabs(ref[i]));
            err64 = std::max(err64, std::fabs(v64 - ref[i]));
            err32 = std::max(err32, std::fabs(v32 - ref[i]));
            diff = std::max(diff, std::fabs(v64 - v32));
        }
    }
    const double rel64 = err64 / scale, rel32 = err32 / scale, rel_diff = diff / scale;
    const bool ok = finite && rel64 < tolerance<T>() && rel32 < tolerance<T>();
    printf("%-9s %-4s %5d  block %-11s  wave64 %.2e  wave32 %.2e", name(op), type, cols,
           op == Op::softmax ? "(1,64|32,1)" : (cols < 1024 ? "64|32" : "1024"), rel64, rel32);
    printf("  wave64 vs wave32 %.2e\n", rel_diff);
    *worst = std::max(*worst, rel_diff);
    check(ok, std::string(name(op)) + " " + type + " cols " + std::to_string(cols));
}

// Upstream's softmax (32-lane reductions) launched with 64 lanes per row:
// each half-wavefront reduces on its own, so a row's max / sum misses half of
// the columns. The emulation must show that.
void control() {
    for (Op op : {Op::softmax}) {
        const int rows = 2, cols = 1000;
        std::mt19937 rng(7);
        std::uniform_real_distribution<double> dist(-4, 4);
        std::vector<float> x(rows * cols), a(cols, 1.0f), b(cols, 0.0f), y(rows * cols, NAN);
        for (auto& v : x) v = float(dist(rng));
        launch<false>(op, x.data(), y.data(), a.data(), b.data(), rows, cols, 64);
        std::vector<double> xd(x.begin(), x.begin() + cols), ad(cols, 1.0), bd(cols, 0.0);
        const auto ref = reference(op, xd, ad, bd);
        double err = 0, scale = 0;
        for (int i = 0; i < cols; ++i) err = std::max(err, std::fabs(y[i] - ref[i])), scale = std::max(scale, std::fabs(ref[i]));
        printf("control: %s f32 %d cols, upstream's 32-lane kernel launched with 64 lanes: error %.2e (must be large)\n", name(op), cols, err / scale);
        check(err / scale > 1e-2, std::string("control ") + name(op));
    }
}

}  // namespace

int main() {
    printf("op        type  cols  block              max |error| / max |ref|: vs f64, and between the widths\n");
    const int widths[] = {1, 7, 31, 32, 33, 63, 64, 65, 100, 257, 1000, 1023, 1024, 1500, 4096};
    double worst = 0;
    for (Op op : {Op::softmax, Op::rmsnorm, Op::layernorm}) {
        for (int cols : widths) {
            run_case<float>(op, cols, "f32", &worst);
            run_case<__half>(op, cols, "f16", &worst);
            run_case<candle_bf16>(op, cols, "bf16", &worst);
        }
    }
    printf("the wave64 and wave32 results differ by at most %.2e of the largest output (the order of the sums)\n", worst);
    control();
    return emu_summary();
}
