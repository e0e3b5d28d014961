//! The translation steps of `cargo xtask regen`. Each step reads upstream
//! sources and contributes the files of its own subtree of generated/; regen
//! runs them all and assembles one in-memory tree.
//!
//! * `kernels`: candle-kernels → `generated/kernels/` (HIP sources and the
//!   launchers' Rust declarations, `ffi.rs`);
//! * `candle-core`, `candle-nn`: the crates with a ROCm backend beside CUDA →
//!   `generated/candle-core/`, `generated/candle-nn/` (whole packages:
//!   manifest, `src/`, upstream's `tests/`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use translator::kernels::{translate_tree, KernelContext};
use translator::TreeFile;

use translator::backend::{Gap, TargetRoot};

use crate::regen::upstream::{CrateSource, Origin, Upstream};
use crate::tree;
use crate::regen::hipify;

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
    /// What upstream has on CUDA that the ROCm side leaves out, and why.
    pub gaps: Vec<Gap>,
    /// While provenance is recorded (`cargo xtask review`): output path → the input path its
    /// lines come from (as [`StepOutput::inputs`] names it) and each line's provenance.
    pub provenance: Provenance,
}

/// Output path → (input path, where each output line came from).
pub type Provenance = BTreeMap<String, (String, translator::provenance::LineProvenance)>;

/// What every step reads.
pub struct StepInput<'a> {
    pub upstream: &'a Upstream,
    /// The hand-written ROCm crates, as paths relative to a generated
    /// package (`../../rocm-runtime/hip`), or absolute when the output
    /// directory is outside the workspace.
    pub rocm_crates: BTreeMap<String, String>,
    /// How many parameters candle-flash-attn's `run_mha` has when they are not
    /// those kernels/candle_flash_attn.hip implements (that release's
    /// candle-flash-attn is not mirrored); read once, when the input is made.
    pub foreign_run_mha: Option<usize>,
}

impl<'a> StepInput<'a> {
    pub fn new(upstream: &'a Upstream, rocm_crates: BTreeMap<String, String>) -> Result<Self> {
        let foreign_run_mha = match &upstream.flash_attn {
            Some(krate) => foreign_run_mha(krate)?,
            None => None,
        };
        Ok(StepInput { upstream, rocm_crates, foreign_run_mha })
    }

    /// The upstream packages regen mirrors (all but candle-kernels, and
    /// candle-flash-attn only where its `run_mha` is the ABI of
    /// kernels/candle_flash_attn.hip).
    fn mirrored_packages(&self) -> Vec<&'a CrateSource> {
        let flash_attn = self.upstream.flash_attn.as_ref().map(|c| c.name.as_str());
        self.upstream.packages().into_iter().filter(|c| self.foreign_run_mha.is_none() || Some(c.name.as_str()) != flash_attn).collect()
    }
}

/// A translation step.
pub type Step = fn(&StepInput) -> Result<StepOutput>;

/// Every step, in order. Their output subtrees must not overlap.
pub const STEPS: &[Step] = &[kernels, candle_core, candle_nn, candle_flash_attn, candle_transformers, candle_examples];

