//! Rule `package`: the mirrored crate's `Cargo.toml` from upstream's
//! (normalized, as published on crates.io).
//!
//! * every CUDA feature gets a ROCm twin whose dependencies are mapped by
//!   [`FEATURE_DEPENDENCIES`] (`cuda = ["cudarc", "dep:candle-kernels"]` →
//!   `rocm = ["dep:candle-rocm-hip", "dep:candle-rocm-kernels"]`); features
//!   of [`UNMIRRORABLE_FEATURES`] have none and are listed as gaps;
//! * the hand-written ROCm crates the twin features name become optional
//!   path dependencies;
//! * dependencies on other mirrored crates (candle-nn's `candle` =
//!   `candle-core`) point at the generated sibling;
//! * benches are not mirrored (their tables go); tests and examples are
//!   when the package carries their files (candle-examples' examples);
//! * an example that requires `cuda` ([`cuda_only_examples`]) requires a
//!   feature either backend turns on instead ([`EITHER_BACKEND_FEATURES`]).
//!
//! The package keeps upstream's name and version, so `[patch.crates-io]`
//! works for every crate that depends on it.

use std::collections::BTreeMap;

use super::mapping::{BACKEND_NEUTRAL_PACKAGES, BUILD_TOOL_NAMES, CUDA_FEATURE_PACKAGES, DEVICE_TYPE_CRATES, EITHER_BACKEND_FEATURES, RESTORED_DEV_DEPENDENCIES, FEATURES, FEATURE_DEPENDENCIES, UNMIRRORABLE_FEATURES, UNMIRRORABLE_FEATURE_DEPENDENCIES, UNMIRRORED_CANDLE_DEPENDENTS};
use super::cuda_names::is_cuda_ident;
use super::gaps::Gap;
use super::rules;
use crate::TranslateError;

/// Where the mirrored package's dependencies live, relative to it.
#[derive(Debug, Clone, Default)]
pub struct PackagePaths {
    /// Hand-written ROCm crates: package → path (`candle-rocm-hip` →
    /// `../../rocm-runtime/hip`).
    pub rocm_crates: BTreeMap<String, String>,
    /// Mirrored upstream crates: package → path (`candle-core` → `../candle-core`).
    pub siblings: BTreeMap<String, String>,
}

/// The mirrored manifest and what it left out.
#[derive(Debug, Clone)]
pub struct MirroredManifest {
    pub text: String,
    pub gaps: Vec<Gap>,
    pub twinned_features: usize,
    /// Examples whose required features rule `either-backend-examples` rewrote.
    pub either_backend_examples: usize,
}

