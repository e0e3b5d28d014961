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

/// Our words for statuses a user meets first, where HIP's own description differs
/// between releases (HIP 5.2's `hipGetErrorString` gives the enum name back).
const PLAIN_DESCRIPTIONS: &[(sys::hipError_t, &str)] = &[(hip::hipError_t_hipErrorNoDevice, "no ROCm device found")];

impl std::fmt::Display for HipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let described = PLAIN_DESCRIPTIONS.iter().find(|(status, _)| *status == self.0).map_or_else(|| self.error_string(), |(_, words)| words);
        if described == self.error_name() {
            write!(f, "HIP error {} ({})", self.error_name(), self.0)
        } else {
            write!(f, "HIP error {} ({}): {described}", self.error_name(), self.0)
        }
    }
}

impl std::error::Error for HipError {}

/// Free and total memory of the current device, in bytes (cudarc's
/// `driver::result::mem_get_info`, `hipMemGetInfo`).
pub fn mem_get_info() -> Result<(usize, usize), HipError> {
    let (mut free, mut total) = (0usize, 0usize);
    check(unsafe { hip::hipMemGetInfo(&mut free, &mut total) })?;
    Ok((free, total))
}

/// Device queries (cudarc's `driver::result::device`).
pub mod device {
    use super::*;

    /// The device of an ordinal (`hipDeviceGet`: on HIP the device is its ordinal).
    pub fn get(ordinal: i32) -> Result<sys::CUdevice, HipError> {
        let mut dev = 0;
        check(unsafe { hip::hipDeviceGet(&mut dev, ordinal) })?;
        Ok(dev)
    }
    /// `hipDeviceGetAttribute`.
    ///
    /// # Safety
    /// `dev` must be a valid device ordinal.
    pub unsafe fn get_attribute(
        dev: sys::CUdevice,
        attr: sys::CUdevice_attribute,
    ) -> Result<i32, HipError> {
        let mut value = 0;
        check(hip::hipDeviceGetAttribute(&mut value, attr as hip::hipDeviceAttribute_t, dev))?;
        if value == 0 && attr == sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN {
            // AMD has no opt-in shared memory: the per-block maximum is the limit. HIP 6.0
            // answers 0 here (ROCm/hip#3516), with which ggml's MMQ launchers find no tile that
            // fits and launch nothing; ggml's own HIP build reads `sharedMemPerBlock`.
            return get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
        }
        Ok(value)
    }

    /// The device's properties (`hipGetDevicePropertiesR0600`, ROCm >= 6's
    /// `hipGetDeviceProperties`). `hipErrorNotSupported` when this crate was
    /// linked against a HIP without that function (HIP 5: see `build.rs`).
    ///
    /// # Safety
    /// `dev` must be a valid device ordinal.
    pub unsafe fn get_properties(dev: sys::CUdevice) -> Result<sys::hipDeviceProp_t, HipError> {
        let mut prop = std::mem::MaybeUninit::<sys::hipDeviceProp_t>::zeroed();
        check(sys::hipGetDevicePropertiesR0600(prop.as_mut_ptr(), dev))?;
        // SAFETY: every field is an integer, an array of them or a raw pointer:
        // all-zero bytes are a valid value, whatever HIP wrote over them.
        Ok(prop.assume_init())
    }

