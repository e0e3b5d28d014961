//! Every environment variable our Rust code reads is in docs/environment.md: a name read
//! with `env::var`/`env::var_os`/`option_env!`/`env!`, and every `CANDLE_ROCM_*` or
//! `HIP_ON_CUDA_*` string the code names (a build script's `rerun-if-env-changed` list, a
//! constant holding the name). Cargo's and the system's own variables are listed there as such.

use std::collections::BTreeSet;

use candle_rocm_tests::{files_under, workspace_root};

/// The directories of our own Rust code (generated/ is Candle's, translated).
const CODE: &[&str] = &["translator", "xtask", "hip-build", "candle-rocm-build", "rocm-runtime", "hip-on-cuda", "tests", "bench"];

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
fn reads_and_names_are_found() {
    let got = variables("std::env::var(\"A_B\"); env::var_os( \"C\"); option_env!(\"D1\"); const X: &str = \"CANDLE_ROCM_E\"; println!(\"{}\", \"lower\");");
    assert_eq!(got.into_iter().collect::<Vec<_>>(), ["A_B", "C", "CANDLE_ROCM_E", "D1"]);
}
