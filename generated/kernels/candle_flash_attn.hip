// Written by `cargo xtask regen` from translator/compat/candle_flash_attn.hip (candle-rocm's own code). Do not edit here.
// candle-rocm's own code (not a translation): the AMD kernels behind candle-flash-attn's
// C ABI, `run_mha` (upstream's kernels/flash_api.cu: same name, same arguments, same
// results). Upstream's kernels are CUTLASS/CuTe with SM80 MMA atoms and do not translate;
// this is a flash-attention-2 style forward written for HIP: Q·Kᵀ over tiles of keys held
// in LDS, an online softmax (running max and sum per query row, f32), P·V accumulated in
// f32 registers, O(seqlen) memory. One source for every arch: a logical warp is 32 lanes
// (shuffles of width 32), so on CDNA's 64-lane wavefronts each half is its own warp.
// Head dims up to 256 (fwd_tiles) compute Q·Kᵀ and P·V as 16x16x16 products on
// candle_wmma's tiles: MFMA on CDNA2-4 (both halves of a wavefront at once), WMMA on
// RDNA3/4, NVIDIA's mma.sync under hip-on-cuda, shuffles elsewhere (RDNA2, HIP 5). Head
// dim 512 (paged decode) takes the row kernel (fwd_rows): scalar dot products, fewer
// registers than 16-row tiles of 512 columns.
//
// What run_mha's contract covers, all here:
//   * f16 and bf16; head dims up to 512 (tiles of 32, 64, 96, 128, 160, 192, 224, 256, 512);
//   * strides in elements for batch, row and head of q, k, v, o; GQA/MQA (h_k divides h);
//   * causal (bottom-right aligned when seqlen_q != seqlen_k) and sliding windows;
//   * alibi slopes (per head, per batch stride), softcap;
//   * varlen through cu_seqlens_q/k, softmax_lse padded [b, h, seqlen_q] or unpadded
//     [h, total_q];
//   * paged KV through block_table (page_block_size rows per page) and mm-prefix ranges.
// Rows with no key to attend to give an output of 0 and a softmax_lse of +inf, as upstream's.
//
// Split-KV (decode): when the query tiles of all heads and batches make too few blocks to
// fill the GPU (one query row per sequence over a long KV), each tile's keys are split
// over several blocks; each writes its unnormalised partial output and its running max and
// sum (f32, a stream-ordered allocation), and `combine` merges them per row. Where the
// allocation fails (no stream-ordered allocator) the unsplit kernel runs.

#include "candle_hip_compat.h"
#include "candle_hip_wmma.h"

#include <stdint.h>

namespace candle_fa {

constexpr int WARP = 32;             // logical warp (lanes)
constexpr int WARPS = 4;             // per block
constexpr int THREADS = WARP * WARPS;

__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(candle_bf16 v) { return static_cast<float>(v); }
template <class T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ candle_bf16 from_f32<candle_bf16>(float v) { return candle_bf16(v); }

__device__ __forceinline__ float shfl_xor(float v, int mask) { return candle_shfl_xor(v, mask, WARP); }

// v as the wavefront's first lane holds it, for a value the code knows to be the same on
// every lane: the compiler then keeps it, and the tests of it, in scalar registers and
// branches, where a per-lane test held through the key loop is a lane mask (a pair of SGPRs
// on CDNA's wave64). Elsewhere v itself.
__device__ __forceinline__ int wave_uniform(int v) {
#if defined(__AMDGCN__)
    return __builtin_amdgcn_readfirstlane(v);
#else
    return v;
#endif
}

// 2^x of the online softmax (x <= 0): the hardware's instruction alone
// (candle_wmma::exp2_approx: v_exp_f32, MUFU.EX2), whose results below 2^-126 are flushed to
// zero: a probability that small beside the row's largest, 1, adds nothing an f32 sum keeps.
__device__ __forceinline__ float exp2_softmax(float x) { return candle_wmma::exp2_approx(x); }

// The row kernel's shapes per head-dim tile DMAX: BN keys per step, R query rows per warp.
template <int DMAX> struct Tiles {
    static constexpr int BN = DMAX <= 256 ? 32 : 16;
    static constexpr int R = DMAX <= 128 ? 4 : (DMAX <= 256 ? 2 : 1);
    static constexpr int BM = R * WARPS;          // query rows per block
    static constexpr int SPLIT = WARP / BN;       // lanes sharing one key's dot product
    static constexpr int DPART = DMAX / SPLIT;    // dims of the dot product per lane
    static constexpr int DT = DMAX / WARP;        // output dims per lane
    static constexpr int KPAD = DMAX + 2;         // LDS row pitch of K/V (breaks bank conflicts)
};

struct Params {
    const void* q; const void* k; const void* v; void* o; float* lse; const float* alibi;
    const int32_t* cu_q; const int32_t* cu_k;
    uint32_t q_bs, k_bs, v_bs, o_bs, alibi_bs;
    uint32_t q_rs, k_rs, v_rs, o_rs;
    uint32_t q_hs, k_hs, v_hs, o_hs;
    int b, h, h_k, d;
    int seqlen_q, seqlen_k, total_q;
    float scale;        // softmax scale (after softcap: the softcap)
    float softcap_in;   // > 0: scores are softcap * tanh(qk * softcap_in)
    int causal, unpadded_lse, wl, wr;
    const int32_t* block_table; uint32_t bt_bs; int page;
    const int32_t* mm; uint32_t mm_bs; int mm_max;
    // split-KV: `splits` blocks per query tile, each writing a partial row of d + 2 floats
    // (acc[d], max, sum) at ((split * b + batch) * h + head) * seqlen_q + row of `part`.
    // The forward kernels find `part` in `o` (the launcher points it there: they never
    // write the output then, and one kernel argument fewer held through the key loop
    // saves CDNA's tiles kernels their last SGPR spills); combine reads `part`, writes `o`.
    int splits; float* part;
    // every K/V base, stride and d a multiple of 8 elements (16 bytes): vector loads;
    // q_vec8: the same of Q's
    int vec8, q_vec8;
};

// Which mask runs, as upstream's kernel chooses it: causal, else local (a window on
// either side), else none.
enum Mode { NO_MASK, CAUSAL, LOCAL };

__device__ __forceinline__ Mode mask_mode(const Params& p) {
    return p.causal ? CAUSAL : ((p.wl >= 0 || p.wr >= 0) ? LOCAL : NO_MASK);
}

// The order of a head's row tiles under a causal mask: last (longest) first, on every GPU
// family. A GPU starts a grid's blocks in launch order as slots free up; with the longest
// tiles last, the grid ended on a handful of them running alone (longest processing time
// first, as flash-attention-3's causal scheduler).
constexpr bool kHeavyFirst = true;

// The keys query row i sees, worked out once per row (a key's test is then a few
// compares, not a walk over the mm-prefix ranges per score: that walk, unrolled over a
// lane's keys, cost CDNA's tiles kernels up to 70 SGPR spills). Both within the batch's
// sequence; off = sk - sq: row i sits at key position pos = i + off (bottom-right
// alignment). Causal: j <= pos + wr (callers pass wr = 0). Local: pos - wl <= j <= pos + wr,
// wl and wr taken literally (the Rust side never passes -1 here). In either mode a query
// at a position inside an mm-prefix range [start, end) also sees every key of that range:
// the ranges holding pos all contain it, so together they are one range.
// b: the keys the block looks at (none past the row's sequence), w: the window, m: the
// mm-prefix keys.
constexpr int kNoHigh = 0x7fffffff, kNoLow = -kNoHigh - 1;
// A window wider than any sequence (2^30 keys), which pos +- kFar does not overflow
constexpr int kFar = 1 << 30;
// The mm-prefix ranges of a batch that has none: one empty range; the alibi slope of a head
// without alibi
__device__ const int32_t kNoRanges[2] = {0, 0};
__device__ const float kNoSlope[1] = {0.f};
struct RowMask {
    int blo, bend, wlo, wend, mlo, mend;   // [lo, end) each
    __device__ __forceinline__ bool sees(int j) const { return j >= blo && j < bend && ((j >= wlo && j < wend) || (j >= mlo && j < mend)); }
    // bit c: whether key j0 + c is seen (c < N): the three ranges' bits combined once,
    // then one bit test per key (a key's three range tests, unrolled over a lane's keys,
    // left CDNA's tiles kernels short of SGPRs for their lane masks)
    template <int N>
    __device__ __forceinline__ unsigned bits(int j0) const {
        static_assert(N < 32, "a key per bit");
        return range_bits<N>(j0, blo, bend) & (range_bits<N>(j0, wlo, wend) | range_bits<N>(j0, mlo, mend));
    }
    // the same over 64 keys: bit c, key j0 + c
    __device__ __forceinline__ uint64_t bits64(int j0) const {
        return range_bits64(j0, blo, bend) & (range_bits64(j0, wlo, wend) | range_bits64(j0, mlo, mend));
    }
    __device__ __forceinline__ static uint64_t low_bits64(int n) { return n >= 64 ? ~0ull : (1ull << n) - 1ull; }
    __device__ __forceinline__ static uint64_t range_bits64(int j0, int lo, int end) {
        const int a = lo <= j0 ? 0 : min(lo - j0, 64), b = end <= j0 ? 0 : min(end - j0, 64);
        return low_bits64(b) & ~low_bits64(a);
    }
    template <int N>
    __device__ __forceinline__ static unsigned range_bits(int j0, int lo, int end) {
        const int a = lo <= j0 ? 0 : min(lo - j0, N), b = end <= j0 ? 0 : min(end - j0, N);
        return b > a ? ((1u << b) - 1u) & ~((1u << a) - 1u) : 0u;
    }
};

// A batch's query rows: their number, the first's index among all rows (unpadded lse),
// and the offsets of q and o (varlen through the cumulative lengths, else padded).
struct Rows {
    int sq, row0;
    long q_off, o_off;
};

__device__ __forceinline__ Rows rows_of(const Params& p, int bi) {
    if (p.cu_q != nullptr) {
        const int row0 = p.cu_q[bi];
        return Rows{p.cu_q[bi + 1] - row0, row0, (long)row0 * p.q_rs, (long)row0 * p.o_rs};
    }
    return Rows{p.seqlen_q, bi * p.seqlen_q, (long)bi * p.q_bs, (long)bi * p.o_bs};
}

// What a block works on: its batch's query rows and keys (varlen through the cumulative
// lengths, else padded; paged K/V through the block table), the mask, and the keys any of
// its BM rows can see, [n_lo, n_hi) (all of them when mm-prefix ranges may widen the mask;
// with split-KV, this block's share, chunks of whole BN-key tiles), and [full_lo, full_hi)
// within it, the keys every one of its rows sees.
// A block row is a (query, head) pair: G heads of one kv head packed per query (row r:
// query r / G of head head0 + r % G), so that the G heads sharing a K/V tile share its
// loads (G = 1: one head per block, blockIdx.y; G = h / h_k: blockIdx.y is the kv head).
template <class T>
struct Block {
    Rows rows;
    int sq, sk, m0, split, off, n_lo, n_hi, full_lo, full_hi, head0;
    const T* Q;   // row 0 of head head0's queries
    const T* Kb;  // this kv head's keys and values (paged: the pages' base)
    const T* Vb;
    const int32_t* table;
    const int32_t* ranges;
    // the mask and score options as numbers, not flags (see row_mask): a row at position pos
    // sees the window [pos - w_lo, pos + w_hi) and the mm_n mm-prefix ranges at `ranges` (at
    // least one); alibi_j is 1 where alibi's bias is slope * j (causal), 0 where it is
    // -slope * |pos - j|; plain is 1 where a score is q·k times the scale alone (no softcap,
    // no alibi)
    int w_lo, w_hi, mm_n, plain;
    float alibi_j;
    float slope;
    // the slope of block head head0 + r at slopes[r * slope_step] (kNoSlope's 0 without alibi)
    const float* slopes;
    int slope_step;

