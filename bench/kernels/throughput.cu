// bench/kernels/throughput.cu: kernel-throughput benchmark, ORIGINAL candle-kernels
// (CUDA, built with nvcc) against OUR translation (generated/kernels HIP, built
// with nvcc through hip-on-cuda/include), on one NVIDIA GPU.
//
// Both builds get the same launch configurations (candle's own, as candle-core
// / candle-nn 0.11.1 launch them) and bit-identical inputs (shared, read-only
// device buffers). Module kernels are loaded from two cubins per module with
// cuModuleLoad and started with cuLaunchKernel; the static-library units
// (moe, mmvq_gguf, mmq_gguf) are called through their extern "C" launchers in
// two dlopen'ed shared libraries, on the same stream.
//
// Per kernel: one verification run per side (outputs compared bitwise, else
// within a small relative tolerance: f32 1e-5 (1e-4 for the MoE / mmq_gguf sums
// over K), f16 2e-3, bf16 1.6e-2; a mismatch is printed as a WARNING). When the
// outputs are not bitwise equal, each side is run once more to see whether it
// is deterministic, and mmq_gguf q4_0 / moe_gemm_gguf_prefill are also compared
// with an independent reference (which side is right?). Then warm-up, then
// interleaved timing samples (A B, B A, ...) with CUDA events, each sample `reps`
// back-to-back calls; at least 20 samples and at least ~50 ms per side. The
// per-call time reported is the median over samples.
//
// Bytes moved (the compulsory traffic: what the kernel must read + write once):
//   elementwise (unary, binary, affine, cast, copy): inputs + output, n * sizes
//                (fill: output only)
//   reduce (fast_*): input n * size + output rows * size (argmax: rows * 4)
//   softmax, rmsnorm, layernorm: input + output (n * size each) + alpha/beta (cols)
//   index_select / gather: ids + gathered source elements + output
//   scatter, scatter_add, index_add: src + ids + dst read and written once
//   im2col: source + output; conv1d / conv2d: source + kernel + output
//   asort: input n * size + output n * 4
//   matmul-like (mmvq, mmq, mmvq_gguf, mmq_gguf, moe): weight bytes (for MoE only
//                the experts that tokens are routed to) + activation bytes (the
//                q8_1 blocks the kernel reads, or the f32/bf16 input for MoE
//                launchers that quantize themselves) + output bytes
// `elements` is the element count of the problem: input elements for
// elementwise / reduce / sort / index, output elements for conv, N*K weight
// elements for matmul-like kernels.
// Peak HBM bandwidth = 2 * memory clock (kHz) * 1000 * bus width (bits) / 8.
// On the H100 (CUDA 13.0) the whole run (64 kernels) takes about 70 s after the builds.
//
// Build (run-kernel-bench.sh does all this):
//   nvcc -std=c++17 -O2 -o throughput bench/kernels/throughput.cu -lcuda   (dlopen is in glibc >= 2.34)
// Run:
//   throughput --orig-dir DIR (ORIGINAL <module>.cubin) --gen-dir DIR (OUR <module>.co)
//              --orig-so liboriginal_launchers.so --gen-so libcandle_rocm_launchers.so
//              --tsv OUT.tsv [--nvcc "nvcc version"] [--only fam1,fam2] [--min-ms 50]
// Writes OUT.tsv (# comments, then the header
// family kernel elements bytes original_us translated_us ratio original_pct_peak translated_pct_peak)
// and a readable table with per-family geometric-mean ratios on stdout.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

// ---------------------------------------------------------------------------------------------
// Errors, partial output
// ---------------------------------------------------------------------------------------------

static std::vector<std::string> g_tsv_comments;
static std::vector<std::string> g_tsv_rows;
static std::string g_tsv_path;
static const char* kHeader =
    "family\tkernel\telements\tbytes\toriginal_us\ttranslated_us\tratio\toriginal_pct_peak\ttranslated_pct_peak";

static void write_tsv() {
    if (g_tsv_path.empty()) return;
    FILE* f = fopen(g_tsv_path.c_str(), "w");
    if (!f) { fprintf(stderr, "cannot write %s\n", g_tsv_path.c_str()); return; }
    for (auto& c : g_tsv_comments) fprintf(f, "# %s\n", c.c_str());
    fprintf(f, "%s\n", kHeader);
    for (auto& r : g_tsv_rows) fprintf(f, "%s\n", r.c_str());
    fclose(f);
}

[[noreturn]] static void die(const char* fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "throughput: error: %s\n", buf);
    fflush(stdout);
    g_tsv_comments.push_back(std::string("ERROR (run aborted, rows below are partial): ") + buf);
    write_tsv();
    exit(1);
}

static std::string g_current = "(setup)";
#define CK(x)                                                                          \
    do {                                                                               \
        CUresult r_ = (x);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char* s_ = "?";                                                      \
            cuGetErrorString(r_, &s_);                                                 \
            die("%s: %s failed: %s (%d)", g_current.c_str(), #x, s_, (int)r_);         \
        }                                                                              \
    } while (0)

static std::string fmt(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

// ---------------------------------------------------------------------------------------------
// Device, memory, random data
// ---------------------------------------------------------------------------------------------

static CUdevice g_dev;
static CUcontext g_ctx;
static CUstream g_stream;
static std::vector<CUdeviceptr> g_allocs;  // freed after each case

static CUdeviceptr dalloc(size_t bytes) {
    CUdeviceptr p = 0;
    CK(cuMemAlloc(&p, std::max<size_t>(bytes, 256)));
    CK(cuMemsetD8(p, 0, std::max<size_t>(bytes, 256)));
    g_allocs.push_back(p);
    return p;
}
static void free_case_allocs() {
    for (auto p : g_allocs) cuMemFree(p);
    g_allocs.clear();
}
static CUdeviceptr upload(const void* h, size_t bytes) {
    CUdeviceptr p = dalloc(bytes);
    CK(cuMemcpyHtoD(p, h, bytes));
    return p;
}
template <typename T>
static CUdeviceptr upload(const std::vector<T>& v) { return upload(v.data(), v.size() * sizeof(T)); }

enum DT { F32, F16, BF16, U32, U8, I32 };
static size_t dt_size(DT d) { return d == F32 || d == U32 || d == I32 ? 4 : d == U8 ? 1 : 2; }

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
    uint64_t next() {  // splitmix64
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    float uni(float lo, float hi) { return lo + (hi - lo) * (float)((next() >> 40) * (1.0 / 16777216.0)); }
    uint32_t below(uint32_t n) { return (uint32_t)(next() % n); }
};

static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float bf2f(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f2h(float f) {
    __half_raw r = __float2half_rn(f);
    return r.x;
}
static float h2f(uint16_t b) {
    __half_raw r;
    r.x = b;
    return __half2float(__half(r));
}

// n random f32 values, uniform in [lo, hi), on the host (rand_dev(F32, ...) uploads the same values).
static std::vector<float> rand_host_f32(size_t n, float lo, float hi, uint64_t seed) {
    Rng r(seed);
    std::vector<float> v(n);
    for (auto& x : v) x = r.uni(lo, hi);
    return v;
}

// n random values of type dt, uniform in [lo, hi), on the device.
static CUdeviceptr rand_dev(DT dt, size_t n, float lo, float hi, uint64_t seed) {
    Rng r(seed);
    std::vector<uint8_t> h(n * dt_size(dt));
    for (size_t i = 0; i < n; ++i) {
        float v = r.uni(lo, hi);
        if (dt == F32) memcpy(&h[i * 4], &v, 4);
        else if (dt == BF16) { uint16_t b = f2bf(v); memcpy(&h[i * 2], &b, 2); }
        else if (dt == F16) { uint16_t b = f2h(v); memcpy(&h[i * 2], &b, 2); }
        else die("rand_dev: unsupported type");
    }
    return upload(h.data(), h.size());
}
static std::vector<uint32_t> rand_ids(size_t n, uint32_t maxv, uint64_t seed) {
    Rng r(seed);
    std::vector<uint32_t> v(n);
    for (auto& x : v) x = r.below(maxv);
    return v;
}
// Random quantized blocks: random bytes, with the f16 fields (scales) at `half_offsets`
// of each `block_bytes` block set to small finite values (+-[1e-3, 1e-2]).
static CUdeviceptr rand_quant(size_t nblocks, size_t block_bytes, std::vector<size_t> half_offsets, uint64_t seed,
                              std::vector<uint8_t>* host = nullptr) {
    Rng r(seed);
    std::vector<uint8_t> h(nblocks * block_bytes);
    for (size_t i = 0; i + 8 <= h.size(); i += 8) { uint64_t x = r.next(); memcpy(&h[i], &x, 8); }
    for (size_t b = 0; b < nblocks; ++b)
        for (size_t off : half_offsets) {
            float v = r.uni(1e-3f, 1e-2f) * ((r.next() & 1) ? 1.f : -1.f);
            uint16_t hb = f2h(v);
            memcpy(&h[b * block_bytes + off], &hb, 2);
        }
    CUdeviceptr d = upload(h.data(), h.size());
    if (host) host->swap(h);
    return d;
}

// ---------------------------------------------------------------------------------------------
// Modules (two cubins each) and launchers (two shared libraries)
// ---------------------------------------------------------------------------------------------

static std::string g_orig_dir, g_gen_dir, g_orig_so, g_gen_so;
static std::map<std::string, CUmodule> g_mods[2];
static void* g_so[2] = {nullptr, nullptr};

struct KPair { CUfunction f[2]; };

static KPair kfun(const std::string& module, const std::string& name) {
    KPair k;
    for (int side = 0; side < 2; ++side) {
        auto it = g_mods[side].find(module);
        if (it == g_mods[side].end()) {
            std::string path = side == 0 ? g_orig_dir + "/" + module + ".cubin" : g_gen_dir + "/" + module + ".co";
            CUmodule m;
            CUresult r = cuModuleLoad(&m, path.c_str());
            if (r != CUDA_SUCCESS) {
                const char* s = "?";
                cuGetErrorString(r, &s);
                die("cuModuleLoad(%s): %s", path.c_str(), s);
            }
            it = g_mods[side].emplace(module, m).first;
        }
        if (cuModuleGetFunction(&k.f[side], it->second, name.c_str()) != CUDA_SUCCESS)
            die("kernel %s not found in the %s %s module", name.c_str(), side == 0 ? "original" : "translated", module.c_str());
    }
    return k;
}

template <typename F>
static std::pair<F, F> sofun(const char* name) {
    F f[2];
    for (int side = 0; side < 2; ++side) {
        if (!g_so[side]) {
            const std::string& path = side == 0 ? g_orig_so : g_gen_so;
            g_so[side] = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!g_so[side]) die("dlopen(%s): %s", path.c_str(), dlerror());
        }
        f[side] = (F)dlsym(g_so[side], name);
        if (!f[side]) die("launcher %s not found in %s", name, side == 0 ? g_orig_so.c_str() : g_gen_so.c_str());
    }
    return {f[0], f[1]};
}

struct D3 { unsigned x = 1, y = 1, z = 1; };
static D3 d3(unsigned x, unsigned y = 1, unsigned z = 1) { D3 d; d.x = x; d.y = y; d.z = z; return d; }
static D3 for_num_elems(size_t n) { return d3((unsigned)((n + 1023) / 1024)); }  // cudarc LaunchConfig::for_num_elems
// candle-rocm-hip's LaunchConfig::for_packed_elems: the ROCm backend launches the
// elementwise kernels (contiguous loops on 16-byte packs, kernel rule elementwise-packs)
// with one thread per 16-byte pack of the widest element when the layout is contiguous
// and starts on a pack (backend rule elementwise-launches), else as for_num_elems.
static D3 for_packed_elems(size_t n, size_t elem_bytes, bool packed) {
    size_t per_pack = packed && elem_bytes >= 1 && elem_bytes <= 16 ? 16 / elem_bytes : 1;
    return for_num_elems((n + per_pack - 1) / per_pack);
}

template <typename... A>
static void klaunch(CUfunction f, D3 g, D3 b, unsigned smem, A... a) {
    void* params[] = {(void*)&a..., nullptr};
    CK(cuLaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, smem, g_stream, params, nullptr));
}

