//! Every CUDA-to-ROCm mapping the backend rules apply, as data.
//!
//! The generated backend talks to a small hand-written HIP layer, the
//! `candle-rocm-hip` crate in `rocm-runtime/hip`, whose modules and types
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
    // CUDA-only modules without CUDA in their name (gated on the `cuda`
    // feature): their twins need a name of their own
    ("fast_mmq", "rocm_fast_mmq"),
    ("fast_mmvq", "rocm_fast_mmvq"),
    // PTX modules → AMD code objects (the kernels crate embeds code objects)
    ("Ptx", "CodeObject"),
    ("ptx", "code_object"),
    // cuBLAS enums → rocBLAS's C names (the HIP layer's `blas::sys` re-exports them)
    ("cublasOperation_t", "rocblas_operation"),
    ("CUBLAS_OP_N", "rocblas_operation_none"),
    ("CUBLAS_OP_T", "rocblas_operation_transpose"),
    // compute types → the HIP layer's `rocblasComputeType_t`, which carries rocBLAS's compute
    // datatype and, for CUDA's TF32, rocBLAS's XF32 math mode (handle-wide in rocBLAS: the HIP
    // layer sets it around that one gemm; rocBLAS takes it where the arch has xf32, CDNA3, and
    // computes in full f32 elsewhere, as cuBLAS does with TF32 before Ampere). FAST_16BF only
    // rounds the inputs to bf16, which bf16 inputs already are: plain f32 compute, same results
    ("cublasComputeType_t", "rocblasComputeType_t"),
    ("CUBLAS_COMPUTE_32F", "ROCBLAS_COMPUTE_32F"),
    ("CUBLAS_COMPUTE_16F", "ROCBLAS_COMPUTE_16F"),
    ("CUBLAS_COMPUTE_32F_FAST_TF32", "ROCBLAS_COMPUTE_32F_FAST_XF32"),
    ("CUBLAS_COMPUTE_32F_FAST_16BF", "ROCBLAS_COMPUTE_32F"),
    ("cublasGemmAlgo_t", "rocblas_gemm_algo"),
    ("CUBLAS_GEMM_DEFAULT_TENSOR_OP", "rocblas_gemm_algo_standard"),
];

/// Device predicates (rule `device-predicates`): where upstream asks whether
/// a device is the CUDA one, the ROCm device is accepted too, because it runs
/// the same kernels and so must meet the same expectations.
pub const DEVICE_PREDICATES: &[(&str, &str)] = &[("is_cuda", "is_rocm")];

/// "The GPU if there is one" (rule `if-available-twins`): a call of the CUDA
/// constructor (first) asks, where the CUDA backend is not available, its ROCm twin
/// (second); the third is candle-core's `utils` function that tells them apart. A
/// program asking for "the GPU if available" then gets the AMD GPU, not the CPU.
pub const IF_AVAILABLE: &[(&str, &str, &str)] = &[("cuda_if_available", "rocm_if_available", "cuda_is_available")];

/// Candle's getters without side effects (methods of `Tensor`, `Storage`, `Layout`,
/// `Shape`, `Var`, `QTensor`, called with no argument): a device predicate on a chain of
/// them (`xs.device().is_cuda()`) may evaluate its receiver twice (rule `device-predicates`).
pub const PURE_GETTERS: &[&str] = &["device", "dtype", "layout", "shape", "dims", "rank", "elem_count", "stride", "as_tensor", "location"];

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

/// Phrases of user-facing messages that name the CUDA feature, and what
/// they say instead (rule `feature-hints`): the user of the generated
/// packages is told about both GPU backends.
pub const FEATURE_HINTS: &[(&str, &str)] = &[("`--features cuda`", "`--features cuda` (NVIDIA) or `--features rocm` (AMD)")];

/// Cargo features: `cfg(feature = "cuda")` → `cfg(feature = "rocm")`; a
/// manifest's CUDA feature gets its twin under this name (NCCL's collectives
/// are RCCL's on ROCm: `nccl` → `rccl`).
pub const FEATURES: &[(&str, &str)] = &[("cuda", "rocm"), ("nccl", "rccl")];

