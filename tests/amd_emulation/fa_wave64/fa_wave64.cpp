// Runs the generated flash attention (generated/kernels/candle_flash_attn.hip,
// run_mha as candle-flash-attn's ROCm code calls it) in the CPU emulation of
// 64-lane CDNA wavefronts (../cdna_on_cpu), in three configurations:
//   cdna3_cores     gfx942: Q·Kᵀ and P·V on candle_wmma's matrix-core tile
//                   (v_mfma_f32_16x16x16_f16 / _bf16: two 32-lane logical warps
//                   per wavefront, one MFMA each), the default;
//   cdna3_shuffles  gfx942 with CANDLE_HIP_NO_WMMA_MATRIX_CORES: the portable tiles;
//   cdna2_cores     gfx90a (v_mfma_f32_16x16x16f16 / bf16_1k).
// Built and run by run.sh (g++ only, no GPU).
//
// Cases: the contract run_mha covers (f16 and bf16; head dims 32 to 256 on the
// tiles, 512 on the row kernel; GQA; causal, sliding windows, alibi, softcap;
// varlen through cu_seqlens with the unpadded softmax_lse; paged K/V through a
// shuffled block table; mm-prefix ranges; decode over a long KV, which splits the
// keys over blocks and merges them with `combine`; lengths that are not multiples
// of the tiles). Each output and softmax_lse is compared with an f64 reference
// computed from the same f16/bf16 inputs: the output within the rounding of the
// probabilities and of the output to the type (f16: 1e-3, bf16: 8e-3 absolute;
// |o| <= 1 as the values are in [-1, 1]), softmax_lse within 1e-3 relative; rows
// with no key to see must be 0 with a softmax_lse of +inf, as upstream's. Outputs
// never written stay NaN and fail.
#include "hip_cpu_device.h"
#include "mfma_cpu.h"
#include "fa_config_api.h"
#include "suite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

uint16_t to_bits(double v, bool bf16) { return bf16 ? bf16_bits(v) : __half(static_cast<float>(v)).bits; }

struct Case {
    std::string name;
    bool bf16 = false;
    int b = 1, h = 2, h_k = 1, d = 64, sq = 16, sk = 16;
    bool causal = false;
    int wl = -1, wr = -1;              // a sliding window when either is >= 0 (not causal)
    float softcap = 0.f;
    bool alibi = false;
    std::vector<int> lq, lk;           // varlen: the sequences' lengths (b of them)
    int page = 0;                      // paged K/V: rows per page (0: contiguous)
    std::vector<int> mm;               // mm-prefix ranges, start/end pairs, the same for every batch
};

double value(uint16_t bits, bool bf16) { return emu_b16_value(bits, bf16); }

