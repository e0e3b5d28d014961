//! `cargo xtask corpus`: the kernel translator measured on CUDA it was not written
//! against. Each corpus (a Candle release's kernels, mistral.rs's CUDA crates, vLLM's
//! `csrc/`) is read from its registry, every kernel unit goes through the rules on its own
//! ([`translator::kernels::translate_each`]) and, with `--compile`, what translated is
//! compiled with hipcc. One row per unit: translated (and compiled per arch), refused as
//! NVIDIA-only (the cause named), needing a library outside CUDA, or failing with "no rule".
//!
//! `--sample` runs the corpora CI runs: mistral.rs's three crates (the pinned Candle release
//! is regen's, which CI checks and compiles in its own steps).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use hip_build::{CompileJob, Hipcc, OutputKind};
use translator::kernels::include_paths::{self, is_header, is_kernel_unit};
use translator::kernels::{translate_each, KernelContext};
use translator::{TranslateError, TreeFile};

use crate::workspace::workspace_root;

/// Where a corpus comes from.
pub enum Origin {
    /// A crate of the cargo registry; `dir` is the tree's root inside it ("" for the crate).
    Registry { name: &'static str, version: &'static str, dir: &'static str },
    /// A source distribution on PyPI, pinned by its sha256; `dir` is the tree's root in it.
    Pypi { name: &'static str, version: &'static str, sha256: &'static str, dir: &'static str },
}

/// One corpus: its label, origin, include directories (relative to the tree's root, as
/// its build passes them to nvcc), the units its own build leaves out, and whether CI runs it.
pub struct Corpus {
    pub label: &'static str,
    pub origin: Origin,
    pub include_dirs: &'static [&'static str],
    /// Path prefixes (relative to the tree's root) that are not CUDA: the corpus's HIP or
    /// CPU sources.
    pub not_cuda: &'static [(&'static str, &'static str)],
    /// Macros the crate's own build defines for every unit (its build script's `-D`s),
    /// defined when the corpus compiles them.
    pub defines: &'static [&'static str],
    pub sample: bool,
}

const fn candle(version: &'static str, sample: bool) -> Corpus {
    Corpus { label: "candle-kernels", origin: Origin::Registry { name: "candle-kernels", version, dir: "src" }, include_dirs: &[], not_cuda: &[], defines: &[], sample }
}

const fn mistralrs(name: &'static str, defines: &'static [&'static str], sample: bool) -> Corpus {
    Corpus { label: name, origin: Origin::Registry { name, version: "0.8.1", dir: "" }, include_dirs: &[], not_cuda: &[], defines, sample }
}

/// The corpora, as data. Candle's releases are those `cargo xtask releases` runs.
pub const CORPORA: &[Corpus] = &[
    candle("0.9.0", false),
    candle("0.9.1", false),
    candle("0.9.2", false),
    candle("0.10.0", false),
    candle("0.10.1", false),
    candle("0.10.2", false),
    candle("0.11.0", false),
    candle("0.11.1", false),
    mistralrs("mistralrs-quant", &[], true),
    // its build script: `builder.arg("-DENABLE_FP8")`
    mistralrs("mistralrs-paged-attn", &["ENABLE_FP8"], true),
    mistralrs("mistralrs-core", &[], true),
    Corpus {
        label: "vllm csrc",
        origin: Origin::Pypi { name: "vllm", version: "0.33.0", sha256: "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112", dir: "csrc" },
        include_dirs: &[""],
        not_cuda: &[("rocm/", "vLLM's own HIP kernels"), ("cpu/", "vLLM's CPU kernels")],
        defines: &[],
        sample: false,
    },
];

#[derive(Args, Debug)]
pub struct CorpusArgs {
    /// Only the corpora CI runs (mistral.rs's three crates).
    #[arg(long)]
    sample: bool,
    /// Only corpora whose label contains this (repeatable).
    #[arg(long = "only", value_name = "TEXT")]
    only: Vec<String>,
    /// Compile what translated: HIP 5.2.3 (this machine's hipcc) for gfx90a, and with `--rocm` that
    /// release's hipcc for gfx942, gfx1100 and gfx1201.
    #[arg(long)]
    compile: bool,
    /// A ROCm release of rocm-releases.toml for `--compile` (its sid root is made when absent).
    #[arg(long, value_name = "RELEASE")]
    rocm: Option<String>,
    /// Write the report (markdown) here as well as printing it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Every unit's row in the report, not only those that did not translate or compile.
    #[arg(long)]
    all_rows: bool,
    /// Exit with failure when a unit fails with "no rule" or a translated unit does not compile.
    #[arg(long)]
    strict: bool,
    /// Compare the report with this file instead of writing one, and fail naming the first
    /// differing line (CI: the sample against bench/results/corpus-sample.md).
    #[arg(long, value_name = "FILE", conflicts_with = "out")]
    check: Option<PathBuf>,
    /// Only rewrite docs/what-translates.md, the rules' vocabulary rendered from their tables.
    #[arg(long)]
    write_vocabulary: bool,
}

/// Where the rendered vocabulary lives ([`translator::kernels::vocabulary`]).
pub const VOCABULARY_DOC: &str = "docs/what-translates.md";

/// What became of one kernel unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Translated,
    NvidiaOnly(String),
    NeedsLibrary(String),
    NoRule(String),
    /// The corpus's own non-CUDA sources (its HIP or CPU kernels).
    NotCuda(&'static str),
}

impl Outcome {
    fn column(&self) -> &'static str {
        match self {
            Outcome::Translated => "translated",
            Outcome::NvidiaOnly(_) => "NVIDIA-only",
            Outcome::NeedsLibrary(_) => "needs a library",
            Outcome::NoRule(_) => "no rule",
            Outcome::NotCuda(_) => "not CUDA",
        }
    }
}

