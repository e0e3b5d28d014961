//! The ABI tables against rocm-rs's bindings, the status tables, and the
//! behaviour with or without a CUDA device (on a machine with one, a small
//! round trip through memory, cuBLAS and cuRAND).
use crate::status::*;
use crate::{blas, context, memory, module, rand, stream_event};
use rocm_rs::hip::bindings as hip;
use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

fn assert_same(what: &str, rows: Vec<(&str, u32, u32)>) {
    assert!(!rows.is_empty());
    for (name, ours, rocm_rs) in rows {
        assert_eq!(ours, rocm_rs, "{what}: {name} is {ours} here, {rocm_rs} in rocm-rs");
    }
}

#[test]
fn abi_values_equal_rocm_rs() {
    assert_same("hipError_t", hip_errors_vs_rocm_rs());
    assert_same("hipDeviceAttribute_t", context::attributes_vs_rocm_rs());
    assert_same("rocblas_datatype (operands)", blas::datatypes_vs_rocm_rs());
    assert_same("rocblas_datatype (compute)", blas::compute_types_vs_rocm_rs());
    assert_same("rocblas_operation", blas::operations_vs_rocm_rs());
    assert_same("rocblas_pointer_mode", blas::pointer_modes_vs_rocm_rs());
    assert_same("rocblas_math_mode", blas::math_modes_vs_rocm_rs());
    assert_same("rocrand_rng_type", rand::rng_types_vs_rocm_rs());
}

#[test]
fn scalar_constants_equal_rocm_rs_and_cuda() {
    use cudarc::driver::sys::{CUevent_flags as E, CUstreamCaptureStatus as S, CUstream_flags};
    use rocm_rs::{rocblas::ffi as rb, rocrand::bindings as rr};
    assert_eq!(memory::hipMemcpyDefault, hip::hipMemcpyKind_hipMemcpyDefault);
    assert_eq!(stream_event::hipStreamNonBlocking, hip::hipStreamNonBlocking);
    assert_eq!(hip::hipStreamNonBlocking, CUstream_flags::CU_STREAM_NON_BLOCKING as u32);
    let event_flags =
        hip::hipEventBlockingSync | hip::hipEventDisableTiming | hip::hipEventInterprocess;
    assert_eq!(stream_event::EVENT_FLAGS, event_flags);
    assert_eq!(hip::hipEventBlockingSync, E::CU_EVENT_BLOCKING_SYNC as u32);
    assert_eq!(hip::hipEventDisableTiming, E::CU_EVENT_DISABLE_TIMING as u32);
    assert_eq!(hip::hipEventInterprocess, E::CU_EVENT_INTERPROCESS as u32);
    assert_eq!(
        hip::hipStreamCaptureStatus_hipStreamCaptureStatusNone,
        S::CU_STREAM_CAPTURE_STATUS_NONE as u32
    );
    assert_eq!(
        hip::hipStreamCaptureStatus_hipStreamCaptureStatusActive,
        S::CU_STREAM_CAPTURE_STATUS_ACTIVE as u32
    );
    let invalidated = S::CU_STREAM_CAPTURE_STATUS_INVALIDATED as u32;
    assert_eq!(hip::hipStreamCaptureStatus_hipStreamCaptureStatusInvalidated, invalidated);
    assert_eq!(blas::rocblas_gemm_algo_standard, rb::rocblas_gemm_algo__rocblas_gemm_algo_standard);
    assert_eq!(blas::rocblas_gemm_flags_none, rb::rocblas_gemm_flags__rocblas_gemm_flags_none);
    assert_eq!(blas::rocblas_gemm_flags_fp16_alt_impl, rb::rocblas_gemm_flags__rocblas_gemm_flags_fp16_alt_impl);
    assert_eq!(blas::rocblas_xf32_xdl_math_op, rb::rocblas_math_mode__rocblas_xf32_xdl_math_op);
    let rocblas = [
        (rocblas_status_success, rb::rocblas_status__rocblas_status_success),
        (rocblas_status_invalid_handle, rb::rocblas_status__rocblas_status_invalid_handle),
        (rocblas_status_not_implemented, rb::rocblas_status__rocblas_status_not_implemented),
        (rocblas_status_invalid_pointer, rb::rocblas_status__rocblas_status_invalid_pointer),
        (rocblas_status_memory_error, rb::rocblas_status__rocblas_status_memory_error),
        (rocblas_status_internal_error, rb::rocblas_status__rocblas_status_internal_error),
        (rocblas_status_invalid_value, rb::rocblas_status__rocblas_status_invalid_value),
        (rocblas_status_arch_mismatch, rb::rocblas_status__rocblas_status_arch_mismatch),
    ];
    let rocrand = [
        (ROCRAND_STATUS_SUCCESS, rr::rocrand_status_ROCRAND_STATUS_SUCCESS),
        (ROCRAND_STATUS_VERSION_MISMATCH, rr::rocrand_status_ROCRAND_STATUS_VERSION_MISMATCH),
        (ROCRAND_STATUS_NOT_CREATED, rr::rocrand_status_ROCRAND_STATUS_NOT_CREATED),
        (ROCRAND_STATUS_ALLOCATION_FAILED, rr::rocrand_status_ROCRAND_STATUS_ALLOCATION_FAILED),
        (ROCRAND_STATUS_TYPE_ERROR, rr::rocrand_status_ROCRAND_STATUS_TYPE_ERROR),
        (ROCRAND_STATUS_OUT_OF_RANGE, rr::rocrand_status_ROCRAND_STATUS_OUT_OF_RANGE),
        (ROCRAND_STATUS_LENGTH_NOT_MULTIPLE, rr::rocrand_status_ROCRAND_STATUS_LENGTH_NOT_MULTIPLE),
        (
            ROCRAND_STATUS_DOUBLE_PRECISION_REQUIRED,
            rr::rocrand_status_ROCRAND_STATUS_DOUBLE_PRECISION_REQUIRED,
        ),
        (ROCRAND_STATUS_LAUNCH_FAILURE, rr::rocrand_status_ROCRAND_STATUS_LAUNCH_FAILURE),
        (ROCRAND_STATUS_INTERNAL_ERROR, rr::rocrand_status_ROCRAND_STATUS_INTERNAL_ERROR),
    ];
    for (ours, theirs) in rocblas.iter().chain(rocrand.iter()) {
        assert_eq!(ours, theirs);
    }
    // The tables only produce statuses declared above.
    let known_rocblas: Vec<u32> = rocblas.iter().map(|r| r.0).collect();
    assert!(CUBLAS_TO_ROCBLAS.iter().all(|(_, r)| known_rocblas.contains(r)));
    let known_rocrand: Vec<u32> = rocrand.iter().map(|r| r.0).collect();
    assert!(CURAND_TO_ROCRAND.iter().all(|(_, r)| known_rocrand.contains(r)));
}

