//! rocBLAS over cuBLAS: `rocblas_handle` is `cublasHandle_t` (created on the
//! current device, host pointer mode by default as in rocBLAS), and
//! `rocblas_gemm_strided_batched_ex` is `cublasGemmStridedBatchedEx`. Both
//! libraries are column-major with the same m, n, k, lda, ... and strides in
//! elements, so the call maps argument for argument. rocBLAS's XF32 math mode is
//! cuBLAS's `CUBLAS_TF32_TENSOR_OP_MATH` on the handle, and an f32 gemm on a
//! handle in that mode computes with `CUBLAS_COMPUTE_32F_FAST_TF32`, as rocBLAS
//! takes xf32 for f32 compute of f32 operands on CDNA3.
use crate::context::current;
use crate::status::{
    rocblas_from_cublas, rocblas_status, rocblas_status_internal_error,
    rocblas_status_invalid_handle, rocblas_status_invalid_pointer, rocblas_status_invalid_value,
    rocblas_status_not_implemented, rocblas_status_success,
};
use crate::{catch, lookup};
use cudarc::cublas::sys::{
    self as cublas, cublasComputeType_t as CT, cublasGemmAlgo_t, cublasHandle_t, cublasMath_t as MM,
    cublasOperation_t as Op, cublasPointerMode_t as PM, cudaDataType_t as DT,
};
use cudarc::driver::sys::CUstream;
use std::ffi::c_void;
use std::sync::OnceLock;

abi_table! {
    /// Operand types (`rocblas_datatype`) → `cudaDataType`: the real types.
    DATATYPES: DT, datatypes_vs_rocm_rs, rocblas::ffi::rocblas_datatype__;
    rocblas_datatype_f16_r = 150 => DT::CUDA_R_16F,
    rocblas_datatype_f32_r = 151 => DT::CUDA_R_32F,
    rocblas_datatype_f64_r = 152 => DT::CUDA_R_64F,
    rocblas_datatype_bf16_r = 168 => DT::CUDA_R_16BF,
}

abi_table! {
    /// Compute types (`rocblas_datatype`) → `cublasComputeType_t`. f32 is
    /// `CUBLAS_COMPUTE_32F`, and TF32 only in the handle's XF32 math mode.
    COMPUTE_TYPES: CT, compute_types_vs_rocm_rs, rocblas::ffi::rocblas_datatype__;
    rocblas_datatype_f16_r = 150 => CT::CUBLAS_COMPUTE_16F,
    rocblas_datatype_f32_r = 151 => CT::CUBLAS_COMPUTE_32F,
    rocblas_datatype_f64_r = 152 => CT::CUBLAS_COMPUTE_64F,
}

abi_table! {
    OPERATIONS: Op, operations_vs_rocm_rs, rocblas::ffi::rocblas_operation__;
    rocblas_operation_none = 111 => Op::CUBLAS_OP_N,
    rocblas_operation_transpose = 112 => Op::CUBLAS_OP_T,
    rocblas_operation_conjugate_transpose = 113 => Op::CUBLAS_OP_C,
}

abi_table! {
    /// Math modes (`rocblas_math_mode`) → `cublasMath_t`: the only two modes the
    /// handle is ever set to, so reading it back gives one of them.
    MATH_MODES: MM, math_modes_vs_rocm_rs, rocblas::ffi::rocblas_math_mode__;
    rocblas_default_math = 0 => MM::CUBLAS_DEFAULT_MATH,
    rocblas_xf32_xdl_math_op = 1 => MM::CUBLAS_TF32_TENSOR_OP_MATH,
}

abi_table! {
    POINTER_MODES: PM, pointer_modes_vs_rocm_rs, rocblas::ffi::rocblas_pointer_mode__;
    rocblas_pointer_mode_host = 0 => PM::CUBLAS_POINTER_MODE_HOST,
    rocblas_pointer_mode_device = 1 => PM::CUBLAS_POINTER_MODE_DEVICE,
}

/// `rocblas_gemm_algo_standard`, the only algorithm accepted, and the flags
/// accepted: none, or `rocblas_gemm_flags_fp16_alt_impl`, which changes nothing
/// here (it is for gfx90a's f16 matrix instructions, which flush subnormals;
/// NVIDIA's keep them, and rocBLAS ignores the flag on other AMD arches too).
pub const rocblas_gemm_algo_standard: u32 = 0;
pub const rocblas_gemm_flags_none: u32 = 0;
pub const rocblas_gemm_flags_fp16_alt_impl: u32 = 0x4;
/// The math mode in which f32 gemms take TF32.
pub const rocblas_xf32_xdl_math_op: u32 = 1;

/// Body of a rocBLAS function: a panic is `rocblas_status_internal_error`.
fn blas_call(f: impl FnOnce() -> Result<(), rocblas_status>) -> rocblas_status {
    catch(rocblas_status_internal_error, || f().err().unwrap_or(rocblas_status_success))
}

fn check(s: cublas::cublasStatus_t) -> Result<(), rocblas_status> {
    match rocblas_from_cublas(s) {
        rocblas_status_success => Ok(()),
        e => Err(e),
    }
}

