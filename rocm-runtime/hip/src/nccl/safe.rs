//! [`Id`], [`Comm`], [`ReduceOp`] and [`NcclType`] with the shapes of
//! `cudarc::nccl::safe`, over RCCL.
//!
//! One communicator per process and GPU, as Candle's `llama_multiprocess` uses
//! them: rank 0 makes an [`Id`], sends its 128 bytes ([`Id::internal`]) to the
//! other ranks (through a file), each makes an `Id` of them ([`Id::uninit`])
//! and calls [`Comm::from_rank`] with its stream; the collectives are queued on
//! that stream.
//!
//! Differences from cudarc, all towards clear errors: `from_rank` refuses a
//! rank outside `0..world_size` and the collectives refuse a receive buffer
//! (or send buffer) too short for the count RCCL would write (read), with an
//! [`NcclError`] naming the method, where RCCL would write past the buffer;
//! dropping a [`Comm`] destroys it (`ncclCommDestroy`) or, when RCCL reports an
//! asynchronous error (a peer gone), aborts it (`ncclCommAbort`) instead of
//! waiting for the peer; failures there cannot be returned and are dropped,
//! never panicked.
use super::result::{self, check, NcclError, NcclStatus};
use super::sys::{self, ncclDataType_t, ncclRedOp_t, ncclResult_t};
use crate::driver::{DevicePtr, DevicePtrMut, HipContext, HipStream};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

pub use result::{group_end, group_start};

/// A communicator's unique id: 128 bytes made by rank 0 ([`Id::new`]) and
/// handed to every rank.
#[derive(Debug, Clone, Copy)]
pub struct Id {
    id: sys::ncclUniqueId,
}

impl Id {
    /// A fresh id (`ncclGetUniqueId`; on rank 0 only).
    pub fn new() -> Result<Self, NcclError> {
        let mut id = sys::ncclUniqueId { internal: [0; sys::NCCL_UNIQUE_ID_BYTES] };
        check("ncclGetUniqueId", unsafe { sys::ncclGetUniqueId(&mut id) }, std::ptr::null_mut())?;
        Ok(Self { id })
    }

    /// The id whose bytes rank 0 sent ([`Id::internal`] there).
    pub fn uninit(internal: [c_char; sys::NCCL_UNIQUE_ID_BYTES]) -> Self {
        Self { id: sys::ncclUniqueId { internal } }
    }

    /// The id from bytes read back (from a file, a socket): exactly 128 of them.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, NcclError> {
        let bytes: &[u8; sys::NCCL_UNIQUE_ID_BYTES] = bytes.try_into().map_err(|_| {
            let detail = format!("an RCCL unique id is {} bytes, got {}", sys::NCCL_UNIQUE_ID_BYTES, bytes.len());
            NcclError::refused("Id::from_bytes", ncclResult_t::ncclInvalidArgument, detail)
        })?;
        Ok(Self::uninit(bytes.map(|b| b as c_char)))
    }

    /// The id's bytes, to send to the other ranks.
    pub fn internal(&self) -> &[c_char; sys::NCCL_UNIQUE_ID_BYTES] {
        &self.id.internal
    }
}

/// The reductions of RCCL (cudarc's `ReduceOp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    Avg,
}

impl ReduceOp {
    fn raw(self) -> ncclRedOp_t {
        match self {
            ReduceOp::Sum => ncclRedOp_t::ncclSum,
            ReduceOp::Prod => ncclRedOp_t::ncclProd,
            ReduceOp::Max => ncclRedOp_t::ncclMax,
            ReduceOp::Min => ncclRedOp_t::ncclMin,
            ReduceOp::Avg => ncclRedOp_t::ncclAvg,
        }
    }
}

/// Element types RCCL reduces and moves.
pub trait NcclType {
    fn as_nccl_type() -> ncclDataType_t;
}