/// Rule `either-backend-examples`: an example whose upstream
/// `required-features` name `cuda` is CUDA-only code (rule `cuda-gates` gates
/// it, so its ROCm twin builds with `rocm`). Cargo's `required-features`
/// cannot say "`nccl` or `rccl`", so each feature of this table that such an
/// example requires is replaced by a package feature that the feature and its
/// ROCm twin ([`FEATURES`]) both turn on, and `cuda` goes (that feature turns
/// on a backend): `llama_multiprocess`'s `["cuda", "nccl", "flash-attn"]` →
/// `["nccl-or-rccl", "flash-attn"]`, with `nccl-or-rccl = []` in `nccl` and
/// `rccl`. An example requiring none of them keeps requiring `cuda`.
pub const EITHER_BACKEND_FEATURES: &[(&str, &str)] = &[("nccl", "nccl-or-rccl")];

/// Words inside string literals of ROCm twins and mirrored files, so that
/// messages and display strings name the ROCm device (`"cuda:{gpu_id}"` →
/// `"rocm:{gpu_id}"`, "no cuda implementation" → "no rocm implementation").
pub const LITERAL_WORDS: &[(&str, &str)] = &[("cuda", "rocm"), ("CUDA", "ROCm"), ("Cuda", "Rocm")];

/// CUDA libraries the HIP layer (candle-rocm-hip) does not bind: (the word
/// that names them in identifiers, lower case and without `_`; why). A crate's
/// own module named for one (mistralrs-quant's `cublaslt`, its cuBLASLt fused
/// matmuls) stays as upstream wrote it, without ROCm twins, and is listed as a
/// gap; identifiers with the word are not renamed (`maybe_init_cublas_lt_wrapper`),
/// so ROCm twins elsewhere use the module as a build without CUDA does (its
/// handle is `None` there, and callers take their fallback).
pub const UNBOUND_CUDA_LIBRARIES: &[(&str, &str)] = &[(
    "cublaslt",
    "cuBLASLt (fused matmul with bias and activation, fp8 matmul): hipBLASLt is not bound by the HIP layer, so the module builds as without CUDA and its callers take their non-cuBLASLt path on ROCm",
)];

/// Lower-case fragments that mark an identifier as CUDA-specific: an item,
/// arm, variant or import naming one gets a ROCm twin (and in mirrored code,
/// one that is left names something the rules could not mirror).
pub const CUDA_MARKERS: &[&str] = &["cuda", "cudarc", "cublas", "curand", "nvrtc", "cudnn", "cutile", "nccl"];

/// Cargo features of upstream's CUDA backend that have no ROCm twin. In a
/// ROCm twin or a mirrored file, code under `cfg(feature = X)` is left out
/// and `cfg(not(feature = X))` holds; each item left out is listed in the
/// regen report and PARITY.md with this reason.
pub const UNMIRRORABLE_FEATURES: &[(&str, &str)] = &[
    ("cudnn", "cuDNN convolutions: the ROCm counterpart is MIOpen, which this backend does not bind; convolutions use the generated im2col/col2im kernels and rocBLAS"),
    ("cutile", "cuTile kernels are written in NVIDIA's tile language and have no HIP translation"),
    ("flash-attn-v3", "FlashAttention 3 (candle-flash-attn-v3): Hopper-only kernels (wgmma, TMA, warp specialization) with no AMD counterpart; the flash attention of feature `flash-attn` or the unfused path serves instead"),
];

/// NVIDIA's programs that CUDA code runs (rule `nvidia-tools`): a ROCm twin that
/// still runs one is listed with this reason.
pub const NVIDIA_TOOLS: &[(&str, &str)] = &[(
    "nvidia-smi",
    "runs nvidia-smi, NVIDIA's management program, which an AMD machine has not got (rocm-smi answers other questions in other words): this ROCm code fails where it runs it; mistralrs-core's `auto` dtype is chosen so, so give `--dtype` on AMD",
)];

