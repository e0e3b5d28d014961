//! Harness shared by the ROCm-vs-CPU tests.
//!
//! A [`Case`] is one operation on one dtype, shape and memory layout. Its `run`
//! closure builds its inputs deterministically (own PRNG, seed derived from the
//! case name) on whatever device it is given, so the ROCm device and the CPU
//! see bit-identical inputs; the harness runs it on both, reads the ROCm result
//! back and compares with a dtype- and op-appropriate tolerance.
//!
//! Whether a case *must* work is decided against the CUDA backend of the same
//! Candle release: `tests/fixtures/cuda-kernels-<version>.txt` lists every
//! kernel the CUDA build exports, and each case names the kernels the backend
//! asks for (with the backend's own naming, e.g. `uexp_f8e4m3`). A case whose
//! kernel the CUDA build lacks may fail on ROCm with an error (as it does on
//! CUDA) but must never return a wrong result.
#![allow(dead_code)]

use candle_core::{DType, Device, Result, Tensor};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

pub const ALL_DTYPES: [DType; 10] = [
    DType::U8,
    DType::U32,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::BF16,
    DType::F16,
    DType::F32,
    DType::F64,
    DType::F8E4M3,
];
pub const FLOAT_DTYPES: [DType; 4] = [DType::F32, DType::F16, DType::BF16, DType::F64];
pub const NN_DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

pub fn is_int(dt: DType) -> bool {
    matches!(dt, DType::U8 | DType::U32 | DType::I16 | DType::I32 | DType::I64)
}

// ---------------------------------------------------------------------------
// Device

/// The first ROCm device, or `None` (after printing `skipped: ...`) when there is none.
pub fn rocm_device(test: &str) -> Option<Device> {
    match Device::new_rocm(0) {
        Ok(d) => Some(d),
        Err(e) => {
            let e = e.to_string();
            println!("skipped: no ROCm device ({test}): {}", e.lines().next().unwrap_or(""));
            None
        }
    }
}

/// A file of this repository, found from where the test runs, never from where it was
/// built: the package directory (cargo sets CARGO_MANIFEST_DIR when it runs the test; the
/// GPU bundle's run script starts each binary in its package directory), so a bundle built
/// in one checkout runs from any other.
pub fn repo_path(rel: &str) -> PathBuf {
    let package = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("the current directory"));
    package.join("../..").join(rel)
}

// ---------------------------------------------------------------------------
// Deterministic inputs

/// splitmix64: small, fast, and identical on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// FNV-1a of a case name: each case gets its own, stable seed (the benchmarks' too).
#[allow(unused_imports)]
pub use candle_bench_fixtures::seed_of;

/// How input values are drawn.
#[derive(Clone, Copy, Debug)]
pub enum Gen {
    /// Uniform in [lo, hi).
    Uniform(f64, f64),
    /// Magnitude uniform in [lo, hi), random sign (keeps away from 0).
    SignedMag(f64, f64),
    /// Integers uniform in [lo, hi].
    Ints(i64, i64),
    /// Multiples of 1/4 in [lo, hi] (exact in every float dtype; .5 ties included).
    Quarters(i64, i64),
}

pub fn values(gen: Gen, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| match gen {
            Gen::Uniform(lo, hi) => rng.range(lo, hi),
            Gen::SignedMag(lo, hi) => {
                let m = rng.range(lo, hi);
                if rng.below(2) == 0 {
                    m
                } else {
                    -m
                }
            }
            Gen::Ints(lo, hi) => (lo + rng.below((hi - lo + 1) as u64) as i64) as f64,
            Gen::Quarters(lo, hi) => {
                let q = lo * 4 + rng.below(((hi - lo) * 4 + 1) as u64) as i64;
                q as f64 / 4.0
            }
        })
        .collect()
}

