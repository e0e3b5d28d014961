//! candle-nn's custom ops with a `rocm_fwd` (softmax_last_dim, rms_norm, layer_norm,
//! rope / rope_i / rope_thd, sigmoid, moe_gemm) on the ROCm device against the CPU,
//! and against their `_slow` / composite references; plus candle-nn composites that
//! models use (softmax over any dim, log_softmax, swiglu, kv cache ...).

#![allow(clippy::type_complexity)] // the case tables are tuples, one per line

mod common;

use candle_core::{DType, Device, Result, Tensor, D};
use candle_nn::ops;
use candle_nn::rotary_emb;
use common::*;
use std::collections::BTreeSet;

use View::{Broadcast, Contig, Narrowed, Offset, Transposed};

/// The custom ops of candle-nn that have a `rocm_fwd` (checked against the sources by
/// `nn_coverage`): the `CustomOp*` struct and the case group that covers it.
const CUSTOM_OPS: &[(&str, &str)] = &[
    ("Sigmoid", "sigmoid"),
    ("SoftmaxLastDim", "softmax_last_dim"),
    ("RmsNorm", "rms_norm"),
    ("LayerNorm", "layer_norm"),
    ("RotaryEmbI", "rope_i"),
    ("RotaryEmb", "rope"),
    ("RotaryEmbThd", "rope_thd"),
];

/// Free functions of candle-nn with a ROCm path of their own (not a CustomOp).
const ROCM_FNS: &[(&str, &str)] = &[("moe_gemm", "moe_gemm"), ("moe_gemm_gguf", "covered in rocm_vs_cpu_quantized.rs")];

/// Custom ops of candle-nn without a `rocm_fwd`, and why they are not cases.
const NN_NOT_APPLICABLE: &[(&str, &str)] =
    &[("Sdpa", "Metal-only fused attention: no cuda_fwd, so no rocm_fwd either")];

fn nn_dtypes() -> [DType; 4] {
    [DType::F32, DType::F16, DType::BF16, DType::F64]
}

