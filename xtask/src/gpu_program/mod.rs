//! `cargo xtask gpu-program NAME`: builds, here (no GPU and no Rust on the GPU
//! machine), one of the programs run on the GPU machine (`programs::PROGRAMS`, one
//! row each: the backend benchmark, numerics, collectives, candle-examples' parity
//! run, the tensor-parallel program) into a folder OUT, and packs it into
//! `OUT.tar.xz`, what is carried there.
//!
//! * ROCm binaries: linked as the GPU bundle's binaries are (`gpu_bundle::link`:
//!   ROCm 7.2's ABI through the stub link directory, the bundle's build
//!   environment), built in the bundle's target directory (target/gpu-bundle) so
//!   that the dependencies shared with the bundle are not rebuilt; OUT/lib laid out
//!   as the bundle's `lib/`; their HIP/rocBLAS/rocRAND/RCCL imports checked as the
//!   bundle's, and each binary must need the row's ROCm sonames, resolved to
//!   OUT/lib, and nothing else missing but the launchers' library (built from the
//!   kernels on the GPU machine).
//! * Stock CUDA binaries: crates.io Candle with feature `cuda`, CUDA 13.0's nvcc
//!   (`cuda13`); none may need a CUDA 11/12 library.
//! * Host programs (the made-up models' maker) and C libraries (the call probe).
//!
//! `--skip cuda` or `--skip rocm` builds one side only (a check here; nothing is
//! packed then). Every build runs under `nice -n 19`.

mod cuda13;
mod dao;
mod programs;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::gpu_bundle::{self, pack, stubs};
use crate::workspace::workspace_root;
use programs::{CudaBuild, CudaSource, Port, RocmBuild, PROGRAMS};

#[derive(clap::Args)]
pub struct ProgramArgs {
    /// The program (see --list).
    #[arg(required_unless_present = "list")]
    name: Option<String>,
    /// Where it is written (replaced); default the row's folder under device-carry/.
    #[arg(long)]
    out: Option<PathBuf>,
    /// AMD arches the (unused on NVIDIA) embedded code objects are built for (default
    /// CANDLE_ROCM_ARCHS, else the bundle's gfx90a).
    #[arg(long)]
    archs: Option<String>,
    /// Build one side only: `cuda` (no stock CUDA build) or `rocm`.
    #[arg(long, value_parser = ["cuda", "rocm"])]
    skip: Option<String>,
    /// List the programs.
    #[arg(long)]
    list: bool,
}