/// A tensor of `dtype` holding `vals` (made and converted on the CPU), moved to `dev`.
pub fn tensor_from_values(vals: &[f64], shape: &[usize], dtype: DType, dev: &Device) -> Result<Tensor> {
    let cpu = &Device::Cpu;
    // Integer inputs must be representable (a saturating cast would silently repeat values).
    let range = match dtype {
        DType::U8 => Some((0.0, 255.0)),
        DType::U32 => Some((0.0, u32::MAX as f64)),
        DType::I16 => Some((i16::MIN as f64, i16::MAX as f64)),
        DType::I32 => Some((i32::MIN as f64, i32::MAX as f64)),
        DType::I64 => Some((-9.0e15, 9.0e15)),
        _ => None,
    };
    if let Some((lo, hi)) = range {
        if let Some(v) = vals.iter().find(|v| **v < lo || **v > hi || v.fract() != 0.0) {
            candle_core::bail!("harness: {v} is not a {dtype:?} value")
        }
    }
    let t = match dtype {
        DType::U8 => Tensor::from_vec(vals.iter().map(|&v| v as u8).collect::<Vec<_>>(), shape, cpu)?,
        DType::U32 => Tensor::from_vec(vals.iter().map(|&v| v as u32).collect::<Vec<_>>(), shape, cpu)?,
        DType::I16 => Tensor::from_vec(vals.iter().map(|&v| v as i16).collect::<Vec<_>>(), shape, cpu)?,
        DType::I32 => Tensor::from_vec(vals.iter().map(|&v| v as i32).collect::<Vec<_>>(), shape, cpu)?,
        DType::I64 => Tensor::from_vec(vals.iter().map(|&v| v as i64).collect::<Vec<_>>(), shape, cpu)?,
        DType::F64 => Tensor::from_vec(vals.to_vec(), shape, cpu)?,
        DType::F32 => Tensor::from_vec(vals.iter().map(|&v| v as f32).collect::<Vec<_>>(), shape, cpu)?,
        dt => Tensor::from_vec(vals.iter().map(|&v| v as f32).collect::<Vec<_>>(), shape, cpu)?.to_dtype(dt)?,
    };
    t.to_device(dev)
}

/// Memory layout of an input, built as a view over a bigger or differently shaped buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Plain contiguous buffer.
    Contig,
    /// Contiguous, but starting at a non-zero offset (narrowed on dim 0).
    Offset,
    /// Last two dims swapped (stride 1 on the second-to-last dim).
    Transposed,
    /// Narrowed on dim 0 and on the last dim: offset and non-unit row stride.
    Narrowed,
    /// Dim 0 broadcast from size 1 (stride 0).
    Broadcast,
    /// Last dim broadcast from size 1 (stride 0).
    BroadcastLast,
}

/// An input of `shape` with memory layout `view`, values from `gen`, on `dev`.
pub fn input(dev: &Device, dtype: DType, shape: &[usize], view: View, gen: Gen, seed: u64) -> Result<Tensor> {
    let r = shape.len();
    assert!(r >= 1, "inputs have rank >= 1");
    let mut base = shape.to_vec();
    match view {
        View::Contig => {}
        View::Offset => base[0] += 2,
        View::Transposed => {
            assert!(r >= 2, "transposed view needs rank >= 2");
            base.swap(r - 2, r - 1)
        }
        View::Narrowed => {
            if r == 1 {
                base[0] += 5
            } else {
                base[0] += 1;
                base[r - 1] += 3;
            }
        }
        View::Broadcast => base[0] = 1,
        View::BroadcastLast => base[r - 1] = 1,
    }
    let n: usize = base.iter().product();
    let t = tensor_from_values(&values(gen, n, seed), &base, dtype, dev)?;
    let t = match view {
        View::Contig => t,
        View::Offset => t.narrow(0, 1, shape[0])?,
        View::Transposed => t.transpose(r - 2, r - 1)?,
        View::Narrowed if r == 1 => t.narrow(0, 2, shape[0])?,
        View::Narrowed => t.narrow(0, 1, shape[0])?.narrow(r - 1, 2, shape[r - 1])?,
        View::Broadcast | View::BroadcastLast => t.broadcast_as(shape)?,
    };
    assert_eq!(t.dims(), shape, "view {view:?} built the wrong shape");
    Ok(t)
}

// ---------------------------------------------------------------------------
// Tolerances and comparison

/// Allowed difference between the device result and the CPU result.
#[derive(Clone, Copy, Debug)]
pub enum Tol {
    /// Bit-for-bit (integers, copies, indexing, min/max, comparisons).
    Exact,
    /// |got - want| <= abs + rel * |want| for every element.
    Close { abs: f64, rel: f64 },
    /// |got - want| <= frac * max|want| (quantized and whole-model outputs).
    RelToMax(f64),
}