    /// The device's `gcnArchName` (`gfx90a:sramecc+:xnack-`, `gfx1100`; on
    /// NVIDIA through hip-on-cuda `sm_90`, or what `HIP_ON_CUDA_GCN_ARCH_NAME` says).
    ///
    /// # Safety
    /// `dev` must be a valid device ordinal.
    pub unsafe fn gcn_arch_name(dev: sys::CUdevice) -> Result<String, HipError> {
        let prop = get_properties(dev)?;
        let bytes = prop.gcnArchName.map(|c| c as u8);
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..len]).into_owned())
    }

    /// ggml's `GGML_CUDA_CC_OFFSET_AMD`: AMD compute capabilities are this plus the arch id.
    pub const GGML_CUDA_CC_OFFSET_AMD: i32 = 0x1000000;

    /// The "compute capability" that ggml's launchers (`generated/kernels/mmq_gguf`)
    /// take as `cc`, as ggml's `ggml_cuda_init` computes it: on AMD
    /// [`GGML_CUDA_CC_OFFSET_AMD`] plus the arch id of the `gcnArchName`
    /// ([`ggml_arch_id`]: `gfx90a:sramecc+:xnack-` → `0x100090a`, `gfx1100` →
    /// `0x1001100`); for a name that is not `gfx...` (HIP's NVIDIA platform through
    /// hip-on-cuda, where it is `sm_90`) `nvidia_cc`, ggml's NVIDIA meaning that the
    /// caller computed from the compute-capability attributes (`major * 100 + minor * 10`,
    /// `900` on an H100).
    ///
    /// A `gfx` name that [`ggml_arch_id`] rejects is `hipErrorInvalidValue` (where
    /// ggml would fall back to `major`/`minor`, which loses the stepping: gfx90a
    /// would be GCN's 0x900, not CDNA2's 0x90a); [`gcn_arch_name`] and
    /// [`ggml_arch_id`] say why. `hipErrorNotSupported` on HIP 5 ([`get_properties`]).
    ///
    /// # Safety
    /// `dev` must be a valid device ordinal.
    pub unsafe fn ggml_compute_capability(dev: sys::CUdevice, nvidia_cc: i32) -> Result<i32, HipError> {
        let name = gcn_arch_name(dev)?;
        if name.starts_with("gfx") {
            let id = ggml_arch_id(&name).map_err(|_| HipError(hip::hipError_t_hipErrorInvalidValue))?;
            return Ok(GGML_CUDA_CC_OFFSET_AMD + id);
        }
        Ok(nvidia_cc)
    }

    /// A `gcnArchName` that [`ggml_arch_id`] cannot read, and why.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct GcnArchNameError {
        pub name: String,
        pub reason: &'static str,
    }

    impl std::fmt::Display for GcnArchNameError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "gcnArchName {:?} is not an AMD arch name ggml reads ({}): expected gfx<hex major><2 hex digits> \
                 with optional :features (gfx90a:sramecc+:xnack-, gfx1100) or gfx<major>[-<minor>]-generic",
                self.name, self.reason
            )
        }
    }

    impl std::error::Error for GcnArchNameError {}

    /// The arch id ggml's `ggml_cuda_parse_id` reads from a `gcnArchName`: `gfx`
    /// and any `:feature` suffix removed, the last two hex digits are the minor
    /// and what comes before them the hex major, `major * 0x100 + minor`
    /// (`gfx90a:xnack-` → `0x90a`, `gfx942` → `0x942`, `gfx1201` → `0x1201`); a
    /// generic name `gfx<major>[-<minor>]-generic` gives `major * 0x100 + minor * 0x10`
    /// (`gfx11-generic` → `0x1100`, `gfx9-4-generic` → `0x940`).
    ///
    /// Stricter than ggml's `strtoul`s, which read a prefix and give 0 for the
    /// rest: anything but hex digits where digits belong, a major of 0 (ggml
    /// calls such an id invalid) or above `0xff`, is an error naming the reason.
    pub fn ggml_arch_id(gcn_arch_name: &str) -> Result<i32, GcnArchNameError> {
        let fail = |reason| GcnArchNameError { name: gcn_arch_name.to_string(), reason };
        let hex = |digits: &str, what| match digits.bytes().all(|b| b.is_ascii_hexdigit()) && !digits.is_empty() {
            true => u32::from_str_radix(digits, 16).map_err(|_| fail("number too large")),
            false => Err(fail(what)),
        };
        let arch = gcn_arch_name.strip_prefix("gfx").ok_or_else(|| fail("no gfx prefix"))?;
        let arch = arch.split(':').next().unwrap_or_default();
        let (major, minor) = if let Some(generic) = arch.strip_suffix("-generic") {
            let mut parts = generic.split('-');
            let major = hex(parts.next().unwrap_or_default(), "generic major not hex digits")?;
            let minor = parts.next().map(|m| hex(m, "generic minor not hex digits")).transpose()?.unwrap_or(0);
            if parts.next().is_some() || minor > 0xf {
                return Err(fail("generic name not <major>[-<one hex digit>]-generic"));
            }
            (major, minor * 0x10)
        } else {
            // all ASCII from here on, so the split below is on a character boundary
            hex(arch, "not hex digits after gfx")?;
            if arch.len() < 3 {
                return Err(fail("fewer than three hex digits"));
            }
            let (major, minor) = arch.split_at(arch.len() - 2);
            (hex(major, "major not hex digits")?, hex(minor, "minor not hex digits")?)
        };
        if major == 0 || major > 0xff {
            return Err(fail("major not in 1..=0xff"));
        }
        Ok((major * 0x100 + minor) as i32)
    }

    /// Number of visible devices (`hipGetDeviceCount`; `hipErrorNoDevice` when none).
    pub fn get_count() -> Result<i32, HipError> {
        let mut count = 0;
        check(unsafe { hip::hipGetDeviceCount(&mut count) })?;
        Ok(count)
    }
}
