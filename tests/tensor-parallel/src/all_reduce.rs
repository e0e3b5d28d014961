//! The all-reduce (sum) of a row-parallel layer's partial outputs, as a Candle custom op over
//! the communicator: what candle-examples' llama_multiprocess does over NCCL, here over RCCL.
//! Each call is bracketed by two timing events on the communicator's stream and timed on the
//! host: [`AllReduce::take`] gives the GPU time spent in the all-reduces so far (waiting for
//! the other ranks included) and the host time spent in the calls.

use candle_core::backend::BackendStorage;
use candle_core::rocm_backend::candle_rocm_hip::driver::{sys::CUevent_flags, HipEvent};
use candle_core::rocm_backend::candle_rocm_hip::nccl::safe::{Comm, ReduceOp};
use candle_core::{CpuStorage, CustomOp1, DType, Layout, Result, RocmStorage, Shape};
use half::{bf16, f16};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

pub struct AllReduce {
    comm: Rc<Comm>,
    /// (start, end) events of each call since the last `take`.
    events: RefCell<Vec<(HipEvent, HipEvent)>>,
    /// Host time inside the calls since the last `take`.
    host: Cell<Duration>,
}

/// Time spent in all-reduces, in ms.
#[derive(Clone, Copy, Default)]
pub struct Spent {
    /// GPU time between the events around each call.
    pub gpu_ms: f64,
    /// Host time inside the calls (enqueueing them).
    pub host_ms: f64,
}

impl AllReduce {
    pub fn new(comm: Rc<Comm>) -> Self {
        Self { comm, events: RefCell::new(Vec::new()), host: Cell::new(Duration::ZERO) }
    }

    /// The time spent in the calls since the last take (waits for them to finish).
    pub fn take(&self) -> Result<Spent> {
        let events = std::mem::take(&mut *self.events.borrow_mut());
        let gpu_ms = events.iter().try_fold(0f64, |ms, (a, b)| {
            Ok::<_, candle_core::Error>(ms + a.elapsed_ms(b).map_err(|e| candle_core::Error::Msg(format!("all_reduce timing: {e:?}")))? as f64)
        })?;
        Ok(Spent { gpu_ms, host_ms: self.host.replace(Duration::ZERO).as_secs_f64() * 1e3 })
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
        let host = Instant::now();
        let start = self.record()?;
        let out = match s.dtype() {
            DType::F32 => reduce::<f32>(&self.comm, s, l)?,
            DType::BF16 => reduce::<bf16>(&self.comm, s, l)?,
            DType::F16 => reduce::<f16>(&self.comm, s, l)?,
            dtype => candle_core::bail!("all-reduce: unsupported dtype {dtype:?}"),
        };
        let end = self.record()?;
        self.events.borrow_mut().push((start, end));
        self.host.set(self.host.get() + host.elapsed());
        Ok((out, l.shape().clone()))
    }
}
