//! Every computing method of candle-core's `BackendStorage` (and `BackendDevice`), on
//! every dtype the CUDA backend of this release supports, on the ROCm device against
//! the CPU, over contiguous, offset, transposed, narrowed and broadcast layouts and
//! odd / multi-block / large sizes.
//!
//! `backend_coverage` (no device needed) parses `generated/candle-core/src/backend.rs`
//! and `op.rs` and fails when a trait method or an op has neither a case below nor an
//! entry in the not-applicable tables.
//!
//! Env: `ROCM_VS_CPU_FILTER=<substring of a case name, or a method>`, `ROCM_VS_CPU_VERBOSE=1`.

#![allow(clippy::type_complexity)] // the case tables are tuples, one per line

mod common;

use candle_core::op::CmpOp;
use candle_core::{DType, Device, IndexOp, Result, Tensor, D};
use common::*;
use std::collections::BTreeSet;

use View::{Broadcast, BroadcastLast, Contig, Narrowed, Offset, Transposed};

// ---------------------------------------------------------------------------
// What is not a case, and why

/// `BackendStorage` methods without a comparison case of their own.
const STORAGE_NOT_APPLICABLE: &[(&str, &str)] = &[];

/// `BackendStorage` methods checked inside the cases of another group: (method, group, how).
const COVERED_INSIDE: &[(&str, &str, &str)] = &[
    ("dtype", "to_cpu_storage", "each round-trip case asserts dtype() of the device tensor"),
    ("device", "to_cpu_storage", "each round-trip case asserts device().same_device(dev)"),
];

/// `BackendDevice` methods and the check in `device_methods` that covers each.
const DEVICE_CHECKS: &[(&str, &str)] = &[
    ("new", "Device::new_rocm(0) (every GPU test starts with it)"),
    ("location", "location() is Rocm { gpu_id: 0 }"),
    ("same_device", "a clone is the same device, a second new_rocm(0) is not"),
    ("zeros_impl", "Tensor::zeros for every dtype"),
    ("alloc_uninit", "Tensor::ones / Tensor::full / empty (alloc_uninit + const_set)"),
    ("storage_from_slice", "Tensor::from_slice for every dtype"),
    ("storage_from_cpu_storage", "Tensor::to_device from the CPU (every case input)"),
    ("storage_from_cpu_storage_owned", "Tensor::from_vec on the device"),
    ("rand_uniform", "range, mean, std, two draws differ"),
    ("rand_normal", "mean, std, 1-sigma mass, odd element count"),
    ("set_seed", "same seed, same numbers"),
    ("get_current_seed", "returns the seed set"),
    ("synchronize", "Device::synchronize after queued work"),
];

// ---------------------------------------------------------------------------
// Op tables

type UnaryFn = fn(&Tensor) -> Result<Tensor>;
type BinaryFn = fn(&Tensor, &Tensor) -> Result<Tensor>;

/// (op struct in op.rs, kernel root, tensor method, inputs, tolerance class)
fn unary_ops() -> Vec<(&'static str, &'static str, UnaryFn, Gen, Class)> {
    use Class::{Basic, Transc};
    use Gen::{Ints, Quarters, SignedMag, Uniform};
    vec![
        ("Exp", "uexp", |t| t.exp(), Uniform(-4., 4.), Transc),
        ("Log", "ulog", |t| t.log(), Uniform(0.05, 10.), Transc),
        ("Sin", "usin", |t| t.sin(), Uniform(-4., 4.), Transc),
        ("Cos", "ucos", |t| t.cos(), Uniform(-4., 4.), Transc),
        ("Tanh", "utanh", |t| t.tanh(), Uniform(-4., 4.), Transc),
        ("Neg", "uneg", |t| t.neg(), Uniform(-4., 4.), Basic),
        ("Recip", "urecip", |t| t.recip(), SignedMag(0.25, 4.), Basic),
        ("Sqr", "usqr", |t| t.sqr(), Uniform(-4., 4.), Basic),
        ("Sqrt", "usqrt", |t| t.sqrt(), Uniform(0., 10.), Transc),
        ("Gelu", "ugelu", |t| t.gelu(), Uniform(-4., 4.), Transc),
        ("GeluErf", "ugelu_erf", |t| t.gelu_erf(), Uniform(-4., 4.), Transc),
        ("Erf", "uerf", |t| t.erf(), Uniform(-3., 3.), Transc),
        ("Relu", "urelu", |t| t.relu(), Uniform(-4., 4.), Basic),
        ("Silu", "usilu", |t| t.silu(), Uniform(-4., 4.), Transc),
        ("Abs", "uabs", |t| t.abs(), Uniform(-4., 4.), Basic),
        ("Ceil", "uceil", |t| t.ceil(), Uniform(-4., 4.), Basic),
        ("Floor", "ufloor", |t| t.floor(), Uniform(-4., 4.), Basic),
        ("Round", "uround", |t| t.round(), Quarters(-4, 4), Basic),
        ("Sign", "usign", |t| t.sign(), Ints(-2, 2), Basic),
    ]
}

/// (op struct in op.rs, kernel root, tensor method)
fn binary_ops() -> Vec<(&'static str, &'static str, BinaryFn)> {
    vec![
        ("Add", "badd", |a, b| a.add(b)),
        ("Sub", "bsub", |a, b| a.sub(b)),
        ("Mul", "bmul", |a, b| a.mul(b)),
        ("Div", "bdiv", |a, b| a.div(b)),
        ("Maximum", "bmaximum", |a, b| a.maximum(b)),
        ("Minimum", "bminimum", |a, b| a.minimum(b)),
    ]
}

fn cmp_ops() -> Vec<(&'static str, &'static str, CmpOp)> {
    vec![
        ("Eq", "eq", CmpOp::Eq),
        ("Ne", "ne", CmpOp::Ne),
        ("Lt", "lt", CmpOp::Lt),
        ("Le", "le", CmpOp::Le),
        ("Gt", "gt", CmpOp::Gt),
        ("Ge", "ge", CmpOp::Ge),
    ]
}

const REDUCE_OPS: [&str; 5] = ["Sum", "Min", "Max", "ArgMin", "ArgMax"];

/// Shapes and layouts for elementwise ops: odd sizes, > 1 block, strided views.
fn ew_layouts() -> Vec<(Vec<usize>, View)> {
    vec![
        (vec![1], Contig),
        (vec![7], Offset),
        (vec![1023], Contig),
        (vec![1025], Narrowed),
        (vec![3, 5, 7], Transposed),
        (vec![33, 65], Contig),
        (vec![33, 65], Narrowed),
        (vec![4, 301], Broadcast),
        (vec![2, 3, 4, 5], BroadcastLast),
        (vec![17, 1031], Transposed),
    ]
}

/// (shape, lhs view, rhs view) for binary ops and comparisons.
fn bin_layouts() -> Vec<(Vec<usize>, View, View)> {
    vec![
        (vec![1], Contig, Contig),
        (vec![7], Offset, Contig),
        (vec![1023], Contig, Narrowed),
        (vec![33, 65], Contig, Contig),
        (vec![33, 65], Transposed, Contig),
        (vec![33, 65], Contig, Broadcast),
        (vec![4, 301], BroadcastLast, Transposed),
        (vec![3, 5, 7], Narrowed, Transposed),
        (vec![17, 1031], Contig, BroadcastLast),
        (vec![1100, 1000], Contig, Contig),
    ]
}

fn lname(shape: &[usize], view: View) -> String {
    format!("{shape:?}/{view:?}")
}

fn dt(d: DType) -> &'static str {
    d.as_str()
}

/// Inputs for elementwise arithmetic on `d`: integers small enough that no op overflows.
fn arith_gen(d: DType, float_gen: Gen) -> Gen {
    if is_int(d) {
        Gen::Ints(0, 15)
    } else {
        float_gen
    }
}

// ---------------------------------------------------------------------------
// Case builders, one per BackendStorage method

fn unary_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for (op, root, f, gen, class) in unary_ops() {
        for d in ALL_DTYPES {
            let supported = k.has(&kname(root, d));
            // Unsupported (op, dtype): one small probe that must fail cleanly.
            let layouts = if supported { ew_layouts() } else { vec![(vec![7], Contig)] };
            for (shape, view) in layouts {
                let name = format!("unary {op} {} {}", dt(d), lname(&shape, view));
                let seed = seed_of(&name);
                cases.push(Case::new(
                    "unary_impl",
                    name,
                    Support::Kernels(vec![kname(root, d)]),
                    tol(d, class),
                    move |dev| f(&input(dev, d, &shape, view, gen, seed)?),
                ));
            }
        }
    }
}

fn affine_powf_elu_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for d in ALL_DTYPES {
        let supported = k.has(&kname("affine", d));
        let layouts = if supported { ew_layouts() } else { vec![(vec![7], Contig)] };
        for (shape, view) in layouts {
            let name = format!("affine {} {}", dt(d), lname(&shape, view));
            let seed = seed_of(&name);
            let (gen, mul, add) =
                if is_int(d) { (Gen::Ints(0, 50), 2.0, 3.0) } else { (Gen::Uniform(-4., 4.), 1.5, -0.75) };
            cases.push(Case::new(
                "affine",
                name,
                Support::Kernels(vec![kname("affine", d)]),
                tol(d, Class::Basic),
                move |dev| input(dev, d, &shape, view, gen, seed)?.affine(mul, add),
            ));
        }
    }
    for (method, root) in [("powf", "upowf"), ("elu", "uelu")] {
        for d in ALL_DTYPES {
            let supported = k.has(&kname(root, d));
            let layouts = if supported { ew_layouts() } else { vec![(vec![7], Contig)] };
            for (shape, view) in layouts {
                let name = format!("{method} {} {}", dt(d), lname(&shape, view));
                let seed = seed_of(&name);
                cases.push(Case::new(
                    method,
                    name,
                    Support::Kernels(vec![kname(root, d)]),
                    tol(d, Class::Transc),
                    move |dev| {
                        if method == "powf" {
                            input(dev, d, &shape, view, Gen::Uniform(0.1, 4.), seed)?.powf(1.7)
                        } else {
                            input(dev, d, &shape, view, Gen::Uniform(-4., 4.), seed)?.elu(0.8)
                        }
                    },
                ));
            }
        }
    }
}

fn binary_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for (op, root, f) in binary_ops() {
        for d in ALL_DTYPES {
            let supported = k.has(&kname(root, d));
            let layouts = if supported { bin_layouts() } else { vec![(vec![7], Contig, Contig)] };
            for (shape, lv, rv) in layouts {
                let name = format!("binary {op} {} {shape:?} lhs {lv:?} rhs {rv:?}", dt(d));
                let seed = seed_of(&name);
                // Integers: no u8 overflow or unsigned underflow, no division by zero.
                let (lg, rg) = match (is_int(d), op) {
                    (true, "Sub") => (Gen::Ints(16, 31), Gen::Ints(0, 15)),
                    (true, "Mul") => (Gen::Ints(0, 15), Gen::Ints(0, 15)),
                    (true, "Div") => (Gen::Ints(0, 31), Gen::Ints(1, 15)),
                    (true, _) => (Gen::Ints(0, 31), Gen::Ints(0, 31)),
                    (false, "Div") => (Gen::Uniform(-4., 4.), Gen::SignedMag(0.25, 4.)),
                    (false, _) => (Gen::Uniform(-4., 4.), Gen::Uniform(-4., 4.)),
                };
                cases.push(Case::new(
                    "binary_impl",
                    name,
                    Support::Kernels(vec![kname(root, d)]),
                    tol(d, Class::Basic),
                    move |dev| {
                        let a = input(dev, d, &shape, lv, lg, seed)?;
                        let b = input(dev, d, &shape, rv, rg, seed.wrapping_add(1))?;
                        f(&a, &b)
                    },
                ));
            }
        }
    }
}

