//! Every CUDA-to-ROCm mapping the backend rules apply, as data.
//!
//! The generated backend talks to a small hand-written HIP layer, the
//! `candle-rocm-hip` crate in `candle-core-rocm/hip`, whose modules and types
//! have cudarc's shapes (`driver`, `blas`, `rand`), so most of the mirroring
//! is renaming.

/// Path prefixes (`::`-joined identifiers): cudarc modules → the HIP layer
/// crate, the kernels crate → the generated kernels' crate. Longest first.
/// Inside a longer path (`crate::cuda_backend::cudarc::driver::X`, through
/// upstream's `pub use cudarc;`) the same replacement applies.
pub const PATH_PREFIXES: &[(&[&str], &[&str])] = &[
    (&["cudarc", "cublas"], &["candle_rocm_hip", "blas"]),
    (&["cudarc", "curand"], &["candle_rocm_hip", "rand"]),
    (&["cudarc", "nvrtc"], &["candle_rocm_hip", "rtc"]),
    (&["cudarc"], &["candle_rocm_hip"]),
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
    // PTX modules → AMD code objects (the kernels crate embeds code objects)
    ("Ptx", "CodeObject"),
    ("ptx", "code_object"),
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