fn nn_cases(k: &CudaKernels) -> Vec<Case> {
    let mut cases = vec![];
    let g = Gen::Uniform(-4., 4.);
    // ---- softmax_last_dim: odd widths, > 1024 columns, > 65535 rows
    let shapes: Vec<(Vec<usize>, View)> = vec![
        (vec![1], Contig),
        (vec![7], Contig),
        (vec![3, 5, 7], Offset),
        (vec![4, 1031], Contig),
        (vec![2, 4096], Contig),
        (vec![70000, 4], Contig),
    ];
    for d in nn_dtypes() {
        let kernel = kname("softmax", d);
        for (shape, view) in shapes.clone() {
            for reference in ["softmax_last_dim", "softmax(x, -1) composite"] {
                let name = format!("softmax_last_dim {} {} vs cpu {reference}", dt(d), lname(&shape, view));
                let seed = seed_of(&format!("softmax {} {}", dt(d), lname(&shape, view)));
                let shape = shape.clone();
                cases.push(Case::new(
                    "softmax_last_dim",
                    name,
                    Support::Kernels(vec![kernel.clone()]),
                    tol(d, Class::Norm),
                    move |dev| {
                        let x = input(dev, d, &shape, view, g, seed)?;
                        if dev.is_cpu() && reference != "softmax_last_dim" {
                            ops::softmax(&x, D::Minus1)
                        } else {
                            ops::softmax_last_dim(&x)
                        }
                    },
                ));
            }
        }
        let name = format!("softmax_last_dim {} transposed input", dt(d));
        cases.push(Case::new(
            "softmax_last_dim",
            name,
            Support::CudaErrors("softmax-last-dim: input has to be contiguous"),
            tol(d, Class::Norm),
            move |dev| ops::softmax_last_dim(&input(dev, d, &[5, 7], Transposed, g, 1)?),
        ));
        // composites: softmax over other dims, log_softmax
        for (shape, view, dim) in
            [(vec![33, 65], Contig, 0), (vec![33, 65], Transposed, 1), (vec![4, 5, 6], Narrowed, 1)]
        {
            for (what, f) in [
                ("softmax", ops::softmax::<usize> as fn(&Tensor, usize) -> Result<Tensor>),
                ("log_softmax", ops::log_softmax::<usize>),
            ] {
                let name = format!("{what} {} {} dim {dim}", dt(d), lname(&shape, view));
                let seed = seed_of(&name);
                let shape = shape.clone();
                cases.push(Case::new(
                    "softmax / log_softmax (composite)",
                    name,
                    Support::Always,
                    tol(d, Class::Norm),
                    move |dev| f(&input(dev, d, &shape, view, g, seed)?, dim),
                ));
            }
        }
    }
    // ---- rms_norm and layer_norm: block 32 (< 1024 columns) and 1024 paths, many rows
    let shapes: Vec<Vec<usize>> = vec![vec![1, 1], vec![3, 7, 64], vec![5, 1031], vec![2, 4096], vec![70000, 8]];
    for d in nn_dtypes() {
        for shape in shapes.clone() {
            let h = *shape.last().unwrap();
            for (op, kernel) in [("rms_norm", "rmsnorm"), ("layer_norm", "layernorm")] {
                // (the CPU has no f64 rms/layer-norm: only the slow reference there)
                let references: &[&str] = if d == DType::F64 { &["slow"] } else { &["fast", "slow"] };
                for &reference in references {
                    let name = format!(
                        "{op} {} {shape:?} vs cpu {op}{}",
                        dt(d),
                        if reference == "slow" { "_slow" } else { "" }
                    );
                    let seed = seed_of(&format!("{op} {} {shape:?}", dt(d)));
                    let shape = shape.clone();
                    // f64 is computed in f32 on the device: kernels/reduce.hip `rmsnorm<T>` /
                    // `layernorm<T>` (= candle-kernels reduce.cu; launched for T = double as
                    // rmsnorm_f64 / layernorm_f64 by candle-nn ops.rs RmsNorm / LayerNorm
                    // rocm_fwd, as cuda_fwd does) read every x as `static_cast<float>`, sum
                    // in `float` / `float2`, take `rsqrtf`, and compute each output in float
                    // before `static_cast<T>`: the f64 result has f32 accuracy, on CUDA as on
                    // ROCm, against the f64 `_slow` reference. So f64 gets f32's tolerance.
                    let t = if d == DType::F64 { tol(DType::F32, Class::Norm) } else { tol(d, Class::Norm) };
                    cases.push(Case::new(
                        if op == "rms_norm" { "rms_norm" } else { "layer_norm" },
                        name,
                        Support::Kernels(vec![kname(kernel, d)]),
                        t,
                        move |dev| {
                            let x = input(dev, d, &shape, Contig, Gen::Uniform(-2., 2.), seed)?;
                            let alpha = input(dev, d, &[h], Contig, Gen::Uniform(0.5, 1.5), seed + 1)?;
                            let beta = input(dev, d, &[h], Contig, Gen::Uniform(-0.5, 0.5), seed + 2)?;
                            let slow = dev.is_cpu() && reference == "slow";
                            match (op, slow) {
                                ("rms_norm", false) => ops::rms_norm(&x, &alpha, 1e-5),
                                ("rms_norm", true) => ops::rms_norm_slow(&x, &alpha, 1e-5),
                                (_, false) => ops::layer_norm(&x, &alpha, &beta, 1e-5),
                                (_, true) => ops::layer_norm_slow(&x, &alpha, &beta, 1e-5),
                            }
                        },
                    ));
                }
            }
        }
        let name = format!("rms_norm {} narrowed input", dt(d));
        cases.push(Case::new(
            "rms_norm",
            name,
            Support::CudaErrors("rmsnorm: input has to be contiguous"),
            tol(d, Class::Norm),
            move |dev| {
                let x = input(dev, d, &[5, 16], Narrowed, g, 2)?;
                ops::rms_norm(&x, &input(dev, d, &[16], Contig, g, 3)?, 1e-5)
            },
        ));
    }
    // ---- rotary embeddings: (b, h, t, d) for rope / rope_i, (b, t, h, d) for rope_thd;
    // cos/sin (t', d/2) with t' >= t, or per batch (b, t, d/2)
    let shapes: Vec<([usize; 4], usize, bool)> = vec![
        ([1, 1, 1, 2], 1, false),
        ([2, 3, 5, 8], 5, false),
        ([2, 3, 5, 8], 8, false),
        ([1, 4, 17, 64], 17, false),
        ([2, 2, 33, 128], 33, true),
        ([2, 3, 5, 8], 5, true),
    ];
    for d in nn_dtypes() {
        for (op, kernel) in [("rope", "rope"), ("rope_i", "rope_i"), ("rope_thd", "rope_thd")] {
            for (s, cs_t, per_batch) in shapes.clone() {
                let references: &[&str] = if per_batch { &["fast"] } else { &["fast", "slow"] };
                for &reference in references {
                    let name = format!(
                        "{op} {} x {s:?} cos/sin {} vs cpu {}",
                        dt(d),
                        if per_batch {
                            format!("({}, {cs_t}, {})", s[0], s[3] / 2)
                        } else {
                            format!("({cs_t}, {})", s[3] / 2)
                        },
                        if reference == "slow" { "slow" } else { op }
                    );
                    let seed = seed_of(&format!("{op} {} {s:?} {cs_t} {per_batch}", dt(d)));
                    cases.push(Case::new(
                        op,
                        name,
                        Support::Kernels(vec![kname(kernel, d)]),
                        tol(d, Class::Norm),
                        move |dev| {
                            let x = input(dev, d, &s, Contig, Gen::Uniform(-2., 2.), seed)?;
                            let cs: Vec<usize> =
                                if per_batch { vec![s[0], cs_t, s[3] / 2] } else { vec![cs_t, s[3] / 2] };
                            let cos = input(dev, d, &cs, Contig, Gen::Uniform(-1., 1.), seed + 1)?;
                            let sin = input(dev, d, &cs, Contig, Gen::Uniform(-1., 1.), seed + 2)?;
                            if dev.is_cpu() && reference == "slow" {
                                // the reference implementations take (b, h, t, d) and cos/sin (t', d/2)
                                match op {
                                    "rope" => rotary_emb::rope_slow(&x, &cos, &sin),
                                    "rope_i" => rotary_emb::rope_i_slow(&x, &cos, &sin),
                                    _ => rotary_emb::rope_slow(&x.transpose(1, 2)?.contiguous()?, &cos, &sin)?
                                        .transpose(1, 2)?
                                        .contiguous(),
                                }
                            } else {
                                match op {
                                    "rope" => rotary_emb::rope(&x, &cos, &sin),
                                    "rope_i" => rotary_emb::rope_i(&x, &cos, &sin),
                                    _ => rotary_emb::rope_thd(&x, &cos, &sin),
                                }
                            }
                        },
                    ));
                }
            }
        }
    }
    // ---- sigmoid (strided inputs are fine)
    for d in nn_dtypes() {
        for (shape, view) in [
            (vec![1], Contig),
            (vec![1023], Offset),
            (vec![33, 65], Transposed),
            (vec![4, 301], Broadcast),
            (vec![17, 1031], Narrowed),
        ] {
            let name = format!("sigmoid {} {}", dt(d), lname(&shape, view));
            let seed = seed_of(&name);
            cases.push(Case::new(
                "sigmoid",
                name,
                Support::Kernels(vec![kname("usigmoid", d)]),
                tol(d, Class::Transc),
                move |dev| ops::sigmoid(&input(dev, d, &shape, view, Gen::Uniform(-8., 8.), seed)?),
            ));
        }
    }
    // ---- composites models use
    for d in [DType::F32, DType::F16, DType::BF16] {
        let seed = seed_of(&format!("composites {}", dt(d)));
        let comps: Vec<(&str, fn(&Tensor) -> Result<Tensor>)> = vec![
            ("swiglu", ops::swiglu),
            ("leaky_relu 0.1", |x| ops::leaky_relu(x, 0.1)),
            ("silu", ops::silu),
            ("pixel_shuffle 2", |x| ops::pixel_shuffle(&x.reshape((2, 8, 3, 5))?, 2)),
            ("replication_pad2d 1", |x| ops::replication_pad2d(&x.reshape((2, 8, 3, 5))?, 1)),
        ];
        for (what, f) in comps {
            let name = format!("{what} {} [2, 120]", dt(d));
            cases.push(Case::new("nn composites", name, Support::Always, tol(d, Class::Transc), move |dev| {
                f(&input(dev, d, &[2, 120], Contig, g, seed)?)
            }));
        }
        let name = format!("kv_cache append x3 {}", dt(d));
        cases.push(Case::new("nn composites", name, Support::Always, Tol::Exact, move |dev| {
            let mut cache = candle_nn::kv_cache::KvCache::new(2, 16);
            let mut outs = vec![];
            for (i, t) in [3usize, 1, 4].into_iter().enumerate() {
                let kk = input(dev, d, &[1, 2, t, 8], Contig, g, seed + 10 + i as u64)?;
                let v = input(dev, d, &[1, 2, t, 8], Contig, g, seed + 20 + i as u64)?;
                let (ka, va) = cache.append(&kk, &v)?;
                outs.push(ka.flatten_all()?);
                outs.push(va.flatten_all()?);
            }
            Tensor::cat(&outs, 0)
        }));
    }
    // ---- moe_gemm (WMMA kernel): f16 / bf16, prefill and decode, with and without weights
    for d in [DType::F16, DType::BF16] {
        for (tokens, prefill) in [(5usize, false), (33, true), (5, true)] {
            for weighted in [false, true] {
                let (e, n, kk, topk) = (4usize, 64usize, 64usize, 2usize);
                let name = format!(
                    "moe_gemm {} experts ({e}, {n}, {kk}) {tokens} tokens top-{topk} {} {}",
                    dt(d),
                    if prefill { "prefill" } else { "decode" },
                    if weighted { "topk_weights" } else { "no weights" }
                );
                let seed = seed_of(&name);
                cases.push(Case::new(
                    "moe_gemm",
                    name,
                    if d == DType::F16 {
                        // Upstream's f16 output is wrong on CUDA too: an A/B run of the original
                        // moe_wmma.cu and the generated moe_wmma.hip on the H100 gave bit-identical
                        // outputs (hip-on-cuda/NVIDIA-FINDINGS.md, finding 5).
                        Support::UpstreamBug(
                            "candle-kernels src/moe/moe_utils.cuh:181 from_float(half&, float) does static_cast<half>(raw f16 bits), converting the bits as an integer value",
                        )
                    } else {
                        Support::Kernels(vec!["moe_gemm_wmma".into()])
                    },
                    tol(d, Class::Matmul(kk)),
                    move |dev| {
                        let m = tokens * topk;
                        let w = input(dev, d, &[e, n, kk], Contig, Gen::Uniform(-1., 1.), seed)?;
                        let x = input(
                            dev,
                            d,
                            &[if weighted { m } else { tokens }, kk],
                            Contig,
                            Gen::Uniform(-1., 1.),
                            seed + 1,
                        )?;
                        let tw =
                            tensor_from_values(&values(Gen::Uniform(0.1, 1.), m, seed + 2), &[m], DType::F32, dev)?;
                        let routing = moe_routing(tokens, topk, e, seed + 3);
                        if dev.is_cpu() {
                            let rows: Vec<u32> =
                                (0..m).map(|p| if weighted { p as u32 } else { (p / topk) as u32 }).collect();
                            moe_reference(&w, &x, &routing.expert_of_pair, &rows, weighted.then_some(&tw))?.to_dtype(d)
                        } else {
                            let sorted = Tensor::from_vec(routing.sorted_pairs.clone(), m, dev)?;
                            let experts = Tensor::from_vec(routing.sorted_experts.clone(), m, dev)?;
                            let tw = if weighted { Some(tw) } else { None };
                            candle_nn::moe::moe_gemm(&x, &w, &tw, &sorted, &experts, topk, prefill)
                        }
                    },
                ));
            }
        }
    }
    let _ = k;
    cases
}