    // false when the block has no query row (a tile past a short varlen sequence)
    __device__ __forceinline__ bool init(const Params& p, int BM, int BN, int G) {
        const int bi = blockIdx.z;
        head0 = blockIdx.y * G;
        const int kv_head = head0 / (p.h / p.h_k);
        rows = rows_of(p, bi);
        sq = rows.sq;
        sk = p.seqlen_k;
        long k_off = (long)bi * p.k_bs, v_off = (long)bi * p.v_bs;
        if (p.cu_k != nullptr) {
            sk = p.cu_k[bi + 1] - p.cu_k[bi];
            if (p.block_table == nullptr) {
                k_off = (long)p.cu_k[bi] * p.k_rs;
                v_off = (long)p.cu_k[bi] * p.v_rs;
            }
        }
        const int qtiles = gridDim.x / p.splits;
        split = blockIdx.x / qtiles;
        // x is the row tile, fastest in launch order; under a causal mask, the head's last
        // (longest) tile first (kHeavyFirst)
        const int t = blockIdx.x % qtiles;
        const Mode mode = mask_mode(p);
        m0 = (kHeavyFirst && mode == CAUSAL ? qtiles - 1 - t : t) * BM;
        if (m0 >= sq * G) return false;
        Q = static_cast<const T*>(p.q) + rows.q_off + (long)head0 * p.q_hs;
        table = p.block_table != nullptr ? p.block_table + (long)bi * p.bt_bs : nullptr;
        Kb = static_cast<const T*>(p.k) + (long)kv_head * p.k_hs + (table != nullptr ? 0 : k_off);
        Vb = static_cast<const T*>(p.v) + (long)kv_head * p.v_hs + (table != nullptr ? 0 : v_off);
        slope = p.alibi != nullptr ? p.alibi[(long)bi * p.alibi_bs + head0] : 0.f;
        slopes = p.alibi != nullptr ? p.alibi + (long)bi * p.alibi_bs + head0 : kNoSlope;
        slope_step = p.alibi != nullptr ? 1 : 0;
        off = sk - sq;
        const int32_t* const mm = (p.mm != nullptr && p.mm_max > 0 && mode != NO_MASK) ? p.mm + (long)bi * p.mm_bs : nullptr;
        ranges = mm != nullptr ? mm : kNoRanges;
        mm_n = mm != nullptr ? p.mm_max : 1;
        w_hi = mode == NO_MASK ? kFar : p.wr + 1;
        w_lo = mode == LOCAL ? p.wl : kFar;
        alibi_j = mode == CAUSAL ? 1.f : 0.f;
        plain = p.softcap_in <= 0.f && p.alibi == nullptr && p.scale > 0.f;
        const int q_first = m0 / G, q_last = (min(m0 + BM, sq * G) - 1) / G;
        n_lo = 0;
        n_hi = sk;
        if (mode != NO_MASK && mm == nullptr) {
            n_hi = max(0, min(sk, q_last + off + p.wr + 1));
            if (mode == LOCAL) n_lo = max(0, q_first + off - p.wl);
        }
        if (p.splits > 1) {
            const int chunk = ((max(0, n_hi - n_lo) + p.splits - 1) / p.splits + BN - 1) / BN * BN;
            n_lo = n_lo + split * chunk;
            n_hi = min(n_hi, n_lo + chunk);
        }
        // the keys every row sees (mm-prefix ranges only add keys to a row's window)
        full_lo = n_lo;
        full_hi = min(sk, n_hi);
        if (mode != NO_MASK) full_hi = min(full_hi, q_first + off + p.wr + 1);
        if (mode == LOCAL) full_lo = max(full_lo, q_last + off - p.wl);
        return true;
    }

    // Which keys query row i sees (RowMask). A row past the sequence (zero queries, its
    // output never written) sees the block's keys like the others: testing i < sq here
    // kept that lane mask live through the key loop, an SGPR spill on CDNA.
    // The mode is data here (w_lo, w_hi, mm_n), not tests: the compiler hoists a test of a
    // block's constant out of the key loop and holds its result there, which on CDNA's
    // wave64 is a pair of SGPRs per test.
    __device__ __forceinline__ RowMask row_mask(int i) const {
        const int pos = i + off;
        RowMask w{n_lo, n_hi, pos - w_lo, pos + w_hi, kNoHigh, kNoLow};
        int r = 0;
        do {  // (at least one range, kNoRanges where there are none: no test before the loop)
            const int start = ranges[2 * r], end = ranges[2 * r + 1];
            if (start < end && pos >= start && pos < end) {
                w.mlo = min(w.mlo, start);
                w.mend = max(w.mend, end);
            }
        } while (++r < mm_n);
        return w;
    }

    // The scores of query row i and keys j0 .. j0+N-1 (exp2 domain, -inf where bit c of
    // `seen` is clear) from q_i · k_j in sv, in place: `score` per key, with this block's
    // head slope.
    template <int N>
    __device__ __forceinline__ void scores(const Params& p, float (&sv)[N], unsigned seen, int i, int j0) const {
#pragma unroll
        for (int c = 0; c < N; ++c) sv[c] = score(p, sv[c], (seen >> c) & 1u, slope, i, j0 + c);
    }

    // One score of query row i (head slope `sl`) and key j; `seen` is 1 or 0 (the -inf of an
    // unseen key added, not selected: no lane mask per key, which on a CDNA wavefront would be
    // a pair of SGPRs each). Alibi as upstream's: +slope * j when causal (the same output as
    // the form below, a softmax_lse shifted by slope * (i + off)), else -slope * |i + off - j|.
    // BIAS_ALWAYS: the bias added without a test of p.alibi (sl is 0 where there is none:
    // fwd_tiles on AMD, kBiasAlways)
    template <bool BIAS_ALWAYS = false>
    __device__ __forceinline__ float score(const Params& p, float s, unsigned seen, float sl, int i, int j) const {
        if (p.softcap_in > 0.f) s = tanhf(s * p.softcap_in);
        const float bias = sl * fmaf(alibi_j, (float)j, (alibi_j - 1.f) * (float)abs(i + off - j));
        s = BIAS_ALWAYS || p.alibi != nullptr ? s * p.scale + bias : s * p.scale;
        return s * 1.4426950408889634f + __int_as_float(int((seen - 1u) & 0xff800000u));
    }

    // Key j's row in K or V (row stride rs; paged: page stride bs through the block table)
    template <bool PAGED>
    __device__ __forceinline__ long key_row(const Params& p, int j, uint32_t rs, uint32_t bs) const {
        return PAGED ? (long)table[j / p.page] * bs + (long)(j % p.page) * rs : (long)j * rs;
    }

    // Rows n0 .. n0+BN of K or V (base, row and page strides) into LDS at pitch KP, zeros
    // past the sequence and past d: with p.vec8, 16 bytes per copy, issued asynchronously
    // where the GPU copies into LDS on its own (candle_wmma::lds_copy16), else a load and a
    // store; done once the caller's lds_copy_wait and a block barrier have passed.
    // TRANSPOSED: column c of the tile at dst + c * KP instead (KP then pitches the keys).
    // Paged or not is decided once per tile, so that the unpaged copies carry no division.
    template <int DMAX, int BN, int KP, int NT, bool TRANSPOSED = false>
    __device__ __forceinline__ void load_tile(const Params& p, int n0, const T* base, uint32_t rs, uint32_t bs, T* dst) const {
        if (table != nullptr) load_rows<DMAX, BN, KP, NT, TRANSPOSED, true>(p, n0, base, rs, bs, dst);
        else load_rows<DMAX, BN, KP, NT, TRANSPOSED, false>(p, n0, base, rs, bs, dst);
    }