#[test]
fn cuda_statuses_translate() {
    use cudarc::driver::sys::CUresult as C;
    // HIP kept CUDA's numbers: every entry is the identity on values except the
    // three documented additions.
    let renumbered = [
        C::CUDA_ERROR_STUB_LIBRARY,
        C::CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
        C::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    ];
    for &(c, h) in CU_TO_HIP {
        assert!(HIP_ERRORS.iter().any(|e| e.0 == h), "{c:?} maps to undeclared {h}");
        if !renumbered.contains(&c) {
            assert_eq!(c as u32, h, "{c:?}");
        }
    }
    assert_eq!(hip_from_cu(C::CUDA_ERROR_STUB_LIBRARY), hipErrorInsufficientDriver);
    assert_eq!(hip_from_cu(C::CUDA_ERROR_NO_DEVICE), hipErrorNoDevice);
    assert_eq!(hip_from_cu(C::CUDA_ERROR_TIMEOUT), hipErrorUnknown);
    assert_eq!(cu(C::CUDA_SUCCESS), Ok(()));
    assert_eq!(cu(C::CUDA_ERROR_NOT_READY), Err(hipErrorNotReady));
    use cudarc::{cublas::sys::cublasStatus_t as B, curand::sys::curandStatus as R};
    assert_eq!(rocblas_from_cublas(B::CUBLAS_STATUS_NOT_SUPPORTED), rocblas_status_not_implemented);
    assert_eq!(
        rocrand_from_curand(R::CURAND_STATUS_LENGTH_NOT_MULTIPLE),
        ROCRAND_STATUS_LENGTH_NOT_MULTIPLE
    );
}

