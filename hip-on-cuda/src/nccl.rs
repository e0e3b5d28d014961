//! RCCL over NVIDIA's NCCL: the RCCL entry points that `candle-rocm-hip`'s
//! `nccl` module calls, exported under their C names (RCCL's are unversioned)
//! and forwarded to `libnccl.so.2`, loaded at run time. `cargo xtask
//! gpu-bundle` makes `librccl.so.1` an empty library that depends on this one,
//! so binaries linked against ROCm 7.2's RCCL bind here.
//!
//! RCCL keeps NCCL's API with `hipStream_t` for `cudaStream_t`; here
//! `hipStream_t` is `CUstream` and `ncclComm_t` is NCCL's communicator, so
//! both pass straight through. The `ncclUniqueId` (128 bytes) is NCCL's.
//! Statuses, element types and reductions are translated by explicit tables
//! ([`NCCL_TO_RCCL`], [`DATATYPES`], [`REDUCE_OPS`]): RCCL's values are those
//! of ROCm 7.2's `rccl/rccl.h` (checked against it by the tests when the ROCm
//! root is there), NCCL's those of `cudarc`'s NCCL 2.30 bindings.
//!
//! **Finding NCCL**: `$HIP_ON_CUDA_NCCL` (a path to `libnccl.so.2`) when set,
//! else `libnccl.so.2`, then `libnccl.so`, through the normal `dlopen` search
//! (`LD_LIBRARY_PATH`, the ld.so cache: Debian's `libnccl2`, CUDA installs).
//! PyTorch's pip wheels put it in `site-packages/nvidia/nccl/lib/`, which no
//! search path names: `hip-on-cuda/run-gpu-tests.sh` adds that directory to
//! `LD_LIBRARY_PATH` when `libnccl.so.2` is not found otherwise. `cudarc`'s
//! own NCCL loader is not used: its file names (`libnccl.so`, `.so.13`,
//! `.so.12`, ..., `.so.1`) miss `libnccl.so.2`, the only name the wheels have.
//!
//! Without NCCL (or without CUDA) every call fails cleanly with
//! `ncclSystemError`, and `ncclGetLastError` says what was tried; a null
//! out-pointer is `ncclInvalidArgument` before anything is loaded. A panic
//! never crosses the C boundary (`ncclInternalError`).
use crate::catch;
use cudarc::nccl::sys::{ncclDataType_t as D, ncclRedOp_t as O, ncclResult_t as N};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

/// RCCL's `ncclResult_t` (a C enum).
pub type ncclResult_t = u32;
pub const ncclSuccess: ncclResult_t = 0;
pub const ncclUnhandledCudaError: ncclResult_t = 1;
pub const ncclSystemError: ncclResult_t = 2;
pub const ncclInternalError: ncclResult_t = 3;
pub const ncclInvalidArgument: ncclResult_t = 4;
pub const ncclInvalidUsage: ncclResult_t = 5;
pub const ncclRemoteError: ncclResult_t = 6;
pub const ncclInProgress: ncclResult_t = 7;

/// (RCCL status, name, `ncclGetErrorString` text), NUL-terminated.
pub const RCCL_RESULTS: &[(ncclResult_t, &str, &str)] = &[
    (ncclSuccess, "ncclSuccess\0", "no error\0"),
    (ncclUnhandledCudaError, "ncclUnhandledCudaError\0", "unhandled cuda error (hip-on-cuda: a CUDA call inside NCCL failed)\0"),
    (ncclSystemError, "ncclSystemError\0", "unhandled system error (network, memory, or NCCL could not be loaded)\0"),
    (ncclInternalError, "ncclInternalError\0", "internal error\0"),
    (ncclInvalidArgument, "ncclInvalidArgument\0", "invalid argument\0"),
    (ncclInvalidUsage, "ncclInvalidUsage\0", "invalid usage\0"),
    (ncclRemoteError, "ncclRemoteError\0", "remote process exited, there was a network error, or a peer timed out\0"),
    (ncclInProgress, "ncclInProgress\0", "operation in progress\0"),
];

