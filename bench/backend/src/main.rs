//! End-to-end backend benchmark: one Candle program, built twice.
//!
//! * `bench/backend/cuda`: stock crates.io candle-core/candle-nn/candle-transformers 0.11.1
//!   with feature `cuda`, device `Device::new_cuda(0)`;
//! * `bench/backend/rocm`: the same crates with candle-core/candle-nn patched to
//!   `generated/` and feature `rocm`, device `Device::new_rocm(0)` (on an NVIDIA GPU
//!   through hip-on-cuda).
//!
//! The benchmarks are those of candle-core 0.11.1's `benches/` (same operations, sizes and
//! dtypes, same names), plus conv2d, sum/max reductions, candle-nn's softmax / rms_norm /
//! rope, QMatMul (Q4_0 and Q4K, batch 1 = MMVQ path and batch >= 32 = MMQ path), and
//! candle-transformers' llama (f32, f16, bf16) and quantized llama (Q4K) with made-up
//! weights: one 128-token prefill and one decode step after it.
//!
//! Each benchmark: its setup, 3 warm-up calls and a synchronize, a calibration that picks n
//! (iterations per repetition, about `--target-ms` of work), then `--reps` repetitions of
//! "n calls, then `device.synchronize()`"; the row is the median over the repetitions of
//! (repetition time / n), in microseconds. Like Candle's own benches, every call allocates
//! its output, so the allocator is part of what is measured.
//!
//! Usage:
//!   backend-bench-{cuda,rocm} [--out FILE.tsv] [--reps N] [--target-ms MS] [--filter SUBSTR]...
//!                             [--note TEXT]... [--cpu] [--list] [--fixed-iters N]
//!   backend-bench-{cuda,rocm} --merge IN.tsv... --out OUT.tsv      (per row: the minimum and the maximum over the runs)
//!   backend-bench-{cuda,rocm} --join CUDA.tsv ROCM.tsv --out JOINED.tsv
//!
//! The TSV: `# ` comment lines (backend, device, candle, method), then the header
//! `benchmark\tshape\tdtype\tus` and one row per benchmark that ran. A benchmark that fails
//! (an op the backend lacks) gets a `# error` comment line instead of a row. A merged file
//! has the header `benchmark\tshape\tdtype\tus\tus_max`: the fastest and the slowest run (the
//! merge of a single run keeps the plain header: it knows no spread). The
//! joined table: `benchmark\tshape\tdtype\tcuda_us\trocm_us\tratio`, ratio = cuda_us / rocm_us
//! (>= 1: the ROCm backend is at least as fast), `NA` where one side has no row; joined from
//! merged files, its `# spread:` line says how many rows below 0.95 have ROCm's fastest run
//! slower than CUDA's slowest (a difference both sides' run-to-run spread leaves standing), and
//! names them.

