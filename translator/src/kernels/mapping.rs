//! Every CUDA-to-HIP mapping the kernel rules apply, as data.
//!
//! The rules in [`super::rules`] are the mechanism; what they map lives here,
//! so that supporting a new upstream construct is usually one new row.
//! Targets named `candle_*` are defined by the compat headers that the
//! translator writes next to the kernels (`translator/compat/*.h`).

/// `#include` targets: CUDA header → HIP replacement, or `None` when the compat
/// prelude (included first by every generated file) already provides it.
pub const INCLUDES: &[(&str, Option<&str>)] = &[
    ("cuda_fp16.h", None),
    ("cuda_bf16.h", None),
    ("cuda_fp8.h", None),
    ("cuda_runtime.h", None),
    ("cuda.h", None),
    ("mma.h", Some("candle_hip_wmma.h")),
    // CUDART_* → HIP_* by the runtime table (rule names); HIP has the header since 5.3
    ("math_constants.h", Some("hip/hip_math_constants.h")),
    ("cuda/std/limits", Some("limits")),
    ("cuda/std/functional", Some("functional")),
    ("cuda/std/type_traits", Some("type_traits")),
    ("cuda/std/utility", Some("utility")),
    ("cuda/std/cstdint", Some("cstdint")),
    ("cuda/std/array", Some("array")),
    ("cuda/std/tuple", Some("tuple")),
    ("cuda/std/cmath", Some("cmath")),
    ("cuda_runtime_api.h", None),
    ("driver_types.h", None),
    ("cuda_device_runtime_api.h", None),
    ("vector_types.h", None),
    ("cooperative_groups.h", Some("hip/hip_cooperative_groups.h")),
    ("thrust/device_ptr.h", Some("candle_hip_thrust.h")),
    ("thrust/scan.h", Some("candle_hip_thrust.h")),
    ("thrust/execution_policy.h", Some("candle_hip_thrust.h")),
    ("cub/cub.cuh", Some("candle_hip_cub.h")),
    // Headers that hipify-perl writes; the prelude already provides them, so
    // the output is the same whether or not hipify-perl ran first.
    ("hip/hip_runtime.h", None),
    ("hip/hip_fp16.h", None),
    ("hip/hip_bf16.h", None),
    ("hip/hip_bfloat16.h", None),
    ("hip/hip_fp8.h", None),
    ("hip/hip_runtime_api.h", None),
    ("hipcub/hipcub.hpp", Some("candle_hip_cub.h")),
    ("rocwmma/rocwmma.hpp", Some("candle_hip_wmma.h")),
];

/// Whole header directories of CUDA's bundled libraries (after [`INCLUDES`]' exact names):
/// directory → the compat header that gives its names, our own where Candle needs them and
/// hipCUB's / rocThrust's otherwise (when the ROCm release has them).
pub const INCLUDE_DIRECTORIES: &[(&str, &str)] = &[
    ("cub/", "candle_hip_cub.h"),
    ("hipcub/", "candle_hip_cub.h"),
    ("thrust/", "candle_hip_rocthrust.h"),
];

/// The names of cub that `candle_hip_cub.h` declares itself (Candle's scan); every other
/// `cub::` name is hipCUB's, from [`HIPCUB_HEADER`], where the ROCm release ships hipCUB.
pub const COMPAT_CUB_NAMES: &[&str] = &["BlockScan"];
pub const HIPCUB_HEADER: &str = "hipcub/hipcub.hpp";

/// Headers with no AMD meaning (a name ending in `/` is a directory: every header in it):
/// an include of one is refused as NVIDIA-only, with the cause (rule `includes`).
pub const NVIDIA_ONLY_HEADERS: &[NvidiaOnly] = &[
    NvidiaOnly { key: "cutlass/", since_sm: None, cause: "CUTLASS: NVIDIA's tensor-core GEMM templates (SM80+ MMA atoms, sm_90 wgmma/TMA); AMD's counterpart is Composable Kernel, another design" },
    NvidiaOnly { key: "cute/", since_sm: None, cause: "CuTe: CUTLASS's layouts over NVIDIA MMA/copy atoms (ldmatrix, cp.async, TMA)" },
    NvidiaOnly { key: "cuda/barrier", since_sm: Some(80), cause: "libcu++'s cuda::barrier: asynchronous copies through the sm_80+ mbarrier" },
    NvidiaOnly { key: "cuda/pipeline", since_sm: Some(80), cause: "libcu++'s cuda::pipeline: cp.async stages (sm_80+)" },
    NvidiaOnly { key: "cuda/ptx", since_sm: None, cause: "libcu++'s PTX instruction wrappers" },
    NvidiaOnly { key: "cudaTypedefs.h", since_sm: Some(90), cause: "the CUDA driver's entry-point typedefs, taken for TMA tensor maps (sm_90)" },
    NvidiaOnly { key: "cuda_fp4.h", since_sm: Some(100), cause: "NVIDIA's fp4 (e2m1) types and conversions: no HIP spelling of them in the releases we support (HIP 5.2.3, ROCm 6.4)" },
];

/// A construct with no AMD meaning: an inline-PTX instruction ([`ASM_NVIDIA_ONLY`]) or a
/// header ([`NVIDIA_ONLY_HEADERS`]).
#[derive(Debug)]
pub struct NvidiaOnly {
    /// The instruction's first word (a prefix), or the header's name or directory (`x/`).
    pub key: &'static str,
    /// The NVIDIA compute capability that brought it (sm_80: 80), where one did: a CUDA GPU
    /// below it lacks it, as an AMD GPU does (candle-rocm-build's `get_compute_cap`).
    pub since_sm: Option<u32>,
    /// What it is.
    pub cause: &'static str,
}

/// NVIDIA's compute capabilities, oldest first (sm_50 ... sm_120).
pub const CUDA_COMPUTE_CAPABILITIES: &[u32] = &[50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121];

/// The newest compute capability that lacks what `since_sm` brought (80: 75).
pub fn capability_before(since_sm: u32) -> Option<u32> {
    CUDA_COMPUTE_CAPABILITIES.iter().copied().filter(|&cc| cc < since_sm).max()
}

#[cfg(test)]
mod capability_tests {
    use super::*;

    #[test]
    fn the_capability_before_one_is_the_newest_older_one() {
        assert_eq!(capability_before(80), Some(75));
        assert_eq!(capability_before(90), Some(89));
        assert_eq!(capability_before(100), Some(90));
        assert_eq!(capability_before(50), None);
        for row in ASM_NVIDIA_ONLY.iter().chain(NVIDIA_ONLY_HEADERS) {
            assert!(row.since_sm.is_none_or(|sm| CUDA_COMPUTE_CAPABILITIES.contains(&sm)), "{}: sm_{:?} is not a compute capability", row.key, row.since_sm);
        }
    }
}

/// The row of [`NVIDIA_ONLY_HEADERS`] naming `header`, as [`header_row`] matches.
pub fn nvidia_only_header(header: &str) -> Option<&'static NvidiaOnly> {
    NVIDIA_ONLY_HEADERS.iter().find(|row| names_header(row.key, header))
}

/// Headers of libraries outside CUDA that the translation does not provide (prefix,
/// library): an include of one is neither mapped nor refused as NVIDIA-only.
pub const FOREIGN_HEADERS: &[(&str, &str)] = &[
    ("torch/", "PyTorch's C++ API"),
    ("ATen/", "PyTorch's C++ API"),
    ("c10/", "PyTorch's C++ API"),
    ("pybind11/", "pybind11"),
    ("Python.h", "CPython's C API"),
];

/// Whether `header` is named by a row key of a table of headers ([`FOREIGN_HEADERS`], ...):
/// the same name, or inside a directory key (`cutlass/` holds `cutlass/gemm/x.h`).
pub fn header_row<'a>(rows: &'a [(&'a str, &'a str)], header: &str) -> Option<&'a str> {
    rows.iter().find(|(key, _)| names_header(key, header)).map(|(_, why)| *why)
}

/// Whether a row key names `header`: the same name, or a directory key (`x/`) holding it.
fn names_header(key: &str, header: &str) -> bool {
    if key.ends_with('/') {
        header.starts_with(key)
    } else {
        header == key
    }
}

/// Headers of ROCm's libraries, passed through as they are (a code path its author wrote
/// for ROCm includes them; the build links the library): name or directory (`x/`), and what.
pub const ROCM_LIBRARY_HEADERS: &[(&str, &str)] = &[
    ("hipblas/", "hipBLAS"),
    ("hipblaslt/", "hipBLASLt"),
    ("rocblas/", "rocBLAS"),
    ("hiprand/", "hipRAND"),
    ("rocrand/", "rocRAND"),
    ("rocprim/", "rocPRIM"),
    ("hip/hip_cooperative_groups.h", "HIP's cooperative groups"),
];

/// Switches with which code written for both platforms marks its author's ROCm branches
/// (rule `author-rocm-branches`): the macro, and whose convention it is.
pub const AUTHOR_ROCM_MACROS: &[(&str, &str)] =
    &[("USE_ROCM", "vLLM's ROCm build (-DUSE_ROCM): the kernels Candle's MoE and mistral.rs's paged attention and quantization take from vLLM")];

/// Standard C/C++ headers that pass through unchanged.
pub const STANDARD_INCLUDES: &[&str] = &[
    // C
    "assert.h", "ctype.h", "errno.h", "float.h", "inttypes.h", "limits.h", "math.h", "stdarg.h", "stdbool.h", "stddef.h",
    "stdint.h", "stdio.h", "stdlib.h", "string.h", "time.h",
    // C++: the C headers
    "cassert", "cctype", "cerrno", "cfloat", "cinttypes", "climits", "cmath", "cstdarg", "cstddef", "cstdint", "cstdio",
    "cstdlib", "cstring", "ctime",
    // C++: the library
    "algorithm", "array", "atomic", "bit", "bitset", "chrono", "complex", "condition_variable", "deque", "exception",
    "fstream", "functional", "initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream", "iterator", "limits",
    "list", "map", "memory", "mutex", "new", "numeric", "optional", "ostream", "queue", "random", "ratio", "set",
    "sstream", "stack", "stdexcept", "string", "string_view", "system_error", "thread", "tuple", "type_traits",
    "typeinfo", "unordered_map", "unordered_set", "utility", "variant", "vector",
];

/// The header every generated file includes first.
pub const COMPAT_PRELUDE: &str = "candle_hip_compat.h";

/// Compat headers written into `generated/kernels/` (name, text).
pub const COMPAT_HEADERS: &[(&str, &str)] = &[
    ("candle_hip_compat.h", include_str!("../../compat/candle_hip_compat.h")),
    ("candle_fp_convert.h", include_str!("../../compat/candle_fp_convert.h")),
    ("candle_hip_wmma.h", include_str!("../../compat/candle_hip_wmma.h")),
    ("candle_hip_thrust.h", include_str!("../../compat/candle_hip_thrust.h")),
    ("candle_hip_rocthrust.h", include_str!("../../compat/candle_hip_rocthrust.h")),
    ("candle_hip_cub.h", include_str!("../../compat/candle_hip_cub.h")),
    ("candle_hip_overloads.h", include_str!("../../compat/candle_hip_overloads.h")),
    ("candle_elementwise.h", include_str!("../../compat/candle_elementwise.h")),
];

