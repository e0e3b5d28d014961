//! `generated/PARITY.md`: for each item of the CUDA backend, whether the ROCm
//! side has it. Computed from the generated tree itself (the CUDA backend is
//! kept in it verbatim, beside its mirror), so it cannot disagree with what
//! regen wrote.
//!
//! Items counted:
//! * every function of every `impl` block and every free function in
//!   `cuda_backend/` (BackendStorage/BackendDevice methods, `Map1`/`Map2`
//!   kernels launchers, helpers) against `rocm_backend/`;
//! * every CUDA hook outside it (`cuda_fwd*` of custom ops in candle-core and
//!   candle-nn, `Device::new_cuda`, `is_cuda`, ...) against its `rocm` twin;
//! * every enum variant named for CUDA (`Storage::Cuda`, ...) against its twin;
//! * every quantized type (`GgmlDType::*`) the CUDA quantized storage handles;
//! * every candle-kernels source file against its HIP translation.
//!
//! What is missing is named with the reason the translator gave (a
//! [`Gap`]), or marked unexplained.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use rayon::prelude::*;
use syn::visit::Visit;
use translator::backend::rules::rename;
use translator::backend::cuda_names::is_cuda_ident;
use translator::backend::Gap;

use crate::tree::Tree;

/// The file's path in generated/.
pub const PARITY: &str = "PARITY.md";


/// One row: a CUDA item and what the ROCm side has.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    pub category: &'static str,
    pub cuda: String,
    pub rocm: String,
    pub present: bool,
}

/// The rows for a generated tree.
pub fn rows(tree: &Tree) -> Vec<Row> {
    let mut rows = Vec::new();
    for package in ["candle-core", "candle-nn"] {
        let files: BTreeMap<&str, String> = tree
            .iter()
            .filter_map(|(p, c)| p.strip_prefix(&format!("{package}/")).filter(|p| p.starts_with("src/") && p.ends_with(".rs")).map(|p| (p, String::from_utf8_lossy(c).into_owned())))
            .collect();
        // parsing dominates: every file is parsed on the thread pool
        let items: BTreeMap<&str, BTreeSet<String>> = files.par_iter().map(|(p, text)| (*p, fn_items(text))).collect();
        let variants_of: BTreeMap<&str, BTreeSet<String>> =
            files.par_iter().filter(|(p, _)| mirror_path(p).is_none() && !is_rocm_only(p)).map(|(p, text)| (*p, enum_variants(text))).collect();
        // the CUDA-only files against their mirrors
        for (path, names) in &items {
            let Some(mirror) = mirror_path(path) else { continue };
            let mirrored = items.get(mirror.as_str()).cloned().unwrap_or_default();
            for name in names {
                let (twin, _) = rename_path(name);
                rows.push(Row { category: "backend function", cuda: format!("{package}/{path}: {name}"), rocm: format!("{mirror}: {twin}"), present: mirrored.contains(&twin) });
            }
        }
        // hooks and variants outside them
        for (path, names) in &items {
            if mirror_path(path).is_some() || is_rocm_only(path) {
                continue;
            }
            for name in names.iter().filter(|n| n.rsplit("::").next().is_some_and(is_cuda_ident)) {
                let (twin, _) = rename_path(name);
                rows.push(Row { category: "CUDA hook", cuda: format!("{package}/{path}: {name}"), rocm: twin.clone(), present: names.contains(&twin) });
            }
        }
        for (path, variants) in &variants_of {
            for v in variants.iter().filter(|v| v.rsplit("::").next().is_some_and(is_cuda_ident)) {
                let (twin, _) = rename_path(v);
                rows.push(Row { category: "enum variant", cuda: format!("{package}/{path}: {v}"), rocm: twin.clone(), present: variants.contains(&twin) });
            }
        }
        if package == "candle-core" {
            let quantized = |p: &str| files.get(p).map(|t| ggml_types(t)).unwrap_or_default();
            let (cuda, rocm) = (quantized("src/quantized/cuda.rs"), quantized("src/quantized/rocm.rs"));
            for t in &cuda {
                rows.push(Row { category: "quantized type", cuda: format!("candle-core/src/quantized/cuda.rs: GgmlDType::{t}"), rocm: format!("src/quantized/rocm.rs: GgmlDType::{t}"), present: rocm.contains(t) });
            }
        }
    }
    rows.sort();
    rows
}

