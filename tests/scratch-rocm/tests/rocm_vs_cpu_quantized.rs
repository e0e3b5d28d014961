//! Quantized (GGUF) tensors on the ROCm device against the CPU: quantization bytes,
//! dequantize, embedding (get_rows), QMatMul through the fast mmvq path (batch <= 8),
//! the fast mmq path (larger batches) and the legacy dmmv / dequantize+gemm path
//! (`set_force_dmmv`), `indexed_moe_forward` and candle-nn's `moe_gemm_gguf`.
//!
//! The same quantized bytes are used on both sides (quantized once on the CPU, loaded on
//! the device the way a GGUF file is, `qtensor_from_ggml`). The CPU multiplies with
//! activations quantized to q8_0/q8_K, the GPU with q8_1 (or f16 for moe prefill), so
//! matmul outputs are compared relative to the output's largest magnitude.

mod common;

use candle_bench_fixtures::{load_quantized, GGML_BLOCK_TYPES};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor};
use common::*;
use std::collections::BTreeSet;

/// Every GgmlDType with cases: the float types, ggml's block types, Q8K.
fn quant_dtypes() -> Vec<GgmlDType> {
    [GgmlDType::F32, GgmlDType::F16, GgmlDType::BF16].into_iter().chain(GGML_BLOCK_TYPES).chain([GgmlDType::Q8K]).collect()
}

/// `GgmlDType`s without cases, and why.
const QUANT_NOT_APPLICABLE: &[(&str, &str)] = &[(
    "Q8_1",
    "activation format only: the backend quantizes activations to it; no weight is stored as Q8_1 and the CUDA backend has no Q8_1 matmul",
)];

/// The fast (mmvq / mmq) and legacy quantized kernels exist for these.
fn has_qmatmul(q: GgmlDType) -> bool {
    !matches!(q, GgmlDType::Q8K | GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16)
}

fn is_float_q(q: GgmlDType) -> bool {
    matches!(q, GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16)
}

/// "q4_0", "q2_k": the names of the fast launchers.
fn lower(q: GgmlDType) -> String {
    format!("{q:?}").to_lowercase().replace("k", "_k")
}

/// "q4_0", "q2_K": the names of the legacy kernels.
fn legacy(q: GgmlDType) -> String {
    lower(q).replace("_k", "_K")
}

fn weight_f32(n: usize, k: usize, seed: u64) -> Result<Tensor> {
    tensor_from_values(&values(Gen::Uniform(-1., 1.), n * k, seed), &[n, k], DType::F32, &Device::Cpu)
}

/// ggml_file.rs `qtensor_from_ggml` (upstream src/quantized/ggml_file.rs, same function)
/// has an arm for F32, F16, BF16, Q4_0..Q8_0 and Q2K..Q6K only: any other type, Q8K
/// included, ends in `_ => crate::bail!("quantized type {ggml_dtype:?} is not supported
/// yet")`, on every device (the CPU, CUDA and ROCm alike), before any backend code runs.
const GGML_LOADER_NO_Q8K: &str = "ggml_file.rs qtensor_from_ggml has no Q8K arm: \
     'quantized type Q8K is not supported yet' on every device (CPU, CUDA, ROCm)";

/// The weight quantized on the CPU, then (on a device) loaded from its raw bytes as a GGUF
/// loader does: both sides hold the same quantized bytes. Q8K cannot be loaded that way
/// (GGML_LOADER_NO_Q8K), so it is put on the device with `QTensor::quantize_onto`: the CPU
/// quantizer's bytes copied over (QRocmStorage::quantize_onto, = QCudaStorage's), the same
/// bytes again; its dequantize cases then reach the backend's Q8K kernels.
fn qweight(dev: &Device, q: GgmlDType, dims: &[usize], seed: u64) -> Result<QTensor> {
    let n: usize = dims[..dims.len() - 1].iter().product();
    let w = weight_f32(n, dims[dims.len() - 1], seed)?.reshape(dims)?;
    let qc = QTensor::quantize(&w, q)?;
    if dev.is_cpu() {
        Ok(qc)
    } else if q == GgmlDType::Q8K {
        QTensor::quantize_onto(&w, q, dev)
    } else {
        load_quantized(&qc, dev)
    }
}

