//! candle-kernels CUDA (`.cu`, `.cuh`) to HIP (`.hip`, `.cuh`).
//!
//! Each file is lexed, then every rule in [`rules::PIPELINE`] runs in order;
//! the last one, `residue-check`, fails on anything CUDA-only that is left.

pub mod compile_flags;
pub mod mapping;
pub mod rules;

use std::collections::BTreeMap;

use crate::{TranslateError, TreeFile};

/// What the translator needs to know about the inputs besides their text.
#[derive(Debug, Clone)]
pub struct KernelContext {
    /// Shown in the first line of every generated file, e.g. `candle-kernels 0.11.1`.
    pub source_label: String,
}

/// The translated tree and what the rules did to it.
#[derive(Debug, Clone, Default)]
pub struct KernelOutput {
    /// Output files (translated sources plus the compat headers), sorted by path.
    pub files: Vec<TreeFile>,
    /// How often each named rule rewrote something, over all files.
    pub rule_counts: BTreeMap<&'static str, usize>,
}

/// Translates a whole candle-kernels `src/` tree. `inputs` holds every `.cu`
/// and `.cuh` file with its path relative to `src/`; the output paths are
/// relative to `generated/kernels/`. Fails on the first construct no rule
/// covers, naming file, line and construct.
pub fn translate_tree(inputs: &[TreeFile], ctx: &KernelContext) -> Result<KernelOutput, TranslateError> {
    rules::run_pipeline(inputs, ctx)
}