use candle_bench_fixtures::{gpu_device, seed_of, XorShift64Star, BACKEND, GGML_BLOCK_TYPES};
use candle_core::quantized::{gguf_file, GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::{llama, quantized_llama};
use std::collections::HashMap;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod tsv;


/// Which candle the binary was built against (the manifests pin =0.11.1).
const CANDLE: &str = if cfg!(feature = "cuda") {
    "candle-core/candle-nn/candle-transformers 0.11.1 from crates.io, stock, feature cuda"
} else if cfg!(feature = "rocm") {
    "candle-core/candle-nn 0.11.1 patched to generated/ (feature rocm), candle-transformers 0.11.1 from crates.io"
} else {
    "candle 0.11.1, no GPU feature"
};

// ---------------------------------------------------------------------------
// Made-up, deterministic data (the same on both builds: generated on the host)
// ---------------------------------------------------------------------------

/// `n` values uniform in [lo, hi).
fn uniform(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut r = XorShift64Star::new(seed);
    (0..n).map(|_| lo + (hi - lo) * r.unit_f32()).collect()
}

/// A host-made tensor of uniform values, moved to `dev` and cast to `dtype`.
fn made_up(dims: &[usize], lo: f32, hi: f32, seed: u64, dtype: DType, dev: &Device) -> Result<Tensor> {
    let n = dims.iter().product();
    Tensor::from_vec(uniform(n, lo, hi, seed), dims, &Device::Cpu)?
        .to_device(dev)?
        .to_dtype(dtype)
}

/// Weight values by parameter name: norms near 1, the rest U(-a, a), a = 1/sqrt(fan_in).
fn weight_values(name: &str, dims: &[usize]) -> Vec<f32> {
    let n = dims.iter().product();
    if name.contains("norm") {
        uniform(n, 0.8, 1.2, seed_of(name))
    } else {
        let a = 1.0 / (*dims.last().unwrap_or(&1) as f32).sqrt();
        uniform(n, -a, a, seed_of(name))
    }
}

/// A VarBuilder backend that makes up every parameter it is asked for (by name and shape),
/// keeps the f32 device copy and hands out casts of it: no file, no download.
#[derive(Clone, Default)]
struct MadeUpWeights {
    cache: Arc<Mutex<HashMap<String, Tensor>>>,
}

impl candle_nn::var_builder::SimpleBackend for MadeUpWeights {
    fn get(&self, s: Shape, name: &str, _: candle_nn::Init, dtype: DType, dev: &Device) -> Result<Tensor> {
        let mut cache = self.cache.lock().unwrap();
        let t = match cache.get(name) {
            Some(t) if t.shape() == &s => t.clone(),
            _ => {
                let t = Tensor::from_vec(weight_values(name, s.dims()), s.dims(), &Device::Cpu)?.to_device(dev)?;
                cache.insert(name.to_string(), t.clone());
                t
            }
        };
        t.to_dtype(dtype)
    }
    fn get_unchecked(&self, name: &str, _: DType, _: &Device) -> Result<Tensor> {
        candle_core::bail!("made-up weights need a shape ({name})")
    }
    fn contains_tensor(&self, _: &str) -> bool {
        true
    }
}

// ---------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------

/// With `BENCH_PROBE=1`: calls `backend_probe_mark(label)` of an LD_PRELOADed
/// `probe/libbackend_probe.so` (found with dlsym), which prints the runtime calls made
/// since the previous mark (launches, copies, synchronizations, allocations).
mod probe {
    use std::ffi::{c_char, c_void, CString};
    use std::sync::OnceLock;

    extern "C" {
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    type Mark = unsafe extern "C" fn(*const c_char);
    static MARK: OnceLock<Option<Mark>> = OnceLock::new();

    pub fn mark(label: &str) {
        let f = MARK.get_or_init(|| {
            if std::env::var_os("BENCH_PROBE").is_none() {
                return None;
            }
            // RTLD_DEFAULT is the null handle on glibc
            let p = unsafe { dlsym(std::ptr::null_mut(), c"backend_probe_mark".as_ptr()) };
            if p.is_null() {
                eprintln!("BENCH_PROBE is set but backend_probe_mark is not loaded (LD_PRELOAD the probe)");
                None
            } else {
                Some(unsafe { std::mem::transmute::<*mut c_void, Mark>(p) })
            }
        });
        if let Some(f) = f {
            let c = CString::new(label.replace('\0', "")).unwrap();
            unsafe { f(c.as_ptr()) }
        }
    }
}

struct Row {
    name: String,
    shape: String,
    dtype: String,
    us: f64,
    iters: usize,
    /// (max - min) / median over the repetitions
    spread: f64,
}

struct Runner {
    dev: Device,
    reps: usize,
    target: Duration,
    /// `--fixed-iters N`: no calibration, n = N (for profilers: a known launch count)
    fixed_iters: Option<usize>,
    filters: Vec<String>,
    list_only: bool,
    rows: Vec<Row>,
    errors: Vec<(String, String, String, String)>,
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

impl Runner {
    fn sync(&self) -> Result<()> {
        self.dev.synchronize()
    }

    /// One benchmark: `setup` builds the inputs (not timed) and returns the timed call.
    fn case<S, F>(&mut self, name: &str, shape: &str, dtype: &str, setup: S)
    where
        S: FnOnce() -> Result<F>,
        F: FnMut() -> Result<()>,
    {
        let key = format!("{name} {shape} {dtype}");
        if !self.filters.is_empty() && !self.filters.iter().any(|f| key.contains(f.as_str())) {
            return;
        }
        if self.list_only {
            println!("{name}\t{shape}\t{dtype}");
            return;
        }
        let res = std::panic::catch_unwind(AssertUnwindSafe(|| self.measure(&key, setup)));
        let res = match res {
            // the first line: candle appends a backtrace to some errors
            Ok(r) => r.map_err(|e| e.to_string().lines().next().unwrap_or("").to_string()),
            Err(p) => Err(format!("panicked: {}", panic_message(p))),
        };
        match res {
            Ok((us, iters, spread)) => {
                println!("{name:<36} {shape:<34} {dtype:<6} {us:>12.2} us  (n={iters}, spread {:.1}%)", spread * 100.0);
                self.rows.push(Row { name: name.into(), shape: shape.into(), dtype: dtype.into(), us, iters, spread });
            }
            Err(e) => {
                let e = e.replace(['\n', '\t'], " ");
                let e: String = e.chars().take(300).collect();
                println!("{name:<36} {shape:<34} {dtype:<6}        error: {e}");
                self.errors.push((name.into(), shape.into(), dtype.into(), e));
                // a failed op may leave an error on the stream: make sure the next case starts clean
                let _ = self.sync();
            }
        }
        let _ = std::io::stdout().flush();
    }

    fn measure<S, F>(&self, key: &str, setup: S) -> Result<(f64, usize, f64)>
    where
        S: FnOnce() -> Result<F>,
        F: FnMut() -> Result<()>,
    {
        let mut f = setup()?;
        self.sync()?;
        for _ in 0..3 {
            f()?;
        }
        self.sync()?;
        probe::mark(&format!("setup\t{key}"));
        if let Some(n) = self.fixed_iters {
            let t = Instant::now();
            for _ in 0..n {
                f()?;
            }
            self.sync()?;
            let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
            probe::mark(&format!("timed\t{key}\tn={n}"));
            return Ok((us, n, 0.0));
        }
        // calibration: double n until a batch takes a quarter of the target
        let mut n = 1usize;
        let per_iter = loop {
            let t = Instant::now();
            for _ in 0..n {
                f()?;
            }
            self.sync()?;
            let el = t.elapsed();
            if el >= self.target / 4 || n >= 1 << 16 {
                break el.as_secs_f64() / n as f64;
            }
            n *= 2;
        };
        let n = ((self.target.as_secs_f64() / per_iter).round() as usize).clamp(1, 1 << 17);
        let mut samples = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            let t = Instant::now();
            for _ in 0..n {
                f()?;
            }
            self.sync()?;
            samples.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        }
        samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = if samples.len() % 2 == 1 {
            samples[samples.len() / 2]
        } else {
            (samples[samples.len() / 2 - 1] + samples[samples.len() / 2]) / 2.0
        };
        let spread = (samples[samples.len() - 1] - samples[0]) / median;
        Ok((median, n, spread))
    }
}

fn dt(d: DType) -> &'static str {
    d.as_str()
}

fn dims_str(d: &[usize]) -> String {
    d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x")
}

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

// ---------------------------------------------------------------------------
// candle-core's benches (benches/benchmarks/*.rs of 0.11.1): same ops, sizes, dtypes
// ---------------------------------------------------------------------------

fn bench_core(r: &mut Runner) {
    let dev = r.dev.clone();

    // affine.rs: (1, 1024, 1024) zeros, affine(12.34, 56.78)
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::F8E4M3] {
        let d = dev.clone();
        r.case("affine", "1x1024x1024", dt(dtype), move || {
            let t = Tensor::zeros((1, 1024, 1024), dtype, &d)?;
            Ok(move || t.affine(12.34, 56.78).map(drop))
        });
    }

    // binary.rs: mul of two (1, 1024, 1024) aranges
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let d = dev.clone();
        r.case("binary_mul", "1x1024x1024", dt(dtype), move || {
            let a = Tensor::arange(0f32, (1024 * 1024) as f32, &d)?.to_dtype(dtype)?.reshape((1, 1024, 1024))?;
            let b = a.copy()?;
            Ok(move || a.mul(&b).map(drop))
        });
    }

    // broadcast.rs
    for dtype in FLOATS {
        let d = dev.clone();
        r.case("broadcast_add_contiguous", "128x126x126+128x126x126", dt(dtype), move || {
            let a = Tensor::ones((128, 126, 126), dtype, &d)?;
            let b = Tensor::ones((128, 126, 126), dtype, &d)?;
            Ok(move || a.broadcast_add(&b).map(drop))
        });
    }
    for dtype in FLOATS {
        let d = dev.clone();
        r.case("broadcast_add", "1x1x126x126+1x128x1x1", dt(dtype), move || {
            let x = Tensor::ones((1, 1, 126, 126), dtype, &d)?;
            let bias = Tensor::ones((1, 128, 1, 1), dtype, &d)?;
            Ok(move || x.broadcast_add(&bias).map(drop))
        });
    }
    for dtype in FLOATS {
        let d = dev.clone();
        r.case("broadcast_scalar_add", "1x256x64+1", dt(dtype), move || {
            let x = Tensor::ones((1, 256, 64), dtype, &d)?;
            let bias = Tensor::ones((1,), dtype, &d)?;
            Ok(move || x.broadcast_add(&bias).map(drop))
        });
    }

    // cat.rs: 8 tensors (4, 128, 64) f32, contiguous or transposed views
    for (name, strided, dim) in [("cat_dim0", false, 0), ("cat_dim1", false, 1), ("cat_strided_dim0", true, 0), ("cat_strided_dim1", true, 1)] {
        let d = dev.clone();
        r.case(name, "8 x 4x128x64", "f32", move || {
            let ts = (0..8)
                .map(|_| {
                    if strided {
                        Tensor::zeros((64, 128, 4), DType::F32, &d)?.transpose(0, 2)
                    } else {
                        Tensor::zeros((4, 128, 64), DType::F32, &d)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(move || Tensor::cat(&ts, dim).map(drop))
        });
    }

    // contiguous.rs: (8, 512, 64) f32
    {
        let d = dev.clone();
        r.case("contiguous", "8x512x64", "f32", move || {
            let t = Tensor::zeros((8, 512, 64), DType::F32, &d)?;
            Ok(move || t.force_contiguous().map(drop))
        });
        let d = dev.clone();
        r.case("contiguous_uniform", "8x512x64 of 8x528x64", "f32", move || {
            let t = Tensor::zeros((8, 528, 64), DType::F32, &d)?.narrow(1, 0, 512)?;
            Ok(move || t.contiguous().map(drop))
        });
        let d = dev.clone();
        r.case("contiguous_strided", "8x512x64 T(0,1)", "f32", move || {
            let t = Tensor::zeros((8, 512, 64), DType::F32, &d)?.transpose(0, 1)?;
            Ok(move || t.contiguous().map(drop))
        });
    }

    // conv_transpose2d.rs: x (1, 4, 50, 50), k (4, 1, 5, 5), padding 1, stride 1, dilation 2
    for dtype in FLOATS {
        let d = dev.clone();
        r.case("conv_transpose2d", "1x4x50x50 k4x1x5x5 p1 d2", dt(dtype), move || {
            let t = Tensor::arange(0f32, 10000.0, &d)?.reshape((1, 4, 50, 50))?.to_dtype(dtype)?;
            let k = Tensor::arange(0f32, 100.0, &d)?.reshape((4, 1, 5, 5))?.to_dtype(dtype)?;
            Ok(move || t.conv_transpose2d(&k, 1, 0, 1, 2).map(drop))
        });
    }
    // conv2d (not among candle-core 0.11.1's benches): the same input as conv_transpose2d,
    // and a ResNet-style 3x3 layer
    for dtype in FLOATS {
        let d = dev.clone();
        r.case("conv2d", "1x4x50x50 k8x4x5x5 p1", dt(dtype), move || {
            let t = Tensor::arange(0f32, 10000.0, &d)?.reshape((1, 4, 50, 50))?.affine(1e-4, 0.0)?.to_dtype(dtype)?;
            let k = made_up(&[8, 4, 5, 5], -0.1, 0.1, 11, dtype, &d)?;
            Ok(move || t.conv2d(&k, 1, 1, 1, 1).map(drop))
        });
        let d = dev.clone();
        r.case("conv2d", "8x64x56x56 k64x64x3x3 p1", dt(dtype), move || {
            let t = made_up(&[8, 64, 56, 56], -1.0, 1.0, 12, dtype, &d)?;
            let k = made_up(&[64, 64, 3, 3], -0.05, 0.05, 13, dtype, &d)?;
            Ok(move || t.conv2d(&k, 1, 1, 1, 1).map(drop))
        });
    }

    // copy.rs: Tensor::new of a (128, 1, 1024) f32 host nested Vec (host -> device)
    {
        let d = dev.clone();
        r.case("copy_mask", "128x1x1024 host->device", "f32", move || {
            let mask = vec![vec![vec![0f32; 1024]; 1]; 128];
            Ok(move || {
                // the clone is a host copy (as in the upstream bench, which clones outside
                // its timer: here it is inside, about 0.5 MiB of memcpy on both builds)
                let m = mask.clone();
                Tensor::new(m, &d).map(drop)
            })
        });
    }

    // matmul.rs: f32 zeros, broadcast_matmul
    let shapes: [(&str, &[usize], &[usize]); 7] = [
        ("gemv", &[1, 1, 2048], &[1, 2048, 2048]),
        ("attn_4d_small", &[484, 6, 144, 32], &[484, 6, 32, 144]),
        ("attn_4d_large", &[121, 24, 144, 32], &[121, 24, 32, 144]),
        ("square_512", &[512, 512], &[512, 512]),
        ("square_1024", &[1024, 1024], &[1024, 1024]),
        ("batch_1000", &[1000, 144, 32], &[1000, 32, 144]),
        ("linear_large", &[17424, 768], &[768, 3072]),
    ];
    for (name, a, b) in shapes {
        let d = dev.clone();
        r.case(&format!("matmul_{name}"), &format!("{}@{}", dims_str(a), dims_str(b)), "f32", move || {
            let lhs = Tensor::zeros(a, DType::F32, &d)?;
            let rhs = Tensor::zeros(b, DType::F32, &d)?;
            Ok(move || lhs.broadcast_matmul(&rhs).map(drop))
        });
    }
    // half-precision GEMMs (not in the upstream bench): the tensor-core paths of cuBLAS / rocBLAS
    for dtype in [DType::F16, DType::BF16] {
        for (name, a, b) in [("square_1024", &[1024usize, 1024][..], &[1024usize, 1024][..]), ("linear_large", &[17424, 768], &[768, 3072])] {
            let d = dev.clone();
            r.case(&format!("matmul_{name}"), &format!("{}@{}", dims_str(a), dims_str(b)), dt(dtype), move || {
                let lhs = made_up(a, -1.0, 1.0, 21, dtype, &d)?;
                let rhs = made_up(b, -1.0, 1.0, 22, dtype, &d)?;
                Ok(move || lhs.broadcast_matmul(&rhs).map(drop))
            });
        }
    }

    // random.rs: (1, 2048, 2048) f32
    {
        let d = dev.clone();
        r.case("random_uniform", "1x2048x2048", "f32", move || {
            let t = Tensor::zeros((1, 2048, 2048), DType::F32, &d)?;
            Ok(move || t.rand_like(-1.0, 123.0).map(drop))
        });
        let d = dev.clone();
        r.case("random_normal", "1x2048x2048", "f32", move || {
            let t = Tensor::zeros((1, 2048, 2048), DType::F32, &d)?;
            Ok(move || t.randn_like(100.0, 15.0).map(drop))
        });
    }

    // reduce.rs: sum_keepdim(2) / argmin_keepdim(2) on (1, 1024, 1024) rand(-1000, 1000),
    // contiguous and transposed(0, 2); plus max_keepdim(2)
    for strided in [false, true] {
        for dtype in FLOATS {
            let sfx = if strided { "_strided" } else { "" };
            let shape = if strided { "1x1024x1024 T(0,2)" } else { "1x1024x1024" };
            for op in ["reduce_sum", "reduce_max", "arg_reduce_min"] {
                let d = dev.clone();
                r.case(&format!("{op}{sfx}"), shape, dt(dtype), move || {
                    let a = made_up(&[1, 1024, 1024], -1000.0, 1000.0, 31, dtype, &d)?;
                    let a = if strided { a.transpose(0, 2)? } else { a };
                    Ok(move || match op {
                        "reduce_sum" => a.sum_keepdim(2).map(drop),
                        "reduce_max" => a.max_keepdim(2).map(drop),
                        _ => a.argmin_keepdim(2).map(drop),
                    })
                });
            }
        }
    }

    // unary.rs: casts and sqrt on (1, 1024, 1024) aranges
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let to = if dtype == DType::F32 { DType::F16 } else { DType::F32 };
        let d = dev.clone();
        r.case(&format!("cast_to_{}", dt(to)), "1x1024x1024", dt(dtype), move || {
            let t = Tensor::arange(0f32, (1024 * 1024) as f32, &d)?.to_dtype(dtype)?.reshape((1, 1024, 1024))?;
            Ok(move || t.to_dtype(to).map(drop))
        });
    }
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let d = dev.clone();
        r.case("sqrt", "1x1024x1024", dt(dtype), move || {
            let t = Tensor::arange(0f32, (1024 * 1024) as f32, &d)?.to_dtype(dtype)?.reshape((1, 1024, 1024))?;
            Ok(move || t.sqrt().map(drop))
        });
    }

    // where_cond.rs
    let alternating: Vec<u8> = (0..1024 * 1024).map(|i| (i % 2) as u8).collect();
    let causal: Vec<u8> = (0..4 * 512 * 512)
        .map(|i| {
            let (row, col) = ((i / 512) % 512, i % 512);
            u8::from(col > row)
        })
        .collect();
    let alternating = Arc::new(alternating);
    let causal = Arc::new(causal);
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (d, c) = (dev.clone(), alternating.clone());
        r.case("where_cond", "1x1024x1024", dt(dtype), move || {
            let m = Tensor::from_slice(c.as_slice(), (1, 1024, 1024), &d)?;
            let t = Tensor::ones((1, 1024, 1024), dtype, &d)?;
            let f = Tensor::zeros((1, 1024, 1024), dtype, &d)?;
            Ok(move || m.where_cond(&t, &f).map(drop))
        });
    }
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (d, c) = (dev.clone(), causal.clone());
        r.case("where_cond_masked_fill", "1x4x512x512", dt(dtype), move || {
            let shape = (1, 4, 512, 512);
            let m = Tensor::from_slice(c.as_slice(), shape, &d)?;
            let t = Tensor::new(1f32, &d)?.to_dtype(dtype)?.broadcast_as(shape)?;
            let f = Tensor::zeros(shape, dtype, &d)?;
            Ok(move || m.where_cond(&t, &f).map(drop))
        });
    }
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (d, c) = (dev.clone(), causal.clone());
        r.case("where_cond_masked_fill_bcast", "1x4x512x512 mask 1x1x512x512", dt(dtype), move || {
            let shape = (1, 4, 512, 512);
            let m = Tensor::from_slice(&c[..512 * 512], (1, 1, 512, 512), &d)?.broadcast_as(shape)?;
            let t = Tensor::new(1f32, &d)?.to_dtype(dtype)?.broadcast_as(shape)?;
            let f = Tensor::zeros(shape, dtype, &d)?;
            Ok(move || m.where_cond(&t, &f).map(drop))
        });
    }
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (d, c) = (dev.clone(), alternating.clone());
        r.case("where_cond_transposed", "1024x1024 on_false T", dt(dtype), move || {
            let m = Tensor::from_slice(c.as_slice(), (1024, 1024), &d)?;
            let t = Tensor::ones((1024, 1024), dtype, &d)?;
            let f = Tensor::zeros((1024, 1024), dtype, &d)?.transpose(0, 1)?;
            Ok(move || m.where_cond(&t, &f).map(drop))
        });
    }
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let (d, c) = (dev.clone(), alternating.clone());
        r.case("where_cond_narrow_inner", "256x512x3 of 256x512x8", dt(dtype), move || {
            let m = Tensor::from_slice(&c[..256 * 512 * 8], (256, 512, 8), &d)?.narrow(2, 0, 3)?;
            let t = Tensor::new(0f32, &d)?.to_dtype(dtype)?.broadcast_as((256, 512, 3))?;
            let f = Tensor::zeros((256, 512, 8), dtype, &d)?.narrow(2, 0, 3)?;
            Ok(move || m.where_cond(&t, &f).map(drop))
        });
    }
}