#[cfg(feature = "rocm")]
fn force_dmmv(on: bool) {
    candle_core::quantized::rocm::set_force_dmmv(on)
}
#[cfg(not(feature = "rocm"))]
fn force_dmmv(_: bool) {}

/// `set_force_dmmv(true)` for the life of the guard, cleared on drop (also when the
/// forward panics: `guarded` catches it, and a flag left on would send every later
/// qmatmul case down the legacy path). FORCE_DMMV is process-global (quantized/rocm.rs,
/// like quantized/cuda.rs) and only QRocmStorage::fwd reads it, so only a case's *device*
/// run may set it: `quantized_harness_cpu_vs_cpu` runs the same cases on the CPU on
/// another thread of this test process while `quantized_rocm_vs_cpu` runs on the GPU, and
/// when the CPU runs toggled the flag too, fast-path f16/bf16 cases of the GPU run raced
/// into the f32-only legacy path and errored (the H100 run's 'dtype mismatch in matmul op'
/// for x [3], [5], [32] and 'expected F32, got F16' for x [1]).
struct ForceDmmv;
impl ForceDmmv {
    fn on() -> Self {
        force_dmmv(true);
        ForceDmmv
    }
}
impl Drop for ForceDmmv {
    fn drop(&mut self) {
        force_dmmv(false)
    }
}

/// The quant types `supports()` accepts in rocm_fast_mmvq.rs and rocm_fast_mmq.rs (=
/// upstream fast_mmvq.rs / fast_mmq.rs).
fn fast_supports(q: GgmlDType) -> bool {
    use GgmlDType::*;
    matches!(q, Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 | Q2K | Q3K | Q4K | Q5K | Q6K)
}

/// The path QRocmStorage::fwd (quantized/rocm.rs `fwd`, line for line upstream
/// quantized/cuda.rs QCudaStorage::fwd) takes for a contiguous input of `rows` rows
/// (b * m for rank 3) and `k` columns matching the weight, of an f32 / f16 / bf16 dtype.
#[derive(Clone, Copy, Debug, PartialEq)]
enum QmmPath {
    /// rocm_fast_mmvq::try_fwd: f32, f16 or bf16 activations, output in the input dtype.
    Mmvq,
    /// rocm_fast_mmq::try_fwd: f16/bf16 cast to f32 and the output cast back.
    Mmq,
    /// After both declined: `dequantize_matmul_vec` (`vec`) or `dequantize_matmul`.
    Fallback { vec: bool },
}

fn qmm_path(q: GgmlDType, rows: usize, k: usize, force: bool) -> QmmPath {
    // fwd: `if !FORCE_DMMV.load(..) { mmvq try_fwd; mmq try_fwd }`. Both try_fwd return
    // Ok(None) for: `!supports(w_dtype)`; an input dtype other than BF16/F16/F32; a shape
    // not [b, k] / [b, m, k]; `ncols != k`; b_size == 0; no `contiguous_offsets()`. Then
    // mmvq: `b_size > MMVQ_MAX_BATCH` (8); mmq: `k % qk != 0` (qk_for: 32 for Q4_0..Q8_0,
    // 256 for the K-quants). Neither looks at nrows. The cases here are contiguous, rank
    // 2/3, f32/f16/bf16, with k = the weight's k.
    if !force && fast_supports(q) && rows > 0 {
        if rows <= 8 {
            return QmmPath::Mmvq;
        }
        let qk = if matches!(q, GgmlDType::Q2K | GgmlDType::Q3K | GgmlDType::Q4K | GgmlDType::Q5K | GgmlDType::Q6K) {
            256
        } else {
            32
        };
        if k % qk == 0 {
            return QmmPath::Mmq;
        }
    }
    // fwd: `max_bm = if FORCE_DMMV { 1 } else { 8 }; use_vec_kernel = b * m <= max_bm`.
    QmmPath::Fallback { vec: rows <= if force { 1 } else { 8 } }
}