fn cmp_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for (op, root, cop) in cmp_ops() {
        for d in ALL_DTYPES {
            let supported = k.has(&kname(root, d));
            let layouts =
                if supported { bin_layouts().into_iter().take(9).collect() } else { vec![(vec![7], Contig, Contig)] };
            for (shape, lv, rv) in layouts {
                let name = format!("cmp {op} {} {shape:?} lhs {lv:?} rhs {rv:?}", dt(d));
                let seed = seed_of(&name);
                // Few distinct values, so that equal pairs are frequent.
                let gen = Gen::Ints(0, 3);
                cases.push(Case::new("cmp", name, Support::Kernels(vec![kname(root, d)]), Tol::Exact, move |dev| {
                    let a = input(dev, d, &shape, lv, gen, seed)?;
                    let b = input(dev, d, &shape, rv, gen, seed.wrapping_add(1))?;
                    a.cmp(&b, cop)
                }));
            }
        }
    }
}

fn to_dtype_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for src in ALL_DTYPES {
        for dst in ALL_DTYPES {
            if src == dst {
                continue; // Tensor::to_dtype returns the tensor itself
            }
            let kernel = format!("cast_{}_{}", src.as_str(), dst.as_str());
            let layouts = if k.has(&kernel) {
                vec![(vec![1], Contig), (vec![1023], Offset), (vec![33, 65], Transposed), (vec![17, 1031], Narrowed)]
            } else {
                vec![(vec![7], Contig)]
            };
            for (shape, view) in layouts {
                let name = format!("to_dtype {}->{} {}", dt(src), dt(dst), lname(&shape, view));
                let seed = seed_of(&name);
                // Non-negative (float -> unsigned is saturating on the CPU, undefined in C),
                // within every dtype's range, quarters so float sources have fractions.
                let gen = if is_int(src) { Gen::Ints(0, 100) } else { Gen::Quarters(0, 100) };
                let t = if is_int(dst) {
                    Tol::Exact
                } else {
                    // one rounding of the destination (f64 -> bf16 may round twice on a GPU)
                    let u = 2.0 * unit(dst);
                    Tol::Close { abs: u, rel: u }
                };
                cases.push(Case::new("to_dtype", name, Support::Kernels(vec![kernel.clone()]), t, move |dev| {
                    input(dev, src, &shape, view, gen, seed)?.to_dtype(dst)
                }));
            }
        }
    }
}

fn reduce_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    // (shape, view, reduced dims): per block <= 32 (the small-sum kernel), > 1024 per
    // block, > 65535 output rows (blocks), strided and broadcast inputs.
    let layouts: Vec<(Vec<usize>, View, Vec<usize>)> = vec![
        (vec![7], Contig, vec![0]),
        (vec![3, 17], Contig, vec![1]),
        (vec![33, 65], Contig, vec![1]),
        (vec![33, 65], Contig, vec![0]),
        (vec![33, 65], Transposed, vec![1]),
        (vec![4, 5, 6], Narrowed, vec![1]),
        (vec![4, 5, 6], Contig, vec![0, 2]),
        (vec![4, 301], Broadcast, vec![0]),
        (vec![5, 2049], Contig, vec![1]),
        (vec![70000, 3], Contig, vec![1]),
    ];
    for op in REDUCE_OPS {
        for d in ALL_DTYPES {
            let root = match op {
                "Sum" => "fast_sum",
                "Min" => "fast_min",
                "Max" => "fast_max",
                "ArgMin" => "fast_argmin",
                _ => "fast_argmax",
            };
            let supported = k.has(&kname(root, d));
            let ls = if supported { layouts.clone() } else { vec![(vec![3, 7], Contig, vec![1])] };
            for (shape, view, dims) in ls {
                if op != "Sum" && dims.len() > 1 {
                    continue; // min/max/argmin/argmax reduce one dim
                }
                let n: usize = dims.iter().map(|&i| shape[i]).product();
                let gen = if is_int(d) { Gen::Ints(0, 200) } else { Gen::Uniform(-1., 1.) };
                let name = format!("reduce {op} {} {} dims {dims:?}", dt(d), lname(&shape, view));
                let seed = seed_of(&name);
                // The small-sum kernel is used when at most 32 elements are summed per output.
                let kernel = if op == "Sum" && n <= 32 { kname("fast_sum_small", d) } else { kname(root, d) };
                let class = if op == "Sum" { Class::Sum(n) } else { Class::Exact };
                cases.push(Case::new("reduce_op", name, Support::Kernels(vec![kernel]), tol(d, class), move |dev| {
                    let x = input(dev, d, &shape, view, gen, seed)?;
                    match op {
                        // The CPU sums f16/bf16 in the storage dtype: the reference sums in f32.
                        "Sum" if dev.is_cpu() && matches!(d, DType::F16 | DType::BF16) => {
                            x.to_dtype(DType::F32)?.sum_keepdim(dims.clone())?.to_dtype(d)
                        }
                        // u8 sums wrap (the kernels add in u8; the CPU would panic on the
                        // overflow in a debug build): reference summed in u32, taken mod 256.
                        "Sum" if dev.is_cpu() && d == DType::U8 => {
                            let s = x.to_dtype(DType::U32)?.sum_keepdim(dims.clone())?;
                            let v: Vec<f64> = host_values(&s)?.iter().map(|v| v % 256.0).collect();
                            tensor_from_values(&v, s.dims(), d, dev)
                        }
                        "Sum" => x.sum_keepdim(dims.clone()),
                        "Min" => x.min_keepdim(dims[0]),
                        "Max" => x.max_keepdim(dims[0]),
                        _ => {
                            // Ties may legitimately pick different indices: compare the values
                            // at the returned indices (gathered on the CPU).
                            let i =
                                if op == "ArgMin" { x.argmin_keepdim(dims[0])? } else { x.argmax_keepdim(dims[0])? };
                            if i.dtype() != DType::U32 {
                                candle_core::bail!("arg-reduce returned {:?}", i.dtype())
                            }
                            x.to_device(&Device::Cpu)?.contiguous()?.gather(&i.to_device(&Device::Cpu)?, dims[0])
                        }
                    }
                }));
            }
        }
    }
}

fn where_cond_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    let layouts: Vec<(Vec<usize>, View, View, View)> = vec![
        (vec![1], Contig, Contig, Contig),
        (vec![7], Contig, Offset, Contig),
        (vec![33, 65], Contig, Contig, Contig),
        (vec![33, 65], Broadcast, Transposed, Narrowed),
        (vec![4, 301], BroadcastLast, Contig, Broadcast),
        (vec![17, 1031], Transposed, Contig, Contig),
    ];
    for cd in ALL_DTYPES {
        for d in ALL_DTYPES {
            let kernel = kname(&format!("where_{}", cd.as_str()), d);
            let supported = k.has(&kernel);
            // Unsupported pairs: one probe per condition dtype (the value dtype F32) and per
            // value dtype (condition U8), not the whole cross product.
            if !(supported || d == DType::F32 || cd == DType::U8) {
                continue;
            }
            let ls = if supported { layouts.clone() } else { vec![(vec![7], Contig, Contig, Contig)] };
            for (shape, cv, tv, fv) in ls {
                let name =
                    format!("where_cond cond {} values {} {shape:?} cond {cv:?} t {tv:?} f {fv:?}", dt(cd), dt(d));
                let seed = seed_of(&name);
                let g = arith_gen(d, Gen::Uniform(-4., 4.));
                cases.push(Case::new(
                    "where_cond",
                    name,
                    Support::Kernels(vec![kernel.clone()]),
                    Tol::Exact,
                    move |dev| {
                        // 0, 1 and 2: any non-zero is true
                        let c = input(dev, cd, &shape, cv, Gen::Ints(0, 2), seed)?;
                        let t = input(dev, d, &shape, tv, g, seed.wrapping_add(1))?;
                        let f = input(dev, d, &shape, fv, g, seed.wrapping_add(2))?;
                        c.where_cond(&t, &f)
                    },
                ));
            }
        }
    }
}

/// Conv inputs are floats; integer convs exist as kernels but need an integer gemm.
fn conv_dtypes() -> Vec<DType> {
    vec![DType::F32, DType::F16, DType::BF16, DType::F64]
}

/// One convolution: input and kernel shapes (conv: (c_out, c_in/groups, k..), transposed:
/// (c_in, c_out, k..)), parameters, and the memory layout of input and kernel.
#[derive(Clone, Debug)]
struct ConvSpec {
    input: Vec<usize>,
    kernel: Vec<usize>,
    padding: usize,
    output_padding: usize,
    stride: usize,
    dilation: usize,
    groups: usize,
    input_view: View,
    kernel_view: View,
}

#[allow(clippy::too_many_arguments)]
fn conv(
    input: &[usize],
    kernel: &[usize],
    padding: usize,
    output_padding: usize,
    stride: usize,
    dilation: usize,
    groups: usize,
    iv: View,
    kv: View,
) -> ConvSpec {
    ConvSpec {
        input: input.to_vec(),
        kernel: kernel.to_vec(),
        padding,
        output_padding,
        stride,
        dilation,
        groups,
        input_view: iv,
        kernel_view: kv,
    }
}

impl ConvSpec {
    fn name(&self, op: &str, d: DType) -> String {
        format!(
            "{op} {} in {:?}/{:?} k {:?}/{:?} pad {} out_pad {} stride {} dil {} groups {}",
            dt(d),
            self.input,
            self.input_view,
            self.kernel,
            self.kernel_view,
            self.padding,
            self.output_padding,
            self.stride,
            self.dilation,
            self.groups
        )
    }
    /// Length of each output's dot product.
    fn k(&self, transposed: bool) -> usize {
        let taps: usize = self.kernel[2..].iter().product();
        taps * if transposed { self.kernel[0] } else { self.kernel[1] }
    }
    fn run(&self, op: &str, dev: &Device, d: DType, seed: u64) -> Result<Tensor> {
        let g = Gen::Uniform(-1., 1.);
        let x = input(dev, d, &self.input, self.input_view, g, seed)?;
        let w = input(dev, d, &self.kernel, self.kernel_view, g, seed.wrapping_add(1))?;
        let (p, op_, s, dl, gr) = (self.padding, self.output_padding, self.stride, self.dilation, self.groups);
        if dev.is_cpu() && d == DType::BF16 && op == "conv2d" {
            // The CPU's im2col gemm has no bf16: reference computed in f32, rounded once.
            let (x, w) = (x.to_dtype(DType::F32)?, w.to_dtype(DType::F32)?);
            return x.conv2d(&w, p, s, dl, gr)?.to_dtype(d);
        }
        match op {
            "conv1d" => x.conv1d(&w, p, s, dl, gr),
            "conv_transpose1d" => x.conv_transpose1d(&w, p, op_, s, dl, gr),
            "conv2d" => x.conv2d(&w, p, s, dl, gr),
            _ => x.conv_transpose2d(&w, p, op_, s, dl),
        }
    }
    /// Whether conv_transpose1d takes the col2im path, on the CPU (cpu_backend/mod.rs
    /// `conv_transpose1d`: `can_use_col2im`) as on CUDA/ROCm (rocm_backend/mod.rs
    /// `conv_transpose1d`, same condition as cuda_backend/mod.rs).
    fn col2im(&self) -> bool {
        self.kernel_view == Contig && self.padding == 0 && self.output_padding == 0 && self.dilation == 1
    }
    /// conv_transpose1d's host reference: the same inputs as `run`, read back as f64, the
    /// direct definition `dst[b][g*co_g + co][li*stride + ki*dil - pad] += x[b][ci][li] *
    /// w[ci][co][ki]` (ci in group g) accumulated in f64, rounded once to `d`.
    fn conv_transpose1d_naive(&self, d: DType, seed: u64) -> Result<Tensor> {
        let cpu = &Device::Cpu;
        let g = Gen::Uniform(-1., 1.);
        let x = input(cpu, d, &self.input, self.input_view, g, seed)?;
        let w = input(cpu, d, &self.kernel, self.kernel_view, g, seed.wrapping_add(1))?;
        let (xv, wv) = (host_values(&x)?, host_values(&w)?);
        let (b, c_in, l_in) = x.dims3()?;
        let (_, co_g, k) = w.dims3()?;
        let (p, s, dl, groups) = (self.padding, self.stride, self.dilation, self.groups);
        let ci_g = c_in / groups;
        let c_out = co_g * groups;
        let l_out = (l_in - 1) * s + dl * (k - 1) + self.output_padding + 1 - 2 * p;
        let mut out = vec![0f64; b * c_out * l_out];
        for bi in 0..b {
            for ci in 0..c_in {
                let grp = ci / ci_g;
                for co in 0..co_g {
                    for li in 0..l_in {
                        for ki in 0..k {
                            let j = li * s + ki * dl;
                            if j < p || j - p >= l_out {
                                continue;
                            }
                            out[(bi * c_out + grp * co_g + co) * l_out + j - p] +=
                                xv[(bi * c_in + ci) * l_in + li] * wv[(ci * co_g + co) * k + ki];
                        }
                    }
                }
            }
        }
        tensor_from_values(&out, &[b, c_out, l_out], d, cpu)
    }
}

