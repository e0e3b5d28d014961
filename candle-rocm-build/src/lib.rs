//! A Candle user's own CUDA kernels on AMD GPUs, from a build script: the ROCm
//! counterpart of `cudaforge` / `bindgen_cuda`.
//!
//! Given `.cu` files (each becomes one code object; [`Builder::kernel`], or every match of
//! [`Builder::kernel_glob`] as cudaforge's `source_glob`) and include directories (their
//! `.cuh`/`.h` headers; a kernel's own directory is one, as for `#include "x.cuh"`),
//! [`Builder::build`]
//!
//! * translates them to HIP with the candle-rocm translator, the rules that translate
//!   candle-kernels (a construct no rule covers fails the build with the translator's
//!   one-line error naming file, line and construct: [`Error::Translate`]);
//! * compiles each kernel file with hipcc into a code object for the arches
//!   candle-rocm-kernels would choose (`CANDLE_ROCM_ARCHS`, else the GPUs of the machine,
//!   else the current arches hipcc supports), with the same messages when hipcc is
//!   missing or an arch is unsupported (`hip_build::build_script`);
//! * keeps what is up to date: translated files are rewritten only when their text
//!   changes, and a code object is compiled again only when a file it depends on is
//!   newer or hipcc, its release, the arches or the flags changed;
//! * writes `rocm_kernels.rs` into `OUT_DIR`: one `pub const NAME: &[u8]` per kernel
//!   file (its code object, 4096-aligned, as `include_bytes!` gives PTX text to the CUDA
//!   tools) and `ARCHES`; [`Built::write`] writes the same file elsewhere, as cudaforge's
//!   bindings are written.
//!
//! [`Builder::build_lib`] is cudaforge's `build_lib` instead: kernels with `extern "C"`
//! launchers compiled into host objects and archived into `lib<name>.a`, for a crate whose
//! Rust side calls the launchers through FFI. nvcc's arguments go through
//! [`Builder::nvcc_arg`], which gives hipcc its own spelling of each or refuses it by name.
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     let built = candle_rocm_build::Builder::new()
//!         .kernel("src/kernels/my_ops.cu")
//!         .include_dir("src/kernels")
//!         .build()
//!         .unwrap_or_else(|e| panic!("{e}"));
//!     // src/lib.rs: mod rocm_kernels { include!(concat!(env!("OUT_DIR"), "/rocm_kernels.rs")); }
//!     // and rocm_kernels::MY_OPS is the code object for RocmDevice::get_or_load_custom_func
//!     let _ = built;
//! }
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use hip_build::build_script::{self, write_if_changed};
use hip_build::{CompileJob, OutputKind};
use translator::kernels::mapping::{NvccFlag, OWN_UNITS};
use translator::kernels::include_paths::own_headers;
use translator::kernels::{capability_without, is_refusal, translate_each, unit_failures, unit_reaches, KernelContext};
use translator::{TranslateError, TreeFile};

