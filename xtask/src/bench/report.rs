//! `cargo xtask bench report`: BENCHMARKS.md and bench/ratios.png from the
//! result files under bench/results. Nothing in either is typed by hand: a
//! missing result file becomes a line saying which command produces it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::results::{fmt3, Table};
use super::table::{markdown_table, notes};
use crate::workspace::workspace_root;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Where the result files are.
    #[arg(long, value_name = "DIR", default_value = "bench/results")]
    results: PathBuf,
    /// The markdown file to write.
    #[arg(long, value_name = "FILE", default_value = "BENCHMARKS.md")]
    out: PathBuf,
    /// The plot to write.
    #[arg(long, value_name = "FILE", default_value = "bench/ratios.png")]
    plot: PathBuf,
    /// A TrueType font for the plot's text.
    #[arg(long, value_name = "FILE", default_value = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")]
    font: PathBuf,
    /// Write nothing; fail if the markdown file is not what the result files give.
    #[arg(long)]
    check: bool,
}

/// The targets.
const KERNEL_RATIO_TARGET: f64 = 0.98;
const ELEMENTWISE_PEAK_TARGET: f64 = 80.0;
const BACKEND_RATIO_TARGET: f64 = 0.95;
/// The families whose kernels read and write each element once.
const ELEMENTWISE: &[&str] = &["unary", "binary", "affine", "cast"];