/// The CPU backend's conv_transpose1d col2im path is wrong for batch index >= 1.
/// cpu_backend/mod.rs `conv_transpose1d` (col2im branch) multiplies `l.transpose(1, 2)`
/// (the input viewed as (b, l_in, c_in): row stride 1, column stride l_in) with the
/// kernel broadcast over the batch (`kernel_l_mm`, batch stride 0). cpu_backend/mod.rs
/// `MatMul::f` (gemm build, no mkl/accelerate) then takes its `b_skip == 0 && a_skip == m
/// * k` branch and folds the batches into one (b * m, k) gemm with the lhs row stride of
/// a single batch, which is only right for a row-major lhs: with row stride 1, rows m..
/// read batch 0's data shifted instead of batch 1's. `Col2Im1D` then scatters those wrong
/// columns. Batch 0 is right; the CUDA/ROCm col2im path (rocBLAS/cuBLAS strided batched
/// gemm) is right, so the device result is compared with a direct loop instead.
const CPU_CONV_TRANSPOSE1D_COL2IM_BUG: &str = "candle-core 0.11.1 cpu_backend/mod.rs conv_transpose1d col2im path: \
     MatMul::f folds the batches of the transposed input (b_skip == 0 && a_skip == m * k) \
     with a row-major row stride, so batch index >= 1 is wrong";

fn conv_cases(_k: &CudaKernels, cases: &mut Vec<Case>) {
    let specs: Vec<(&str, ConvSpec)> = vec![
        // conv1d (im2col1d + gemm): groups, stride/dilation, strided and offset inputs
        ("conv1d", conv(&[2, 4, 17], &[3, 4, 3], 1, 0, 1, 1, 1, Contig, Contig)),
        ("conv1d", conv(&[1, 6, 33], &[4, 3, 5], 2, 0, 2, 2, 2, Contig, Contig)),
        ("conv1d", conv(&[2, 4, 17], &[3, 4, 3], 0, 0, 3, 1, 1, Transposed, Contig)),
        ("conv1d", conv(&[3, 5, 1031], &[2, 5, 4], 1, 0, 1, 1, 1, Offset, Contig)),
        ("conv1d", conv(&[2, 4, 17], &[3, 4, 3], 1, 0, 1, 1, 1, Contig, Transposed)),
        // conv_transpose1d: col2im path (contiguous kernel, no padding/dilation), direct kernel
        ("conv_transpose1d", conv(&[2, 4, 9], &[4, 3, 3], 0, 0, 2, 1, 1, Contig, Contig)),
        ("conv_transpose1d", conv(&[3, 4, 10], &[4, 3, 3], 0, 0, 1, 1, 1, Contig, Contig)),
        ("conv_transpose1d", conv(&[1, 3, 1031], &[3, 2, 4], 0, 0, 1, 1, 1, Contig, Contig)),
        ("conv_transpose1d", conv(&[2, 4, 9], &[4, 3, 3], 1, 1, 2, 1, 1, Contig, Contig)),
        ("conv_transpose1d", conv(&[2, 4, 9], &[4, 3, 3], 0, 0, 1, 2, 1, Transposed, Contig)),
        // conv2d (im2col + gemm; a strided kernel is copied first)
        ("conv2d", conv(&[2, 3, 9, 11], &[4, 3, 3, 3], 1, 0, 1, 1, 1, Contig, Contig)),
        ("conv2d", conv(&[1, 4, 13, 10], &[6, 2, 3, 2], 0, 0, 2, 2, 2, Contig, Contig)),
        ("conv2d", conv(&[2, 3, 9, 11], &[4, 3, 3, 3], 1, 0, 1, 1, 1, Transposed, Contig)),
        ("conv2d", conv(&[2, 3, 9, 11], &[4, 3, 3, 3], 1, 0, 1, 1, 1, Contig, Transposed)),
        ("conv2d", conv(&[1, 2, 40, 41], &[3, 2, 5, 5], 2, 0, 1, 1, 1, Offset, Contig)),
        // conv_transpose2d (direct kernel)
        ("conv_transpose2d", conv(&[2, 3, 5, 6], &[3, 4, 3, 3], 1, 1, 2, 1, 1, Contig, Contig)),
        ("conv_transpose2d", conv(&[1, 2, 7, 4], &[2, 3, 2, 3], 0, 0, 1, 2, 1, Transposed, Contig)),
    ];
    for d in conv_dtypes() {
        for (op, spec) in specs.clone() {
            let name = spec.name(op, d);
            let seed = seed_of(&name);
            let support = match op {
                "conv1d" if spec.kernel_view != Contig => Support::UpstreamBug(
                    "cuda_backend conv1d copies a strided kernel into `kernel_c` but passes the original `kernel` to matmul (conv2d passes kernel_c)",
                ),
                "conv1d" => Support::Kernels(vec![kname("im2col1d", d)]),
                "conv_transpose1d" if spec.padding == 0 && spec.output_padding == 0 && spec.dilation == 1 => {
                    Support::Kernels(vec![kname("col2im1d", d)])
                }
                "conv_transpose1d" => Support::Kernels(vec![kname("conv_transpose1d", d)]),
                "conv2d" if spec.kernel_view != Contig => Support::Kernels(vec![kname("im2col", d), kname("ucopy", d)]),
                "conv2d" => Support::Kernels(vec![kname("im2col", d)]),
                _ => Support::Kernels(vec![kname("conv_transpose2d", d)]),
            };
            let t = tol(d, Class::Matmul(spec.k(op.contains("transpose"))));
            let case = Case::new(op, name, support, t, {
                let spec = spec.clone();
                move |dev| spec.run(op, dev, d, seed)
            });
            let case = if op == "conv_transpose1d" {
                // The CPU backend is no reference for the col2im path with batch >= 2 (see
                // CPU_CONV_TRANSPOSE1D_COL2IM_BUG): every conv_transpose1d case is compared
                // with a direct loop, and the CPU backend with that loop as well.
                let case = case.with_reference("naive loop in f64", {
                    let spec = spec.clone();
                    move |_| spec.conv_transpose1d_naive(d, seed)
                });
                if spec.col2im() && spec.input[0] >= 2 {
                    case.with_cpu_bug(CPU_CONV_TRANSPOSE1D_COL2IM_BUG, |t| t.narrow(0, 0, 1))
                } else {
                    case
                }
            } else {
                case
            };
            cases.push(case);
        }
    }
    // Integer convolutions: the conv kernels exist, the gemm does not.
    for (op, d, spec) in [
        ("conv1d", DType::U32, conv(&[1, 2, 9], &[2, 2, 3], 0, 0, 1, 1, 1, Contig, Contig)),
        ("conv2d", DType::U8, conv(&[1, 2, 5, 5], &[2, 2, 3, 3], 0, 0, 1, 1, 1, Contig, Contig)),
    ] {
        let name = format!("{} probe", spec.name(op, d));
        let seed = seed_of(&name);
        cases.push(Case::new(
            op,
            name,
            Support::CudaErrors("im2col + cuBLAS gemm: no integer gemm"),
            Tol::Exact,
            move |dev| {
                let x = input(dev, d, &spec.input, Contig, Gen::Ints(0, 3), seed)?;
                let w = input(dev, d, &spec.kernel, Contig, Gen::Ints(0, 3), seed + 1)?;
                if op == "conv1d" {
                    x.conv1d(&w, 0, 1, 1, 1)
                } else {
                    x.conv2d(&w, 0, 1, 1, 1)
                }
            },
        ));
    }
}

fn pool_upsample_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    // (input shape, view, kernel, stride)
    let pools: Vec<([usize; 4], View, (usize, usize), (usize, usize))> = vec![
        ([2, 3, 8, 10], Contig, (2, 2), (2, 2)),
        ([1, 2, 9, 11], Transposed, (3, 2), (1, 2)),
        ([2, 2, 33, 65], Offset, (3, 3), (2, 2)),
    ];
    for method in ["avg_pool2d", "max_pool2d"] {
        for d in ALL_DTYPES {
            let supported = k.has(&kname(method, d));
            if !supported && !matches!(d, DType::I64 | DType::F8E4M3) {
                continue; // one probe of the unsupported kinds is enough
            }
            let ps = if supported { pools.clone() } else { vec![pools[0]] };
            for (is, view, ks, st) in ps {
                let name = format!("{method} {} {} k {ks:?} stride {st:?}", dt(d), lname(&is, view));
                let seed = seed_of(&name);
                let gen = if is_int(d) { Gen::Ints(0, 25) } else { Gen::Uniform(-1., 1.) };
                // an average of <= 9 terms: a few roundings of a value <= 1
                let class = if method == "avg_pool2d" { Class::Basic } else { Class::Exact };
                let t = if method == "avg_pool2d" && d == DType::F64 {
                    // kernels/conv.hip avg_pool2d (= candle-kernels conv.cu): `const float
                    // scale = 1.0 / (w_k * h_k);` is rounded to f32 for every T, then `d *
                    // scale` with d a double: the f64 result is the f64 sum times 1/(kh*kw)
                    // with f32 accuracy (relative error <= 2^-24 of the result; the CPU's
                    // AvgPool2D scales by the f64 1/(kh*kw)).
                    Tol::Close { abs: 1e-12, rel: 2.0 * unit(DType::F32) }
                } else {
                    tol(d, class)
                };
                let case = Case::new(method, name, Support::Kernels(vec![kname(method, d)]), t, move |dev| {
                    let x = input(dev, d, &is, view, gen, seed)?;
                    if method == "avg_pool2d" {
                        x.avg_pool2d_with_stride(ks, st)
                    } else {
                        x.max_pool2d_with_stride(ks, st)
                    }
                });
                let case = if method == "avg_pool2d" && is_int(d) && supported {
                    // No CPU reference for integer averages (CPU_INT_AVG_POOL2D): the device
                    // is compared with the kernel's own integer/float arithmetic.
                    case.with_reference("avg_pool2d_u8/u32 kernel arithmetic on the host", move |_| {
                        let x = input(&Device::Cpu, d, &is, view, gen, seed)?;
                        int_avg_pool2d_kernel_reference(&x, ks, st)
                    })
                    .with_cpu_bug_everywhere(CPU_INT_AVG_POOL2D)
                } else {
                    case
                };
                cases.push(case);
            }
        }
    }
    for d in [DType::F32, DType::F16, DType::BF16, DType::F64, DType::U8, DType::U32] {
        // nearest 2d: integer and fractional scale factors, strided input
        for (is, view, oh, ow) in
            [([2, 3, 5, 7], Contig, 10, 14), ([1, 2, 5, 7], Transposed, 9, 13), ([1, 1, 33, 65], Offset, 70, 100)]
        {
            let name = format!("upsample_nearest2d {} {} -> ({oh}, {ow})", dt(d), lname(&is, view));
            let seed = seed_of(&name);
            let gen = if is_int(d) { Gen::Ints(0, 200) } else { Gen::Uniform(-1., 1.) };
            cases.push(Case::new(
                "upsample_nearest2d",
                name,
                Support::Kernels(vec![kname("upsample_nearest2d", d)]),
                Tol::Exact,
                move |dev| input(dev, d, &is, view, gen, seed)?.upsample_nearest2d(oh, ow),
            ));
        }
    }
    for d in FLOAT_DTYPES {
        // bilinear: target size (both align_corners), explicit scale factors
        let specs: Vec<([usize; 4], View, Option<(usize, usize)>, Option<(f64, f64)>, bool)> = vec![
            ([2, 3, 5, 7], Contig, Some((8, 11)), None, false),
            ([2, 3, 5, 7], Contig, Some((8, 11)), None, true),
            ([1, 2, 6, 4], Transposed, Some((3, 9)), None, false),
            ([1, 2, 5, 7], Contig, None, Some((1.5, 2.0)), false),
            ([1, 2, 5, 7], Offset, None, Some((2.5, 0.5)), true),
        ];
        for (is, view, size, scale, align) in specs {
            let name = format!(
                "upsample_bilinear2d {} {} size {size:?} scale {scale:?} align_corners {align}",
                dt(d),
                lname(&is, view)
            );
            let seed = seed_of(&name);
            cases.push(Case::new(
                "upsample_bilinear2d",
                name,
                Support::Kernels(vec![kname("upsample_bilinear2d", d)]),
                tol(d, Class::Basic),
                move |dev| {
                    let x = input(dev, d, &is, view, Gen::Uniform(-1., 1.), seed)?;
                    match (size, scale) {
                        (Some((h, w)), _) => x.upsample_bilinear2d(h, w, align),
                        (_, Some((sh, sw))) => x.upsample_bilinear2d_with_scale(sh, sw, align),
                        _ => unreachable!(),
                    }
                },
            ));
        }
    }
    let name = "upsample_nearest1d f32 [2, 3, 5] -> 10".to_string();
    cases.push(Case::new(
        "upsample_nearest1d",
        name,
        Support::CudaErrors("upsample-nearest1d is not supported on cuda"),
        Tol::Exact,
        |dev| input(dev, DType::F32, &[2, 3, 5], Contig, Gen::Uniform(-1., 1.), 1)?.upsample_nearest1d(10),
    ));
}