/// candle-rocm's own kernel units written into `generated/kernels/` beside the
/// translations (name, text, what upstream source they stand for and why it is not
/// translated): kernels with no translatable upstream source. PARITY.md lists them.
pub const OWN_UNITS: &[(&str, &str, &str)] = &[(
    "candle_flash_attn.hip",
    include_str!("../../compat/candle_flash_attn.hip"),
    "candle-flash-attn's C ABI `run_mha` (upstream's kernels/flash_api.cu, same arguments): upstream's kernels are CUTLASS/CuTe \
     with SM80 MMA atoms, which have no AMD meaning, so this forward (tiled Q·Kᵀ, online softmax, P·V, O(n) memory) is written for HIP, \
     on candle_wmma's matrix tiles (MFMA on CDNA, WMMA on RDNA3/4, shuffles elsewhere)",
)];

/// The parameters of the C ABI `candle_flash_attn.hip` implements, in order:
/// candle-flash-attn 0.11.1's `run_mha` (src/ffi.rs). A release whose `run_mha`
/// declares other parameters (0.9.x and 0.10.x have no `total_q`, paged KV,
/// mm-prefix ranges or stream) cannot call it: regen leaves that release's
/// candle-flash-attn out and says so.
pub const RUN_MHA_PARAMETERS: &[&str] = &[
    "q_ptr", "k_ptr", "v_ptr", "o_ptr", "softmax_lse_ptr", "alibi_slopes_ptr", "cu_seqlens_q_ptr",
    "cu_seqlens_k_ptr", "q_batch_stride", "k_batch_stride", "v_batch_stride", "o_batch_stride",
    "alibi_slopes_batch_stride", "q_row_stride", "k_row_stride", "v_row_stride", "o_row_stride",
    "q_head_stride", "k_head_stride", "v_head_stride", "o_head_stride", "b", "h", "h_k", "d", "d_rounded",
    "softmax_scale", "seqlen_q", "seqlen_k", "seqlen_q_rounded", "seqlen_k_rounded", "total_q", "is_bf16",
    "is_causal", "unpadded_lse", "window_size_left", "window_size_right", "softcap", "block_table_ptr",
    "block_table_batch_stride", "page_block_size", "mm_prefix_ranges_ptr", "mm_prefix_range_batch_stride",
    "max_mm_prefix_ranges", "stream_ptr",
];

/// Which of [`OWN_UNITS`] are linked as static-library units (host launchers called
/// through `extern "C"`), as patterns in the form of MANIFEST.toml's
/// `[kernels] static_library` (the unit's name with `.cu`).
pub const OWN_STATIC_LIBRARY: &[&str] = &["candle_flash_attn.cu"];

/// Extra hipcc flags for the units whose upstream name matches `units` (a pattern of
/// MANIFEST.toml's `[kernels] static_library` form), in MANIFEST.toml's `[kernels]
/// unit_flags`: every AMD build of the generated kernels passes them (the kernels crate's
/// build script, `cargo xtask build-kernels`, the static report, the AMD compile test).
pub struct UnitFlags {
    pub units: &'static str,
    pub flags: &'static [&'static str],
    pub why: &'static str,
}

/// See [`UnitFlags`].
pub const UNIT_FLAGS: &[UnitFlags] = &[
    UnitFlags {
        units: "mmq_gguf/mmq_instance_*.cu",
        flags: &["-mllvm", "-amdgpu-unroll-threshold-local=0"],
        why: "AMDGPU's loop unroller raises its threshold from 300 to 1000 for loops that address LDS; in ggml's MMQ it then \
              unrolls the loops ggml left without a pragma (the AMD matrix paths' k01 loops) where the per-iteration body is \
              small, and at small tile widths (mmq_x 16-64) the unrolled loads need more than the 256 VGPRs a wave can have: \
              ROCm 7.2 gfx1100 `mul_mat_q<Q4_0, 32>` 256 VGPRs + 46 spilled, `<Q4_0, 48>` + 127, against 149 at mmq_x 64. \
              Without the raise (threshold 0: the LDS rule never applies), ggml's `#pragma unroll` loops still unroll; \
              -fno-unroll-loops instead left private arrays in scratch",
    },
    UnitFlags {
        units: "unary.cu",
        flags: &["-mllvm", "-disable-machine-licm"],
        why: "MachineLICM hoists the constants of the math library's polynomials (ocml's erf, exp, pow, sin...) out of the \
              grid-stride loops and holds them in registers across the loop: on f64 forty-odd SGPR pairs, so the f64 erf \
              kernels spilled SGPRs on gfx90a and RDNA (upstream's loop shape too) and the f64 erf/normcdf/pow kernels ran 5-7 waves \
              on CDNA; ROCm 7.2 gfx90a `uerf_f64` 100 SGPRs + 2 spilled, 69 VGPRs -> 48 and 22. The loops are bound by \
              memory traffic: materialising an immediate per iteration is cheaper than the waves the held registers cost. \
              IR-level LICM still hoists the loops' address arithmetic",
    },
];

/// Qualified names (`::`-joined, trivia between the parts ignored) → replacement.
/// Matched before [`IDENTIFIERS`].
pub const QUALIFIED: &[(&[&str], &str)] = &[
    (&["nvcuda", "wmma"], "candle_wmma"),
    (&["thrust", "cuda", "par"], "candle_thrust::hip::par"),
    (&["cuda", "std"], "std"),
];

/// Identifier renames: CUDA (or hipify-perl) name → name defined by HIP or by the compat headers.
pub const IDENTIFIERS: &[(&str, &str)] = &[
    // bf16 and fp8 types: our own layout-compatible types (HIP 5.2.3 has no
    // hip_bf16.h; fp8 must be OCP e4m3fn on every arch, never FNUZ).
    ("__nv_bfloat16", "candle_bf16"),
    ("nv_bfloat16", "candle_bf16"),
    ("__hip_bfloat16", "candle_bf16"),
    ("hip_bfloat16", "candle_bf16"),
    ("__nv_bfloat162", "candle_bf16x2"),
    ("__nv_bfloat16_raw", "candle_bf16_raw"),
    ("__nv_bfloat162_raw", "candle_bf16x2_raw"),
    ("nv_bfloat162", "candle_bf16x2"),
    ("__hip_bfloat162", "candle_bf16x2"),
    ("__nv_fp8_e4m3", "candle_fp8_e4m3"),
    ("__nv_fp8_e5m2", "candle_fp8_e5m2"),
    ("__nv_fp8x2_e4m3", "candle_fp8x2_e4m3"),
    ("__nv_fp8x4_e4m3", "candle_fp8x4_e4m3"),
    ("__nv_fp8x2_e5m2", "candle_fp8x2_e5m2"),
    ("__nv_fp8x4_e5m2", "candle_fp8x4_e5m2"),
    ("__hip_fp8_e4m3", "candle_fp8_e4m3"),
    ("__NV_E4M3", "CANDLE_FP8_E4M3_INTERP"),
    ("__NV_E5M2", "CANDLE_FP8_E5M2_INTERP"),
    ("__HIP_E5M2", "CANDLE_FP8_E5M2_INTERP"),
    ("__HIP_E4M3", "CANDLE_FP8_E4M3_INTERP"),
    ("__nv_cvt_fp8_to_halfraw", "candle_cvt_fp8_to_halfraw"),
    ("__hip_cvt_fp8_to_halfraw", "candle_cvt_fp8_to_halfraw"),
    ("__CUDA_FP8_TYPES_EXIST__", "CANDLE_FP8_TYPES_EXIST"),
    // cuda_fp8.h's conversions into e4m3 and their enumerations (compat: OCP e4m3fn)
    ("__nv_cvt_float_to_fp8", "candle_cvt_float_to_fp8"),
    ("__nv_cvt_double_to_fp8", "candle_cvt_double_to_fp8"),
    ("__nv_cvt_halfraw_to_fp8", "candle_cvt_halfraw_to_fp8"),
    ("__nv_cvt_bfloat16raw_to_fp8", "candle_cvt_bfloat16raw_to_fp8"),
    ("__NV_SATFINITE", "CANDLE_FP8_SATFINITE"),
    ("__NV_NOSAT", "CANDLE_FP8_NOSAT"),
    ("__nv_fp8_storage_t", "candle_fp8_storage"),
    ("__nv_fp8x2_storage_t", "candle_fp8x2_storage"),
    ("__nv_fp8x4_storage_t", "candle_fp8x4_storage"),
    ("__nv_cvt_float2_to_fp8x2", "candle_cvt_float2_to_fp8x2"),
    ("__nv_cvt_halfraw2_to_fp8x2", "candle_cvt_halfraw2_to_fp8x2"),
    ("__nv_cvt_fp8x2_to_halfraw2", "candle_cvt_fp8x2_to_halfraw2"),
    ("__half2_raw", "candle_half2_raw"),
    // cuda_fp16.h's pair, whose x and y are __half (HIP 5.2.3's are raw unsigned shorts)
    ("__half2", "candle_half2"),
    ("half2", "candle_half2"),
    ("__nv_saturation_t", "int"),
    ("__nv_fp8_interpretation_t", "int"),
    // CUDA 12's launch with a config (cudaLaunchKernelEx) and programmatic dependent launch:
    // an ordinary launch, the PDL attribute and its two device calls meaning nothing (compat)
    ("cudaLaunchConfig_t", "candle_launch_config"),
    ("cudaLaunchAttribute", "candle_launch_attribute"),
    ("cudaLaunchAttributeProgrammaticStreamSerialization", "CANDLE_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"),
    ("cudaLaunchKernelEx", "candle_launch_kernel_ex"),
    ("cudaGridDependencySynchronize", "candle_grid_dependency_synchronize"),
    ("cudaTriggerProgrammaticLaunchCompletion", "candle_trigger_programmatic_launch_completion"),
    // nvcc's list of compiled arches: never defined on AMD (a name nothing defines)
    ("__CUDA_ARCH_LIST__", "CANDLE_NO_CUDA_ARCH_LIST"),
    // bf16 conversions
    ("__float2bfloat16", "candle_float2bf16"),
    ("__float2bfloat16_rn", "candle_float2bf16"),
    ("__bfloat162float", "candle_bf162float"),
    ("__bfloat16_as_ushort", "candle_bf16_as_ushort"),
    ("__ushort_as_bfloat16", "candle_ushort_as_bf16"),
    ("__int2bfloat16_rn", "candle_int2bf16"),
    ("__uint2bfloat16_rn", "candle_uint2bf16"),
    ("__float22bfloat162_rn", "candle_float22bf162"),
    ("__floats2bfloat162_rn", "candle_floats2bf162"),
    ("__float2bfloat162_rn", "candle_float2bf162"),
    ("__halves2bfloat162", "candle_halves2bf162"),
    ("make_bfloat162", "candle_halves2bf162"),
    ("__bfloat162bfloat162", "candle_bf162bf162"),
    ("__bfloat1622float2", "candle_bf1622float2"),
    // loads through the read-only cache: a plain load on AMD, for every type (HIP's
    // __ldg has the built-in types only)
    ("__ldg", "candle_ldg"),
    // half/bf16 math that HIP 5.2.3 lacks or that must also take candle_bf16
    ("__hmax", "candle_hmax"),
    ("__hmin", "candle_hmin"),
    ("__hmax_nan", "candle_hmax_nan"),
    ("__hmin_nan", "candle_hmin_nan"),
    ("__hisnan", "candle_hisnan"),
    ("hsqrt", "candle_hsqrt"),
    ("hcos", "candle_hcos"),
    ("hsin", "candle_hsin"),
    ("hlog", "candle_hlog"),
    ("hexp", "candle_hexp"),
    ("__habs", "candle_habs"),
    // paired half/bf16 arithmetic, also on candle_bf16x2
    ("__hadd2", "candle_hadd2"),
    ("__hsub2", "candle_hsub2"),
    ("__hmul2", "candle_hmul2"),
    ("__hfma2", "candle_hfma2"),
    ("__low2float", "candle_low2float"),
    ("__high2float", "candle_high2float"),
    // integer SIMD intrinsics, exact portable versions
    ("__dp4a", "candle_dp4a"),
    ("__vsub4", "candle_vsub4"),
    ("__vsubss4", "candle_vsubss4"),
    ("__vcmpne4", "candle_vcmpne4"),
    ("__trap", "candle_trap"),
    // the warp's memory barrier: compat, a wavefront-scope fence pair on AMD
    ("__syncwarp", "candle_syncwarp"),
    ("__activemask", "candle_activemask_w32"),
    // a timed wait: s_sleep on AMD
    ("__nanosleep", "candle_nanosleep"),
    // nvcuda::wmma collectives (the namespace itself is in QUALIFIED)
    ("load_matrix_sync", "wmma_load_matrix"),
    ("store_matrix_sync", "wmma_store_matrix"),
    ("mma_sync", "wmma_mma"),
    // `using namespace nvcuda;` (then `wmma::...`): an alias namespace holding `wmma`
    ("nvcuda", "candle_nvcuda"),
    // thrust / cub: our own small implementations
    ("thrust", "candle_thrust"),
    ("cub", "candle_cub"),
    ("hipcub", "candle_cub"),
    // host runtime API used by the static-library launchers (the rest of the runtime API
    // HIP has is HIP_RUNTIME_NAMES)
    ("cudaStream_t", "hipStream_t"),
    ("cudaError_t", "hipError_t"),
    ("cudaError", "hipError_t"),
    ("cudaSuccess", "hipSuccess"),
    ("cudaGetLastError", "hipGetLastError"),
    ("cudaGetErrorString", "hipGetErrorString"),
    ("cudaGetDevice", "hipGetDevice"),
    ("cudaMemsetAsync", "hipMemsetAsync"),
    ("cudaMemcpyAsync", "hipMemcpyAsync"),
    ("cudaMallocAsync", "hipMallocAsync"),
    ("cudaFreeAsync", "hipFreeAsync"),
    ("cudaFuncSetAttribute", "candle_func_set_attribute"),
    ("hipFuncSetAttribute", "candle_func_set_attribute"),
    ("cudaFuncAttributeMaxDynamicSharedMemorySize", "hipFuncAttributeMaxDynamicSharedMemorySize"),
    ("cudaMemcpyDeviceToDevice", "hipMemcpyDeviceToDevice"),
    ("cudaMemcpyHostToDevice", "hipMemcpyHostToDevice"),
    ("cudaMemcpyDeviceToHost", "hipMemcpyDeviceToHost"),
];

