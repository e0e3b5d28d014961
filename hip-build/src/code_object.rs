//! Reading what a build produced: kernel names per arch in a bundled code
//! object, and the global functions of a host object.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol, SymbolKind};

use crate::HipBuildError;

/// The kernels (`NAME.kd` descriptor symbols, suffix stripped) of `arch` in a
/// bundled code object made with `--genco`.
pub fn kernel_symbols(code_object: &Path, arch: &str) -> Result<BTreeSet<String>, HipBuildError> {
    let elf = unbundle(code_object, arch)?;
    let data = std::fs::read(elf.path()).map_err(HipBuildError::io(format!("reading the {arch} image of {}", code_object.display())))?;
    let file = object::File::parse(&*data).map_err(|e| bad(code_object, format!("{arch} image is not an ELF file: {e}")))?;
    Ok(file.symbols().filter_map(|s| s.name().ok().and_then(|n| n.strip_suffix(".kd")).map(str::to_string)).collect())
}

/// The global functions a host object (`-c`) defines.
pub fn host_functions(object_file: &Path) -> Result<BTreeSet<String>, HipBuildError> {
    let data = std::fs::read(object_file).map_err(HipBuildError::io(format!("reading {}", object_file.display())))?;
    let file = object::File::parse(&*data).map_err(|e| bad(object_file, format!("not an object file: {e}")))?;
    Ok(file
        .symbols()
        .filter(|s| s.is_definition() && s.is_global() && s.kind() == SymbolKind::Text)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect())
}

/// Extracts one arch's image from a clang offload bundle into a temp file.
fn unbundle(code_object: &Path, arch: &str) -> Result<tempfile::NamedTempFile, HipBuildError> {
    let bundler = offload_bundler();
    let list = Command::new(&bundler)
        .args(["--list", "--type=o"])
        .arg(format!("--input={}", code_object.display()))
        .output()
        .map_err(HipBuildError::io(format!("running {}", bundler.display())))?;
    let targets = String::from_utf8_lossy(&list.stdout).to_string();
    // HIP 5.x names targets `hipv4-amdgcn-amd-amdhsa--gfx90a`; accept any `hip*` target ending in the arch
    let target = targets
        .lines()
        .map(str::trim)
        .find(|t| t.starts_with("hip") && (t.ends_with(&format!("-{arch}")) || t.contains(&format!("-{arch}:"))))
        .ok_or_else(|| bad(code_object, format!("no {arch} image in the bundle (targets: {})", targets.split_whitespace().collect::<Vec<_>>().join(", "))))?
        .to_string();
    let out = tempfile::NamedTempFile::new().map_err(HipBuildError::io("creating a temporary file"))?;
    let status = Command::new(&bundler)
        .args(["--unbundle", "--type=o"])
        .arg(format!("--targets={target}"))
        .arg(format!("--input={}", code_object.display()))
        .arg(format!("--output={}", out.path().display()))
        .output()
        .map_err(HipBuildError::io(format!("running {}", bundler.display())))?;
    if !status.status.success() {
        return Err(bad(code_object, format!("unbundling {target} failed: {}", String::from_utf8_lossy(&status.stderr).trim())));
    }
    Ok(out)
}

/// `clang-offload-bundler` on PATH, else beside the LLVM that hipcc uses.
fn offload_bundler() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("clang-offload-bundler")).find(|p| p.is_file()));
    on_path.unwrap_or_else(|| {
        ["/opt/rocm/llvm/bin/clang-offload-bundler", "/usr/lib/llvm-15/bin/clang-offload-bundler"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("clang-offload-bundler"))
    })
}

fn bad(path: &Path, what: String) -> HipBuildError {
    HipBuildError::CodeObject { path: path.to_path_buf(), what }
}