/// The CPU backend's integer average pool is all zeros: cpu_backend/mod.rs `AvgPool2D::f`
/// computes `let scale = 1f64 / (k_h * k_w) as f64; let scale = T::from_f64(scale);`, and
/// for u8/u32 `T::from_f64` of a value < 1 is 0, so `sum * scale` is 0 everywhere.
const CPU_INT_AVG_POOL2D: &str = "candle-core 0.11.1 cpu_backend/mod.rs AvgPool2D: the scale \
     T::from_f64(1 / (kh * kw)) is 0 for u8/u32, so every output is 0";

/// What kernels/conv.hip `avg_pool2d<T, A>` computes for `AVG_POOL2D_OP(uint8_t, uint8_t,
/// avg_pool2d_u8)` and `AVG_POOL2D_OP(uint32_t, uint32_t, avg_pool2d_u32)` (the same as
/// upstream candle-kernels conv.cu), for x (b, c, h, w) and window `ks` (over dims 2, 3;
/// the backend passes w_k = k.0, h_k = k.1, the kernel's `w` being dim 2):
/// - `A d = 0; ... d += static_cast<A>(src[..])`: the window summed in T itself (u8 / u32,
///   wrapping; the order does not matter for integers);
/// - `const float scale = 1.0 / (w_k * h_k);`: computed in double, rounded to f32;
/// - `dst = static_cast<T>(d * scale)`: d converted to float (u8 exactly; u32 rounded to
///   nearest), one f32 multiply (round to nearest), then converted to T (truncation).
/// The f32 constants 1/n (n = 2, 3, 4, 6, 9) are >= 1/n, so this is floor(sum / n) for the
/// sums of these cases, but the reference follows the arithmetic, not that shortcut.
fn int_avg_pool2d_kernel_reference(x: &Tensor, ks: (usize, usize), st: (usize, usize)) -> Result<Tensor> {
    let (b, c, h, w) = x.dims4()?;
    let v = host_values(x)?;
    let (oh, ow) = ((h - ks.0) / st.0 + 1, (w - ks.1) / st.1 + 1);
    let scale = (1.0f64 / (ks.0 * ks.1) as f64) as f32;
    let mut out = Vec::with_capacity(b * c * oh * ow);
    for bc in 0..b * c {
        for i in 0..oh {
            for j in 0..ow {
                let cells = (0..ks.0).flat_map(|di| (0..ks.1).map(move |dj| (i * st.0 + di, j * st.1 + dj)));
                let r = match x.dtype() {
                    DType::U8 => {
                        let d = cells.fold(0u8, |a, (y, z)| a.wrapping_add(v[(bc * h + y) * w + z] as u8));
                        (d as f32 * scale) as u8 as f64
                    }
                    DType::U32 => {
                        let d = cells.fold(0u32, |a, (y, z)| a.wrapping_add(v[(bc * h + y) * w + z] as u32));
                        (d as f32 * scale) as u32 as f64
                    }
                    dt => candle_core::bail!("no avg_pool2d kernel reference for {dt:?}"),
                };
                out.push(r);
            }
        }
    }
    tensor_from_values(&out, &[b, c, oh, ow], x.dtype(), &Device::Cpu)
}

/// Index dtypes the backend accepts, and the value dtypes.
const IDS_DTYPES: [DType; 3] = [DType::U8, DType::U32, DType::I64];

/// `n` indices below `bound` (with repeats).
fn ids_tensor(dev: &Device, ids_dt: DType, shape: &[usize], bound: usize, seed: u64) -> Result<Tensor> {
    input(dev, ids_dt, shape, Contig, Gen::Ints(0, bound as i64 - 1), seed)
}

fn indexing_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for ids_dt in IDS_DTYPES {
        for d in ALL_DTYPES {
            let g = arith_gen(d, Gen::Uniform(-4., 4.));
            // ---- index_select: (src shape, src view, dim, ids len, ids narrowed)
            let root = format!("is_{}", ids_dt.as_str());
            let supported = k.has(&kname(&root, d));
            let specs: Vec<(Vec<usize>, View, usize, usize, bool)> = if supported {
                vec![
                    (vec![7, 9], Contig, 0, 11, false),
                    (vec![7, 9], Offset, 1, 5, false),
                    (vec![4, 5, 6], Contig, 1, 8, true),
                    (vec![250, 37], Contig, 0, 2500, false),
                ]
            } else {
                vec![(vec![7, 9], Contig, 0, 3, false)]
            };
            for (ss, sv, dim, n, narrowed) in specs {
                if ids_dt == DType::U8 && ss[dim] > 256 {
                    continue; // u8 ids cannot address it
                }
                let name = format!(
                    "index_select ids {} values {} src {} dim {dim} ids {n}{}",
                    dt(ids_dt),
                    dt(d),
                    lname(&ss, sv),
                    if narrowed { " (strided ids)" } else { "" }
                );
                let seed = seed_of(&name);
                cases.push(Case::new(
                    "index_select",
                    name,
                    Support::Kernels(vec![kname(&root, d)]),
                    Tol::Exact,
                    move |dev| {
                        let src = input(dev, d, &ss, sv, g, seed)?;
                        let ids = if narrowed {
                            ids_tensor(dev, ids_dt, &[n + 4], ss[dim], seed + 1)?.narrow(0, 2, n)?
                        } else {
                            ids_tensor(dev, ids_dt, &[n], ss[dim], seed + 1)?
                        };
                        src.index_select(&ids, dim)
                    },
                ));
            }
            // ---- gather: (src shape, dim, ids shape)
            let root = format!("gather_{}", ids_dt.as_str());
            let supported = k.has(&kname(&root, d));
            let specs: Vec<(Vec<usize>, usize, Vec<usize>)> = if supported {
                vec![
                    (vec![5, 7, 9], 1, vec![5, 4, 9]),
                    (vec![5, 7, 9], 0, vec![8, 7, 9]),
                    (vec![5, 7, 9], 2, vec![5, 7, 3]),
                    (vec![1100, 3], 0, vec![2000, 3]),
                ]
            } else {
                vec![(vec![5, 7], 1, vec![5, 3])]
            };
            for (ss, dim, is) in specs {
                if ids_dt == DType::U8 && ss[dim] > 256 {
                    continue; // u8 ids cannot address it
                }
                let name = format!("gather ids {} values {} src {ss:?} dim {dim} ids {is:?}", dt(ids_dt), dt(d));
                let seed = seed_of(&name);
                cases.push(Case::new(
                    "gather",
                    name,
                    Support::Kernels(vec![kname(&root, d)]),
                    Tol::Exact,
                    move |dev| {
                        let src = input(dev, d, &ss, Contig, g, seed)?;
                        src.gather(&ids_tensor(dev, ids_dt, &is, ss[dim], seed + 1)?, dim)
                    },
                ));
            }
            // ---- index_add: (dst shape, dim, ids len)
            let root = format!("ia_{}", ids_dt.as_str());
            let supported = k.has(&kname(&root, d));
            let specs: Vec<(Vec<usize>, usize, usize)> = if supported {
                vec![(vec![7, 9], 1, 5), (vec![7, 9], 0, 12), (vec![3, 40, 5], 1, 100)]
            } else {
                vec![(vec![7, 9], 1, 3)]
            };
            for (ds, dim, n) in specs {
                let name = format!("index_add ids {} values {} dst {ds:?} dim {dim} ids {n}", dt(ids_dt), dt(d));
                let seed = seed_of(&name);
                let g = arith_gen(d, Gen::Uniform(-1., 1.));
                cases.push(Case::new(
                    "index_add",
                    name,
                    Support::Kernels(vec![kname(&root, d)]),
                    // each destination receives a handful of the n rows
                    tol(d, Class::Sum(16)),
                    move |dev| {
                        let dst = input(dev, d, &ds, Contig, g, seed)?;
                        let mut ss = ds.clone();
                        ss[dim] = n;
                        let src = input(dev, d, &ss, Contig, g, seed + 1)?;
                        dst.index_add(&ids_tensor(dev, ids_dt, &[n], ds[dim], seed + 2)?, &src, dim)
                    },
                ));
            }
            // ---- scatter (unique ids per line) and scatter_add (repeats)
            for (method, root, add) in [
                ("scatter_set", format!("s_{}", ids_dt.as_str()), false),
                ("scatter_add_set", format!("sa_{}", ids_dt.as_str()), true),
            ] {
                let supported = k.has(&kname(&root, d));
                let specs: Vec<(Vec<usize>, usize, usize, bool)> = if supported {
                    // (dst shape, dim, ids/src size along dim, in place)
                    vec![
                        (vec![4, 9], 1, 5, false),
                        (vec![4, 9], 1, 5, true),
                        (vec![9, 3, 2], 0, 6, false),
                        (vec![3, 700, 2], 1, 650, true),
                    ]
                } else {
                    vec![(vec![4, 9], 1, 3, false)]
                };
                for (ds, dim, n, in_place) in specs {
                    if ids_dt == DType::U8 && ds[dim] > 256 {
                        continue; // u8 ids cannot address it
                    }
                    let name = format!(
                        "{method} ids {} values {} dst {ds:?} dim {dim} src {n}{}",
                        dt(ids_dt),
                        dt(d),
                        if in_place { " (in place)" } else { "" }
                    );
                    let seed = seed_of(&name);
                    // each destination receives a handful of the n values
                    let t = if add { tol(d, Class::Sum(16)) } else { Tol::Exact };
                    let g = arith_gen(d, Gen::Uniform(-1., 1.));
                    cases.push(Case::new(method, name, Support::Kernels(vec![kname(&root, d)]), t, move |dev| {
                        let dst = input(dev, d, &ds, Contig, g, seed)?;
                        let mut ss = ds.clone();
                        ss[dim] = n;
                        let src = input(dev, d, &ss, Contig, g, seed + 1)?;
                        let ids = if add {
                            ids_tensor(dev, ids_dt, &ss, ds[dim], seed + 2)?
                        } else {
                            // unique along `dim` for every other index: the first n of a permutation
                            let ids = scatter_ids(&ds, dim, n, seed + 2);
                            tensor_from_values(&ids, &ss, ids_dt, dev)?
                        };
                        match (add, in_place) {
                            (false, false) => dst.scatter(&ids, &src, dim),
                            (true, false) => dst.scatter_add(&ids, &src, dim),
                            (false, true) => dst.scatter_set(&ids, &src, dim).map(|_| dst),
                            (true, true) => dst.scatter_add_set(&ids, &src, dim).map(|_| dst),
                        }
                    }));
                }
            }
        }
    }
    // The CUDA backend needs a contiguous source for index_select and gather.
    for (method, reason) in [
        ("index_select", "index-select requires a contiguous source"),
        ("gather", "gather requires a contiguous source"),
    ] {
        let name = format!("{method} f32 transposed source");
        cases.push(Case::new(method, name, Support::CudaErrors(reason), Tol::Exact, move |dev| {
            let src = input(dev, DType::F32, &[7, 9], Transposed, Gen::Uniform(-1., 1.), 3)?;
            if method == "gather" {
                src.gather(&ids_tensor(dev, DType::U32, &[7, 4], 9, 4)?, 1)
            } else {
                src.index_select(&ids_tensor(dev, DType::U32, &[5], 7, 4)?, 0)
            }
        }));
    }
}