fn dt(d: DType) -> &'static str {
    d.as_str()
}

fn lname(shape: &[usize], view: View) -> String {
    format!("{shape:?}/{view:?}")
}

/// Every candle-nn custom op with a `rocm_fwd` has cases (or an n/a entry with a reason).
#[test]
fn nn_coverage() {
    let k = CudaKernels::load();
    let cases = nn_cases(&k);
    let groups: BTreeSet<&str> = cases.iter().map(|c| c.method).collect();
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "duplicate case names");
    let mut problems = vec![];
    // impl candle::CustomOpN for X { ... fn rocm_fwd ... } in the generated candle-nn
    let mut with_rocm = BTreeSet::new();
    for file in [
        "ops.rs",
        "rotary_emb.rs",
        "moe.rs",
        "kv_cache.rs",
        "layer_norm.rs",
        "activation.rs",
        "embedding.rs",
        "linear.rs",
    ] {
        let src = std::fs::read_to_string(repo_path(&format!("generated/candle-nn/src/{file}"))).unwrap();
        let mut current: Option<String> = None;
        for line in src.lines() {
            let l = line.trim();
            if let Some(rest) = l.strip_prefix("impl candle::CustomOp") {
                let name = rest.split(" for ").nth(1).unwrap_or("").trim_end_matches(" {").trim().to_string();
                current = Some(name);
            }
            if l.starts_with("fn rocm_fwd") {
                match &current {
                    Some(c) => {
                        with_rocm.insert(c.clone());
                    }
                    None => {
                        with_rocm.insert(format!("{file}: free fn"));
                    }
                }
            }
            // a new top-level item (nested `impl Map1 for S` inside a *_fwd does not count)
            if (line.starts_with("impl") || line.starts_with("pub fn") || line.starts_with("fn "))
                && !line.starts_with("impl candle::CustomOp")
            {
                current = None;
            }
        }
    }
    for op in &with_rocm {
        if let Some(fname) = op.strip_suffix(": free fn") {
            // moe.rs: `fn rocm_fwd` nested in moe_gemm / moe_gemm_gguf
            if !ROCM_FNS.iter().any(|(f, _)| fname == "moe.rs" && (*f == "moe_gemm" || *f == "moe_gemm_gguf")) {
                problems.push(format!("{fname} has a free rocm_fwd not in ROCM_FNS"));
            }
            continue;
        }
        match CUSTOM_OPS.iter().find(|(o, _)| o == op) {
            Some((_, group)) if groups.contains(group) => {}
            Some((_, group)) => problems.push(format!("{op}: group {group} has no cases")),
            None if NN_NOT_APPLICABLE.iter().any(|(o, _)| o == op) => {}
            None => problems.push(format!("candle-nn custom op {op} has a rocm_fwd but no cases")),
        }
    }
    assert!(with_rocm.len() >= 7, "parser found only {with_rocm:?}");
    if !groups.contains("moe_gemm") {
        problems.push("moe_gemm has no cases".into());
    }
    let must_work = cases.iter().filter(|c| c.expected_to_work(&k)).count();
    println!(
        "nn coverage: custom ops with rocm_fwd {with_rocm:?}; {} cases ({must_work} the CUDA backend runs)",
        cases.len()
    );
    print_unsupported("nn coverage", &cases, &k);
    assert!(problems.is_empty(), "nn coverage:\n{}", problems.join("\n"));
}