// ---------------------------------------------------------------------------------------------
// Cases, verification, timing
// ---------------------------------------------------------------------------------------------

struct Output {
    CUdeviceptr p[2];
    size_t n;           // elements
    DT dt;
    CUdeviceptr init;   // content to restore before the verification run (0: zeros)
};

struct Case {
    std::string family, kernel;
    double elements = 0, bytes = 0;
    std::function<void(int side)> run;  // enqueue one call on g_stream
    std::vector<Output> outs;
    double tol_f32 = 1e-5;  // relative tolerance of f32 outputs (f16: 2e-3, bf16: 1.6e-2)
    // Optional, run when the outputs are not bitwise equal (both sides' verification outputs
    // still on the device): compares both with an independent reference, returns a note.
    std::function<std::string()> crosscheck;
};

static Output out_pair(DT dt, size_t n, CUdeviceptr init = 0) {
    Output o;
    o.dt = dt;
    o.n = n;
    o.init = init;
    o.p[0] = dalloc(n * dt_size(dt));
    o.p[1] = dalloc(n * dt_size(dt));
    return o;
}

struct CheckResult {
    bool ok = true, bitwise = true;
    std::string text;
};

static double to_d(const uint8_t* p, DT dt) {
    switch (dt) {
        case F32: { float f; memcpy(&f, p, 4); return f; }
        case F16: { uint16_t b; memcpy(&b, p, 2); return h2f(b); }
        case BF16: { uint16_t b; memcpy(&b, p, 2); return bf2f(b); }
        case U32: { uint32_t u; memcpy(&u, p, 4); return u; }
        case I32: { int32_t u; memcpy(&u, p, 4); return u; }
        default: return *p;
    }
}

static std::vector<uint8_t> download(const Output& o, int side) {
    std::vector<uint8_t> h(o.n * dt_size(o.dt));
    CK(cuMemcpyDtoH(h.data(), o.p[side], h.size()));
    return h;
}

static CheckResult compare(const Output& o, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, double tol_f32) {
    const size_t sz = dt_size(o.dt);
    CheckResult res;
    const bool is_float = o.dt == F32 || o.dt == F16 || o.dt == BF16;
    const double tol = o.dt == F32 ? tol_f32 : o.dt == F16 ? 2e-3 : 1.6e-2;  // f16/bf16: about 1-2 ulp
    double max_ref = 0;
    size_t nan_a = 0, nonzero_a = 0;
    for (size_t i = 0; i < o.n; ++i) {
        double x = to_d(&a[i * sz], o.dt);
        if (std::isnan(x)) ++nan_a;
        else max_ref = std::max(max_ref, std::fabs(x));
        if (x != 0) ++nonzero_a;
    }
    size_t ndiff = 0, nbad = 0;
    double max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < o.n; ++i) {
        if (memcmp(&a[i * sz], &b[i * sz], sz) == 0) continue;
        double x = to_d(&a[i * sz], o.dt), y = to_d(&b[i * sz], o.dt);
        if (std::isnan(x) && std::isnan(y)) continue;
        ++ndiff;
        double d = std::fabs(x - y);
        if (std::isnan(d)) d = INFINITY;
        max_abs = std::max(max_abs, d);
        double denom = std::max({std::fabs(x), std::fabs(y), 1e-2 * max_ref, 1e-30});
        double rel = d / denom;
        max_rel = std::max(max_rel, rel);
        if (!is_float || !(rel <= tol)) ++nbad;
    }
    res.bitwise = ndiff == 0;
    res.ok = nbad == 0;
    if (res.bitwise) res.text = "bitwise";
    else
        res.text = fmt("%s %zu/%zu differ (max abs %.3g where max |original| is %.3g, max rel %.3g)", res.ok ? "close:" : "DIFF:", ndiff,
                       o.n, max_abs, max_ref, max_rel);
    if (nonzero_a == 0) { res.ok = false; res.text += " [output all zero: suspicious]"; }
    if (nan_a) res.text += fmt(" [%zu NaN in original output]", nan_a);
    return res;
}

static void sync() { CK(cuStreamSynchronize(g_stream)); }

// max |side - ref| / max |ref| over the elements idx of an f32 output, for both sides
static std::string ref_error(const Output& o, const std::vector<size_t>& idx, const std::vector<double>& ref, const char* what) {
    double err[2] = {0, 0}, mref = 0;
    for (double v : ref) mref = std::max(mref, std::fabs(v));
    for (int side = 0; side < 2; ++side) {
        std::vector<uint8_t> h = download(o, side);
        for (size_t j = 0; j < idx.size(); ++j) {
            double d = std::fabs(to_d(&h[idx[j] * dt_size(o.dt)], o.dt) - ref[j]);
            err[side] = std::max(err[side], std::isnan(d) ? INFINITY : d);
        }
    }
    return fmt("vs %s: max abs error / max |ref| = original %.3g, translated %.3g", what, err[0] / mref, err[1] / mref);
}

static void reset_outputs(const Case& c, int side) {
    for (auto& o : c.outs) {
        if (o.init) CK(cuMemcpyDtoDAsync(o.p[side], o.init, o.n * dt_size(o.dt), g_stream));
        else CK(cuMemsetD8Async(o.p[side], 0, o.n * dt_size(o.dt), g_stream));
    }
    sync();
}