/// What can go wrong; each says what and where in one message.
#[derive(Debug)]
pub enum Error {
    /// A construct the translator does not cover: `path:line: construct: why`, the path
    /// as the builder was given it.
    Translate(TranslateError),
    /// hipcc missing, an unsupported arch or release, a kernel that does not compile.
    Hipcc(String),
    /// Reading the sources or writing into the output directory.
    Io(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Translate(e) => write!(f, "{e}"),
            Error::Hipcc(e) | Error::Io(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Error {}

/// A build script's own I/O (`std::fs::read(..)?` in a `main` that returns this crate's
/// [`Result`], as with cudaforge's).
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// This crate's result, as cudaforge's `Result` for a build script's `main`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kernels of one crate and where they go.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    kernels: Vec<PathBuf>,
    globs: Vec<String>,
    excluded: Vec<String>,
    include_dirs: Vec<PathBuf>,
    arches: Option<Vec<String>>,
    hip_on_cuda: Option<String>,
    hipcc: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    flags: Vec<String>,
    nvcc_args: Vec<String>,
}

/// A compiled kernel file.
#[derive(Debug, Clone)]
pub struct CodeObject {
    /// The constant's name in `rocm_kernels.rs` (the file stem, upper case).
    pub name: String,
    pub path: PathBuf,
}

/// What [`Builder::build_lib`] made.
#[derive(Debug, Clone)]
pub struct Library {
    /// The name to link (`cargo:rustc-link-lib=<name>`).
    pub name: String,
    /// `lib<name>.a`.
    pub path: PathBuf,
    /// The translated tree.
    pub hip_dir: PathBuf,
    pub arches: Vec<String>,
    /// Kernel files compiled by this call (0 when everything was up to date).
    pub compiled: usize,
    /// Seconds spent translating.
    pub translate_s: f64,
}

/// The output directory, the kernel files, and their translation (written to `hip_dir`).
struct Translated {
    out: PathBuf,
    kernels: Vec<PathBuf>,
    files: Vec<TreeFile>,
    hip_dir: PathBuf,
    translate_s: f64,
}

/// What [`Builder::build`] made.
#[derive(Debug, Clone)]
pub struct Built {
    /// The translated tree (kernels, headers, the compat headers they include).
    pub hip_dir: PathBuf,
    pub code_objects: Vec<CodeObject>,
    pub arches: Vec<String>,
    /// `rocm_kernels.rs`.
    pub rust_file: PathBuf,
    /// Code objects compiled by this call (0 when everything was up to date).
    pub compiled: usize,
    /// Seconds spent translating.
    pub translate_s: f64,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A `.cu` file compiled into a code object of its own.
    pub fn kernel(mut self, path: impl Into<PathBuf>) -> Self {
        self.kernels.push(path.into());
        self
    }

    /// Several `.cu` files (cudaforge's `source_files`, bindgen_cuda's `kernel_paths`).
    pub fn kernels<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.kernels.extend(paths.into_iter().map(|p| p.as_ref().to_path_buf()));
        self
    }

    /// Every `.cu` file in `dir` and below it (cudaforge's `source_dir`).
    pub fn kernel_dir(self, dir: impl AsRef<Path>) -> Self {
        let pattern = dir.as_ref().join("**").join("*.cu").to_string_lossy().into_owned();
        self.kernel_glob(pattern)
    }

    /// Every `.cu` file matching `pattern` (a glob such as `src/kernels/*.cu`), in sorted
    /// order; a pattern matching no file is an error when building.
    pub fn kernel_glob(mut self, pattern: impl Into<String>) -> Self {
        self.globs.push(pattern.into());
        self
    }

    /// cudaforge's `exclude`: kernel files whose name matches one of `patterns` (globs such as
    /// `dummy_*.cu`, matched against the file name) are left out of the build.
    pub fn exclude<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.excluded.extend(patterns.into_iter().map(|p| p.as_ref().to_string()));
        self
    }

    /// cudaforge's `get_compute_cap`: the NVIDIA compute capability the kernels are built for.
    ///
    /// An AMD GPU has every CUDA feature the translation gives, so this answers as a CUDA GPU
    /// with those features would:
    /// - where the kernels chosen so far use NVIDIA-only constructs that a compute capability
    ///   brought (Marlin's sm_80 `cp.async` and `mma.sync`), the newest capability without
    ///   them (75): a script that gates those kernels on it leaves them out and takes its
    ///   fallback, as on a CUDA GPU that lacks them;
    /// - otherwise `None`: the script's `unwrap_or(N)` or `if let Some(cc)` takes its own
    ///   default, as it would without a GPU.
    pub fn get_compute_cap(&self) -> Option<usize> {
        let kernels = self.kernel_files().ok()?;
        let (inputs, _) = self.inputs(&kernels).ok()?;
        let ctx = KernelContext { include_dirs: tree_include_dirs(), ..KernelContext::new("a crate's own kernels (candle-rocm-build)") };
        let (_, failures) = translate_each(&inputs, &ctx).ok()?;
        capability_without(failures.iter().map(|f| &f.error)).map(|cc| cc as usize)
    }