/// candle-kernels `src/**/*.{cu,cuh}` → `generated/kernels/`.
///
/// The native rules always translate the original sources and that result is
/// what gets written. When hipify-perl is installed, its output is translated
/// too and must give the very same files: the native pass is idempotent on
/// HIP input, so generated/ is identical with or without hipify-perl.
pub fn kernels(input: &StepInput) -> Result<StepOutput> {
    let krate = &input.upstream.kernels;
    let src = krate.root.join("src");
    let files = cuda_sources(&src)?;
    if files.is_empty() {
        bail!("{}: no .cu or .cuh files in src/", krate.name);
    }
    let ctx = KernelContext::new(format!("{} {}", krate.name, krate.version));
    let output = translate_tree(&files, &ctx).map_err(|e| anyhow!("translation failed: {e}"))?;

    let mut notes = match hipify::find() {
        None => vec!["hipify-perl first pass: no (not on PATH nor in $ROCM_PATH/bin): native rules only".to_string()],
        Some(hipify) => {
            // one hipify-perl process per file, on the thread pool (it takes seconds per file)
            let hipified = files
                .par_iter()
                .map(|f| Ok(TreeFile { rel_path: f.rel_path.clone(), contents: hipify::run(&hipify, &src.join(&f.rel_path))? }))
                .collect::<Result<Vec<_>>>()?;
            let via = translate_tree(&hipified, &ctx).map_err(|e| anyhow!("translation failed (on hipify-perl output): {e}"))?;
            if let Some(problem) = first_difference(&output.files, &via.files) {
                bail!("hipify-perl changes the translation: some rule is not idempotent on HIP input: {problem}");
            }
            vec![format!("hipify-perl first pass: yes ({}), output identical to the native pass", hipify.display())]
        }
    };

    let mut inputs: Vec<(String, Vec<u8>)> = files.iter().map(|f| (format!("{}/src/{}", krate.name, f.rel_path), f.contents.clone())).collect();
    let mut out_files: Vec<(String, Vec<u8>)> = output.files.into_iter().map(|f| (format!("kernels/{}", f.rel_path), f.contents)).collect();
    let mut provenance: Provenance = files
        .iter()
        .filter_map(|f| {
            let out = translator::kernels::rules::output_path(&f.rel_path);
            let p = output.provenance.get(&out)?.clone();
            Some((format!("kernels/{out}"), (format!("{}/src/{}", krate.name, f.rel_path), p)))
        })
        .collect();
    let mut rule_counts = output.rule_counts;
    // the static-library launchers' declarations; releases before 0.9.2 have
    // no static library, hence no ffi.rs: an ffi.rs that declares nothing
    let ffi_path = src.join("ffi.rs");
    let mut gaps = Vec::new();
    let ffi_out = if ffi_path.is_file() {
        let ffi = std::fs::read(&ffi_path).with_context(|| format!("reading {}", ffi_path.display()))?;
        let ffi_text = String::from_utf8(ffi.clone()).with_context(|| format!("{} is not UTF-8", ffi_path.display()))?;
        let mirrored = translator::backend::mirror_file("src/ffi.rs", &format!("{} {} src/ffi.rs", krate.name, krate.version), &ffi_text).map_err(|e| anyhow!("{}: {e}", krate.name))?;
        for (rule, n) in mirrored.rule_counts {
            *rule_counts.entry(rule).or_default() += n;
        }
        inputs.push((format!("{}/src/ffi.rs", krate.name), ffi));
        gaps = mirrored.gaps.into_iter().map(|g| Gap { file: format!("{}/{}", krate.name, g.file), ..g }).collect();
        if let Some(p) = mirrored.provenance {
            provenance.insert("kernels/ffi.rs".to_string(), (format!("{}/src/ffi.rs", krate.name), p));
        }
        mirrored.text
    } else {
        notes.push(format!("kernels: {} {} has no src/ffi.rs (no static-library launchers): kernels/ffi.rs declares none", krate.name, krate.version));
        no_launchers_ffi(&krate.name, &krate.version)
    };
    inputs.sort();
    out_files.push(("kernels/ffi.rs".to_string(), ffi_out.into_bytes()));

    Ok(StepOutput { name: "kernels", inputs, files: out_files, rule_counts, notes, gaps, provenance })
}

/// `kernels/ffi.rs` of a candle-kernels release without static-library
/// launchers (no `src/ffi.rs`): the kernels crate includes it as its `ffi`
/// module, which then declares nothing.
fn no_launchers_ffi(name: &str, version: &str) -> String {
    format!("// Generated by `cargo xtask regen`: {name} {version} has no src/ffi.rs (no static-library launchers), so there is nothing to declare. Do not edit: fix the translator rule instead.\n")
}

/// candle-core → `generated/candle-core/`.
pub fn candle_core(input: &StepInput) -> Result<StepOutput> {
    mirror_package(input, &input.upstream.core, "candle-core", &LIBRARY)
}

/// candle-nn → `generated/candle-nn/` (its softmax, norms, rotary
/// embeddings and MoE have CUDA custom ops of their own).
pub fn candle_nn(input: &StepInput) -> Result<StepOutput> {
    mirror_package(input, &input.upstream.nn, "candle-nn", &LIBRARY)
}

