//! The docs' relative links resolve: every `[text](target)` in README.md, BENCHMARKS.md and
//! docs/*.md whose target is not a URL names a file of the repository, and its `#anchor`
//! (or a bare `#anchor` in the same page) names a heading of that file, as a forge makes
//! anchors from headings.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use candle_rocm_tests::{files_under, workspace_root};

/// The Markdown files the docs are made of.
fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    files.extend(files_under(&root.join("docs"), ".md"));
    files
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        // an indented code block
        if fenced || line.starts_with("    ") {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// `(line number, target)` of each inline link.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(text).lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// A forge's anchor for a heading: lower case, punctuation but `-` and `_` dropped,
/// spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading gets `-1`, `-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let plain: String = heading.chars().filter(|c| *c != '`' && *c != '*').collect();
        let base = slug(&plain);
        let mut candidate = base.clone();
        let mut n = 0;
        while !out.insert(candidate.clone()) {
            n += 1;
            candidate = format!("{base}-{n}");
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = workspace_root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in doc_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').map_or((target.as_str(), None), |(p, a)| (p, Some(a)));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !resolved.exists() {
                broken.push(format!("{rel}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                let target_text = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!("{rel}:{line}: {target}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 20, "only {checked} relative links found: the scan is broken");
}

#[test]
fn anchors_are_made_as_a_forge_makes_them() {
    let text = "# Title\n## Code nobody here wrote: the kernel corpus\n## Flash attention: speed, ours, Dao's and the unfused path\n## Title\n```\n# not a heading\n```\n";
    let got = anchors(text);
    for want in ["title", "code-nobody-here-wrote-the-kernel-corpus", "flash-attention-speed-ours-daos-and-the-unfused-path", "title-1"] {
        assert!(got.contains(want), "{want} not in {got:?}");
    }
    assert!(!got.contains("not-a-heading"));
    assert_eq!(links("see [a](x.md#y) and `[b](c.md)` and [d](https://e)\n"), [(1, "x.md#y".to_string()), (1, "https://e".to_string())]);
}
