//! `cargo xtask gpu-bundle`: builds, on this (CPU) machine, everything the GPU
//! run needs that must be compiled with Rust, into one folder to carry to the
//! NVIDIA machine (which has no Rust toolchain):
//!
//! * `lib/libamdhip64.so.5`: the forwarding runtime (`hip-on-cuda`), which
//!   exports the HIP runtime, rocBLAS and rocRAND entry points over CUDA;
//! * `bin/<group>/<test>`: the test binaries of candle-core and candle-nn
//!   (their libraries and every upstream test file), of the parity tests in
//!   `tests/scratch-rocm` and of the HIP layer, built with feature `rocm` and
//!   linked against the forwarding runtime (rocBLAS and rocRAND included);
//! * `tests.tsv`: for each binary its group and the directory it runs in
//!   (relative to the repository root: upstream tests read data files);
//! * `BUNDLE.txt`: what was built, from which commit, and the sizes;
//!
//! and packs the folder into `<out>.tar.xz` (the test binaries share most of
//! their code, so it packs to about a tenth): that file is what is carried.
//!
//! The kernels are not in the bundle: `hip-on-cuda/run-gpu-tests.sh` compiles
//! `generated/kernels` with nvcc on the GPU machine and points the binaries at
//! the result (`CANDLE_ROCM_CODE_OBJECTS_DIR`, `libcandle_rocm_launchers.so`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::workspace_root;

/// What can be carried to the GPU machine (the `device` tool's limit).
const BUNDLE_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

#[derive(clap::Args)]
pub struct BundleArgs {
    /// Where the bundle is written (replaced).
    #[arg(long, default_value = "target/gpu-bundle/bundle")]
    out: PathBuf,
    /// AMD arches the (unused on NVIDIA) embedded code objects are built for.
    #[arg(long, default_value = "gfx90a")]
    archs: String,
}

/// One cargo invocation that builds test binaries.
struct TestBuild {
    group: &'static str,
    /// Manifest, relative to the repository root.
    manifest: &'static str,
    /// Extra cargo arguments (target selection, features).
    args: Vec<String>,
}

/// One built test binary.
struct TestBinary {
    group: &'static str,
    name: String,
    path: PathBuf,
    /// The package directory, relative to the repository root: the tests' working directory.
    cwd: String,
}