/// The result files and the commands that write them.
const REGEN: &[(&str, &str)] = &[
    ("regen.tsv", "cargo xtask bench regen"),
    ("regen-gpu-host.tsv", "the GPU machine: bench/run-on-gpu.sh (cargo xtask bench regen with PyTorch present)"),
];
const KERNEL_BUILD: (&str, &str) = ("kernel-build.tsv", "cargo xtask bench kernel-build");
const KERNELS: (&str, &str) = ("kernels-h100.tsv", "the GPU machine: bench/kernels/run-kernel-bench.sh");
const BACKEND: (&str, &str) = ("backend-h100.tsv", "the GPU machine: bench/backend/run-backend-bench.sh");
const RELEASES: (&str, &str) = ("releases.tsv", "cargo xtask releases --record --checkout-of 0.10.2 --candle-src DIR");
const MISTRALRS: (&str, &str) = ("mistralrs-gpu.tsv", "the GPU machine: bench/mistralrs/run.sh (built by cargo xtask gpu-program mistralrs)");
const MISTRALRS_SPEED: (&str, &str) = ("mistralrs-speed.tsv", "the GPU machine: bench/mistralrs/run.sh (built by cargo xtask gpu-program mistralrs)");
const EXAMPLES: (&str, &str) = ("examples-h100.tsv", "the GPU machine: bench/examples/run-examples.sh (built by cargo xtask gpu-program examples-parity)");
const EXAMPLES_FLASH_ATTN: (&str, &str) = (
    "examples-flash-attn-h100.tsv",
    "the GPU machine: SET=flash-attn bench/examples/run-examples.sh (built by cargo xtask gpu-program examples-flash-attn)",
);
const EXAMPLES_MULTIPROCESS: (&str, &str) = (
    "examples-multiprocess-h100.tsv",
    "a two-GPU machine: SET=multiprocess bench/examples/run-examples.sh (built by cargo xtask gpu-program examples-flash-attn)",
);

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let at = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { root.join(p) };
    let (results, out, plot) = (at(&args.results), at(&args.out), at(&args.plot));
    let load = |name: &str| super::provenance::read_for_report(&results.join(name));
    let mut md = String::new();
    md.push_str("# Benchmarks\n\n");
    md.push_str("Written by `cargo xtask bench report` from the result files in `bench/results/`; every figure comes from the command named in its section (nothing here is typed). Targets are goals printed beside the figures, not test assertions. Analysis of where we are behind: `bench/FINDINGS.md`.\n\n");

    super::provenance::overview(&mut md, &results)?;
    md.push_str("## Regen speed\n\n");
    for (name, command) in REGEN {
        match load(name)? {
            Some(t) => regen_section(&mut md, name, command, &t)?,
            None => writeln!(md, "`{name}`: not measured yet ({command}).\n")?,
        }
    }
    md.push_str("## Kernel build time\n\n");
    match load(KERNEL_BUILD.0)? {
        Some(t) => simple_section(&mut md, KERNEL_BUILD, &t, &["archs", "case", "runs", "min_s", "median_s", "max_s"])?,
        None => writeln!(md, "Not measured yet ({}).\n", KERNEL_BUILD.1)?,
    }
    md.push_str("## Every Candle release through the pipeline\n\n");
    match load(RELEASES.0)? {
        Some(t) => simple_section(&mut md, RELEASES, &t, &["input", "regen", "units", "backend", "parity", "seconds"])?,
        None => writeln!(md, "Not measured yet ({}).\n", RELEASES.1)?,
    }
    super::static_cost::section(&mut md, &results)?;
    warnings_section(&mut md, &results.join("kernel-warnings"))?;
    md.push_str("## Kernel throughput: translated vs original, H100\n\n");
    let families = match load(KERNELS.0)? {
        Some(t) => kernels_section(&mut md, &t)?,
        None => {
            writeln!(md, "Not measured yet ({}).\n", KERNELS.1)?;
            vec![]
        }
    };
    md.push_str("## Backend end to end: ROCm backend vs Candle's CUDA backend, H100\n\n");
    let backend = match load(BACKEND.0)? {
        Some(t) => backend_section(&mut md, &t)?,
        None => {
            writeln!(md, "Not measured yet ({}).\n", BACKEND.1)?;
            vec![]
        }
    };
    md.push_str("## Real programs: candle-examples on ROCm vs on Candle's CUDA backend, H100\n\n");
    match load(EXAMPLES.0)? {
        Some(t) => examples_section(&mut md, &t, EXAMPLES, "`--features cuda`", "`--features rocm`", "`bench/examples/cases.tsv`")?,
        None => writeln!(md, "Not measured yet ({}).\n", EXAMPLES.1)?,
    }
    md.push_str("### With flash attention\n\n");
    match load(EXAMPLES_FLASH_ATTN.0)? {
        Some(t) => examples_section(
            &mut md,
            &t,
            EXAMPLES_FLASH_ATTN,
            "`--features cuda,flash-attn`: Dao's kernels",
            "`--features rocm,flash-attn`: our run_mha",
            "`bench/examples/cases-flash-attn.tsv` (the CPU reference without `--use-flash-attn`)",
        )?,
        None => writeln!(md, "Not measured yet ({}).\n", EXAMPLES_FLASH_ATTN.1)?,
    }
    md.push_str("### Two GPUs: llama_multiprocess\n\n");
    match load(EXAMPLES_MULTIPROCESS.0)? {
        Some(t) => examples_section(
            &mut md,
            &t,
            EXAMPLES_MULTIPROCESS,
            "`--features cuda,flash-attn,nccl`: NCCL, Dao's kernels",
            "`--features rocm,flash-attn,rccl`: RCCL, our run_mha",
            "`bench/examples/cases-multiprocess.tsv` (the CPU reference: the one-process llama example on the same weights)",
        )?,
        None => writeln!(md, "Not measured yet ({}).\n", EXAMPLES_MULTIPROCESS.1)?,
    }
    md.push_str("## mistral.rs on ROCm through hip-on-cuda, against its CUDA build\n\n");
    match load(MISTRALRS.0)? {
        Some(t) => {
            md.push_str("mistral.rs 0.8.1's CLI ported by `port-crate` (docs/mistralrs.md) and its stock CUDA build, on one GPU in one call, on the made-up Llama: each case greedy, 128 tokens, then both as servers teacher-forced along the CUDA build's words. A disagreement whose CUDA margin is below the score differences is a near-tie. `*_follows_cpu`: how many of the CPU backend's greedy words each GPU side generates before it parts (f32 on the CPU where the case is bf16).\n\n");
            simple_section(&mut md, MISTRALRS, &t, &["case", "agree", "greedy", "teacher_forced_top1", "max_score_diff", "max_margin_at_difference", "rocm_follows_cpu", "cuda_follows_cpu"])?
        }
        None => writeln!(md, "Not measured yet ({}).\n", MISTRALRS.1)?,
    }
    md.push_str("### Speed, ROCm build over CUDA build\n\n");
    match load(MISTRALRS_SPEED.0)? {
        Some(t) => {
            md.push_str("The made-up Llama at 0.73B weights (16 layers, hidden 2048), a 512-word prompt and 128 greedy tokens; mistral.rs's own prompt and decode rates (tokens/s), each side's best of its runs, which alternate between the sides, and the ratio of the two sides' medians; a run that exits non-zero is counted and left out. The target is 0.9 or more. Where the greedy words part, both sides are teacher-forced along CUDA's, as above.\n\n");
            simple_section(
                &mut md,
                MISTRALRS_SPEED,
                &t,
                &["case", "rocm_prompt_tok_s", "cuda_prompt_tok_s", "prompt_rocm_over_cuda", "prompt_median_ratio", "rocm_decode_tok_s", "cuda_decode_tok_s", "decode_rocm_over_cuda", "decode_median_ratio", "nonzero_exits", "greedy", "teacher_forced_top1", "max_margin_at_difference", "max_score_diff"],
            )?
        }
        None => writeln!(md, "Not measured yet ({}).\n", MISTRALRS_SPEED.1)?,
    }
    super::numerics::section(&mut md, &results)?;
    super::collectives::section(&mut md, &results)?;
    super::flash_attn::section(&mut md, &results)?;
    if !families.is_empty() || !backend.is_empty() {
        if !args.check {
            draw(&plot, &args.font, &families, &backend)?;
        }
        let rel = plot.strip_prefix(&root).unwrap_or(&plot).display().to_string();
        writeln!(md, "## Plot\n\n![ratios]({rel})\n\nLeft: translated/original speed per kernel family (geometric mean). Right: ROCm/CUDA speed per backend benchmark (geometric mean over its shapes and dtypes, their number in parentheses). Dashed: the targets.\n")?;
    }
    if args.check {
        let on_disk = std::fs::read_to_string(&out).unwrap_or_default();
        if on_disk != md {
            eprintln!("{}", crate::tree::unified_diff(&crate::tree::shown(&out).display().to_string(), on_disk.as_bytes(), md.as_bytes(), 40));
            eprintln!("{} is not what the result files give: run cargo xtask bench report", out.display());
            return Ok(ExitCode::FAILURE);
        }
        println!("{} is what bench/results gives", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::write(&out, &md).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

fn simple_section(md: &mut String, (name, command): (&str, &str), t: &Table, columns: &[&str]) -> Result<()> {
    writeln!(md, "From `bench/results/{name}`, written by `{command}`.\n")?;
    notes(md, t)?;
    let idx = columns.iter().map(|c| t.column(c)).collect::<Result<Vec<_>>>()?;
    let rows: Vec<Vec<String>> = t.rows.iter().map(|r| idx.iter().map(|&i| r[i].clone()).collect()).collect();
    markdown_table(md, columns, &rows)
}

/// Compiler warnings per ROCm release and arch, from the records that
/// `cargo xtask build-kernels --rocm RELEASE --each-arch --record-warnings` writes.
fn warnings_section(md: &mut String, dir: &Path) -> Result<()> {
    md.push_str("## Compiler warnings of the generated kernels, per ROCm release and arch

");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "tsv")).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    if files.is_empty() {
        writeln!(md, "Not recorded yet (cargo xtask build-kernels --rocm RELEASE --each-arch --record-warnings).\n")?;
        return Ok(());
    }
    md.push_str("From `bench/results/kernel-warnings/RELEASE.tsv` (`cargo xtask build-kernels --rocm RELEASE --each-arch --record-warnings`); a build prints each warning that its record lacks. Counts are as the compiler prints them (host and device passes each).\n\n");
    md.push_str("| release | arch | warnings | distinct | most frequent |\n|---|---|---:|---:|---|\n");
    for file in files {
        let release = file.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        for (arch, counts) in crate::kernel_warnings::read_record(&file)? {
            let flag = |w: &str| w.rsplit_once(" [").map_or("", |(_, f)| f.trim_end_matches(']')).to_string();
            let mut by_flag: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
            for (w, n) in &counts {
                *by_flag.entry(flag(w)).or_default() += n;
            }
            let top = by_flag.iter().max_by_key(|(_, n)| **n).map(|(f, n)| format!("`{f}` ({n})")).unwrap_or_default();
            writeln!(md, "| {release} | {arch} | {} | {} | {top} |", counts.values().sum::<usize>(), counts.len())?;
        }
    }
    md.push('\n');
    Ok(())
}

fn regen_section(md: &mut String, name: &str, command: &str, t: &Table) -> Result<()> {
    simple_section(md, (name, command), t, &["tool", "case", "runs", "min_s", "median_s", "max_s"])
}

/// Per-family geometric means of `ratio`, in first-seen order.
pub fn family_means(t: &Table) -> Result<Vec<(String, f64, usize)>> {
    let fam = t.column("family")?;
    Ok(group_geomeans(t.rows.iter().map(|r| r[fam].clone()).zip(t.numbers("ratio")?)))
}

/// The geometric mean of each key's values and how many were measured (finite and
/// positive), keys in first-seen order; a key with none measured is left out.
fn group_geomeans(pairs: impl Iterator<Item = (String, f64)>) -> Vec<(String, f64, usize)> {
    let mut groups: Vec<(String, Vec<f64>)> = Vec::new();
    for (key, x) in pairs.filter(|(_, x)| x.is_finite() && *x > 0.0) {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, xs)) => xs.push(x),
            None => groups.push((key, vec![x])),
        }
    }
    groups.into_iter().map(|(k, xs)| (k, geomean(xs.iter().copied()), xs.len())).collect()
}

fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.filter(|x| x.is_finite() && *x > 0.0).fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    if n == 0 { f64::NAN } else { (sum / n as f64).exp() }
}

fn kernels_section(md: &mut String, t: &Table) -> Result<Vec<(String, f64)>> {
    writeln!(md, "From `bench/results/{}`, written by {}. ratio = original time / translated time (>= 1: ours at least as fast).\n", KERNELS.0, KERNELS.1)?;
    notes(md, t)?;
    let means = family_means(t)?;
    let overall = geomean(t.numbers("ratio")?.into_iter());
    let (fam, pct) = (t.column("family")?, t.numbers("translated_pct_peak")?);
    let mut rows = Vec::new();
    for (f, mean, n) in &means {
        let peaks: Vec<f64> = t.rows.iter().zip(&pct).filter(|(r, _)| &r[fam] == f).map(|(_, p)| *p).collect();
        let best = peaks.iter().copied().filter(|p| p.is_finite()).fold(f64::NAN, f64::max);
        let elementwise = ELEMENTWISE.contains(&f.as_str());
        let verdict = match (*mean >= KERNEL_RATIO_TARGET, elementwise, best >= ELEMENTWISE_PEAK_TARGET) {
            (true, false, _) | (true, true, true) => "meets",
            _ => "behind",
        };
        rows.push(vec![f.clone(), n.to_string(), fmt3(*mean), if elementwise { format!("{}%", fmt3(best)) } else { format!("({}%)", fmt3(best)) }, verdict.to_string()]);
    }
    rows.push(vec!["**overall**".into(), t.rows.len().to_string(), fmt3(overall), String::new(), if overall >= KERNEL_RATIO_TARGET { "meets".into() } else { "behind".into() }]);
    writeln!(md, "Per family (targets: ratio >= {KERNEL_RATIO_TARGET}; elementwise families {} >= {ELEMENTWISE_PEAK_TARGET}% of HBM peak, best kernel; other families' % in parentheses, for reference):\n", ELEMENTWISE.join("/"))?;
    markdown_table(md, &["family", "kernels", "ratio (geomean)", "% of HBM peak", "target"], &rows)?;
    md.push_str("Per kernel:\n\n");
    let cols = ["family", "kernel", "elements", "bytes", "original_us", "translated_us", "ratio", "original_pct_peak", "translated_pct_peak"];
    let idx = cols.iter().map(|c| t.column(c)).collect::<Result<Vec<_>>>()?;
    let rows: Vec<Vec<String>> = t.rows.iter().map(|r| idx.iter().map(|&i| r[i].clone()).collect()).collect();
    markdown_table(md, &cols, &rows)?;
    Ok(means.into_iter().map(|(f, m, _)| (f, m)).collect())
}

