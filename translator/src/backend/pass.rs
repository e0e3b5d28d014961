//! The shape of a backend pass, as the kernel side's `PIPELINE` rules: a name and
//! a function over a parsed file, what it did counted under its name.

use std::collections::BTreeMap;

use super::gaps::Gap;
use super::provenance;
use crate::provenance::{LineProvenance, Trace};
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
    /// While [`crate::provenance::recording`]: the file's tokens by source line after each
    /// pass, and the span that tells its source's tokens from those passes made.
    pub trace: Option<(Trace, Option<proc_macro2::Span>)>,
}

impl<'a> FileState<'a> {
    pub fn new(file: &'a str, label: &'a str) -> Self {
        FileState { file, label, counts: BTreeMap::new(), gaps: Vec::new(), gate_cuda: false, trace: None }
    }

    /// Starts the trace of `parsed` (the file as read) when provenance is recorded.
    pub fn trace_from(&mut self, parsed: &syn::File) {
        if crate::provenance::recording() {
            let anchor = provenance::source_anchor(parsed);
            let tokens = provenance::tokens_of(parsed, anchor);
            self.trace = Some((Trace::new(tokens.iter().map(|(l, t)| (*l, t.as_str()))), anchor));
        }
    }

    /// Records in the trace what the stage `stage` did to `file`: each changed source line is
    /// the rules whose counts rose since `before` ([`FileState::counts`] then), else `stage`'s.
    pub fn traced(&mut self, stage: &'static str, before: &BTreeMap<&'static str, usize>, file: &syn::File) {
        let FileState { trace: Some((trace, anchor)), counts, .. } = self else { return };
        let mut fired: Vec<&'static str> = counts.iter().filter(|(k, v)| before.get(*k) != Some(*v)).map(|(k, _)| *k).collect();
        if fired.is_empty() {
            fired.push(stage);
        }
        let tokens = provenance::tokens_of(file, *anchor);
        trace.after_each(tokens.iter().map(|(l, t)| (*l, t.as_str())), |_| fired.clone());
    }

    /// The provenance of `printed` (printed from `file` after the last stage), behind a header
    /// of `header` lines.
    pub fn provenance(&mut self, file: &syn::File, printed: &str, header: usize) -> Option<LineProvenance> {
        let (trace, anchor) = self.trace.take()?;
        let tokens = provenance::tokens_of(file, anchor);
        Some(trace.finish(provenance::printed_lines(&tokens, printed)).after_header(header))
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
        let before = state.trace.is_some().then(|| state.counts.clone());
        let n = (pass.apply)(state, file)?;
        if n > 0 {
            *state.counts.entry(pass.name).or_default() += n;
        }
        if let Some(before) = before {
            state.traced(pass.name, &before, file);
        }
    }
    Ok(())
}
