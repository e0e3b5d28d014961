//! `cargo xtask port-crate --src DIR --out DIR`: a Candle extension crate written for CUDA
//! (kernels, `extern "C"` launchers, a build script that compiles them with cudaforge or
//! bindgen_cuda, a Rust side that matches `Storage::Cuda` and calls the launchers in
//! `cuda_fwd`) as its ROCm twin, under the same name and API, for `[patch.crates-io]`:
//!
//! * the Rust side (library, binaries, examples, tests) mirrored by the backend rules, as
//!   regen mirrors candle-nn (`regen::steps::mirror_package_files`);
//! * the build script's tool calls made candle-rocm-build's (rule `build-tools`), which
//!   translates the kernels with the kernel rules and compiles them with hipcc when the
//!   crate builds; the kernels are translated here too, so that a construct no rule covers
//!   fails now, naming file, line and construct;
//! * the manifest by rule `package`, its build dependency on the tool made one on
//!   candle-rocm-build.
//!
//! What the rules leave out is listed in the output's PORTED.md and printed, never dropped
//! silently. The output directory is written atomically; `--check` compares instead.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use translator::TreeFile;

use crate::regen::steps::{mirror_package_files, BuildScript, PackageMirror};
use crate::tree;
use crate::workspace::workspace_root;

#[derive(Args, Debug)]
pub struct PortArgs {
    /// The extension crate: its Cargo.toml, Rust sources, kernels and build script.
    #[arg(long, value_name = "DIR", required_unless_present = "krate", conflicts_with = "krate")]
    src: Option<PathBuf>,
    /// A crates.io package instead of --src (fetched into the cargo registry when absent).
    #[arg(long = "crate", value_name = "NAME@VERSION")]
    krate: Option<String>,
    /// Where its ROCm twin goes (the whole directory, written atomically).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Generated Candle packages (this repository's generated/) that the twin's candle
    /// dependencies are patched with (`[patch.crates-io]`), for building it on its own.
    #[arg(long, value_name = "DIR")]
    candle: Option<PathBuf>,
    /// Port in memory and fail with a diff if --out differs.
    #[arg(long)]
    check: bool,
}

/// What the report file of a ported crate is called.
pub const REPORT: &str = "PORTED.md";

