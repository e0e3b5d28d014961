//! Shared helpers for the integration tests in `tests/tests/`.

use std::path::{Path, PathBuf};

use translator::kernels::{translate_tree, KernelContext, KernelOutput};
use translator::{TranslateError, TreeFile};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// Every file under `dir`, recursively, whose name ends with `suffix` ("" for all), in path
/// order; build outputs (`target/`) and hidden directories are not walked.
pub fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for path in entries.map(|e| e.expect("a directory entry").path()) {
            let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, suffix, out);
                }
            } else if name.ends_with(suffix) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, suffix, &mut out);
    out.sort();
    out
}

/// `tests/fixtures/...`.
pub fn fixture(rel: &str) -> PathBuf {
    workspace_root().join("tests/fixtures").join(rel)
}

/// Translates a single fixture file as a one-file kernel tree.
pub fn translate_fixture(rel: &str) -> Result<KernelOutput, TranslateError> {
    let path = fixture(rel);
    let name = path.file_name().and_then(|n| n.to_str()).expect("fixture name").to_string();
    let contents = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let ctx = KernelContext::new("candle-kernels (test fixture)");
    translate_tree(&[TreeFile { rel_path: name, contents }], &ctx)
}

fn upstream_toml() -> toml::Table {
    let text = std::fs::read_to_string(workspace_root().join("upstream.toml")).expect("upstream.toml");
    text.parse().expect("upstream.toml is TOML")
}

/// The pinned upstream version from `upstream.toml`.
pub fn pinned_version() -> String {
    upstream_toml()["candle"]["version"].as_str().expect("[candle] version").to_string()
}

/// hipcc, or `None` after saying plainly that the check did not run. Under
/// CI (`CI` set), a missing hipcc is a failure: CI installs it.
pub fn hipcc_or_skip(what: &str) -> Option<hip_build::Hipcc> {
    match hip_build::Hipcc::locate() {
        Ok(h) => Some(h),
        Err(e) if std::env::var_os("CI").is_some() => panic!("{what}: {e}"),
        Err(e) => {
            println!("SKIPPED: {what} did not run: {e}");
            None
        }
    }
}