static CUevent g_ev0, g_ev1;
static double time_calls(const Case& c, int side, int reps) {
    CK(cuEventRecord(g_ev0, g_stream));
    for (int r = 0; r < reps; ++r) c.run(side);
    CK(cuEventRecord(g_ev1, g_stream));
    CK(cuEventSynchronize(g_ev1));
    float ms = 0;
    CK(cuEventElapsedTime(&ms, g_ev0, g_ev1));
    return ms;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
static double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    double pos = q * (v.size() - 1);
    size_t lo = (size_t)pos;
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

struct Row {
    std::string family, kernel, check;
    double elements, bytes, us[2], noise;
    bool ok;
};
static std::vector<Row> g_rows;
static double g_peak_gbs = 0;
static double g_min_ms = 50;
static std::set<std::string> g_only;

static std::string g4(double v) {  // 4 significant digits: 1.000, 0.9999, 57.68, 1213
    if (!std::isfinite(v)) return "nan";
    std::string t = fmt("%#.4g", v);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
}

static void measure(Case& c) {
    g_current = c.family + "/" + c.kernel;
    fprintf(stderr, "[bench] %s\n", g_current.c_str());
    // Verification: one call per side on reset outputs.
    std::string check = "bitwise";
    bool ok = true, bitwise = true;
    for (int side = 0; side < 2; ++side) {
        reset_outputs(c, side);
        c.run(side);
        sync();
    }
    std::vector<std::vector<uint8_t>> first[2];
    for (size_t i = 0; i < c.outs.size(); ++i) {
        first[0].push_back(download(c.outs[i], 0));
        first[1].push_back(download(c.outs[i], 1));
        CheckResult r = compare(c.outs[i], first[0][i], first[1][i], c.tol_f32);
        if (!r.bitwise || !r.ok) {
            std::string t = c.outs.size() > 1 ? fmt("out%zu ", i) + r.text : r.text;
            check = check == "bitwise" ? t : check + "; " + t;
        }
        ok = ok && r.ok;
        bitwise = bitwise && r.bitwise;
    }
    if (!bitwise) {
        // Which side is right? An independent reference where the case has one, and
        // whether each side gives the same output twice (a race shows up here).
        if (c.crosscheck) check += "; " + c.crosscheck();
        for (int side = 0; side < 2; ++side) {
            reset_outputs(c, side);
            c.run(side);
            sync();
        }
        for (size_t i = 0; i < c.outs.size(); ++i)
            for (int side = 0; side < 2; ++side) {
                std::vector<uint8_t> again = download(c.outs[i], side);
                const size_t sz = dt_size(c.outs[i].dt);
                size_t changed = 0;
                for (size_t e = 0; e < c.outs[i].n; ++e) changed += memcmp(&again[e * sz], &first[side][i][e * sz], sz) != 0;
                check += changed ? fmt("; %s NOT deterministic: %zu elements changed in a second run", side ? "translated" : "original", changed)
                                 : fmt("; %s deterministic", side ? "translated" : "original");
            }
    }
    // Warm-up (>= 3 calls and >= ~10 ms per side), then calibration.
    double t_est[2];
    for (int side = 0; side < 2; ++side) {
        double ms = time_calls(c, side, 3);
        int more = (int)std::min(1000.0, std::ceil(10.0 / std::max(ms / 3, 1e-3)));
        if (more > 3) time_calls(c, side, more);
        t_est[side] = time_calls(c, side, 3) / 3;
    }
    double t = std::max(1e-4, std::min(t_est[0], t_est[1]));  // ms per call
    int reps = (int)std::max(1.0, std::ceil(0.25 / t));           // >= ~250 us per sample
    int samples = (int)std::max(20.0, std::ceil(g_min_ms / (reps * std::max(t_est[0], t_est[1]))));
    samples = std::min(samples, 2000);
    std::vector<double> per_call[2];
    for (int s = 0; s < samples; ++s)
        for (int k = 0; k < 2; ++k) {
            int side = (s % 2 == 0) ? k : 1 - k;  // A B, B A, A B, ...
            per_call[side].push_back(time_calls(c, side, reps) / reps * 1000.0);  // us
        }
    Row row;
    row.family = c.family;
    row.kernel = c.kernel;
    row.check = check;
    row.ok = ok;
    row.elements = c.elements;
    row.bytes = c.bytes;
    row.noise = 0;
    for (int side = 0; side < 2; ++side) {
        row.us[side] = median(per_call[side]);
        double iqr = quantile(per_call[side], 0.75) - quantile(per_call[side], 0.25);
        row.noise = std::max(row.noise, 100.0 * iqr / row.us[side]);
    }
    g_rows.push_back(row);
    auto pct = [&](double us) { return g_peak_gbs > 0 ? c.bytes / (us * 1e-6) / (g_peak_gbs * 1e9) * 100.0 : NAN; };
    g_tsv_rows.push_back(c.family + "\t" + c.kernel + "\t" + fmt("%.0f", c.elements) + "\t" + fmt("%.0f", c.bytes) + "\t" +
                         g4(row.us[0]) + "\t" + g4(row.us[1]) + "\t" + g4(row.us[0] / row.us[1]) + "\t" +
                         g4(pct(row.us[0])) + "\t" + g4(pct(row.us[1])));
    if (!ok) fprintf(stderr, "WARNING: %s: outputs differ: %s\n", g_current.c_str(), check.c_str());
    if (!ok || check != "bitwise") g_tsv_comments.push_back("check " + c.family + "/" + c.kernel + ": " + check);
    fprintf(stderr, "[bench]   original %.4g us, translated %.4g us, ratio %.4f, %d x %d calls, check: %s\n", row.us[0], row.us[1],
            row.us[0] / row.us[1], samples, reps, check.c_str());
    write_tsv();  // after every kernel: a run cut short still leaves its rows
    free_case_allocs();
}

static bool want(const char* family) { return g_only.empty() || g_only.count(family); }

// ---------------------------------------------------------------------------------------------
// The kernels
// ---------------------------------------------------------------------------------------------

static const size_t NE = (size_t)1 << 26;  // elementwise size
static const size_t ROWS = 16384, COLS = 4096;  // row-wise kernels: NE elements as rows x cols

// The elementwise layouts measured: the whole buffer (aligned), a tail of fewer elements
// than a pack (NE - 3 elements), and an input one element past a pack boundary (NE - 1
// elements, read from the buffer's second element: the kernels' one-element fallback, which
// the ROCm backend launches with one thread per element). Each side gets its own backend's
// grid: the original candle's for_num_elems, ours for_packed_elems.
enum Shape { WHOLE, TAIL, MISALIGNED };
static const char* shape_suffix(Shape sh) { return sh == TAIL ? " (tail)" : sh == MISALIGNED ? " (misaligned)" : ""; }
static size_t shape_elems(Shape sh) { return sh == TAIL ? NE - 3 : sh == MISALIGNED ? NE - 1 : NE; }

// (numel, num_dims, info, inp, out): unary, ucopy, cast
static void bench_map(const char* family, const char* module, const char* name, DT in_dt, DT out_dt, Shape sh = WHOLE) {
    Case c;
    c.family = family;
    c.kernel = std::string(name) + shape_suffix(sh);
    KPair k = kfun(module, name);
    const size_t n = shape_elems(sh);
    CUdeviceptr in = rand_dev(in_dt, NE, -4.f, 4.f, 1) + (sh == MISALIGNED ? dt_size(in_dt) : 0);
    c.outs.push_back(out_pair(out_dt, NE));
    CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
    c.elements = n;
    c.bytes = (double)n * (dt_size(in_dt) + dt_size(out_dt));
    D3 ours = for_packed_elems(n, std::max(dt_size(in_dt), dt_size(out_dt)), sh != MISALIGNED);
    c.run = [=](int s) { klaunch(k.f[s], s ? ours : for_num_elems(n), d3(1024), 0, n, (size_t)1, (CUdeviceptr)0, in, s ? o1 : o0); };
    measure(c);
}

static void bench_binary(const char* name, DT dt) {
    Case c;
    c.family = "binary";
    c.kernel = name;
    KPair k = kfun("binary", name);
    CUdeviceptr lhs = rand_dev(dt, NE, -4.f, 4.f, 2), rhs = rand_dev(dt, NE, -4.f, 4.f, 3);
    c.outs.push_back(out_pair(dt, NE));
    CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
    c.elements = NE;
    c.bytes = 3.0 * NE * dt_size(dt);
    D3 ours = for_packed_elems(NE, dt_size(dt), true);
    c.run = [=](int s) { klaunch(k.f[s], s ? ours : for_num_elems(NE), d3(1024), 0, NE, (size_t)1, (CUdeviceptr)0, lhs, rhs, s ? o1 : o0); };
    measure(c);
}

template <typename T>
static void bench_affine(const char* name, DT dt, T mul, T add) {
    Case c;
    c.family = "affine";
    c.kernel = name;
    KPair k = kfun("affine", name);
    CUdeviceptr in = rand_dev(dt, NE, -4.f, 4.f, 4);
    c.outs.push_back(out_pair(dt, NE));
    CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
    c.elements = NE;
    c.bytes = 2.0 * NE * dt_size(dt);
    D3 ours = for_packed_elems(NE, dt_size(dt), true);
    c.run = [=](int s) { klaunch(k.f[s], s ? ours : for_num_elems(NE), d3(1024), 0, NE, (size_t)1, (CUdeviceptr)0, in, s ? o1 : o0, mul, add); };
    measure(c);
}

static void bench_copy() {
    if (!want("copy")) return;
    bench_map("copy", "unary", "ucopy_f32", F32, F32);
    bench_map("copy", "unary", "ucopy_bf16", BF16, BF16);
    {   // copy2d_f32(src, dst, d1, d2, src_s, dst_s): a contiguous ROWS x COLS block
        Case c;
        c.family = "copy";
        c.kernel = "copy2d_f32";
        KPair k = kfun("fill", "copy2d_f32");
        CUdeviceptr src = rand_dev(F32, NE, -4.f, 4.f, 5);
        c.outs.push_back(out_pair(F32, NE));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = 8.0 * NE;
        uint32_t d1 = ROWS, d2 = COLS, ss = COLS, ds = COLS;
        c.run = [=](int s) { klaunch(k.f[s], for_num_elems(NE), d3(1024), 0, src, s ? o1 : o0, d1, d2, ss, ds); };
        measure(c);
    }
    {   // fill_f32(buf, value, numel)
        Case c;
        c.family = "copy";
        c.kernel = "fill_f32";
        KPair k = kfun("fill", "fill_f32");
        c.outs.push_back(out_pair(F32, NE));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = 4.0 * NE;
        float v = 1.25f;
        c.run = [=](int s) { klaunch(k.f[s], for_num_elems(NE), d3(1024), 0, s ? o1 : o0, v, NE); };
        measure(c);
    }
}

static void bench_reduce() {
    if (!want("reduce")) return;
    struct R { const char* name; DT dt; bool index; };
    for (R r : {R{"fast_sum_f32", F32, false}, R{"fast_sum_bf16", BF16, false}, R{"fast_max_f32", F32, false},
                R{"fast_argmax_f32", F32, true}}) {
        Case c;
        c.family = "reduce";
        c.kernel = r.name;
        KPair k = kfun("reduce", r.name);
        CUdeviceptr src = rand_dev(r.dt, NE, -1.f, 1.f, 6);
        std::vector<size_t> info = {ROWS, COLS, COLS, 1};  // dims, strides (sum over the last dim)
        CUdeviceptr dinfo = upload(info);
        DT odt = r.index ? U32 : r.dt;
        c.outs.push_back(out_pair(odt, ROWS));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = (double)NE * dt_size(r.dt) + ROWS * dt_size(odt);
        // candle: grid dst_el, block min(1024, el_to_sum).next_power_of_two()
        c.run = [=](int s) { klaunch(k.f[s], d3(ROWS), d3(1024), 0, NE, COLS, (size_t)2, dinfo, src, s ? o1 : o0); };
        measure(c);
    }
}

static void bench_softmax() {
    if (!want("softmax")) return;
    for (auto p : {std::make_pair("softmax_f32", F32), std::make_pair("softmax_bf16", BF16), std::make_pair("softmax_f16", F16)}) {
        Case c;
        c.family = "softmax";
        c.kernel = p.first;
        KPair k = kfun("reduce", p.first);
        CUdeviceptr src = rand_dev(p.second, NE, -4.f, 4.f, 7);
        c.outs.push_back(out_pair(p.second, NE));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = 2.0 * NE * dt_size(p.second);
        int ncols = COLS;
        // candle-nn softmax_last_dim: grid (rows), block (1, 32, 1)
        c.run = [=](int s) { klaunch(k.f[s], d3(ROWS), d3(1, 32), 0, src, s ? o1 : o0, ncols); };
        measure(c);
    }
}

static void bench_norm() {
    if (!want("norm")) return;
    struct N { const char* name; DT dt; bool layer; };
    for (N n : {N{"rmsnorm_f32", F32, false}, N{"rmsnorm_bf16", BF16, false}, N{"layernorm_f32", F32, true},
                N{"layernorm_bf16", BF16, true}}) {
        Case c;
        c.family = "norm";
        c.kernel = n.name;
        KPair k = kfun("reduce", n.name);
        CUdeviceptr src = rand_dev(n.dt, NE, -4.f, 4.f, 8);
        CUdeviceptr alpha = rand_dev(n.dt, COLS, 0.5f, 1.5f, 9), beta = rand_dev(n.dt, COLS, -0.5f, 0.5f, 10);
        c.outs.push_back(out_pair(n.dt, NE));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = 2.0 * NE * dt_size(n.dt) + (n.layer ? 2 : 1) * COLS * dt_size(n.dt);
        int ncols = COLS, block = COLS < 1024 ? 32 : 1024;  // candle-nn: 32 if n_cols < 1024 else 1024
        float eps = 1e-5f;
        if (n.layer)
            c.run = [=](int s) { klaunch(k.f[s], d3(ROWS), d3(block), 0, src, s ? o1 : o0, alpha, beta, ncols, block, eps); };
        else
            c.run = [=](int s) { klaunch(k.f[s], d3(ROWS), d3(block), 0, src, s ? o1 : o0, alpha, ncols, block, eps); };
        measure(c);
    }
}

static void bench_indexing() {
    if (!want("indexing")) return;
    // index_select (embedding lookup): src [VOCAB, COLS], ids [ROWS] -> out [ROWS, COLS]
    const size_t VOCAB = 32768;
    for (auto p : {std::make_pair("is_u32_f32", F32), std::make_pair("is_u32_bf16", BF16)}) {
        Case c;
        c.family = "indexing";
        c.kernel = p.first;
        KPair k = kfun("indexing", p.first);
        CUdeviceptr src = rand_dev(p.second, VOCAB * COLS, -4.f, 4.f, 11);
        CUdeviceptr ids = upload(rand_ids(ROWS, VOCAB, 12));
        std::vector<size_t> info = {ROWS, 1};  // ids dims, ids strides
        CUdeviceptr dinfo = upload(info);
        c.outs.push_back(out_pair(p.second, NE));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = ROWS * 4.0 + 2.0 * NE * dt_size(p.second);
        size_t left = 1, src_dim = VOCAB, ids_dim = ROWS, right = COLS;
        c.run = [=](int s) {
            klaunch(k.f[s], for_num_elems(NE), d3(1024), 0, NE, (size_t)1, dinfo, ids, src, s ? o1 : o0, left, src_dim, ids_dim, right);
        };
        measure(c);
    }
    // gather along the last dim: src [ROWS, COLS], ids [ROWS, COLS] -> out [ROWS, COLS]
    for (auto p : {std::make_pair("gather_u32_f32", F32), std::make_pair("gather_u32_bf16", BF16)}) {
        Case c;
        c.family = "indexing";
        c.kernel = p.first;
        KPair k = kfun("indexing", p.first);
        CUdeviceptr src = rand_dev(p.second, NE, -4.f, 4.f, 13);
        CUdeviceptr ids = upload(rand_ids(NE, COLS, 14));
        c.outs.push_back(out_pair(p.second, NE));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = NE * 4.0 + 2.0 * NE * dt_size(p.second);
        size_t left = ROWS, src_dim = COLS, ids_dim = COLS, right = 1;
        c.run = [=](int s) { klaunch(k.f[s], for_num_elems(NE), d3(1024), 0, NE, ids, src, s ? o1 : o0, left, src_dim, ids_dim, right); };
        measure(c);
    }
}

static void bench_scatter() {
    if (!want("scatter")) return;
    // dim 1 of [1, D, R]: src [1, D, R], ids like src (scatter*) or [D] (index_add), dst [1, D, R]
    const size_t D = 64, R = NE / D;
    struct S { const char* name; int kind; };  // 0 scatter_add, 1 scatter, 2 index_add
    for (S sc : {S{"sa_u32_f32", 0}, S{"s_u32_f32", 1}, S{"ia_u32_f32", 2}}) {
        Case c;
        c.family = "scatter";
        c.kernel = sc.name;
        KPair k = kfun("indexing", sc.name);
        CUdeviceptr src = rand_dev(F32, NE, -4.f, 4.f, 15);
        CUdeviceptr init = rand_dev(F32, NE, -4.f, 4.f, 16);
        size_t nids = sc.kind == 2 ? D : NE;
        CUdeviceptr ids = upload(rand_ids(nids, D, 17));
        c.outs.push_back(out_pair(F32, NE, init));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NE;
        c.bytes = NE * 4.0 + nids * 4.0 + (sc.kind == 1 ? 1.0 : 2.0) * NE * 4.0;
        size_t left = 1, src_dim = D, dst_dim = D, right = R;
        D3 g = for_num_elems(left * right);  // candle: for_num_elems(left * right)
        if (sc.kind == 2)
            c.run = [=](int s) { klaunch(k.f[s], g, d3(1024), 0, ids, D, src, s ? o1 : o0, left, src_dim, dst_dim, right); };
        else
            c.run = [=](int s) { klaunch(k.f[s], g, d3(1024), 0, ids, src, s ? o1 : o0, left, src_dim, dst_dim, right); };
        measure(c);
    }
}

static void bench_conv() {
    if (!want("conv")) return;
    // im2col: src (B, C, H, W) = (16, 64, 64, 64), 3x3, stride 1, padding 1, dilation 1
    for (auto p : {std::make_pair("im2col_f32", F32), std::make_pair("im2col_bf16", BF16)}) {
        const size_t B = 16, C = 64, H = 64, W = 64, K = 3, st = 1, pad = 1, dil = 1;
        const size_t h_out = (H + 2 * pad - dil * (K - 1) - 1) / st + 1, w_out = (W + 2 * pad - dil * (K - 1) - 1) / st + 1;
        const size_t dst_el = B * h_out * w_out * C * K * K;
        Case c;
        c.family = "conv";
        c.kernel = p.first;
        KPair k = kfun("conv", p.first);
        CUdeviceptr src = rand_dev(p.second, B * C * H * W, -4.f, 4.f, 18);
        std::vector<size_t> info = {B, C, H, W, C * H * W, H * W, W, 1};
        CUdeviceptr dinfo = upload(info);
        c.outs.push_back(out_pair(p.second, dst_el));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = dst_el;
        c.bytes = (double)(B * C * H * W + dst_el) * dt_size(p.second);
        c.run = [=](int s) {
            klaunch(k.f[s], for_num_elems(dst_el), d3(1024), 0, dst_el, h_out, w_out, K, K, st, pad, dil, dinfo, src, s ? o1 : o0);
        };
        measure(c);
    }
    {   // conv1d_f32: src (16, 64, 4096), kernel (64, 64, 3), stride 1, padding 1
        const size_t B = 16, CI = 64, L = 4096, CO = 64, K = 3, st = 1, pad = 1, dil = 1;
        const size_t l_out = (L + 2 * pad - dil * (K - 1) - 1) / st + 1, dst_el = B * CO * l_out;
        Case c;
        c.family = "conv";
        c.kernel = "conv1d_f32";
        KPair k = kfun("conv", "conv1d_f32");
        CUdeviceptr src = rand_dev(F32, B * CI * L, -1.f, 1.f, 19), ker = rand_dev(F32, CO * CI * K, -1.f, 1.f, 20);
        std::vector<size_t> info = {B, CI, L, CI * L, L, 1, CO, CI, K, CI * K, K, 1};
        CUdeviceptr dinfo = upload(info);
        c.outs.push_back(out_pair(F32, dst_el));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = dst_el;
        c.bytes = 4.0 * (B * CI * L + CO * CI * K + dst_el);
        size_t el = B * CI * L;
        c.run = [=](int s) { klaunch(k.f[s], for_num_elems(dst_el), d3(1024), 0, el, l_out, st, pad, dil, dinfo, src, ker, s ? o1 : o0); };
        measure(c);
    }
    {   // conv2d_f32: src (8, 32, 64, 64), kernel (64, 32, 3, 3), stride 1, padding 1
        const size_t B = 8, CI = 32, H = 64, W = 64, CO = 64, K = 3, st = 1, pad = 1, dil = 1;
        const size_t h_out = (H + 2 * pad - dil * (K - 1) - 1) / st + 1, w_out = (W + 2 * pad - dil * (K - 1) - 1) / st + 1;
        const size_t dst_el = B * CO * h_out * w_out;
        Case c;
        c.family = "conv";
        c.kernel = "conv2d_f32";
        KPair k = kfun("conv", "conv2d_f32");
        CUdeviceptr src = rand_dev(F32, B * CI * H * W, -1.f, 1.f, 21), ker = rand_dev(F32, CO * CI * K * K, -1.f, 1.f, 22);
        std::vector<size_t> info = {B, CI, H, W, CI * H * W, H * W, W, 1, CO, CI, K, K, CI * K * K, K * K, K, 1};
        CUdeviceptr dinfo = upload(info);
        c.outs.push_back(out_pair(F32, dst_el));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = dst_el;
        c.bytes = 4.0 * (B * CI * H * W + CO * CI * K * K + dst_el);
        size_t el = B * CI * H * W;
        c.run = [=](int s) {
            klaunch(k.f[s], for_num_elems(dst_el), d3(1024), 0, el, w_out, h_out, st, pad, dil, dinfo, src, ker, s ? o1 : o0);
        };
        measure(c);
    }
}

static void bench_sort() {
    if (!want("sort")) return;
    struct S { const char* name; DT dt; size_t ncols, nrows; };
    for (S so : {S{"asort_asc_f32", F32, 1024, 16384}, S{"asort_desc_bf16", BF16, 1024, 16384}, S{"asort_asc_f32", F32, 4096, 4096}}) {
        Case c;
        c.family = "sort";
        c.kernel = fmt("%s[%zux%zu]", so.name, so.nrows, so.ncols);
        KPair k = kfun("sort", so.name);
        size_t n = so.ncols * so.nrows;
        CUdeviceptr src = rand_dev(so.dt, n, -4.f, 4.f, 23);
        c.outs.push_back(out_pair(U32, n));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = n;
        c.bytes = (double)n * (dt_size(so.dt) + 4);
        size_t pad = 1;
        while (pad < so.ncols) pad *= 2;
        int ncols = so.ncols, ncols_pad = pad;
        unsigned block = std::min<size_t>(pad, 1024), smem = pad * 4;
        unsigned nrows = so.nrows;
        c.run = [=](int s) { klaunch(k.f[s], d3(nrows), d3(block), smem, src, s ? o1 : o0, ncols, ncols_pad); };
        measure(c);
    }
}

// GGML quant block layouts: bytes per block, elements per block, offsets of the f16 scale fields
struct QType { const char* name; size_t block_bytes, qk; std::vector<size_t> halves; };
static const QType Q4_0{"q4_0", 18, 32, {0}};
static const QType Q8_0{"q8_0", 34, 32, {0}};
static const QType Q4_K{"q4_K", 144, 256, {0, 2}};
static const QType Q6_K{"q6_K", 210, 256, {208}};
static const size_t Q8_1_BYTES = 36;  // block_q8_1: half2 ds + 32 int8 (32 values)

static size_t pad_to(size_t x, size_t m) { return (x + m - 1) / m * m; }

// q8_1 activations for quantized.cu / mmvq_gguf: the ORIGINAL quantize_q8_1 kernel on random f32
static CUdeviceptr quantize_q8_1_dev(size_t k, size_t cols) {
    const size_t kp = pad_to(k, 512);
    CUdeviceptr x = rand_dev(F32, k * cols, -1.f, 1.f, 30);
    CUdeviceptr y = dalloc(kp / 32 * Q8_1_BYTES * cols);
    KPair q = kfun("quantized", "quantize_q8_1");
    int kx = k, kxp = kp;
    klaunch(q.f[0], d3(kp / 256, cols), d3(256), 0, x, y, kx, kxp);
    sync();
    return y;
}

static void bench_mmvq() {
    if (!want("mmvq")) return;
    // quantized.cu mul_mat_vec_*_q8_1_cuda1: weights [NR, K], one activation column (candle: b_size 1)
    const size_t K = 8192, NR = 16384, KP = pad_to(K, 512);
    for (const QType* q : {&Q4_0, &Q4_K, &Q8_0, &Q6_K}) {
        Case c;
        c.family = "mmvq";
        c.kernel = fmt("mul_mat_vec_%s_q8_1_cuda1", q->name);
        KPair k = kfun("quantized", c.kernel);
        CUdeviceptr w = rand_quant(NR * K / q->qk, q->block_bytes, q->halves, 31);
        CUdeviceptr y = quantize_q8_1_dev(K, 1);
        c.outs.push_back(out_pair(F32, NR));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.kernel += fmt("[n%zu,k%zu]", NR, K);
        c.elements = NR * K;
        c.bytes = (double)NR * K / q->qk * q->block_bytes + KP / 32 * Q8_1_BYTES + NR * 4.0;
        int ncols_x = K, nrows_x = NR, nrows_y = KP, nrows_dst = NR;
        c.run = [=](int s) { klaunch(k.f[s], d3(NR), d3(32, 4), 0, w, y, s ? o1 : o0, ncols_x, nrows_x, nrows_y, nrows_dst); };
        measure(c);
    }
}

static void bench_mmq() {
    if (!want("mmq")) return;
    // quantized.cu mul_mat_q*: weights [NR, K] x activations [K, NC] (candle-core mul_mat_via_q8_1)
    const size_t K = 4096, NR = 4096, NC = 512, KP = pad_to(K, 512);
    struct M { const QType* q; const char* name; unsigned mmq_x, mmq_y; };
    for (M m : {M{&Q4_0, "mul_mat_q4_0", 64, 128}, M{&Q4_K, "mul_mat_q4_K", 64, 128}, M{&Q8_0, "mul_mat_q8_0", 128, 64},
                M{&Q6_K, "mul_mat_q6_K", 64, 64}}) {
        Case c;
        c.family = "mmq";
        c.kernel = m.name;
        KPair k = kfun("quantized", m.name);
        CUdeviceptr w = rand_quant(NR * K / m.q->qk, m.q->block_bytes, m.q->halves, 32);
        CUdeviceptr y = quantize_q8_1_dev(K, NC);
        c.outs.push_back(out_pair(F32, NR * NC));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.kernel += fmt("[n%zu,k%zu,b%zu]", NR, K, NC);
        c.elements = NR * K;
        c.bytes = (double)NR * K / m.q->qk * m.q->block_bytes + NC * KP / 32 * Q8_1_BYTES + NR * NC * 4.0;
        int ncols_x = K, nrows_x = NR, ncols_y = NC, nrows_y = KP, nrows_dst = NR;
        D3 g = d3((NR + m.mmq_y - 1) / m.mmq_y, (NC + m.mmq_x - 1) / m.mmq_x);
        c.run = [=](int s) { klaunch(k.f[s], g, d3(32, 4), 0, w, y, s ? o1 : o0, ncols_x, nrows_x, ncols_y, nrows_y, nrows_dst); };
        measure(c);
    }
}

typedef void (*mmvq_quant_fn)(const void*, void*, int, int, int, void*);
typedef void (*mmvq_plain_fn)(const void*, const void*, void*, int, int, int, int, int, void*);
typedef void (*mmq_quant_fn)(const void*, const int32_t*, void*, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, void*);
typedef void (*mmq_fn)(void*, const void*, const void*, void*, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int64_t, int,
                       void*);
typedef void (*moe_wmma_fn)(const void*, const void*, const int32_t*, const int32_t*, const float*, void*, int32_t*, int32_t*, int, int,
                            int, int, int, int, bool, void*);
typedef void (*moe_gguf_fn)(const float*, const void*, const int32_t*, const int32_t*, const float*, void*, int, int, int, int, int, int,
                            void*);
typedef void (*moe_gguf_prefill_fn)(const void*, const uint8_t*, const int32_t*, const int32_t*, const float*, void*, int, int, int, int,
                                    int, int, int, void*);

static void bench_mmvq_gguf() {
    if (!want("mmvq_gguf")) return;
    // candle-core fast_mmvq: launch_mmvq_gguf_quantize_q8_1_<in> then launch_mmvq_gguf_<q>_<out>_plain
    const size_t K = 8192, NR = 16384, KP = pad_to(K, 512);
    struct V { const QType* q; const char* launcher; DT out; int b; };
    for (V v : {V{&Q4_0, "launch_mmvq_gguf_q4_0_f32_plain", F32, 1}, V{&Q4_K, "launch_mmvq_gguf_q4_k_bf16_plain", BF16, 1},
                V{&Q8_0, "launch_mmvq_gguf_q8_0_f32_plain", F32, 1}, V{&Q4_K, "launch_mmvq_gguf_q4_k_f32_plain", F32, 8}}) {
        Case c;
        c.family = "mmvq_gguf";
        c.kernel = fmt("%s[n%zu,k%zu,b%d]", v.launcher, NR, K, v.b);
        auto f = sofun<mmvq_plain_fn>(v.launcher);
        auto quant = sofun<mmvq_quant_fn>("launch_mmvq_gguf_quantize_q8_1_f32");
        CUdeviceptr w = rand_quant(NR * K / v.q->qk, v.q->block_bytes, v.q->halves, 33);
        CUdeviceptr x = rand_dev(F32, K * v.b, -1.f, 1.f, 34);
        CUdeviceptr y = dalloc(v.b * KP / 32 * Q8_1_BYTES);
        quant.first((const void*)x, (void*)y, (int)K, (int)KP, v.b, (void*)g_stream);  // the ORIGINAL quantizer, for both
        sync();
        c.outs.push_back(out_pair(v.out, NR * v.b));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NR * K;
        c.bytes = (double)NR * K / v.q->qk * v.q->block_bytes + v.b * KP / 32 * Q8_1_BYTES + NR * v.b * dt_size(v.out);
        int b = v.b, stride_col_y = KP / 32, stride_col_dst = NR;
        c.run = [=](int s) {
            (s ? f.second : f.first)((const void*)w, (const void*)y, (void*)(s ? o1 : o0), (int)K, (int)NR, stride_col_y, stride_col_dst, b,
                                     (void*)g_stream);
        };
        measure(c);
    }
}

static void bench_mmq_gguf() {
    if (!want("mmq_gguf")) return;
    // candle-core fast_mmq: launch_mmq_quantize_q8_1_<layout> then launch_mmq_gguf_<q>
    const size_t K = 4096, NR = 4096, NC = 512;
    const size_t KP = pad_to(pad_to(K, 512), 128);
    const size_t MMQ_BLOCK = 144;  // block_q8_1_mmq: 128 int8 + 16 scale bytes
    int major = 0, minor = 0, nsm = 0, smpbo = 0, warp = 0;
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev));
    CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev));
    CK(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g_dev));
    CK(cuDeviceGetAttribute(&smpbo, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g_dev));
    CK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, g_dev));
    const int cc = major * 100 + minor * 10;
    struct G { const QType* q; const char* launcher; const char* layout; };
    for (G gq : {G{&Q4_0, "launch_mmq_gguf_q4_0", "DS4"}, G{&Q4_K, "launch_mmq_gguf_q4_k", "DS4"}, G{&Q8_0, "launch_mmq_gguf_q8_0", "D4"},
                 G{&Q6_K, "launch_mmq_gguf_q6_k", "D4"}}) {
        Case c;
        c.family = "mmq_gguf";
        c.kernel = fmt("%s[n%zu,k%zu,b%zu]", gq.launcher, NR, K, NC);
        auto f = sofun<mmq_fn>(gq.launcher);
        auto quant = sofun<mmq_quant_fn>((std::string("launch_mmq_quantize_q8_1_") + gq.layout).c_str());
        std::vector<uint8_t> wh;
        CUdeviceptr w = rand_quant(NR * K / gq.q->qk, gq.q->block_bytes, gq.q->halves, 35, &wh);
        std::vector<float> xh = rand_host_f32(K * NC, -1.f, 1.f, 36);
        CUdeviceptr x = upload(xh);
        CUdeviceptr y = dalloc(NC * KP / 128 * MMQ_BLOCK + 128 * MMQ_BLOCK);
        quant.first((const void*)x, nullptr, (void*)y, 0, (int64_t)K, (int64_t)K, 0, 0, (int64_t)KP, (int64_t)NC, 1, 1, (void*)g_stream);
        sync();
        const size_t fixup_bytes = 256 * 128 * 128 * 4;  // candle-core: MAX_SMS * MMQ_X_MAX * MMQ_Y_MAX * 4
        CUdeviceptr fix[2] = {dalloc(fixup_bytes), dalloc(fixup_bytes)};
        c.outs.push_back(out_pair(F32, NR * NC));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = NR * K;
        c.bytes = (double)NR * K / gq.q->qk * gq.q->block_bytes + NC * KP / 128 * MMQ_BLOCK + NR * NC * 4.0;
        int64_t stride_row_x = K / gq.q->qk, stride_col_dst = NR;
        CUdeviceptr f0 = fix[0], f1 = fix[1];
        c.tol_f32 = 1e-4;  // sums of K products: a different summation order is expected to differ by more than 1e-5
        if (gq.q == &Q4_0) {
            // f32 reference on the CPU from the unquantized activations: rows x cols 0..63
            Output out = c.outs[0];
            c.crosscheck = [out, wh, xh, K, NR]() {
                std::vector<size_t> idx;
                std::vector<double> ref;
                const size_t nb = K / 32;
                for (size_t col = 0; col < 64; ++col)
                    for (size_t row = 0; row < 64; ++row) {
                        double acc = 0;
                        for (size_t b = 0; b < nb; ++b) {
                            const uint8_t* blk = &wh[(row * nb + b) * 18];
                            uint16_t db;
                            memcpy(&db, blk, 2);
                            const double d = h2f(db);
                            for (int j = 0; j < 16; ++j) {
                                acc += d * ((blk[2 + j] & 0xF) - 8) * xh[col * K + b * 32 + j];
                                acc += d * ((blk[2 + j] >> 4) - 8) * xh[col * K + b * 32 + 16 + j];
                            }
                        }
                        idx.push_back(col * NR + row);
                        ref.push_back(acc);
                    }
                return ref_error(out, idx, ref, "an f64 CPU reference on unquantized activations (64x64 outputs)");
            };
        }
        c.run = [=](int s) {
            (s ? f.second : f.first)((void*)(s ? f1 : f0), (const void*)w, (const void*)y, (void*)(s ? o1 : o0), (int64_t)K, (int64_t)NR,
                                     (int64_t)NC, stride_row_x, stride_col_dst, cc, nsm, (int64_t)smpbo, warp, (void*)g_stream);
        };
        measure(c);
    }
}

