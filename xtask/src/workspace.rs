//! Where the workspace is, for every command that reads or writes in it.

use std::path::PathBuf;
use std::process::Command;

use crate::regen::upstream;

/// The workspace root: where xtask was built (it lives one level below it),
/// or, for a binary carried to another machine (the GPU machine has no Rust
/// toolchain), the nearest directory above the current one that holds
/// upstream.toml and xtask/.
pub fn workspace_root() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask has a parent").to_path_buf();
    let is_root = |d: &std::path::Path| d.join(upstream::CONFIG).is_file() && d.join("xtask").is_dir();
    if is_root(&built) {
        return built;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    cwd.ancestors().find(|d| is_root(d)).map(|d| d.to_path_buf()).unwrap_or(built)
}

/// The cargo that runs `cargo xtask` (`CARGO`), else `cargo` on PATH.
pub fn cargo_command() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The commit checked out at `root`, if it is a git checkout.
pub fn head_commit(root: &std::path::Path) -> Option<String> {
    let out = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(root).output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether tracked files at `root` (under `paths`, or anywhere when none) differ from its commit.
pub fn git_dirty(root: &std::path::Path, paths: &[&str]) -> bool {
    Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no", "--"])
        .args(paths)
        .current_dir(root)
        .output()
        .is_ok_and(|o| !o.stdout.is_empty())
}
