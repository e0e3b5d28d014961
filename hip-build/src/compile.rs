//! Locating hipcc and compiling HIP sources with it.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::deps;
use crate::HipBuildError;

/// How many lines of compiler output an error keeps.
pub const STDERR_LINES: usize = 40;

/// What a compile produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// `--genco`: a bundled code object with one image per arch, loaded at run
    /// time like a PTX module.
    CodeObject,
    /// `-c -fPIC`: a host object with the device code embedded (section
    /// `.hip_fatbin`), to be linked into a static library (launchers called
    /// from Rust through FFI).
    Object,
}

/// One hipcc invocation: `hipcc -x hip -std=c++17 -O3 --offload-arch=A…
/// (--genco | -c -fPIC) -I DIR… EXTRA… SOURCE -o OUTPUT`.
#[derive(Debug, Clone)]
pub struct CompileJob {
    pub source: PathBuf,
    pub output: PathBuf,
    pub kind: OutputKind,
    /// Offload arches (`gfx90a`) or target IDs (`gfx90a:xnack+`).
    pub arches: Vec<String>,
    /// `-I` dirs. Together with the source's own dir they are the "kernel
    /// tree", where upstream names such as `cuda_utils.cuh` are allowed (see
    /// [`deps::cuda_header_in`]).
    pub include_dirs: Vec<PathBuf>,
    /// Passed after the include dirs, to the compile and to the dependency scan.
    pub extra_flags: Vec<String>,
}

/// What a successful [`Hipcc::compile`] leaves.
#[derive(Debug, Clone)]
pub struct CompileOutput {
    /// `job.output`.
    pub output: PathBuf,
    /// A make rule `OUTPUT: DEPS…` at `OUTPUT.d` (e.g. `affine.co.d`), for
    /// build scripts (`cargo:rerun-if-changed`) and incremental builds.
    pub depfile: PathBuf,
    /// Every file the source includes, host and device side and all arches
    /// (union, first-seen order, the source first), as absolute paths.
    pub dependencies: Vec<PathBuf>,
    /// The compiler's stderr (warnings), empty when it said nothing.
    pub stderr: String,
    /// Wall time of the whole compile, dependency scan included.
    pub wall: Duration,
}

/// Flags every kernel compile gets: upstream builds its kernels as C++17 at -O3.
const BASE_FLAGS: &[&str] = &["-x", "hip", "-std=c++17", "-O3"];

/// The hipcc found on this machine. Every command it runs has
/// `HIP_PLATFORM=amd`: with CUDA installed, Debian's hipcc would otherwise
/// target NVIDIA.
#[derive(Debug)]
pub struct Hipcc {
    path: PathBuf,
    arch_checks: Mutex<HashMap<String, Result<(), String>>>,
}

