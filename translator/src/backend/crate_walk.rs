//! The crate walk: a crate (or a package of several targets) followed from its
//! roots along its `mod` declarations, each file twinned, kept verbatim (a
//! CUDA-only module) or mirrored (that module's ROCm twin), level by level.

use std::collections::{BTreeMap, BTreeSet};

use quote::ToTokens;
use rayon::prelude::*;

use super::cuda_names::{is_cuda_ident, mentions_cuda};
use super::gaps::Gap;
use super::mirror::{mirror_file, parse, twin_file_of, MirroredFile};
use super::node_attrs::item_attrs;
use super::{mapping, rules};
use crate::provenance::LineProvenance;
use crate::TranslateError;

/// How a file of the crate is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Twin,
    Verbatim,
    Mirror,
}

/// A module to translate: input path, output path, how, and whether its
/// target is CUDA-only code (rule `cuda-gates`).
type Queued = (String, String, Mode, bool);

/// A target's root file (`src/lib.rs`, `examples/llama/main.rs`), and whether
/// the target is CUDA-only code upstream (a package that needs CUDA, an
/// example that requires `cuda`): then rule `cuda-gates` gates the CUDA items
/// of every file it reaches before they are twinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRoot {
    pub path: String,
    pub gate_cuda: bool,
}

/// A whole crate's `src/` after mirroring.
#[derive(Debug, Clone, Default)]
pub struct CrateMirror {
    /// Output files, paths relative to the crate root (`src/...`).
    pub files: BTreeMap<String, String>,
    pub rule_counts: BTreeMap<&'static str, usize>,
    pub gaps: Vec<Gap>,
    /// Per mirrored file, the identifiers that still name CUDA.
    pub unmapped: BTreeMap<String, BTreeSet<String>>,
    /// Mirrored file → the upstream file it came from.
    pub mirrored_from: BTreeMap<String, String>,
    /// While [`crate::provenance::recording`]: each output file's provenance, with the input
    /// file its source lines are lines of.
    pub provenance: BTreeMap<String, (String, LineProvenance)>,
}

/// Mirrors a crate: `sources` maps paths relative to the crate root
/// (`src/lib.rs`, ...) to their text; `label` (`candle-core 0.11.1`) names
/// the source in provenance lines. Rust files that no `mod` reaches are
/// copied as they are.
pub fn mirror_crate(sources: &BTreeMap<String, String>, label: &str) -> Result<CrateMirror, TranslateError> {
    mirror_targets(sources, &[TargetRoot { path: "src/lib.rs".to_string(), gate_cuda: false }], label)
}

/// [`mirror_crate`] for a package of several targets: the walk starts at
/// each root (`src/lib.rs`, `examples/llama/main.rs`, ...). A module file
/// that two targets reach is translated once.
pub fn mirror_targets(sources: &BTreeMap<String, String>, roots: &[TargetRoot], label: &str) -> Result<CrateMirror, TranslateError> {
    let mut out = CrateMirror::default();
    let mut level: Vec<Queued> = roots.iter().map(|r| (r.path.clone(), r.path.clone(), Mode::Twin, r.gate_cuda)).collect();
    let mut reached = BTreeSet::new();
    // Module by module, a level of the module tree at a time: the files of one
    // level are translated in parallel and merged in queue order, so the result
    // (and the first error reported) does not depend on the thread count.
    while !level.is_empty() {
        let done: Vec<Result<(MirroredFile, Vec<Queued>), TranslateError>> =
            level.par_iter().map(|(input, output, mode, gate_cuda)| mirror_module(sources, label, input, output, *mode, *gate_cuda)).collect();
        let mut next = Vec::new();
        for ((input, output, mode, _), result) in level.into_iter().zip(done) {
            let (result, children) = result?;
            if !reached.insert(input.clone()) && out.files.get(&output) == Some(&result.text) {
                // a module shared by two targets (`#[path]`-free `mod common;` in one directory)
                continue;
            }
            for (rule, n) in &result.rule_counts {
                *out.rule_counts.entry(rule).or_default() += n;
            }
            out.gaps.extend(result.gaps.iter().cloned());
            if mode == Mode::Mirror {
                if !result.unmapped.is_empty() {
                    out.unmapped.insert(output.clone(), result.unmapped.clone());
                }
                out.mirrored_from.insert(output.clone(), input.clone());
            }
            if let Some(p) = result.provenance {
                out.provenance.insert(output.clone(), (input.clone(), p));
            }
            if out.files.insert(output.clone(), result.text).is_some() {
                return Err(TranslateError::unsupported(&input, 0, "mod", format!("two modules map to {output}")));
            }
            next.extend(children);
        }
        level = next;
    }
    for (path, text) in sources {
        if !reached.contains(path) && !out.files.contains_key(path) {
            out.files.insert(path.clone(), text.clone());
            if crate::provenance::recording() {
                out.provenance.insert(path.clone(), (path.clone(), LineProvenance::identity(text)));
            }
        }
    }
    out.gaps.sort();
    Ok(out)
}

