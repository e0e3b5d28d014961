//! Compiles the HIP translation of candle-kernels (`generated/kernels`) with hipcc:
//! code-object units into bundles embedded by `code_objects.rs`, static-library
//! units (launchers called through `ffi`) into `libcandle_rocm_kernels_static.a`,
//! or, with `CANDLE_ROCM_LAUNCHERS=shared`, into `libcandle_rocm_launchers.so`.
//! See the crate docs (src/lib.rs) for the environment variables.

use std::path::{Path, PathBuf};

use hip_build::{CompileJob, Hipcc, OutputKind};

/// The static library of launchers (the default).
const STATIC_LIB: &str = "candle_rocm_kernels_static";
/// The shared library of launchers (`CANDLE_ROCM_LAUNCHERS=shared`); its soname is `lib{SHARED_LIB}.so`.
const SHARED_LIB: &str = "candle_rocm_launchers";

/// How the static-library units (launchers) are linked: `CANDLE_ROCM_LAUNCHERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launchers {
    /// Archived and linked statically (the default).
    Static,
    /// Linked into `lib{SHARED_LIB}.so`, which another build of the same sources
    /// (the NVIDIA one, `hip-on-cuda/build-kernels.sh`) can replace at run time.
    Shared,
}

fn launchers_from_env() -> Result<Launchers> {
    match std::env::var("CANDLE_ROCM_LAUNCHERS").ok().as_deref() {
        None | Some("") | Some("static") => Ok(Launchers::Static),
        Some("shared") => Ok(Launchers::Shared),
        Some(other) => Err(format!(
            "CANDLE_ROCM_LAUNCHERS={other}: expected `static` (the default) or `shared`"
        )),
    }
}

type Result<T> = std::result::Result<T, String>;

/// `CANDLE_ROCM_MMQ_MFMA=0`: ggml's dp4a tiles for quantized matmul on CDNA
/// instead of its MFMA tiles (`-DCANDLE_HIP_NO_MMQ_MFMA`, ggml's
/// `GGML_HIP_NO_MMQ_MFMA`, read by generated/kernels/candle_ggml_hip_arch.h and
/// by the launchers' host code). MFMA is the default, as in ggml.
fn switch_defines() -> Result<Vec<String>> {
    match std::env::var("CANDLE_ROCM_MMQ_MFMA").ok().as_deref() {
        None | Some("") | Some("1") => Ok(vec![]),
        Some("0") => Ok(vec!["-DCANDLE_HIP_NO_MMQ_MFMA".to_string()]),
        Some(other) => Err(format!("CANDLE_ROCM_MMQ_MFMA={other}: expected 1 (ggml's MFMA tiles on CDNA, the default) or 0 (its dp4a tiles)")),
    }
}

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {}", message.replace('\n', "\n  "));
        std::process::exit(1);
    }
}

fn env_path(var: &str) -> Result<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .ok_or_else(|| format!("cargo did not set {var}"))
}