pub fn run(args: PortArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let out = absolute(&args.out)?;
    let src = match (&args.src, &args.krate) {
        (Some(src), _) => src.clone(),
        (None, Some(spec)) => {
            let (name, version) = spec.split_once('@').with_context(|| format!("--crate {spec}: NAME@VERSION"))?;
            crate::regen::upstream::registry_crate(name, version)?
        }
        (None, None) => bail!("--src or --crate"),
    };
    let ported = port(&src, &out, &root, args.candle.as_deref())?;
    print!("{}", ported.report);
    if args.check {
        // what cargo writes there once the port is built is not the port's
        let on_disk: tree::Tree = tree::read_tree(&out)?.into_iter().filter(|(p, _)| is_crate_file(p)).collect();
        let (up_to_date, text) = tree::check_report(&on_disk, &ported.tree, &format!("{}/", tree::shown(&out).display()), "port-crate");
        print!("{text}");
        return Ok(if up_to_date { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    tree::write_atomic(&ported.tree, &out)?;
    println!("port-crate: wrote {} to {} ({} files)", ported.label, tree::shown(&out).display(), ported.tree.len());
    Ok(ExitCode::SUCCESS)
}

/// A ported crate: its files and the report (also among the files).
pub struct Ported {
    pub label: String,
    pub tree: tree::Tree,
    pub report: String,
}

/// Ports the crate at `src` for the output directory `out` (absolute), with the ROCm
/// crates of the workspace at `root` and, when given, the generated packages in `candle`.
pub fn port(src: &Path, out: &Path, root: &Path, candle: Option<&Path>) -> Result<Ported> {
    let files: BTreeMap<String, Vec<u8>> = tree::read_tree(src)?.into_iter().filter(|(p, _)| is_crate_file(p)).collect();
    let manifest_text = String::from_utf8(files.get("Cargo.toml").cloned().with_context(|| format!("{} has no Cargo.toml", src.display()))?).map_err(|_| anyhow!("{}/Cargo.toml: not UTF-8", src.display()))?;
    let manifest: toml::Table = manifest_text.parse().with_context(|| format!("{}/Cargo.toml", src.display()))?;
    let package = |key: &str| manifest.get("package").and_then(|p| p.get(key)).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let label = format!("{} {}", package("name"), package("version"));

    // the kernels, as candle-rocm-build will translate them at build time
    // (its .cu files and the headers they include, whatever their extension or directory)
    let candidates: Vec<TreeFile> = files
        .iter()
        .filter(|(p, _)| translator::kernels::include_paths::is_kernel_unit(p) || translator::kernels::include_paths::is_header(p))
        .map(|(p, c)| TreeFile { rel_path: p.clone(), contents: c.clone() })
        .collect();
    let kernels = translator::kernels::include_paths::own_headers(&candidates, &[]);
    let ctx = translator::kernels::KernelContext::new(label.clone());
    // every unit on its own: one with no AMD meaning (NVIDIA-only, or needing a library outside
    // CUDA) is listed, not a stop; a construct no rule covers stops the port
    let (translated, failures) = translator::kernels::translate_each(&kernels, &ctx).map_err(|e| anyhow!("{}: {e}", src.display()))?;
    if let Some(f) = failures.iter().find(|f| !translator::kernels::is_refusal(&f.error)) {
        bail!("{}: {}", src.display(), f.error);
    }
    let refused: Vec<String> = failures.iter().map(|f| f.error.to_string()).collect();
    let compute_cap = translator::kernels::capability_without(failures.iter().map(|f| &f.error));

    let siblings = ported_siblings(out)?;
    let paths = translator::backend::package::PackagePaths {
        rocm_crates: crate::regen::rocm_crate_paths(root, out.parent().unwrap_or(out)),
        siblings: siblings.iter().map(|(name, s)| (name.clone(), s.dir.clone())).collect(),
    };
    let mut mirror = mirror_package_files(&files, &label, &manifest_text, &paths, BuildScript::Port).map_err(|e| anyhow!("{}: {e:#}", src.display()))?;
    let manifest = String::from_utf8(mirror.files["Cargo.toml"].clone())?;
    let candle = candle.map(absolute).transpose()?;
    mirror.files.insert("Cargo.toml".into(), patch_crates_io(&manifest, out, candle.as_deref(), &siblings)?.into_bytes());
    // the provenance lines the rules write name regen; these files come from this command
    for text in mirror.files.values_mut() {
        let end = text.iter().position(|b| *b == b'\n').unwrap_or(text.len());
        let first = String::from_utf8_lossy(&text[..end]).into_owned();
        if first.contains("Generated by `cargo xtask regen`") {
            let line = first.replace("Generated by `cargo xtask regen`", "Ported by `cargo xtask port-crate`").replace("fix the translator rule instead", "port again, or fix the translator rule");
            text.splice(..end, line.into_bytes());
        }
    }
    let report = report(&label, &mirror, kernels.len() - refused.len(), &translated.rule_counts, &refused, compute_cap);
    mirror.files.insert(REPORT.into(), report.clone().into_bytes());
    Ok(Ported { label, tree: mirror.files, report })
}

/// A crate ported beside the one being ported.
struct Sibling {
    /// Its directory, relative to `out` (`../mistralrs-quant`).
    dir: String,
    /// Its manifest's `[patch.crates-io]`: its paths are relative to a directory beside
    /// `out`, so they hold from `out` too.
    patches: toml::Table,
}

/// The crates ported beside `out` (directories next to it holding a [`REPORT`]), by package
/// name. A dependency on one of them becomes a path dependency on the twin, and its CUDA
/// features are twinned (`mistralrs-quant/cuda` in `mistralrs-core`); port the
/// dependencies first.
fn ported_siblings(out: &Path) -> Result<BTreeMap<String, Sibling>> {
    let mut siblings = BTreeMap::new();
    let Some(parent) = out.parent() else { return Ok(siblings) };
    let Ok(entries) = std::fs::read_dir(parent) else { return Ok(siblings) };
    for entry in entries {
        let dir = entry?.path();
        if dir == out || !dir.join(REPORT).is_file() {
            continue;
        }
        let manifest_path = dir.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest_path) else { continue };
        let manifest: toml::Table = text.parse().with_context(|| format!("{}", manifest_path.display()))?;
        if let Some(name) = manifest.get("package").and_then(|p| p.get("name")).and_then(|n| n.as_str()) {
            let file_name = dir.file_name().context("a directory without a name")?.to_string_lossy();
            let patches = manifest.get("patch").and_then(|p| p.get("crates-io")).and_then(|c| c.as_table()).cloned().unwrap_or_default();
            siblings.insert(name.to_string(), Sibling { dir: format!("../{file_name}"), patches });
        }
    }
    Ok(siblings)
}

/// Whether a file under a crate's directory is the crate's: not what cargo and git keep
/// beside the sources (`target/`, `.git/`, `Cargo.lock`).
fn is_crate_file(path: &str) -> bool {
    !path.starts_with("target/") && !path.starts_with(".git/") && path != "Cargo.lock"
}

/// PORTED.md: what the rules did and what they left out.
fn report(label: &str, mirror: &PackageMirror, kernels: usize, kernel_rules: &BTreeMap<&'static str, usize>, refused: &[String], compute_cap: Option<u32>) -> String {
    let mut s = format!("# {label}, ported to ROCm\n\nWritten by `cargo xtask port-crate`. Do not edit: port again.\n\n");
    s.push_str("Build it with `--features rocm`: its build script compiles the kernels for AMD GPUs with candle-rocm-build (hipcc, the arches of `CANDLE_ROCM_ARCHS`, else the machine's GPUs, else the current ones). The kernels stay CUDA here and are translated when the crate builds.\n\n");
    s.push_str(&format!("## Kernels\n\n{kernels} files translate with the kernel rules:"));
    for (rule, n) in kernel_rules.iter().filter(|(_, n)| **n > 0) {
        s.push_str(&format!(" {rule} {n},"));
    }
    s.pop();
    s.push_str(".\n\n");
    if !refused.is_empty() {
        let answer = match compute_cap {
            Some(cc) => format!("answers {cc}, the newest NVIDIA compute capability without them, so a script that gates these kernels on the capability leaves them out and takes its fallback, as on a CUDA GPU that lacks them"),
            None => "answers `None` (no compute capability brought them all), so the script takes its own default".to_string(),
        };
        s.push_str(&format!(
            "{} files have no AMD meaning and are refused. The crate's AMD build leaves out the kernel units that reach them, with a warning; its build script's `get_compute_cap()` {answer}. Code that still calls their launchers fails to link, naming them:\n\n",
            refused.len()
        ));
        for r in refused {
            s.push_str(&format!("- {r}\n"));
        }
        s.push('\n');
    }
    s.push_str("## Rust side and build script\n\n");
    for (rule, n) in mirror.rule_counts.iter().filter(|(_, n)| **n > 0) {
        s.push_str(&format!("- {rule}: {n}\n"));
    }
    s.push_str("\n## Left out\n\n");
    if mirror.gaps.is_empty() && mirror.unmapped.is_empty() {
        s.push_str("Nothing.\n");
    }
    for g in &mirror.gaps {
        s.push_str(&format!("- {}:{}: `{}` ({}): {}\n", g.file, g.line, g.construct, g.feature, g.reason));
    }
    for (file, names) in &mirror.unmapped {
        s.push_str(&format!("- {file} still names CUDA: {}\n", names.iter().cloned().collect::<Vec<_>>().join(", ")));
    }
    s
}

/// The port's `[patch.crates-io]`, for building it as the root of a crate graph (a
/// dependency's patches do not apply):
/// * the candle packages it depends on that `candle` (generated/) holds, relative to `out`;
/// * each ported sibling it depends on, and that sibling's own patches, so that a crate of
///   the registry between them (`mistralrs` between `mistralrs-cli` and `mistralrs-core`)
///   takes the twins too.
///
/// With `candle` given, some candle package must be among them.
fn patch_crates_io(manifest: &str, out: &Path, candle: Option<&Path>, siblings: &BTreeMap<String, Sibling>) -> Result<String> {
    let mut table: toml::Table = manifest.parse()?;
    let mut patches = toml::Table::new();
    let path_entry = |path: String| toml::Value::Table(toml::Table::from_iter([("path".to_string(), toml::Value::String(path))]));
    for section in ["dependencies", "dev-dependencies"] {
        for (key, spec) in table.get(section).and_then(|d| d.as_table()).into_iter().flatten() {
            let package = spec.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            if let Some(candle) = candle.filter(|c| c.join(package).join("Cargo.toml").is_file()) {
                patches.insert(package.to_string(), path_entry(relative(out, &candle.join(package)).display().to_string()));
            }
            if let Some(sibling) = siblings.get(package) {
                patches.insert(package.to_string(), path_entry(sibling.dir.clone()));
                for (name, entry) in &sibling.patches {
                    patches.entry(name.clone()).or_insert_with(|| entry.clone());
                }
            }
        }
    }
    if let Some(candle) = candle {
        if !patches.keys().any(|name| candle.join(name).join("Cargo.toml").is_file()) {
            bail!("{} holds none of the crate's candle dependencies", candle.display());
        }
    }
    if patches.is_empty() {
        return Ok(manifest.to_string());
    }
    let patch = table.entry("patch").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let patch = patch.as_table_mut().context("[patch] is not a table")?;
    patch.insert("crates-io".into(), toml::Value::Table(patches));
    Ok(translator::backend::package::print_with_header("Cargo.toml", manifest, &table)?)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    let p = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir()?.join(p) };
    // `.` and `..` resolved by name (the directory may not exist yet)
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

/// `to` relative to the directory `from` (both absolute).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let (a, b): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel: PathBuf = std::iter::repeat_n("..", a.len() - common).collect();
    rel.extend(&b[common..]);
    rel
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tests/user-ffi-rotary (a CUDA extension crate) ported: the Rust side gets its ROCm
    /// twins, the build script candle-rocm-build's calls, the manifest its features and
    /// build dependency, the report what was dropped; a second port gives the same bytes.
    #[test]
    fn the_cuda_extension_crate_of_the_tests_is_ported() {
        let root = workspace_root();
        let out = root.join("target/ported/user-ffi-rotary");
        let ported = port(&root.join("tests/user-ffi-rotary"), &out, &root, Some(&root.join("generated"))).unwrap();
        let text = |p: &str| String::from_utf8(ported.tree[p].clone()).unwrap();
        let lib = text("src/lib.rs");
        assert!(lib.contains("fn rocm_fwd(") && lib.contains("fn cuda_fwd("), "{lib}");
        assert!(lib.contains("#[cfg(feature = \"rocm\")]\nuse candle::rocm_backend::candle_rocm_hip::driver::{DevicePtr, DevicePtrMut};"), "{lib}");
        let build = text("build.rs");
        assert!(build.contains("use candle_rocm_build::{Builder as KernelBuilder, Result};") && build.contains(".kernel_glob(\"kernels/*.cu\")") && build.contains("rustc-link-lib=dylib=amdhip64"), "{build}");
        let manifest: toml::Table = text("Cargo.toml").parse().unwrap();
        assert_eq!(manifest["build-dependencies"]["candle-rocm-build"]["path"].as_str(), Some("../../../candle-rocm-build"));
        assert_eq!(manifest["features"]["rocm"].as_array().unwrap()[0].as_str(), Some("candle/rocm"));
        assert_eq!(manifest["patch"]["crates-io"]["candle-core"]["path"].as_str(), Some("../../../generated/candle-core"));
        assert_eq!(text("kernels/rotary.cu"), std::fs::read_to_string(root.join("tests/user-ffi-rotary/kernels/rotary.cu")).unwrap());
        assert!(ported.report.contains("build.rs:") && ported.report.contains("thread_percentage"), "{}", ported.report);
        let again = port(&root.join("tests/user-ffi-rotary"), &out, &root, Some(&root.join("generated"))).unwrap();
        assert_eq!(again.tree, ported.tree);
    }

    #[test]
    fn an_untranslatable_kernel_fails_the_port_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\nversion = \"0.1.0\"\n").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.path().join("k.cu"), "__global__ void k(int *p) {\n    asm volatile(\"trap;\");\n}\n").unwrap();
        let root = workspace_root();
        let err = port(dir.path(), &dir.path().join("out"), &root, None).err().unwrap().to_string();
        assert!(err.contains("k.cu:2: "), "{err}");
    }

    /// mistral.rs's shape: `mistralrs-core` depends on `mistralrs-quant`, ported first beside it.
    #[test]
    fn a_dependency_ported_beside_is_a_twin() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src-crate");
        std::fs::create_dir_all(src.join("src")).unwrap();
        std::fs::write(src.join("src/lib.rs"), "").unwrap();
        std::fs::write(src.join("Cargo.toml"), "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nquant = { version = \"0.1\" }\n\n[features]\ncuda = [\"quant/cuda\"]\n").unwrap();
        let root = workspace_root();
        let out = dir.path().join("ported/app");
        let alone = port(&src, &out, &root, None).unwrap();
        assert!(alone.report.contains("quant has no ROCm twin here"), "{}", alone.report);
        let beside = dir.path().join("ported/quant");
        std::fs::create_dir_all(&beside).unwrap();
        std::fs::write(beside.join("Cargo.toml"), "[package]\nname = \"quant\"\nversion = \"0.1.0\"\n\n[patch.crates-io.candle-core]\npath = \"../../generated/candle-core\"\n").unwrap();
        std::fs::write(beside.join(REPORT), "").unwrap();
        let ported = port(&src, &out, &root, None).unwrap();
        let manifest: toml::Table = String::from_utf8(ported.tree["Cargo.toml"].clone()).unwrap().parse().unwrap();
        assert_eq!(manifest["dependencies"]["quant"]["path"].as_str(), Some("../quant"));
        // built as the root of its graph: the twin and what the twin is patched with
        assert_eq!(manifest["patch"]["crates-io"]["quant"]["path"].as_str(), Some("../quant"), "{manifest}");
        assert_eq!(manifest["patch"]["crates-io"]["candle-core"]["path"].as_str(), Some("../../generated/candle-core"), "{manifest}");
        assert_eq!(manifest["features"]["rocm"].as_array().unwrap()[0].as_str(), Some("quant/rocm"), "{manifest}");
        assert!(!ported.report.contains("no ROCm twin"), "{}", ported.report);
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative(Path::new("/a/b/c"), Path::new("/a/d")), PathBuf::from("../../d"));
        assert_eq!(absolute(Path::new("/a/b/../c/./d")).unwrap(), PathBuf::from("/a/c/d"));
    }
}