#[test]
fn error_names_and_strings() {
    let name = |e| unsafe { CStr::from_ptr(hipGetErrorName(e)) }.to_str().unwrap();
    let text = |e| unsafe { CStr::from_ptr(hipGetErrorString(e)) }.to_str().unwrap();
    assert_eq!(name(hipErrorNoDevice), "hipErrorNoDevice");
    assert_eq!(name(0), "hipSuccess");
    assert_eq!(name(12345), "hipErrorUnknown");
    assert_eq!(text(hipErrorInvalidValue), "invalid argument");
    for (i, &(v, n, d)) in HIP_ERRORS.iter().enumerate() {
        assert!(n.ends_with('\0') && d.ends_with('\0') && !n[..n.len() - 1].contains('\0'), "{n}");
        assert!(HIP_ERRORS[..i].iter().all(|e| e.0 != v), "{n} listed twice");
    }
}

#[test]
fn symbol_versions_cover_every_hip_export() {
    // Every `hip*` function defined in src/ has a version node, and only those.
    let sources = [
        include_str!("amd_host_code.rs"),
        include_str!("context.rs"),
        include_str!("memory.rs"),
        include_str!("module.rs"),
        include_str!("status.rs"),
        include_str!("stream_event.rs"),
    ];
    let mut exported: Vec<&str> = sources
        .iter()
        .flat_map(|s| s.split("extern \"C\" fn ").skip(1))
        .map(|rest| rest.split('(').next().unwrap_or_default())
        .filter(|name| name.starts_with("hip") || name.starts_with("__hip"))
        .collect();
    let lists = [
        crate::amd_host_code::SYMBOL_VERSIONS,
        context::SYMBOL_VERSIONS,
        memory::SYMBOL_VERSIONS,
        module::SYMBOL_VERSIONS,
        crate::status::SYMBOL_VERSIONS,
        stream_event::SYMBOL_VERSIONS,
    ];
    let mut versioned: Vec<&str> = lists.iter().flat_map(|l| l.iter().map(|v| v.0)).collect();
    exported.sort_unstable();
    versioned.sort_unstable();
    assert_eq!(exported, versioned);
}

/// Our offsets in `hipDeviceProp_tR0600` are rocm-rs's (ROCm >= 6's layout).
#[test]
fn device_properties_layout_is_rocm_rs() {
    use context::prop_r0600 as at;
    use std::mem::{align_of, offset_of, size_of};
    type P = hip::hipDeviceProp_tR0600;
    let fields = [
        ("name", at::NAME, offset_of!(P, name)),
        ("totalGlobalMem", at::TOTAL_GLOBAL_MEM, offset_of!(P, totalGlobalMem)),
        ("sharedMemPerBlock", at::SHARED_MEM_PER_BLOCK, offset_of!(P, sharedMemPerBlock)),
        ("warpSize", at::WARP_SIZE, offset_of!(P, warpSize)),
        ("maxThreadsPerBlock", at::MAX_THREADS_PER_BLOCK, offset_of!(P, maxThreadsPerBlock)),
        ("major", at::MAJOR, offset_of!(P, major)),
        ("minor", at::MINOR, offset_of!(P, minor)),
        ("multiProcessorCount", at::MULTI_PROCESSOR_COUNT, offset_of!(P, multiProcessorCount)),
        (
            "sharedMemPerBlockOptin",
            at::SHARED_MEM_PER_BLOCK_OPTIN,
            offset_of!(P, sharedMemPerBlockOptin),
        ),
        ("gcnArchName", at::GCN_ARCH_NAME, offset_of!(P, gcnArchName)),
    ];
    for (field, ours, rocm_rs) in fields {
        assert_eq!(ours, rocm_rs, "offset of {field}");
    }
    let zeroed: P = unsafe { std::mem::zeroed() };
    assert_eq!((zeroed.name.len(), zeroed.gcnArchName.len()), (256, 256));
    assert_eq!(size_of::<context::hipDeviceProp_tR0600>(), size_of::<P>());
    assert_eq!(align_of::<context::hipDeviceProp_tR0600>(), align_of::<P>());
}

