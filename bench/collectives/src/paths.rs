//! The two all-reduce paths, each with its own communicator, stream and buffers on the
//! rank's GPU: `Layer` (our HIP layer's RCCL module: librccl.so.1, on NVIDIA hip-on-cuda's
//! forwarder to NCCL) and `Nccl` (cudarc's NCCL module on libnccl.so.2, as Candle's CUDA
//! backend calls it). Each set up as Candle's device does it: a new stream of the device's
//! context, event tracking left on.

use candle_rocm_hip::driver::{HipContext, HipSlice, HipStream};
use candle_rocm_hip::nccl::safe as layer;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudarc::nccl::safe as nccl;
use std::sync::Arc;

/// One way of calling an out-of-place f32 sum all-reduce over the first `count` elements of
/// the path's send buffer into its receive buffer.
pub trait AllReduce {
    fn all_reduce(&mut self, count: usize) -> Result<(), String>;
    /// Waits for everything queued on the path's stream.
    fn synchronize(&self) -> Result<(), String>;
    /// The receive buffer's first `min(count, 4096)` elements and its element `count - 1`.
    fn sample(&self, count: usize) -> Result<Vec<f32>, String>;
}

const SAMPLE: usize = 4096;

pub struct Layer {
    pub comm: layer::Comm,
    stream: Arc<HipStream>,
    send: HipSlice<f32>,
    recv: HipSlice<f32>,
}

impl Layer {
    /// Joins the communicator (blocks until every rank has) and fills the send buffer with `values`.
    pub fn new(ordinal: usize, rank: usize, world: usize, id: &[u8], values: &[f32]) -> Result<Self, String> {
        let e = |what: &'static str| move |e: candle_rocm_hip::driver::HipError| format!("layer: {what}: {e:?}");
        let ctx = HipContext::new(ordinal).map_err(e("HipContext::new"))?;
        let stream = ctx.new_stream().map_err(e("new_stream"))?;
        let id = layer::Id::from_bytes(id).map_err(|e| format!("layer: {e}"))?;
        let comm = layer::Comm::from_rank(stream.clone(), rank, world, id).map_err(|e| format!("layer: rank {rank}: {e}"))?;
        let send = stream.memcpy_stod(values).map_err(e("copying the send buffer"))?;
        let recv = stream.alloc_zeros::<f32>(values.len()).map_err(e("allocating the receive buffer"))?;
        Ok(Self { comm, stream, send, recv })
    }

    /// The largest of every rank's `x` (an all-reduce of one f64 on this path, outside any
    /// timing; a barrier too).
    pub fn max_over_ranks(&self, x: f64) -> Result<f64, String> {
        let e = |e: candle_rocm_hip::driver::HipError| format!("layer: max over ranks: {e:?}");
        let mut buf = self.stream.memcpy_stod(&[x]).map_err(e)?;
        self.comm.all_reduce_in_place(&mut buf, &layer::ReduceOp::Max).map_err(|e| format!("layer: max over ranks: {e}"))?;
        let out = self.stream.memcpy_dtov(&buf).map_err(e)?;
        Ok(out[0])
    }
}

impl AllReduce for Layer {
    fn all_reduce(&mut self, count: usize) -> Result<(), String> {
        let (send, mut recv) = (self.send.slice(..count), self.recv.slice_mut(..count));
        self.comm.all_reduce(&send, &mut recv, &layer::ReduceOp::Sum).map(|_| ()).map_err(|e| format!("layer: {e}"))
    }
    fn synchronize(&self) -> Result<(), String> {
        self.stream.synchronize().map_err(|e| format!("layer: stream synchronize: {e:?}"))
    }
    fn sample(&self, count: usize) -> Result<Vec<f32>, String> {
        let e = |e: candle_rocm_hip::driver::HipError| format!("layer: reading the result back: {e:?}");
        let mut v = self.stream.memcpy_dtov(&self.recv.slice(..count.min(SAMPLE))).map_err(e)?;
        v.extend(self.stream.memcpy_dtov(&self.recv.slice(count - 1..count)).map_err(e)?);
        Ok(v)
    }
}