pub fn run(args: ProgramArgs) -> Result<std::process::ExitCode> {
    if args.list {
        for p in PROGRAMS {
            println!("{:<16} {} ({}.tar.xz)", p.name, p.about, p.out);
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let name = args.name.as_deref().unwrap_or_default();
    let Some(program) = programs::find(name) else {
        let names: Vec<&str> = PROGRAMS.iter().map(|p| p.name).collect();
        bail!("no GPU program named {name:?}; the programs: {}", names.join(", "));
    };
    let root = workspace_root();
    let out = root.join(args.out.as_deref().unwrap_or(Path::new(program.out)));
    let archs = args.archs.or_else(|| std::env::var("CANDLE_ROCM_ARCHS").ok().filter(|a| !a.is_empty()));
    let skip = args.skip.as_deref();
    std::fs::create_dir_all(&out)?;

    if skip != Some("rocm") && !program.rocm.is_empty() {
        let linked = gpu_bundle::link(&root, archs.as_deref().unwrap_or("gfx90a"), None)?;
        let lib = out.join("lib");
        if lib.exists() {
            std::fs::remove_dir_all(&lib)?;
        }
        linked.lay_out_lib(&lib)?;
        for build in program.rocm {
            let bins = build_rocm(&root, &out, build, &linked)?;
            eprintln!("{}", linked.check_imports(&bins)?);
            for bin in &bins {
                check_libraries(bin, &lib, build)?;
            }
        }
    }
    for c in program.c_libraries {
        let dest = out.join(c.output);
        std::fs::create_dir_all(dest.parent().expect("OUT-relative"))?;
        let mut gcc = Command::new("gcc");
        gcc.args(["-O2", "-shared", "-fPIC", "-o"]).arg(&dest).arg(root.join(c.source));
        gcc.args(c.libs.iter().map(|l| format!("-l{l}")));
        step(&mut gcc, &format!("gcc of {}", c.source))?;
    }
    if skip != Some("cuda") {
        if let Some(build) = &program.cuda {
            build_cuda(&root, &out, build)?;
        }
    }
    for host in program.host {
        eprintln!("== {} ({}, CPU)", host.bin, host.manifest);
        let target = root.join(host.target_dir);
        let mut cargo = niced_cargo();
        cargo.args(["build", "--release", "--quiet", "--manifest-path"]).arg(root.join(host.manifest)).arg("--target-dir").arg(&target);
        step(&mut cargo, &format!("the build of {}", host.manifest))?;
        copy(&target.join("release").join(host.bin), &out.join(host.bin))?;
    }

    if skip.is_some() {
        eprintln!("== --skip {}: one side only, nothing packed", skip.unwrap_or_default());
        list(&out)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    eprintln!("== packing {}.tar.xz", out.display());
    list(&out)?;
    pack::pack_within_limit(&out, program.xz)?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// A ROCm build: cargo in the bundle's target directory with its environment; the
/// binaries copied into OUT (stripped when the row says so). Returns the copies.
fn build_rocm(root: &Path, out: &Path, build: &RocmBuild, linked: &gpu_bundle::Linked) -> Result<Vec<PathBuf>> {
    let target = root.join("target/gpu-bundle");
    let dir = root.join(build.manifest).parent().context("a manifest's folder")?.to_path_buf();
    // the Candle release's kernels the kernels crate builds (generated/'s when none is named)
    let mut kernels_dir = None;
    match &build.ported_from {
        None => {}
        Some(Port::Repo(src)) => {
            let ported = crate::port_crate::port(&root.join(src), &dir, root, Some(&root.join("generated")))?;
            crate::tree::write_atomic(&ported.tree, &dir)?;
            eprintln!("== {src} ported into {}:\n{}", dir.display(), ported.report);
        }
        Some(Port::Registry { crates, version, candle }) => {
            let generated = root.join(format!("target/generated-{candle}"));
            crate::regen::regen_release(candle, &generated)?;
            let parent = dir.parent().context("a port's folder")?;
            for name in *crates {
                let src = crate::regen::upstream::registry_crate(name, version)?;
                let into = parent.join(name);
                let ported = crate::port_crate::port(&src, &into, root, Some(&generated))?;
                crate::tree::write_atomic(&ported.tree, &into)?;
                eprintln!("== {name} {version} ported into {}", into.display());
            }
            // OUT carries the release's kernels (and the manifest that says which units are
            // the launchers' library) for hip-on-cuda/build-kernels.sh on the GPU machine
            let carried = out.join(format!("candle-{candle}"));
            if carried.exists() {
                std::fs::remove_dir_all(&carried)?;
            }
            std::fs::create_dir_all(&carried)?;
            step(Command::new("cp").arg("-r").arg(generated.join("kernels")).arg(&carried), "cp -r of the kernels")?;
            copy(&generated.join("MANIFEST.toml"), &carried.join("MANIFEST.toml"))?;
            kernels_dir = Some(generated.join("kernels"));
        }
    }
    eprintln!("== {}: release, linked as the GPU bundle's binaries: {}", build.manifest, build.targets.names().join(" "));
    let mut cargo = niced_cargo();
    cargo.args(["build", "--release", "--manifest-path"]).arg(root.join(build.manifest)).arg("--target-dir").arg(&target);
    if !build.features.is_empty() {
        cargo.args(["--features", &build.features.join(",")]);
    }
    cargo.args(build.targets.cargo_args());
    cargo.envs(linked.env.iter().map(|(k, v)| (*k, v.as_str())));
    if let Some(kernels) = &kernels_dir {
        cargo.env("CANDLE_ROCM_KERNELS_DIR", kernels);
    }
    if build.own_kernels {
        let toolkit = cuda13::toolchain(root, &root.join(build.manifest))?;
        cargo.env(candle_rocm_build::HIP_ON_CUDA_VAR, "sm_90").env("NVCC", toolkit.home.join("bin/nvcc"));
    }
    step(&mut cargo, &format!("the build of {}", build.manifest))?;
    let dir = out.join(build.into);
    std::fs::create_dir_all(&dir)?;
    let mut copies = Vec::new();
    for name in build.targets.names() {
        let dest = dir.join(&name);
        copy(&build.targets.built(&target, &name), &dest)?;
        if build.strip {
            step(Command::new("strip").arg(&dest), "strip")?;
        }
        copies.push(dest);
    }
    Ok(copies)
}

/// `bin` needs the row's ROCm sonames, each resolved to `lib`, none of its refused
/// libraries, and nothing else missing but the launchers' library.
fn check_libraries(bin: &Path, lib: &Path, build: &RocmBuild) -> Result<()> {
    let dynamic = stubs::readelf(&["-W", "-d"], bin)?;
    let needed = stubs::dynamic_entries(&dynamic, "NEEDED");
    let ldd = Command::new("ldd").arg(bin).env("LD_LIBRARY_PATH", lib).output().context("running ldd")?;
    let resolved = String::from_utf8_lossy(&ldd.stdout);
    for soname in build.sonames {
        if !needed.iter().any(|n| n == soname) {
            bail!("{} does not need {soname}", bin.display());
        }
        if !resolved.contains(&format!("{soname} => {}/{soname} ", lib.display())) {
            bail!("{}: {soname} does not resolve to {}:\n{resolved}", bin.display(), lib.display());
        }
    }
    if let Some(refused) = needed.iter().find(|n| build.refused.iter().any(|r| n.starts_with(r))) {
        bail!("{} needs {refused}: that library must be loaded at run time", bin.display());
    }
    let missing: Vec<&str> = resolved
        .lines()
        .filter(|l| l.contains("not found") && !l.contains("libcandle_rocm_launchers.so"))
        .collect();
    if !missing.is_empty() {
        bail!("{}: a library is missing:\n{}", bin.display(), missing.join("\n"));
    }
    println!("{}: needs {}", bin.display(), needed.join(" "));
    Ok(())
}

/// The stock CUDA build (CUDA 13.0's toolchain), its binaries copied into OUT.
fn build_cuda(root: &Path, out: &Path, build: &CudaBuild) -> Result<()> {
    let (manifest, locked) = match build.source {
        CudaSource::Manifest(m) => (root.join(m), false),
        CudaSource::Registry { name, version } => (registry_copy(root, name, version)?.join("Cargo.toml"), true),
    };
    let toolkit = cuda13::toolchain(root, &manifest)?;
    let target = root.join(build.target_dir);
    eprintln!(
        "== stock {}, feature cuda, release (nvcc {}, cudarc bindings CUDA 13.0): {}",
        manifest.display(),
        toolkit.nvcc_version,
        build.targets.names().join(" ")
    );
    let mut cargo = niced_cargo();
    cargo.args(["build", "--release"]);
    if locked {
        cargo.arg("--locked");
    }
    cargo.arg("--manifest-path").arg(&manifest).arg("--target-dir").arg(&target);
    if !build.features.is_empty() {
        cargo.args(["--features", &build.features.join(",")]);
    }
    cargo.args(build.targets.cargo_args());
    cargo.envs(toolkit.env());
    if !build.nvcc_include.is_empty() {
        let dirs: Vec<String> = build.nvcc_include.iter().map(|d| format!("-I{}", root.join(d).display())).collect();
        eprintln!("== nvcc searches first (NVCC_PREPEND_FLAGS): {}", dirs.join(" "));
        cargo.env("NVCC_PREPEND_FLAGS", dirs.join(" "));
    }
    if build.dao_flash_attn {
        cargo.envs(dao::prepare(root, out, &toolkit.home.join("bin/nvcc"))?.env);
    }
    step(&mut cargo, &format!("the build of {}", manifest.display()))?;
    let dir = out.join(build.into);
    std::fs::create_dir_all(&dir)?;
    for name in build.targets.names() {
        let dest = dir.join(&name);
        copy(&build.targets.built(&target, &name), &dest)?;
        cuda13::check_binary(&dest)?;
        if build.dao_flash_attn {
            dao::check_binary(&dest)?;
        }
    }
    Ok(())
}

/// A crates.io package (fetched when absent) copied out of the registry into
/// target/examples-parity/cuda-src (the registry is never written). The copy sits under
/// this repository's workspace root: a `[workspace]` of its own keeps cargo from taking
/// it as a member. Its files
/// that regen repairs (rule `upstream-repairs`: code that does not compile against what
/// the release pins, such as candle-examples' llama_multiprocess) get the same repairs,
/// printed with prettyplease; everything else, and Cargo.lock, as published.
fn registry_copy(root: &Path, name: &str, version: &str) -> Result<PathBuf> {
    let crate_dir = format!("{name}-{version}");
    let src = root.join("target/examples-parity/cuda-src").join(&crate_dir);
    let repaired = translator::backend::upstream_repairs::repaired_files(name);
    // the rows themselves: a copy made under other rows is made again
    let rows: Vec<String> = translator::backend::mapping::UPSTREAM_REPAIRS
        .iter()
        .filter(|r| r.krate == name)
        .map(|r| format!("{}: {} -> {}", r.file, r.upstream, r.with))
        .collect();
    let marker = format!("repaired (rule upstream-repairs):\n{}\n", rows.join("\n"));
    if std::fs::read_to_string(src.join(".copied")).is_ok_and(|m| m == marker) {
        return Ok(src);
    }
    let registry = crate::regen::upstream::registry_crate(name, version)?;
    if src.exists() {
        std::fs::remove_dir_all(&src)?;
    }
    std::fs::create_dir_all(src.parent().expect("below target"))?;
    step(Command::new("cp").arg("-r").arg(&registry).arg(&src), "cp -r of the registry's crate")?;
    let manifest = src.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest)?;
    text.push_str("\n[workspace]\n");
    std::fs::write(&manifest, text)?;
    for file in &repaired {
        let path = src.join(file);
        let source = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let text = translator::backend::upstream_repairs::repair_file(name, file, &source)
            .map_err(|e| anyhow::anyhow!("{crate_dir}: {e}"))?
            .expect("a file with repairs");
        std::fs::write(&path, text)?;
        eprintln!("== {crate_dir}/{file}: repaired as regen repairs it (rule upstream-repairs)");
    }
    std::fs::write(src.join(".copied"), marker)?;
    Ok(src)
}

fn niced_cargo() -> Command {
    let cargo = crate::workspace::cargo_command();
    let mut c = Command::new("nice");
    c.args(["-n", "19"]).arg(cargo.get_program());
    c
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Runs a step of a build, its output shown; an error names the step.
fn step(command: &mut Command, what: &str) -> Result<()> {
    let status = command.status().with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Prints OUT's files and sizes.
fn list(out: &Path) -> Result<()> {
    let mut files = Vec::new();
    pack::collect_sizes(out, out, &mut files)?;
    files.sort();
    for (path, size) in files {
        println!("{size:>12}  {path}");
    }
    Ok(())
}
