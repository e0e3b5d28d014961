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

/// Writes `tree` as the whole content of `out`: built beside it in
/// `.<name>.tmp-<pid>-*`, then swapped in (`out` → `.<name>.old-<pid>`, staging
/// → `out`, old removed). On any failure before the swap the staging directory
/// is removed and `out` is left as it was.
/// One file written atomically: a sibling `.partial` file renamed over it.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

pub fn write_atomic(tree: &Tree, out: &Path) -> Result<()> {
    let (parent, name) = parent_and_name(out)?;
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    remove_stale(out);
    let pid = std::process::id();
    // TempDir removes itself when dropped, i.e. on every early return below.
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.tmp-{pid}-"))
        .tempdir_in(&parent)
        .with_context(|| format!("creating a staging directory in {}", parent.display()))?;
    for (rel, contents) in tree {
        let path = staging.path().join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        keep_mtime_if_unchanged(&out.join(rel), &path, contents);
    }
    let staged = staging.keep();
    let old = parent.join(format!(".{name}.old-{pid}"));
    let had_old = out.exists();
    if had_old {
        if let Err(e) = std::fs::rename(out, &old) {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(e).with_context(|| format!("moving {} aside", out.display()));
        }
    }
    if let Err(e) = std::fs::rename(&staged, out) {
        if had_old {
            let _ = std::fs::rename(&old, out);
        }
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e).with_context(|| format!("moving the new tree into {}", out.display()));
    }
    if had_old {
        std::fs::remove_dir_all(&old).with_context(|| format!("removing the previous tree {}", old.display()))?;
    }
    Ok(())
}

/// A file whose contents a regen did not change keeps its modification time,
/// so builds that watch generated/ (the kernels' build script) see no change
/// in it. Best effort: a fresh time only costs a rebuild.
fn keep_mtime_if_unchanged(previous: &Path, staged: &Path, contents: &[u8]) {
    let Ok(meta) = std::fs::metadata(previous) else { return };
    if meta.len() != contents.len() as u64 || std::fs::read(previous).ok().as_deref() != Some(contents) {
        return;
    }
    if let (Ok(time), Ok(file)) = (meta.modified(), std::fs::File::options().write(true).open(staged)) {
        let _ = file.set_modified(time);
    }
}

fn parent_and_name(out: &Path) -> Result<(PathBuf, String)> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let name = out.file_name().with_context(|| format!("{} has no directory name", out.display()))?.to_string_lossy().into_owned();
    Ok((parent, name))
}