/// Mirrors `manifest` (upstream's `Cargo.toml`, named `file` in errors).
/// `label` names the source in the header; `has_file` says whether a
/// `[[test]]` target's file is part of the mirrored package.
pub fn mirror_manifest(file: &str, label: &str, manifest: &str, paths: &PackagePaths, has_file: &dyn Fn(&str) -> bool) -> Result<MirroredManifest, TranslateError> {
    let mut table: toml::Table = manifest.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map_or(1, |s| line_at(manifest, s.start));
        TranslateError::unsupported(file, line, "Cargo.toml", format!("does not parse: {}", e.message()))
    })?;
    let device_type_features = device_type_features(file, manifest, &table)?;
    let mut gaps = Vec::new();
    let mut twinned_features = cuda_as_feature(&mut table);
    twinned_features += backend_neutral_features(&mut table, paths);
    drop_uncarried_build_script(&mut table, has_file);
    // (ROCm crate, the section it goes in: that of the dependency it stands for)
    let mut new_deps: Vec<(String, &str)> = Vec::new();
    let build_deps: Vec<String> = table.get("build-dependencies").and_then(|d| d.as_table()).map(|d| d.keys().cloned().collect()).unwrap_or_default();

    let dependencies = table_dependencies(manifest);
    if let Some(features) = table.get_mut("features").and_then(|f| f.as_table_mut()) {
        let originals: Vec<(String, toml::Value)> = features.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (name, value) in originals {
            let key_line = line_of(manifest, "features", &name, None);
            if let Some((_, reason)) = UNMIRRORABLE_FEATURES.iter().find(|(f, _)| *f == name) {
                gaps.push(Gap::new(file, key_line, &format!("feature `{name}`"), &name, reason));
                continue;
            }
            if !is_cuda_feature(&name) {
                continue;
            }
            let twin_name = twin_feature(&name);
            let mut twin_values = Vec::new();
            for v in value.as_array().into_iter().flatten() {
                let v = v.as_str().ok_or_else(|| TranslateError::unsupported(file, key_line, &format!("feature `{name}`"), "a feature value is not a string"))?;
                let line = line_of(manifest, "features", &name, Some(v));
                let mapped = if let Some((_, to)) = FEATURE_DEPENDENCIES.iter().find(|(from, _)| *from == v) {
                    to.to_string()
                } else if UNMIRRORABLE_FEATURES.iter().any(|(f, _)| *f == v) {
                    continue;
                } else if let Some((_, reason)) = UNMIRRORABLE_FEATURE_DEPENDENCIES.iter().find(|(d, _)| *d == v) {
                    gaps.push(Gap::new(file, line, &format!("feature `{name}` = \"{v}\""), v, reason));
                    continue;
                } else if v.strip_suffix("/cuda").is_some_and(|c| DEVICE_TYPE_CRATES.iter().any(|(k, _, _)| *k == c)) {
                    // `float8/cuda`: the HIP layer's traits for that crate, chosen by version below
                    continue;
                } else if is_cuda_feature(v) && features_contains(&table_features(manifest), v) {
                    twin_feature(v)
                } else if let Some(twin) = twinned_dependency_feature(&dependencies, paths, v) {
                    twin
                } else if let Some(package) = untwinned_dependency(&dependencies, paths, v) {
                    // `mistralrs-quant/cuda` of a crate with no ROCm twin here: left out, said why
                    gaps.push(Gap::new(file, line, &format!("feature `{name}` = \"{v}\""), v, &format!("{package} has no ROCm twin here (not a Candle package, not ported beside this one): its CUDA feature is left out of `{twin_name}`")));
                    continue;
                } else if is_cuda_ident(v) {
                    return Err(TranslateError::unsupported(file, line, &format!("feature `{name}` = \"{v}\""), "no ROCm counterpart for this feature dependency: add it to mapping::FEATURE_DEPENDENCIES"));
                } else {
                    v.to_string()
                };
                // `dep:candle-rocm-hip`, or `candle-rocm-hip/rccl` in a package
                // that did not depend on the HIP layer (candle-examples' `nccl`); values
                // kept as upstream wrote them (`dep:half`) name upstream's own crates
                let rocm_crate = if mapped == v { None } else { mapped.strip_prefix("dep:").or_else(|| mapped.split_once('/').map(|(c, _)| c).filter(|c| paths.rocm_crates.contains_key(*c))) };
                if let Some(dep) = rocm_crate {
                    // a build tool's stand-in (cudaforge: candle-rocm-build) builds too
                    let build = v.strip_prefix("dep:").is_some_and(|d| build_deps.iter().any(|b| b == d));
                    new_deps.push((dep.to_string(), if build { "build-dependencies" } else { "dependencies" }));
                }
                twin_values.push(toml::Value::String(mapped));
            }
            if twin_values.iter().any(|v| v.as_str() == Some("dep:candle-rocm-hip")) {
                twin_values.extend(device_type_features.iter().map(|f| toml::Value::String(f.clone())));
            }
            features.insert(twin_name, toml::Value::Array(twin_values));
            twinned_features += 1;
        }
    }

    for (dep, section) in new_deps {
        let deps = table.entry(section).or_insert_with(|| toml::Value::Table(toml::Table::new())).as_table_mut().ok_or_else(|| TranslateError::unsupported(file, line_of(manifest, section, "", None), &format!("[{section}]"), "is not a table"))?;
        let path = paths.rocm_crates.get(&dep).ok_or_else(|| TranslateError::unsupported(file, line_of(manifest, "features", "", None), &format!("dep:{dep}"), "no path for this ROCm crate"))?;
        let mut spec = toml::Table::new();
        spec.insert("path".into(), toml::Value::String(path.clone()));
        spec.insert("optional".into(), toml::Value::Boolean(true));
        deps.insert(dep, toml::Value::Table(spec));
    }
    for section in ["dependencies", "dev-dependencies"] {
        let Some(deps) = table.get_mut(section).and_then(|d| d.as_table_mut()) else { continue };
        for (key, spec) in deps.iter_mut() {
            let Some(spec) = spec.as_table_mut() else { continue };
            let package = dependency_package(key, spec.get("package")).to_string();
            if let Some(path) = paths.siblings.get(&package) {
                spec.insert("path".into(), toml::Value::String(path.clone()));
            }
        }
    }
    restore_dev_dependencies(&mut table, paths);
    add_sibling_patches(&mut table, paths);
    table.remove("bench");
    // tests and examples whose files the mirrored package carries stay
    for (targets, dir) in [("test", "tests"), ("example", "examples")] {
        if let Some(list) = table.get_mut(targets).and_then(|t| t.as_array_mut()) {
            // a target without `path` (a checkout's manifest) is where cargo looks for it
            list.retain(|t| target_root(t, dir, has_file).is_some_and(|p| has_file(&p)));
        }
    }
    let either_backend_examples = either_backend_examples(&mut table);
    if table.get("example").and_then(|e| e.as_array()).is_some_and(|e| e.is_empty()) {
        table.remove("example");
    }
    let body = toml::to_string(&table).map_err(|e| TranslateError::unsupported(file, 1, "Cargo.toml", format!("does not serialize: {e}")))?;
    let text = format!("# Generated by `cargo xtask regen` from {label} (Cargo.toml, with ROCm features). Do not edit: fix the translator rule instead.\n{body}");
    Ok(MirroredManifest { text, gaps, twinned_features, either_backend_examples })
}

/// Where cargo finds a `[[test]]` or `[[example]]` target (`dir`: `tests`,
/// `examples`): its `path`, else (a checkout's manifest) `DIR/NAME.rs` or
/// `DIR/NAME/main.rs`, whichever `has_file`.
fn target_root(target: &toml::Value, dir: &str, has_file: &dyn Fn(&str) -> bool) -> Option<String> {
    match (target.get("path").and_then(|p| p.as_str()), target.get("name").and_then(|n| n.as_str())) {
        (Some(path), _) => Some(path.to_string()),
        (None, Some(name)) => [format!("{dir}/{name}.rs"), format!("{dir}/{name}/main.rs")].into_iter().find(|p| has_file(p)),
        (None, None) => None,
    }
}

/// Whether an `[[example]]` requires the `cuda` feature upstream.
fn requires_cuda_feature(example: &toml::Value) -> bool {
    example.get("required-features").and_then(|f| f.as_array()).is_some_and(|f| f.iter().any(|v| v.as_str() == Some("cuda")))
}

/// The roots of upstream's examples that require the `cuda` feature
/// (`examples/llama_multiprocess/main.rs`): CUDA-only code, whose files are
/// mirrored with rule `cuda-gates` as a package that needs CUDA is.
pub fn cuda_only_examples(manifest: &str, has_file: &dyn Fn(&str) -> bool) -> Vec<String> {
    let table: toml::Table = manifest.parse().unwrap_or_default();
    let examples = table.get("example").and_then(|e| e.as_array()).into_iter().flatten();
    examples.filter(|e| requires_cuda_feature(e)).filter_map(|e| target_root(e, "examples", has_file)).collect()
}

