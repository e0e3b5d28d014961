//! `generated/MANIFEST.toml` and `generated/NOTICE.md`: provenance of the
//! generated tree, rendered deterministically.

use std::collections::BTreeMap;
use std::fmt::Write;

use sha2::{Digest, Sha256};

use crate::regen::steps::StepOutput;
use crate::tree::Tree;
use crate::regen::upstream::{CrateSource, Upstream};

pub const MANIFEST: &str = "MANIFEST.toml";
pub const NOTICE: &str = "NOTICE.md";

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// MANIFEST.toml for the steps' inputs and rule counts and for `outputs`
/// (every file of the tree but the manifest itself). Sorted, no timestamps,
/// no absolute paths, LF endings: the same inputs always give the same bytes.
pub fn render_manifest(upstream: &Upstream, kernels: &hip_build::plan::KernelsManifest, steps: &[StepOutput], outputs: &Tree) -> String {
    let mut s = String::new();
    s.push_str("# Provenance of generated/: written by `cargo xtask regen`. Do not edit.\n");
    let _ = writeln!(s, "generator = {}", quoted("cargo xtask regen"));
    let _ = writeln!(s, "translator_version = {}", quoted(translator::TRANSLATOR_VERSION));
    s.push_str("\n[upstream]\n");
    let _ = writeln!(s, "source = {}", quoted(upstream.origin.as_str()));
    for c in upstream.crates() {
        let _ = writeln!(s, "{} = {}", quoted(&c.name), quoted(&c.version));
    }
    // how generated/kernels is built (read by candle-rocm-kernels' build script)
    s.push_str("\n[kernels]\n");
    let patterns: Vec<String> = kernels.static_library.iter().map(|p| quoted(p)).collect();
    let _ = writeln!(s, "static_library = [{}]", patterns.join(", "));
    // extra hipcc flags per unit (translator::kernels::mapping::UNIT_FLAGS, which says why)
    let rows: Vec<String> = kernels
        .unit_flags
        .iter()
        .map(|u| format!("{{ units = {}, flags = [{}] }}", quoted(&u.units), u.flags.iter().map(|f| quoted(f)).collect::<Vec<_>>().join(", ")))
        .collect();
    let _ = writeln!(s, "unit_flags = [{}]", rows.join(", "));
    // candle-rocm's own units: their launchers are not compared with the CUDA build's
    let own: Vec<String> = translator::kernels::mapping::OWN_UNITS.iter().map(|(name, _, _)| quoted(name)).collect();
    let _ = writeln!(s, "own_units = [{}]", own.join(", "));
    let mut steps: Vec<&StepOutput> = steps.iter().collect();
    steps.sort_by_key(|st| st.name);
    for step in &steps {
        let _ = write!(s, "\n[rule_counts.{}]\n", key(step.name));
        for (rule, n) in &step.rule_counts {
            let _ = writeln!(s, "{} = {n}", key(rule));
        }
    }
    let inputs: BTreeMap<&str, &[u8]> = steps.iter().flat_map(|st| st.inputs.iter().map(|(p, c)| (p.as_str(), c.as_slice()))).collect();
    for (path, contents) in inputs {
        let _ = write!(s, "\n[[input]]\npath = {}\nsha256 = \"{}\"\n", quoted(path), sha256_hex(contents));
    }
    for (path, contents) in outputs.iter().filter(|(p, _)| p.as_str() != MANIFEST) {
        let _ = write!(s, "\n[[output]]\npath = {}\nsha256 = \"{}\"\n", quoted(path), sha256_hex(contents));
    }
    s
}