/// Dependencies of the `cuda` features in upstream manifests and what the
/// ROCm feature depends on instead (`cuda = ["cudarc", "dep:candle-kernels"]`
/// → `rocm = ["dep:candle-rocm-hip", "dep:candle-rocm-kernels"]`).
pub const FEATURE_DEPENDENCIES: &[(&str, &str)] = &[
    ("cudarc", "dep:candle-rocm-hip"),
    ("dep:cudarc", "dep:candle-rocm-hip"),
    ("dep:candle-kernels", "dep:candle-rocm-kernels"),
    // NCCL through cudarc → RCCL through the HIP layer (`candle_rocm_hip::nccl`)
    ("cudarc/nccl", "candle-rocm-hip/rccl"),
    ("candle/cuda", "candle/rocm"),
    ("candle-nn/cuda", "candle-nn/rocm"),
    ("candle-transformers/cuda", "candle-transformers/rocm"),
    // rule `backend-neutral-features`
    ("candle-flash-attn?/cuda", "candle-flash-attn?/rocm"),
    // rule `own-kernel-builds`: a build-dependency, as cudaforge is
    ("dep:cudaforge", "dep:candle-rocm-build"),
];

/// Dependencies of the `cuda` features that the ROCm feature goes without,
/// and why (listed as gaps).
pub const UNMIRRORABLE_FEATURE_DEPENDENCIES: &[(&str, &str)] = &[
    ("candle-ug?/cuda", "ug's CUDA backend compiles its kernels at run time with NVRTC; ug has no ROCm backend, so custom ug kernels stay CPU/CUDA/Metal-only"),
    ("ug-cuda", "ug's CUDA backend compiles its kernels at run time with NVRTC; ug has no ROCm backend"),
    ("dep:bindgen_cuda", "bindgen_cuda (cudaforge's predecessor, candle-examples up to 0.9.x) compiles the custom-ops example's CUDA kernel to PTX with nvcc; that kernel has no HIP build, so its custom op runs on the CPU only"),
    ("dep:ug-cuda", "ug's CUDA backend compiles its kernels at run time with NVRTC; ug has no ROCm backend"),
];

/// Crates whose types the backend keeps in device memory: upstream's `cuda`
/// feature turns on their `cuda` feature (cudarc's `DeviceRepr` and
/// `ValidAsZeroBits` for `float8::F8E4M3`), the HIP layer implements its own
/// traits for them. Rows: (crate, major.minor of upstream's requirement,
/// the HIP layer feature that implements the traits for that version; empty:
/// always implemented). The ROCm twin of a feature that turns on the HIP
/// layer also turns on the feature matching upstream's requirement; a version
/// not listed is an error naming the manifest line.
pub const DEVICE_TYPE_CRATES: &[(&str, &str, &str)] = &[
    ("float8", "0.7", ""),
    ("float8", "0.6", "candle-rocm-hip/float8-0_6"),
    ("float8", "0.5", "candle-rocm-hip/float8-0_5"),
    ("float8", "0.4", "candle-rocm-hip/float8-0_4"),
];

/// Source files kept as upstream wrote them, without ROCm twins, in releases
/// before a version: (path in its package, feature, reason, before). Each is
/// listed as a gap; its targets build with the `rocm` feature and run their
/// CUDA-free paths.
pub const UNTWINNED_FILES: &[(&str, &str, &str, (u64, u64, u64))] = &[(
    "examples/custom-ops/main.rs",
    "cuda",
    "the example's own kernel (examples/custom-ops/kernels/layernorm_kernels.cu) is compiled to PTX by candle-examples' build script with bindgen_cuda and loaded from a module file as a PTX string; rule own-kernel-builds maps cudaforge's build (from 0.10), not this one, so the custom op has no rocm_fwd and the example runs it on the CPU only",
    OWN_KERNEL_BUILDS_SINCE,
)];

/// Upstream types whose impls get no ROCm twins because what they are built
/// on has no ROCm backend: (type, feature, reason). Each impl is listed as a
/// gap; with `rocm` the type behaves as in a build without CUDA.
pub const UNTWINNED_ITEMS: &[(&str, &str, &str)] = &[(
    "UgIOp1",
    "ug",
    "ug generates its kernels and compiles them at run time through its CUDA (NVRTC) and Metal backends; ug has no ROCm backend, so ug ops run where upstream runs them without CUDA",
)];

/// Names that mirrored code would use for a crate without a ROCm backend
/// (`ug_cuda` → `ug_rocm`): a mirrored item naming one is left out and
/// listed as a gap: (name, feature, reason).
pub const NO_ROCM_BACKEND: &[(&str, &str, &str)] = &[(
    "ug_rocm",
    "ug",
    "ug's kernel code generator has CUDA and Metal backends only; ug kernels cannot be compiled for ROCm (candle 0.9.x's CudaDevice::compile)",
)];