/// Rule `either-backend-examples` (see [`EITHER_BACKEND_FEATURES`]): the
/// examples that require `cuda` and a feature of the table require the
/// table's either-backend feature instead, and not `cuda`; the package gets
/// each such feature, turned on by the CUDA feature and its ROCm twin.
/// Returns how many examples it changed.
fn either_backend_examples(table: &mut toml::Table) -> usize {
    let mut used: Vec<(&str, &str)> = Vec::new();
    let mut changed = 0;
    for example in table.get_mut("example").and_then(|e| e.as_array_mut()).into_iter().flatten() {
        if !requires_cuda_feature(example) {
            continue;
        }
        let Some(required) = example.get_mut("required-features").and_then(|f| f.as_array_mut()) else { continue };
        let either: Vec<(&str, &str)> = EITHER_BACKEND_FEATURES.iter().filter(|(f, _)| required.iter().any(|v| v.as_str() == Some(*f))).copied().collect();
        if either.is_empty() {
            continue;
        }
        required.retain(|v| v.as_str() != Some("cuda"));
        for value in required.iter_mut() {
            if let Some((_, to)) = either.iter().find(|(from, _)| value.as_str() == Some(*from)) {
                *value = toml::Value::String(to.to_string());
            }
        }
        used.extend(either);
        changed += 1;
    }
    used.sort();
    used.dedup();
    let Some(features) = table.get_mut("features").and_then(|f| f.as_table_mut()) else { return changed };
    for (cuda, either) in used {
        for implied_by in [cuda.to_string(), twin_feature(cuda)] {
            if let Some(values) = features.get_mut(&implied_by).and_then(|v| v.as_array_mut()) {
                values.push(toml::Value::String(either.to_string()));
            }
        }
        features.insert(either.to_string(), toml::Value::Array(Vec::new()));
    }
    changed
}

/// A feature of upstream's CUDA backend: named in [`FEATURES`], or a CUDA
/// identifier (`cuda`, `cuda-graphs`).
fn is_cuda_feature(name: &str) -> bool {
    FEATURES.iter().any(|(from, _)| *from == name) || is_cuda_ident(name)
}

/// The dependencies on mirrored candle crates that upstream builds with `cuda`
/// unconditionally (candle-flash-attn: `candle = { package = "candle-core",
/// features = ["cuda"] }`): their keys.
fn unconditional_cuda_dependencies(table: &toml::Table) -> Vec<String> {
    let Some(deps) = table.get("dependencies").and_then(|d| d.as_table()) else { return Vec::new() };
    deps.iter()
        .filter(|(key, spec)| {
            let package = dependency_package(key, spec.get("package"));
            let optional = spec.get("optional").and_then(|o| o.as_bool()).unwrap_or(false);
            CUDA_FEATURE_PACKAGES.contains(&package) && !optional && spec.get("features").and_then(|f| f.as_array()).is_some_and(|f| f.iter().any(|v| v.as_str() == Some("cuda")))
        })
        .map(|(key, _)| key.clone())
        .collect()
}

/// Whether upstream's package needs CUDA unconditionally (a dependency on a
/// candle crate with feature `cuda`): its sources are then mirrored with rule
/// `cuda-gates`.
pub fn requires_cuda(manifest: &str) -> bool {
    manifest.parse::<toml::Table>().is_ok_and(|t| !unconditional_cuda_dependencies(&t).is_empty())
}

/// Rule `cuda-dependency-features`: a candle dependency upstream builds with
/// `cuda` unconditionally loses that feature, and the package gets a `cuda`
/// feature that turns it on (`cuda = ["candle/cuda"]`), whose twin (`rocm =
/// ["candle/rocm"]`) the feature rule makes: the package then builds with
/// either backend, as the others do. Returns how many features it made.
fn cuda_as_feature(table: &mut toml::Table) -> usize {
    let keys = unconditional_cuda_dependencies(table);
    for key in &keys {
        if let Some(features) = table.get_mut("dependencies").and_then(|d| d.get_mut(key)).and_then(|s| s.get_mut("features")).and_then(|f| f.as_array_mut()) {
            features.retain(|v| v.as_str() != Some("cuda"));
        }
    }
    if keys.is_empty() {
        return 0;
    }
    let features = table.entry("features").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(features) = features.as_table_mut() else { return 0 };
    let cuda = features.entry("cuda").or_insert_with(|| toml::Value::Array(Vec::new()));
    if let Some(values) = cuda.as_array_mut() {
        for key in &keys {
            values.push(toml::Value::String(format!("{key}/cuda")));
        }
    }
    keys.len()
}

/// Rule `backend-neutral-features` (see [`BACKEND_NEUTRAL_PACKAGES`]): returns how many
/// features it changed.
fn backend_neutral_features(table: &mut toml::Table, paths: &PackagePaths) -> usize {
    let Some(features) = table.get_mut("features").and_then(|f| f.as_table_mut()) else { return 0 };
    let mut enabled = Vec::new();
    let mut changed = 0;
    for (name, value) in features.iter_mut() {
        if is_cuda_feature(name) {
            continue;
        }
        let Some(values) = value.as_array_mut() else { continue };
        let neutral: Vec<String> = values
            .iter()
            .filter_map(|v| v.as_str()?.strip_prefix("dep:"))
            .filter(|d| BACKEND_NEUTRAL_PACKAGES.contains(d) && paths.siblings.contains_key(*d))
            .map(str::to_string)
            .collect();
        if neutral.is_empty() || !values.iter().any(|v| v.as_str() == Some("cuda")) {
            continue;
        }
        values.retain(|v| v.as_str() != Some("cuda"));
        enabled.extend(neutral);
        changed += 1;
    }
    enabled.sort();
    enabled.dedup();
    // the feature rule twins `cuda`'s values into `rocm` (FEATURE_DEPENDENCIES)
    if let Some(values) = features.get_mut("cuda").and_then(|v| v.as_array_mut()) {
        for dep in &enabled {
            let value = toml::Value::String(format!("{dep}?/cuda"));
            if !values.contains(&value) {
                values.push(value);
            }
        }
    }
    changed
}

/// Rule `restored-dev-dependencies`: the dev-dependencies of
/// [`RESTORED_DEV_DEPENDENCIES`] that the manifest lacks, as generated siblings.
fn restore_dev_dependencies(table: &mut toml::Table, paths: &PackagePaths) {
    let package = table.get("package").and_then(|p| p.get("name")).and_then(|n| n.as_str()).unwrap_or_default().to_string();
    let version = table.get("package").and_then(|p| p.get("version")).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    for (_, dep) in RESTORED_DEV_DEPENDENCIES.iter().filter(|(p, _)| *p == package) {
        let Some(path) = paths.siblings.get(*dep) else { continue };
        let devs = table.entry("dev-dependencies").or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(devs) = devs.as_table_mut() {
            if !devs.contains_key(*dep) {
                let mut spec = toml::Table::new();
                spec.insert("path".into(), toml::Value::String(path.clone()));
                spec.insert("version".into(), toml::Value::String(version.clone()));
                devs.insert(dep.to_string(), toml::Value::Table(spec));
            }
        }
    }
}

