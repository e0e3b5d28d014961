//! Unit tests. The ones at the top need no GPU (they exercise this crate's own
//! logic on hand-built objects whose pointers are never given to HIP); the ones in
//! `gpu` open device 0 and print "skipped: no HIP device" when the runtime reports
//! `hipErrorNoDevice`.
use crate::blas::result::{RocblasError, ROCBLAS_STATUS_NOT_LINKED};
use crate::driver::sys::{self, hip};
use crate::driver::*;
use crate::rand::result::{RocrandError, ROCRAND_STATUS_NOT_LINKED};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};
use std::sync::Arc;

/// A context/stream pair that never reaches HIP: null stream, no events.
pub(crate) fn fake_stream() -> Arc<HipStream> {
    let ctx = Arc::new(HipContext {
        device: 0,
        ordinal: 0,
        has_async_alloc: false,
        num_streams: AtomicUsize::new(0),
        event_tracking: AtomicBool::new(true),
        error_state: AtomicU32::new(0),
        attributes: Default::default(),
        ggml_cc: Default::default(),
    });
    Arc::new(HipStream { stream: std::ptr::null_mut(), ctx })
}

/// A function of a module never loaded: `std::mem::forget` it, so that Drop does not unload it.
pub(crate) fn fake_function(stream: &Arc<HipStream>) -> HipFunction {
    let module = Arc::new(HipModule {
        module: std::ptr::null_mut(),
        ctx: stream.ctx.clone(),
        _image: Box::new([]),
        functions: Default::default(),
    });
    HipFunction { function: std::ptr::null_mut(), module }
}

/// A slice at device address 0, which `Drop` never frees.
pub(crate) fn fake_slice<T>(len: usize, stream: &Arc<HipStream>) -> HipSlice<T> {
    let tracked = stream.ctx.is_event_tracking();
    HipSlice {
        ptr: 0,
        len,
        read: BufferEvent::new(tracked),
        write: BufferEvent::new(tracked),
        stream: stream.clone(),
        marker: PhantomData,
    }
}

#[test]
fn buffer_events_are_made_on_first_record_only() {
    let stream = fake_stream();
    // a second stream exists: uses of buffers are ordered by their events
    stream.ctx.num_streams.store(1, std::sync::atomic::Ordering::Relaxed);
    assert!(stream.ctx.is_managing_stream_synchronization());
    let func = fake_function(&stream);
    let mut out = fake_slice::<f32>(8, &stream);
    let inp = fake_slice::<f32>(8, &stream);
    let view = inp.slice(3..);
    let mut b = stream.launch_builder(&func);
    b.arg(&view).arg(&mut out);
    // the read waits for the input's last write and records its read; the write waits
    // for the output's reads and writes and records its write
    assert_eq!((b.waits.len(), b.records.len()), (3, 2));
    // no use was recorded yet: no event exists, and waiting on one reaches no HIP call
    // (the fake stream is null; a hipStreamWaitEvent on it would fail)
    assert!(b.waits.iter().chain(b.records.iter()).all(|e| !e.is_created()));
    for event in b.waits.iter() {
        event.wait_on(&stream).unwrap();
    }
    drop(b);
    // Drop waits on the buffers' events with several streams: none exist, no HIP call
    drop(view);
    drop((out, inp));
    std::mem::forget(func);
}

#[test]
fn an_upgraded_pointer_is_the_slice_and_leaks_back() {
    let stream = fake_stream();
    let slice: HipSlice<u8> = unsafe { stream.upgrade_device_ptr(0x1000, 256) };
    assert_eq!((slice.ptr, slice.len), (0x1000, 256));
    // leaked: the pointer comes back and the drop frees nothing
    assert_eq!(slice.leak(), 0x1000);
}

#[test]
fn launch_config_for_num_elems() {
    let cases = [(0, 0), (1, 1), (1024, 1), (1025, 2), (4096, 4), (u32::MAX, 4_194_304)];
    for (n, blocks) in cases {
        let cfg = LaunchConfig::for_num_elems(n);
        assert_eq!(cfg.grid_dim, (blocks, 1, 1), "n = {n}");
        assert_eq!(cfg.block_dim, (1024, 1, 1));
        assert_eq!(cfg.shared_mem_bytes, 0);
        assert!(blocks as u64 * 1024 >= n as u64);
    }
}

