//! `generated/MANIFEST.toml` and `generated/NOTICE.md`: provenance of the
//! generated tree, rendered deterministically.

use std::collections::BTreeMap;
use std::fmt::Write;

use sha2::{Digest, Sha256};

use crate::tree::Tree;
use crate::upstream::{CrateSource, Origin, Upstream};

pub const MANIFEST: &str = "MANIFEST.toml";
pub const NOTICE: &str = "NOTICE.md";

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// What the manifest records besides the output files.
pub struct ManifestInputs<'a> {
    pub upstream: &'a Upstream,
    /// `(path as recorded, contents)` of every input, e.g. `candle-kernels/src/affine.cu`.
    pub inputs: &'a [(String, Vec<u8>)],
    pub rule_counts: &'a BTreeMap<&'static str, usize>,
}

/// MANIFEST.toml for `outputs` (every file of the tree but the manifest).
pub fn render_manifest(m: &ManifestInputs, outputs: &Tree) -> String {
    let mut s = String::new();
    s.push_str("# Provenance of generated/: written by `cargo xtask regen`. Do not edit.\n");
    let _ = writeln!(s, "generator = \"cargo xtask regen\"");
    let _ = writeln!(s, "translator_version = \"{}\"", translator::TRANSLATOR_VERSION);
    s.push_str("\n[upstream]\n");
    let origin = match m.upstream.origin {
        Origin::CratesIo => "crates.io",
        Origin::Checkout => "checkout",
    };
    let _ = writeln!(s, "source = \"{origin}\"");
    for c in [&m.upstream.kernels, &m.upstream.core] {
        let _ = writeln!(s, "\"{}\" = \"{}\"", c.name, c.version);
    }
    s.push_str("\n[rule_counts]\n");
    for (rule, n) in m.rule_counts {
        let _ = writeln!(s, "{rule} = {n}");
    }
    for (path, contents) in m.inputs {
        let _ = write!(s, "\n[[input]]\npath = \"{path}\"\nsha256 = \"{}\"\n", sha256_hex(contents));
    }
    for (path, contents) in outputs.iter().filter(|(p, _)| p.as_str() != MANIFEST) {
        let _ = write!(s, "\n[[output]]\npath = \"{path}\"\nsha256 = \"{}\"\n", sha256_hex(contents));
    }
    s
}

/// NOTICE.md: what generated/ is and under which terms.
pub fn render_notice(upstream: &Upstream, license_files: &[String]) -> String {
    let mut s = String::from("# generated/\n\n");
    s.push_str("Every file under this directory is written by `cargo xtask regen` and must not be edited by hand: a change belongs in the translator (`translator/`), then regen.\n\n");
    s.push_str("The translated sources are machine translations of these upstream crates, whose license terms apply to them:\n\n");
    for c in [&upstream.kernels, &upstream.core] {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn upstream() -> Upstream {
        let c = |name: &str| CrateSource { name: name.into(), version: "0.11.1".into(), root: PathBuf::from("/abs/path"), license: "MIT OR Apache-2.0".into(), repository: "https://example.org/candle".into() };
        Upstream { origin: Origin::CratesIo, kernels: c("candle-kernels"), core: c("candle-core") }
    }

    #[test]
    fn manifest_is_deterministic_and_has_no_absolute_paths() {
        let up = upstream();
        let counts = BTreeMap::from([("names", 3), ("arch-guards", 2)]);
        let inputs = vec![("candle-kernels/src/a.cu".to_string(), b"x".to_vec())];
        let m = ManifestInputs { upstream: &up, inputs: &inputs, rule_counts: &counts };
        let outputs: Tree = [("kernels/a.hip".to_string(), b"y".to_vec()), (MANIFEST.to_string(), vec![])].into();
        let a = render_manifest(&m, &outputs);
        assert_eq!(a, render_manifest(&m, &outputs));
        assert!(!a.contains("/abs/path"));
        assert!(a.find("arch-guards").unwrap() < a.find("names").unwrap());
        assert!(a.contains("sha256 = \"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\""));
        assert!(!a.contains("path = \"MANIFEST.toml\""));
        toml::from_str::<toml::Table>(&a).expect("valid TOML");
    }

    #[test]
    fn notice_names_crates_and_license() {
        let n = render_notice(&upstream(), &["upstream-licenses/candle-core/LICENSE".into()]);
        assert!(n.contains("`candle-kernels` 0.11.1 (MIT OR Apache-2.0, https://example.org/candle)"));
        assert!(n.contains("upstream-licenses/candle-core/LICENSE"));
    }
}