fn outcome(e: &TranslateError) -> Outcome {
    match e {
        TranslateError::NvidiaOnly { .. } => Outcome::NvidiaOnly(e.to_string()),
        TranslateError::NeedsLibrary { .. } => Outcome::NeedsLibrary(e.to_string()),
        _ => Outcome::NoRule(e.to_string()),
    }
}

/// What one compiler made of a translated unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiled {
    Ok,
    /// The first error line.
    Failed(String),
    /// Not compiled: the unit takes a ROCm library (named, with its header) that this
    /// compiler's release does not ship.
    LacksLibrary(String),
}

/// One row: a unit, what became of it, and per compiled arch set whether it compiled.
pub struct Row {
    pub unit: String,
    pub outcome: Outcome,
    /// (compiler label, what it made of the unit)
    pub compiled: Vec<(String, Compiled)>,
}

pub fn run(args: CorpusArgs) -> Result<ExitCode> {
    let root = workspace_root();
    if args.write_vocabulary {
        crate::tree::write_file_atomic(&root.join(VOCABULARY_DOC), translator::kernels::vocabulary::render().as_bytes())?;
        println!("corpus: wrote {VOCABULARY_DOC}");
        return Ok(ExitCode::SUCCESS);
    }
    let compilers = if args.compile { compilers(args.rocm.as_deref())? } else { Vec::new() };
    let mut report = String::from("# Kernel corpus: translated, refused, compiled\n\nWritten by `cargo xtask corpus");
    for (flag, on) in [(" --sample", args.sample), (" --compile", args.compile)] {
        if on {
            report.push_str(flag);
        }
    }
    if let Some(r) = &args.rocm {
        report.push_str(&format!(" --rocm {r}"));
    }
    for only in &args.only {
        report.push_str(&format!(" --only '{only}'"));
    }
    report.push_str("`. One row per kernel unit (`.cu`), with the headers it includes: a unit is translated when it and every header it reaches translate.\n\n");
    let mut summary = String::from("| corpus | units | translated | NVIDIA-only | needs a library | no rule | not CUDA |");
    for (label, _, _) in &compilers {
        summary.push_str(&format!(" compiled {label} |"));
    }
    summary.push_str("\n|---|---|---|---|---|---|---|");
    summary.push_str(&"---|".repeat(compilers.len()));
    summary.push('\n');
    let mut details = String::new();
    let mut failing = 0;
    for corpus in CORPORA.iter().filter(|c| (!args.sample || c.sample) && (args.only.is_empty() || args.only.iter().any(|o| name(c).contains(o.as_str())))) {
        let tree = read_corpus(corpus, &root)?;
        let (rows, notes) = measure(corpus, &tree, &compilers, &root)?;
        let count = |col: &str| rows.iter().filter(|r| r.outcome.column() == col).count();
        summary.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            name(corpus),
            rows.len(),
            count("translated"),
            count("NVIDIA-only"),
            count("needs a library"),
            count("no rule"),
            count("not CUDA")
        ));
        for (n, (label, _, _)) in compilers.iter().enumerate() {
            let with = |c: fn(&Compiled) -> bool| rows.iter().filter(|r| r.compiled.get(n).is_some_and(|(l, e)| l == label && c(e))).count();
            let ok = with(|e| *e == Compiled::Ok);
            match with(|e| matches!(e, Compiled::LacksLibrary(_))) {
                0 => summary.push_str(&format!(" {ok} |")),
                lacking => summary.push_str(&format!(" {ok} (+{lacking} need a library it lacks) |")),
            }
        }
        summary.push('\n');
        failing += rows.iter().filter(|r| matches!(r.outcome, Outcome::NoRule(_)) || r.compiled.iter().any(|(_, e)| matches!(e, Compiled::Failed(_)))).count();
        let shown: Vec<&Row> = rows.iter().filter(|r| args.all_rows || r.outcome != Outcome::Translated || r.compiled.iter().any(|(_, e)| *e != Compiled::Ok)).collect();
        if !shown.is_empty() || !notes.is_empty() {
            details.push_str(&format!("\n## {}\n\n", name(corpus)));
            for note in &notes {
                details.push_str(&format!("{note}.\n\n"));
            }
            for row in shown {
                details.push_str(&format!("- `{}`: {}", row.unit, row.outcome.column()));
                match &row.outcome {
                    Outcome::NvidiaOnly(why) | Outcome::NeedsLibrary(why) | Outcome::NoRule(why) => details.push_str(&format!(": {}", one_line(why))),
                    Outcome::NotCuda(why) => details.push_str(&format!(": {why}")),
                    Outcome::Translated => {}
                }
                for (label, compiled) in &row.compiled {
                    match compiled {
                        Compiled::Ok => details.push_str(&format!("; {label} ok")),
                        Compiled::Failed(e) => details.push_str(&format!("; {label} failed: {}", one_line(e))),
                        Compiled::LacksLibrary(what) => details.push_str(&format!("; {label} not compiled: needs {what}, which this release does not ship")),
                    }
                }
                details.push('\n');
            }
        }
    }
    report.push_str(&summary);
    report.push_str(&details);
    print!("{report}");
    if let Some(out) = &args.out {
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(expected) = &args.check {
        let on_disk = std::fs::read_to_string(expected).with_context(|| format!("reading {}", expected.display()))?;
        if let Some(difference) = first_difference(&on_disk, &report) {
            eprintln!("corpus: the report differs from {} ({difference}); run it with --out {} and read the diff", expected.display(), expected.display());
            return Ok(ExitCode::FAILURE);
        }
        println!("corpus: the report is {}", expected.display());
    }
    if args.strict && failing > 0 {
        eprintln!("corpus: {failing} units failed with no rule or did not compile");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The first line where `expected` and `got` differ, as `line N: expected ... got ...`.
fn first_difference(expected: &str, got: &str) -> Option<String> {
    let (mut e, mut g) = (expected.lines(), got.lines());
    for n in 1.. {
        match (e.next(), g.next()) {
            (None, None) => return None,
            (a, b) if a == b => continue,
            (a, b) => return Some(format!("line {n}: expected {:?}, got {:?}", a.unwrap_or("(end)"), b.unwrap_or("(end)"))),
        }
    }
    None
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").replace('|', "\\|");
    if line.chars().count() > 300 {
        format!("{}...", line.chars().take(300).collect::<String>())
    } else {
        line
    }
}

/// `label version`.
fn name(corpus: &Corpus) -> String {
    match corpus.origin {
        Origin::Registry { version, .. } | Origin::Pypi { version, .. } => format!("{} {version}", corpus.label),
    }
}

/// The compilers of `--compile`: (label, hipcc, arches).
fn compilers(rocm: Option<&str>) -> Result<Vec<(String, Hipcc, Vec<String>)>> {
    let mut out = vec![("HIP 5.2.3 gfx90a".to_string(), Hipcc::locate()?, vec!["gfx90a".to_string()])];
    if let Some(release) = rocm {
        let root = crate::rocm::root::ensure(release, None, None)?;
        out.push((format!("ROCm {release} gfx942/gfx1100/gfx1201"), Hipcc::at(root.hipcc()), ["gfx942", "gfx1100", "gfx1201"].map(String::from).to_vec()));
    }
    Ok(out)
}

/// The corpus's tree: every file under its root, paths relative to it.
fn read_corpus(corpus: &Corpus, root: &Path) -> Result<Vec<TreeFile>> {
    let dir = match corpus.origin {
        Origin::Registry { name, version, dir } => {
            let krate = crate::regen::upstream::registry_crate(name, version)?;
            krate.join(dir)
        }
        Origin::Pypi { name, version, sha256, dir } => pypi_sdist(root, name, version, sha256)?.join(dir),
    };
    let tree = crate::tree::read_tree(&dir)?;
    Ok(tree.into_iter().map(|(rel_path, contents)| TreeFile { rel_path, contents }).collect())
}

/// The unpacked source distribution `name-version` from PyPI, checked against `sha256`,
/// kept under `target/corpus/`.
fn pypi_sdist(root: &Path, name: &str, version: &str, sha256: &str) -> Result<PathBuf> {
    let base = root.join("target/corpus");
    let unpacked = base.join(format!("{name}-{version}"));
    if unpacked.join("PKG-INFO").is_file() {
        return Ok(unpacked);
    }
    std::fs::create_dir_all(&base)?;
    let archive = base.join(format!("{name}-{version}.tar.gz"));
    if !archive.is_file() {
        // pip finds the archive on the index this machine is set up with, but cannot prepare a
        // package whose build needs more than pip has (vLLM's needs torch): its verbose log
        // names the archive's address, fetched from there
        let file = format!("{name}-{version}.tar.gz");
        let log = std::process::Command::new("python3")
            .args(["-m", "pip", "download", "-vv", "--no-deps", "--no-binary=:all:", "--no-build-isolation", "-d"])
            .arg(base.join("pip"))
            .arg(format!("{name}=={version}"))
            .output()
            .context("running pip download")?;
        let text = String::from_utf8_lossy(&log.stdout);
        let url = text
            .split_whitespace()
            .find(|w| w.starts_with("http") && w.ends_with(&format!("/{file}")))
            .with_context(|| format!("pip download named no address of {file}"))?;
        let status = std::process::Command::new("curl").args(["-sSfL", "-o"]).arg(&archive).arg(url).status().context("running curl")?;
        if !status.success() {
            bail!("downloading {file} failed ({status})");
        }
    }
    let bytes = std::fs::read(&archive)?;
    let digest = sha256_hex(&bytes);
    if digest != sha256 {
        bail!("{}: sha256 {digest}, pinned {sha256}", archive.display());
    }
    let status = std::process::Command::new("tar").arg("xzf").arg(&archive).arg("-C").arg(&base).status()?;
    if !status.success() || !unpacked.is_dir() {
        bail!("unpacking {} failed", archive.display());
    }
    Ok(unpacked)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Every unit of the corpus through the rules (and the compilers).
fn measure(corpus: &Corpus, tree: &[TreeFile], compilers: &[(String, Hipcc, Vec<String>)], root: &Path) -> Result<(Vec<Row>, Vec<String>)> {
    let not_cuda = |p: &str| corpus.not_cuda.iter().find(|(prefix, _)| p.starts_with(prefix)).map(|(_, why)| *why);
    let candidates: Vec<TreeFile> = tree.iter().filter(|f| (is_kernel_unit(&f.rel_path) || is_header(&f.rel_path)) && not_cuda(&f.rel_path).is_none()).cloned().collect();
    let include_dirs: Vec<String> = corpus.include_dirs.iter().map(|d| d.to_string()).collect();
    let inputs = include_paths::own_headers(&candidates, &include_dirs);
    let ctx = KernelContext { include_dirs: include_dirs.clone(), ..KernelContext::new(name(corpus)) };
    let (output, failures) = translate_each(&inputs, &ctx).map_err(|e| anyhow::anyhow!("{}: {e}", name(corpus)))?;
    let reaches = translator::kernels::unit_reaches(&inputs, &include_dirs);
    let failed = translator::kernels::unit_failures(&reaches, &failures);

    let mut rows = Vec::new();
    for unit in inputs.iter().filter(|f| is_kernel_unit(&f.rel_path)) {
        rows.push(Row { unit: unit.rel_path.clone(), outcome: failed.get(&unit.rel_path).map_or(Outcome::Translated, |e| outcome(e)), compiled: Vec::new() });
    }
    for file in tree.iter().filter(|f| f.rel_path.ends_with(".cu")) {
        if let Some(why) = not_cuda(&file.rel_path) {
            rows.push(Row { unit: file.rel_path.clone(), outcome: Outcome::NotCuda(why), compiled: Vec::new() });
        }
    }
    rows.sort_by(|a, b| a.unit.cmp(&b.unit));

    if !compilers.is_empty() {
        let work = root.join("target/corpus/work").join(name(corpus).replace(' ', "-"));
        let _ = std::fs::remove_dir_all(&work);
        for f in &output.files {
            let path = work.join("src").join(&f.rel_path);
            std::fs::create_dir_all(path.parent().unwrap())?;
            std::fs::write(path, &f.contents)?;
        }
        // what each translated file takes, read once; a unit takes what the files it reaches take
        let taken_by_file: BTreeMap<&str, BTreeSet<(&'static str, String)>> = output.files.iter().map(|f| (f.rel_path.as_str(), libraries_taken(f))).collect();
        let libraries: BTreeMap<String, BTreeSet<(&'static str, String)>> = reaches
            .iter()
            .map(|(unit, reach)| {
                let taken = reach.iter().filter_map(|f| taken_by_file.get(translator::kernels::rules::output_path(&f.rel_path).as_str()));
                (unit.clone(), taken.flatten().cloned().collect())
            })
            .collect();
        for (label, hipcc, arches) in compilers {
            let mut ships: BTreeMap<String, bool> = BTreeMap::new();
            for (_, header) in libraries.values().flatten() {
                if !ships.contains_key(header) {
                    ships.insert(header.clone(), compiles_include(hipcc, &arches[0], header, &work.join("probe"))?);
                }
            }
            for row in rows.iter_mut().filter(|r| r.outcome == Outcome::Translated) {
                let lacking: Vec<String> = libraries[&row.unit].iter().filter(|(_, h)| !ships[h]).map(|(lib, h)| format!("{lib} (`{h}`)")).collect();
                if !lacking.is_empty() {
                    row.compiled.push((label.clone(), Compiled::LacksLibrary(lacking.join(", "))));
                }
            }
            let jobs: Vec<CompileJob> = rows
                .iter()
                .filter(|r| r.outcome == Outcome::Translated && !r.compiled.iter().any(|(l, _)| l == label))
                .map(|r| CompileJob {
                    source: work.join("src").join(translator::kernels::rules::output_path(&r.unit)),
                    output: work.join("out").join(label.replace([' ', '/'], "_")).join(format!("{}.o", r.unit.replace('/', "__"))),
                    kind: OutputKind::CodeObject,
                    arches: arches.clone(),
                    include_dirs: std::iter::once(work.join("src")).chain(include_dirs.iter().map(|d| work.join("src").join(d))).collect(),
                    extra_flags: std::iter::once("-std=c++17".to_string()).chain(corpus.defines.iter().map(|d| format!("-D{d}"))).collect(),
                })
                .collect();
            for job in &jobs {
                std::fs::create_dir_all(job.output.parent().unwrap())?;
            }
            let results = hip_build::compile_all(hipcc, jobs, 0);
            for result in results {
                let unit = rows.iter_mut().find(|r| work.join("src").join(translator::kernels::rules::output_path(&r.unit)) == result.job.source).unwrap();
                // paths relative to the translated tree: the report is the same from any checkout
                let tree_prefix = format!("{}/", work.join("src").display());
                let compiled = match result.result {
                    Ok(_) => Compiled::Ok,
                    Err(e) => Compiled::Failed(first_compile_error(&e.to_string()).replace(&tree_prefix, "")),
                };
                unit.compiled.push((label.clone(), compiled));
            }
        }
    }
    Ok((rows, output.notes))
}

/// The ROCm libraries a translated file takes beyond HIP, as (library, header): each ROCm
/// library header it includes (`ROCM_LIBRARY_HEADERS`: an author's ROCm branch), and hipCUB
/// for a `cub::` name the compat header does not declare itself (`COMPAT_CUB_NAMES`).
fn libraries_taken(file: &TreeFile) -> BTreeSet<(&'static str, String)> {
    use translator::kernels::mapping::{header_row, COMPAT_CUB_NAMES, HIPCUB_HEADER, ROCM_LIBRARY_HEADERS};
    let mut out = BTreeSet::new();
    let Ok(text) = std::str::from_utf8(&file.contents) else { return out };
    let lexed = translator::lexer::lex(text);
    for line in translator::lexer::line_views(&lexed.tokens) {
        if let Some((target, _)) = line.directive().filter(|d| *d == "include").and_then(|_| include_paths::include_target(&line)) {
            if let Some(library) = header_row(ROCM_LIBRARY_HEADERS, &target) {
                out.insert((library, target));
            }
        }
    }
    let significant: Vec<_> = lexed.tokens.iter().filter(|t| !t.is_trivia()).collect();
    for w in significant.windows(3) {
        if w[0].is_ident("candle_cub") && w[1].is_punct("::") && !COMPAT_CUB_NAMES.iter().any(|n| w[2].is_ident(n)) {
            out.insert(("hipCUB", HIPCUB_HEADER.to_string()));
        }
    }
    out
}

/// Whether `hipcc` finds `header` (a file that includes only it compiles for `arch`).
fn compiles_include(hipcc: &Hipcc, arch: &str, header: &str, dir: &Path) -> Result<bool> {
    std::fs::create_dir_all(dir)?;
    let source = dir.join(format!("{}.hip", header.replace(['/', '.'], "_")));
    std::fs::write(&source, format!("#include <hip/hip_runtime.h>\n#include <{header}>\n"))?;
    let job = CompileJob {
        source: source.clone(),
        output: source.with_extension("o"),
        kind: OutputKind::CodeObject,
        arches: vec![arch.to_string()],
        include_dirs: Vec::new(),
        extra_flags: vec!["-std=c++17".to_string()],
    };
    Ok(hip_build::compile_all(hipcc, vec![job], 0).into_iter().all(|r| r.result.is_ok()))
}

/// The first `error:` line of a compiler's message (else its first line).
fn first_compile_error(text: &str) -> String {
    text.lines().find(|l| l.contains("error:")).or_else(|| text.lines().next()).unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_mistralrs() {
        let sample: Vec<String> = CORPORA.iter().filter(|c| c.sample).map(name).collect();
        assert_eq!(sample, ["mistralrs-quant 0.8.1", "mistralrs-paged-attn 0.8.1", "mistralrs-core 0.8.1"]);
    }

    #[test]
    fn check_names_the_first_differing_line() {
        assert_eq!(first_difference("a\nb\n", "a\nb\n"), None);
        assert_eq!(first_difference("a\nb\n", "a\nc\n").unwrap(), "line 2: expected \"b\", got \"c\"");
        assert_eq!(first_difference("a\n", "a\nx\n").unwrap(), "line 2: expected \"(end)\", got \"x\"");
    }

    #[test]
    fn libraries_are_read_off_includes_and_cub_names() {
        let file = |text: &str| TreeFile { rel_path: "k.hip".into(), contents: text.as_bytes().to_vec() };
        let taken = libraries_taken(&file("#include <hipblas/hipblas.h>\n#include \"candle_hip_cub.h\"\ntypedef candle_cub::BlockLoad<int, 128, 4> L;\n"));
        assert_eq!(taken.into_iter().collect::<Vec<_>>(), vec![("hipBLAS", "hipblas/hipblas.h".to_string()), ("hipCUB", "hipcub/hipcub.hpp".to_string())]);
        // Candle's scan is the compat header's own
        assert!(libraries_taken(&file("using S = candle_cub::BlockScan<int, 1024>;\n")).is_empty());
    }

    #[test]
    fn errors_land_in_their_columns() {
        assert_eq!(outcome(&TranslateError::nvidia_only("a.cu", 1, "asm", "PTX", None)).column(), "NVIDIA-only");
        assert_eq!(outcome(&TranslateError::unsupported("a.cu", 1, "x", "y")).column(), "no rule");
        assert_eq!(first_compile_error("In file included from x\na.hip:3:1: error: unknown type\nnote"), "a.hip:3:1: error: unknown type");
    }
}