fn backend_section(md: &mut String, t: &Table) -> Result<Vec<(String, f64)>> {
    writeln!(md, "From `bench/results/{}`, written by {}. ratio = CUDA time / ROCm time (>= 1: ours at least as fast; target >= {BACKEND_RATIO_TARGET}).\n", BACKEND.0, BACKEND.1)?;
    notes(md, t)?;
    let ratio = t.numbers("ratio")?;
    let (b, s, d) = (t.column("benchmark")?, t.column("shape")?, t.column("dtype")?);
    let (cu, ro) = (t.column("cuda_us")?, t.column("rocm_us")?);
    let mut rows = Vec::new();
    for (r, x) in t.rows.iter().zip(&ratio) {
        let verdict = if *x >= BACKEND_RATIO_TARGET { "meets" } else { "behind" };
        rows.push(vec![r[b].clone(), r[s].clone(), r[d].clone(), r[cu].clone(), r[ro].clone(), fmt3(*x), verdict.into()]);
    }
    // the plot: one bar per benchmark (geometric mean over its shapes and dtypes)
    let bars: Vec<(String, f64)> = group_geomeans(t.rows.iter().map(|r| r[b].clone()).zip(ratio.iter().copied())).into_iter().map(|(name, mean, n)| (format!("{name} ({n})"), mean)).collect();
    let overall = geomean(ratio.iter().copied());
    rows.push(vec!["**geomean**".into(), String::new(), String::new(), String::new(), String::new(), fmt3(overall), String::new()]);
    markdown_table(md, &["benchmark", "shape", "dtype", "cuda_us", "rocm_us", "ratio", "target"], &rows)?;
    let behind = rows.iter().filter(|r| r[6] == "behind").count();
    writeln!(md, "{behind} of {} benchmarks below {BACKEND_RATIO_TARGET}.\n", t.rows.len())?;
    Ok(bars)
}