// ---------------------------------------------------------------------------
// candle-nn ops that a transformer spends its non-GEMM time in
// ---------------------------------------------------------------------------

fn bench_nn(r: &mut Runner) {
    let dev = r.dev.clone();
    for dtype in FLOATS {
        let d = dev.clone();
        r.case("softmax_last_dim", "1x32x128x128", dt(dtype), move || {
            let x = made_up(&[1, 32, 128, 128], -4.0, 4.0, 41, dtype, &d)?;
            Ok(move || candle_nn::ops::softmax_last_dim(&x).map(drop))
        });
        let d = dev.clone();
        r.case("rms_norm", "128x2048", dt(dtype), move || {
            let x = made_up(&[128, 2048], -1.0, 1.0, 42, dtype, &d)?;
            let w = made_up(&[2048], 0.8, 1.2, 43, dtype, &d)?;
            Ok(move || candle_nn::ops::rms_norm(&x, &w, 1e-5).map(drop))
        });
        let d = dev.clone();
        r.case("rope", "1x32x128x64", dt(dtype), move || {
            let x = made_up(&[1, 32, 128, 64], -1.0, 1.0, 44, dtype, &d)?;
            let cos = made_up(&[128, 32], -1.0, 1.0, 45, dtype, &d)?;
            let sin = made_up(&[128, 32], -1.0, 1.0, 46, dtype, &d)?;
            Ok(move || candle_nn::rotary_emb::rope(&x, &cos, &sin).map(drop))
        });
        let d = dev.clone();
        r.case("silu", "128x5632", dt(dtype), move || {
            let x = made_up(&[128, 5632], -4.0, 4.0, 47, dtype, &d)?;
            Ok(move || candle_nn::ops::silu(&x).map(drop))
        });
    }
}

