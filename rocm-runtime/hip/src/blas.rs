//! rocBLAS with the shapes of `cudarc::cublas`: [`RocBlas`], the [`Gemm`] trait and
//! the raw [`result::gemm_strided_batched_ex`].
//!
//! rocBLAS is linked only when `build.rs` finds it (cfg `candle_rocm_rocblas`);
//! otherwise every call fails with [`result::ROCBLAS_STATUS_NOT_LINKED`].
#![allow(clippy::too_many_arguments)]
use crate::driver::{DevicePtr, DevicePtrMut, HipStream};
use std::ffi::{c_int, c_longlong, c_void};
use std::sync::Arc;

/// rocBLAS C types and enums, under their C names.
#[allow(non_camel_case_types, non_upper_case_globals)]
pub mod sys {
    use super::c_void;
    use crate::driver::sys::CUstream;
    /// Opaque `rocblas_handle`.
    pub type rocblas_handle = *mut c_void;
    pub type rocblas_int = i32;
    pub type rocblas_stride = i64;
    pub type rocblas_status = u32;

    /// `rocblas_operation`.
    #[repr(u32)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum rocblas_operation {
        rocblas_operation_none = 111,
        rocblas_operation_transpose = 112,
        rocblas_operation_conjugate_transpose = 113,
    }

    /// `rocblas_datatype` (the real types used by candle; also the compute type of
    /// the `_ex` functions). No 8-bit float types: rocBLAS 6.4 has
    /// `rocblas_datatype_f8_r`/`_bf8_r` (170, 171), rocBLAS 7 does not (the ABI
    /// check `abi_tests.rs` found it against ROCm 7.2's headers).
    #[repr(u32)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum rocblas_datatype {
        rocblas_datatype_f16_r = 150,
        rocblas_datatype_f32_r = 151,
        rocblas_datatype_f64_r = 152,
        rocblas_datatype_i8_r = 160,
        rocblas_datatype_u8_r = 161,
        rocblas_datatype_i32_r = 162,
        rocblas_datatype_u32_r = 163,
        rocblas_datatype_bf16_r = 168,
    }

    /// Operand element types, under the renamed name of cuBLAS's `cudaDataType_t`
    /// (`CUDA_R_32F` → `ROCM_R_32F`, ...). The values are the matching
    /// `rocblas_datatype` values, which is what rocBLAS takes for operands.
    #[repr(u32)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum rocmDataType_t {
        ROCM_R_16F = 150,
        ROCM_R_32F = 151,
        ROCM_R_64F = 152,
        ROCM_R_8I = 160,
        ROCM_R_8U = 161,
        ROCM_R_32I = 162,
        ROCM_R_32U = 163,
        ROCM_R_16BF = 168,
    }

    /// `rocblas_gemm_algo`.
    #[repr(u32)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum rocblas_gemm_algo {
        rocblas_gemm_algo_standard = 0,
        rocblas_gemm_algo_solution_index = 1,
    }

    /// `rocblas_math_mode`, a handle-wide setting: XF32 takes the xf32 matrix
    /// instructions for f32 compute where rocBLAS has them (CDNA3); elsewhere
    /// `rocblas_set_math_mode` keeps the default and returns success.
    #[repr(u32)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum rocblas_math_mode {
        rocblas_default_math = 0,
        rocblas_xf32_xdl_math_op = 1,
    }

    /// The `rocblas_gemm_flags` this crate passes.
    pub const rocblas_gemm_flags_none: u32 = 0;
    /// MI200 (gfx90a) only: f16 HPA gemms through bf16 matrix instructions, so
    /// f16 subnormals are not flushed to zero (less accurate otherwise).
    pub const rocblas_gemm_flags_fp16_alt_impl: u32 = 0x4;

    /// A gemm's compute type, under the renamed name of cuBLAS's
    /// `cublasComputeType_t` (`CUBLAS_COMPUTE_32F` → `ROCBLAS_COMPUTE_32F`). Not a
    /// rocBLAS C type: rocBLAS takes the compute `rocblas_datatype` per call and
    /// reduced-precision f32 (cuBLAS's `CUBLAS_COMPUTE_32F_FAST_TF32`) as the
    /// handle's math mode; this is both.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum rocblasComputeType_t {
        ROCBLAS_COMPUTE_16F,
        ROCBLAS_COMPUTE_32F,
        ROCBLAS_COMPUTE_32F_FAST_XF32,
        ROCBLAS_COMPUTE_64F,
    }

    impl rocblasComputeType_t {
        /// The compute type argument of the `_ex` functions.
        pub fn datatype(self) -> rocblas_datatype {
            match self {
                Self::ROCBLAS_COMPUTE_16F => rocblas_datatype::rocblas_datatype_f16_r,
                Self::ROCBLAS_COMPUTE_32F | Self::ROCBLAS_COMPUTE_32F_FAST_XF32 => rocblas_datatype::rocblas_datatype_f32_r,
                Self::ROCBLAS_COMPUTE_64F => rocblas_datatype::rocblas_datatype_f64_r,
            }
        }
        /// The math mode the handle must have during the call.
        pub fn math_mode(self) -> rocblas_math_mode {
            match self {
                Self::ROCBLAS_COMPUTE_32F_FAST_XF32 => rocblas_math_mode::rocblas_xf32_xdl_math_op,
                _ => rocblas_math_mode::rocblas_default_math,
            }
        }
    }

    unlinked_ffi! { candle_rocm_rocblas, super::result::ROCBLAS_STATUS_NOT_LINKED;
        pub fn rocblas_create_handle(handle: *mut rocblas_handle) -> rocblas_status;
        pub fn rocblas_destroy_handle(handle: rocblas_handle) -> rocblas_status;
        pub fn rocblas_set_stream(handle: rocblas_handle, stream: CUstream) -> rocblas_status;
        pub fn rocblas_set_math_mode(handle: rocblas_handle, mode: u32) -> rocblas_status;
        pub fn rocblas_get_math_mode(handle: rocblas_handle, mode: *mut u32) -> rocblas_status;
        pub fn rocblas_gemm_strided_batched_ex(handle: rocblas_handle, trans_a: u32, trans_b: u32,
            m: rocblas_int, n: rocblas_int, k: rocblas_int, alpha: *const c_void,
            a: *const c_void, a_type: u32, lda: rocblas_int, stride_a: rocblas_stride,
            b: *const c_void, b_type: u32, ldb: rocblas_int, stride_b: rocblas_stride,
            beta: *const c_void,
            c: *const c_void, c_type: u32, ldc: rocblas_int, stride_c: rocblas_stride,
            d: *mut c_void, d_type: u32, ldd: rocblas_int, stride_d: rocblas_stride,
            batch_count: rocblas_int, compute_type: u32, algo: u32,
            solution_index: i32, flags: u32) -> rocblas_status;
    }
}

