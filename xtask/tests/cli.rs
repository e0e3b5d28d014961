//! Bad inputs to `cargo xtask`: each fails with one clear line, exit code 1,
//! and leaves the output directory exactly as it was.

use std::path::Path;
use std::process::{Command, Output};

/// Runs xtask; a regen's fingerprint goes beside its `--out` directory (inside
/// the test's temporary directory), not into the workspace's target/.
fn xtask(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(args);
    if let Some(out) = args.iter().position(|a| *a == "--out").and_then(|i| args.get(i + 1)) {
        cmd.env("XTASK_STATE_DIR", format!("{out}.xtask-state"));
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("running xtask")
}

fn stderr_line(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "stdout: {}\nstderr: {text}", String::from_utf8_lossy(&out.stdout));
    text
}

/// An output directory holding one marker file, to prove it is left untouched.
fn existing_out(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("generated");
    std::fs::create_dir_all(out.join("kernels")).unwrap();
    std::fs::write(out.join("kernels/marker.hip"), "old").unwrap();
    out
}

fn assert_untouched(out: &Path) {
    let leftovers: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".generated"))
        .collect();
    assert!(leftovers.is_empty(), "staging leftovers: {leftovers:?}");
    assert_eq!(std::fs::read_to_string(out.join("kernels/marker.hip")).unwrap(), "old");
    assert_eq!(std::fs::read_dir(out).unwrap().count(), 1);
}

/// A minimal Candle checkout with the given kernel sources.
fn checkout(dir: &Path, kernels: &[(&str, &str)]) -> std::path::PathBuf {
    let root = dir.join("candle");
    std::fs::create_dir_all(root.join("candle-kernels/src")).unwrap();
    std::fs::write(root.join("Cargo.toml"), "[workspace.package]\nversion = \"9.0.0\"\nlicense = \"MIT OR Apache-2.0\"\n").unwrap();
    for krate in ["candle-kernels", "candle-core", "candle-nn", "candle-transformers", "candle-examples"] {
        std::fs::create_dir_all(root.join(krate).join("src")).unwrap();
        std::fs::write(root.join(krate).join("Cargo.toml"), format!("[package]\nname = \"{krate}\"\nversion.workspace = true\nlicense.workspace = true\n")).unwrap();
    }
    std::fs::write(root.join("candle-kernels/src/ffi.rs"), "extern \"C\" {\n    pub fn launch(stream: *mut core::ffi::c_void);\n}\n").unwrap();
    std::fs::write(root.join("candle-core/src/lib.rs"), "#[cfg(feature = \"cuda\")]\npub mod cuda_backend;\n").unwrap();
    std::fs::write(root.join("candle-core/src/cuda_backend.rs"), "pub struct CudaDevice(cudarc::driver::CudaStream);\n").unwrap();
    std::fs::write(root.join("candle-nn/src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(root.join("candle-transformers/src/lib.rs"), "pub fn g() -> bool { if cfg!(feature = \"cuda\") { true } else { false } }\n").unwrap();
    std::fs::write(root.join("candle-examples/src/lib.rs"), "pub fn h() {}\n").unwrap();
    for (name, text) in kernels {
        std::fs::write(root.join("candle-kernels/src").join(name), text).unwrap();
    }
    root
}

#[test]
fn a_cu_with_an_unmappable_construct_names_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = existing_out(dir.path());
    let src = checkout(dir.path(), &[("ok.cu", "extern \"C\" __global__ void k() {}\n"), ("vote.cu", "__device__ int v(int p) {\n  return __dp2a_lo(p, p, 0);\n}\n")]);
    let err = stderr_line(&xtask(&["regen", "--candle-src", src.to_str().unwrap(), "--out", out.to_str().unwrap()], &[]));
    assert_eq!(err.trim(), "error: translation failed: vote.cu:2: __dp2a_lo: CUDA-only construct that no rule translates (add a mapping or rule in translator/src/kernels)");
    assert_untouched(&out);
}

#[test]
fn a_checkout_translates_and_records_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let src = checkout(dir.path(), &[("ok.cu", "#include \"cuda_fp16.h\"\nextern \"C\" __global__ void k(__half *x) { x[0] = __hmax(x[0], x[1]); }\n")]);
    let run = xtask(&["regen", "--candle-src", src.to_str().unwrap(), "--out", out.to_str().unwrap()], &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let hip = std::fs::read_to_string(out.join("kernels/ok.hip")).unwrap();
    let backend = std::fs::read_to_string(out.join("candle-core/src/rocm_backend.rs")).unwrap();
    assert!(backend.contains("pub struct RocmDevice(candle_rocm_hip::driver::HipStream);"), "{backend}");
    assert!(hip.contains("candle_hmax(x[0], x[1])"));
    let manifest = std::fs::read_to_string(out.join("MANIFEST.toml")).unwrap();
    assert!(manifest.contains("source = \"checkout\"") && manifest.contains("\"candle-kernels\" = \"9.0.0\""));
    assert!(!manifest.contains(dir.path().to_str().unwrap()), "no absolute paths in the manifest");
    // --check against what was just written passes
    let check = xtask(&["regen", "--candle-src", src.to_str().unwrap(), "--out", out.to_str().unwrap(), "--check"], &[]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    // a hand edit is caught with a diff
    std::fs::write(out.join("kernels/ok.hip"), hip.replace("candle_hmax", "my_max")).unwrap();
    let check = xtask(&["regen", "--candle-src", src.to_str().unwrap(), "--out", out.to_str().unwrap(), "--check"], &[]);
    assert_eq!(check.status.code(), Some(1));
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("-extern \"C\" __global__ void k(__half *x) { x[0] = my_max(x[0], x[1]); }"), "{text}");
    assert!(text.trim_end().ends_with("is out of date: run cargo xtask regen"), "{text}");
}

#[test]
fn a_directory_that_is_not_a_checkout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = existing_out(dir.path());
    let err = stderr_line(&xtask(&["regen", "--candle-src", dir.path().to_str().unwrap(), "--out", out.to_str().unwrap()], &[]));
    assert!(err.starts_with("error: ") && err.contains("is not a Candle checkout: missing candle-kernels/src"), "{err}");
    assert_eq!(err.trim().lines().count(), 1);
    assert_untouched(&out);
}

#[test]
fn an_unknown_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = existing_out(dir.path());
    let err = stderr_line(&xtask(&["regen", "--candle-version", "0.0.999", "--out", out.to_str().unwrap()], &[]));
    assert!(err.starts_with("error: candle-kernels 0.0.999 is not on crates.io ("), "{err}");
    assert_eq!(err.trim().lines().count(), 1);
    assert_untouched(&out);
}