// ---------------------------------------------------------------------------
// QMatMul
// ---------------------------------------------------------------------------

fn bench_qmatmul(r: &mut Runner) {
    let dev = r.dev.clone();
    // qmatmul.rs: x (1, 1024) f32, weight (1024, 1024) quantized, every type of the upstream bench
    for q in [GgmlDType::F32, GgmlDType::F16].into_iter().chain(GGML_BLOCK_TYPES) {
        let d = dev.clone();
        r.case("qmatmul", "x1x1024 w1024x1024", &format!("{q:?}"), move || {
            let x = Tensor::from_vec((0..1024).map(|v| v as f32 / 1024.0).collect::<Vec<_>>(), (1, 1024), &d)?;
            let w: Vec<f32> = (0..1024 * 1024).map(|v| v as f32 / (1024.0 * 1024.0)).collect();
            let w = Tensor::from_vec(w, (1024, 1024), &Device::Cpu)?.t()?.contiguous()?;
            let mm = QMatMul::from_qtensor(QTensor::quantize_onto(&w, q, &d)?)?;
            Ok(move || mm.forward(&x).map(drop))
        });
    }
    // Q4_0 and Q4K, a 4096 x 4096 weight (a 7B model's attention projection), f32 activations:
    // batch 1 and 4 take the MMVQ kernels, batch 32 and 128 the MMQ kernels
    for q in [GgmlDType::Q4_0, GgmlDType::Q4K] {
        let w = Arc::new(Tensor::from_vec(weight_values("qmm4096", &[4096, 4096]), (4096, 4096), &Device::Cpu).expect("host tensor"));
        for b in [1usize, 4, 32, 128] {
            let (d, w) = (dev.clone(), w.clone());
            let path = if b <= 8 { "qmatmul_mmvq" } else { "qmatmul_mmq" };
            r.case(path, &format!("x{b}x4096 w4096x4096"), &format!("{q:?}"), move || {
                let x = made_up(&[b, 4096], -1.0, 1.0, 51, DType::F32, &d)?;
                let mm = QMatMul::from_qtensor(QTensor::quantize_onto(&w, q, &d)?)?;
                Ok(move || mm.forward(&x).map(drop))
            });
        }
    }
}

