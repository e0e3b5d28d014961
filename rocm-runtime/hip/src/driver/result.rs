//! The HIP error type and the few raw calls that the generated code makes directly.
use super::sys::{self, hip};
use std::ffi::CStr;

/// A HIP runtime status other than `hipSuccess` (cudarc's `DriverError`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct HipError(pub sys::hipError_t);

/// Turns a HIP status into a `Result`.
pub fn check(status: sys::hipError_t) -> Result<(), HipError> {
    if status == hip::hipError_t_hipSuccess {
        Ok(())
    } else {
        Err(HipError(status))
    }
}

fn static_cstr(p: *const std::os::raw::c_char) -> Option<&'static str> {
    // SAFETY: HIP returns pointers to static, NUL-terminated strings (or null).
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("<non-utf8>"))
}

impl HipError {
    /// The enum name, e.g. `hipErrorNoDevice` (from `hipGetErrorName`).
    pub fn error_name(&self) -> &'static str {
        static_cstr(unsafe { hip::hipGetErrorName(self.0) }).unwrap_or("hipErrorUnknown")
    }
    /// The description (from `hipGetErrorString`).
    pub fn error_string(&self) -> &'static str {
        static_cstr(unsafe { hip::hipGetErrorString(self.0) }).unwrap_or("unknown error")
    }
}

impl std::fmt::Debug for HipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HipError({}, {})", self.error_name(), self.0)
    }
}

impl std::fmt::Display for HipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HIP error {} ({}): {}", self.error_name(), self.0, self.error_string())
    }
}

impl std::error::Error for HipError {}

/// Device queries (cudarc's `driver::result::device`).
pub mod device {
    use super::*;
    /// `hipDeviceGetAttribute`.
    ///
    /// # Safety
    /// `dev` must be a valid device ordinal.
    pub unsafe fn get_attribute(
        dev: sys::CUdevice,
        attr: sys::CUdevice_attribute,
    ) -> Result<i32, HipError> {
        if attr == sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_KERNEL_WARP_SIZE {
            return Ok(sys::KERNEL_WARP_SIZE);
        }
        let mut value = 0;
        check(hip::hipDeviceGetAttribute(&mut value, attr as hip::hipDeviceAttribute_t, dev))?;
        Ok(value)
    }

    /// Number of visible devices (`hipGetDeviceCount`; `hipErrorNoDevice` when none).
    pub fn get_count() -> Result<i32, HipError> {
        let mut count = 0;
        check(unsafe { hip::hipGetDeviceCount(&mut count) })?;
        Ok(count)
    }
}