impl Hipcc {
    /// Finds hipcc on PATH, then as `$ROCM_PATH/bin/hipcc`, `$HIP_PATH/bin/hipcc`,
    /// `/opt/rocm/bin/hipcc`.
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
        Ok(Self::at(path))
    }

    /// A given hipcc, not looked for.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Hipcc { path: path.into(), arch_checks: Mutex::new(HashMap::new()) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A command for this hipcc with `HIP_PLATFORM=amd`.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.env("HIP_PLATFORM", "amd");
        cmd
    }

    /// The HIP version hipcc reports (`HIP version: 5.2.21153-0` → `5.2.21153-0`).
    pub fn version(&self) -> Result<String, HipBuildError> {
        let out = self.command().arg("--version").output().map_err(HipBuildError::io(format!("running {} --version", self.path.display())))?;
        let text = String::from_utf8_lossy(&out.stdout);
        match text.lines().find_map(|l| l.trim().strip_prefix("HIP version:")) {
            Some(v) => Ok(v.trim().to_string()),
            None => Err(HipBuildError::CompileFailed {
                source_path: self.path.clone(),
                stderr: format!("`--version` printed no `HIP version:` line:\n{}", trim_lines(&format!("{text}{}", String::from_utf8_lossy(&out.stderr)))),
            }),
        }
    }

    /// Checks that hipcc can target `arch` by compiling an empty kernel for it
    /// (~0.5 s; the answer is cached in this `Hipcc`).
    pub fn check_arch(&self, arch: &str) -> Result<(), HipBuildError> {
        // held across the probe: parallel jobs wait for one probe per arch
        let mut cache = self.arch_checks.lock().unwrap_or_else(|e| e.into_inner());
        let result = match cache.get(arch) {
            Some(r) => r.clone(),
            None => {
                let r = self.probe_arch(arch)?;
                cache.insert(arch.to_string(), r.clone());
                r
            }
        };
        result.map_err(|message| HipBuildError::UnsupportedArch { arch: arch.to_string(), message })
    }

    fn probe_arch(&self, arch: &str) -> Result<Result<(), String>, HipBuildError> {
        let dir = tempfile::tempdir().map_err(HipBuildError::io("creating a temporary directory"))?;
        let src = dir.path().join("probe.hip");
        std::fs::write(&src, "extern \"C\" __global__ void candle_probe() {}\n").map_err(HipBuildError::io("writing the arch probe"))?;
        let mut cmd = self.command();
        cmd.args(BASE_FLAGS).arg(format!("--offload-arch={arch}")).arg("--genco").arg(&src).arg("-o").arg(dir.path().join("probe.co"));
        let out = run(&mut cmd)?;
        if out.status.success() {
            return Ok(Ok(()));
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| l.contains("error")).or_else(|| stderr.lines().find(|l| !l.trim().is_empty())).unwrap_or("hipcc failed");
        Ok(Err(first.trim().to_string()))
    }

    /// Compiles one job. In order: checks the arches ([`Hipcc::check_arch`]),
    /// scans the dependencies (`-M --cuda-device-only`, plus
    /// `-M --cuda-host-only` for [`OutputKind::Object`]) and fails if any is a
    /// CUDA header, compiles, writes the depfile.
    pub fn compile(&self, job: &CompileJob) -> Result<CompileOutput, HipBuildError> {
        let start = Instant::now();
        for arch in &job.arches {
            self.check_arch(arch)?;
        }
        let all_deps = self.scan(job)?;
        create_parent(&job.output)?;
        let mut cmd = self.base_command(job);
        match job.kind {
            OutputKind::CodeObject => cmd.arg("--genco"),
            OutputKind::Object => cmd.args(["-c", "-fPIC"]),
        };
        cmd.arg(&job.source).arg("-o").arg(&job.output);
        let out = run(&mut cmd)?;
        if !out.status.success() {
            return Err(failed(job, &out));
        }
        let (depfile, dependencies) = write_depfile(job, all_deps)?;
        Ok(CompileOutput { output: job.output.clone(), depfile, dependencies, stderr: String::from_utf8_lossy(&out.stderr).into_owned(), wall: start.elapsed() })
    }

    /// The device code of `job` for one of its arches alone (`--genco`), into
    /// [`arch_part`]: the per-arch half of [`Hipcc::finish_arch_parts`], so that
    /// the arches of one source compile in parallel.
    fn compile_arch_part(&self, job: &CompileJob, arch: &str) -> Result<String, HipBuildError> {
        self.check_arch(arch)?;
        let part = arch_part(&job.output, arch);
        create_parent(&part)?;
        let mut cmd = self.command();
        cmd.args(BASE_FLAGS).arg(format!("--offload-arch={arch}"));
        for dir in &job.include_dirs {
            cmd.arg("-I").arg(dir);
        }
        cmd.args(&job.extra_flags).arg("--genco").arg(&job.source).arg("-o").arg(&part);
        let out = run(&mut cmd)?;
        if !out.status.success() {
            return Err(failed(job, &out));
        }
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// After [`Hipcc::compile_arch_part`] for every arch of `job`: the
    /// dependency scan, the per-arch bundles merged into one, which is the
    /// code object, or, for an [`OutputKind::Object`], is embedded by a
    /// host-side compile (`--cuda-host-only` with clang's
    /// `-fcuda-include-gpubinary`, as the driver does after its own device
    /// compiles); then the depfile.
    fn finish_arch_parts(&self, job: &CompileJob, start: Instant, stderr: String) -> Result<CompileOutput, HipBuildError> {
        let all_deps = self.scan(job)?;
        let parts: Vec<PathBuf> = job.arches.iter().map(|a| arch_part(&job.output, a)).collect();
        let bundle = crate::code_object::merge_bundles(&parts)?;
        let mut stderr = stderr;
        match job.kind {
            OutputKind::CodeObject => std::fs::write(&job.output, &bundle).map_err(HipBuildError::io(format!("writing {}", job.output.display())))?,
            OutputKind::Object => {
                let mut fatbin = job.output.clone().into_os_string();
                fatbin.push(".hipfb");
                let fatbin = PathBuf::from(fatbin);
                std::fs::write(&fatbin, &bundle).map_err(HipBuildError::io(format!("writing {}", fatbin.display())))?;
                let mut cmd = self.base_command(job);
                cmd.args(["--cuda-host-only", "-Xclang", "-fcuda-include-gpubinary", "-Xclang"]).arg(&fatbin).args(["-c", "-fPIC"]).arg(&job.source).arg("-o").arg(&job.output);
                let out = run(&mut cmd)?;
                let _ = std::fs::remove_file(&fatbin);
                if !out.status.success() {
                    return Err(failed(job, &out));
                }
                stderr.push_str(&String::from_utf8_lossy(&out.stderr));
            }
        }
        for part in &parts {
            let _ = std::fs::remove_file(part);
        }
        let (depfile, dependencies) = write_depfile(job, all_deps)?;
        Ok(CompileOutput { output: job.output.clone(), depfile, dependencies, stderr, wall: start.elapsed() })
    }

    /// Every file `job`'s source includes (`-M --cuda-device-only`, plus
    /// `-M --cuda-host-only` for [`OutputKind::Object`]); an error if any is a
    /// CUDA header.
    fn scan(&self, job: &CompileJob) -> Result<Vec<String>, HipBuildError> {
        let mut own_dirs = job.include_dirs.clone();
        own_dirs.extend(job.source.parent().map(|p| if p.as_os_str().is_empty() { PathBuf::from(".") } else { p.to_path_buf() }));
        let mut sides = vec![("--cuda-device-only", "device code")];
        if job.kind == OutputKind::Object {
            sides.push(("--cuda-host-only", "host code"));
        }
        let mut all_deps: Vec<String> = Vec::new();
        for (flag, side) in sides {
            let mut cmd = self.base_command(job);
            cmd.args(["-M", flag]).arg(&job.source);
            let out = run(&mut cmd)?;
            if !out.status.success() {
                return Err(failed(job, &out));
            }
            let found = deps::parse_make_deps(&String::from_utf8_lossy(&out.stdout));
            if let Some(header) = deps::cuda_header_in(found.iter().map(String::as_str), &own_dirs) {
                return Err(HipBuildError::CudaHeaderIncluded { source_path: job.source.clone(), header, side });
            }
            all_deps.extend(found);
        }
        Ok(all_deps)
    }

    /// hipcc with the base flags, arches, include dirs and extra flags of `job`.
    fn base_command(&self, job: &CompileJob) -> Command {
        let mut cmd = self.command();
        cmd.args(BASE_FLAGS);
        for arch in &job.arches {
            cmd.arg(format!("--offload-arch={arch}"));
        }
        for dir in &job.include_dirs {
            cmd.arg("-I").arg(dir);
        }
        cmd.args(&job.extra_flags);
        cmd
    }
}