/// Status checking and thin wrappers over the rocBLAS C functions.
pub mod result {
    use super::*;

    /// Returned by every call when rocBLAS was not linked at build time (not a
    /// rocBLAS status value).
    pub const ROCBLAS_STATUS_NOT_LINKED: sys::rocblas_status = 0xFFFF_0001;
    /// Returned by f16 gemms when `CANDLE_ROCM_FP16_ALT_IMPL` is neither `0` nor `1`
    /// (not a rocBLAS status value).
    pub const ROCBLAS_STATUS_BAD_FP16_ALT_IMPL: sys::rocblas_status = 0xFFFF_0002;
    const FP16_ALT_IMPL_VAR: &str = "CANDLE_ROCM_FP16_ALT_IMPL";

    /// A rocBLAS status other than `rocblas_status_success`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct RocblasError(pub sys::rocblas_status);

    /// Status names without their `rocblas_status_` prefix, indexed by value.
    const NAMES: [&str; 16] = [
        "success", "invalid_handle", "not_implemented", "invalid_pointer", "invalid_size",
        "memory_error", "internal_error", "perf_degraded", "size_query_mismatch", "size_increased",
        "size_unchanged", "invalid_value", "continue", "check_numerics_fail", "excluded_from_build",
        "arch_mismatch",
    ];

    impl RocblasError {
        /// The C enum name of the status (`rocblas_status_...`).
        pub fn name(&self) -> String {
            match self.0 {
                ROCBLAS_STATUS_NOT_LINKED => "rocblas_library_not_linked".into(),
                ROCBLAS_STATUS_BAD_FP16_ALT_IMPL => "candle_rocm_fp16_alt_impl_invalid".into(),
                s => format!("rocblas_status_{}", NAMES.get(s as usize).unwrap_or(&"unknown")),
            }
        }
    }

