//! The C values this crate relies on, checked against the installed ROCm's
//! headers: every enum value and type size the layer passes to or reads from
//! HIP, rocBLAS, rocRAND and RCCL (from rocm-rs's bindings or written here)
//! becomes a C++ `static_assert`, compiled with the found hipcc
//! (`-fsyntax-only`); for RCCL also the type of every function `nccl::sys`
//! declares, from the Rust declaration (`std::is_same` against the header's).
//! The rocBLAS, rocRAND and RCCL parts are compiled when their headers are installed
//! (`__has_include`); the test prints which parts were checked, and says
//! plainly when no hipcc was found. Not checked: `hipStreamPerThread`
//! (`sys::HIP_STREAM_PER_THREAD`), a pointer constant that no `static_assert` can read. `cargo xtask rocm-backend` runs it inside
//! each ROCm release's root.
use crate::blas::result::RocblasError;
use crate::blas::sys as blas;
use crate::driver::sys::hip;
use crate::nccl::sys as nccl;
use crate::rand::result::RocrandError;
use crate::rand::sys as rand;
use std::mem::size_of;

/// (C++ expression, the value this crate uses), per header.
fn hip_values() -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = [
        ("hipSuccess", hip::hipError_t_hipSuccess as i64),
        ("hipErrorInvalidValue", hip::hipError_t_hipErrorInvalidValue as i64),
        ("hipErrorNoDevice", hip::hipError_t_hipErrorNoDevice as i64),
        ("hipErrorInvalidImage", hip::hipError_t_hipErrorInvalidImage as i64),
        ("hipErrorInvalidDevice", hip::hipError_t_hipErrorInvalidDevice as i64),
        ("hipErrorInvalidContext", hip::hipError_t_hipErrorInvalidContext as i64),
        ("hipMemcpyHostToDevice", hip::hipMemcpyKind_hipMemcpyHostToDevice as i64),
        ("hipMemcpyDeviceToHost", hip::hipMemcpyKind_hipMemcpyDeviceToHost as i64),
        ("hipMemcpyDeviceToDevice", hip::hipMemcpyKind_hipMemcpyDeviceToDevice as i64),
        ("hipStreamNonBlocking", hip::hipStreamNonBlocking as i64),
        ("hipEventDefault", hip::hipEventDefault as i64),
        ("hipEventBlockingSync", hip::hipEventBlockingSync as i64),
        ("hipEventDisableTiming", hip::hipEventDisableTiming as i64),
        ("hipEventInterprocess", hip::hipEventInterprocess as i64),
        ("hipStreamCaptureStatusNone", hip::hipStreamCaptureStatus_hipStreamCaptureStatusNone as i64),
        ("hipStreamCaptureStatusActive", hip::hipStreamCaptureStatus_hipStreamCaptureStatusActive as i64),
        ("hipStreamCaptureStatusInvalidated", hip::hipStreamCaptureStatus_hipStreamCaptureStatusInvalidated as i64),
        ("hipDeviceAttributeComputeCapabilityMajor", hip::hipDeviceAttribute_t_hipDeviceAttributeComputeCapabilityMajor as i64),
        ("hipDeviceAttributeComputeCapabilityMinor", hip::hipDeviceAttribute_t_hipDeviceAttributeComputeCapabilityMinor as i64),
        ("hipDeviceAttributeMultiprocessorCount", hip::hipDeviceAttribute_t_hipDeviceAttributeMultiprocessorCount as i64),
        ("hipDeviceAttributeMaxSharedMemoryPerBlock", hip::hipDeviceAttribute_t_hipDeviceAttributeMaxSharedMemoryPerBlock as i64),
        ("hipDeviceAttributeSharedMemPerBlockOptin", hip::hipDeviceAttribute_t_hipDeviceAttributeSharedMemPerBlockOptin as i64),
        ("hipDeviceAttributeWarpSize", hip::hipDeviceAttribute_t_hipDeviceAttributeWarpSize as i64),
        ("hipDeviceAttributeMemoryPoolsSupported", hip::hipDeviceAttribute_t_hipDeviceAttributeMemoryPoolsSupported as i64),
        ("hipDeviceAttributeIntegrated", hip::hipDeviceAttribute_t_hipDeviceAttributeIntegrated as i64),
    ]
    .into_iter()
    .map(|(e, v)| (e.to_string(), v))
    .collect();
    v.push(("sizeof(hipError_t)".into(), size_of::<hip::hipError_t>() as i64));
    v.push(("sizeof(hipDevice_t)".into(), size_of::<hip::hipDevice_t>() as i64));
    v.push(("sizeof(hipStream_t)".into(), size_of::<hip::hipStream_t>() as i64));
    v
}