/// The candle packages with a `cuda` feature: a package that depends on one
/// with that feature on unconditionally needs CUDA (rule `cuda-dependency-features`).
pub const CUDA_FEATURE_PACKAGES: &[&str] = &["candle-core", "candle-nn", "candle-transformers"];

/// Generated packages that build with either backend (features `cuda` and `rocm`,
/// rule `cuda-dependency-features`) though upstream's need CUDA. Rule
/// `backend-neutral-features`: a feature of another package that turns on `cuda`
/// to enable one (`flash-attn = ["cuda", "dep:candle-flash-attn"]`) no longer
/// turns on `cuda`; the package's `cuda` and `rocm` features turn on the
/// dependency's (`candle-flash-attn?/cuda`, `candle-flash-attn?/rocm`), so
/// `--features rocm,flash-attn` builds it for ROCm.
pub const BACKEND_NEUTRAL_PACKAGES: &[&str] = &["candle-flash-attn"];

/// Dev-dependencies that publishing dropped (a path-only dependency in the
/// checkout's manifest is left out of the crates.io one) though the published
/// tests need them: (package, dev-dependency). Rule `restored-dev-dependencies`
/// adds them back as the generated sibling (candle-flash-attn's tests call
/// `candle_nn::ops::softmax` for their reference).
pub const RESTORED_DEV_DEPENDENCIES: &[(&str, &str)] = &[("candle-flash-attn", "candle-nn")];

/// Upstream crates that depend on crates.io candle-core and that regen does
/// not mirror, or not for every release (candle-flash-attn: only where its
/// `run_mha` is the ABI of kernels/candle_flash_attn.hip). Rule
/// `package-patches`: a package depending on one that is not a generated
/// sibling gets a `[patch.crates-io]` to its generated siblings.
pub const UNMIRRORED_CANDLE_DEPENDENTS: &[&str] = &["candle-datasets", "candle-onnx", "candle-flash-attn"];

/// The hand-written crates the ROCm feature adds, as (package, path relative
/// to the repository root).
pub const ROCM_CRATES: &[(&str, &str)] = &[("candle-rocm-hip", "rocm-runtime/hip"), ("candle-rocm-kernels", "rocm-runtime/kernels"), ("candle-rocm-build", "candle-rocm-build")];

/// Variants of the device enums that belong to neither CUDA nor ROCm. In a
/// CUDA-only function (`as_cuda_device`) and its twin, the arm for one of
/// these (`Self::Metal(_) => bail!(...)`) is the model for the arm the other
/// twin backend needs to keep the match exhaustive (rule `exhaustive-twins`).
pub const FOREIGN_BACKEND_VARIANTS: &[&str] = &["Metal"];


/// A field of a struct expression in a mirrored file whose upstream value
/// has an NVIDIA meaning, and the ROCm value (rule `field-inits`).
pub struct FieldInit {
    /// The input path of the mirrored file.
    pub file: &'static str,
    /// The struct's name (last path segment of the struct expression).
    pub strukt: &'static str,
    pub field: &'static str,
    /// Upstream's value, as `quote` prints it (tokens separated by spaces).
    pub upstream: &'static str,
    /// The ROCm value, Rust source in the mirrored file's names.
    pub rocm: &'static str,
    pub why: &'static str,
}

pub const FIELD_INITS: &[FieldInit] = &[FieldInit {
    file: "src/quantized/fast_mmq.rs",
    strukt: "DeviceInfo",
    field: "cc",
    upstream: "major * 100 + minor * 10",
    rocm: "unsafe { result::device::ggml_compute_capability(cu_device, major * 100 + minor * 10) }.expect(\"the GPU's arch name (hipGetDevicePropertiesR0600), which ggml's MMQ tile choice depends on\")",
    why: "ggml's launchers read the compute capability with ggml's AMD meaning (0x1000000 + gfx id, from gcnArchName), so that host and device pick the same tiles (kernel rule ggml-amd-profile)",
}];