fn handle_of(handle: cublasHandle_t) -> Result<cublasHandle_t, rocblas_status> {
    if handle.is_null() {
        Err(rocblas_status_invalid_handle)
    } else {
        Ok(handle)
    }
}

/// cuBLAS can be loaded and a device context is current; else
/// `rocblas_status_internal_error`.
fn ready() -> Result<(), rocblas_status> {
    static LOADED: OnceLock<bool> = OnceLock::new();
    if !crate::loadable(&LOADED, "cublas", cublas::is_culib_present) {
        return Err(rocblas_status_internal_error);
    }
    current().map_err(|_| rocblas_status_internal_error)
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_create_handle(handle: *mut cublasHandle_t) -> rocblas_status {
    blas_call(|| {
        if handle.is_null() {
            return Err(rocblas_status_invalid_handle);
        }
        ready()?;
        check(cublas::cublasCreate_v2(handle))?;
        crate::watch_exit();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_destroy_handle(handle: cublasHandle_t) -> rocblas_status {
    blas_call(|| {
        let handle = handle_of(handle)?;
        if crate::exiting() {
            return Ok(());
        }
        check(cublas::cublasDestroy_v2(handle))
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_set_stream(
    handle: cublasHandle_t, stream: CUstream,
) -> rocblas_status {
    blas_call(|| {
        check(cublas::cublasSetStream_v2(handle_of(handle)?, stream as cublas::cudaStream_t))
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_set_pointer_mode(
    handle: cublasHandle_t, mode: u32,
) -> rocblas_status {
    blas_call(|| {
        let mode = lookup(POINTER_MODES, mode).ok_or(rocblas_status_invalid_value)?;
        check(cublas::cublasSetPointerMode_v2(handle_of(handle)?, mode))
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_set_math_mode(handle: cublasHandle_t, mode: u32) -> rocblas_status {
    blas_call(|| {
        let mode = lookup(MATH_MODES, mode).ok_or(rocblas_status_invalid_value)?;
        check(cublas::cublasSetMathMode(handle_of(handle)?, mode))
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_get_math_mode(handle: cublasHandle_t, mode: *mut u32) -> rocblas_status {
    blas_call(|| {
        if mode.is_null() {
            return Err(rocblas_status_invalid_pointer);
        }
        *mode = rocblas_math_mode_of(handle_of(handle)?)?;
        Ok(())
    })
}

/// The handle's math mode as `rocblas_math_mode`.
unsafe fn rocblas_math_mode_of(handle: cublasHandle_t) -> Result<u32, rocblas_status> {
    let mut mode = MM::CUBLAS_DEFAULT_MATH;
    check(cublas::cublasGetMathMode(handle, &mut mode))?;
    MATH_MODES.iter().find(|(_, m)| *m == mode).map(|&(r, _)| r).ok_or(rocblas_status_internal_error)
}

/// `D = alpha op(A) op(B) + beta C` for `batch_count` matrices. cuBLAS updates C
/// in place, so only `c == d` with the same type, leading dimension and stride
/// is accepted (what `candle-rocm-hip` passes); otherwise, and for any other
/// algorithm or flags, `rocblas_status_not_implemented`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rocblas_gemm_strided_batched_ex(
    handle: cublasHandle_t, trans_a: u32, trans_b: u32, m: i32, n: i32, k: i32,
    alpha: *const c_void, a: *const c_void, a_type: u32, lda: i32, stride_a: i64, b: *const c_void,
    b_type: u32, ldb: i32, stride_b: i64, beta: *const c_void, c: *const c_void, c_type: u32,
    ldc: i32, stride_c: i64, d: *mut c_void, d_type: u32, ldd: i32, stride_d: i64,
    batch_count: i32, compute_type: u32, algo: u32, _solution_index: i32, flags: u32,
) -> rocblas_status {
    blas_call(|| {
        let handle = handle_of(handle)?;
        let same_cd = std::ptr::eq(c, d) && c_type == d_type && ldc == ldd && stride_c == stride_d;
        let known_flags = [rocblas_gemm_flags_none, rocblas_gemm_flags_fp16_alt_impl];
        if !same_cd || algo != rocblas_gemm_algo_standard || !known_flags.contains(&flags) {
            return Err(rocblas_status_not_implemented);
        }
        let op = |t| lookup(OPERATIONS, t).ok_or(rocblas_status_invalid_value);
        let ty = |t| lookup(DATATYPES, t).ok_or(rocblas_status_not_implemented);
        let compute = match lookup(COMPUTE_TYPES, compute_type).ok_or(rocblas_status_not_implemented)? {
            CT::CUBLAS_COMPUTE_32F if ty(a_type)? == DT::CUDA_R_32F && rocblas_math_mode_of(handle)? == rocblas_xf32_xdl_math_op => {
                CT::CUBLAS_COMPUTE_32F_FAST_TF32
            }
            c => c,
        };
        check(cublas::cublasGemmStridedBatchedEx(
            handle,
            op(trans_a)?,
            op(trans_b)?,
            m,
            n,
            k,
            alpha,
            a,
            ty(a_type)?,
            lda,
            stride_a,
            b,
            ty(b_type)?,
            ldb,
            stride_b,
            beta,
            d,
            ty(d_type)?,
            ldd,
            stride_d,
            batch_count,
            compute,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        ))
    })
}