/// The provenance of a file copied as it is, while it is recorded.
fn copied(source: &str) -> Option<LineProvenance> {
    crate::provenance::recording().then(|| LineProvenance::identity(source))
}

/// One module of [`mirror_crate`]: its translation in `mode`, and its child
/// modules (`mod x;`) with the paths and modes they get.
fn mirror_module(sources: &BTreeMap<String, String>, label: &str, input: &str, output: &str, mode: Mode, gate_cuda: bool) -> Result<(MirroredFile, Vec<Queued>), TranslateError> {
    let source = sources.get(input).ok_or_else(|| TranslateError::unsupported(input, 0, "mod", "the module's file is missing"))?;
    let file_label = format!("{label} {input}");
    let release = super::replacements::release(label);
    let untwinned = mapping::UNTWINNED_FILES.iter().find(|(path, _, _, before)| *path == input && release.is_none_or(|r| r < *before));
    let result = match mode {
        Mode::Twin if untwinned.is_some() => {
            let (_, feature, reason, _) = untwinned.expect("checked");
            MirroredFile { text: source.clone(), unmapped: BTreeSet::new(), rule_counts: BTreeMap::new(), gaps: vec![Gap::new(input, 1, "the whole file (no ROCm twins)", feature, reason)], provenance: copied(source) }
        }
        Mode::Twin => twin_file_of(input, &file_label, source, gate_cuda)?,
        Mode::Mirror => mirror_file(input, &file_label, source)?,
        Mode::Verbatim => MirroredFile { text: source.clone(), unmapped: BTreeSet::new(), rule_counts: BTreeMap::new(), gaps: vec![], provenance: copied(source) },
    };
    // children: the `mod x;` declarations of the input, and what became of them
    let declared = file_mods(input, &parse(input, source)?)?;
    let kept: BTreeSet<String> = file_mods(output, &parse(output, &result.text)?)?.into_iter().map(|(name, _)| name).collect();
    let mut children = Vec::new();
    let mut unbound = Vec::new();
    for (name, specific) in declared {
        let Some(child_in) = child_path(input, &name, sources) else {
            return Err(TranslateError::unsupported(input, 0, &format!("mod {name};"), "no file for this module (looked for NAME.rs and NAME/mod.rs)"));
        };
        let child_out = out_child_path(output, &name, &child_in);
        // a module binding a CUDA library the HIP layer lacks stays as upstream wrote it
        if let (Some((_, reason)), Mode::Twin | Mode::Mirror) = (rules::names_unbound_library(&name), mode) {
            let line = source.lines().position(|l| l.contains(&format!("mod {name};"))).map_or(1, |n| n as u32 + 1);
            unbound.push(Gap::new(input, line, &format!("mod {name} (the whole module, no ROCm twins)"), &name, reason));
            if mode == Mode::Twin {
                children.push((child_in, child_out, Mode::Verbatim, gate_cuda));
            }
            continue;
        }
        let mirror_twin = |children: &mut Vec<_>| {
            let (twin_name, _) = rules::rename(&name);
            if kept.contains(&twin_name) {
                children.push((child_in.clone(), out_child_path(output, &twin_name, &child_in_named(input, &name, sources)), Mode::Mirror, gate_cuda));
            }
        };
        match mode {
            // a CUDA-gated module whose name no rule renames (`#[cfg(feature = "cuda")] mod paged_attention;`):
            // its ROCm twin declares the same file, so that one file serves both, twinned in place; its
            // CUDA items are CUDA-only code there (rule `cuda-gates`: an `extern "C"` block taking a
            // `CUstream` gets a CUDA gate and a ROCm twin)
            Mode::Twin if specific && rules::rename(&name).0 == name => children.push((child_in, child_out, Mode::Twin, true)),
            Mode::Twin if specific => {
                children.push((child_in.clone(), child_out, Mode::Verbatim, gate_cuda));
                mirror_twin(&mut children);
            }
            Mode::Twin => children.push((child_in, child_out, Mode::Twin, gate_cuda)),
            Mode::Verbatim => children.push((child_in, child_out, Mode::Verbatim, gate_cuda)),
            Mode::Mirror => mirror_twin(&mut children),
        }
    }
    let mut result = result;
    result.gaps.extend(unbound);
    Ok((result, children))
}