    /// A directory of headers (`.cuh`, `.h`, `.hpp`, `.inl`, ...: `include_paths::HEADER_EXTENSIONS`) the kernels include; translated too.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.include_dirs.push(dir.into());
        self
    }

    /// Several include directories (bindgen_cuda's `include_paths`).
    pub fn include_dirs<I, P>(mut self, dirs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.include_dirs.extend(dirs.into_iter().map(|d| d.as_ref().to_path_buf()));
        self
    }

    /// The arches to compile for, instead of the choice described at the crate's top.
    pub fn arches(mut self, arches: &[&str]) -> Self {
        self.arches = Some(arches.iter().map(|a| a.to_string()).collect());
        self
    }

    /// Cubins for this NVIDIA arch through hip-on-cuda instead of AMD code objects (default:
    /// [`HIP_ON_CUDA_VAR`] when set).
    pub fn hip_on_cuda(mut self, arch: impl Into<String>) -> Self {
        self.hip_on_cuda = Some(arch.into());
        self
    }

    /// This hipcc instead of the one found (PATH, `ROCM_PATH`, `HIP_PATH`, /opt/rocm):
    /// one ROCm release of several.
    pub fn hipcc(mut self, path: impl Into<PathBuf>) -> Self {
        self.hipcc = Some(path.into());
        self
    }

    /// Where everything is written (default: `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// An extra hipcc flag (`-DNAME=VALUE`, ...).
    pub fn flag(mut self, flag: impl Into<String>) -> Self {
        self.flags.push(flag.into());
        self
    }

    /// An nvcc argument (cudaforge's and bindgen_cuda's `arg`), given to hipcc as
    /// `translator::kernels::mapping::NVCC_FLAGS` says (`--use_fast_math` as `-ffast-math`,
    /// `--expt-relaxed-constexpr` as nothing, `-Xcompiler X` as `X`); one it has no row for
    /// is an error naming it when building.
    pub fn nvcc_arg(mut self, arg: impl AsRef<str>) -> Self {
        self.nvcc_args.push(arg.as_ref().to_string());
        self
    }

    /// Several nvcc arguments ([`Builder::nvcc_arg`]).
    pub fn nvcc_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.nvcc_args.extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// hipcc's flags: the nvcc arguments mapped, then [`Builder::flag`]'s.
    fn hipcc_flags(&self) -> Result<Vec<String>> {
        let mut flags = translator::kernels::compile_flags::hipcc_args(&self.nvcc_args).map_err(Error::Hipcc)?;
        flags.extend(self.flags.iter().cloned());
        Ok(flags)
    }

    /// Translates, compiles what is out of date, writes `rocm_kernels.rs`. Prints the
    /// `cargo:rerun-if-changed` lines of the sources.
    pub fn build(&self) -> Result<Built> {
        let t = self.translate()?;
        let (code_objects, arches, compiled) = match self.hip_on_cuda_arch() {
            Some(arch) => {
                let (code_objects, compiled) = build_hip_on_cuda(&t, &arch, None, &self.hipcc_flags()?)?;
                (code_objects, vec![arch], compiled)
            }
            None => {
                let (code_objects, arches, compiled, _) = self.build_hipcc(&t, OutputKind::CodeObject)?;
                (code_objects, arches, compiled)
            }
        };
        let rust_file = t.out.join("rocm_kernels.rs");
        write_if_changed(&rust_file, rust_constants(&code_objects, &arches).as_bytes()).map_err(Error::Io)?;
        Ok(Built { hip_dir: t.hip_dir, code_objects, arches, rust_file, compiled, translate_s: t.translate_s })
    }

    /// cudaforge's and bindgen_cuda's `build_lib`: the kernel files with their `extern "C"`
    /// launchers (host code that launches the kernels, called from Rust through FFI),
    /// compiled with hipcc into host objects with the device code embedded, archived into
    /// `out_file` (`lib<name>.a`). As with the CUDA tools, the build script prints the link
    /// lines (`cargo:rustc-link-search` of its directory, `cargo:rustc-link-lib=<name>`);
    /// the HIP runtime the launchers call comes with candle's `rocm` feature.
    ///
    /// With [`HIP_ON_CUDA_VAR`], nvcc compiles the launchers through
    /// `hip-on-cuda/build-kernels.sh` (which also links them once, to check that they
    /// export the `extern "C"` functions and need nothing undefined), and the same
    /// `lib<name>.a` holds nvcc's objects; this prints the link lines of CUDA's static
    /// runtime they call.
    pub fn build_lib(&self, out_file: impl AsRef<Path>) -> Result<Library> {
        let out_file = out_file.as_ref();
        let name = out_file
            .file_name()
            .and_then(|f| f.to_str())
            .and_then(|f| f.strip_prefix("lib")?.strip_suffix(".a"))
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::Io(format!("{}: a static library's file is named lib<name>.a", out_file.display())))?
            .to_string();
        let dir = out_file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::Io(format!("creating {}: {e}", dir.display())))?;
        let t = self.translate()?;
        // the host objects (device code embedded) and the hipcc whose llvm-ar may archive them
        let (objects, arches, compiled, hipcc) = match self.hip_on_cuda_arch() {
            Some(arch) => {
                let (_, compiled) = build_hip_on_cuda(&t, &arch, Some(&name), &self.hipcc_flags()?)?;
                // what nvcc's objects call: CUDA's runtime, linked statically as nvcc links it
                let cuda_lib = cuda_library_dir()?;
                println!("cargo:rustc-link-search=native={}", cuda_lib.display());
                for lib in ["static=cudart_static", "dylib=dl", "dylib=rt", "dylib=pthread"] {
                    println!("cargo:rustc-link-lib={lib}");
                }
                (code_objects(&t.kernels, &t.out.join("hip-on-cuda/obj"), "o")?, vec![arch], compiled, None)
            }
            None => {
                let (objects, arches, compiled, hipcc) = self.build_hipcc(&t, OutputKind::Object)?;
                (objects, arches, compiled, Some(hipcc))
            }
        };
        if compiled > 0 || !out_file.is_file() {
            let objects: Vec<&Path> = objects.iter().map(|o| o.path.as_path()).collect();
            build_script::archive(hipcc.as_ref(), out_file, &objects).map_err(Error::Hipcc)?;
        }
        let path = out_file.to_path_buf();
        Ok(Library { name, path, hip_dir: t.hip_dir, arches, compiled, translate_s: t.translate_s })
    }

    fn hip_on_cuda_arch(&self) -> Option<String> {
        println!("cargo:rerun-if-env-changed={HIP_ON_CUDA_VAR}");
        self.hip_on_cuda.clone().or_else(|| std::env::var(HIP_ON_CUDA_VAR).ok().filter(|a| !a.is_empty()))
    }

    /// The output directory, the kernel files, and their translation written to `hip/`
    /// there. Prints the `cargo:rerun-if-changed` lines of the sources.
    fn translate(&self) -> Result<Translated> {
        let out = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or_else(|| Error::Io("OUT_DIR is not set: call Builder::build from build.rs, or give Builder::out_dir".into()))?),
        };
        println!("cargo:rerun-if-env-changed=CANDLE_ROCM_ARCHS");
        let kernels = self.kernel_files()?;
        let (inputs, origins) = self.inputs(&kernels)?;
        for origin in &origins {
            println!("cargo:rerun-if-changed={}", origin.display());
        }
        // a file added where a glob looks changes that directory
        for pattern in &self.globs {
            let fixed: PathBuf = Path::new(pattern).components().take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '['])).collect();
            println!("cargo:rerun-if-changed={}", if fixed.as_os_str().is_empty() { Path::new(".") } else { &fixed }.display());
        }

        let start = Instant::now();
        let ctx = KernelContext { include_dirs: tree_include_dirs(), ..KernelContext::new("a crate's own kernels (candle-rocm-build)") };
        let (translated, failures) = translate_each(&inputs, &ctx).map_err(|e| Error::Translate(with_origin(e, &inputs, &origins)))?;
        // a construct no rule covers stops the build; a unit with no AMD meaning (NVIDIA-only, a
        // library outside CUDA) is left out of it, said as a warning naming the construct: code
        // that calls its launchers fails to link, naming them
        if let Some(f) = failures.iter().find(|f| !is_refusal(&f.error)) {
            return Err(Error::Translate(with_origin(f.error.clone(), &inputs, &origins)));
        }
        let refused = unit_failures(&unit_reaches(&inputs, &tree_include_dirs()), &failures);
        for (unit, e) in &refused {
            println!("cargo:warning=candle-rocm-build: {unit} left out of the AMD build: {}", with_origin((*e).clone(), &inputs, &origins));
        }
        let kernels: Vec<PathBuf> = kernels.into_iter().filter(|k| !refused.contains_key(&k.file_name().unwrap_or_default().to_string_lossy().into_owned())).collect();
        if kernels.is_empty() {
            let first = failures.first().map(|f| f.error.clone()).ok_or_else(|| Error::Io("no kernel file left to build".into()))?;
            return Err(Error::Translate(with_origin(first, &inputs, &origins)));
        }
        let translate_s = start.elapsed().as_secs_f64();
        let hip_dir = out.join("hip");
        // candle-rocm's own units (flash attention's run_mha) are Candle's, not this crate's
        let files: Vec<TreeFile> = translated.files.into_iter().filter(|f| !OWN_UNITS.iter().any(|(unit, _, _)| f.rel_path == *unit)).collect();
        for file in &files {
            write_if_changed(&hip_dir.join(&file.rel_path), &file.contents).map_err(Error::Io)?;
        }
        Ok(Translated { out, kernels, files, hip_dir, translate_s })
    }

    fn locate_hipcc(&self) -> Result<hip_build::Hipcc> {
        match &self.hipcc {
            Some(path) => Ok(hip_build::Hipcc::at(path)),
            None => build_script::locate_hipcc("candle-rocm-build compiles this crate's kernels for AMD GPUs", "builds without ROCm need no hipcc").map_err(Error::Hipcc),
        }
    }

    /// The AMD build: each kernel file's code object (or host object, for a library) for the
    /// chosen arches, with hipcc, compiled again only when out of date. Returns the outputs,
    /// the arches, how many were compiled and the hipcc used.
    fn build_hipcc(&self, t: &Translated, kind: OutputKind) -> Result<(Vec<CodeObject>, Vec<String>, usize, hip_build::Hipcc)> {
        let (out, hip_dir) = (t.out.as_path(), t.hip_dir.as_path());
        let hipcc = self.locate_hipcc()?;
        let version = build_script::check_version(&hipcc).map_err(Error::Hipcc)?;
        let arches = match &self.arches {
            Some(a) => a.clone(),
            None => build_script::choose_arches(&hipcc, &version).map_err(Error::Hipcc)?,
        };
        let (dir, ext, stamp_name) = match kind {
            OutputKind::CodeObject => (out.to_path_buf(), "co", "candle-rocm-build-stamp.txt"),
            OutputKind::Object => (out.join("lib-objects"), "o", "candle-rocm-build-lib-stamp.txt"),
        };
        let code_objects = code_objects(&t.kernels, &dir, ext)?;
        let flags = self.hipcc_flags()?;
        let jobs: Vec<CompileJob> = code_objects
            .iter()
            .map(|c| CompileJob {
                source: hip_dir.join(c.path.with_extension("hip").file_name().unwrap_or_default()),
                output: c.path.clone(),
                kind,
                arches: arches.clone(),
                include_dirs: vec![hip_dir.to_path_buf()],
                extra_flags: flags.clone(),
            })
            .collect();

        // what changes every output: a new value recompiles all of them
        let stamp = format!("hipcc={} {version}\narches={}\nflags={}\n", hipcc.path().display(), arches.join(","), flags.join(" "));
        let stamp_path = out.join(stamp_name);
        let stamp_ok = std::fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp);
        if !stamp_ok {
            let _ = std::fs::remove_file(&stamp_path);
        }
        let stale: Vec<CompileJob> = jobs.iter().filter(|j| !stamp_ok || !build_script::up_to_date(&j.output)).cloned().collect();
        let compiled = stale.len();
        let failures: Vec<String> = hip_build::compile_all(&hipcc, stale, 0)
            .into_iter()
            .filter_map(|r| r.result.err().map(|e| format!("compiling {} (translated from the kernel of the same name) for {}:\n{e}", r.job.source.display(), arches.join(","))))
            .collect();
        if !failures.is_empty() {
            return Err(Error::Hipcc(failures.join("\n")));
        }
        write_if_changed(&stamp_path, stamp.as_bytes()).map_err(Error::Io)?;
        Ok((code_objects, arches, compiled, hipcc))
    }

    /// The translator's inputs (paths relative to their kernel's or include directory's
    /// root) and, in the same order, where each came from.
    fn inputs(&self, kernels: &[PathBuf]) -> Result<(Vec<TreeFile>, Vec<PathBuf>)> {
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        // (directory, whether its subdirectories count): the kernels' own, then the include dirs
        let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
        for kernel in kernels {
            if kernel.extension().and_then(|e| e.to_str()) != Some("cu") {
                return Err(Error::Io(format!("{}: a kernel file is a .cu file", kernel.display())));
            }
            files.push((kernel.file_name().unwrap_or_default().to_string_lossy().into_owned(), kernel.clone()));
            // the kernel's own directory and below it: its quoted includes sit beside it or
            // under it (`flashinfer/attention/decode.cuh`)
            let own = kernel.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            if !dirs.iter().any(|(d, _)| *d == own) {
                dirs.push((own, true));
            }
        }
        dirs.extend(self.include_dirs.iter().map(|d| (d.clone(), true)));
        for (dir, below) in &dirs {
            headers(dir, dir, *below, &mut files)?;
        }
        files.sort();
        files.dedup_by(|a, b| a.0 == b.0 && same_file(&a.1, &b.1));
        if let Some(w) = files.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::Io(format!("{} and {} would both be {} in the translated tree", w[0].1.display(), w[1].1.display(), w[0].0)));
        }
        let mut candidates = Vec::new();
        let mut paths = std::collections::BTreeMap::new();
        for (rel, path) in files {
            let contents = std::fs::read(&path).map_err(|e| Error::Io(format!("reading {}: {e}", path.display())))?;
            candidates.push(TreeFile { rel_path: rel.clone(), contents });
            paths.insert(rel, path);
        }
        // the kernels and the headers they reach, as hipcc finds them (-I the tree's root);
        // other headers of those directories (a Metal header, a C++ one) are not this build's
        let inputs = own_headers(&candidates, &tree_include_dirs());
        let origins = inputs.iter().map(|f| paths[&f.rel_path].clone()).collect();
        Ok((inputs, origins))
    }

    /// The kernel files: those given one by one, then each glob's matches (sorted).
    fn kernel_files(&self) -> Result<Vec<PathBuf>> {
        let mut kernels = self.kernels.clone();
        for pattern in &self.globs {
            let paths = glob::glob(pattern).map_err(|e| Error::Io(format!("the kernel glob `{pattern}`: {e}")))?;
            let mut found = Vec::new();
            for path in paths {
                found.push(path.map_err(|e| Error::Io(format!("the kernel glob `{pattern}`: {e}")))?);
            }
            if found.is_empty() {
                return Err(Error::Io(format!("the kernel glob `{pattern}` matches no file")));
            }
            found.sort();
            kernels.extend(found);
        }
        let excluded = self
            .excluded
            .iter()
            .map(|p| glob::Pattern::new(p).map_err(|e| Error::Io(format!("the excluded pattern `{p}`: {e}"))))
            .collect::<Result<Vec<_>>>()?;
        kernels.retain(|k| !excluded.iter().any(|p| k.file_name().is_some_and(|n| p.matches(&n.to_string_lossy()))));
        if kernels.is_empty() {
            return Err(Error::Io("no kernel file: give Builder::kernel a .cu file, or Builder::kernel_glob a pattern".into()));
        }
        Ok(kernels)
    }
}

