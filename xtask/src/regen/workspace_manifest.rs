//! A workspace member's manifest as cargo resolves it: what a Candle git
//! checkout's `candle-core/Cargo.toml` inherits from the checkout's root
//! manifest (`edition.workspace = true`, `half = { workspace = true,
//! features = [...] }`) written out, so the generated package builds on its
//! own (it is no member of that workspace).
//!
//! * `[package]` keys: the value of `[workspace.package]` (`readme` and
//!   `license-file` only when the member has that file: the generated
//!   package carries the member's files, not the root's);
//! * dependencies (every dependency table, `[target.*]` ones too): the
//!   `[workspace.dependencies]` entry, with the member's `features` added,
//!   its `optional`, and `default-features` as cargo merges it; a `path` of
//!   the workspace (another member) becomes a version requirement, which the
//!   manifest mirror points at the generated sibling where there is one;
//! * `[lints] workspace = true`: `[workspace.lints]`.
//!
//! Edits are in place (toml_edit), one line for one line, so the manifest
//! mirror's diagnostics still name the member's own lines.

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};
use translator::backend::package::line_of;

const DEPENDENCY_TABLES: &[&str] = &["dependencies", "dev-dependencies", "build-dependencies"];

/// `member` (the text of `member_file`, in `member_dir`) with every key it
/// inherits from `root` (the workspace's root manifest) resolved. Unchanged
/// when it inherits nothing.
pub fn resolve(member: &str, member_file: &str, root: &str, root_file: &str, member_dir: &Path) -> Result<String> {
    if !member.contains("workspace") {
        return Ok(member.to_string());
    }
    let mut doc: DocumentMut = member.parse().map_err(|e| anyhow!("{member_file}: does not parse: {e}"))?;
    let root: DocumentMut = root.parse().map_err(|e| anyhow!("{root_file}: does not parse: {e}"))?;
    let workspace = root.get("workspace").and_then(Item::as_table_like);
    let section = |name: &str| workspace.and_then(|w| w.get(name)).and_then(Item::as_table_like);
    let (ws_package, ws_deps) = (section("package"), section("dependencies"));
    let missing = |what: &str, line: u32| anyhow!("{member_file}:{line}: {what} is inherited from the workspace, but {root_file} has no [workspace.{what}]");

    if let Some(package) = doc.get_mut("package").and_then(Item::as_table_like_mut) {
        let keys: Vec<String> = package.iter().filter(|(_, v)| inherits(v)).map(|(k, _)| k.to_string()).collect();
        for key in keys {
            let line = line_of(member, "package", &key, None);
            let value = ws_package.and_then(|p| p.get(&key)).and_then(Item::as_value).ok_or_else(|| missing(&format!("package.{key}"), line))?;
            if matches!(key.as_str(), "readme" | "license-file") && !value.as_str().is_some_and(|f| member_dir.join(f).is_file()) {
                package.remove(&key);
                continue;
            }
            package.insert(&key, Item::Value(plain(value.clone())));
        }
    }

    let mut tables: Vec<Vec<String>> = DEPENDENCY_TABLES.iter().map(|t| vec![t.to_string()]).collect();
    if let Some(targets) = doc.get("target").and_then(Item::as_table_like) {
        for (cfg, _) in targets.iter() {
            tables.extend(DEPENDENCY_TABLES.iter().map(|t| vec!["target".to_string(), cfg.to_string(), t.to_string()]));
        }
    }
    for path in tables {
        let Some(deps) = table_at(&mut doc, &path) else { continue };
        let names: Vec<String> = deps.iter().filter(|(_, v)| inherits(v)).map(|(k, _)| k.to_string()).collect();
        for name in names {
            let line = line_of(member, &path.join("."), &name, None);
            let shared = ws_deps.and_then(|d| d.get(&name)).ok_or_else(|| missing(&format!("dependencies.{name}"), line))?;
            let version = ws_package.and_then(|p| p.get("version")).and_then(Item::as_str);
            let resolved = merge(shared, deps.get(&name).expect("listed"), version).map_err(|e| anyhow!("{member_file}:{line}: dependency `{name}`: {e}"))?;
            deps.insert(&name, Item::Value(Value::InlineTable(resolved)));
        }
    }

    if doc.get("lints").and_then(Item::as_table_like).is_some_and(|l| l.get("workspace").and_then(Item::as_bool) == Some(true)) {
        match section("lints") {
            Some(lints) => {
                let mut table = Table::new();
                for (k, v) in lints.iter() {
                    table.insert(k, v.clone());
                }
                doc.insert("lints", Item::Table(table));
            }
            None => bail!("{member_file}:{}: lints are inherited from the workspace, but {root_file} has no [workspace.lints]", line_of(member, "lints", "workspace", None)),
        }
    }
    Ok(doc.to_string())
}

