//! Device buffers and views (cudarc's `CudaSlice`, `CudaView`, `CudaViewMut`) and the
//! traits the generated code is generic over.
use super::context::{BufferEvent, HipContext, HipStream};
use super::result::{check, HipError};
use super::sys::{self, hip};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Types that can be copied to the device bit for bit and passed by value to kernels.
///
/// # Safety
/// The type must be plain data with the same layout on host and device.
pub unsafe trait DeviceRepr {}
/// Types for which all-zero bytes are a valid value (what `alloc_zeros` produces).
///
/// # Safety
/// All-zero bits must be a valid value of the type.
pub unsafe trait ValidAsZeroBits {}

macro_rules! impl_plain {
    ($($t:ty),*) => { $(unsafe impl DeviceRepr for $t {} unsafe impl ValidAsZeroBits for $t {})* };
}
impl_plain!(bool, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);
impl_plain!(half::f16, half::bf16, float8::F8E4M3, float8::F8E5M2);
#[cfg(feature = "float8-0_6")]
impl_plain!(float8_0_6::F8E4M3, float8_0_6::F8E5M2);
#[cfg(feature = "float8-0_5")]
impl_plain!(float8_0_5::F8E4M3, float8_0_5::F8E5M2);
#[cfg(feature = "float8-0_4")]
impl_plain!(float8_0_4::F8E4M3, float8_0_4::F8E5M2);
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}
unsafe impl<T: ValidAsZeroBits, const N: usize> ValidAsZeroBits for [T; N] {}

/// An owned device buffer of `len` elements of `T`, freed (stream-ordered when the
/// device supports it) on drop. Carries a read and a write event, used for cross-stream
/// ordering as in cudarc (made on first use, see [`BufferEvent`]).
#[derive(Debug)]
pub struct HipSlice<T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) read: BufferEvent,
    pub(crate) write: BufferEvent,
    pub(crate) stream: Arc<HipStream>,
    pub(crate) marker: PhantomData<*const T>,
}
unsafe impl<T> Send for HipSlice<T> {}
unsafe impl<T> Sync for HipSlice<T> {}

impl<T> Drop for HipSlice<T> {
    fn drop(&mut self) {
        let (ctx, stream) = (&self.stream.ctx, &self.stream);
        // other streams' pending uses of the buffer: only tracked with several streams (as in cudarc)
        if ctx.is_managing_stream_synchronization() {
            for event in [&self.read, &self.write] {
                ctx.record_err(event.wait_on(stream));
            }
        }
        if self.ptr == 0 {
            return;
        }
        let ptr = self.ptr as *mut std::ffi::c_void;
        if ctx.has_async_alloc {
            // the stream names the device: no hipSetDevice (cudarc's drop binds nothing either)
            ctx.record_err(check(unsafe { hip::hipFreeAsync(ptr, stream.stream) }));
        } else {
            ctx.record_err(ctx.bind_to_thread());
            ctx.record_err(stream.synchronize());
            ctx.record_err(check(unsafe { hip::hipFree(ptr) }));
        }
    }
}

/// A borrowed, read-only range of a [`HipSlice`].
#[derive(Debug)]
pub struct HipView<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) read: &'a BufferEvent,
    pub(crate) write: &'a BufferEvent,
    pub(crate) stream: &'a Arc<HipStream>,
    pub(crate) marker: PhantomData<&'a [T]>,
}

/// A borrowed, writable range of a [`HipSlice`].
#[derive(Debug)]
pub struct HipViewMut<'a, T> {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) read: &'a BufferEvent,
    pub(crate) write: &'a BufferEvent,
    pub(crate) stream: &'a Arc<HipStream>,
    pub(crate) marker: PhantomData<&'a mut [T]>,
}