#[test]
fn launch_config_for_packed_elems() {
    // (elements, element bytes, packed, blocks): a thread per 16-byte pack when packed
    let cases = [(1 << 20, 4, true, 256), (1 << 20, 2, true, 128), (1 << 20, 1, true, 64), (1 << 20, 8, true, 512), (1 << 20, 4, false, 1024), (4097, 4, true, 2), (3, 4, true, 1), (0, 4, true, 0)];
    for (n, bytes, packed, blocks) in cases {
        let cfg = LaunchConfig::for_packed_elems(n, bytes, packed);
        assert_eq!(cfg.grid_dim, (blocks, 1, 1), "n = {n}, {bytes} bytes, packed {packed}");
        assert_eq!(cfg.block_dim, (1024, 1, 1));
    }
    // an element of no size (a sub-byte dtype) or wider than a pack: one per thread
    assert_eq!(LaunchConfig::for_packed_elems(4096, 0, true), LaunchConfig::for_num_elems(4096));
    assert_eq!(LaunchConfig::for_packed_elems(4096, 32, true), LaunchConfig::for_num_elems(4096));
}

#[test]
fn slicing_offsets_and_bounds() {
    let stream = fake_stream();
    let mut s = fake_slice::<f32>(10, &stream);
    let v = s.slice(2..5);
    assert_eq!((v.ptr, v.len()), (8, 3));
    let vv = v.slice(1..);
    assert_eq!((vv.ptr, vv.len(), vv.num_bytes()), (12, 2, 8));
    assert_eq!(s.slice(..=9).len(), 10);
    assert!(s.try_slice(5..11).is_none());
    assert!(s.try_slice((std::ops::Bound::Included(6), std::ops::Bound::Excluded(5))).is_none());
    assert!(s.try_slice(..=usize::MAX).is_none());
    assert!(s.try_slice(10..).is_some_and(|v| v.is_empty()));
    let m = s.slice_mut(4..);
    assert_eq!((m.ptr, m.len(), m.as_view().slice(1..3).ptr), (16, 6, 20));
    let t = unsafe { s.transmute::<u8>(40) }.map(|v| v.len());
    assert_eq!(t, Some(40));
    assert!(unsafe { s.transmute::<u8>(41) }.is_none());
    assert_eq!(DeviceSlice::num_bytes(&s), 40);
}

#[test]
#[should_panic(expected = "out of bounds")]
fn slice_out_of_range_panics() {
    let stream = fake_stream();
    let s = fake_slice::<u8>(4, &stream);
    let _ = s.slice(2..5);
}

/// A function looked up before comes from the module's cache: no runtime call (the
/// module here is no module at all, which the runtime would refuse).
#[test]
fn functions_are_looked_up_once() {
    let stream = fake_stream();
    let module = Arc::new(HipModule { module: std::ptr::null_mut(), ctx: stream.ctx.clone(), _image: Box::new([]), functions: Default::default() });
    let handle = 0x1000 as crate::driver::sys::CUfunction;
    module.functions.write().unwrap().insert("affine_f32".into(), FunctionHandle(handle));
    let f = module.load_function("affine_f32").unwrap();
    assert_eq!(f.cu_function(), handle);
    assert!(module.load_function("affine\0f32").is_err(), "a name with a NUL byte");
}

#[test]
fn kernel_arguments_point_at_values() {
    let stream = fake_stream();
    let func = fake_function(&stream);
    let mut out = fake_slice::<f32>(8, &stream);
    let inp = fake_slice::<f32>(8, &stream);
    let view = inp.slice(3..);
    let (n, h) = (7usize, half::f16::from_f32(1.5));
    let mut b = stream.launch_builder(&func);
    b.arg(&n).arg(&view).arg(&mut out).arg(&h).arg(&inp);
    let read = |i: usize| unsafe { *(b.args[i] as *const u64) };
    assert_eq!(b.args.len(), 5);
    assert_eq!(read(0), 7);
    assert_eq!(read(1), 12);
    assert_eq!(read(2), 0);
    assert_eq!(unsafe { *(b.args[3] as *const half::f16) }, h);
    assert!(b.waits.is_empty() && b.records.is_empty(), "single stream: no event bookkeeping");
    drop(b);
    // The module was never loaded: do not let Drop unload it.
    std::mem::forget(func);
}

#[test]
fn copies_check_lengths_before_calling_hip() {
    let stream = fake_stream();
    let mut dst = fake_slice::<u32>(2, &stream);
    let err = stream.memcpy_htod(&[1u32, 2, 3], &mut dst).unwrap_err();
    assert_eq!(err, HipError(hip::hipError_t_hipErrorInvalidValue));
    let mut host = [0u32; 1];
    assert!(stream.memcpy_dtoh(&dst, &mut host[..]).is_err());
    let src = fake_slice::<u32>(3, &stream);
    assert!(stream.memcpy_dtod(&src, &mut dst).is_err());
}