/// [`resolve`] for a member (at `member_dir`) of the checkout at `checkout`,
/// whose root manifest is `checkout/Cargo.toml`; errors name the files as
/// paths inside the checkout.
pub fn resolve_in_checkout(member: &str, checkout: &Path, member_dir: &Path) -> Result<String> {
    let root_file = checkout.join("Cargo.toml");
    let member_file = member_dir.join("Cargo.toml");
    if !member.contains("workspace") {
        return Ok(member.to_string());
    }
    let root = std::fs::read_to_string(&root_file).map_err(|e| anyhow!("{}: {e} (the checkout's root manifest, which {} inherits from)", root_file.display(), member_file.display()))?;
    resolve(member, &member_file.display().to_string(), &root, &root_file.display().to_string(), member_dir)
}

/// `key.workspace = true` or `key = { workspace = true, ... }`.
fn inherits(item: &Item) -> bool {
    item.as_table_like().and_then(|t| t.get("workspace")).and_then(Item::as_bool) == Some(true)
}

/// The table of dependencies at `path` (`["target", "cfg(unix)", "dependencies"]`).
fn table_at<'a>(doc: &'a mut DocumentMut, path: &[String]) -> Option<&'a mut dyn toml_edit::TableLike> {
    let mut item = doc.as_item_mut();
    for key in path {
        item = item.as_table_like_mut()?.get_mut(key)?;
    }
    item.as_table_like_mut()
}

/// A value as it is written after `key = `.
fn plain(mut value: Value) -> Value {
    value.decor_mut().clear();
    value.decorated(" ", "")
}