/// Resolves `bounds` against a length; `None` when out of range or reversed.
pub(crate) fn to_range(bounds: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match bounds.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match bounds.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

fn bad_range(bounds: (Bound<usize>, Bound<usize>), len: usize) -> ! {
    panic!("range {bounds:?} out of bounds for a device slice of length {len}")
}

/// Methods shared by the three buffer kinds. `$l` is the lifetime of the views that
/// `slice` returns (a view of a `HipView<'a, T>` keeps `'a`, as in cudarc) and `$r`
/// turns a field into the reference stored in the view.
macro_rules! common_methods {
    ($l:lifetime, $($r:tt)*) => {
        /// Number of elements.
        pub fn len(&self) -> usize { self.len }
        pub fn is_empty(&self) -> bool { self.len == 0 }
        pub fn num_bytes(&self) -> usize { self.len * std::mem::size_of::<T>() }
        /// The stream the underlying buffer was allocated on (and is freed on).
        pub fn stream(&self) -> &Arc<HipStream> { &self.stream }
        pub fn context(&self) -> &Arc<HipContext> { &self.stream.ctx }
        pub fn ordinal(&self) -> usize { self.stream.ctx.ordinal }
        /// A read-only view of `bounds` (element indices), `None` if out of range.
        pub fn try_slice(&self, bounds: impl RangeBounds<usize>) -> Option<HipView<$l, T>> {
            let (start, end) = to_range(bounds, self.len)?;
            Some(HipView {
                ptr: self.ptr + (start * std::mem::size_of::<T>()) as u64,
                len: end - start,
                read: $($r)* self.read,
                write: $($r)* self.write,
                stream: $($r)* self.stream,
                marker: PhantomData,
            })
        }
        /// A read-only view of `bounds`.
        ///
        /// # Panics
        /// When the range is out of bounds, like slice indexing.
        pub fn slice(&self, bounds: impl RangeBounds<usize>) -> HipView<$l, T> {
            let b = (bounds.start_bound().cloned(), bounds.end_bound().cloned());
            self.try_slice(b).unwrap_or_else(|| bad_range(b, self.len))
        }
    };
}

macro_rules! mut_methods {
    () => {
        /// A writable view of `bounds`, `None` if out of range.
        pub fn try_slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> Option<HipViewMut<'_, T>> {
            let (start, end) = to_range(bounds, self.len)?;
            Some(HipViewMut {
                ptr: self.ptr + (start * std::mem::size_of::<T>()) as u64,
                len: end - start,
                read: &self.read,
                write: &self.write,
                stream: &self.stream,
                marker: PhantomData,
            })
        }
        /// A writable view of `bounds`.
        ///
        /// # Panics
        /// When the range is out of bounds, like slice indexing.
        pub fn slice_mut(&mut self, bounds: impl RangeBounds<usize>) -> HipViewMut<'_, T> {
            let (b, len) = ((bounds.start_bound().cloned(), bounds.end_bound().cloned()), self.len);
            self.try_slice_mut(b).unwrap_or_else(|| bad_range(b, len))
        }
    };
}

impl<T> HipSlice<T> {
    /// cudarc's `leak`: the device pointer, which this slice no longer frees (its events
    /// are still waited for and released).
    pub fn leak(mut self) -> sys::CUdeviceptr {
        std::mem::replace(&mut self.ptr, 0)
    }
    common_methods!('_, &);
    mut_methods!();
    pub fn as_view(&self) -> HipView<'_, T> { self.slice(..) }
    pub fn as_view_mut(&mut self) -> HipViewMut<'_, T> { self.slice_mut(..) }
    /// Reinterprets the first `len` elements of type `S`; `None` if that exceeds the
    /// buffer's size in bytes.
    ///
    /// # Safety
    /// The bytes must be valid values of `S`.
    pub unsafe fn transmute<S>(&self, len: usize) -> Option<HipView<'_, S>> {
        (len * std::mem::size_of::<S>() <= self.num_bytes()).then_some(HipView {
            ptr: self.ptr,
            len,
            read: &self.read,
            write: &self.write,
            stream: &self.stream,
            marker: PhantomData,
        })
    }
}