/// Rule `uncarried-build-script`: a build script the mirrored package does not
/// carry (candle-flash-attn's, which compiles its CUDA kernels with nvcc) goes
/// from the manifest with its build dependencies; the ROCm side's kernels are
/// built by the kernels crate.
fn drop_uncarried_build_script(table: &mut toml::Table, has_file: &dyn Fn(&str) -> bool) {
    let script = table.get("package").and_then(|p| p.get("build")).and_then(|b| b.as_str()).map(str::to_string);
    if let Some(script) = script {
        if !has_file(&script) {
            if let Some(package) = table.get_mut("package").and_then(|p| p.as_table_mut()) {
                package.remove("build");
            }
            table.remove("build-dependencies");
        }
    }
}

/// Rule `build-tools`, the manifest's side: a build dependency on a CUDA build tool
/// (cudaforge, bindgen_cuda: [`BUILD_TOOL_NAMES`]) that is not optional becomes one on
/// candle-rocm-build, at its path in `paths`, for a package whose build script that rule
/// ported. Optional ones (a feature turns them on) are the feature rule's.
pub fn build_tools_as_candle_rocm_build(file: &str, manifest: &str, paths: &PackagePaths) -> Result<String, TranslateError> {
    let mut table: toml::Table = manifest.parse().map_err(|e: toml::de::Error| TranslateError::unsupported(file, 1, "Cargo.toml", format!("does not parse: {}", e.message())))?;
    let Some(deps) = table.get_mut("build-dependencies").and_then(|d| d.as_table_mut()) else { return Ok(manifest.to_string()) };
    let tools: Vec<String> = deps
        .iter()
        .filter(|(name, spec)| BUILD_TOOL_NAMES.iter().any(|(tool, _, _)| tool.replace('_', "-") == name.replace('_', "-")) && !spec.get("optional").and_then(|o| o.as_bool()).unwrap_or(false))
        .map(|(name, _)| name.clone())
        .collect();
    if tools.is_empty() {
        return Ok(manifest.to_string());
    }
    let path = paths.rocm_crates.get("candle-rocm-build").ok_or_else(|| TranslateError::unsupported(file, line_of(manifest, "build-dependencies", &tools[0], None), &format!("[build-dependencies] {}", tools[0]), "no path for candle-rocm-build"))?;
    for tool in tools {
        deps.remove(&tool);
    }
    let mut spec = toml::Table::new();
    spec.insert("path".into(), toml::Value::String(path.clone()));
    deps.insert("candle-rocm-build".into(), toml::Value::Table(spec));
    print_with_header(file, manifest, &table)
}

/// `table` printed as a manifest, after the comment lines that begin `manifest` (the
/// provenance line a mirrored manifest starts with stays when a later rule edits it).
pub fn print_with_header(file: &str, manifest: &str, table: &toml::Table) -> Result<String, TranslateError> {
    let body = toml::to_string(table).map_err(|e| TranslateError::unsupported(file, 1, "Cargo.toml", format!("does not print: {e}")))?;
    let header: String = manifest.lines().take_while(|l| l.starts_with('#')).map(|l| format!("{l}\n")).collect();
    Ok(format!("{header}{body}"))
}

/// The name of a CUDA feature's ROCm twin: [`FEATURES`] (`nccl` → `rccl`),
/// else the word rule (`cuda` → `rocm`, `cuda-graphs` → `rocm-graphs`).
/// `[dependencies]` (and dev- and build-) of a manifest: key → package.
fn table_dependencies(manifest: &str) -> BTreeMap<String, String> {
    let table: toml::Table = manifest.parse().unwrap_or_default();
    let mut out = BTreeMap::new();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        for (key, spec) in table.get(section).and_then(|d| d.as_table()).into_iter().flatten() {
            out.insert(key.clone(), dependency_package(key, spec.get("package")).to_string());
        }
    }
    out
}

/// `dep/feature` (or `dep?/feature`) split, with the dependency's package, when `feature`
/// is a CUDA feature and `dep` a dependency of the manifest.
fn cuda_feature_of_dependency<'a>(deps: &BTreeMap<String, String>, value: &'a str) -> Option<(&'a str, &'a str, String)> {
    let (dep, feature) = value.split_once('/')?;
    let key = dep.trim_end_matches('?');
    (is_cuda_feature(feature) && !value.starts_with("dep:")).then_some(())?;
    Some((dep, feature, deps.get(key)?.clone()))
}

/// The ROCm twin of a dependency's CUDA feature, where the dependency has a ROCm twin with
/// that feature: a generated Candle package (`candle-core/cuda` → `candle-core/rocm`, whatever
/// the key it is renamed to) or a package mirrored beside this one.
fn twinned_dependency_feature(deps: &BTreeMap<String, String>, paths: &PackagePaths, value: &str) -> Option<String> {
    let (dep, feature, package) = cuda_feature_of_dependency(deps, value)?;
    let candle = CUDA_FEATURE_PACKAGES.contains(&package.as_str()) || BACKEND_NEUTRAL_PACKAGES.contains(&package.as_str());
    let twinned = (candle && twin_feature(feature) != feature) || paths.siblings.contains_key(&package);
    twinned.then(|| format!("{dep}/{}", twin_feature(feature)))
}

/// The package of a dependency whose CUDA feature `value` names and that has no ROCm twin.
fn untwinned_dependency(deps: &BTreeMap<String, String>, paths: &PackagePaths, value: &str) -> Option<String> {
    let (_, feature, package) = cuda_feature_of_dependency(deps, value)?;
    (twin_feature(feature) != feature && twinned_dependency_feature(deps, paths, value).is_none()).then_some(package)
}

