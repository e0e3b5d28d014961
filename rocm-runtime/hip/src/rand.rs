//! rocRAND with the shapes of `cudarc::curand`: [`HipRng`].
//!
//! rocRAND is linked only when `build.rs` finds it (cfg `candle_rocm_rocrand`);
//! otherwise every call fails with [`result::ROCRAND_STATUS_NOT_LINKED`].
use crate::driver::{DevicePtrMut, HipStream};
use std::sync::Arc;

/// rocRAND C types, under their C names.
#[allow(non_camel_case_types)]
pub mod sys {
    use crate::driver::sys::CUstream;
    /// Opaque `rocrand_generator`.
    pub type rocrand_generator = *mut std::ffi::c_void;
    pub type rocrand_status = u32;
    /// `ROCRAND_RNG_PSEUDO_DEFAULT` (XORWOW).
    pub const ROCRAND_RNG_PSEUDO_DEFAULT: u32 = 400;

    unlinked_ffi! { candle_rocm_rocrand, super::result::ROCRAND_STATUS_NOT_LINKED;
        pub fn rocrand_create_generator(generator: *mut rocrand_generator, rng_type: u32) -> rocrand_status;
        pub fn rocrand_destroy_generator(generator: rocrand_generator) -> rocrand_status;
        pub fn rocrand_set_stream(generator: rocrand_generator, stream: CUstream) -> rocrand_status;
        pub fn rocrand_set_seed(generator: rocrand_generator, seed: u64) -> rocrand_status;
        pub fn rocrand_generate_uniform(generator: rocrand_generator, out: *mut f32, n: usize) -> rocrand_status;
        pub fn rocrand_generate_uniform_double(generator: rocrand_generator, out: *mut f64, n: usize) -> rocrand_status;
        pub fn rocrand_generate_normal(generator: rocrand_generator, out: *mut f32, n: usize, mean: f32, stddev: f32) -> rocrand_status;
        pub fn rocrand_generate_normal_double(generator: rocrand_generator, out: *mut f64, n: usize, mean: f64, stddev: f64) -> rocrand_status;
    }
}

/// Status checking.
pub mod result {
    use super::sys;

    /// Returned by every call when rocRAND was not linked at build time (not a
    /// rocRAND status value).
    pub const ROCRAND_STATUS_NOT_LINKED: sys::rocrand_status = 0xFFFF_0002;

    /// A rocRAND status other than `ROCRAND_STATUS_SUCCESS`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct RocrandError(pub sys::rocrand_status);

    impl RocrandError {
        /// The C enum name of the status.
        pub fn name(&self) -> &'static str {
            const NAMES: [&str; 9] = [
                "ROCRAND_STATUS_VERSION_MISMATCH",
                "ROCRAND_STATUS_NOT_CREATED",
                "ROCRAND_STATUS_ALLOCATION_FAILED",
                "ROCRAND_STATUS_TYPE_ERROR",
                "ROCRAND_STATUS_OUT_OF_RANGE",
                "ROCRAND_STATUS_LENGTH_NOT_MULTIPLE",
                "ROCRAND_STATUS_DOUBLE_PRECISION_REQUIRED",
                "ROCRAND_STATUS_LAUNCH_FAILURE",
                "ROCRAND_STATUS_INTERNAL_ERROR",
            ];
            match self.0 {
                0 => "ROCRAND_STATUS_SUCCESS",
                ROCRAND_STATUS_NOT_LINKED => "ROCRAND_LIBRARY_NOT_LINKED",
                s => s.checked_sub(100).and_then(|i| NAMES.get(i as usize)).copied().unwrap_or("ROCRAND_STATUS_UNKNOWN"),
            }
        }
    }

    impl std::fmt::Display for RocrandError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "rocRAND error {} ({})", self.name(), self.0)?;
            if self.0 == ROCRAND_STATUS_NOT_LINKED {
                write!(f, ": rocRAND was not found when building candle-rocm-hip (set CANDLE_ROCM_LINK_ROCRAND=1 or ROCM_PATH)")?;
            }
            Ok(())
        }
    }
    impl std::error::Error for RocrandError {}

    pub fn check(status: sys::rocrand_status) -> Result<(), RocrandError> {
        if status == 0 { Ok(()) } else { Err(RocrandError(status)) }
    }
}

