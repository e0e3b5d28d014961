//! A Candle user's own GPU ops on ROCm (issue 26): two `CustomOp1`s whose `rocm_fwd`
//! launch this crate's own kernels (kernels/user_ops.cu, built by candle-rocm-build in
//! build.rs, loaded with `RocmDevice::get_or_load_custom_func`), each checked against its
//! `cpu_fwd`. Prints one line per case (TSV) and exits with 1 when any case is off.
//!
//! Usage: user-custom-op-check [DEVICE_ORDINAL]

use std::process::ExitCode;

use candle_core::backend::BackendStorage;
use candle_core::rocm_backend::candle_rocm_hip::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
use candle_core::rocm_backend::{RocmDType, WrapErr};
use candle_core::{CpuStorage, CustomOp1, DType, Device, Layout, Result, RocmStorage, Shape, Tensor};
use half::bf16;

mod rocm_kernels {
    include!(concat!(env!("OUT_DIR"), "/rocm_kernels.rs"));
}

/// y = x * sigmoid(alpha * x), f32 and bf16 (computed in f32).
struct Swish {
    alpha: f32,
}

fn swish(v: f32, alpha: f32) -> f32 {
    v / (1.0 + (-alpha * v).exp())
}

fn contiguous(layout: &Layout) -> Result<(usize, usize)> {
    layout.contiguous_offsets().ok_or_else(|| candle_core::Error::Msg("input has to be contiguous".into()))
}

impl CustomOp1 for Swish {
    fn name(&self) -> &'static str {
        "swish"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (o1, o2) = contiguous(layout)?;
        let out = match storage {
            CpuStorage::F32(x) => CpuStorage::F32(x[o1..o2].iter().map(|v| swish(*v, self.alpha)).collect()),
            CpuStorage::BF16(x) => CpuStorage::BF16(x[o1..o2].iter().map(|v| bf16::from_f32(swish(v.to_f32(), self.alpha))).collect()),
            other => candle_core::bail!("swish: f32 or bf16, not {:?}", other.dtype()),
        };
        Ok((out, layout.shape().clone()))
    }

    fn rocm_fwd(&self, storage: &RocmStorage, layout: &Layout) -> Result<(RocmStorage, Shape)> {
        let out = match storage.dtype() {
            DType::F32 => self.launch::<f32>("swish_f32", storage, layout)?,
            DType::BF16 => self.launch::<bf16>("swish_bf16", storage, layout)?,
            other => candle_core::bail!("swish: f32 or bf16, not {other:?}"),
        };
        Ok((out, layout.shape().clone()))
    }
}

impl Swish {
    /// `kernel` over the elements of type T: one thread each, 256 per block.
    fn launch<T: RocmDType + DeviceRepr>(&self, kernel: &str, storage: &RocmStorage, layout: &Layout) -> Result<RocmStorage> {
        let (o1, o2) = contiguous(layout)?;
        let n = (o2 - o1) as u32;
        let dev = storage.device().clone();
        let x = storage.as_rocm_slice::<T>()?.slice(o1..o2);
        let y = unsafe { dev.alloc::<T>(n as usize) }?;
        let func = dev.get_or_load_custom_func(kernel, "user_ops", rocm_kernels::USER_OPS)?;
        let cfg = LaunchConfig { grid_dim: (n.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut b = func.builder();
        b.arg(&x);
        b.arg(&y);
        candle_core::builder_arg!(b, self.alpha, n);
        unsafe { b.launch(cfg) }.w()?;
        Ok(RocmStorage::wrap_rocm_slice(y, dev))
    }
}

/// Each row divided by its root mean square (f32): one warp per row, a shuffle sum.
struct RmsRows {
    eps: f32,
}

impl CustomOp1 for RmsRows {
    fn name(&self) -> &'static str {
        "rms-rows"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (_, cols) = layout.shape().dims2()?;
        let (o1, o2) = contiguous(layout)?;
        let x = &storage.as_slice::<f32>()?[o1..o2];
        let mut y = Vec::with_capacity(x.len());
        for row in x.chunks(cols) {
            let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f32>() / cols as f32 + self.eps).sqrt();
            y.extend(row.iter().map(|v| v * inv));
        }
        Ok((CpuStorage::F32(y), layout.shape().clone()))
    }

    fn rocm_fwd(&self, storage: &RocmStorage, layout: &Layout) -> Result<(RocmStorage, Shape)> {
        let (rows, cols) = layout.shape().dims2()?;
        let (o1, o2) = contiguous(layout)?;
        let dev = storage.device().clone();
        let x = storage.as_rocm_slice::<f32>()?.slice(o1..o2);
        let y = unsafe { dev.alloc::<f32>(o2 - o1) }?;
        let func = dev.get_or_load_custom_func("rms_rows_f32", "user_ops", rocm_kernels::USER_OPS)?;
        // one 32-lane warp per row, as the kernel is written
        let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        let mut b = func.builder();
        b.arg(&x);
        b.arg(&y);
        let cols = cols as u32;
        candle_core::builder_arg!(b, cols, self.eps);
        unsafe { b.launch(cfg) }.w()?;
        Ok((RocmStorage::wrap_rocm_slice(y, dev), layout.shape().clone()))
    }
}

/// The largest |gpu - cpu| over |cpu| + 1 (a relative error that stays finite near 0).
fn worst(gpu: &Tensor, cpu: &Tensor) -> Result<f32> {
    let g = gpu.to_device(&Device::Cpu)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let c = cpu.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    Ok(g.iter().zip(&c).map(|(a, b)| (a - b).abs() / (b.abs() + 1.0)).fold(0.0, f32::max))
}

fn run(ordinal: usize) -> Result<bool> {
    let gpu = Device::new_rocm(ordinal)?;
    let values = |n: usize| (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect::<Vec<f32>>();
    println!("case\tdtype\tshape\tworst relative error\tbound\tok");
    let mut all = true;
    let mut case = |name: &str, x: Tensor, op: &dyn Fn(&Tensor) -> Result<Tensor>, bound: f32| -> Result<()> {
        let on_gpu = op(&x.to_device(&gpu)?)?;
        let on_cpu = op(&x)?;
        let err = worst(&on_gpu, &on_cpu)?;
        let ok = err <= bound;
        all &= ok;
        println!("{name}\t{:?}\t{:?}\t{err:.2e}\t{bound:.0e}\t{}", x.dtype(), x.dims(), if ok { "yes" } else { "no" });
        Ok(())
    };
    let swish = |t: &Tensor| t.apply_op1(Swish { alpha: 1.7 });
    let rms = |t: &Tensor| t.apply_op1(RmsRows { eps: 1e-5 });
    case("swish", Tensor::from_vec(values(10_007), 10_007, &Device::Cpu)?, &swish, 1e-6)?;
    // bf16: the same f32 math, one rounding to bf16 on each side
    case("swish", Tensor::from_vec(values(4_099), 4_099, &Device::Cpu)?.to_dtype(DType::BF16)?, &swish, 8e-3)?;
    case("rms_rows", Tensor::from_vec(values(37 * 300), (37, 300), &Device::Cpu)?, &rms, 1e-5)?;
    case("rms_rows", Tensor::from_vec(values(5 * 31), (5, 31), &Device::Cpu)?, &rms, 1e-5)?;
    Ok(all)
}

fn main() -> ExitCode {
    let ordinal = std::env::args().nth(1).map_or(0, |a| a.parse().unwrap_or(0));
    match run(ordinal) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("error: a case is off (column ok)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
