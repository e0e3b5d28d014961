//! Initialization, devices and HIP's implicit per-device context.
//!
//! HIP has no user-visible context: `hipSetDevice(n)` makes device `n` current on
//! the calling thread, and a thread that never called it works on device 0. Here
//! that is the CUDA primary context of the device (retained once, never released,
//! as HIP keeps its devices), made current with `cuCtxSetCurrent`. A
//! `hipDevice_t` is the device ordinal.
use crate::status::{cu, hipErrorInvalidValue, hipErrorNoDevice};
use crate::{hipError_t, hip_call, lookup};
use cudarc::driver::sys::{self as cuda, CUcontext, CUdevice, CUdevice_attribute as A};
use std::ffi::{c_char, c_int};
use std::ptr::null_mut;
use std::cell::Cell;
use std::sync::{Mutex, OnceLock};

/// Loads the CUDA driver library and runs `cuInit(0)`, once per process. No
/// driver library → `hipErrorNoDevice`; a failed `cuInit` → its translated
/// status (`CUDA_ERROR_NO_DEVICE` → `hipErrorNoDevice`).
pub fn init() -> Result<(), hipError_t> {
    static INIT: OnceLock<Result<(), hipError_t>> = OnceLock::new();
    *INIT.get_or_init(|| {
        crate::catch(Err(hipErrorNoDevice), || {
            // `cudarc` panics when it cannot load the library: look first.
            if !unsafe { cuda::is_culib_present() } {
                return Err(hipErrorNoDevice);
            }
            cu(unsafe { cuda::cuInit(0) })
        })
    })
}

/// The `CUdevice` of an ordinal (`hipErrorInvalidDevice` when out of range).
pub fn device(ordinal: c_int) -> Result<CUdevice, hipError_t> {
    init()?;
    let mut dev = 0;
    cu(unsafe { cuda::cuDeviceGet(&mut dev, ordinal) })?;
    Ok(dev)
}

/// The primary context of device `ordinal`, retained on first use. Primary
/// contexts are never released, so each thread keeps the last one it looked up:
/// `hipSetDevice` runs before nearly every call of `candle-rocm-hip`, and HIP's
/// own is a thread-local write, not a driver query and a lock.
pub fn primary(ordinal: c_int) -> Result<CUcontext, hipError_t> {
    thread_local! {
        static LAST: Cell<Option<(c_int, usize)>> = const { Cell::new(None) };
    }
    if let Some((_, ctx)) = LAST.get().filter(|&(o, _)| o == ordinal) {
        return Ok(ctx as CUcontext);
    }
    // (ordinal, context as an address: raw pointers are not `Send`).
    static PRIMARY: Mutex<Vec<(c_int, usize)>> = Mutex::new(Vec::new());
    let mut table = PRIMARY.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let ctx = match table.iter().find(|(o, _)| *o == ordinal) {
        Some(&(_, ctx)) => ctx as CUcontext,
        None => {
            let dev = device(ordinal)?;
            let mut ctx = null_mut();
            cu(unsafe { cuda::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
            table.push((ordinal, ctx as usize));
            ctx
        }
    };
    LAST.set(Some((ordinal, ctx as usize)));
    Ok(ctx)
}

thread_local! {
    /// Whether this thread is known to have a current context (one `hipSetDevice`
    /// made current, or one [`current`] found or set). Nothing here pops, unsets or
    /// releases a context, so it stays current: the driver is not asked again on
    /// every call.
    static HAS_CONTEXT: Cell<bool> = const { Cell::new(false) };
}

/// Makes sure the calling thread has a current context: device 0's primary
/// context when it has none (HIP's default device).
pub fn current() -> Result<(), hipError_t> {
    if HAS_CONTEXT.get() {
        return Ok(());
    }
    init()?;
    let mut ctx = null_mut();
    cu(unsafe { cuda::cuCtxGetCurrent(&mut ctx) })?;
    if ctx.is_null() {
        cu(unsafe { cuda::cuCtxSetCurrent(primary(0)?) })?;
    }
    HAS_CONTEXT.set(true);
    Ok(())
}

abi_table! {
    /// `hipDeviceAttribute_t` → `CUdevice_attribute`: the attributes that
    /// `candle-rocm-hip` queries. Any other is `hipErrorInvalidValue`.
    ATTRIBUTES: A, attributes_vs_rocm_rs, hip::bindings::hipDeviceAttribute_t_;
    hipDeviceAttributeComputeCapabilityMajor = 23 => A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    hipDeviceAttributeComputeCapabilityMinor = 61 => A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    hipDeviceAttributeMultiprocessorCount = 63 => A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    hipDeviceAttributeMaxSharedMemoryPerBlock = 74 => A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    hipDeviceAttributeSharedMemPerBlockOptin = 75 => A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    hipDeviceAttributeWarpSize = 87 => A::CU_DEVICE_ATTRIBUTE_WARP_SIZE,
    hipDeviceAttributeMemoryPoolsSupported = 88 => A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
}

/// Number of devices; `hipErrorNoDevice` (count 0) when there is none or no
/// CUDA driver at all.
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> hipError_t {
    hip_call(|| {
        if count.is_null() {
            return Err(hipErrorInvalidValue);
        }
        *count = 0;
        init()?;
        let mut n = 0;
        cu(cuda::cuDeviceGetCount(&mut n))?;
        *count = n;
        if n == 0 {
            return Err(hipErrorNoDevice);
        }
        Ok(())
    })
}

pub unsafe extern "C" fn hipDeviceGet(out: *mut c_int, ordinal: c_int) -> hipError_t {
    hip_call(|| {
        if out.is_null() {
            return Err(hipErrorInvalidValue);
        }
        device(ordinal)?;
        *out = ordinal;
        Ok(())
    })
}

pub unsafe extern "C" fn hipDeviceGetName(
    name: *mut c_char, len: c_int, ordinal: c_int,
) -> hipError_t {
    hip_call(|| {
        if name.is_null() || len <= 0 {
            return Err(hipErrorInvalidValue);
        }
        cu(cuda::cuDeviceGetName(name, len, device(ordinal)?))
    })
}

pub unsafe extern "C" fn hipDeviceGetAttribute(
    value: *mut c_int, attr: u32, ordinal: c_int,
) -> hipError_t {
    hip_call(|| {
        let cu_attr = lookup(ATTRIBUTES, attr).ok_or(hipErrorInvalidValue)?;
        if value.is_null() {
            return Err(hipErrorInvalidValue);
        }
        cu(cuda::cuDeviceGetAttribute(value, cu_attr, device(ordinal)?))
    })
}

/// Makes device `ordinal`'s primary context current on this thread (only asks
/// the driver to switch when another context is current, as cudarc binds).
pub unsafe extern "C" fn hipSetDevice(ordinal: c_int) -> hipError_t {
    hip_call(|| {
        let ctx = primary(ordinal)?;
        let mut current = null_mut();
        cu(cuda::cuCtxGetCurrent(&mut current))?;
        if current != ctx {
            cu(cuda::cuCtxSetCurrent(ctx))?;
        }
        HAS_CONTEXT.set(true);
        Ok(())
    })
}

/// Waits for all work of the current device.
pub unsafe extern "C" fn hipDeviceSynchronize() -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuCtxSynchronize())
    })
}

hip_exports! {
    "hip_4.2": hipGetDeviceCount, hipDeviceGet, hipDeviceGetName, hipDeviceGetAttribute, hipSetDevice,
        hipDeviceSynchronize;
}