fn failed(job: &CompileJob, out: &Output) -> HipBuildError {
    HipBuildError::CompileFailed { source_path: job.source.clone(), stderr: trim_lines(&String::from_utf8_lossy(&out.stderr)) }
}

fn create_parent(path: &Path) -> Result<(), HipBuildError> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => std::fs::create_dir_all(parent).map_err(HipBuildError::io(format!("creating {}", parent.display()))),
        None => Ok(()),
    }
}

/// `OUTPUT.d`: a make rule naming every dependency (deduplicated, absolute).
fn write_depfile(job: &CompileJob, all_deps: Vec<String>) -> Result<(PathBuf, Vec<PathBuf>), HipBuildError> {
    let mut seen = std::collections::HashSet::new();
    let dependencies: Vec<PathBuf> =
        all_deps.into_iter().filter(|d| seen.insert(d.clone())).map(|d| std::path::absolute(&d).unwrap_or_else(|_| PathBuf::from(d))).collect();
    let mut depfile = job.output.clone().into_os_string();
    depfile.push(".d");
    let depfile = PathBuf::from(depfile);
    std::fs::write(&depfile, deps::make_rule(&job.output, &dependencies)).map_err(HipBuildError::io(format!("writing {}", depfile.display())))?;
    Ok((depfile, dependencies))
}