    // load_tile's copies: a fixed count per thread (NT threads, one per element in turn)
    template <int DMAX, int BN, int KP, int NT, bool TRANSPOSED, bool PAGED>
    __device__ __forceinline__ void load_rows(const Params& p, int n0, const T* base, uint32_t rs, uint32_t bs, T* dst) const {
        if (p.vec8) {
            constexpr int V8 = DMAX / 8, N = BN * V8;
            if constexpr (!PAGED && !TRANSPOSED && KP % 8 == 0 && NT % V8 == 0 && N % NT == 0) {
                // unpaged rows in place: one address per thread, stepped by the NT / V8 rows
                // between its copies; no bounds per copy where the tile is whole
                constexpr int RS = NT / V8;
                const int r0 = threadIdx.x / V8, c = threadIdx.x % V8 * 8;
                const T* src = base + (long)(n0 + r0) * rs + c;
                const long step = (long)RS * rs;
                T* const d = dst + r0 * KP + c;
                // the tile's rows this thread copies, none where its columns are past d (a
                // number, not a flag: a per-lane flag held through the key loop is a pair of
                // SGPRs on CDNA; so is one hoisted from `c < p.d ? sk - n0 : ...`, where the
                // lane's key bound is the invariant held; n0 >= 0)
                const int rows_in = (c < p.d ? sk : 0) - n0;
                if (BN <= rows_in) {
#pragma unroll
                    for (int t = 0; t < N / NT; ++t, src += step) candle_wmma::lds_copy16(d + t * RS * KP, src);
                } else {
#pragma unroll
                    for (int t = 0; t < N / NT; ++t, src += step) {
                        if (r0 + t * RS < rows_in) candle_wmma::lds_copy16(d + t * RS * KP, src);
                        else *reinterpret_cast<uint4*>(d + t * RS * KP) = make_uint4(0, 0, 0, 0);
                    }
                }
            } else {
#pragma unroll
                for (int t = 0; t < (N + NT - 1) / NT; ++t) {
                    const int e = threadIdx.x + t * NT;
                    if (N % NT != 0 && e >= N) break;
                    const int r = e / V8, c = (e % V8) * 8, j = n0 + r;
                    // (j >= 0: no key where the columns are past d, without a flag per copy)
                    const bool in = j < (c < p.d ? sk : 0);
                    if constexpr (TRANSPOSED) {
                        union { uint4 u; T t[8]; } v;
                        v.u = make_uint4(0, 0, 0, 0);
                        if (in) v.u = *reinterpret_cast<const uint4*>(base + key_row<PAGED>(p, j, rs, bs) + c);
#pragma unroll
                        for (int k = 0; k < 8; ++k) dst[(c + k) * KP + r] = v.t[k];
                    } else if constexpr (KP % 8 != 0) {
                        // rows not 16-byte aligned in LDS (the row kernel's pitch): four 32-bit words
                        static_assert(KP % 2 == 0, "32-bit aligned rows");
                        uint4 v = make_uint4(0, 0, 0, 0);
                        if (in) v = *reinterpret_cast<const uint4*>(base + key_row<PAGED>(p, j, rs, bs) + c);
                        uint32_t* const d = reinterpret_cast<uint32_t*>(dst + r * KP + c);
                        d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
                    } else {
                        T* const d = dst + r * KP + c;
                        if (in) candle_wmma::lds_copy16(d, base + key_row<PAGED>(p, j, rs, bs) + c);
                        else *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
                    }
                }
            }
        } else {
            for (int e = threadIdx.x; e < BN * DMAX; e += NT) {
                const int r = e / DMAX, c = e % DMAX, j = n0 + r;
                T v = from_f32<T>(0.f);
                if (j < sk && c < p.d) v = base[key_row<PAGED>(p, j, rs, bs) + c];
                dst[TRANSPOSED ? c * KP + r : r * KP + c] = v;
            }
        }
    }

    // The block's BM rows of Q into LDS at pitch KP (zeros past the sequence and past d):
    // row r is query (m0 + r) / G of head head0 + (m0 + r) % G. With p.q_vec8, 16 bytes per
    // copy, issued asynchronously like load_tile's (a thread's handful, where an element
    // at a time was BM * DMAX / NT dependent loads before the first key tile's copies);
    // done once the caller's lds_copy_wait and a block barrier have passed. (Its loop is
    // load_rows' generic one over other rows: one loop for both, through a lambda, cost
    // RDNA3's 64-row d128 kernel 16 VGPRs and 9 SGPR spills with ROCm 7.2.)
    template <int DMAX, int BM, int KP, int NT>
    __device__ __forceinline__ void load_q(const Params& p, int G, T* dst) const {
        const int nrows = sq * G;
        if (KP % 8 == 0 && p.q_vec8) {
            constexpr int V8 = DMAX / 8, N = BM * V8;
#pragma unroll
            for (int t = 0; t < (N + NT - 1) / NT; ++t) {
                const int e = threadIdx.x + t * NT;
                if (N % NT != 0 && e >= N) break;
                const int r = e / V8, c = (e % V8) * 8, pr = m0 + r;
                T* const d = dst + r * KP + c;
                if (pr < nrows && c < p.d) candle_wmma::lds_copy16(d, Q + (long)(pr / G) * p.q_rs + (long)(pr % G) * p.q_hs + c);
                else *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
            }
        } else {
            for (int e = threadIdx.x; e < BM * DMAX; e += NT) {
                const int r = e / DMAX, c = e % DMAX, pr = m0 + r;
                dst[r * KP + c] = (pr < nrows && c < p.d) ? Q[(long)(pr / G) * p.q_rs + (long)(pr % G) * p.q_hs + c] : from_f32<T>(0.f);
            }
        }
    }

    // K and V rows n0 .. n0+BN into LDS at pitch KP (zeros past the sequence and past d), in
    // place once the caller's block barrier has passed
    template <int DMAX, int BN, int KP>
    __device__ __forceinline__ void load_kv(const Params& p, int n0, T* sK, T* sV) const {
        load_tile<DMAX, BN, KP, THREADS>(p, n0, Kb, p.k_rs, p.k_bs, sK);
        load_tile<DMAX, BN, KP, THREADS>(p, n0, Vb, p.v_rs, p.v_bs, sV);
        candle_wmma::lds_copy_wait();
    }

    // softmax_lse = ln(sum) + max (natural log; m in the exp2 domain), +inf for an empty row
    __device__ __forceinline__ void write_lse(const Params& p, int i, int head, float m, float l) const {
        if (p.lse == nullptr) return;
        const bool empty = l == 0.f || l != l;
        const float lse = empty ? INFINITY : m * 0.6931471805599453f + logf(l);
        const int bi = blockIdx.z;
        const long at = p.unpadded_lse ? (long)head * p.total_q + rows.row0 + i : ((long)bi * p.h + head) * p.seqlen_q + i;
        p.lse[at] = lse;
    }

    // split-KV: the partial row (d + 2 floats: acc, max, sum) of row i (`part`, in `o`)
    __device__ __forceinline__ float* partial(const Params& p, int i, int head) const {
        return static_cast<float*>(p.o) + ((((long)split * p.b + blockIdx.z) * p.h + head) * p.seqlen_q + i) * (p.d + 2);
    }
};

// The row kernel (head dim 512): scalar dot products, R query rows per warp.
template <class T, int DMAX>
__global__ void __launch_bounds__(THREADS) fwd_rows(Params p) {
    using TL = Tiles<DMAX>;
    constexpr int BN = TL::BN, R = TL::R, BM = TL::BM, DPART = TL::DPART, DT = TL::DT, KPAD = TL::KPAD;
    __shared__ T sK[BN * KPAD];
    __shared__ T sV[BN * KPAD];
    __shared__ float sQ[BM * DMAX];
    __shared__ float sP[WARPS * R * BN];

    const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
    Block<T> blk;
    if (!blk.init(p, BM, BN, 1)) return;
    const int m0 = blk.m0;

    // the block's query rows into LDS, in f32 (zeros past d and past the sequence)
    for (int e = tid; e < BM * DMAX; e += THREADS) {
        const int r = e / DMAX, c = e % DMAX, i = m0 + r;
        sQ[e] = (i < blk.sq && c < p.d) ? to_f32(blk.Q[(long)i * p.q_rs + c]) : 0.f;
    }

    float m_run[R], l_run[R], acc[R][DT];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        m_run[r] = -INFINITY;
        l_run[r] = 0.f;
#pragma unroll
        for (int t = 0; t < DT; ++t) acc[r][t] = 0.f;
    }
    const int key = lane % BN, part = lane / BN;
    RowMask rmask[R];
#pragma unroll
    for (int r = 0; r < R; ++r) rmask[r] = blk.row_mask(m0 + warp * R + r);