/// The fallback takes f32 activations only: quantized/rocm.rs `dequantize_matmul_vec`
/// starts with `rhs.as_rocm_slice::<f32>()?` (cuda.rs: `as_cuda_slice::<f32>()`), the
/// "unexpected dtype, expected: F32, got: F16" error; `dequantize_matmul` under FORCE_DMMV
/// multiplies the input with `self.dequantize(n * k)?` (f32) through `storage.matmul`,
/// which bails "dtype mismatch in matmul op" for f16/bf16 inputs (rocm_backend/mod.rs
/// matmul, = cuda_backend/mod.rs), and otherwise reads `as_rocm_slice::<f32>()` too.
const FALLBACK_F32_ONLY: &str = "quantized/rocm.rs fwd (= cuda.rs QCudaStorage::fwd): \
     fast_mmvq/fast_mmq skipped or declined, and dequantize_matmul_vec / dequantize_matmul \
     take f32 activations only";

/// Which kernels a qmatmul case needs, or why the CUDA backend errors too.
fn qmatmul_support(q: GgmlDType, xd: DType, rows: usize, k: usize, force: bool) -> Support {
    match qmm_path(q, rows, k, force) {
        QmmPath::Mmvq => Support::Kernels(vec![format!("launch_mmvq_gguf_{}_{}_plain", lower(q), xd.as_str())]),
        QmmPath::Mmq => Support::Kernels(vec![format!("launch_mmq_gguf_{}", lower(q))]),
        QmmPath::Fallback { .. } if xd != DType::F32 => Support::CudaErrors(FALLBACK_F32_ONLY),
        QmmPath::Fallback { vec: true } if force => {
            let kname = match q {
                GgmlDType::Q4_0 | GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1 | GgmlDType::Q8_0 => {
                    format!("dequantize_mul_mat_vec_{}_cuda", lower(q))
                }
                _ => format!("dequantize_mul_mat_vec_{}", lower(q)),
            };
            Support::Kernels(vec![kname])
        }
        QmmPath::Fallback { vec: false } if force => {
            Support::Kernels(vec![format!("dequantize_block_{}_f32", legacy(q))])
        }
        QmmPath::Fallback { .. } => panic!(
            "qmatmul {q:?} x [{rows}] {xd:?}: no case here takes the unforced fallback \
             (mul_mat_vec_via_q8_1 / mul_mat_via_q8_1): name its kernels if one is added"
        ),
    }
}