pub fn twin_feature(name: &str) -> String {
    FEATURES.iter().find(|(from, _)| *from == name).map_or_else(|| rules::rename(name).0, |(_, to)| to.to_string())
}

/// The package a dependency entry names: its `package` value, else the entry's name.
fn dependency_package<'a>(key: &'a str, package: Option<&'a toml::Value>) -> &'a str {
    package.and_then(|p| p.as_str()).unwrap_or(key)
}

/// Rule `package-patches`: a package that also depends on upstream crates
/// regen does not mirror (candle-examples' optional candle-datasets and
/// candle-onnx, which depend on crates.io candle-core) gets a
/// `[patch.crates-io]` pointing the mirrored crates at their generated
/// siblings, so its build has one candle-core (the generated one) whatever
/// features are on. Cargo reads the section only when the package is the
/// workspace root (built in place), as a user's own `[patch]` does otherwise.
fn add_sibling_patches(table: &mut toml::Table, paths: &PackagePaths) {
    let mut depends_on = Vec::new();
    for section in ["dependencies", "dev-dependencies"] {
        for (key, spec) in table.get(section).and_then(|d| d.as_table()).into_iter().flatten() {
            depends_on.push(dependency_package(key, spec.get("package")).to_string());
        }
    }
    if !depends_on.iter().any(|p| UNMIRRORED_CANDLE_DEPENDENTS.contains(&p.as_str()) && !paths.siblings.contains_key(p)) {
        return;
    }
    let patches: toml::Table = paths
        .siblings
        .iter()
        .filter(|(name, _)| depends_on.contains(name))
        .map(|(name, path)| (name.clone(), toml::Value::Table([("path".to_string(), toml::Value::String(path.clone()))].into_iter().collect())))
        .collect();
    let mut patch = toml::Table::new();
    patch.insert("crates-io".into(), toml::Value::Table(patches));
    table.insert("patch".into(), toml::Value::Table(patch));
}

/// The HIP layer features that implement its device traits for the
/// versions of [`DEVICE_TYPE_CRATES`] upstream depends on (float8 0.6 →
/// `candle-rocm-hip/float8-0_6`); a version the HIP layer has no
/// implementation for is an error at the dependency's line.
fn device_type_features(file: &str, manifest: &str, table: &toml::Table) -> Result<Vec<String>, TranslateError> {
    let mut found = Vec::new();
    let mut crates: Vec<&str> = DEVICE_TYPE_CRATES.iter().map(|(c, _, _)| *c).collect();
    crates.dedup();
    for krate in crates {
        let Some(spec) = table.get("dependencies").and_then(|d| d.get(krate)) else { continue };
        let req = match spec {
            toml::Value::String(s) => s.as_str(),
            other => other.get("version").and_then(|v| v.as_str()).unwrap_or(""),
        };
        let line = line_of(manifest, &format!("dependencies.{krate}"), "version", None).max(line_of(manifest, "dependencies", krate, None));
        let major_minor = major_minor(req);
        match DEVICE_TYPE_CRATES.iter().find(|(c, v, _)| *c == krate && Some(*v) == major_minor.as_deref()) {
            Some((_, _, "")) => {}
            Some((_, _, feature)) => found.push(feature.to_string()),
            None => {
                let known: Vec<&str> = DEVICE_TYPE_CRATES.iter().filter(|(c, _, _)| *c == krate).map(|(_, v, _)| *v).collect();
                return Err(TranslateError::unsupported(
                    file,
                    line,
                    &format!("dependency {krate} = \"{req}\""),
                    format!("the HIP layer implements its device traits for {krate} {} only: add the version to rocm-runtime/hip and mapping::DEVICE_TYPE_CRATES", known.join(", ")),
                ));
            }
        }
    }
    Ok(found)
}

/// `"0.6.0"`, `"^0.6"`, `"=0.6.1"` → `"0.6"`.
fn major_minor(req: &str) -> Option<String> {
    let req = req.trim().trim_start_matches(['^', '=', '~', ' ']);
    let mut parts = req.split('.');
    let (major, minor) = (parts.next()?, parts.next().unwrap_or("0"));
    (major.chars().all(|c| c.is_ascii_digit()) && minor.chars().all(|c| c.is_ascii_digit()) && !major.is_empty()).then(|| format!("{major}.{minor}"))
}

/// The 1-based line of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> u32 {
    text[..offset.min(text.len())].matches('\n').count() as u32 + 1
}

/// The line (1-based) where table `section` (`features`, `dependencies.float8`)
/// sets `key` (the table's header when `key` is empty), or with `value`, the
/// first line from there naming `"value"`; 0 when the manifest has no such key.
pub fn line_of(text: &str, section: &str, key: &str, value: Option<&str>) -> u32 {
    let mut current = String::new();
    let mut key_line = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i as u32 + 1;
        let t = line.trim();
        if t.starts_with('[') {
            if key_line > 0 {
                break;
            }
            current = t.trim_start_matches('[').split(']').next().unwrap_or("").trim().replace(['"', ' '], "");
            if current == section && key.is_empty() {
                return n;
            }
            continue;
        }
        if current != section {
            continue;
        }
        if key_line == 0 {
            let k = t.split('=').next().unwrap_or("").trim().trim_matches(['"', '\'']);
            // `key = ...`, or dotted: `key.workspace = true`
            if t.contains('=') && (k == key || k.strip_prefix(key).is_some_and(|rest| rest.starts_with('.'))) {
                key_line = n;
            } else {
                continue;
            }
        }
        match value {
            None => return key_line,
            Some(v) if line.contains(&format!("\"{v}\"")) || line.contains(&format!("'{v}'")) => return n,
            Some(_) => {}
        }
    }
    key_line
}

fn table_features(manifest: &str) -> Vec<String> {
    manifest.parse::<toml::Table>().ok().and_then(|t| t.get("features").and_then(|f| f.as_table()).map(|f| f.keys().cloned().collect())).unwrap_or_default()
}