/// HIPIFY's table of the CUDA runtime API names HIP has (functions, types, enumerations,
/// defines), one row a line: `cuda<TAB>hip<TAB>HIP version that added it<TAB>flags`. Rule
/// `names` renames every one of them that [`IDENTIFIERS`] does not map otherwise. Anchored
/// on HIPIFY's `docs/tables/CUDA_Runtime_API_functions_supported_by_HIP.md` (commit
/// 014177bc); a name HIP added after 5.2.3 compiles with ROCm 6/7 only.
pub const HIP_RUNTIME_NAMES: &str = include_str!("../../data/hipify_runtime.tsv");

/// The CUDA runtime API names HIPIFY's table lists with no HIP counterpart: refused as
/// NVIDIA-only (rule `residue-check`), one a line.
pub const HIP_RUNTIME_UNSUPPORTED: &str = include_str!("../../data/hipify_runtime_unsupported.txt");

/// HIPIFY's table of the CUDA device API HIP has, in [`HIP_RUNTIME_NAMES`]'s form (from
/// `CUDA_Device_API_supported_by_HIP.md`): the names are HIP's own in device code, so they
/// pass through; kept for the table of what translates.
pub const HIP_DEVICE_NAMES: &str = include_str!("../../data/hipify_device.tsv");

/// The (CUDA, HIP) pairs of a table in [`HIP_RUNTIME_NAMES`]'s form.
pub fn hipify_rows(table: &'static str) -> impl Iterator<Item = (&'static str, &'static str)> {
    table.lines().filter_map(|l| {
        let mut cols = l.split('\t');
        Some((cols.next()?, cols.next()?))
    })
}

/// The value an `__CUDA_ARCH__ <op> <operand>` comparison takes on AMD GPUs.
///
/// Keyed by how upstream spells the threshold, because one number means
/// different features in different places: Candle's own `>= 800` guards the
/// bf16 kernels (which must exist on AMD), while ggml's
/// `>= GGML_CUDA_CC_AMPERE` guards NVIDIA tensor-core and `cp.async` paths
/// (which must not). Every row holds on every AMD arch we target.
pub struct ArchGuard {
    pub op: &'static str,
    pub operand: &'static str,
    pub value: bool,
    pub why: &'static str,
}

const fn guard(op: &'static str, operand: &'static str, value: bool, why: &'static str) -> ArchGuard {
    ArchGuard { op, operand, value, why }
}

pub const ARCH_GUARDS: &[ArchGuard] = &[
    guard(">=", "530", true, "f16 arithmetic: native on AMD"),
    guard(">=", "800", true, "bf16 kernels: compat candle_bf16"),
    guard("<", "800", false, "__hmax_nan/__hmin_nan shims: compat candle_hmax_nan"),
    guard("<", "750", false, "__hmax_nan/__hmin_nan shims (candle 0.10): compat candle_hmax_nan"),
    guard(">=", "750", true, "as the `< 750` row: Turing's f16 and tanh.approx paths, whose PTX rule inline-asm gives its C++ meaning"),
    guard(">=", "890", true, "fp8 kernels: compat OCP e4m3"),
    guard("<", "600", false, "double atomicAdd: native on AMD"),
    guard("<", "700", true, "no 16-bit atomicCAS on AMD: use the 32-bit CAS path"),
    guard(">=", "MIN_CC_DP4A", true, "dp4a: compat candle_dp4a"),
    guard(">=", "GGML_CUDA_CC_DP4A", true, "dp4a: compat candle_dp4a"),
    guard(">=", "GGML_CUDA_CC_PASCAL", true, "fp16 available on AMD"),
    guard("!=", "610", true, "fast fp16 on AMD"),
    guard("==", "GGML_CUDA_CC_VOLTA", false, "no NVIDIA Volta mma on AMD"),
    guard(">=", "GGML_CUDA_CC_VOLTA", false, "no NVIDIA tensor cores on AMD"),
    guard("<", "GGML_CUDA_CC_VOLTA", true, "no NVIDIA tensor cores on AMD"),
    guard(">=", "GGML_CUDA_CC_TURING", false, "no NVIDIA mma/ldmatrix on AMD"),
    guard(">=", "GGML_CUDA_CC_AMPERE", false, "no NVIDIA mma/cp.async/redux on AMD"),
    guard(">=", "GGML_CUDA_CC_BLACKWELL", false, "no NVIDIA Blackwell mma on AMD"),
    guard("<", "GGML_CUDA_CC_RUBIN", true, "below any NVIDIA arch"),
    // NVIDIA generations whose features AMD lacks: each test reads as on an older GPU,
    // so the generic branch is taken
    guard(">=", "700", false, "Volta's independent thread scheduling, 16-bit atomicCAS, wmma tensor cores: the generic path"),
    guard(">=", "900", false, "Hopper's wgmma, TMA, clusters, programmatic dependent launch (griddepcontrol), cvt to fp8: the generic path"),
    guard(">", "900", false, "newer than Hopper: the generic path"),
    guard("<", "900", true, "below Hopper: AMD takes the generic path"),
    guard(">=", "1000", false, "Blackwell's tcgen05, fp4 conversions: the generic path"),
    guard("<", "1000", true, "below Blackwell: AMD takes the generic path"),
    guard(">=", "1200", false, "consumer Blackwell: the generic path"),
    guard("<", "1200", true, "below consumer Blackwell: AMD takes the generic path"),
    guard("<", "1100", true, "below Blackwell's sm_110: AMD takes the generic path"),
    guard(">=", "1100", false, "Blackwell's sm_110: the generic path"),
];

/// A host-side compute-capability predicate and the value it has on AMD.
pub struct HostArchQuery {
    pub macro_name: &'static str,
    pub value: &'static str,
    pub why: &'static str,
}

/// Host-side predicates on the `cc` a backend passes to ggml's launchers
/// (rule `host-arch-queries`): they must agree with what `ARCH_GUARDS` left
/// of the device code, whatever compute capability the device reports.
pub const HOST_ARCH_QUERIES: &[HostArchQuery] = &[HostArchQuery {
    macro_name: "GGML_CUDA_CC_IS_NVIDIA",
    value: "false",
    why: "the translated MMQ device code has no NVIDIA tensor-core tiles (arch-guards): the launchers must pick the 64-row tiles and no stream-k",
}];

/// A loop of an upstream kernel that needs a barrier before its closing brace.
pub struct UpstreamBarrier {
    /// Path relative to candle-kernels' `src/`.
    pub file: &'static str,
    /// The line comment upstream puts after the loop's closing brace.
    pub loop_end_comment: &'static str,
    pub why: &'static str,
}

/// Rule `upstream-kernel-fixes`: races in upstream kernels (found by
/// compute-sanitizer racecheck on the H100; see hip-on-cuda/NVIDIA-FINDINGS.md).
pub const UPSTREAM_BARRIERS: &[UpstreamBarrier] = &[
    UpstreamBarrier {
        file: "moe/moe_wmma_gguf.cu",
        loop_end_comment: "// end k_base loop",
        why: "the next iteration refills A_sh and the B tile other warps may still be reading",
    },
    #[cfg(test)]
    UpstreamBarrier { file: "t.cu", loop_end_comment: "// end k_base loop", why: "test row" },
];

/// A kernel parameter whose every launch passes the value a template argument implies
/// (rule `template-implied-arguments`).
pub struct TemplateImpliedArgument {
    /// Upstream path relative to the kernels' `src/`.
    pub file: &'static str,
    /// The `__global__` template's name.
    pub kernel: &'static str,
    /// The runtime parameter; inside the kernel's body it becomes `candle_<parameter>`.
    pub parameter: &'static str,
    /// The template parameter that implies it.
    pub template_parameter: &'static str,
    /// The launchers' variable: each `<launch_condition> == N` branch launches the kernel
    /// with the type whose value is N, passing that variable as `parameter`.
    pub launch_condition: &'static str,
    /// (the template argument, the value every launch with it passes)
    pub values: &'static [(&'static str, &'static str)],
    pub why: &'static str,
}

/// Rule `template-implied-arguments`: a kernel that branches at run time on a parameter
/// its template arguments already fix compiles every branch into every instance; with
/// the value a constant of the instance, only its own branch is left. The rule checks each
/// row against the launches in the same file (a launch pairing another value with the
/// type, or a type never launched, is an error), so the constant is what the argument
/// was; the parameter stays in the signature.
pub const TEMPLATE_IMPLIED_ARGUMENTS: &[TemplateImpliedArgument] = &[
    TemplateImpliedArgument {
        file: "moe/moe_wmma_gguf.cu",
        kernel: "moe_gemm_gguf_prefill_kernel",
        parameter: "gguf_dtype",
        template_parameter: "block_q_t",
        launch_condition: "gguf_type",
        values: &[("block_q8_0", "0"), ("block_q4_K", "1"), ("block_q2_K", "2"), ("block_q3_K", "3"), ("block_q5_K", "4"), ("block_q6_K", "5")],
        why: "each instance dequantizes its own block type: the switch over all six GGUF dequantizers in every instance took 206-243 VGPRs and spilled SGPRs on CDNA (q4_K)",
    },
    #[cfg(test)]
    TemplateImpliedArgument {
        file: "t.cu",
        kernel: "k",
        parameter: "kind",
        template_parameter: "B",
        launch_condition: "type",
        values: &[("block_a", "0"), ("block_b", "1")],
        why: "test row",
    },
];