fn quant_cases(_k: &CudaKernels) -> Vec<Case> {
    let mut cases = vec![];
    // (n, k): n not a multiple of the mmq tiles, k a multiple of 256 (K-quants)
    let weights: [(usize, usize); 2] = [(72, 512), (257, 256)];
    for q in quant_dtypes() {
        let qn = format!("{q:?}");
        for (n, k) in weights {
            // ---- quantization bytes: on the device, onto the device, from raw GGUF bytes
            for how in ["QTensor::quantize on the device", "QTensor::quantize_onto", "qtensor_from_ggml"] {
                let name = format!("quantize {qn} ({n}, {k}) {how}");
                let seed = seed_of(&format!("w {qn} {n} {k}"));
                let support = if q == GgmlDType::Q8K && how == "qtensor_from_ggml" {
                    Support::CudaErrors(GGML_LOADER_NO_Q8K)
                } else {
                    Support::Always
                };
                cases.push(Case::new("quantize", name, support, Tol::Exact, move |dev| {
                    let w = weight_f32(n, k, seed)?;
                    let qt = if dev.is_cpu() {
                        QTensor::quantize(&w, q)?
                    } else {
                        match how {
                            "QTensor::quantize on the device" => QTensor::quantize(&w.to_device(dev)?, q)?,
                            "QTensor::quantize_onto" => QTensor::quantize_onto(&w, q, dev)?,
                            _ => load_quantized(&QTensor::quantize(&w, q)?, dev)?,
                        }
                    };
                    if !dev.is_cpu() && !qt.device().same_device(dev) {
                        candle_core::bail!("quantized tensor is on {:?}", qt.device().location())
                    }
                    let bytes = qt.data()?.to_vec();
                    let len = bytes.len();
                    Tensor::from_vec(bytes, len, &Device::Cpu)
                }));
            }
            // ---- dequantize (f32 and f16 kernels)
            let seed = seed_of(&format!("w {qn} {n} {k}"));
            let fast = !is_float_q(q);
            let s32 = if fast {
                Support::Kernels(vec![format!("dequantize_block_{}_f32", legacy(q))])
            } else {
                Support::Always
            };
            cases.push(Case::new(
                "dequantize",
                format!("dequantize {qn} ({n}, {k}) f32"),
                s32,
                Tol::Close { abs: 1e-6, rel: 1e-5 },
                move |dev| qweight(dev, q, &[n, k], seed)?.dequantize(dev),
            ));
            let s16 = if fast {
                Support::Kernels(vec![format!("dequantize_block_{}_f16", legacy(q))])
            } else {
                Support::CudaErrors("dequantize_f16 has kernels for block-quantized dtypes only")
            };
            cases.push(Case::new(
                "dequantize",
                format!("dequantize_f16 {qn} ({n}, {k})"),
                s16,
                tol(DType::F16, Class::Basic),
                move |dev| qweight(dev, q, &[n, k], seed)?.dequantize_f16(dev),
            ));
            // ---- embedding (get_rows)
            let support = match q {
                GgmlDType::Q8K => Support::CudaErrors("unsupported dtype for quantized embedding Q8K"),
                _ => Support::Kernels(vec![format!("get_rows_{}", legacy(q))]),
            };
            cases.push(Case::new(
                "embedding",
                format!("embedding {qn} ({n}, {k}) ids [0, 5, n-1, 5, 3, 1]"),
                support,
                Tol::Close { abs: 1e-6, rel: 1e-5 },
                move |dev| {
                    let ids = Tensor::new(&[0u32, 5, n as u32 - 1, 5, 3, 1], dev)?;
                    qweight(dev, q, &[n, k], seed)?.embedding(&ids)
                },
            ));
            // ---- QMatMul: batch <= 8 -> mmvq, larger -> mmq; f32, f16 and bf16 activations
            let batches: Vec<Vec<usize>> =
                vec![vec![1], vec![2], vec![3], vec![5], vec![8], vec![9], vec![32], vec![100], vec![2, 7]];
            let in_dtypes = if is_float_q(q) { vec![DType::F32] } else { vec![DType::F32, DType::F16, DType::BF16] };
            for b in &batches {
                for &xd in &in_dtypes {
                    let rows: usize = b.iter().product();
                    let name = format!("qmatmul {qn} w ({n}, {k}) x {b:?} {}", xd.as_str());
                    let xseed = seed_of(&name);
                    let support = if is_float_q(q) {
                        Support::Always // QMatMul dequantizes float weights: a plain gemm
                    } else if !has_qmatmul(q) {
                        Support::CudaErrors("unsupported dtype for quantized matmul Q8K")
                    } else {
                        // mmvq for <= 8 rows, mmq above (f16/bf16 included): no fallback
                        qmatmul_support(q, xd, rows, k, false)
                    };
                    let t = if xd == DType::F32 { Tol::RelToMax(0.02) } else { Tol::RelToMax(0.03) };
                    let b = b.clone();
                    cases.push(Case::new("qmatmul", name, support, t, move |dev| {
                        let mm = QMatMul::from_qtensor(qweight(dev, q, &[n, k], seed)?)?;
                        let xs: Vec<usize> = b.iter().copied().chain([k]).collect();
                        let x = input(dev, xd, &xs, View::Contig, Gen::Uniform(-1., 1.), xseed)?;
                        mm.forward(&x)
                    }));
                }
            }
            // ---- legacy path (set_force_dmmv): dmmv kernel for one row, dequantize + gemm
            // above; f32 only there, so f16/bf16 activations error (as on CUDA)
            if !is_float_q(q) {
                for rows in [1usize, 4] {
                    for xd in [DType::F32, DType::F16, DType::BF16] {
                        let name = format!("qmatmul legacy (force_dmmv) {qn} w ({n}, {k}) x [{rows}] {}", xd.as_str());
                        let xseed = seed_of(&name);
                        let support = if !has_qmatmul(q) {
                            Support::CudaErrors("unsupported dtype for quantized matmul Q8K")
                        } else {
                            qmatmul_support(q, xd, rows, k, true)
                        };
                        let t = if xd == DType::F32 { Tol::RelToMax(0.02) } else { Tol::RelToMax(0.03) };
                        cases.push(Case::new("qmatmul", name, support, t, move |dev| {
                            let mm = QMatMul::from_qtensor(qweight(dev, q, &[n, k], seed)?)?;
                            let x = input(dev, xd, &[rows, k], View::Contig, Gen::Uniform(-1., 1.), xseed)?;
                            if dev.is_cpu() {
                                // the CPU reference ignores FORCE_DMMV: leave it alone (ForceDmmv)
                                return mm.forward(&x);
                            }
                            let _force = ForceDmmv::on();
                            mm.forward(&x).and_then(|y| y.to_device(&Device::Cpu))
                        }));
                    }
                }
            }
        }
        // ---- indexed_moe_forward: experts (4, 64, 256), 3 tokens, top-2
        for input_dim1 in [1usize, 2] {
            let name = format!("indexed_moe_forward {qn} experts (4, 64, 256) x (3, {input_dim1}, 256) top-2");
            let seed = seed_of(&name);
            let support = match q {
                // Wrong on CUDA too: original and generated kernels gave identical outputs on
                // the H100 (hip-on-cuda/NVIDIA-FINDINGS.md, finding 5).
                GgmlDType::Q8_0 => Support::UpstreamBug(
                    "candle-kernels src/quantized.cu:4703 indexed_moe_forward divides the expert stride by QK_K (256) instead of qk (32 for Q8_0): experts other than 0 read expert 0's rows",
                ),
                GgmlDType::Q2K
                | GgmlDType::Q3K
                | GgmlDType::Q4K
                | GgmlDType::Q5K
                | GgmlDType::Q6K => {
                    Support::Kernels(vec![format!("indexed_moe_forward_{}_q8_1", lower(q).replace("_k", "k"))])
                }
                _ => Support::CudaErrors("indexed_moe_forward supports q8_0 and q2k..q6k only"),
            };
            cases.push(Case::new("indexed_moe_forward", name, support, Tol::RelToMax(0.02), move |dev| {
                let (e, n, k, batch, topk) = (4, 64, 256, 3, 2);
                let qw = qweight(dev, q, &[e, n, k], seed)?;
                let x = input(dev, DType::F32, &[batch, input_dim1, k], View::Contig, Gen::Uniform(-1., 1.), seed + 1)?;
                let routing = moe_routing(batch, topk, e, seed + 2);
                let ids = Tensor::from_vec(routing.expert_of_pair.clone(), (batch, topk), dev)?;
                if dev.is_cpu() {
                    // reference: dequantized experts, one matmul per (token, slot)
                    let rows: Vec<u32> =
                        (0..batch * topk).map(|p| if input_dim1 == 1 { (p / topk) as u32 } else { p as u32 }).collect();
                    let xr = x.reshape((batch * input_dim1, k))?;
                    moe_reference(&qw.dequantize(dev)?, &xr, &routing.expert_of_pair, &rows, None)?
                        .reshape((batch, topk, n))
                } else {
                    qw.indexed_moe_forward(&x, &ids)
                }
            }));
        }
        // ---- candle-nn moe_gemm_gguf: decode (f32, q8_1 activations) and prefill (f16/bf16)
        for (prefill, act) in [(false, DType::F32), (true, DType::F16), (true, DType::BF16)] {
            for weighted in [false, true] {
                let name = format!(
                    "moe_gemm_gguf {qn} experts (4, 64, 256) 5 tokens top-2 {} {}",
                    if prefill { format!("prefill {}", act.as_str()) } else { "decode".into() },
                    if weighted { "topk_weights" } else { "no weights" }
                );
                let seed = seed_of(&name);
                let support = match q {
                    GgmlDType::Q8_0
                    | GgmlDType::Q2K
                    | GgmlDType::Q3K
                    | GgmlDType::Q4K
                    | GgmlDType::Q5K
                    | GgmlDType::Q6K => Support::Kernels(vec![if prefill {
                        "moe_gemm_gguf_prefill".into()
                    } else {
                        "moe_gemm_gguf".into()
                    }]),
                    _ => Support::CudaErrors("moe_gemm_gguf only accepts q2k, q3k, q4k, q5k, q6k or q8_0 weights"),
                };
                let t = if prefill { Tol::RelToMax(0.03) } else { Tol::RelToMax(0.02) };
                cases.push(Case::new("moe_gemm_gguf (candle-nn)", name, support, t, move |dev| {
                    let (e, n, k, tokens, topk) = (4, 64, 256, 5, 2);
                    let qw = qweight(dev, q, &[e, n, k], seed)?;
                    let routing = moe_routing(tokens, topk, e, seed + 2);
                    let m = tokens * topk;
                    // weighted: one input row per (token, slot) pair, scaled output
                    let x_rows = if weighted { m } else { tokens };
                    let x = input(dev, DType::F32, &[x_rows, k], View::Contig, Gen::Uniform(-1., 1.), seed + 1)?;
                    let tw = values(Gen::Uniform(0.1, 1.0), m, seed + 3);
                    let tw = tensor_from_values(&tw, &[m], DType::F32, dev)?;
                    if dev.is_cpu() {
                        let rows: Vec<u32> =
                            (0..m).map(|p| if weighted { p as u32 } else { (p / topk) as u32 }).collect();
                        let x = if prefill { x.to_dtype(act)?.to_dtype(DType::F32)? } else { x };
                        moe_reference(&qw.dequantize(dev)?, &x, &routing.expert_of_pair, &rows, weighted.then_some(&tw))
                    } else {
                        let sorted = Tensor::from_vec(routing.sorted_pairs.clone(), m, dev)?;
                        let experts = Tensor::from_vec(routing.sorted_experts.clone(), m, dev)?;
                        let tw = if weighted { Some(tw) } else { None };
                        candle_nn::moe::moe_gemm_gguf(&x, &qw, &tw, &sorted, &experts, topk, prefill, act)
                    }
                }));
            }
        }
    }
    cases
}