    for (int n0 = (blk.n_lo / BN) * BN; n0 < blk.n_hi; n0 += BN) {
        __syncthreads();  // the previous tile's K/V (and, first time, sQ) are done with
        blk.template load_kv<DMAX, BN, KPAD>(p, n0, sK, sV);
        __syncthreads();

        const int j = n0 + key;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int row = warp * R + r, i = m0 + row;
            // s = q_i · k_j: SPLIT lanes per key, DPART dims each
            const float* qrow = sQ + row * DMAX + part * DPART;
            const T* krow = sK + key * KPAD + part * DPART;
            float s = 0.f;
#pragma unroll 8
            for (int c = 0; c < DPART; ++c) s += qrow[c] * to_f32(krow[c]);
#pragma unroll
            for (int mask = BN; mask < WARP; mask <<= 1) s += shfl_xor(s, mask);
            float sv[1] = {s};
            blk.scores(p, sv, rmask[r].sees(j), i, j);
            s = sv[0];
            // online softmax over the tile (BN distinct keys: reduce over the low lane bits)
            float tmax = s;
#pragma unroll
            for (int mask = 1; mask < BN; mask <<= 1) tmax = fmaxf(tmax, shfl_xor(tmax, mask));
            const float m_new = fmaxf(m_run[r], tmax);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            const float corr = exp2f(m_run[r] - m_use);
            const float pj = exp2f(s - m_use);
            float psum = pj;
#pragma unroll
            for (int mask = 1; mask < BN; mask <<= 1) psum += shfl_xor(psum, mask);
            l_run[r] = l_run[r] * corr + psum;
            m_run[r] = m_new;
            if (part == 0) sP[(warp * R + r) * BN + key] = pj;
#pragma unroll
            for (int t = 0; t < DT; ++t) acc[r][t] *= corr;
        }
        // the warp's P rows are written by its own lanes: a wave-level barrier suffices,
        // but the block barrier keeps LDS ordering explicit on every arch
        __syncthreads();
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float* prow = sP + (warp * R + r) * BN;
#pragma unroll 4
            for (int kk = 0; kk < BN; ++kk) {
                const float pk = prow[kk];
                const T* vrow = sV + kk * KPAD;
#pragma unroll
                for (int t = 0; t < DT; ++t) acc[r][t] += pk * to_f32(vrow[lane + t * WARP]);
            }
        }
    }

    // split-KV: the partial row, unnormalised (combine merges the splits); else O = acc / l
    T* O = static_cast<T*>(p.o) + blk.rows.o_off + (long)blockIdx.y * p.o_hs;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int i = m0 + warp * R + r;
        if (i >= blk.sq) continue;
        float* const part_row = p.splits > 1 ? blk.partial(p, i, blockIdx.y) : nullptr;
        const bool empty = l_run[r] == 0.f || l_run[r] != l_run[r];
        const float inv = empty ? 0.f : 1.f / l_run[r];
#pragma unroll
        for (int t = 0; t < DT; ++t) {
            const int c = lane + t * WARP;
            if (c >= p.d) continue;
            if (part_row != nullptr) part_row[c] = acc[r][t];
            else O[(long)i * p.o_rs + c] = from_f32<T>(acc[r][t] * inv);
        }
        if (lane != 0) continue;
        if (part_row != nullptr) {
            part_row[p.d] = m_run[r];
            part_row[p.d + 1] = l_run[r];
        } else {
            blk.write_lse(p, i, blockIdx.y, m_run[r], l_run[r]);
        }
    }
}

// The wide matrix-tile kernel's shapes (head dims 160 to 256, where Q, O and the scores of
// 16 full rows per warp would not fit a lane's registers). Q·Kᵀ and P·V are 16x16x16 products
// on candle_wmma's tiles (the arch's matrix instruction, else shuffles). Each group of
// WSPLIT warps owns 16 query rows, each warp DW = DMAX / WSPLIT of the head dims: its part of
// Q·Kᵀ (the group's parts summed in LDS) and of the output (D/2 or fewer f32 accumulators
// per lane, not D). The block walks the keys BN at a time. LDS, in elements: Q, K and V at
// pitch DMAX + 8 (16-byte rows, banks shifted), each warp's scores at pitch SP (f32), the
// probabilities over the scores of the group's first warp (T, pitch 2 * SP).
template <int DMAX> struct WideTiles {
    static_assert(DMAX > 128 && DMAX <= 256, "the matrix-tile kernel takes head dims to 128, the row kernel past 256");
    static constexpr int WSPLIT = 2;
    static constexpr int BM = 16 * WARPS / WSPLIT;
    static constexpr int BN = 16;
    static constexpr int DW = DMAX / WSPLIT;
    static constexpr int KP = DMAX + 8;
    static constexpr int SP = BN + 4;
    static constexpr int PP = 2 * SP;
    static constexpr int DB = DW / 16;         // 16-wide blocks of the warp's head dims
    static constexpr int NB = BN / 16;         // 16-wide blocks of the keys
    static constexpr int ROWS = 16 / WSPLIT;   // rows of the softmax per warp
    static constexpr int LPR = WARP / ROWS;    // lanes per row, BN / LPR keys each
    static_assert(DW % 16 == 0 && BN % LPR == 0, "tile shapes");
};

#ifndef CANDLE_FA_UNROLL_LOADS
#define CANDLE_FA_UNROLL_LOADS _Pragma("unroll 1")
#endif

template <class T, int DMAX>
__global__ void __launch_bounds__(THREADS) fwd_tiles_wide(Params p) {
    namespace wm = candle_wmma;
    using TL = WideTiles<DMAX>;
    constexpr int BM = TL::BM, BN = TL::BN, KP = TL::KP, SP = TL::SP, PP = TL::PP, DB = TL::DB, NB = TL::NB;
    constexpr int WSPLIT = TL::WSPLIT, DW = TL::DW, ROWS = TL::ROWS, LPR = TL::LPR, KL = BN / LPR;
    __shared__ T sQ[BM * KP];
    __shared__ T sK[BN * KP];
    __shared__ T sV[BN * KP];
    __shared__ float sS[WARPS * 16 * SP];   // per warp: its part of the group's 16 rows of scores
    __shared__ float sRow[BM];              // a factor per row

    const int tid = threadIdx.x, warp = tid / WARP, lane = tid % WARP;
    const int group = warp / WSPLIT, wsub = warp % WSPLIT, d0 = wsub * DW;
    Block<T> blk;
    if (!blk.init(p, BM, BN, 1)) return;
    const int m0 = blk.m0;

    // the block's query rows (zeros past d and past the sequence)
    blk.template load_q<DMAX, BM, KP, THREADS>(p, 1, sQ);
    wm::fragment<wm::accumulator, 16, 16, 16, float> of[DB];
#pragma unroll
    for (int db = 0; db < DB; ++db) wm::fill_fragment(of[db], 0.f);

    const T* const Qw = sQ + group * 16 * KP + d0;
    float* const S = sS + warp * 16 * SP;
    float* const S0 = sS + group * WSPLIT * 16 * SP;  // the group's first warp's scores
    T* const P = reinterpret_cast<T*>(S0);
    float* const rowf = sRow + group * 16;
    // the softmax's state: LPR lanes own row rr of the group's 16 (KL keys each)
    const int rr = wsub * ROWS + lane / LPR, kq = lane % LPR, i = m0 + group * 16 + rr;
    float m_run = -INFINITY, l_run = 0.f;
    const RowMask rmask = blk.row_mask(i);

    for (int n0 = (blk.n_lo / BN) * BN; n0 < blk.n_hi; n0 += BN) {
        __syncthreads();  // the previous tile's K/V and P are done with (first time: Q is in)
        blk.template load_kv<DMAX, BN, KP>(p, n0, sK, sV);
        __syncthreads();

        // the warp's part of S = Q Kᵀ (its head dims): K's rows are Bᵀ, column-major B
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
            wm::fragment<wm::accumulator, 16, 16, 16, float> sf;
            wm::fill_fragment(sf, 0.f);
            CANDLE_FA_UNROLL_LOADS
            for (int db = 0; db < DB; ++db) {
                wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> qf;
                wm::fragment<wm::matrix_b, 16, 16, 16, T, wm::col_major> kf;
                wm::wmma_load_matrix(qf, Qw + db * 16, KP);
                wm::wmma_load_matrix(kf, sK + nb * 16 * KP + d0 + db * 16, KP);
                wm::wmma_mma(sf, qf, kf, sf);
            }
            wm::wmma_store_matrix(S + nb * 16, sf, SP, wm::mem_row_major);
        }
        __syncthreads();

        // online softmax of row rr over this tile's keys; P over the group's first scores
        // (each row's scores are read, then its P written, by the same LPR lanes: the
        // shuffles between order them), the row's correction factor into rowf
        float sv[KL];
#pragma unroll
        for (int c = 0; c < KL; ++c) {
            sv[c] = 0.f;
#pragma unroll
            for (int w = 0; w < WSPLIT; ++w) sv[c] += S0[w * 16 * SP + rr * SP + kq * KL + c];
        }
        blk.scores(p, sv, rmask.template bits<KL>(n0 + kq * KL), i, n0 + kq * KL);
        float tmax = -INFINITY;
#pragma unroll
        for (int c = 0; c < KL; ++c) tmax = fmaxf(tmax, sv[c]);
#pragma unroll
        for (int mask = 1; mask < LPR; mask <<= 1) tmax = fmaxf(tmax, shfl_xor(tmax, mask));
        const float m_new = fmaxf(m_run, tmax);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        const float corr = exp2f(m_run - m_use);
        float psum = 0.f;
#pragma unroll
        for (int c = 0; c < KL; ++c) {
            const float pj = exp2f(sv[c] - m_use);
            psum += pj;
            P[rr * PP + kq * KL + c] = from_f32<T>(pj);
        }
#pragma unroll
        for (int mask = 1; mask < LPR; mask <<= 1) psum += shfl_xor(psum, mask);
        l_run = l_run * corr + psum;
        m_run = m_new;
        if (kq == 0) rowf[rr] = corr;
        __syncthreads();

        // the warp's part of O = O * corr + P V
#pragma unroll
        for (int db = 0; db < DB; ++db) wm::wmma_scale_rows(of[db], rowf);
        CANDLE_FA_UNROLL_LOADS
        for (int nb = 0; nb < NB; ++nb) {
            wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> pf;
            wm::wmma_load_matrix(pf, P + nb * 16, PP);
#pragma unroll
            for (int db = 0; db < DB; ++db) {
                wm::fragment<wm::matrix_b, 16, 16, 16, T, wm::row_major> vf;
                wm::wmma_load_matrix(vf, sV + nb * 16 * KP + d0 + db * 16, KP);
                wm::wmma_mma(of[db], pf, vf, of[db]);
            }
        }
    }
    wm::lds_copy_wait();  // (Q's copies, where no key tile was visited)

    // the output through the warp's scores buffer, one 16x16 block at a time: split-KV's
    // unnormalised partial (combine merges the splits), else O = acc / l
    const bool split = p.splits > 1;
    const bool empty = l_run == 0.f || l_run != l_run;
    __syncthreads();
    if (!split && kq == 0) rowf[rr] = empty ? 0.f : 1.f / l_run;
    __syncthreads();
    T* const O = static_cast<T*>(p.o) + blk.rows.o_off + (long)blockIdx.y * p.o_hs;