/// Row-major indices of shape `dst` with `dim` replaced by `n`: along `dim`, each line holds
/// the first `n` entries of a random permutation of `0..dst[dim]` (no two writes collide).
fn scatter_ids(dst: &[usize], dim: usize, n: usize, seed: u64) -> Vec<f64> {
    let mut shape = dst.to_vec();
    shape[dim] = n;
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let mut rng = Rng::new(seed);
    let mut out = vec![0f64; outer * n * inner];
    for o in 0..outer {
        for i in 0..inner {
            let mut perm: Vec<usize> = (0..dst[dim]).collect();
            rng.shuffle(&mut perm);
            for j in 0..n {
                out[(o * n + j) * inner + i] = perm[j] as f64;
            }
        }
    }
    out
}

fn matmul_cases(_k: &CudaKernels, cases: &mut Vec<Case>) {
    // (batch dims, m, k, n, lhs view, rhs view, support)
    let specs: Vec<(Vec<usize>, usize, usize, usize, View, View, bool)> = vec![
        (vec![], 1, 1, 1, Contig, Contig, true),
        (vec![], 7, 13, 5, Contig, Contig, true),
        (vec![], 64, 128, 32, Contig, Contig, true),
        (vec![], 3, 257, 129, Contig, Contig, true),
        (vec![], 96, 300, 200, Contig, Contig, true),
        (vec![], 1, 1000, 1, Contig, Contig, true),
        (vec![4], 17, 33, 9, Contig, Contig, true),
        (vec![4], 17, 33, 9, Transposed, Contig, true),
        (vec![4], 17, 33, 9, Contig, Transposed, true),
        (vec![4], 17, 33, 9, Transposed, Transposed, true),
        (vec![4], 17, 33, 9, Offset, Offset, true),
        (vec![4], 17, 33, 9, Contig, Broadcast, true),
        (vec![2, 3], 5, 7, 4, Contig, Contig, true),
        // lhs rows with a gap: no cuBLAS layout fits, the CUDA backend errors
        (vec![4], 17, 33, 9, Narrowed, Contig, false),
    ];
    for d in FLOAT_DTYPES {
        for (batch, m, kk, n, lv, rv, ok) in specs.clone() {
            let name = format!("matmul {} batch {batch:?} m {m} k {kk} n {n} lhs {lv:?} rhs {rv:?}", dt(d));
            let seed = seed_of(&name);
            let support = if ok {
                Support::Always
            } else {
                Support::CudaErrors("MatMulNonContiguous: lhs is not a gemm operand layout")
            };
            cases.push(Case::new("matmul", name, support, tol(d, Class::Matmul(kk)), move |dev| {
                let ls: Vec<usize> = batch.iter().copied().chain([m, kk]).collect();
                let rs: Vec<usize> = batch.iter().copied().chain([kk, n]).collect();
                let a = input(dev, d, &ls, lv, Gen::Uniform(-1., 1.), seed)?;
                let b = input(dev, d, &rs, rv, Gen::Uniform(-1., 1.), seed + 1)?;
                a.matmul(&b)
            }));
        }
        // broadcast_matmul: a (2, 3, 5, 7) times b (7, 4): b's batch strides are 0
        let name = format!("matmul {} broadcast_matmul (2, 3, 5, 7) x (7, 4)", dt(d));
        let seed = seed_of(&name);
        cases.push(Case::new("matmul", name, Support::Always, tol(d, Class::Matmul(7)), move |dev| {
            let a = input(dev, d, &[2, 3, 5, 7], Contig, Gen::Uniform(-1., 1.), seed)?;
            let b = input(dev, d, &[7, 4], Contig, Gen::Uniform(-1., 1.), seed + 1)?;
            a.broadcast_matmul(&b)
        }));
        // cumsum is a matmul with a triangular matrix
        for (shape, dim) in [(vec![7], 0), (vec![5, 33], 1), (vec![33, 5], 0)] {
            let name = format!("matmul {} cumsum {shape:?} dim {dim}", dt(d));
            let seed = seed_of(&name);
            let n = shape[dim];
            cases.push(Case::new("matmul", name, Support::Always, tol(d, Class::Matmul(n)), move |dev| {
                input(dev, d, &shape, Contig, Gen::Uniform(-1., 1.), seed)?.cumsum(dim)
            }));
        }
    }
    for d in [DType::U32, DType::I64] {
        let name = format!("matmul {} probe", dt(d));
        cases.push(Case::new("matmul", name, Support::CudaErrors("no integer gemm"), Tol::Exact, move |dev| {
            input(dev, d, &[3, 4], Contig, Gen::Ints(0, 5), 1)?.matmul(&input(
                dev,
                d,
                &[4, 2],
                Contig,
                Gen::Ints(0, 5),
                2,
            )?)
        }));
    }
}

fn copy_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for d in ALL_DTYPES {
        let g = arith_gen(d, Gen::Uniform(-4., 4.));
        // ---- copy_strided_src: contiguous() of strided views, cat along dim 0 of views
        let ucopy = kname("ucopy", d);
        let views: Vec<(Vec<usize>, View)> = if k.has(&ucopy) {
            vec![
                (vec![33, 65], Transposed),
                (vec![3, 5, 7], Narrowed),
                (vec![4, 301], Broadcast),
                (vec![17, 1031], Transposed),
                (vec![2, 3, 4, 5], BroadcastLast),
            ]
        } else {
            vec![(vec![3, 7], Transposed)]
        };
        for (shape, view) in views {
            let name = format!("copy_strided_src contiguous() {} {}", dt(d), lname(&shape, view));
            let seed = seed_of(&name);
            cases.push(Case::new(
                "copy_strided_src",
                name,
                Support::Kernels(vec![ucopy.clone()]),
                Tol::Exact,
                move |dev| input(dev, d, &shape, view, g, seed)?.contiguous(),
            ));
        }
        // contiguous source at an offset: a device-to-device copy, no kernel
        let name = format!("copy_strided_src force_contiguous() of an offset view {}", dt(d));
        let seed = seed_of(&name);
        cases.push(Case::new("copy_strided_src", name, Support::Always, Tol::Exact, move |dev| {
            input(dev, d, &[5, 7], Offset, g, seed)?.force_contiguous()
        }));
        if k.has(&ucopy) {
            let name = format!("copy_strided_src cat dim 0 of transposed views {}", dt(d));
            let seed = seed_of(&name);
            cases.push(Case::new(
                "copy_strided_src",
                name,
                Support::Kernels(vec![ucopy.clone()]),
                Tol::Exact,
                move |dev| {
                    let a = input(dev, d, &[3, 7], Transposed, g, seed)?;
                    let b = input(dev, d, &[5, 7], Transposed, g, seed + 1)?;
                    Tensor::cat(&[&a, &b], 0)
                },
            ));
        }
        // ---- copy2d: Tensor::cat of contiguous (or offset) tensors on any dim, slice_set
        // (the backend copies F8E4M3 with the u8 kernel)
        let copy2d = if d == DType::F8E4M3 { "copy2d_u8".to_string() } else { kname("copy2d", d) };
        let specs: Vec<(Vec<Vec<usize>>, usize, View)> = if k.has(&copy2d) {
            vec![
                (vec![vec![5, 3], vec![5, 7], vec![5, 1]], 1, Contig),
                (vec![vec![2, 3, 4], vec![2, 5, 4]], 1, Contig),
                (vec![vec![3, 7], vec![5, 7]], 0, Offset),
                (vec![vec![300, 1000], vec![300, 31]], 1, Contig),
            ]
        } else {
            vec![(vec![vec![5, 3], vec![5, 7]], 1, Contig)]
        };
        for (shapes, dim, view) in specs {
            let name = format!("copy2d cat dim {dim} {} {shapes:?} {view:?}", dt(d));
            let seed = seed_of(&name);
            cases.push(Case::new("copy2d", name, Support::Kernels(vec![copy2d.clone()]), Tol::Exact, move |dev| {
                let ts = shapes
                    .iter()
                    .enumerate()
                    .map(|(i, s)| input(dev, d, s, view, g, seed + i as u64))
                    .collect::<Result<Vec<_>>>()?;
                Tensor::cat(&ts, dim)
            }));
        }
        if k.has(&copy2d) {
            let name = format!("copy2d slice_set {}", dt(d));
            let seed = seed_of(&name);
            cases.push(Case::new("copy2d", name, Support::Kernels(vec![copy2d.clone()]), Tol::Exact, move |dev| {
                let dst = input(dev, d, &[4, 10, 3], Contig, g, seed)?;
                let src = input(dev, d, &[4, 6, 3], Contig, g, seed + 1)?;
                dst.slice_set(&src, 1, 3)?;
                Ok(dst)
            }));
        }
        // ---- const_set: ones (alloc_uninit + const_set), one_set / zero_set on strided views
        let cs = if d == DType::F8E4M3 { "const_set_f8_e4m3".to_string() } else { kname("const_set", d) };
        let specs: Vec<(Vec<usize>, &str)> = if k.has(&cs) {
            vec![
                (vec![1], "ones"),
                (vec![1031, 17], "ones"),
                (vec![7, 9], "one_set narrowed"),
                (vec![7, 9], "zero_set transposed"),
                (vec![33, 65], "zero_set offset"),
            ]
        } else {
            vec![(vec![7], "ones")]
        };
        for (shape, how) in specs {
            let name = format!("const_set {how} {} {shape:?}", dt(d));
            let seed = seed_of(&name);
            cases.push(Case::new(
                "const_set",
                name,
                Support::Kernels(vec![cs.clone()]),
                Tol::Exact,
                move |dev| match how {
                    "ones" => Tensor::ones(shape.as_slice(), d, dev),
                    _ => {
                        let base = input(dev, d, &shape, Contig, g, seed)?;
                        match how {
                            "one_set narrowed" => base.narrow(0, 1, 4)?.narrow(1, 2, 5)?.one_set()?,
                            "zero_set transposed" => base.t()?.narrow(0, 3, 4)?.zero_set()?,
                            _ => base.narrow(0, 5, 20)?.zero_set()?,
                        }
                        Ok(base)
                    }
                },
            ));
        }
    }
    // Tensor::full with values that are not 0/1
    for (name, f) in [
        ("const_set full u8 7", (|dev: &Device| Tensor::full(7u8, (3, 5), dev)) as fn(&Device) -> Result<Tensor>),
        ("const_set full u32 123456", |dev| Tensor::full(123456u32, (3, 5), dev)),
        ("const_set full i64 -5", |dev| Tensor::full(-5i64, (1031,), dev)),
        ("const_set full f32 3.5", |dev| Tensor::full(3.5f32, (2, 1031), dev)),
        ("const_set full f64 -0.125", |dev| Tensor::full(-0.125f64, (7,), dev)),
    ] {
        cases.push(Case::new("const_set", name.to_string(), Support::Always, Tol::Exact, f));
    }
}