/// candle-flash-attn → `generated/candle-flash-attn/`: its Rust side (the
/// flash-attention custom ops, whose `cuda_fwd` get `rocm_fwd` twins) and
/// upstream's tests. Upstream's CUDA kernels and their build script are not
/// carried: `run_mha` is candle-rocm's own `kernels/candle_flash_attn.hip`,
/// linked with the kernels crate's launchers.
pub fn candle_flash_attn(input: &StepInput) -> Result<StepOutput> {
    let step = "candle-flash-attn";
    if let (Some(krate), Some(params)) = (&input.upstream.flash_attn, input.foreign_run_mha) {
        return Ok(StepOutput {
            name: step,
            notes: vec![format!(
                "{step}: not mirrored: {} {}'s run_mha ({} parameters) is not the C ABI kernels/candle_flash_attn.hip implements (candle-flash-attn 0.11.1's, {} parameters)",
                krate.name,
                krate.version,
                params,
                translator::kernels::mapping::RUN_MHA_PARAMETERS.len()
            )],
            ..Default::default()
        });
    }
    mirror_optional(input, input.upstream.flash_attn.as_ref(), step, &LIBRARY)
}

/// The number of parameters of candle-flash-attn's `run_mha` when they are not
/// those kernels/candle_flash_attn.hip implements (that release is not mirrored).
fn foreign_run_mha(krate: &CrateSource) -> Result<Option<usize>> {
    let ffi = krate.root.join("src/ffi.rs");
    let text = std::fs::read_to_string(&ffi).with_context(|| format!("reading {}", ffi.display()))?;
    let params = run_mha_parameters(&text).with_context(|| format!("{}: no `fn run_mha` in an extern block", ffi.display()))?;
    Ok((params != translator::kernels::mapping::RUN_MHA_PARAMETERS).then_some(params.len()))
}

/// The parameter names of `fn run_mha` in an `extern` block of `ffi`.
fn run_mha_parameters(ffi: &str) -> Option<Vec<String>> {
    let file = syn::parse_file(ffi).ok()?;
    file.items.iter().find_map(|item| match item {
        syn::Item::ForeignMod(block) => block.items.iter().find_map(|f| match f {
            syn::ForeignItem::Fn(f) if f.sig.ident == "run_mha" => Some(
                f.sig.inputs.iter().filter_map(|a| match a {
                    syn::FnArg::Typed(t) => match &*t.pat {
                        syn::Pat::Ident(i) => Some(i.ident.to_string()),
                        _ => None,
                    },
                    _ => None,
                }).collect(),
            ),
            _ => None,
        }),
        _ => None,
    })
}

/// candle-transformers → `generated/candle-transformers/` (models whose
/// fast paths are chosen with `cfg!(feature = "cuda")` and `is_cuda()`).
pub fn candle_transformers(input: &StepInput) -> Result<StepOutput> {
    mirror_optional(input, input.upstream.transformers.as_ref(), "candle-transformers", &LIBRARY)
}

/// candle-examples → `generated/candle-examples/`: the library
/// (`candle_examples::device()`) and every example program.
pub fn candle_examples(input: &StepInput) -> Result<StepOutput> {
    mirror_optional(input, input.upstream.examples.as_ref(), "candle-examples", &EXAMPLES)
}

/// A package the release may not have published: mirrored when it did,
/// a line in the report when not.
fn mirror_optional(input: &StepInput, krate: Option<&CrateSource>, step: &'static str, shape: &PackageShape) -> Result<StepOutput> {
    match krate {
        Some(krate) => mirror_package(input, krate, step, shape),
        None => Ok(StepOutput { name: step, notes: vec![format!("{step}: not published for this release: no generated/{step}/")], ..Default::default() }),
    }
}

/// What a mirrored package carries of its upstream package.
struct PackageShape {
    /// Whether a file (path relative to the package root) is carried.
    carries: fn(&str) -> bool,
}

/// A library package: its sources, tests, manifest, license and readme (not
/// benches, examples or cargo's bookkeeping).
const LIBRARY: PackageShape = PackageShape { carries: library_file };

/// candle-examples: the library's files, every example with the data it
/// reads (mel filters, fonts, voices), and the build script; not the images
/// and videos that illustrate the examples' READMEs.
const EXAMPLES: PackageShape = PackageShape { carries: examples_file };

fn library_file(path: &str) -> bool {
    path.starts_with("src/") || path.starts_with("tests/") || path == "Cargo.toml" || path == "README.md" || path.starts_with("LICENSE")
}

/// Extensions of the pictures and videos in upstream's examples/ (README
/// illustrations and sample inputs a user brings their own of).
const EXAMPLE_MEDIA: &[&str] = &[".jpg", ".jpeg", ".png", ".gif", ".mp4"];