#pragma unroll
    for (int db = 0; db < DB; ++db) {
        if (!split) wm::wmma_scale_rows(of[db], rowf);
        wm::wmma_store_matrix(S, of[db], SP, wm::mem_row_major);
        __syncthreads();
#pragma unroll
        for (int t = 0; t < 256 / WARP; ++t) {
            const int e = lane + t * WARP, r = e / 16, c = d0 + db * 16 + e % 16, io = m0 + group * 16 + r;
            if (io < blk.sq && c < p.d) {
                const float v = S[r * SP + e % 16];
                if (split) blk.partial(p, io, blockIdx.y)[c] = v;
                else O[(long)io * p.o_rs + c] = from_f32<T>(v);
            }
        }
        __syncthreads();
    }
    if (kq != 0 || i >= blk.sq) return;
    if (split) {
        float* const part = blk.partial(p, i, blockIdx.y);
        part[p.d] = m_run;
        part[p.d + 1] = l_run;
    } else {
        blk.write_lse(p, i, blockIdx.y, m_run, l_run);
    }
}

// The matrix-tile kernel (head dims up to 128): each warp owns MR blocks of 16 block rows
// (a row is a (query, head) pair, the G heads of a kv head packed per query), all its head
// dims. BM = 128 rows per block where there are rows to fill it, each K/V tile in LDS serving
// them all (MmaShape: 4 warps of MR = 2 on NVIDIA, 8 logical warps of MR = 1 on AMD); BM = 64
// (4 warps, MR = 1) for fewer rows (decode: G rows per sequence). Per block, the keys BN at
// a time (kWideKeys):
//   * K and V tiles in LDS (asynchronous copies where the GPU has them:
//     candle_wmma::lds_copy16), per GPU family (kKVStages): two buffers of each, tile n + BN
//     issued before tile n's matrix work, one block barrier per tile; or one of each, loaded
//     in turn so that a load always runs under matrix work: V(n) is issued before
//     S = Q K(n)ᵀ, K(n + BN) before O += P V(n);
//   * Q staged in LDS; its operands read per tile (NVIDIA: registers go to O and S) or once
//     per block into registers (AMD's 128-row blocks: kQInRegisters);
//   * S, its online softmax and P in registers, in the accumulator's own layout
//     (candle_wmma::acc16_rows): the row max and sum over the lanes holding a row; P becomes
//     P·V's A operand by register moves where the layouts coincide (NVIDIA's m16n8k16),
//     else through 16 x PP elements of LDS per warp (wmma_acc_to_a);
//   * the row sums kept per lane and combined once, at the end;
//   * masks only on the tiles some row does not see whole ([full_lo, full_hi)), tiles no
//     row sees not visited (n_lo, n_hi: causal and windows).
// The shapes and layouts per GPU family below are chosen alike by the host pass (which sizes
// the launch and its LDS) and the device pass: hipcc's host pass knows the platform only,
// the emulations define the AMD family macro (__GFX9__ ... __GFX12__) in both.
#if defined(__HIP_PLATFORM_AMD__) || defined(__GFX9__) || defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#define CANDLE_FA_AMD_SHAPES 1
#else
#define CANDLE_FA_AMD_SHAPES 0
#endif

// V's layout in LDS per GPU family (data): as in memory on NVIDIA, whose ldmatrix.trans gives
// P·V's B operand from it; transposed (a head dim's keys contiguous) on AMD, whose matrix
// B operands (MFMA, WMMA) hold consecutive keys per lane: read from V's rows they were 4
// (MFMA) or 16 (WMMA) separate 16-bit LDS reads per operand, from Vᵀ one or two wide ones.
constexpr bool kVTransposed = CANDLE_FA_AMD_SHAPES;

// Where Q's operands live during the walk over the keys, per GPU family (data): in LDS on
// NVIDIA, read again per key tile (its 255 registers per lane go to O and S of two row
// blocks); on AMD in registers in the 128-row blocks (one row block per warp: 32 VGPRs at
// d128 on CDNA, 64 on RDNA3, whose A operand is held twice), read from LDS once per block.
// The 64-row blocks (decode: bound by K/V's bandwidth) keep them in LDS: with their longer
// key tiles RDNA3's d128 kernel would spill.
constexpr bool kQInRegisters = CANDLE_FA_AMD_SHAPES;

// The warps of a 128-row block per GPU family (data): on NVIDIA 4 warps of two 16-row blocks
// (its 255 registers per lane hold both); on AMD 8 logical warps of one: 4 wavefronts on
// CDNA, one per SIMD (at 62.5 KB of LDS a CU holds one block, whose 2 wavefronts of the
// 4-warp shape left 2 of its 4 SIMDs idle), 8 on RDNA (every K/V tile serves the 128 rows in
// one walk over the keys).
constexpr int kWideWarps = CANDLE_FA_AMD_SHAPES ? 8 : 4;

// How far a tile's row max may exceed the running max (exp2 domain) before the running max,
// the row sum and O are rescaled (flash-attention-4's conditional rescale): P = exp2(k S -
// max) stays below 2^8 (f16 and bf16 keep their relative precision there), and past the first tiles
// O's rescale (DMAX / 2 multiplies per lane and row block on NVIDIA) is skipped wherever no
// row of the lane needs it
constexpr float kRescaleSlack = 8.f;

// Where the softmax scale is applied on tiles every row sees whole, per GPU family (data): in
// the exponent's multiply-add on NVIDIA (a multiply per score fewer); a multiply of its own
// on AMD, where in the exponent it made RDNA3's d96 and d128 kernels spill (ROCm 7.2's
// hipcc: up to 230 VGPRs to scratch in the 64-row d128 kernel on gfx1100)
constexpr bool kScaleInExponent = !CANDLE_FA_AMD_SHAPES;

// Whether the masked tiles add alibi's bias without testing for alibi, per GPU family (data):
// on AMD, where the test, held through the key loop, is a pair of SGPRs on CDNA's wave64 (a
// slope of 0 without alibi: kNoSlope); on NVIDIA the test, whose masked tiles (64 scores per
// lane) would otherwise pay the bias's multiply-adds
constexpr bool kBiasAlways = CANDLE_FA_AMD_SHAPES;

// K/V buffers in LDS per GPU family (data): two of each on NVIDIA, the next tile's copies
// issued at the top of the current one's work, a block barrier per tile; one of each on AMD
// (two at d128 would pass its 64 KB per workgroup), K(n + BN) loaded under O += P V(n) and
// V(n) under S = Q K(n)ᵀ, two barriers per tile.
constexpr int kKVStages = CANDLE_FA_AMD_SHAPES ? 1 : 2;

// Keys per tile of the 128-row blocks past d64 per GPU family (data): 64 on NVIDIA, whose
// second K/V buffers and S of 32 x 64 scores per warp fit (LDS 111 KB at d128, two blocks
// per SM; measured on the H200: d128 prefill from 0.76-0.85x to 0.83-0.92x Dao's speed
// against 32 keys); 32 on AMD, whose 64 KB per workgroup holds one 32-key K/V buffer at d128.
// The decode blocks (64 rows) and head dims to 64 take 64 keys everywhere.
constexpr int kWideKeys = CANDLE_FA_AMD_SHAPES ? 32 : 64;

// The LDS a block may use per GPU family (data): AMD's 64 KB per workgroup; on NVIDIA what
// keeps two blocks per SM (the H100's and H200's 228 KB, less 1 KB per block reserved).
constexpr size_t kLdsBytes = CANDLE_FA_AMD_SHAPES ? 65536 : 113 * 1024;

// Shapes per head-dim tile, MR and warps per block W as data (BN: keys per tile); LDS
// (dynamic, lds_bytes): Q, K, V at pitch DMAX + 8 (16-byte rows, banks shifted; Vᵀ at BN + 8)
// and P at pitch BN + 8: at most 111 KB on NVIDIA (d128, BM 128 with BN 64, two K/V buffers)
// and 62.5 KB on AMD (d128: BM 128 with BN 32, BM 64 with BN 64), within kLdsBytes.
template <int DMAX, int MR_, int W_> struct MmaTiles {
    static_assert(DMAX <= 128, "the wide kernel takes head dims past 128");
    static constexpr int MR = MR_;                        // 16-row blocks per warp
    static constexpr int W = W_;                          // logical warps per block
    static constexpr int THREADS = WARP * W;
    static constexpr int BM = 16 * MR * W;
    static constexpr int BN = BM <= 64 || DMAX <= 64 ? 64 : kWideKeys;
    static constexpr int KP = DMAX + 8;
    static constexpr int PP = BN + 8;
    static constexpr int VP = kVTransposed ? PP : KP;     // V's pitch: keys (transposed) or dims
    static constexpr bool QREG = kQInRegisters && BM == 128;  // Q's operands in registers
    static constexpr int DB = DMAX / 16;                  // 16-wide blocks of the head dims
    static constexpr int NB = BN / 16;                    // 16-wide blocks of the keys
    static constexpr int STAGES = kKVStages;              // K and V buffers of each
    static constexpr int K_TILE = BN * KP, V_TILE = kVTransposed ? DMAX * PP : BN * KP;  // in elements
    static constexpr int Q_AT = 0, K_AT = BM * KP, V_AT = K_AT + STAGES * K_TILE;
    static constexpr int P_AT = V_AT + STAGES * V_TILE;
    static constexpr size_t lds_bytes = size_t(P_AT + W * 16 * PP) * 2;
    static_assert(lds_bytes <= kLdsBytes, "LDS past the family's share per block");
};

