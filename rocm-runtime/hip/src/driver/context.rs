//! Devices, streams and events (cudarc's `CudaContext`, `CudaStream`, `CudaEvent`).
//!
//! HIP has no user-visible context object: a [`HipContext`] is a device ordinal
//! plus the bookkeeping cudarc keeps per context (async-allocation support, event
//! tracking, multi-stream mode and a sticky error slot for errors raised in `Drop`).
//! [`HipContext::bind_to_thread`] is `hipSetDevice`.
use super::result::{self, check, HipError};
use super::sys::{self, hip};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// One HIP device as used by this process.
#[derive(Debug)]
pub struct HipContext {
    pub(crate) device: sys::CUdevice,
    pub(crate) ordinal: usize,
    pub(crate) has_async_alloc: bool,
    pub(crate) num_streams: AtomicUsize,
    pub(crate) event_tracking: AtomicBool,
    pub(crate) error_state: AtomicU32,
    /// Device attributes read once each (they never change): [`HipContext::attribute`]
    /// is asked per launch by the generated code (the wavefront size of a softmax).
    pub(crate) attributes: [OnceLock<i32>; sys::CUdevice_attribute::ALL.len()],
    /// [`HipContext::ggml_compute_capability`], read once.
    pub(crate) ggml_cc: OnceLock<i32>,
}

impl PartialEq for HipContext {
    fn eq(&self, other: &Self) -> bool { self.device == other.device && self.ordinal == other.ordinal }
}
impl Eq for HipContext {}

impl HipContext {
    /// Opens device `ordinal`. Fails with `hipErrorNoDevice` when the machine has no
    /// HIP device and `hipErrorInvalidDevice` when `ordinal` is out of range.
    /// Stream-ordered allocation is used when the device reports memory-pool support;
    /// if that attribute cannot be queried (older runtimes) plain `hipMalloc` is used.
    /// (`hipInit` is not called: the runtime initializes itself, and some versions
    /// report `hipErrorInvalidDevice` from it when there is no device.)
    pub fn new(ordinal: usize) -> Result<Arc<Self>, HipError> {
        let count = result::device::get_count()?;
        if ordinal >= count.max(0) as usize {
            return Err(HipError(hip::hipError_t_hipErrorInvalidDevice));
        }
        let mut device = 0;
        check(unsafe { hip::hipDeviceGet(&mut device, ordinal as i32) })?;
        check(unsafe { hip::hipSetDevice(device) })?;
        let pools = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
        let has_async_alloc = unsafe { result::device::get_attribute(device, pools) }
            .map(|v| v > 0)
            .unwrap_or(false);
        Ok(Arc::new(HipContext {
            device,
            ordinal,
            has_async_alloc,
            num_streams: AtomicUsize::new(0),
            event_tracking: AtomicBool::new(true),
            error_state: AtomicU32::new(0),
            attributes: Default::default(),
            ggml_cc: OnceLock::new(),
        }))
    }