// ---------------------------------------------------------------------------
// Transformers: llama (f32, f16, bf16) and quantized llama (Q4K), made-up weights
// ---------------------------------------------------------------------------

const PREFILL: usize = 128;

/// TinyLlama-1.1B's shapes (hidden 2048, 32 heads of which 4 kv heads, MLP 5632, vocab
/// 32000), 4 of its 22 layers.
fn llama_config() -> llama::Config {
    llama::Config {
        hidden_size: 2048,
        intermediate_size: 5632,
        vocab_size: 32000,
        num_hidden_layers: 4,
        num_attention_heads: 32,
        num_key_value_heads: 4,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 10_000.0,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings: 512,
        tie_word_embeddings: false,
    }
}

fn prompt_tokens(vocab: usize) -> Vec<u32> {
    (0..PREFILL).map(|i| ((i * 7919 + 13) % vocab) as u32).collect()
}

fn bench_llama(r: &mut Runner) {
    let dev = r.dev.clone();
    let cfg = llama_config();
    let shape_p = format!("4 layers h2048 prefill {PREFILL}");
    let shape_d = format!("4 layers h2048 decode @{PREFILL}");
    let weights = MadeUpWeights::default();
    for dtype in FLOATS {
        // the model and the prefilled kv cache are shared by the two cases of this dtype
        let state: Arc<Mutex<Option<(llama::Llama, llama::Cache)>>> = Arc::new(Mutex::new(None));
        let build = {
            let (d, cfg, weights, state) = (dev.clone(), cfg.clone(), weights.clone(), state.clone());
            move || -> Result<(llama::Llama, llama::Cache)> {
                if let Some(s) = state.lock().unwrap().as_ref() {
                    return Ok(s.clone());
                }
                let vb = VarBuilder::from_backend(Box::new(weights.clone()), dtype, d.clone());
                let model = llama::Llama::load(vb, &cfg)?;
                let mut cache = llama::Cache::new(true, dtype, &cfg, &d)?;
                let tokens = Tensor::new(prompt_tokens(cfg.vocab_size).as_slice(), &d)?.unsqueeze(0)?;
                model.forward(&tokens, 0, &mut cache)?;
                *state.lock().unwrap() = Some((model.clone(), cache.clone()));
                Ok((model, cache))
            }
        };
        {
            let (d, cfg, build) = (dev.clone(), cfg.clone(), build.clone());
            r.case("llama_prefill", &shape_p, dt(dtype), move || {
                let (model, cache) = build()?;
                let tokens = Tensor::new(prompt_tokens(cfg.vocab_size).as_slice(), &d)?.unsqueeze(0)?;
                // The prompt's forward from position 0. The cache (built by a first prefill)
                // holds the causal mask; with use_kv_cache off this forward neither reads nor
                // appends the kv cache, so every iteration is the same prefill.
                Ok(move || {
                    let mut c = cache.clone();
                    c.use_kv_cache = false;
                    model.forward(&tokens, 0, &mut c).map(drop)
                })
            });
        }
        {
            let (d, build) = (dev.clone(), build.clone());
            r.case("llama_decode", &shape_d, dt(dtype), move || {
                let (model, cache) = build()?;
                let token = Tensor::new(&[[7u32]], &d)?;
                // one decode step after the 128-token prefill: a clone of the prefilled cache
                // (cheap: reference-counted tensors) each time, so the position stays 128
                Ok(move || {
                    let mut c = cache.clone();
                    model.forward(&token, PREFILL, &mut c).map(drop)
                })
            });
        }
        // free this dtype's model before the next one
        state.lock().unwrap().take();
    }
    drop(weights);
}