/// `HIP_ON_CUDA_GCN_ARCH_NAME`: unset gives `sm_<major><minor>`; an AMD arch name
/// is taken as it is; anything else is an error naming the variable.
#[test]
fn gcn_arch_name_from_the_variable() {
    use context::gcn_arch_name;
    use std::ffi::OsStr;
    assert_eq!(gcn_arch_name(None, 9, 0).as_deref(), Ok("sm_90"));
    assert_eq!(gcn_arch_name(None, 12, 0).as_deref(), Ok("sm_120"));
    for name in
        ["gfx1100", "gfx90a:sramecc+:xnack-", "gfx942", "gfx1201", "gfx908:xnack+", "gfx1030:"]
    {
        assert_eq!(gcn_arch_name(Some(OsStr::new(name)), 9, 0).as_deref(), Ok(name));
    }
    let long = format!("gfx1100:{}", "x".repeat(300));
    let bad = [
        "",
        "gfx",
        "gfx11",
        "gfx11000",
        "gfx0a0",
        "gfx90g",
        "sm_90",
        "GFX1100",
        "gfx1100-generic",
        "gfx11-generic",
        " gfx1100",
        "gfx+90a",
        &long,
    ];
    for value in bad {
        let err = gcn_arch_name(Some(OsStr::new(value)), 9, 0).unwrap_err();
        assert!(err.starts_with("HIP_ON_CUDA_GCN_ARCH_NAME=") && err.contains("sm_90"), "{err}");
    }
    use std::os::unix::ffi::OsStrExt;
    assert!(gcn_arch_name(Some(OsStr::from_bytes(b"gfx\xff00")), 9, 0).is_err());
}

/// `hipGetDevicePropertiesR0600`: a null pointer or no device is an error; on a
/// device, the fields agree with the attributes and `gcnArchName` is
/// `sm_<major><minor>`, or the variable's value (passed here without setting it).
#[test]
fn device_properties() {
    use context::{hipDeviceProp_tR0600 as Ours, properties};
    use std::ffi::OsStr;
    unsafe {
        assert_eq!(context::hipGetDevicePropertiesR0600(null_mut(), 0), hipErrorInvalidValue);
        let mut prop = std::mem::MaybeUninit::<hip::hipDeviceProp_tR0600>::zeroed();
        let ours = prop.as_mut_ptr().cast::<Ours>();
        let mut count = 0;
        if context::hipGetDeviceCount(&mut count) != hipSuccess {
            assert_eq!(context::hipGetDevicePropertiesR0600(ours, 0), hipErrorNoDevice);
            println!("skipped: no CUDA device");
            return;
        }
        assert_eq!(context::hipGetDevicePropertiesR0600(ours, count), hipErrorInvalidDevice);
        prop.as_mut_ptr()
            .cast::<u8>()
            .write_bytes(0xa5, std::mem::size_of::<hip::hipDeviceProp_tR0600>());
        assert_eq!(context::hipGetDevicePropertiesR0600(ours, 0), hipSuccess);
        let p = prop.assume_init();
        let attr = |a: u32| {
            let mut v = 0;
            assert_eq!(context::hipDeviceGetAttribute(&mut v, a, 0), hipSuccess);
            v
        };
        assert_eq!(
            (p.major, p.minor, p.multiProcessorCount, p.warpSize),
            (attr(23), attr(61), attr(63), 32)
        );
        assert_eq!(
            (p.sharedMemPerBlock, p.sharedMemPerBlockOptin),
            (attr(74) as usize, attr(75) as usize)
        );
        assert!(p.totalGlobalMem > 1 << 30 && p.maxThreadsPerBlock == 1024);
        assert_eq!(
            (p.regsPerBlock, p.clockRate, p.l2CacheSize, p.reserved[0]),
            (0, 0, 0, 0),
            "the rest is zeroed"
        );
        let mut name = [0 as std::ffi::c_char; 256];
        assert_eq!(context::hipDeviceGetName(name.as_mut_ptr(), 256, 0), hipSuccess);
        assert_eq!(CStr::from_ptr(p.name.as_ptr()), CStr::from_ptr(name.as_ptr()));
        let arch = CStr::from_ptr(p.gcnArchName.as_ptr()).to_str().unwrap();
        match std::env::var(context::GCN_ARCH_NAME_VAR) {
            Ok(v) => assert_eq!(arch, v),
            Err(_) => assert_eq!(arch, format!("sm_{}{}", p.major, p.minor)),
        }
        println!("device 0: {:?}, gcnArchName {arch}", CStr::from_ptr(p.name.as_ptr()));
        assert_eq!(properties(ours, 0, Some(OsStr::new("gfx90a:sramecc+:xnack-"))), Ok(()));
        let emulated = prop.assume_init();
        assert_eq!(
            CStr::from_ptr(emulated.gcnArchName.as_ptr()).to_str(),
            Ok("gfx90a:sramecc+:xnack-")
        );
        assert_eq!(
            (emulated.major, emulated.warpSize, emulated.totalGlobalMem),
            (p.major, 32, p.totalGlobalMem)
        );
        assert_eq!(properties(ours, 0, Some(OsStr::new("gfx9"))), Err(hipErrorInvalidValue));
    }
}