/// Where the single-arch bundle of `output` for `arch` goes while its job is built.
fn arch_part(output: &Path, arch: &str) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(format!(".{}.part", arch.replace(':', "_")));
    PathBuf::from(name)
}

fn run(cmd: &mut Command) -> Result<Output, HipBuildError> {
    cmd.output().map_err(HipBuildError::io(format!("running {}", cmd.get_program().to_string_lossy())))
}

/// The first [`STDERR_LINES`] lines, and how many were left out.
fn trim_lines(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut out = lines.iter().take(STDERR_LINES).copied().collect::<Vec<_>>().join("\n");
    if lines.len() > STDERR_LINES {
        out.push_str(&format!("\n… ({} more lines)", lines.len() - STDERR_LINES));
    }
    out
}

/// The outcome of one job of [`compile_all`].
#[derive(Debug)]
pub struct JobResult {
    pub job: CompileJob,
    pub result: Result<(), HipBuildError>,
    /// What the compile produced; `Some` exactly when `result` is `Ok`.
    pub output: Option<CompileOutput>,
    pub wall: Duration,
}

/// The number of threads [`compile_all`] uses for `parallelism == 0`: the available cores.
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `jobs` on `parallelism` threads (0: [`default_parallelism`]);
/// results in job order.
pub fn compile_all(hipcc: &Hipcc, jobs: Vec<CompileJob>, parallelism: usize) -> Vec<JobResult> {
    compile_all_with_progress(hipcc, jobs, parallelism, &|_| {})
}