/// NCCL status → RCCL status. NCCL 2.30's `ncclTimeout` has no RCCL
/// counterpart: a peer that did not answer is RCCL's `ncclRemoteError`. Any
/// status not listed (a newer NCCL's) is `ncclInternalError`.
pub const NCCL_TO_RCCL: &[(N, ncclResult_t)] = &[
    (N::ncclSuccess, ncclSuccess),
    (N::ncclUnhandledCudaError, ncclUnhandledCudaError),
    (N::ncclSystemError, ncclSystemError),
    (N::ncclInternalError, ncclInternalError),
    (N::ncclInvalidArgument, ncclInvalidArgument),
    (N::ncclInvalidUsage, ncclInvalidUsage),
    (N::ncclRemoteError, ncclRemoteError),
    (N::ncclInProgress, ncclInProgress),
    (N::ncclTimeout, ncclRemoteError),
];

/// RCCL `ncclDataType_t` (value, name) → NCCL's. Any other is `ncclInvalidArgument`.
pub const DATATYPES: &[(u32, &str, D)] = &[
    (0, "ncclInt8", D::ncclInt8),
    (1, "ncclUint8", D::ncclUint8),
    (2, "ncclInt32", D::ncclInt32),
    (3, "ncclUint32", D::ncclUint32),
    (4, "ncclInt64", D::ncclInt64),
    (5, "ncclUint64", D::ncclUint64),
    (6, "ncclFloat16", D::ncclFloat16),
    (7, "ncclFloat32", D::ncclFloat32),
    (8, "ncclFloat64", D::ncclFloat64),
    (9, "ncclBfloat16", D::ncclBfloat16),
    (10, "ncclFloat8e4m3", D::ncclFloat8e4m3),
    (11, "ncclFloat8e5m2", D::ncclFloat8e5m2),
];

/// RCCL `ncclRedOp_t` (value, name) → NCCL's: the built-in reductions. Any
/// other (a custom op made by `ncclRedOpCreatePreMulSum`, not forwarded) is
/// `ncclInvalidArgument`.
pub const REDUCE_OPS: &[(u32, &str, O)] = &[
    (0, "ncclSum", O::ncclSum),
    (1, "ncclProd", O::ncclProd),
    (2, "ncclMax", O::ncclMax),
    (3, "ncclMin", O::ncclMin),
    (4, "ncclAvg", O::ncclAvg),
];

/// Translates an NCCL status (raw: a newer NCCL may return values this build
/// does not know).
pub fn rccl_from_nccl(status: u32) -> ncclResult_t {
    NCCL_TO_RCCL.iter().find(|(n, _)| *n as u32 == status).map_or(ncclInternalError, |&(_, r)| r)
}

fn datatype(t: u32) -> Result<D, ncclResult_t> {
    DATATYPES.iter().find(|(v, _, _)| *v == t).map(|&(_, _, d)| d).ok_or_else(|| {
        refuse(ncclInvalidArgument, format!("hip-on-cuda: RCCL data type {t} has no NCCL counterpart"))
    })
}

fn reduce_op(op: u32) -> Result<O, ncclResult_t> {
    let found = REDUCE_OPS.iter().find(|(v, _, _)| *v == op).map(|&(_, _, o)| o);
    found.ok_or_else(|| refuse(ncclInvalidArgument, format!("hip-on-cuda: reduction {op} is not a built-in one")))
}

/// `ncclUniqueId` (RCCL's and NCCL's: 128 opaque bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ncclUniqueId {
    pub internal: [c_char; 128],
}
/// `ncclComm_t` (NCCL's communicator, passed through).
pub type ncclComm_t = *mut c_void;
/// `hipStream_t` = `CUstream` = `cudaStream_t`.
pub type Stream = cudarc::driver::sys::CUstream;

