//! A checkout-shaped Candle tree made from a crates.io release, with no git
//! clone: what `regen --candle-src` reads from a real checkout, for CI and
//! tests. Each crate's directory is the registry's, its manifest the
//! original workspace-form one cargo keeps as `Cargo.toml.orig`
//! (`version.workspace = true`, `half = { workspace = true }`); the root
//! `Cargo.toml` has the `[workspace.package]` and `[workspace.dependencies]`
//! those manifests inherit, taken from the published (resolved) manifests.
//! A workspace dependency on one of the crates copied is a path
//! dependency, as upstream's root manifest has it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use crate::regen::upstream::{self, CandlePin};

/// Makes `dest` (emptied first) a checkout-shaped tree of release `version`.
pub fn make(pin: &CandlePin, version: &str, dest: &Path) -> Result<PathBuf> {
    let up = upstream::from_registry(pin, version)?;
    if dest.exists() {
        std::fs::remove_dir_all(dest).with_context(|| format!("removing {}", dest.display()))?;
    }
    let mut ws_package = Table::new();
    let mut ws_deps = Table::new();
    let members: Vec<&str> = up.crates().iter().map(|c| c.name.as_str()).collect();
    for krate in up.crates() {
        let to = dest.join(&krate.name);
        copy_crate(&krate.root, &to)?;
        let orig_path = krate.root.join("Cargo.toml.orig");
        let orig = std::fs::read_to_string(&orig_path).with_context(|| format!("reading {}", orig_path.display()))?;
        let published: DocumentMut = std::fs::read_to_string(krate.root.join("Cargo.toml"))?.parse().with_context(|| format!("parsing {}/Cargo.toml", krate.root.display()))?;
        let member: DocumentMut = orig.parse().with_context(|| format!("parsing {}", orig_path.display()))?;
        inherited(&member, &published, &members, &mut ws_package, &mut ws_deps);
        std::fs::write(to.join("Cargo.toml"), orig)?;
    }
    let mut root = DocumentMut::new();
    let mut workspace = Table::new();
    workspace.insert("members", Item::Value(Value::Array(members.iter().copied().collect())));
    workspace.insert("resolver", toml_edit::value("2"));
    workspace.insert("package", Item::Table(ws_package));
    workspace.insert("dependencies", Item::Table(ws_deps));
    root.insert("workspace", Item::Table(workspace));
    let text = format!("# A checkout-shaped tree of Candle {version} made by `cargo xtask releases` from the crates.io sources (no git clone).\n{root}");
    std::fs::write(dest.join("Cargo.toml"), text)?;
    Ok(dest.to_path_buf())
}

/// Adds what `member` inherits to the workspace tables, with the values of
/// its `published` manifest.
fn inherited(member: &DocumentMut, published: &DocumentMut, members: &[&str], ws_package: &mut Table, ws_deps: &mut Table) {
    let inherits = |item: &Item| item.as_table_like().and_then(|t| t.get("workspace")).and_then(Item::as_bool) == Some(true);
    if let (Some(m), Some(p)) = (member.get("package").and_then(Item::as_table_like), published.get("package").and_then(Item::as_table_like)) {
        for (key, item) in m.iter() {
            if let (true, Some(value)) = (inherits(item), p.get(key)) {
                ws_package.insert(key, value.clone());
            }
        }
    }
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let mut pairs = vec![(member.get(section), published.get(section))];
        if let (Some(mt), Some(pt)) = (member.get("target").and_then(Item::as_table_like), published.get("target").and_then(Item::as_table_like)) {
            for (cfg, m) in mt.iter() {
                pairs.push((m.get(section), pt.get(cfg).and_then(|p| p.get(section))));
            }
        }
        for (m, p) in pairs {
            let (Some(m), Some(p)) = (m.and_then(Item::as_table_like), p.and_then(Item::as_table_like)) else { continue };
            for (name, item) in m.iter() {
                let Some(resolved) = p.get(name).filter(|_| inherits(item)) else { continue };
                if ws_deps.contains_key(name) {
                    continue;
                }
                ws_deps.insert(name, Item::Value(Value::InlineTable(workspace_entry(name, resolved, members))));
            }
        }
    }
}

/// The workspace entry of a dependency, from its published (resolved) form:
/// version, package, default-features, features (not `optional`, which is
/// the member's); a path dependency when it is one of the crates copied.
fn workspace_entry(name: &str, resolved: &Item, members: &[&str]) -> InlineTable {
    let mut entry = InlineTable::new();
    match resolved {
        Item::Value(Value::String(v)) => {
            entry.insert("version", v.value().as_str().into());
        }
        other => {
            for (k, v) in other.as_table_like().into_iter().flat_map(|t| t.iter()) {
                if k != "optional" {
                    if let Some(v) = v.as_value() {
                        entry.insert(k, v.clone());
                    }
                }
            }
        }
    }
    let package = entry.get("package").and_then(Value::as_str).unwrap_or(name).to_string();
    if members.contains(&package.as_str()) {
        entry.insert("path", format!("./{package}").into());
    }
    entry.fmt();
    entry
}

/// The crate's files, without cargo's bookkeeping and manifests (the caller writes the manifest).
fn copy_crate(from: &Path, to: &Path) -> Result<()> {
    for (rel, bytes) in crate::tree::read_tree(from)? {
        if matches!(rel.as_str(), "Cargo.toml" | "Cargo.toml.orig" | "Cargo.lock" | ".cargo-ok" | ".cargo_vcs_info.json") {
            continue;
        }
        let path = to.join(&rel);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))?;
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    if !to.is_dir() {
        bail!("{} has no files", from.display());
    }
    Ok(())
}
