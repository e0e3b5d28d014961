//! The all-reduce (sum) of a row-parallel layer's partial outputs, as a Candle custom op over
//! the communicator: what candle-examples' llama_multiprocess does over NCCL, here over RCCL.
//! Each call is bracketed by two timing events on the communicator's stream: [`AllReduce::take_ms`]
//! gives the GPU time spent in the all-reduces so far (waiting for the other ranks included).

use candle_core::backend::BackendStorage;
use candle_core::rocm_backend::candle_rocm_hip::driver::{sys::CUevent_flags, HipEvent};
use candle_core::rocm_backend::candle_rocm_hip::nccl::safe::{Comm, ReduceOp};
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, RocmStorage, Shape};
use half::{bf16, f16};
use std::cell::RefCell;
use std::rc::Rc;

pub struct AllReduce {
    comm: Rc<Comm>,
    /// (start, end) events of each call since the last `take_ms`.
    events: RefCell<Vec<(HipEvent, HipEvent)>>,
}

impl AllReduce {
    pub fn new(comm: Rc<Comm>) -> Self {
        Self { comm, events: RefCell::new(Vec::new()) }
    }

    /// Milliseconds of GPU time between the events around each call since the last take
    /// (waits for those calls to finish).
    pub fn take_ms(&self) -> Result<f64> {
        let events = std::mem::take(&mut *self.events.borrow_mut());
        events.iter().try_fold(0f64, |ms, (a, b)| Ok(ms + a.elapsed_ms(b).map_err(|e| candle_core::Error::Msg(format!("all_reduce timing: {e:?}")))? as f64))
    }

    fn record(&self) -> Result<HipEvent> {
        self.comm.stream().record_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(|e| candle_core::Error::Msg(format!("all_reduce timing: {e:?}")))
    }
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
        let start = self.record()?;
        let out = match s.dtype() {
            DType::F32 => reduce::<f32>(&self.comm, s, l)?,
            DType::BF16 => reduce::<bf16>(&self.comm, s, l)?,
            DType::F16 => reduce::<f16>(&self.comm, s, l)?,
            dtype => candle_core::bail!("all-reduce: unsupported dtype {dtype:?}"),
        };
        let end = self.record()?;
        self.events.borrow_mut().push((start, end));
        Ok((out, l.shape().clone()))
    }
}