/// The NCCL entry points used, resolved once from the loaded library.
pub(crate) struct Nccl {
    get_version: unsafe extern "C" fn(*mut c_int) -> u32,
    get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> u32,
    comm_init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> u32,
    comm_destroy: unsafe extern "C" fn(ncclComm_t) -> u32,
    comm_abort: unsafe extern "C" fn(ncclComm_t) -> u32,
    comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut u32) -> u32,
    all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, D, O, ncclComm_t, Stream) -> u32,
    broadcast: unsafe extern "C" fn(*const c_void, *mut c_void, usize, D, c_int, ncclComm_t, Stream) -> u32,
    reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, D, O, c_int, ncclComm_t, Stream) -> u32,
    all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, D, ncclComm_t, Stream) -> u32,
    reduce_scatter: unsafe extern "C" fn(*const c_void, *mut c_void, usize, D, O, ncclComm_t, Stream) -> u32,
    send: unsafe extern "C" fn(*const c_void, usize, D, c_int, ncclComm_t, Stream) -> u32,
    recv: unsafe extern "C" fn(*mut c_void, usize, D, c_int, ncclComm_t, Stream) -> u32,
    group_start: unsafe extern "C" fn() -> u32,
    group_end: unsafe extern "C" fn() -> u32,
    get_last_error: unsafe extern "C" fn(ncclComm_t) -> *const c_char,
    /// Kept loaded for the life of the process (the pointers above point into it).
    _lib: libloading::Library,
}

/// The file names tried, in order, given `$HIP_ON_CUDA_NCCL`.
pub fn candidates(explicit: Option<String>) -> Vec<String> {
    let mut names: Vec<String> = explicit.into_iter().filter(|p| !p.is_empty()).collect();
    names.extend(["libnccl.so.2".to_string(), "libnccl.so".to_string()]);
    names
}

impl Nccl {
    fn load() -> Result<Nccl, String> {
        let mut failures = Vec::new();
        for name in candidates(std::env::var("HIP_ON_CUDA_NCCL").ok()) {
            match unsafe { libloading::Library::new(&name) } {
                Ok(lib) => return Self::resolve(lib).map_err(|e| format!("{name}: {e}")),
                // dlerror's text (libloading's own Display is only "dlopen failed")
                Err(e) => failures.push(std::error::Error::source(&e).map_or(e.to_string(), |d| d.to_string())),
            }
        }
        Err(format!(
            "hip-on-cuda: cannot load NCCL (tried {}): put the directory of libnccl.so.2 on LD_LIBRARY_PATH \
             (PyTorch's wheels: site-packages/nvidia/nccl/lib) or set HIP_ON_CUDA_NCCL to its path",
            failures.join("; ")
        ))
    }

    fn resolve(lib: libloading::Library) -> Result<Nccl, libloading::Error> {
        /// The function `name` of `lib`, as the pointer type its field has.
        fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, libloading::Error> {
            Ok(*unsafe { lib.get::<T>(name) }?)
        }
        macro_rules! sym {
            ($name:literal) => {
                symbol(&lib, $name)?
            };
        }
        Ok(Nccl {
            get_version: sym!("ncclGetVersion"),
            get_unique_id: sym!("ncclGetUniqueId"),
            comm_init_rank: sym!("ncclCommInitRank"),
            comm_destroy: sym!("ncclCommDestroy"),
            comm_abort: sym!("ncclCommAbort"),
            comm_get_async_error: sym!("ncclCommGetAsyncError"),
            all_reduce: sym!("ncclAllReduce"),
            broadcast: sym!("ncclBroadcast"),
            reduce: sym!("ncclReduce"),
            all_gather: sym!("ncclAllGather"),
            reduce_scatter: sym!("ncclReduceScatter"),
            send: sym!("ncclSend"),
            recv: sym!("ncclRecv"),
            group_start: sym!("ncclGroupStart"),
            group_end: sym!("ncclGroupEnd"),
            get_last_error: sym!("ncclGetLastError"),
            _lib: lib,
        })
    }
}