/// Removes `.<name>.tmp-*` and `.<name>.old-*` beside `out`: leftovers of an
/// interrupted earlier run (Ctrl-C between the two renames at worst leaves
/// one of these). Best effort.
pub fn remove_stale(out: &Path) {
    let Ok((parent, name)) = parent_and_name(out) else { return };
    let Ok(entries) = std::fs::read_dir(&parent) else { return };
    let (tmp, old) = (format!(".{name}.tmp-"), format!(".{name}.old-"));
    for entry in entries.flatten() {
        let n = entry.file_name().to_string_lossy().into_owned();
        if n.starts_with(&tmp) || n.starts_with(&old) {
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

/// Lines of diff shown per changed file by [`check_report`].
pub const DIFF_LINES_PER_FILE: usize = 200;

/// Compares the tree on disk with a fresh one. Returns whether they are
/// identical and the text to print: unified diffs of changed files, the
/// added and removed files, and a final verdict line naming `label`
/// (e.g. `generated/`).
pub fn check_report(on_disk: &Tree, fresh: &Tree, label: &str, command: &str) -> (bool, String) {
    let diff = compare(on_disk, fresh);
    if diff.is_empty() {
        return (true, format!("{label} is up to date ({} files)\n", fresh.len()));
    }
    let mut text = String::new();
    for path in &diff.changed {
        text.push_str(&unified_diff(path, &on_disk[path], &fresh[path], DIFF_LINES_PER_FILE));
    }
    for path in &diff.added {
        text.push_str(&format!("added ({command} would create {label}{path})\n"));
    }
    for path in &diff.removed {
        text.push_str(&format!("removed ({command} would delete {label}{path})\n"));
    }
    text.push_str(&format!(
        "{} changed, {} added, {} removed\n{label} is out of date: run cargo xtask {command}\n",
        diff.changed.len(),
        diff.added.len(),
        diff.removed.len()
    ));
    (false, text)
}

/// A unified diff of one file (`a/` on disk, `b/` fresh), at most `max_lines`
/// lines; says so when it cut the rest.
pub fn unified_diff(path: &str, old: &[u8], new: &[u8], max_lines: usize) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let mut text = similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    if text.is_empty() {
        // identical text after lossy decoding: the bytes differ elsewhere
        return format!("--- a/{path}\n+++ b/{path}\n(binary or non-UTF-8 contents differ)\n");
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return text;
    }
    format!("{}\n... diff of {path} truncated: {} more lines not shown\n", lines[..max_lines].join("\n"), lines.len() - max_lines)
}

/// `path` relative to the workspace when it is inside it (for messages).
pub fn shown(path: &Path) -> PathBuf {
    path.strip_prefix(crate::workspace::workspace_root()).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
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
        assert!(d.starts_with("--- a/f\n+++ b/f\n"));
        assert_eq!(d.lines().count(), 21);
        assert!(d.trim_end().ends_with("more lines not shown"), "{d}");
        assert!(d.contains("truncated"));
        let short = unified_diff("f", b"a\nb\n", b"a\nc\n", 20);
        assert!(short.contains("-b\n+c\n") && !short.contains("truncated"), "{short}");
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn failed_write_removes_its_staging_directory() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("generated");
        write_atomic(&tree(&[("k/a.hip", "old")]), &out).unwrap();
        assert!(write_atomic(&tree(&[("k", "file"), ("k/a.hip", "dir")]), &out).is_err());
        assert_eq!(names_in(dir.path()), ["generated"]);
        assert_eq!(read_tree(&out).unwrap(), tree(&[("k/a.hip", "old")]));
    }

    #[test]
    fn write_creates_a_missing_out_dir_and_nested_paths() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sub/generated");
        let t = tree(&[("MANIFEST.toml", "m"), ("kernels/mmq_gguf/x.cuh", "x"), ("upstream-licenses/candle-core/LICENSE", "l")]);
        write_atomic(&t, &out).unwrap();
        assert_eq!(read_tree(&out).unwrap(), t);
    }

    #[test]
    fn stale_siblings_are_cleaned_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("generated");
        for d in [".generated.tmp-123-abc", ".generated.old-77", ".other.tmp-1", "keep"] {
            std::fs::create_dir_all(dir.path().join(d).join("sub")).unwrap();
        }
        remove_stale(&out);
        assert_eq!(names_in(dir.path()), [".other.tmp-1", "keep"]);
        std::fs::create_dir_all(dir.path().join(".generated.old-9")).unwrap();
        write_atomic(&tree(&[("a", "1")]), &out).unwrap();
        assert_eq!(names_in(dir.path()), [".other.tmp-1", "generated", "keep"]);
    }

    #[test]
    fn read_tree_uses_slash_paths_and_missing_dir_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_tree(&dir.path().join("nope")).unwrap().is_empty());
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c.cu"), "x").unwrap();
        assert_eq!(read_tree(dir.path()).unwrap(), tree(&[("a/b/c.cu", "x")]));
    }

    #[test]
    fn check_report_passes_on_identical_trees() {
        let t = tree(&[("a", "1"), ("b", "2")]);
        let (ok, text) = check_report(&t, &t.clone(), "generated/", "regen");
        assert!(ok);
        assert_eq!(text, "generated/ is up to date (2 files)\n");
    }

    #[test]
    fn check_report_shows_changed_added_and_removed() {
        let on_disk = tree(&[("kernels/a.hip", "x\ny\nz\n"), ("kernels/gone.hip", "g\n")]);
        let fresh = tree(&[("kernels/a.hip", "x\nY\nz\n"), ("kernels/new.hip", "n\n")]);
        let (ok, text) = check_report(&on_disk, &fresh, "generated/", "regen");
        assert!(!ok);
        assert!(text.contains("--- a/kernels/a.hip\n+++ b/kernels/a.hip\n"), "{text}");
        assert!(text.contains("-y\n+Y\n"), "{text}");
        assert!(text.contains("added (regen would create generated/kernels/new.hip)"), "{text}");
        assert!(text.contains("removed (regen would delete generated/kernels/gone.hip)"), "{text}");
        assert!(text.contains("1 changed, 1 added, 1 removed"), "{text}");
        assert_eq!(text.lines().last().unwrap(), "generated/ is out of date: run cargo xtask regen");
    }

    #[test]
    fn check_against_a_written_tree_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("generated");
        let t = tree(&[("kernels/a.hip", "a\n"), ("MANIFEST.toml", "m\n")]);
        write_atomic(&t, &out).unwrap();
        assert!(check_report(&read_tree(&out).unwrap(), &t, "generated/", "regen").0);
        std::fs::write(out.join("kernels/a.hip"), "edited\n").unwrap();
        assert!(!check_report(&read_tree(&out).unwrap(), &t, "generated/", "regen").0);
    }
}