// MoE routing as candle-transformers' FusedMoe builds it: each token picks `topk` distinct
// experts; expert_ids = the flattened ids sorted, sorted_token_ids = the sorting permutation.
struct Routing { std::vector<int32_t> sorted_token_ids, expert_ids; size_t used_experts; };
static Routing route(size_t tokens, size_t topk, size_t experts, uint64_t seed) {
    Rng r(seed);
    std::vector<int32_t> flat(tokens * topk);
    for (size_t t = 0; t < tokens; ++t) {
        std::vector<int32_t> pick;
        while (pick.size() < topk) {
            int32_t e = (int32_t)r.below(experts);
            if (std::find(pick.begin(), pick.end(), e) == pick.end()) pick.push_back(e);
        }
        for (size_t j = 0; j < topk; ++j) flat[t * topk + j] = pick[j];
    }
    Routing rt;
    rt.sorted_token_ids.resize(flat.size());
    for (size_t i = 0; i < flat.size(); ++i) rt.sorted_token_ids[i] = (int32_t)i;
    std::stable_sort(rt.sorted_token_ids.begin(), rt.sorted_token_ids.end(), [&](int32_t a, int32_t b) { return flat[a] < flat[b]; });
    std::set<int32_t> used;
    for (int32_t i : rt.sorted_token_ids) { rt.expert_ids.push_back(flat[i]); used.insert(flat[i]); }
    rt.used_experts = used.size();
    return rt;
}

