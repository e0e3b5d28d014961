// Runs the generated MoE GEMMs (generated/kernels/moe/moe_wmma.hip and
// moe_wmma_gguf.hip) in the CPU emulation of 64-lane CDNA wavefronts
// (../cdna_on_cpu), through their launchers as candle-core calls them:
//   cdna3_cores     gfx942, candle_wmma's matrix-core tiles (16x16x16, 8x32x16)
//                   (v_mfma_f32_16x16x16_f16 / _bf16, two 32-lane logical
//                   warps per wavefront, one MFMA each), the default;
//   cdna3_shuffles  gfx942 with CANDLE_HIP_NO_WMMA_MATRIX_CORES: the portable
//                   shuffle tiles;
//   cdna2_cores     gfx90a, matrix cores (v_mfma_f32_16x16x16f16 / bf16_1k).
// Built and run by run.sh (g++ only, no GPU).
//
// Data: 4 experts (one of them gets no token), top-2 routing of 24 tokens,
// random expert choices; activations and f16/bf16 weights are multiples of
// 1/8 in [-2, 2] and Q8_0 weights q * 2^-6: every product and every sum over
// K is exact in float, so each output must EQUAL the f64 reference (rounded
// to the output type), whatever the order of the sums. Cases: moe_gemm_wmma
// f16 / bf16, prefill (16x16x16 tile) and decode (8x32x16: two 16x16x16
// instructions per tile on the matrix cores), without and with top-k weights (powers of two) (f16 as upstream
// writes it: see case_wmma); moe_gemm_gguf_prefill
// f16 / bf16 with Q8_0 (32-lane dequantizing warps) against the reference, and
// with Q4_K (32-lane) and Q6_K (64-lane "warps" of the kernel) matrix cores
// against shuffles (the same dequantized values; the sums' order differs, so
// within 1e-6 of the largest output). Outputs never written stay NaN and fail.
// N is a multiple of the 32-column tile for the GGUF kernel: where its last
// tile would have rows for some 32-lane warps of a wavefront and not for the
// others, those warps' shuffles diverge inside one wavefront, which the
// emulator cannot model (it stops: all active lanes of a wavefront must be in
// the same wave operation).
#include "hip_cpu_device.h"
#include "mfma_cpu.h"
#include "moe_config_api.h"
#include "suite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

uint16_t f16_bits(double v) { return __half(static_cast<float>(v)).bits; }

struct routing {
    int experts = 4, topk = 2, tokens = 24;
    int size_m() const { return tokens * topk; }
    std::vector<int32_t> sorted_ids, sorted_experts, expert_of;  // per sorted slot; per pair
};

routing make_routing(uint64_t seed) {
    routing r;
    std::mt19937_64 rng(seed);
    const int used[] = {0, 1, 3};  // expert 2 gets no token
    r.expert_of.resize(r.size_m());
    for (int t = 0; t < r.tokens; ++t) {
        const int a = used[rng() % 3];
        int b = used[rng() % 3];
        while (b == a) b = used[rng() % 3];
        r.expert_of[t * r.topk] = a;
        r.expert_of[t * r.topk + 1] = b;
    }
    std::vector<int32_t> pairs(r.size_m());
    for (int p = 0; p < r.size_m(); ++p) pairs[p] = p;
    std::stable_sort(pairs.begin(), pairs.end(), [&](int x, int y) { return r.expert_of[x] < r.expert_of[y]; });
    r.sorted_ids = pairs;
    for (int p : pairs) r.sorted_experts.push_back(r.expert_of[p]);
    return r;
}

double eighths(std::mt19937_64& rng) { return (static_cast<int>(rng() % 33) - 16) / 8.0; }

