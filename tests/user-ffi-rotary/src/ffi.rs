use core::ffi::{c_int, c_void};

/// One launcher of kernels/rotary.cu: x, cos, sin, out, b*h, t, d, the stream.
pub(crate) type Launcher = unsafe extern "C" fn(*const c_void, *const c_void, *const c_void, *mut c_void, u32, u32, u32, *mut c_void) -> c_int;

extern "C" {
    pub(crate) fn run_rotary_f32(x: *const c_void, cos: *const c_void, sin: *const c_void, out: *mut c_void, bh: u32, t: u32, d: u32, stream: *mut c_void) -> c_int;
    pub(crate) fn run_rotary_f16(x: *const c_void, cos: *const c_void, sin: *const c_void, out: *mut c_void, bh: u32, t: u32, d: u32, stream: *mut c_void) -> c_int;
    pub(crate) fn run_rotary_bf16(x: *const c_void, cos: *const c_void, sin: *const c_void, out: *mut c_void, bh: u32, t: u32, d: u32, stream: *mut c_void) -> c_int;
}