/// What kind of computation produced a value, to pick its tolerance.
#[derive(Clone, Copy, Debug)]
pub enum Class {
    Exact,
    /// + - * /, affine, abs, relu ... (a rounding or two).
    Basic,
    /// exp, log, tanh, erf, gelu ... (GPU math library vs Rust's libm).
    Transc,
    /// A sum of `n` terms of magnitude <= 1.
    Sum(usize),
    /// A dot product of length `k`, terms of magnitude <= 1.
    Matmul(usize),
    /// softmax / rms-norm / layer-norm / rope.
    Norm,
}

/// Unit roundoff of the dtype's storage.
pub fn unit(dt: DType) -> f64 {
    match dt {
        DType::F64 => 1.1e-16,
        DType::F32 => 6.0e-8,
        DType::F16 => 4.9e-4,
        DType::BF16 => 3.9e-3,
        DType::F8E4M3 => 6.25e-2,
        _ => 0.0,
    }
}

pub fn tol(dt: DType, class: Class) -> Tol {
    if is_int(dt) || matches!(class, Class::Exact) {
        return Tol::Exact;
    }
    // The brief's scale: f32 ~1e-5 elementwise, f16 1e-2, bf16 2e-2, f64 tight.
    let (abs, rel) = match dt {
        DType::F64 => (1e-12, 1e-12),
        DType::F32 => (1e-6, 1e-5),
        DType::F16 => (1e-2, 1e-2),
        DType::BF16 => (2e-2, 2e-2),
        DType::F8E4M3 => (2e-2, 0.13),
        _ => unreachable!(),
    };
    match class {
        Class::Exact => Tol::Exact,
        Class::Basic => Tol::Close { abs, rel },
        Class::Transc => match dt {
            DType::F64 => Tol::Close { abs: 1e-10, rel: 1e-10 },
            DType::F32 => Tol::Close { abs: 1e-5, rel: 1e-4 },
            _ => Tol::Close { abs, rel },
        },
        Class::Norm => match dt {
            DType::F64 => Tol::Close { abs: 1e-10, rel: 1e-10 },
            DType::F32 => Tol::Close { abs: 1e-5, rel: 1e-4 },
            _ => Tol::Close { abs, rel },
        },
        // The two backends sum in different orders. f32/f64: the CPU adds sequentially
        // (error <~ n roundings of the partial sums). f16/bf16: the GPU adds in the storage
        // dtype along a tree of depth log2(n), against a reference summed in f32 (or only a
        // few terms), for partial sums of magnitude ~sqrt(n) (terms <= 1, random signs).
        Class::Sum(n) => {
            let n = n.max(1) as f64;
            let bound = match dt {
                DType::F16 | DType::BF16 | DType::F8E4M3 => 2.0 * unit(dt) * (n.log2() + 2.0) * n.sqrt(),
                _ => 4.0 * unit(dt) * n,
            };
            Tol::Close { abs: abs.max(bound), rel }
        }
        Class::Matmul(k) => match dt {
            DType::F64 => Tol::Close { abs: 1e-12 * k as f64, rel: 1e-10 },
            DType::F32 => Tol::Close { abs: 2e-6 * k as f64, rel: 1e-4 },
            _ => Tol::Close { abs: abs.max(2.0 * unit(dt) * (k as f64).sqrt()), rel },
        },
    }
}

/// The values of `t` (any dtype, any device, any layout) as f64, row-major.
pub fn host_values(t: &Tensor) -> Result<Vec<f64>> {
    let t = t.to_device(&Device::Cpu)?.flatten_all()?;
    Ok(match t.dtype() {
        DType::U8 => t.to_vec1::<u8>()?.into_iter().map(|v| v as f64).collect(),
        DType::U32 => t.to_vec1::<u32>()?.into_iter().map(|v| v as f64).collect(),
        DType::I16 => t.to_vec1::<i16>()?.into_iter().map(|v| v as f64).collect(),
        DType::I32 => t.to_vec1::<i32>()?.into_iter().map(|v| v as f64).collect(),
        DType::I64 => t.to_vec1::<i64>()?.into_iter().map(|v| v as f64).collect(),
        DType::F64 => t.to_vec1::<f64>()?,
        DType::F32 => t.to_vec1::<f32>()?.into_iter().map(|v| v as f64).collect(),
        _ => t.to_dtype(DType::F32)?.to_vec1::<f32>()?.into_iter().map(|v| v as f64).collect(),
    })
}

fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for (k, &d) in dims.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

