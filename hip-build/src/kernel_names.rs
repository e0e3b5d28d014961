//! Kernel parity, by name: every kernel the CUDA build exports must exist in the AMD build.
//!
//! The reference list (`tests/fixtures/cuda-kernels-<version>.txt`) has lines
//! `kernel MODULE NAME` (the `.entry` names of the PTX module MODULE) and
//! `launcher NAME` (the `extern "C"` host launchers of the static library).

use std::collections::{BTreeMap, BTreeSet};

/// The kernel names of a CUDA build.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reference {
    /// Module (file stem, e.g. `affine` or `mmq_gguf/mmq_quantize`) → kernels.
    pub kernels: BTreeMap<String, BTreeSet<String>>,
    pub launchers: BTreeSet<String>,
}

impl Reference {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut r = Reference::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["kernel", module, name] => {
                    r.kernels.entry(module.to_string()).or_default().insert(name.to_string());
                }
                ["launcher", name] => {
                    r.launchers.insert(name.to_string());
                }
                _ => return Err(format!("line {}: expected `kernel MODULE NAME` or `launcher NAME`, got `{line}`", n + 1)),
            }
        }
        Ok(r)
    }

    pub fn kernel_count(&self) -> usize {
        self.kernels.values().map(BTreeSet::len).sum()
    }
}

/// What one arch of the AMD build is missing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ParityReport {
    pub present: usize,
    pub total: usize,
    /// `module/kernel` names absent from the code objects.
    pub missing: Vec<String>,
}

/// Compares the kernels found per module in one arch's code objects with the reference.
pub fn kernel_parity(reference: &Reference, found: &BTreeMap<String, BTreeSet<String>>) -> ParityReport {
    let mut report = ParityReport { total: reference.kernel_count(), ..Default::default() };
    for (module, names) in &reference.kernels {
        let have = found.get(module);
        for name in names {
            if have.is_some_and(|h| h.contains(name)) {
                report.present += 1;
            } else {
                report.missing.push(format!("{module}/{name}"));
            }
        }
    }
    report
}

/// Compares the host functions of the static-library objects with the reference launchers.
pub fn launcher_parity(reference: &Reference, host_functions: &BTreeSet<String>) -> ParityReport {
    let missing: Vec<String> = reference.launchers.difference(host_functions).cloned().collect();
    ParityReport { present: reference.launchers.len() - missing.len(), total: reference.launchers.len(), missing }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_compares() {
        let r = Reference::parse("# c\nkernel affine affine_f32\nkernel affine affine_bf16\nlauncher launch_x\n").unwrap();
        assert_eq!(r.kernel_count(), 2);
        let found = BTreeMap::from([("affine".to_string(), BTreeSet::from(["affine_f32".to_string()]))]);
        let rep = kernel_parity(&r, &found);
        assert_eq!((rep.present, rep.total, rep.missing), (1, 2, vec!["affine/affine_bf16".to_string()]));
        let l = launcher_parity(&r, &BTreeSet::from(["launch_x".to_string()]));
        assert_eq!((l.present, l.total), (1, 1));
    }

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(Reference::parse("kernel x\n").unwrap_err(), "line 1: expected `kernel MODULE NAME` or `launcher NAME`, got `kernel x`");
    }
}

/// Parity of a whole kernel build: per arch, and for the launchers.
#[derive(Debug)]
pub struct BuildParity {
    pub per_arch: Vec<(String, ParityReport)>,
    pub launchers: ParityReport,
}

impl BuildParity {
    pub fn complete(&self) -> bool {
        self.launchers.missing.is_empty() && self.per_arch.iter().all(|(_, r)| r.missing.is_empty())
    }
}

/// Reads the kernels of every code object (module = path under `kernels_dir`
/// without extension) for each arch, and the host functions of every object,
/// and compares them with `reference`.
pub fn check_build(
    reference: &Reference,
    results: &[crate::JobResult],
    kernels_dir: &std::path::Path,
    arches: &[String],
) -> Result<BuildParity, crate::HipBuildError> {
    use crate::{code_object, OutputKind};
    let mut per_arch = Vec::new();
    for arch in arches {
        let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in results.iter().filter(|r| r.job.kind == OutputKind::CodeObject) {
            let rel = r.job.source.strip_prefix(kernels_dir).unwrap_or(&r.job.source).with_extension("");
            let module = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
            found.insert(module, code_object::kernel_symbols(&r.job.output, arch)?);
        }
        per_arch.push((arch.clone(), kernel_parity(reference, &found)));
    }
    let mut host = BTreeSet::new();
    for r in results.iter().filter(|r| r.job.kind == OutputKind::Object) {
        host.extend(code_object::host_functions(&r.job.output)?);
    }
    Ok(BuildParity { per_arch, launchers: launcher_parity(reference, &host) })
}