// The tiles of a block of BM rows (64: 4 warps of one row block; 128: kWideWarps warps)
template <int DMAX, int BM> struct MmaShape {
    static_assert(BM == 64 || BM == 128, "blocks of 64 or 128 rows");
    static constexpr int W = BM == 64 ? WARPS : kWideWarps;
    using type = MmaTiles<DMAX, BM / (16 * W), W>;
};
template <int DMAX, int BM> using MmaTilesOf = typename MmaShape<DMAX, BM>::type;

// The 16-row blocks a warp holds at once, per arch family (data): two on NVIDIA's matrix
// cores, whose 255 registers per lane hold their O and S; one elsewhere (AMD's shapes give a
// warp one; the portable shuffles spread 8 rows of an accumulator over each lane); a warp
// with more (MmaTiles::MR) walks the keys once per group of blocks.
#if defined(CANDLE_WMMA_NVIDIA)
constexpr int kArchRowBlocks = 2;
#else
constexpr int kArchRowBlocks = 1;
#endif

// Whether a tiles kernel states to the compiler that its block is whole wavefronts, per GPU
// family and shape (data, from ROCm 7.2's hipcc; the device pass only: the host pass and the
// CPU emulations have neither the statement nor the attribute below). candle_wmma's check
// for a partial wavefront (a trap) then folds away, whose flag CDNA's tiles kernels held in
// SGPRs through the key loop: their last SGPR spills (2-4 in 8 kernels on gfx90a, 2 in the
// bf16 d96 one on gfx942 and gfx950). Not in gfx942's and gfx950's 128-row d128 kernels,
// which spill nothing with the check and 2-4 VGPRs without it (at two wavefronts per SIMD).
// The 128-row kernels that state it also keep their registers to two wavefronts per SIMD, as
// with the check (without the attribute the d128 ones took 256 VGPRs and 2-4 AGPRs: one).
#if defined(CANDLE_WMMA_MFMA) && defined(__AMDGCN__)
#if defined(__gfx90a__)
constexpr bool kWholeWavesD128 = true;
#else
constexpr bool kWholeWavesD128 = false;
#endif
template <int DMAX, int BM> constexpr bool kWholeWaves = kWholeWavesD128 || !(DMAX == 128 && BM == 128);
#define CANDLE_FA_TILES_WAVES(dmax, bm) __attribute__((amdgpu_waves_per_eu(kWholeWaves<dmax, bm> && (bm) == 128 ? 2 : 1)))
#else
#define CANDLE_FA_TILES_WAVES(dmax, bm)
#endif

#ifndef CANDLE_FA_DYNAMIC_LDS
#define CANDLE_FA_DYNAMIC_LDS(name) extern __shared__ __attribute__((aligned(16))) unsigned char name[]
#endif

