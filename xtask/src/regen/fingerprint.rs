//! The no-op fast path of `cargo xtask regen`: a fingerprint of everything a
//! regen's output depends on (the translator, that is this executable, by its
//! path, size and modification time; the pin in upstream.toml; every file of
//! the upstream crates; the output directory; the hipify-perl first pass) and
//! of the tree it wrote. When both
//! match the next time, nothing is translated: the output is what a regen
//! would write again. The record lives under `target/` (it names this
//! machine's executable, so it is never committed); `--check` never uses it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::tree::{self, Tree};
use crate::regen::upstream::Upstream;

/// What one regen depended on and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub inputs: String,
    pub output: String,
}

impl Fingerprint {
    fn render(&self) -> String {
        format!("inputs {}\noutput {}\n", self.inputs, self.output)
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        let inputs = lines.next()?.strip_prefix("inputs ")?.to_string();
        let output = lines.next()?.strip_prefix("output ")?.to_string();
        Some(Fingerprint { inputs, output })
    }
}

/// Names a directory to keep fingerprints in instead of `target/xtask` (the CLI
/// tests keep theirs inside their temporary directories).
pub const STATE_DIR_ENV: &str = "XTASK_STATE_DIR";

/// Where the fingerprint of a regen into `out_dir` is kept.
pub fn record_path(workspace: &Path, out_dir: &Path) -> PathBuf {
    let key = hex(&Sha256::digest(absolute(out_dir).to_string_lossy().as_bytes()));
    let dir = std::env::var_os(STATE_DIR_ENV).map(PathBuf::from).unwrap_or_else(|| workspace.join("target/xtask"));
    dir.join(format!("regen-{}.txt", &key[..16]))
}

/// The digest of every input of a regen into `out_dir` from `upstream`.
pub fn inputs_digest(upstream: &Upstream, config_text: &str, out_dir: &Path, hipify: Option<&Path>) -> Result<String> {
    let mut hash = Sha256::new();
    let exe = std::env::current_exe().context("locating the xtask executable")?;
    field(&mut hash, executable_identity(&exe)?.as_bytes());
    field(&mut hash, config_text.as_bytes());
    field(&mut hash, absolute(out_dir).to_string_lossy().as_bytes());
    field(&mut hash, hipify.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default().as_bytes());
    for krate in upstream.crates() {
        field(&mut hash, krate.name.as_bytes());
        field(&mut hash, krate.version.as_bytes());
        field(&mut hash, tree_digest(&tree::read_tree(&krate.root)?).as_bytes());
    }
    Ok(hex(&hash.finalize()))
}

/// This executable, identified the way build tools identify files: where it is,
/// its size and its modification time (nanoseconds), not its contents (a debug
/// build is over 100 MiB: reading and hashing it was most of a no-op regen).
/// Any rebuild or copy changes at least one of these.
fn executable_identity(exe: &Path) -> Result<String> {
    let meta = std::fs::metadata(exe).with_context(|| format!("reading the metadata of {}", exe.display()))?;
    let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    let place = {
        use std::os::unix::fs::MetadataExt;
        format!("{}:{}", meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let place = String::new();
    Ok(format!("{} {place} {} {modified}", absolute(exe).display(), meta.len()))
}

/// The digest of a whole tree: paths and contents.
pub fn tree_digest(tree: &Tree) -> String {
    let mut hash = Sha256::new();
    for (path, contents) in tree {
        field(&mut hash, path.as_bytes());
        field(&mut hash, contents);
    }
    hex(&hash.finalize())
}

/// The recorded fingerprint, if any.
pub fn load(record: &Path) -> Option<Fingerprint> {
    Fingerprint::parse(&std::fs::read_to_string(record).ok()?)
}

/// Records `fingerprint` (best effort: a missing record only costs a full regen next time).
pub fn store(record: &Path, fingerprint: &Fingerprint) {
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(record, fingerprint.render());
}

/// Length-prefixed, so that no two different field lists hash the same bytes.
fn field(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(bytes);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_reads_back() {
        let f = Fingerprint { inputs: "ab".into(), output: "cd".into() };
        assert_eq!(Fingerprint::parse(&f.render()), Some(f));
        assert_eq!(Fingerprint::parse("inputs ab\n"), None);
    }

    #[test]
    fn the_tree_digest_sees_paths_and_contents() {
        let t = |p: &str, c: &str| Tree::from([(p.to_string(), c.as_bytes().to_vec())]);
        assert_eq!(tree_digest(&t("a", "1")), tree_digest(&t("a", "1")));
        assert_ne!(tree_digest(&t("a", "1")), tree_digest(&t("a", "2")));
        assert_ne!(tree_digest(&t("a", "1")), tree_digest(&t("b", "1")));
        // no ambiguity between a path and the start of its contents
        assert_ne!(tree_digest(&t("ab", "c")), tree_digest(&t("a", "bc")));
    }

    #[test]
    fn a_rebuilt_executable_is_a_new_input() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("xtask");
        std::fs::write(&exe, b"build 1").unwrap();
        let first = executable_identity(&exe).unwrap();
        assert_eq!(executable_identity(&exe).unwrap(), first);
        // same size, later modification time
        let later = std::fs::metadata(&exe).unwrap().modified().unwrap() + std::time::Duration::from_secs(2);
        std::fs::File::options().write(true).open(&exe).unwrap().set_modified(later).unwrap();
        let touched = executable_identity(&exe).unwrap();
        assert_ne!(touched, first);
        // another size
        std::fs::write(&exe, b"build 22").unwrap();
        std::fs::File::options().write(true).open(&exe).unwrap().set_modified(later).unwrap();
        assert_ne!(executable_identity(&exe).unwrap(), touched);
    }

    #[test]
    fn each_output_directory_has_its_own_record() {
        let ws = Path::new("/w");
        assert_ne!(record_path(ws, Path::new("/w/generated")), record_path(ws, Path::new("/tmp/out")));
        assert!(record_path(ws, Path::new("/w/generated")).starts_with("/w/target/xtask"));
    }
}