    impl std::fmt::Display for RocblasError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "rocBLAS error {} ({})", self.name(), self.0)?;
            if self.0 == ROCBLAS_STATUS_NOT_LINKED {
                write!(f, ": rocBLAS was not found when building candle-rocm-hip (set CANDLE_ROCM_LINK_ROCBLAS=1 or ROCM_PATH)")?;
            }
            if self.0 == ROCBLAS_STATUS_BAD_FP16_ALT_IMPL {
                let value = std::env::var_os(FP16_ALT_IMPL_VAR).unwrap_or_default();
                write!(f, ": {FP16_ALT_IMPL_VAR}={value:?} is neither 1 (f16 gemms take rocBLAS's fp16_alt_impl, \
                    gfx90a's kernels that keep f16 subnormals) nor 0 (the default)")?;
            }
            Ok(())
        }
    }
    impl std::error::Error for RocblasError {}

    pub fn check(status: sys::rocblas_status) -> Result<(), RocblasError> {
        if status == 0 { Ok(()) } else { Err(RocblasError(status)) }
    }

    pub fn create_handle() -> Result<sys::rocblas_handle, RocblasError> {
        let mut handle = std::ptr::null_mut();
        check(unsafe { sys::rocblas_create_handle(&mut handle) })?;
        Ok(handle)
    }
    /// # Safety
    /// `handle` must come from [`create_handle`] and not be used afterwards.
    pub unsafe fn destroy_handle(handle: sys::rocblas_handle) -> Result<(), RocblasError> {
        check(sys::rocblas_destroy_handle(handle))
    }
    /// # Safety
    /// `handle` and `stream` must be valid.
    pub unsafe fn set_stream(handle: sys::rocblas_handle, stream: crate::driver::sys::CUstream) -> Result<(), RocblasError> {
        check(sys::rocblas_set_stream(handle, stream))
    }

    /// # Safety
    /// `handle` must be valid.
    pub unsafe fn set_math_mode(handle: sys::rocblas_handle, mode: sys::rocblas_math_mode) -> Result<(), RocblasError> {
        check(sys::rocblas_set_math_mode(handle, mode as u32))
    }
    /// The handle's math mode: the default where rocBLAS did not take a requested
    /// XF32 (an arch without it).
    ///
    /// # Safety
    /// `handle` must be valid.
    pub unsafe fn get_math_mode(handle: sys::rocblas_handle) -> Result<sys::rocblas_math_mode, RocblasError> {
        let mut mode = 0u32;
        check(sys::rocblas_get_math_mode(handle, &mut mode))?;
        Ok(match mode {
            0 => sys::rocblas_math_mode::rocblas_default_math,
            _ => sys::rocblas_math_mode::rocblas_xf32_xdl_math_op,
        })
    }

    /// `CANDLE_ROCM_FP16_ALT_IMPL=1`: f16 gemms pass `rocblas_gemm_flags_fp16_alt_impl`
    /// (read once; unset or `0`: not, as rocBLAS's default). Any other value fails
    /// every f16 gemm with [`ROCBLAS_STATUS_BAD_FP16_ALT_IMPL`].
    pub fn fp16_alt_impl() -> Result<bool, RocblasError> {
        static ALT: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
        ALT.get_or_init(|| parse_fp16_alt_impl(std::env::var(FP16_ALT_IMPL_VAR).ok().as_deref()))
            .ok_or(RocblasError(ROCBLAS_STATUS_BAD_FP16_ALT_IMPL))
    }

    /// The variable's value as [`fp16_alt_impl`] reads it; `None` if malformed.
    pub(crate) fn parse_fp16_alt_impl(value: Option<&str>) -> Option<bool> {
        match value {
            None | Some("0") => Some(false),
            Some("1") => Some(true),
            Some(_) => None,
        }
    }

    /// The gemm flags for operands of type `a_type`.
    fn gemm_flags(a_type: sys::rocmDataType_t) -> Result<u32, RocblasError> {
        let alt = a_type == sys::rocmDataType_t::ROCM_R_16F && fp16_alt_impl()?;
        Ok(if alt { sys::rocblas_gemm_flags_fp16_alt_impl } else { sys::rocblas_gemm_flags_none })
    }

    /// `rocblas_gemm_strided_batched_ex` with `C` updated in place (`D = C`). A
    /// compute type with a math mode (XF32) sets it on the handle for this call
    /// only and restores the default after, also when the gemm fails; concurrent
    /// f32 gemms on the same handle from other threads see it meanwhile.
    ///
    /// # Safety
    /// Pointers must be valid device memory holding `batch_count` matrices of the
    /// given types at the given element strides; `alpha` and `beta` are host
    /// pointers of the compute type.
    pub unsafe fn gemm_strided_batched_ex(
        handle: sys::rocblas_handle, transa: sys::rocblas_operation, transb: sys::rocblas_operation,
        m: c_int, n: c_int, k: c_int, alpha: *const c_void,
        a: *const c_void, a_type: sys::rocmDataType_t, lda: c_int, stride_a: c_longlong,
        b: *const c_void, b_type: sys::rocmDataType_t, ldb: c_int, stride_b: c_longlong,
        beta: *const c_void,
        c: *mut c_void, c_type: sys::rocmDataType_t, ldc: c_int, stride_c: c_longlong,
        batch_count: c_int, compute_type: sys::rocblasComputeType_t, algo: sys::rocblas_gemm_algo,
    ) -> Result<(), RocblasError> {
        let flags = gemm_flags(a_type)?;
        let mode = compute_type.math_mode();
        let scoped = mode != sys::rocblas_math_mode::rocblas_default_math;
        if scoped {
            set_math_mode(handle, mode)?;
        }
        let gemm = check(sys::rocblas_gemm_strided_batched_ex(
            handle, transa as u32, transb as u32, m, n, k, alpha,
            a, a_type as u32, lda, stride_a, b, b_type as u32, ldb, stride_b, beta,
            c, c_type as u32, ldc, stride_c, c, c_type as u32, ldc, stride_c,
            batch_count, compute_type.datatype() as u32, algo as u32, 0, flags,
        ));
        if scoped {
            let restored = set_math_mode(handle, sys::rocblas_math_mode::rocblas_default_math);
            gemm?;
            return restored;
        }
        gemm
    }

    /// cudarc's `cublas::result::hgemm`: one f16 gemm with f16 compute (`C = alpha
    /// op(A) op(B) + beta C`, column-major), through the same rocBLAS entry point
    /// as the batched gemms (a batch of one; cuBLAS's `cublasHgemm` is its f16
    /// `cublasGemmEx`). `alpha` and `beta` are host pointers.
    ///
    /// # Safety
    /// `a`, `b` and `c` must be valid device memory holding the matrices their
    /// sizes and leading dimensions describe.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn hgemm(
        handle: sys::rocblas_handle, transa: sys::rocblas_operation, transb: sys::rocblas_operation,
        m: c_int, n: c_int, k: c_int, alpha: *const half::f16,
        a: *const half::f16, lda: c_int, b: *const half::f16, ldb: c_int,
        beta: *const half::f16, c: *mut half::f16, ldc: c_int,
    ) -> Result<(), RocblasError> {
        let f16 = sys::rocmDataType_t::ROCM_R_16F;
        gemm_strided_batched_ex(
            handle, transa, transb, m, n, k, alpha.cast(), a.cast(), f16, lda, 0, b.cast(), f16, ldb, 0,
            beta.cast(), c.cast(), f16, ldc, 0, 1, sys::rocblasComputeType_t::ROCBLAS_COMPUTE_16F,
            sys::rocblas_gemm_algo::rocblas_gemm_algo_standard,
        )
    }
}