/// CUDA toolkit version macros. HIP defines none of them, so in preprocessor
/// conditions they read as 0 (as they would under hipcc); every feature they
/// gate upstream is provided by HIP or the compat headers instead.
pub const TOOLKIT_VERSION_MACROS: &[&str] =
    &["CUDA_VERSION", "CUDART_VERSION", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__"];

/// Inline assembly with a known exact C++ meaning. `template` is the asm
/// string with whitespace collapsed; in `replacement`, `{N}` is operand N
/// (outputs first, then inputs, as in the asm operand numbering).
pub struct AsmRewrite {
    pub template: &'static str,
    pub replacement: &'static str,
    pub why: &'static str,
}

pub const ASM_REWRITES: &[AsmRewrite] = &[
    AsmRewrite {
        template: "cvt.rn.f16.f32 %0, %1;",
        replacement: "{0} = __half_as_ushort(__float2half_rn({1}));",
        why: "PTX float to f16, round to nearest even",
    },
    AsmRewrite {
        template: "v_cvt_f16_f32 %0, %1;",
        replacement: "{0} = __half_as_ushort(__float2half_rn({1}));",
        why: "GCN float to f16, round to nearest even (upper half zero)",
    },    AsmRewrite {
        template: "cvt.f32.f16 %0, %1;",
        replacement: "{0} = __half2float(__ushort_as_half({1}));",
        why: "PTX f16 to float, exact",
    },
    AsmRewrite {
        template: "v_cvt_f32_f16 %0, %1;",
        replacement: "{0} = __half2float(__ushort_as_half({1}));",
        why: "GCN f16 to float, exact",
    },
    AsmRewrite {
        template: "cvt.rn.f16x2.f32 %0, %1, %2;",
        replacement: "{0} = ((uint32_t)__half_as_ushort(__float2half_rn({1})) << 16) | (uint32_t)__half_as_ushort(__float2half_rn({2}));",
        why: "PTX two floats to a packed f16 pair (the first operand in the upper half), round to nearest even",
    },
    AsmRewrite {
        template: "mov.b32 %0, {%1, %1};",
        replacement: "{0} = ((uint32_t)({1}) << 16) | (uint32_t)({1});",
        why: "PTX: one 16-bit value in both halves of a 32-bit register",
    },
    AsmRewrite {
        template: "mov.b32 {%0, %1}, %2;",
        replacement: "{0} = (uint16_t)((uint32_t)({2}) & 0xffffu); {1} = (uint16_t)((uint32_t)({2}) >> 16);",
        why: "PTX: a 32-bit register split into its 16-bit halves, low first",
    },
    AsmRewrite {
        template: "add.f16 %0, %1, %2;",
        replacement: "{0} = __half_as_ushort(__hadd(__ushort_as_half({1}), __ushort_as_half({2})));",
        why: "PTX f16 add, round to nearest even",
    },
    AsmRewrite {
        template: "v_add_f16 %0, %1, %2;",
        replacement: "{0} = __half_as_ushort(__hadd(__ushort_as_half({1}), __ushort_as_half({2})));",
        why: "GCN f16 add",
    },
    AsmRewrite {
        template: "mul.f16 %0, %1, %2;",
        replacement: "{0} = __half_as_ushort(__hmul(__ushort_as_half({1}), __ushort_as_half({2})));",
        why: "PTX f16 multiply, round to nearest even",
    },
    AsmRewrite {
        template: "v_mul_f16 %0, %1, %2;",
        replacement: "{0} = __half_as_ushort(__hmul(__ushort_as_half({1}), __ushort_as_half({2})));",
        why: "GCN f16 multiply",
    },
    AsmRewrite {
        template: "add.f16x2 %0, %1, %2;",
        replacement: "{0} = candle_f16x2_add({1}, {2});",
        why: "PTX packed f16 add",
    },
    AsmRewrite {
        template: "v_pk_add_f16 %0, %1, %2;",
        replacement: "{0} = candle_f16x2_add({1}, {2});",
        why: "GCN packed f16 add",
    },
    AsmRewrite {
        template: "mul.f16x2 %0, %1, %2;",
        replacement: "{0} = candle_f16x2_mul({1}, {2});",
        why: "PTX packed f16 multiply",
    },
    AsmRewrite {
        template: "v_pk_mul_f16 %0, %1, %2;",
        replacement: "{0} = candle_f16x2_mul({1}, {2});",
        why: "GCN packed f16 multiply",
    },
    AsmRewrite {
        template: "fma.rn.f16x2 %0, %1, %2, %3;",
        replacement: "{0} = candle_f16x2_fma({1}, {2}, {3});",
        why: "PTX packed f16 fused multiply-add",
    },
    AsmRewrite {
        template: "v_pk_fma_f16 %0, %1, %2, %3;",
        replacement: "{0} = candle_f16x2_fma({1}, {2}, {3});",
        why: "GCN packed f16 fused multiply-add",
    },
    AsmRewrite {
        template: "mov.u32 %0, %%laneid;",
        replacement: "{0} = candle_lane_id();",
        why: "PTX lane index within the 32-lane warp",
    },
    AsmRewrite {
        template: "tanh.approx.f32 %0, %1;",
        replacement: "{0} = tanhf({1});",
        why: "PTX approximate tanh: the exact one (at least as accurate)",
    },
    AsmRewrite {
        template: "ex2.approx.ftz.f32 %0, %1;",
        replacement: "{0} = exp2f({1});",
        why: "PTX approximate 2^x: the exact one",
    },
    AsmRewrite {
        template: "lg2.approx.ftz.f32 %0, %1;",
        replacement: "{0} = log2f({1});",
        why: "PTX approximate log2: the exact one",
    },
    AsmRewrite {
        template: "rsqrt.approx.ftz.f32 %0, %1;",
        replacement: "{0} = rsqrtf({1});",
        why: "PTX approximate reciprocal square root: HIP's rsqrtf",
    },
    AsmRewrite {
        template: "rcp.approx.ftz.f32 %0, %1;",
        replacement: "{0} = 1.0f / ({1});",
        why: "PTX approximate reciprocal: the division",
    },
    AsmRewrite {
        template: "ex2.approx.f16 %0, %1;",
        replacement: "{0} = __half_as_ushort(__float2half_rn(exp2f(__half2float(__ushort_as_half({1})))));",
        why: "PTX approximate 2^x on f16: through float, rounded once",
    },
    AsmRewrite {
        template: "ex2.approx.f16x2 %0, %1;",
        replacement: "{0} = candle_f16x2_exp2({1});",
        why: "PTX approximate 2^x on an f16 pair",
    },
    AsmRewrite {
        template: "tanh.approx.f16 %0, %1;",
        replacement: "{0} = __half_as_ushort(__float2half_rn(tanhf(__half2float(__ushort_as_half({1})))));",
        why: "PTX approximate tanh on f16: through float, rounded once",
    },
    AsmRewrite {
        template: "tanh.approx.f16x2 %0, %1;",
        replacement: "{0} = candle_f16x2_tanh({1});",
        why: "PTX approximate tanh on an f16 pair",
    },
    AsmRewrite {
        template: "shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;",
        replacement: "{0} = __shfl_xor({1}, {2}, 32);",
        why: "PTX butterfly shuffle over the full 32-lane warp (clamp 0x1f, full mask)",
    },
    AsmRewrite {
        template: "max.f32 %0, %1, %2;",
        replacement: "{0} = candle_fmax_ptx({1}, {2});",
        why: "PTX max.f32: a NaN operand yields the other, +0 is above -0",
    },
    AsmRewrite {
        template: "min.f32 %0, %1, %2;",
        replacement: "{0} = candle_fmin_ptx({1}, {2});",
        why: "PTX min.f32: a NaN operand yields the other, -0 is below +0",
    },
    AsmRewrite {
        template: "max.NaN.f32 %0, %1, %2;",
        replacement: "{0} = candle_fmax_nan_ptx({1}, {2});",
        why: "PTX max.NaN.f32: a NaN operand yields the canonical NaN",
    },
    AsmRewrite {
        template: "min.NaN.f32 %0, %1, %2;",
        replacement: "{0} = candle_fmin_nan_ptx({1}, {2});",
        why: "PTX min.NaN.f32: a NaN operand yields the canonical NaN",
    },
    AsmRewrite {
        template: "lop3.b32 %0, %1, %2, %3, %4;",
        replacement: "{0} = candle_lop3({1}, {2}, {3}, {4});",
        why: "PTX three-input logic operation by truth table",
    },
    AsmRewrite {
        template: "ld.global.cs.b32 %0, [%1];",
        replacement: "{0} = candle_ld_cs_b32({1});",
        why: "PTX streaming 32-bit load: nontemporal on AMD",
    },
    AsmRewrite {
        template: "ld.global.cs.v2.b32 {%0, %1}, [%2];",
        replacement: "{0} = candle_ld_cs_b32({2}); {1} = candle_ld_cs_b32((const uint32_t*)({2}) + 1);",
        why: "PTX streaming 2 x 32-bit load: nontemporal on AMD",
    },
    AsmRewrite {
        template: "st.global.cs.b32 [%0], %1;",
        replacement: "candle_st_cs_b32({0}, {1});",
        why: "PTX streaming 32-bit store: nontemporal on AMD",
    },
    AsmRewrite {
        template: "st.global.cs.v2.b32 [%0], {%1, %2};",
        replacement: "candle_st_cs_b32({0}, {1}); candle_st_cs_b32((uint32_t*)({0}) + 1, {2});",
        why: "PTX streaming 2 x 32-bit store: nontemporal on AMD",
    },
    AsmRewrite {
        template: "fence.acq_rel.gpu;",
        replacement: "__threadfence();",
        why: "PTX device-scope fence",
    },
    AsmRewrite {
        template: "cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;",
        replacement: "{0} = candle_cvt_halfraw2_to_fp8x2(candle_u32_as_half2({1}), CANDLE_FP8_SATFINITE, CANDLE_FP8_E4M3_INTERP);",
        why: "PTX f16 pair to e4m3 pair, saturating (the low half to the low byte): cuda_fp8.h's conversion, compat",
    },
    AsmRewrite {
        template: "cvt.rn.f16x2.e4m3x2 %0, %1;",
        replacement: "{0} = candle_half2_as_u32(candle_cvt_fp8x2_to_halfraw2({1}, CANDLE_FP8_E4M3_INTERP));",
        why: "PTX e4m3 pair to f16 pair (exact): cuda_fp8.h's conversion, compat",
    },
    AsmRewrite {
        template: "cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;",
        replacement: "{0} = candle_cvt_halfraw2_to_fp8x2(candle_u32_as_half2({1}), CANDLE_FP8_SATFINITE, CANDLE_FP8_E5M2_INTERP);",
        why: "PTX f16 pair to e5m2 pair, saturating (the low half to the low byte): cuda_fp8.h's conversion, compat",
    },
    AsmRewrite {
        template: "cvt.rn.f16x2.e5m2x2 %0, %1;",
        replacement: "{0} = candle_half2_as_u32(candle_cvt_fp8x2_to_halfraw2({1}, CANDLE_FP8_E5M2_INTERP));",
        why: "PTX e5m2 pair to f16 pair (exact): cuda_fp8.h's conversion, compat",
    },
    AsmRewrite {
        template: "st.volatile.global.v4.b32 [%4], {%0, %1, %2, %3};",
        replacement: "candle_st_volatile_b32({4}, {0}); candle_st_volatile_b32((uint32_t*)({4}) + 1, {1}); candle_st_volatile_b32((uint32_t*)({4}) + 2, {2}); candle_st_volatile_b32((uint32_t*)({4}) + 3, {3});",
        why: "PTX volatile 4 x 32-bit store: four volatile stores",
    },
    AsmRewrite {
        template: "ld.volatile.global.v4.b32 {%0, %1, %2, %3}, [%4];",
        replacement: "{0} = candle_ld_volatile_b32({4}); {1} = candle_ld_volatile_b32((const uint32_t*)({4}) + 1); {2} = candle_ld_volatile_b32((const uint32_t*)({4}) + 2); {3} = candle_ld_volatile_b32((const uint32_t*)({4}) + 3);",
        why: "PTX volatile 4 x 32-bit load: four volatile loads",
    },
    AsmRewrite {
        template: "st.release.global.sys.v4.b32 [%4], {%0, %1, %2, %3};",
        replacement: "candle_fence_release_sys(); candle_st_volatile_b32({4}, {0}); candle_st_volatile_b32((uint32_t*)({4}) + 1, {1}); candle_st_volatile_b32((uint32_t*)({4}) + 2, {2}); candle_st_volatile_b32((uint32_t*)({4}) + 3, {3});",
        why: "PTX system-scope release store of 4 x 32 bits: a release fence, then four volatile stores",
    },
    AsmRewrite {
        template: "ld.acquire.global.sys.v4.b32 {%0, %1, %2, %3}, [%4];",
        replacement: "{0} = candle_ld_volatile_b32({4}); {1} = candle_ld_volatile_b32((const uint32_t*)({4}) + 1); {2} = candle_ld_volatile_b32((const uint32_t*)({4}) + 2); {3} = candle_ld_volatile_b32((const uint32_t*)({4}) + 3); candle_fence_acquire_sys();",
        why: "PTX system-scope acquire load of 4 x 32 bits: four volatile loads, then an acquire fence",
    },
    AsmRewrite {
        template: "griddepcontrol.wait;",
        replacement: "candle_grid_dependency_synchronize();",
        why: "PTX programmatic dependent launch's wait: launches are never programmatic on AMD, so the kernel ahead has ended",
    },
    AsmRewrite {
        template: "griddepcontrol.launch_dependents;",
        replacement: "candle_trigger_programmatic_launch_completion();",
        why: "PTX programmatic dependent launch's trigger: nothing waits for it on AMD",
    },
    AsmRewrite {
        template: "prefetch.global.L2 [%0];",
        replacement: "(void)({0});",
        why: "PTX L2 prefetch: a hint, nothing to compute",
    },
];

/// PTX instructions with no AMD meaning (the first word of an asm template, or of a
/// `{ ... }` block's instruction after its predicate setup): refused as NVIDIA-only, with
/// the cause. Other unknown inline assembly is "no rule".
pub const ASM_NVIDIA_ONLY: &[NvidiaOnly] = &[
    NvidiaOnly { key: "cp.async", since_sm: Some(80), cause: "sm_80 asynchronous global-to-shared copies (cp.async groups)" },
    NvidiaOnly { key: "mma.sync", since_sm: Some(80), cause: "NVIDIA tensor-core MMA (mma.sync), with its register fragment layouts (the m16n8k16 f16/bf16 shapes kernels take are sm_80's)" },
    NvidiaOnly { key: "ldmatrix", since_sm: Some(75), cause: "sm_75 ldmatrix: shared-memory tiles into tensor-core fragments" },
    NvidiaOnly { key: "stmatrix", since_sm: Some(90), cause: "sm_90 stmatrix: tensor-core fragments into shared memory" },
    NvidiaOnly { key: "wgmma", since_sm: Some(90), cause: "sm_90 warpgroup MMA (wgmma)" },
    NvidiaOnly { key: "tcgen05", since_sm: Some(100), cause: "sm_100 tensor-core generation 5" },
    NvidiaOnly { key: "cp.reduce.async.bulk", since_sm: Some(90), cause: "sm_90 TMA bulk reductions" },
    NvidiaOnly { key: "mbarrier", since_sm: Some(80), cause: "sm_80+ asynchronous transaction barriers" },
    NvidiaOnly { key: "elect.sync", since_sm: Some(90), cause: "sm_90 warp leader election" },
    NvidiaOnly { key: "setmaxnreg", since_sm: Some(90), cause: "sm_90 register reallocation between warpgroups" },
    NvidiaOnly { key: "cvt.rn.satfinite.e2m1x2", since_sm: Some(100), cause: "sm_100 fp4 (e2m1) conversions, as cuda_fp4.h: no HIP spelling in the releases we support, and no NVIDIA GPU lent here to check an emulation against" },
];

/// What a warp-synchronous intrinsic's mask becomes when it names only some lanes
/// (a full mask is always dropped: every lane of the logical warp takes part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialMask {
    /// Dropped: a lane reads the lane it names, which CUDA requires to be in the
    /// mask, and AMD's shuffles read any lane.
    Dropped,
    /// Passed first to this compat function, which counts the mask's lanes only.
    PassedTo(&'static str),
}

/// The arguments a warp-synchronous intrinsic takes after its mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarpArgs {
    /// A value and a lane (or delta), then an optional width, which the
    /// translation always spells out.
    Width,
    /// Exactly this many.
    Exactly(usize),
}

