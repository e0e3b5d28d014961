//! Candle's reduced-precision switch for f32 matmuls on ROCm:
//! `candle_core::rocm::set_gemm_reduced_precision_f32`, CUDA's TF32 (cuBLAS's
//! `CUBLAS_COMPUTE_32F_FAST_TF32`), becomes rocBLAS's XF32 math mode for those gemms
//! only. Where the platform takes XF32 (rocBLAS on CDNA3; cuBLAS's TF32 under
//! hip-on-cuda) the product carries a 10-bit-mantissa error; where it does not, the
//! product is the full-f32 one, bit for bit. Turning the switch off gives the full-f32
//! product again. Its own test binary: the switch is process-wide, and the other
//! suites' f32 matmuls must not see it. Without a ROCm device the test says it skipped.

mod common;

use candle_core::{Device, Result, Tensor};
use common::*;

#[test]
fn reduced_precision_f32_matmul_is_xf32_for_its_calls_only() -> Result<()> {
    let Some(dev) = rocm_device("reduced_precision_f32_matmul_is_xf32_for_its_calls_only") else { return Ok(()) };
    let (m, k, n) = (64, 512, 48);
    let a64 = values(Gen::Uniform(-1., 1.), m * k, seed_of("gemm_precision_a"));
    let b64 = values(Gen::Uniform(-1., 1.), k * n, seed_of("gemm_precision_b"));
    let a: Vec<f32> = a64.iter().map(|&x| x as f32).collect();
    let b: Vec<f32> = b64.iter().map(|&x| x as f32).collect();
    // the f64 product of the f32 inputs
    let reference: Vec<f64> =
        (0..m * n).map(|i| (0..k).map(|l| a[(i / n) * k + l] as f64 * b[l * n + i % n] as f64).sum()).collect();
    let (ta, tb) = (Tensor::from_vec(a, (m, k), &dev)?, Tensor::from_vec(b, (k, n), &dev)?);
    let product = || -> Result<Vec<f32>> { ta.matmul(&tb)?.to_device(&Device::Cpu)?.flatten_all()?.to_vec1() };
    let max_err = |c: &[f32]| c.iter().zip(&reference).map(|(&x, &r)| (x as f64 - r).abs()).fold(0., f64::max);

    assert!(!candle_core::rocm::gemm_reduced_precision_f32(), "the switch is off by default, as on CUDA");
    let full = product()?;
    candle_core::rocm::set_gemm_reduced_precision_f32(true);
    let reduced = product();
    candle_core::rocm::set_gemm_reduced_precision_f32(false);
    let reduced = reduced?;
    let again = product()?;

    let (e_full, e_reduced) = (max_err(&full), max_err(&reduced));
    let taken = reduced != full;
    println!("f32 matmul {m}x{k}x{n}: max |err| full {e_full:.2e}, reduced precision {e_reduced:.2e} (XF32 taken: {taken})");
    assert_eq!(again, full, "after the switch is off again, f32 matmuls are not the full-f32 ones");
    assert!(e_full < 1e-4, "full f32: max |err| {e_full}");
    if taken {
        assert!(e_reduced > 10. * e_full && e_reduced < 0.05, "XF32: max |err| {e_reduced} against full f32's {e_full}");
    }
    Ok(())
}