/// Upstream code and what replaces it (rules `wave-launches` and
/// `upstream-repairs`, applied by `backend::replacements`).
pub struct Replacement {
    /// The crate, as the provenance label names it (`candle-nn`).
    pub krate: &'static str,
    /// The input path inside the crate.
    pub file: &'static str,
    /// The impl (`Map1 for Affine`: its trait and type as `quote` prints them) or function
    /// (`fn to_dtype`) the row is limited to; empty: wherever the rule looks.
    pub inside: &'static str,
    /// Upstream's expression or item, as `quote` prints it.
    pub upstream: &'static str,
    /// What replaces it: Rust source (in a ROCm twin's names for `wave-launches`).
    pub with: &'static str,
    /// How often it occurs where the rule looks.
    pub count: usize,
    pub why: &'static str,
}

/// The device's wavefront size, in a ROCm twin of candle-nn's ops whose
/// `dev` is a `&RocmDevice`.
macro_rules! wavefront {
    () => {
        "candle::rocm_backend::WrapErr::w(dev.rocm_stream().context().attribute(candle::rocm_backend::candle_rocm_hip::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE))? as u32"
    };
}

/// Rule `wave-launches`: candle-nn launches its row kernels with one 32-lane
/// warp; on ROCm they get the device's whole wavefront (64 on CDNA), over
/// which the kernels reduce (kernel rule `wave-rows`). candle-core's older MMQ
/// launcher takes ggml's AMD tile on AMD (kernel rule `quantized-mmq-tiles`).
pub const WAVE_LAUNCHES: &[Replacement] = &[
    Replacement {
        krate: "candle-nn",
        file: "src/ops.rs",
        inside: "",
        upstream: "(1 , 32 , 1)",
        with: concat!("(1, ", wavefront!(), ", 1)"),
        count: 1,
        why: "softmax: one wavefront per row",
    },
    Replacement {
        krate: "candle-nn",
        file: "src/ops.rs",
        inside: "",
        upstream: "if n_cols < 1024 { 32 } else { 1024 }",
        with: concat!("if n_cols < 1024 { ", wavefront!(), " } else { 1024 }"),
        count: 2,
        why: "rms norm and layer norm: one wavefront per row below 1024 columns",
    },
    Replacement {
        krate: "candle-core",
        file: "src/quantized/cuda.rs",
        inside: "fn mul_mat_via_q8_1",
        upstream: "candle_rocm_hip :: driver :: LaunchConfig { grid_dim : (ceil_div (x_rows , mmq_y) as u32 , ceil_div (y_cols , mmq_x) as u32 , 1 ,) , block_dim : (WARP_SIZE as u32 , 4 , 1) , shared_mem_bytes : 0 }",
        with: concat!(
            "{ let (mmq_x, mmq_y, nwarps) = candle_rocm_kernels::quantized_mmq_tiles::amd_tile(kernel_name, dev.rocm_stream().context().ggml_compute_capability().w()?).unwrap_or((mmq_x, mmq_y, 4)); ",
            "candle_rocm_hip::driver::LaunchConfig { grid_dim: (ceil_div(x_rows, mmq_y as usize) as u32, ceil_div(y_cols, mmq_x as usize) as u32, 1), block_dim: (WARP_SIZE as u32, nwarps, 1), shared_mem_bytes: 0 } }"
        ),
        count: 1,
        why: "mul_mat_q*: on AMD the tile the kernel takes there (ggml's _RDNA2/_RDNA1, kernel rule quantized-mmq-tiles), upstream's (the match's mmq_x/mmq_y, 4 warps) on NVIDIA",
    },
];

/// The launch of an elementwise kernel of element type `T` over `$n` elements whose inputs
/// are the layouts `$layout`: one thread per 16-byte pack when every layout is contiguous
/// and starts on a pack.
macro_rules! packed_launch {
    ($n:literal, $bytes:literal, $first:literal $(, $layout:literal)*) => {
        concat!(
            "LaunchConfig::for_packed_elems(", $n, " as u32, ", $bytes, ", ",
            $first, ".is_contiguous() && ", $first, ".start_offset() * ", $bytes, " % LaunchConfig::PACK_BYTES == 0",
            $(" && ", $layout, ".is_contiguous() && ", $layout, ".start_offset() * ", $bytes, " % LaunchConfig::PACK_BYTES == 0",)*
            ")"
        )
    };
}