fn features_contains(features: &[String], name: &str) -> bool {
    features.iter().any(|f| f == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: &str = r#"
[package]
name = "candle-core"
version = "0.11.1"

[features]
cuda = ["cudarc", "dep:candle-kernels"]
cudnn = ["cuda", "cudarc/cudnn"]
metal = ["dep:objc2-metal"]

[[example]]
name = "basics"
path = "examples/basics.rs"

[[test]]
name = "tensor_tests"
path = "tests/tensor_tests.rs"

[[test]]
name = "gone"
path = "tests/gone.rs"

[dependencies.cudarc]
version = "0.19.10"
optional = true
"#;

    fn paths() -> PackagePaths {
        PackagePaths {
            rocm_crates: [("candle-rocm-hip", "../../rocm-runtime/hip"), ("candle-rocm-kernels", "../../rocm-runtime/kernels"), ("candle-rocm-build", "../../candle-rocm-build")].into_iter().map(|(a, b)| (a.into(), b.into())).collect(),
            siblings: [("candle-core".to_string(), "../candle-core".to_string())].into(),
        }
    }

    #[test]
    fn the_cuda_feature_gets_a_rocm_twin_with_its_crates() {
        let m = mirror_manifest("Cargo.toml", "candle-core 0.11.1", CORE, &paths(), &|p| p == "tests/tensor_tests.rs").unwrap();
        let t: toml::Table = m.text.parse().unwrap();
        assert_eq!(t["features"]["rocm"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>(), ["dep:candle-rocm-hip", "dep:candle-rocm-kernels"]);
        assert!(t["features"].get("cuda").is_some(), "the CUDA feature stays");
        assert_eq!(t["dependencies"]["candle-rocm-hip"]["path"].as_str(), Some("../../rocm-runtime/hip"));
        assert_eq!(t["dependencies"]["candle-rocm-kernels"]["optional"].as_bool(), Some(true));
        assert!(t.get("example").is_none());
        assert_eq!(t["test"].as_array().unwrap().len(), 1);
        assert_eq!(m.gaps.len(), 1);
        assert_eq!(m.gaps[0].feature, "cudnn");
        assert!(m.text.starts_with("# Generated by `cargo xtask regen` from candle-core 0.11.1"));
    }

    #[test]
    fn the_nccl_feature_gets_an_rccl_twin_over_the_hip_layer() {
        // candle-core: the HIP layer is already a dependency of the rocm twin
        let core = "[package]\nname = \"candle-core\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"cudarc\"]\nnccl = [\"cuda\", \"cudarc/nccl\"]\n[dependencies.cudarc]\nversion = \"0.19.10\"\noptional = true\n";
        let m = mirror_manifest("Cargo.toml", "candle-core 0.11.1", core, &paths(), &|_| true).unwrap();
        let t: toml::Table = m.text.parse().unwrap();
        let values = |f: &str| t["features"][f].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(values("rccl"), ["rocm", "candle-rocm-hip/rccl"]);
        assert_eq!(values("nccl"), ["cuda", "cudarc/nccl"], "the NCCL feature stays");
        assert!(m.gaps.is_empty(), "{:?}", m.gaps.iter().map(|g| &g.feature).collect::<Vec<_>>());
        // candle-examples: no HIP layer dependency before; the twin adds it, optional
        let examples = "[package]\nname = \"candle-examples\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"candle/cuda\"]\nnccl = [\"cuda\", \"cudarc/nccl\", \"dep:half\"]\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n[dependencies.half]\nversion = \"2\"\noptional = true\n";
        let m = mirror_manifest("Cargo.toml", "candle-examples 0.11.1", examples, &paths(), &|_| true).unwrap();
        let t: toml::Table = m.text.parse().unwrap();
        assert_eq!(t["features"]["rccl"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>(), ["rocm", "candle-rocm-hip/rccl", "dep:half"]);
        assert_eq!(t["dependencies"]["candle-rocm-hip"]["optional"].as_bool(), Some(true));
        assert_eq!(t["dependencies"]["candle-rocm-hip"]["path"].as_str(), Some("../../rocm-runtime/hip"));
    }

    /// Rule `own-kernel-builds`: cudaforge, a build-dependency, stands for candle-rocm-build.
    #[test]
    fn a_cuda_build_tool_gets_its_rocm_build_dependency() {
        let ex = "[package]\nname = \"candle-examples\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"dep:cudaforge\"]\n[build-dependencies.cudaforge]\nversion = \"0.1.2\"\noptional = true\n";
        let m = mirror_manifest("Cargo.toml", "candle-examples 0.11.1", ex, &paths(), &|_| true).unwrap();
        let t: toml::Table = m.text.parse().unwrap();
        assert_eq!(t["features"]["rocm"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>(), ["dep:candle-rocm-build"]);
        assert_eq!(t["build-dependencies"]["candle-rocm-build"]["path"].as_str(), Some("../../candle-rocm-build"));
        assert_eq!(t["build-dependencies"]["candle-rocm-build"]["optional"].as_bool(), Some(true));
        assert!(t.get("dependencies").and_then(|d| d.get("candle-rocm-build")).is_none());
        assert!(m.gaps.is_empty());
    }

    #[test]
    fn a_package_that_needs_cuda_gets_cuda_and_rocm_features_and_no_cuda_build_script() {
        let fa = "[package]\nname = \"candle-flash-attn\"\nversion = \"0.11.1\"\nbuild = \"build.rs\"\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\nfeatures = [\"cuda\"]\n[build-dependencies.cudaforge]\nversion = \"0.1.2\"\n";
        assert!(requires_cuda(fa));
        let out = mirror_manifest("Cargo.toml", "x", fa, &paths(), &|p| p != "build.rs").unwrap();
        let t: toml::Table = out.text.parse().unwrap();
        let values = |f: &str| t["features"][f].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(values("cuda"), ["candle/cuda"]);
        assert_eq!(values("rocm"), ["candle/rocm"]);
        assert!(t["dependencies"]["candle"]["features"].as_array().unwrap().is_empty(), "{}", out.text);
        assert!(t["package"].get("build").is_none() && t.get("build-dependencies").is_none(), "{}", out.text);
        // the dev-dependency publishing dropped comes back as the generated sibling
        let mut with_nn = paths();
        with_nn.siblings.insert("candle-nn".into(), "../candle-nn".into());
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", fa, &with_nn, &|_| true).unwrap().text.parse().unwrap();
        assert_eq!(t["dev-dependencies"]["candle-nn"]["path"].as_str(), Some("../candle-nn"));
        // a package whose candle dependency has no unconditional cuda is left alone
        let nn = "[package]\nname = \"candle-nn\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"candle/cuda\"]\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n";
        assert!(!requires_cuda(nn));
    }

    #[test]
    fn a_ported_build_scripts_tool_becomes_candle_rocm_build() {
        let m = "# header\n[package]\nname = \"x\"\n[build-dependencies]\ncudaforge = \"0.1.6\"\nanyhow = \"1\"\n[build-dependencies.bindgen_cuda]\nversion = \"0.1\"\noptional = true\n";
        let out = build_tools_as_candle_rocm_build("Cargo.toml", m, &paths()).unwrap();
        assert!(out.starts_with("# header\n"), "{out}");
        let t: toml::Table = out.parse().unwrap();
        let deps = t["build-dependencies"].as_table().unwrap();
        assert_eq!(deps.keys().collect::<Vec<_>>(), ["anyhow", "bindgen_cuda", "candle-rocm-build"]);
        assert_eq!(deps["candle-rocm-build"]["path"].as_str(), paths().rocm_crates.get("candle-rocm-build").map(String::as_str));
        assert_eq!(build_tools_as_candle_rocm_build("Cargo.toml", "[package]\nname = \"y\"\n", &paths()).unwrap(), "[package]\nname = \"y\"\n");
    }

    #[test]
    fn a_feature_that_turned_on_cuda_for_flash_attention_turns_on_either_backend() {
        let tr = "[package]\nname = \"candle-transformers\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"candle/cuda\"]\nflash-attn = [\"cuda\", \"dep:candle-flash-attn\"]\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n[dependencies.candle-flash-attn]\nversion = \"0.11.1\"\noptional = true\n";
        let mut with_fa = paths();
        with_fa.siblings.insert("candle-flash-attn".into(), "../candle-flash-attn".into());
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", tr, &with_fa, &|_| true).unwrap().text.parse().unwrap();
        let values = |f: &str| t["features"][f].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(values("flash-attn"), ["dep:candle-flash-attn"]);
        assert_eq!(values("cuda"), ["candle/cuda", "candle-flash-attn?/cuda"]);
        assert_eq!(values("rocm"), ["candle/rocm", "candle-flash-attn?/rocm"]);
        // where candle-flash-attn is not mirrored (an older release) the feature stays
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", tr, &paths(), &|_| true).unwrap().text.parse().unwrap();
        assert_eq!(t["features"]["flash-attn"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn an_example_that_requires_cuda_and_nccl_requires_nccl_or_rccl() {
        let ex = "[package]\nname = \"candle-examples\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"candle/cuda\"]\nnccl = [\"cuda\", \"cudarc/nccl\"]\nflash-attn = [\"dep:candle-flash-attn\"]\n\
                  [[example]]\nname = \"mp\"\npath = \"examples/mp/main.rs\"\nrequired-features = [\"cuda\", \"nccl\", \"flash-attn\"]\n\
                  [[example]]\nname = \"only-cuda\"\nrequired-features = [\"cuda\"]\n\
                  [[example]]\nname = \"cpu\"\npath = \"examples/cpu.rs\"\n\
                  [dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n";
        let has_file = |p: &str| ["examples/mp/main.rs", "examples/only-cuda/main.rs", "examples/cpu.rs"].contains(&p);
        assert_eq!(cuda_only_examples(ex, &has_file), ["examples/mp/main.rs", "examples/only-cuda/main.rs"]);
        let m = mirror_manifest("Cargo.toml", "x", ex, &paths(), &has_file).unwrap();
        assert_eq!(m.either_backend_examples, 1);
        let t: toml::Table = m.text.parse().unwrap();
        let strings = |v: &toml::Value| v.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect::<Vec<_>>();
        let required: Vec<Vec<String>> = t["example"].as_array().unwrap().iter().map(|e| e.get("required-features").map(strings).unwrap_or_default()).collect();
        // before: ["cuda", "nccl", "flash-attn"], ["cuda"], []
        assert_eq!(required, [vec!["nccl-or-rccl", "flash-attn"], vec!["cuda"], vec![]]);
        assert_eq!(strings(&t["features"]["nccl"]), ["cuda", "cudarc/nccl", "nccl-or-rccl"]);
        assert_eq!(strings(&t["features"]["rccl"]), ["rocm", "candle-rocm-hip/rccl", "nccl-or-rccl"]);
        assert!(strings(&t["features"]["nccl-or-rccl"]).is_empty());
        // a package without such an example gets no either-backend feature
        let core = "[package]\nname = \"candle-core\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"cudarc\"]\nnccl = [\"cuda\", \"cudarc/nccl\"]\n";
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", core, &paths(), &|_| true).unwrap().text.parse().unwrap();
        assert!(t["features"].get("nccl-or-rccl").is_none());
    }

    #[test]
    fn siblings_are_path_dependencies() {
        let nn = "[package]\nname = \"candle-nn\"\nversion = \"0.11.1\"\n[features]\ncuda = [\"candle/cuda\"]\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n";
        let m = mirror_manifest("Cargo.toml", "candle-nn 0.11.1", nn, &paths(), &|_| true).unwrap();
        let t: toml::Table = m.text.parse().unwrap();
        assert_eq!(t["dependencies"]["candle"]["path"].as_str(), Some("../candle-core"));
        assert_eq!(t["dependencies"]["candle"]["version"].as_str(), Some("0.11.1"));
        assert_eq!(t["features"]["rocm"].as_array().unwrap()[0].as_str(), Some("candle/rocm"));
    }

    /// 0.9.2's shape: a `float8/cuda` feature dependency on line 9, float8 0.6.
    const CORE_0_9_2: &str = "[package]\nname = \"candle-core\"\nversion = \"0.9.2\"\n\n[features]\ncuda = [\n    \"cudarc\",\n    \"dep:candle-kernels\",\n    \"float8/cuda\",\n    \"dep:ug-cuda\",\n]\ncudnn = [\"cuda\"]\n\n[dependencies.float8]\nversion = \"0.6.0\"\n";

    #[test]
    fn float8_cuda_turns_on_the_hip_traits_of_upstreams_float8_version() {
        let m = mirror_manifest("Cargo.toml", "candle-core 0.9.2", CORE_0_9_2, &paths(), &|_| true).unwrap();
        let t: toml::Table = m.text.parse().unwrap();
        let rocm: Vec<_> = t["features"]["rocm"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(rocm, ["dep:candle-rocm-hip", "dep:candle-rocm-kernels", "candle-rocm-hip/float8-0_6"]);
        // float8 0.7: the HIP layer always implements it, no feature
        let v07 = CORE_0_9_2.replace("0.6.0", "0.7.0");
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", &v07, &paths(), &|_| true).unwrap().text.parse().unwrap();
        assert_eq!(t["features"]["rocm"].as_array().unwrap().len(), 2);
        // a version the HIP layer lacks: an error at the version's line
        let v03 = CORE_0_9_2.replace("0.6.0", "0.3.0");
        let e = mirror_manifest("Cargo.toml", "x", &v03, &paths(), &|_| true).unwrap_err().to_string();
        assert!(e.starts_with("Cargo.toml:15:") && e.contains("float8 0.7, 0.6"), "{e}");
    }

    #[test]
    fn diagnostics_name_the_manifest_line() {
        let m = mirror_manifest("Cargo.toml", "candle-core 0.9.2", CORE_0_9_2, &paths(), &|_| true).unwrap();
        let lines: Vec<(u32, &str)> = m.gaps.iter().map(|g| (g.line, g.feature.as_str())).collect();
        assert_eq!(lines, [(10, "dep:ug-cuda"), (12, "cudnn")]);
        let bad = CORE_0_9_2.replace("\"float8/cuda\"", "\"foo-cuda/cuda\"");
        let e = mirror_manifest("Cargo.toml", "x", &bad, &paths(), &|_| true).unwrap_err().to_string();
        assert!(e.starts_with("Cargo.toml:9: feature `cuda` = \"foo-cuda/cuda\""), "{e}");
        let e = mirror_manifest("Cargo.toml", "x", "[package]\nname = \"x\"\n\n[features\n", &paths(), &|_| true).unwrap_err().to_string();
        assert!(e.starts_with("Cargo.toml:4:"), "{e}");
    }

    #[test]
    fn lines_of_keys_and_values() {
        let text = "[package]\nname = \"x\"\n[features]\ncuda = [\"a\", \"b\"]\nmetal = [\n  \"c\",\n]\n[dependencies]\nfloat8 = \"0.6\"\n";
        assert_eq!(line_of(text, "features", "cuda", Some("b")), 4);
        assert_eq!(line_of(text, "features", "metal", Some("c")), 6);
        assert_eq!(line_of(text, "features", "metal", None), 5);
        assert_eq!(line_of(text, "features", "", None), 3);
        assert_eq!(line_of(text, "dependencies", "float8", None), 9);
        assert_eq!(line_of(text, "features", "nope", None), 0);
        assert_eq!(line_of("[package]\nname = \"x\"\nedition.workspace = true\n", "package", "edition", None), 3);
    }

    #[test]
    fn unmirrored_upstream_dependencies_get_the_siblings_as_patches() {
        let ex = "[package]\nname = \"candle-examples\"\nversion = \"0.11.1\"\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n[dependencies.candle-onnx]\nversion = \"0.11.1\"\noptional = true\n";
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", ex, &paths(), &|_| true).unwrap().text.parse().unwrap();
        assert_eq!(t["patch"]["crates-io"]["candle-core"]["path"].as_str(), Some("../candle-core"));
        // candle-nn depends on mirrored crates only: no patch
        let nn = "[package]\nname = \"candle-nn\"\nversion = \"0.11.1\"\n[dependencies.candle]\nversion = \"0.11.1\"\npackage = \"candle-core\"\n";
        let t: toml::Table = mirror_manifest("Cargo.toml", "x", nn, &paths(), &|_| true).unwrap().text.parse().unwrap();
        assert!(t.get("patch").is_none());
    }

    #[test]
    fn dependency_features_twin_by_shape_or_are_left_out_with_a_reason() {
        // mistral.rs 0.8.1: candle-core under its own name, a renamed candle-nn, a crate with no twin here
        let manifest = "[package]\nname = \"x\"\nversion = \"1.0.0\"\n[dependencies]\ncandle-core = \"0.10\"\nnn = { package = \"candle-nn\", version = \"0.10\" }\nsome-kernels = \"1\"\n[features]\ncuda = [\"candle-core/cuda\", \"nn/cuda\", \"some-kernels/cuda\"]\n";
        let out = mirror_manifest("Cargo.toml", "x", manifest, &paths(), &|_| true).unwrap();
        let table: toml::Table = out.text.parse().unwrap();
        let rocm: Vec<&str> = table["features"]["rocm"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
        assert!(rocm.contains(&"candle-core/rocm") && rocm.contains(&"nn/rocm"), "{rocm:?}");
        assert!(!rocm.iter().any(|v| v.starts_with("some-kernels")), "{rocm:?}");
        let gap = out.gaps.iter().find(|g| g.construct.contains("some-kernels/cuda")).expect("a gap for some-kernels/cuda");
        assert!(gap.reason.contains("some-kernels has no ROCm twin"), "{}", gap.reason);
    }

    #[test]
    fn an_unknown_cuda_dependency_is_an_error() {
        let bad = "[package]\nname = \"x\"\nversion = \"1.0.0\"\n[features]\ncuda = [\"dep:cuda-foo\"]\n";
        let err = mirror_manifest("Cargo.toml", "x", bad, &paths(), &|_| true).unwrap_err().to_string();
        assert!(err.contains("cuda-foo") && err.contains("FEATURE_DEPENDENCIES"), "{err}");
    }
}
