//! Raw HIP types, under the names that cudarc's `driver::sys` uses where the
//! generated code spells them.
#![allow(non_camel_case_types, non_snake_case)]

/// The raw HIP runtime bindings of rocm-rs.
pub use rocm_rs::hip::bindings as hip;

/// HIP status code (`hipError_t`).
pub type hipError_t = hip::hipError_t;
/// Device ordinal handle (`hipDevice_t`).
pub type CUdevice = hip::hipDevice_t;
/// Device address. Kept as `u64` as in cudarc so pointer arithmetic and kernel
/// argument packing are identical.
pub type CUdeviceptr = u64;
/// `hipStream_t`.
pub type CUstream = hip::hipStream_t;
/// `hipEvent_t`.
pub type CUevent = hip::hipEvent_t;
/// `hipModule_t`.
pub type CUmodule = hip::hipModule_t;
/// `hipFunction_t`.
pub type CUfunction = hip::hipFunction_t;

/// ROCm >= 6's `hipDeviceProp_t` (the header's `hipGetDeviceProperties` is a
/// macro for [`hipGetDevicePropertiesR0600`]).
pub type hipDeviceProp_t = hip::hipDeviceProp_tR0600;

/// `hipGetDevicePropertiesR0600` (ROCm >= 6.0, `hipGetDevicePropertiesR0600@hip_6.0`):
/// rocm-rs's binding, when the HIP runtime linked against has it (`build.rs`).
#[cfg(candle_rocm_hip_props_r0600)]
pub use hip::hipGetDevicePropertiesR0600;

/// `hipGetDevicePropertiesR0600` is not in the HIP runtime this crate was linked
/// against (HIP 5, see `build.rs`): `hipErrorNotSupported`, and `prop` is left alone.
///
/// # Safety
/// None needed: nothing is read or written.
#[cfg(not(candle_rocm_hip_props_r0600))]
pub unsafe fn hipGetDevicePropertiesR0600(
    _prop: *mut hipDeviceProp_t,
    _device: std::os::raw::c_int,
) -> hipError_t {
    hip::hipError_t_hipErrorNotSupported
}

/// `hipStreamPerThread`: a C macro (`(hipStream_t)2`) in the HIP headers, so absent
/// from the bindings.
pub const HIP_STREAM_PER_THREAD: usize = 2;

/// Capture state of a stream (`hipStreamCaptureStatus`, same values).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CUstreamCaptureStatus {
    CU_STREAM_CAPTURE_STATUS_NONE = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
}

impl CUstreamCaptureStatus {
    /// Maps a raw `hipStreamCaptureStatus`; unknown values are reported as invalidated.
    pub fn from_raw(raw: hip::hipStreamCaptureStatus) -> Self {
        match raw {
            0 => Self::CU_STREAM_CAPTURE_STATUS_NONE,
            1 => Self::CU_STREAM_CAPTURE_STATUS_ACTIVE,
            _ => Self::CU_STREAM_CAPTURE_STATUS_INVALIDATED,
        }
    }
}

/// Device attributes the generated code queries, mapped to `hipDeviceAttribute_t`
/// values. Note that on AMD GPUs "compute capability" is the gfx major/minor
/// (e.g. 9.0 for gfx90a) and the warp size is 64 on CDNA (32 on RDNA).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CUdevice_attribute {
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR =
        hip::hipDeviceAttribute_t_hipDeviceAttributeComputeCapabilityMajor,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR =
        hip::hipDeviceAttribute_t_hipDeviceAttributeComputeCapabilityMinor,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT =
        hip::hipDeviceAttribute_t_hipDeviceAttributeMultiprocessorCount,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK =
        hip::hipDeviceAttribute_t_hipDeviceAttributeMaxSharedMemoryPerBlock,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN =
        hip::hipDeviceAttribute_t_hipDeviceAttributeSharedMemPerBlockOptin,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = hip::hipDeviceAttribute_t_hipDeviceAttributeWarpSize,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED =
        hip::hipDeviceAttribute_t_hipDeviceAttributeMemoryPoolsSupported,
    /// An APU's GPU, sharing the host's memory (MI300A, Strix Halo).
    CU_DEVICE_ATTRIBUTE_INTEGRATED = hip::hipDeviceAttribute_t_hipDeviceAttributeIntegrated,
}

impl CUdevice_attribute {
    /// Every attribute, in the order of the context's cache.
    pub const ALL: [CUdevice_attribute; 8] = [
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
        CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED,
    ];

    /// Its place in [`CUdevice_attribute::ALL`] (a match, so that a new attribute must be
    /// given one).
    pub(crate) fn index(self) -> usize {
        use CUdevice_attribute::*;
        match self {
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 0,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => 1,
            CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => 2,
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK => 3,
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => 4,
            CU_DEVICE_ATTRIBUTE_WARP_SIZE => 5,
            CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED => 6,
            CU_DEVICE_ATTRIBUTE_INTEGRATED => 7,
        }
    }
}

#[cfg(test)]
mod attribute_tests {
    use super::CUdevice_attribute;

    #[test]
    fn every_attribute_has_its_own_cache_slot() {
        for (i, a) in CUdevice_attribute::ALL.iter().enumerate() {
            assert_eq!(a.index(), i, "{a:?}");
        }
    }
}

/// Event creation flags (`hipEventDefault`, `hipEventBlockingSync`, ...; same values).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CUevent_flags {
    CU_EVENT_DEFAULT = hip::hipEventDefault,
    CU_EVENT_BLOCKING_SYNC = hip::hipEventBlockingSync,
    CU_EVENT_DISABLE_TIMING = hip::hipEventDisableTiming,
    CU_EVENT_INTERPROCESS = hip::hipEventInterprocess,
}
