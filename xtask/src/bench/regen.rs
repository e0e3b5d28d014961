//! `cargo xtask bench regen`: the wall time of a full regen (a fresh output
//! directory) and of a no-op regen (the fingerprint path, and `--check`,
//! which translates everything and compares), beside PyTorch's
//! `torch.utils.hipify` and `hipify-perl` on the same candle-kernels sources
//! where they are installed. Every figure is a whole process, several runs.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use clap::Args;

use super::results::{fmt3, this_machine, Table};
use super::timing::{time_command, Runs};
use crate::workspace::workspace_root;
use crate::regen::{hipify, upstream};

#[derive(Args, Debug)]
pub struct RegenBenchArgs {
    /// Counted runs of each command.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Uncounted runs first.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// A Candle checkout instead of the pinned crates.io release (as `regen --candle-src`).
    #[arg(long, value_name = "DIR")]
    candle_src: Option<PathBuf>,
    /// The result file.
    #[arg(long, value_name = "FILE", default_value = "bench/results/regen.tsv")]
    out: PathBuf,
    /// The Python that has PyTorch.
    #[arg(long, default_value = "python3")]
    python: String,
    /// hipify-perl to time (default: the one regen would use, on PATH or in $ROCM_PATH/bin).
    /// Given here only, it is timed without becoming regen's first pass.
    #[arg(long, value_name = "FILE")]
    hipify_perl: Option<PathBuf>,
}

/// The targets the issue sets, printed beside the figures.
const FULL_VS_TORCH_TARGET: f64 = 5.0;
const NO_OP_TARGET_S: f64 = 1.0;

