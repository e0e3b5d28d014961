//! The compiler warnings of a kernel build, counted per ROCm release and arch,
//! and compared with the recorded ones so that a new warning is named.
//!
//! A warning is keyed by its normalised first line: the path made relative to
//! the kernel tree (or to the compiler's include directory), so the same
//! warning reads the same on any checkout; its count is how many translation
//! units printed it (a header's warning repeats per unit that includes it).
//! The record is `bench/results/kernel-warnings/<release>.tsv`:
//! `arch<TAB>count<TAB>warning`, sorted; `build-kernels --record-warnings`
//! rewrites the arches it built.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Warning → how many times it was printed, for one arch.
pub type Counts = BTreeMap<String, usize>;

/// The warnings in a compiler's stderr, normalised (`kernels_dir` stripped from paths).
pub fn parse(stderr: &str, kernels_dir: &Path) -> Vec<String> {
    let tree = format!("{}/", kernels_dir.display());
    stderr
        .lines()
        .filter(|l| l.contains(": warning: "))
        .map(|l| {
            let l = l.strip_prefix(tree.as_str()).unwrap_or(l);
            // a warning in the compiler's own headers: from the include directory on
            match l.find("/include/") {
                Some(i) if l.starts_with('/') => format!("<rocm>{}", &l[i..]),
                _ => l.to_string(),
            }
        })
        .collect()
}

/// The record file of a release.
pub fn record_path(workspace: &Path, release: &str) -> PathBuf {
    workspace.join("bench/results/kernel-warnings").join(format!("{release}.tsv"))
}

/// Arch → counts, from a record file (empty when there is none).
pub fn read_record(path: &Path) -> Result<BTreeMap<String, Counts>> {
    let mut record: BTreeMap<String, Counts> = BTreeMap::new();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(record),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.starts_with('#') && !l.is_empty()) {
        let mut cols = line.splitn(3, '\t');
        let (Some(arch), Some(count), Some(warning)) = (cols.next(), cols.next(), cols.next()) else {
            anyhow::bail!("{}:{}: expected `arch<TAB>count<TAB>warning`", path.display(), n + 1);
        };
        let count: usize = count.parse().with_context(|| format!("{}:{}: count `{count}`", path.display(), n + 1))?;
        record.entry(arch.to_string()).or_default().insert(warning.to_string(), count);
    }
    Ok(record)
}

/// Writes the record (sorted by arch, then warning).
pub fn write_record(path: &Path, record: &BTreeMap<String, Counts>) -> Result<()> {
    let mut text = String::from("# arch\tcount\twarning (cargo xtask build-kernels --record-warnings)\n");
    for (arch, counts) in record {
        for (warning, count) in counts {
            text.push_str(&format!("{arch}\t{count}\t{warning}\n"));
        }
    }
    std::fs::create_dir_all(path.parent().expect("a record file has a directory")).with_context(|| format!("creating the directory of {}", path.display()))?;
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {}", tmp.display()))
}

/// Counts a list of warnings.
pub fn count(warnings: impl IntoIterator<Item = String>) -> Counts {
    let mut counts = Counts::new();
    for w in warnings {
        *counts.entry(w).or_default() += 1;
    }
    counts
}

/// The warnings of `now` that `before` does not have.
pub fn new_since<'a>(now: &'a Counts, before: Option<&Counts>) -> Vec<&'a str> {
    now.keys().filter(|w| !before.is_some_and(|b| b.contains_key(*w))).map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_normalised_counted_and_compared() {
        let stderr = "/k/mmq_gguf/mmq_common.cuh:367:5: warning: ignoring return value [-Wunused-result]\n  367 |     hipFuncSetAttribute(...);\n\
                      /usr/include/hip/amd_detail/x.h:3:1: warning: deprecated [-Wdeprecated]\n\
                      /k/mmq_gguf/mmq_common.cuh:367:5: warning: ignoring return value [-Wunused-result]\n1 warning generated.\n";
        let parsed = parse(stderr, Path::new("/k"));
        assert_eq!(parsed[0], "mmq_gguf/mmq_common.cuh:367:5: warning: ignoring return value [-Wunused-result]");
        assert_eq!(parsed[1], "<rocm>/include/hip/amd_detail/x.h:3:1: warning: deprecated [-Wdeprecated]");
        let counts = count(parsed);
        assert_eq!(counts.values().sum::<usize>(), 3);
        let before = count(["<rocm>/include/hip/amd_detail/x.h:3:1: warning: deprecated [-Wdeprecated]".to_string()]);
        assert_eq!(new_since(&counts, Some(&before)), ["mmq_gguf/mmq_common.cuh:367:5: warning: ignoring return value [-Wunused-result]"]);
        assert_eq!(new_since(&counts, None).len(), 2);
    }

    #[test]
    fn the_record_round_trips_and_bad_lines_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r/7.2.tsv");
        assert!(read_record(&path).unwrap().is_empty());
        let mut record = BTreeMap::new();
        record.insert("gfx942".to_string(), count(["a: warning: x".to_string(), "a: warning: x".to_string()]));
        write_record(&path, &record).unwrap();
        assert_eq!(read_record(&path).unwrap(), record);
        std::fs::write(&path, "gfx942\tmany\tw\n").unwrap();
        assert!(read_record(&path).unwrap_err().to_string().ends_with("7.2.tsv:1: count `many`"));
    }
}
