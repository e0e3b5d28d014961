//! A cache of compiled units shared by every build of the same kernel sources
//! with the same compiler: `CANDLE_ROCM_KERNELS_CACHE=DIR`. Each kernels-crate build
//! has an OUT_DIR of its own (the GPU bundle builds one per package, each a
//! workspace of its own), and the AMD compile check compiles the same units again:
//! with a cache they compile once.
//!
//! An entry is keyed by everything that makes the unit: the compiler (all that
//! `hipcc --version` prints: the same ROCm root's hipcc reached from the host and
//! from inside the root is one compiler), the kernel directory's path and the bytes
//! of every file in it, the unit, its kind, its arches, include directories and
//! extra flags. It holds the output and its depfile; it is written to a temporary
//! directory and renamed into place, so a concurrent build sees it whole or not at all.

use std::path::{Path, PathBuf};

use crate::{CompileJob, CompileOutput, Hipcc, JobResult};

/// The variable naming the cache directory.
pub const ENV: &str = "CANDLE_ROCM_KERNELS_CACHE";

pub struct KernelCache {
    dir: PathBuf,
    kernels_dir: PathBuf,
    /// Digest of hipcc (path, version) and of the kernel directory (path, every file).
    tree: String,
}

impl KernelCache {
    /// The cache named by [`ENV`], for the units of `kernels_dir` compiled by `hipcc`;
    /// `None` when the variable is unset or empty.
    pub fn from_env(hipcc: &Hipcc, kernels_dir: &Path) -> Result<Option<Self>, String> {
        match std::env::var_os(ENV).filter(|d| !d.is_empty()) {
            Some(dir) => Self::open(PathBuf::from(dir), hipcc, kernels_dir).map(Some),
            None => Ok(None),
        }
    }

    pub fn open(dir: PathBuf, hipcc: &Hipcc, kernels_dir: &Path) -> Result<Self, String> {
        let mut files = Vec::new();
        collect_files(kernels_dir, &mut files)?;
        files.sort();
        let mut digest = Digest::default();
        // the compiler by what it says it is, not by the path that reaches it
        digest.add(compiler_identity(hipcc)?.as_bytes());
        digest.add(kernels_dir.to_string_lossy().as_bytes());
        for file in &files {
            digest.add(file.strip_prefix(kernels_dir).unwrap_or(file).to_string_lossy().as_bytes());
            digest.add(&std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?);
        }
        Ok(KernelCache { dir, kernels_dir: kernels_dir.to_path_buf(), tree: digest.hex() })
    }

    /// The entry of one job.
    fn entry(&self, job: &CompileJob) -> PathBuf {
        let mut digest = Digest::default();
        digest.add(self.tree.as_bytes());
        digest.add(job.source.strip_prefix(&self.kernels_dir).unwrap_or(&job.source).to_string_lossy().as_bytes());
        digest.add(format!("{:?}", job.kind).as_bytes());
        for part in job.arches.iter().chain(&job.extra_flags) {
            digest.add(part.as_bytes());
        }
        for dir in &job.include_dirs {
            digest.add(dir.to_string_lossy().as_bytes());
        }
        self.dir.join(digest.hex())
    }

    /// The job's output and depfile copied from the cache, as the result of a compile
    /// that said nothing; `None` when the job is not cached.
    pub fn fetch(&self, job: &CompileJob) -> Option<JobResult> {
        let entry = self.entry(job);
        let (output, depfile) = (entry.join("output"), entry.join("depfile"));
        if !output.is_file() || !depfile.is_file() {
            return None;
        }
        if let Some(parent) = job.output.parent() {
            std::fs::create_dir_all(parent).ok()?;
        }
        let to_depfile = depfile_of(&job.output);
        std::fs::copy(&output, &job.output).ok()?;
        std::fs::copy(&depfile, &to_depfile).ok()?;
        let rule = std::fs::read_to_string(&to_depfile).ok()?;
        let dependencies = crate::deps::parse_make_deps(&rule).into_iter().map(PathBuf::from).collect();
        let out = CompileOutput { output: job.output.clone(), depfile: to_depfile, dependencies, stderr: String::new(), wall: Default::default() };
        Some(JobResult { job: job.clone(), result: Ok(()), output: Some(out), wall: Default::default() })
    }