/// `Ok(max |got - want|)` when every element is within `tol`, else a description of the worst one.
pub fn compare(got: &Tensor, want: &Tensor, tol: Tol) -> std::result::Result<f64, String> {
    if got.dims() != want.dims() {
        return Err(format!("shape {:?}, expected {:?}", got.dims(), want.dims()));
    }
    if got.dtype() != want.dtype() {
        return Err(format!("dtype {:?}, expected {:?}", got.dtype(), want.dtype()));
    }
    let g = host_values(got).map_err(|e| format!("reading the result back: {e}"))?;
    let w = host_values(want).map_err(|e| format!("reading the reference: {e}"))?;
    compare_values(&g, &w, got.dims(), tol)
}

pub fn compare_values(g: &[f64], w: &[f64], dims: &[usize], tol: Tol) -> std::result::Result<f64, String> {
    if g.len() != w.len() {
        return Err(format!("{} values, expected {}", g.len(), w.len()));
    }
    let scale = w.iter().filter(|v| v.is_finite()).fold(0f64, |m, v| m.max(v.abs()));
    let allowed = |w: f64| match tol {
        Tol::Exact => 0.0,
        Tol::Close { abs, rel } => abs + rel * w.abs(),
        Tol::RelToMax(f) => f * scale,
    };
    let (mut max_err, mut bad, mut worst): (f64, usize, Option<(usize, f64)>) = (0.0, 0, None);
    for (i, (&gv, &wv)) in g.iter().zip(w).enumerate() {
        let ok_special = (gv.is_nan() && wv.is_nan()) || (gv.is_infinite() && gv == wv);
        if ok_special {
            continue;
        }
        let err = (gv - wv).abs();
        let ratio = if err.is_nan() {
            f64::INFINITY
        } else if allowed(wv) == 0.0 {
            if err == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            err / allowed(wv)
        };
        if !err.is_nan() {
            max_err = max_err.max(err);
        }
        if ratio > 1.0 {
            bad += 1;
            if worst.is_none_or(|(_, r)| ratio > r) {
                worst = Some((i, ratio));
            }
        }
    }
    match worst {
        None => Ok(max_err),
        Some((i, _)) => Err(format!(
            "{bad}/{} values out of tolerance {tol:?}; worst at {:?}: got {} want {} (|err| {:.3e}, allowed {:.3e}); max |err| {max_err:.3e}",
            g.len(),
            unravel(i, dims),
            g[i],
            w[i],
            (g[i] - w[i]).abs(),
            allowed(w[i]),
        )),
    }
}

// ---------------------------------------------------------------------------
// What the CUDA backend supports

/// Kernel names the CUDA build of the same release exports (kernel parity fixture).
pub struct CudaKernels(BTreeSet<String>);

impl CudaKernels {
    pub fn load() -> Self {
        let path = repo_path("tests/fixtures/cuda-kernels-0.11.1.txt");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading the CUDA kernel list {}: {e}", path.display()));
        let mut names = BTreeSet::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["kernel", _module, name] => {
                    names.insert(name.to_string());
                }
                ["launcher", name] => {
                    names.insert(name.to_string());
                }
                _ => {}
            }
        }
        assert!(names.len() > 700, "{} holds only {} kernel names", path.display(), names.len());
        CudaKernels(names)
    }
    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
    pub fn missing(&self, names: &[String]) -> Vec<String> {
        names.iter().filter(|n| !self.has(n)).cloned().collect()
    }
}

/// `{root}_{dtype}`: how `kernel_name::<T>` in the CUDA/ROCm backend names kernels.
pub fn kname(root: &str, dt: DType) -> String {
    format!("{root}_{}", dt.as_str())
}

// ---------------------------------------------------------------------------
// Cases