use result::RocblasError;

/// A rocBLAS handle bound to a stream (cudarc's `CudaBlas`).
#[derive(Debug)]
pub struct RocBlas {
    handle: sys::rocblas_handle,
    stream: Arc<HipStream>,
}
unsafe impl Send for RocBlas {}
unsafe impl Sync for RocBlas {}

impl RocBlas {
    /// Creates a handle on the stream's device and binds it to `stream`.
    pub fn new(stream: Arc<HipStream>) -> Result<Self, RocblasError> {
        let ctx = stream.context();
        ctx.record_err(ctx.bind_to_thread());
        let handle = result::create_handle()?;
        let blas = Self { handle, stream };
        unsafe { result::set_stream(blas.handle, blas.stream.cu_stream()) }?;
        Ok(blas)
    }
    pub fn handle(&self) -> &sys::rocblas_handle { &self.handle }
    pub fn stream(&self) -> &Arc<HipStream> { &self.stream }
    /// # Safety
    /// Work queued on the previous stream is not ordered with later calls.
    pub unsafe fn set_stream(&mut self, stream: Arc<HipStream>) -> Result<(), RocblasError> {
        self.stream = stream;
        result::set_stream(self.handle, self.stream.cu_stream())
    }
}

/// Destroying the handle can only fail for an invalid handle, which this type never
/// holds; the status is therefore not reported.
impl Drop for RocBlas {
    fn drop(&mut self) {
        let handle = std::mem::replace(&mut self.handle, std::ptr::null_mut());
        if !handle.is_null() {
            let _ = unsafe { result::destroy_handle(handle) };
        }
    }
}