pub fn run(args: RegenBenchArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let config = upstream::load_config(&root)?;
    let up = match &args.candle_src {
        Some(dir) => upstream::from_checkout(&config.candle, dir)?,
        None => upstream::from_registry(&config.candle, &config.candle.version)?,
    };
    let kernels_src = up.kernels.root.join("src");
    let exe = std::env::current_exe().context("locating the xtask executable")?;
    let work = tempfile::tempdir().context("creating a scratch directory")?;
    let regen = |out: &Path, extra: &[&str]| {
        let mut c = Command::new(&exe);
        c.arg("regen").arg("--out").arg(out).args(extra);
        // the fingerprint records of these scratch outputs stay in the scratch directory
        c.env(crate::regen::fingerprint::STATE_DIR_ENV, work.path().join("state"));
        if let Some(src) = &args.candle_src {
            c.arg("--candle-src").arg(src);
        }
        c
    };
    let (w, n) = (args.warmup, args.runs);
    let mut table = Table::new(&["tool", "case", "runs", "min_s", "median_s", "max_s"]);
    table.note("machine", this_machine());
    table.note("inputs", up.describe());
    table.note("command", "cargo xtask bench regen");
    let record = |table: &mut Table, tool: &str, case: &str, runs: &Runs| {
        println!("  {tool:<28} {case:<44} median {:>8} s  (min {}, max {}, {} runs)", fmt3(runs.median()), fmt3(runs.min()), fmt3(runs.max()), runs.seconds.len());
        table.push(vec![tool.into(), case.into(), runs.seconds.len().to_string(), fmt3(runs.min()), fmt3(runs.median()), fmt3(runs.max())]);
    };
    println!("bench regen: {} ({} + {} runs each)", up.describe(), w, n);

    let full = time_command("full regen", w, n, &mut |_| Ok(()), &|i| regen(&work.path().join(format!("full-{i}")), &[]))?;
    record(&mut table, "candle-rocm regen", "full: kernels + backend, fresh output", &full);
    let noop_out = work.path().join("noop");
    // the first regen into noop_out writes it and records the fingerprint: not a no-op, not counted
    time_command("regen (priming the no-op case)", 1, 0, &mut |_| Ok(()), &|_| regen(&noop_out, &[]))?;
    let noop = time_command("no-op regen", w, n, &mut |_| Ok(()), &|_| regen(&noop_out, &[]))?;
    record(&mut table, "candle-rocm regen", "no-op: nothing changed (fingerprint)", &noop);
    let check = time_command("regen --check", w, n, &mut |_| Ok(()), &|_| regen(&noop_out, &["--check"]))?;
    record(&mut table, "candle-rocm regen", "no-op, translating: --check", &check);

    // the kernel translation alone, in this process: what torch.utils.hipify's call does
    let step_input = crate::regen::steps::StepInput::new(&up, Default::default())?;
    let mut seconds = Vec::with_capacity(n);
    for i in 0..w + n {
        let start = std::time::Instant::now();
        crate::regen::steps::kernels(&step_input)?;
        if i >= w {
            seconds.push(start.elapsed().as_secs_f64());
        }
    }
    let kernels_step = Runs { seconds, stdout: vec![] };
    record(&mut table, "candle-rocm regen", "kernels: the translation call alone", &kernels_step);

    let torch = torch_available(&args.python);
    let mut torch_call = None;
    let mut torch_process = Runs { seconds: vec![], stdout: vec![] };
    if torch {
        let script = root.join("bench/hipify_torch.py");
        let runs = time_command("torch.utils.hipify", w, n, &mut |_| Ok(()), &|i| {
            let mut c = Command::new(&args.python);
            c.arg(&script).arg(&kernels_src).arg(work.path().join(format!("torch-{i}")));
            c
        })?;
        record(&mut table, "torch.utils.hipify", "kernels: process (incl. import torch)", &runs);
        torch_process = runs.clone();
        // the call alone, as the script measures it
        let seconds = runs
            .stdout
            .iter()
            .map(|text| text.lines().find_map(|l| l.strip_prefix("hipify_seconds ")).and_then(|s| s.trim().parse::<f64>().ok()).with_context(|| format!("no hipify_seconds line in: {text}")))
            .collect::<Result<Vec<f64>>>()?;
        let call = Runs { seconds, stdout: vec![] };
        record(&mut table, "torch.utils.hipify", "kernels: the hipify() call alone", &call);
        torch_call = Some(call);
    } else {
        println!("  torch.utils.hipify: not run ({} cannot import torch)", args.python);
        table.note("torch.utils.hipify", format!("not run: {} cannot import torch", args.python));
    }
    match args.hipify_perl.clone().or_else(hipify::find) {
        Some(perl) => {
            let files = cuda_files(&kernels_src)?;
            // one counted run: hipify-perl takes minutes on these sources
            let runs = time_command("hipify-perl", 0, 1, &mut |_| Ok(()), &|_| {
                let mut c = Command::new("sh");
                c.args(["-c", "p=$1; shift; for f; do \"$p\" \"$f\" >/dev/null || exit 1; done", "sh"]).arg(&perl).args(&files);
                c
            })?;
            record(&mut table, "hipify-perl", "kernels: one process per file", &runs);
        }
        None => {
            println!("  hipify-perl: not run (not on PATH nor in $ROCM_PATH/bin)");
            table.note("hipify-perl", "not run: not installed");
        }
    }

    println!("targets:");
    if let Some(call) = &torch_call {
        let process = torch_process.median() / full.median();
        let calls = call.median() / kernels_step.median();
        println!("  full regen (kernels + backend) vs torch.utils.hipify (kernels), whole processes: {}x faster (target >= {FULL_VS_TORCH_TARGET}x)", fmt3(process));
        println!("  kernel translation call vs torch.utils.hipify's hipify() call, same inputs: {}x faster", fmt3(calls));
        table.note("full regen (kernels + backend) vs torch.utils.hipify (kernels), whole processes", format!("{}x faster (target >= {FULL_VS_TORCH_TARGET}x)", fmt3(process)));
        table.note("kernel translation call vs torch.utils.hipify's hipify() call, same inputs", format!("{}x faster", fmt3(calls)));
    }
    println!("  no-op regen: {} s (target < {NO_OP_TARGET_S} s); without the fingerprint (--check): {} s", fmt3(noop.median()), fmt3(check.median()));
    super::provenance::write_measured(&table, &args.out)?;
    println!("wrote {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}

fn torch_available(python: &str) -> bool {
    Command::new(python).args(["-c", "import torch.utils.hipify.hipify_python"]).output().is_ok_and(|o| o.status.success())
}

/// The `.cu`/`.cuh` files under `dir`, sorted.
fn cuda_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = crate::tree::read_tree(dir)?.into_keys().filter(|p| p.ends_with(".cu") || p.ends_with(".cuh")).map(|p| dir.join(p)).collect();
    files.sort();
    Ok(files)
}
