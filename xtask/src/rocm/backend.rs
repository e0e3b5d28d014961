//! `cargo xtask rocm-backend --rocm RELEASE`: the generated candle-core and
//! candle-nn, feature `rocm`, built and linked inside a ROCm release's root
//! (`rocm::root`) against that release's libamdhip64, rocBLAS and rocRAND, with
//! its hipcc compiling the kernels, and the HIP layer's tests (with its
//! feature `rccl`, linked against RCCL, where the release pins `librccl.so.1`);
//! then their test suites run there (no GPU: the CPU tests run, every ROCm
//! test says it skipped), and every HIP/rocBLAS/rocRAND/RCCL symbol the built
//! binaries import is checked against what the release's libraries export
//! (`rocm::abi`).
//!
//! The build uses the root's own cargo and rustc (sid's), a target directory
//! of its own (`target/rocm/RELEASE/cargo-target`) and the host's cargo home
//! (bind-mounted: downloads are shared).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::rocm::root::{Release, Releases, RocmRoot};
use crate::test_artifacts::test_artifacts;
use crate::rocm;
use crate::workspace::workspace_root;

#[derive(clap::Args, Debug)]
pub struct BackendArgs {
    /// The ROCm release (a key of rocm-releases.toml).
    #[arg(long, value_name = "RELEASE")]
    rocm: String,
    /// Arches the kernels crate compiles for (CANDLE_ROCM_ARCHS).
    #[arg(long, default_value = "gfx942")]
    archs: String,
    /// Do not run candle-core's and candle-nn's suites: build, check the imports
    /// and run the HIP layer's tests only (the check of its C values against the headers).
    #[arg(long)]
    no_run: bool,
    /// The link check alone, as CI runs it: each package's library test binary
    /// only (no upstream test files), the imports checked, and of the suites only
    /// the HIP layer's run (candle-core's and candle-nn's whole suites run, in
    /// release, in the GPU bundle's CPU run).
    #[arg(long, conflicts_with = "no_run")]
    libs_only: bool,
    /// Build nothing: check these binaries' HIP/rocBLAS/rocRAND/RCCL imports against the
    /// release's libraries (a crate ported with port-crate and built in the root, such
    /// as mistral.rs's `mistralrs`).
    #[arg(long, value_name = "BIN", num_args = 1.., conflicts_with_all = ["no_run", "libs_only"])]
    check_imports: Vec<PathBuf>,
}

