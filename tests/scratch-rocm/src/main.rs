//! Runs a softmax and a rotary embedding on the first ROCm device when the
//! `rocm` feature is on and a device is present, else on the CPU, and says
//! which.

use anyhow::Result;
use candle_core::{DType, Device, Tensor, D};

fn device() -> Device {
    #[cfg(feature = "rocm")]
    match Device::new_rocm(0) {
        Ok(d) => return d,
        Err(e) => println!("no ROCm device ({e}): running on the CPU"),
    }
    Device::Cpu
}

fn main() -> Result<()> {
    let device = device();
    println!("device: {:?}", device.location());
    let xs = Tensor::arange(0f32, 24., &device)?.reshape((2, 3, 4))?;
    let sm = candle_nn::ops::softmax_last_dim(&xs)?;
    let sums = sm.sum(D::Minus1)?.flatten_all()?.to_vec1::<f32>()?;
    anyhow::ensure!(sums.iter().all(|s| (s - 1.0).abs() < 1e-5), "softmax rows do not sum to 1: {sums:?}");
    let (b, h, t, d) = (1, 2, 5, 8);
    let q = Tensor::randn(0f32, 1., (b, h, t, d), &device)?;
    let cos = Tensor::randn(0f32, 1., (t, d / 2), &device)?;
    let sin = Tensor::randn(0f32, 1., (t, d / 2), &device)?;
    let fast = candle_nn::rotary_emb::rope(&q, &cos, &sin)?;
    let slow = candle_nn::rotary_emb::rope_slow(&q, &cos, &sin)?;
    let diff = (fast - slow)?.abs()?.max_all()?.to_dtype(DType::F32)?.to_scalar::<f32>()?;
    anyhow::ensure!(diff < 1e-5, "rope differs from rope_slow by {diff}");
    // candle-transformers resolves against the patched crates
    let _ = candle_transformers::models::with_tracing::linear_no_bias;
    println!("softmax_last_dim and rope agree with their references (max rope difference {diff:e})");
    Ok(())
}