/// Warp-synchronous intrinsics: CUDA name → (compat name, the arguments after
/// the mask, what a partial mask becomes). The compat shuffles forward to HIP's
/// `__shfl*` and add the 16-bit float overloads HIP lacks; votes and matches work
/// over the logical warp. CUDA's default width is 32; HIP's is the wavefront size
/// (64 on CDNA), so the translation always spells the width out: a logical warp
/// is 32 lanes on every AMD arch, and results are the same on wave32 and wave64.
pub const WARP_SYNC_INTRINSICS: &[(&str, &str, WarpArgs, PartialMask)] = &[
    ("__shfl_sync", "candle_shfl", WarpArgs::Width, PartialMask::Dropped),
    ("__shfl_xor_sync", "candle_shfl_xor", WarpArgs::Width, PartialMask::Dropped),
    ("__shfl_up_sync", "candle_shfl_up", WarpArgs::Width, PartialMask::Dropped),
    ("__shfl_down_sync", "candle_shfl_down", WarpArgs::Width, PartialMask::Dropped),
    ("__reduce_add_sync", "candle_reduce_add_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_reduce_add_w32_in")),
    ("__reduce_max_sync", "candle_reduce_max_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_reduce_max_w32_in")),
    ("__reduce_min_sync", "candle_reduce_min_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_reduce_min_w32_in")),
    ("__ballot_sync", "candle_ballot_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_ballot_w32_in")),
    ("__any_sync", "candle_any_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_any_w32_in")),
    ("__all_sync", "candle_all_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_all_w32_in")),
    ("__match_any_sync", "candle_match_any_w32", WarpArgs::Exactly(1), PartialMask::PassedTo("candle_match_any_w32_in")),
    ("__match_all_sync", "candle_match_all_w32", WarpArgs::Exactly(2), PartialMask::PassedTo("candle_match_all_w32_in")),
];

/// The width a CUDA warp has: the implicit shuffle width made explicit.
pub const LOGICAL_WARP_WIDTH: &str = "32";

/// Functions whose HIP overload set differs from CUDA's (HIP 5.2 has no
/// `min(unsigned, unsigned)`, no 16-bit `atomicAdd`, no signed 64-bit
/// `atomicMax`): calls (an identifier directly followed by `(`, not a member
/// or a qualified name like `numeric_limits<T>::max()`) go to compat
/// functions that forward to HIP's where they exist.
pub const CALL_RENAMES: &[(&str, &str)] = &[
    ("min", "candle_min"),
    ("max", "candle_max"),
    ("atomicAdd", "candle_atomic_add"),
    ("atomicMax", "candle_atomic_max"),
    ("atomicMin", "candle_atomic_min"),
];

/// Overloads of a [`CALL_RENAMES`] function that upstream defines itself for
/// old NVIDIA arches and the compat header provides on AMD (rule
/// `compat-overloads`): (function, type its first parameter points to, why).
/// Such a definition is removed: renamed by `call-renames` it would be a
/// second definition of the compat overload. A definition of a renamed
/// function not listed here is an error, never a clash left to hipcc.
pub const COMPAT_OVERLOADS: &[(&str, &str, &str)] = &[(
    "atomicAdd",
    "__half",
    "16-bit atomicAdd: compat candle_atomic_add(__half*) (a CAS on the 32-bit word); upstream's pre-sm_70 overload (an empty stub in candle 0.9.x) is kept by arch-guards' `< 700` row",
)];

/// Arguments hipify-perl wraps in `reinterpret_cast<const void*>(...)`:
/// (function after renaming, argument index). The cast is removed again.
pub const HIPIFY_CASTS: &[(&str, usize)] = &[("candle_func_set_attribute", 0)];

/// Identifiers that must not survive translation outside comments and
/// strings (exact names).
pub const FORBIDDEN_IDENTIFIERS: &[&str] = &[
    "asm", "__asm", "__asm__", "nvcuda", "thrust", "cub", "__trap", "__syncwarp", "__activemask", "__match_any_sync", "__match_all_sync", "__dp4a", "__dp2a_lo", "__dp2a_hi",
    "CUDA_VERSION", "CUDART_VERSION", "__CUDA_ARCH__", "__CUDA_ARCH_LIST__", "__CUDACC__", "__NVCC__",
];

/// Identifier prefixes that mark CUDA-only names.
pub const FORBIDDEN_PREFIXES: &[&str] = &["__nv_", "__NV_", "__CUDA", "__CUDACC", "__vsub", "__vadd", "__vcmp", "__vabs", "__vmax", "__vmin"];

/// One AMD architecture family as ggml's HIP build names it
/// (`ggml-cuda/vendors/hip.h`): the macro, and the clang `__gfxNNNN__`
/// macros of the arches that belong to it.
pub struct GgmlAmdFamily {
    pub define: &'static str,
    pub arches: &'static [&'static str],
}

/// ggml's per-arch families, written into [`GGML_HIP_ARCH_HEADER`] (rule
/// `ggml-amd-profile` makes mmq_common.cuh include it). `CDNA` and `RDNA`
/// stand for the whole family, as in ggml; RDNA3 covers every gfx11 arch and
/// RDNA3_5 the gfx115x ones on top of it (ggml does the same).
pub const GGML_AMD_FAMILIES: &[GgmlAmdFamily] = &[
    GgmlAmdFamily { define: "CDNA1", arches: &["gfx908"] },
    GgmlAmdFamily { define: "CDNA2", arches: &["gfx90a"] },
    GgmlAmdFamily { define: "CDNA3", arches: &["gfx940", "gfx941", "gfx942"] },
    GgmlAmdFamily { define: "CDNA4", arches: &["gfx950"] },
    GgmlAmdFamily { define: "RDNA1", arches: &["gfx1010", "gfx1011", "gfx1012"] },
    GgmlAmdFamily {
        define: "RDNA2",
        arches: &["gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1037"],
    },
    GgmlAmdFamily { define: "RDNA3", arches: &["gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"] },
    GgmlAmdFamily { define: "RDNA3_5", arches: &["gfx1150", "gfx1151", "gfx1152", "gfx1153"] },
    GgmlAmdFamily { define: "RDNA4", arches: &["gfx1200", "gfx1201"] },
];

/// A macro defined from other macros: `define` when `condition` holds.
pub struct GgmlDerivedDefine {
    pub define: &'static str,
    pub condition: &'static str,
    pub why: &'static str,
}

