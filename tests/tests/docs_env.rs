//! docs/environment.md and the code agree, both ways:
//! - every environment variable our Rust code reads is in it: a name read with
//!   `env::var`/`env::var_os`/`option_env!`/`env!`, and every `CANDLE_ROCM_*` or
//!   `HIP_ON_CUDA_*` string the code names (a build script's `rerun-if-env-changed` list, a
//!   constant holding the name); cargo's and the system's own variables are listed there as such;
//! - every knob of our scripts is in it: a variable a script expands with a default
//!   (`${NAME:-...}`, `${NAME-...}`, `${NAME:?...}`, `${NAME:=...}`);
//! - every variable its tables name is read by our Rust code or a script, or is one that
//!   another program reads ([`READ_ELSEWHERE`]).

use std::collections::BTreeSet;

use candle_rocm_tests::{files_under, workspace_root};

/// The directories of our own Rust code (generated/ is Candle's, translated).
const CODE: &[&str] = &["translator", "xtask", "hip-build", "candle-rocm-build", "rocm-runtime", "hip-on-cuda", "tests", "bench"];

/// The directories of our scripts.
const SCRIPTS: &[&str] = &["tools", "bench", "hip-on-cuda", "tests", ".ci"];

/// Variables the docs name that programs other than ours read.
const READ_ELSEWHERE: &[(&str, &str)] = &[("SKIP_BINDGEN", "rocm-rs's build script"), ("LD_PRELOAD", "the dynamic loader"), ("LD_LIBRARY_PATH", "the dynamic loader"), ("LD_DEBUG", "the dynamic loader"), ("NCCL_NVLS_ENABLE", "NCCL")];

/// The knobs a shell script reads: variables expanded with a default.
fn script_knobs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("${") {
        let rest = &text[at + 2..];
        let end = rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap_or(rest.len());
        let (name, after) = rest.split_at(end);
        let defaulted = [":-", "-", ":?", ":=", "="].iter().any(|op| after.starts_with(op));
        if !name.is_empty() && name.starts_with(|c: char| c.is_ascii_uppercase()) && defaulted {
            out.insert(name.to_string());
        }
    }
    out
}

/// The shell scripts: `.sh` files and `.ci/run`.
fn scripts(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = SCRIPTS.iter().flat_map(|dir| files_under(&root.join(dir), ".sh")).collect();
    files.push(root.join(".ci/run"));
    files
}

/// The variables the tables of docs/environment.md name: the backticked names (before any
/// `=value`) of each row's first cell.
fn documented(doc: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let cell = line.trim_start_matches('|').split('|').next().unwrap_or_default();
        for piece in cell.split('`').skip(1).step_by(2) {
            let name = piece.split('=').next().unwrap_or_default();
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
                out.insert(name.to_string());
            }
        }
    }
    out
}

/// The variable names a Rust source reads or names.
fn variables(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let name_at = |s: &str| -> Option<String> {
        let s = s.strip_prefix('"')?;
        let end = s.find('"')?;
        let name = &s[..end];
        (!name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).then(|| name.to_string())
    };
    for call in ["env::var(", "env::var_os(", "option_env!(", "env!("] {
        for (at, _) in text.match_indices(call) {
            out.extend(name_at(text[at + call.len()..].trim_start()));
        }
    }
    for prefix in ["\"CANDLE_ROCM_", "\"HIP_ON_CUDA_"] {
        for (at, _) in text.match_indices(prefix) {
            out.extend(name_at(&text[at..]));
        }
    }
    out
}

#[test]
fn every_variable_the_code_reads_is_documented() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
    let files: Vec<_> = CODE.iter().flat_map(|dir| files_under(&root.join(dir), ".rs")).collect();
    let mut missing = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for file in files {
        // (this file's own examples are not reads)
        if file.ends_with("tests/tests/docs_env.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for name in variables(&text) {
            seen.insert(name.clone());
            // by name, or by a family `PREFIX_*` (`CARGO_FEATURE_*`)
            let family = name.rsplit_once('_').map(|(prefix, _)| format!("`{prefix}_*`"));
            let documented = doc.contains(&format!("`{name}")) || family.is_some_and(|f| doc.contains(&f));
            if !documented {
                missing.insert(format!("{name} ({})", file.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "read by the code, not in docs/environment.md:\n{}", missing.into_iter().collect::<Vec<_>>().join("\n"));
    assert!(seen.len() > 20, "only {} variables found: the scan is broken", seen.len());
}

#[test]
fn every_knob_of_the_scripts_is_documented() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
    let mut missing = BTreeSet::new();
    let mut seen = 0;
    for file in scripts(&root) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for name in script_knobs(&text) {
            seen += 1;
            if !doc.contains(&format!("`{name}")) {
                missing.insert(format!("{name} ({})", file.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "knobs of the scripts, not in docs/environment.md:\n{}", missing.into_iter().collect::<Vec<_>>().join("\n"));
    assert!(seen > 20, "only {seen} script knobs found: the scan is broken");
}

#[test]
fn every_documented_variable_is_read() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
    let mut read: BTreeSet<String> = CODE.iter().flat_map(|dir| files_under(&root.join(dir), ".rs")).filter(|f| !f.ends_with("tests/tests/docs_env.rs")).flat_map(|f| variables(&std::fs::read_to_string(f).unwrap_or_default())).collect();
    let script_text: String = scripts(&root).iter().map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect();
    let names = documented(&doc);
    assert!(names.len() > 20, "only {} variables in the tables: the scan is broken", names.len());
    let mut unread = Vec::new();
    for name in names {
        let in_scripts = script_text.contains(&format!("${name}")) || script_text.contains(&format!("${{{name}"));
        if !(read.remove(&name) || in_scripts || READ_ELSEWHERE.iter().any(|(n, _)| *n == name)) {
            unread.push(name);
        }
    }
    assert!(unread.is_empty(), "in docs/environment.md's tables, read by no code or script of ours: {unread:?}");
}

#[test]
fn knobs_and_table_names_are_found() {
    let got = script_knobs("a=${A:-1} ${B-x} ${C:?no} ${D} $E ${F:=2} ${lower:-1} ${G_H:-}");
    assert_eq!(got.into_iter().collect::<Vec<_>>(), ["A", "B", "C", "F", "G_H"]);
    let got = documented("| `X=1`, `Y_Z=0/1` | reader | what |\n| variable | read by |\n| `lower` | x |\n");
    assert_eq!(got.into_iter().collect::<Vec<_>>(), ["X", "Y_Z"]);
}

#[test]
fn reads_and_names_are_found() {
    let got = variables("std::env::var(\"A_B\"); env::var_os( \"C\"); option_env!(\"D1\"); const X: &str = \"CANDLE_ROCM_E\"; println!(\"{}\", \"lower\");");
    assert_eq!(got.into_iter().collect::<Vec<_>>(), ["A_B", "C", "CANDLE_ROCM_E", "D1"]);
}
