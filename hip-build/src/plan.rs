//! Which generated kernel files become which kind of output.

use std::path::{Path, PathBuf};

use crate::{CompileJob, OutputKind};

/// `*` matches any run of characters (also `/`); everything else literally.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else { return false };
            (0..=rest.len()).filter(|&i| rest.is_char_boundary(i)).any(|i| wildcard_match(tail, &rest[i..]))
        }
    }
}

/// How generated/kernels is built: MANIFEST.toml's `[kernels]` table, written by
/// `cargo xtask regen`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelsManifest {
    /// Upstream `.cu` patterns linked as a static library (host objects).
    pub static_library: Vec<String>,
    /// Extra compiler flags per unit pattern (same form as `static_library`).
    pub unit_flags: Vec<UnitFlags>,
}

/// Extra compiler flags for the units whose upstream `.cu` name matches `units`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitFlags {
    pub units: String,
    pub flags: Vec<String>,
}

impl KernelsManifest {
    /// Reads the `[kernels]` table of the MANIFEST.toml at `path`; an error names the
    /// file and the key.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let value: toml::Value = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
        let kernels = value.get("kernels").ok_or("no [kernels] table")?;
        let strings = |v: Option<&toml::Value>, what: &str| -> Result<Vec<String>, String> {
            let bad = || format!("[kernels] {what}: expected a list of strings");
            v.and_then(toml::Value::as_array).ok_or_else(bad)?.iter().map(|p| p.as_str().map(str::to_string).ok_or_else(bad)).collect()
        };
        let static_library = strings(kernels.get("static_library"), "static_library")?;
        let unit_flags = match kernels.get("unit_flags") {
            None => Vec::new(),
            Some(list) => list
                .as_array()
                .ok_or("[kernels] unit_flags: expected a list of { units, flags } tables")?
                .iter()
                .map(|row| {
                    let units = row.get("units").and_then(toml::Value::as_str).ok_or("[kernels] unit_flags: a row without `units` (a string)")?;
                    Ok(UnitFlags { units: units.to_string(), flags: strings(row.get("flags"), "unit_flags.flags")? })
                })
                .collect::<Result<_, String>>()?,
        };
        Ok(Self { static_library, unit_flags })
    }
}

/// The compile jobs for every `.hip` file under `kernels_dir`: upstream's
/// static-library units (`manifest.static_library` patterns, written against the
/// upstream `.cu` names) become host objects, the rest code objects; each job takes
/// the flags of every `manifest.unit_flags` row its unit matches. Output paths mirror
/// the sources under `out_dir`.
pub fn kernel_jobs(kernels_dir: &Path, out_dir: &Path, arches: &[String], manifest: &KernelsManifest) -> std::io::Result<Vec<CompileJob>> {
    let mut sources = Vec::new();
    collect(kernels_dir, kernels_dir, &mut sources)?;
    sources.sort();
    Ok(sources
        .into_iter()
        .map(|rel| {
            let upstream_name = format!("{}.cu", rel.trim_end_matches(".hip"));
            let kind = if manifest.static_library.iter().any(|p| wildcard_match(p, &upstream_name)) { OutputKind::Object } else { OutputKind::CodeObject };
            let ext = if kind == OutputKind::Object { "o" } else { "co" };
            CompileJob {
                source: kernels_dir.join(&rel),
                output: out_dir.join(format!("{}.{ext}", rel.trim_end_matches(".hip"))),
                kind,
                arches: arches.to_vec(),
                include_dirs: vec![kernels_dir.to_path_buf()],
                extra_flags: manifest.unit_flags.iter().filter(|u| wildcard_match(&u.units, &upstream_name)).flat_map(|u| u.flags.iter().cloned()).collect(),
            }
        })
        .collect())
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path: PathBuf = entry?.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "hip") {
            let rel = path.strip_prefix(root).expect("under root");
            out.push(rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("moe/moe_*.cu", "moe/moe_wmma.cu"));
        assert!(!wildcard_match("moe/moe_*.cu", "moe/gguf.cuh"));
        assert!(wildcard_match("mmvq_gguf.cu", "mmvq_gguf.cu"));
        assert!(!wildcard_match("mmq_gguf/mmq_*.cu", "quantized.cu"));
    }

    /// The manifest's rows reach the jobs of the units they match, and only those.
    #[test]
    fn manifest_rows_choose_kind_and_flags() {
        let manifest = KernelsManifest::parse(
            "[kernels]\nstatic_library = [\"mmq_gguf/mmq_*.cu\"]\nunit_flags = [{ units = \"mmq_gguf/mmq_instance_*.cu\", flags = [\"-mllvm\", \"-x=0\"] }]\n",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("mmq_gguf")).unwrap();
        for f in ["affine.hip", "mmq_gguf/mmq_instance_q4_0.hip", "mmq_gguf/mmq_quantize.hip"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let jobs = kernel_jobs(dir.path(), Path::new("/out"), &["gfx90a".to_string()], &manifest).unwrap();
        let job = |name: &str| jobs.iter().find(|j| j.source.ends_with(name)).unwrap();
        assert_eq!((job("affine.hip").kind, job("affine.hip").extra_flags.len()), (OutputKind::CodeObject, 0));
        assert_eq!(job("mmq_instance_q4_0.hip").kind, OutputKind::Object);
        assert_eq!(job("mmq_instance_q4_0.hip").extra_flags, ["-mllvm", "-x=0"]);
        assert!(job("mmq_quantize.hip").extra_flags.is_empty());
        let err = KernelsManifest::parse("[kernels]\nstatic_library = []\nunit_flags = [{ flags = [] }]\n").unwrap_err();
        assert!(err.contains("without `units`"), "{err}");
        let err = KernelsManifest::parse("[upstream]\n").unwrap_err();
        assert!(err.contains("no [kernels] table"), "{err}");
    }
}
