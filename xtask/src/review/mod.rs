//! `cargo xtask review`: a Candle bump as one report. Both inputs are regenerated in
//! memory (generated/ is not touched), with the translator recording where each output
//! line came from ([`translator::provenance`]); every generated hunk is then paired with the
//! upstream hunks its lines were translated from, and named by the rules that changed them.
//!
//! A generated hunk is:
//! * **paired** when a line of it came from a line an upstream hunk changed (its new lines
//!   from the new input, its removed lines from the old one);
//! * a **provenance line**: a generated file's first line, which names the release;
//! * **unexplained** otherwise: its lines came from upstream lines that did not change (a
//!   rule's decision changed, or facts of the whole tree), or from no line at all (the
//!   translator's own text). With the same translator on both sides, a bump gives none.
//!
//! Files of no single source (MANIFEST.toml, PARITY.md, NOTICE.md) are the coverage section.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use similar::{DiffOp, TextDiff};
use translator::provenance::LineProvenance;

use crate::regen::steps::{Provenance, StepOutput};
use crate::regen::upstream::{self, Upstream};
use crate::regen::{manifest, parity};
use crate::tree::{self, Tree};
use crate::workspace::workspace_root;

mod html;

#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// The Candle input before: a crates.io release (X.Y.Z) or a checkout's directory
    /// (default: the release upstream.toml pins).
    #[arg(long, value_name = "X.Y.Z|DIR")]
    from: Option<String>,
    /// The Candle input after: a crates.io release (X.Y.Z) or a checkout's directory (with
    /// --translator, the one input; default the pin).
    #[arg(long, value_name = "X.Y.Z|DIR", required_unless_present = "translator")]
    to: Option<String>,
    /// Review a translator change instead: the input (--to) through the translator at this
    /// commit, then through the working tree's; every generated hunk named by the rules on its lines.
    #[arg(long, value_name = "REV", conflicts_with = "from")]
    translator: Option<String>,
    /// Where review.md (the whole report), review.html (the same, side by side) and summary.md
    /// (for a pull request) go
    /// (default: target/review/FROM-TO).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// One side of the review: an input and what regen made of it (or why it stopped).
pub struct Side {
    pub label: String,
    /// Upstream files as the steps read them, by the path MANIFEST.toml gives them.
    pub inputs: BTreeMap<String, Vec<u8>>,
    pub translation: Result<(Vec<StepOutput>, Tree), String>,
    pub seconds: f64,
}

impl Side {
    fn provenance(&self) -> Provenance {
        match &self.translation {
            Ok((steps, _)) => steps.iter().flat_map(|s| s.provenance.clone()).collect(),
            Err(_) => Provenance::new(),
        }
    }
}

pub fn run(args: ReviewArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let (config, _) = upstream::load_config_and_text(&root)?;
    let from = args.from.clone().unwrap_or_else(|| config.candle.version.clone());
    let resolve = |spec: &str| -> Result<Upstream> {
        let dir = Path::new(spec);
        if dir.is_dir() {
            upstream::from_checkout(&config.candle, dir)
        } else {
            upstream::from_registry(&config.candle, spec)
        }
    };
    let to = args.to.clone().unwrap_or_else(|| config.candle.version.clone());
    let after = regenerate(&resolve(&to)?, &root, &config.kernels.static_library);
    let (before, from) = match &args.translator {
        Some(rev) => (translator_side(&root, rev, &to, &after)?, format!("translator-{rev}")),
        None => (regenerate(&resolve(&from)?, &root, &config.kernels.static_library), from),
    };
    if let Err(e) = &before.translation {
        bail!("regen stops on the input before ({}), so there is nothing to compare with: {e}", before.label);
    }
    let start = Instant::now();
    let review = Review::pair(&before, &after);
    let pairing = start.elapsed().as_secs_f64();
    let name = format!("{}-{}", slug(&from), slug(&to));
    let out = args.out.clone().unwrap_or_else(|| root.join("target/review").join(name));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let timing = format!("regen of the input before: {:.1} s, after: {:.1} s, pairing: {:.2} s", before.seconds, after.seconds, pairing);
    tree::write_file_atomic(&out.join("review.md"), review.markdown(&before, &after, &timing).as_bytes())?;
    tree::write_file_atomic(&out.join("review.html"), html::render(&review, &before, &after, &timing).as_bytes())?;
    let summary = review.summary(&before, &after, &timing);
    tree::write_file_atomic(&out.join("summary.md"), summary.as_bytes())?;
    print!("{summary}");
    println!("\nwhole report: {} (and review.html beside it)", tree::shown(&out.join("review.md")).display());
    Ok(ExitCode::SUCCESS)
}

fn slug(spec: &str) -> String {
    let last = Path::new(spec).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| spec.to_string());
    last.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect()
}

/// Regenerates `upstream` in memory, recording provenance, as regen would write it into
/// generated/.
pub fn regenerate(upstream: &Upstream, root: &Path, static_library: &[String]) -> Side {
    let start = Instant::now();
    translator::provenance::record(true);
    let translation = crate::regen::translate(upstream, root, &root.join("generated"), static_library).map_err(|e| format!("{e:#}"));
    let inputs = match &translation {
        Ok((steps, _)) => steps.iter().flat_map(|s| s.inputs.iter().cloned()).collect(),
        // regen stopped: every file of the crates it reads
        Err(_) => upstream.crates().iter().flat_map(|c| crate_files(&c.name, &c.root)).collect(),
    };
    Side { label: upstream.describe(), inputs, translation, seconds: start.elapsed().as_secs_f64() }
}