/// Rule `elementwise-launches`: the ROCm backend launches the kernels whose contiguous
/// loops move 16-byte packs (kernel rule `elementwise-packs`) with one thread per pack
/// instead of one per element, when the layouts let the kernel take its pack loop
/// (`LaunchConfig::for_packed_elems`). Upstream's grid would leave most blocks without
/// work. The kernels loop over the grid, so either grid gives the same values.
pub const ELEMENTWISE_LAUNCHES: &[Replacement] = &[
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "Map1 for Affine",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: packed_launch!("$n", "std::mem::size_of::<T>()", "layout"),
        count: 1,
        why: "affine",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "Map1 for Elu",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: packed_launch!("$n", "std::mem::size_of::<T>()", "layout"),
        count: 1,
        why: "elu (UNARY_OP1)",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "Map1 for Powf",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: packed_launch!("$n", "std::mem::size_of::<T>()", "layout"),
        count: 1,
        why: "powf (UNARY_OP1)",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "Map1 for U",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: packed_launch!("$n", "std::mem::size_of::<T>()", "layout"),
        count: 1,
        why: "the unary ops (UNARY_OP)",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "Map2 for U",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: packed_launch!("$n", "std::mem::size_of::<T>()", "lhs_l", "rhs_l"),
        count: 1,
        why: "the binary ops (BINARY_OP_OUT)",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "Map2Any for Cmp",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: packed_launch!("$n", "std::mem::size_of::<T>()", "lhs_l", "rhs_l"),
        count: 1,
        why: "the comparisons (BINARY_OP_OUT to u8: the pack is 16 bytes of the inputs)",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/mod.rs",
        inside: "fn to_dtype",
        upstream: "LaunchConfig :: for_num_elems ($n as u32)",
        with: "LaunchConfig::for_packed_elems($n as u32, self.dtype().size_in_bytes().max(dtype.size_in_bytes()), \
               layout.is_contiguous() && layout.start_offset() * self.dtype().size_in_bytes() % LaunchConfig::PACK_BYTES == 0)",
        count: 1,
        why: "the casts: a pack is 16 bytes of the wider of the two types",
    },
];

/// Rule `upstream-repairs`: upstream code that does not compile against what
/// its own release pins, repaired before it is twinned (the CUDA original and
/// the ROCm twin alike; `cargo xtask gpu-program` repairs the stock copy it
/// compares with the same rows).
pub const UPSTREAM_REPAIRS: &[Replacement] = &[
    Replacement {
        krate: "candle-examples",
        file: "examples/llama_multiprocess/main.rs",
        inside: "",
        upstream: "use cudarc :: driver :: safe :: CudaDevice ;",
        with: "use cudarc::driver::safe::CudaContext;",
        count: 1,
        why: "cudarc 0.13 replaced CudaDevice by CudaContext and CudaStream (candle-core pins cudarc 0.19)",
    },
    Replacement {
        krate: "candle-examples",
        file: "examples/llama_multiprocess/main.rs",
        inside: "",
        upstream: "CudaDevice :: new ($rank) ?",
        with: "CudaContext::new($rank)?.per_thread_stream()",
        count: 1,
        why: "cudarc 0.19's Comm::from_rank takes the stream its collectives are queued on: the per-thread stream of \
              the device's primary context, the one candle's Device::new_cuda queues its kernels on, so each \
              all-reduce runs after the matmul that feeds it",
    },
    Replacement {
        krate: "candle-examples",
        file: "examples/llama_multiprocess/main.rs",
        inside: "",
        upstream: "if comm_file . exists () { bail ! (\"comm file {comm_file:?} already exists, please remove it first\") }",
        with: "if args.rank.is_none() && comm_file.exists() { bail!(\"comm file {comm_file:?} already exists, please remove it first\") }",
        count: 1,
        why: "the parent's check that no id file is left over ran in every rank too: a rank started after rank 0 \
              had written the id stopped there, and rank 0 waited for it forever (a race, seen on two H100s on \
              either backend)",
    },
    Replacement {
        krate: "candle-examples",
        file: "examples/llama_multiprocess/model.rs",
        inside: "",
        upstream: "unsafe { dev . alloc :: < $t > ($n) } . w () ?",
        with: "unsafe { dev.alloc::<$t>($n) }?",
        count: 2,
        why: "candle's CudaDevice::alloc returns candle's own Result (no cudarc error to wrap with .w())",
    },
];