fn examples_file(path: &str) -> bool {
    let in_examples = path.starts_with("examples/") && !EXAMPLE_MEDIA.iter().any(|ext| path.to_ascii_lowercase().ends_with(ext));
    library_file(path) || in_examples || (!path.contains('/') && path.ends_with(".rs"))
}

/// The roots of a package's Rust targets that regen translates, when
/// carried: the library, every `[[example]]` the manifest lists and, unless
/// it says `autoexamples = false` (as published manifests do), the examples
/// cargo discovers (`examples/NAME.rs`, `examples/NAME/main.rs`: a checkout's
/// manifest lists only those with settings of their own).
/// With `bins`, the binaries too: every `[[bin]]` and, unless `autobins = false`,
/// `src/main.rs` and `src/bin/NAME.rs`.
fn target_roots(manifest: &str, carried: &BTreeMap<String, Vec<u8>>, bins: bool) -> Vec<String> {
    let table: toml::Table = manifest.parse().unwrap_or_default();
    let lib = table.get("lib").and_then(|l| l.get("path")).and_then(|p| p.as_str()).unwrap_or("src/lib.rs").to_string();
    let listed = table.get("example").and_then(|e| e.as_array()).into_iter().flatten().filter_map(|e| e.get("path")?.as_str().map(str::to_string));
    let auto = table.get("package").and_then(|p| p.get("autoexamples")).and_then(|a| a.as_bool()).unwrap_or(true);
    let discovered = carried.keys().filter(|p| {
        let parts: Vec<&str> = p.split('/').collect();
        auto && (matches!(parts.as_slice(), ["examples", f] if f.ends_with(".rs")) || matches!(parts.as_slice(), ["examples", _, "main.rs"]))
    });
    let auto_bins = bins && table.get("package").and_then(|p| p.get("autobins")).and_then(|a| a.as_bool()).unwrap_or(true);
    let listed_bins = table.get("bin").and_then(|e| e.as_array()).into_iter().flatten().filter(|_| bins).filter_map(|e| e.get("path")?.as_str().map(str::to_string));
    let discovered_bins = carried.keys().filter(|p| auto_bins && (*p == "src/main.rs" || (p.starts_with("src/bin/") && p.ends_with(".rs") && p.matches('/').count() == 2)));
    let mut roots: Vec<String> =
        std::iter::once(lib).chain(listed).chain(discovered.cloned()).chain(listed_bins).chain(discovered_bins.cloned()).filter(|p| carried.contains_key(p)).collect();
    let mut seen = std::collections::BTreeSet::new();
    roots.retain(|r| seen.insert(r.clone()));
    roots
}

fn mirror_package(input: &StepInput, krate: &CrateSource, step: &'static str, shape: &PackageShape) -> Result<StepOutput> {
    let all = tree::read_tree(&krate.root)?;
    let files: BTreeMap<String, Vec<u8>> = all.into_iter().filter(|(p, _)| (shape.carries)(p)).collect();
    let label = format!("{} {}", krate.name, krate.version);
    let manifest_text = String::from_utf8(files.get("Cargo.toml").cloned().with_context(|| format!("{} has no Cargo.toml", krate.name))?).map_err(|_| anyhow!("{}/Cargo.toml: not UTF-8", krate.name))?;
    let manifest_text = match &input.upstream.origin {
        // a checkout's member manifest inherits from the checkout's root manifest
        Origin::Checkout(dir) => crate::regen::workspace_manifest::resolve_in_checkout(&manifest_text, dir, &krate.root)?,
        Origin::CratesIo => manifest_text,
    };
    let paths = translator::backend::package::PackagePaths {
        rocm_crates: input.rocm_crates.clone(),
        // every other mirrored package is a sibling under generated/
        siblings: input.mirrored_packages().into_iter().filter(|c| c.name != krate.name).map(|c| (c.name.clone(), format!("../{}", c.name))).collect(),
    };
    let mirror = mirror_package_files(&files, &label, &manifest_text, &paths, BuildScript::TwinOwnKernelBuild).map_err(|e| anyhow!("{}: {e:#}", krate.name))?;
    let mut gaps: Vec<Gap> = mirror.gaps.into_iter().map(|g| Gap { file: format!("{}/{}", krate.name, g.file), ..g }).collect();
    gaps.sort();
    let mut notes = Vec::new();
    for (file, names) in &mirror.unmapped {
        notes.push(format!("{step}: {file} still names CUDA: {}", names.iter().cloned().collect::<Vec<_>>().join(", ")));
    }
    for g in &gaps {
        notes.push(format!("{step}: not mirrored: {}:{}: {} (feature `{}`)", g.file, g.line, g.construct, g.feature));
    }
    Ok(StepOutput {
        name: step,
        inputs: files.into_iter().map(|(p, c)| (format!("{}/{p}", krate.name), c)).collect(),
        files: mirror.files.into_iter().map(|(p, c)| (format!("{step}/{p}"), c)).collect(),
        rule_counts: mirror.rule_counts,
        notes,
        gaps,
        provenance: mirror.provenance.into_iter().map(|(out, (input, p))| (format!("{step}/{out}"), (format!("{}/{input}", krate.name), p))).collect(),
    })
}

