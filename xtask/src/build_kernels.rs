//! `cargo xtask build-kernels`: compile generated/kernels for AMD GPUs and
//! check that every kernel of the CUDA build exists for every arch.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use hip_build::parity::{self, Reference};
use hip_build::{compile_all_with_progress, plan, Hipcc};
use indicatif::{ProgressBar, ProgressStyle};

use crate::{tree, upstream, workspace_root};

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Offload arches, comma separated (default: CANDLE_ROCM_ARCHS, else gfx90a,gfx1030).
    #[arg(long, value_delimiter = ',')]
    arch: Vec<String>,
    /// Kernel sources (default: generated/kernels).
    #[arg(long, value_name = "DIR")]
    kernels: Option<PathBuf>,
    /// Where the code objects and objects go (default: target/hip-kernels).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Parallel hipcc jobs (default: available cores).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Kernel-name reference of the CUDA build (default: tests/fixtures/cuda-kernels-<pinned version>.txt).
    #[arg(long, value_name = "FILE")]
    reference: Option<PathBuf>,
    /// Skip the parity check (e.g. for kernels of another release).
    #[arg(long)]
    no_parity: bool,
}

pub fn run(args: BuildArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let config = upstream::load_config(&root)?;
    let kernels = args.kernels.unwrap_or_else(|| root.join("generated/kernels"));
    let out = args.out.unwrap_or_else(|| root.join("target/hip-kernels"));
    let arches = if !args.arch.is_empty() { args.arch } else { hip_build::arches_from_env().unwrap_or_else(|| hip_build::CI_ARCHES.iter().map(|a| a.to_string()).collect()) };
    let hipcc = Hipcc::locate()?;
    for arch in &arches {
        hipcc.check_arch(arch)?;
    }
    if !kernels.is_dir() {
        bail!("{} does not exist: run cargo xtask regen first", kernels.display());
    }
    let jobs = plan::kernel_jobs(&kernels, &out, &arches, &config.kernels.static_library).with_context(|| format!("listing {}", kernels.display()))?;
    let parallelism = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    println!("build-kernels: {} files for {} with {} ({} jobs)", jobs.len(), arches.join(","), hipcc.version()?, parallelism);
    let start = Instant::now();
    let bar = ProgressBar::new(jobs.len() as u64).with_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}").expect("valid template"));
    let results = compile_all_with_progress(&hipcc, jobs, parallelism, &|r| {
        bar.set_message(tree::shown(&r.job.source).display().to_string());
        bar.inc(1);
    });
    bar.finish_and_clear();
    let mut failed = 0;
    for r in &results {
        let name = tree::shown(&r.job.source);
        match &r.result {
            Ok(()) => println!("  {:>6.1}s  {}", r.wall.as_secs_f64(), name.display()),
            Err(e) => {
                failed += 1;
                eprintln!("  FAILED   {}: {e}", name.display());
            }
        }
    }
    println!("hipcc wall time: {:.1}s", start.elapsed().as_secs_f64());
    if failed > 0 {
        bail!("{failed} of {} kernel files failed to compile", results.len());
    }
    if args.no_parity {
        return Ok(ExitCode::SUCCESS);
    }
    let reference_path = args.reference.unwrap_or_else(|| root.join(format!("tests/fixtures/cuda-kernels-{}.txt", config.candle.version)));
    let text = std::fs::read_to_string(&reference_path).with_context(|| format!("reading {}", reference_path.display()))?;
    let reference = Reference::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", reference_path.display()))?;
    let ok = check_parity(&reference, &results, &kernels, &arches)?;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Prints kernel parity per arch and launcher parity; false if anything is missing.
fn check_parity(reference: &Reference, results: &[hip_build::JobResult], kernels: &std::path::Path, arches: &[String]) -> Result<bool> {
    let parity = parity::check_build(reference, results, kernels, arches)?;
    for (arch, report) in &parity.per_arch {
        println!("kernel parity {arch}: {}/{} CUDA kernels present", report.present, report.total);
        for m in &report.missing {
            eprintln!("  missing on {arch}: {m}");
        }
    }
    let l = &parity.launchers;
    println!("launcher parity: {}/{} ffi.rs launchers present", l.present, l.total);
    for m in &l.missing {
        eprintln!("  missing launcher: {m}");
    }
    Ok(parity.complete())
}
