//! `cargo xtask regen`: translate Candle's CUDA sources into generated/.
//!
//! Every step of [`steps::STEPS`] runs on the upstream sources; their files,
//! the upstream license files, NOTICE.md and MANIFEST.toml make one in-memory
//! tree, which is then written atomically (or, with `--check`, compared with
//! what is on disk). Nothing is written before the whole tree exists, so any
//! failure leaves the output directory as it was.

pub mod example_parity;
pub mod fingerprint;
pub mod hipify;
pub mod manifest;
pub mod parity;
pub mod steps;
pub mod upstream;
pub mod workspace_manifest;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use rayon::prelude::*;

use steps::{StepInput, StepOutput, STEPS};
use crate::tree::{self, Tree};
use upstream::Upstream;
use crate::workspace::workspace_root;

#[derive(Args, Debug)]
pub struct RegenArgs {
    /// Translate this crates.io release instead of the one pinned in upstream.toml.
    #[arg(long, value_name = "X.Y.Z", conflicts_with = "candle_src")]
    candle_version: Option<String>,
    /// Translate a Candle git checkout (its candle-kernels/ and candle-core/).
    #[arg(long, value_name = "DIR")]
    candle_src: Option<PathBuf>,
    /// Write here instead of <workspace>/generated.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Regenerate in memory and fail with a diff if the output directory differs.
    #[arg(long)]
    check: bool,
}

impl RegenArgs {
    /// The output directory these arguments name.
    pub fn out_dir(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| workspace_root().join("generated"))
    }
}

