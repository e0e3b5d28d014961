//! The HIP entry points that host code compiled by hipcc for AMD calls: kernel
//! registration at load time, `<<<...>>>` launches (`__hipPushCallConfiguration`,
//! `hipLaunchKernel`) and the error and device queries around them.
//!
//! Such code (the MMQ/MMVQ/MoE launchers of `libcandle_rocm_launchers.so` as
//! candle-rocm-kernels builds it with hipcc) carries AMD code objects, which an
//! NVIDIA GPU cannot run; on the NVIDIA machine the nvcc build of the same
//! launchers replaces it (`hip-on-cuda/build-kernels.sh`) and never calls these.
//! They exist so that a binary linked with the AMD launchers still loads with
//! this library as its HIP runtime (CI runs the GPU bundle on a machine without
//! a GPU): registration accepts the fat binary and records nothing, and every
//! launch fails with `hipErrorNoBinaryForGpu`, which `hipGetLastError` then
//! reports. Nothing here pretends to run a kernel.
use crate::context::{current, init};
use crate::status::{cu, hipErrorInvalidDeviceFunction, hipErrorInvalidValue, hipErrorNoBinaryForGpu, hipSuccess};
use crate::{hipError_t, hip_call};
use cudarc::driver::sys as cuda;
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_uint, c_void};

/// `dim3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dim3 {
    pub x: c_uint,
    pub y: c_uint,
    pub z: c_uint,
}

/// A launch configuration pushed by `<<<...>>>` and popped by the kernel's host stub.
#[derive(Clone, Copy)]
struct CallConfiguration {
    grid: Dim3,
    block: Dim3,
    shared_mem: usize,
    stream: *mut c_void,
}

thread_local! {
    static LAST_ERROR: Cell<hipError_t> = const { Cell::new(hipSuccess) };
    static CALL_CONFIGURATION: Cell<Option<CallConfiguration>> = const { Cell::new(None) };
}

fn fail(status: hipError_t) -> hipError_t {
    LAST_ERROR.with(|e| e.set(status));
    status
}

/// The handle of every registered fat binary: nothing is kept for it.
static FAT_BINARY_HANDLE: usize = 0;

/// Accepts an AMD fat binary; its kernels can never be launched here.
pub unsafe extern "C" fn __hipRegisterFatBinary(_data: *const c_void) -> *mut *mut c_void {
    std::ptr::addr_of!(FAT_BINARY_HANDLE) as *mut *mut c_void
}

pub unsafe extern "C" fn __hipUnregisterFatBinary(_modules: *mut *mut c_void) {}

#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn __hipRegisterFunction(
    _modules: *mut *mut c_void, _host_function: *const c_void, _device_function: *mut c_char,
    _device_name: *const c_char, _thread_limit: c_uint, _tid: *mut c_void, _bid: *mut c_void,
    _block_dim: *mut Dim3, _grid_dim: *mut Dim3, _w_size: *mut c_int,
) {
}

pub unsafe extern "C" fn __hipPushCallConfiguration(
    grid: Dim3, block: Dim3, shared_mem: usize, stream: *mut c_void,
) -> hipError_t {
    CALL_CONFIGURATION.with(|c| c.set(Some(CallConfiguration { grid, block, shared_mem, stream })));
    hipSuccess
}

pub unsafe extern "C" fn __hipPopCallConfiguration(
    grid: *mut Dim3, block: *mut Dim3, shared_mem: *mut usize, stream: *mut *mut c_void,
) -> hipError_t {
    let Some(config) = CALL_CONFIGURATION.with(|c| c.take()) else { return fail(hipErrorInvalidValue) };
    if grid.is_null() || block.is_null() || shared_mem.is_null() || stream.is_null() {
        return fail(hipErrorInvalidValue);
    }
    *grid = config.grid;
    *block = config.block;
    *shared_mem = config.shared_mem;
    *stream = config.stream;
    hipSuccess
}

/// A kernel of AMD-compiled host code: there is no image for this GPU.
pub unsafe extern "C" fn hipLaunchKernel(
    _function: *const c_void, _grid: Dim3, _block: Dim3, _args: *mut *mut c_void,
    _shared_mem: usize, _stream: *mut c_void,
) -> hipError_t {
    fail(hipErrorNoBinaryForGpu)
}

/// AMD-compiled kernels have no attributes to set here.
pub unsafe extern "C" fn hipFuncSetAttribute(
    _function: *const c_void, _attribute: c_uint, _value: c_int,
) -> hipError_t {
    fail(hipErrorInvalidDeviceFunction)
}

/// The last error of this thread's launches, reset to `hipSuccess` by the call.
pub unsafe extern "C" fn hipGetLastError() -> hipError_t {
    LAST_ERROR.with(|e| e.replace(hipSuccess))
}

/// The device of this thread's current context (device 0 when none was set).
pub unsafe extern "C" fn hipGetDevice(ordinal: *mut c_int) -> hipError_t {
    let status = hip_call(|| {
        if ordinal.is_null() {
            return Err(hipErrorInvalidValue);
        }
        init()?;
        current()?;
        let mut dev = 0;
        cu(cuda::cuCtxGetDevice(&mut dev))?;
        *ordinal = dev;
        Ok(())
    });
    if status != hipSuccess {
        fail(status);
    }
    status
}

hip_exports! {
    "hip_4.2": __hipRegisterFatBinary, __hipUnregisterFatBinary, __hipRegisterFunction,
        __hipPushCallConfiguration, __hipPopCallConfiguration, hipLaunchKernel, hipFuncSetAttribute,
        hipGetLastError, hipGetDevice;
}