/// The same llama as a GGUF in memory, every matrix in `q` (the norms f32). To keep the
/// host's quantization time short, the 4 layers share one set of matrix values (different
/// tensors on the device, same bytes).
fn llama_gguf(q: GgmlDType) -> Result<Vec<u8>> {
    use gguf_file::Value;
    let cfg = llama_config();
    let (h, ffn, vocab) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
    let head_dim = h / cfg.num_attention_heads;
    let kv = cfg.num_key_value_heads * head_dim;
    let md: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::String("llama".into())),
        ("llama.attention.head_count", Value::U32(cfg.num_attention_heads as u32)),
        ("llama.attention.head_count_kv", Value::U32(cfg.num_key_value_heads as u32)),
        ("llama.block_count", Value::U32(cfg.num_hidden_layers as u32)),
        ("llama.embedding_length", Value::U32(h as u32)),
        ("llama.feed_forward_length", Value::U32(ffn as u32)),
        ("llama.rope.dimension_count", Value::U32(head_dim as u32)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("llama.rope.freq_base", Value::F32(10_000.0)),
    ];
    let quant = |name: &str, dims: &[usize], t: GgmlDType| -> Result<QTensor> {
        let x = Tensor::from_vec(weight_values(name, dims), dims, &Device::Cpu)?;
        QTensor::quantize(&x, t)
    };
    let layer: Vec<(&str, QTensor)> = vec![
        ("attn_q", quant("attn_q", &[h, h], q)?),
        ("attn_k", quant("attn_k", &[kv, h], q)?),
        ("attn_v", quant("attn_v", &[kv, h], q)?),
        ("attn_output", quant("attn_output", &[h, h], q)?),
        ("ffn_gate", quant("ffn_gate", &[ffn, h], q)?),
        ("ffn_up", quant("ffn_up", &[ffn, h], q)?),
        ("ffn_down", quant("ffn_down", &[h, ffn], q)?),
        ("attn_norm", quant("attn_norm", &[h], GgmlDType::F32)?),
        ("ffn_norm", quant("ffn_norm", &[h], GgmlDType::F32)?),
    ];
    let mut tensors: Vec<(String, &QTensor)> = vec![];
    let embd = quant("token_embd", &[vocab, h], q)?;
    let out_norm = quant("output_norm", &[h], GgmlDType::F32)?;
    let output = quant("output", &[vocab, h], q)?;
    tensors.push(("token_embd.weight".into(), &embd));
    tensors.push(("output_norm.weight".into(), &out_norm));
    tensors.push(("output.weight".into(), &output));
    for l in 0..cfg.num_hidden_layers {
        for (n, t) in &layer {
            tensors.push((format!("blk.{l}.{n}.weight"), t));
        }
    }
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut buf = std::io::Cursor::new(Vec::new());
    gguf_file::write(&mut buf, &md_refs, &t_refs)?;
    Ok(buf.into_inner())
}