void run_case(const Case& c, const std::vector<emu_fa_api>& apis, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    const bool varlen = !c.lq.empty();
    std::vector<int> lq(c.b, c.sq), lk(c.b, c.sk);
    if (varlen) lq = c.lq, lk = c.lk;
    std::vector<int32_t> cu_q(c.b + 1, 0), cu_k(c.b + 1, 0);
    for (int i = 0; i < c.b; ++i) cu_q[i + 1] = cu_q[i] + lq[i], cu_k[i + 1] = cu_k[i] + lk[i];
    const int sq = *std::max_element(lq.begin(), lq.end()), sk = *std::max_element(lk.begin(), lk.end());
    const int total_q = cu_q[c.b], total_k = cu_k[c.b];
    const int hd = c.h * c.d, kd = c.h_k * c.d;
    // q/o: [b, sq, h, d] padded or [total_q, h, d]; k/v: [b, sk, h_k, d], [total_k, h_k, d], or pages
    const int q_rows = varlen ? total_q : c.b * sq;
    const int pages_per_seq = c.page ? (sk + c.page - 1) / c.page : 0;
    const int k_rows = c.page ? c.b * pages_per_seq * c.page : (varlen ? total_k : c.b * sk);
    std::vector<uint16_t> q(q_rows * hd), k(k_rows * kd), v(k_rows * kd);
    for (auto* t : {&q, &k, &v})
        for (auto& x : *t) x = to_bits(uni(rng), c.bf16);
    std::vector<int32_t> table;
    if (c.page) {  // each sequence's pages, shuffled over the cache
        table.resize(c.b * pages_per_seq);
        std::iota(table.begin(), table.end(), 0);
        std::shuffle(table.begin(), table.end(), rng);
    }
    std::vector<float> slopes(c.b * c.h);
    for (auto& s : slopes) s = static_cast<float>(0.05 + 0.2 * (uni(rng) + 1.0));
    std::vector<int32_t> mm;
    for (int i = 0; i < c.b; ++i) mm.insert(mm.end(), c.mm.begin(), c.mm.end());
    const int mm_max = static_cast<int>(c.mm.size() / 2);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));

    // where row j of sequence bi's keys is (element offset of its head 0)
    auto key_at = [&](int bi, int j) -> long {
        if (c.page) return (static_cast<long>(table[bi * pages_per_seq + j / c.page]) * c.page + j % c.page) * kd;
        return (varlen ? static_cast<long>(cu_k[bi]) + j : static_cast<long>(bi) * sk + j) * kd;
    };
    auto q_at = [&](int bi, int i) -> long { return (varlen ? static_cast<long>(cu_q[bi]) + i : static_cast<long>(bi) * sq + i) * hd; };

    // the f64 reference: output and natural-log softmax_lse per (row, head)
    std::vector<double> ref_o(q_rows * hd, 0.0), ref_lse(q_rows * c.h, INFINITY);
    for (int bi = 0; bi < c.b; ++bi)
        for (int hh = 0; hh < c.h; ++hh) {
            const int kh = hh / (c.h / c.h_k);
            const double slope = slopes[bi * c.h + hh];
            for (int i = 0; i < lq[bi]; ++i) {
                const int pos = i + lk[bi] - lq[bi];
                std::vector<double> s(lk[bi], -INFINITY);
                double m = -INFINITY;
                for (int j = 0; j < lk[bi]; ++j) {
                    bool seen = true;
                    if (c.causal) seen = j <= pos;
                    else if (c.wl >= 0 || c.wr >= 0) seen = j >= pos - c.wl && j <= pos + c.wr;
                    if (!seen && (c.causal || c.wl >= 0 || c.wr >= 0))
                        for (size_t r = 0; r + 1 < c.mm.size(); r += 2)
                            if (pos >= c.mm[r] && pos < c.mm[r + 1] && j >= c.mm[r] && j < c.mm[r + 1]) seen = true;
                    if (!seen) continue;
                    double dot = 0;
                    for (int e = 0; e < c.d; ++e)
                        dot += value(q[q_at(bi, i) + hh * c.d + e], c.bf16) * value(k[key_at(bi, j) + kh * c.d + e], c.bf16);
                    double x = c.softcap > 0 ? c.softcap * std::tanh(dot * scale / c.softcap) : dot * scale;
                    if (c.alibi) x += c.causal ? slope * j : -slope * std::abs(pos - j);
                    s[j] = x;
                    m = std::max(m, x);
                }
                if (m == -INFINITY) continue;  // no key: output 0, lse +inf
                double sum = 0;
                for (double& x : s) sum += x = std::exp(x - m);
                for (int j = 0; j < lk[bi]; ++j)
                    if (s[j] > 0)
                        for (int e = 0; e < c.d; ++e) ref_o[q_at(bi, i) + hh * c.d + e] += s[j] / sum * value(v[key_at(bi, j) + kh * c.d + e], c.bf16);
                const long row = varlen ? cu_q[bi] + i : static_cast<long>(bi) * sq + i;
                ref_lse[row * c.h + hh] = m + std::log(sum);
            }
        }

    for (const auto& api : apis) {
        const uint16_t nan_bits = c.bf16 ? 0x7fc0 : 0x7e00;
        std::vector<uint16_t> o(q_rows * hd, nan_bits);
        std::vector<float> lse(q_rows * c.h, NAN);
        const uint32_t k_bs = c.page ? c.page * kd : (varlen ? 0 : sk * kd);
        api.run_mha(q.data(), k.data(), v.data(), o.data(), lse.data(), c.alibi ? slopes.data() : nullptr,
                    varlen ? cu_q.data() : nullptr, varlen ? cu_k.data() : nullptr,
                    varlen ? 0 : sq * hd, k_bs, k_bs, varlen ? 0 : sq * hd, c.h,
                    hd, kd, kd, hd, c.d, c.d, c.d, c.d,
                    c.b, c.h, c.h_k, c.d, c.d, scale, sq, sk, sq, sk, total_q,
                    c.bf16, c.causal, varlen, c.causal ? -1 : c.wl, c.causal ? 0 : c.wr, c.softcap,
                    c.page ? table.data() : nullptr, pages_per_seq, c.page,
                    mm_max ? mm.data() : nullptr, 2 * mm_max, mm_max, nullptr);
        double err = 0, lse_err = 0;
        bool written = true, empty_ok = true;
        for (size_t x = 0; x < o.size(); ++x) {
            const double got = value(o[x], c.bf16);
            if (std::isnan(got)) written = false;
            else err = std::max(err, std::abs(got - ref_o[x]));
        }
        // softmax_lse: [b, h, sq] padded, [h, total_q] unpadded (the reference is [row, h])
        for (int bi = 0; bi < c.b; ++bi)
            for (int hh = 0; hh < c.h; ++hh)
                for (int i = 0; i < lq[bi]; ++i) {
                    const long row = varlen ? cu_q[bi] + i : static_cast<long>(bi) * sq + i;
                    const float got = varlen ? lse[static_cast<long>(hh) * total_q + row] : lse[(static_cast<long>(bi) * c.h + hh) * sq + i];
                    const double want = ref_lse[row * c.h + hh];
                    if (std::isinf(want)) empty_ok = empty_ok && std::isinf(got) && got > 0;
                    else if (std::isnan(got)) written = false;
                    else lse_err = std::max(lse_err, std::abs(got - want) / std::max(1.0, std::abs(want)));
                }
        const double tol = c.bf16 ? 8e-3 : 1e-3;
        const bool ok = written && empty_ok && err <= tol && lse_err <= 1e-3;
        printf("%-15s %-44s max|o-ref| %.2e (bound %.1e)  lse rel %.2e%s\n", api.name, c.name.c_str(), err, tol, lse_err,
               written ? (empty_ok ? "" : "  EMPTY ROWS WRONG") : "  NOT WRITTEN");
        check(ok, api.name + std::string(" ") + c.name);
    }
}

}  // namespace