/// What becomes of a package's build script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildScript {
    /// Twinned as tests are when it builds the package's own kernels (rule
    /// `own-kernel-builds`); else kept. The package builds for either backend (regen).
    TwinOwnKernelBuild,
    /// Its CUDA build tool's calls become candle-rocm-build's (rule `build-tools`), and
    /// so does the build dependency: the package builds its kernels for AMD
    /// (`cargo xtask port-crate`). Its binaries (`[[bin]]`, `src/main.rs`) are mirrored too.
    Port,
}

/// A package mirrored: its files, what the rules did, what they left out.
pub struct PackageMirror {
    pub files: BTreeMap<String, Vec<u8>>,
    pub rule_counts: BTreeMap<&'static str, usize>,
    /// Paths relative to the package.
    pub gaps: Vec<Gap>,
    /// Per mirrored file, the identifiers that still name CUDA.
    pub unmapped: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// While provenance is recorded: output file → (input file, its lines' provenance),
    /// paths relative to the package.
    pub provenance: Provenance,
}

/// Mirrors a package's carried `files` (paths relative to it; `manifest_text` its
/// manifest as resolved): its targets' Rust by the crate walk, its tests twinned, its
/// build script as `build_script` says, its manifest by rule `package`; other files as
/// they are.
pub fn mirror_package_files(files: &BTreeMap<String, Vec<u8>>, label: &str, manifest_text: &str, paths: &translator::backend::package::PackagePaths, build_script: BuildScript) -> Result<PackageMirror> {
    let utf8 = |path: &str, bytes: &[u8]| String::from_utf8(bytes.to_vec()).map_err(|_| anyhow!("{path}: not UTF-8"));
    let roots = target_roots(manifest_text, files, build_script == BuildScript::Port);
    let mut sources = BTreeMap::new();
    for (path, bytes) in files.iter().filter(|(p, _)| is_target_source(p)) {
        sources.insert(path.clone(), utf8(path, bytes)?);
    }
    // CUDA-only code gets its CUDA items gated first (rule `cuda-gates`): every
    // target of a package that needs CUDA unconditionally upstream, an example
    // that requires `cuda`
    let gate_cuda = translator::backend::package::requires_cuda(manifest_text);
    let cuda_only_examples = translator::backend::package::cuda_only_examples(manifest_text, &|p| files.contains_key(p));
    let roots: Vec<TargetRoot> = roots.into_iter().map(|path| TargetRoot { gate_cuda: gate_cuda || cuda_only_examples.contains(&path), path }).collect();
    let translator::backend::CrateMirror { files: mirrored, mut rule_counts, mut gaps, unmapped, mut provenance, .. } = translator::backend::mirror_targets(&sources, &roots, label)?;

    let mut out: BTreeMap<String, Vec<u8>> = mirrored.into_iter().map(|(path, text)| (path, text.into_bytes())).collect();
    for (path, bytes) in files {
        if build_script == BuildScript::Port && path == "build.rs" {
            let ported = translator::backend::build_tools::port_build_script(path, &utf8(path, bytes)?)?;
            *rule_counts.entry("build-tools").or_default() += ported.rewrites;
            *rule_counts.entry("toolkit-probes").or_default() += ported.probe_statements;
            gaps.extend(ported.gaps);
            out.insert(path.clone(), format!("// Ported by `cargo xtask port-crate` from {label} build.rs (rule build-tools).\n{}", ported.text).into_bytes());
        } else if (path.starts_with("tests/") && path.ends_with(".rs")) || translator::backend::own_kernel_builds::twins_build_script(label, path) {
            // upstream's tests match on devices too: their CUDA arms get twins; so does the
            // CUDA block of a build script that builds the package's own kernels (rule
            // `own-kernel-builds`)
            let twinned = translator::backend::twin_file_of(path, &format!("{label} {path}"), &utf8(path, bytes)?, gate_cuda)?;
            for (rule, n) in twinned.rule_counts {
                *rule_counts.entry(rule).or_default() += n;
            }
            gaps.extend(twinned.gaps);
            if let Some(p) = twinned.provenance {
                provenance.insert(path.clone(), (path.clone(), p));
            }
            out.insert(path.clone(), twinned.text.into_bytes());
        } else if path != "Cargo.toml" && !is_target_source(path) {
            if let (true, Ok(text)) = (translator::provenance::recording(), std::str::from_utf8(bytes)) {
                provenance.insert(path.clone(), (path.clone(), translator::provenance::LineProvenance::identity(text)));
            }
            out.insert(path.clone(), bytes.clone());
        }
    }
    let manifest = translator::backend::package::mirror_manifest("Cargo.toml", label, manifest_text, paths, &|p| out.contains_key(p))?;
    let manifest_text = match build_script {
        BuildScript::Port => translator::backend::package::build_tools_as_candle_rocm_build("Cargo.toml", &manifest.text, paths)?,
        BuildScript::TwinOwnKernelBuild => manifest.text,
    };
    out.insert("Cargo.toml".to_string(), manifest_text.into_bytes());
    *rule_counts.entry("package-features").or_default() += manifest.twinned_features;
    if manifest.either_backend_examples > 0 {
        *rule_counts.entry("either-backend-examples").or_default() += manifest.either_backend_examples;
    }
    gaps.extend(manifest.gaps);
    gaps.sort();
    Ok(PackageMirror { files: out, rule_counts, gaps, unmapped, provenance })
}

