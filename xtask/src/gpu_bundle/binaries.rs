//! The test binaries: the cargo invocations that build them (with the link
//! directory's environment), and the executables cargo reports.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::test_artifacts::test_artifacts;

/// One cargo invocation that builds test binaries.
struct TestBuild {
    group: &'static str,
    /// Manifest, relative to the repository root.
    manifest: &'static str,
    /// Extra cargo arguments (target selection, features).
    args: Vec<String>,
}

/// One built test binary.
pub struct TestBinary {
    pub group: &'static str,
    pub name: String,
    pub path: PathBuf,
    /// The package directory, relative to the repository root: the tests' working directory.
    pub cwd: String,
}

/// The test builds of the bundle, one cargo invocation each.
fn test_builds() -> Vec<TestBuild> {
    // candle-core: its whole suite (the library's tests and every upstream test file).
    // Every group builds candle-core with `rocm` and `rccl` (the tensor-parallel
    // program needs `rccl`): one release build of candle-core and candle-nn serves them all.
    let core_args: Vec<String> = vec!["--features".into(), "rocm,rccl".into(), "--lib".into(), "--tests".into()];
    vec![
        TestBuild {
            group: "candle-core",
            manifest: "generated/candle-core/Cargo.toml",
            args: core_args,
        },
        // candle-nn: its suite (upstream's tests are CPU tests; its ROCm ops are
        // compared with the CPU by the ROCm-vs-CPU tests of scratch-rocm).
        TestBuild {
            group: "candle-nn",
            manifest: "generated/candle-nn/Cargo.toml",
            args: vec!["--features".into(), "rocm,candle/rccl".into(), "--lib".into(), "--tests".into()],
        },
        // candle-flash-attn: upstream's tests of the flash-attention ops, over
        // candle-rocm's own run_mha (kernels/candle_flash_attn.hip)
        TestBuild {
            group: "candle-flash-attn",
            manifest: "generated/candle-flash-attn/Cargo.toml",
            args: vec!["--features".into(), "rocm,candle/rccl".into(), "--tests".into()],
        },
        TestBuild {
            group: "scratch-rocm",
            manifest: "tests/scratch-rocm/Cargo.toml",
            args: vec!["--features".into(), "rocm,candle-core/rccl".into(), "--tests".into()],
        },
        // the tensor-parallel program's one-device check of its shard math (world 2 and 4
        // summed in one process against the whole model; src/shard_check.rs)
        TestBuild {
            group: "tensor-parallel",
            manifest: "tests/tensor-parallel/Cargo.toml",
            args: vec!["--bins".into()],
        },
        // the HIP layer, with RCCL: its communicator tests (world size 1) over NCCL
        TestBuild {
            group: "candle-rocm-hip",
            manifest: "rocm-runtime/hip/Cargo.toml",
            args: vec!["--lib".into(), "--features".into(), "rccl".into()],
        },
    ]
}

/// The groups of the bundle's test builds, in order.
pub fn groups() -> Vec<&'static str> {
    test_builds().iter().map(|b| b.group).collect()
}

/// Builds the test binaries of every test build (in `target_dir`, with `env`),
/// or of those in `only` when it names any.
pub fn build_all(root: &Path, target_dir: &Path, env: &[(&str, &str)], only: &[String]) -> Result<Vec<TestBinary>> {
    let mut binaries = Vec::new();
    for build in test_builds().iter().filter(|b| only.is_empty() || only.iter().any(|g| g == b.group)) {
        eprintln!(
            "== {}: test binaries with feature rocm, release, linked against the forwarder",
            build.group
        );
        binaries.extend(build_tests(root, target_dir, build, env)?);
    }
    Ok(binaries)
}

pub fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let status = crate::workspace::cargo_command()
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root)
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// `cargo test --release --no-run --message-format=json`: the test executables it reports.
fn build_tests(
    root: &Path,
    target_dir: &Path,
    build: &TestBuild,
    env: &[(&str, &str)],
) -> Result<Vec<TestBinary>> {
    let manifest = root.join(build.manifest);
    let output = crate::workspace::cargo_command()
        .args([
            "test",
            "--release",
            "--no-run",
            "--message-format=json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .args(&build.args)
        .envs(env.iter().copied())
        .current_dir(root)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running cargo test --no-run")?;
    if !output.status.success() {
        bail!(
            "building the {} test binaries failed ({}): see the messages above",
            build.group,
            output.status
        );
    }
    let cwd = Path::new(build.manifest)
        .parent()
        .expect("manifest in a directory")
        .display()
        .to_string();
    let found: Vec<TestBinary> = test_artifacts(&String::from_utf8_lossy(&output.stdout))
        .into_iter()
        .map(|a| TestBinary { group: build.group, name: a.name, path: a.path, cwd: cwd.clone() })
        .collect();
    if found.is_empty() {
        bail!("cargo reported no test executable for {}", build.manifest);
    }
    Ok(found)
}
