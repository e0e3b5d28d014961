//! candle-core's (and candle-nn's) Rust CUDA code mirrored as ROCm code.
//!
//! A crate is walked from `src/lib.rs` along its `mod` declarations
//! ([`crate_walk`]); each file is handled in one of three ways:
//!
//! * **twin** (the default): every CUDA-specific node gets a ROCm twin right
//!   after it ([`twin_file`], the passes of [`mirror::TWIN_PASSES`]); a file
//!   with nothing CUDA-specific is copied as is;
//! * **verbatim**: a CUDA-only module (reached through a `mod` declaration
//!   that was twinned, e.g. `cuda_backend/`) is kept as upstream wrote it;
//! * **mirror**: that module's twin (`rocm_backend/`) is the whole file
//!   rewritten ([`mirror_file`]: the token rules, then [`mirror::MIRROR_PASSES`]).
//!
//! Rewriting is on token streams ([`rules`], data in [`mapping`]), so macro
//! bodies are rewritten like any other code; the result is re-parsed, pruned
//! of what has no ROCm counterpart ([`prune`], by [`cfg`]), and printed with
//! `prettyplease`. Each pass is a row of a table ([`pass::Pass`]), counted once.

pub mod branch_twins;
pub mod build_tools;
pub mod cfg;
pub mod code_object_inputs;
pub mod crate_walk;
pub mod cuda_gates;
pub mod cuda_names;
pub mod device_predicates;
pub mod elementwise_launches;
pub mod field_inits;
pub mod gaps;
pub mod mapping;
pub mod mirror;
pub mod node_attrs;
pub mod nvidia_tools;
pub mod own_kernel_builds;
pub mod package;
pub mod pass;
pub mod provenance;
pub mod prune;
pub mod replacements;
pub mod rules;
pub mod skip_without_device;
pub mod test_device_macro;
pub mod twins;
pub mod upstream_repairs;
pub mod wave_launches;

pub use crate_walk::{mirror_crate, mirror_targets, CrateMirror, TargetRoot};
pub use gaps::{describe, Gap};
pub use mirror::{mirror_file, twin_file, twin_file_of, MirroredFile};
