//! `cargo xtask releases`: every Candle release from 0.9.0 through the pin
//! (and Candle checkouts) through the whole pipeline, one table row each:
//! regen, the kernels compiled for one AMD arch with the host's hipcc, the
//! generated backend type-checked (candle-core and candle-nn, feature
//! `rocm`), kernel parity against the CUDA build's kernel names where
//! `tests/fixtures/cuda-kernels-<version>.txt` exists, and the wall time.
//!
//! Each stage runs as its own command (`cargo xtask regen`, `cargo xtask
//! build-kernels`, `cargo check`), so a row says what a user running that
//! command sees; its outputs stay under `target/releases/<row>/`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::{checkout_shape, workspace::workspace_root};
use crate::regen::upstream;

/// The crates.io releases of candle-core, candle-kernels and candle-nn from
/// 0.9.0 through the pin, pre-releases included (as the index lists them).
pub const RELEASES: &[&str] = &["0.9.0", "0.9.1", "0.9.2-alpha.1", "0.9.2-alpha.2", "0.9.2", "0.10.0", "0.10.1", "0.10.2", "0.11.0", "0.11.1"];

/// The result file `--record` writes.
pub const RESULT_FILE: &str = "bench/results/releases.tsv";

#[derive(Args, Debug)]
pub struct ReleasesArgs {
    /// Only these releases (comma separated); default: every release of RELEASES from --from on.
    #[arg(long, value_delimiter = ',', value_name = "X.Y.Z,...")]
    versions: Vec<String>,
    /// The first release of the list (default 0.9.0).
    #[arg(long, value_name = "X.Y.Z")]
    from: Option<String>,
    /// Also a Candle checkout (a row `checkout DIR`; repeatable).
    #[arg(long, value_name = "DIR")]
    candle_src: Vec<PathBuf>,
    /// Also a checkout-shaped tree made from this release's crates.io sources (no git clone; a row `checkout-shaped X.Y.Z`).
    #[arg(long, value_delimiter = ',', value_name = "X.Y.Z")]
    checkout_of: Vec<String>,
    /// Only the rows given by --versions, --candle-src and --checkout-of (not the whole list).
    #[arg(long)]
    only: bool,
    /// The AMD arch the kernels are compiled for.
    #[arg(long, default_value = "gfx1030")]
    arch: String,
    /// Stop after regen (no kernels, no backend check).
    #[arg(long)]
    regen_only: bool,
    /// No backend check (regen and kernels only; the row's backend says `not run`).
    #[arg(long)]
    no_backend: bool,
    /// Write the table to bench/results/releases.tsv.
    #[arg(long)]
    record: bool,
    /// Where each row's outputs go (default: target/releases).
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
}

/// One input: a crates.io release or a checkout.
#[derive(Debug, Clone)]
enum Input {
    Release(String),
    Checkout(PathBuf),
    Shaped(String),
}