/// What ggml's HIP build defines on top of the families, in order.
pub const GGML_DERIVED_DEFINES: &[GgmlDerivedDefine] = &[
    GgmlDerivedDefine {
        define: "CDNA",
        condition: "defined(CDNA1) || defined(CDNA2) || defined(CDNA3) || defined(CDNA4)",
        why: "the whole CDNA family (ggml)",
    },
    GgmlDerivedDefine {
        define: "RDNA",
        condition: "defined(RDNA1) || defined(RDNA2) || defined(RDNA3) || defined(RDNA4)",
        why: "the whole RDNA family (ggml)",
    },
    GgmlDerivedDefine {
        define: "GGML_USE_HIP",
        condition: "defined(__HIP_PLATFORM_AMD__) || defined(CDNA) || defined(RDNA)",
        why: "ggml's HIP build: every pass of hipcc for AMD (host and device); an arch macro alone in a hip-on-cuda emulated build",
    },
    GgmlDerivedDefine {
        define: "AMD_WMMA_AVAILABLE",
        condition: "defined(RDNA3) || defined(RDNA4)",
        why: "ggml's WMMA MMQ tiles (v_wmma_i32_16x16x16_iu8), wave32; run on an NVIDIA GPU through hip-on-cuda's WMMA emulation",
    },
    GgmlDerivedDefine {
        define: "CANDLE_HIP_NO_MMQ_MFMA",
        condition: "defined(__HIP_PLATFORM_AMD__) && defined(HIP_VERSION_MAJOR) && HIP_VERSION_MAJOR < 6 && !defined(CANDLE_HIP_NO_MMQ_MFMA)",
        why: "no MFMA tiles with HIP 5 (Debian's 5.2.3): its clang lacks the __bf16 type that upstream's bf16 MFMA tile passes (ggml itself needs ROCm 6.1)",
    },
    GgmlDerivedDefine {
        define: "AMD_MFMA_AVAILABLE",
        condition: "defined(CDNA) && !defined(CANDLE_HIP_NO_MMQ_MFMA)",
        why: "ggml's MFMA MMQ tiles (v_mfma_i32_*), wave64, as ggml's default (checked in the CPU 64-lane emulation, tests/amd_emulation/mmq_wave64); CANDLE_HIP_NO_MMQ_MFMA (ggml's GGML_HIP_NO_MMQ_MFMA) keeps the dp4a tiles; CDNA4 (gfx950) takes CDNA3's int8 instructions (rule ggml-cdna4-mma), as ggml does since llama.cpp PR 21570",
    },
];

/// The generated header with [`GGML_AMD_FAMILIES`] and [`GGML_DERIVED_DEFINES`].
pub const GGML_HIP_ARCH_HEADER: &str = "candle_ggml_hip_arch.h";

/// The upstream header that gets [`GGML_HIP_ARCH_HEADER`] and whose
/// NVIDIA-only definitions [`GGML_AMD_QUERIES`] replaces.
pub const GGML_COMMON_HEADER: &str = "mmq_gguf/mmq_common.cuh";

/// A function upstream's self-contained ggml header defines for NVIDIA only,
/// and the definition ggml's own common.cuh gives it in the HIP build.
pub struct GgmlAmdQuery {
    pub function: &'static str,
    /// The whole replacement definition (upstream's leaves the parameter unnamed).
    pub definition: &'static str,
    pub why: &'static str,
}

/// Rule `ggml-amd-profile`: upstream's mmq_common.cuh answers "no" to every
/// AMD question (`{ return false; } // NVIDIA only`); ggml's HIP build answers
/// per arch. Host functions read the `cc` the backend passes (ggml's AMD
/// compute capability, `0x1000000 + gfx id`); device functions the arch macros.
pub const GGML_AMD_QUERIES: &[GgmlAmdQuery] = &[
    GgmlAmdQuery {
        function: "amd_mfma_available",
        definition: "static bool amd_mfma_available(const int cc) {\n#if !defined(CANDLE_HIP_NO_MMQ_MFMA)\n    return GGML_CUDA_CC_IS_CDNA(cc);\n#else\n    GGML_UNUSED(cc);\n    return false;\n#endif // !defined(CANDLE_HIP_NO_MMQ_MFMA)\n}",
        why: "host side of AMD_MFMA_AVAILABLE (the same switch)",
    },
    GgmlAmdQuery {
        function: "amd_wmma_available",
        definition: "static bool amd_wmma_available(const int cc) {\n    return GGML_CUDA_CC_IS_RDNA4(cc) || GGML_CUDA_CC_IS_RDNA3(cc);\n}",
        why: "host side of AMD_WMMA_AVAILABLE",
    },
    GgmlAmdQuery {
        function: "ggml_cuda_get_physical_warp_size",
        definition: "static constexpr __device__ int ggml_cuda_get_physical_warp_size() {\n#if defined(GGML_USE_HIP) && defined(CDNA)\n    return 64;\n#else\n    return 32;\n#endif // defined(GGML_USE_HIP) && defined(CDNA)\n}",
        why: "ggml's physical warp: the whole 64-lane wavefront on CDNA (the backend passes the device's wavefront size to the launchers)",
    },
];

/// A local of upstream's MMQ launchers (`mmq_instance_*.cu`) whose initializer
/// hard-codes NVIDIA's choice, and ggml's host function for it.
pub struct GgmlHostTile {
    /// The declared name (`const int NAME = ...;`).
    pub local: &'static str,
    /// Upstream's initializer, tokens joined by single spaces.
    pub upstream: &'static str,
    pub ggml: &'static str,
    pub why: &'static str,
}

/// Rule `ggml-host-tiles`: what the launchers' tile switch does when no tile
/// fits the shared memory per block (`mmq_x_best` stays 0): ggml's abort
/// (upstream's `GGML_ABORT` of mmq_common.cuh, host side: a message and
/// `abort()`), where upstream's `default: break;` launched nothing.
pub const NO_TILE_ABORT: &str = "GGML_ABORT(\"mmq_gguf: no MMQ tile fits the shared memory per block\");";

/// Rule `ggml-host-tiles`: the launchers choose tiles as ggml's own host
/// code does, so that host and device agree on every AMD arch. On an NVIDIA
/// compute capability each ggml function gives upstream's value again.
pub const GGML_HOST_TILES: &[GgmlHostTile] = &[
    GgmlHostTile {
        local: "mmq_x_max",
        upstream: "( turing_mma_available ( cc ) ) ? 128 : ( GGML_CUDA_CC_IS_NVIDIA ( cc ) && ggml_cuda_highest_compiled_arch ( cc ) >= GGML_CUDA_CC_VOLTA ) ? 64 : 64",
        ggml: "get_mmq_x_max_host(cc)",
        why: "128 columns with AMD matrix cores",
    },
    GgmlHostTile {
        local: "mmq_y",
        upstream: "( GGML_CUDA_CC_IS_NVIDIA ( cc ) && ggml_cuda_highest_compiled_arch ( cc ) >= GGML_CUDA_CC_VOLTA ) ? 128 : 64",
        ggml: "get_mmq_y_host(cc)",
        why: "128 rows on AMD (64 on RDNA1), as get_mmq_y_device() under GGML_USE_HIP",
    },
    GgmlHostTile {
        local: "nwarps",
        upstream: "256 / warp_size_host",
        ggml: "mmq_get_nwarps_host(cc, warp_size_host)",
        why: "8 warps with MFMA, else 256 / the wavefront size, as mmq_get_nwarps_device()",
    },
    GgmlHostTile {
        local: "granularity",
        upstream: "( turing_mma_available ( cc ) && mmq_x >= 48 ) ? 16 : 8",
        ggml: "mmq_get_granularity_host(mmq_x, cc)",
        why: "16/32-column steps with AMD matrix cores, as mmq_get_granularity_device()",
    },
];

/// An edit of upstream's tokens inside the definitions of one function of one
/// kernel file.
pub struct FunctionEdit {
    /// Upstream path relative to the kernels' `src/`.
    pub file: &'static str,
    pub function: &'static str,
    /// Upstream's tokens, joined by single spaces.
    pub upstream: &'static str,
    pub rocm: &'static str,
    /// How often `upstream` occurs in all definitions of `function`.
    pub count: usize,
    pub why: &'static str,
}

/// Rule `wave-rows`: Candle's row kernels (softmax, rms norm, layer norm) reduce
/// over the whole wavefront (`CANDLE_ROW_WAVE`, from the compat prelude: 64 in
/// a device pass for a GFX9 arch, GCN/CDNA) instead of a 32-lane warp. The
/// ROCm host code launches them with the device's wavefront size (backend
/// rule `wave-launches`). On NVIDIA and RDNA the macro is 32 and every edit
/// gives upstream's code again.
pub const WAVE_ROW_EDITS: &[FunctionEdit] = &[
    FunctionEdit {
        file: "reduce.cu",
        function: "warp_reduce_sum",
        upstream: "mask = 16",
        rocm: "mask = CANDLE_ROW_WAVE / 2",
        count: 2,
        why: "the butterfly starts at half the wavefront",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "warp_reduce_sum",
        upstream: ", mask , 32 )",
        rocm: ", mask, CANDLE_ROW_WAVE)",
        count: 3,
        why: "the shuffle spans the wavefront",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "layernorm",
        upstream: "WARP_SIZE",
        rocm: "CANDLE_ROW_WAVE",
        count: 3,
        why: "one partial sum per wavefront",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "layernorm",
        upstream: "mean_var = s_sum [ lane_id ] ;",
        rocm: "mean_var = lane_id < block_size / CANDLE_ROW_WAVE ? s_sum[lane_id] : make_float2(0.f, 0.f);",
        count: 1,
        why: "1024 threads are 16 wavefronts of 64: the lanes past them add zero (with 32 lanes every lane has a warp's sum, as upstream)",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "rmsnorm",
        upstream: "WARP_SIZE",
        rocm: "CANDLE_ROW_WAVE",
        count: 3,
        why: "one partial sum per wavefront",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "rmsnorm",
        upstream: "tmp = s_sum [ lane_id ] ;",
        rocm: "tmp = lane_id < block_size / CANDLE_ROW_WAVE ? s_sum[lane_id] : 0.0f;",
        count: 1,
        why: "1024 threads are 16 wavefronts of 64: the lanes past them add zero (with 32 lanes every lane has a warp's sum, as upstream)",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "softmax",
        upstream: "mask = 16",
        rocm: "mask = CANDLE_ROW_WAVE / 2",
        count: 2,
        why: "the max and the sum span the wavefront the host launches (block (1, wavefront, 1))",
    },
    FunctionEdit {
        file: "reduce.cu",
        function: "softmax",
        upstream: ", mask , 32 )",
        rocm: ", mask, CANDLE_ROW_WAVE)",
        count: 2,
        why: "the shuffle spans the wavefront",
    },
];