/// NCCL, loaded on first use (the first failure is also said on stderr).
pub(crate) fn library() -> &'static Result<Nccl, String> {
    static NCCL: OnceLock<Result<Nccl, String>> = OnceLock::new();
    NCCL.get_or_init(|| {
        let nccl = Nccl::load();
        if let Err(e) = &nccl {
            eprintln!("{e}");
        }
        nccl
    })
}

/// NCCL, or `ncclSystemError` with the reason it could not be loaded.
fn nccl() -> Result<&'static Nccl, ncclResult_t> {
    library().as_ref().map_err(|e| refuse(ncclSystemError, e.clone()))
}

thread_local! {
    /// The reason of this thread's last call that failed here rather than in
    /// NCCL (what `ncclGetLastError` returns then); cleared by every call.
    static REFUSAL: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Records why a call is refused here, and returns `status`.
fn refuse(status: ncclResult_t, why: String) -> ncclResult_t {
    REFUSAL.with(|r| *r.borrow_mut() = CString::new(why).ok());
    status
}

/// Body of an exported function: clears the last refusal, runs `f`; `Ok` is
/// `ncclSuccess`, a panic `ncclInternalError`.
fn call(f: impl FnOnce() -> Result<(), ncclResult_t>) -> ncclResult_t {
    REFUSAL.with(|r| r.borrow_mut().take());
    catch(ncclInternalError, || match f() {
        Ok(()) => ncclSuccess,
        Err(e) => e,
    })
}

/// An NCCL status as a `Result` of RCCL statuses.
fn check(status: u32) -> Result<(), ncclResult_t> {
    match rccl_from_nccl(status) {
        ncclSuccess => Ok(()),
        e => Err(e),
    }
}

fn not_null<T>(p: *const T, what: &str) -> Result<(), ncclResult_t> {
    if p.is_null() {
        return Err(refuse(ncclInvalidArgument, format!("hip-on-cuda: {what} is a null pointer")));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetVersion(version: *mut c_int) -> ncclResult_t {
    call(|| {
        not_null(version, "the version out-pointer")?;
        check((nccl()?.get_version)(version))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclGetUniqueId(id: *mut ncclUniqueId) -> ncclResult_t {
    call(|| {
        not_null(id, "the unique id out-pointer")?;
        check((nccl()?.get_unique_id)(id))
    })
}

/// Joins a communicator on the calling thread's current device (HIP's, that
/// is its CUDA primary context: device 0's when none was set).
#[no_mangle]
pub unsafe extern "C" fn ncclCommInitRank(
    comm: *mut ncclComm_t, nranks: c_int, id: ncclUniqueId, rank: c_int,
) -> ncclResult_t {
    call(|| {
        not_null(comm, "the communicator out-pointer")?;
        let nccl = nccl()?;
        crate::context::current().map_err(|e| {
            refuse(ncclUnhandledCudaError, format!("hip-on-cuda: no CUDA context for the communicator (hipError_t {e})"))
        })?;
        check((nccl.comm_init_rank)(comm, nranks, id, rank))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommDestroy(comm: ncclComm_t) -> ncclResult_t {
    call(|| check((nccl()?.comm_destroy)(comm)))
}

#[no_mangle]
pub unsafe extern "C" fn ncclCommAbort(comm: ncclComm_t) -> ncclResult_t {
    call(|| check((nccl()?.comm_abort)(comm)))
}

/// The communicator's asynchronous error, translated like every status.
#[no_mangle]
pub unsafe extern "C" fn ncclCommGetAsyncError(comm: ncclComm_t, async_error: *mut ncclResult_t) -> ncclResult_t {
    call(|| {
        not_null(async_error, "the error out-pointer")?;
        let mut raw = 0u32;
        check((nccl()?.comm_get_async_error)(comm, &mut raw))?;
        *async_error = rccl_from_nccl(raw);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclAllReduce(
    send: *const c_void, recv: *mut c_void, count: usize, datatype: u32, op: u32, comm: ncclComm_t, stream: Stream,
) -> ncclResult_t {
    call(|| {
        let (t, op) = (self::datatype(datatype)?, reduce_op(op)?);
        check((nccl()?.all_reduce)(send, recv, count, t, op, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclBroadcast(
    send: *const c_void, recv: *mut c_void, count: usize, datatype: u32, root: c_int, comm: ncclComm_t,
    stream: Stream,
) -> ncclResult_t {
    call(|| {
        let t = self::datatype(datatype)?;
        check((nccl()?.broadcast)(send, recv, count, t, root, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclReduce(
    send: *const c_void, recv: *mut c_void, count: usize, datatype: u32, op: u32, root: c_int, comm: ncclComm_t,
    stream: Stream,
) -> ncclResult_t {
    call(|| {
        let (t, op) = (self::datatype(datatype)?, reduce_op(op)?);
        check((nccl()?.reduce)(send, recv, count, t, op, root, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclAllGather(
    send: *const c_void, recv: *mut c_void, sendcount: usize, datatype: u32, comm: ncclComm_t, stream: Stream,
) -> ncclResult_t {
    call(|| {
        let t = self::datatype(datatype)?;
        check((nccl()?.all_gather)(send, recv, sendcount, t, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclReduceScatter(
    send: *const c_void, recv: *mut c_void, recvcount: usize, datatype: u32, op: u32, comm: ncclComm_t,
    stream: Stream,
) -> ncclResult_t {
    call(|| {
        let (t, op) = (self::datatype(datatype)?, reduce_op(op)?);
        check((nccl()?.reduce_scatter)(send, recv, recvcount, t, op, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclSend(
    send: *const c_void, count: usize, datatype: u32, peer: c_int, comm: ncclComm_t, stream: Stream,
) -> ncclResult_t {
    call(|| {
        let t = self::datatype(datatype)?;
        check((nccl()?.send)(send, count, t, peer, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclRecv(
    recv: *mut c_void, count: usize, datatype: u32, peer: c_int, comm: ncclComm_t, stream: Stream,
) -> ncclResult_t {
    call(|| {
        let t = self::datatype(datatype)?;
        check((nccl()?.recv)(recv, count, t, peer, comm, stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn ncclGroupStart() -> ncclResult_t {
    call(|| check((nccl()?.group_start)()))
}

#[no_mangle]
pub unsafe extern "C" fn ncclGroupEnd() -> ncclResult_t {
    call(|| check((nccl()?.group_end)()))
}

/// RCCL's text for a status (own table: needs no NCCL); unknown values get
/// `"unknown result code"`.
#[no_mangle]
pub unsafe extern "C" fn ncclGetErrorString(result: ncclResult_t) -> *const c_char {
    let text = RCCL_RESULTS.iter().find(|(r, _, _)| *r == result).map_or("unknown result code\0", |(_, _, t)| t);
    text.as_ptr().cast()
}

/// Why this thread's last call failed: hip-on-cuda's own reason when it
/// refused the call, else NCCL's message (`""` when there is none). Valid
/// until the thread's next call.
#[no_mangle]
pub unsafe extern "C" fn ncclGetLastError(comm: ncclComm_t) -> *const c_char {
    let own = REFUSAL.with(|r| r.borrow().as_ref().map(|s| s.as_ptr()));
    own.or_else(|| {
        let loaded = catch(None, || library().as_ref().ok());
        loaded.map(|n| catch(std::ptr::null(), || (n.get_last_error)(comm))).filter(|p| !p.is_null())
    })
    .unwrap_or(c"".as_ptr())
}
