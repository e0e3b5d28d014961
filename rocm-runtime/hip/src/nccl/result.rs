//! RCCL statuses as errors ([`NcclError`]: which call, which status, RCCL's
//! own message), and the group calls (cudarc's `nccl::result`).
use super::sys::{self, ncclResult_t};
use std::ffi::CStr;

/// Returned by every call when candle-rocm-hip was built without its feature
/// `rccl` (not an RCCL status value).
pub const NCCL_NOT_LINKED: ncclResult_t = ncclResult_t(0xFFFF_0003);

/// What a call that did not fail reports (cudarc's `NcclStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclStatus {
    Success,
    /// `ncclInProgress`: only non-blocking communicators (never made here) return it.
    InProgress,
}

/// A failed RCCL call: `.0` is the status (as in cudarc's `NcclError(pub
/// ncclResult_t)`), `.1` where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct NcclError(pub ncclResult_t, pub ErrorContext);

/// The context of an [`NcclError`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorContext {
    /// The RCCL function (`ncclCommInitRank`), or the method of this crate that
    /// refused its arguments before calling RCCL (`Comm::all_reduce`).
    pub call: &'static str,
    /// RCCL's last error message of this thread (`ncclGetLastError`), or this
    /// crate's reason for refusing the arguments; empty when there is none.
    pub detail: String,
}

impl NcclError {
    /// The status, as cudarc's `err.0`.
    pub fn status(&self) -> ncclResult_t {
        self.0
    }
    /// An error this crate raises itself, before calling RCCL.
    pub fn refused(call: &'static str, status: ncclResult_t, detail: impl Into<String>) -> Self {
        NcclError(status, ErrorContext { call, detail: detail.into() })
    }
    /// The status's C name (`ncclInvalidArgument`).
    pub fn name(&self) -> String {
        match (self.0, self.0.name()) {
            (NCCL_NOT_LINKED, _) => "rccl_library_not_linked".into(),
            (_, Some(name)) => name.into(),
            (status, None) => format!("ncclResult_t({})", status.0),
        }
    }
    /// RCCL's description of the status (`ncclGetErrorString`), when linked.
    pub fn description(&self) -> Option<String> {
        static_str(unsafe { sys::ncclGetErrorString(self.0) })
    }
}

/// A C string RCCL returns (static, or per thread until its next call), copied.
fn static_str(p: *const std::ffi::c_char) -> Option<String> {
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
}

impl std::fmt::Debug for NcclError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NcclError({}: {} ({}))", self.1.call, self.name(), self.0 .0)
    }
}

impl std::fmt::Display for NcclError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RCCL error in {}: {} ({})", self.1.call, self.name(), self.0 .0)?;
        if self.0 == NCCL_NOT_LINKED {
            return write!(f, ": candle-rocm-hip was built without its feature `rccl`, so RCCL is not linked");
        }
        if let Some(description) = self.description() {
            write!(f, ", {description}")?;
        }
        if !self.1.detail.is_empty() {
            write!(f, ": {}", self.1.detail)?;
        }
        Ok(())
    }
}

impl std::error::Error for NcclError {}

/// Turns the status of the RCCL function `call` into a `Result`; an error
/// carries RCCL's last message for `comm` (null: the thread's).
pub(crate) fn check(call: &'static str, status: ncclResult_t, comm: sys::ncclComm_t) -> Result<NcclStatus, NcclError> {
    match status {
        ncclResult_t::ncclSuccess => Ok(NcclStatus::Success),
        ncclResult_t::ncclInProgress => Ok(NcclStatus::InProgress),
        NCCL_NOT_LINKED => Err(NcclError::refused(call, status, "")),
        _ => {
            let detail = static_str(unsafe { sys::ncclGetLastError(comm) }).unwrap_or_default();
            Err(NcclError::refused(call, status, detail))
        }
    }
}

/// `ncclGroupStart`: the calls up to [`group_end`] are issued together (needed
/// for a rank's send and recv to itself, and to fuse collectives).
pub fn group_start() -> Result<NcclStatus, NcclError> {
    check("ncclGroupStart", unsafe { sys::ncclGroupStart() }, std::ptr::null_mut())
}

/// `ncclGroupEnd`: issues the calls made since [`group_start`].
pub fn group_end() -> Result<NcclStatus, NcclError> {
    check("ncclGroupEnd", unsafe { sys::ncclGroupEnd() }, std::ptr::null_mut())
}

/// `ncclGetVersion`: RCCL's version code (NCCL's scheme: 22703 is 2.27.3).
pub fn get_version() -> Result<i32, NcclError> {
    let mut version = 0;
    check("ncclGetVersion", unsafe { sys::ncclGetVersion(&mut version) }, std::ptr::null_mut())?;
    Ok(version)
}