template <class T, int DMAX, int BM_>
__global__ void __launch_bounds__((MmaTilesOf<DMAX, BM_>::THREADS)) CANDLE_FA_TILES_WAVES(DMAX, BM_) fwd_tiles(Params p) {
    namespace wm = candle_wmma;
    using TL = MmaTilesOf<DMAX, BM_>;
    using AR = wm::acc16_rows;
    constexpr int BM = TL::BM, BN = TL::BN, KP = TL::KP, PP = TL::PP, DB = TL::DB, NB = TL::NB, RG = AR::groups;
    constexpr int NT = TL::THREADS;
    // the warp's MRW row blocks, MR at once in PASSES walks over the keys
    constexpr int MRW = TL::MR, MR = MRW < kArchRowBlocks ? MRW : kArchRowBlocks, PASSES = MRW / MR;
    CANDLE_FA_DYNAMIC_LDS(candle_fa_lds);
    T* const sQ = reinterpret_cast<T*>(candle_fa_lds) + TL::Q_AT;
    T* const sK = reinterpret_cast<T*>(candle_fa_lds) + TL::K_AT;
    T* const sV = reinterpret_cast<T*>(candle_fa_lds) + TL::V_AT;

    const int tid = threadIdx.x, warp = tid / WARP;
    const int G = p.h / p.h_k;
#if defined(CANDLE_WMMA_MFMA) && defined(__AMDGCN__)
    // the block is whole wavefronts (NT threads), stated to the compiler (kWholeWaves)
    if constexpr (kWholeWaves<DMAX, BM_>) {
        static_assert(NT % wm::detail::kWave == 0, "whole wavefronts");
        const unsigned bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
        __builtin_assume((bx * by * bz) % wm::detail::kWave == 0);
    }
#endif
    Block<T> blk;
    if (!blk.init(p, BM, BN, G)) return;
    const int m0 = blk.m0, nrows = blk.sq * G;

    // the block's rows of Q into LDS (zeros past d and past the sequence)
    blk.template load_q<DMAX, BM, KP, NT>(p, G, sQ);
    T* const Pw = reinterpret_cast<T*>(candle_fa_lds) + TL::P_AT + warp * 16 * PP;
    const int tile_warp = warp / AR::tiles * AR::tiles;
    if constexpr (TL::QREG) {
        wm::lds_copy_wait();
        __syncthreads();  // Q is in, for the operand loads below
    }

#pragma unroll 1
  for (int pass = 0; pass < PASSES; ++pass) {
    // every warp done with the previous pass's last K/V tile before this pass's first copies
    // (with two buffers that tile's may be the buffers the first copies fill)
    if constexpr (PASSES > 1) {
        if (pass > 0) __syncthreads();
    }
    const T* const Qw = sQ + (warp * MRW + pass * MR) * 16 * KP;
    // a pair of logical warps works while its first has a row: uniform over a wavefront on
    // every arch (CDNA's wave64 is such a pair: its two tiles are one instruction's, and its
    // halves share the wavefront barriers of the portable path)
    // (wave_uniform: tested in scalar registers, not as a lane mask held through the loop)
    const bool working = m0 + (wave_uniform(warp / 2 * 2) * MRW + pass * MR) * 16 < nrows;
    // this lane's rows: the block row of group g of row block mr (of its own warp or, on
    // CDNA's matrix cores, of the wavefront's other logical warp)
    auto block_row = [&](int mr, int g) { return m0 + ((tile_warp + AR::tile(g)) * MRW + pass * MR + mr) * 16 + AR::row(g); };

    // Q's operands, where they are held in registers (kQInRegisters)
    wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> qr[MR][TL::QREG ? DB : 1];
    if constexpr (TL::QREG) {
        if (working) {
#pragma unroll
            for (int mr = 0; mr < MR; ++mr)
#pragma unroll
                for (int db = 0; db < DB; ++db) wm::wmma_load_matrix_lds(qr[mr][db], Qw + mr * 16 * KP + db * 16, KP);
        }
    }

    float m_run[MR][RG], l_run[MR][RG];
    wm::fragment<wm::accumulator, 16, 16, 16, float> of[MR][DB];
#pragma unroll
    for (int mr = 0; mr < MR; ++mr) {
#pragma unroll
        for (int g = 0; g < RG; ++g) {
            m_run[mr][g] = -INFINITY;
            l_run[mr][g] = 0.f;
        }
#pragma unroll
        for (int db = 0; db < DB; ++db) wm::fill_fragment(of[mr][db], 0.f);
    }

    const int n_first = (blk.n_lo / BN) * BN;
    constexpr int STAGES = TL::STAGES;
    if (n_first < blk.n_hi) {
        blk.template load_tile<DMAX, BN, KP, NT>(p, n_first, blk.Kb, p.k_rs, p.k_bs, sK);
        if constexpr (STAGES == 2) blk.template load_tile<DMAX, BN, TL::VP, NT, kVTransposed>(p, n_first, blk.Vb, p.v_rs, p.v_bs, sV);
    }
    for (int n0 = n_first, st = 0; n0 < blk.n_hi; n0 += BN, st ^= STAGES - 1) {
        const T* const sKt = sK + st * TL::K_TILE;
        const T* const sVt = sV + st * TL::V_TILE;
        wm::lds_copy_wait();
        // two buffers: K(n0), V(n0) (first time: Q) are in, every warp is done with tile
        // n0 - BN; one: K(n0) (first time: Q) is in, every warp is done with V(n0 - BN)
        __syncthreads();
        if constexpr (STAGES == 2) {
            if (n0 + BN < blk.n_hi) {
                blk.template load_tile<DMAX, BN, KP, NT>(p, n0 + BN, blk.Kb, p.k_rs, p.k_bs, sK + (st ^ 1) * TL::K_TILE);
                blk.template load_tile<DMAX, BN, TL::VP, NT, kVTransposed>(p, n0 + BN, blk.Vb, p.v_rs, p.v_bs, sV + (st ^ 1) * TL::V_TILE);
            }
        } else {
            blk.template load_tile<DMAX, BN, TL::VP, NT, kVTransposed>(p, n0, blk.Vb, p.v_rs, p.v_bs, sV);
        }

        wm::fragment<wm::accumulator, 16, 16, 16, float> sf[MR][NB];
        float corr[MR][RG];
        bool rescale = false;
        if (working) {
            // S = Q Kᵀ (K's rows are Bᵀ, column-major B), a 16-wide block of head dims at a time
#pragma unroll
            for (int mr = 0; mr < MR; ++mr)
#pragma unroll
                for (int nb = 0; nb < NB; ++nb) wm::fill_fragment(sf[mr][nb], 0.f);
#pragma unroll
            for (int db = 0; db < DB; ++db) {
                wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> qf[MR];
                wm::fragment<wm::matrix_b, 16, 16, 16, T, wm::col_major> kf[NB];
#pragma unroll
                for (int mr = 0; mr < MR; ++mr) {
                    if constexpr (TL::QREG) qf[mr] = qr[mr][db];
                    else wm::wmma_load_matrix_lds(qf[mr], Qw + mr * 16 * KP + db * 16, KP);
                }
#pragma unroll
                for (int nb = 0; nb < NB; ++nb) wm::wmma_load_matrix_lds(kf[nb], sKt + nb * 16 * KP + db * 16, KP);
#pragma unroll
                for (int mr = 0; mr < MR; ++mr)
#pragma unroll
                    for (int nb = 0; nb < NB; ++nb) wm::wmma_mma(sf[mr][nb], qf[mr], kf[nb], sf[mr][nb]);
            }
            // the scores in the exp2 domain are k * S: on tiles every row sees whole the scale
            // times log2(e), in the exponent's multiply-add below (kScaleInExponent) or here;
            // elsewhere the scores are scaled and masked here (k = 1)
            const bool whole = n0 >= blk.full_lo && n0 + BN <= blk.full_hi && blk.plain;
            const float sl2 = p.scale * 1.4426950408889634f;
            const float k = kScaleInExponent && whole ? sl2 : 1.f;
            if (whole) {
                if constexpr (!kScaleInExponent) {
#pragma unroll
                    for (int mr = 0; mr < MR; ++mr)
#pragma unroll
                        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                            for (int s = 0; s < sf[mr][nb].num_elements; ++s) sf[mr][nb].x[s] *= sl2;
                }
            } else {
#pragma unroll
                for (int mr = 0; mr < MR; ++mr)
#pragma unroll
                    for (int g = 0; g < RG; ++g) {
                        const int pr = block_row(mr, g), i = pr / G;
                        const uint64_t seen = blk.row_mask(i).bits64(n0);
                        const float sl = kBiasAlways || p.alibi != nullptr ? blk.slopes[(pr % G) * blk.slope_step] : 0.f;
#pragma unroll
                        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                            for (int s = 0; s < sf[mr][nb].num_elements; ++s) {
                                if (AR::group(s) != g) continue;
                                const int kc = nb * 16 + AR::col(s);
                                sf[mr][nb].x[s] = blk.template score<kBiasAlways>(p, sf[mr][nb].x[s], unsigned(seen >> kc) & 1u, sl, i, n0 + kc);
                            }
                    }
            }
            // online softmax: the row max over the tile, P = exp2(k S - max), the sums per lane;
            // the running max kept while a tile's exceeds it by at most kRescaleSlack
#pragma unroll
            for (int mr = 0; mr < MR; ++mr) {
                float mx[RG];
#pragma unroll
                for (int g = 0; g < RG; ++g) mx[g] = -INFINITY;
#pragma unroll
                for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                    for (int s = 0; s < sf[mr][nb].num_elements; ++s) mx[AR::group(s)] = fmaxf(mx[AR::group(s)], sf[mr][nb].x[s]);
                float m_use[RG];
#pragma unroll
                for (int g = 0; g < RG; ++g) {
                    const float m_new = fmaxf(m_run[mr][g], AR::max(mx[g]) * k);
                    if (m_new - m_run[mr][g] <= kRescaleSlack) {
                        m_use[g] = m_run[mr][g];
                        corr[mr][g] = 1.f;
                    } else {
                        m_use[g] = m_new == -INFINITY ? 0.f : m_new;
                        corr[mr][g] = exp2_softmax(m_run[mr][g] - m_use[g]);
                        m_run[mr][g] = m_new;
                        l_run[mr][g] *= corr[mr][g];
                        rescale = true;
                    }
                }
#pragma unroll
                for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                    for (int s = 0; s < sf[mr][nb].num_elements; ++s) {
                        const float pj = exp2_softmax(fmaf(sf[mr][nb].x[s], k, -m_use[AR::group(s)]));
                        l_run[mr][AR::group(s)] += pj;
                        sf[mr][nb].x[s] = pj;
                    }
            }
        }

        if constexpr (STAGES == 1) {
            wm::lds_copy_wait();
            __syncthreads();  // V(n0) is in; every warp is done with K(n0)
            if (n0 + BN < blk.n_hi) blk.template load_tile<DMAX, BN, KP, NT>(p, n0 + BN, blk.Kb, p.k_rs, p.k_bs, sK);
        }

        if (working) {
            // O = O * corr + P V (corr is 1 in most tiles past the first few)
            if (rescale) {
#pragma unroll
                for (int mr = 0; mr < MR; ++mr)
#pragma unroll
                    for (int db = 0; db < DB; ++db)
#pragma unroll
                        for (int s = 0; s < of[mr][db].num_elements; ++s) of[mr][db].x[s] *= corr[mr][AR::group(s)];
            }
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) {
                wm::fragment<wm::matrix_a, 16, 16, 16, T, wm::row_major> pf[MR];
#pragma unroll
                for (int mr = 0; mr < MR; ++mr) wm::wmma_acc_to_a(pf[mr], sf[mr][nb], Pw, PP);
#pragma unroll
                for (int db = 0; db < DB; ++db) {
                    using VLayout = typename std::conditional<kVTransposed, wm::col_major, wm::row_major>::type;
                    wm::fragment<wm::matrix_b, 16, 16, 16, T, VLayout> vf;
                    if constexpr (kVTransposed) wm::wmma_load_matrix_lds(vf, sVt + db * 16 * TL::VP + nb * 16, TL::VP);
                    else wm::wmma_load_matrix_lds(vf, sVt + nb * 16 * KP + db * 16, KP);
#pragma unroll
                    for (int mr = 0; mr < MR; ++mr) wm::wmma_mma(of[mr][db], pf[mr], vf, of[mr][db]);
                }
            }
        }
    }
    wm::lds_copy_wait();  // (Q's copies, where no key tile was visited)
    if (!working) continue;  // (the next pass's rows are further still)

    // each row's sum over its lanes; split-KV's unnormalised partial (combine merges the
    // splits), else O = acc / l, straight from the accumulators
    const bool split = p.splits > 1;
    T* const O = static_cast<T*>(p.o) + blk.rows.o_off;
#pragma unroll
    for (int mr = 0; mr < MR; ++mr) {
        // per row of the lane's, worked out once, not per element: 1 / sum, its query and
        // head, whether it is within the sequence (in), and where its output row starts
        // (split-KV's partial or O's, from p.o or O)
        float inv[RG];
        long orow[RG];
        bool in[RG];
        int qi[RG], qh[RG];
#pragma unroll
        for (int g = 0; g < RG; ++g) {
            l_run[mr][g] = AR::sum(l_run[mr][g]);
            const bool empty = l_run[mr][g] == 0.f || l_run[mr][g] != l_run[mr][g];
            inv[g] = split ? 1.f : (empty ? 0.f : 1.f / l_run[mr][g]);
            const int pr = block_row(mr, g);
            qi[g] = pr / G;
            qh[g] = blk.head0 + pr % G;
            in[g] = qi[g] < blk.sq;
            orow[g] = split ? blk.partial(p, qi[g], qh[g]) - static_cast<float*>(p.o) : (long)qi[g] * p.o_rs + (long)qh[g] * p.o_hs;
        }
        if (split) {
#pragma unroll
            for (int db = 0; db < DB; ++db)
#pragma unroll
                for (int s = 0; s < of[mr][db].num_elements; ++s) {
                    const int g = AR::group(s), c = db * 16 + AR::col(s);
                    if (in[g] && c < p.d) static_cast<float*>(p.o)[orow[g] + c] = of[mr][db].x[s];
                }
        } else {
#pragma unroll
            for (int db = 0; db < DB; ++db)
#pragma unroll
                for (int s = 0; s < of[mr][db].num_elements; ++s) {
                    const int g = AR::group(s), c = db * 16 + AR::col(s);
                    if (in[g] && c < p.d) O[orow[g] + c] = from_f32<T>(of[mr][db].x[s] * inv[g]);
                }
        }
        if (AR::lane_in_row() != 0) continue;
#pragma unroll
        for (int g = 0; g < RG; ++g) {
            if (!in[g]) continue;
            if (split) {
                float* const part = static_cast<float*>(p.o) + orow[g];
                part[p.d] = m_run[mr][g];
                part[p.d + 1] = l_run[mr][g];
            } else {
                blk.write_lse(p, qi[g], qh[g], m_run[mr][g], l_run[mr][g]);
            }
        }
    }
  }
}

// Merges a row's split-KV partials: one warp per (row, head, batch). With M the largest
// running max (exp2 domain), each split weighs exp2(m_s - M): O = sum acc_s w_s / sum l_s w_s.
template <class T>
__global__ void __launch_bounds__(THREADS) combine(Params p) {
    const int bi = blockIdx.z, head = blockIdx.y, lane = threadIdx.x % WARP;
    const int i = blockIdx.x * WARPS + threadIdx.x / WARP;
    const Rows rows = rows_of(p, bi);
    if (i >= rows.sq) return;
    const long stride = (long)p.b * p.h * p.seqlen_q * (p.d + 2);
    const float* part = p.part + (((long)bi * p.h + head) * p.seqlen_q + i) * (p.d + 2);
    float m = -INFINITY;
    for (int s = 0; s < p.splits; ++s) m = fmaxf(m, part[s * stride + p.d]);
    const float m_use = m == -INFINITY ? 0.f : m;
    float l = 0.f;
    for (int s = 0; s < p.splits; ++s) l += part[s * stride + p.d + 1] * exp2f(part[s * stride + p.d] - m_use);
    const bool empty = l == 0.f || l != l;
    const float inv = empty ? 0.f : 1.f / l;
    T* O = static_cast<T*>(p.o) + rows.o_off + (long)head * p.o_hs;
    for (int c = lane; c < p.d; c += WARP) {
        float a = 0.f;
        for (int s = 0; s < p.splits; ++s) a += part[s * stride + c] * exp2f(part[s * stride + p.d] - m_use);
        O[(long)i * p.o_rs + c] = from_f32<T>(a * inv);
    }
    if (lane == 0 && p.lse != nullptr) {
        const float lse = empty ? INFINITY : m * 0.6931471805599453f + logf(l);
        const long at = p.unpadded_lse ? (long)head * p.total_q + rows.row0 + i : ((long)bi * p.h + head) * p.seqlen_q + i;
        p.lse[at] = lse;
    }
}

