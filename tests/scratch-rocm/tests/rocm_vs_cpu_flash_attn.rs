//! candle-flash-attn on ROCm (generated/candle-flash-attn over candle-rocm's own
//! `run_mha`, kernels/candle_flash_attn.hip) against an f32 reference computed here on
//! the CPU with Candle's unfused attention (Q·Kᵀ, the score transform, the mask, softmax,
//! ·V), case by case: head dims 64 to 512, f16 and bf16, causal or not, sliding windows on
//! either side, alibi, softcap, GQA and MQA, seqlen_q != seqlen_k, lengths that are not a
//! multiple of any tile. Upstream's own tests (generated/candle-flash-attn/tests) cover
//! varlen and paged KV; these cover what they leave out (alibi, GQA, windows without
//! mm-prefix ranges). Without a ROCm device each test says it skipped.

mod common;

use candle_bench_fixtures::XorShift64Star;
use candle_core::{DType, Device, Result, Tensor, D};
use common::*;

/// One attention case: shapes (b, seqlen_q, seqlen_k, heads, kv heads, head dim) and options.
#[derive(Clone, Copy, Debug)]
struct Case {
    b: usize,
    sq: usize,
    sk: usize,
    h: usize,
    hk: usize,
    d: usize,
    dtype: DType,
    left: Option<usize>,
    right: Option<usize>,
    alibi: bool,
    softcap: Option<f32>,
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut r = XorShift64Star::new(seed);
    (0..n).map(|_| 2.0 * r.unit_f32() - 1.0).collect()
}

/// The window sizes run_mha receives, as candle-flash-attn's lib.rs makes them from the
/// options (None or beyond seqlen_k: -1; causal when only a right window of 0 is given;
/// one side given: the other is seqlen_k). Returns (causal, left, right).
fn windows(c: &Case) -> (bool, i64, i64) {
    let side = |w: Option<usize>| w.filter(|w| *w <= c.sk).map_or(-1, |w| w as i64);
    let (mut l, mut r) = (side(c.left), side(c.right));
    let causal = l < 0 && r == 0;
    if l < 0 && r >= 0 {
        l = c.sk as i64;
    }
    if l >= 0 && r < 0 {
        r = c.sk as i64;
    }
    (causal, l, r)
}

/// The f32 reference on the CPU: (b, sq, h, d).
fn reference(c: &Case, q: &Tensor, k: &Tensor, v: &Tensor, slopes: &[f32], scale: f32) -> Result<Tensor> {
    let group = c.h / c.hk;
    // (b, h, s, d), key/value heads repeated for their query heads
    let q = q.to_dtype(DType::F32)?.transpose(1, 2)?.contiguous()?;
    let heads = Tensor::from_vec((0..c.h as u32).map(|h| h / group as u32).collect::<Vec<_>>(), c.h, &Device::Cpu)?;
    let k = k.to_dtype(DType::F32)?.index_select(&heads, 2)?.transpose(1, 2)?.contiguous()?;
    let v = v.to_dtype(DType::F32)?.index_select(&heads, 2)?.transpose(1, 2)?.contiguous()?;
    let s = q.matmul(&k.t()?)?;
    let s = match c.softcap {
        Some(cap) => ((s * (scale / cap) as f64)?.tanh()? * cap as f64)?,
        None => (s * scale as f64)?,
    };
    // bias and mask per (head, i, j): alibi -slope*|i + off - j|, masked keys -inf
    let (causal, l, r) = windows(c);
    let off = c.sk as i64 - c.sq as i64;
    let mut bias = vec![0f32; c.h * c.sq * c.sk];
    for h in 0..c.h {
        for i in 0..c.sq {
            for j in 0..c.sk {
                let pos = i as i64 + off;
                let visible = if causal { j as i64 <= pos } else if l >= 0 || r >= 0 { j as i64 <= pos + r && j as i64 >= pos - l } else { true };
                let alibi = if c.alibi { -slopes[h] * (pos - j as i64).abs() as f32 } else { 0.0 };
                bias[(h * c.sq + i) * c.sk + j] = if visible { alibi } else { f32::NEG_INFINITY };
            }
        }
    }
    let bias = Tensor::from_vec(bias, (1, c.h, c.sq, c.sk), &Device::Cpu)?;
    let p = candle_nn::ops::softmax_last_dim(&s.broadcast_add(&bias)?)?;
    // rows with no visible key: 0, as run_mha gives them
    let p = p.eq(&p)?.where_cond(&p, &p.zeros_like()?)?;
    p.matmul(&v)?.transpose(1, 2)?.contiguous()
}

