//! RCCL's C API (`rccl/rccl.h`), under NCCL's names: RCCL keeps NCCL's API with
//! `hipStream_t` for streams. Only what [`super::safe`] calls is declared.
//!
//! The functions are linked from `librccl.so.1` with the crate's feature `rccl`
//! (cfg `candle_rocm_rccl`, set by `build.rs`); without it each returns
//! [`super::result::NCCL_NOT_LINKED`] (the two returning strings: null). The
//! enum values are checked against ROCm's `rccl.h` by `abi_tests.rs`.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]
use crate::driver::sys::CUstream;
use std::ffi::{c_char, c_int, c_void};

/// `NCCL_UNIQUE_ID_BYTES`.
pub const NCCL_UNIQUE_ID_BYTES: usize = 128;

/// Opaque `ncclComm_t` (`struct ncclComm*`).
pub type ncclComm_t = *mut c_void;

/// `ncclUniqueId`: what rank 0 makes and every rank passes to `ncclCommInitRank`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ncclUniqueId {
    pub internal: [c_char; NCCL_UNIQUE_ID_BYTES],
}

impl std::fmt::Debug for ncclUniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex: String = self.internal.iter().take(8).map(|&b| format!("{:02x}", b as u8)).collect();
        write!(f, "ncclUniqueId({hex}…)")
    }
}

/// `ncclResult_t`: a C enum returned by every call, kept as its raw value (RCCL
/// may return a value this crate does not know) with the names as constants.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ncclResult_t(pub u32);

impl ncclResult_t {
    pub const ncclSuccess: Self = Self(0);
    pub const ncclUnhandledCudaError: Self = Self(1);
    pub const ncclSystemError: Self = Self(2);
    pub const ncclInternalError: Self = Self(3);
    pub const ncclInvalidArgument: Self = Self(4);
    pub const ncclInvalidUsage: Self = Self(5);
    pub const ncclRemoteError: Self = Self(6);
    pub const ncclInProgress: Self = Self(7);
    pub const ncclNumResults: Self = Self(8);

    /// The C enumerator's name (`ncclInvalidArgument`), `None` for a value
    /// `rccl.h` does not define.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 8] = [
            "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
            "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
        ];
        NAMES.get(self.0 as usize).copied()
    }
}

impl std::fmt::Debug for ncclResult_t {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}"),
            None => write!(f, "ncclResult_t({})", self.0),
        }
    }
}

/// `ncclDataType_t`: the element types Candle moves (no 8-bit floats: their
/// values differ between RCCL and NCCL releases).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ncclDataType_t {
    ncclInt8 = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclFloat32 = 7,
    ncclFloat64 = 8,
    ncclBfloat16 = 9,
}

/// `ncclRedOp_t`: the built-in reductions.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ncclRedOp_t {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
}

unlinked_ffi! { candle_rocm_rccl, super::result::NCCL_NOT_LINKED; signatures STATUS_FUNCTIONS;
    pub fn ncclGetVersion(version: *mut c_int) -> ncclResult_t;
    pub fn ncclGetUniqueId(unique_id: *mut ncclUniqueId) -> ncclResult_t;
    pub fn ncclCommInitRank(comm: *mut ncclComm_t, nranks: c_int, comm_id: ncclUniqueId, rank: c_int) -> ncclResult_t;
    pub fn ncclCommDestroy(comm: ncclComm_t) -> ncclResult_t;
    pub fn ncclCommAbort(comm: ncclComm_t) -> ncclResult_t;
    pub fn ncclCommGetAsyncError(comm: ncclComm_t, async_error: *mut ncclResult_t) -> ncclResult_t;
    pub fn ncclAllReduce(sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: ncclDataType_t,
        op: ncclRedOp_t, comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclBroadcast(sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: ncclDataType_t,
        root: c_int, comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclReduce(sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: ncclDataType_t,
        op: ncclRedOp_t, root: c_int, comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclAllGather(sendbuff: *const c_void, recvbuff: *mut c_void, sendcount: usize, datatype: ncclDataType_t,
        comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclReduceScatter(sendbuff: *const c_void, recvbuff: *mut c_void, recvcount: usize,
        datatype: ncclDataType_t, op: ncclRedOp_t, comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclSend(sendbuff: *const c_void, count: usize, datatype: ncclDataType_t, peer: c_int,
        comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclRecv(recvbuff: *mut c_void, count: usize, datatype: ncclDataType_t, peer: c_int,
        comm: ncclComm_t, stream: CUstream) -> ncclResult_t;
    pub fn ncclGroupStart() -> ncclResult_t;
    pub fn ncclGroupEnd() -> ncclResult_t;
}

unlinked_ffi! { candle_rocm_rccl, std::ptr::null(); signatures STRING_FUNCTIONS;
    pub fn ncclGetErrorString(result: ncclResult_t) -> *const c_char;
    pub fn ncclGetLastError(comm: ncclComm_t) -> *const c_char;
}
