//! The translation steps of `cargo xtask regen`. Each step reads upstream
//! sources and contributes the files of its own subtree of generated/; regen
//! runs them all and assembles one in-memory tree.
//!
//! Today there is one step, `kernels` (candle-kernels → `generated/kernels/`).
//! The candle-core backend step (→ `generated/candle-core/`) is added to
//! [`STEPS`] as another function of type [`Step`].

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use translator::kernels::{translate_tree, KernelContext};
use translator::TreeFile;

use crate::upstream::Upstream;
use crate::{hipify, tree};

/// What one step read and made.
#[derive(Debug, Clone, Default)]
pub struct StepOutput {
    /// Name in the report and in the manifest's `[rule_counts.<name>]`.
    pub name: &'static str,
    /// Every input as recorded in the manifest, sorted: `(path, bytes)` with
    /// the path relative to the crate's parent, e.g. `candle-kernels/src/affine.cu`.
    pub inputs: Vec<(String, Vec<u8>)>,
    /// Output files with paths relative to generated/, e.g. `kernels/affine.hip`.
    pub files: Vec<(String, Vec<u8>)>,
    /// How often each named rule rewrote something.
    pub rule_counts: BTreeMap<&'static str, usize>,
    /// Lines for the run report only (never written to generated/).
    pub notes: Vec<String>,
}

/// A translation step.
pub type Step = fn(&Upstream) -> Result<StepOutput>;

/// Every step, in order. Their output subtrees must not overlap.
pub const STEPS: &[Step] = &[kernels];

/// candle-kernels `src/**/*.{cu,cuh}` → `generated/kernels/`.
///
/// The native rules always translate the original sources and that result is
/// what gets written. When hipify-perl is installed, its output is translated
/// too and must give the very same files: the native pass is idempotent on
/// HIP input, so generated/ is identical with or without hipify-perl.
pub fn kernels(upstream: &Upstream) -> Result<StepOutput> {
    let krate = &upstream.kernels;
    let src = krate.root.join("src");
    let files = cuda_sources(&src)?;
    if files.is_empty() {
        bail!("{}: no .cu or .cuh files in src/", krate.name);
    }
    let ctx = KernelContext { source_label: format!("{} {}", krate.name, krate.version) };
    let output = translate_tree(&files, &ctx).map_err(|e| anyhow!("translation failed: {e}"))?;

    let notes = match hipify::find() {
        None => vec!["hipify-perl first pass: no (not on PATH nor in $ROCM_PATH/bin): native rules only".to_string()],
        Some(hipify) => {
            let mut hipified = Vec::with_capacity(files.len());
            for f in &files {
                hipified.push(TreeFile { rel_path: f.rel_path.clone(), contents: hipify::run(&hipify, &src.join(&f.rel_path))? });
            }
            let via = translate_tree(&hipified, &ctx).map_err(|e| anyhow!("translation failed (on hipify-perl output): {e}"))?;
            if let Some(problem) = first_difference(&output.files, &via.files) {
                bail!("hipify-perl changes the translation: some rule is not idempotent on HIP input: {problem}");
            }
            vec![format!("hipify-perl first pass: yes ({}), output identical to the native pass", hipify.display())]
        }
    };

    Ok(StepOutput {
        name: "kernels",
        inputs: files.iter().map(|f| (format!("{}/src/{}", krate.name, f.rel_path), f.contents.clone())).collect(),
        files: output.files.into_iter().map(|f| (format!("kernels/{}", f.rel_path), f.contents)).collect(),
        rule_counts: output.rule_counts,
        notes,
    })
}

/// Every `.cu`/`.cuh` under `src`, sorted by `/`-separated relative path, bytes as read.
pub fn cuda_sources(src: &Path) -> Result<Vec<TreeFile>> {
    Ok(tree::read_tree(src)?
        .into_iter()
        .filter(|(p, _)| p.ends_with(".cu") || p.ends_with(".cuh"))
        .map(|(rel_path, contents)| TreeFile { rel_path, contents })
        .collect())
}

/// The first file that differs between two translations, with a short diff.
fn first_difference(native: &[TreeFile], via_hipify: &[TreeFile]) -> Option<String> {
    let a: BTreeMap<_, _> = native.iter().map(|f| (f.rel_path.as_str(), &f.contents)).collect();
    let b: BTreeMap<_, _> = via_hipify.iter().map(|f| (f.rel_path.as_str(), &f.contents)).collect();
    if let Some(p) = a.keys().find(|p| !b.contains_key(*p)) {
        return Some(format!("{p} is missing from the translation of hipify-perl's output"));
    }
    if let Some(p) = b.keys().find(|p| !a.contains_key(*p)) {
        return Some(format!("{p} appears only in the translation of hipify-perl's output"));
    }
    let (path, x) = a.iter().find(|(p, x)| b[*p] != **x)?;
    Some(format!("{path}\n{}", tree::unified_diff(path, x, b[path], 40)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(p: &str, c: &str) -> TreeFile {
        TreeFile { rel_path: p.into(), contents: c.into() }
    }

    #[test]
    fn sources_are_sorted_filtered_and_slash_separated() {
        let dir = tempfile::tempdir().unwrap();
        for (p, c) in [("z.cu", "z"), ("moe/b.cuh", "b"), ("moe/a.cu", "a"), ("lib.rs", "no"), ("a.cu.bak", "no")] {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        let found: Vec<_> = cuda_sources(dir.path()).unwrap().into_iter().map(|f| f.rel_path).collect();
        assert_eq!(found, ["moe/a.cu", "moe/b.cuh", "z.cu"]);
    }

    #[test]
    fn differences_between_translations_are_named() {
        let a = [file("x.hip", "1\n"), file("y.cuh", "2\n")];
        assert_eq!(first_difference(&a, &a.clone()), None);
        let changed = [file("x.hip", "1\n"), file("y.cuh", "3\n")];
        assert!(first_difference(&a, &changed).unwrap().starts_with("y.cuh\n--- a/y.cuh"));
        assert!(first_difference(&a, &a[..1]).unwrap().contains("y.cuh is missing"));
    }
}
