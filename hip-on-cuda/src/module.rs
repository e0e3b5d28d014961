//! Modules and kernel launches: `hipModule_t` is `CUmodule`, `hipFunction_t` is
//! `CUfunction`, and the image given to `hipModuleLoadData` is a cubin, fatbin or
//! PTX image (what nvcc makes of the kernels).
use crate::context::current;
use crate::status::{cu, hipErrorInvalidValue};
use crate::{hipError_t, hip_call};
use cudarc::driver::sys::{self as cuda, CUfunction, CUmodule, CUstream};
use std::ffi::{c_char, c_uint, c_void};

pub unsafe extern "C" fn hipModuleLoadData(
    module: *mut CUmodule, image: *const c_void,
) -> hipError_t {
    hip_call(|| {
        if module.is_null() || image.is_null() {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuModuleLoadData(module, image))
    })
}

pub unsafe extern "C" fn hipModuleUnload(module: CUmodule) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuModuleUnload(module))
    })
}

/// A missing kernel is `hipErrorNotFound` (`CUDA_ERROR_NOT_FOUND`).
pub unsafe extern "C" fn hipModuleGetFunction(
    function: *mut CUfunction, module: CUmodule, name: *const c_char,
) -> hipError_t {
    hip_call(|| {
        if function.is_null() || name.is_null() {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuModuleGetFunction(function, module, name))
    })
}

/// `HIP_LAUNCH_PARAM_BUFFER_POINTER`, `_BUFFER_SIZE` and `_END`.
const HIP_PARAM_BUFFER_POINTER: usize = 1;
const HIP_PARAM_BUFFER_SIZE: usize = 2;
const HIP_PARAM_END: usize = 3;
/// `CU_LAUNCH_PARAM_END` (CUDA's pointer and size keys are 1 and 2, as HIP's).
const CU_PARAM_END: usize = 0;

/// Translates a HIP `extra` array (key/value pairs ended by `HIP_LAUNCH_PARAM_END`
/// = 3) into CUDA's (ended by `CU_LAUNCH_PARAM_END` = 0). Unknown keys, or more
/// than 16 entries without an end, are `hipErrorInvalidValue`.
unsafe fn cuda_extra(extra: *mut *mut c_void) -> Result<Vec<*mut c_void>, hipError_t> {
    let mut out = Vec::new();
    for i in (0..16).step_by(2) {
        match *extra.add(i) as usize {
            HIP_PARAM_END => {
                out.push(CU_PARAM_END as *mut c_void);
                return Ok(out);
            }
            key @ (HIP_PARAM_BUFFER_POINTER | HIP_PARAM_BUFFER_SIZE) => {
                out.push(key as *mut c_void);
                out.push(*extra.add(i + 1));
            }
            _ => break,
        }
    }
    Err(hipErrorInvalidValue)
}

/// `cuLaunchKernel` with the same arguments (`kernelParams` passed through,
/// `extra` translated, see `cuda_extra`).
pub unsafe extern "C" fn hipModuleLaunchKernel(
    f: CUfunction, grid_x: c_uint, grid_y: c_uint, grid_z: c_uint, block_x: c_uint,
    block_y: c_uint, block_z: c_uint, shared_mem_bytes: c_uint, stream: CUstream,
    kernel_params: *mut *mut c_void, extra: *mut *mut c_void,
) -> hipError_t {
    hip_call(|| {
        let mut cu_extra = if extra.is_null() { Vec::new() } else { cuda_extra(extra)? };
        let extra_ptr = if extra.is_null() { std::ptr::null_mut() } else { cu_extra.as_mut_ptr() };
        current()?;
        cu(cuda::cuLaunchKernel(
            f,
            grid_x,
            grid_y,
            grid_z,
            block_x,
            block_y,
            block_z,
            shared_mem_bytes,
            stream,
            kernel_params,
            extra_ptr,
        ))
    })
}

hip_exports! {
    "hip_4.2": hipModuleLoadData, hipModuleUnload, hipModuleGetFunction, hipModuleLaunchKernel;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_arrays_are_translated() {
        let (mut buf, mut size) = ([0u8; 8], 8usize);
        let p = |v: usize| v as *mut c_void;
        let (b, s) = (buf.as_mut_ptr() as *mut c_void, &mut size as *mut usize as *mut c_void);
        let mut hip = [p(1), b, p(2), s, p(3)];
        let out = unsafe { cuda_extra(hip.as_mut_ptr()) }.unwrap();
        assert_eq!(out, vec![p(1), b, p(2), s, p(0)]);
        let mut bad = [p(7), b, p(3)];
        assert_eq!(unsafe { cuda_extra(bad.as_mut_ptr()) }, Err(hipErrorInvalidValue));
    }
}