/// The input of `after` through the translator at commit `rev`: its tree checked out under
/// target/review/translator/, its `regen` run there into its own generated/ (so that paths
/// to the hand-written crates are what they would be here), read back. No provenance:
/// that side's hunks are named through the working tree's.
fn translator_side(root: &Path, rev: &str, input: &str, after: &Side) -> Result<Side> {
    let start = Instant::now();
    let work = root.join("target/review/translator");
    let checkout = work.join("tree");
    if checkout.exists() {
        std::fs::remove_dir_all(&checkout).with_context(|| format!("removing {}", checkout.display()))?;
    }
    std::fs::create_dir_all(&checkout)?;
    let archive = std::process::Command::new("git").args(["archive", "--format=tar", rev]).current_dir(root).output().context("running git archive")?;
    if !archive.status.success() {
        bail!("--translator {rev}: git archive failed: {}", String::from_utf8_lossy(&archive.stderr).trim());
    }
    let mut untar = std::process::Command::new("tar").arg("-x").current_dir(&checkout).stdin(std::process::Stdio::piped()).spawn().context("running tar")?;
    std::io::Write::write_all(untar.stdin.as_mut().context("tar's stdin")?, &archive.stdout)?;
    if !untar.wait()?.success() {
        bail!("--translator {rev}: unpacking its tree failed");
    }
    let source = if Path::new(input).is_dir() { vec!["--candle-src".to_string(), std::fs::canonicalize(input)?.display().to_string()] } else { vec!["--candle-version".to_string(), input.to_string()] };
    eprintln!("== regen with the translator at {rev} (its xtask built in {})", tree::shown(&work.join("target")).display());
    let status = std::process::Command::new("cargo")
        .args(["run", "--quiet", "--package", "xtask", "--", "regen"])
        .args(&source)
        .arg("--out")
        .arg(checkout.join("generated"))
        .env("CARGO_TARGET_DIR", work.join("target"))
        .current_dir(&checkout)
        // its run report is this run's regen report again; its errors are shown
        .stdout(std::process::Stdio::null())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("--translator {rev}: its regen of {input} failed (above)");
    }
    let tree = tree::read_tree(&checkout.join("generated"))?.into_iter().filter(|(p, _)| !p.ends_with("/Cargo.lock")).collect();
    Ok(Side { label: format!("{input} through the translator at {rev}"), inputs: after.inputs.clone(), translation: Ok((Vec::new(), tree)), seconds: start.elapsed().as_secs_f64() })
}

fn crate_files(name: &str, root: &Path) -> Vec<(String, Vec<u8>)> {
    tree::read_tree(root).unwrap_or_default().into_iter().map(|(p, c)| (format!("{name}/{p}"), c)).collect()
}

/// A changed region of a file: lines `old` (0-based, of the file before) became `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old: Range<usize>,
    pub new: Range<usize>,
    /// The hunk as unified-diff lines (`-`, `+`), without context.
    pub text: String,
}

/// The hunks of a line diff of two texts (no context: each run of changed lines).
pub fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(old, new);
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out: Vec<Hunk> = Vec::new();
    for op in diff.ops() {
        let (o, n) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, new_index } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert { old_index, new_index, new_len } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => (old_index..old_index + old_len, new_index..new_index + new_len),
        };
        // adjacent ops (a delete then an insert) are one hunk
        if let Some(last) = out.last_mut().filter(|h| h.old.end == o.start && h.new.end == n.start) {
            last.old.end = o.end;
            last.new.end = n.end;
        } else {
            out.push(Hunk { old: o, new: n, text: String::new() });
        }
    }
    for h in &mut out {
        for l in &old_lines[h.old.clone()] {
            let _ = write!(h.text, "-{}", with_newline(l));
        }
        for l in &new_lines[h.new.clone()] {
            let _ = write!(h.text, "+{}", with_newline(l));
        }
    }
    out
}

fn with_newline(l: &str) -> String {
    if l.ends_with('\n') {
        l.to_string()
    } else {
        format!("{l}\n")
    }
}

/// What one generated hunk is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Upstream hunks of `input` (indexes into its [`UpstreamFile::hunks`]).
    Paired { input: String, hunks: Vec<usize> },
    /// The file's first line: which release it was generated from.
    ProvenanceLine,
    /// The file of `input` went from printed by the translator to copied as upstream wrote it
    /// (no rule applies to it any more), or back: every hunk of it follows from that.
    WholeFile { input: String, now_copied: bool },
    /// No upstream hunk: lines of unchanged upstream lines of `input` (when known), or of none.
    Unexplained { input: Option<String> },
}

/// A generated file's hunk, what caused it, and the rules that changed its lines.
#[derive(Debug, Clone)]
pub struct GeneratedHunk {
    pub path: String,
    pub hunk: Hunk,
    pub cause: Cause,
    pub rules: BTreeMap<&'static str, usize>,
}

/// An upstream file that changed, with its hunks.
#[derive(Debug, Clone)]
pub struct UpstreamFile {
    pub path: String,
    pub hunks: Vec<Hunk>,
}