/// `CANDLE_ROCM_BUILD_HIP_ON_CUDA=sm_90`: for running the translated kernels on an NVIDIA
/// GPU through hip-on-cuda (this repository's way of checking them; no AMD GPU is
/// involved): each kernel file becomes a cubin for that arch, compiled with nvcc by
/// `hip-on-cuda/build-kernels.sh` (`HIP_ON_CUDA_DIR`, else the checkout's `hip-on-cuda/`),
/// and `ARCHES` is that arch.
pub const HIP_ON_CUDA_VAR: &str = "CANDLE_ROCM_BUILD_HIP_ON_CUDA";

/// The hip-on-cuda build of [`HIP_ON_CUDA_VAR`]: the translated tree through
/// `build-kernels.sh` (every unit into `lib<library>.so` when a library is asked for),
/// with the flags nvcc takes as hipcc does (`-D`, `-O`, `-std`: rows `Same` of
/// `NVCC_FLAGS`), again only when a translated file, the arch, the flags or the library
/// changed. Returns the code
/// objects (cubins; none for a library) and how many units were compiled.
fn build_hip_on_cuda(t: &Translated, arch: &str, library: Option<&str>, flags: &[String]) -> Result<(Vec<CodeObject>, usize)> {
    let flags: Vec<&str> = flags.iter().map(String::as_str).filter(|f| translator::kernels::compile_flags::row(f) == Some(NvccFlag::Same)).collect();
    let flags = flags.join(" ");
    println!("cargo:rerun-if-env-changed=HIP_ON_CUDA_DIR");
    println!("cargo:rerun-if-env-changed=NVCC");
    let dir = std::env::var_os("HIP_ON_CUDA_DIR").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../hip-on-cuda"), PathBuf::from);
    let script = dir.join("build-kernels.sh");
    if !script.is_file() {
        return Err(Error::Hipcc(format!("{HIP_ON_CUDA_VAR}={arch}: {} not found (it is in a checkout of candle-rocm: set HIP_ON_CUDA_DIR to its hip-on-cuda/)", script.display())));
    }
    let co_dir = t.out.join("hip-on-cuda");
    let (code_objects, outputs) = match library {
        None => {
            let code_objects = code_objects(&t.kernels, &co_dir, "co")?;
            let outputs = code_objects.iter().map(|c| c.path.clone()).collect();
            (code_objects, outputs)
        }
        Some(name) => (Vec::new(), vec![co_dir.join(format!("lib{name}.so"))]),
    };
    // FNV-1a over the translated files, the arch and the library: what the outputs are made from
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in t.files.iter().flat_map(|f| f.rel_path.as_bytes().iter().chain(&f.contents)).chain(arch.as_bytes()).chain(library.unwrap_or("").as_bytes()).chain(flags.as_bytes()) {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let stamp = format!("hip-on-cuda {arch} {hash:016x}\n");
    let stamp_path = t.out.join(if library.is_some() { "candle-rocm-build-lib-stamp.txt" } else { "candle-rocm-build-stamp.txt" });
    if std::fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp) && outputs.iter().all(|p| p.is_file()) {
        return Ok((code_objects, 0));
    }
    let _ = std::fs::remove_file(&stamp_path);
    let mut command = std::process::Command::new("bash");
    command.arg(&script).arg(&t.hip_dir).arg(&co_dir).arg(arch).env("CANDLE_KERNELS_REFERENCE", "none").env("NVCC_EXTRA_FLAGS", &flags);
    if let Some(name) = library {
        command.env("STATIC_LIBRARY", "*").env("LAUNCHERS_LIB", name);
    }
    let run = command.output().map_err(|e| Error::Hipcc(format!("running {}: {e}", script.display())))?;
    if !run.status.success() {
        return Err(Error::Hipcc(format!("{} for {arch} failed:\n{}{}", script.display(), String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr))));
    }
    if let Some(missing) = outputs.iter().find(|p| !p.is_file()) {
        return Err(Error::Hipcc(format!("{} made no {}", script.display(), missing.display())));
    }
    write_if_changed(&stamp_path, stamp.as_bytes()).map_err(Error::Io)?;
    Ok((code_objects, t.kernels.len()))
}

