//! Kernel launches: [`LaunchConfig`] and the [`LaunchArgs`] builder.
use super::context::{BufferEvent, HipEvent, HipStream};
use super::module::HipFunction;
use super::result::{check, HipError};
use super::slice::{DeviceRepr, HipSlice, HipView, HipViewMut};
use super::sys::{self, hip};
use std::ffi::c_void;

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid_dim: (u32, u32, u32),
    pub block_dim: (u32, u32, u32),
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// Threads per block used by [`LaunchConfig::for_num_elems`] (as in cudarc).
    pub const NUM_THREADS: u32 = 1024;
    /// One thread per element: 1024-thread blocks, `ceil(n / 1024)` blocks.
    pub fn for_num_elems(n: u32) -> Self {
        Self {
            grid_dim: (n.div_ceil(Self::NUM_THREADS), 1, 1),
            block_dim: (Self::NUM_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Bytes a thread moves per load in the elementwise kernels' contiguous loops
    /// (`candle_ew_map1/2` of the kernels' compat header `candle_elementwise.h`).
    pub const PACK_BYTES: usize = 16;

    /// The elementwise kernels (unary, affine, binary, cast): one thread per 16-byte
    /// pack of the widest element (`elem_bytes`) when `packed` (the layout is
    /// contiguous and starts at a multiple of 16 bytes, so the kernel takes its pack
    /// loop), else one thread per element as [`LaunchConfig::for_num_elems`]. The
    /// kernels loop over the grid, so any grid is correct; this one leaves no block
    /// without work. An element of no size (a sub-byte dtype) or wider than a pack gets
    /// one thread per element.
    pub fn for_packed_elems(n: u32, elem_bytes: usize, packed: bool) -> Self {
        let per_pack = match elem_bytes {
            1..=Self::PACK_BYTES if packed => (Self::PACK_BYTES / elem_bytes) as u32,
            _ => 1,
        };
        Self::for_num_elems(n.div_ceil(per_pack))
    }
}

/// Arguments of one launch of `func` on `stream`. Each argument is kept as a pointer
/// to the value (`kernelParams` of `hipModuleLaunchKernel`), so the values must
/// outlive the builder, which the lifetimes enforce.
#[derive(Debug)]
pub struct LaunchArgs<'a> {
    pub(crate) stream: &'a HipStream,
    pub(crate) func: &'a HipFunction,
    pub(crate) waits: Vec<&'a BufferEvent>,
    pub(crate) records: Vec<&'a BufferEvent>,
    pub(crate) args: Vec<*mut c_void>,
    pub(crate) flags: Option<sys::CUevent_flags>,
}

impl HipStream {
    pub fn launch_builder<'a>(&'a self, func: &'a HipFunction) -> LaunchArgs<'a> {
        LaunchArgs { stream: self, func, waits: vec![], records: vec![], args: Vec::with_capacity(16), flags: None }
    }
}

/// Pushing one kernel argument.
///
/// # Safety
/// Implementations must push a pointer to data laid out as the kernel expects.
pub unsafe trait PushKernelArg<T> {
    fn arg(&mut self, arg: T) -> &mut Self;
}

unsafe impl<'a, 'b: 'a, T: DeviceRepr> PushKernelArg<&'b T> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b T) -> &mut Self {
        self.args.push(arg as *const T as *mut c_void);
        self
    }
}

impl<'a> LaunchArgs<'a> {
    /// Pushes a device pointer, registering the buffer's events: a read waits for the
    /// last write and records the read event; a write waits for both and records the
    /// write event.
    fn push_buffer(
        &mut self,
        ptr: &'a sys::CUdeviceptr,
        read: &'a BufferEvent,
        write: &'a BufferEvent,
        mutable: bool,
    ) -> &mut Self {
        if self.stream.ctx.is_managing_stream_synchronization() {
            if mutable {
                self.waits.extend([read, write]);
                self.records.push(write);
            } else {
                self.waits.push(write);
                self.records.push(read);
            }
        }
        self.args.push(ptr as *const sys::CUdeviceptr as *mut c_void);
        self
    }
}

unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b HipSlice<T>> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b HipSlice<T>) -> &mut Self {
        self.push_buffer(&arg.ptr, &arg.read, &arg.write, false)
    }
}
unsafe impl<'a, 'b: 'a, T> PushKernelArg<&'b mut HipSlice<T>> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b mut HipSlice<T>) -> &mut Self {
        let arg: &'b HipSlice<T> = arg;
        self.push_buffer(&arg.ptr, &arg.read, &arg.write, true)
    }
}
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b HipView<'c, T>> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b HipView<'c, T>) -> &mut Self {
        self.push_buffer(&arg.ptr, arg.read, arg.write, false)
    }
}
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b mut HipViewMut<'c, T>> for LaunchArgs<'a> {
    fn arg(&mut self, arg: &'b mut HipViewMut<'c, T>) -> &mut Self {
        let arg: &'b HipViewMut<'c, T> = arg;
        self.push_buffer(&arg.ptr, arg.read, arg.write, true)
    }
}

impl LaunchArgs<'_> {
    /// Record events (with `flags`) around the kernel; [`LaunchArgs::launch`] then
    /// returns them.
    pub fn record_kernel_launch(&mut self, flags: sys::CUevent_flags) -> &mut Self {
        self.flags = Some(flags);
        self
    }

    /// Launches the kernel (`hipModuleLaunchKernel`).
    ///
    /// # Safety
    /// The pushed arguments must match the kernel's parameters in number, order and
    /// type, and the configuration must be valid for it.
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<Option<(HipEvent, HipEvent)>, HipError> {
        self.stream.ctx.bind_to_thread()?;
        for event in self.waits.iter() {
            event.wait_on(self.stream)?;
        }
        let start = self.flags.map(|f| self.stream.record_event(Some(f))).transpose()?;
        let (g, b) = (cfg.grid_dim, cfg.block_dim);
        let params = if self.args.is_empty() { std::ptr::null_mut() } else { self.args.as_mut_ptr() };
        check(hip::hipModuleLaunchKernel(
            self.func.function,
            g.0,
            g.1,
            g.2,
            b.0,
            b.1,
            b.2,
            cfg.shared_mem_bytes,
            self.stream.stream,
            params,
            std::ptr::null_mut(),
        ))?;
        let end = self.flags.map(|f| self.stream.record_event(Some(f))).transpose()?;
        for event in self.records.iter() {
            event.record(self.stream)?;
        }
        Ok(start.zip(end))
    }
}
