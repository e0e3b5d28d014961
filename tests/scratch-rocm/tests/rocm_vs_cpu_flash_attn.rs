//! candle-flash-attn on ROCm (generated/candle-flash-attn over candle-rocm's own
//! `run_mha`, kernels/candle_flash_attn.hip) against an f32 reference computed on the CPU
//! with Candle's unfused attention, case by case (the cases and the reference:
//! candle-bench-fixtures' `attention`, which bench/flash-attn also compares Dao's kernels
//! with): head dims 64 to 512, f16 and bf16, causal or not, sliding windows on either side,
//! alibi, softcap, GQA and MQA, seqlen_q != seqlen_k, lengths that are not a multiple of
//! any tile, packed sequences of differing lengths, paged K/V with a shuffled block table,
//! and one query row over thousands of keys (the split-KV path). Without a ROCm device each
//! test says it skipped.

mod common;

use candle_bench_fixtures::attention::{cases, max_error};
use candle_core::{DType, Result, Tensor};
use common::*;

#[test]
fn flash_attn_matches_the_f32_reference() -> Result<()> {
    let Some(dev) = rocm_device("flash_attn_matches_the_f32_reference") else { return Ok(()) };
    let mut failures = Vec::new();
    let cases = cases();
    for c in &cases {
        let (err, bound) = (max_error(c, &dev)?, c.bound());
        println!("{}: max |err| {err:.2e} (bound {bound:.0e})", c.name());
        if !(err <= bound) {
            failures.push(format!("{}: max |err| {err:.3e} > {bound:.0e}", c.name()));
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