// Blocks that keep the GPU busy; a query tile is split over at most MAX_SPLITS blocks, each
// with at least MIN_SPLIT_KEYS keys, or MIN_SPLIT_KEYS_WIDE in blocks of more than 64 rows
// (prefill), whose partials (a row of f32 per block row) and merge cost more than a
// 256-key share saves: H200, b1 prefill at 512 keys d128, 0.079 ms split in two against
// 0.055 ms whole (Dao's 0.037-0.041 ms).
constexpr long BUSY_BLOCKS = 512;
constexpr int MAX_SPLITS = 64;
constexpr int MIN_SPLIT_KEYS = 256;
constexpr int MIN_SPLIT_KEYS_WIDE = 512;

// Which kernel takes a head-dim tile: up to 128 the matrix tiles (the G heads of a kv head
// packed per query: gridDim.y is h_k), to 256 the wide matrix tiles, 512 (paged decode) the
// row kernel, whose registers per lane do not grow with 16-row tiles (those two: a head per
// block, gridDim.y is h).
enum Kernel { TILES, WIDE_TILES, ROWS };
template <int DMAX> constexpr Kernel kernel_of() { return DMAX <= 128 ? TILES : (DMAX <= 256 ? WIDE_TILES : ROWS); }

template <class T, int DMAX, Kernel K = kernel_of<DMAX>()> struct Fwd;
template <class T, int DMAX> struct Fwd<T, DMAX, TILES> {
    static int heads_per_row(const Params& p) { return p.h / p.h_k; }
    // MR 2 where the rows fill more than one 64-row block
    static bool wide(const Params& p) { return (long)p.seqlen_q * heads_per_row(p) > 64; }
    static int block_rows(const Params& p) { return wide(p) ? 128 : 64; }
    template <int BM>
    static void run_rows(const Params& p, dim3 grid, hipStream_t stream) {
        using TL = MmaTilesOf<DMAX, BM>;
        constexpr size_t lds = TL::lds_bytes;
        // LDS past the 48 KB a kernel gets without asking (NVIDIA's default; AMD's is 64 KB),
        // asked on every launch: the attribute belongs to the current device, and a
        // function-local static would need C++'s runtime (__cxa_guard_*), which the kernels'
        // static library is linked without
        if constexpr (lds > 48 * 1024)
            (void)hipFuncSetAttribute(reinterpret_cast<const void*>(&fwd_tiles<T, DMAX, BM>),
                                      hipFuncAttributeMaxDynamicSharedMemorySize, int(lds));
        fwd_tiles<T, DMAX, BM><<<grid, dim3(TL::THREADS), lds, stream>>>(p);
    }
    static void run(const Params& p, dim3 grid, hipStream_t stream) {
        if (wide(p)) run_rows<128>(p, grid, stream);
        else run_rows<64>(p, grid, stream);
    }
};
template <class T, int DMAX> struct Fwd<T, DMAX, WIDE_TILES> {
    static int block_rows(const Params&) { return WideTiles<DMAX>::BM; }
    static int heads_per_row(const Params&) { return 1; }
    static void run(const Params& p, dim3 grid, hipStream_t stream) { fwd_tiles_wide<T, DMAX><<<grid, dim3(THREADS), 0, stream>>>(p); }
};
template <class T, int DMAX> struct Fwd<T, DMAX, ROWS> {
    static int block_rows(const Params&) { return Tiles<DMAX>::BM; }
    static int heads_per_row(const Params&) { return 1; }
    static void run(const Params& p, dim3 grid, hipStream_t stream) { fwd_rows<T, DMAX><<<grid, dim3(THREADS), 0, stream>>>(p); }
};

template <class T, int DMAX>
void launch(const Params& p, hipStream_t stream) {
    using F = Fwd<T, DMAX>;
    const int G = F::heads_per_row(p);
    const int bm = F::block_rows(p);
    const int qtiles = (p.seqlen_q * G + bm - 1) / bm;
    const long blocks = (long)qtiles * (p.h / G) * p.b;
    long splits = blocks >= BUSY_BLOCKS ? 1 : (BUSY_BLOCKS + blocks - 1) / blocks;
    splits = splits < MAX_SPLITS ? splits : MAX_SPLITS;
    const int min_keys = bm > 64 ? MIN_SPLIT_KEYS_WIDE : MIN_SPLIT_KEYS;
    splits = splits < p.seqlen_k / min_keys ? splits : p.seqlen_k / min_keys;
    if (splits > 1) {
        Params s = p;
        s.splits = (int)splits;
        const size_t bytes = (size_t)splits * p.b * p.h * p.seqlen_q * (p.d + 2) * sizeof(float);
        if (hipMallocAsync(reinterpret_cast<void**>(&s.part), bytes, stream) == hipSuccess) {
            Params f = s;  // the forward kernels write the partials through `o`
            f.o = s.part;
            F::run(f, dim3(qtiles * s.splits, p.h / G, p.b), stream);
            combine<T><<<dim3((p.seqlen_q + WARPS - 1) / WARPS, p.h, p.b), dim3(THREADS), 0, stream>>>(s);
            (void)hipFreeAsync(s.part, stream);
            return;
        }
        (void)hipGetLastError();  // no stream-ordered allocator: the unsplit kernel
    }
    F::run(p, dim3(qtiles, p.h / G, p.b), stream);
}

template <class T>
void dispatch(const Params& p, hipStream_t stream) {
    if (p.d <= 32) launch<T, 32>(p, stream);
    else if (p.d <= 64) launch<T, 64>(p, stream);
    else if (p.d <= 96) launch<T, 96>(p, stream);
    else if (p.d <= 128) launch<T, 128>(p, stream);
    else if (p.d <= 160) launch<T, 160>(p, stream);
    else if (p.d <= 192) launch<T, 192>(p, stream);
    else if (p.d <= 224) launch<T, 224>(p, stream);
    else if (p.d <= 256) launch<T, 256>(p, stream);
    else launch<T, 512>(p, stream);
}

}  // namespace candle_fa

extern "C" void run_mha(
    void* q_ptr, void* k_ptr, void* v_ptr, void* o_ptr, void* softmax_lse_ptr, void* alibi_slopes_ptr,
    int32_t* cu_seqlens_q_ptr, int32_t* cu_seqlens_k_ptr,
    uint32_t q_batch_stride, uint32_t k_batch_stride, uint32_t v_batch_stride, uint32_t o_batch_stride,
    uint32_t alibi_slopes_batch_stride,
    uint32_t q_row_stride, uint32_t k_row_stride, uint32_t v_row_stride, uint32_t o_row_stride,
    uint32_t q_head_stride, uint32_t k_head_stride, uint32_t v_head_stride, uint32_t o_head_stride,
    uint32_t b, uint32_t h, uint32_t h_k, uint32_t d, uint32_t d_rounded, float softmax_scale,
    uint32_t seqlen_q, uint32_t seqlen_k, uint32_t seqlen_q_rounded, uint32_t seqlen_k_rounded, uint32_t total_q,
    int is_bf16, int is_causal, int unpadded_lse,
    int window_size_left, int window_size_right,
    float softcap,
    int32_t* block_table_ptr, uint32_t block_table_batch_stride, int page_block_size,
    int32_t* mm_prefix_ranges_ptr, uint32_t mm_prefix_range_batch_stride, int max_mm_prefix_ranges,
    void* stream_ptr) {
    (void)d_rounded; (void)seqlen_q_rounded; (void)seqlen_k_rounded;
    candle_fa::Params p;
    p.q = q_ptr; p.k = k_ptr; p.v = v_ptr; p.o = o_ptr;
    p.lse = static_cast<float*>(softmax_lse_ptr);
    p.alibi = static_cast<const float*>(alibi_slopes_ptr);
    p.cu_q = cu_seqlens_q_ptr; p.cu_k = cu_seqlens_k_ptr;
    p.q_bs = q_batch_stride; p.k_bs = k_batch_stride; p.v_bs = v_batch_stride; p.o_bs = o_batch_stride;
    p.alibi_bs = alibi_slopes_batch_stride;
    p.q_rs = q_row_stride; p.k_rs = k_row_stride; p.v_rs = v_row_stride; p.o_rs = o_row_stride;
    p.q_hs = q_head_stride; p.k_hs = k_head_stride; p.v_hs = v_head_stride; p.o_hs = o_head_stride;
    p.b = (int)b; p.h = (int)h; p.h_k = (int)h_k; p.d = (int)d;
    p.seqlen_q = (int)seqlen_q; p.seqlen_k = (int)seqlen_k; p.total_q = (int)total_q;
    // as upstream: with a softcap the scores are softcap * tanh(qk * scale / softcap)
    if (softcap > 0.f) {
        p.softcap_in = softmax_scale / softcap;
        p.scale = softcap;
    } else {
        p.softcap_in = 0.f;
        p.scale = softmax_scale;
    }
    p.causal = is_causal; p.unpadded_lse = unpadded_lse;
    p.wl = window_size_left; p.wr = window_size_right;
    p.block_table = block_table_ptr; p.bt_bs = block_table_batch_stride; p.page = page_block_size;
    p.mm = mm_prefix_ranges_ptr; p.mm_bs = mm_prefix_range_batch_stride; p.mm_max = max_mm_prefix_ranges;
    p.splits = 1; p.part = nullptr;
    p.vec8 = (reinterpret_cast<uintptr_t>(k_ptr) | reinterpret_cast<uintptr_t>(v_ptr)) % 16 == 0
             && (k_batch_stride | v_batch_stride | k_row_stride | v_row_stride | k_head_stride | v_head_stride | d) % 8 == 0;
    p.q_vec8 = reinterpret_cast<uintptr_t>(q_ptr) % 16 == 0 && (q_batch_stride | q_row_stride | q_head_stride | d) % 8 == 0;
    hipStream_t stream = static_cast<hipStream_t>(stream_ptr);
    if (is_bf16) candle_fa::dispatch<candle_bf16>(p, stream);
    else candle_fa::dispatch<__half>(p, stream);
}
