//! Every CUDA-to-ROCm mapping the backend rules apply, as data.
//!
//! The generated backend talks to a small hand-written HIP layer
//! (`crate::rocm_backend::hip`) whose types have cudarc's shapes, so most of
//! the mirroring is renaming.

/// Path prefixes (`::`-joined identifiers): cudarc modules → the HIP layer,
/// the kernels crate → the generated kernels. Longest first.
pub const PATH_PREFIXES: &[(&[&str], &[&str])] = &[
    (&["cudarc", "driver", "sys"], &["crate", "rocm_backend", "hip", "sys"]),
    (&["cudarc", "driver"], &["crate", "rocm_backend", "hip"]),
    (&["cudarc", "cublas"], &["crate", "rocm_backend", "hip", "blas"]),
    (&["cudarc", "curand"], &["crate", "rocm_backend", "hip", "rand"]),
    (&["cudarc", "nvrtc"], &["crate", "rocm_backend", "hip", "rtc"]),
    (&["cudarc"], &["crate", "rocm_backend", "hip"]),
    (&["candle_kernels"], &["candle_rocm_kernels"]),
];

/// Identifiers with a name of their own on the ROCm side (the HIP layer's
/// cudarc-shaped types). Checked before the word rule.
pub const IDENTIFIERS: &[(&str, &str)] = &[
    ("CudaSlice", "HipSlice"),
    ("CudaView", "HipView"),
    ("CudaViewMut", "HipViewMut"),
    ("CudaStream", "HipStream"),
    ("CudaContext", "HipContext"),
    ("CudaModule", "HipModule"),
    ("CudaFunction", "HipFunction"),
    ("CudaEvent", "HipEvent"),
    ("CudaBlas", "RocBlas"),
    ("CudaRng", "HipRng"),
    ("DriverError", "HipError"),
    ("CublasError", "RocblasError"),
    ("CurandError", "RocrandError"),
    ("CompileError", "HipCompileError"),
    // cuBLAS enums → rocBLAS's C names (the HIP layer's `blas::sys` re-exports them)
    ("cublasOperation_t", "rocblas_operation"),
    ("CUBLAS_OP_N", "rocblas_operation_none"),
    ("CUBLAS_OP_T", "rocblas_operation_transpose"),
    ("cublasComputeType_t", "rocblas_datatype"),
    ("CUBLAS_COMPUTE_32F", "rocblas_datatype_f32_r"),
    ("CUBLAS_COMPUTE_16F", "rocblas_datatype_f16_r"),
    // rocBLAS has no reduced-precision fast modes: full f32 accumulation
    ("CUBLAS_COMPUTE_32F_FAST_TF32", "rocblas_datatype_f32_r"),
    ("CUBLAS_COMPUTE_32F_FAST_16BF", "rocblas_datatype_f32_r"),
    ("cublasGemmAlgo_t", "rocblas_gemm_algo"),
    ("CUBLAS_GEMM_DEFAULT_TENSOR_OP", "rocblas_gemm_algo_standard"),
];

/// The word rule: inside any other identifier, these spellings become the
/// ROCm ones (`CudaDevice` → `RocmDevice`, `cuda_fwd` → `rocm_fwd`,
/// `new_cuda` → `new_rocm`, `CUDA_GRAPH` → `ROCM_GRAPH`, `cublas_handle` →
/// `rocblas_handle`).
pub const WORDS: &[(&str, &str)] = &[
    ("Cuda", "Rocm"),
    ("cuda", "rocm"),
    ("CUDA", "ROCM"),
    ("Cublas", "Rocblas"),
    ("cublas", "rocblas"),
    ("Curand", "Rocrand"),
    ("curand", "rocrand"),
];

/// Cargo features: `cfg(feature = "cuda")` → `cfg(feature = "rocm")`.
pub const FEATURES: &[(&str, &str)] = &[("cuda", "rocm")];