/// The packages built: manifest relative to the workspace root, `cargo test`
/// selection, and whether its tests run under `--no-run` too. The generated
/// candle-core (with `rocm`, and `rccl` where the release has RCCL) and
/// candle-nn with `rocm`, and the HIP layer, whose tests
/// include the check of the C values it relies on against the release's
/// headers (`abi_tests.rs`); with its feature `rccl` (RCCL linked) when the
/// release has RCCL among its libraries (`sonames` in rocm-releases.toml).
/// With `libs_only`, candle-core and candle-nn build their library test binaries alone.
fn packages(release: &Release, libs_only: bool) -> [(&'static str, Vec<&'static str>, bool); 3] {
    let rccl = has_rccl(release);
    let hip_layer = if rccl { vec!["--lib", "--features", "rccl"] } else { vec!["--lib"] };
    let targets: &[&'static str] = if libs_only { &["--lib"] } else { &["--lib", "--tests"] };
    // candle-core's `rccl` (the twin of upstream's `nccl`) turns the HIP layer's on
    let core = [&["--features", if rccl { "rocm,rccl" } else { "rocm" }], targets].concat();
    let nn = [&["--features", "rocm"], targets].concat();
    [
        ("generated/candle-core/Cargo.toml", core, false),
        ("generated/candle-nn/Cargo.toml", nn, false),
        ("rocm-runtime/hip/Cargo.toml", hip_layer, true),
    ]
}

/// Upstream tests not run inside the root: (manifest, test name). candle-nn's
/// `bf16_lfm_op_timings` (tests/bf16_conv_bench.rs) times CPU ops on large tensors and
/// asserts nothing; in this debug build it took 160 s of CI's 2 cores. It still runs in
/// release in the GPU bundle's CPU run.
const NOT_RUN_IN_ROOT: &[(&str, &str)] = &[("generated/candle-nn/Cargo.toml", "bf16_lfm_op_timings")];

/// Whether the release's libraries include RCCL's `librccl.so.N`.
fn has_rccl(release: &Release) -> bool {
    release.sonames.iter().any(|s| s.starts_with("librccl.so."))
}

pub fn run(args: BackendArgs) -> Result<ExitCode> {
    let workspace = workspace_root();
    let (releases, _) = Releases::load(&workspace)?;
    let release = releases.get(&args.rocm)?;
    let root = rocm::root::ensure(&args.rocm, None, None)?;
    let libraries: Vec<PathBuf> = release.sonames.iter().map(|s| root.lib_dir().join(s)).collect();
    if !args.check_imports.is_empty() {
        return check_imports(&args.check_imports, &libraries, &args.rocm);
    }
    let target_dir = root.dir.join("cargo-target");
    let mut binaries = Vec::new();
    for (manifest, selection, _) in packages(release, args.libs_only) {
        let start = Instant::now();
        let built = cargo_tests(&root, &workspace, manifest, &selection, &target_dir, &args.archs, true)?;
        println!("{manifest}: {} test binaries built and linked in the ROCm {} root in {:.0} s", built.len(), args.rocm, start.elapsed().as_secs_f64());
        binaries.extend(built);
    }
    check_imports(&binaries, &libraries, &args.rocm)?;
    for (manifest, selection, always) in packages(release, args.libs_only) {
        if (args.no_run || args.libs_only) && !always {
            continue;
        }
        let start = Instant::now();
        cargo_tests(&root, &workspace, manifest, &selection, &target_dir, &args.archs, false)?;
        println!("{manifest}: test suite passed in the ROCm {} root in {:.0} s", args.rocm, start.elapsed().as_secs_f64());
    }
    Ok(ExitCode::SUCCESS)
}

/// The binaries' ROCm imports checked against the release's `libraries`; the report printed.
fn check_imports(binaries: &[PathBuf], libraries: &[PathBuf], release: &str) -> Result<ExitCode> {
    let report = rocm::abi::check(binaries, libraries)?;
    print!("{report}");
    if !report.is_complete() {
        bail!("the built binaries import symbols ROCm {release} does not export (above)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `cargo test SELECTION` for one package inside the root: with `no_run`,
/// builds and returns the test executables (from cargo's JSON messages);
/// otherwise runs them (output shown) and returns nothing.
fn cargo_tests(root: &RocmRoot, workspace: &Path, manifest: &str, selection: &[&str], target_dir: &Path, archs: &str, no_run: bool) -> Result<Vec<PathBuf>> {
    let mut cmd = root.command("cargo");
    cmd.current_dir(workspace).args(["test", "--manifest-path", manifest]).args(selection).arg("--target-dir").arg(target_dir);
    scrub_host_cargo_env(&mut cmd);
    cmd.env("SKIP_BINDGEN", "1").env("CANDLE_ROCM_ARCHS", archs);
    // the units `cargo xtask build-kernels --rocm` compiled with this root's hipcc
    // from the same sources (the workspace is seen at its host path inside the root)
    cmd.env(hip_build::cache::ENV, root.kernels_cache());
    if no_run {
        cmd.args(["--no-run", "--message-format", "json-render-diagnostics"]);
        let out = cmd.stderr(std::process::Stdio::inherit()).output().with_context(|| format!("running cargo in the ROCm {} root", root.release))?;
        if !out.status.success() {
            bail!("building the tests of {manifest} in the ROCm {} root failed ({})", root.release, out.status);
        }
        return Ok(test_artifacts(&String::from_utf8_lossy(&out.stdout)).into_iter().map(|a| a.path).collect());
    }
    cmd.env("RUST_BACKTRACE", "0");
    let skipped: Vec<&str> = NOT_RUN_IN_ROOT.iter().filter(|(m, _)| *m == manifest).map(|(_, test)| *test).collect();
    if !skipped.is_empty() {
        cmd.arg("--");
        for test in skipped {
            cmd.args(["--skip", test]);
        }
    }
    let status = cmd.status().with_context(|| format!("running cargo in the ROCm {} root", root.release))?;
    if !status.success() {
        bail!("the tests of {manifest} failed in the ROCm {} root ({status})", root.release);
    }
    Ok(Vec::new())
}

/// The variables `cargo xtask` runs under that would steer the root's cargo to the host's toolchain.
fn scrub_host_cargo_env(cmd: &mut Command) {
    for var in ["CARGO", "RUSTC", "RUSTDOC", "RUSTC_WRAPPER", "RUSTUP_TOOLCHAIN", "RUSTUP_HOME", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR", "CARGO_MANIFEST_DIR", "CARGO_PKG_NAME"] {
        cmd.env_remove(var);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ROCm 7.2 pins RCCL: the HIP layer is built with `rccl` there; 6.4 does not.
    #[test]
    fn the_hip_layer_links_rccl_where_the_release_pins_it() {
        let (releases, _) = Releases::load(&workspace_root()).unwrap();
        let selection = |name: &str| packages(releases.get(name).unwrap(), false)[2].1.clone();
        assert_eq!(selection("7.2"), ["--lib", "--features", "rccl"]);
        assert_eq!(selection("6.4"), ["--lib"]);
        let core = |name: &str, libs_only| packages(releases.get(name).unwrap(), libs_only)[0].1.clone();
        assert_eq!(core("7.2", false), ["--features", "rocm,rccl", "--lib", "--tests"]);
        assert_eq!(core("6.4", false), ["--features", "rocm", "--lib", "--tests"]);
        assert_eq!(core("7.2", true), ["--features", "rocm,rccl", "--lib"]);
        assert_eq!(packages(releases.get("7.2").unwrap(), true)[1].1, ["--features", "rocm", "--lib"]);
    }
}