#[test]
fn error_formatting() {
    let e = HipError(hip::hipError_t_hipErrorNoDevice);
    assert_eq!(e.error_name(), "hipErrorNoDevice");
    let shown = e.to_string();
    assert_eq!(shown, "HIP error hipErrorNoDevice (100): no ROCm device found");
    // a status HIP describes in words of its own keeps them; one it names only is not said twice
    let other = HipError(hip::hipError_t_hipErrorInvalidValue).to_string();
    assert!(other.starts_with("HIP error hipErrorInvalidValue (1)") && !other.ends_with(": hipErrorInvalidValue"), "{other}");
    assert!(format!("{e:?}").contains("100"));
    assert_eq!(RocblasError(4).name(), "rocblas_status_invalid_size");
    assert_eq!(RocblasError(99).name(), "rocblas_status_unknown");
    assert!(RocblasError(ROCBLAS_STATUS_NOT_LINKED).to_string().contains("CANDLE_ROCM_LINK_ROCBLAS"));
    assert_eq!(RocrandError(105).name(), "ROCRAND_STATUS_LENGTH_NOT_MULTIPLE");
    assert_eq!(RocrandError(7).name(), "ROCRAND_STATUS_UNKNOWN");
    assert!(RocrandError(ROCRAND_STATUS_NOT_LINKED).to_string().contains("not found"));
    let c = crate::rtc::HipCompileError { status: 6, log: "x.hip:1: error".into() };
    assert_eq!(c.to_string(), "hipRTC compilation failed (status 6):\nx.hip:1: error");
    let boxed: [Box<dyn std::error::Error + Send + Sync>; 4] =
        [Box::new(e), Box::new(RocblasError(1)), Box::new(RocrandError(101)), Box::new(c)];
    assert!(boxed.iter().all(|e| !e.to_string().is_empty()));
}

