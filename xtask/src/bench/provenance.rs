//! Where a result file's figures came from: the commit it was measured at and a
//! hash of the sources it measured (`# commit:` and `# sources:` lines), so that
//! `bench report` can say which tables the code has moved past since.
//!
//! What a result file measured is data ([`MEASURED_SOURCES`]): tracked paths of
//! this repository. Their hash is the SHA-256 of each tracked file's git blob id
//! and path, which is the same for a working tree and for a commit's tree, so a
//! file can be stamped at the commit it was measured at (`--at REV`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use clap::Args;
use sha2::{Digest, Sha256};

use super::results::Table;
use crate::workspace::{git_dirty, head_commit, workspace_root};

/// Each result file (a name, `*` standing for any text) and the tracked paths
/// whose change can change its figures: the code it measured and the harness
/// that measured it; a path after `!` is left out of the ones before it (code
/// the measurement never runs). The first pattern that matches a name is its entry.
pub const MEASURED_SOURCES: &[(&str, &[&str])] = &[
    ("regen*.tsv", &["translator", "xtask/src/regen", "upstream.toml"]),
    ("releases.tsv", &["translator", "xtask/src/regen", "xtask/src/releases.rs", "hip-build", "rocm-runtime"]),
    // (the kernel cache: these compile every unit themselves, never through it)
    ("kernel-build.tsv", &["generated/kernels", "hip-build", "!hip-build/src/cache.rs", "xtask/src/bench/kernel_build.rs"]),
    ("kernel-resources-*.tsv", &["generated/kernels", "hip-build", "!hip-build/src/cache.rs", "xtask/src/bench/kernel_resources.rs"]),
    // (run_mha's unit: none of these four launches it)
    ("kernels-*.tsv", &["generated/kernels", "!generated/kernels/candle_flash_attn.hip", "hip-on-cuda", "bench/kernels"]),
    ("backend-*.tsv", &["generated/candle-core", "generated/kernels", "!generated/kernels/candle_flash_attn.hip", "rocm-runtime", "hip-on-cuda", "bench/backend"]),
    ("examples-*.tsv", &["generated", "rocm-runtime", "hip-on-cuda", "bench/examples"]),
    ("flash-attn-*.tsv", &["generated/candle-flash-attn", "generated/kernels", "rocm-runtime", "hip-on-cuda", "bench/flash-attn", "bench/fixtures"]),
    ("qmatmul-*.tsv", &["generated/candle-core", "generated/kernels", "!generated/kernels/candle_flash_attn.hip", "rocm-runtime", "hip-on-cuda", "bench/numerics"]),
    ("moe-*.tsv", &["generated/candle-core", "generated/kernels", "!generated/kernels/candle_flash_attn.hip", "rocm-runtime", "hip-on-cuda", "bench/numerics"]),
    ("teacher-forced-*.tsv", &["generated", "rocm-runtime", "hip-on-cuda", "bench/numerics"]),
    ("collectives-*.tsv", &["rocm-runtime/hip", "hip-on-cuda", "bench/collectives"]),
    ("tensor-parallel*.tsv", &["generated", "rocm-runtime", "hip-on-cuda", "tests/tensor-parallel", "bench/collectives"]),
    ("user-custom-op-*.tsv", &["translator", "candle-rocm-build", "generated/candle-core", "rocm-runtime", "hip-on-cuda", "tests/user-custom-op"]),
    ("mistralrs-*.tsv", &["translator", "xtask/src/regen", "xtask/src/port_crate.rs", "xtask/src/gpu_program", "candle-rocm-build", "rocm-runtime", "hip-on-cuda", "bench/mistralrs", "bench/examples/make-models"]),
    ("user-ffi-rotary-*.tsv", &["translator", "candle-rocm-build", "xtask/src/port_crate.rs", "generated/candle-core", "rocm-runtime", "hip-on-cuda", "tests/user-ffi-rotary"]),
];

const COMMIT_NOTE: &str = "commit";
const SOURCES_NOTE: &str = "sources";