/// Rule `code-object-inputs`: where upstream's CUDA code takes PTX text, its ROCm
/// mirror takes a code object's bytes (what candle-rocm-build makes of a user's
/// kernels), and a wrong image is an error naming the module and the device's arch.
pub const CODE_OBJECT_INPUTS: &[Replacement] = &[
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/device.rs",
        inside: "",
        upstream: "code_object : & str",
        with: "code_object: &[u8]",
        count: 1,
        why: "get_or_load_custom_func: a code object is binary; PTX text never runs on AMD",
    },
    Replacement {
        krate: "candle-core",
        file: "src/cuda_backend/device.rs",
        inside: "",
        upstream: "self . context . load_module (code_object . into ()) . w () ?",
        with: "self.context.load_custom_module(module_name, code_object).map_err(crate::Error::Msg)?",
        count: 1,
        why: "an empty image, PTX text, or one for other arches: an error naming the module and the device's arch",
    },
];

/// Rule `own-kernel-builds`: the releases (from this one) whose candle-examples builds the
/// custom-ops example's kernel with cudaforge, which the rows of [`OWN_KERNEL_BUILDS`] map.
/// Before it (0.9.x: bindgen_cuda, `mod cuda_kernels;`), [`UNTWINNED_FILES`] keeps the
/// example CPU-only on ROCm.
pub const OWN_KERNEL_BUILDS_SINCE: (u64, u64, u64) = (0, 10, 0);

/// Rule `own-kernel-builds`: a package's own CUDA kernels, compiled to PTX by its build
/// script with cudaforge and loaded with `get_or_load_custom_func`, get a ROCm build. The
/// build script's `cfg(feature = "cuda")` block gets a ROCm twin (the script is twinned
/// as tests are), whose cudaforge calls these rows make candle-rocm-build's (the same
/// kernels translated and compiled with hipcc into code objects, `&[u8]` constants of the
/// same names); the example's ROCm twin includes that file. In ROCm code (a twinned
/// file's items and blocks named for ROCm or gated on it), in a ROCm twin's names.
pub const OWN_KERNEL_BUILDS: &[Replacement] = &[
    Replacement {
        krate: "candle-examples",
        file: "build.rs",
        inside: "",
        upstream: "rocmforge :: KernelBuilder :: new () . source_glob (kdir . kernel_glob) . build_ptx () . expect (\"Failed to build ptx\")",
        with: "candle_rocm_build::Builder::new().kernel_glob(kdir.kernel_glob).build().unwrap_or_else(|e| panic!(\"{e}\"))",
        count: 1,
        why: "the kernels of the glob translated to HIP and compiled with hipcc for the chosen AMD arches",
    },
    Replacement {
        krate: "candle-examples",
        file: "build.rs",
        inside: "",
        upstream: "bindings . write (safe_target) . expect (\"Failed to write ptx bindings\")",
        with: "bindings.write(safe_target.with_file_name(\"rocm_kernels.rs\")).unwrap_or_else(|e| panic!(\"{e}\"))",
        count: 1,
        why: "the code objects' constants beside cudaforge's file, under their own name (a build with cuda and rocm writes both)",
    },
    Replacement {
        krate: "candle-examples",
        file: "examples/custom-ops/main.rs",
        inside: "",
        upstream: "include ! (concat ! (env ! (\"OUT_DIR\") , \"/cuda_kernels.rs\")) ;",
        with: "include!(concat!(env!(\"OUT_DIR\"), \"/rocm_kernels.rs\"));",
        count: 1,
        why: "the ROCm twin of the example's kernels module: the code objects' constants",
    },
];

/// Rule `build-tools`: the crates a build script compiles CUDA kernels with, and the names
/// of theirs it may use, as candle-rocm-build's (`use cudaforge::KernelBuilder` →
/// `use candle_rocm_build::Builder as KernelBuilder`). A name of these crates no row has is
/// an error naming it.
pub const BUILD_TOOL_NAMES: &[(&str, &str, &str)] = &[
    ("cudaforge", "KernelBuilder", "Builder"),
    ("cudaforge", "Result", "Result"),
    ("cudaforge", "Error", "Error"),
    ("bindgen_cuda", "Builder", "Builder"),
    ("bindgen_cuda", "Error", "Error"),
];