fn storage_misc_cases(_k: &CudaKernels, cases: &mut Vec<Case>) {
    for d in ALL_DTYPES {
        let g = arith_gen(d, Gen::Uniform(-4., 4.));
        // to_cpu_storage / dtype / device: upload, check the accessors, read back
        for (shape, view) in [(vec![1], Contig), (vec![1031, 3], Contig), (vec![5, 7], Offset)] {
            let name = format!("to_cpu_storage round trip {} {}", dt(d), lname(&shape, view));
            let seed = seed_of(&name);
            cases.push(Case::new("to_cpu_storage", name, Support::Always, Tol::Exact, move |dev| {
                let t = input(dev, d, &shape, view, g, seed)?;
                if t.dtype() != d {
                    candle_core::bail!("dtype() is {:?}, expected {d:?}", t.dtype())
                }
                if !t.device().same_device(dev) {
                    candle_core::bail!("device() is {:?}, expected {:?}", t.device().location(), dev.location())
                }
                t.to_device(&Device::Cpu)
            }));
        }
        // try_clone: Tensor::copy of a narrowed view (clones the whole buffer, keeps the layout)
        let name = format!("try_clone copy() {}", dt(d));
        let seed = seed_of(&name);
        cases.push(Case::new("try_clone", name, Support::Always, Tol::Exact, move |dev| {
            let t = input(dev, d, &[5, 9], Contig, g, seed)?.narrow(1, 2, 4)?;
            let c = t.copy()?;
            drop(t);
            Ok(c)
        }));
    }
    // Composite ops built from several storage methods, as models use them
    for d in FLOAT_DTYPES {
        let name = format!("reduce_op mean/var composite {}", dt(d));
        let seed = seed_of(&name);
        cases.push(Case::new("reduce_op", name, Support::Always, tol(d, Class::Norm), move |dev| {
            let x = input(dev, d, &[6, 64], Contig, Gen::Uniform(-1., 1.), seed)?;
            Tensor::cat(&[x.mean_keepdim(1)?, x.var_keepdim(1)?], 1)
        }));
        let name = format!("index_select embedding-like {} (IndexOp + index_select)", dt(d));
        let seed = seed_of(&name);
        cases.push(Case::new("index_select", name, Support::Always, Tol::Exact, move |dev| {
            let w = input(dev, d, &[50, 16], Contig, Gen::Uniform(-1., 1.), seed)?;
            let ids = Tensor::new(&[[3u32, 1, 49], [0, 0, 7]], dev)?;
            w.index_select(&ids.flatten_all()?, 0)?.reshape((2, 3, 16))?.i((.., 1..))?.contiguous()
        }));
    }
}

fn sort_cases(k: &CudaKernels, cases: &mut Vec<Case>) {
    for d in ALL_DTYPES {
        let supported = k.has(&kname("asort_asc", d));
        let shapes: Vec<Vec<usize>> = if supported {
            vec![vec![1], vec![7], vec![3, 100], vec![2, 1024], vec![2, 1500], vec![70000, 4]]
        } else {
            vec![vec![7]]
        };
        for shape in shapes {
            for asc in [true, false] {
                let name = format!("arg_sort_last_dim {} {shape:?} asc {asc}", dt(d));
                let seed = seed_of(&name);
                let gen = if is_int(d) { Gen::Ints(0, 200) } else { Gen::Uniform(-4., 4.) };
                let root = if asc { "asort_asc" } else { "asort_desc" };
                let shape = shape.clone();
                cases.push(Case::new(
                    "arg_sort (custom op)",
                    name,
                    Support::Kernels(vec![kname(root, d)]),
                    Tol::Exact,
                    move |dev| {
                        let x = input(dev, d, &shape, Contig, gen, seed)?;
                        let idx = x.arg_sort_last_dim(asc)?.to_device(&Device::Cpu)?;
                        // Unstable sort: compare the sorted values, after checking that the
                        // indices of each row are a permutation.
                        let n = *shape.last().unwrap();
                        let rows = idx.reshape(((), n))?.to_vec2::<u32>()?;
                        for row in &rows {
                            let mut seen = vec![false; n];
                            for &i in row {
                                if i as usize >= n || std::mem::replace(&mut seen[i as usize], true) {
                                    candle_core::bail!("arg_sort row is not a permutation of 0..{n}")
                                }
                            }
                        }
                        x.to_device(&Device::Cpu)?.gather(&idx, D::Minus1)
                    },
                ));
            }
        }
    }
}

/// The whole table. Built without a device: `backend_coverage` reads its methods.
fn all_cases(k: &CudaKernels) -> Vec<Case> {
    let mut cases = vec![];
    for build in [
        affine_powf_elu_cases,
        unary_cases,
        binary_cases,
        cmp_cases,
        to_dtype_cases,
        reduce_cases,
        where_cond_cases,
        conv_cases,
        pool_upsample_cases,
        indexing_cases,
        matmul_cases,
        copy_cases,
        storage_misc_cases,
        sort_cases,
    ] as [fn(&CudaKernels, &mut Vec<Case>); 14]
    {
        build(k, &mut cases);
    }
    cases
}

// ---------------------------------------------------------------------------
// Tests

/// Trait methods without a case / check, and table entries that name no trait method.
fn trait_coverage_problems(storage_fns: &[String], device_fns: &[String], cases: &[Case]) -> Vec<String> {
    let mut problems = vec![];
    let mut covered: BTreeSet<&str> = cases.iter().map(|c| c.method).collect();
    let na: BTreeSet<&str> = STORAGE_NOT_APPLICABLE.iter().map(|(m, _)| *m).collect();
    for (m, group, _) in COVERED_INSIDE {
        if covered.contains(group) {
            covered.insert(m);
        } else {
            problems.push(format!("COVERED_INSIDE: {m} is said to be checked in group {group}, which has no cases"));
        }
    }
    for f in storage_fns {
        if !covered.contains(f.as_str()) && !na.contains(f.as_str()) {
            problems.push(format!("BackendStorage::{f} has no ROCm-vs-CPU case and no not-applicable entry"));
        }
    }
    for m in na.iter().chain(covered.iter()) {
        // groups with a space ("arg_sort (custom op)") are extra groups, not trait methods
        if !m.contains(' ') && !storage_fns.iter().any(|f| f == m) {
            problems.push(format!("case group / n/a entry `{m}` is not a BackendStorage method (stale table?)"));
        }
    }
    let checked: BTreeSet<&str> = DEVICE_CHECKS.iter().map(|(m, _)| *m).collect();
    for f in device_fns {
        if !checked.contains(f.as_str()) {
            problems.push(format!("BackendDevice::{f} has no check in device_methods"));
        }
    }
    for m in &checked {
        if !device_fns.iter().any(|f| f == m) {
            problems.push(format!("DEVICE_CHECKS entry `{m}` is not a BackendDevice method (stale table?)"));
        }
    }
    problems
}

/// The coverage check itself: a method added to the trait, or one that disappears, is reported.
#[test]
fn coverage_check_catches_new_methods() {
    let src = r#"
        pub trait BackendStorage: Sized {
            type Device: BackendDevice;
            // fn commented_out(&self);
            fn affine(&self, _: &Layout, _: f64, _: f64) -> Result<Self>;
            fn frobnicate(
                &self,
                _l: &Layout,
            ) -> Result<Self>;
            unsafe fn raw_thing(&self) -> Result<()>;
        }
        pub trait BackendDevice: Sized { fn new(_: usize) -> Result<Self>; }
    "#;
    let fns = trait_fns(src, "BackendStorage");
    assert_eq!(fns, ["affine", "frobnicate", "raw_thing"]);
    let k = CudaKernels::load();
    let cases = all_cases(&k);
    let device = trait_fns(src, "BackendDevice");
    let problems = trait_coverage_problems(&fns, &device, &cases);
    let has = |s: &str| problems.iter().any(|p| p.contains(s));
    assert!(has("BackendStorage::frobnicate has no ROCm-vs-CPU case"), "{problems:#?}");
    assert!(has("BackendStorage::raw_thing has no ROCm-vs-CPU case"), "{problems:#?}");
    assert!(has("`matmul` is not a BackendStorage method"), "{problems:#?}");
    assert!(has("DEVICE_CHECKS entry `rand_normal` is not a BackendDevice method"), "{problems:#?}");
    assert!(!has("affine"), "{problems:#?}");
}

#[test]
fn backend_coverage() {
    let k = CudaKernels::load();
    let cases = all_cases(&k);
    let mut problems = vec![];

    // Case names are unique (they seed the inputs and name failures).
    let mut names = BTreeSet::new();
    for c in &cases {
        if !names.insert(c.name.as_str()) {
            problems.push(format!("duplicate case name: {}", c.name));
        }
    }

    let backend =
        std::fs::read_to_string(repo_path("generated/candle-core/src/backend.rs")).expect("reading backend.rs");
    let storage_fns = trait_fns(&backend, "BackendStorage");
    let device_fns = trait_fns(&backend, "BackendDevice");
    for must in ["matmul", "conv2d", "const_set", "unary_impl"] {
        assert!(storage_fns.iter().any(|f| f == must), "parser missed BackendStorage::{must}: {storage_fns:?}");
    }
    assert!(device_fns.iter().any(|f| f == "rand_normal"), "parser missed BackendDevice::rand_normal: {device_fns:?}");

    problems.extend(trait_coverage_problems(&storage_fns, &device_fns, &cases));
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.method).collect();
    let na: BTreeSet<&str> = STORAGE_NOT_APPLICABLE.iter().map(|(m, _)| *m).collect();

    // Every op of op.rs has a row in the op tables.
    let op_rs = std::fs::read_to_string(repo_path("generated/candle-core/src/op.rs")).expect("reading op.rs");
    let unary: BTreeSet<String> = op_structs(&op_rs, "unary_op", "UnaryOpT");
    let ours: BTreeSet<String> = unary_ops().iter().map(|u| u.0.to_string()).collect();
    for op in unary.difference(&ours) {
        problems.push(format!("unary op {op} (op.rs) has no row in unary_ops()"));
    }
    let binary: BTreeSet<String> = op_structs(&op_rs, "bin_op", "BinaryOpT");
    let ours: BTreeSet<String> = binary_ops().iter().map(|b| b.0.to_string()).collect();
    for op in binary.difference(&ours) {
        problems.push(format!("binary op {op} (op.rs) has no row in binary_ops()"));
    }
    for (enum_name, ours) in [
        ("CmpOp", cmp_ops().iter().map(|c| c.0.to_string()).collect::<BTreeSet<_>>()),
        ("ReduceOp", REDUCE_OPS.iter().map(|s| s.to_string()).collect()),
    ] {
        for v in enum_variants(&op_rs, enum_name) {
            if !ours.contains(&v) {
                problems.push(format!("{enum_name}::{v} has no ROCm-vs-CPU case"));
            }
        }
    }
    assert!(unary.len() >= 19 && binary.len() >= 6, "op.rs parser found {unary:?} {binary:?}");

    let must_work = cases.iter().filter(|c| c.expected_to_work(&k)).count();
    let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
    for c in &cases {
        *per.entry(c.method).or_default() += 1;
    }
    println!(
        "coverage: {} BackendStorage methods ({} with cases of their own, {} checked inside other cases, {} n/a), {} BackendDevice methods checked, {} unary / {} binary ops",
        storage_fns.len(),
        storage_fns.iter().filter(|f| covered.contains(f.as_str())).count(),
        COVERED_INSIDE.len(),
        na.len(),
        device_fns.len(),
        unary.len(),
        binary.len()
    );
    println!(
        "coverage: {} cases ({must_work} the CUDA backend runs, the rest must fail cleanly); per group: {per:?}",
        cases.len()
    );
    print_unsupported("coverage", &cases, &k);
    assert!(problems.is_empty(), "coverage check failed:\n{}", problems.join("\n"));
    println!("coverage: ok");
}

#[test]
fn backend_ops_rocm_vs_cpu() {
    let Some(dev) = rocm_device("backend_ops_rocm_vs_cpu") else {
        return;
    };
    let k = CudaKernels::load();
    let cases = all_cases(&k);
    Report::run("rocm-vs-cpu", &cases, &dev, &k).finish();
}