/// Rust sources of the package's targets (the library's and the
/// examples'), which the crate walk translates; tests are twinned apart.
fn is_target_source(path: &str) -> bool {
    (path.starts_with("src/") || path.starts_with("examples/")) && path.ends_with(".rs")
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

    #[test]
    fn run_mha_parameters_are_read_from_the_extern_block() {
        let ffi = "use core::ffi::c_void;\nextern \"C\" {\n    pub(crate) fn run_mha(q_ptr: *const c_void, b: u32, stream_ptr: *mut c_void);\n    fn other(x: u32);\n}\n";
        assert_eq!(run_mha_parameters(ffi).unwrap(), ["q_ptr", "b", "stream_ptr"]);
        assert!(run_mha_parameters("extern \"C\" { fn other(); }").is_none());
        assert_eq!(translator::kernels::mapping::RUN_MHA_PARAMETERS.len(), 45);
    }

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
    fn target_roots_follow_the_manifest_and_cargo_discovery() {
        let carried: BTreeMap<String, Vec<u8>> = ["src/lib.rs", "examples/a/main.rs", "examples/b.rs", "examples/a/model.rs", "examples/c/main.rs"].iter().map(|p| (p.to_string(), vec![])).collect();
        // published: autoexamples = false, every example listed with its path
        let published = "[package]\nname = \"x\"\nautoexamples = false\n[[example]]\nname = \"a\"\npath = \"examples/a/main.rs\"\n";
        assert_eq!(target_roots(published, &carried, false), ["src/lib.rs", "examples/a/main.rs"]);
        // a checkout: listed ones (without path) plus what cargo discovers
        let checkout = "[package]\nname = \"x\"\n[[example]]\nname = \"c\"\nrequired-features = [\"f\"]\n";
        assert_eq!(target_roots(checkout, &carried, false), ["src/lib.rs", "examples/a/main.rs", "examples/b.rs", "examples/c/main.rs"]);
        // a crate ported with its binaries: listed and discovered
        let mut with_bins = carried.clone();
        for p in ["src/main.rs", "src/bin/tool.rs", "src/bin/tool/helper.rs", "tools/check.rs"] {
            with_bins.insert(p.to_string(), vec![]);
        }
        let bins = "[package]\nname = \"x\"\nautoexamples = false\n[[bin]]\nname = \"check\"\npath = \"tools/check.rs\"\n";
        assert_eq!(target_roots(bins, &with_bins, true), ["src/lib.rs", "tools/check.rs", "src/bin/tool.rs", "src/main.rs"]);
        assert_eq!(target_roots(bins, &with_bins, false), ["src/lib.rs"]);
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