/// The candle-examples parity run: per case, whether the two builds agree and how fast each
/// ran. speed ratio = ROCm speed / CUDA speed (>= 1: ours at least as fast): tokens/s as
/// they are, ms inverted, and the process wall time where the example reports no speed.
fn examples_section(md: &mut String, t: &Table, (file, command): (&str, &str), cuda: &str, rocm: &str, cases: &str) -> Result<()> {
    writeln!(md, "From `bench/results/{file}`, written by {command}. candle-examples 0.11.1 programs as published (but for regen's upstream repairs, the same on both sides: `llama_multiprocess`), built once with stock crates.io Candle ({cuda}) and once from `generated/candle-examples` ({rocm}, run through hip-on-cuda), on the same made-up models (seeded random weights, `bench/examples/make-models`), same arguments, greedy decoding; cases in {cases}. speed ratio = ROCm speed / CUDA speed (tokens/s, or time per forward pass inverted; the process wall time where the example prints no speed). CPU vs CUDA / CPU vs ROCm: each GPU run against the stock build on Candle's CPU backend (`--cpu`), the same check; repeatable: two runs of one side agree.\n")?;
    notes(md, t)?;
    let col = |n: &str| t.column(n);
    let (case, example, model, dtype, agree, agreement, unit) =
        (col("case")?, col("example")?, col("model")?, col("dtype")?, col("agree")?, col("agreement")?, col("unit")?);
    let (cuda_cpu, rocm_cpu, repeatable) = (col("cuda_vs_cpu")?, col("rocm_vs_cpu")?, col("repeatable")?);
    let (cu, ro, cw, rw) = (t.numbers("cuda")?, t.numbers("rocm")?, t.numbers("cuda_wall_s")?, t.numbers("rocm_wall_s")?);
    let mut rows = Vec::new();
    for (i, r) in t.rows.iter().enumerate() {
        let ratio = match r[unit].as_str() {
            "tokens/s" => ro[i] / cu[i],
            "ms" => cu[i] / ro[i],
            _ => cw[i] / rw[i],
        };
        let speed = |x: f64| if x.is_nan() { "NA".to_string() } else { format!("{x:.2} {}", r[unit]) };
        rows.push(vec![
            r[case].clone(), format!("`{}`", r[example]), r[model].clone(), r[dtype].clone(),
            r[agree].clone(), r[agreement].replace('|', "\\|"), speed(cu[i]), speed(ro[i]),
            format!("{:.2} / {:.2}", cw[i], rw[i]), if ratio.is_nan() { "NA".into() } else { fmt3(ratio) },
            r[cuda_cpu].replace('|', "\\|"), r[rocm_cpu].replace('|', "\\|"), r[repeatable].clone(),
        ]);
    }
    markdown_table(md, &["case", "example", "made-up model", "dtype", "agree", "ROCm vs CUDA", "CUDA", "ROCm", "wall s (CUDA / ROCm)", "speed ratio", "CPU vs CUDA", "CPU vs ROCm", "repeatable"], &rows)?;
    let agreeing = t.rows.iter().filter(|r| r[agree] == "yes").count();
    writeln!(md, "{agreeing} of {} cases agree.\n", t.rows.len())?;
    Ok(())
}