/// `mod x;` declarations at a file's top level: (name, CUDA-specific?).
fn file_mods(file: &str, parsed: &syn::File) -> Result<Vec<(String, bool)>, TranslateError> {
    let mut found = Vec::new();
    for item in &parsed.items {
        if let syn::Item::Mod(m) = item {
            if m.content.is_some() {
                continue;
            }
            if m.attrs.iter().any(|a| a.path().is_ident("path")) {
                let line = m.ident.span().start().line as u32;
                return Err(TranslateError::unsupported(file, line, &format!("#[path] mod {}", m.ident), "modules at explicit paths are not followed by the mirror"));
            }
            let mut item = item.clone();
            let specific = mentions_cuda(item.to_token_stream()) && {
                let attrs = item_attrs(&mut item).map(|a| a.iter().any(|a| a.path().is_ident("cfg") && mentions_cuda(a.meta.to_token_stream()))).unwrap_or(false);
                attrs || is_cuda_ident(&m.ident.to_string())
            };
            found.push((m.ident.to_string(), specific));
        }
    }
    Ok(found)
}

/// The directory a file's child modules live in.
fn child_dir(parent: &str) -> String {
    let (dir, name) = parent.rsplit_once('/').unwrap_or(("", parent));
    if matches!(name, "lib.rs" | "mod.rs" | "main.rs") {
        dir.to_string()
    } else {
        format!("{dir}/{}", name.trim_end_matches(".rs"))
    }
}

fn child_path(parent: &str, name: &str, sources: &BTreeMap<String, String>) -> Option<String> {
    let dir = child_dir(parent);
    [format!("{dir}/{name}.rs"), format!("{dir}/{name}/mod.rs")].into_iter().find(|p| sources.contains_key(p))
}

fn child_in_named(parent: &str, name: &str, sources: &BTreeMap<String, String>) -> String {
    child_path(parent, name, sources).unwrap_or_default()
}

