//! Streams and events: `hipStream_t` is `CUstream` (null: the legacy default
//! stream; `hipStreamPerThread`, `(hipStream_t)2`, is `CU_STREAM_PER_THREAD`),
//! `hipEvent_t` is `CUevent`. The flag values are the same on both sides (checked
//! by the tests).
use crate::context::current;
use crate::status::{cu, hipErrorInvalidValue};
use crate::{hipError_t, hip_call};
use cudarc::driver::sys::{self as cuda, CUevent, CUstream, CUstreamCaptureStatus};
use std::ffi::c_uint;

/// `hipStreamNonBlocking` (= `CU_STREAM_NON_BLOCKING`); `hipStreamDefault` is 0.
pub const hipStreamNonBlocking: u32 = 1;
/// `hipEventBlockingSync | hipEventDisableTiming | hipEventInterprocess`
/// (= `CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS`);
/// HIP's AMD-only flags are rejected.
pub const EVENT_FLAGS: u32 = 1 | 2 | 4;

pub unsafe extern "C" fn hipStreamCreateWithFlags(
    stream: *mut CUstream, flags: c_uint,
) -> hipError_t {
    hip_call(|| {
        if stream.is_null() || flags & !hipStreamNonBlocking != 0 {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuStreamCreate(stream, flags))
    })
}

pub unsafe extern "C" fn hipStreamDestroy(stream: CUstream) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuStreamDestroy_v2(stream))
    })
}

pub unsafe extern "C" fn hipStreamSynchronize(stream: CUstream) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuStreamSynchronize(stream))
    })
}

/// `flags` must be 0, as in HIP.
pub unsafe extern "C" fn hipStreamWaitEvent(
    stream: CUstream, event: CUevent, flags: c_uint,
) -> hipError_t {
    hip_call(|| {
        if flags != 0 {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuStreamWaitEvent(stream, event, 0))
    })
}

/// Writes the `hipStreamCaptureStatus` (None 0, Active 1, Invalidated 2: the
/// values of `CUstreamCaptureStatus`).
pub unsafe extern "C" fn hipStreamIsCapturing(stream: CUstream, status: *mut u32) -> hipError_t {
    hip_call(|| {
        if status.is_null() {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        let mut s = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        cu(cuda::cuStreamIsCapturing(stream, &mut s))?;
        *status = s as u32;
        Ok(())
    })
}

pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut CUevent, flags: c_uint) -> hipError_t {
    hip_call(|| {
        if event.is_null() || flags & !EVENT_FLAGS != 0 {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuEventCreate(event, flags))
    })
}

pub unsafe extern "C" fn hipEventDestroy(event: CUevent) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuEventDestroy_v2(event))
    })
}

pub unsafe extern "C" fn hipEventRecord(event: CUevent, stream: CUstream) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuEventRecord(event, stream))
    })
}

pub unsafe extern "C" fn hipEventSynchronize(event: CUevent) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuEventSynchronize(event))
    })
}

/// `hipErrorNotReady` while the event's work is pending.
pub unsafe extern "C" fn hipEventQuery(event: CUevent) -> hipError_t {
    hip_call(|| {
        current()?;
        cu(cuda::cuEventQuery(event))
    })
}

/// Milliseconds between two events (`cuEventElapsedTime_v2`, CUDA 12.8+ drivers).
pub unsafe extern "C" fn hipEventElapsedTime(
    ms: *mut f32, start: CUevent, end: CUevent,
) -> hipError_t {
    hip_call(|| {
        if ms.is_null() {
            return Err(hipErrorInvalidValue);
        }
        current()?;
        cu(cuda::cuEventElapsedTime_v2(ms, start, end))
    })
}

hip_exports! {
    "hip_4.2": hipStreamCreateWithFlags, hipStreamDestroy, hipStreamSynchronize, hipStreamWaitEvent,
        hipEventCreateWithFlags, hipEventDestroy, hipEventRecord, hipEventSynchronize, hipEventQuery,
        hipEventElapsedTime;
    "hip_4.3": hipStreamIsCapturing;
}