use result::{check, RocrandError};

/// A pseudo-random generator (`ROCRAND_RNG_PSEUDO_DEFAULT`) seeded once and bound
/// to a stream (cudarc's `CudaRng`).
#[derive(Debug)]
pub struct HipRng {
    generator: sys::rocrand_generator,
    stream: Arc<HipStream>,
}
unsafe impl Send for HipRng {}
unsafe impl Sync for HipRng {}

/// Destroying can only fail for an invalid generator, which this type never holds;
/// the status is therefore not reported.
impl Drop for HipRng {
    fn drop(&mut self) {
        let generator = std::mem::replace(&mut self.generator, std::ptr::null_mut());
        if !generator.is_null() {
            let _ = unsafe { sys::rocrand_destroy_generator(generator) };
        }
    }
}

/// Element types rocRAND can fill: `f32` and `f64`.
pub trait RandFill: Sized {
    /// # Safety
    /// `out` must be valid device memory for `n` elements.
    unsafe fn uniform(g: sys::rocrand_generator, out: *mut Self, n: usize) -> sys::rocrand_status;
    /// # Safety
    /// As [`RandFill::uniform`].
    unsafe fn normal(g: sys::rocrand_generator, out: *mut Self, n: usize, mean: Self, std: Self) -> sys::rocrand_status;
}
macro_rules! impl_fill {
    ($t:ty, $uniform:ident, $normal:ident) => {
        impl RandFill for $t {
            unsafe fn uniform(g: sys::rocrand_generator, out: *mut $t, n: usize) -> sys::rocrand_status {
                sys::$uniform(g, out, n)
            }
            unsafe fn normal(g: sys::rocrand_generator, out: *mut $t, n: usize, mean: $t, std: $t) -> sys::rocrand_status {
                sys::$normal(g, out, n, mean, std)
            }
        }
    };
}
impl_fill!(f32, rocrand_generate_uniform, rocrand_generate_normal);
impl_fill!(f64, rocrand_generate_uniform_double, rocrand_generate_normal_double);

impl HipRng {
    pub fn new(seed: u64, stream: Arc<HipStream>) -> Result<Self, RocrandError> {
        let ctx = stream.context();
        ctx.record_err(ctx.bind_to_thread());
        let mut generator = std::ptr::null_mut();
        check(unsafe { sys::rocrand_create_generator(&mut generator, sys::ROCRAND_RNG_PSEUDO_DEFAULT) })?;
        // From here on `rng` owns the generator and destroys it on early return.
        let rng = Self { generator, stream };
        check(unsafe { sys::rocrand_set_stream(rng.generator, rng.stream.cu_stream()) })?;
        check(unsafe { sys::rocrand_set_seed(rng.generator, seed) })?;
        Ok(rng)
    }
    /// Reseeds the generator.
    pub fn set_seed(&mut self, seed: u64) -> Result<(), RocrandError> {
        check(unsafe { sys::rocrand_set_seed(self.generator, seed) })
    }
    /// Fills `dst` with uniform values in (0, 1].
    pub fn fill_with_uniform<T: RandFill, Dst: DevicePtrMut<T>>(&self, dst: &mut Dst) -> Result<(), RocrandError> {
        let (n, ctx) = (dst.len(), self.stream.context());
        ctx.record_err(ctx.bind_to_thread()); // the generator's state lives on this device
        let (ptr, _record) = dst.device_ptr_mut(&self.stream);
        check(unsafe { T::uniform(self.generator, ptr as *mut T, n) })
    }
    /// Fills `dst` with normal values. rocRAND's pseudo generators need an even
    /// length (`ROCRAND_STATUS_LENGTH_NOT_MULTIPLE` otherwise).
    pub fn fill_with_normal<T: RandFill, Dst: DevicePtrMut<T>>(
        &self,
        dst: &mut Dst,
        mean: T,
        std: T,
    ) -> Result<(), RocrandError> {
        let (n, ctx) = (dst.len(), self.stream.context());
        ctx.record_err(ctx.bind_to_thread());
        let (ptr, _record) = dst.device_ptr_mut(&self.stream);
        check(unsafe { T::normal(self.generator, ptr as *mut T, n, mean, std) })
    }
}