fn bench_quantized_llama(r: &mut Runner) {
    let dev = r.dev.clone();
    let q = GgmlDType::Q4K;
    let vocab = llama_config().vocab_size;
    let state: Arc<Mutex<Option<quantized_llama::ModelWeights>>> = Arc::new(Mutex::new(None));
    let build = {
        let (d, state) = (dev.clone(), state.clone());
        move || -> Result<quantized_llama::ModelWeights> {
            if let Some(m) = state.lock().unwrap().as_ref() {
                return Ok(m.clone());
            }
            let bytes = llama_gguf(q)?;
            let mut reader = std::io::Cursor::new(bytes);
            let content = gguf_file::Content::read(&mut reader)?;
            let mut model = quantized_llama::ModelWeights::from_gguf(content, &mut reader, &d)?;
            let tokens = Tensor::new(prompt_tokens(vocab).as_slice(), &d)?.unsqueeze(0)?;
            model.forward(&tokens, 0)?;
            *state.lock().unwrap() = Some(model.clone());
            Ok(model)
        }
    };
    {
        let (d, build) = (dev.clone(), build.clone());
        r.case("quantized_llama_prefill", &format!("4 layers h2048 prefill {PREFILL}"), &format!("{q:?}"), move || {
            let mut model = build()?;
            let tokens = Tensor::new(prompt_tokens(vocab).as_slice(), &d)?.unsqueeze(0)?;
            // index_pos 0 replaces the layers' kv caches: every iteration is the same prefill
            Ok(move || model.forward(&tokens, 0).map(drop))
        });
    }
    {
        let (d, build) = (dev.clone(), build.clone());
        r.case("quantized_llama_decode", &format!("4 layers h2048 decode @{PREFILL}"), &format!("{q:?}"), move || {
            let model = build()?;
            let token = Tensor::new(&[[7u32]], &d)?;
            Ok(move || {
                let mut m = model.clone();
                m.forward(&token, PREFILL).map(drop)
            })
        });
    }
    state.lock().unwrap().take();
}