/// Two horizontal bar charts side by side: kernel families, backend benchmarks.
fn draw(path: &Path, font: &Path, families: &[(String, f64)], backend: &[(String, f64)]) -> Result<()> {
    use plotters::prelude::*;
    let bytes = std::fs::read(font).with_context(|| format!("reading the font {} (Debian: fonts-dejavu-core)", font.display()))?;
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| anyhow::anyhow!("{}: not a usable TrueType font", font.display()))?;
    let rows = families.len().max(backend.len()).max(4);
    let height = (120 + rows * 26) as u32;
    let root = BitMapBackend::new(path, (1400, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("plot: {e}"))?;
    let (left, right) = root.split_horizontally(600);
    panel(&left, "kernel families: translated / original", families, KERNEL_RATIO_TARGET)?;
    panel(&right, "backend: ROCm / CUDA", backend, BACKEND_RATIO_TARGET)?;
    root.present().map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(())
}

fn panel<DB: plotters::prelude::DrawingBackend>(area: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>, title: &str, bars: &[(String, f64)], target: f64) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("plot: {e:?}");
    if bars.is_empty() {
        area.titled(&format!("{title}: not measured"), ("sans-serif", 20)).map_err(err)?;
        return Ok(());
    }
    let top = bars.iter().map(|(_, r)| *r).filter(|r| r.is_finite()).fold(1.1f64, f64::max) * 1.05;
    let n = bars.len();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(if n > 12 { 250 } else { 150 })
        .build_cartesian_2d(0f64..top, (0..n).into_segmented())
        .map_err(err)?;
    let labels: Vec<String> = bars.iter().map(|(l, _)| l.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, r))| {
            let color = if *r >= target { RGBColor(46, 125, 50) } else { RGBColor(198, 40, 40) };
            let mut bar = Rectangle::new([(0.0, SegmentValue::Exact(i)), (*r, SegmentValue::Exact(i + 1))], color.filled());
            bar.set_margin(3, 3, 0, 0);
            bar
        }))
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new([(target, SegmentValue::Exact(0)), (target, SegmentValue::Exact(n))], 6, 4, BLACK.stroke_width(2)))
        .map_err(err)?;
    chart.draw_series(DashedLineSeries::new([(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))], 2, 4, RGBColor(120, 120, 120).stroke_width(1))).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_means_are_geometric_and_skip_unmeasured_rows() {
        let t = Table::parse("family\tratio\nunary\t1.0\nunary\t4.0\nbinary\tnan\nbinary\t0.5\n").unwrap();
        let m = family_means(&t).unwrap();
        assert_eq!(m.iter().map(|(f, _, n)| (f.as_str(), *n)).collect::<Vec<_>>(), [("unary", 2), ("binary", 1)]);
        assert!((m[0].1 - 2.0).abs() < 1e-12 && (m[1].1 - 0.5).abs() < 1e-12);
    }
}