/// Max |ours - reference| over the case, and the bound for its dtype.
fn run_case(dev: &Device, c: &Case) -> Result<(f32, f32)> {
    let seed = seed_of(&format!("{c:?}"));
    let q = Tensor::from_vec(values(c.b * c.sq * c.h * c.d, seed), (c.b, c.sq, c.h, c.d), &Device::Cpu)?.to_dtype(c.dtype)?;
    let k = Tensor::from_vec(values(c.b * c.sk * c.hk * c.d, seed + 1), (c.b, c.sk, c.hk, c.d), &Device::Cpu)?.to_dtype(c.dtype)?;
    let v = Tensor::from_vec(values(c.b * c.sk * c.hk * c.d, seed + 2), (c.b, c.sk, c.hk, c.d), &Device::Cpu)?.to_dtype(c.dtype)?;
    let slopes: Vec<f32> = (0..c.h).map(|h| 2f32.powf(-8.0 * (h + 1) as f32 / c.h as f32)).collect();
    let scale = 1.0 / (c.d as f32).sqrt();
    let want = reference(c, &q, &k, &v, &slopes, scale)?;
    let alibi = Tensor::from_vec(slopes.clone(), c.h, dev)?;
    let got = candle_flash_attn::flash_attn_alibi_windowed_softcap(
        &q.to_device(dev)?,
        &k.to_device(dev)?,
        &v.to_device(dev)?,
        c.alibi.then_some(&alibi),
        scale,
        c.left,
        c.right,
        c.softcap.unwrap_or(0.0),
    )?;
    let err = (got.to_device(&Device::Cpu)?.to_dtype(DType::F32)? - want)?.abs()?.flatten_all()?.max(D::Minus1)?.to_scalar::<f32>()?;
    // the output is rounded to the dtype (|o| <= 1: half an ulp is 2.4e-4 in f16, 2e-3 in
    // bf16); 4x that, so a wrong mask, bias or scale fails (they move outputs by far more)
    let bound = if c.dtype == DType::BF16 { 8e-3 } else { 1e-3 };
    Ok((err, bound))
}

fn cases() -> Vec<Case> {
    let base = Case { b: 2, sq: 37, sk: 53, h: 8, hk: 2, d: 64, dtype: DType::F16, left: None, right: None, alibi: false, softcap: None };
    let mut cases = Vec::new();
    for d in [64, 96, 128, 256, 512] {
        for dtype in [DType::F16, DType::BF16] {
            cases.push(Case { d, dtype, ..base });
            cases.push(Case { d, dtype, right: Some(0), ..base });
        }
    }
    for dtype in [DType::F16, DType::BF16] {
        cases.push(Case { dtype, left: Some(8), right: Some(0), ..base });
        cases.push(Case { dtype, left: Some(5), right: Some(3), ..base });
        cases.push(Case { dtype, right: Some(4), ..base });
        cases.push(Case { dtype, alibi: true, ..base });
        cases.push(Case { dtype, alibi: true, right: Some(0), ..base });
        cases.push(Case { dtype, softcap: Some(5.0), ..base });
        cases.push(Case { dtype, alibi: true, softcap: Some(5.0), left: Some(16), right: Some(2), ..base });
        cases.push(Case { dtype, hk: 1, ..base });
        cases.push(Case { dtype, hk: 8, right: Some(0), ..base });
        // more queries than keys: the first rows see nothing when causal
        cases.push(Case { dtype, sq: 61, sk: 29, right: Some(0), ..base });
        cases.push(Case { dtype, sq: 1, sk: 300, ..base });
        cases.push(Case { dtype, b: 1, sq: 129, sk: 129, h: 4, hk: 4, d: 128, right: Some(0), ..base });
    }
    cases
}

#[test]
fn flash_attn_matches_the_f32_reference() -> Result<()> {
    let Some(dev) = rocm_device("flash_attn_matches_the_f32_reference") else { return Ok(()) };
    let mut failures = Vec::new();
    let cases = cases();
    for c in &cases {
        let (err, bound) = run_case(&dev, c)?;
        println!("{c:?}: max |err| {err:.2e} (bound {bound:.0e})");
        if !(err <= bound) {
            failures.push(format!("{c:?}: max |err| {err:.3e} > {bound:.0e}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
    Ok(())
}

#[test]
fn flash_attn_refuses_what_upstream_refuses() -> Result<()> {
    let Some(dev) = rocm_device("flash_attn_refuses_what_upstream_refuses") else { return Ok(()) };
    let t = |dims: (usize, usize, usize, usize), dtype: DType| Tensor::zeros(dims, dtype, &dev);
    let q = t((1, 4, 2, 64), DType::F16)?;
    let err = |r: Result<Tensor>| r.err().map(|e| e.to_string()).unwrap_or_default();
    let f32q = t((1, 4, 2, 64), DType::F32)?;
    assert!(err(candle_flash_attn::flash_attn(&f32q, &f32q, &f32q, 1.0, false)).contains("only supported for f16/bf16"));
    let odd = t((1, 4, 2, 60), DType::F16)?;
    assert!(err(candle_flash_attn::flash_attn(&odd, &odd, &odd, 1.0, false)).contains("multiple of 8"));
    let wide = t((1, 4, 2, 520), DType::F16)?;
    assert!(err(candle_flash_attn::flash_attn(&wide, &wide, &wide, 1.0, false)).contains("at most 512"));
    let k3 = t((1, 4, 3, 64), DType::F16)?;
    assert!(err(candle_flash_attn::flash_attn(&q, &k3, &k3, 1.0, false)).contains("must divide"));
    let kd = t((1, 4, 2, 32), DType::F16)?;
    assert!(err(candle_flash_attn::flash_attn(&q, &kd, &kd, 1.0, false)).contains("shape mismatch"));
    let slopes = Tensor::zeros(2, DType::F16, &dev)?;
    assert!(err(candle_flash_attn::flash_attn_alibi(&q, &q, &q, &slopes, 1.0, false)).contains("DType mismatch alibi_slopes"));
    Ok(())
}