#[test]
fn the_release_table_names_a_missing_release_and_a_checkout_without_candle_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let src = checkout(dir.path(), &[("ok.cu", "extern \"C\" __global__ void k() {}\n")]);
    std::fs::remove_dir_all(src.join("candle-kernels")).unwrap();
    let work = dir.path().join("work");
    let run = xtask(&["releases", "--only", "--versions", "0.9.99", "--candle-src", src.to_str().unwrap(), "--regen-only", "--work", work.to_str().unwrap()], &[]);
    assert_eq!(run.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains("\terror: ")).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows[0].starts_with("0.9.99\terror: candle-kernels 0.9.99 is not on crates.io ("), "{stdout}");
    assert!(rows[1].contains("\terror: ") && rows[1].contains("is not a Candle checkout: missing candle-kernels/src"), "{stdout}");
    assert_eq!(String::from_utf8_lossy(&run.stderr).trim(), "2 of 2 rows not green");
}

#[test]
fn missing_hipcc_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = stderr_line(&xtask(&["build-kernels", "--out", dir.path().to_str().unwrap()], &[("PATH", "/nonexistent"), ("ROCM_PATH", "/nonexistent"), ("HIP_PATH", "/nonexistent")]));
    assert_eq!(err.trim(), "error: hipcc not found: install it (Debian: apt-get install hipcc) or set ROCM_PATH");
}