/// The whole pairing.
pub struct Review {
    pub upstream: Vec<UpstreamFile>,
    pub generated: Vec<GeneratedHunk>,
    /// Generated files added and removed, and changed files that are not text.
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// The files of no single source: the coverage section shows them.
const COVERAGE_FILES: &[&str] = &[manifest::MANIFEST, parity::PARITY, manifest::NOTICE];

impl Review {
    pub fn pair(before: &Side, after: &Side) -> Review {
        let empty = Tree::new();
        let old_tree = before.translation.as_ref().map(|(_, t)| t).unwrap_or(&empty);
        let new_tree = after.translation.as_ref().map(|(_, t)| t).unwrap_or(&empty);
        let text = |b: Option<&Vec<u8>>| String::from_utf8_lossy(b.map(|v| v.as_slice()).unwrap_or_default()).into_owned();

        let paths: BTreeSet<&String> = before.inputs.keys().chain(after.inputs.keys()).collect();
        let upstream: Vec<UpstreamFile> = paths
            .into_iter()
            .filter(|p| before.inputs.get(*p) != after.inputs.get(*p))
            .map(|p| UpstreamFile { path: p.clone(), hunks: hunks(&text(before.inputs.get(p)), &text(after.inputs.get(p))) })
            .collect();
        let by_input: BTreeMap<&str, &UpstreamFile> = upstream.iter().map(|f| (f.path.as_str(), f)).collect();

        if after.translation.is_err() {
            // nothing generated to compare: the report is the error and the upstream hunks
            return Review { upstream, generated: Vec::new(), added: Vec::new(), removed: Vec::new() };
        }
        let (old_prov, new_prov) = (before.provenance(), after.provenance());
        let diff = tree::compare(old_tree, new_tree);
        let mut generated = Vec::new();
        // (an added or removed file is one hunk: all its lines)
        let files = diff.changed.iter().chain(&diff.added).chain(&diff.removed);
        for path in files.filter(|p| !COVERAGE_FILES.contains(&p.as_str())) {
            let (old_p, new_p) = (old_prov.get(path), new_prov.get(path));
            for hunk in hunks(&text(old_tree.get(path)), &text(new_tree.get(path))) {
                generated.push(explain(path, hunk, old_p, new_p, &by_input));
            }
        }
        // a package manifest, a license: the upstream file of the same name, at the file's level
        for g in generated.iter_mut().filter(|g| matches!(g.cause, Cause::Unexplained { input: None })) {
            if let Some(input) = same_file_upstream(&g.path, &by_input) {
                let all = (0..by_input[input.as_str()].hunks.len()).collect();
                g.cause = Cause::Paired { input, hunks: all };
            }
        }
        Review { upstream, generated, added: diff.added, removed: diff.removed }
    }

    pub fn unexplained(&self) -> impl Iterator<Item = &GeneratedHunk> {
        self.generated.iter().filter(|g| matches!(g.cause, Cause::Unexplained { .. }))
    }

    fn paired_to<'a>(&'a self, input: &'a str, index: usize) -> impl Iterator<Item = &'a GeneratedHunk> {
        self.generated.iter().filter(move |g| matches!(&g.cause, Cause::Paired { input: i, hunks } if i == input && hunks.contains(&index)))
    }

    fn counts(&self) -> (usize, usize, usize, usize) {
        let paired = self.generated.iter().filter(|g| matches!(g.cause, Cause::Paired { .. })).count();
        let provenance = self.generated.iter().filter(|g| g.cause == Cause::ProvenanceLine).count();
        let whole = self.generated.iter().filter(|g| matches!(g.cause, Cause::WholeFile { .. })).count();
        let unexplained = self.unexplained().count();
        let upstream_hunks = self.upstream.iter().map(|f| f.hunks.len()).sum();
        (upstream_hunks, paired + whole, provenance, unexplained)
    }

    /// The short report, for a pull request's description.
    pub fn summary(&self, before: &Side, after: &Side, timing: &str) -> String {
        let (upstream_hunks, paired, provenance, unexplained) = self.counts();
        let files: BTreeSet<&str> = self.generated.iter().map(|g| g.path.as_str()).collect();
        let mut s = String::new();
        let _ = writeln!(s, "## Review: {} → {}\n", before.label, after.label);
        if let Err(e) = &after.translation {
            let _ = writeln!(s, "**regen stops on the new input:** {e}\n");
        }
        let _ = writeln!(s, "- upstream: {} files changed, {upstream_hunks} hunks", self.upstream.len());
        let _ = writeln!(s, "- generated: {} files changed ({} hunks), of which {} added and {} removed", files.len(), self.generated.len(), self.added.len(), self.removed.len());
        let whole: BTreeSet<&str> = self.generated.iter().filter_map(|g| matches!(g.cause, Cause::WholeFile { .. }).then_some(g.path.as_str())).collect();
        let _ = writeln!(s, "  - paired with the upstream hunks they were translated from: {paired}");
        if !whole.is_empty() {
            let n = self.generated.iter().filter(|g| matches!(g.cause, Cause::WholeFile { .. })).count();
            let _ = writeln!(s, "    (of which {n} in {} files whose form changed: printed by the translator before and copied as upstream wrote it now, or back)", whole.len());
        }
        let _ = writeln!(s, "  - provenance lines (the release each file names): {provenance}");
        if unexplained == 0 {
            let _ = writeln!(s, "  - explained by no upstream hunk: none");
        } else {
            let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
            for g in self.unexplained() {
                if g.rules.is_empty() {
                    *by_rule.entry("(no rule: the translator's own text, or facts of the whole tree)").or_default() += 1;
                }
                for r in g.rules.keys() {
                    *by_rule.entry(r).or_default() += 1;
                }
            }
            let named: Vec<String> = by_rule.iter().map(|(r, n)| format!("{r} {n}")).collect();
            let _ = writeln!(s, "  - **explained by no upstream hunk: {unexplained}** (by rule: {})", named.join(", "));
        }
        let untouched = self.upstream.iter().map(|f| (0..f.hunks.len()).filter(|&i| self.paired_to(&f.path, i).next().is_none()).count()).sum::<usize>();
        let _ = writeln!(s, "- upstream hunks with no generated change: {untouched} (code the ROCm side carries as it is, or does not carry)");
        let rule_changes = rule_count_changes(before, after);
        if !rule_changes.is_empty() {
            let _ = writeln!(s, "- rule counts: {}", rule_changes.iter().map(|(step, rule, a, b)| format!("{step}/{rule} {a}→{b}")).collect::<Vec<_>>().join(", "));
        }
        let (gone, new) = gap_changes(before, after);
        let _ = writeln!(s, "- left out on ROCm (PARITY.md): {} newly, {} no longer", new.len(), gone.len());
        let _ = writeln!(s, "- {timing}");
        s
    }