    /// Number of visible HIP devices.
    pub fn device_count() -> Result<i32, HipError> { result::device::get_count() }
    pub fn ordinal(&self) -> usize { self.ordinal }
    /// The `hipDevice_t` handle.
    pub fn cu_device(&self) -> sys::CUdevice { self.device }
    /// Whether allocations use `hipMallocAsync`/`hipFreeAsync`.
    pub fn has_async_alloc(&self) -> bool { self.has_async_alloc }
    /// Device name (`hipDeviceGetName`).
    pub fn name(&self) -> Result<String, HipError> {
        let mut buf = [0 as std::os::raw::c_char; 256];
        check(unsafe { hip::hipDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, self.device) })?;
        let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        Ok(name.to_string_lossy().into_owned())
    }
    /// Makes this device current on the calling thread (`hipSetDevice`).
    pub fn bind_to_thread(&self) -> Result<(), HipError> {
        check(unsafe { hip::hipSetDevice(self.device) })
    }
    /// Waits for all work on the device (`hipDeviceSynchronize`).
    pub fn synchronize(&self) -> Result<(), HipError> {
        self.bind_to_thread()?;
        check(unsafe { hip::hipDeviceSynchronize() })
    }
    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32, HipError> {
        let slot = &self.attributes[attr.index()];
        if let Some(value) = slot.get() {
            return Ok(*value);
        }
        let value = unsafe { result::device::get_attribute(self.device, attr) }?;
        Ok(*slot.get_or_init(|| value))
    }
    /// The compute capability ggml's launchers take ([`result::device::ggml_compute_capability`]:
    /// `0x1000000` plus the arch id on AMD, NVIDIA's `major * 100 + minor * 10` through
    /// hip-on-cuda), read once: the MMQ launchers ask it per launch.
    pub fn ggml_compute_capability(&self) -> Result<i32, HipError> {
        if let Some(cc) = self.ggml_cc.get() {
            return Ok(*cc);
        }
        let major = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let cc = unsafe { result::device::ggml_compute_capability(self.device, major * 100 + minor * 10) }?;
        Ok(*self.ggml_cc.get_or_init(|| cc))
    }
    pub fn is_in_multi_stream_mode(&self) -> bool { self.num_streams.load(Ordering::Relaxed) > 0 }
    pub fn is_event_tracking(&self) -> bool { self.event_tracking.load(Ordering::Relaxed) }
    /// Read/write events are waited on and recorded only when more than one stream
    /// exists and event tracking is on (as in cudarc).
    pub fn is_managing_stream_synchronization(&self) -> bool {
        self.is_in_multi_stream_mode() && self.is_event_tracking()
    }
    /// # Safety
    /// Affects only slices allocated afterwards; see cudarc's documentation.
    pub unsafe fn enable_event_tracking(&self) { self.event_tracking.store(true, Ordering::Relaxed); }
    /// # Safety
    /// The caller becomes responsible for cross-stream synchronization.
    pub unsafe fn disable_event_tracking(&self) { self.event_tracking.store(false, Ordering::Relaxed); }
    /// Returns (and clears) the last error recorded by a `Drop` impl or guard.
    pub fn check_err(&self) -> Result<(), HipError> {
        match self.error_state.swap(0, Ordering::Relaxed) {
            0 => Ok(()),
            code => Err(HipError(code)),
        }
    }
    /// Stores an error for a later [`HipContext::check_err`] (used where no `Result`
    /// can be returned).
    pub fn record_err<T>(&self, result: Result<T, HipError>) {
        if let Err(err) = result {
            self.error_state.store(err.0, Ordering::Relaxed)
        }
    }

    /// Creates an event (default flags: `CU_EVENT_DISABLE_TIMING`).
    pub fn new_event(
        self: &Arc<Self>,
        flags: Option<sys::CUevent_flags>,
    ) -> Result<HipEvent, HipError> {
        let flags = flags.unwrap_or(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        self.bind_to_thread()?;
        let mut event = std::ptr::null_mut();
        check(unsafe { hip::hipEventCreateWithFlags(&mut event, flags as u32) })?;
        Ok(HipEvent { event, ctx: self.clone() })
    }

    /// The legacy null stream (synchronizes with all blocking streams).
    pub fn default_stream(self: &Arc<Self>) -> Arc<HipStream> {
        Arc::new(HipStream { stream: std::ptr::null_mut(), ctx: self.clone() })
    }
    /// `hipStreamPerThread`.
    pub fn per_thread_stream(self: &Arc<Self>) -> Arc<HipStream> {
        let stream = sys::HIP_STREAM_PER_THREAD as sys::CUstream;
        Arc::new(HipStream { stream, ctx: self.clone() })
    }
    /// A new non-blocking stream. The first one switches the context to multi-stream
    /// mode, so pending work is synchronized first (as in cudarc).
    pub fn new_stream(self: &Arc<Self>) -> Result<Arc<HipStream>, HipError> {
        self.bind_to_thread()?;
        if self.num_streams.fetch_add(1, Ordering::Relaxed) == 0 && self.is_event_tracking() {
            self.synchronize()?;
        }
        let mut stream = std::ptr::null_mut();
        let created = check(unsafe { hip::hipStreamCreateWithFlags(&mut stream, hip::hipStreamNonBlocking) });
        if let Err(e) = created {
            self.num_streams.fetch_sub(1, Ordering::Relaxed);
            return Err(e);
        }
        Ok(Arc::new(HipStream { stream, ctx: self.clone() }))
    }
}

/// A HIP event, destroyed on drop.
#[derive(Debug)]
pub struct HipEvent {
    pub(crate) event: sys::CUevent,
    pub(crate) ctx: Arc<HipContext>,
}
unsafe impl Send for HipEvent {}
unsafe impl Sync for HipEvent {}

impl Drop for HipEvent {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        self.ctx.record_err(check(unsafe { hip::hipEventDestroy(self.event) }));
    }
}

impl HipEvent {
    pub fn cu_event(&self) -> sys::CUevent { self.event }
    pub fn context(&self) -> &Arc<HipContext> { &self.ctx }
    /// Records the event on `stream`; both must belong to the same device.
    pub fn record(&self, stream: &HipStream) -> Result<(), HipError> {
        if self.ctx != stream.ctx {
            return Err(HipError(hip::hipError_t_hipErrorInvalidContext));
        }
        self.ctx.bind_to_thread()?;
        check(unsafe { hip::hipEventRecord(self.event, stream.stream) })
    }
    pub fn synchronize(&self) -> Result<(), HipError> {
        self.ctx.bind_to_thread()?;
        check(unsafe { hip::hipEventSynchronize(self.event) })
    }
    /// Milliseconds between `self` and `end` (both need timing enabled).
    pub fn elapsed_ms(&self, end: &Self) -> Result<f32, HipError> {
        self.synchronize()?;
        end.synchronize()?;
        let mut ms = 0f32;
        check(unsafe { hip::hipEventElapsedTime(&mut ms, self.event, end.event) })?;
        Ok(ms)
    }
    /// `hipEventQuery` succeeded (any error, including not-ready, is `false`).
    pub fn is_complete(&self) -> bool {
        check(unsafe { hip::hipEventQuery(self.event) }).is_ok()
    }
}