#[test]
fn quantized_coverage() {
    let src = std::fs::read_to_string(repo_path("generated/candle-core/src/quantized/mod.rs")).unwrap();
    let variants = enum_variants(&src, "GgmlDType");
    let ours: BTreeSet<String> = quant_dtypes().iter().map(|q| format!("{q:?}")).collect();
    let na: BTreeSet<String> = QUANT_NOT_APPLICABLE.iter().map(|(q, _)| q.to_string()).collect();
    let missing: Vec<&String> = variants.iter().filter(|v| !ours.contains(*v) && !na.contains(*v)).collect();
    assert!(variants.len() >= 14, "parser found {variants:?}");
    let k = CudaKernels::load();
    let cases = quant_cases(&k);
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "duplicate case names");
    let must_work = cases.iter().filter(|c| c.expected_to_work(&k)).count();
    println!(
        "quantized coverage: {} GgmlDTypes with cases, {} n/a, {} cases ({must_work} the CUDA backend runs)",
        ours.len(),
        na.len(),
        cases.len()
    );
    print_unsupported("quantized coverage", &cases, &k);
    assert!(missing.is_empty(), "GgmlDType variants without cases or n/a entry: {missing:?}");
}

#[test]
fn quantized_rocm_vs_cpu() {
    let Some(dev) = rocm_device("quantized_rocm_vs_cpu") else {
        return;
    };
    let k = CudaKernels::load();
    // One test, sequential: the force-dmmv switch is process-global.
    Report::run("rocm-vs-cpu (quantized)", &quant_cases(&k), &dev, &k).finish();
}