/// The tracked paths a result file measured.
pub fn sources_of(file_name: &str) -> Option<&'static [&'static str]> {
    MEASURED_SOURCES.iter().find(|(pattern, _)| matches(pattern, file_name)).map(|(_, paths)| *paths)
}

/// `pattern` with at most one `*` (any text) against `name`.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((head, tail)) => name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail),
        None => pattern == name,
    }
}

/// The git blob id of every tracked file: of the working tree (`at` None) or of
/// a commit's tree.
fn tracked_blobs(root: &Path, at: Option<&str>) -> Result<BTreeMap<String, String>> {
    let git = |args: &[&str]| -> Result<Vec<u8>> {
        let out = Command::new("git").args(args).current_dir(root).output().context("running git")?;
        if !out.status.success() {
            bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(out.stdout)
    };
    let mut blobs = BTreeMap::new();
    match at {
        Some(rev) => {
            for entry in git(&["ls-tree", "-r", "-z", "--full-tree", rev])?.split(|b| *b == 0).filter(|e| !e.is_empty()) {
                let entry = String::from_utf8_lossy(entry);
                let (meta, path) = entry.split_once('\t').with_context(|| format!("git ls-tree: unexpected line {entry:?}"))?;
                let id = meta.rsplit(' ').next().unwrap_or_default();
                blobs.insert(path.to_string(), id.to_string());
            }
        }
        None => {
            let listed = git(&["ls-files", "-z"])?;
            // a tracked file deleted in the working tree has no blob there
            let paths: Vec<String> = listed.split(|b| *b == 0).filter(|p| !p.is_empty()).map(|p| String::from_utf8_lossy(p).into_owned()).filter(|p| root.join(p).exists()).collect();
            let mut child = Command::new("git").args(["hash-object", "--stdin-paths"]).current_dir(root).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().context("running git hash-object")?;
            let mut stdin = child.stdin.take().context("git hash-object's stdin")?;
            let input = paths.iter().map(|p| format!("{p}\n")).collect::<String>();
            let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
            let out = child.wait_with_output().context("git hash-object")?;
            writer.join().map_err(|_| anyhow::anyhow!("git hash-object's input"))??;
            if !out.status.success() {
                bail!("git hash-object --stdin-paths failed");
            }
            let ids = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect::<Vec<_>>();
            if ids.len() != paths.len() {
                bail!("git hash-object gave {} ids for {} files", ids.len(), paths.len());
            }
            blobs.extend(paths.into_iter().zip(ids));
        }
    }
    Ok(blobs)
}

/// The hash of the tracked files under `paths` (each a file or a directory).
fn hash_of(blobs: &BTreeMap<String, String>, paths: &[&str]) -> Result<String> {
    let within = |file: &str, p: &str| file == p || file.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'));
    let (left_out, taken): (Vec<&str>, Vec<&str>) = paths.iter().partition(|p| p.starts_with('!'));
    let under = |file: &str| taken.iter().any(|p| within(file, p)) && !left_out.iter().any(|p| within(file, &p[1..]));
    let mut hasher = Sha256::new();
    let mut any = false;
    for (file, id) in blobs.iter().filter(|(f, _)| under(f)) {
        hasher.update(format!("{id} {file}\n"));
        any = true;
    }
    if !any {
        bail!("no tracked file under {}", paths.join(", "));
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// The tracked files' blob ids, read once per process for the working tree.
fn working_tree_blobs(root: &Path) -> Result<&'static BTreeMap<String, String>> {
    static BLOBS: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();
    if let Some(b) = BLOBS.get() {
        return Ok(b);
    }
    let blobs = tracked_blobs(root, None)?;
    Ok(BLOBS.get_or_init(|| blobs))
}

/// The `# sources:` value: the hash and, for the reader, the paths.
fn sources_note(hash: &str, paths: &[&str]) -> String {
    format!("sha256 {hash} of {}", paths.join(", "))
}

/// A result file's text with its `# commit:` and `# sources:` lines set (first,
/// replacing any there); every other line is kept as it is.
fn stamped(text: &str, commit: &str, sources: &str) -> String {
    let ours = |line: &str| [COMMIT_NOTE, SOURCES_NOTE].iter().any(|k| line.strip_prefix('#').map(str::trim_start).and_then(|l| l.strip_prefix(k)).is_some_and(|rest| rest.starts_with(':')));
    let mut out = format!("# {COMMIT_NOTE}: {commit}\n# {SOURCES_NOTE}: {sources}\n");
    for line in text.lines().filter(|l| !ours(l)) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The commit and sources notes for a result file named `file_name` measured
/// on the working tree now (what a command that writes a result file records).
pub fn notes_for(file_name: &str) -> Result<[(String, String); 2]> {
    let root = workspace_root();
    let paths = sources_of(file_name).with_context(|| format!("{file_name}: no entry in bench::provenance::MEASURED_SOURCES"))?;
    let hash = hash_of(working_tree_blobs(&root)?, paths)?;
    let commit = head_commit(&root).unwrap_or_else(|| "unknown".into());
    let commit = if git_dirty(&root, paths) { format!("{commit} with uncommitted changes") } else { commit };
    Ok([(COMMIT_NOTE.into(), commit), (SOURCES_NOTE.into(), sources_note(&hash, paths))])
}

/// `text` of a result file named `file_name`, stamped with the working tree's
/// commit and sources: what a command that measures here writes.
pub fn stamped_now(file_name: &str, text: &str) -> Result<String> {
    let [(_, commit), (_, sources)] = notes_for(file_name)?;
    Ok(stamped(text, &commit, &sources))
}

/// Write a result table measured on the working tree now, stamped.
pub fn write_measured(table: &Table, path: &Path) -> Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).with_context(|| format!("{}: not a file name", path.display()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::tree::write_file_atomic(path, stamped_now(name, &table.render())?.as_bytes())
}

/// How a result file stands against the code as it is.
#[derive(Debug, PartialEq)]
pub enum Freshness {
    /// Its sources are what it measured.
    Current { commit: String },
    /// Its sources have changed since it was measured.
    Stale { commit: String },
    /// It records no commit or sources, or names sources no entry has.
    Unknown { why: String },
}

/// Whether `file_name`'s figures (its notes read as `notes`) are of the sources as they are.
pub fn freshness(root: &Path, file_name: &str, notes: &[(String, String)]) -> Result<Freshness> {
    let note = |k: &str| notes.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let Some(paths) = sources_of(file_name) else {
        return Ok(Freshness::Unknown { why: "no entry in bench::provenance::MEASURED_SOURCES".into() });
    };
    let (Some(commit), Some(sources)) = (note(COMMIT_NOTE), note(SOURCES_NOTE)) else {
        return Ok(Freshness::Unknown { why: format!("no commit and sources recorded (cargo xtask bench stamp bench/results/{file_name})") });
    };
    let now = sources_note(&hash_of(working_tree_blobs(root)?, paths)?, paths);
    Ok(if now == sources { Freshness::Current { commit } } else { Freshness::Stale { commit } })
}

/// The first 12 hex digits of a commit (and what follows the id, if anything).
pub fn short(commit: &str) -> String {
    match commit.split_once(' ') {
        Some((id, rest)) => format!("{} {rest}", &id[..id.len().min(12)]),
        None => commit[..commit.len().min(12)].to_string(),
    }
}

/// A result file's sources as the report shows them: `a`, `b` (empty for a file no entry has).
fn shown_sources(file_name: &str) -> String {
    sources_of(file_name).map(|p| p.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")).unwrap_or_default()
}

/// The note a report section shows for its result file (key, value), in place of
/// the file's `# commit:` and `# sources:` lines.
pub fn freshness_note(file_name: &str, freshness: &Freshness) -> (String, String) {
    let paths = shown_sources(file_name);
    match freshness {
        Freshness::Current { commit } => ("measured".into(), format!("at commit `{}`; its sources ({paths}) are unchanged since", short(commit))),
        Freshness::Stale { commit } => ("**stale**".into(), format!("measured at commit `{}`; its sources ({paths}) have changed since, so these figures may not be today's code's", short(commit))),
        Freshness::Unknown { why } => ("**provenance unknown**".into(), why.clone()),
    }
}

/// A result file as the report shows it: its commit and sources lines become one
/// note, first, that says whether its sources have changed since; `None` where
/// there is no such file (not measured yet).
pub fn read_for_report(path: &Path) -> Result<Option<Table>> {
    let Some(mut table) = Table::read_if_present(path)? else { return Ok(None) };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let freshness = freshness(&workspace_root(), name, &table.notes).with_context(|| path.display().to_string())?;
    table.notes.retain(|(k, _)| k != COMMIT_NOTE && k != SOURCES_NOTE);
    table.notes.insert(0, freshness_note(name, &freshness));
    Ok(Some(table))
}

/// BENCHMARKS.md's list of every result file and whether its sources have changed
/// since it was measured.
pub fn overview(md: &mut String, results: &Path) -> Result<()> {
    let mut names: Vec<String> = match std::fs::read_dir(results) {
        Ok(entries) => entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".tsv")).collect(),
        Err(_) => Vec::new(),
    };
    if names.is_empty() {
        return Ok(());
    }
    names.sort();
    md.push_str("## Freshness: what each result file measured

");
    md.push_str("Each result file records the commit it was measured at and a hash of the tracked sources it measured (`bench::provenance::MEASURED_SOURCES`: the code and the harness). A file whose sources have changed since is **stale**: its figures may not be today's code's. Re-measure it with the command its section names, then `cargo xtask bench stamp FILE` (GPU results) and `cargo xtask bench report`.\n\n");
    let mut rows = Vec::new();
    for name in names {
        let table = Table::read(&results.join(&name))?;
        let f = freshness(&workspace_root(), &name, &table.notes)?;
        let (commit, state) = match &f {
            Freshness::Current { commit } => (format!("`{}`", short(commit)), "current".to_string()),
            Freshness::Stale { commit } => (format!("`{}`", short(commit)), "**stale**".to_string()),
            Freshness::Unknown { why } => ("".into(), format!("**unknown**: {why}")),
        };
        let paths = shown_sources(&name);
        rows.push(vec![format!("`{name}`"), commit, paths, state]);
    }
    super::table::markdown_table(md, &["result file", "measured at", "sources", "state"], &rows)
}

#[derive(Args, Debug)]
pub struct StampArgs {
    /// The result files to stamp (their names pick their sources).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<std::path::PathBuf>,
    /// The commit the figures were measured at (default: the working tree now,
    /// for a result just brought back from the GPU machine).
    #[arg(long, value_name = "REV")]
    at: Option<String>,
}

/// `cargo xtask bench stamp`: record in result files the commit and the sources
/// hash they were measured at.
pub fn stamp(args: StampArgs) -> Result<std::process::ExitCode> {
    let root = workspace_root();
    let resolved_at = match &args.at {
        Some(rev) => {
            let out = Command::new("git").args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")]).current_dir(&root).output().context("running git")?;
            if !out.status.success() {
                bail!("--at {rev}: not a commit here");
            }
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        }
        None => None,
    };
    let at_blobs = resolved_at.as_deref().map(|rev| tracked_blobs(&root, Some(rev))).transpose()?;
    for file in &args.files {
        let name = file.file_name().and_then(|n| n.to_str()).with_context(|| format!("{}: not a file name", file.display()))?;
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let (commit, sources) = match (&resolved_at, &at_blobs) {
            (Some(rev), Some(blobs)) => {
                let paths = sources_of(name).with_context(|| format!("{}: no entry in bench::provenance::MEASURED_SOURCES", file.display()))?;
                (rev.clone(), sources_note(&hash_of(blobs, paths)?, paths))
            }
            _ => {
                let [(_, commit), (_, sources)] = notes_for(name).with_context(|| file.display().to_string())?;
                (commit, sources)
            }
        };
        crate::tree::write_file_atomic(file, stamped(&text, &commit, &sources).as_bytes())?;
        println!("{}: measured at {}", file.display(), short(&commit));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        assert!(matches("regen*.tsv", "regen.tsv"));
        assert!(matches("regen*.tsv", "regen-gpu-host.tsv"));
        assert!(!matches("regen*.tsv", "regen.md"));
        assert!(matches("releases.tsv", "releases.tsv"));
        assert!(!matches("releases.tsv", "releases.tsv.bak"));
        assert_eq!(sources_of("flash-attn-speed-rocm.tsv").unwrap()[0], "generated/candle-flash-attn");
        assert!(sources_of("mystery.tsv").is_none());
    }

    #[test]
    fn stamping_replaces_only_its_own_lines() {
        let text = "# gpu: H100\n# commit: old\n# commits: kept\nsize\tus\n1\t2\n";
        let out = stamped(text, "abc", "sha256 00 of x");
        assert_eq!(out, "# commit: abc\n# sources: sha256 00 of x\n# gpu: H100\n# commits: kept\nsize\tus\n1\t2\n");
        assert_eq!(stamped(&out, "abc", "sha256 00 of x"), out);
    }

    #[test]
    fn the_hash_covers_exactly_the_files_under_the_paths() {
        let blobs: BTreeMap<String, String> = [("a/x", "1"), ("a/y", "2"), ("ab/z", "3"), ("b", "4")].into_iter().map(|(p, i)| (p.to_string(), i.to_string())).collect();
        let a = hash_of(&blobs, &["a"]).unwrap();
        let mut changed_elsewhere = blobs.clone();
        changed_elsewhere.insert("ab/z".into(), "9".into());
        changed_elsewhere.insert("b".into(), "9".into());
        assert_eq!(hash_of(&changed_elsewhere, &["a"]).unwrap(), a);
        let mut changed_under = blobs.clone();
        changed_under.insert("a/y".into(), "9".into());
        assert_ne!(hash_of(&changed_under, &["a"]).unwrap(), a);
        assert!(hash_of(&blobs, &["c"]).unwrap_err().to_string().contains("no tracked file under c"));
        // a path after `!` is left out: its change changes nothing
        let without_y = hash_of(&blobs, &["a", "!a/y"]).unwrap();
        assert_ne!(without_y, a);
        assert_eq!(hash_of(&changed_under, &["a", "!a/y"]).unwrap(), without_y);
    }

    #[test]
    fn a_file_stamped_now_is_current_and_one_of_other_sources_is_stale() {
        let root = workspace_root();
        let text = stamped_now("regen.tsv", "# tool: x\ncase\tmin_s\n").unwrap();
        let notes = Table::parse(&text).unwrap().notes;
        assert!(matches!(freshness(&root, "regen.tsv", &notes).unwrap(), Freshness::Current { .. }), "{notes:?}");
        let other = Table::parse(&text.replace("sha256 ", "sha256 0")).unwrap().notes;
        assert!(matches!(freshness(&root, "regen.tsv", &other).unwrap(), Freshness::Stale { .. }));
        let bare = Table::parse("case\tmin_s\n").unwrap().notes;
        assert!(matches!(freshness(&root, "regen.tsv", &bare).unwrap(), Freshness::Unknown { .. }));
        assert!(matches!(freshness(&root, "mystery.tsv", &notes).unwrap(), Freshness::Unknown { .. }));
    }

    #[test]
    fn every_result_file_has_sources_that_exist_and_is_stamped() {
        let root = workspace_root();
        let blobs = tracked_blobs(&root, None).unwrap();
        for (pattern, paths) in MEASURED_SOURCES {
            for p in *paths {
                let p = p.strip_prefix('!').unwrap_or(p);
                assert!(hash_of(&blobs, &[p]).is_ok(), "{pattern}: {p} has no tracked file");
            }
        }
        for entry in std::fs::read_dir(root.join("bench/results")).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if !name.ends_with(".tsv") {
                continue;
            }
            let table = Table::read(&root.join("bench/results").join(&name)).unwrap();
            let f = freshness(&root, &name, &table.notes).unwrap();
            assert!(!matches!(f, Freshness::Unknown { .. }), "bench/results/{name}: {f:?}");
        }
    }
}
