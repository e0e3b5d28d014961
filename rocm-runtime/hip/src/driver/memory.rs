//! Allocation and copies, as methods of [`HipStream`] (same names and bounds as cudarc).
//!
//! Differences from cudarc, all deliberate:
//! * Length mismatches return `hipErrorInvalidValue` instead of panicking.
//! * Copies between device and (pageable) host memory synchronize the stream before
//!   returning: HIP does not document that an async copy from pageable memory has
//!   finished reading the host buffer when it returns, and a device-to-host copy must
//!   be complete before the caller reads the data (CUDA guarantees both).
//! * Zero-length buffers are never passed to HIP (null pointer, no allocation).
use super::context::{BufferEvent, HipStream};
use super::result::{check, HipError};
use super::slice::{DevicePtr, DevicePtrMut, DeviceRepr, HipSlice, HostSlice, ValidAsZeroBits};
use super::sys::hip;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

fn invalid_value() -> HipError { HipError(hip::hipError_t_hipErrorInvalidValue) }

impl HipStream {
    /// Allocates `len` elements (stream-ordered when supported).
    ///
    /// # Safety
    /// The memory is uninitialized.
    pub unsafe fn alloc<T: DeviceRepr>(self: &Arc<Self>, len: usize) -> Result<HipSlice<T>, HipError> {
        self.ctx.bind_to_thread()?;
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(invalid_value)?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        if bytes > 0 {
            check(if self.ctx.has_async_alloc {
                hip::hipMallocAsync(&mut ptr, bytes, self.stream)
            } else {
                hip::hipMalloc(&mut ptr, bytes)
            })?;
        }
        let tracked = self.ctx.is_event_tracking();
        Ok(HipSlice {
            ptr: ptr as u64,
            len,
            read: BufferEvent::new(tracked),
            write: BufferEvent::new(tracked),
            stream: self.clone(),
            marker: PhantomData,
        })
    }

    /// cudarc's `upgrade_device_ptr`: an owned slice of `len` elements at `ptr`, freed when
    /// dropped as an allocation of this stream's would be; [`HipSlice::leak`] hands the
    /// pointer back instead.
    ///
    /// # Safety
    /// `ptr` must point to at least `len` elements of `T` in this device's memory, and the
    /// slice must be the memory's only owner (or be leaked).
    pub unsafe fn upgrade_device_ptr<T>(self: &Arc<Self>, ptr: super::sys::CUdeviceptr, len: usize) -> HipSlice<T> {
        let tracked = self.ctx.is_event_tracking();
        HipSlice { ptr, len, read: BufferEvent::new(tracked), write: BufferEvent::new(tracked), stream: self.clone(), marker: PhantomData }
    }