/// `src/cuda_backend/x.rs` → `src/rocm_backend/x.rs`: the mirror of a
/// CUDA-only file (a path with a CUDA name in it).
fn mirror_path(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let renamed: Vec<String> = parts.iter().map(|p| rename(p.trim_end_matches(".rs")).0 + if p.ends_with(".rs") { ".rs" } else { "" }).collect();
    let mirrored = renamed.join("/");
    (mirrored != path && parts.iter().any(|p| is_cuda_ident(p.trim_end_matches(".rs")))).then_some(mirrored)
}

fn is_rocm_only(path: &str) -> bool {
    path.split('/').any(|p| p.contains("rocm"))
}

fn rename_path(name: &str) -> (String, bool) {
    let parts: Vec<String> = name.split("::").map(|p| rename(p).0).collect();
    let joined = parts.join("::");
    let changed = joined != name;
    (joined, changed)
}

/// `Type::fn` for functions in impl blocks, `fn` for free functions (at any
/// depth: trait default methods count as `Trait::fn`).
fn fn_items(text: &str) -> BTreeSet<String> {
    struct Collect(BTreeSet<String>, Vec<String>);
    impl<'a> Visit<'a> for Collect {
        fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
            let ty = quote::ToTokens::to_token_stream(&i.self_ty).to_string().replace(' ', "");
            let name = match &i.trait_ {
                Some((_, path, _)) => format!("<{ty}as{}>", path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()),
                None => ty,
            };
            self.1.push(name);
            syn::visit::visit_item_impl(self, i);
            self.1.pop();
        }
        fn visit_item_trait(&mut self, t: &'a syn::ItemTrait) {
            self.1.push(t.ident.to_string());
            syn::visit::visit_item_trait(self, t);
            self.1.pop();
        }
        fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
            self.0.insert(format!("{}::{}", self.1.last().cloned().unwrap_or_default(), f.sig.ident));
        }
        fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
            self.0.insert(format!("{}::{}", self.1.last().cloned().unwrap_or_default(), f.sig.ident));
        }
        fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
            self.0.insert(f.sig.ident.to_string());
        }
    }
    let Ok(file) = syn::parse_file(text) else { return BTreeSet::new() };
    let mut c = Collect(BTreeSet::new(), Vec::new());
    c.visit_file(&file);
    c.0
}

fn enum_variants(text: &str) -> BTreeSet<String> {
    let Ok(file) = syn::parse_file(text) else { return BTreeSet::new() };
    let mut out = BTreeSet::new();
    for item in &file.items {
        if let syn::Item::Enum(e) = item {
            for v in &e.variants {
                out.insert(format!("{}::{}", e.ident, v.ident));
            }
        }
    }
    out
}