pub fn run(args: RegenArgs) -> Result<ExitCode> {
    let start = Instant::now();
    let root = workspace_root();
    let (config, config_text) = upstream::load_config_and_text(&root)?;
    let out_dir = args.out.clone().unwrap_or_else(|| root.join("generated"));
    if !args.check {
        tree::remove_stale(&out_dir);
    }
    let upstream = match &args.candle_src {
        Some(dir) => upstream::from_checkout(&config.candle, dir)?,
        None => upstream::from_registry(&config.candle, args.candle_version.as_deref().unwrap_or(&config.candle.version))?,
    };

    let label = format!("{}/", tree::shown(&out_dir).display());
    let on_disk = read_output(&out_dir).with_context(|| format!("reading {label}"))?;
    let record = fingerprint::record_path(&root, &out_dir);
    let inputs_digest = if args.check {
        None
    } else {
        Some(fingerprint::inputs_digest(&upstream, &config_text, &out_dir, hipify::find().as_deref())?)
    };
    if let (Some(inputs), Some(previous)) = (&inputs_digest, fingerprint::load(&record)) {
        if previous.inputs == *inputs && previous.output == fingerprint::tree_digest(&on_disk) {
            println!("regen: {}", upstream.describe());
            println!("  {label} is up to date: the translator, the inputs and the output are those of the last regen (nothing translated, nothing written)");
            println!("  wall time: {:.2}s", start.elapsed().as_secs_f64());
            return Ok(ExitCode::SUCCESS);
        }
    }

    let (steps, tree) = translate(&upstream, &root, &out_dir, &config.kernels.static_library)?;
    if args.check {
        let (up_to_date, text) = tree::check_report(&on_disk, &tree, &label, "regen");
        report(&upstream, &steps, &tree, &label, start);
        print!("{text}");
        return Ok(if up_to_date { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let previous = on_disk.get(manifest::MANIFEST).map(|m| String::from_utf8_lossy(m).into_owned());
    let unchanged = on_disk == tree;
    if !unchanged {
        tree::write_atomic(&tree, &out_dir).with_context(|| format!("writing {label}"))?;
    }
    if let Some(inputs) = inputs_digest {
        fingerprint::store(&record, &fingerprint::Fingerprint { inputs, output: fingerprint::tree_digest(&tree) });
    }
    report(&upstream, &steps, &tree, &label, start);
    if unchanged {
        println!("  {label} was already this tree: nothing written");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(previous) = previous {
        println!("  since the previous regen:");
        for line in manifest::changes_since(&previous, &tree[manifest::MANIFEST]) {
            println!("    {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Every step on `upstream` and the tree they make, as regen writes it into `out_dir`
/// (`static_library`: upstream.toml's patterns). Writes nothing.
pub fn translate(upstream: &Upstream, root: &Path, out_dir: &Path, static_library: &[String]) -> Result<(Vec<StepOutput>, Tree)> {
    let input = StepInput::new(upstream, rocm_crate_paths(root, out_dir))?;
    // the steps are independent: they run on the thread pool (as do the files inside them)
    let steps = STEPS.par_iter().map(|step| step(&input)).collect::<Result<Vec<_>>>()?;
    let tree = assemble(upstream, &kernels_manifest(static_library), &steps)?;
    Ok((steps, tree))
}

/// `cargo xtask regen --candle-version VERSION --out OUT` (a port's Candle release).
pub fn regen_release(version: &str, out: &Path) -> Result<()> {
    let args = RegenArgs { candle_version: Some(version.to_string()), candle_src: None, out: Some(out.to_path_buf()), check: false };
    if run(args)? != ExitCode::SUCCESS {
        bail!("regen of Candle {version} into {} failed", out.display());
    }
    Ok(())
}

/// The output directory as regen compares it: every file but the packages' lock files.
fn read_output(out_dir: &Path) -> Result<Tree> {
    let mut on_disk = tree::read_tree(out_dir)?;
    // cargo's lock file of a generated package built on its own is not ours
    on_disk.retain(|path, _| !is_package_lock(path));
    Ok(on_disk)
}

/// `<package>/Cargo.lock`: written by cargo when a generated package is
/// built or tested on its own (it is its own workspace), never by regen.
fn is_package_lock(path: &str) -> bool {
    path.split_once('/').is_some_and(|(_, rest)| rest == "Cargo.lock")
}

/// Paths from a generated package (`<out>/candle-core`) to the hand-written
/// ROCm crates: relative inside the workspace (so generated/ is the same on
/// every machine), absolute for an output directory elsewhere.
pub(crate) fn rocm_crate_paths(root: &Path, out_dir: &Path) -> BTreeMap<String, String> {
    let abs = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) };
    let (root, out_dir) = (abs(root), abs(out_dir));
    translator::backend::mapping::ROCM_CRATES
        .iter()
        .map(|(name, rel)| {
            let path = match out_dir.strip_prefix(&root) {
                Ok(inside) => format!("{}{rel}", "../".repeat(inside.components().count() + 1)),
                Err(_) => root.join(rel).display().to_string(),
            };
            (name.to_string(), path)
        })
        .collect()
}

/// MANIFEST.toml's `[kernels]` table, which regen writes and every build reads:
/// upstream's static-library patterns (upstream.toml), then those of candle-rocm's own
/// units (the flash-attention launcher), and the translator's per-unit flags.
pub fn kernels_manifest(upstream_static_library: &[String]) -> hip_build::plan::KernelsManifest {
    use translator::kernels::mapping::{OWN_STATIC_LIBRARY, UNIT_FLAGS};
    hip_build::plan::KernelsManifest {
        static_library: upstream_static_library.iter().cloned().chain(OWN_STATIC_LIBRARY.iter().map(|p| p.to_string())).collect(),
        unit_flags: UNIT_FLAGS
            .iter()
            .map(|u| hip_build::plan::UnitFlags { units: u.units.to_string(), flags: u.flags.iter().map(|f| f.to_string()).collect() })
            .collect(),
    }
}

/// The whole generated tree: every step's files, the upstream license files,
/// NOTICE.md and MANIFEST.toml.
pub fn assemble(upstream: &Upstream, kernels: &hip_build::plan::KernelsManifest, steps: &[StepOutput]) -> Result<Tree> {
    let mut tree = Tree::new();
    for step in steps {
        for (path, contents) in &step.files {
            if tree.insert(path.clone(), contents.clone()).is_some() {
                bail!("two translation steps write {path} (step `{}` is the second)", step.name);
            }
        }
    }
    let mut license_files = Vec::new();
    for c in upstream.crates() {
        for (name, contents) in license_files_of(&c.root)? {
            let path = format!("upstream-licenses/{}/{name}", c.name);
            tree.insert(path.clone(), contents);
            license_files.push(path);
        }
    }
    tree.insert(manifest::NOTICE.to_string(), manifest::render_notice(upstream, &license_files).into_bytes());
    let inputs: Vec<String> = steps.iter().flat_map(|s| s.inputs.iter().map(|(p, _)| p.clone())).collect();
    let gaps: Vec<translator::backend::Gap> = steps.iter().flat_map(|s| s.gaps.iter().cloned()).collect();
    tree.insert(parity::PARITY.to_string(), parity::render(&tree, &inputs, &gaps).into_bytes());
    let rendered = manifest::render_manifest(upstream, kernels, steps, &tree);
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
            found.push((name, std::fs::read(entry.path()).with_context(|| format!("reading {}", entry.path().display()))?));
        }
    }
    found.sort();
    Ok(found)
}

fn report(upstream: &Upstream, steps: &[StepOutput], tree: &Tree, label: &str, start: Instant) {
    println!("regen: {}", upstream.describe());
    for step in steps {
        for note in &step.notes {
            println!("  {note}");
        }
    }
    let inputs: usize = steps.iter().map(|s| s.inputs.len()).sum();
    println!("  files in: {inputs}, files out: {} ({label})", tree.len());
    for step in steps {
        println!("  rule counts ({}):", step.name);
        let counts: BTreeMap<_, _> = step.rule_counts.iter().collect();
        for (rule, n) in counts {
            println!("    {rule:<24} {n:>6}");
        }
    }
    println!("  wall time: {:.2}s", start.elapsed().as_secs_f64());
}

/// `cargo xtask parity`: regenerates (as `regen` does, atomically) and
/// prints PARITY.md.
pub fn run_parity(args: RegenArgs) -> anyhow::Result<std::process::ExitCode> {
    let out = args.out_dir();
    let code = run(args)?;
    let text = std::fs::read_to_string(out.join(parity::PARITY)).map_err(|e| anyhow::anyhow!("reading {}: {e}", out.join(parity::PARITY).display()))?;
    println!("{text}");
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regen::upstream::{CrateSource, Origin};

    fn upstream(dir: &Path) -> Upstream {
        let c = |name: &str| {
            let root = dir.join(name);
            std::fs::create_dir_all(&root).unwrap();
            CrateSource { name: name.into(), version: "1.2.3".into(), root, license: "MIT".into(), repository: String::new() }
        };
        Upstream { origin: Origin::CratesIo, kernels: c("candle-kernels"), core: c("candle-core"), nn: c("candle-nn"), flash_attn: Some(c("candle-flash-attn")), transformers: Some(c("candle-transformers")), examples: Some(c("candle-examples")) }
    }

    /// A stand-in for the translator: the identity on `.cu` files.
    fn identity_step(name: &'static str, prefix: &str, files: &[(&str, &str)]) -> StepOutput {
        StepOutput {
            name,
            inputs: files.iter().map(|(p, c)| (format!("candle-kernels/src/{p}"), c.as_bytes().to_vec())).collect(),
            files: files.iter().map(|(p, c)| (format!("{prefix}/{p}"), c.as_bytes().to_vec())).collect(),
            rule_counts: BTreeMap::from([("identity", files.len())]),
            ..Default::default()
        }
    }

    #[test]
    fn assemble_builds_the_whole_tree() {
        let dir = tempfile::tempdir().unwrap();
        let up = upstream(dir.path());
        std::fs::write(up.core.root.join("LICENSE-MIT"), "mit").unwrap();
        std::fs::write(up.core.root.join("README.md"), "no").unwrap();
        let steps = [identity_step("kernels", "kernels", &[("a.cu", "a"), ("moe/b.cuh", "b")])];
        let tree = assemble(&up, &Default::default(), &steps).unwrap();
        let paths: Vec<_> = tree.keys().map(String::as_str).collect();
        assert_eq!(paths, ["MANIFEST.toml", "NOTICE.md", "PARITY.md", "kernels/a.cu", "kernels/moe/b.cuh", "upstream-licenses/candle-core/LICENSE-MIT"]);
        let manifest = String::from_utf8(tree["MANIFEST.toml"].clone()).unwrap();
        assert!(manifest.contains("path = \"upstream-licenses/candle-core/LICENSE-MIT\""));
        assert!(manifest.contains("path = \"NOTICE.md\""));
        assert!(!manifest.contains(dir.path().to_str().unwrap()));
        assert_eq!(tree, assemble(&up, &Default::default(), &steps).unwrap(), "deterministic");
    }

    #[test]
    fn steps_must_not_overlap() {
        let dir = tempfile::tempdir().unwrap();
        let steps = [identity_step("kernels", "kernels", &[("a.cu", "a")]), identity_step("other", "kernels", &[("a.cu", "b")])];
        let e = assemble(&upstream(dir.path()), &Default::default(), &steps).unwrap_err().to_string();
        assert_eq!(e, "two translation steps write kernels/a.cu (step `other` is the second)");
    }
}