/// A TOML basic string.
fn quoted(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for ch in v.chars() {
        match ch {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(s, "\\u{:04X}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// A TOML key: bare when it can be, quoted otherwise.
fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        k.to_string()
    } else {
        quoted(k)
    }
}

/// NOTICE.md: what generated/ is and under which terms.
pub fn render_notice(upstream: &Upstream, license_files: &[String]) -> String {
    let mut s = String::from("# generated/\n\n");
    s.push_str("Every file under this directory is written by `cargo xtask regen` and must not be edited by hand: a change belongs in the translator (`translator/`), then regen.\n\n");
    s.push_str("The translated sources are machine translations of these upstream crates, whose license terms apply to them:\n\n");
    for c in upstream.crates() {
        let _ = writeln!(s, "{}", crate_line(c));
    }
    s.push_str("\nThe compat headers (`kernels/candle_*.h`) are candle-rocm's own code (MIT OR Apache-2.0), copied from `translator/compat/`.\n");
    if !license_files.is_empty() {
        s.push_str("\nUpstream license files, copied as shipped:\n\n");
        for f in license_files {
            let _ = writeln!(s, "- `{f}`");
        }
    }
    s
}

fn crate_line(c: &CrateSource) -> String {
    let license = if c.license.is_empty() { "license not stated in its manifest" } else { &c.license };
    let repo = if c.repository.is_empty() { String::new() } else { format!(", {}", c.repository) };
    format!("- `{}` {} ({license}{repo})", c.name, c.version)
}

/// What changed between two manifests, for the maintainer reviewing a
/// regen: inputs added, removed or changed, and rule counts that moved.
pub fn changes_since(previous: &str, current: &[u8]) -> Vec<String> {
    let parse = |text: &str| text.parse::<toml::Table>().ok();
    let (Some(old), Some(new)) = (parse(previous), parse(&String::from_utf8_lossy(current))) else {
        return vec!["previous MANIFEST.toml unreadable: no comparison".into()];
    };
    let inputs = |t: &toml::Table| -> BTreeMap<String, String> {
        t.get("input")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|i| Some((i.get("path")?.as_str()?.to_string(), i.get("sha256")?.as_str()?.to_string()))).collect())
            .unwrap_or_default()
    };
    let (old_in, new_in) = (inputs(&old), inputs(&new));
    let mut lines = Vec::new();
    for (path, sha) in &new_in {
        match old_in.get(path) {
            None => lines.push(format!("new input: {path}")),
            Some(o) if o != sha => lines.push(format!("changed input: {path}")),
            _ => {}
        }
    }
    lines.extend(old_in.keys().filter(|p| !new_in.contains_key(*p)).map(|p| format!("removed input: {p}")));
    // `[rule_counts.<step>]` tables; a flat `[rule_counts]` (manifests written
    // before there were steps) holds the kernels step's counts.
    let counts = |t: &toml::Table| -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        for (k, v) in t.get("rule_counts").and_then(|v| v.as_table()).into_iter().flatten() {
            match v {
                toml::Value::Integer(n) => {
                    out.insert(format!("kernels/{k}"), *n);
                }
                toml::Value::Table(step) => out.extend(step.iter().filter_map(|(rule, n)| Some((format!("{k}/{rule}"), n.as_integer()?)))),
                _ => {}
            }
        }
        out
    };
    let (old_c, new_c) = (counts(&old), counts(&new));
    for (rule, n) in &new_c {
        let before = old_c.get(rule).copied().unwrap_or(0);
        if before != *n {
            lines.push(format!("rule {rule}: {before} -> {n} rewrites"));
        }
    }
    for (rule, n) in old_c.iter().filter(|(r, _)| !new_c.contains_key(*r)) {
        lines.push(format!("rule {rule}: {n} -> gone"));
    }
    if lines.is_empty() {
        lines.push("no change since the previous regen".into());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regen::upstream::Origin;
    use std::path::PathBuf;

    fn upstream() -> Upstream {
        let c = |name: &str| CrateSource { name: name.into(), version: "0.11.1".into(), root: PathBuf::from("/abs/path").join(name), license: "MIT OR Apache-2.0".into(), repository: "https://example.org/candle".into() };
        Upstream { origin: Origin::CratesIo, kernels: c("candle-kernels"), core: c("candle-core"), nn: c("candle-nn"), flash_attn: Some(c("candle-flash-attn")), transformers: Some(c("candle-transformers")), examples: Some(c("candle-examples")) }
    }

    fn kernels_step() -> StepOutput {
        StepOutput {
            name: "kernels",
            inputs: vec![("candle-kernels/src/b.cu".to_string(), b"b".to_vec()), ("candle-kernels/src/a.cu".to_string(), b"x".to_vec())],
            files: vec![],
            rule_counts: BTreeMap::from([("names", 3), ("arch-guards", 2)]),
            notes: vec!["hipify-perl first pass: yes (/opt/rocm/bin/hipify-perl)".into()],
            ..Default::default()
        }
    }

    fn outputs() -> Tree {
        [("kernels/a.hip".to_string(), b"y".to_vec()), (MANIFEST.to_string(), b"old manifest".to_vec()), (NOTICE.to_string(), b"n".to_vec())].into()
    }

    #[test]
    fn manifest_is_deterministic_and_has_no_absolute_paths() {
        let up = upstream();
        let a = render_manifest(&up, &Default::default(), &[kernels_step()], &outputs());
        assert_eq!(a, render_manifest(&up, &Default::default(), &[kernels_step()], &outputs()));
        assert!(!a.contains("/abs/path") && !a.contains("/opt/rocm"), "{a}");
        assert!(!a.contains('\r'));
        assert!(a.find("arch-guards").unwrap() < a.find("names").unwrap());
        assert!(a.find("src/a.cu").unwrap() < a.find("src/b.cu").unwrap(), "inputs sorted");
        // sha256("x")
        assert!(a.contains("sha256 = \"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\""));
        assert!(!a.contains("path = \"MANIFEST.toml\""));
        assert!(!a.contains("hipify"), "whether hipify-perl ran is not recorded");
    }

    #[test]
    fn manifest_is_valid_toml_with_the_expected_fields() {
        let a = render_manifest(&upstream(), &Default::default(), &[kernels_step()], &outputs());
        let t: toml::Table = toml::from_str(&a).expect("valid TOML");
        assert_eq!(t["generator"].as_str(), Some("cargo xtask regen"));
        assert_eq!(t["translator_version"].as_str(), Some(translator::TRANSLATOR_VERSION));
        assert_eq!(t["upstream"]["source"].as_str(), Some("crates.io"));
        assert_eq!(t["upstream"]["candle-kernels"].as_str(), Some("0.11.1"));
        assert_eq!(t["upstream"]["candle-core"].as_str(), Some("0.11.1"));
        assert_eq!(t["rule_counts"]["kernels"]["names"].as_integer(), Some(3));
        let inputs = t["input"].as_array().unwrap();
        assert_eq!(inputs.len(), 2);
        assert_eq!(inputs[0]["path"].as_str(), Some("candle-kernels/src/a.cu"));
        let outs: Vec<_> = t["output"].as_array().unwrap().iter().map(|o| o["path"].as_str().unwrap().to_string()).collect();
        assert_eq!(outs, [NOTICE, "kernels/a.hip"]);
    }

    #[test]
    fn steps_get_their_own_rule_count_tables() {
        let backend = StepOutput { name: "candle-core", inputs: vec![("candle-core/src/lib.rs".into(), vec![])], rule_counts: BTreeMap::from([("names", 7)]), ..Default::default() };
        let a = render_manifest(&upstream(), &Default::default(), &[kernels_step(), backend.clone()], &outputs());
        let b = render_manifest(&upstream(), &Default::default(), &[backend, kernels_step()], &outputs());
        assert_eq!(a, b, "step order does not matter");
        let t: toml::Table = toml::from_str(&a).unwrap();
        assert_eq!(t["rule_counts"]["candle-core"]["names"].as_integer(), Some(7));
        assert_eq!(t["rule_counts"]["kernels"]["names"].as_integer(), Some(3));
        assert_eq!(t["input"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn odd_strings_are_escaped() {
        assert_eq!(quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(key("arch-guards"), "arch-guards");
        assert_eq!(key("a.b"), "\"a.b\"");
        let t: toml::Table = toml::from_str(&format!("{} = {}", key("we\"ird"), quoted("x\u{1}y"))).unwrap();
        assert_eq!(t["we\"ird"].as_str(), Some("x\u{1}y"));
    }

    #[test]
    fn changes_since_reads_flat_and_per_step_counts() {
        let up = upstream();
        let current = render_manifest(&up, &Default::default(), &[kernels_step()], &outputs());
        assert_eq!(changes_since(&current, current.as_bytes()), ["no change since the previous regen"]);
        let flat = "[rule_counts]\nnames = 3\narch-guards = 1\nold-rule = 4\n\n[[input]]\npath = \"candle-kernels/src/a.cu\"\nsha256 = \"00\"\n";
        let lines = changes_since(flat, current.as_bytes());
        assert!(lines.contains(&"changed input: candle-kernels/src/a.cu".to_string()), "{lines:?}");
        assert!(lines.contains(&"new input: candle-kernels/src/b.cu".to_string()), "{lines:?}");
        assert!(lines.contains(&"rule kernels/arch-guards: 1 -> 2 rewrites".to_string()), "{lines:?}");
        assert!(lines.contains(&"rule kernels/old-rule: 4 -> gone".to_string()), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("kernels/names")), "{lines:?}");
        assert_eq!(changes_since("not toml [", current.as_bytes()), ["previous MANIFEST.toml unreadable: no comparison"]);
    }

    #[test]
    fn notice_names_crates_and_license() {
        let n = render_notice(&upstream(), &["upstream-licenses/candle-core/LICENSE".into()]);
        assert!(n.contains("`candle-kernels` 0.11.1 (MIT OR Apache-2.0, https://example.org/candle)"));
        assert!(n.contains("`candle-core` 0.11.1"));
        assert!(n.contains("must not be edited by hand"));
        assert!(n.contains("license terms apply"));
        assert!(n.contains("upstream-licenses/candle-core/LICENSE"));
        assert!(!n.contains("/abs/path"));
        assert_eq!(n, render_notice(&upstream(), &["upstream-licenses/candle-core/LICENSE".into()]));
    }
}