/// The CPU side of every case (references, deterministic inputs) runs, and runs the same twice.
#[test]
fn quantized_harness_cpu_vs_cpu() {
    let k = CudaKernels::load();
    let mut r = Report::new("quantized harness (cpu vs cpu)");
    r.push_cpu_runs_agree(&quant_cases(&k), &k);
    // The quantized outputs are close to the dequantized-weight product (sanity of the
    // RelToMax tolerances: the CPU's own activation quantization stays well inside them).
    for q in quant_dtypes().into_iter().filter(|&q| has_qmatmul(q)) {
        for xd in [DType::F32, DType::F16, DType::BF16] {
            let res = (|| -> Result<f64> {
                let qw = qweight(&Device::Cpu, q, &[72, 512], 11)?;
                let x = input(&Device::Cpu, xd, &[9, 512], View::Contig, Gen::Uniform(-1., 1.), 12)?;
                let want = host_values(&x.to_dtype(DType::F32)?.matmul(&qw.dequantize(&Device::Cpu)?.t()?)?)?;
                let got = host_values(&QMatMul::from_qtensor(qw)?.forward(&x)?)?;
                let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
                Ok(got.iter().zip(&want).fold(0f64, |m, (g, w)| m.max((g - w).abs())) / scale)
            })();
            r.check(
                "qmatmul",
                format!("cpu qmatmul {q:?} x {} vs dequantized product", xd.as_str()),
                match res {
                    Ok(f) if f < 0.01 => {
                        println!(
                            "  cpu qmatmul {q:?} x {}: max |err| {:.2}% of max |out| (device tolerance 2-3%)",
                            xd.as_str(),
                            100.0 * f
                        );
                        Ok(())
                    }
                    Ok(f) => Err(format!("{:.2}% of max |out|, more than 1%", 100.0 * f)),
                    Err(e) => Err(e.to_string()),
                },
            );
        }
    }
    r.finish();
}

/// The shared fixtures (bench/fixtures) give the streams the benchmarks' result files were
/// made with: the f32 bits of the first draws of bench/backend's uniform generator (seed 51)
/// and bench/numerics' normal one (seed 17), as they were before the fixtures were shared,
/// and the seeds of case names as these tests have always drawn them.
#[test]
fn fixture_streams_are_those_the_results_were_made_with() {
    use candle_bench_fixtures::XorShift64Star;
    let mut r = XorShift64Star::new(51);
    let got: Vec<u32> = (0..4).map(|_| r.unit_f32().to_bits()).collect();
    assert_eq!(got, [1052760224, 1057740083, 1043364680, 1057394879]);
    let mut r = XorShift64Star::new(17);
    let got: Vec<u32> = (0..4).map(|_| r.normal().to_bits()).collect();
    assert_eq!(got, [3206910960, 1029267186, 1073529191, 1057299419]);
    assert_eq!(seed_of(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(seed_of("a"), 0xaf63_dc4c_8601_ec8c);
}
