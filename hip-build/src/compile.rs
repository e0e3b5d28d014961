//! Locating hipcc and compiling HIP sources with it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::HipBuildError;

/// What a compile produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// `--genco`: a bundled code object with one image per arch, loaded at run
    /// time like a PTX module.
    CodeObject,
    /// `-c -fPIC`: a host object with the device code embedded, to be linked
    /// into a static library (launchers called from Rust through FFI).
    Object,
}

/// One hipcc invocation.
#[derive(Debug, Clone)]
pub struct CompileJob {
    pub source: PathBuf,
    pub output: PathBuf,
    pub kind: OutputKind,
    pub arches: Vec<String>,
    pub include_dirs: Vec<PathBuf>,
    pub extra_flags: Vec<String>,
}

/// Flags every kernel compile gets: upstream builds its kernels as C++17 at -O3.
const BASE_FLAGS: &[&str] = &["-x", "hip", "-std=c++17", "-O3"];

/// The hipcc found on this machine.
#[derive(Debug)]
pub struct Hipcc {
    path: PathBuf,
    arch_checks: Mutex<HashMap<String, Result<(), String>>>,
}

impl Hipcc {
    /// Finds hipcc on PATH, then under `$ROCM_PATH/bin`, `$HIP_PATH/bin`, `/opt/rocm/bin`.
    pub fn locate() -> Result<Self, HipBuildError> {
        let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join("hipcc")).collect())
            .unwrap_or_default();
        for var in ["ROCM_PATH", "HIP_PATH"] {
            if let Some(root) = std::env::var_os(var) {
                candidates.push(Path::new(&root).join("bin/hipcc"));
            }
        }
        candidates.push(PathBuf::from("/opt/rocm/bin/hipcc"));
        let path = candidates.into_iter().find(|p| p.is_file()).ok_or(HipBuildError::HipccNotFound)?;
        Ok(Hipcc { path, arch_checks: Mutex::new(HashMap::new()) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.env("HIP_PLATFORM", "amd");
        cmd
    }

    /// `hipcc --version`, first line mentioning HIP.
    pub fn version(&self) -> Result<String, HipBuildError> {
        let out = self.command().arg("--version").output().map_err(HipBuildError::io("running hipcc --version"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text.lines().find(|l| l.contains("HIP")).unwrap_or_else(|| text.lines().next().unwrap_or("")).trim().to_string())
    }

    /// Checks that hipcc can target `arch`, by compiling an empty kernel (cached).
    pub fn check_arch(&self, arch: &str) -> Result<(), HipBuildError> {
        let cached = self.arch_checks.lock().expect("arch cache").get(arch).cloned();
        let result = match cached {
            Some(r) => r,
            None => {
                let r = self.probe_arch(arch)?;
                self.arch_checks.lock().expect("arch cache").insert(arch.to_string(), r.clone());
                r
            }
        };
        result.map_err(|message| HipBuildError::UnsupportedArch { arch: arch.to_string(), message })
    }

    fn probe_arch(&self, arch: &str) -> Result<Result<(), String>, HipBuildError> {
        let dir = tempfile::tempdir().map_err(HipBuildError::io("creating a temporary directory"))?;
        let src = dir.path().join("probe.hip");
        std::fs::write(&src, "extern \"C\" __global__ void candle_probe() {}\n").map_err(HipBuildError::io("writing the arch probe"))?;
        let out = self
            .command()
            .args(BASE_FLAGS)
            .arg(format!("--offload-arch={arch}"))
            .arg("--genco")
            .arg(&src)
            .arg("-o")
            .arg(dir.path().join("probe.co"))
            .output()
            .map_err(HipBuildError::io("running hipcc"))?;
        if out.status.success() {
            return Ok(Ok(()));
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| l.contains("error")).or_else(|| stderr.lines().next()).unwrap_or("hipcc failed");
        Ok(Err(first.trim().to_string()))
    }

    /// Compiles one job; fails with the compiler's message, or when any
    /// dependency is a CUDA header.
    pub fn compile(&self, job: &CompileJob) -> Result<(), HipBuildError> {
        for arch in &job.arches {
            self.check_arch(arch)?;
        }
        if let Some(parent) = job.output.parent() {
            std::fs::create_dir_all(parent).map_err(HipBuildError::io(format!("creating {}", parent.display())))?;
        }
        let depfile = job.output.with_extension("d");
        let mut cmd = self.command();
        cmd.args(BASE_FLAGS);
        for arch in &job.arches {
            cmd.arg(format!("--offload-arch={arch}"));
        }
        match job.kind {
            OutputKind::CodeObject => cmd.arg("--genco"),
            OutputKind::Object => cmd.args(["-c", "-fPIC"]),
        };
        for dir in &job.include_dirs {
            cmd.arg("-I").arg(dir);
        }
        cmd.args(&job.extra_flags).arg("-MD").arg("-MF").arg(&depfile).arg(&job.source).arg("-o").arg(&job.output);
        let out = cmd.output().map_err(HipBuildError::io("running hipcc"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let trimmed: Vec<&str> = stderr.lines().take(40).collect();
            return Err(HipBuildError::CompileFailed { source_path: job.source.clone(), stderr: trimmed.join("\n") });
        }
        let deps = std::fs::read_to_string(&depfile).map_err(HipBuildError::io(format!("reading {}", depfile.display())))?;
        let mut own_dirs: Vec<PathBuf> = job.include_dirs.clone();
        own_dirs.extend(job.source.parent().map(Path::to_path_buf));
        if let Some(header) = cuda_header_in(&deps, &own_dirs) {
            return Err(HipBuildError::CudaHeaderIncluded { source_path: job.source.clone(), header });
        }
        Ok(())
    }
}

/// The first dependency in a make-style depfile that is a CUDA header.
/// Files under `own_dirs` (the kernels being built, whose upstream names such
/// as `cuda_utils.cuh` are kept) are not system headers and are skipped.
pub fn cuda_header_in(depfile: &str, own_dirs: &[PathBuf]) -> Option<String> {
    let own: Vec<PathBuf> = own_dirs.iter().filter_map(|d| d.canonicalize().ok()).collect();
    depfile
        .split_whitespace()
        .filter(|w| *w != "\\" && !w.ends_with(':'))
        .filter(|dep| !Path::new(dep).canonicalize().is_ok_and(|p| own.iter().any(|d| p.starts_with(d))))
        .find(|dep| is_cuda_header(dep))
        .map(str::to_string)
}

fn is_cuda_header(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.contains("/cuda/") || path.contains("/cuda-") || path.contains("/thrust/") || path.contains("/cub/") || name.starts_with("cuda") || name == "mma.h"
}

/// The outcome of one job of [`compile_all`].
#[derive(Debug)]
pub struct JobResult {
    pub job: CompileJob,
    pub result: Result<(), HipBuildError>,
    pub wall: Duration,
}

/// Runs `jobs` on `parallelism` threads (at least 1); results in job order.
pub fn compile_all(hipcc: &Hipcc, jobs: Vec<CompileJob>, parallelism: usize) -> Vec<JobResult> {
    let queue = Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>());
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..parallelism.max(1) {
            s.spawn(|| loop {
                let Some((index, job)) = queue.lock().expect("job queue").pop() else { break };
                let start = Instant::now();
                let result = hipcc.compile(&job);
                done.lock().expect("results").push((index, JobResult { job, result, wall: start.elapsed() }));
            });
        }
    });
    let mut done = done.into_inner().expect("results");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_headers_in_depfiles_are_found() {
        let dep = "x.co: a.hip \\\n  /usr/include/hip/hip_runtime.h /usr/include/cuda_fp16.h \\\n  b.cuh\n";
        assert_eq!(cuda_header_in(dep, &[]).as_deref(), Some("/usr/include/cuda_fp16.h"));
    }

    #[test]
    fn hip_headers_pass() {
        assert_eq!(cuda_header_in("x.co: a.hip /usr/include/hip/amd_detail/amd_hip_fp16.h\n", &[]), None);
    }

    #[test]
    fn headers_of_the_kernel_tree_itself_pass() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("cuda_utils.cuh");
        std::fs::write(&own, "").unwrap();
        let dep = format!("x.co: a.hip {}\n", own.display());
        assert_eq!(cuda_header_in(&dep, &[dir.path().to_path_buf()]), None);
        assert!(cuda_header_in(&dep, &[]).is_some());
    }
}