fn run() -> Result<()> {
    for var in [
        "CANDLE_ROCM_ARCHS",
        "CANDLE_ROCM_KERNELS_DIR",
        "CANDLE_ROCM_LAUNCHERS",
        "CANDLE_ROCM_MMQ_MFMA",
        "CANDLE_ROCM_KERNELS_CACHE",
        "ROCM_PATH",
        "HIP_PATH",
        "AR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = env_path("OUT_DIR")?;
    let launchers = launchers_from_env()?;
    let kernels_dir = match std::env::var_os("CANDLE_ROCM_KERNELS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => env_path("CARGO_MANIFEST_DIR")?.join("../../generated/kernels"),
    };
    let kernels_dir = kernels_dir.canonicalize().map_err(|e| {
        format!("kernel sources not found at {}: {e}\nrun `cargo xtask regen`, or set CANDLE_ROCM_KERNELS_DIR to a generated/kernels directory", kernels_dir.display())
    })?;
    let manifest_path = kernels_dir
        .parent()
        .unwrap_or(&kernels_dir)
        .join("MANIFEST.toml");
    watch(&kernels_dir)?;
    println!("cargo:rerun-if-changed={}", manifest_path.display());
    let manifest = hip_build::plan::KernelsManifest::read(&manifest_path)?;

    let hipcc = hip_build::build_script::locate_hipcc("the `rocm` feature compiles Candle's kernels for AMD GPUs", "builds without the `rocm` feature need no ROCm")?;
    let version = hip_build::build_script::check_version(&hipcc)?;
    let arches = hip_build::build_script::choose_arches(&hipcc, &version)?;

    // the Rust files regen writes beside the kernels, included by lib.rs from OUT_DIR
    for (name, what) in [("ffi.rs", "the launcher declarations are"), ("quantized_mmq_tiles.rs", "the launcher's MMQ tile table is")] {
        let path = kernels_dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}\n{what} missing (`{name}`, written by `cargo xtask regen`)", path.display()))?;
        write(&out_dir.join(name), &text)?;
    }

    let mut jobs =
        hip_build::plan::kernel_jobs(&kernels_dir, &out_dir.join("hip"), &arches, &manifest)
            .map_err(|e| format!("listing {}: {e}", kernels_dir.display()))?;
    let defines = switch_defines()?;
    for job in &mut jobs {
        job.extra_flags.extend(defines.iter().cloned());
    }
    if jobs.is_empty() {
        return Err(format!("no .hip files under {}", kernels_dir.display()));
    }
    // Everything that changes every output: a new value recompiles all units.
    let stamp = format!(
        "hipcc={}\narches={}\nkernels={}\ndefines={}\nunit_flags={:?}\n",
        hipcc.path().display(),
        arches.join(","),
        kernels_dir.display(),
        defines.join(" "),
        manifest.unit_flags
    );
    let stamp_path = out_dir.join("build-stamp.txt");
    let stamp_ok = std::fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp);
    let stale: Vec<CompileJob> = jobs
        .iter()
        .filter(|j| !stamp_ok || !hip_build::build_script::up_to_date(&j.output))
        .cloned()
        .collect();
    // CANDLE_ROCM_KERNELS_CACHE: units compiled by another build of the same sources
    let cache = hip_build::cache::KernelCache::from_env(&hipcc, &kernels_dir)?;
    let stale: Vec<CompileJob> = match &cache {
        Some(cache) => stale.into_iter().filter(|j| cache.fetch(j).is_none()).collect(),
        None => stale,
    };
    let threads = std::env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if !stamp_ok {
        let _ = std::fs::remove_file(&stamp_path);
    }
    let failures: Vec<String> = hip_build::compile_all(&hipcc, stale, threads)
        .into_iter()
        .filter_map(|r| {
            r.result.err().map(|e| {
                format!(
                    "compiling {} for {}:\n{e}",
                    r.job.source.display(),
                    arches.join(",")
                )
            })
        })
        .collect();
    if !failures.is_empty() {
        return Err(failures.join("\n"));
    }
    if let Some(cache) = &cache {
        for job in &jobs {
            cache.store(job)?;
        }
    }
    write(&stamp_path, &stamp)?;

    let (objects, modules): (Vec<&CompileJob>, Vec<&CompileJob>) =
        jobs.iter().partition(|j| j.kind == OutputKind::Object);
    write_modules(&out_dir, &modules, &arches)?;
    if !objects.is_empty() {
        println!("cargo:rustc-link-search=native={}", out_dir.display());
        match launchers {
            Launchers::Static => {
                let sources: Vec<(&Path, &Path)> = objects.iter().map(|j| (j.source.as_path(), j.output.as_path())).collect();
                hip_build::build_script::check_no_cxx_runtime(&sources)?;
                let objects: Vec<&Path> = objects.iter().map(|j| j.output.as_path()).collect();
                hip_build::build_script::archive(Some(&hipcc), &out_dir.join(format!("lib{STATIC_LIB}.a")), &objects)?;
                // without a kind, as upstream links its `libmoe.a` (`rustc-link-lib=moe`): not bundled
                // into this crate's rlib but given to the linker after the native libraries of the
                // crates that depend on this one, so that a crate with its own copy of a launcher
                // (mistralrs-core's `moe_gemm_wmma`) links as it does on CUDA
                println!("cargo:rustc-link-lib={STATIC_LIB}");
                // The objects need only the HIP runtime (hipLaunchKernel, __hipRegisterFatBinary, …), not C++'s ABI runtime
                // (checked above): amdhip64 and its search path come from candle-rocm-hip.
            }
            Launchers::Shared => {
                link_shared(&hipcc, &out_dir, &objects)?;
                println!("cargo:rustc-link-lib=dylib={SHARED_LIB}");
            }
        }
    }
    Ok(())
}

