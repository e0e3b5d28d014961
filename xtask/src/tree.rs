//! An in-memory file tree: read it, write it atomically, compare it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Relative `/`-separated path → contents, sorted.
pub type Tree = BTreeMap<String, Vec<u8>>;

/// Reads every file under `dir` (empty tree if `dir` does not exist).
pub fn read_tree(dir: &Path) -> Result<Tree> {
    let mut tree = Tree::new();
    if dir.exists() {
        read_into(dir, dir, &mut tree)?;
    }
    Ok(tree)
}

fn read_into(root: &Path, dir: &Path, tree: &mut Tree) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            read_into(root, &path, tree)?;
        } else {
            let rel = path.strip_prefix(root).expect("under root");
            let key = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/");
            tree.insert(key, std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
        }
    }
    Ok(())
}

/// Writes `tree` as the whole content of `out`: built beside it in a temporary
/// directory, then swapped in. On any failure `out` is left as it was.
pub fn write_atomic(tree: &Tree, out: &Path) -> Result<()> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name = out.file_name().context("output directory has no name")?.to_string_lossy().into_owned();
    remove_stale(parent, &name);
    let staging = tempfile::Builder::new().prefix(&format!(".{name}.tmp-")).tempdir_in(parent).with_context(|| format!("creating a staging directory in {}", parent.display()))?;
    for (rel, contents) in tree {
        let path = staging.path().join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    let staged = staging.keep();
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if out.exists() {
        std::fs::rename(out, &old).with_context(|| format!("moving {} aside", out.display()))?;
    }
    if let Err(e) = std::fs::rename(&staged, out) {
        if old.exists() {
            let _ = std::fs::rename(&old, out);
        }
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e).with_context(|| format!("moving the new tree into {}", out.display()));
    }
    if old.exists() {
        std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    Ok(())
}

/// Leftovers of an interrupted earlier run.
fn remove_stale(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let n = entry.file_name().to_string_lossy().into_owned();
        if n.starts_with(&format!(".{name}.tmp-")) || n.starts_with(&format!(".{name}.old-")) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Differences between the tree on disk (`old`) and a fresh one (`new`).
#[derive(Debug, Default)]
pub struct TreeDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl TreeDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

pub fn compare(old: &Tree, new: &Tree) -> TreeDiff {
    let mut diff = TreeDiff::default();
    for (path, contents) in new {
        match old.get(path) {
            None => diff.added.push(path.clone()),
            Some(o) if o != contents => diff.changed.push(path.clone()),
            _ => {}
        }
    }
    diff.removed = old.keys().filter(|p| !new.contains_key(*p)).cloned().collect();
    diff
}

/// A unified diff of one file, at most `max_lines` lines.
pub fn unified_diff(path: &str, old: &[u8], new: &[u8], max_lines: usize) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let text = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return text;
    }
    format!("{}\n... ({} more lines of diff)\n", lines[..max_lines].join("\n"), lines.len() - max_lines)
}

/// `path` relative to the workspace when it is inside it (for messages).
pub fn shown(path: &Path) -> PathBuf {
    path.strip_prefix(crate::workspace_root()).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Tree {
        files.iter().map(|(p, c)| (p.to_string(), c.as_bytes().to_vec())).collect()
    }

    #[test]
    fn write_replaces_the_whole_tree() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("generated");
        write_atomic(&tree(&[("a/x.hip", "1"), ("stale", "s")]), &out).unwrap();
        write_atomic(&tree(&[("a/x.hip", "2")]), &out).unwrap();
        assert_eq!(read_tree(&out).unwrap(), tree(&[("a/x.hip", "2")]));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(leftovers, ["generated"]);
    }

    #[test]
    fn failed_write_leaves_the_old_tree() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("generated");
        write_atomic(&tree(&[("x", "old")]), &out).unwrap();
        // a path that cannot be created: a file where a directory must go
        let bad = tree(&[("x", "new"), ("x/y", "z")]);
        assert!(write_atomic(&bad, &out).is_err());
        assert_eq!(read_tree(&out).unwrap(), tree(&[("x", "old")]));
    }

    #[test]
    fn compare_finds_each_kind_of_change() {
        let d = compare(&tree(&[("a", "1"), ("b", "2")]), &tree(&[("a", "1"), ("b", "3"), ("c", "4")]));
        assert_eq!((d.added, d.removed, d.changed), (vec!["c".to_string()], vec![], vec!["b".to_string()]));
        let d = compare(&tree(&[("a", "1")]), &tree(&[]));
        assert_eq!(d.removed, ["a"]);
    }

    #[test]
    fn unified_diff_is_capped() {
        let old = (0..100).map(|i| format!("{i}\n")).collect::<String>();
        let new = (0..100).map(|i| format!("{}\n", i * 2)).collect::<String>();
        let d = unified_diff("f", old.as_bytes(), new.as_bytes(), 20);
        assert!(d.starts_with("--- a/f"));
        assert!(d.contains("more lines of diff"));
    }
}