#[test]
fn nn_ops_rocm_vs_cpu() {
    let Some(dev) = rocm_device("nn_ops_rocm_vs_cpu") else {
        return;
    };
    let k = CudaKernels::load();
    Report::run("rocm-vs-cpu (candle-nn)", &nn_cases(&k), &dev, &k).finish();
}

#[test]
fn nn_harness_cpu_vs_cpu() {
    let k = CudaKernels::load();
    let mut r = Report::new("nn harness (cpu vs cpu)");
    r.push_cpu_runs_agree(&nn_cases(&k), &k);
    // The fast CPU ops agree with their slow references within the tolerance the device gets.
    for c in nn_cases(&k).iter().filter(|c| {
        c.name.contains("vs cpu")
            && (c.name.contains("slow") || c.name.contains("composite"))
            && !c.name.contains(" f64 ")
    }) {
        let fast_name = c.name.clone();
        let status = match guarded(|| {
            // run the case's "device" side on the CPU too: that is the fast op
            let fast = with_fast(c)?;
            let slow = (c.run)(&Device::Cpu)?;
            Ok((fast, slow))
        }) {
            Ok((fast, slow)) => match compare(&fast, &slow, c.tol) {
                Ok(e) => Status::Pass(e),
                Err(m) => Status::Fail(format!("CPU fast op vs its reference: {m}")),
            },
            Err(e) => Status::Fail(e),
        };
        r.push("cpu fast vs reference", fast_name, status);
    }
    r.finish();
}

/// Runs the fast twin of a "vs cpu <reference>" case on the CPU (the case with the same
/// inputs whose CPU side is the fast op).
fn with_fast(c: &Case) -> Result<Tensor> {
    let k = CudaKernels::load();
    let stem = c.name.split(" vs cpu ").next().unwrap();
    let twin = nn_cases(&k)
        .into_iter()
        .find(|o| {
            o.name.starts_with(stem) && o.name != c.name && !o.name.contains("slow") && !o.name.contains("composite")
        })
        .ok_or_else(|| candle_core::Error::Msg(format!("no fast twin for {}", c.name)))?;
    (twin.run)(&Device::Cpu)
}