/// `cargo:rerun-if-changed` for every file and directory (new files) under `dir`.
fn watch(dir: &Path) -> Result<()> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            watch(&path)?;
        } else {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Ok(())
}

/// `code_objects.rs` (one aligned `&[u8]` per module) and `modules.rs` (`Id`, `ALL_IDS`, `ARCHES`, the `Module` constants).
fn write_modules(out_dir: &Path, modules: &[&CompileJob], arches: &[String]) -> Result<()> {
    let mut named: Vec<(String, String, &Path)> = modules
        .iter()
        .map(|j| {
            let stem = j
                .source
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let camel: String = stem
                .split('_')
                .map(|w| w[..1.min(w.len())].to_uppercase() + &w[1.min(w.len())..])
                .collect();
            (stem.to_uppercase(), camel, j.output.as_path())
        })
        .collect();
    named.sort();
    if let Some(w) = named.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "two code-object units are both named {}: {} and {}",
            w[0].0,
            w[0].2.display(),
            w[1].2.display()
        ));
    }
    let code = format!(
        "// Generated by build.rs: the code object of each module, 4096-aligned so it can be loaded in place.\n{}",
        hip_build::build_script::code_object_consts(named.iter().map(|(upper, _, output)| (upper.as_str(), *output)))
    );
    let mut ids = String::from("/// One per kernel module (code-object unit), in [`ALL_IDS`] order.\n#[repr(u32)]\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]\npub enum Id {\n");
    let mut all = format!("/// Every [`Id`], in order: `ALL_IDS[m.index()]` is the id of module `m`.\npub const ALL_IDS: [Id; {}] = [\n", named.len());
    let mut all_modules = format!(
        "/// Every [`Module`], in [`ALL_IDS`] order.\npub const ALL_MODULES: [Module; {}] = [\n",
        named.len()
    );
    let mut consts = format!("/// The arches (target IDs) every code object has an image for.\npub const ARCHES: &[&str] = &{arches:?};\n");
    for (i, (upper, camel, _)) in named.iter().enumerate() {
        ids.push_str(&format!("    {camel},\n"));
        all.push_str(&format!("    Id::{camel},\n"));
        all_modules.push_str(&format!("    {upper},\n"));
        consts.push_str(&format!(
            "pub const {upper}: Module = Module {{ index: {i}, name: {:?}, code_object: code_objects::{upper} }};\n",
            upper.to_lowercase()
        ));
    }
    write(&out_dir.join("code_objects.rs"), &code)?;
    write(
        &out_dir.join("modules.rs"),
        &format!("{ids}}}\n\n{all}];\n\n{all_modules}];\n\n{consts}"),
    )
}

/// Links the host objects into `lib{SHARED_LIB}.so` (soname the same) with hipcc, against the HIP runtime.
fn link_shared(hipcc: &Hipcc, out_dir: &Path, objects: &[&CompileJob]) -> Result<()> {
    let lib = out_dir.join(format!("lib{SHARED_LIB}.so"));
    let out = hipcc
        .command()
        .arg("-shared")
        .arg(format!("-Wl,-soname,lib{SHARED_LIB}.so"))
        .args(objects.iter().map(|j| &j.output))
        .arg("-o")
        .arg(&lib)
        .output()
        .map_err(|e| format!("running {}: {e}", hipcc.path().display()))?;
    if !out.status.success() {
        return Err(format!(
            "linking {} failed:\n{}",
            lib.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    hip_build::build_script::write_if_changed(path, text.as_bytes())
}
