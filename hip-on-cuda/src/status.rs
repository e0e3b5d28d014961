//! Status codes: `hipError_t` (with `hipGetErrorName` / `hipGetErrorString`),
//! `rocblas_status`, `rocrand_status`, and the explicit tables that translate
//! CUDA driver, cuBLAS and cuRAND statuses into them.
use crate::{catch, hipError_t, lookup};
use cudarc::cublas::sys::cublasStatus_t as B;
use cudarc::curand::sys::curandStatus as R;
use cudarc::driver::sys::CUresult as C;
use std::ffi::c_char;

/// Declares a translation table `$table: &[($from, $to)]` from `A => b` lines
/// (meaning `($from::A, b)`).
macro_rules! status_table {
    ($(#[$m:meta])* $table:ident: $from:ident => $to:ty; $($a:ident => $b:ident,)+) => {
        $(#[$m])*
        pub const $table: &[($from, $to)] = &[$(($from::$a, $b),)+];
    };
}

/// Declares the `hipError_t` values this library returns (values of rocm-rs's
/// `hipError_t_*` constants) and their table of (value, name, description), the
/// strings NUL-terminated.
macro_rules! hip_errors {
    ($($name:ident = $value:literal, $desc:literal;)+) => {
        $(pub const $name: hipError_t = $value;)+
        pub const HIP_ERRORS: &[(hipError_t, &str, &str)] =
            &[$(($value, concat!(stringify!($name), "\0"), concat!($desc, "\0")),)+];
        /// (name, our value, rocm-rs's value) for every entry.
        #[cfg(test)]
        pub(crate) fn hip_errors_vs_rocm_rs() -> Vec<(&'static str, u32, u32)> {
            paste::paste! { vec![$((stringify!($name), $value, rocm_rs::hip::bindings::[<hipError_t_ $name>]),)+] }
        }
    };
}

hip_errors! {
    hipSuccess = 0, "no error";
    hipErrorInvalidValue = 1, "invalid argument";
    hipErrorOutOfMemory = 2, "out of memory";
    hipErrorNotInitialized = 3, "initialization error";
    hipErrorDeinitialized = 4, "driver shutting down";
    hipErrorProfilerDisabled = 5, "profiler disabled while using external profiling tool";
    hipErrorProfilerNotInitialized = 6, "profiler is not initialized";
    hipErrorProfilerAlreadyStarted = 7, "profiler already started";
    hipErrorProfilerAlreadyStopped = 8, "profiler already stopped";
    hipErrorInvalidMemcpyDirection = 21, "invalid copy direction for memcpy";
    hipErrorInsufficientDriver = 35, "driver version is insufficient for runtime version";
    hipErrorInvalidDeviceFunction = 98, "invalid device function";
    hipErrorNoDevice = 100, "no ROCm-capable device is detected";
    hipErrorInvalidDevice = 101, "invalid device ordinal";
    hipErrorInvalidImage = 200, "device kernel image is invalid";
    hipErrorInvalidContext = 201, "invalid device context";
    hipErrorContextAlreadyCurrent = 202, "context is already current context";
    hipErrorMapFailed = 205, "mapping of buffer object failed";
    hipErrorUnmapFailed = 206, "unmapping of buffer object failed";
    hipErrorArrayIsMapped = 207, "array is mapped";
    hipErrorAlreadyMapped = 208, "resource already mapped";
    hipErrorNoBinaryForGpu = 209, "no kernel image is available for execution on the device";
    hipErrorAlreadyAcquired = 210, "resource already acquired";
    hipErrorNotMapped = 211, "resource not mapped";
    hipErrorNotMappedAsArray = 212, "resource not mapped as array";
    hipErrorNotMappedAsPointer = 213, "resource not mapped as pointer";
    hipErrorECCNotCorrectable = 214, "uncorrectable ECC error encountered";
    hipErrorUnsupportedLimit = 215, "limit is not supported on this architecture";
    hipErrorContextAlreadyInUse = 216, "exclusive-thread device already in use by a different thread";
    hipErrorPeerAccessUnsupported = 217, "peer access is not supported between these two devices";
    hipErrorInvalidKernelFile = 218, "invalid kernel file";
    hipErrorInvalidGraphicsContext = 219, "invalid OpenGL or DirectX context";
    hipErrorInvalidSource = 300, "invalid source";
    hipErrorFileNotFound = 301, "file not found";
    hipErrorSharedObjectSymbolNotFound = 302, "shared object symbol not found";
    hipErrorSharedObjectInitFailed = 303, "shared object initialization failed";
    hipErrorOperatingSystem = 304, "OS call failed or operation not supported on this OS";
    hipErrorInvalidHandle = 400, "invalid resource handle";
    hipErrorIllegalState = 401, "the operation cannot be performed in the present state";
    hipErrorNotFound = 500, "named symbol not found";
    hipErrorNotReady = 600, "device not ready";
    hipErrorIllegalAddress = 700, "an illegal memory access was encountered";
    hipErrorLaunchOutOfResources = 701, "too many resources requested for launch";
    hipErrorLaunchTimeOut = 702, "the launch timed out and was terminated";
    hipErrorPeerAccessAlreadyEnabled = 704, "peer access is already enabled";
    hipErrorPeerAccessNotEnabled = 705, "peer access has not been enabled";
    hipErrorSetOnActiveProcess = 708, "cannot set while device is active in this process";
    hipErrorContextIsDestroyed = 709, "context is destroyed";
    hipErrorAssert = 710, "device-side assert triggered";
    hipErrorHostMemoryAlreadyRegistered = 712, "part or all of the requested memory range is already mapped";
    hipErrorHostMemoryNotRegistered = 713, "pointer does not correspond to a registered memory region";
    hipErrorLaunchFailure = 719, "unspecified launch failure";
    hipErrorCooperativeLaunchTooLarge = 720, "too many blocks in cooperative launch";
    hipErrorNotSupported = 801, "operation not supported";
    hipErrorStreamCaptureUnsupported = 900, "operation not permitted when stream is capturing";
    hipErrorStreamCaptureInvalidated = 901, "operation failed due to a previous error during capture";
    hipErrorStreamCaptureMerge = 902, "operation would result in a merge of separate capture sequences";
    hipErrorStreamCaptureUnmatched = 903, "capture was not ended in the same stream as it began";
    hipErrorStreamCaptureUnjoined = 904, "capturing stream has unjoined work";
    hipErrorStreamCaptureIsolation = 905, "dependency created on uncaptured work in another stream";
    hipErrorStreamCaptureImplicit = 906, "operation would make the legacy stream depend on a capturing blocking stream";
    hipErrorCapturedEvent = 907, "operation not permitted on an event last recorded in a capturing stream";
    hipErrorStreamCaptureWrongThread = 908, "attempt to terminate a thread-local capture sequence from another thread";
    hipErrorGraphExecUpdateFailure = 910, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update";
    hipErrorUnknown = 999, "unknown error";
}

status_table! {
    /// CUDA driver status → `hipError_t`. This is HIP's own NVIDIA-platform table
    /// (`hipCUResultTohipError` in HIP's `nvidia_hip_runtime_api.h`), plus three
    /// entries it lacks: `CUDA_ERROR_STUB_LIBRARY` and
    /// `CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER` → `hipErrorInsufficientDriver`,
    /// `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` → `hipErrorInvalidKernelFile`.
    /// Anything else is `hipErrorUnknown`.
    CU_TO_HIP: C => hipError_t;
    CUDA_SUCCESS => hipSuccess,
    CUDA_ERROR_INVALID_VALUE => hipErrorInvalidValue,
    CUDA_ERROR_OUT_OF_MEMORY => hipErrorOutOfMemory,
    CUDA_ERROR_NOT_INITIALIZED => hipErrorNotInitialized,
    CUDA_ERROR_DEINITIALIZED => hipErrorDeinitialized,
    CUDA_ERROR_PROFILER_DISABLED => hipErrorProfilerDisabled,
    CUDA_ERROR_PROFILER_NOT_INITIALIZED => hipErrorProfilerNotInitialized,
    CUDA_ERROR_PROFILER_ALREADY_STARTED => hipErrorProfilerAlreadyStarted,
    CUDA_ERROR_PROFILER_ALREADY_STOPPED => hipErrorProfilerAlreadyStopped,
    CUDA_ERROR_STUB_LIBRARY => hipErrorInsufficientDriver,
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER => hipErrorInsufficientDriver,
    CUDA_ERROR_NO_DEVICE => hipErrorNoDevice,
    CUDA_ERROR_INVALID_DEVICE => hipErrorInvalidDevice,
    CUDA_ERROR_INVALID_IMAGE => hipErrorInvalidImage,
    CUDA_ERROR_INVALID_CONTEXT => hipErrorInvalidContext,
    CUDA_ERROR_CONTEXT_ALREADY_CURRENT => hipErrorContextAlreadyCurrent,
    CUDA_ERROR_MAP_FAILED => hipErrorMapFailed,
    CUDA_ERROR_UNMAP_FAILED => hipErrorUnmapFailed,
    CUDA_ERROR_ARRAY_IS_MAPPED => hipErrorArrayIsMapped,
    CUDA_ERROR_ALREADY_MAPPED => hipErrorAlreadyMapped,
    CUDA_ERROR_NO_BINARY_FOR_GPU => hipErrorNoBinaryForGpu,
    CUDA_ERROR_ALREADY_ACQUIRED => hipErrorAlreadyAcquired,
    CUDA_ERROR_NOT_MAPPED => hipErrorNotMapped,
    CUDA_ERROR_NOT_MAPPED_AS_ARRAY => hipErrorNotMappedAsArray,
    CUDA_ERROR_NOT_MAPPED_AS_POINTER => hipErrorNotMappedAsPointer,
    CUDA_ERROR_ECC_UNCORRECTABLE => hipErrorECCNotCorrectable,
    CUDA_ERROR_UNSUPPORTED_LIMIT => hipErrorUnsupportedLimit,
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE => hipErrorContextAlreadyInUse,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => hipErrorPeerAccessUnsupported,
    CUDA_ERROR_INVALID_PTX => hipErrorInvalidKernelFile,
    CUDA_ERROR_INVALID_GRAPHICS_CONTEXT => hipErrorInvalidGraphicsContext,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION => hipErrorInvalidKernelFile,
    CUDA_ERROR_INVALID_SOURCE => hipErrorInvalidSource,
    CUDA_ERROR_FILE_NOT_FOUND => hipErrorFileNotFound,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND => hipErrorSharedObjectSymbolNotFound,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED => hipErrorSharedObjectInitFailed,
    CUDA_ERROR_OPERATING_SYSTEM => hipErrorOperatingSystem,
    CUDA_ERROR_INVALID_HANDLE => hipErrorInvalidHandle,
    CUDA_ERROR_ILLEGAL_STATE => hipErrorIllegalState,
    CUDA_ERROR_NOT_FOUND => hipErrorNotFound,
    CUDA_ERROR_NOT_READY => hipErrorNotReady,
    CUDA_ERROR_ILLEGAL_ADDRESS => hipErrorIllegalAddress,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => hipErrorLaunchOutOfResources,
    CUDA_ERROR_LAUNCH_TIMEOUT => hipErrorLaunchTimeOut,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => hipErrorPeerAccessAlreadyEnabled,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => hipErrorPeerAccessNotEnabled,
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE => hipErrorSetOnActiveProcess,
    CUDA_ERROR_CONTEXT_IS_DESTROYED => hipErrorContextIsDestroyed,
    CUDA_ERROR_ASSERT => hipErrorAssert,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => hipErrorHostMemoryAlreadyRegistered,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => hipErrorHostMemoryNotRegistered,
    CUDA_ERROR_LAUNCH_FAILED => hipErrorLaunchFailure,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => hipErrorCooperativeLaunchTooLarge,
    CUDA_ERROR_NOT_SUPPORTED => hipErrorNotSupported,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED => hipErrorStreamCaptureUnsupported,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => hipErrorStreamCaptureInvalidated,
    CUDA_ERROR_STREAM_CAPTURE_MERGE => hipErrorStreamCaptureMerge,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED => hipErrorStreamCaptureUnmatched,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED => hipErrorStreamCaptureUnjoined,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION => hipErrorStreamCaptureIsolation,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => hipErrorStreamCaptureImplicit,
    CUDA_ERROR_CAPTURED_EVENT => hipErrorCapturedEvent,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD => hipErrorStreamCaptureWrongThread,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => hipErrorGraphExecUpdateFailure,
    CUDA_ERROR_UNKNOWN => hipErrorUnknown,
}

/// Translates a CUDA driver status (see [`CU_TO_HIP`]).
pub fn hip_from_cu(r: C) -> hipError_t {
    lookup(CU_TO_HIP, r).unwrap_or(hipErrorUnknown)
}

/// `Ok` for `CUDA_SUCCESS`, else the translated error.
pub fn cu(r: C) -> Result<(), hipError_t> {
    match hip_from_cu(r) {
        hipSuccess => Ok(()),
        e => Err(e),
    }
}

/// `rocblas_status` values (rocm-rs: `rocblas_status__rocblas_status_*`).
pub type rocblas_status = u32;
pub const rocblas_status_success: rocblas_status = 0;
pub const rocblas_status_invalid_handle: rocblas_status = 1;
pub const rocblas_status_not_implemented: rocblas_status = 2;
pub const rocblas_status_invalid_pointer: rocblas_status = 3;
pub const rocblas_status_memory_error: rocblas_status = 5;
pub const rocblas_status_internal_error: rocblas_status = 6;
pub const rocblas_status_invalid_value: rocblas_status = 11;
pub const rocblas_status_arch_mismatch: rocblas_status = 15;

status_table! {
    /// cuBLAS status → `rocblas_status`; anything else is `rocblas_status_internal_error`.
    CUBLAS_TO_ROCBLAS: B => rocblas_status;
    CUBLAS_STATUS_SUCCESS => rocblas_status_success,
    CUBLAS_STATUS_NOT_INITIALIZED => rocblas_status_invalid_handle,
    CUBLAS_STATUS_ALLOC_FAILED => rocblas_status_memory_error,
    CUBLAS_STATUS_INVALID_VALUE => rocblas_status_invalid_value,
    CUBLAS_STATUS_ARCH_MISMATCH => rocblas_status_arch_mismatch,
    CUBLAS_STATUS_MAPPING_ERROR => rocblas_status_internal_error,
    CUBLAS_STATUS_EXECUTION_FAILED => rocblas_status_internal_error,
    CUBLAS_STATUS_INTERNAL_ERROR => rocblas_status_internal_error,
    CUBLAS_STATUS_NOT_SUPPORTED => rocblas_status_not_implemented,
    CUBLAS_STATUS_LICENSE_ERROR => rocblas_status_internal_error,
}

pub fn rocblas_from_cublas(s: B) -> rocblas_status {
    lookup(CUBLAS_TO_ROCBLAS, s).unwrap_or(rocblas_status_internal_error)
}

/// `rocrand_status` values (rocm-rs: `rocrand_status_ROCRAND_STATUS_*`). rocRAND
/// has no "not implemented" status: unsupported requests are `TYPE_ERROR`.
pub type rocrand_status = u32;
pub const ROCRAND_STATUS_SUCCESS: rocrand_status = 0;
pub const ROCRAND_STATUS_VERSION_MISMATCH: rocrand_status = 100;
pub const ROCRAND_STATUS_NOT_CREATED: rocrand_status = 101;
pub const ROCRAND_STATUS_ALLOCATION_FAILED: rocrand_status = 102;
pub const ROCRAND_STATUS_TYPE_ERROR: rocrand_status = 103;
pub const ROCRAND_STATUS_OUT_OF_RANGE: rocrand_status = 104;
pub const ROCRAND_STATUS_LENGTH_NOT_MULTIPLE: rocrand_status = 105;
pub const ROCRAND_STATUS_DOUBLE_PRECISION_REQUIRED: rocrand_status = 106;
pub const ROCRAND_STATUS_LAUNCH_FAILURE: rocrand_status = 107;
pub const ROCRAND_STATUS_INTERNAL_ERROR: rocrand_status = 108;

status_table! {
    /// cuRAND status → `rocrand_status`; anything else is `ROCRAND_STATUS_INTERNAL_ERROR`.
    CURAND_TO_ROCRAND: R => rocrand_status;
    CURAND_STATUS_SUCCESS => ROCRAND_STATUS_SUCCESS,
    CURAND_STATUS_VERSION_MISMATCH => ROCRAND_STATUS_VERSION_MISMATCH,
    CURAND_STATUS_NOT_INITIALIZED => ROCRAND_STATUS_NOT_CREATED,
    CURAND_STATUS_ALLOCATION_FAILED => ROCRAND_STATUS_ALLOCATION_FAILED,
    CURAND_STATUS_TYPE_ERROR => ROCRAND_STATUS_TYPE_ERROR,
    CURAND_STATUS_OUT_OF_RANGE => ROCRAND_STATUS_OUT_OF_RANGE,
    CURAND_STATUS_LENGTH_NOT_MULTIPLE => ROCRAND_STATUS_LENGTH_NOT_MULTIPLE,
    CURAND_STATUS_DOUBLE_PRECISION_REQUIRED => ROCRAND_STATUS_DOUBLE_PRECISION_REQUIRED,
    CURAND_STATUS_LAUNCH_FAILURE => ROCRAND_STATUS_LAUNCH_FAILURE,
    CURAND_STATUS_PREEXISTING_FAILURE => ROCRAND_STATUS_LAUNCH_FAILURE,
    CURAND_STATUS_INITIALIZATION_FAILED => ROCRAND_STATUS_INTERNAL_ERROR,
    CURAND_STATUS_ARCH_MISMATCH => ROCRAND_STATUS_INTERNAL_ERROR,
    CURAND_STATUS_INTERNAL_ERROR => ROCRAND_STATUS_INTERNAL_ERROR,
}

pub fn rocrand_from_curand(s: R) -> rocrand_status {
    lookup(CURAND_TO_ROCRAND, s).unwrap_or(ROCRAND_STATUS_INTERNAL_ERROR)
}

/// The table entry of `e`, or `hipErrorUnknown`'s.
fn entry(e: hipError_t) -> &'static (hipError_t, &'static str, &'static str) {
    let unknown = &HIP_ERRORS[HIP_ERRORS.len() - 1];
    HIP_ERRORS.iter().find(|x| x.0 == e).unwrap_or(unknown)
}

/// The enum name (`"hipErrorNoDevice"`); unknown values give `"hipErrorUnknown"`.
pub extern "C" fn hipGetErrorName(e: hipError_t) -> *const c_char {
    catch("hipErrorUnknown\0", || entry(e).1).as_ptr().cast()
}

/// The description (`"no ROCm-capable device is detected"`).
pub extern "C" fn hipGetErrorString(e: hipError_t) -> *const c_char {
    catch("unknown error\0", || entry(e).2).as_ptr().cast()
}

hip_exports! {
    "hip_4.2": hipGetErrorName, hipGetErrorString;
}
