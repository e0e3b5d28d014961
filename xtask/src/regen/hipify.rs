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
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr.lines().map(str::trim).find(|l| !l.is_empty()).map_or_else(|| out.status.to_string(), str::to_string);
        bail!("hipify-perl failed on {}: {why}", file.display());
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("hipify-perl");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn run_returns_stdout_and_names_failures() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("a.cu");
        std::fs::write(&input, "cudaStream_t s;\n").unwrap();
        let ok = script(dir.path(), "sed s/cudaStream_t/hipStream_t/ \"$1\"");
        assert_eq!(run(&ok, &input).unwrap(), b"hipStream_t s;\n");
        let quiet = script(dir.path(), "exit 3");
        let e = run(&quiet, &input).unwrap_err().to_string();
        assert!(e.starts_with("hipify-perl failed on ") && e.ends_with("exit status: 3"), "{e}");
        let loud = script(dir.path(), "echo '' >&2; echo 'bad things' >&2; exit 1");
        assert!(run(&loud, &input).unwrap_err().to_string().ends_with(": bad things"));
    }
}