int main() {
    const std::vector<emu_fa_api> apis = {emu_fa_api_cdna3_cores(), emu_fa_api_cdna3_shuffles(), emu_fa_api_cdna2_cores()};
    std::vector<Case> cases;
    auto add = [&](Case c) { cases.push_back(std::move(c)); };
    add({.name = "d64 f16 GQA 4/2 b2 40x40 causal", .b = 2, .h = 4, .h_k = 2, .d = 64, .sq = 40, .sk = 40, .causal = true});
    add({.name = "d128 bf16 MQA 17x50 (sq != sk)", .bf16 = true, .h = 2, .h_k = 1, .d = 128, .sq = 17, .sk = 50});
    add({.name = "d128 f16 GQA 4/1 40x72 causal (128-row blocks)", .h = 4, .h_k = 1, .d = 128, .sq = 40, .sk = 72, .causal = true});
    add({.name = "d32 bf16 70x70 causal", .bf16 = true, .d = 32, .sq = 70, .sk = 70, .causal = true});
    add({.name = "d96 bf16 48x48 window 8/4 softcap 30", .bf16 = true, .d = 96, .sq = 48, .sk = 48, .wl = 8, .wr = 4, .softcap = 30.f});
    add({.name = "d160 f16 33x40 alibi", .d = 160, .sq = 33, .sk = 40, .alibi = true});
    add({.name = "d256 f16 33x33 causal alibi", .h = 2, .h_k = 2, .d = 256, .sq = 33, .sk = 33, .causal = true, .alibi = true});
    add({.name = "d64 f16 varlen (13, 30) causal", .b = 2, .d = 64, .causal = true, .lq = {13, 30}, .lk = {13, 30}});
    add({.name = "d128 bf16 varlen (5/20, 20/9) (rows without keys)", .bf16 = true, .b = 2, .h = 2, .h_k = 2, .d = 128, .causal = true,
         .lq = {5, 20}, .lk = {20, 9}});
    add({.name = "d64 f16 paged 16 causal 24x40", .b = 2, .h = 2, .h_k = 1, .d = 64, .sq = 24, .sk = 40, .causal = true, .page = 16});
    add({.name = "d64 f16 causal mm-prefix [0, 10) [20, 26)", .d = 64, .sq = 32, .sk = 32, .causal = true, .mm = {0, 10, 20, 26}});
    add({.name = "d128 f16 decode 1x600 (split KV, combine)", .h = 4, .h_k = 2, .d = 128, .sq = 1, .sk = 600, .causal = true});
    add({.name = "d128 bf16 decode paged 16 1x520 (split KV)", .bf16 = true, .h = 2, .h_k = 1, .d = 128, .sq = 1, .sk = 520, .page = 16});
    add({.name = "d512 f16 paged 16 decode 1x40 (row kernel)", .h = 2, .h_k = 1, .d = 512, .sq = 1, .sk = 40, .page = 16});
    uint64_t seed = 20261126;
    for (const auto& c : cases) run_case(c, apis, seed++);
    return emu_summary();
}