#[test]
fn code_object_images() {
    let a: CodeObject = (b"\x7fELF" as &'static [u8]).into();
    assert_eq!(a.as_bytes(), b"\x7fELF");
    assert_eq!(CodeObject::from("abc"), CodeObject::from(String::from("abc")));
    assert_eq!(CodeObject::from(vec![1u8, 2]).as_bytes(), &[1, 2]);
    let bytes: Vec<u8> = (1..=13).collect();
    let img = crate::driver::module_image_for_tests(&bytes);
    assert_eq!(img.as_ptr() as usize % 8, 0);
    let flat: Vec<u8> = img.iter().flat_map(|w| w.to_ne_bytes()).collect();
    assert_eq!(&flat[..13], &bytes[..]);
    assert!(flat.len() >= 13 + 64 && flat[13..].iter().all(|&b| b == 0));
}

#[test]
fn capture_status_mapping() {
    use sys::CUstreamCaptureStatus as S;
    assert_eq!(S::from_raw(hip::hipStreamCaptureStatus_hipStreamCaptureStatusNone), S::CU_STREAM_CAPTURE_STATUS_NONE);
    assert_eq!(S::from_raw(hip::hipStreamCaptureStatus_hipStreamCaptureStatusActive), S::CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_eq!(S::from_raw(hip::hipStreamCaptureStatus_hipStreamCaptureStatusInvalidated), S::CU_STREAM_CAPTURE_STATUS_INVALIDATED);
}

#[cfg(not(candle_rocm_rocblas))]
#[test]
fn unlinked_rocblas_reports_not_linked() {
    let err = crate::blas::RocBlas::new(fake_stream()).unwrap_err();
    assert_eq!(err, RocblasError(ROCBLAS_STATUS_NOT_LINKED));
}

/// cuBLAS's compute types as the HIP layer carries them: the datatype per call,
/// TF32 as the handle's XF32 math mode.
#[test]
fn compute_types_carry_datatype_and_math_mode() {
    use crate::blas::sys::{rocblasComputeType_t as C, rocblas_datatype as D, rocblas_math_mode as M};
    let rows = [
        (C::ROCBLAS_COMPUTE_16F, D::rocblas_datatype_f16_r, M::rocblas_default_math),
        (C::ROCBLAS_COMPUTE_32F, D::rocblas_datatype_f32_r, M::rocblas_default_math),
        (C::ROCBLAS_COMPUTE_32F_FAST_XF32, D::rocblas_datatype_f32_r, M::rocblas_xf32_xdl_math_op),
        (C::ROCBLAS_COMPUTE_64F, D::rocblas_datatype_f64_r, M::rocblas_default_math),
    ];
    for (compute, datatype, mode) in rows {
        assert_eq!((compute.datatype(), compute.math_mode()), (datatype, mode), "{compute:?}");
    }
}

/// `CANDLE_ROCM_FP16_ALT_IMPL`: unset, 0 or 1; anything else an error naming the variable.
#[test]
fn fp16_alt_impl_values() {
    use crate::blas::result::{parse_fp16_alt_impl, ROCBLAS_STATUS_BAD_FP16_ALT_IMPL};
    assert_eq!(parse_fp16_alt_impl(None), Some(false));
    assert_eq!(parse_fp16_alt_impl(Some("0")), Some(false));
    assert_eq!(parse_fp16_alt_impl(Some("1")), Some(true));
    for bad in ["", "yes", "true", " 1", "2"] {
        assert_eq!(parse_fp16_alt_impl(Some(bad)), None, "{bad:?}");
    }
    let text = RocblasError(ROCBLAS_STATUS_BAD_FP16_ALT_IMPL).to_string();
    assert!(text.contains("CANDLE_ROCM_FP16_ALT_IMPL=") && text.contains("neither 1"), "{text}");
}

#[cfg(not(candle_rocm_rocrand))]
#[test]
fn unlinked_rocrand_reports_not_linked() {
    let err = crate::rand::HipRng::new(1, fake_stream()).unwrap_err();
    assert_eq!(err, RocrandError(ROCRAND_STATUS_NOT_LINKED));
}

/// ggml's `ggml_cuda_parse_id`, on the names ROCm reports (target-id feature
/// suffixes, generic targets); anything else is an error naming the reason.
#[test]
fn ggml_arch_ids() {
    use crate::driver::result::device::{ggml_arch_id, GGML_CUDA_CC_OFFSET_AMD};
    let ids = [
        ("gfx90a:sramecc+:xnack-", 0x90a),
        ("gfx90a", 0x90a),
        ("gfx908:xnack+", 0x908),
        ("gfx942:sramecc+:xnack-", 0x942),
        ("gfx942", 0x942),
        ("gfx950", 0x950),
        ("gfx1030", 0x1030),
        ("gfx1100", 0x1100),
        ("gfx1151", 0x1151),
        ("gfx1201", 0x1201),
        ("gfx1100:xnack-", 0x1100),
        ("gfx9-generic", 0x900),
        ("gfx9-4-generic", 0x940),
        ("gfx9-4-generic:sramecc+:xnack-", 0x940),
        ("gfx10-1-generic", 0x1010),
        ("gfx10-3-generic", 0x1030),
        ("gfx11-generic", 0x1100),
        ("gfx12-generic", 0x1200),
    ];
    for (name, id) in ids {
        assert_eq!(ggml_arch_id(name), Ok(id), "{name}");
    }
    assert_eq!(GGML_CUDA_CC_OFFSET_AMD + ggml_arch_id("gfx90a:sramecc+:xnack-").unwrap(), 0x100090a);
    let malformed = [
        ("", "no gfx prefix"),
        ("sm_90", "no gfx prefix"),
        ("GFX90a", "no gfx prefix"),
        (" gfx90a", "no gfx prefix"),
        ("gfx", "not hex digits after gfx"),
        (":gfx90a", "no gfx prefix"),
        ("gfx:xnack-", "not hex digits after gfx"),
        ("gfx9", "fewer than three hex digits"),
        ("gfx90", "fewer than three hex digits"),
        ("gfx90g", "not hex digits after gfx"),
        ("gfx+90a", "not hex digits after gfx"),
        ("gfx 90a", "not hex digits after gfx"),
        ("gfx\u{e9}90", "not hex digits after gfx"),
        ("gfx9\u{e9}0", "not hex digits after gfx"),
        ("gfx0ff", "major not in 1..=0xff"),
        ("gfx12345", "major not in 1..=0xff"),
        ("gfx123456789a", "number too large"),
        ("gfx90a-custom", "not hex digits after gfx"),
        ("gfx-generic", "generic major not hex digits"),
        ("gfx11--generic", "generic minor not hex digits"),
        ("gfxz-generic", "generic major not hex digits"),
        ("gfx9-4-1-generic", "generic name not <major>[-<one hex digit>]-generic"),
        ("gfx9-10-generic", "generic name not <major>[-<one hex digit>]-generic"),
        ("gfx0-generic", "major not in 1..=0xff"),
    ];
    for (name, reason) in malformed {
        let err = ggml_arch_id(name).unwrap_err();
        assert_eq!((err.name.as_str(), err.reason), (name, reason));
        let text = err.to_string();
        assert!(text.contains(&format!("{name:?}")) && text.contains(reason), "{text}");
    }
}

mod gpu {
    use super::*;

    /// Device 0, or `None` (after saying so) when the runtime reports no device.
    fn device() -> Option<Arc<HipContext>> {
        match HipContext::new(0) {
            Ok(ctx) => Some(ctx),
            Err(e) if e.0 == hip::hipError_t_hipErrorNoDevice => {
                println!("skipped: no HIP device ({e})");
                None
            }
            Err(e) => panic!("HIP runtime failed: {e}"),
        }
    }

    #[test]
    fn memory_round_trips() {
        let Some(ctx) = device() else { return };
        for stream in [ctx.default_stream(), ctx.per_thread_stream(), ctx.new_stream().unwrap()] {
            let host: Vec<u32> = (0..1000).collect();
            let mut dev = stream.clone_htod(&host).unwrap();
            assert_eq!(stream.clone_dtoh(&dev).unwrap(), host);
            let zeros = stream.alloc_zeros::<u32>(10).unwrap();
            stream.memcpy_dtod(&zeros, &mut dev.slice_mut(100..110)).unwrap();
            let back = stream.clone_dtoh(&dev.slice(95..115)).unwrap();
            assert_eq!(&back[..5], &[95, 96, 97, 98, 99]);
            assert!(back[5..15].iter().all(|&x| x == 0));
            assert_eq!(back[15], 110);
            let copy = dev.try_clone().unwrap();
            let mut out = [0u32; 3];
            stream.memcpy_dtoh(&copy.slice(997..), &mut out[..]).unwrap();
            assert_eq!(out, [997, 998, 999]);
            assert_eq!(stream.capture_status().unwrap(), sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE);
            stream.synchronize().unwrap();
        }
        ctx.check_err().unwrap();
    }

    #[test]
    fn buffer_events_order_streams_once_used() {
        let Some(ctx) = device() else { return };
        let first = ctx.default_stream();
        let host: Vec<u32> = (0..1 << 20).collect();
        let dev = first.clone_htod(&host).unwrap();
        assert!(!dev.read.is_created() && !dev.write.is_created(), "one stream: no events made");
        // a second stream: uses of buffers are now ordered by their events
        let second = ctx.new_stream().unwrap();
        let mut copy = second.alloc_zeros::<u32>(host.len()).unwrap();
        second.memcpy_dtod(&dev, &mut copy).unwrap();
        assert!(dev.read.is_created() && copy.write.is_created() && !dev.write.is_created());
        // the first stream waits for the copy's write on the second
        assert_eq!(first.clone_dtoh(&copy).unwrap(), host);
        drop((dev, copy));
        ctx.check_err().unwrap();
    }

    #[test]
    fn bad_images_are_runtime_errors() {
        let Some(ctx) = device() else { return };
        let empty = ctx.load_module(Vec::new().into()).unwrap_err();
        assert_eq!(empty.0, hip::hipError_t_hipErrorInvalidImage);
        let err = ctx.load_module("not a code object".into()).unwrap_err();
        println!("garbage image: {err}");
    }

    #[test]
    fn device_attributes() {
        let Some(ctx) = device() else { return };
        let warp = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE).unwrap();
        assert!(warp == 32 || warp == 64, "warp size {warp}");
        println!("{}: warp {warp}", ctx.name().unwrap());
    }

    /// cudarc's `result::device::get`, `result::mem_get_info` and the integrated-GPU
    /// attribute (mistral.rs asks them): a discrete GPU with some of its memory free.
    #[test]
    fn device_handle_memory_info_and_integrated() {
        use crate::driver::result;
        let Some(ctx) = device() else { return };
        let dev = result::device::get(0).unwrap();
        let integrated = unsafe { result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED) }.unwrap();
        assert!(integrated == 0 || integrated == 1, "integrated {integrated}");
        ctx.bind_to_thread().unwrap();
        let (free, total) = result::mem_get_info().unwrap();
        assert!(total > 0 && free <= total, "free {free} of {total}");
        // an allocation is seen
        let stream = ctx.default_stream();
        let buffer = stream.alloc_zeros::<u8>(256 << 20).unwrap();
        let (after, _) = result::mem_get_info().unwrap();
        assert!(after < free, "free {after} after allocating 256 MiB, {free} before");
        drop(buffer);
        println!("{}: integrated {integrated}, {free} of {total} bytes free", ctx.name().unwrap());
        assert!(result::device::get(i32::MAX).is_err());
    }

    /// The properties agree with the attributes, and ggml's compute capability
    /// is read from the arch name (AMD, or hip-on-cuda with
    /// `HIP_ON_CUDA_GCN_ARCH_NAME`) or is NVIDIA's `major * 100 + minor * 10`.
    #[test]
    fn ggml_compute_capability() {
        use crate::driver::result::device::{self as d, GGML_CUDA_CC_OFFSET_AMD};
        use sys::CUdevice_attribute as A;
        let Some(ctx) = device() else { return };
        let dev = ctx.cu_device();
        let major = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).unwrap();
        let minor = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).unwrap();
        let cc = unsafe { d::ggml_compute_capability(dev, major * 100 + minor * 10) };
        if cfg!(not(candle_rocm_hip_props_r0600)) {
            assert_eq!(cc.unwrap_err().0, hip::hipError_t_hipErrorNotSupported);
            println!("skipped: linked against a HIP without hipGetDevicePropertiesR0600");
            return;
        }
        let prop = unsafe { d::get_properties(dev) }.unwrap();
        assert_eq!((prop.major, prop.minor), (major, minor));
        assert_eq!(prop.warpSize, ctx.attribute(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE).unwrap());
        assert_eq!(prop.multiProcessorCount, ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).unwrap());
        let smem = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK).unwrap();
        assert_eq!(prop.sharedMemPerBlock, smem as usize);
        assert!(prop.totalGlobalMem > 0 && prop.maxThreadsPerBlock >= 256);
        let name = unsafe { d::gcn_arch_name(dev) }.unwrap();
        let cc = cc.unwrap();
        if name.starts_with("gfx") {
            assert_eq!(cc, GGML_CUDA_CC_OFFSET_AMD + d::ggml_arch_id(&name).unwrap());
        } else {
            assert_eq!(cc, major * 100 + minor * 10);
        }
        assert_eq!(ctx.ggml_compute_capability().unwrap(), cc, "the context's cached value");
        assert_eq!(ctx.ggml_compute_capability().unwrap(), cc, "read again from the cache");
        println!("{}: gcnArchName {name}, ggml cc {cc:#x}", ctx.name().unwrap());
    }

    #[cfg(candle_rocm_rocblas)]
    #[test]
    fn gemm_f32() {
        use crate::blas::{sys::rocblas_operation::rocblas_operation_none as N, Gemm, GemmConfig};
        let Some(ctx) = device() else { return };
        let stream = ctx.default_stream();
        let blas = crate::blas::RocBlas::new(stream.clone()).unwrap();
        // Column-major 2x2: A = [1 3; 2 4], B = I  =>  C = A.
        let a = stream.clone_htod(&[1f32, 2., 3., 4.]).unwrap();
        let b = stream.clone_htod(&[1f32, 0., 0., 1.]).unwrap();
        let mut c = stream.alloc_zeros::<f32>(4).unwrap();
        let cfg = GemmConfig { transa: N, transb: N, m: 2, n: 2, k: 2, alpha: 1f32, lda: 2, ldb: 2, beta: 0., ldc: 2 };
        unsafe { blas.gemm(cfg, &a, &b, &mut c) }.unwrap();
        assert_eq!(stream.clone_dtoh(&c).unwrap(), vec![1., 2., 3., 4.]);
    }

    /// cudarc's `result::hgemm` (mistralrs-quant's GPTQ fallback calls it): f16 in and
    /// out, `alpha op(A) op(B) + beta C`, column-major; small integers, exact in f16.
    #[cfg(candle_rocm_rocblas)]
    #[test]
    fn hgemm_f16() {
        use crate::blas::sys::rocblas_operation::{rocblas_operation_none as N, rocblas_operation_transpose as T};
        use half::f16;
        let Some(ctx) = device() else { return };
        let stream = ctx.default_stream();
        let blas = crate::blas::RocBlas::new(stream.clone()).unwrap();
        let (m, n, k) = (5usize, 3usize, 4usize);
        // A is m x k column-major; B is given transposed (n x k column-major)
        let ha: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 - 3.).collect();
        let hbt: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 - 2.).collect();
        let hc: Vec<f32> = (0..m * n).map(|i| (i % 3) as f32).collect();
        let to16 = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
        let (a, bt) = (stream.clone_htod(&to16(&ha)).unwrap(), stream.clone_htod(&to16(&hbt)).unwrap());
        let mut c = stream.clone_htod(&to16(&hc)).unwrap();
        let (alpha, beta) = (f16::from_f32(2.), f16::from_f32(1.));
        {
            let (pa, _ra) = a.device_ptr(&stream);
            let (pb, _rb) = bt.device_ptr(&stream);
            let (pc, _rc) = c.device_ptr_mut(&stream);
            unsafe { crate::blas::result::hgemm(*blas.handle(), N, T, m as i32, n as i32, k as i32, &alpha, pa as _, m as i32, pb as _, n as i32, &beta, pc as _, m as i32) }.unwrap();
        }
        let got: Vec<f32> = stream.clone_dtoh(&c).unwrap().iter().map(|x| x.to_f32()).collect();
        let want: Vec<f32> = (0..m * n).map(|idx| {
            let (i, j) = (idx % m, idx / m);
            2. * (0..k).map(|l| ha[l * m + i] * hbt[l * n + j]).sum::<f32>() + hc[idx]
        }).collect();
        assert_eq!(got, want);
    }

    /// Column-major `C = A B` through `result::gemm_strided_batched_ex` with the given
    /// compute type and flags (`flags` passed raw, `None`: the layer's own).
    #[cfg(candle_rocm_rocblas)]
    fn gemm_f32_with(
        blas: &crate::blas::RocBlas, (m, n, k): (i32, i32, i32), a: &HipSlice<f32>, b: &HipSlice<f32>,
        compute: crate::blas::sys::rocblasComputeType_t,
    ) -> Vec<f32> {
        use crate::blas::sys::{rocblas_gemm_algo::rocblas_gemm_algo_standard as STD, rocblas_operation::rocblas_operation_none as N, rocmDataType_t::ROCM_R_32F as F};
        let stream = blas.stream();
        let mut c = stream.alloc_zeros::<f32>((m * n) as usize).unwrap();
        let (alpha, beta) = (1f32, 0f32);
        let (pa, _ra) = a.device_ptr(stream);
        let (pb, _rb) = b.device_ptr(stream);
        let (pc, _rc) = c.device_ptr_mut(stream);
        unsafe {
            crate::blas::result::gemm_strided_batched_ex(
                *blas.handle(), N, N, m, n, k, &alpha as *const f32 as _, pa as _, F, m, 0, pb as _, F, k, 0,
                &beta as *const f32 as _, pc as _, F, m, 0, 1, compute, STD,
            )
        }
        .unwrap();
        drop((_ra, _rb, _rc));
        stream.clone_dtoh(&c).unwrap()
    }

    /// CUDA's TF32 request (`ROCBLAS_COMPUTE_32F_FAST_XF32`): the handle takes XF32 for
    /// that gemm only. Where the platform takes the mode (rocBLAS on CDNA3; cuBLAS's TF32
    /// through hip-on-cuda) the result carries TF32's 10-bit-mantissa error; where it
    /// keeps the default, the result is the full-f32 one, bit for bit. The next f32 gemm
    /// computes in full f32 again.
    #[cfg(candle_rocm_rocblas)]
    #[test]
    fn gemm_xf32_for_its_call_only() {
        use crate::blas::result::{get_math_mode, set_math_mode};
        use crate::blas::sys::{rocblasComputeType_t as C, rocblas_math_mode as M};
        let Some(ctx) = device() else { return };
        let stream = ctx.default_stream();
        let blas = crate::blas::RocBlas::new(stream.clone()).unwrap();
        let (m, n, k) = (64usize, 64usize, 512usize);
        // full-mantissa values in [-1, 1) from a fixed LCG
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2. - 1.
        };
        let ha: Vec<f32> = (0..m * k).map(|_| next()).collect();
        let hb: Vec<f32> = (0..k * n).map(|_| next()).collect();
        let reference: Vec<f64> = (0..m * n)
            .map(|i| (0..k).map(|l| ha[l * m + i % m] as f64 * hb[(i / m) * k + l] as f64).sum())
            .collect();
        let max_err = |c: &[f32]| c.iter().zip(&reference).map(|(&x, &r)| (x as f64 - r).abs()).fold(0., f64::max);
        let (a, b) = (stream.clone_htod(&ha).unwrap(), stream.clone_htod(&hb).unwrap());
        let dims = (m as i32, n as i32, k as i32);
        let full = gemm_f32_with(&blas, dims, &a, &b, C::ROCBLAS_COMPUTE_32F);
        let reduced = gemm_f32_with(&blas, dims, &a, &b, C::ROCBLAS_COMPUTE_32F_FAST_XF32);
        let again = gemm_f32_with(&blas, dims, &a, &b, C::ROCBLAS_COMPUTE_32F);
        assert_eq!(unsafe { get_math_mode(*blas.handle()) }.unwrap(), M::rocblas_default_math);
        assert_eq!(again, full, "an f32 gemm after the XF32 one is not the full-f32 result");
        // does this platform take XF32? (rocBLAS keeps the default where the arch lacks it)
        unsafe { set_math_mode(*blas.handle(), M::rocblas_xf32_xdl_math_op) }.unwrap();
        let taken = unsafe { get_math_mode(*blas.handle()) }.unwrap() == M::rocblas_xf32_xdl_math_op;
        unsafe { set_math_mode(*blas.handle(), M::rocblas_default_math) }.unwrap();
        let (e_full, e_reduced) = (max_err(&full), max_err(&reduced));
        println!("f32 gemm {m}x{n}x{k}: max error full {e_full:.2e}, XF32 {e_reduced:.2e} (XF32 taken: {taken})");
        assert!(e_full < 1e-4, "full f32: {e_full}");
        if taken {
            assert!(e_reduced > 10. * e_full && e_reduced < 0.05, "XF32: {e_reduced} against full f32's {e_full}");
        } else {
            assert_eq!(reduced, full);
        }
    }

    /// `rocblas_gemm_flags_fp16_alt_impl` is accepted on f16 gemms and, on values that
    /// bf16 holds exactly (small integers: gfx90a's alternative kernels round through
    /// bf16), gives the same result as no flags.
    #[cfg(candle_rocm_rocblas)]
    #[test]
    fn gemm_f16_alt_impl_flag_accepted() {
        use crate::blas::sys::{self as b, rocblas_datatype::rocblas_datatype_f32_r as F32, rocmDataType_t::ROCM_R_16F as F16};
        let Some(ctx) = device() else { return };
        let stream = ctx.default_stream();
        let blas = crate::blas::RocBlas::new(stream.clone()).unwrap();
        let (m, n, k) = (16usize, 8usize, 32usize);
        let ha: Vec<half::f16> = (0..m * k).map(|i| half::f16::from_f32((i % 7) as f32 - 3.)).collect();
        let hb: Vec<half::f16> = (0..k * n).map(|i| half::f16::from_f32((i % 5) as f32 - 2.)).collect();
        let (a, bm) = (stream.clone_htod(&ha).unwrap(), stream.clone_htod(&hb).unwrap());
        let run = |flags: u32| {
            let mut c = stream.alloc_zeros::<half::f16>(m * n).unwrap();
            let (alpha, beta) = (1f32, 0f32);
            let (pa, _ra) = a.device_ptr(&stream);
            let (pb, _rb) = bm.device_ptr(&stream);
            let (pc, _rc) = c.device_ptr_mut(&stream);
            let none = b::rocblas_operation::rocblas_operation_none as u32;
            let status = unsafe {
                b::rocblas_gemm_strided_batched_ex(
                    *blas.handle(), none, none, m as i32, n as i32, k as i32, &alpha as *const f32 as _,
                    pa as _, F16 as u32, m as i32, 0, pb as _, F16 as u32, k as i32, 0, &beta as *const f32 as _,
                    pc as _, F16 as u32, m as i32, 0, pc as _, F16 as u32, m as i32, 0, 1, F32 as u32, 0, 0, flags,
                )
            };
            crate::blas::result::check(status).unwrap();
            drop((_ra, _rb, _rc));
            stream.clone_dtoh(&c).unwrap()
        };
        let plain = run(b::rocblas_gemm_flags_none);
        assert_eq!(run(b::rocblas_gemm_flags_fp16_alt_impl), plain);
        let expect: Vec<half::f16> = (0..m * n)
            .map(|i| half::f16::from_f32((0..k).map(|l| ha[l * m + i % m].to_f32() * hb[(i / m) * k + l].to_f32()).sum()))
            .collect();
        assert_eq!(plain, expect);
    }

    #[cfg(candle_rocm_rocrand)]
    #[test]
    fn uniform_in_range() {
        let Some(ctx) = device() else { return };
        let stream = ctx.default_stream();
        let rng = crate::rand::HipRng::new(42, stream.clone()).unwrap();
        let mut data = stream.alloc_zeros::<f32>(1024).unwrap();
        rng.fill_with_uniform(&mut data).unwrap();
        let v = stream.clone_dtoh(&data).unwrap();
        assert!(v.iter().all(|&x| x > 0. && x <= 1.));
    }
}