#[test]
fn device_methods() {
    let Some(dev) = rocm_device("device_methods") else {
        return;
    };
    let k = CudaKernels::load();
    let mut r = Report::new("rocm-vs-cpu (device)");
    check_device_methods(&dev, &k, &mut r);
    r.finish();
}

/// The device-agnostic device checks, on the CPU (checks the checks).
#[test]
fn harness_device_checks_on_cpu() {
    let k = CudaKernels::load();
    let mut r = Report::new("harness (device checks on the cpu)");
    check_creation_and_random(&Device::Cpu, &k, &mut r);
    r.finish();
}

fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), min, max)
}

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> std::result::Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn err(e: candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}

/// The ROCm-only device checks (identity, seeding, synchronize), then the device-agnostic ones.
fn check_device_methods(dev: &Device, k: &CudaKernels, r: &mut Report) {
    use candle_core::DeviceLocation;
    let e = err;
    r.check("new", "new_rocm(0)", Device::new_rocm(0).map(|_| ()).map_err(e));
    r.check(
        "location",
        "location",
        ensure(matches!(dev.location(), DeviceLocation::Rocm { gpu_id: 0 }), || format!("{:?}", dev.location())),
    );
    r.check(
        "same_device",
        "same_device",
        (|| {
            ensure(dev.same_device(&dev.clone()), || "a clone is not the same device".into())?;
            let other = Device::new_rocm(0).map_err(e)?;
            ensure(!dev.same_device(&other), || {
                "two new_rocm(0) devices compare equal (the CUDA backend gives each a new id)".into()
            })?;
            ensure(!dev.same_device(&Device::Cpu), || "same as the CPU".into())
        })(),
    );
    r.check(
        "set_seed",
        "set_seed reproduces",
        (|| {
            dev.set_seed(42).map_err(e)?;
            let a = host_values(&Tensor::randn(0f32, 1f32, 4096, dev).map_err(e)?).map_err(e)?;
            let u = host_values(&Tensor::rand(0f32, 1f32, 4096, dev).map_err(e)?).map_err(e)?;
            dev.set_seed(42).map_err(e)?;
            let b = host_values(&Tensor::randn(0f32, 1f32, 4096, dev).map_err(e)?).map_err(e)?;
            let v = host_values(&Tensor::rand(0f32, 1f32, 4096, dev).map_err(e)?).map_err(e)?;
            ensure(a == b && u == v, || "the same seed gave different numbers".into())?;
            dev.set_seed(43).map_err(e)?;
            let c = host_values(&Tensor::randn(0f32, 1f32, 4096, dev).map_err(e)?).map_err(e)?;
            ensure(a != c, || "seeds 42 and 43 gave the same numbers".into())
        })(),
    );
    r.check(
        "get_current_seed",
        "get_current_seed",
        (|| {
            dev.set_seed(1234).map_err(e)?;
            let s = dev.get_current_seed().map_err(e)?;
            ensure(s == 1234, || format!("get_current_seed() = {s}, expected 1234"))
        })(),
    );
    r.check(
        "synchronize",
        "synchronize",
        (|| {
            let x = Tensor::ones((1024, 1024), DType::F32, dev).map_err(e)?;
            let y = x.matmul(&x).map_err(e)?.sum_all().map_err(e)?;
            dev.synchronize().map_err(e)?;
            let v = y.to_scalar::<f32>().map_err(e)?;
            ensure(v == 1024.0 * 1024.0 * 1024.0, || format!("sum {v}"))
        })(),
    );
    check_creation_and_random(dev, k, r);
}

/// Storage creation for every dtype and random-number statistics (any device: the CPU
/// harness runs them too).
fn check_creation_and_random(dev: &Device, k: &CudaKernels, r: &mut Report) {
    let e = err;
    for d in ALL_DTYPES {
        r.check(
            "zeros_impl",
            format!("zeros {}", dt(d)),
            (|| {
                let z = host_values(&Tensor::zeros((3, 1031), d, dev).map_err(e)?).map_err(e)?;
                ensure(z.iter().all(|&v| v == 0.0), || "non-zero value".into())
            })(),
        );
        r.check(
            "alloc_uninit",
            format!("empty + ones {}", dt(d)),
            (|| {
                let t = unsafe { Tensor::empty((5, 7), d, dev) }.map_err(e)?;
                ensure(t.dims() == [5, 7] && t.dtype() == d, || format!("{:?} {:?}", t.dims(), t.dtype()))
            })(),
        );
        // ones = alloc_uninit + const_set: needs the const_set kernel (the CUDA build has
        // none for i16/i32)
        let cs = if d == DType::F8E4M3 { "const_set_f8_e4m3".to_string() } else { kname("const_set", d) };
        let ones = Tensor::ones((5, 7), d, dev).and_then(|t| host_values(&t));
        let status = match ones {
            Ok(v) if v.iter().all(|&v| v == 1.0) => Status::Pass(0.0),
            Ok(_) => Status::Fail("ones holds a value that is not 1".into()),
            Err(x) if !k.has(&cs) => Status::Unsupported(format!("CUDA build has no kernel {cs} (device: {})", err(x))),
            Err(x) => Status::Fail(err(x)),
        };
        r.push("alloc_uninit", format!("ones {}", dt(d)), status);
        r.check(
            "storage_from_slice",
            format!("from_slice {}", dt(d)),
            (|| {
                let vals = values(Gen::Ints(0, 100), 1031, 7);
                let want = tensor_from_values(&vals, &[1031], d, &Device::Cpu).map_err(e)?;
                let got = from_slice_like(&want, dev).map_err(e)?;
                compare(&got, &want, Tol::Exact).map(|_| ())
            })(),
        );
        r.check(
            "storage_from_cpu_storage_owned",
            format!("from_vec {}", dt(d)),
            (|| {
                let vals = values(Gen::Ints(0, 100), 77, 8);
                let want = tensor_from_values(&vals, &[7, 11], d, &Device::Cpu).map_err(e)?;
                let got = from_vec_like(&want, dev).map_err(e)?;
                compare(&got, &want, Tol::Exact).map(|_| ())
            })(),
        );
    }
    r.check(
        "storage_from_cpu_storage",
        "to_device f32",
        (|| {
            let want = tensor_from_values(&values(Gen::Uniform(-1., 1.), 4099, 9), &[4099], DType::F32, &Device::Cpu)
                .map_err(e)?;
            let got = want.to_device(dev).map_err(e)?;
            ensure(got.device().same_device(dev), || "not on the device".into())?;
            compare(&got, &want, Tol::Exact).map(|_| ())
        })(),
    );

    // Random numbers: statistics on 2^20 samples (bounds are > 6 standard errors). F16 and
    // BF16 are drawn in f32 and cast (as on CUDA); integer dtypes must be refused.
    const N: usize = 1 << 20;
    for d in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let coarse = if matches!(d, DType::F16 | DType::BF16) { 4.0 * unit(d) } else { 0.0 };
        r.check(
            "rand_uniform",
            format!("rand_uniform {} in [-2, 3)", dt(d)),
            (|| {
                let z = Tensor::zeros(N, d, dev).map_err(e)?;
                let a = host_values(&z.rand_like(-2.0, 3.0).map_err(e)?).map_err(e)?;
                let (mean, std, min, max) = stats(&a);
                let want_std = 5.0 / 12f64.sqrt();
                ensure(min >= -2.0 && max <= 3.0, || format!("values outside [-2, 3]: min {min} max {max}"))?;
                ensure((mean - 0.5).abs() < 0.01 + coarse, || format!("mean {mean}, expected 0.5"))?;
                ensure((std - want_std).abs() < 0.01 + coarse, || format!("std {std}, expected {want_std}"))?;
                let b = host_values(&z.rand_like(-2.0, 3.0).map_err(e)?).map_err(e)?;
                let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
                let allowed = if coarse > 0.0 { N / 10 } else { N / 1000 };
                ensure(same < allowed, || format!("two draws agree on {same} of {N} values"))
            })(),
        );
        r.check(
            "rand_normal",
            format!("rand_normal {} mean 1.5 std 0.5, odd count", dt(d)),
            (|| {
                let z = Tensor::zeros(N + 1, d, dev).map_err(e)?;
                let t = z.randn_like(1.5, 0.5).map_err(e)?;
                ensure(t.dims() == [N + 1], || format!("odd element count gave shape {:?}", t.dims()))?;
                let a = host_values(&t).map_err(e)?;
                let (mean, std, _, _) = stats(&a);
                let within = a.iter().filter(|v| (*v - 1.5).abs() < 0.5).count() as f64 / a.len() as f64;
                ensure((mean - 1.5).abs() < 0.005 + 2.0 * coarse, || format!("mean {mean}, expected 1.5"))?;
                ensure((std - 0.5).abs() < 0.005 + coarse, || format!("std {std}, expected 0.5"))?;
                // (the 1-sigma boundary is blurred by rounding in the 16-bit dtypes)
                ensure((within - 0.6827).abs() < 0.005 + 10.0 * coarse, || {
                    format!("{within} of the mass within 1 sigma, expected 0.6827")
                })
            })(),
        );
    }
    for d in [DType::U32, DType::I64, DType::U8] {
        // The CUDA backend refuses integer random numbers: an error, not garbage.
        let res = Tensor::zeros(16, d, dev).and_then(|z| z.rand_like(0.0, 1.0));
        r.push(
            "rand_uniform",
            format!("rand_uniform {} probe", dt(d)),
            match res {
                Err(err) => Status::Unsupported(format!(
                    "CUDA backend errors too: {}",
                    err.to_string().lines().next().unwrap_or("")
                )),
                Ok(_) => Status::Fail("integer rand_uniform returned a tensor (the CUDA backend refuses it)".into()),
            },
        );
    }
}

/// `Tensor::from_slice` on `dev` with the values of the CPU tensor `t`.
fn from_slice_like(t: &Tensor, dev: &Device) -> Result<Tensor> {
    let s = t.dims();
    match t.dtype() {
        DType::U8 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<u8>()?, s, dev),
        DType::U32 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<u32>()?, s, dev),
        DType::I16 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<i16>()?, s, dev),
        DType::I32 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<i32>()?, s, dev),
        DType::I64 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<i64>()?, s, dev),
        DType::F32 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<f32>()?, s, dev),
        DType::F64 => Tensor::from_slice(&t.flatten_all()?.to_vec1::<f64>()?, s, dev),
        // No half/float8 dependency here: these go through the raw storage path.
        _ => Tensor::from_raw_buffer(&raw_bytes(t)?, t.dtype(), s, dev),
    }
}

/// `Tensor::from_vec` on `dev` with the values of the CPU tensor `t`.
fn from_vec_like(t: &Tensor, dev: &Device) -> Result<Tensor> {
    let s = t.dims();
    match t.dtype() {
        DType::U8 => Tensor::from_vec(t.flatten_all()?.to_vec1::<u8>()?, s, dev),
        DType::U32 => Tensor::from_vec(t.flatten_all()?.to_vec1::<u32>()?, s, dev),
        DType::I16 => Tensor::from_vec(t.flatten_all()?.to_vec1::<i16>()?, s, dev),
        DType::I32 => Tensor::from_vec(t.flatten_all()?.to_vec1::<i32>()?, s, dev),
        DType::I64 => Tensor::from_vec(t.flatten_all()?.to_vec1::<i64>()?, s, dev),
        DType::F32 => Tensor::from_vec(t.flatten_all()?.to_vec1::<f32>()?, s, dev),
        DType::F64 => Tensor::from_vec(t.flatten_all()?.to_vec1::<f64>()?, s, dev),
        _ => Tensor::from_raw_buffer(&raw_bytes(t)?, t.dtype(), s, dev),
    }
}

