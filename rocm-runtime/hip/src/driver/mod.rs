//! The HIP runtime with the shapes of `cudarc::driver`.
mod context;
mod launch;
mod memory;
mod module;
mod slice;
pub mod result;
pub mod sys;

pub use context::{BufferEvent, HipContext, HipEvent, HipStream};
pub use launch::{LaunchArgs, LaunchConfig, PushKernelArg};
pub use module::{CodeObject, HipFunction, HipModule};
pub use result::HipError;
pub use slice::{
    DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, HipSlice, HipView, HipViewMut, HostSlice,
    SyncOnDrop, ValidAsZeroBits,
};

/// cudarc's `driver::safe` path (e.g. `driver::safe::HipContext`): the same items.
pub mod safe {
    pub use super::*;
}

#[cfg(test)]
pub(crate) use module::{aligned_image as module_image_for_tests, FunctionHandle};