/// When the case must succeed.
pub enum Support {
    /// The backend launches these kernels (by the backend's names): required to work
    /// exactly when the CUDA build exports all of them.
    Kernels(Vec<String>),
    /// No kernel of ours decides it (memcpy, rocBLAS, host code): must always work.
    Always,
    /// The CUDA backend returns an error here by design (reason): an error is fine.
    CudaErrors(&'static str),
    /// The CUDA backend of this release computes a wrong result here (reason); the
    /// mirror keeps it, so a mismatch is reported but not counted as a failure.
    UpstreamBug(&'static str),
}

pub type RunFn = Box<dyn Fn(&Device) -> Result<Tensor>>;

/// A reference of the case's own, computed on the host from the same inputs, for ops
/// where the CPU backend of this release is not a trustworthy reference. The device
/// result is compared with it instead of with the CPU backend; the CPU backend is still
/// compared with it (`cpu_vs_reference`), and a CPU mismatch is reported as a known
/// upstream CPU bug when `cpu_bug` explains it, as a failure when nothing does.
pub struct HostReference {
    /// What the reference is ("naive loop in f64"): named in the cross-check's row.
    pub what: &'static str,
    /// Computes the reference, on the CPU (same inputs as `Case::run`).
    pub run: RunFn,
    pub cpu_bug: Option<CpuBug>,
}

/// A known bug of the CPU backend of this release on this case: the CPU result differs
/// from the host reference; `still_right` selects the part of the result the bug does not
/// touch (compared with the case's tolerance, so the bug cannot hide anything else), `None`
/// when it touches every element.
pub struct CpuBug {
    pub reason: &'static str,
    pub still_right: Option<Box<dyn Fn(&Tensor) -> Result<Tensor>>>,
}

pub struct Case {
    /// The `BackendStorage` method (or other group) the case exercises.
    pub method: &'static str,
    /// op / dtype / shape / layout, unique.
    pub name: String,
    pub support: Support,
    pub tol: Tol,
    pub run: RunFn,
    /// `Some`: the device result is compared with this instead of the CPU backend.
    pub reference: Option<HostReference>,
}

impl Case {
    pub fn new(
        method: &'static str,
        name: String,
        support: Support,
        tol: Tol,
        run: impl Fn(&Device) -> Result<Tensor> + 'static,
    ) -> Self {
        Case { method, name, support, tol, run: Box::new(run), reference: None }
    }

    /// Compares the device with `run` (a host reference) instead of the CPU backend.
    pub fn with_reference(mut self, what: &'static str, run: impl Fn(&Device) -> Result<Tensor> + 'static) -> Self {
        self.reference = Some(HostReference { what, run: Box::new(run), cpu_bug: None });
        self
    }

    /// Declares a known upstream CPU bug: the CPU backend differs from the host reference
    /// (needs `with_reference` first); `still_right` selects what must still agree.
    pub fn with_cpu_bug(
        mut self,
        reason: &'static str,
        still_right: impl Fn(&Tensor) -> Result<Tensor> + 'static,
    ) -> Self {
        let r = self.reference.as_mut().expect("with_cpu_bug needs a host reference");
        r.cpu_bug = Some(CpuBug { reason, still_right: Some(Box::new(still_right)) });
        self
    }

    /// Declares a known upstream CPU bug that makes every element of the CPU result differ
    /// from the host reference (needs `with_reference` first).
    pub fn with_cpu_bug_everywhere(mut self, reason: &'static str) -> Self {
        let r = self.reference.as_mut().expect("with_cpu_bug_everywhere needs a host reference");
        r.cpu_bug = Some(CpuBug { reason, still_right: None });
        self
    }

    /// Whether the CUDA backend of this release runs the case.
    pub fn expected_to_work(&self, k: &CudaKernels) -> bool {
        match &self.support {
            Support::Kernels(ks) => k.missing(ks).is_empty(),
            Support::Always | Support::UpstreamBug(_) => true,
            Support::CudaErrors(_) => false,
        }
    }

    fn unsupported_reason(&self, k: &CudaKernels) -> String {
        match &self.support {
            Support::Kernels(ks) => {
                format!("CUDA build has no kernel {}", k.missing(ks).join(", "))
            }
            Support::CudaErrors(r) => format!("CUDA backend errors too: {r}"),
            _ => String::new(),
        }
    }
}

#[derive(Debug)]
pub enum Status {
    Pass(f64),
    Fail(String),
    /// Not supported by the CUDA backend either, and the ROCm backend said so with an error.
    Unsupported(String),
    /// Known upstream bug of this release, reported but not a failure: the CUDA backend's
    /// (reproduced by the mirror), or the CPU backend's against a host reference.
    KnownBug(String),
    /// The device ran it (CUDA would not), but the CPU has no reference.
    NoReference(String),
}

/// Runs `f`, turning a panic into an error (so one broken case cannot stop the run).
pub fn guarded<T>(f: impl FnOnce() -> Result<T>) -> std::result::Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(first_lines(&e.to_string())),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".to_string());
            Err(format!("panicked: {}", first_lines(&msg)))
        }
    }
}

/// The message without the backtrace candle appends when RUST_BACKTRACE is set.
fn first_lines(s: &str) -> String {
    let msg: Vec<&str> =
        s.lines().take_while(|l| !l.trim_start().starts_with("0:") && !l.starts_with("stack backtrace")).collect();
    msg.join(" | ")
}