    /// The whole report.
    pub fn markdown(&self, before: &Side, after: &Side, timing: &str) -> String {
        let mut s = format!("# Review of a Candle bump\n\n{}\n", self.summary(before, after, timing).replacen("## Review", "Summary of", 1));
        s.push_str("## What changed in coverage\n\n");
        let (gone, new) = gap_changes(before, after);
        for (what, list) in [("Newly left out on ROCm", &new), ("No longer left out", &gone)] {
            let _ = writeln!(s, "{what}: {}\n", if list.is_empty() { "none".to_string() } else { String::new() });
            for g in list {
                let _ = writeln!(s, "- `{}:{}` {} (feature `{}`): {}", g.file, g.line, g.construct, g.feature, g.reason);
            }
            if !list.is_empty() {
                s.push('\n');
            }
        }
        let kernels = |list: &[String]| list.iter().filter(|p| p.starts_with("kernels/")).cloned().collect::<Vec<_>>();
        let _ = writeln!(s, "Generated kernel files added: {}; removed: {}\n", names_or_none(&kernels(&self.added)), names_or_none(&kernels(&self.removed)));
        let (new_launchers, gone_launchers) = launcher_changes(before, after);
        let _ = writeln!(s, "Launchers (`kernels/ffi.rs`) added: {}; removed: {}\n", names_or_none(&new_launchers), names_or_none(&gone_launchers));
        let others: Vec<String> = self.added.iter().chain(&self.removed).filter(|p| !p.starts_with("kernels/")).cloned().collect();
        if !others.is_empty() {
            let _ = writeln!(s, "Other generated files added or removed: {}\n", names_or_none(&others));
        }
        s.push_str("Rule counts (MANIFEST.toml) that changed:\n\n");
        let changes = rule_count_changes(before, after);
        if changes.is_empty() {
            s.push_str("none\n\n");
        } else {
            s.push_str("| step | rule | before | after |\n|---|---|---|---|\n");
            for (step, rule, a, b) in changes {
                let _ = writeln!(s, "| {step} | {rule} | {a} | {b} |");
            }
            s.push('\n');
        }
        let old_parity = before.translation.as_ref().ok().and_then(|(_, t)| t.get(parity::PARITY));
        let new_parity = after.translation.as_ref().ok().and_then(|(_, t)| t.get(parity::PARITY));
        if let (Some(a), Some(b)) = (old_parity, new_parity) {
            if a != b {
                let _ = writeln!(s, "PARITY.md:\n\n```diff\n{}```\n", tree::unified_diff(parity::PARITY, a, b, 400));
            }
        }

        if let Err(e) = &after.translation {
            s.push_str("## New errors\n\n");
            let _ = writeln!(s, "regen stops on the new input: `{e}`\n");
            if let Some((file, line)) = error_location(e) {
                for f in self.upstream.iter().filter(|f| f.path.ends_with(&file)) {
                    for (i, h) in f.hunks.iter().enumerate().filter(|(_, h)| h.new.contains(&(line - 1)) || (h.new.is_empty() && h.new.start == line - 1)) {
                        let _ = writeln!(s, "Introduced by upstream hunk [{}]({}):\n\n```diff\n{}```\n", i + 1, anchor_ref(&f.path, i), h.text);
                    }
                }
            }
        }

        s.push_str("## Per upstream file\n\n");
        for f in &self.upstream {
            let _ = writeln!(s, "### `{}`\n", f.path);
            for (i, h) in f.hunks.iter().enumerate() {
                let _ = writeln!(s, "<a id=\"{}\"></a>\n**hunk {}** (lines {} → {})\n\n```diff\n{}```\n", anchor(&f.path, i), i + 1, lines(&h.old), lines(&h.new), h.text);
                let produced: Vec<&GeneratedHunk> = self.paired_to(&f.path, i).collect();
                if produced.is_empty() {
                    s.push_str("produced no generated change\n\n");
                }
                for g in produced {
                    let _ = writeln!(s, "→ `generated/{}` lines {} → {}{}\n\n```diff\n{}```\n", g.path, lines(&g.hunk.old), lines(&g.hunk.new), rules_text(&g.rules), g.hunk.text);
                }
            }
            let reformed: Vec<&GeneratedHunk> = self.generated.iter().filter(|g| matches!(&g.cause, Cause::WholeFile { input, .. } if *input == f.path)).collect();
            if let Some(Cause::WholeFile { now_copied, .. }) = reformed.first().map(|g| &g.cause) {
                let form = if *now_copied { "copied as upstream wrote it: no rule applies to it any more" } else { "printed by the translator: a rule applies to it now" };
                let _ = writeln!(s, "The generated file `generated/{}` is now {form}. Its {} hunks follow from the hunks above:\n", reformed[0].path, reformed.len());
                s.push_str("<details><summary>the whole file's diff</summary>\n\n```diff\n");
                for g in &reformed {
                    s.push_str(&g.hunk.text);
                }
                s.push_str("```\n\n</details>\n\n");
            }
        }
        s.push_str("## Generated hunks no upstream hunk explains\n\n");
        let mut unexplained: Vec<&GeneratedHunk> = self.unexplained().collect();
        if unexplained.is_empty() {
            s.push_str("None: every generated change comes from an upstream change (or is a file's provenance line).\n");
        } else {
            // by the rules on their lines: one rule's change reads as one group
            unexplained.sort_by_key(|g| (g.rules.keys().copied().collect::<Vec<_>>(), g.path.clone(), g.hunk.new.start));
            s.push_str("By the rules on their lines:\n\n");
            let mut groups: BTreeMap<String, usize> = BTreeMap::new();
            for g in &unexplained {
                *groups.entry(rule_names(&g.rules)).or_default() += 1;
            }
            for (rules, n) in &groups {
                let _ = writeln!(s, "- {rules}: {n}");
            }
            s.push('\n');
        }
        for g in unexplained {
            let from = match &g.cause {
                Cause::Unexplained { input: Some(i) } => format!(", from unchanged lines of `{i}`"),
                _ => ", from no upstream line".to_string(),
            };
            let _ = writeln!(s, "`generated/{}` lines {} → {}{from}{}\n\n```diff\n{}```\n", g.path, lines(&g.hunk.old), lines(&g.hunk.new), rules_text(&g.rules), g.hunk.text);
        }
        s
    }
}

/// Pairs one generated hunk of `path` through the provenance of both sides.
fn explain(path: &str, hunk: Hunk, old_p: Option<&(String, LineProvenance)>, new_p: Option<&(String, LineProvenance)>, upstream: &BTreeMap<&str, &UpstreamFile>) -> GeneratedHunk {
    let sources = |p: Option<&(String, LineProvenance)>, range: &Range<usize>| -> BTreeSet<u32> {
        p.map(|(_, p)| range.clone().filter_map(|l| p.sources.get(l)).flatten().copied().collect()).unwrap_or_default()
    };
    let (old_src, new_src) = (sources(old_p, &hunk.old), sources(new_p, &hunk.new));
    let mut rules = BTreeMap::new();
    for (p, range) in [(old_p, &hunk.old), (new_p, &hunk.new)] {
        if let (Some((_, p)), false) = (p, range.is_empty()) {
            for (r, n) in p.rules_on(range.start + 1..=range.end) {
                *rules.entry(r).or_default() += n;
            }
        }
    }
    // lines only removed, and the side before has no provenance (another translator's): the
    // rules on the lines around the place they were removed from
    if let (true, None, Some((_, p))) = (hunk.new.is_empty(), old_p, new_p) {
        for (r, n) in p.rules_on(hunk.new.start.max(1)..=hunk.new.start + 1) {
            *rules.entry(r).or_default() += n;
        }
    }
    let input = new_p.or(old_p).map(|(i, _)| i.clone());
    // a file's first line, of no source on either side: the release it names
    let provenance_line = hunk.old == (0..1) && hunk.new == (0..1) && old_src.is_empty() && new_src.is_empty();
    let cause = match (old_p, new_p, input.as_deref().and_then(|i| upstream.get(i))) {
        // printed before and copied now (or back): the whole file changed form
        (Some((_, a)), Some((_, b)), Some(f)) if printed(a) != printed(b) => Cause::WholeFile { input: f.path.clone(), now_copied: !printed(b) },
        _ if provenance_line => Cause::ProvenanceLine,
        (_, _, Some(f)) => {
            // 1-based source lines against 0-based hunk ranges
            let hit: Vec<usize> = f
                .hunks
                .iter()
                .enumerate()
                .filter(|(_, h)| new_src.iter().any(|&l| h.new.contains(&(l as usize).wrapping_sub(1))) || old_src.iter().any(|&l| h.old.contains(&(l as usize).wrapping_sub(1))))
                .map(|(i, _)| i)
                .collect();
            if hit.is_empty() { Cause::Unexplained { input } } else { Cause::Paired { input: f.path.clone(), hunks: hit } }
        }
        _ => Cause::Unexplained { input },
    };
    GeneratedHunk { path: path.to_string(), hunk, cause, rules }
}

/// Whether a file was printed by the translator (its first line, the provenance comment, is
/// its own text) rather than copied as upstream wrote it.
fn printed(p: &LineProvenance) -> bool {
    p.sources.first().is_some_and(|s| s.is_empty())
}

/// The upstream file a generated file of no line provenance stands for: a package's
/// `Cargo.toml`, a license (`upstream-licenses/CRATE/NAME`).
fn same_file_upstream(path: &str, upstream: &BTreeMap<&str, &UpstreamFile>) -> Option<String> {
    let candidate = match path.strip_prefix("upstream-licenses/") {
        Some(rest) => rest.to_string(),
        None => path.to_string(),
    };
    upstream.contains_key(candidate.as_str()).then_some(candidate)
}

/// `(step, rule, before, after)` for every rule count that differs, as each side's
/// MANIFEST.toml records them.
fn rule_count_changes(before: &Side, after: &Side) -> Vec<(String, String, usize, usize)> {
    let counts = |side: &Side| -> BTreeMap<(String, String), usize> {
        let Some(text) = side.translation.as_ref().ok().and_then(|(_, t)| t.get(manifest::MANIFEST)) else { return BTreeMap::new() };
        let table: toml::Table = String::from_utf8_lossy(text).parse().unwrap_or_default();
        let steps = table.get("rule_counts").and_then(|r| r.as_table()).cloned().unwrap_or_default();
        steps
            .iter()
            .flat_map(|(step, rules)| rules.as_table().into_iter().flatten().map(move |(r, n)| ((step.clone(), r.clone()), n.as_integer().unwrap_or(0) as usize)))
            .collect()
    };
    let (a, b) = (counts(before), counts(after));
    let keys: BTreeSet<&(String, String)> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| (k.0.clone(), k.1.clone(), a.get(k).copied().unwrap_or(0), b.get(k).copied().unwrap_or(0)))
        .collect()
}