impl Input {
    fn label(&self) -> String {
        match self {
            Input::Release(v) => v.clone(),
            // the directory's name, not its path: the table is recorded and read on other machines
            Input::Checkout(d) => format!("checkout {}", d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| d.display().to_string())),
            Input::Shaped(v) => format!("checkout-shaped {v}"),
        }
    }

    /// The directory name of its work directory.
    fn slug(&self) -> String {
        match self {
            Input::Release(v) => v.clone(),
            Input::Checkout(d) => format!("checkout-{}", d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
            Input::Shaped(v) => format!("checkout-shaped-{v}"),
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
struct Row {
    input: String,
    regen: String,
    units: String,
    backend: String,
    parity: String,
    seconds: f64,
}

impl Row {
    fn green(&self) -> bool {
        self.regen == "ok" && matches!(self.backend.as_str(), "ok" | "not run") && self.units.split_once('/').is_some_and(|(a, b)| a == b)
    }
}

pub fn run(args: ReleasesArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let inputs = inputs(&args)?;
    let work = args.work.clone().unwrap_or_else(|| root.join("target/releases"));
    std::fs::create_dir_all(&work)?;
    println!("releases: {} rows, kernels for {} with the host's hipcc, work directory {}", inputs.len(), args.arch, work.display());
    let mut rows = Vec::new();
    for input in &inputs {
        let row = run_one(&root, &work, input, &args)?;
        println!("{}", tsv_line(&row));
        rows.push(row);
    }
    println!();
    print!("{}", markdown(&rows));
    if args.record {
        let path = root.join(RESULT_FILE);
        let mut text = format!("# written by `cargo xtask releases --record` (kernels for {}, host hipcc; backend: cargo check --features rocm of candle-core and candle-nn)\n", args.arch);
        text.push_str("input\tregen\tunits\tbackend\tparity\tseconds\n");
        for row in &rows {
            text.push_str(&tsv_line(row));
            text.push('\n');
        }
        let text = crate::bench::provenance::stamped_now(RESULT_FILE.rsplit('/').next().unwrap_or(RESULT_FILE), &text)?;
        crate::tree::write_file_atomic(&path, text.as_bytes())?;
        println!("table: {}", path.display());
    }
    let failed = rows.iter().filter(|r| if args.regen_only { r.regen != "ok" } else { !r.green() }).count();
    if failed > 0 {
        eprintln!("{failed} of {} rows not green", rows.len());
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The rows the arguments ask for, in order: releases, checkout-shaped trees, checkouts.
fn inputs(args: &ReleasesArgs) -> Result<Vec<Input>> {
    let mut out = Vec::new();
    if !args.versions.is_empty() {
        out.extend(args.versions.iter().map(|v| Input::Release(v.clone())));
    } else if !args.only {
        let from = args.from.as_deref().unwrap_or(RELEASES[0]);
        let Some(start) = RELEASES.iter().position(|v| *v == from) else {
            bail!("--from {from}: not a release of the list ({})", RELEASES.join(", "));
        };
        out.extend(RELEASES[start..].iter().map(|v| Input::Release(v.to_string())));
    }
    out.extend(args.checkout_of.iter().map(|v| Input::Shaped(v.clone())));
    out.extend(args.candle_src.iter().map(|d| Input::Checkout(d.clone())));
    Ok(out)
}

fn run_one(root: &Path, work: &Path, input: &Input, args: &ReleasesArgs) -> Result<Row> {
    let start = Instant::now();
    let dir = work.join(input.slug());
    let out = dir.join("generated");
    let mut row = Row { input: input.label(), regen: String::new(), units: "-".into(), backend: "-".into(), parity: "-".into(), seconds: 0.0 };
    let xtask = std::env::current_exe().context("locating the xtask binary")?;
    let mut regen = Command::new(&xtask);
    regen.arg("regen").arg("--out").arg(&out);
    let version = match input {
        Input::Release(v) => {
            regen.args(["--candle-version", v]);
            Some(v.clone())
        }
        Input::Checkout(d) => {
            regen.arg("--candle-src").arg(d);
            None
        }
        Input::Shaped(v) => {
            let config = upstream::load_config(root)?;
            let tree = match checkout_shape::make(&config.candle, v, &dir.join("checkout")) {
                Ok(tree) => tree,
                Err(e) => {
                    row.regen = format!("error: {}", one_line(&format!("{e:#}")));
                    row.seconds = start.elapsed().as_secs_f64();
                    return Ok(row);
                }
            };
            regen.arg("--candle-src").arg(tree);
            Some(v.clone())
        }
    };
    let (ok, output) = run_captured(&mut regen)?;
    row.regen = if ok { "ok".into() } else { format!("error: {}", first_error(&output)) };
    if !ok || args.regen_only {
        row.seconds = start.elapsed().as_secs_f64();
        return Ok(row);
    }

    let reference = version.map(|v| root.join(format!("tests/fixtures/cuda-kernels-{v}.txt"))).filter(|p| p.is_file());
    let mut kernels = Command::new(&xtask);
    // the backend check's build of the kernels crate compiles the same units: it takes them from this cache
    let cache = dir.join("kernels-cache");
    kernels.arg("build-kernels").arg("--kernels").arg(out.join("kernels")).arg("--out").arg(dir.join("hip")).args(["--arch", &args.arch]).arg("--cache").arg(&cache);
    match &reference {
        Some(r) => kernels.arg("--reference").arg(r),
        None => kernels.arg("--no-parity"),
    };
    let (_, output) = run_captured(&mut kernels)?;
    row.units = units(&output, &args.arch).unwrap_or_else(|| format!("error: {}", first_error(&output)));
    row.parity = match &reference {
        None => "no reference".into(),
        Some(_) => parity(&output, &args.arch).unwrap_or_else(|| "not checked (kernels failed)".into()),
    };

    if args.no_backend {
        row.backend = "not run".into();
        row.seconds = start.elapsed().as_secs_f64();
        return Ok(row);
    }
    let mut errors = Vec::new();
    for package in ["candle-core", "candle-nn"] {
        let mut check = crate::workspace::cargo_command();
        check
            .arg("check")
            .arg("--manifest-path")
            .arg(out.join(package).join("Cargo.toml"))
            .args(["--features", "rocm", "--message-format", "short", "--target-dir"])
            .arg(root.join("target/generated"))
            .env("CANDLE_ROCM_ARCHS", &args.arch)
            .env("CANDLE_ROCM_KERNELS_DIR", out.join("kernels"))
            .env(hip_build::cache::ENV, &cache)
            .env("SKIP_BINDGEN", "1");
        let (ok, output) = run_captured(&mut check)?;
        if !ok {
            let n = output.lines().filter(|l| l.contains(": error")).count();
            let first = first_error(&output);
            errors.push(if n == 0 { format!("{package}: {first}") } else { format!("{package}: {n} errors, first: {first}") });
            break; // candle-nn builds candle-core: its errors would be the same
        }
    }
    row.backend = if errors.is_empty() { "ok".into() } else { errors.join("; ") };
    row.seconds = start.elapsed().as_secs_f64();
    Ok(row)
}

/// Runs `cmd`; whether it succeeded, and its stdout and stderr together.
fn run_captured(cmd: &mut Command) -> Result<(bool, String)> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

/// The first line that says what went wrong (`error: ...`, `...: error[E...]: ...`), on one line.
fn first_error(output: &str) -> String {
    let line = output
        .lines()
        .find(|l| l.starts_with("error:") && !l.starts_with("error: could not compile") || l.contains(": error"))
        .or_else(|| output.lines().find(|l| l.contains("FAILED")))
        .or_else(|| output.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("no output");
    one_line(line.strip_prefix("error: ").unwrap_or(line))
}

fn one_line(s: &str) -> String {
    let s = s.lines().next().unwrap_or("").replace('\t', " ");
    if s.chars().count() > 160 {
        format!("{}...", s.chars().take(157).collect::<String>())
    } else {
        s
    }
}

/// `N/M` from build-kernels' `ARCH: N of M units compiled in ...`.
fn units(output: &str, arch: &str) -> Option<String> {
    let rest = output.lines().find_map(|l| l.strip_prefix(&format!("{arch}: ")))?;
    let mut words = rest.split_whitespace();
    let (n, of, m) = (words.next()?, words.next()?, words.next()?);
    (of == "of").then(|| format!("{n}/{m}"))
}

/// `x/y kernels, a/b launchers` from build-kernels' parity lines.
fn parity(output: &str, arch: &str) -> Option<String> {
    let kernels = output.lines().find_map(|l| l.strip_prefix(&format!("kernel parity {arch}: ")))?.split_whitespace().next()?.to_string();
    let launchers = output.lines().find_map(|l| l.strip_prefix("launcher parity: ")).and_then(|l| l.split_whitespace().next()).unwrap_or("?");
    Some(format!("{kernels} kernels, {launchers} launchers"))
}

fn tsv_line(row: &Row) -> String {
    format!("{}\t{}\t{}\t{}\t{}\t{:.0}", row.input, row.regen, row.units, row.backend, row.parity, row.seconds)
}

/// The table as markdown.
fn markdown(rows: &[Row]) -> String {
    let mut out = String::from("| input | regen | units compiling | backend check | parity | time |\n|---|---|---|---|---|---|\n");
    for r in rows {
        out.push_str(&format!("| {} | {} | {} | {} | {} | {:.0} s |\n", r.input, r.regen.replace('|', "\\|"), r.units, r.backend.replace('|', "\\|"), r.parity, r.seconds));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_kernels_output_is_read() {
        let out = "build-kernels: 11 files for gfx1030 with hipcc 5.2 (2 jobs)\ngfx1030: 10 of 11 units compiled in 27.8 s; 0 warnings\nkernel parity gfx1030: 755/755 CUDA kernels present\nlauncher parity: 50/50 ffi.rs launchers present\n";
        assert_eq!(units(out, "gfx1030").as_deref(), Some("10/11"));
        assert_eq!(parity(out, "gfx1030").as_deref(), Some("755/755 kernels, 50/50 launchers"));
        assert_eq!(units(out, "gfx90a"), None);
    }

    #[test]
    fn the_first_error_is_one_line() {
        let out = "    Checking x\nsrc/a.rs:1:2: error[E0433]: cannot find `ug_rocm`\nerror: could not compile `x`\n";
        assert_eq!(first_error(out), "src/a.rs:1:2: error[E0433]: cannot find `ug_rocm`");
        assert_eq!(first_error("regen: x\nerror: candle-kernels 0.9.99 is not on crates.io\n"), "candle-kernels 0.9.99 is not on crates.io");
    }

    #[test]
    fn the_list_ends_at_the_pin() {
        // bumping upstream.toml's version without adding the release here would leave it out of the table
        let pin = crate::regen::upstream::load_config(&crate::workspace::workspace_root()).unwrap().candle.version;
        assert_eq!(RELEASES.last().copied(), Some(pin.as_str()), "add {pin} (and any release before it) to RELEASES");
    }

    #[test]
    fn the_list_starts_at_from() {
        let args = |from: Option<&str>| ReleasesArgs { versions: vec![], from: from.map(str::to_string), candle_src: vec![], checkout_of: vec!["0.9.0".into()], only: false, arch: "gfx1030".into(), regen_only: false, no_backend: false, record: false, work: None };
        let labels: Vec<String> = inputs(&args(Some("0.11.0"))).unwrap().iter().map(Input::label).collect();
        assert_eq!(labels, ["0.11.0", "0.11.1", "checkout-shaped 0.9.0"]);
        assert_eq!(inputs(&args(None)).unwrap().len(), RELEASES.len() + 1);
        assert!(inputs(&args(Some("0.9.99"))).unwrap_err().to_string().starts_with("--from 0.9.99: not a release of the list"));
    }
}
