//! `user-ffi-rotary-check [DEVICE_ORDINAL]`: the fused rotary op on the GPU against the
//! same op on the CPU, for f32, f16 and bf16 and two shapes. Prints one TSV line per case
//! (case, dtype, shape, worst relative error, bound, ok); exit status 1 when any is off.
use std::process::ExitCode;

use candle::{DType, Device, Result, Tensor};

fn check(gpu: &Device, dtype: DType, (b, h, t, d): (usize, usize, usize, usize), bound: f32) -> Result<bool> {
    let cpu = Device::Cpu;
    let x = Tensor::randn(0f32, 1.0, (b, h, t, d), &cpu)?.to_dtype(dtype)?;
    let angles = Tensor::arange(0u32, (t * d / 2) as u32, &cpu)?.to_dtype(DType::F32)?.affine(0.01, 0.0)?.reshape((t, d / 2))?;
    let (cos, sin) = (angles.cos()?.to_dtype(dtype)?, angles.sin()?.to_dtype(dtype)?);
    let want = user_ffi_rotary::rotary(&x, &cos, &sin)?.to_dtype(DType::F32)?;
    let got = user_ffi_rotary::rotary(&x.to_device(gpu)?, &cos.to_device(gpu)?, &sin.to_device(gpu)?)?.to_device(&cpu)?.to_dtype(DType::F32)?;
    let scale = want.abs()?.max_all()?.to_scalar::<f32>()?.max(1e-6);
    let err = (got - &want)?.abs()?.max_all()?.to_scalar::<f32>()? / scale;
    let ok = err <= bound;
    println!("rotary\t{dtype:?}\t{b}x{h}x{t}x{d}\t{err:.3e}\t{bound:.0e}\t{}", if ok { "ok" } else { "OFF" });
    Ok(ok)
}

fn run() -> Result<bool> {
    let ordinal = std::env::args().nth(1).map_or(Ok(0), |a| a.parse::<usize>()).map_err(|e| candle::Error::Msg(format!("device ordinal: {e}")))?;
    let gpu = Device::new_cuda(ordinal)?;
    let mut all = true;
    for (dtype, bound) in [(DType::F32, 1e-5), (DType::F16, 1e-3), (DType::BF16, 1e-2)] {
        for shape in [(1, 4, 7, 64), (2, 8, 129, 128)] {
            all &= check(&gpu, dtype, shape, bound)?;
        }
    }
    Ok(all)
}

fn main() -> ExitCode {
    println!("case\tdtype\tshape\tworst_rel_err\tbound\tok");
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
