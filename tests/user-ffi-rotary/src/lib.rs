//! A fused rotary embedding for Candle: `rotary(x, cos, sin)`, x (b, h, t, d) contiguous,
//! cos and sin (t, d/2), f32, f16 or bf16. On the GPU one kernel launched through this
//! crate's `extern "C"` launchers; on the CPU the same formula.
mod ffi;

use candle::backend::BackendStorage;
use candle::cuda_backend::cudarc::driver::{DevicePtr, DevicePtrMut};
use candle::{CpuStorage, DType, Layout, Result, Shape, Tensor};
use half::{bf16, f16};

struct Rotary;

/// (b*h, t, d) of x, after checking the shapes and that the inputs are contiguous.
fn dims(x_l: &Layout, cos_l: &Layout, sin_l: &Layout) -> Result<(usize, usize, usize)> {
    let (b, h, t, d) = x_l.shape().dims4()?;
    if d % 2 != 0 {
        candle::bail!("rotary: the last dim of x must be even (got {d})")
    }
    for (what, l) in [("cos", cos_l), ("sin", sin_l)] {
        if l.shape().dims2()? != (t, d / 2) {
            candle::bail!("rotary: {what} must be ({t}, {}), got {:?}", d / 2, l.shape())
        }
    }
    for (what, l) in [("x", x_l), ("cos", cos_l), ("sin", sin_l)] {
        if !l.is_contiguous() {
            candle::bail!("rotary: {what} must be contiguous")
        }
    }
    Ok((b * h, t, d))
}

fn rotary_cpu<T: Copy>(x: &[T], cos: &[T], sin: &[T], (bh, t, d): (usize, usize, usize), to: impl Fn(T) -> f32, from: impl Fn(f32) -> T) -> Vec<T> {
    let half_d = d / 2;
    let mut out = x.to_vec();
    for row in 0..bh * t {
        let pos = row % t;
        for i in 0..half_d {
            let (c, s) = (to(cos[pos * half_d + i]), to(sin[pos * half_d + i]));
            let (x1, x2) = (to(x[row * d + i]), to(x[row * d + i + half_d]));
            out[row * d + i] = from(x1 * c - x2 * s);
            out[row * d + i + half_d] = from(x1 * s + x2 * c);
        }
    }
    out
}

impl Rotary {
    fn cuda_fwd_t<T: candle::cuda_backend::CudaDType + candle::cuda_backend::cudarc::driver::DeviceRepr>(
        &self,
        launcher: ffi::Launcher,
        x: &candle::CudaStorage,
        x_l: &Layout,
        cos: &candle::CudaStorage,
        cos_l: &Layout,
        sin: &candle::CudaStorage,
        sin_l: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        let (bh, t, d) = dims(x_l, cos_l, sin_l)?;
        let dev = x.device();
        let x = x.as_cuda_slice::<T>()?.slice(x_l.start_offset()..);
        let cos = cos.as_cuda_slice::<T>()?.slice(cos_l.start_offset()..);
        let sin = sin.as_cuda_slice::<T>()?.slice(sin_l.start_offset()..);
        let mut dst = unsafe { dev.alloc::<T>(bh * t * d)? };
        let stream = dev.cuda_stream();
        let status = unsafe {
            let (x_ptr, _guard) = x.device_ptr(&stream);
            let (cos_ptr, _guard) = cos.device_ptr(&stream);
            let (sin_ptr, _guard) = sin.device_ptr(&stream);
            let (dst_ptr, _guard) = dst.device_ptr_mut(&stream);
            launcher(
                x_ptr as *const core::ffi::c_void,
                cos_ptr as *const core::ffi::c_void,
                sin_ptr as *const core::ffi::c_void,
                dst_ptr as *mut core::ffi::c_void,
                bh as u32,
                t as u32,
                d as u32,
                stream.cu_stream() as *mut core::ffi::c_void,
            )
        };
        if status != 0 {
            candle::bail!("rotary: the kernel launch failed with error {status}")
        }
        let dst = candle::CudaStorage::wrap_cuda_slice(dst, dev.clone());
        Ok((dst, x_l.shape().clone()))
    }
}

impl candle::CustomOp3 for Rotary {
    fn name(&self) -> &'static str {
        "user-ffi-rotary"
    }

    fn cpu_fwd(&self, x: &CpuStorage, x_l: &Layout, cos: &CpuStorage, cos_l: &Layout, sin: &CpuStorage, sin_l: &Layout) -> Result<(CpuStorage, Shape)> {
        let dims = dims(x_l, cos_l, sin_l)?;
        let (ox, oc, os) = (x_l.start_offset(), cos_l.start_offset(), sin_l.start_offset());
        let out = match (x, cos, sin) {
            (CpuStorage::F32(x), CpuStorage::F32(c), CpuStorage::F32(s)) => CpuStorage::F32(rotary_cpu(&x[ox..], &c[oc..], &s[os..], dims, |v| v, |v| v)),
            (CpuStorage::F16(x), CpuStorage::F16(c), CpuStorage::F16(s)) => CpuStorage::F16(rotary_cpu(&x[ox..], &c[oc..], &s[os..], dims, f16::to_f32, f16::from_f32)),
            (CpuStorage::BF16(x), CpuStorage::BF16(c), CpuStorage::BF16(s)) => CpuStorage::BF16(rotary_cpu(&x[ox..], &c[oc..], &s[os..], dims, bf16::to_f32, bf16::from_f32)),
            _ => candle::bail!("rotary: x, cos and sin of one dtype, f32, f16 or bf16"),
        };
        Ok((out, x_l.shape().clone()))
    }

    fn cuda_fwd(&self, x: &candle::CudaStorage, x_l: &Layout, cos: &candle::CudaStorage, cos_l: &Layout, sin: &candle::CudaStorage, sin_l: &Layout) -> Result<(candle::CudaStorage, Shape)> {
        if cos.dtype() != x.dtype() || sin.dtype() != x.dtype() {
            candle::bail!("rotary: x, cos and sin of one dtype")
        }
        match x.dtype() {
            DType::F32 => self.cuda_fwd_t::<f32>(ffi::run_rotary_f32, x, x_l, cos, cos_l, sin, sin_l),
            DType::F16 => self.cuda_fwd_t::<f16>(ffi::run_rotary_f16, x, x_l, cos, cos_l, sin, sin_l),
            DType::BF16 => self.cuda_fwd_t::<bf16>(ffi::run_rotary_bf16, x, x_l, cos, cos_l, sin, sin_l),
            other => candle::bail!("rotary: f32, f16 or bf16, not {other:?}"),
        }
    }
}

/// The rotary embedding of `x` (b, h, t, d) with `cos` and `sin` (t, d/2).
pub fn rotary(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    x.apply_op3_no_bwd(cos, sin, &Rotary)
}