/// The layout of ROCm >= 6's `hipDeviceProp_tR0600` (HIP 5 has no such type):
/// its size and the offset of `gcnArchName`, which this crate reads, and of the
/// fields hip-on-cuda writes (its tests compare those with rocm-rs's struct).
fn hip6_values() -> Vec<(String, i64)> {
    use std::mem::offset_of;
    type P = hip::hipDeviceProp_tR0600;
    let mut v: Vec<(String, i64)> = [
        ("name", offset_of!(P, name)),
        ("totalGlobalMem", offset_of!(P, totalGlobalMem)),
        ("sharedMemPerBlock", offset_of!(P, sharedMemPerBlock)),
        ("warpSize", offset_of!(P, warpSize)),
        ("maxThreadsPerBlock", offset_of!(P, maxThreadsPerBlock)),
        ("major", offset_of!(P, major)),
        ("minor", offset_of!(P, minor)),
        ("multiProcessorCount", offset_of!(P, multiProcessorCount)),
        ("sharedMemPerBlockOptin", offset_of!(P, sharedMemPerBlockOptin)),
        ("gcnArchName", offset_of!(P, gcnArchName)),
    ]
    .into_iter()
    .map(|(field, offset)| (format!("offsetof(hipDeviceProp_tR0600, {field})"), offset as i64))
    .collect();
    v.push(("sizeof(hipDeviceProp_tR0600)".into(), size_of::<P>() as i64));
    v
}

fn rocblas_values() -> Vec<(String, i64)> {
    use blas::{rocblas_datatype as d, rocblas_gemm_algo as g, rocblas_math_mode as m, rocblas_operation as o, rocmDataType_t as r};
    let mut v: Vec<(String, i64)> = [
        ("rocblas_operation_none", o::rocblas_operation_none as i64),
        ("rocblas_operation_transpose", o::rocblas_operation_transpose as i64),
        ("rocblas_operation_conjugate_transpose", o::rocblas_operation_conjugate_transpose as i64),
        ("rocblas_datatype_f16_r", d::rocblas_datatype_f16_r as i64),
        ("rocblas_datatype_f32_r", d::rocblas_datatype_f32_r as i64),
        ("rocblas_datatype_f64_r", d::rocblas_datatype_f64_r as i64),
        ("rocblas_datatype_i8_r", d::rocblas_datatype_i8_r as i64),
        ("rocblas_datatype_u8_r", d::rocblas_datatype_u8_r as i64),
        ("rocblas_datatype_i32_r", d::rocblas_datatype_i32_r as i64),
        ("rocblas_datatype_u32_r", d::rocblas_datatype_u32_r as i64),
        ("rocblas_datatype_bf16_r", d::rocblas_datatype_bf16_r as i64),
        ("rocblas_datatype_f16_r", r::ROCM_R_16F as i64),
        ("rocblas_datatype_f32_r", r::ROCM_R_32F as i64),
        ("rocblas_datatype_f64_r", r::ROCM_R_64F as i64),
        ("rocblas_datatype_i8_r", r::ROCM_R_8I as i64),
        ("rocblas_datatype_u8_r", r::ROCM_R_8U as i64),
        ("rocblas_datatype_i32_r", r::ROCM_R_32I as i64),
        ("rocblas_datatype_u32_r", r::ROCM_R_32U as i64),
        ("rocblas_datatype_bf16_r", r::ROCM_R_16BF as i64),
        ("rocblas_gemm_algo_standard", g::rocblas_gemm_algo_standard as i64),
        ("rocblas_gemm_algo_solution_index", g::rocblas_gemm_algo_solution_index as i64),
        ("rocblas_default_math", m::rocblas_default_math as i64),
        ("rocblas_xf32_xdl_math_op", m::rocblas_xf32_xdl_math_op as i64),
        ("rocblas_gemm_flags_none", blas::rocblas_gemm_flags_none as i64),
        ("rocblas_gemm_flags_fp16_alt_impl", blas::rocblas_gemm_flags_fp16_alt_impl as i64),
        ("sizeof(rocblas_math_mode)", size_of::<u32>() as i64),
        ("sizeof(rocblas_int)", size_of::<blas::rocblas_int>() as i64),
        ("sizeof(rocblas_stride)", size_of::<blas::rocblas_stride>() as i64),
        ("sizeof(rocblas_status)", size_of::<blas::rocblas_status>() as i64),
        ("sizeof(rocblas_operation)", size_of::<u32>() as i64),
        ("sizeof(rocblas_datatype)", size_of::<u32>() as i64),
    ]
    .into_iter()
    .map(|(e, v)| (e.to_string(), v))
    .collect();
    // the status names this crate prints, by value
    v.extend((0..16).map(|s| (RocblasError(s).name(), s as i64)));
    v
}