static void bench_moe() {
    if (!want("moe")) return;
    const size_t E = 64, N = 1408, K = 2048, TOPK = 8;
    // moe_gemm_wmma (bf16), prefill (512 tokens) and decode (1 token); topk_weights = null, so size_m = tokens * topk
    for (size_t tokens : {(size_t)512, (size_t)1}) {
        const bool prefill = tokens > 1;
        Routing rt = route(tokens, TOPK, E, 40 + tokens);
        const size_t M = tokens * TOPK;
        Case c;
        c.family = "moe";
        c.kernel = fmt("moe_gemm_wmma[bf16,%s,t%zu,e%zu,n%zu,k%zu]", prefill ? "prefill" : "decode", tokens, E, N, K);
        auto f = sofun<moe_wmma_fn>("moe_gemm_wmma");
        CUdeviceptr in = rand_dev(BF16, tokens * K, -1.f, 1.f, 41), w = rand_dev(BF16, E * N * K, -0.1f, 0.1f, 42);
        CUdeviceptr sti = upload(rt.sorted_token_ids), eid = upload(rt.expert_ids);
        CUdeviceptr counts[2] = {dalloc(E * 4), dalloc(E * 4)}, offs[2] = {dalloc((E + 1) * 4), dalloc((E + 1) * 4)};
        c.outs.push_back(out_pair(BF16, M * N));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        CUdeviceptr c0 = counts[0], c1 = counts[1], f0 = offs[0], f1 = offs[1];
        c.elements = E * N * K;
        c.bytes = (double)rt.used_experts * N * K * 2 + tokens * K * 2.0 + M * N * 2.0;
        int e = E, tk = TOPK, m = M, n = N, kk = K;
        c.run = [=](int s) {
            (s ? f.second : f.first)((const void*)in, (const void*)w, (const int32_t*)sti, (const int32_t*)eid, nullptr, (void*)(s ? o1 : o0),
                                     (int32_t*)(s ? c1 : c0), (int32_t*)(s ? f1 : f0), e, tk, m, n, kk, 1, prefill, (void*)g_stream);
        };
        measure(c);
    }
    const size_t q4k_expert_bytes = N * K / Q4_K.qk * Q4_K.block_bytes;
    {   // moe_gemm_gguf (decode, f32 input, q4_K weights, 1 token)
        const size_t tokens = 1, M = tokens * TOPK;
        Routing rt = route(tokens, TOPK, E, 50);
        Case c;
        c.family = "moe";
        c.kernel = fmt("moe_gemm_gguf[q4_K,decode,t%zu,e%zu,n%zu,k%zu]", tokens, E, N, K);
        auto f = sofun<moe_gguf_fn>("moe_gemm_gguf");
        CUdeviceptr in = rand_dev(F32, tokens * K, -1.f, 1.f, 51);
        CUdeviceptr w = rand_quant(E * N * K / Q4_K.qk, Q4_K.block_bytes, Q4_K.halves, 52);
        CUdeviceptr sti = upload(rt.sorted_token_ids), eid = upload(rt.expert_ids);
        c.outs.push_back(out_pair(F32, M * N));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = E * N * K;
        c.bytes = (double)rt.used_experts * q4k_expert_bytes + tokens * K * 4.0 + M * N * 4.0;
        int e = E, tk = TOPK, m = M, n = N, kk = K;
        c.run = [=](int s) {
            (s ? f.second : f.first)((const float*)in, (const void*)w, (const int32_t*)sti, (const int32_t*)eid, nullptr,
                                     (void*)(s ? o1 : o0), e, tk, m, n, kk, 1, (void*)g_stream);
        };
        measure(c);
    }
    {   // moe_gemm_gguf_prefill (bf16 input, q4_K weights, 512 tokens)
        const size_t tokens = 512, M = tokens * TOPK;
        Routing rt = route(tokens, TOPK, E, 60);
        Case c;
        c.family = "moe";
        c.kernel = fmt("moe_gemm_gguf_prefill[q4_K,bf16,t%zu,e%zu,n%zu,k%zu]", tokens, E, N, K);
        auto f = sofun<moe_gguf_prefill_fn>("moe_gemm_gguf_prefill");
        auto ref_fn = sofun<moe_gguf_fn>("moe_gemm_gguf");
        std::vector<float> xf = rand_host_f32(tokens * K, -1.f, 1.f, 61);
        std::vector<uint16_t> xb(xf.size());
        for (size_t i = 0; i < xf.size(); ++i) { xb[i] = f2bf(xf[i]); xf[i] = bf2f(xb[i]); }  // the same values in bf16 and f32
        CUdeviceptr in = upload(xb), in_f32 = upload(xf);
        CUdeviceptr w = rand_quant(E * N * K / Q4_K.qk, Q4_K.block_bytes, Q4_K.halves, 62);
        CUdeviceptr sti = upload(rt.sorted_token_ids), eid = upload(rt.expert_ids);
        c.outs.push_back(out_pair(F32, M * N));
        CUdeviceptr o0 = c.outs[0].p[0], o1 = c.outs[0].p[1];
        c.elements = E * N * K;
        c.bytes = (double)rt.used_experts * q4k_expert_bytes + tokens * K * 2.0 + M * N * 4.0;
        int e = E, tk = TOPK, m = M, n = N, kk = K;
        c.tol_f32 = 1e-4;
        {
            // reference: the ORIGINAL moe_gemm_gguf (decode kernel, q8_1-quantized activations; bitwise equal on both sides)
            // on the same input values, weights and routing
            Output out = c.outs[0];
            CUdeviceptr ref_out = dalloc(M * N * 4);
            c.crosscheck = [=]() {
                ref_fn.first((const float*)in_f32, (const void*)w, (const int32_t*)sti, (const int32_t*)eid, nullptr, (void*)ref_out, e, tk, m, n,
                             kk, 1, (void*)g_stream);
                sync();
                std::vector<float> r(M * N);
                CK(cuMemcpyDtoH(r.data(), ref_out, M * N * 4));
                std::vector<size_t> idx(M * N);
                std::vector<double> ref(M * N);
                for (size_t i = 0; i < M * N; ++i) { idx[i] = i; ref[i] = r[i]; }
                return ref_error(out, idx, ref, "moe_gemm_gguf (original, q8_1 activations)");
            };
        }
        c.run = [=](int s) {
            (s ? f.second : f.first)((const void*)in, (const uint8_t*)w, (const int32_t*)sti, (const int32_t*)eid, nullptr,
                                     (void*)(s ? o1 : o0), e, tk, m, n, kk, 1, 1, (void*)g_stream);
        };
        measure(c);
    }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

static void usage() {
    fprintf(stderr,
            "usage: throughput --orig-dir DIR --gen-dir DIR --orig-so FILE --gen-so FILE --tsv OUT.tsv\n"
            "                  [--nvcc 'nvcc version'] [--only family,family] [--min-ms 50]\n"
            "families: copy unary binary affine cast reduce softmax norm indexing scatter conv sort mmvq mmq mmvq_gguf mmq_gguf moe\n");
    exit(2);
}

int main(int argc, char** argv) {
    std::string nvcc_version = "unknown";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string { if (i + 1 >= argc) usage(); return argv[++i]; };
        if (a == "--orig-dir") g_orig_dir = val();
        else if (a == "--gen-dir") g_gen_dir = val();
        else if (a == "--orig-so") g_orig_so = val();
        else if (a == "--gen-so") g_gen_so = val();
        else if (a == "--tsv") g_tsv_path = val();
        else if (a == "--nvcc") nvcc_version = val();
        else if (a == "--min-ms") g_min_ms = atof(val().c_str());
        else if (a == "--only") {
            std::string s = val();
            size_t p = 0;
            while (p <= s.size()) {
                size_t q = s.find(',', p);
                if (q == std::string::npos) q = s.size();
                if (q > p) g_only.insert(s.substr(p, q - p));
                p = q + 1;
            }
        } else usage();
    }
    if (g_orig_dir.empty() || g_gen_dir.empty() || g_orig_so.empty() || g_gen_so.empty() || g_tsv_path.empty()) usage();

    CK(cuInit(0));
    CK(cuDeviceGet(&g_dev, 0));
    CK(cuDevicePrimaryCtxRetain(&g_ctx, g_dev));  // the primary context: the launchers' cudart uses it too
    CK(cuCtxSetCurrent(g_ctx));
    CK(cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&g_ev0, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&g_ev1, CU_EVENT_DEFAULT));

    char name[256] = {0};
    CK(cuDeviceGetName(name, sizeof name, g_dev));
    int mem_khz = 0, bus_bits = 0, major = 0, minor = 0, nsm = 0, driver = 0, runtime = 0;
    cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, g_dev);
    cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, g_dev);
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev));
    CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev));
    CK(cuDeviceGetAttribute(&nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g_dev));
    CK(cuDriverGetVersion(&driver));
    cudaRuntimeGetVersion(&runtime);
    g_peak_gbs = 2.0 * mem_khz * 1000.0 * bus_bits / 8.0 / 1e9;

    g_tsv_comments.push_back(fmt("device: %s (sm_%d%d, %d SMs)", name, major, minor, nsm));
    g_tsv_comments.push_back(fmt("peak HBM GB/s: %.1f (2 * %d kHz * %d bits / 8)", g_peak_gbs, mem_khz, bus_bits));
    g_tsv_comments.push_back(fmt("CUDA driver: %d.%d, runtime: %d.%d", driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10));
    g_tsv_comments.push_back("nvcc: " + nvcc_version);
    g_tsv_comments.push_back("original: " + g_orig_dir + " (+ " + g_orig_so + "); translated: " + g_gen_dir + " (+ " + g_gen_so + ")");
    g_tsv_comments.push_back("ratio = original_us / translated_us (>= 1: translated at least as fast); us = median per call; "
                             "pct_peak = bytes / time / peak * 100");
    printf("device: %s (sm_%d%d, %d SMs), peak HBM %.1f GB/s, driver %d.%d, runtime %d.%d, nvcc %s\n", name, major, minor, nsm, g_peak_gbs,
           driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10, nvcc_version.c_str());
    fflush(stdout);
    if (g_peak_gbs <= 0) fprintf(stderr, "WARNING: memory clock / bus width not reported: pct_peak will be nan\n");

    bench_copy();
    if (want("unary")) {
        bench_map("unary", "unary", "uexp_f32", F32, F32);
        bench_map("unary", "unary", "ugelu_f32", F32, F32);
        bench_map("unary", "unary", "usilu_bf16", BF16, BF16);
        bench_map("unary", "unary", "ugelu_bf16", BF16, BF16);
        bench_map("unary", "unary", "uexp_f32", F32, F32, TAIL);
        bench_map("unary", "unary", "uexp_f32", F32, F32, MISALIGNED);
        bench_map("unary", "unary", "uneg_f16", F16, F16);
    }
    if (want("binary")) {
        bench_binary("badd_f32", F32);
        bench_binary("bsub_f32", F32);
        bench_binary("bmul_bf16", BF16);
        bench_binary("badd_f16", F16);
    }
    if (want("affine")) {
        bench_affine<float>("affine_f32", F32, 1.5f, 0.25f);
        bench_affine<uint16_t>("affine_bf16", BF16, f2bf(1.5f), f2bf(0.25f));
        bench_affine<uint16_t>("affine_f16", F16, f2h(1.5f), f2h(0.25f));
    }
    if (want("cast")) {
        bench_map("cast", "cast", "cast_f32_bf16", F32, BF16);
        bench_map("cast", "cast", "cast_bf16_f32", BF16, F32);
        bench_map("cast", "cast", "cast_f32_f16", F32, F16);
        bench_map("cast", "cast", "cast_f16_f32", F16, F32);
    }
    bench_reduce();
    bench_softmax();
    bench_norm();
    bench_indexing();
    bench_scatter();
    bench_conv();
    bench_sort();
    bench_mmvq();
    bench_mmq();
    bench_mmvq_gguf();
    bench_mmq_gguf();
    bench_moe();

    // Readable table with per-family geometric means.
    printf("\n%-10s %-58s %9s %9s %11s %11s %7s %7s %7s %6s  %s\n", "family", "kernel", "elements", "MB", "original_us", "translat_us",
           "ratio", "orig%pk", "ours%pk", "noise%", "check");
    std::map<std::string, std::vector<double>> fam;
    std::vector<std::string> order;
    std::vector<double> all;
    int bad = 0;
    for (auto& r : g_rows) {
        double ratio = r.us[0] / r.us[1];
        double p0 = g_peak_gbs > 0 ? r.bytes / (r.us[0] * 1e-6) / (g_peak_gbs * 1e9) * 100 : NAN;
        double p1 = g_peak_gbs > 0 ? r.bytes / (r.us[1] * 1e-6) / (g_peak_gbs * 1e9) * 100 : NAN;
        printf("%-10s %-58s %9.3g %9.4g %11.4g %11.4g %7.4f %7.4g %7.4g %6.2f  %s%s\n", r.family.c_str(), r.kernel.c_str(), r.elements,
               r.bytes / 1e6, r.us[0], r.us[1], ratio, p0, p1, r.noise, r.ok ? "" : "WARNING ", r.check.c_str());
        if (!fam.count(r.family)) order.push_back(r.family);
        fam[r.family].push_back(ratio);
        all.push_back(ratio);
        if (!r.ok) ++bad;
    }
    auto geo = [](const std::vector<double>& v) {
        double s = 0;
        for (double x : v) s += std::log(x);
        return std::exp(s / v.size());
    };
    printf("\ngeometric-mean ratio (original_us / translated_us; >= 1: translated at least as fast)\n");
    for (auto& f : order) printf("  %-10s %7.4f  (%zu kernels)\n", f.c_str(), geo(fam[f]), fam[f].size());
    if (!all.empty()) printf("  %-10s %7.4f  (%zu kernels)\n", "overall", geo(all), all.size());
    if (bad) printf("\nWARNING: %d kernel(s) whose original and translated outputs differ beyond tolerance (see check)\n", bad);
    g_tsv_comments.push_back(fmt("complete: %zu kernels, %d with differing outputs", g_rows.size(), bad));
    write_tsv();
    printf("\nwrote %s\n", g_tsv_path.c_str());
    for (int s = 0; s < 2; ++s) {
        for (auto& m : g_mods[s]) cuModuleUnload(m.second);
    }
    return 0;
}