/// The launchers `kernels/ffi.rs` declares (`fn NAME(` in its extern blocks) only after, and
/// only before.
fn launcher_changes(before: &Side, after: &Side) -> (Vec<String>, Vec<String>) {
    let names = |side: &Side| -> BTreeSet<String> {
        let Some(text) = side.translation.as_ref().ok().and_then(|(_, t)| t.get("kernels/ffi.rs")) else { return BTreeSet::new() };
        let Ok(file) = syn::parse_file(&String::from_utf8_lossy(text)) else { return BTreeSet::new() };
        file.items
            .iter()
            .filter_map(|i| match i {
                syn::Item::ForeignMod(m) => Some(m.items.iter().filter_map(|f| match f {
                    syn::ForeignItem::Fn(f) => Some(f.sig.ident.to_string()),
                    _ => None,
                })),
                _ => None,
            })
            .flatten()
            .collect()
    };
    let (a, b) = (names(before), names(after));
    (b.difference(&a).cloned().collect(), a.difference(&b).cloned().collect())
}

/// The gaps (PARITY.md's items left out on ROCm) only before, and only after; compared
/// without their line numbers.
fn gap_changes(before: &Side, after: &Side) -> (Vec<translator::backend::Gap>, Vec<translator::backend::Gap>) {
    let gaps = |side: &Side| -> Vec<translator::backend::Gap> {
        match &side.translation {
            Ok((steps, _)) => steps.iter().flat_map(|s| s.gaps.clone()).collect(),
            Err(_) => Vec::new(),
        }
    };
    let (a, b) = (gaps(before), gaps(after));
    let key = |g: &translator::backend::Gap| (g.file.clone(), g.construct.clone(), g.feature.clone());
    let (ka, kb): (BTreeSet<_>, BTreeSet<_>) = (a.iter().map(key).collect(), b.iter().map(key).collect());
    (a.iter().filter(|g| !kb.contains(&key(g))).cloned().collect(), b.iter().filter(|g| !ka.contains(&key(g))).cloned().collect())
}