/// The CUDA toolkit's library directory holding `libcudart_static.a`: beside nvcc (`NVCC`,
/// else on PATH, else /usr/local/cuda/bin/nvcc), `lib64` in CUDA's installs, `lib` in the
/// pip wheels'.
fn cuda_library_dir() -> Result<PathBuf> {
    let nvcc = std::env::var_os("NVCC")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvcc")).find(|n| n.is_file())))
        .unwrap_or_else(|| PathBuf::from("/usr/local/cuda/bin/nvcc"));
    let home = nvcc.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
    ["lib64", "lib"]
        .iter()
        .map(|d| home.join(d))
        .find(|d| d.join("libcudart_static.a").is_file())
        .ok_or_else(|| Error::Hipcc(format!("{HIP_ON_CUDA_VAR}: no libcudart_static.a in {home}/lib64 or {home}/lib (the toolkit of {}: set NVCC)", nvcc.display(), home = home.display())))
}

/// Each kernel file's output in `dir` (`<stem>.<ext>`) and its constant: the stem in
/// upper case, `-` and `.` as `_` (cudaforge's names); two of one name are an error.
fn code_objects(kernels: &[PathBuf], dir: &Path, ext: &str) -> Result<Vec<CodeObject>> {
    let mut code_objects: Vec<CodeObject> = Vec::new();
    for kernel in kernels {
        let stem = kernel.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let name = stem.to_uppercase().replace(['-', '.'], "_");
        if code_objects.iter().any(|c| c.name == name) {
            return Err(Error::Io(format!("two kernel files give the constant {name}: name them apart ({})", kernel.display())));
        }
        code_objects.push(CodeObject { name, path: dir.join(format!("{stem}.{ext}")) });
    }
    Ok(code_objects)
}