/// Where a child module named `name` of the output file `parent` goes,
/// keeping the input's file layout (`x.rs` or `x/mod.rs`).
fn out_child_path(parent_out: &str, name: &str, child_in: &str) -> String {
    let dir = child_dir(parent_out);
    if child_in.ends_with("/mod.rs") {
        format!("{dir}/{name}/mod.rs")
    } else {
        format!("{dir}/{name}.rs")
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    }

    #[test]
    fn the_crate_walk_keeps_cuda_modules_and_mirrors_them() {
        let src = sources(&[
            ("src/lib.rs", "#[cfg(feature = \"cuda\")]\npub mod cuda_backend;\nmod storage;\n"),
            ("src/cuda_backend/mod.rs", "// upstream comment\npub mod device;\n#[cfg(feature = \"cudnn\")]\npub mod cudnn;\npub use cudarc;\n"),
            ("src/cuda_backend/device.rs", "pub struct CudaDevice(cudarc::driver::CudaStream);\n"),
            ("src/cuda_backend/cudnn.rs", "pub fn conv() {}\n"),
            ("src/storage.rs", "pub enum Storage { Cpu, Cuda(crate::CudaStorage) }\n"),
            ("src/unreached.rs", "// kept\n"),
        ]);
        // (not labelled candle-core: its table rows, e.g. code-object-inputs, need its real files)
        let out = mirror_crate(&src, "a-crate 9.9.9").unwrap();
        let paths: Vec<_> = out.files.keys().map(String::as_str).collect();
        assert_eq!(paths, ["src/cuda_backend/cudnn.rs", "src/cuda_backend/device.rs", "src/cuda_backend/mod.rs", "src/lib.rs", "src/rocm_backend/device.rs", "src/rocm_backend/mod.rs", "src/storage.rs", "src/unreached.rs"]);
        assert_eq!(out.files["src/cuda_backend/mod.rs"], src["src/cuda_backend/mod.rs"], "the CUDA backend is kept as upstream wrote it");
        assert!(out.files["src/rocm_backend/device.rs"].contains("pub struct RocmDevice(candle_rocm_hip::driver::HipStream);"));
        assert!(out.files["src/rocm_backend/mod.rs"].contains("pub use candle_rocm_hip;"));
        assert!(!out.files["src/rocm_backend/mod.rs"].contains("cudnn"));
        assert!(out.files["src/storage.rs"].contains("Rocm(crate::RocmStorage)"));
        assert_eq!(out.gaps.len(), 1);
        assert_eq!((out.gaps[0].file.as_str(), out.gaps[0].feature.as_str()), ("src/cuda_backend/mod.rs", "cudnn"));
        assert_eq!(out.mirrored_from["src/rocm_backend/device.rs"], "src/cuda_backend/device.rs");
    }

    #[test]
    fn every_target_root_is_walked_and_untwinned_files_are_kept_as_gaps() {
        let custom = "#[cfg(feature = \"cuda\")]\nmod cuda_kernels;\nfn main() {}\n";
        let src = sources(&[
            ("src/lib.rs", "pub fn f() {}\n"),
            ("examples/a/main.rs", "mod common;\nfn main() {}\n"),
            ("examples/a/common.rs", "#[cfg(feature = \"cuda\")]\nfn on_cuda() {}\n"),
            ("examples/custom-ops/main.rs", custom),
            ("examples/custom-ops/cuda_kernels.rs", "pub const K: &str = \"\";\n"),
        ]);
        let roots = ["src/lib.rs", "examples/a/main.rs", "examples/custom-ops/main.rs"].map(|path| TargetRoot { path: path.to_string(), gate_cuda: false });
        // 0.9.x's custom-ops (bindgen_cuda, `mod cuda_kernels;`): untwinned before 0.10
        let out = mirror_targets(&src, &roots, "candle-examples 0.9.1").unwrap();
        assert!(out.files["examples/a/common.rs"].contains("fn on_rocm()"), "{}", out.files["examples/a/common.rs"]);
        assert_eq!(out.files["examples/custom-ops/main.rs"], custom);
        assert_eq!(out.gaps.len(), 1);
        assert_eq!((out.gaps[0].file.as_str(), out.gaps[0].line), ("examples/custom-ops/main.rs", 1));
    }

    #[test]
    fn a_cuda_only_root_gates_the_files_it_reaches_and_no_other() {
        let main = "use cudarc::nccl::safe::Comm;\nmod model;\nfn main() { let d = Device::new_cuda(0); }\n";
        let model = "use cudarc::nccl::safe::ReduceOp;\npub struct Op;\n";
        let src = sources(&[
            ("src/lib.rs", "pub fn device() -> Device { Device::new_cuda(0) }\n"),
            ("examples/mp/main.rs", main),
            ("examples/mp/model.rs", model),
        ]);
        let roots = [TargetRoot { path: "src/lib.rs".into(), gate_cuda: false }, TargetRoot { path: "examples/mp/main.rs".into(), gate_cuda: true }];
        let out = mirror_targets(&src, &roots, "candle-examples 9.9.9").unwrap();
        // before: ungated `use` items and `fn main` (two `Comm` imports in either build)
        let main = &out.files["examples/mp/main.rs"];
        assert!(main.contains("#[cfg(feature = \"cuda\")]\nuse cudarc::nccl::safe::Comm;\n#[cfg(feature = \"rocm\")]\nuse candle_rocm_hip::nccl::safe::Comm;"), "{main}");
        // (with both features on, CUDA's `main`)
        assert!(main.contains("#[cfg(feature = \"cuda\")]\nfn main()") && main.contains("#[cfg(all(feature = \"rocm\", not(feature = \"cuda\")))]\nfn main()"), "{main}");
        assert!(main.contains("Device::new_rocm(0)"), "{main}");
        let model = &out.files["examples/mp/model.rs"];
        assert!(model.contains("#[cfg(feature = \"rocm\")]\nuse candle_rocm_hip::nccl::safe::ReduceOp;") && model.contains("\npub struct Op;"), "{model}");
        // the library is not CUDA-only: its function is not gated
        assert!(!out.files["src/lib.rs"].contains("#[cfg(feature = \"cuda\")]\npub fn device"), "{}", out.files["src/lib.rs"]);
    }

    #[test]
    fn a_cuda_gated_module_whose_name_stays_is_one_file_twinned_in_place() {
        // mistral.rs 0.8.1's paged_attention/layers/mod.rs: the file under a cuda cfg, an inline stand-in otherwise
        let layers = "#[cfg(feature = \"cuda\")]\npub mod paged_attention;\n#[cfg(not(feature = \"cuda\"))]\npub mod paged_attention { pub struct P; }\n";
        let src = sources(&[
            ("src/lib.rs", "mod layers;\n"),
            ("src/layers/mod.rs", layers),
            ("src/layers/paged_attention.rs", "#[cfg(feature = \"cuda\")]\npub fn f(d: &candle_core::CudaDevice) {}\n"),
        ]);
        let out = mirror_crate(&src, "a-crate 9.9.9").unwrap();
        let file = &out.files["src/layers/paged_attention.rs"];
        assert!(file.contains("RocmDevice") && file.contains("CudaDevice"), "{file}");
        // mistralrs-quant's ffi.rs: ungated launcher declarations in such a file are CUDA-only
        // code (rule cuda-gates), so they get a CUDA gate and a ROCm twin
        let src = sources(&[
            ("src/lib.rs", "#[cfg(feature = \"cuda\")]\nmod ffi;\n"),
            ("src/ffi.rs", "extern \"C\" {\n    pub fn launch(stream: candle_core::cuda::cudarc::driver::sys::CUstream);\n}\n"),
        ]);
        let file = &mirror_crate(&src, "a-crate 9.9.9").unwrap().files["src/ffi.rs"];
        assert!(file.contains("#[cfg(feature = \"cuda\")]\nextern \"C\"") && file.contains("#[cfg(feature = \"rocm\")]\nextern \"C\""), "{file}");
        assert!(file.contains("stream: candle_core::rocm::candle_rocm_hip::driver::sys::CUstream"), "{file}");
    }

    /// mistralrs-quant's `cublaslt` module (cuBLASLt, which the HIP layer does not bind):
    /// kept as upstream wrote it, a gap, and its users not renamed
    #[test]
    fn a_module_of_an_unbound_cuda_library_is_kept_without_twins() {
        let cublaslt = "pub fn maybe_init_cublas_lt_wrapper() {}\n#[cfg(feature = \"cuda\")]\nmod api;\n";
        let src = sources(&[
            ("src/lib.rs", "pub mod cublaslt;\nmod user;\n"),
            ("src/cublaslt/mod.rs", cublaslt),
            ("src/cublaslt/api.rs", "use candle_core::cuda::cudarc::cublaslt::CudaBlasLT;\n"),
            ("src/user.rs", "use crate::cublaslt::maybe_init_cublas_lt_wrapper;\n#[cfg(feature = \"cuda\")]\nfn on_cuda(d: &candle_core::CudaDevice) { maybe_init_cublas_lt_wrapper(); }\n"),
        ]);
        let out = mirror_crate(&src, "a-crate 9.9.9").unwrap();
        assert_eq!(out.files["src/cublaslt/mod.rs"], cublaslt);
        assert!(!out.files["src/lib.rs"].contains("rocblaslt") && !out.files.keys().any(|p| p.contains("rocblaslt")), "{:?}", out.files.keys());
        let user = &out.files["src/user.rs"];
        assert_eq!(user.matches("use crate::cublaslt::maybe_init_cublas_lt_wrapper;").count(), 1, "{user}");
        assert!(user.contains("fn on_rocm(d: &candle_core::RocmDevice) {\n    maybe_init_cublas_lt_wrapper();"), "{user}");
        assert_eq!((out.gaps[0].file.as_str(), out.gaps[0].line, out.gaps[0].feature.as_str()), ("src/lib.rs", 1, "cublaslt"), "{:?}", out.gaps);
    }

    #[test]
    fn a_missing_module_file_is_an_error() {
        let err = mirror_crate(&sources(&[("src/lib.rs", "mod gone;\n")]), "x").unwrap_err().to_string();
        assert!(err.starts_with("src/lib.rs:0: mod gone;: no file"), "{err}");
    }

}