/// Parameters of a column-major GEMM `C = alpha op(A) op(B) + beta C`.
#[derive(Debug, Copy, Clone)]
pub struct GemmConfig<T> {
    pub transa: sys::rocblas_operation,
    pub transb: sys::rocblas_operation,
    pub m: c_int,
    pub n: c_int,
    pub k: c_int,
    pub alpha: T,
    pub lda: c_int,
    pub ldb: c_int,
    pub beta: T,
    pub ldc: c_int,
}

/// A [`GemmConfig`] repeated `batch_size` times at fixed element strides.
#[derive(Debug, Copy, Clone)]
pub struct StridedBatchedConfig<T> {
    pub gemm: GemmConfig<T>,
    pub batch_size: c_int,
    pub stride_a: c_longlong,
    pub stride_b: c_longlong,
    pub stride_c: c_longlong,
}

/// GEMM for one element type (f32, f64: native compute; f16, bf16: f32 compute).
/// Both methods go through `rocblas_gemm_strided_batched_ex` (`gemm` as a batch of one).
pub trait Gemm<T> {
    /// # Safety
    /// The configuration must describe matrices that fit in `a`, `b` and `c`.
    unsafe fn gemm<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self, cfg: GemmConfig<T>, a: &A, b: &B, c: &mut C,
    ) -> Result<(), RocblasError>;
    /// # Safety
    /// As [`Gemm::gemm`], for every matrix of the batch.
    unsafe fn gemm_strided_batched<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self, cfg: StridedBatchedConfig<T>, a: &A, b: &B, c: &mut C,
    ) -> Result<(), RocblasError>;
}

macro_rules! impl_gemm {
    ($t:ty, $dt:ident, $compute:ident, $scalar:ty, $conv:expr) => {
        impl Gemm<$t> for RocBlas {
            unsafe fn gemm<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self, cfg: GemmConfig<$t>, a: &A, b: &B, c: &mut C,
            ) -> Result<(), RocblasError> {
                let cfg = StridedBatchedConfig { gemm: cfg, batch_size: 1, stride_a: 0, stride_b: 0, stride_c: 0 };
                self.gemm_strided_batched(cfg, a, b, c)
            }
            unsafe fn gemm_strided_batched<A: DevicePtr<$t>, B: DevicePtr<$t>, C: DevicePtrMut<$t>>(
                &self, cfg: StridedBatchedConfig<$t>, a: &A, b: &B, c: &mut C,
            ) -> Result<(), RocblasError> {
                let conv: fn($t) -> $scalar = $conv;
                let (g, alpha, beta) = (cfg.gemm, conv(cfg.gemm.alpha), conv(cfg.gemm.beta));
                // the handle is bound to its device and stream: no hipSetDevice (as cudarc)
                let (a, _ra) = a.device_ptr(&self.stream);
                let (b, _rb) = b.device_ptr(&self.stream);
                let (c, _rc) = c.device_ptr_mut(&self.stream);
                let dt = sys::rocmDataType_t::$dt;
                result::gemm_strided_batched_ex(
                    self.handle, g.transa, g.transb, g.m, g.n, g.k,
                    &alpha as *const $scalar as *const c_void,
                    a as *const c_void, dt, g.lda, cfg.stride_a,
                    b as *const c_void, dt, g.ldb, cfg.stride_b,
                    &beta as *const $scalar as *const c_void,
                    c as *mut c_void, dt, g.ldc, cfg.stride_c, cfg.batch_size,
                    sys::rocblasComputeType_t::$compute, sys::rocblas_gemm_algo::rocblas_gemm_algo_standard,
                )
            }
        }
    };
}
impl_gemm!(f32, ROCM_R_32F, ROCBLAS_COMPUTE_32F, f32, |x| x);
impl_gemm!(f64, ROCM_R_64F, ROCBLAS_COMPUTE_64F, f64, |x| x);
impl_gemm!(half::f16, ROCM_R_16F, ROCBLAS_COMPUTE_32F, f32, |x| x.to_f32());
impl_gemm!(half::bf16, ROCM_R_16BF, ROCBLAS_COMPUTE_32F, f32, |x| x.to_f32());