impl Built {
    /// Writes `rocm_kernels.rs`' constants to `path` as well (as cudaforge's bindings are
    /// written where the build script says); rewritten only when its text changes.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let text = rust_constants(&self.code_objects, &self.arches);
        write_if_changed(path.as_ref(), text.as_bytes()).map_err(Error::Io)
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok().zip(b.canonicalize().ok()).is_some_and(|(a, b)| a == b)
}

/// The translated tree's include directories: its root, which hipcc gets as `-I` (the kernels'
/// directories and the include directories are all rooted there).
fn tree_include_dirs() -> Vec<String> {
    vec![String::new()]
}

/// The headers in `dir` (and below it when `below`), relative to `root`.
fn headers(root: &Path, dir: &Path, below: bool, files: &mut Vec<(String, PathBuf)>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Io(format!("reading the include directory {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if below {
                headers(root, &path, true, files)?;
            }
        } else if translator::kernels::include_paths::is_header(&path.to_string_lossy()) {
            let rel = path.strip_prefix(root).unwrap_or(&path).components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            files.push((rel, path));
        }
    }
    Ok(())
}

/// The translator's error with the file as the builder was given it.
fn with_origin(e: TranslateError, inputs: &[TreeFile], origins: &[PathBuf]) -> TranslateError {
    let origin = |file: &str| inputs.iter().position(|i| i.rel_path == file).map_or_else(|| file.to_string(), |i| origins[i].display().to_string());
    match e {
        TranslateError::Unsupported { file, line, construct, reason } => TranslateError::Unsupported { file: origin(&file), line, construct, reason },
        TranslateError::NvidiaOnly { file, line, construct, cause, since_sm } => TranslateError::NvidiaOnly { file: origin(&file), line, construct, cause, since_sm },
        TranslateError::NeedsLibrary { file, line, construct, library } => TranslateError::NeedsLibrary { file: origin(&file), line, construct, library },
        TranslateError::NotUtf8 { file, line } => TranslateError::NotUtf8 { file: origin(&file), line },
        TranslateError::Lex { file, line, what } => TranslateError::Lex { file: origin(&file), line, what },
    }
}

