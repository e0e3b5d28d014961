//! The all-reduce (sum) of a row-parallel layer's partial outputs, as a Candle custom op over
//! the communicator: what candle-examples' llama_multiprocess does over NCCL, here over RCCL.

use candle_core::backend::BackendStorage;
use candle_core::rocm_backend::candle_rocm_hip::nccl::safe::{Comm, ReduceOp};
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, RocmStorage, Shape};
use half::{bf16, f16};
use std::rc::Rc;

pub struct AllReduce {
    pub comm: Rc<Comm>,
}

// Candle's custom ops must be Send + Sync; the communicator is used by one thread only
// (one process per GPU, as in upstream's example).
unsafe impl Sync for AllReduce {}
unsafe impl Send for AllReduce {}

fn reduce<T: element::Reducible>(comm: &Comm, s: &RocmStorage, l: &Layout) -> Result<RocmStorage> {
    let src = s.as_rocm_slice::<T>()?;
    let src = match l.contiguous_offsets() {
        Some((0, n)) if n == src.len() => src,
        _ => candle_core::bail!("all_reduce: the input has to be contiguous from offset 0"),
    };
    let dev = s.device().clone();
    let mut dst = unsafe { dev.alloc::<T>(l.shape().elem_count()) }?;
    comm.all_reduce(src, &mut dst, &ReduceOp::Sum).map_err(|e| candle_core::Error::Msg(format!("all_reduce: {e}")))?;
    Ok(RocmStorage::wrap_rocm_slice(dst, dev))
}

/// The element types an all-reduce runs on: RCCL's and Candle's.
mod element {
    use candle_core::rocm_backend::candle_rocm_hip::nccl::safe::NcclType;
    use candle_core::rocm_backend::RocmDType;
    pub trait Reducible: NcclType + RocmDType + candle_core::rocm_backend::candle_rocm_hip::driver::DeviceRepr {}
    impl<T: NcclType + RocmDType + candle_core::rocm_backend::candle_rocm_hip::driver::DeviceRepr> Reducible for T {}
}

impl CustomOp1 for AllReduce {
    fn name(&self) -> &'static str {
        "all-reduce"
    }

    fn cpu_fwd(&self, _s: &CpuStorage, _l: &Layout) -> Result<(CpuStorage, Shape)> {
        candle_core::bail!("all-reduce runs on a ROCm device only")
    }

    fn rocm_fwd(&self, s: &RocmStorage, l: &Layout) -> Result<(RocmStorage, Shape)> {
        let out = match s.dtype() {
            DType::F32 => reduce::<f32>(&self.comm, s, l)?,
            DType::BF16 => reduce::<bf16>(&self.comm, s, l)?,
            DType::F16 => reduce::<f16>(&self.comm, s, l)?,
            dtype => candle_core::bail!("all-reduce: unsupported dtype {dtype:?}"),
        };
        Ok((out, l.shape().clone()))
    }
}
