//! The docs read in short pieces: no paragraph or list item of README.md or docs/*.md is
//! longer than [`LONGEST`] characters (lists and tables carry the detail). Code blocks,
//! tables and headings are not prose; a link counts as its text only.

use candle_rocm_tests::{files_under, workspace_root};

/// The longest paragraph or list item, in characters of its text.
const LONGEST: usize = 700;

/// `(first line, text)` of each paragraph and list item: lines outside code blocks,
/// tables and headings, joined until a blank line or the next item.
fn pieces(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            out.extend(current.take());
            continue;
        }
        let item = trimmed.starts_with("- ") || trimmed.starts_with("* ") || trimmed.split_once(". ").is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()));
        if fenced || trimmed.is_empty() || trimmed.starts_with('|') || trimmed.starts_with('#') || item {
            out.extend(current.take());
        }
        if fenced || trimmed.is_empty() || trimmed.starts_with('|') || trimmed.starts_with('#') {
            continue;
        }
        let piece = current.get_or_insert_with(|| (n + 1, String::new()));
        if !piece.1.is_empty() {
            piece.1.push(' ');
        }
        piece.1.push_str(&link_text_only(trimmed));
    }
    out.extend(current);
    out
}

/// `[text](target)` as `text`.
fn link_text_only(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at + 1]);
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn no_paragraph_or_item_is_too_long() {
    let root = workspace_root();
    let mut files = vec![root.join("README.md")];
    files.extend(files_under(&root.join("docs"), ".md"));
    let mut long = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        for (line, text) in pieces(&std::fs::read_to_string(&file).unwrap()) {
            let chars = text.chars().count();
            if chars > LONGEST {
                long.push(format!("{rel}:{line}: {chars} characters"));
            }
        }
    }
    assert!(long.is_empty(), "paragraphs or list items over {LONGEST} characters (split them, or make a list or a table):\n{}", long.join("\n"));
}

#[test]
fn pieces_are_paragraphs_and_items() {
    let md = "# T\n\nOne\ntwo [x](y.md).\n\n- a\n  b\n- c\n\n| t |\n```\ncode\n```\n1. d\n";
    let got = pieces(md);
    assert_eq!(got, [(3, "One two [x].".to_string()), (6, "- a b".into()), (8, "- c".into()), (14, "1. d".into())]);
}