/// What an nvcc command-line argument becomes for hipcc ([`super::compile_flags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvccFlag {
    /// hipcc takes it as it is.
    Same,
    /// hipcc's spelling.
    To(&'static str),
    /// Nothing: what it asks of nvcc is already so for hipcc, or means nothing for an AMD GPU (why).
    Drop(&'static str),
    /// A flag for the host compiler: the next argument goes to hipcc as it is (clang is both).
    HostNext,
}

/// nvcc arguments a crate's build script passes (cudaforge's `arg`, bindgen_cuda's `arg`), as
/// hipcc arguments. A key ending in `*` matches every argument it begins; the first row that
/// matches wins. An argument no row matches is an error naming it.
pub const NVCC_FLAGS: &[(&str, NvccFlag)] = &[
    ("-std=*", NvccFlag::Same),
    ("-O*", NvccFlag::Same),
    ("-D*", NvccFlag::Same),
    ("-I*", NvccFlag::Same),
    ("-g", NvccFlag::Same),
    ("-w", NvccFlag::Same),
    ("-U__CUDA_NO_*", NvccFlag::Drop("CUDA's switches that hide the half/bfloat16 operators and conversions: HIP's types always have them")),
    ("-U*", NvccFlag::Same),
    ("--use_fast_math", NvccFlag::To("-ffast-math")),
    ("-use_fast_math", NvccFlag::To("-ffast-math")),
    ("--expt-relaxed-constexpr", NvccFlag::Drop("clang calls constexpr functions from device code without it")),
    ("--expt-extended-lambda", NvccFlag::Drop("clang takes __device__ lambdas without it")),
    ("--extended-lambda", NvccFlag::Drop("clang takes __device__ lambdas without it")),
    ("--verbose", NvccFlag::Drop("nvcc's listing of its phases")),
    ("-lineinfo", NvccFlag::Drop("PTX line tables for NVIDIA's profilers")),
    ("--generate-line-info", NvccFlag::Drop("PTX line tables for NVIDIA's profilers")),
    ("-Xcompiler", NvccFlag::HostNext),
    ("--compiler-options", NvccFlag::HostNext),
    ("--ptxas-options=*", NvccFlag::Drop("options of ptxas, NVIDIA's assembler")),
    ("-maxrregcount=*", NvccFlag::Drop("a register cap for NVIDIA's register file")),
    ("-arch=*", NvccFlag::Drop("an NVIDIA arch: the AMD arches are chosen apart (CANDLE_ROCM_ARCHS)")),
    ("--gpu-architecture=*", NvccFlag::Drop("an NVIDIA arch: the AMD arches are chosen apart (CANDLE_ROCM_ARCHS)")),
    ("-gencode=*", NvccFlag::Drop("an NVIDIA arch: the AMD arches are chosen apart (CANDLE_ROCM_ARCHS)")),
];

/// A kernel's workgroup bound: the most threads its launches use (rule `launch-bounds`).
pub struct LaunchBound {
    /// Upstream path relative to the kernels' `src/`.
    pub file: &'static str,
    /// The kernel's name as its `__global__` definition spells it (`##` pastes kept, as in
    /// `mmvq_gguf_##tag##_plain_cuda##ncols`); `*` stands for any run of characters.
    pub kernel: &'static str,
    /// The most threads per block any launch of it uses: a C++ constant expression (of the
    /// template's or the macro's parameters), written into `__launch_bounds__(...)`.
    pub threads: &'static str,
    /// How many `__global__` definitions the name matches in the file.
    pub count: usize,
    /// Where the launches are, and the block they use.
    pub launched_by: &'static str,
}

/// Rule `launch-bounds`: kernels launched with fewer threads than the 1024 hipcc assumes
/// without a bound, which caps a wave at 128 VGPRs (CDNA, gfx1030) or 192 (gfx11/gfx12)
/// and makes them spill where nvcc's 255 registers do not: each gets
/// `__launch_bounds__(threads)`, the block its launches use (a larger launch would fail,
/// so every row names them). Results do not change; registers and spills do (the static
/// report, `cargo xtask bench kernel-resources`).
pub const LAUNCH_BOUNDS: &[LaunchBound] = &[
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda1", threads: "128", count: 10, launched_by: "quantized/rocm.rs dequantize_mul_mat_vec: block (32, 4) for batch 1" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda2", threads: "128", count: 10, launched_by: "quantized/rocm.rs: block (32, 4) for batch 2..=4" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda3", threads: "128", count: 10, launched_by: "quantized/rocm.rs: block (32, 4) for batch 2..=4" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda4", threads: "128", count: 10, launched_by: "quantized/rocm.rs: block (32, 4) for batch 2..=4" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda5", threads: "64", count: 10, launched_by: "quantized/rocm.rs: block (32, 2) for batch 5..=8" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda6", threads: "64", count: 10, launched_by: "quantized/rocm.rs: block (32, 2) for batch 5..=8" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda7", threads: "64", count: 10, launched_by: "quantized/rocm.rs: block (32, 2) for batch 5..=8" },
    LaunchBound { file: "quantized.cu", kernel: "mul_mat_vec_*_q8_1_cuda8", threads: "64", count: 10, launched_by: "quantized/rocm.rs: block (32, 2) for batch 5..=8" },
    LaunchBound {
        file: "mmvq_gguf.cu",
        kernel: "mmvq_gguf_##tag##_##dst_tag##_plain_cuda##ncols",
        threads: "WARP_SIZE * ((ncols) <= 4 ? 4 : 2)",
        count: 1,
        launched_by: "mmvq_gguf.cu's launch_mmvq_gguf_*_plain: block (WARP_SIZE, b_size <= 4 ? 4 : 2)",
    },
    LaunchBound {
        file: "moe/moe_wmma_gguf.cu",
        kernel: "moe_gemm_gguf_prefill_kernel",
        threads: "WARPS_PER_BLOCK * wrap_size",
        count: 1,
        launched_by: "LAUNCH_MOE_GGUF_PREFILL: block (32 or 64, WARPS_PER_BLOCK) with wrap_size the same 32 or 64",
    },
    LaunchBound {
        file: "mmq_gguf/mmq_gguf.cuh",
        kernel: "mul_mat_q_stream_k_fixup",
        threads: "ggml_cuda_get_physical_warp_size() * mmq_get_nwarps_device()",
        count: 1,
        launched_by: "the mmq_instance launchers: block_dims(warp_size_host, nwarps_host), as mul_mat_q, whose bound ggml gives the same expression",
    },
];

/// Rule `ggml-cdna4-mma`: upstream's copy of ggml's `mma` tiles (mmq_gguf/mmq_mma.cuh)
/// predates CDNA4 (gfx950): its int8 tiles take CDNA3's `v_mfma_i32_16x16x32_i8` /
/// `v_mfma_i32_32x32x16_i8` only under `CDNA3`, and the other CDNA arches'
/// `v_mfma_i32_16x16x16i8` / `32x32x8i8`, which gfx950 does not have. CDNA4 keeps CDNA3's
/// int8 and bf16 instructions with the same operand and result layouts (AMD's CDNA4 MFMA
/// reference: "CDNA4 retains ... INT8 ... shapes from CDNA3"; LLVM's gfx942 MFMA test runs
/// them for gfx950 too) but not CDNA3's xf32 one. These rows route CDNA4 as ggml does since
/// llama.cpp PR 21570 ("int8 matmul: mfma_i32_16x16x32_i8/32x32x16 (same as CDNA3)", "No
/// xf32 MFMA").
pub const GGML_CDNA4_MMA_EDITS: &[FunctionEdit] = &[
    FunctionEdit {
        file: "mmq_gguf/mmq_mma.cuh",
        function: "mma",
        upstream: "defined ( CDNA3 ) acc [ 0 ] = __builtin_amdgcn_mfma_i32_16x16x32_i8",
        rocm: "defined(CDNA4) || defined(CDNA3)\n        acc[0] = __builtin_amdgcn_mfma_i32_16x16x32_i8",
        count: 1,
        why: "the 16x16 int8 tile: CDNA3's instruction, which CDNA4 has with the same layouts",
    },
    FunctionEdit {
        file: "mmq_gguf/mmq_mma.cuh",
        function: "mma",
        upstream: "defined ( CDNA3 ) acc [ 0 ] = __builtin_amdgcn_mfma_i32_32x32x16_i8",
        rocm: "defined(CDNA4) || defined(CDNA3)\n        acc[0] = __builtin_amdgcn_mfma_i32_32x32x16_i8",
        count: 1,
        why: "the 32x32 int8 tile: CDNA3's instruction, which CDNA4 has with the same layouts",
    },
    FunctionEdit {
        file: "mmq_gguf/mmq_mma.cuh",
        function: "mma",
        upstream: "defined ( CDNA3 ) || defined ( CDNA2 )",
        rocm: "defined(CDNA4) || defined(CDNA3) || defined(CDNA2)",
        count: 1,
        why: "the bf16 tile: v_mfma_f32_16x16x16bf16_1k, which CDNA4 has",
    },
    FunctionEdit {
        file: "mmq_gguf/mmq_mma.cuh",
        function: "mma",
        upstream: "defined ( CDNA2 ) || defined ( CDNA1 )",
        rocm: "defined(CDNA4) || defined(CDNA2) || defined(CDNA1)",
        count: 1,
        why: "the f32 tile: CDNA4 has no xf32 MFMA (CDNA3's v_mfma_f32_16x16x8_xf32), so it takes two v_mfma_f32_16x16x4f32 as CDNA2",
    },
];

/// The contiguous loop head of Candle's elementwise kernels (one element per thread and
/// iteration), as the rows of [`ELEMENTWISE_PACK_EDITS`] match it.
macro_rules! contiguous_loop {
    ($body:literal) => {
        concat!("for ( unsigned int i = blockIdx . x * blockDim . x + threadIdx . x ; i < numel ; i += blockDim . x * gridDim . x ) { ", $body, " }")
    };
}

/// Rule `elementwise-packs`: the macros whose kernels keep upstream's own vector loop
/// (file, macro, why). Every other definition of a function the rule rewrites must take a
/// pack map, so that a changed loop is an error and not upstream's code left in place.
pub const ELEMENTWISE_UPSTREAM_VECTOR_LOOPS: &[(&str, &str, &str)] = &[
    ("binary_op_macros.cuh", "BINARY_OP_BF16_VEC", "0.11's bf16 add/sub/mul/div: 16-byte float4 loads of 8 bf16, upstream's own"),
    ("binary_op_macros.cuh", "BINARY_OP_F32_VEC", "0.11's f32 add/sub/mul/div: float4 loads, upstream's own"),
];

/// Rule `elementwise-packs`: the contiguous loops of unary, affine, binary and cast move
/// 16-byte packs (`candle_ew_map1` / `candle_ew_map2` of the compat header
/// `candle_elementwise.h`), with upstream's expression applied to each element: the same
/// values, wider loads and stores. Strided layouts keep upstream's loops. The backend
/// launches these kernels with one thread per pack (backend rule `elementwise-launches`).
pub const ELEMENTWISE_PACK_EDITS: &[FunctionEdit] = &[
    FunctionEdit {
        file: "unary.cu",
        function: "FN_NAME",
        upstream: contiguous_loop!("TYPENAME x = inp ? inp [ i ] : out [ i ] ; out [ i ] = FUNC ;"),
        rocm: "candle_ew_map1(numel, inp ? inp : out, out, [&](TYPENAME x) { return FUNC; });",
        count: 2,
        why: "UNARY_OP and UNARY_OP1 (in place when inp is null)",
    },
    FunctionEdit {
        file: "unary.cu",
        function: "FN_NAME",
        upstream: concat!(
            "if ( numel >= 8 && is_aligned_16 ( inp ) && is_aligned_16 ( out ) ) { const size_t vec_numel = numel / 8 ; ",
            "const float4 * inp4 = reinterpret_cast < const float4 * > ( inp ) ; float4 * out4 = reinterpret_cast < float4 * > ( out ) ; ",
            "for ( unsigned int i = blockIdx . x * blockDim . x + threadIdx . x ; i < vec_numel ; i += blockDim . x * gridDim . x ) { ",
            "float4 v = inp4 [ i ] ; __nv_bfloat16 * vp = reinterpret_cast < __nv_bfloat16 * > ( & v ) ; ",
            "_Pragma ( \"unroll\" ) for ( int j = 0 ; j < 8 ; j ++ ) { float xf = __bfloat162float ( vp [ j ] ) ; ",
            "vp [ j ] = __float2bfloat16 ( FLOAT_FUNC ) ; } out4 [ i ] = v ; } ",
            "const size_t tail_start = vec_numel * 8 ; ",
            "for ( unsigned int i = tail_start + blockIdx . x * blockDim . x + threadIdx . x ; i < numel ; i += blockDim . x * gridDim . x ) { ",
            "float xf = __bfloat162float ( inp ? inp [ i ] : out [ i ] ) ; out [ i ] = __float2bfloat16 ( FLOAT_FUNC ) ; } } else { ",
            contiguous_loop!("float xf = __bfloat162float ( inp ? inp [ i ] : out [ i ] ) ; out [ i ] = __float2bfloat16 ( FLOAT_FUNC ) ;"),
            " }"
        ),
        rocm: "candle_ew_map1(numel, inp ? inp : out, out, [&](__nv_bfloat16 x) { float xf = __bfloat162float(x); return __float2bfloat16(FLOAT_FUNC); });",
        count: 1,
        why: "UNARY_OP_BF16_VEC (silu, sigmoid; 0.11): upstream's 8-wide loop rewrites its float4 through a bf16 pointer, which HIP \
              5.2.3's clang keeps in a stack slot promoted to 16 KB of LDS per workgroup; the pack map gives each element the same \
              arithmetic. Releases without the macro match the row above only",
    },
    FunctionEdit {
        file: "affine.cu",
        function: "FN_NAME",
        upstream: contiguous_loop!("TYPENAME x = inp ? inp [ i ] : out [ i ] ; out [ i ] = AFFINE ;"),
        rocm: "candle_ew_map1(numel, inp ? inp : out, out, [&](TYPENAME x) { return AFFINE; });",
        count: 1,
        why: "AFFINE_OP (in place when inp is null)",
    },
    FunctionEdit {
        file: "affine.cu",
        function: "FN_NAME",
        upstream: contiguous_loop!("TYPENAME x = inp ? inp [ i ] : out [ i ] ; out [ i ] = x * mul + add ;"),
        rocm: "candle_ew_map1(numel, inp ? inp : out, out, [&](TYPENAME x) { return x * mul + add; });",
        count: 1,
        why: "AFFINE_OP as 0.9 wrote it (the expression in the macro, no AFFINE parameter)",
    },
    FunctionEdit {
        file: "binary_op_macros.cuh",
        function: "FN_NAME",
        upstream: contiguous_loop!("TYPENAME x = lhs [ i ] ; TYPENAME y = rhs [ i ] ; out [ i ] = FUNC ;"),
        rocm: "candle_ew_map2(numel, lhs, rhs, out, [&](TYPENAME x, TYPENAME y) { return FUNC; });",
        count: 1,
        why: "BINARY_OP_OUT, both operands contiguous (the comparisons write u8)",
    },
    FunctionEdit {
        file: "cast.cu",
        function: "cast_",
        upstream: contiguous_loop!("out [ i ] = inp [ i ] ;"),
        rocm: "candle_ew_map1(numel, inp, out, [](S x) { return x; });",
        count: 1,
        why: "the plain casts (the conversion is the assignment to T, as upstream's)",
    },
    FunctionEdit {
        file: "cast.cu",
        function: "cast_through",
        upstream: contiguous_loop!("out [ i ] = static_cast < T > ( static_cast < I > ( inp [ i ] ) ) ;"),
        rocm: "candle_ew_map1(numel, inp, out, [](S x) { return static_cast<T>(static_cast<I>(x)); });",
        count: 1,
        why: "the casts through an intermediate type",
    },
    FunctionEdit {
        file: "cast.cu",
        function: "cast_fp8_",
        upstream: contiguous_loop!("out [ i ] = F8E4M3_TO_FLOAT ( inp [ i ] ) ;"),
        rocm: "candle_ew_map1(numel, inp, out, [](__nv_fp8_e4m3 x) { return F8E4M3_TO_FLOAT(x); });",
        count: 1,
        why: "the casts from fp8 e4m3",
    },
    FunctionEdit {
        file: "cast.cu",
        function: "cast_fp8_into_",
        upstream: contiguous_loop!("out [ i ] = __nv_fp8_e4m3 ( ( float ) inp [ i ] ) ;"),
        rocm: "candle_ew_map1(numel, inp, out, [](S x) { return __nv_fp8_e4m3((float)x); });",
        count: 1,
        why: "the casts into fp8 e4m3",
    },
    FunctionEdit {
        file: "cast.cu",
        function: "cast_bf16_f32",
        upstream: concat!(
            "if ( numel >= 8 && is_aligned_16 ( inp ) ) { const size_t vec_numel = numel / 8 ; ",
            "const float4 * inp4 = reinterpret_cast < const float4 * > ( inp ) ; ",
            "for ( unsigned int i = blockIdx . x * blockDim . x + threadIdx . x ; i < vec_numel ; i += blockDim . x * gridDim . x ) { ",
            "float4 v = inp4 [ i ] ; const __nv_bfloat16 * bp = reinterpret_cast < const __nv_bfloat16 * > ( & v ) ; ",
            "float * outp = out + i * 8 ; # pragma unroll for ( int j = 0 ; j < 8 ; j ++ ) { outp [ j ] = __bfloat162float ( bp [ j ] ) ; } } ",
            "const size_t tail_start = vec_numel * 8 ; ",
            "for ( unsigned int i = tail_start + blockIdx . x * blockDim . x + threadIdx . x ; i < numel ; i += blockDim . x * gridDim . x ) { ",
            "out [ i ] = __bfloat162float ( inp [ i ] ) ; } } else { ",
            contiguous_loop!("out [ i ] = __bfloat162float ( inp [ i ] ) ;"),
            " }"
        ),
        rocm: "candle_ew_map1(numel, inp, out, [](__nv_bfloat16 x) { return __bfloat162float(x); });",
        count: 1,
        why: "upstream's own vector path stores 8 floats per thread one by one, 32 bytes apart between lanes (17% of HBM peak on the \
              H100 in both builds): 16-byte stores instead",
    },
];

/// Rule `quantized-mmq-tiles`: what the AMD tile choice of Candle's older MMQ kernels
/// (`quantized.cu`'s `mul_mat_q*`, ggml's MMQ before its rewrite) is made of.
pub struct QuantizedMmqTiles {
    /// Upstream path relative to the kernels' `src/`.
    pub file: &'static str,
    /// How many kernels take a tile (`const int mmq_x = MMQ_X_<T>_AMPERE;` and its
    /// `mmq_y`/`nwarps` siblings).
    pub kernels: usize,
    /// The suffix of upstream's tile macros for NVIDIA, which the kernels name.
    pub nvidia: &'static str,
    /// The suffixes of ggml's AMD tile macros, in the order of the host table's columns:
    /// the first from compute capability `amd_cc[0]` on, the second from `amd_cc[1]`.
    pub amd: [&'static str; 2],
    /// ggml's compute capabilities where those tiles begin: `GGML_CUDA_CC_RDNA2`
    /// (`0x1000000 + 0x1030`) and `GGML_CUDA_CC_OFFSET_AMD` (`0x1000000`), the scale the
    /// HIP layer's `ggml_compute_capability` reads.
    pub amd_cc: [i32; 2],
    /// The device pass's conditions for the same two tiles (`#if`, then `#elif`): what
    /// `amd_cc` says on the host, in the macros of `candle_ggml_hip_arch.h` and clang's.
    pub amd_if: [&'static str; 2],
    /// Quant types whose kernels take the second tile (`amd[1]`) on every AMD arch: with
    /// the first they spill on some arch where it is chosen (ROCm 7.2's static report).
    pub second_only: &'static [&'static str],
}

impl QuantizedMmqTiles {
    /// The macro the kernels of the quant types in `second_only` name instead of
    /// `CANDLE_MMQ_TILE`: `CANDLE_MMQ_TILE_<amd[1]>`.
    pub fn second_only_macro(&self) -> String {
        format!("CANDLE_MMQ_TILE_{}", self.amd[1])
    }

    /// Whether the kernels of `quant` take the second AMD tile on every AMD arch (the
    /// rule's macro and the host table's first column both follow this).
    pub fn takes_second_only(&self, quant: &str) -> bool {
        self.second_only.contains(&quant)
    }

    /// Inserted before the first tiled kernel: `CANDLE_MMQ_TILE(MMQ_X_<T>)` picks, in each
    /// device pass, the tile `amd_cc` picks on the host, and [`Self::second_only_macro`]
    /// the second AMD tile on every AMD arch; both name the NVIDIA tile elsewhere.
    pub fn select(&self) -> String {
        let [first, second] = self.amd;
        let (nvidia, only) = (self.nvidia, self.second_only_macro());
        let mut out = String::from("#include \"candle_ggml_hip_arch.h\"\n");
        out.push_str(&format!(
            "// ggml's tile for the mul_mat_q kernels (rule quantized-mmq-tiles), as its MMQ chose before the rewrite: the _{first} tiles where\n\
             // {}, the _{second} tiles on other AMD arches, upstream's _{nvidia} ones on NVIDIA.\n\
             // {only} takes the _{second} tile on every AMD arch (the {} kernels: their _{first} one spills).\n\
             // The ROCm launcher takes the same tile from quantized_mmq_tiles.rs by the device's ggml compute capability.\n",
            self.amd_if[0],
            self.second_only.join(", ")
        ));
        for (directive, cond, tile, only_tile) in [("#if ", self.amd_if[0], first, second), ("#elif ", self.amd_if[1], second, second), ("#else", "", nvidia, nvidia)] {
            out.push_str(&format!("{directive}{cond}\n#define CANDLE_MMQ_TILE(name) name##_{tile}\n#define {only}(name) name##_{only_tile}\n"));
        }
        out.push_str("#endif\n\n");
        out
    }
}

/// The host table rule `quantized-mmq-tiles` writes beside the kernels (the kernels
/// crate includes it as `quantized_mmq_tiles`).
pub const QUANTIZED_MMQ_TILES_RS: &str = "quantized_mmq_tiles.rs";

/// Upstream's `mul_mat_q*` take the `_AMPERE` tiles (128 threads) on every GPU; ggml
/// itself gave RDNA2 and later its `_RDNA2` tiles and every other AMD GPU its `_RDNA1`
/// tiles (8 warps of 32: 256 threads), which halve the accumulators per thread. With
/// the AMPERE tiles the RDNA kernels need more than 256 VGPRs and spill (`mul_mat_q3_K`:
/// 979 VGPRs to scratch on gfx1100); CDNA's 512 VGPRs and AGPRs hold them.
///
/// `second_only`: at their `_RDNA2` tiles (64x128, 8 warps) `mul_mat_q4_K` spills 11-12
/// VGPRs on gfx11/gfx12 and `mul_mat_q6_K` 35 there and 58 on gfx1030, at the 256 VGPRs
/// a wave can have; at their `_RDNA1` tiles (32x64, 8 warps, as on CDNA) none spills
/// (ROCm 7.2: 161-186 VGPRs, 5-9 waves per SIMD where the `_RDNA2` tile gave 4-5).
pub const QUANTIZED_MMQ_TILES: QuantizedMmqTiles = QuantizedMmqTiles {
    file: "quantized.cu",
    kernels: 10,
    nvidia: "AMPERE",
    amd: ["RDNA2", "RDNA1"],
    amd_cc: [0x1001030, 0x1000000],
    amd_if: ["defined(RDNA2) || defined(__GFX11__) || defined(__GFX12__)", "defined(GGML_USE_HIP)"],
    second_only: &["Q4_K", "Q6_K"],
};
