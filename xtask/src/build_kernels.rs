//! `cargo xtask build-kernels`: compile generated/kernels for AMD GPUs and
//! check that every kernel of the CUDA build exists for every arch.
//!
//! With `--rocm RELEASE` the compiler is that release's hipcc, in the root
//! `cargo xtask rocm-root` makes (made first when absent). With `--each-arch`
//! the arches are compiled one after another into `OUT/ARCH`, each with its
//! wall time, kernel parity and warnings (counted, and compared with the
//! record in bench/results/kernel-warnings/: a new one is named). The units
//! compiled are kept in a kernel cache (`--cache`; with `--rocm`, the root's),
//! where a later build of the kernels crate from the same sources finds them
//! (`cargo xtask rocm-backend` inside the root, the backend check of `cargo xtask
//! releases`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use hip_build::cache::KernelCache;
use hip_build::kernel_names::{self, Reference};
use hip_build::{compile_all_with_progress, plan, Hipcc};
use indicatif::{ProgressBar, ProgressStyle};

use crate::rocm;
use crate::{kernel_warnings, tree, workspace::workspace_root};
use crate::regen::upstream;

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Offload arches, comma separated, or `all` (every current AMD arch) (default: CANDLE_ROCM_ARCHS, else gfx90a,gfx1030).
    #[arg(long, value_delimiter = ',')]
    arch: Vec<String>,
    /// Compile with this ROCm release's hipcc (a key of rocm-releases.toml: 7.2, 6.4), in its sid root
    /// (made by `cargo xtask rocm-root` when absent). Default: the hipcc found on this machine.
    #[arg(long, value_name = "RELEASE")]
    rocm: Option<String>,
    /// Compile arch by arch into OUT/ARCH: wall time, parity and warnings per arch.
    #[arg(long)]
    each_arch: bool,
    /// Rewrite the warning record of the arches built (bench/results/kernel-warnings/RELEASE.tsv).
    #[arg(long)]
    record_warnings: bool,
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
    /// Keep the units compiled in this kernel cache (hip_build's, as CANDLE_ROCM_KERNELS_CACHE
    /// names it), for a later build of the kernels crate from the same sources with the same
    /// hipcc. Default with --rocm: the root's cache, which `cargo xtask rocm-backend` reads.
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
}

