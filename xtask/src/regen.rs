//! `cargo xtask regen`: translate Candle's CUDA sources into generated/.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use translator::kernels::{translate_tree, KernelContext, KernelOutput};
use translator::TreeFile;

use crate::manifest::{self, ManifestInputs};
use crate::tree::{self, Tree};
use crate::upstream::{self, Origin, Upstream};
use crate::{hipify, workspace_root};

#[derive(Args, Debug)]
pub struct RegenArgs {
    /// Translate this crates.io release instead of the pinned one.
    #[arg(long, value_name = "X.Y.Z", conflicts_with = "candle_src")]
    candle_version: Option<String>,
    /// Translate a Candle checkout (its candle-kernels/ and candle-core/).
    #[arg(long, value_name = "DIR")]
    candle_src: Option<PathBuf>,
    /// Write here instead of <workspace>/generated.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Regenerate in memory and fail with a diff if the output directory differs.
    #[arg(long)]
    check: bool,
}

/// What the kernels step read and made.
struct KernelStep {
    inputs: Vec<(String, Vec<u8>)>,
    output: KernelOutput,
    hipify_used: bool,
}

pub fn run(args: RegenArgs) -> Result<ExitCode> {
    let start = Instant::now();
    let root = workspace_root();
    let config = upstream::load_config(&root)?;
    let upstream = match &args.candle_src {
        Some(dir) => upstream::from_checkout(&config.candle, dir)?,
        None => {
            let version = args.candle_version.as_deref().unwrap_or(&config.candle.version);
            upstream::from_registry(&config.candle, version)?
        }
    };
    let out_dir = args.out.clone().unwrap_or_else(|| root.join("generated"));

    let kernels = kernels_step(&upstream)?;
    let tree = assemble(&upstream, &kernels)?;

    if args.check {
        return check(&tree, &out_dir);
    }
    tree::write_atomic(&tree, &out_dir).with_context(|| format!("writing {}", out_dir.display()))?;
    report(&upstream, &kernels, &tree, &out_dir, start);
    Ok(ExitCode::SUCCESS)
}

/// Translates candle-kernels; with hipify-perl installed, also translates its
/// output and requires the two results to be identical.
fn kernels_step(upstream: &Upstream) -> Result<KernelStep> {
    let src = upstream.kernels.root.join("src");
    let files = cuda_sources(&src)?;
    let ctx = KernelContext { source_label: format!("{} {}", upstream.kernels.name, upstream.kernels.version) };
    let output = translate_tree(&files, &ctx).map_err(|e| anyhow::anyhow!("translation failed: {e}"))?;
    let hipify_used = match hipify::find() {
        None => false,
        Some(hipify) => {
            let mut hipified = Vec::with_capacity(files.len());
            for f in &files {
                hipified.push(TreeFile { rel_path: f.rel_path.clone(), contents: hipify::run(&hipify, &src.join(&f.rel_path))? });
            }
            let via_hipify = translate_tree(&hipified, &ctx).map_err(|e| anyhow::anyhow!("translation of hipify-perl output failed: {e}"))?;
            if let Some((a, b)) = output.files.iter().zip(&via_hipify.files).find(|(a, b)| a != b) {
                bail!(
                    "hipify-perl changes the translation of {}: some rule is not idempotent on HIP input\n{}",
                    a.rel_path,
                    tree::unified_diff(&a.rel_path, &a.contents, &b.contents, 40)
                );
            }
            true
        }
    };
    let inputs = files.into_iter().map(|f| (format!("{}/src/{}", upstream.kernels.name, f.rel_path), f.contents)).collect();
    Ok(KernelStep { inputs, output, hipify_used })
}

/// Every `.cu`/`.cuh` under `src`, sorted, with `/`-separated relative paths.
fn cuda_sources(src: &Path) -> Result<Vec<TreeFile>> {
    let all = tree::read_tree(src)?;
    if all.is_empty() {
        bail!("{} has no sources", src.display());
    }
    Ok(all
        .into_iter()
        .filter(|(p, _)| p.ends_with(".cu") || p.ends_with(".cuh"))
        .map(|(rel_path, contents)| TreeFile { rel_path, contents })
        .collect())
}

/// The whole generated tree: kernels, upstream licenses, NOTICE, MANIFEST.
fn assemble(upstream: &Upstream, kernels: &KernelStep) -> Result<Tree> {
    let mut tree = Tree::new();
    for f in &kernels.output.files {
        tree.insert(format!("kernels/{}", f.rel_path), f.contents.clone());
    }
    let mut license_files = Vec::new();
    for c in [&upstream.kernels, &upstream.core] {
        for (name, contents) in license_files_of(&c.root)? {
            let path = format!("upstream-licenses/{}/{name}", c.name);
            tree.insert(path.clone(), contents);
            license_files.push(path);
        }
    }
    tree.insert(manifest::NOTICE.to_string(), manifest::render_notice(upstream, &license_files).into_bytes());
    let m = ManifestInputs { upstream, inputs: &kernels.inputs, rule_counts: &kernels.output.rule_counts };
    let rendered = manifest::render_manifest(&m, &tree);
    tree.insert(manifest::MANIFEST.to_string(), rendered.into_bytes());
    Ok(tree)
}

/// `LICENSE*` / `COPYING*` files at a crate root, sorted.
fn license_files_of(root: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root).with_context(|| format!("reading {}", root.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_file() && (name.starts_with("LICENSE") || name.starts_with("COPYING")) {
            found.push((name, std::fs::read(entry.path())?));
        }
    }
    found.sort();
    Ok(found)
}

fn check(tree: &Tree, out_dir: &Path) -> Result<ExitCode> {
    let on_disk = tree::read_tree(out_dir)?;
    let diff = tree::compare(&on_disk, tree);
    let shown = tree::shown(out_dir);
    if diff.is_empty() {
        println!("{} is up to date ({} files)", shown.display(), tree.len());
        return Ok(ExitCode::SUCCESS);
    }
    for path in &diff.changed {
        print!("{}", tree::unified_diff(path, &on_disk[path], &tree[path], 200));
    }
    for path in &diff.added {
        println!("missing from {}: {path}", shown.display());
    }
    for path in &diff.removed {
        println!("not produced by regen: {path}");
    }
    println!("{} is out of date: run cargo xtask regen", shown.display());
    Ok(ExitCode::FAILURE)
}

fn report(upstream: &Upstream, kernels: &KernelStep, tree: &Tree, out_dir: &Path, start: Instant) {
    let origin = match upstream.origin {
        Origin::CratesIo => "crates.io",
        Origin::Checkout => "checkout",
    };
    println!("regen: {} {} ({origin})", upstream.kernels.name, upstream.kernels.version);
    println!("  hipify-perl first pass: {}", if kernels.hipify_used { "yes (output identical to the native pass)" } else { "not installed" });
    println!("  kernel files in: {}, files out: {} in {}", kernels.inputs.len(), tree.len(), tree::shown(out_dir).display());
    let counts: BTreeMap<_, _> = kernels.output.rule_counts.iter().collect();
    for (rule, n) in counts {
        println!("  {rule:<24} {n:>6}");
    }
    println!("  wall time: {:.2}s", start.elapsed().as_secs_f64());
}