    /// Keeps a compiled job's output and depfile (nothing when already kept).
    pub fn store(&self, job: &CompileJob) -> Result<(), String> {
        let entry = self.entry(job);
        if entry.is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let partial = entry.with_extension(format!("partial-{}", std::process::id()));
        let made = std::fs::create_dir_all(&partial)
            .and_then(|_| std::fs::copy(&job.output, partial.join("output")))
            .and_then(|_| std::fs::copy(depfile_of(&job.output), partial.join("depfile")));
        match made.and_then(|_| std::fs::rename(&partial, &entry)) {
            Ok(()) => Ok(()),
            // another build stored the same entry first
            Err(_) if entry.is_dir() => {
                let _ = std::fs::remove_dir_all(&partial);
                Ok(())
            }
            Err(e) => Err(format!("storing {} in the kernel cache {}: {e}", job.output.display(), self.dir.display())),
        }
    }
}

/// All that `hipcc --version` prints (HIP's version, clang's, its target and
/// installed directory): which compiler this is, whatever path reaches it (a ROCm
/// root's hipcc is the same compiler from the host, through the root's wrapper,
/// and inside the root).
fn compiler_identity(hipcc: &Hipcc) -> Result<String, String> {
    let out = hipcc.command().arg("--version").output().map_err(|e| format!("running {} --version: {e}", hipcc.path().display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !text.lines().any(|l| l.trim_start().starts_with("HIP version:")) {
        return Err(format!("{} --version printed no `HIP version:` line: not a compiler to key the kernel cache by", hipcc.path().display()));
    }
    Ok(text)
}

/// `OUTPUT.d`, the depfile hip-build writes beside an output.
pub fn depfile_of(output: &Path) -> PathBuf {
    let mut depfile = output.as_os_str().to_owned();
    depfile.push(".d");
    PathBuf::from(depfile)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Two 64-bit FNV-1a streams with different offsets (a cache key, not a security boundary).
struct Digest(u64, u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0xcbf2_9ce4_8422_2325, 0x6c62_272e_07bb_0142)
    }
}

impl Digest {
    fn add(&mut self, bytes: &[u8]) {
        // the length first, so that ("ab", "c") and ("a", "bc") differ
        for b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x100_0000_01b3);
            self.1 = (self.1 ^ *b as u64).wrapping_mul(0x100_0000_01b3).rotate_left(5);
        }
    }

    fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.0, self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OutputKind;

    fn job(dir: &Path, arches: &[&str]) -> CompileJob {
        CompileJob {
            source: dir.join("k/a.hip"),
            output: dir.join("out/a.co"),
            kind: OutputKind::CodeObject,
            arches: arches.iter().map(|a| a.to_string()).collect(),
            include_dirs: vec![dir.join("k")],
            extra_flags: vec![],
        }
    }

    #[test]
    fn a_stored_unit_is_fetched_and_any_input_change_misses() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("k")).unwrap();
        std::fs::create_dir_all(d.join("out")).unwrap();
        std::fs::write(d.join("k/a.hip"), "kernel a").unwrap();
        let cache = KernelCache { dir: d.join("cache"), kernels_dir: d.join("k"), tree: "t1".into() };
        let j = job(d, &["gfx90a"]);
        assert!(cache.fetch(&j).is_none());
        std::fs::write(&j.output, "code object").unwrap();
        std::fs::write(depfile_of(&j.output), format!("{}: {}\n", j.output.display(), j.source.display())).unwrap();
        cache.store(&j).unwrap();
        std::fs::remove_file(&j.output).unwrap();
        let got = cache.fetch(&j).expect("cached");
        assert_eq!(std::fs::read_to_string(&j.output).unwrap(), "code object");
        assert_eq!(got.output.unwrap().dependencies, std::slice::from_ref(&j.source));
        // another arch list, another tree (a kernel file changed): misses
        assert!(cache.fetch(&job(d, &["gfx90a", "gfx1030"])).is_none());
        let changed = KernelCache { tree: "t2".into(), ..cache };
        assert!(changed.fetch(&j).is_none());
    }
}
