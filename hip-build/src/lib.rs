//! Building HIP kernels for AMD GPUs, and checking what was built.
//!
//! * [`Hipcc`] finds `hipcc`, validates offload arches and compiles one
//!   source into a bundled code object (`--genco`) or a host object with the
//!   device code embedded (`-c`, for kernels linked as a static library).
//!   Every compile also proves that no CUDA header was included.
//! * [`code_object`] lists the kernels (`NAME.kd` symbols) of one arch in a
//!   code object, and the global functions a host object defines.
//!
//! AMD builds always run with `HIP_PLATFORM=amd`: once CUDA is installed,
//! hipcc would otherwise default to the NVIDIA platform.

pub mod code_object;
mod compile;
mod error;
pub mod parity;
pub mod plan;

pub use compile::{compile_all, CompileJob, Hipcc, JobResult, OutputKind};
pub use error::HipBuildError;

/// The arches CI compiles for: CDNA2 (wave64) and RDNA2 (wave32), both
/// supported by Debian's HIP 5.2.3.
pub const CI_ARCHES: &[&str] = &["gfx90a", "gfx1030"];

/// Arches from `CANDLE_ROCM_ARCHS` (a comma list), if set and non-empty.
pub fn arches_from_env() -> Option<Vec<String>> {
    let list = std::env::var("CANDLE_ROCM_ARCHS").ok()?;
    let arches: Vec<String> = list.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect();
    (!arches.is_empty()).then_some(arches)
}
