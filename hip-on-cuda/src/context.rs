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
use std::ffi::{c_char, c_int, OsStr};
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
    hipDeviceAttributeIntegrated = 16 => A::CU_DEVICE_ATTRIBUTE_INTEGRATED,
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

/// ROCm >= 6's `hipDeviceProp_t` (`hipDeviceProp_tR0600`, 1472 bytes), opaque:
/// only the fields [`hipGetDevicePropertiesR0600`] fills are known here, by
/// their byte offsets ([`prop_r0600`]; the tests compare them with rocm-rs's
/// struct, and candle-rocm-hip's `abi_tests` rocm-rs's with ROCm's headers).
#[repr(C, align(8))]
pub struct hipDeviceProp_tR0600 {
    bytes: [u8; prop_r0600::SIZE],
}

/// Size and field offsets of `hipDeviceProp_tR0600` (types in the comments).
pub mod prop_r0600 {
    pub const SIZE: usize = 1472;
    /// `char[256]`
    pub const NAME: usize = 0;
    /// `size_t`
    pub const TOTAL_GLOBAL_MEM: usize = 288;
    /// `size_t`
    pub const SHARED_MEM_PER_BLOCK: usize = 296;
    /// `int`
    pub const WARP_SIZE: usize = 308;
    /// `int`
    pub const MAX_THREADS_PER_BLOCK: usize = 320;
    /// `int`
    pub const MAJOR: usize = 360;
    /// `int`
    pub const MINOR: usize = 364;
    /// `int`
    pub const MULTI_PROCESSOR_COUNT: usize = 388;
    /// `size_t`
    pub const SHARED_MEM_PER_BLOCK_OPTIN: usize = 696;
    /// `char[256]`
    pub const GCN_ARCH_NAME: usize = 1160;
}

/// The variable that sets the `gcnArchName` [`hipGetDevicePropertiesR0600`] reports.
pub const GCN_ARCH_NAME_VAR: &str = "HIP_ON_CUDA_GCN_ARCH_NAME";

/// The `gcnArchName` to report, given the value of [`GCN_ARCH_NAME_VAR`]:
/// unset, `sm_<major><minor>` (`sm_90`); set, the value itself when it is `gfx`
/// and 3 or 4 hex digits, the first not 0, optionally followed by `:` and
/// target features (`gfx1100`, `gfx90a:sramecc+:xnack-`), at most 255 bytes;
/// anything else (empty included) is an error that names the variable.
pub fn gcn_arch_name(var: Option<&OsStr>, major: c_int, minor: c_int) -> Result<String, String> {
    let Some(value) = var else { return Ok(format!("sm_{major}{minor}")) };
    let fail = || {
        format!(
            "{GCN_ARCH_NAME_VAR}={value:?} is not an AMD arch name (gfx and 3 or 4 hex digits, optionally \
             :features, e.g. gfx1100 or gfx90a:sramecc+:xnack-); unset it to report sm_{major}{minor}"
        )
    };
    let name = value.to_str().ok_or_else(fail)?;
    let digits =
        name.strip_prefix("gfx").and_then(|rest| rest.split(':').next()).unwrap_or_default();
    let hex = digits.bytes().all(|b| b.is_ascii_hexdigit()) && !digits.starts_with('0');
    if !hex || !(3..=4).contains(&digits.len()) || name.len() > 255 {
        return Err(fail());
    }
    Ok(name.to_string())
}

/// `hipGetDeviceProperties` of ROCm >= 6 (the header's macro names this
/// function), for what `candle-rocm-hip` reads: `name`, `totalGlobalMem`,
/// `sharedMemPerBlock`, `warpSize`, `maxThreadsPerBlock`, `major`, `minor`,
/// `multiProcessorCount`, `sharedMemPerBlockOptin` from the CUDA driver, and
/// `gcnArchName`; every other field is 0.
///
/// `gcnArchName` is `sm_<major><minor>` (`sm_90` on an H100), which is not a
/// `gfx` name, so ggml's compute capability (candle-rocm-hip's
/// `ggml_compute_capability`) has its NVIDIA meaning. With
/// `HIP_ON_CUDA_GCN_ARCH_NAME` set it is that value instead, which must look
/// like an AMD arch (`gfx1100`, `gfx90a:sramecc+:xnack-`; see [`gcn_arch_name`];
/// otherwise `hipErrorInvalidValue` and a line on stderr naming the variable):
/// it exists so that launchers compiled for an AMD arch under emulation
/// (`build-kernels.sh` with `AMD_ARCH=gfx1100`) get the compute capability of
/// that arch. It changes nothing else: the other fields, `warpSize` (32)
/// included, stay the NVIDIA device's.
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(
    prop: *mut hipDeviceProp_tR0600, ordinal: c_int,
) -> hipError_t {
    hip_call(|| properties(prop, ordinal, std::env::var_os(GCN_ARCH_NAME_VAR).as_deref()))
}

/// [`hipGetDevicePropertiesR0600`] with the value of [`GCN_ARCH_NAME_VAR`] given.
pub(crate) unsafe fn properties(
    prop: *mut hipDeviceProp_tR0600, ordinal: c_int, var: Option<&OsStr>,
) -> Result<(), hipError_t> {
    use prop_r0600 as at;
    if prop.is_null() {
        return Err(hipErrorInvalidValue);
    }
    let dev = device(ordinal)?;
    let attr = |a: A| {
        let mut v = 0;
        cu(cuda::cuDeviceGetAttribute(&mut v, a, dev)).map(|()| v)
    };
    let (major, minor) = (
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    let arch = gcn_arch_name(var, major, minor).map_err(|message| {
        eprintln!("hip-on-cuda: hipGetDevicePropertiesR0600: {message}");
        hipErrorInvalidValue
    })?;
    let mut arch_bytes = [0u8; 256];
    arch_bytes[..arch.len()].copy_from_slice(arch.as_bytes());
    let mut name = [0 as c_char; 256];
    cu(cuda::cuDeviceGetName(name.as_mut_ptr(), 255, dev))?;
    let mut total = 0usize;
    cu(cuda::cuDeviceTotalMem_v2(&mut total, dev))?;
    let smem = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as usize;
    let smem_optin = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize;
    let ints = [
        (at::WARP_SIZE, attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?),
        (at::MAX_THREADS_PER_BLOCK, attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?),
        (at::MAJOR, major),
        (at::MINOR, minor),
        (at::MULTI_PROCESSOR_COUNT, attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
    ];
    // Nothing is written before every query succeeded.
    let base = prop.cast::<u8>();
    std::ptr::write_bytes(base, 0, at::SIZE);
    base.add(at::NAME).cast::<[c_char; 256]>().write_unaligned(name);
    base.add(at::GCN_ARCH_NAME).cast::<[u8; 256]>().write_unaligned(arch_bytes);
    for (offset, value) in [
        (at::TOTAL_GLOBAL_MEM, total),
        (at::SHARED_MEM_PER_BLOCK, smem),
        (at::SHARED_MEM_PER_BLOCK_OPTIN, smem_optin),
    ] {
        base.add(offset).cast::<usize>().write_unaligned(value);
    }
    for (offset, value) in ints {
        base.add(offset).cast::<c_int>().write_unaligned(value);
    }
    Ok(())
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
    "hip_6.0": hipGetDevicePropertiesR0600;
}
