//! The optional hipify-perl first pass.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// hipify-perl on PATH or at `$ROCM_PATH/bin/hipify-perl`.
pub fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("hipify-perl")).find(|p| p.is_file()));
    on_path.or_else(|| std::env::var_os("ROCM_PATH").map(|r| Path::new(&r).join("bin/hipify-perl")).filter(|p| p.is_file()))
}

/// Runs `hipify-perl FILE` and returns what it prints.
pub fn run(hipify: &Path, file: &Path) -> Result<Vec<u8>> {
    let out = Command::new(hipify).arg(file).output().with_context(|| format!("running {}", hipify.display()))?;
    if !out.status.success() {
        bail!("hipify-perl failed on {}: {}", file.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}