pub fn run(args: BuildArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let config = upstream::load_config(&root)?;
    let kernels = args.kernels.unwrap_or_else(|| root.join("generated/kernels"));
    let out = args.out.unwrap_or_else(|| root.join("target/hip-kernels"));
    let arches = match args.arch.as_slice() {
        [] => hip_build::arches_from_env().unwrap_or_else(hip_build::default_arches),
        [all] if all == "all" => hip_build::CURRENT_ARCHES.iter().map(|a| a.to_string()).collect(),
        list => list.to_vec(),
    };
    // with --rocm, the root's kernel cache keeps what compiles, for the kernels crate
    // built inside the root (cargo xtask rocm-backend): compiled once per arch
    let (hipcc, release, cache_dir) = match &args.rocm {
        Some(release) => {
            let rocm_root = rocm::root::ensure(release, None, None)?;
            (Hipcc::at(rocm_root.hipcc()), release.clone(), Some(args.cache.clone().unwrap_or_else(|| rocm_root.kernels_cache())))
        }
        None => {
            let hipcc = Hipcc::locate()?;
            let version = hipcc.version()?;
            // the host's hipcc, by HIP major.minor (`host-5.2`)
            let release = match hip_build::releases::major_minor(&version) {
                Some((major, minor)) => format!("host-{major}.{minor}"),
                None => format!("host-{version}"),
            };
            (hipcc, release, args.cache.clone())
        }
    };
    let version = hipcc.version()?;
    for arch in &arches {
        hipcc.check_arch(arch).with_context(|| format!("hipcc {version} ({})", hipcc.path().display()))?;
    }
    if !kernels.is_dir() {
        bail!("{} does not exist: run cargo xtask regen first", kernels.display());
    }
    // canonical, as the kernels crate's build names it: the cache is keyed by the path
    let kernels = kernels.canonicalize().with_context(|| format!("resolving {}", kernels.display()))?;
    // the units' kinds and flags as the kernels crate takes them: the MANIFEST.toml regen
    // wrote beside these kernels (another release's own), else the pinned release's
    let beside = kernels.parent().map(|p| p.join("MANIFEST.toml")).filter(|p| p.is_file());
    let manifest = match &beside {
        Some(path) => plan::KernelsManifest::read(path).map_err(|e| anyhow::anyhow!(e))?,
        None => crate::regen::kernels_manifest(&config.kernels.static_library),
    };
    let cache = match &cache_dir {
        Some(dir) => Some(KernelCache::open(dir.clone(), &hipcc, &kernels).map_err(|e| anyhow::anyhow!(e))?),
        None => None,
    };
    let parallelism = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let reference = if args.no_parity {
        None
    } else {
        let path = args.reference.unwrap_or_else(|| root.join(format!("tests/fixtures/cuda-kernels-{}.txt", config.candle.version)));
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Some(Reference::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?)
    };
    // one build of all arches, or one per arch
    let builds: Vec<(Vec<String>, PathBuf)> =
        if args.each_arch { arches.iter().map(|a| (vec![a.clone()], out.join(a))).collect() } else { vec![(arches.clone(), out.clone())] };
    let record_path = kernel_warnings::record_path(&root, &release);
    let mut record = kernel_warnings::read_record(&record_path)?;
    let mut ok = true;
    let mut summary = Vec::new();
    for (build_arches, build_out) in builds {
        let jobs = plan::kernel_jobs(&kernels, &build_out, &build_arches, &manifest).with_context(|| format!("listing {}", kernels.display()))?;
        println!("build-kernels: {} files for {} with hipcc {version} ({} jobs)", jobs.len(), build_arches.join(","), parallelism);
        let (results, wall) = compile(&hipcc, jobs, parallelism);
        let failed = results.iter().filter(|r| r.result.is_err()).count();
        if let Some(cache) = &cache {
            for r in results.iter().filter(|r| r.result.is_ok()) {
                cache.store(&r.job).map_err(|e| anyhow::anyhow!(e))?;
            }
        }
        let warnings = kernel_warnings::count(results.iter().filter_map(|r| r.output.as_ref()).flat_map(|o| kernel_warnings::parse(&o.stderr, &kernels)));
        let label = build_arches.join(",");
        let new = kernel_warnings::new_since(&warnings, record.get(&label));
        println!("{label}: {} of {} units compiled in {wall:.1} s; {} warnings ({} distinct, {} new since the record)", results.len() - failed, results.len(), warnings.values().sum::<usize>(), warnings.len(), new.len());
        for w in &new {
            println!("  new warning on {label}: {w}");
        }
        let parity_line = match &reference {
            Some(reference) if failed == 0 => {
                let (complete, line) = check_parity(reference, &results, &kernels, &build_arches)?;
                ok &= complete;
                line
            }
            _ => "parity not checked".to_string(),
        };
        summary.push(format!("{label}\t{}/{} units\t{wall:.1} s\t{} warnings\t{parity_line}", results.len() - failed, results.len(), warnings.values().sum::<usize>()));
        if failed > 0 {
            ok = false;
            eprintln!("{failed} of {} kernel files failed to compile for {label}", results.len());
        }
        if args.record_warnings && failed == 0 {
            record.insert(label, warnings);
        }
    }
    if args.record_warnings {
        kernel_warnings::write_record(&record_path, &record)?;
        println!("warning record: {}", record_path.display());
    }
    if summary.len() > 1 {
        println!("summary (ROCm {release}, hipcc {version}):");
        for line in &summary {
            println!("  {line}");
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Compiles `jobs` with a progress bar; prints each unit's time or error. Returns the results and the wall time.
fn compile(hipcc: &Hipcc, jobs: Vec<hip_build::CompileJob>, parallelism: usize) -> (Vec<hip_build::JobResult>, f64) {
    let start = Instant::now();
    let bar = ProgressBar::new(jobs.len() as u64).with_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}").expect("valid template"));
    let results = compile_all_with_progress(hipcc, jobs, parallelism, &|r| {
        bar.set_message(tree::shown(&r.job.source).display().to_string());
        bar.inc(1);
    });
    bar.finish_and_clear();
    for r in &results {
        let name = tree::shown(&r.job.source);
        match &r.result {
            Ok(()) => println!("  {:>6.1}s  {}", r.wall.as_secs_f64(), name.display()),
            Err(e) => eprintln!("  FAILED   {}: {e}", name.display()),
        }
    }
    (results, start.elapsed().as_secs_f64())
}

/// Prints kernel parity per arch and launcher parity; whether nothing is missing, and a one-line summary.
fn check_parity(reference: &Reference, results: &[hip_build::JobResult], kernels: &std::path::Path, arches: &[String]) -> Result<(bool, String)> {
    let parity = kernel_names::check_build(reference, results, kernels, arches)?;
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
    let kernels_line: Vec<String> = parity.per_arch.iter().map(|(arch, r)| format!("{arch} {}/{} kernels", r.present, r.total)).collect();
    Ok((parity.complete(), format!("{}, {}/{} launchers", kernels_line.join(", "), l.present, l.total)))
}