// moe_gemm_wmma: out[pair][n] = topk_w[pair] * sum_k x[row][k] * w[e(pair)][n][k],
// row = pair with top-k weights, else pair / topk.
void case_wmma(const emu_moe_api* apis, int napis, bool bf16, bool prefill, bool weighted) {
    const routing r = make_routing(7 + bf16 + 2 * prefill + 4 * weighted);
    const int N = 48, K = 64, M = r.size_m();
    const int rows = weighted ? M : r.tokens;
    std::mt19937_64 rng(99 + bf16);
    std::vector<double> x(rows * K), w(r.experts * N * K), tw(M);
    for (auto& v : x) v = eighths(rng);
    for (auto& v : w) v = eighths(rng);
    for (auto& v : tw) v = std::ldexp(1.0, -static_cast<int>(rng() % 3));
    auto enc = [&](double v) { return bf16 ? bf16_bits(v) : f16_bits(v); };
    std::vector<uint16_t> xb(x.size()), wb(w.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = enc(x[i]);
    for (size_t i = 0; i < w.size(); ++i) wb[i] = enc(w[i]);
    std::vector<float> twf(tw.begin(), tw.end());
    const std::string what = std::string("moe_gemm_wmma ") + (bf16 ? "bf16" : "f16") + (prefill ? " prefill (16x16x16)" : " decode (8x32x16)") +
                             (weighted ? " top-k weights" : "");
    for (int a = 0; a < napis; ++a) {
        std::vector<uint16_t> out(M * N, 0);  // zero-initialized, as candle-core allocates it
        std::vector<int32_t> counts(r.experts), offsets(r.experts + 1);
        apis[a].gemm_wmma(xb.data(), wb.data(), r.sorted_ids.data(), r.sorted_experts.data(), weighted ? twf.data() : nullptr, out.data(),
                          counts.data(), offsets.data(), r.experts, r.topk, M, N, K, bf16 ? 1 : 0, prefill, nullptr);
        int wrong = 0;
        for (int p = 0; p < M; ++p) {
            const int row = weighted ? p : p / r.topk, e = r.expert_of[p];
            for (int n = 0; n < N; ++n) {
                double ref = 0;
                for (int k = 0; k < K; ++k) ref += x[row * K + k] * w[(e * N + n) * K + k];
                if (weighted) ref *= tw[p];
                // f16: upstream's from_float(half&, float) converts the result's f16
                // bit pattern to half as a number (moe_utils.cuh:
                // static_cast<half>(float_to_half(src)), and float_to_half returns
                // the bits); CUDA's and HIP's __half(unsigned short) convert
                // numerically, so the f16 output is what the original writes too
                const uint16_t want = bf16 ? bf16_bits(ref) : f16_bits(static_cast<double>(f16_bits(ref)));
                wrong += out[p * N + n] != want;
            }
        }
        printf("%-15s %-58s %s\n", apis[a].name, what.c_str(), wrong ? ("MISMATCH " + std::to_string(wrong)).c_str() : (bf16 ? "= f64 reference, every output" : "= f64 reference as upstream writes f16, every output"));
        check(wrong == 0, std::string(apis[a].name) + " " + what);
    }
}

// moe_gemm_gguf_prefill (float output).
void case_gguf(const emu_moe_api* apis, int napis, bool bf16, int gguf_type) {
    const routing r = make_routing(31 + gguf_type);
    const int N = 64, M = r.size_m(), qk = apis[0].gguf_block_values(gguf_type), K = gguf_type == 0 ? 64 : 256;
    const size_t bb = apis[0].gguf_block_bytes(gguf_type), blocks = static_cast<size_t>(r.experts) * N * (K / qk);
    std::vector<uint8_t> wq(blocks * bb);
    apis[0].gguf_fill(gguf_type, wq.data(), blocks, 5 + gguf_type);
    std::mt19937_64 rng(17 + gguf_type);
    std::vector<double> x(r.tokens * K);
    for (auto& v : x) v = eighths(rng);
    std::vector<uint16_t> xb(x.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = bf16 ? bf16_bits(x[i]) : f16_bits(x[i]);
    const char* names[] = {"Q8_0", "Q4_K", "Q2_K", "Q3_K", "Q5_K", "Q6_K"};
    const std::string what = std::string("moe_gemm_gguf_prefill ") + (bf16 ? "bf16 " : "f16 ") + names[gguf_type];
    std::vector<std::vector<float>> outs;
    for (int a = 0; a < napis; ++a) {
        std::vector<float> out(M * N, NAN);
        apis[a].gemm_gguf_prefill(xb.data(), wq.data(), r.sorted_ids.data(), r.sorted_experts.data(), nullptr, out.data(), r.experts, r.topk, M,
                                  N, K, bf16 ? 1 : 0, gguf_type, nullptr);
        outs.push_back(out);
    }
    if (gguf_type == 0) {
        std::vector<double> w(blocks * qk);
        apis[0].q8_0_dequantize(wq.data(), blocks, w.data());
        for (int a = 0; a < napis; ++a) {
            int wrong = 0;
            for (int p = 0; p < M; ++p)
                for (int n = 0; n < N; ++n) {
                    double ref = 0;
                    for (int k = 0; k < K; ++k) ref += x[(p / r.topk) * K + k] * w[(static_cast<size_t>(r.expert_of[p]) * N + n) * K + k];
                    wrong += outs[a][p * N + n] != static_cast<float>(ref);
                }
            printf("%-15s %-58s %s\n", apis[a].name, what.c_str(), wrong ? ("MISMATCH " + std::to_string(wrong)).c_str() : "= f64 reference, every output");
            check(wrong == 0, std::string(apis[a].name) + " " + what);
        }
        return;
    }
    // against the shuffles configuration (apis[1])
    for (int a = 0; a < napis; ++a) {
        if (a == 1) continue;
        double diff = 0, scale = 0;
        bool finite = true;
        for (int i = 0; i < M * N; ++i) {
            finite = finite && std::isfinite(outs[a][i]) && std::isfinite(outs[1][i]);
            diff = std::max(diff, std::fabs(double(outs[a][i]) - outs[1][i]));
            scale = std::max(scale, std::fabs(double(outs[1][i])));
        }
        printf("%-15s %-58s vs %s: max |diff| / max |out| = %.2e\n", apis[a].name, what.c_str(), apis[1].name, diff / scale);
        check(finite && scale > 0 && diff / scale < 1e-6, std::string(apis[a].name) + " " + what);
    }
}

}  // namespace

int main() {
    const emu_moe_api apis[] = {emu_moe_api_cdna3_cores(), emu_moe_api_cdna3_shuffles(), emu_moe_api_cdna2_cores()};
    const int n = 3;
    for (bool bf16 : {false, true})
        for (bool prefill : {true, false})
            for (bool weighted : {false, true}) case_wmma(apis, n, bf16, prefill, weighted);
    for (bool bf16 : {false, true})
        for (int t : {0, 1, 5}) case_gguf(apis, n, bf16, t);
    printf("%llu launches\n", static_cast<unsigned long long>(emu_launches));
    return emu_summary();
}