/// The workspace's entry for a dependency, merged with the member's
/// `{ workspace = true, features, optional, default-features }` as cargo
/// merges them. A `path` (another workspace member) becomes a version
/// requirement: the entry's version, else the workspace's.
fn merge(shared: &Item, member: &Item, workspace_version: Option<&str>) -> Result<InlineTable> {
    let mut out = InlineTable::new();
    match shared {
        Item::Value(Value::String(req)) => {
            out.insert("version", req.value().as_str().into());
        }
        other => {
            let table = other.as_table_like().ok_or_else(|| anyhow!("the workspace entry is neither a version nor a table"))?;
            for (k, v) in table.iter() {
                if let Some(v) = v.as_value() {
                    out.insert(k, plain(v.clone()));
                }
            }
        }
    }
    if out.remove("path").is_some() && !out.contains_key("version") {
        let version = workspace_version.ok_or_else(|| anyhow!("a path dependency without a version, and no [workspace.package] version"))?;
        out.insert("version", version.into());
    }
    let member = member.as_table_like().expect("inherits() saw a table");
    let mut features: Vec<String> = Vec::new();
    for source in [out.get("features"), member.get("features").and_then(Item::as_value)] {
        for f in source.and_then(Value::as_array).into_iter().flatten() {
            let f = f.as_str().ok_or_else(|| anyhow!("a feature is not a string"))?.to_string();
            if !features.contains(&f) {
                features.push(f);
            }
        }
    }
    if features.is_empty() {
        out.remove("features");
    } else {
        out.insert("features", Value::Array(features.iter().collect::<Array>()));
    }
    // cargo: a member can turn default features on where the workspace turned them off, not off where it left them on
    let shared_off = out.get("default-features").or(out.get("default_features")).and_then(Value::as_bool) == Some(false);
    out.remove("default_features");
    out.remove("default-features");
    let member_on = member.get("default-features").or(member.get("default_features")).and_then(Item::as_bool) == Some(true);
    if shared_off && !member_on {
        out.insert("default-features", false.into());
    }
    if let Some(optional) = member.get("optional").and_then(Item::as_bool) {
        out.insert("optional", optional.into());
    }
    for key in ["package", "public"] {
        if let Some(v) = member.get(key).and_then(Item::as_value) {
            out.insert(key, plain(v.clone()));
        }
    }
    out.fmt();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = r#"[workspace]
members = ["candle-core", "candle-nn"]

[workspace.package]
version = "0.9.1"
edition = "2021"
license = "MIT OR Apache-2.0"
readme = "README.md"

[workspace.dependencies]
half = { version = "2.5.0", features = ["num-traits", "use-intrinsics", "rand_distr"] }
candle = { path = "./candle-core", package = "candle-core", version = "0.9.1" }
candle-kernels = { path = "./candle-kernels" }
gemm = { version = "0.17.0", features = ["wasm-simd128-enable"] }
cudarc = { version = "0.16.3", features = ["std", "cublas"], default-features = false }
"#;

    const MEMBER: &str = r#"[package]
name = "candle-nn"
version.workspace = true
edition.workspace = true
readme.workspace = true

[dependencies]
candle = { workspace = true }
candle-kernels = { workspace = true, optional = true }
half = { workspace = true, features = ["serde"] }
cudarc = { workspace = true, optional = true, features = ["f16"] }

[target.'cfg(not(target_arch = "wasm32"))'.dependencies]
gemm.workspace = true

[features]
cuda = ["candle/cuda"]
"#;

    #[test]
    fn inherited_keys_are_resolved_line_for_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = resolve(MEMBER, "candle-nn/Cargo.toml", ROOT, "Cargo.toml", dir.path()).unwrap();
        assert_eq!(out.lines().count(), MEMBER.lines().count() - 1, "{out}");
        assert_eq!(line_of(&out, "features", "cuda", None), line_of(MEMBER, "features", "cuda", None) - 1, "{out}");
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(t["package"]["version"].as_str(), Some("0.9.1"));
        assert_eq!(t["package"]["edition"].as_str(), Some("2021"));
        assert!(t["package"].get("readme").is_none(), "the member has no README.md: {out}");
        let deps = &t["dependencies"];
        assert_eq!(deps["candle"].as_table().unwrap().get("path"), None);
        assert_eq!(deps["candle"]["package"].as_str(), Some("candle-core"));
        assert_eq!(deps["candle"]["version"].as_str(), Some("0.9.1"));
        assert_eq!(deps["candle-kernels"]["version"].as_str(), Some("0.9.1"), "a path without a version: the workspace's");
        assert_eq!(deps["candle-kernels"]["optional"].as_bool(), Some(true));
        let features: Vec<_> = deps["half"]["features"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
        assert_eq!(features, ["num-traits", "use-intrinsics", "rand_distr", "serde"]);
        assert_eq!(deps["cudarc"]["default-features"].as_bool(), Some(false));
        assert_eq!(t["target"]["cfg(not(target_arch = \"wasm32\"))"]["dependencies"]["gemm"]["version"].as_str(), Some("0.17.0"));
        assert!(!out.contains("workspace"), "{out}");
    }

    #[test]
    fn a_key_the_root_lacks_is_an_error_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let member = MEMBER.replace("[dependencies]\n", "[dependencies]\nnope = { workspace = true }\n");
        let e = resolve(&member, "candle-nn/Cargo.toml", ROOT, "Cargo.toml", dir.path()).unwrap_err().to_string();
        assert_eq!(e, "candle-nn/Cargo.toml:8: dependencies.nope is inherited from the workspace, but Cargo.toml has no [workspace.dependencies.nope]");
        let e = resolve(MEMBER, "candle-nn/Cargo.toml", "[workspace]\n", "Cargo.toml", dir.path()).unwrap_err().to_string();
        assert_eq!(e, "candle-nn/Cargo.toml:3: package.version is inherited from the workspace, but Cargo.toml has no [workspace.package.version]");
    }

    #[test]
    fn a_published_manifest_is_left_as_it_is() {
        let text = "[package]\nname = \"x\"\nversion = \"1.0.0\"\n";
        assert_eq!(resolve(text, "x/Cargo.toml", "", "Cargo.toml", Path::new(".")).unwrap(), text);
    }
}
