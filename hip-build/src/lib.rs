//! Building HIP kernels for AMD GPUs with `hipcc`, and checking what was built.
//!
//! Used by `cargo xtask build-kernels` and the AMD compile check in CI, and
//! meant for a `build.rs` that compiles kernels for users.
//!
//! * [`Hipcc::locate`] finds hipcc; [`Hipcc::version`], [`Hipcc::check_arch`]
//!   (compiles an empty kernel for an offload arch, cached).
//! * [`Hipcc::compile`] turns one [`CompileJob`] into a bundled code object
//!   ([`OutputKind::CodeObject`], `--genco`) or a host object with the device
//!   code embedded ([`OutputKind::Object`], `-c -fPIC`, for kernels linked as
//!   a static library), writes a depfile, and fails if any dependency, on the
//!   host or the device side of any arch, is a CUDA header ([`deps`]).
//!   Every command runs with `HIP_PLATFORM=amd`: once CUDA is installed,
//!   Debian's hipcc would otherwise default to the NVIDIA platform.
//! * [`compile_all`] runs many jobs on N threads, with wall time per job; a
//!   job for several arches runs as one device compile per arch (in
//!   parallel) whose bundles are merged ([`code_object::merge_bundles`]).
//! * [`kernel_symbols`] lists the kernels of one arch in either kind of
//!   output ([`code_object`] says how bundles are read).
//! * [`kernel_resources`] reads each kernel's registers, scratch, LDS and
//!   spills from a code object's metadata; [`occupancy`] turns them into
//!   waves per SIMD with a per-arch limits table; [`disassembly`] counts
//!   instructions per kernel (`llvm-objdump -d`).
//! * [`releases`] says which HIP releases are supported ([`releases::check_hip_version`]).
//! * [`build_script`]: hipcc found with an install hint, its release checked, the
//!   arches chosen (`CANDLE_ROCM_ARCHS`, detection, defaults), outputs up to date.
//! * [`cache`] keeps compiled units for every build of the same sources
//!   (`CANDLE_ROCM_KERNELS_CACHE`).
//! * [`plan`] maps a kernel tree to jobs; [`kernel_names`] compares the kernels
//!   built with those of the CUDA build.
//!
//! ```no_run
//! use hip_build::{CompileJob, Hipcc, OutputKind};
//! let hipcc = Hipcc::locate()?;
//! let job = CompileJob {
//!     source: "kernels/affine.hip".into(),
//!     output: "out/affine.co".into(),
//!     kind: OutputKind::CodeObject,
//!     arches: hip_build::arches_from_env().unwrap_or_else(hip_build::default_arches),
//!     include_dirs: vec!["kernels".into()],
//!     extra_flags: vec![],
//! };
//! let built = hipcc.compile(&job)?;
//! for dep in &built.dependencies {
//!     println!("cargo:rerun-if-changed={}", dep.display());
//! }
//! let kernels = hip_build::kernel_symbols(&built.output, "gfx90a")?;
//! # Ok::<(), hip_build::HipBuildError>(())
//! ```

pub mod build_script;
pub mod cache;
pub mod code_object;
mod compile;
pub mod deps;
pub mod disassembly;
mod error;
pub mod kernel_resources;
pub mod occupancy;
pub mod kernel_names;
pub mod plan;
pub mod releases;

pub use code_object::kernel_symbols;
pub use compile::{compile_all, compile_all_with_progress, default_parallelism, CompileJob, CompileOutput, Hipcc, JobResult, OutputKind, STDERR_LINES};
pub use error::HipBuildError;

/// The arches CI compiles for: CDNA2 (wave64) and RDNA2 (wave32), both
/// supported by Debian's HIP 5.2.3.
pub const CI_ARCHES: &[&str] = &["gfx90a", "gfx1030"];

/// Every current AMD GPU generation, one arch each (the ones ROCm 6.4/7.x
/// users run): CDNA2 MI200 (gfx90a), CDNA3 MI300X/MI325X (gfx942), CDNA4
/// MI350/MI355 (gfx950), RDNA2 RX 6000 (gfx1030), RDNA3 RX 7900 (gfx1100) and
/// RX 7800/7700 (gfx1101), RDNA3.5 Strix Halo (gfx1151), RDNA4 RX 9060/9070
/// (gfx1200, gfx1201). What `cargo xtask build-kernels --arch all` compiles
/// and the kernels crate's default list when no GPU is detected (filtered to
/// what the found hipcc supports: HIP 5.2.3 has gfx90a and gfx1030 only).
pub const CURRENT_ARCHES: &[&str] = &["gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1151", "gfx1200", "gfx1201"];

/// [`CI_ARCHES`] as owned strings: `["gfx90a", "gfx1030"]`.
pub fn default_arches() -> Vec<String> {
    CI_ARCHES.iter().map(|a| a.to_string()).collect()
}

/// Arches from `CANDLE_ROCM_ARCHS` (a comma list, blanks ignored), if set and non-empty.
pub fn arches_from_env() -> Option<Vec<String>> {
    parse_arch_list(&std::env::var("CANDLE_ROCM_ARCHS").ok()?)
}

fn parse_arch_list(list: &str) -> Option<Vec<String>> {
    let arches: Vec<String> = list.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect();
    (!arches.is_empty()).then_some(arches)
}

#[cfg(test)]
mod tests {
    #[test]
    fn arch_lists() {
        assert_eq!(super::parse_arch_list(" gfx90a, gfx1100 ,,").unwrap(), ["gfx90a", "gfx1100"]);
        assert_eq!(super::parse_arch_list(" , "), None);
        assert_eq!(super::default_arches(), ["gfx90a", "gfx1030"]);
    }
}