/// `file:line` of a translation error's message (`candle-core: src/x.rs:12: ...`).
fn error_location(message: &str) -> Option<(String, usize)> {
    message.split_whitespace().find_map(|word| {
        let mut parts = word.trim_end_matches(':').rsplitn(2, ':');
        let line: usize = parts.next()?.parse().ok()?;
        let file = parts.next()?;
        (line > 0 && [".rs", ".cu", ".cuh", ".toml"].iter().any(|e| file.ends_with(e))).then(|| (file.to_string(), line))
    })
}

fn lines(r: &Range<usize>) -> String {
    match r.len() {
        0 => format!("(none, after {})", r.start),
        1 => format!("{}", r.start + 1),
        _ => format!("{}-{}", r.start + 1, r.end),
    }
}

/// The rules' names, or what no rule means.
fn rule_names(rules: &BTreeMap<&'static str, usize>) -> String {
    if rules.is_empty() {
        "no rule (the translator's own text, or facts of the whole tree)".to_string()
    } else {
        rules.keys().copied().collect::<Vec<_>>().join(" + ")
    }
}

fn rules_text(rules: &BTreeMap<&'static str, usize>) -> String {
    if rules.is_empty() {
        return ", no rule changed these lines".to_string();
    }
    format!(", rules: {}", rules.iter().map(|(r, n)| format!("{r} ×{n}")).collect::<Vec<_>>().join(", "))
}

fn names_or_none(list: &[String]) -> String {
    if list.is_empty() {
        "none".to_string()
    } else {
        list.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
    }
}