/// Runs one case on `dev` and on the CPU and judges it.
pub fn evaluate(case: &Case, dev: &Device, kernels: &CudaKernels) -> Status {
    let must_work = case.expected_to_work(kernels);
    let got = guarded(|| {
        let t = (case.run)(dev)?;
        // Reading back is where asynchronous launch failures show up.
        t.to_device(&Device::Cpu)
    });
    let got = match got {
        Ok(g) => g,
        Err(e) if must_work => return Status::Fail(format!("{:?} error: {e}", dev.location())),
        Err(e) => return Status::Unsupported(format!("{} (device: {e})", case.unsupported_reason(kernels))),
    };
    let want = match &case.reference {
        Some(r) => guarded(|| (r.run)(&Device::Cpu)),
        None => guarded(|| (case.run)(&Device::Cpu)),
    };
    let want = match want {
        Ok(w) => w,
        Err(e) if must_work => return Status::Fail(format!("CPU reference failed: {e}")),
        Err(e) => return Status::NoReference(format!("{}; CPU: {e}", case.unsupported_reason(kernels))),
    };
    match compare(&got, &want, case.tol) {
        Ok(err) => Status::Pass(err),
        Err(msg) => match &case.support {
            Support::UpstreamBug(r) => Status::KnownBug(format!("{r}: {msg}")),
            _ => Status::Fail(msg),
        },
    }
}

/// For a case with a host reference: the CPU backend against that reference (`None`
/// without one). Agreement passes; a mismatch the case's `cpu_bug` explains (and outside
/// its `still_right` part) is a known upstream CPU bug; any other mismatch fails, and so
/// does a declared CPU bug that does not show (the declaration would be wrong).
pub fn cpu_vs_reference(case: &Case) -> Option<(String, Status)> {
    let r = case.reference.as_ref()?;
    let row = format!("{} [cpu backend vs {}]", case.name, r.what);
    let pair = guarded(|| Ok(((case.run)(&Device::Cpu)?, (r.run)(&Device::Cpu)?)));
    let (cpu, want) = match pair {
        Ok(p) => p,
        Err(e) => return Some((row, Status::Fail(format!("CPU backend or host reference failed: {e}")))),
    };
    let status = match (compare(&cpu, &want, case.tol), &r.cpu_bug) {
        (Ok(e), None) => Status::Pass(e),
        (Ok(_), Some(b)) => Status::Fail(format!(
            "declared upstream CPU bug did not show (the CPU backend agrees with the {}): {}",
            r.what, b.reason
        )),
        (Err(m), None) => Status::Fail(format!("CPU backend disagrees with the {}: {m}", r.what)),
        (Err(m), Some(CpuBug { reason, still_right: None })) => {
            Status::KnownBug(format!("upstream CPU bug: {reason}: {m}"))
        }
        (Err(m), Some(CpuBug { reason, still_right: Some(sel) })) => {
            let part = guarded(|| Ok((sel(&cpu)?, sel(&want)?)));
            match part {
                Ok((c, w)) => match compare(&c, &w, case.tol) {
                    Ok(_) => Status::KnownBug(format!("upstream CPU bug: {reason}: {m}")),
                    Err(m2) => Status::Fail(format!(
                        "CPU backend differs from the {} where the declared CPU bug does not reach: {m2}",
                        r.what
                    )),
                },
                Err(e) => Status::Fail(format!("selecting the part the CPU bug does not touch: {e}")),
            }
        }
    };
    Some((row, status))
}

/// Results of a run, printed as a summary; `finish` fails the test on any failure.
pub struct Report {
    title: String,
    rows: Vec<(&'static str, String, Status)>,
}

impl Report {
    pub fn new(title: &str) -> Self {
        Report { title: title.to_string(), rows: vec![] }
    }

    /// Runs `cases` on `dev` (`ROCM_VS_CPU_FILTER=substring` selects cases by name).
    pub fn run(title: &str, cases: &[Case], dev: &Device, kernels: &CudaKernels) -> Self {
        let mut report = Report::new(title);
        let filter = std::env::var("ROCM_VS_CPU_FILTER").ok();
        let verbose = std::env::var("ROCM_VS_CPU_VERBOSE").is_ok();
        for case in cases {
            if let Some(f) = &filter {
                if !case.name.contains(f.as_str()) && case.method != f.as_str() {
                    continue;
                }
            }
            let status = evaluate(case, dev, kernels);
            if verbose {
                println!("  {:<10} {}: {status:?}", case.method, case.name);
            }
            report.push(case.method, case.name.clone(), status);
            if let Some((row, status)) = cpu_vs_reference(case) {
                report.push(case.method, row, status);
            }
        }
        report
    }