/// What a build tool's method becomes on candle-rocm-build's `Builder` (rule `build-tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildToolMethod {
    /// candle-rocm-build's method of this name.
    To(&'static str),
    /// The call goes: it tunes nvcc's run and means nothing for hipcc's (why). Listed.
    Drop(&'static str),
    /// The call goes and what it gave is missing (why): the crate needs a hand port there. Listed.
    Unmappable(&'static str),
}

/// Rule `build-tools`: the methods of cudaforge's `KernelBuilder` and bindgen_cuda's
/// `Builder` (and of what they build), called in a chain that starts at one or on a
/// variable bound to one. A method no row has is an error naming it.
pub const BUILD_TOOL_METHODS: &[(&str, BuildToolMethod)] = &[
    ("new", BuildToolMethod::To("new")),
    ("default", BuildToolMethod::To("default")),
    ("source_glob", BuildToolMethod::To("kernel_glob")),
    ("source_files", BuildToolMethod::To("kernels")),
    ("source_dir", BuildToolMethod::To("kernel_dir")),
    ("kernel_paths", BuildToolMethod::To("kernels")),
    ("kernel_paths_glob", BuildToolMethod::To("kernel_glob")),
    ("include_path", BuildToolMethod::To("include_dir")),
    ("include_paths", BuildToolMethod::To("include_dirs")),
    ("arg", BuildToolMethod::To("nvcc_arg")),
    ("args", BuildToolMethod::To("nvcc_args")),
    ("out_dir", BuildToolMethod::To("out_dir")),
    ("build_lib", BuildToolMethod::To("build_lib")),
    ("build_ptx", BuildToolMethod::To("build")),
    ("write", BuildToolMethod::To("write")),
    ("thread_percentage", BuildToolMethod::Drop("nvcc's parallelism (candle-rocm-build compiles on every core)")),
    ("max_threads", BuildToolMethod::Drop("nvcc's parallelism (candle-rocm-build compiles on every core)")),
    ("nvcc_thread_patterns", BuildToolMethod::Drop("nvcc's parallelism (candle-rocm-build compiles on every core)")),
    ("no_incremental", BuildToolMethod::Drop("cudaforge's cache (candle-rocm-build rebuilds what changed)")),
    ("get_compute_cap", BuildToolMethod::To("get_compute_cap")),
    ("exclude", BuildToolMethod::To("exclude")),
    // what a chain does with build_lib's / build's Result: the same on candle-rocm-build's
    ("expect", BuildToolMethod::To("expect")),
    ("unwrap", BuildToolMethod::To("unwrap")),
    ("unwrap_or", BuildToolMethod::To("unwrap_or")),
    ("unwrap_or_else", BuildToolMethod::To("unwrap_or_else")),
    ("unwrap_or_default", BuildToolMethod::To("unwrap_or_default")),
    ("compute_cap", BuildToolMethod::Drop("an NVIDIA compute capability: the AMD arches come from CANDLE_ROCM_ARCHS")),
    ("compute_cap_arch", BuildToolMethod::Drop("an NVIDIA compute capability: the AMD arches come from CANDLE_ROCM_ARCHS")),
    ("with_compute_override", BuildToolMethod::Drop("an NVIDIA compute capability: the AMD arches come from CANDLE_ROCM_ARCHS")),
    ("with_compute_override_arch", BuildToolMethod::Drop("an NVIDIA compute capability: the AMD arches come from CANDLE_ROCM_ARCHS")),
    ("cuda_root", BuildToolMethod::Drop("where CUDA is: hipcc is found on its own (ROCM_PATH, HIP_PATH, PATH)")),
    ("watch", BuildToolMethod::Drop("extra files to watch: the kernels and headers are watched already")),
    ("with_cutlass", BuildToolMethod::Unmappable("CUTLASS is NVIDIA's template library (SM80+ MMA atoms): kernels built on it need an AMD port (CK, rocWMMA) by hand")),
    ("with_git_dependency", BuildToolMethod::Unmappable("a header library fetched for nvcc: check that it builds with hipcc and add it with include_dir")),
];

/// Rule `build-tools`: the libraries a build script links for CUDA
/// (`cargo:rustc-link-lib=dylib=cudart`) as ROCm's.
pub const LINK_LIBRARIES: &[(&str, &str)] = &[("cudart", "amdhip64"), ("cuda", "amdhip64"), ("cublas", "rocblas"), ("cublasLt", "hipblaslt"), ("curand", "rocrand"), ("nvrtc", "hiprtc")];
