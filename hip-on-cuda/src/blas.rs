//! rocBLAS over cuBLAS: `rocblas_handle` is `cublasHandle_t` (created on the
//! current device, host pointer mode by default as in rocBLAS), and
//! `rocblas_gemm_strided_batched_ex` is `cublasGemmStridedBatchedEx`. Both
//! libraries are column-major with the same m, n, k, lda, ... and strides in
//! elements, so the call maps argument for argument.
use crate::context::current;
use crate::status::{
    rocblas_from_cublas, rocblas_status, rocblas_status_internal_error,
    rocblas_status_invalid_handle, rocblas_status_invalid_value, rocblas_status_not_implemented,
    rocblas_status_success,
};
use crate::{catch, lookup};
use cudarc::cublas::sys::{
    self as cublas, cublasComputeType_t as CT, cublasGemmAlgo_t, cublasHandle_t,
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
    /// `CUBLAS_COMPUTE_32F`, never a TF32 variant (rocBLAS computes in full f32).
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
    POINTER_MODES: PM, pointer_modes_vs_rocm_rs, rocblas::ffi::rocblas_pointer_mode__;
    rocblas_pointer_mode_host = 0 => PM::CUBLAS_POINTER_MODE_HOST,
    rocblas_pointer_mode_device = 1 => PM::CUBLAS_POINTER_MODE_DEVICE,
}

/// `rocblas_gemm_algo_standard` and `rocblas_gemm_flags_none`: the only algorithm
/// and flags accepted.
pub const rocblas_gemm_algo_standard: u32 = 0;
pub const rocblas_gemm_flags_none: u32 = 0;

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
        check(cublas::cublasCreate_v2(handle))
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocblas_destroy_handle(handle: cublasHandle_t) -> rocblas_status {
    blas_call(|| check(cublas::cublasDestroy_v2(handle_of(handle)?)))
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
        if !same_cd || algo != rocblas_gemm_algo_standard || flags != rocblas_gemm_flags_none {
            return Err(rocblas_status_not_implemented);
        }
        let op = |t| lookup(OPERATIONS, t).ok_or(rocblas_status_invalid_value);
        let ty = |t| lookup(DATATYPES, t).ok_or(rocblas_status_not_implemented);
        let compute = lookup(COMPUTE_TYPES, compute_type).ok_or(rocblas_status_not_implemented)?;
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
