//! RCCL, AMD's NCCL, with the shapes of `cudarc::nccl`: [`Id`], [`Comm`],
//! [`ReduceOp`], [`NcclType`], [`group_start`] / [`group_end`] (in [`safe`],
//! re-exported here as cudarc does), the error type in [`result`], the C API
//! in [`sys`].
//!
//! RCCL (`librccl.so.1`) is linked only with this crate's feature `rccl`;
//! without it the module is the same and every call fails with
//! [`result::NCCL_NOT_LINKED`] ("built without its feature `rccl`"), so
//! nothing of RCCL is needed to build or test the rest of the crate.
pub mod result;
pub mod safe;
pub mod sys;

pub use result::{NcclError, NcclStatus};
pub use safe::*;