macro_rules! nccl_type {
    ($($t:ty => $v:ident),+ $(,)?) => {
        $(impl NcclType for $t {
            fn as_nccl_type() -> ncclDataType_t { ncclDataType_t::$v }
        })+
    };
}
nccl_type!(
    i8 => ncclInt8, u8 => ncclUint8, i32 => ncclInt32, u32 => ncclUint32, i64 => ncclInt64,
    u64 => ncclUint64, half::f16 => ncclFloat16, f32 => ncclFloat32, f64 => ncclFloat64,
    half::bf16 => ncclBfloat16,
);

/// A communicator: this process's rank in a group of `world_size`, its
/// collectives queued on `stream`.
#[derive(Debug)]
pub struct Comm {
    pub(crate) comm: sys::ncclComm_t,
    pub(crate) stream: Arc<HipStream>,
    pub(crate) rank: usize,
    pub(crate) world_size: usize,
}

// RCCL communicators may be used from any thread, one call at a time (as in cudarc).
unsafe impl Send for Comm {}
unsafe impl Sync for Comm {}

impl Drop for Comm {
    fn drop(&mut self) {
        let comm = std::mem::replace(&mut self.comm, std::ptr::null_mut());
        if comm.is_null() {
            return;
        }
        let mut pending = ncclResult_t::ncclSuccess;
        let asked = unsafe { sys::ncclCommGetAsyncError(comm, &mut pending) };
        let _ = unsafe {
            if asked == ncclResult_t::ncclSuccess && pending == ncclResult_t::ncclSuccess {
                sys::ncclCommDestroy(comm)
            } else {
                sys::ncclCommAbort(comm)
            }
        };
    }
}

/// The `(count, what)` check of the collectives: `have` elements where RCCL uses `need`.
fn enough(call: &'static str, what: &str, have: usize, need: usize) -> Result<(), NcclError> {
    if have < need {
        let detail = format!("the {what} holds {have} elements, the call needs {need}");
        return Err(NcclError::refused(call, ncclResult_t::ncclInvalidArgument, detail));
    }
    Ok(())
}

impl Comm {
    /// Joins the communicator `id` as `rank` of `world_size` (`ncclCommInitRank`,
    /// on `stream`'s device), which blocks until every rank has joined.
    pub fn from_rank(stream: Arc<HipStream>, rank: usize, world_size: usize, id: Id) -> Result<Self, NcclError> {
        const CALL: &str = "Comm::from_rank";
        let invalid = |detail: String| NcclError::refused(CALL, ncclResult_t::ncclInvalidArgument, detail);
        let nranks = c_int::try_from(world_size).ok().filter(|&n| n > 0);
        let nranks = nranks.ok_or_else(|| invalid(format!("world size {world_size} is not in 1..={}", c_int::MAX)))?;
        if rank >= world_size {
            return Err(invalid(format!("rank {rank} is not below the world size {world_size}")));
        }
        let ctx = stream.context();
        ctx.bind_to_thread().map_err(|e| invalid(format!("cannot make device {} current: {e}", ctx.ordinal())))?;
        let mut comm = std::ptr::null_mut();
        let status = unsafe { sys::ncclCommInitRank(&mut comm, nranks, id.id, rank as c_int) };
        check("ncclCommInitRank", status, std::ptr::null_mut())?;
        Ok(Self { comm, stream, rank, world_size })
    }

    pub fn stream(&self) -> Arc<HipStream> {
        self.stream.clone()
    }
    pub fn context(&self) -> &Arc<HipContext> {
        self.stream.context()
    }
    pub fn ordinal(&self) -> usize {
        self.stream.context().ordinal()
    }
    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// An error RCCL found while running queued work (`ncclCommGetAsyncError`),
    /// e.g. a peer that went away.
    pub fn async_error(&self) -> Result<(), NcclError> {
        let mut pending = ncclResult_t::ncclSuccess;
        check("ncclCommGetAsyncError", unsafe { sys::ncclCommGetAsyncError(self.comm, &mut pending) }, self.comm)?;
        check("ncclCommGetAsyncError (asynchronous error)", pending, self.comm).map(|_| ())
    }

