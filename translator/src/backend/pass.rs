//! The shape of a backend pass, as the kernel side's `PIPELINE` rules: a name and
//! a function over a parsed file, what it did counted under its name.

use std::collections::BTreeMap;

use super::gaps::Gap;
use crate::TranslateError;

/// What a pass knows of a file besides its syntax, and where its counts and gaps go.
pub struct FileState<'a> {
    /// The path, for errors and gaps.
    pub file: &'a str,
    /// The provenance label (`candle-core 0.11.1 src/x.rs`).
    pub label: &'a str,
    /// Rewrites per rule name (as `MANIFEST.toml` counts them).
    pub counts: BTreeMap<&'static str, usize>,
    /// What was left out, with the reason.
    pub gaps: Vec<Gap>,
    /// The file is CUDA-only code upstream (its package needs CUDA unconditionally,
    /// its example requires `cuda`): its CUDA items are gated
    /// on the `cuda` feature before they are twinned (rule `cuda-gates`).
    pub gate_cuda: bool,
}

impl<'a> FileState<'a> {
    pub fn new(file: &'a str, label: &'a str) -> Self {
        FileState { file, label, counts: BTreeMap::new(), gaps: Vec::new(), gate_cuda: false }
    }
}

/// One rewrite of a parsed file. What `apply` returns is counted under `name`;
/// a pass whose rewrites carry names of their own (`twins`, `branch-twins`)
/// counts them in [`FileState::counts`] and returns 0.
pub struct Pass {
    pub name: &'static str,
    pub apply: fn(&mut FileState, &mut syn::File) -> Result<usize, TranslateError>,
}

/// Runs `passes` in order over `file`, counting each (the first error stops).
pub fn run(passes: &[Pass], state: &mut FileState, file: &mut syn::File) -> Result<(), TranslateError> {
    for pass in passes {
        let n = (pass.apply)(state, file)?;
        if n > 0 {
            *state.counts.entry(pass.name).or_default() += n;
        }
    }
    Ok(())
}
