//! Device memory: allocation (plain and stream-ordered), copies and memset.
//!
//! Device pointers are `CUdeviceptr`s. As in HIP, a zero-byte allocation yields a
//! null pointer and success, freeing null succeeds, and zero-byte copies and
//! memsets do nothing. Copies of every `hipMemcpyKind` go through `cuMemcpyAsync`,
//! which infers the direction from the addresses (unified addressing).
use crate::context::{current, primary};
use crate::status::{cu, hipErrorInvalidMemcpyDirection, hipErrorInvalidValue};
use crate::{hipError_t, hip_call};
use cudarc::driver::sys::{self as cuda, CUdeviceptr, CUstream};
use std::ffi::{c_int, c_void};

/// `hipMemcpyDefault`: the largest `hipMemcpyKind` (HostToHost 0 ... Default 4).
pub const hipMemcpyDefault: u32 = 4;

fn dptr(p: *const c_void) -> CUdeviceptr {
    p as usize as CUdeviceptr
}

/// Shared by `hipMalloc` and `hipMallocAsync`.
unsafe fn alloc(
    ptr: *mut *mut c_void, size: usize, f: impl FnOnce(&mut CUdeviceptr) -> cuda::CUresult,
) -> Result<(), hipError_t> {
    if ptr.is_null() {
        return Err(hipErrorInvalidValue);
    }
    *ptr = std::ptr::null_mut();
    if size == 0 {
        return Ok(());
    }
    current()?;
    let mut d: CUdeviceptr = 0;
    cu(f(&mut d))?;
    *ptr = d as usize as *mut c_void;
    Ok(())
}

pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> hipError_t {
    hip_call(|| alloc(ptr, size, |d| cuda::cuMemAlloc_v2(d, size)))
}

pub unsafe extern "C" fn hipFree(ptr: *mut c_void) -> hipError_t {
    hip_call(|| {
        if ptr.is_null() {
            return Ok(());
        }
        current()?;
        cu(cuda::cuMemFree_v2(dptr(ptr)))
    })
}

pub unsafe extern "C" fn hipMallocAsync(
    ptr: *mut *mut c_void, size: usize, stream: CUstream,
) -> hipError_t {
    hip_call(|| alloc(ptr, size, |d| cuda::cuMemAllocAsync(d, size, stream)))
}

pub unsafe extern "C" fn hipFreeAsync(ptr: *mut c_void, stream: CUstream) -> hipError_t {
    hip_call(|| {
        if ptr.is_null() {
            return Ok(());
        }
        current()?;
        cu(cuda::cuMemFreeAsync(dptr(ptr), stream))
    })
}

pub unsafe extern "C" fn hipMemcpyAsync(
    dst: *mut c_void, src: *const c_void, size: usize, kind: u32, stream: CUstream,
) -> hipError_t {
    hip_call(|| {
        if kind > hipMemcpyDefault {
            return Err(hipErrorInvalidMemcpyDirection);
        }
        if size == 0 {
            return Ok(());
        }
        current()?;
        cu(cuda::cuMemcpyAsync(dptr(dst), dptr(src), size, stream))
    })
}

/// Copy between devices, through the devices' primary contexts.
pub unsafe extern "C" fn hipMemcpyPeerAsync(
    dst: *mut c_void, dst_device: c_int, src: *const c_void, src_device: c_int, size: usize,
    stream: CUstream,
) -> hipError_t {
    hip_call(|| {
        if size == 0 {
            return Ok(());
        }
        current()?;
        let (dst_ctx, src_ctx) = (primary(dst_device)?, primary(src_device)?);
        cu(cuda::cuMemcpyPeerAsync(dptr(dst), dst_ctx, dptr(src), src_ctx, size, stream))
    })
}

/// Sets `size` bytes to the low byte of `value`.
pub unsafe extern "C" fn hipMemsetAsync(
    dst: *mut c_void, value: c_int, size: usize, stream: CUstream,
) -> hipError_t {
    hip_call(|| {
        if size == 0 {
            return Ok(());
        }
        current()?;
        cu(cuda::cuMemsetD8Async(dptr(dst), value as u8, size, stream))
    })
}

/// Free and total memory of the current device (`cuMemGetInfo`).
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> hipError_t {
    hip_call(|| {
        if free.is_null() || total.is_null() {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuMemGetInfo_v2(free, total))
    })
}

hip_exports! {
    "hip_4.2": hipMalloc, hipFree, hipMemcpyAsync, hipMemcpyPeerAsync, hipMemsetAsync, hipMemGetInfo;
    "hip_5.1": hipMallocAsync, hipFreeAsync;
}