    /// Aborts the communicator now (`ncclCommAbort`), without waiting for peers.
    pub fn abort(mut self) -> Result<(), NcclError> {
        let comm = std::mem::replace(&mut self.comm, std::ptr::null_mut());
        check("ncclCommAbort", unsafe { sys::ncclCommAbort(comm) }, std::ptr::null_mut()).map(|_| ())
    }

    /// Makes the stream's device current, as RCCL expects of its callers.
    fn bind(&self) {
        let ctx = self.stream.context();
        ctx.record_err(ctx.bind_to_thread());
    }

    fn raw_stream(&self) -> crate::driver::sys::CUstream {
        self.stream.cu_stream()
    }

    /// Sends `data` to rank `peer` (`ncclSend`); pairs with the peer's [`Comm::recv`].
    pub fn send<S: DevicePtr<T>, T: NcclType>(&self, data: &S, peer: i32) -> Result<(), NcclError> {
        self.bind();
        let (src, _record) = data.device_ptr(&self.stream);
        let status = unsafe {
            sys::ncclSend(src as *const c_void, data.len(), T::as_nccl_type(), peer, self.comm, self.raw_stream())
        };
        check("ncclSend", status, self.comm).map(|_| ())
    }

    /// Receives `buff.len()` elements from rank `peer` (`ncclRecv`).
    pub fn recv<R: DevicePtrMut<T>, T: NcclType>(&self, buff: &mut R, peer: i32) -> Result<NcclStatus, NcclError> {
        self.bind();
        let count = buff.len();
        let (dst, _record) = buff.device_ptr_mut(&self.stream);
        let status =
            unsafe { sys::ncclRecv(dst as *mut c_void, count, T::as_nccl_type(), peer, self.comm, self.raw_stream()) };
        check("ncclRecv", status, self.comm)
    }