/// The anchor of an upstream hunk: `u-`, the path's [`path_slug`], then its number.
pub fn anchor(path: &str, index: usize) -> String {
    format!("u-{}-{}", path_slug(path), index + 1)
}

/// A path's letters and digits, lowercased, each other character a `-`.
fn path_slug(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

fn anchor_ref(path: &str, index: usize) -> String {
    format!("#{}", anchor(path, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_are_runs_of_changed_lines() {
        let h = hunks("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n");
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].old.clone(), h[0].new.clone(), h[0].text.as_str()), (1..2, 1..2, "-b\n+B\n"));
        assert_eq!((h[1].old.clone(), h[1].new.clone(), h[1].text.as_str()), (4..4, 4..5, "+e\n"));
    }

    #[test]
    fn error_locations_are_read_from_the_message() {
        assert_eq!(error_location("candle-core: src/x.rs:12: Rust source: does not parse"), Some(("src/x.rs".into(), 12)));
        assert_eq!(error_location("translation failed: affine.cu:3: `asm`: no rule"), Some(("affine.cu".into(), 3)));
        assert_eq!(error_location("nothing here"), None);
    }

    /// A copy of a pinned-release crate from the cargo registry in `dir`, as read by regen.
    fn copied_crate(dir: &Path, name: &str) -> crate::regen::upstream::CrateSource {
        let version = upstream::load_config(&workspace_root()).unwrap().candle.version;
        let from = upstream::registry_crate(name, &version).unwrap();
        let to = dir.join(name);
        tree::write_atomic(&tree::read_tree(&from).unwrap(), &to).unwrap();
        upstream::read_crate(&to, None).unwrap()
    }

    fn upstream_of(dir: &Path) -> Upstream {
        let c = |name: &str| copied_crate(dir, name);
        Upstream { origin: upstream::Origin::CratesIo, kernels: c("candle-kernels"), core: c("candle-core"), nn: c("candle-nn"), flash_attn: None, transformers: None, examples: None }
    }

    fn edit(path: &Path, from: &str, to: &str) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(from), "{} has no {from:?}", path.display());
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    /// Both sides regenerated: the pinned release's kernels, candle-core and candle-nn, and the
    /// same copied again with `edit_after` applied.
    fn edited_sides(edit_after: impl FnOnce(&Upstream)) -> (Side, Side) {
        let root = workspace_root();
        let (config, _) = upstream::load_config_and_text(&root).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let before = upstream_of(&dir.path().join("before"));
        let after = upstream_of(&dir.path().join("after"));
        edit_after(&after);
        (regenerate(&before, &root, &config.kernels.static_library), regenerate(&after, &root, &config.kernels.static_library))
    }

    /// One kernel line and one backend function edited upstream: exactly their hunks, each
    /// paired with the generated hunks it caused, and nothing else.
    #[test]
    fn a_synthetic_upstream_edit_gives_exactly_its_pairs() {
        let (a, b) = edited_sides(|after| {
            // a kernel line: affine's multiply-add becomes a fused one
            edit(&after.kernels.root.join("src/affine.cu"), "affine_f32, x * mul + add", "affine_f32, fma(x, mul, add)");
            // a backend function: a new method of the CUDA device, whose ROCm twin is mirrored
            edit(&after.core.root.join("src/cuda_backend/device.rs"), "impl CudaDevice {", "impl CudaDevice {\n    pub fn review_probe(&self) -> CudaDevice {\n        self.clone()\n    }\n");
        });
        let review = Review::pair(&a, &b);
        let changed: Vec<(&str, usize)> = review.upstream.iter().map(|f| (f.path.as_str(), f.hunks.len())).collect();
        assert_eq!(changed, [("candle-core/src/cuda_backend/device.rs", 1), ("candle-kernels/src/affine.cu", 1)]);
        let pairs: Vec<(&str, &Cause)> = review.generated.iter().map(|g| (g.path.as_str(), &g.cause)).collect();
        let paired = |input: &str| Cause::Paired { input: input.to_string(), hunks: vec![0] };
        let (device, affine) = (paired("candle-core/src/cuda_backend/device.rs"), paired("candle-kernels/src/affine.cu"));
        assert_eq!(pairs, [("candle-core/src/cuda_backend/device.rs", &device), ("candle-core/src/rocm_backend/device.rs", &device), ("kernels/affine.hip", &affine)]);
        let twin = &review.generated[1];
        assert!(twin.hunk.text.contains("pub fn review_probe(&self) -> RocmDevice"), "{}", twin.hunk.text);
        assert!(twin.rules.contains_key("identifiers") || twin.rules.contains_key("words"), "{:?}", twin.rules);
        assert!(review.generated[2].hunk.text.contains("+") && review.generated[2].hunk.text.contains("fma(x, mul, add)"));
        let summary = review.summary(&a, &b, "t");
        assert!(summary.contains("explained by no upstream hunk: none"), "{summary}");
    }

    /// The review of 0.11.0 → 0.11.1, made once for the tests that read it.
    fn bump() -> &'static (Side, Side, Review) {
        static BUMP: std::sync::OnceLock<(Side, Side, Review)> = std::sync::OnceLock::new();
        BUMP.get_or_init(|| {
            let root = workspace_root();
            let (config, _) = upstream::load_config_and_text(&root).unwrap();
            let side = |v: &str| regenerate(&upstream::from_registry(&config.candle, v).unwrap(), &root, &config.kernels.static_library);
            let (a, b) = (side("0.11.0"), side("0.11.1"));
            let review = Review::pair(&a, &b);
            (a, b, review)
        })
    }

    /// The bump the docs show: every generated hunk is paired, a provenance line, or named.
    #[test]
    fn every_hunk_of_0_11_0_to_0_11_1_is_paired_or_named() {
        let (a, b, review) = bump();
        assert!(review.generated.len() > 900, "{}", review.generated.len());
        let unexplained: Vec<String> = review.unexplained().map(|g| format!("{} {:?}", g.path, g.hunk.new)).collect();
        assert!(unexplained.is_empty(), "{unexplained:?}");
        // the report links every upstream hunk by an anchor of its own
        let md = review.markdown(a, b, "t");
        let anchors: Vec<&str> = md.match_indices("<a id=\"").map(|(i, _)| &md[i + 7..i + 7 + md[i + 7..].find('"').unwrap()]).collect();
        let unique: BTreeSet<&&str> = anchors.iter().collect();
        assert_eq!(anchors.len(), review.upstream.iter().map(|f| f.hunks.len()).sum::<usize>());
        assert_eq!(unique.len(), anchors.len());
    }

    /// review.html in a real headless browser (Chromium): it loads without a script error,
    /// and its own check finds every in-page link resolved (one per file and one per hunk).
    /// Without Chromium on PATH it says so and checks nothing (CI installs it).
    #[test]
    fn the_html_report_loads_in_a_headless_browser_with_every_anchor_resolved() {
        let Some(browser) = ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|b| std::process::Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success())) else {
            eprintln!("SKIPPED: no Chromium on PATH (apt-get install chromium): review.html was not loaded in a browser");
            return;
        };
        let (a, b, review) = bump();
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("review.html");
        std::fs::write(&page, html::render(review, a, b, "t")).unwrap();
        let out = std::process::Command::new(browser)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--dump-dom"])
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap();
        let (dom, log) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let console_errors: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE") && (l.contains("Uncaught") || l.contains("Error"))).collect();
        assert!(console_errors.is_empty(), "{console_errors:?}");
        let links = review.upstream.len() + review.upstream.iter().map(|f| f.hunks.len()).sum::<usize>();
        assert!(dom.contains(&format!("data-anchors=\"ok {links}\"")), "{}", dom.lines().find(|l| l.contains("data-anchors")).unwrap_or("no data-anchors: the page's script did not run"));
    }

    /// An upstream edit regen cannot translate: the report names the error and the hunk
    /// that brought its line.
    #[test]
    fn an_input_regen_stops_on_is_reported_with_the_hunk_that_brought_it() {
        let ptx = "__device__ int lead(int x) {\n  int l; asm(\"bfind.u32 %0, %1;\" : \"=r\"(l) : \"r\"(x)); return l;\n}\n";
        let (a, b) = edited_sides(|after| edit(&after.kernels.root.join("src/affine.cu"), "#define AFFINE_OP", &format!("{ptx}#define AFFINE_OP")));
        assert!(b.translation.is_err());
        let review = Review::pair(&a, &b);
        assert!(review.generated.is_empty());
        let md = review.markdown(&a, &b, "t");
        let errors = &md[md.find("## New errors").expect("a New errors section")..md.find("## Per upstream file").unwrap()];
        assert!(errors.contains("affine.cu:"), "{errors}");
        assert!(errors.contains("Introduced by upstream hunk [1](#u-candle-kernels-src-affine-cu-1)") && errors.contains("+  int l; asm("), "{errors}");
        assert!(review.summary(&a, &b, "t").contains("regen stops on the new input"));
    }

    /// A translator change on the same input, as `--translator` reviews it: the side before
    /// is another translator's tree (no provenance of its own). Here that tree is the working
    /// tree's output with the row `__nv_bfloat162 -> candle_bf16x2` of rule `names` spelled
    /// otherwise: every hunk it gives is named `names`, and none comes from an upstream hunk.
    #[test]
    fn a_translator_change_shows_up_under_its_rule() {
        let (_, after, _) = bump();
        let (_, tree) = after.translation.as_ref().unwrap();
        let mut old = tree.clone();
        let mut edited = 0;
        for (path, bytes) in old.iter_mut().filter(|(p, _)| p.starts_with("kernels/") && (p.ends_with(".hip") || p.ends_with(".cuh"))) {
            let text = String::from_utf8_lossy(bytes).into_owned();
            if text.contains("candle_bf16x2") && !path.contains("candle_hip_compat") {
                *bytes = text.replace("candle_bf16x2", "candle_bfloat16x2").into_bytes();
                edited += 1;
            }
        }
        assert!(edited > 0);
        let before = Side { label: "another translator".into(), inputs: after.inputs.clone(), translation: Ok((Vec::new(), old)), seconds: 0.0 };
        let review = Review::pair(&before, after);
        assert!(review.upstream.is_empty());
        assert!(!review.generated.is_empty());
        for g in &review.generated {
            assert!(matches!(g.cause, Cause::Unexplained { .. }), "{:?}", g.cause);
            assert_eq!(g.rules.keys().copied().collect::<Vec<_>>(), ["names"], "{} {}", g.path, g.hunk.text);
        }
    }
}