/// The little-endian bytes of a contiguous CPU tensor of a 1- or 2-byte float dtype.
fn raw_bytes(t: &Tensor) -> Result<Vec<u8>> {
    let mut out = vec![];
    t.flatten_all()?.write_bytes(&mut out)?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// Harness self-tests (run without a GPU)

/// The whole table with the CPU standing in for the device: every case the CUDA backend
/// runs must build, run and compare equal against itself (catches harness bugs).
#[test]
fn harness_cpu_vs_cpu() {
    let k = CudaKernels::load();
    let cases: Vec<Case> = all_cases(&k).into_iter().filter(|c| c.expected_to_work(&k)).collect();
    let mut r = Report::new("harness (cpu vs cpu)");
    let filter = std::env::var("ROCM_VS_CPU_FILTER").ok();
    for c in &cases {
        if let Some(f) = &filter {
            if !c.name.contains(f.as_str()) {
                continue;
            }
        }
        let status = match (guarded(|| (c.run)(&Device::Cpu)), guarded(|| (c.run)(&Device::Cpu))) {
            (Ok(a), Ok(b)) => match compare(&a, &b, Tol::Exact) {
                Ok(e) => Status::Pass(e),
                Err(m) => Status::Fail(format!("two CPU runs differ (inputs not deterministic?): {m}")),
            },
            (Err(e), _) | (_, Err(e)) => match &c.support {
                Support::UpstreamBug(_) => Status::Pass(0.0),
                _ => Status::Fail(format!("CPU cannot run the case: {e}")),
            },
        };
        r.push(c.method, c.name.clone(), status);
        // Cases with a host reference: the CPU backend against it (a declared upstream CPU
        // bug must show, and only where declared).
        if let Some((row, status)) = cpu_vs_reference(c) {
            r.push(c.method, row, status);
        }
    }
    r.finish();
}

/// The comparison itself: a perturbation beyond the tolerance is caught, one within is not.
#[test]
fn harness_detects_perturbation() -> Result<()> {
    let cpu = Device::Cpu;
    let x = input(&cpu, DType::F32, &[33, 65], Transposed, Gen::Uniform(-4., 4.), 5)?;
    let want = x.exp()?;
    let mut v = host_values(&want)?;
    assert!(compare(&want, &want, tol(DType::F32, Class::Transc)).is_ok());
    // 1e-3 relative on one element: caught, and located
    v[1234] *= 1.001;
    let bad = tensor_from_values(&v, &[33, 65], DType::F32, &cpu)?;
    let err = compare(&bad, &want, tol(DType::F32, Class::Transc)).unwrap_err();
    assert!(err.contains("1/2145") && err.contains("[18, 64]"), "{err}");
    // 1e-6 relative: within the f32 transcendental tolerance
    let mut v = host_values(&want)?;
    v[7] *= 1.000001;
    assert!(
        compare(&tensor_from_values(&v, &[33, 65], DType::F32, &cpu)?, &want, tol(DType::F32, Class::Transc)).is_ok()
    );
    // NaN, shape and dtype mismatches
    let mut v = host_values(&want)?;
    v[0] = f64::NAN;
    assert!(compare(&tensor_from_values(&v, &[33, 65], DType::F32, &cpu)?, &want, Tol::Close { abs: 1.0, rel: 1.0 })
        .is_err());
    assert!(compare(&want.reshape((65, 33))?, &want, Tol::Close { abs: 1.0, rel: 1.0 }).is_err());
    assert!(compare(&want.to_dtype(DType::F64)?, &want, Tol::Close { abs: 1.0, rel: 1.0 }).is_err());
    // integers are exact
    let a = Tensor::new(&[1u32, 2, 3], &cpu)?;
    assert!(compare(&a, &Tensor::new(&[1u32, 2, 4], &cpu)?, tol(DType::U32, Class::Basic)).is_err());
    // bf16: one unit in the last place passes, ten do not
    let b = Tensor::new(&[1.0f32, 2.0, 3.0], &cpu)?.to_dtype(DType::BF16)?;
    let b1 = Tensor::new(&[1.0f32, 2.0078125, 3.0], &cpu)?.to_dtype(DType::BF16)?;
    let b10 = Tensor::new(&[1.0f32, 2.078125, 3.0], &cpu)?.to_dtype(DType::BF16)?;
    assert!(compare(&b1, &b, tol(DType::BF16, Class::Basic)).is_ok());
    assert!(compare(&b10, &b, tol(DType::BF16, Class::Basic)).is_err());

    // The case evaluator, with the CPU standing in for the device: the first run of a case
    // is the "device" run, the second the reference. A device result off by 1e-3 fails; an
    // error where CUDA has no kernel is "unsupported"; where CUDA has one it fails.
    let k = CudaKernels::load();
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let c2 = calls.clone();
    let perturbed =
        Case::new("affine", "perturbed".into(), Support::Always, tol(DType::F32, Class::Basic), move |dev| {
            c2.set(c2.get() + 1);
            let x = input(dev, DType::F32, &[7, 9], Contig, Gen::Uniform(-1., 1.), 1)?;
            if c2.get() == 1 {
                x.affine(1.0, 1e-3)
            } else {
                Ok(x)
            }
        });
    let s = evaluate(&perturbed, &cpu, &k);
    assert!(matches!(&s, Status::Fail(m) if m.contains("63/63")), "{s:?}");
    calls.set(10);
    assert!(matches!(evaluate(&perturbed, &cpu, &k), Status::Pass(_)));
    let missing = Case::new(
        "affine",
        "missing kernel".into(),
        Support::Kernels(vec!["no_such_kernel".into()]),
        Tol::Exact,
        |_| candle_core::bail!("named symbol not found"),
    );
    assert!(matches!(evaluate(&missing, &cpu, &k), Status::Unsupported(_)));
    let needed =
        Case::new("affine", "needed kernel".into(), Support::Kernels(vec!["affine_f32".into()]), Tol::Exact, |_| {
            candle_core::bail!("named symbol not found")
        });
    assert!(matches!(evaluate(&needed, &cpu, &k), Status::Fail(_)));
    Ok(())
}

/// Host references: the device is judged against the reference, not the CPU backend; the
/// CPU backend's disagreement with it is a known upstream bug only where declared.
#[test]
fn harness_host_reference() -> Result<()> {
    let cpu = Device::Cpu;
    let k = CudaKernels::load();
    let x = |dev: &Device| input(dev, DType::F32, &[3, 4, 5], Contig, Gen::Uniform(-1., 1.), 9);
    // rows >= `from` of dim 0 shifted by 1e-3 (on every run, the "device" and the CPU)
    let shifted = move |from: usize| {
        move |dev: &Device| -> Result<Tensor> {
            let x = x(dev)?;
            let mask: Vec<f64> = (0..60).map(|i| if i / 20 >= from { 1e-3 } else { 0.0 }).collect();
            x + tensor_from_values(&mask, &[3, 4, 5], DType::F32, dev)?
        }
    };
    let t = tol(DType::F32, Class::Basic);
    let case = |run: Box<dyn Fn(&Device) -> Result<Tensor>>| {
        Case::new("affine", "host reference".into(), Support::Always, t, run).with_reference("identity", move |d| x(d))
    };
    // agrees with the reference: pass, and the CPU cross-check passes
    let c = case(Box::new(x));
    assert!(matches!(evaluate(&c, &cpu, &k), Status::Pass(_)));
    assert!(matches!(cpu_vs_reference(&c), Some((_, Status::Pass(_)))));
    // device and CPU agree with each other but not with the reference: both fail
    let c = case(Box::new(shifted(1)));
    assert!(matches!(evaluate(&c, &cpu, &k), Status::Fail(m) if m.contains("40/60")));
    assert!(matches!(cpu_vs_reference(&c), Some((_, Status::Fail(m))) if m.contains("disagrees")));
    // a declared CPU bug: known bug where declared, failure where it would hide more
    let c = case(Box::new(shifted(1))).with_cpu_bug("rows >= 1", |t| t.narrow(0, 0, 1));
    assert!(matches!(cpu_vs_reference(&c), Some((_, Status::KnownBug(_)))));
    let c = case(Box::new(shifted(0))).with_cpu_bug("rows >= 1", |t| t.narrow(0, 0, 1));
    assert!(matches!(cpu_vs_reference(&c), Some((_, Status::Fail(m))) if m.contains("does not reach")));
    let c = case(Box::new(shifted(0))).with_cpu_bug_everywhere("all rows");
    assert!(matches!(cpu_vs_reference(&c), Some((_, Status::KnownBug(_)))));
    // a declared CPU bug that does not show is a failure (the declaration is wrong)
    let c = case(Box::new(x)).with_cpu_bug_everywhere("all rows");
    assert!(matches!(cpu_vs_reference(&c), Some((_, Status::Fail(m))) if m.contains("did not show")));
    // no reference: no cross-check row
    let plain = Case::new("affine", "plain".into(), Support::Always, t, x);
    assert!(cpu_vs_reference(&plain).is_none());

    // The integer avg_pool2d kernel reference, by hand: sums 9 * 25 = 225 (u8, no wrap)
    // and 1 + 2 + ... + 9 = 45 -> floor(45 / 9) = 5; a 2x2 window of 7, 7, 7, 6 -> 6.
    let a = Tensor::from_vec((1u8..=9).collect::<Vec<_>>(), (1, 1, 3, 3), &cpu)?;
    let r = int_avg_pool2d_kernel_reference(&a, (3, 3), (1, 1))?;
    assert_eq!(r.flatten_all()?.to_vec1::<u8>()?, [5]);
    let a = Tensor::full(25u32, (1, 1, 3, 3), &cpu)?;
    assert_eq!(int_avg_pool2d_kernel_reference(&a, (3, 3), (1, 1))?.flatten_all()?.to_vec1::<u32>()?, [25]);
    let a = Tensor::from_vec(vec![7u32, 7, 7, 6], (1, 1, 2, 2), &cpu)?;
    assert_eq!(int_avg_pool2d_kernel_reference(&a, (2, 2), (2, 2))?.flatten_all()?.to_vec1::<u32>()?, [6]);
    // the CPU backend gives 0 for the same input (CPU_INT_AVG_POOL2D)
    assert_eq!(a.avg_pool2d((2, 2))?.flatten_all()?.to_vec1::<u32>()?, [0]);
    // u8 accumulates in uint8_t: 4 x 100 wraps to 144, 144 * 0.25 = 36
    let a = Tensor::full(100u8, (1, 1, 2, 2), &cpu)?;
    assert_eq!(int_avg_pool2d_kernel_reference(&a, (2, 2), (2, 2))?.flatten_all()?.to_vec1::<u8>()?, [36]);
    Ok(())
}

/// The cause of CPU_CONV_TRANSPOSE1D_COL2IM_BUG, on the CPU backend's matmul alone: a
/// transposed lhs (b, m, k) (row stride 1, batch stride m * k) times a rhs broadcast over
/// the batch (batch stride 0) takes `MatMul::f`'s batch fold, and batch >= 1 comes out
/// wrong; the same lhs made contiguous is right. (Fails once upstream fixes it: then the
/// declared CPU bug must go too.)
#[test]
fn harness_cpu_matmul_fold_bug() -> Result<()> {
    let cpu = Device::Cpu;
    let (b, m, k, n) = (2, 5, 3, 4);
    let x = input(&cpu, DType::F32, &[b, k, m], Contig, Gen::Uniform(-1., 1.), 1)?;
    let w = input(&cpu, DType::F32, &[k, n], Contig, Gen::Uniform(-1., 1.), 2)?.broadcast_as((b, k, n))?;
    let lhs = x.transpose(1, 2)?;
    let folded = lhs.matmul(&w)?;
    let right = lhs.contiguous()?.matmul(&w.contiguous()?)?;
    let t = tol(DType::F32, Class::Matmul(k));
    assert!(compare(&folded.narrow(0, 0, 1)?, &right.narrow(0, 0, 1)?, t).is_ok(), "batch 0 is right");
    let e = compare(&folded.narrow(0, 1, 1)?, &right.narrow(0, 1, 1)?, t);
    assert!(e.is_err(), "the CPU matmul fold bug no longer shows: drop CPU_CONV_TRANSPOSE1D_COL2IM_BUG");
    println!("cpu matmul, transposed lhs x batch-broadcast rhs, batch 1: {}", e.unwrap_err());
    Ok(())
}