    /// Copies `sendbuff` of rank `root` into every rank's `recvbuff`
    /// (`ncclBroadcast`, `recvbuff.len()` elements); `sendbuff` is read on
    /// `root` only (`None` elsewhere).
    pub fn broadcast<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: Option<&S>,
        recvbuff: &mut R,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let count = recvbuff.len();
        if let Some(s) = sendbuff {
            enough("Comm::broadcast", "send buffer", s.len(), count)?;
        } else if root >= 0 && root as usize == self.rank {
            let detail = format!("rank {root} is the root: it needs a send buffer");
            return Err(NcclError::refused("Comm::broadcast", ncclResult_t::ncclInvalidArgument, detail));
        }
        self.bind();
        let (src, _record_src) = sendbuff.map(|b| b.device_ptr(&self.stream)).unzip();
        let (dst, _record_dst) = recvbuff.device_ptr_mut(&self.stream);
        let src = src.map_or(std::ptr::null(), |p| p as *const c_void);
        let status = unsafe {
            sys::ncclBroadcast(src, dst as *mut c_void, count, T::as_nccl_type(), root, self.comm, self.raw_stream())
        };
        check("ncclBroadcast", status, self.comm)
    }

    /// In place [`Comm::broadcast`]: `recvbuff` is the send buffer on `root`.
    pub fn broadcast_in_place<R: DevicePtrMut<T>, T: NcclType>(
        &self,
        recvbuff: &mut R,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        self.bind();
        let count = recvbuff.len();
        let (dst, _record) = recvbuff.device_ptr_mut(&self.stream);
        let p = dst as *mut c_void;
        let status = unsafe { sys::ncclBroadcast(p, p, count, T::as_nccl_type(), root, self.comm, self.raw_stream()) };
        check("ncclBroadcast", status, self.comm)
    }

    /// Every rank's `sendbuff` concatenated in rank order into every rank's
    /// `recvbuff` (`ncclAllGather`; `recvbuff` holds `world_size` times `sendbuff`).
    pub fn all_gather<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: &mut R,
    ) -> Result<NcclStatus, NcclError> {
        let count = sendbuff.len();
        enough("Comm::all_gather", "receive buffer", recvbuff.len(), count.saturating_mul(self.world_size))?;
        self.bind();
        let (src, _record_src) = sendbuff.device_ptr(&self.stream);
        let (dst, _record_dst) = recvbuff.device_ptr_mut(&self.stream);
        let status = unsafe {
            sys::ncclAllGather(src as *const c_void, dst as *mut c_void, count, T::as_nccl_type(), self.comm, self.raw_stream())
        };
        check("ncclAllGather", status, self.comm)
    }

    /// The element-wise reduction of every rank's `sendbuff` into every rank's
    /// `recvbuff` (`ncclAllReduce`, `sendbuff.len()` elements).
    pub fn all_reduce<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: &mut R,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let count = sendbuff.len();
        enough("Comm::all_reduce", "receive buffer", recvbuff.len(), count)?;
        self.bind();
        let (src, _record_src) = sendbuff.device_ptr(&self.stream);
        let (dst, _record_dst) = recvbuff.device_ptr_mut(&self.stream);
        let (t, op) = (T::as_nccl_type(), reduce_op.raw());
        let status =
            unsafe { sys::ncclAllReduce(src as *const c_void, dst as *mut c_void, count, t, op, self.comm, self.raw_stream()) };
        check("ncclAllReduce", status, self.comm)
    }

    /// In place [`Comm::all_reduce`].
    pub fn all_reduce_in_place<R: DevicePtrMut<T>, T: NcclType>(
        &self,
        buff: &mut R,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        self.bind();
        let count = buff.len();
        let (dst, _record) = buff.device_ptr_mut(&self.stream);
        let (p, t, op) = (dst as *mut c_void, T::as_nccl_type(), reduce_op.raw());
        let status = unsafe { sys::ncclAllReduce(p, p, count, t, op, self.comm, self.raw_stream()) };
        check("ncclAllReduce", status, self.comm)
    }

    /// The reduction of every rank's `sendbuff` into `recvbuff` on `root` only
    /// (`ncclReduce`); `recvbuff` is `None` on the other ranks.
    pub fn reduce<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: Option<&mut R>,
        reduce_op: &ReduceOp,
        root: i32,
    ) -> Result<NcclStatus, NcclError> {
        let count = sendbuff.len();
        if let Some(r) = &recvbuff {
            enough("Comm::reduce", "receive buffer", r.len(), count)?;
        } else if root >= 0 && root as usize == self.rank {
            let detail = format!("rank {root} is the root: it needs a receive buffer");
            return Err(NcclError::refused("Comm::reduce", ncclResult_t::ncclInvalidArgument, detail));
        }
        self.bind();
        let (src, _record_src) = sendbuff.device_ptr(&self.stream);
        let (dst, _record_dst) = recvbuff.map(|b| b.device_ptr_mut(&self.stream)).unzip();
        let dst = dst.map_or(std::ptr::null_mut(), |p| p as *mut c_void);
        let (t, op) = (T::as_nccl_type(), reduce_op.raw());
        let status =
            unsafe { sys::ncclReduce(src as *const c_void, dst, count, t, op, root, self.comm, self.raw_stream()) };
        check("ncclReduce", status, self.comm)
    }

    /// The reduction of every rank's `sendbuff`, split in `world_size` blocks of
    /// `recvbuff.len()`: rank `i` receives block `i` (`ncclReduceScatter`).
    pub fn reduce_scatter<S: DevicePtr<T>, R: DevicePtrMut<T>, T: NcclType>(
        &self,
        sendbuff: &S,
        recvbuff: &mut R,
        reduce_op: &ReduceOp,
    ) -> Result<NcclStatus, NcclError> {
        let count = recvbuff.len();
        enough("Comm::reduce_scatter", "send buffer", sendbuff.len(), count.saturating_mul(self.world_size))?;
        self.bind();
        let (src, _record_src) = sendbuff.device_ptr(&self.stream);
        let (dst, _record_dst) = recvbuff.device_ptr_mut(&self.stream);
        let (t, op) = (T::as_nccl_type(), reduce_op.raw());
        let status = unsafe {
            sys::ncclReduceScatter(src as *const c_void, dst as *mut c_void, count, t, op, self.comm, self.raw_stream())
        };
        check("ncclReduceScatter", status, self.comm)
    }
}
