//! `qmatmul`: how far each quantized matmul path is from the exact product.
//!
//! For every GGUF type the GPU kernels handle and several activation row counts (1-8 rows:
//! candle's matrix-vector kernels, MMVQ; more than 8: the tiled MMQ kernels), it quantizes
//! made-up weights on the CPU, gives the very same blocks to the GPU, and compares
//! `QMatMul::forward` on the GPU and on the CPU with three references computed here in f64
//! from the dequantized weights:
//!
//! * `exact`: the f32 activations as they are;
//! * `q8f`: the activations quantized to 8 bits per block of 32 with a float scale
//!   (`d = amax/127`, `q = round(x/d)`), what ggml's MMQ quantization gives with its
//!   float-scale layout (`D4`);
//! * `q8h`: the same with the scale rounded to f16, what `block_q8_1` (MMVQ, and MMQ's
//!   `DS4` layout) and the CPU's `block_q8_0` store.
//!
//! A path that is right lands at float-rounding distance (NMSE about 1e-12 or less) from the
//! reference that models its own quantization, and at quantization distance from the others.
//! NMSE is ggml's test-backend-ops measure: sum((y - ref)^2) / sum(ref^2).
//!
//! Prints a TSV: `backend dtype rows path vs_exact vs_q8f vs_q8h maxrel_exact cpu_vs_exact
//! gpu_vs_cpu` (NMSE values; maxrel = max|y - ref| / max|ref|).

use crate::BACKEND;
use candle_bench_fixtures::{load_quantized, XorShift64Star, GGML_BLOCK_TYPES};
use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};

/// Inner dimension and output columns: a multiple of every block size (256), as a
/// transformer's projections are.
const K: usize = 1024;
const N: usize = 512;
const ROWS: &[usize] = &[1, 4, 8, 9, 12, 32, 128];

fn normals(n: usize, scale: f32, seed: u64) -> Vec<f32> {
    let mut r = XorShift64Star::new(seed);
    (0..n).map(|_| scale * r.normal()).collect()
}

/// Activations quantized per block of 32 as ggml does (`d = amax/127`, `q = round(x/d)`),
/// then dequantized; `half_scale` rounds `d` to f16 first, as `block_q8_1`'s `ds` stores it.
fn q8_blocks(x: &[f32], half_scale: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for block in x.chunks(32) {
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let stored = if half_scale { half::f16::from_f32(d).to_f32() } else { d };
        for &v in block {
            let q = if amax == 0.0 { 0.0 } else { (v / d).round() };
            out.push(q as f64 * stored as f64);
        }
    }
    out
}

/// `x (rows, K) @ w^T` with `w (N, K)`, in f64.
fn matmul_f64(x: &[f64], w: &[f32], rows: usize) -> Vec<f64> {
    let mut y = vec![0f64; rows * N];
    for r in 0..rows {
        let xr = &x[r * K..(r + 1) * K];
        for n in 0..N {
            let wn = &w[n * K..(n + 1) * K];
            y[r * N + n] = xr.iter().zip(wn).map(|(a, b)| a * *b as f64).sum();
        }
    }
    y
}

fn nmse(y: &[f32], reference: &[f64]) -> f64 {
    let num: f64 = y.iter().zip(reference).map(|(a, b)| (*a as f64 - b).powi(2)).sum();
    let den: f64 = reference.iter().map(|b| b * b).sum();
    num / den
}

fn maxrel(y: &[f32], reference: &[f64]) -> f64 {
    let err = y.iter().zip(reference).fold(0f64, |m, (a, b)| m.max((*a as f64 - b).abs()));
    err / reference.iter().fold(0f64, |m, b| m.max(b.abs()))
}

pub fn run(gpu: Option<&Device>) -> Result<()> {
    println!("backend\tdtype\trows\tpath\tvs_exact\tvs_q8f\tvs_q8h\tmaxrel_exact\tcpu_vs_exact\tgpu_vs_cpu");
    for (ti, dtype) in GGML_BLOCK_TYPES.into_iter().enumerate() {
        // weights with the spread of a trained projection: N(0, 1/sqrt(K))
        let w = Tensor::from_vec(normals(N * K, 1.0 / (K as f32).sqrt(), 17 + ti as u64), (N, K), &Device::Cpu)?;
        let q_cpu = QTensor::quantize(&w, dtype)?;
        let w_deq: Vec<f32> = q_cpu.dequantize(&Device::Cpu)?.flatten_all()?.to_vec1()?;
        let gpu_mm = match gpu {
            Some(dev) => Some(QMatMul::from_qtensor(load_quantized(&q_cpu, dev)?)?),
            None => None,
        };
        let cpu_mm = QMatMul::from_qtensor(q_cpu)?;
        for &rows in ROWS {
            let x = normals(rows * K, 1.0, 1000 + rows as u64);
            let exact = matmul_f64(&x.iter().map(|v| *v as f64).collect::<Vec<_>>(), &w_deq, rows);
            let q8f = matmul_f64(&q8_blocks(&x, false), &w_deq, rows);
            let q8h = matmul_f64(&q8_blocks(&x, true), &w_deq, rows);
            let xt = Tensor::from_vec(x, (rows, K), &Device::Cpu)?;
            let y_cpu: Vec<f32> = cpu_mm.forward(&xt)?.flatten_all()?.to_vec1()?;
            let y_cpu64: Vec<f64> = y_cpu.iter().map(|v| *v as f64).collect();
            let line = |backend: &str, path: &str, y: &[f32], vs_cpu: String| {
                println!(
                    "{backend}\t{dtype:?}\t{rows}\t{path}\t{:.3e}\t{:.3e}\t{:.3e}\t{:.3e}\t{:.3e}\t{vs_cpu}",
                    nmse(y, &exact),
                    nmse(y, &q8f),
                    nmse(y, &q8h),
                    maxrel(y, &exact),
                    nmse(&y_cpu, &exact),
                )
            };
            line("cpu", "cpu", &y_cpu, "0".into());
            if let (Some(dev), Some(mm)) = (gpu, &gpu_mm) {
                let y: Vec<f32> = mm.forward(&xt.to_device(dev)?)?.flatten_all()?.to_vec1()?;
                let path = if rows <= 8 { "mmvq" } else { "mmq" };
                line(BACKEND, path, &y, format!("{:.3e}", nmse(&y, &y_cpu64)));
            }
        }
    }
    Ok(())
}