/// A buffer's read or write event (cudarc's `CudaSlice::read` / `write`). cudarc creates
/// both with every buffer while event tracking is on; here the event is made the first
/// time a use of the buffer is recorded, which happens only with several streams. An
/// event never recorded orders nothing, so a missing one is nothing to wait for: the
/// ordering is cudarc's, without two `hipEventCreate` and two `hipEventDestroy` per
/// buffer on one stream.
#[derive(Debug)]
pub struct BufferEvent {
    /// Event tracking was on when the buffer was made (cudarc gives it events then only).
    tracked: bool,
    event: OnceLock<HipEvent>,
}

impl BufferEvent {
    pub(crate) fn new(tracked: bool) -> Self { BufferEvent { tracked, event: OnceLock::new() } }
    /// Makes `stream` wait for the last recorded use, if there was one.
    pub(crate) fn wait_on(&self, stream: &HipStream) -> Result<(), HipError> {
        self.event.get().map_or(Ok(()), |event| stream.wait(event))
    }
    /// Records a use on `stream`, creating the event the first time.
    pub(crate) fn record(&self, stream: &HipStream) -> Result<(), HipError> {
        if !self.tracked {
            return Ok(());
        }
        let event = match self.event.get() {
            Some(event) => event,
            None => {
                let event = stream.ctx.new_event(None)?;
                self.event.get_or_init(move || event)
            }
        };
        event.record(stream)
    }
    /// Whether an event exists (a use was recorded).
    pub fn is_created(&self) -> bool { self.event.get().is_some() }
}

/// A HIP stream. Streams made by [`HipContext::new_stream`] are destroyed on drop.
#[derive(Debug, PartialEq, Eq)]
pub struct HipStream {
    pub(crate) stream: sys::CUstream,
    pub(crate) ctx: Arc<HipContext>,
}
unsafe impl Send for HipStream {}
unsafe impl Sync for HipStream {}

impl Drop for HipStream {
    fn drop(&mut self) {
        let owned = !self.stream.is_null() && self.stream as usize != sys::HIP_STREAM_PER_THREAD;
        if owned {
            self.ctx.record_err(self.ctx.bind_to_thread());
            self.ctx.num_streams.fetch_sub(1, Ordering::Relaxed);
            self.ctx.record_err(check(unsafe { hip::hipStreamDestroy(self.stream) }));
        }
    }
}

impl HipStream {
    pub fn cu_stream(&self) -> sys::CUstream { self.stream }
    pub fn context(&self) -> &Arc<HipContext> { &self.ctx }
    pub fn synchronize(&self) -> Result<(), HipError> {
        self.ctx.bind_to_thread()?;
        check(unsafe { hip::hipStreamSynchronize(self.stream) })
    }
    /// Creates an event and records it on this stream.
    pub fn record_event(&self, flags: Option<sys::CUevent_flags>) -> Result<HipEvent, HipError> {
        let event = self.ctx.new_event(flags)?;
        event.record(self)?;
        Ok(event)
    }
    /// Makes future work on this stream wait for `event`.
    pub fn wait(&self, event: &HipEvent) -> Result<(), HipError> {
        self.ctx.bind_to_thread()?;
        check(unsafe { hip::hipStreamWaitEvent(self.stream, event.event, 0) })
    }
    /// Makes future work on this stream wait for the work queued so far on `other`.
    pub fn join(&self, other: &HipStream) -> Result<(), HipError> { self.wait(&other.record_event(None)?) }
    /// A new stream that first waits for the work queued so far on this one.
    pub fn fork(&self) -> Result<Arc<HipStream>, HipError> {
        let stream = self.ctx.new_stream()?;
        stream.join(self)?;
        Ok(stream)
    }
    /// Graph-capture state (`hipStreamIsCapturing`).
    pub fn capture_status(&self) -> Result<sys::CUstreamCaptureStatus, HipError> {
        self.ctx.bind_to_thread()?;
        let mut status = 0;
        check(unsafe { hip::hipStreamIsCapturing(self.stream, &mut status) })?;
        Ok(sys::CUstreamCaptureStatus::from_raw(status))
    }
}