// ---------------------------------------------------------------------------

struct Args {
    out: Option<String>,
    reps: usize,
    target_ms: f64,
    filters: Vec<String>,
    notes: Vec<String>,
    cpu: bool,
    list: bool,
    fixed_iters: Option<usize>,
    merge: Vec<String>,
    join: Vec<String>,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut a = Args { out: None, reps: 7, target_ms: 20.0, filters: vec![], notes: vec![], cpu: false, list: false, fixed_iters: None, merge: vec![], join: vec![] };
    let mut it = std::env::args().skip(1).peekable();
    let mut mode: Option<&str> = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--out" => a.out = Some(value("--out")?),
            "--reps" => a.reps = value("--reps")?.parse().map_err(|_| "--reps: a number".to_string())?,
            "--target-ms" => a.target_ms = value("--target-ms")?.parse().map_err(|_| "--target-ms: a number".to_string())?,
            "--filter" => a.filters.push(value("--filter")?),
            "--note" => a.notes.push(value("--note")?),
            "--cpu" => a.cpu = true,
            "--fixed-iters" => a.fixed_iters = Some(value("--fixed-iters")?.parse().map_err(|_| "--fixed-iters: a number".to_string())?),
            "--list" => a.list = true,
            "--merge" => mode = Some("merge"),
            "--join" => mode = Some("join"),
            "-h" | "--help" => return Err(String::new()),
            s if !s.starts_with("--") && mode == Some("merge") => a.merge.push(s.into()),
            s if !s.starts_with("--") && mode == Some("join") => a.join.push(s.into()),
            s => return Err(format!("unknown argument {s}")),
        }
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    Ok(a)
}

const USAGE: &str = "usage: backend-bench [--out FILE.tsv] [--reps N] [--target-ms MS] [--filter SUBSTR]... [--note TEXT]... [--cpu] [--list] [--fixed-iters N]
       backend-bench --merge IN.tsv... --out OUT.tsv
       backend-bench --join CUDA.tsv ROCM.tsv --out JOINED.tsv";

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    if !args.merge.is_empty() || !args.join.is_empty() {
        let Some(out) = &args.out else {
            eprintln!("error: --merge / --join need --out\n{USAGE}");
            return std::process::ExitCode::from(2);
        };
        let res = if !args.merge.is_empty() {
            tsv::merge(&args.merge, out)
        } else if args.join.len() == 2 {
            tsv::join(&args.join[0], &args.join[1], out)
        } else {
            Err("--join takes two files: CUDA.tsv ROCM.tsv".into())
        };
        return match res {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }

    let dev = if args.cpu || args.list {
        Device::Cpu
    } else {
        match gpu_device() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("error: no {BACKEND} device: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
    };
    let backend = if dev.is_cpu() { "cpu" } else { BACKEND };
    let mut r = Runner {
        dev: dev.clone(),
        reps: args.reps,
        target: Duration::from_secs_f64(args.target_ms / 1000.0),
        fixed_iters: args.fixed_iters,
        filters: args.filters.clone(),
        list_only: args.list,
        rows: vec![],
        errors: vec![],
    };
    let mut head = vec![
        format!("# backend: {backend}"),
        format!("# device: {:?}", dev.location()),
        format!("# candle: {CANDLE}"),
        format!(
            "# method: per benchmark 3 warm-up calls, then {} repetitions of n calls + device.synchronize() (n for ~{} ms); us = median over the repetitions of time/n",
            args.reps, args.target_ms
        ),
    ];
    head.extend(args.notes.iter().map(|n| format!("# {n}")));
    if !args.list {
        for h in &head {
            println!("{h}");
        }
    }
    let start = Instant::now();
    bench_core(&mut r);
    bench_nn(&mut r);
    bench_qmatmul(&mut r);
    bench_llama(&mut r);
    bench_quantized_llama(&mut r);
    if args.list {
        return std::process::ExitCode::SUCCESS;
    }
    println!("{} benchmarks in {:.1} s, {} errors", r.rows.len(), start.elapsed().as_secs_f64(), r.errors.len());

    if let Some(out) = &args.out {
        let mut s = String::new();
        for h in &head {
            s.push_str(h);
            s.push('\n');
        }
        for (n, sh, d, e) in &r.errors {
            s.push_str(&format!("# error\t{n}\t{sh}\t{d}\t{e}\n"));
        }
        s.push_str(tsv::HEADER);
        s.push('\n');
        for row in &r.rows {
            s.push_str(&format!("{}\t{}\t{}\t{:.3}\n", row.name, row.shape, row.dtype, row.us));
        }
        if let Err(e) = std::fs::write(out, s) {
            eprintln!("error: {out}: {e}");
            return std::process::ExitCode::FAILURE;
        }
        // the per-repetition detail (n, spread) beside it, for the noise
        let detail = format!("{out}.detail");
        let mut s = String::from("benchmark\tshape\tdtype\tus\tn\tspread\n");
        for row in &r.rows {
            s.push_str(&format!("{}\t{}\t{}\t{:.3}\t{}\t{:.4}\n", row.name, row.shape, row.dtype, row.us, row.iters, row.spread));
        }
        let _ = std::fs::write(detail, s);
    }
    std::process::ExitCode::SUCCESS
}