pub struct Nccl {
    comm: nccl::Comm,
    stream: Arc<CudaStream>,
    send: CudaSlice<f32>,
    recv: CudaSlice<f32>,
}

impl Nccl {
    /// Joins the communicator (blocks until every rank has) and fills the send buffer with `values`.
    pub fn new(ordinal: usize, rank: usize, world: usize, id: &[u8; 128], values: &[f32]) -> Result<Self, String> {
        let e = |what: &'static str| move |e: cudarc::driver::DriverError| format!("nccl: {what}: {e:?}");
        let ctx = CudaContext::new(ordinal).map_err(e("CudaContext::new"))?;
        let stream = ctx.new_stream().map_err(e("new_stream"))?;
        let id = nccl::Id::uninit(id.map(|b| b as std::ffi::c_char));
        let comm = nccl::Comm::from_rank(stream.clone(), rank, world, id).map_err(|e| format!("nccl: rank {rank}: ncclCommInitRank: {e:?}"))?;
        let send = stream.clone_htod(values).map_err(e("copying the send buffer"))?;
        let recv = stream.alloc_zeros::<f32>(values.len()).map_err(e("allocating the receive buffer"))?;
        Ok(Self { comm, stream, send, recv })
    }
}

impl AllReduce for Nccl {
    fn all_reduce(&mut self, count: usize) -> Result<(), String> {
        let (send, mut recv) = (self.send.slice(..count), self.recv.slice_mut(..count));
        self.comm.all_reduce(&send, &mut recv, &nccl::ReduceOp::Sum).map(|_| ()).map_err(|e| format!("nccl: ncclAllReduce: {e:?}"))
    }
    fn synchronize(&self) -> Result<(), String> {
        self.stream.synchronize().map_err(|e| format!("nccl: stream synchronize: {e:?}"))
    }
    fn sample(&self, count: usize) -> Result<Vec<f32>, String> {
        let e = |e: cudarc::driver::DriverError| format!("nccl: reading the result back: {e:?}");
        let mut v = self.stream.clone_dtoh(&self.recv.slice(..count.min(SAMPLE))).map_err(e)?;
        v.extend(self.stream.clone_dtoh(&self.recv.slice(count - 1..count)).map_err(e)?);
        Ok(v)
    }
}

/// The NCCL version code (`ncclGetVersion`) as `major.minor.patch`.
pub fn version_text(code: i32) -> String {
    // NCCL >= 2.9: major * 10000 + minor * 100 + patch; before: major * 1000 + minor * 100 + patch
    let (major, rest) = if code >= 10000 { (code / 10000, code % 10000) } else { (code / 1000, code % 1000) };
    format!("{major}.{}.{} (code {code})", rest / 100, rest % 100)
}

/// Both libraries' version reports: ours through the layer (RCCL's ncclGetVersion), and
/// cudarc's (NCCL's).
pub fn versions() -> (Result<i32, String>, Result<i32, String>) {
    (
        candle_rocm_hip::nccl::result::get_version().map_err(|e| e.to_string()),
        cudarc::nccl::result::get_nccl_version().map_err(|e| format!("{e:?}")),
    )
}

/// cudarc's loader panics when a library is missing: say so first, clearly.
pub fn check_cudarc_libraries() -> Result<(), String> {
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(format!(
            "cudarc finds no CUDA driver library (tried {}): this needs an NVIDIA GPU and its driver",
            candidates("cuda")
        ));
    }
    if !unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Err(format!(
            "cudarc finds no NCCL under the names it tries ({}): put a directory with a libnccl.so link to NVIDIA's libnccl.so.2 on LD_LIBRARY_PATH (run.sh does)",
            candidates("nccl")
        ));
    }
    Ok(())
}

/// cudarc's candidate file names of a library, each once.
fn candidates(lib: &str) -> String {
    let mut names = cudarc::get_lib_name_candidates(lib);
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names.join(", ")
}