fn rocrand_values() -> Vec<(String, i64)> {
    let mut v = vec![
        ("ROCRAND_RNG_PSEUDO_DEFAULT".to_string(), rand::ROCRAND_RNG_PSEUDO_DEFAULT as i64),
        ("sizeof(rocrand_status)".to_string(), size_of::<rand::rocrand_status>() as i64),
    ];
    v.extend(std::iter::once(0).chain(100..109).map(|s| (RocrandError(s).name().to_string(), s as i64)));
    v
}

fn rccl_values() -> Vec<(String, i64)> {
    use nccl::{ncclDataType_t as d, ncclRedOp_t as o, ncclResult_t as r};
    let mut v: Vec<(String, i64)> = [
        ("NCCL_UNIQUE_ID_BYTES", nccl::NCCL_UNIQUE_ID_BYTES as i64),
        ("sizeof(ncclUniqueId)", size_of::<nccl::ncclUniqueId>() as i64),
        ("sizeof(ncclResult_t)", size_of::<r>() as i64),
        ("sizeof(ncclDataType_t)", size_of::<d>() as i64),
        ("sizeof(ncclRedOp_t)", size_of::<o>() as i64),
        ("sizeof(ncclComm_t)", size_of::<nccl::ncclComm_t>() as i64),
        ("ncclNumResults", r::ncclNumResults.0 as i64),
        ("ncclInt8", d::ncclInt8 as i64),
        ("ncclUint8", d::ncclUint8 as i64),
        ("ncclInt32", d::ncclInt32 as i64),
        ("ncclUint32", d::ncclUint32 as i64),
        ("ncclInt64", d::ncclInt64 as i64),
        ("ncclUint64", d::ncclUint64 as i64),
        ("ncclFloat16", d::ncclFloat16 as i64),
        ("ncclFloat32", d::ncclFloat32 as i64),
        ("ncclFloat64", d::ncclFloat64 as i64),
        ("ncclBfloat16", d::ncclBfloat16 as i64),
        ("ncclSum", o::ncclSum as i64),
        ("ncclProd", o::ncclProd as i64),
        ("ncclMax", o::ncclMax as i64),
        ("ncclMin", o::ncclMin as i64),
        ("ncclAvg", o::ncclAvg as i64),
    ]
    .into_iter()
    .map(|(e, v)| (e.to_string(), v))
    .collect();
    // the status names this crate prints, by value
    v.extend((0..8).map(|s| (r(s).name().unwrap().to_string(), s as i64)));
    v
}

/// The C spelling of a Rust type of `nccl::sys`'s declarations (`*const c_void` → `const void*`).
fn c_type(rust: &str) -> Option<String> {
    if let Some(t) = rust.strip_prefix("*const ") {
        return Some(format!("const {}*", c_type(t)?));
    }
    if let Some(t) = rust.strip_prefix("*mut ") {
        return Some(format!("{}*", c_type(t)?));
    }
    let c = match rust {
        "c_int" => "int",
        "c_char" => "char",
        "c_void" => "void",
        "usize" => "size_t",
        "CUstream" => "hipStream_t",
        t if t.starts_with("nccl") => t,
        _ => return None,
    };
    Some(c.into())
}