/// Without a CUDA device every call fails cleanly; with one, a small round trip.
#[test]
fn device_or_clean_errors() {
    unsafe {
        let mut count = -1;
        let status = context::hipGetDeviceCount(&mut count);
        let mut p = std::ptr::dangling_mut::<c_void>();
        assert_eq!(memory::hipMalloc(&mut p, 0), hipSuccess, "zero bytes need no device");
        assert!(p.is_null());
        assert_eq!(memory::hipFree(null_mut()), hipSuccess);
        assert_eq!(context::hipDeviceGetAttribute(&mut count, 9999, 0), hipErrorInvalidValue);
        if status != hipSuccess {
            println!("no CUDA device: hipGetDeviceCount = {status}");
            assert_eq!((status, count), (hipErrorNoDevice, 0));
            assert_ne!(memory::hipMalloc(&mut p, 64), hipSuccess);
            assert_ne!(context::hipSetDevice(0), hipSuccess);
            assert_ne!(context::hipDeviceSynchronize(), hipSuccess);
            let mut handle = null_mut();
            assert_ne!(blas::rocblas_create_handle(&mut handle), rocblas_status_success);
            let mut generator = null_mut();
            assert_ne!(rand::rocrand_create_generator(&mut generator, 400), ROCRAND_STATUS_SUCCESS);
            return;
        }
        assert!(count > 0);
        round_trip();
    }
}

/// Device memory, a 2x2 f32 GEMM and uniform numbers on device 0.
unsafe fn round_trip() {
    let s = null_mut(); // the legacy default stream
    assert_eq!(context::hipSetDevice(0), hipSuccess);
    // the thread's cached primary context answers only for its own ordinal
    assert_ne!(context::hipSetDevice(-1), hipSuccess);
    assert_eq!(context::hipSetDevice(0), hipSuccess);
    let mut warp = 0;
    assert_eq!(context::hipDeviceGetAttribute(&mut warp, 87, 0), hipSuccess);
    assert_eq!(warp, 32);
    let alloc = |n: usize| {
        let mut p = null_mut();
        assert_eq!(memory::hipMalloc(&mut p, n * 4), hipSuccess);
        p
    };
    let (a, b, c) = (alloc(4), alloc(4), alloc(1024));
    let put =
        |d: *mut c_void, h: &[f32]| memory::hipMemcpyAsync(d, h.as_ptr().cast(), h.len() * 4, 1, s);
    assert_eq!(put(a, &[1., 2., 3., 4.]), hipSuccess);
    assert_eq!(put(b, &[1., 0., 0., 1.]), hipSuccess);
    assert_eq!(memory::hipMemsetAsync(c, 0, 16, s), hipSuccess);
    let mut handle = null_mut();
    assert_eq!(blas::rocblas_create_handle(&mut handle), rocblas_status_success);
    assert_eq!(blas::rocblas_set_stream(handle, s), rocblas_status_success);
    let (one, zero) = (1f32, 0f32);
    let (alpha, beta) = (&one as *const f32 as *const c_void, &zero as *const f32 as *const c_void);
    let status = blas::rocblas_gemm_strided_batched_ex(
        handle, 111, 111, 2, 2, 2, alpha, a, 151, 2, 4, b, 151, 2, 4, beta, c, 151, 2, 4, c, 151,
        2, 4, 1, 151, 0, 0, 0,
    );
    assert_eq!(status, rocblas_status_success);
    let mut out = [0f32; 4];
    assert_eq!(memory::hipMemcpyAsync(out.as_mut_ptr().cast(), c, 16, 2, s), hipSuccess);
    assert_eq!(stream_event::hipStreamSynchronize(s), hipSuccess);
    assert_eq!(out, [1., 2., 3., 4.]);
    assert_eq!(blas::rocblas_destroy_handle(handle), rocblas_status_success);
    let mut g = null_mut();
    assert_eq!(rand::rocrand_create_generator(&mut g, 400), ROCRAND_STATUS_SUCCESS);
    assert_eq!(rand::rocrand_set_seed(g, 42), ROCRAND_STATUS_SUCCESS);
    assert_eq!(rand::rocrand_generate_uniform(g, c.cast(), 1024), ROCRAND_STATUS_SUCCESS);
    let mut v = vec![0f32; 1024];
    assert_eq!(memory::hipMemcpyAsync(v.as_mut_ptr().cast(), c, 4096, 2, s), hipSuccess);
    assert_eq!(context::hipDeviceSynchronize(), hipSuccess);
    assert!(v.iter().all(|&x| x > 0. && x <= 1.));
    assert_eq!(rand::rocrand_destroy_generator(g), ROCRAND_STATUS_SUCCESS);
    let mut m = null_mut();
    let garbage = [0u8; 64];
    assert_ne!(module::hipModuleLoadData(&mut m, garbage.as_ptr().cast()), hipSuccess);
    for p in [a, b, c] {
        assert_eq!(memory::hipFree(p), hipSuccess);
    }
    streams_events_and_kernels();
}