#[test]
fn an_unknown_offload_arch_is_a_clear_error() {
    if hip_build::Hipcc::locate().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI installs hipcc");
        println!("SKIPPED: hipcc not installed, the unknown-arch check did not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let err = stderr_line(&xtask(&["build-kernels", "--arch", "gfx9999", "--out", dir.path().to_str().unwrap()], &[]));
    // the compiler's version and path, then hip-build's reason
    let version = hip_build::Hipcc::locate().unwrap().version().unwrap();
    assert!(err.starts_with(&format!("error: hipcc {version} (")), "{err}");
    assert!(err.contains("): hipcc does not support --offload-arch=gfx9999: "), "{err}");
    assert_eq!(err.trim().lines().count(), 1);
}

#[test]
fn a_usage_error_exits_with_1() {
    let out = xtask(&["regen", "--no-such-flag"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let out = xtask(&["regen", "--help"], &[]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn regen_cleans_stale_siblings_and_check_reports_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    // leftovers of an interrupted run
    std::fs::create_dir_all(dir.path().join(".gen.tmp-1-abc/kernels")).unwrap();
    std::fs::create_dir_all(dir.path().join(".gen.old-2")).unwrap();
    let src = checkout(dir.path(), &[("ok.cu", "extern \"C\" __global__ void k() {}\n")]);
    let args = ["regen", "--candle-src", src.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let run = xtask(&args, &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // (gen.xtask-state: the fingerprint record the xtask() helper keeps in the test's directory)
    assert_eq!(names, ["candle", "gen", "gen.xtask-state"]);
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(report.contains("candle-kernels 9.0.0 + candle-core 9.0.0 + candle-nn 9.0.0 + candle-transformers 9.0.0 + candle-examples 9.0.0 (checkout "), "{report}");
    assert!(report.contains("hipify-perl first pass: "), "{report}");
    assert!(report.contains("wall time: "), "{report}");

    let check = xtask(&[&args[..], &["--check"]].concat(), &[]);
    let text = String::from_utf8_lossy(&check.stdout);
    fn count_files(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).map(|p| if p.is_dir() { count_files(&p) } else { 1 }).sum()
    }
    let n = count_files(&out);
    assert!(check.status.success(), "{text}");
    assert!(text.trim_end().ends_with(&format!(" is up to date ({n} files)")), "{text}");

    // a file regen does not produce is reported as removed
    std::fs::write(out.join("kernels/extra.hip"), "x").unwrap();
    let check = xtask(&[&args[..], &["--check"]].concat(), &[]);
    assert_eq!(check.status.code(), Some(1));
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("removed (regen would delete ") && text.contains("kernels/extra.hip)"), "{text}");
}

#[test]
fn a_repeated_regen_translates_nothing_until_an_input_or_the_output_changes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let src = checkout(dir.path(), &[("ok.cu", "extern \"C\" __global__ void k() {}\n")]);
    let args = ["regen", "--candle-src", src.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let stdout = |o: &Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let first = stdout(&xtask(&args, &[]));
    assert!(first.contains("rule counts"), "{first}");
    let hip = out.join("kernels/ok.hip");
    let written = std::fs::metadata(&hip).unwrap().modified().unwrap();
    let again = stdout(&xtask(&args, &[]));
    assert!(again.contains("is up to date: the translator, the inputs and the output are those of the last regen"), "{again}");

    // a hand edit of the output: translated again and undone, other files keep their time
    let original = std::fs::read_to_string(&hip).unwrap();
    std::fs::write(out.join("MANIFEST.toml"), "edited").unwrap();
    let redone = stdout(&xtask(&args, &[]));
    assert!(redone.contains("rule counts") && !redone.contains("nothing written"), "{redone}");
    assert_ne!(std::fs::read_to_string(out.join("MANIFEST.toml")).unwrap(), "edited");
    assert_eq!(std::fs::metadata(&hip).unwrap().modified().unwrap(), written, "an unchanged file keeps its modification time");

    // a changed input: translated again
    std::fs::write(src.join("candle-kernels/src/ok.cu"), "extern \"C\" __global__ void k2() {}\n").unwrap();
    let changed = stdout(&xtask(&args, &[]));
    assert!(changed.contains("rule counts"), "{changed}");
    assert_ne!(std::fs::read_to_string(&hip).unwrap(), original);
    // the same tree once more through the translator (no record): nothing written
    use sha2::Digest;
    let key: String = sha2::Sha256::digest(out.to_str().unwrap().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let record = Path::new(&format!("{}.xtask-state", out.display())).join(format!("regen-{}.txt", &key[..16]));
    std::fs::remove_file(&record).unwrap();
    let same = stdout(&xtask(&args, &[]));
    assert!(same.contains("was already this tree: nothing written"), "{same}");
}
