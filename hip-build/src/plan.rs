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

/// The compile jobs for every `.hip` file under `kernels_dir`: upstream's
/// static-library units (`static_library` patterns, written against the
/// upstream `.cu` names) become host objects, the rest code objects. Output
/// paths mirror the sources under `out_dir`.
pub fn kernel_jobs(kernels_dir: &Path, out_dir: &Path, arches: &[String], static_library: &[String]) -> std::io::Result<Vec<CompileJob>> {
    let mut sources = Vec::new();
    collect(kernels_dir, kernels_dir, &mut sources)?;
    sources.sort();
    Ok(sources
        .into_iter()
        .map(|rel| {
            let upstream_name = format!("{}.cu", rel.trim_end_matches(".hip"));
            let kind = if static_library.iter().any(|p| wildcard_match(p, &upstream_name)) { OutputKind::Object } else { OutputKind::CodeObject };
            let ext = if kind == OutputKind::Object { "o" } else { "co" };
            CompileJob {
                source: kernels_dir.join(&rel),
                output: out_dir.join(format!("{}.{ext}", rel.trim_end_matches(".hip"))),
                kind,
                arches: arches.to_vec(),
                include_dirs: vec![kernels_dir.to_path_buf()],
                extra_flags: vec![],
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
}