    pub fn push(&mut self, method: &'static str, name: String, status: Status) {
        self.rows.push((method, name, status));
    }

    /// A check outside the case table (device methods, statistics): `Err` is a failure.
    pub fn check(&mut self, method: &'static str, name: impl Into<String>, r: std::result::Result<(), String>) {
        let status = match r {
            Ok(()) => Status::Pass(0.0),
            Err(e) => Status::Fail(e),
        };
        self.push(method, name.into(), status);
    }

    /// Runs the CPU side of each case that must work twice: both runs must
    /// succeed and agree exactly (deterministic inputs and references).
    pub fn push_cpu_runs_agree(&mut self, cases: &[Case], k: &CudaKernels) {
        for c in cases.iter().filter(|c| c.expected_to_work(k)) {
            let status = match (guarded(|| (c.run)(&Device::Cpu)), guarded(|| (c.run)(&Device::Cpu))) {
                (Ok(a), Ok(b)) => match compare(&a, &b, Tol::Exact) {
                    Ok(e) => Status::Pass(e),
                    Err(m) => Status::Fail(format!("two CPU runs differ: {m}")),
                },
                (Err(e), _) | (_, Err(e)) => Status::Fail(format!("CPU cannot run the case: {e}")),
            };
            self.push(c.method, c.name.clone(), status);
        }
    }

    pub fn failures(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|(m, n, s)| match s {
                Status::Fail(e) => Some(format!("[{m}] {n}: {e}")),
                _ => None,
            })
            .collect()
    }

    pub fn finish(self) {
        let mut per: BTreeMap<&str, [usize; 5]> = BTreeMap::new();
        for (m, _, s) in &self.rows {
            let c = per.entry(m).or_default();
            match s {
                Status::Pass(_) => c[0] += 1,
                Status::Fail(_) => c[1] += 1,
                Status::Unsupported(_) => c[2] += 1,
                Status::KnownBug(_) => c[3] += 1,
                Status::NoReference(_) => c[4] += 1,
            }
        }
        println!(
            "{}: per group (passed / failed / unsupported as on CUDA / known upstream bug / no CPU reference)",
            self.title
        );
        for (m, c) in &per {
            println!("  {m:<22} {:>5} {:>5} {:>5} {:>5} {:>5}", c[0], c[1], c[2], c[3], c[4]);
        }
        for (m, n, s) in &self.rows {
            match s {
                Status::Unsupported(r) | Status::NoReference(r) => {
                    println!("  n/a  [{m}] {n}: {r}")
                }
                Status::KnownBug(r) => println!("  bug  [{m}] {n}: {r}"),
                _ => {}
            }
        }
        let failures = self.failures();
        for f in &failures {
            println!("  FAIL {f}");
        }
        let t: [usize; 5] = per.values().fold([0; 5], |mut a, c| {
            for i in 0..5 {
                a[i] += c[i]
            }
            a
        });
        println!(
            "{}: {} cases, {} passed, {} failed, {} unsupported (as on CUDA), {} known upstream bugs, {} without CPU reference",
            self.title,
            self.rows.len(),
            t[0],
            t[1],
            t[2],
            t[3],
            t[4]
        );
        assert!(failures.is_empty(), "{}: {} failed:\n{}", self.title, failures.len(), failures.join("\n"));
    }
}

// ---------------------------------------------------------------------------
// Coverage

/// Prints why the cases the CUDA backend does not run are expected to fail: each reason of
/// the CUDA backend's own errors with its count, and the kernel names it does not export
/// (a misspelt kernel name in a case would show up in that list).
pub fn print_unsupported(title: &str, cases: &[Case], k: &CudaKernels) {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    let mut missing: BTreeSet<String> = BTreeSet::new();
    let mut n = 0;
    for c in cases.iter().filter(|c| !c.expected_to_work(k)) {
        n += 1;
        match &c.support {
            Support::Kernels(ks) => missing.extend(k.missing(ks)),
            Support::CudaErrors(r) => *reasons.entry(r).or_default() += 1,
            _ => {}
        }
    }
    println!("{title}: {n} cases must fail cleanly (as they do on CUDA):");
    for (r, n) in &reasons {
        println!("  {n:>4} x CUDA backend errors: {r}");
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        println!("  kernels the CUDA build does not export ({}): {}", names.len(), names.join(" "));
    }
}