pub fn run(args: BundleArgs) -> Result<std::process::ExitCode> {
    let root = workspace_root();
    let out = if args.out.is_absolute() {
        args.out.clone()
    } else {
        root.join(&args.out)
    };
    let build_dir = root.join("target/gpu-bundle");
    let target_dir = build_dir.clone();

    eprintln!("== the forwarding runtime (hip-on-cuda), release");
    cargo(&root, &["build", "--release", "-p", "hip-on-cuda"], &[])?;
    let forwarder = root.join("target/release/libamdhip64.so");
    if !forwarder.is_file() {
        bail!("{} was not built", forwarder.display());
    }

    // A library directory whose libraries are the forwarder: candle-rocm-hip's
    // build script then links amdhip64, rocblas and rocrand, all resolved by it.
    let prefix = build_dir.join("rocm");
    let lib = prefix.join("lib");
    std::fs::create_dir_all(&lib).with_context(|| format!("creating {}", lib.display()))?;
    for name in ["libamdhip64.so", "librocblas.so", "librocrand.so"] {
        let dest = lib.join(name);
        let _ = std::fs::remove_file(&dest);
        std::fs::copy(&forwarder, &dest)
            .with_context(|| format!("copying the forwarder to {}", dest.display()))?;
    }

    let lib_str = lib.display().to_string();
    let env: Vec<(&str, &str)> = vec![
        ("CANDLE_ROCM_LIB_DIR", lib_str.as_str()),
        ("CANDLE_ROCM_LINK_ROCBLAS", "1"),
        ("CANDLE_ROCM_LINK_ROCRAND", "1"),
        ("CANDLE_ROCM_ARCHS", args.archs.as_str()),
        ("CANDLE_ROCM_LAUNCHERS", "shared"),
        ("CARGO_PROFILE_RELEASE_DEBUG", "false"),
        ("CARGO_PROFILE_RELEASE_STRIP", "symbols"),
    ];
    // candle-core: its whole suite (the library's tests and every upstream test file).
    let core_args: Vec<String> = vec!["--features".into(), "rocm".into(), "--lib".into(), "--tests".into()];
    let builds = [
        TestBuild {
            group: "candle-core",
            manifest: "generated/candle-core/Cargo.toml",
            args: core_args,
        },
        // candle-nn: its suite (upstream's tests are CPU tests; its ROCm ops are
        // compared with the CPU by the parity tests of scratch-rocm).
        TestBuild {
            group: "candle-nn",
            manifest: "generated/candle-nn/Cargo.toml",
            args: vec!["--features".into(), "rocm".into(), "--lib".into(), "--tests".into()],
        },
        TestBuild {
            group: "scratch-rocm",
            manifest: "tests/scratch-rocm/Cargo.toml",
            args: vec!["--features".into(), "rocm".into(), "--tests".into()],
        },
        TestBuild {
            group: "candle-rocm-hip",
            manifest: "rocm-runtime/hip/Cargo.toml",
            args: vec!["--lib".into()],
        },
    ];
    let mut binaries = Vec::new();
    for build in &builds {
        eprintln!(
            "== {}: test binaries with feature rocm, release, linked against the forwarder",
            build.group
        );
        binaries.extend(build_tests(&root, &target_dir, build, &env)?);
    }

    if out.exists() {
        std::fs::remove_dir_all(&out)
            .with_context(|| format!("removing the old bundle {}", out.display()))?;
    }
    std::fs::create_dir_all(out.join("lib"))?;
    std::fs::copy(&forwarder, out.join("lib/libamdhip64.so.5"))?;
    let mut tsv = String::from(
        "# group\tworking directory (from the repository root)\tbinary (from the bundle)\n",
    );
    for b in &binaries {
        let rel = format!("bin/{}/{}", b.group, b.name);
        let dest = out.join(&rel);
        std::fs::create_dir_all(dest.parent().expect("bin/<group>"))?;
        std::fs::copy(&b.path, &dest).with_context(|| format!("copying {}", b.path.display()))?;
        tsv.push_str(&format!("{}\t{}\t{}\n", b.group, b.cwd, rel));
    }
    std::fs::write(out.join("tests.tsv"), tsv)?;
    copy_amd_launchers(&target_dir, &build_dir.join("amd-launchers"))?;

    let mut sizes: Vec<(String, u64)> = Vec::new();
    collect_sizes(&out, &out, &mut sizes)?;
    sizes.sort();
    let total: u64 = sizes.iter().map(|(_, s)| s).sum();
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success());
    let commit = commit
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mut report = format!(
        "GPU bundle (cargo xtask gpu-bundle) from commit {commit}{}\nrun on the NVIDIA machine: bash hip-on-cuda/run-gpu-tests.sh {}\n\n",
        if git_dirty(&root) { " with uncommitted changes" } else { "" },
        args.out.display()
    );
    for (path, size) in &sizes {
        report.push_str(&format!("{:>10}  {path}\n", size));
    }
    report.push_str(&format!("{total:>10}  total ({:.1} MiB unpacked)\n", mib(total)));
    std::fs::write(out.join("BUNDLE.txt"), &report)?;
    print!("{report}");
    let packed = pack(&out)?;
    let packed_size = std::fs::metadata(&packed)?.len();
    println!("{}: {:.1} MiB (what is carried; the limit is {} MiB)", packed.display(), mib(packed_size), BUNDLE_LIMIT_BYTES >> 20);
    if packed_size > BUNDLE_LIMIT_BYTES {
        bail!("{} is {:.1} MiB, over the {} MiB that can be carried to the GPU machine", packed.display(), mib(packed_size), BUNDLE_LIMIT_BYTES >> 20);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `<out>.tar.xz` of the bundle folder (written beside it, then renamed into place).
fn pack(out: &Path) -> Result<PathBuf> {
    let name = out.file_name().context("the bundle folder has no name")?.to_string_lossy().into_owned();
    let parent = out.parent().context("the bundle folder has no parent")?;
    let packed = parent.join(format!("{name}.tar.xz"));
    let partial = parent.join(format!("{name}.tar.xz.partial"));
    let status = Command::new("tar")
        .env("XZ_OPT", "-6 -T0")
        .arg("-cJf")
        .arg(&partial)
        .arg("-C")
        .arg(parent)
        .arg(&name)
        .status()
        .context("running tar (with xz)")?;
    if !status.success() {
        bail!("tar -cJf {} failed ({status})", partial.display());
    }
    std::fs::rename(&partial, &packed)?;
    Ok(packed)
}

/// The AMD build of the launchers' shared library (beside the bundle, not in it):
/// what the bundle's binaries load when they run on a machine without an NVIDIA GPU.
fn copy_amd_launchers(target_dir: &Path, dest: &Path) -> Result<()> {
    let build = target_dir.join("release/build");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in
        std::fs::read_dir(&build).with_context(|| format!("reading {}", build.display()))?
    {
        let lib = entry?.path().join("out/libcandle_rocm_launchers.so");
        if let Ok(meta) = std::fs::metadata(&lib) {
            found.push((meta.modified()?, lib));
        }
    }
    let Some((_, newest)) = found.into_iter().max() else {
        bail!(
            "no libcandle_rocm_launchers.so under {}: candle-rocm-kernels did not build it",
            build.display()
        );
    };
    std::fs::create_dir_all(dest)?;
    std::fs::copy(&newest, dest.join("libcandle_rocm_launchers.so"))
        .with_context(|| format!("copying {}", newest.display()))?;
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn git_dirty(root: &Path) -> bool {
    Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| !o.stdout.is_empty())
}

fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
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
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
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
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["profile"]["test"] != true {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        let target = msg["target"]["name"].as_str().unwrap_or("test");
        let is_lib = msg["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "lib"));
        let name = if is_lib {
            format!("{target}-lib")
        } else {
            target.to_string()
        };
        found.push(TestBinary {
            group: build.group,
            name,
            path: PathBuf::from(exe),
            cwd: cwd.clone(),
        });
    }
    if found.is_empty() {
        bail!("cargo reported no test executable for {}", build.manifest);
    }
    Ok(found)
}

fn collect_sizes(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_sizes(base, &path, out)?;
        } else {
            let size = std::fs::metadata(&path)?.len();
            out.push((
                path.strip_prefix(base)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
                size,
            ));
        }
    }
    Ok(())
}