impl<'a, T> HipView<'a, T> {
    common_methods!('a,);
}

impl<T> HipViewMut<'_, T> {
    common_methods!('_,);
    mut_methods!();
    pub fn as_view(&self) -> HipView<'_, T> { self.slice(..) }
}

impl<T: DeviceRepr> HipSlice<T> {
    /// A new buffer on the same stream holding a device-side copy of this one.
    pub fn try_clone(&self) -> Result<Self, HipError> { self.stream.clone_dtod(self) }
}

/// Deep copy, as in cudarc. `Clone` cannot return an error: if the allocation or the
/// copy fails, the error is stored in the context (see [`HipContext::check_err`]) and
/// an empty slice is returned. Prefer [`HipSlice::try_clone`].
impl<T: DeviceRepr> Clone for HipSlice<T> {
    fn clone(&self) -> Self {
        match self.try_clone() {
            Ok(s) => s,
            Err(e) => {
                self.stream.ctx.record_err::<()>(Err(e));
                HipSlice {
                    ptr: 0,
                    len: 0,
                    read: BufferEvent::new(false),
                    write: BufferEvent::new(false),
                    stream: self.stream.clone(),
                    marker: PhantomData,
                }
            }
        }
    }
}

/// Abstraction over [`HipSlice`], [`HipView`] and [`HipViewMut`].
pub trait DeviceSlice<T> {
    fn len(&self) -> usize;
    fn num_bytes(&self) -> usize { self.len() * std::mem::size_of::<T>() }
    fn is_empty(&self) -> bool { self.len() == 0 }
    fn stream(&self) -> &Arc<HipStream>;
}

/// Deferred synchronization returned with device pointers and host slices: on drop it
/// records the buffer's event on the stream that used it, or synchronizes a stream.
#[derive(Debug)]
#[must_use]
pub enum SyncOnDrop<'a> {
    Record(Option<(&'a BufferEvent, &'a HipStream)>),
    Sync(Option<&'a HipStream>),
}

impl<'a> SyncOnDrop<'a> {
    pub fn record_event(event: &'a BufferEvent, stream: &'a HipStream) -> Self {
        SyncOnDrop::Record(Some((event, stream)))
    }
    pub fn sync_stream(stream: &'a HipStream) -> Self { SyncOnDrop::Sync(Some(stream)) }
}

impl Drop for SyncOnDrop<'_> {
    fn drop(&mut self) {
        match self {
            SyncOnDrop::Record(target) => {
                // events order uses across streams: with one stream, stream order suffices (as in cudarc)
                if let Some((event, stream)) = target.take().filter(|(_, s)| s.ctx.is_managing_stream_synchronization()) {
                    stream.ctx.record_err(event.record(stream));
                }
            }
            SyncOnDrop::Sync(target) => {
                if let Some(stream) = target.take() {
                    stream.ctx.record_err(stream.synchronize());
                }
            }
        }
    }
}

/// Read access to device memory: the returned pointer may be used on `stream` until
/// the guard is dropped (after the read is queued).
pub trait DevicePtr<T>: DeviceSlice<T> {
    fn device_ptr<'a>(&'a self, stream: &'a HipStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}
/// Write access to device memory, see [`DevicePtr`].
pub trait DevicePtrMut<T>: DeviceSlice<T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a HipStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>);
}

/// Makes `stream` wait for the given events when the context manages cross-stream
/// synchronization.
fn wait_for(owner: &HipStream, stream: &HipStream, events: &[&BufferEvent]) {
    if owner.ctx.is_managing_stream_synchronization() {
        for event in events {
            stream.ctx.record_err(event.wait_on(stream));
        }
    }
}

macro_rules! impl_device_traits {
    ($ty:ty, $($mut_impl:ident)?) => {
        impl<T> DeviceSlice<T> for $ty {
            fn len(&self) -> usize { self.len }
            fn stream(&self) -> &Arc<HipStream> { &self.stream }
        }
        impl<T> DevicePtr<T> for $ty {
            fn device_ptr<'a>(&'a self, stream: &'a HipStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
                wait_for(&self.stream, stream, &[&self.write]);
                (self.ptr, SyncOnDrop::record_event(&self.read, stream))
            }
        }
        $(impl_device_traits!(@$mut_impl $ty);)?
    };
    (@mutable $ty:ty) => {
        impl<T> DevicePtrMut<T> for $ty {
            fn device_ptr_mut<'a>(&'a mut self, stream: &'a HipStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
                wait_for(&self.stream, stream, &[&self.read, &self.write]);
                (self.ptr, SyncOnDrop::record_event(&self.write, stream))
            }
        }
    };
}
impl_device_traits!(HipSlice<T>, mutable);
impl_device_traits!(HipView<'_, T>,);
impl_device_traits!(HipViewMut<'_, T>, mutable);

/// Host memory usable as a copy source/destination: `[T]`, `[T; N]`, `Vec<T>`.
/// All are pageable memory, so copies involving them synchronize the stream (see
/// `HipStream::memcpy_htod`).
pub trait HostSlice<T> {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool { self.len() == 0 }
    /// # Safety
    /// The slice may only be used with `stream` while the guard lives.
    unsafe fn stream_synced_slice<'a>(&'a self, stream: &'a HipStream) -> (&'a [T], SyncOnDrop<'a>);
    /// # Safety
    /// As [`HostSlice::stream_synced_slice`].
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        stream: &'a HipStream,
    ) -> (&'a mut [T], SyncOnDrop<'a>);
}

macro_rules! impl_host_slice {
    ($([$($gen:tt)*] $ty:ty),*) => {$(
        impl<T, $($gen)*> HostSlice<T> for $ty {
            fn len(&self) -> usize { <[T]>::len(self) }
            unsafe fn stream_synced_slice<'a>(&'a self, _: &'a HipStream) -> (&'a [T], SyncOnDrop<'a>) {
                (self, SyncOnDrop::Sync(None))
            }
            unsafe fn stream_synced_mut_slice<'a>(&'a mut self, _: &'a HipStream) -> (&'a mut [T], SyncOnDrop<'a>) {
                (self, SyncOnDrop::Sync(None))
            }
        }
    )*};
}
impl_host_slice!([] [T], [const N: usize] [T; N], [] Vec<T>);