/// The `fn` names declared in `trait <name>` of a Rust source (signatures only).
pub fn trait_fns(src: &str, trait_name: &str) -> Vec<String> {
    let start =
        src.find(&format!("trait {trait_name}")).unwrap_or_else(|| panic!("no `trait {trait_name}` in the source"));
    let body_start = start + src[start..].find('{').expect("trait body");
    let mut depth = 0usize;
    let mut end = body_start;
    for (i, c) in src[body_start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = body_start + i;
                    break;
                }
            }
            _ => {}
        }
    }
    let mut fns = vec![];
    for line in src[body_start + 1..end].lines() {
        let mut l = line.trim();
        if l.starts_with("//") {
            continue;
        }
        for prefix in ["pub ", "unsafe ", "async ", "const "] {
            l = l.strip_prefix(prefix).unwrap_or(l);
        }
        if let Some(rest) = l.strip_prefix("fn ") {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            fns.push(name);
        }
    }
    fns
}

/// Idents of the variants of `enum <name>` (unit variants, one per line).
pub fn enum_variants(src: &str, enum_name: &str) -> Vec<String> {
    let start = src.find(&format!("enum {enum_name} {{")).unwrap_or_else(|| panic!("no enum {enum_name}"));
    let body = &src[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.lines()
        .map(|l| l.trim().trim_end_matches(','))
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('#'))
        .map(|l| l.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
        .collect()
}

/// First macro argument of every `<mac>!(Name, ...)` line, plus `impl <tr> for Name`.
pub fn op_structs(src: &str, mac: &str, tr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in src.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix(&format!("{mac}!(")) {
            out.insert(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
        if let Some(rest) = l.strip_prefix(&format!("impl {tr} for ")) {
            out.insert(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    out.remove("$op");
    out.remove("");
    out
}

// ---------------------------------------------------------------------------
// MoE routing and reference (shared by the moe_gemm / moe_gemm_gguf / indexed_moe cases)

/// Top-k routing of `tokens` tokens over `experts` experts: pair `p = token * topk + slot`
/// goes to `expert_of_pair[p]` (distinct experts per token); `sorted_pairs` lists the pairs
/// grouped by expert (stable), `sorted_experts` their experts, as the MoE kernels expect.
pub struct MoeRouting {
    pub expert_of_pair: Vec<u32>,
    pub sorted_pairs: Vec<u32>,
    pub sorted_experts: Vec<u32>,
}

pub fn moe_routing(tokens: usize, topk: usize, experts: usize, seed: u64) -> MoeRouting {
    let mut rng = Rng::new(seed);
    let mut expert_of_pair = vec![];
    for _ in 0..tokens {
        let mut perm: Vec<u32> = (0..experts as u32).collect();
        rng.shuffle(&mut perm);
        expert_of_pair.extend_from_slice(&perm[..topk]);
    }
    let mut sorted_pairs: Vec<u32> = (0..(tokens * topk) as u32).collect();
    sorted_pairs.sort_by_key(|&p| expert_of_pair[p as usize]);
    let sorted_experts = sorted_pairs.iter().map(|&p| expert_of_pair[p as usize]).collect();
    MoeRouting { expert_of_pair, sorted_pairs, sorted_experts }
}

/// `out[p] = w[experts[p]] @ x[rows[p]]` (times `tw[p]`), in f32 on x's device:
/// w (E, n, k), x (R, k) -> (P, n).
pub fn moe_reference(w: &Tensor, x: &Tensor, experts: &[u32], rows: &[u32], tw: Option<&Tensor>) -> Result<Tensor> {
    let dev = x.device();
    let we = w.to_dtype(DType::F32)?.index_select(&Tensor::new(experts, dev)?, 0)?;
    let xr = x.to_dtype(DType::F32)?.index_select(&Tensor::new(rows, dev)?, 0)?.unsqueeze(2)?;
    let out = we.matmul(&xr)?.squeeze(2)?;
    match tw {
        Some(t) => out.broadcast_mul(&t.to_dtype(DType::F32)?.unsqueeze(1)?),
        None => Ok(out),
    }
}