/// [`compile_all`], calling `on_done` as each job finishes (from a worker thread).
///
/// A job for several arches is split: one task per arch (the device compile
/// of that arch alone), then one task that merges them (and, for an object,
/// compiles the host side). So a long source keeps every core busy instead
/// of compiling its arches one after another while the other threads idle.
pub fn compile_all_with_progress(hipcc: &Hipcc, jobs: Vec<CompileJob>, parallelism: usize, on_done: &(dyn Fn(&JobResult) + Sync)) -> Vec<JobResult> {
    let tasks: VecDeque<Task> = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| if job.arches.len() > 1 { (0..job.arches.len()).map(|a| Task::Arch(j, a)).collect::<Vec<_>>() } else { vec![Task::Whole(j)] })
        .collect();
    let threads = if parallelism == 0 { default_parallelism() } else { parallelism }.min(tasks.len().max(1));
    let state = Mutex::new(Schedule {
        queue: tasks,
        arches_left: jobs.iter().map(|j| j.arches.len()).collect(),
        first_error: jobs.iter().map(|_| None).collect(),
        stderr: jobs.iter().map(|_| String::new()).collect(),
        started: jobs.iter().map(|_| None).collect(),
        open: jobs.len(),
    });
    let ready = Condvar::new();
    let done = Mutex::new(Vec::new());
    let finish = |j: usize, start: Instant, result: Result<CompileOutput, HipBuildError>| {
        let (result, output) = match result {
            Ok(o) => (Ok(()), Some(o)),
            Err(e) => (Err(e), None),
        };
        let finished = JobResult { job: jobs[j].clone(), result, output, wall: start.elapsed() };
        on_done(&finished);
        done.lock().expect("results").push((j, finished));
    };
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let (task, start) = {
                    let mut st = state.lock().expect("schedule");
                    loop {
                        if let Some(task) = st.queue.pop_front() {
                            let j = task.job();
                            let start = *st.started[j].get_or_insert_with(Instant::now);
                            break (task, start);
                        }
                        if st.open == 0 {
                            return;
                        }
                        st = ready.wait(st).expect("schedule");
                    }
                };
                match task {
                    Task::Whole(j) => {
                        let result = hipcc.compile(&jobs[j]);
                        finish(j, start, result);
                        state.lock().expect("schedule").open -= 1;
                        ready.notify_all();
                    }
                    Task::Arch(j, a) => {
                        let result = hipcc.compile_arch_part(&jobs[j], &jobs[j].arches[a]);
                        let mut st = state.lock().expect("schedule");
                        match result {
                            Ok(stderr) => st.stderr[j].push_str(&stderr),
                            Err(e) => {
                                st.first_error[j].get_or_insert(e);
                            }
                        }
                        st.arches_left[j] -= 1;
                        if st.arches_left[j] == 0 {
                            // ahead of the remaining per-arch tasks: a finished job is reported at once
                            st.queue.push_front(Task::Merge(j));
                            drop(st);
                            ready.notify_all();
                        }
                    }
                    Task::Merge(j) => {
                        let (error, stderr) = {
                            let mut st = state.lock().expect("schedule");
                            (st.first_error[j].take(), std::mem::take(&mut st.stderr[j]))
                        };
                        let result = match error {
                            Some(e) => Err(e),
                            None => hipcc.finish_arch_parts(&jobs[j], start, stderr),
                        };
                        finish(j, start, result);
                        state.lock().expect("schedule").open -= 1;
                        ready.notify_all();
                    }
                }
            });
        }
    });
    let mut done = done.into_inner().expect("results");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// One unit of work of [`compile_all_with_progress`] (job index, arch index).
#[derive(Debug, Clone, Copy)]
enum Task {
    Whole(usize),
    Arch(usize, usize),
    Merge(usize),
}

impl Task {
    fn job(self) -> usize {
        match self {
            Task::Whole(j) | Task::Arch(j, _) | Task::Merge(j) => j,
        }
    }
}

struct Schedule {
    queue: VecDeque<Task>,
    /// Per job: per-arch tasks not finished yet.
    arches_left: Vec<usize>,
    first_error: Vec<Option<HipBuildError>>,
    /// Per job: the per-arch compiles' warnings.
    stderr: Vec<String>,
    started: Vec<Option<Instant>>,
    /// Jobs not reported yet.
    open: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_stderr_is_trimmed() {
        let text: String = (1..=45).map(|i| format!("line {i}\n")).collect();
        let t = trim_lines(&text);
        assert_eq!(t.lines().count(), 41);
        assert!(t.ends_with("line 40\n… (5 more lines)"), "{t}");
        assert_eq!(trim_lines("a\nb\n"), "a\nb");
    }

    #[test]
    fn a_missing_hipcc_is_an_io_error_not_a_panic() {
        let h = Hipcc::at("/nonexistent/hipcc");
        assert!(matches!(h.check_arch("gfx90a"), Err(HipBuildError::Io { .. })));
        assert!(matches!(h.version(), Err(HipBuildError::Io { .. })));
    }
}