    /// Allocates `len` zeroed elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<HipSlice<T>, HipError> {
        let mut dst = unsafe { self.alloc(len) }?;
        self.memset_zeros(&mut dst)?;
        Ok(dst)
    }

    /// Sets all bytes of `dst` to zero.
    pub fn memset_zeros<T: DeviceRepr + ValidAsZeroBits, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        dst: &mut Dst,
    ) -> Result<(), HipError> {
        let bytes = dst.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (ptr, _record) = dst.device_ptr_mut(self);
        check(unsafe { hip::hipMemsetAsync(ptr as *mut c_void, 0, bytes, self.stream) })
    }

    /// Copies host data into a new device buffer.
    pub fn clone_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<HipSlice<T>, HipError> {
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_htod(src, &mut dst)?;
        Ok(dst)
    }

    /// cudarc 0.16's name of [`Self::clone_htod`] (candle 0.9.0 and 0.9.1 call it).
    pub fn memcpy_stod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(self: &Arc<Self>, src: &Src) -> Result<HipSlice<T>, HipError> {
        self.clone_htod(src)
    }

    /// cudarc 0.16's name of [`Self::clone_dtoh`] (candle 0.9.0 and 0.9.1 call it).
    pub fn memcpy_dtov<T: DeviceRepr, Src: DevicePtr<T>>(self: &Arc<Self>, src: &Src) -> Result<Vec<T>, HipError> {
        self.clone_dtoh(src)
    }

    /// Copies host data into the start of `dst` (which must be at least as long).
    pub fn memcpy_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), HipError> {
        if dst.len() < src.len() {
            return Err(invalid_value());
        }
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (host, _record_src) = unsafe { src.stream_synced_slice(self) };
        let (ptr, _record_dst) = dst.device_ptr_mut(self);
        let bytes = std::mem::size_of_val(host);
        let kind = hip::hipMemcpyKind_hipMemcpyHostToDevice;
        let src_ptr = host.as_ptr() as *const c_void;
        // Host slices are pageable memory, which HIP copies synchronously (CUDA stages
        // it before returning): `host` may be dropped once this returns, no stream wait.
        check(unsafe { hip::hipMemcpyAsync(ptr as *mut c_void, src_ptr, bytes, kind, self.stream) })
    }

    /// Copies device data into a new `Vec`.
    pub fn clone_dtoh<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<Vec<T>, HipError> {
        let mut out = Vec::<T>::with_capacity(src.len());
        unsafe { self.dtoh_raw(src, out.as_mut_ptr() as *mut c_void) }?;
        // SAFETY: the copy above wrote all `src.len()` elements and has completed.
        unsafe { out.set_len(src.len()) };
        Ok(out)
    }

    /// Copies device data into the start of `dst` (which must be at least as long).
    pub fn memcpy_dtoh<T: DeviceRepr, Src: DevicePtr<T>, Dst: HostSlice<T> + ?Sized>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), HipError> {
        if dst.len() < src.len() {
            return Err(invalid_value());
        }
        let (host, _record_dst) = unsafe { dst.stream_synced_mut_slice(self) };
        unsafe { self.dtoh_raw(src, host.as_mut_ptr() as *mut c_void) }
    }

    /// Queues the copy of all of `src` to `dst` and waits for it.
    unsafe fn dtoh_raw<T, Src: DevicePtr<T>>(&self, src: &Src, dst: *mut c_void) -> Result<(), HipError> {
        let bytes = src.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let (ptr, _record_src) = src.device_ptr(self);
        let kind = hip::hipMemcpyKind_hipMemcpyDeviceToHost;
        check(hip::hipMemcpyAsync(dst, ptr as *const c_void, bytes, kind, self.stream))?;
        self.synchronize()
    }

    /// Copies `src` into the start of `dst` (which must be at least as long), across
    /// devices with `hipMemcpyPeerAsync` when they differ.
    pub fn memcpy_dtod<T, Src: DevicePtr<T>, Dst: DevicePtrMut<T>>(
        self: &Arc<Self>,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<(), HipError> {
        if dst.len() < src.len() {
            return Err(invalid_value());
        }
        let bytes = src.num_bytes();
        if bytes == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread()?;
        let src_ctx = src.stream().context().clone();
        if src_ctx == self.ctx {
            let (s, _record_src) = src.device_ptr(self);
            let (d, _record_dst) = dst.device_ptr_mut(self);
            let kind = hip::hipMemcpyKind_hipMemcpyDeviceToDevice;
            check(unsafe { hip::hipMemcpyAsync(d as *mut c_void, s as *const c_void, bytes, kind, self.stream) })
        } else {
            // Events can only be recorded on their own device's streams: record the
            // read on the source stream, and make this stream wait for the source.
            let (s, _record_src) = src.device_ptr(src.stream());
            let (d, _record_dst) = dst.device_ptr_mut(self);
            self.wait(&src.stream().record_event(None)?)?;
            let (d_ord, s_ord) = (self.ctx.device, src_ctx.device);
            check(unsafe {
                hip::hipMemcpyPeerAsync(d as *mut c_void, d_ord, s as *const c_void, s_ord, bytes, self.stream)
            })
        }
    }

    /// Copies `src` into a new buffer on this stream.
    pub fn clone_dtod<T: DeviceRepr, Src: DevicePtr<T>>(
        self: &Arc<Self>,
        src: &Src,
    ) -> Result<HipSlice<T>, HipError> {
        let mut dst = unsafe { self.alloc(src.len()) }?;
        self.memcpy_dtod(src, &mut dst)?;
        Ok(dst)
    }
}