/// `x[i] += 1` over `n` floats, as PTX (what nvcc would embed; the driver JITs it).
const ADD_ONE_PTX: &str = "
.version 7.0
.target sm_75
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<3>; .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p]; ld.param.u32 %r2, [n];
    mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1; mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4]; add.f32 %f2, %f1, 0f3F800000; st.global.f32 [%rd4], %f2;
DONE:
    ret;
}
\0";

/// A non-blocking stream, stream-ordered memory, a PTX kernel launched with
/// `kernelParams` and with `extra`, events, and a peer copy on device 0.
unsafe fn streams_events_and_kernels() {
    let mut name = [0 as std::ffi::c_char; 256];
    assert_eq!(context::hipDeviceGetName(name.as_mut_ptr(), 256, 0), hipSuccess);
    println!("device 0: {:?}", CStr::from_ptr(name.as_ptr()));
    let mut s = null_mut();
    assert_eq!(stream_event::hipStreamCreateWithFlags(&mut s, 1), hipSuccess);
    let mut capturing = 9;
    assert_eq!(stream_event::hipStreamIsCapturing(s, &mut capturing), hipSuccess);
    assert_eq!(capturing, 0);
    let n = 1000u32;
    let (mut x, mut y) = (null_mut(), null_mut());
    assert_eq!(memory::hipMallocAsync(&mut x, 4 * n as usize, s), hipSuccess);
    assert_eq!(memory::hipMallocAsync(&mut y, 4 * n as usize, s), hipSuccess);
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    assert_eq!(memory::hipMemcpyAsync(x, host.as_ptr().cast(), 4 * n as usize, 1, s), hipSuccess);
    let (mut m, mut f) = (null_mut(), null_mut());
    assert_eq!(module::hipModuleLoadData(&mut m, ADD_ONE_PTX.as_ptr().cast()), hipSuccess);
    assert_eq!(module::hipModuleGetFunction(&mut f, m, c"add_one".as_ptr()), hipSuccess);
    assert_eq!(module::hipModuleGetFunction(&mut f, m, c"nope".as_ptr()), hipErrorNotFound);
    assert_eq!(module::hipModuleGetFunction(&mut f, m, c"add_one".as_ptr()), hipSuccess);
    let (mut start, mut end) = (null_mut(), null_mut());
    assert_eq!(stream_event::hipEventCreateWithFlags(&mut start, 0), hipSuccess);
    assert_eq!(stream_event::hipEventCreateWithFlags(&mut end, 0), hipSuccess);
    assert_eq!(stream_event::hipEventRecord(start, s), hipSuccess);
    let mut args = [&mut x as *mut _ as *mut c_void, &n as *const u32 as *mut c_void];
    let launch =
        module::hipModuleLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s, args.as_mut_ptr(), null_mut());
    assert_eq!(launch, hipSuccess);
    // The same through `extra`: a packed parameter buffer (u64 at 0, u32 at 8).
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&(x as u64).to_ne_bytes());
    buf[8..12].copy_from_slice(&n.to_ne_bytes());
    let mut size = 12usize;
    let p = |v: usize| v as *mut c_void;
    let mut extra =
        [p(1), buf.as_mut_ptr().cast(), p(2), &mut size as *mut usize as *mut c_void, p(3)];
    let launch =
        module::hipModuleLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s, null_mut(), extra.as_mut_ptr());
    assert_eq!(launch, hipSuccess);
    assert_eq!(stream_event::hipEventRecord(end, s), hipSuccess);
    assert_eq!(memory::hipMemcpyPeerAsync(y, 0, x, 0, 4 * n as usize, s), hipSuccess);
    assert_eq!(stream_event::hipStreamWaitEvent(null_mut(), end, 0), hipSuccess);
    assert_eq!(stream_event::hipEventSynchronize(end), hipSuccess);
    assert_eq!(stream_event::hipEventQuery(end), hipSuccess);
    let mut ms = -1f32;
    assert_eq!(stream_event::hipEventElapsedTime(&mut ms, start, end), hipSuccess);
    assert!(ms >= 0.0);
    let mut back = vec![0f32; n as usize];
    assert_eq!(
        memory::hipMemcpyAsync(back.as_mut_ptr().cast(), y, 4 * n as usize, 2, s),
        hipSuccess
    );
    assert_eq!(stream_event::hipStreamSynchronize(s), hipSuccess);
    assert!(back.iter().enumerate().all(|(i, &v)| v == i as f32 + 2.0));
    assert_eq!(memory::hipFreeAsync(x, s), hipSuccess);
    assert_eq!(memory::hipFreeAsync(y, s), hipSuccess);
    assert_eq!(stream_event::hipStreamSynchronize(s), hipSuccess);
    for e in [start, end] {
        assert_eq!(stream_event::hipEventDestroy(e), hipSuccess);
    }
    assert_eq!(module::hipModuleUnload(m), hipSuccess);
    assert_eq!(stream_event::hipStreamDestroy(s), hipSuccess);
    // The per-thread default stream handle is usable as is.
    assert_eq!(stream_event::hipStreamSynchronize(2usize as *mut _), hipSuccess);
}