/// `GgmlDType::X` names mentioned in a file.
fn ggml_types(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("GgmlDType::") {
        rest = &rest[at + "GgmlDType::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// Kernel sources: each candle-kernels `.cu`/`.cuh` against its translation.
fn kernel_rows(tree: &Tree, inputs: &[String]) -> Vec<Row> {
    inputs
        .iter()
        .filter_map(|p| p.strip_prefix("candle-kernels/src/"))
        .filter(|p| p.ends_with(".cu") || p.ends_with(".cuh"))
        .map(|p| {
            let out = format!("kernels/{}", p.strip_suffix(".cu").map(|s| format!("{s}.hip")).unwrap_or_else(|| p.to_string()));
            Row { category: "kernel source", cuda: format!("candle-kernels/src/{p}"), rocm: out.clone(), present: tree.contains_key(&out) }
        })
        .collect()
}

/// PARITY.md for a generated tree, its inputs and the gaps regen recorded.
pub fn render(tree: &Tree, inputs: &[String], gaps: &[Gap]) -> String {
    let mut rows = rows(tree);
    rows.extend(kernel_rows(tree, inputs));
    let present = rows.iter().filter(|r| r.present).count();
    let mut s = String::new();
    s.push_str("# Parity of the ROCm backend with the CUDA backend\n\n");
    s.push_str("Written by `cargo xtask regen` (and printed by `cargo xtask parity`) from the generated tree. Do not edit.\n\n");
    let _ = writeln!(s, "**{present} / {} CUDA items mirrored** ({:.1}%).\n", rows.len(), 100.0 * present as f64 / rows.len().max(1) as f64);
    s.push_str("Kernel names inside the modules are checked by `cargo xtask build-kernels` against the PTX entry points nvcc makes from the same sources (tests/fixtures/cuda-kernels-<version>.txt).\n\n");
    s.push_str("| category | mirrored | total |\n|---|---:|---:|\n");
    let mut by_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &rows {
        let e = by_category.entry(r.category).or_default();
        e.0 += r.present as usize;
        e.1 += 1;
    }
    for (c, (p, t)) in &by_category {
        let _ = writeln!(s, "| {c} | {p} | {t} |");
    }
    s.push_str("\n## Not mirrored, with the reason\n\n");
    let missing: Vec<&Row> = rows.iter().filter(|r| !r.present).collect();
    if missing.is_empty() && gaps.is_empty() {
        s.push_str("Nothing.\n");
    }
    for r in &missing {
        let name = r.cuda.rsplit("::").next().unwrap_or(&r.cuda);
        // the function itself was left out, or the module it is in
        let module = r.cuda.split(':').next().and_then(|p| p.rsplit('/').next()).map(|f| f.trim_end_matches(".rs")).unwrap_or("");
        let reason = gaps
            .iter()
            .find(|g| g.construct.split_whitespace().any(|w| w == name))
            .or_else(|| gaps.iter().find(|g| g.construct.starts_with("pub mod") && g.construct.split_whitespace().any(|w| w == module))).map(|g| format!("feature `{}`: {}", g.feature, g.reason)).unwrap_or_else(|| "unexplained: no rule left it out on purpose".to_string());
        let _ = writeln!(s, "- {} `{}`: {reason}", r.category, r.cuda);
    }
    s.push_str("\n## Hand-written, not translated\n\n");
    for (name, _, why) in translator::kernels::mapping::OWN_UNITS {
        let _ = writeln!(s, "- `kernels/{name}` (from translator/compat/{name}): {why}");
    }
    s.push_str("\n## Left out by rule `unmirrorable-features`\n\n");
    for g in gaps {
        let _ = writeln!(s, "- `{}:{}` {} (feature `{}`): {}", g.file, g.line, g.construct.replace('`', "'"), g.feature, g.reason);
    }
    s.push_str(&crate::regen::example_parity::render(tree, gaps));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_paths() {
        assert_eq!(mirror_path("src/cuda_backend/mod.rs").as_deref(), Some("src/rocm_backend/mod.rs"));
        assert_eq!(mirror_path("src/quantized/cuda.rs").as_deref(), Some("src/quantized/rocm.rs"));
        assert_eq!(mirror_path("src/storage.rs"), None);
    }

    #[test]
    fn rows_find_what_is_missing() {
        let mut tree = Tree::new();
        tree.insert("candle-core/src/cuda_backend/mod.rs".into(), b"impl CudaStorage { fn a() {} fn b() {} }".to_vec());
        tree.insert("candle-core/src/rocm_backend/mod.rs".into(), b"impl RocmStorage { fn a() {} }".to_vec());
        tree.insert("candle-core/src/device.rs".into(), b"enum Device { Cpu, Cuda(X), Rocm(Y) } impl Device { fn new_cuda() {} }".to_vec());
        let rows = rows(&tree);
        let summary: Vec<(&str, bool)> = rows.iter().map(|r| (r.cuda.as_str(), r.present)).collect();
        assert_eq!(summary, [("candle-core/src/device.rs: Device::new_cuda", false), ("candle-core/src/cuda_backend/mod.rs: CudaStorage::a", true), ("candle-core/src/cuda_backend/mod.rs: CudaStorage::b", false), ("candle-core/src/device.rs: Device::Cuda", true)]);
    }
}