/// `static_assert`s that each declared function has the header's type.
fn rccl_signatures() -> String {
    nccl::STATUS_FUNCTIONS
        .iter()
        .chain(nccl::STRING_FUNCTIONS)
        .map(|(name, args, ret)| {
            let c = |t: &str| c_type(t).unwrap_or_else(|| panic!("abi_tests: no C spelling for `{t}` of {name} (add it to c_type)"));
            let args: Vec<String> = args.iter().map(|a| c(a)).collect();
            let ty = format!("{}(*)({})", c(ret), args.join(", "));
            format!("static_assert(std::is_same<decltype(&{name}), {ty}>::value, \"{name} is not {ty}\");\n")
        })
        .collect()
}

#[test]
fn rust_types_have_c_spellings() {
    assert_eq!(c_type("*mut ncclComm_t").as_deref(), Some("ncclComm_t*"));
    assert_eq!(c_type("*const c_void").as_deref(), Some("const void*"));
    assert_eq!(c_type("*const c_char").as_deref(), Some("const char*"));
    assert_eq!(c_type("usize").as_deref(), Some("size_t"));
    assert_eq!(c_type("*mut u32"), None);
    let signatures = rccl_signatures();
    assert_eq!(signatures.lines().count(), nccl::STATUS_FUNCTIONS.len() + nccl::STRING_FUNCTIONS.len());
    assert!(signatures.contains(
        "decltype(&ncclCommInitRank), ncclResult_t(*)(ncclComm_t*, int, ncclUniqueId, int)>"
    ), "{signatures}");
    assert!(signatures.contains("decltype(&ncclGroupStart), ncclResult_t(*)()>"), "{signatures}");
}

/// The C++ source: HIP's asserts always (`hipDeviceProp_tR0600`'s from HIP 6 on),
/// rocBLAS's, rocRAND's and RCCL's when their headers exist.
fn source() -> String {
    let asserts = |values: Vec<(String, i64)>| -> String {
        values.iter().map(|(expr, v)| format!("static_assert((long long)({expr}) == {v}LL, \"{expr} is not {v}\");\n")).collect()
    };
    format!(
        "#include <stdint.h>\n#include <stddef.h>\n#include <hip/hip_runtime_api.h>\n{}\
         #if HIP_VERSION_MAJOR >= 6\n#pragma message(\"checked: hipDeviceProp_tR0600\")\n{}#endif\n\
         #if __has_include(<rocblas/rocblas.h>)\n#include <rocblas/rocblas.h>\n#pragma message(\"checked: rocblas\")\n{}#endif\n\
         #if __has_include(<rocrand/rocrand.h>)\n#include <rocrand/rocrand.h>\n#pragma message(\"checked: rocrand\")\n{}#endif\n\
         #if __has_include(<rccl/rccl.h>)\n#include <type_traits>\n#include <rccl/rccl.h>\n#pragma message(\"checked: rccl\")\n{}{}#endif\n",
        asserts(hip_values()),
        asserts(hip6_values()),
        asserts(rocblas_values()),
        asserts(rocrand_values()),
        asserts(rccl_values()),
        rccl_signatures()
    )
}

/// `HIPCC`, else hipcc on PATH, else `/opt/rocm/bin/hipcc`.
fn hipcc() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("HIPCC") {
        return Some(p.into());
    }
    let on_path = std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("hipcc")).find(|p| p.is_file()));
    on_path.or_else(|| Some(std::path::PathBuf::from("/opt/rocm/bin/hipcc")).filter(|p| p.is_file()))
}

#[test]
fn values_match_the_installed_rocm_headers() {
    let Some(hipcc) = hipcc() else {
        println!("skipped: no hipcc found (HIPCC, PATH, /opt/rocm/bin): the C values were not checked against any ROCm headers");
        return;
    };
    let dir = std::env::temp_dir().join(format!("candle-rocm-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("abi_values.cpp");
    std::fs::write(&file, source()).unwrap();
    let out = std::process::Command::new(&hipcc)
        .env("HIP_PLATFORM", "amd")
        .args(["-x", "c++", "-std=c++17", "-fsyntax-only", "-D__HIP_PLATFORM_AMD__"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", hipcc.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{} rejects the values this crate uses:\n{stderr}", hipcc.display());
    let checked: Vec<&str> = ["hipDeviceProp_tR0600", "rocblas", "rocrand", "rccl"].into_iter().filter(|l| stderr.contains(&format!("checked: {l}"))).collect();
    println!(
        "checked against {}'s headers: {} HIP values{}",
        hipcc.display(),
        hip_values().len(),
        checked.iter().map(|l| format!(", {l}")).collect::<String>()
    );
}
