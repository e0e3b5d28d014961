//! `cargo xtask bench kernel-build`: what a user's `cargo build` spends in
//! candle-rocm-kernels' build script (hipcc on every generated kernel), for
//! one and for two arches: cold (the crate's Rust dependencies already built,
//! no kernel built), warm with nothing changed, and warm after one kernel
//! file was touched.
//!
//! Cold runs are primed with a one-kernel source tree (so cargo has built the
//! build script and its dependencies), then pointed at generated/kernels: the
//! build script's stamp differs, so every unit is compiled.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::results::{fmt3, this_machine, Table};
use super::timing::{time_command, Runs};
use crate::workspace::workspace_root;

#[derive(Args, Debug)]
pub struct KernelBuildArgs {
    /// Arch lists to build for, each comma separated (repeat the flag).
    #[arg(long = "archs", default_values = ["gfx90a", "gfx90a,gfx1030"])]
    arch_sets: Vec<String>,
    /// Counted cold builds per arch list (each takes minutes).
    #[arg(long, default_value_t = 1)]
    cold_runs: usize,
    /// Counted warm builds per case.
    #[arg(long, default_value_t = 5)]
    warm_runs: usize,
    /// The result file.
    #[arg(long, value_name = "FILE", default_value = "bench/results/kernel-build.tsv")]
    out: PathBuf,
}

const PACKAGE: &str = "candle-rocm-kernels";
const COLD_TARGET_S: f64 = 300.0;
const WARM_TARGET_S: f64 = 2.0;

pub fn run(args: KernelBuildArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let kernels = root.join("generated/kernels");
    if !kernels.is_dir() {
        bail!("{} does not exist: run cargo xtask regen first", kernels.display());
    }
    let hipcc = hip_build::Hipcc::locate()?;
    let mut table = Table::new(&["archs", "case", "runs", "min_s", "median_s", "max_s"]);
    table.note("machine", this_machine());
    table.note("hipcc", hipcc.version()?);
    table.note("command", "cargo xtask bench kernel-build");
    let tiny = tempfile::tempdir().context("creating a scratch directory")?;
    let tiny_kernels = one_kernel_tree(tiny.path())?;
    println!("bench kernel-build: {} with {}", kernels.display(), hipcc.version()?);

    for archs in &args.arch_sets {
        let target = root.join("target/bench-kernel-build").join(archs.replace(',', "+"));
        let build = |kernels_dir: &Path| {
            let mut c = Command::new(env!("CARGO"));
            c.current_dir(&root)
                .args(["build", "-p", PACKAGE, "--target-dir"])
                .arg(&target)
                .env("CANDLE_ROCM_ARCHS", archs)
                .env("CANDLE_ROCM_KERNELS_DIR", kernels_dir)
                // Debian's hipcc targets NVIDIA once CUDA is installed
                .env("HIP_PLATFORM", "amd");
            c
        };
        let mut prime = |_: usize| -> Result<()> {
            let out = build(&tiny_kernels).output().context("running cargo")?;
            if !out.status.success() {
                bail!("priming {PACKAGE} with a one-kernel tree failed:\n{}", String::from_utf8_lossy(&out.stderr));
            }
            Ok(())
        };
        let record = |table: &mut Table, case: &str, runs: &Runs, target: Option<f64>| {
            let verdict = match target {
                Some(t) if runs.median() <= t => format!("; target <= {t} s: meets"),
                Some(t) => format!("; target <= {t} s: misses"),
                None => String::new(),
            };
            println!("  {archs:<16} {case:<32} median {:>7} s (min {}, max {}, {} runs{verdict})", fmt3(runs.median()), fmt3(runs.min()), fmt3(runs.max()), runs.seconds.len());
            table.push(vec![archs.clone(), case.into(), runs.seconds.len().to_string(), fmt3(runs.min()), fmt3(runs.median()), fmt3(runs.max())]);
        };
        let cold = time_command("cold kernel build", 0, args.cold_runs, &mut prime, &|_| build(&kernels))?;
        record(&mut table, "cold", &cold, Some(COLD_TARGET_S));
        let warm = time_command("warm kernel build", 1, args.warm_runs, &mut |_| Ok(()), &|_| build(&kernels))?;
        record(&mut table, "warm, nothing changed", &warm, Some(WARM_TARGET_S));
        let touched = kernels.join("affine.hip");
        let touch = time_command("one file touched", 1, args.warm_runs, &mut |_| touch_file(&touched), &|_| build(&kernels))?;
        record(&mut table, "warm, affine.hip touched", &touch, None);
    }
    table.note("targets", format!("cold <= {COLD_TARGET_S} s for gfx90a+gfx1030 on 2 cores; warm <= {WARM_TARGET_S} s"));
    super::provenance::write_measured(&table, &args.out)?;
    println!("wrote {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// A kernel tree with one trivial code-object unit (and the files the build
/// script reads beside it), under `dir`; returns its kernels directory.
fn one_kernel_tree(dir: &Path) -> Result<PathBuf> {
    let kernels = dir.join("kernels");
    std::fs::create_dir_all(&kernels)?;
    std::fs::write(kernels.join("prime.hip"), "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void prime() {}\n")?;
    std::fs::write(kernels.join("ffi.rs"), "")?;
    std::fs::write(dir.join("MANIFEST.toml"), "[kernels]\nstatic_library = []\n")?;
    Ok(kernels)
}

/// Sets the modification time of `path` to now (its contents stay).
fn touch_file(path: &Path) -> Result<()> {
    let file = std::fs::File::options().write(true).open(path).with_context(|| format!("opening {}", path.display()))?;
    file.set_modified(std::time::SystemTime::now()).with_context(|| format!("touching {}", path.display()))
}