/// `rocm_kernels.rs`: each code object 4096-aligned (loadable in place), and the arches.
fn rust_constants(code_objects: &[CodeObject], arches: &[String]) -> String {
    format!(
        "// Written by candle-rocm-build: this crate's kernels as code objects.\n/// The arches (target IDs) every code object has an image for.\n#[allow(dead_code)]\npub const ARCHES: &[&str] = &{arches:?};\n{}",
        build_script::code_object_consts(code_objects.iter().map(|c| (c.name.as_str(), c.path.as_path())))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excluded_file_names_leave_the_glob() {
        let dir = std::env::temp_dir().join(format!("candle-rocm-build-exclude-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["marlin_f16.cu", "dummy_marlin.cu", "gemv.cu", "gemv_dummy.cu"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let pattern = format!("{}/*.cu", dir.display());
        let names = |b: &Builder| -> Vec<String> { b.kernel_files().unwrap().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect() };
        // mistral.rs 0.8.1's build script on an sm_80+ GPU, then below sm_80
        assert_eq!(names(&Builder::new().kernel_glob(&pattern).exclude(["dummy_*.cu", "*_dummy.cu"])), ["gemv.cu", "marlin_f16.cu"]);
        assert_eq!(names(&Builder::new().kernel_glob(&pattern).exclude(vec!["marlin_*.cu"])), ["dummy_marlin.cu", "gemv.cu", "gemv_dummy.cu"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