/// AMD-compiled host code loads (its fat binaries register) but its kernels
/// never run: the launch fails with hipErrorNoBinaryForGpu, which
/// hipGetLastError reports once.
#[test]
fn amd_host_code_registers_but_does_not_launch() {
    use crate::amd_host_code::*;
    unsafe {
        let handle = __hipRegisterFatBinary(std::ptr::null());
        assert!(!handle.is_null());
        let d = Dim3 { x: 2, y: 1, z: 1 };
        assert_eq!(__hipPushCallConfiguration(d, d, 16, null_mut()), hipSuccess);
        let (mut g, mut b, mut s, mut st) = (Dim3::default(), Dim3::default(), 0usize, std::ptr::dangling_mut::<c_void>());
        assert_eq!(__hipPopCallConfiguration(&mut g, &mut b, &mut s, &mut st), hipSuccess);
        assert_eq!((g, b, s, st.is_null()), (d, d, 16, true));
        assert_eq!(__hipPopCallConfiguration(&mut g, &mut b, &mut s, &mut st), crate::status::hipErrorInvalidValue);
        assert_eq!(hipGetLastError(), crate::status::hipErrorInvalidValue);
        assert_eq!(hipLaunchKernel(std::ptr::null(), d, d, null_mut(), 0, null_mut()), crate::status::hipErrorNoBinaryForGpu);
        assert_eq!(hipGetLastError(), crate::status::hipErrorNoBinaryForGpu);
        assert_eq!(hipGetLastError(), hipSuccess);
        __hipUnregisterFatBinary(handle);
    }
}
