//! `cargo xtask gpu-bundle`: builds, on this (CPU) machine, everything the GPU
//! run needs that must be compiled with Rust, into one folder to carry to the
//! NVIDIA machine (which has no Rust toolchain):
//!
//! * `lib/libamdhip64.so.7`: the forwarding runtime (`hip-on-cuda`), which
//!   exports the HIP runtime, rocBLAS, rocRAND and RCCL entry points over
//!   CUDA (RCCL's over NCCL), with ROCm 7.2's soname and symbol version nodes;
//!   `lib/librocblas.so.5`, `lib/librocrand.so.1` and `lib/librccl.so.1`:
//!   empty libraries with those sonames that depend on it, so that every
//!   rocBLAS/rocRAND/RCCL reference binds to the one forwarder (one copy of
//!   its state);
//! * `bin/<group>/<test>`: the test binaries of candle-core and candle-nn
//!   (their libraries and every upstream test file), of the ROCm-vs-CPU tests in
//!   `tests/scratch-rocm`, of the tensor-parallel program (`tests/tensor-parallel`:
//!   its one-device shard check) and of the HIP layer, built with feature `rocm`
//!   (the HIP layer with its feature `rccl`: its communicator tests);
//! * `tests.tsv`: for each binary its group and the directory it runs in
//!   (relative to the repository root: upstream tests read data files);
//! * `BUNDLE.txt`: what was built, from which commit, against what, and the sizes;
//!
//! and packs the folder into `<out>.tar.xz` (the test binaries share most of
//! their code, so it packs to about a tenth): that file is what is carried.
//!
//! **The binaries have the ABI of a user's build against ROCm 7.2**: they are
//! linked against stub libraries made from the export lists (names, ELF symbol
//! versions, kinds, bindings) of ROCm 7.2's `libamdhip64.so.7`,
//! `librocblas.so.5`, `librocrand.so.1` and `librccl.so.1`, read from a ROCm 7.2 root
//! (`--rocm-root`, default `target/rocm/7.2/root`, made by `cargo xtask
//! rocm-root 7.2`), so they record `DT_NEEDED libamdhip64.so.7` and
//! `hipMalloc@hip_4.2` exactly as a binary linked on a ROCm 7.2 machine does.
//! Stubs rather than the real libraries: those need the root's glibc (2.43),
//! and the binaries must start on the GPU machine (glibc 2.39). Without the
//! default root the binaries are linked against stubs made from the forwarder's
//! own exports (which present the same sonames and version nodes), and
//! `BUNDLE.txt` says so. Either way every binary's HIP/rocBLAS/rocRAND imports
//! are then checked against the forwarder (and the 7.2 libraries when linked
//! against them): same name, same version.
//!
//! `--link-only DIR` stops after the link directory: it lays DIR out as the
//! bundle's `lib/` and prints the build environment, for a binary built
//! elsewhere the same way (the programs of `cargo xtask gpu-program` call `link` directly),
//! whose imports `--check-imports BIN` then checks as the bundle's.
//!
//! The kernels are not in the bundle: `hip-on-cuda/run-gpu-tests.sh` compiles
//! `generated/kernels` with nvcc on the GPU machine and points the binaries at
//! the result (`CANDLE_ROCM_CODE_OBJECTS_DIR`, `libcandle_rocm_launchers.so`).

mod binaries;
pub mod pack;
pub mod stubs;
mod test_list;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::workspace::workspace_root;
use binaries::TestBinary;

#[derive(clap::Args)]
pub struct BundleArgs {
    /// Where the bundle is written (replaced).
    #[arg(long, default_value = "target/gpu-bundle/bundle")]
    out: PathBuf,
    /// AMD arches the (unused on NVIDIA) embedded code objects are built for.
    #[arg(long, default_value = "gfx90a")]
    archs: String,
    /// A ROCm 7.2 root (`cargo xtask rocm-root 7.2`; its libraries in
    /// usr/lib/x86_64-linux-gnu): the binaries are linked against stubs of its
    /// libamdhip64.so.7, librocblas.so.5, librocrand.so.1 and librccl.so.1. Default
    /// target/rocm/7.2/root; when that has not been made, the stubs are made
    /// from the forwarder's own exports instead (BUNDLE.txt says which). A root
    /// named here must exist.
    #[arg(long)]
    rocm_root: Option<PathBuf>,
    /// Prepare only what a binary built elsewhere and linked as the bundle's
    /// binaries are needs: the forwarder, the stub
    /// link directory, and DIR laid out as the bundle's lib/ (the forwarder
    /// as libamdhip64.so.7, librocblas.so.5, librocrand.so.1, librccl.so.1); prints the
    /// environment the bundle's binaries are built with, one KEY=VALUE line
    /// each. No test binaries, no bundle.
    #[arg(long, value_name = "DIR")]
    link_only: Option<PathBuf>,
    /// With --link-only: binaries built with that environment, whose
    /// HIP/rocBLAS/rocRAND imports are checked as the bundle's binaries' are.
    #[arg(long, value_name = "BIN", requires = "link_only", num_args = 1..)]
    check_imports: Vec<PathBuf>,
    /// Only these groups' test binaries (candle-core, candle-nn, candle-flash-attn,
    /// scratch-rocm, tensor-parallel, candle-rocm-hip): a partial bundle, for a GPU
    /// run of one part. Default: every group.
    #[arg(long, value_name = "GROUP", num_args = 1..)]
    group: Vec<String>,
}

/// What a binary needs to be linked as the bundle's binaries are: the forwarder,
/// the stub link directory and the build environment.
pub struct Linked {
    /// The forwarding runtime (`target/release/libamdhip64.so`).
    pub forwarder: PathBuf,
    pub link: stubs::LinkDir,
    /// The bundle's build environment (CANDLE_ROCM_LIB_DIR, CANDLE_ROCM_LINK_*,
    /// CANDLE_ROCM_ARCHS, CANDLE_ROCM_LAUNCHERS=shared, the kernels crate's cache,
    /// the release profile's debug info and stripping).
    pub env: Vec<(&'static str, String)>,
}

/// Builds the forwarder and writes the stub link directory (in target/gpu-bundle):
/// the first step of the bundle, and all that `--link-only` and `cargo xtask
/// gpu-program` need.
pub fn link(root: &Path, archs: &str, rocm_root: Option<&Path>) -> Result<Linked> {
    eprintln!("== the forwarding runtime (hip-on-cuda), release");
    binaries::cargo(root, &["build", "--release", "-p", "hip-on-cuda"], &[])?;
    let forwarder = root.join("target/release/libamdhip64.so");
    if !forwarder.is_file() {
        bail!("{} was not built", forwarder.display());
    }
    let link = stubs::link_dir(root, &root.join("target/gpu-bundle"), rocm_root, &forwarder)?;
    // the test builds are one workspace each (each with its own build of the kernels
    // crate): they share the compiled kernels through the kernels crate's cache
    let cache = root.join("target/gpu-bundle/kernels-cache");
    let env = vec![
        ("CANDLE_ROCM_KERNELS_CACHE", cache.display().to_string()),
        ("CANDLE_ROCM_LIB_DIR", link.dir.display().to_string()),
        ("CANDLE_ROCM_LINK_ROCBLAS", "1".into()),
        ("CANDLE_ROCM_LINK_ROCRAND", "1".into()),
        ("CANDLE_ROCM_ARCHS", archs.to_string()),
        ("CANDLE_ROCM_LAUNCHERS", "shared".into()),
        ("CARGO_PROFILE_RELEASE_DEBUG", "false".into()),
        ("CARGO_PROFILE_RELEASE_STRIP", "symbols".into()),
    ];
    Ok(Linked { forwarder, link, env })
}

impl Linked {
    /// `dir` laid out as the bundle's `lib/`.
    pub fn lay_out_lib(&self, dir: &Path) -> Result<()> {
        stubs::bundle_lib(&self.forwarder, dir)
    }

    /// The HIP/rocBLAS/rocRAND/RCCL imports of binaries built with `env`, checked
    /// as the bundle's binaries' are; returns the summary.
    pub fn check_imports(&self, paths: &[PathBuf]) -> Result<String> {
        let binaries: Vec<TestBinary> = paths
            .iter()
            .map(|path| TestBinary {
                group: "checked",
                name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                path: path.clone(),
                cwd: String::new(),
            })
            .collect();
        stubs::check_imports(&binaries, &self.forwarder, &self.link.dir)
    }

    fn env_refs(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}

pub fn run(args: BundleArgs) -> Result<std::process::ExitCode> {
    let root = workspace_root();
    let out = if args.out.is_absolute() {
        args.out.clone()
    } else {
        root.join(&args.out)
    };
    let build_dir = root.join("target/gpu-bundle");
    let target_dir = build_dir.clone();

    let linked = link(&root, &args.archs, args.rocm_root.as_deref())?;
    if let Some(dir) = &args.link_only {
        return link_only(&root.join(dir), &args.check_imports, &linked);
    }
    if let Some(unknown) = args.group.iter().find(|g| !binaries::groups().contains(&g.as_str())) {
        bail!("no test group {unknown:?} in the bundle; the groups: {}", binaries::groups().join(", "));
    }
    let binaries = binaries::build_all(&root, &target_dir, &linked.env_refs(), &args.group)?;

    if out.exists() {
        std::fs::remove_dir_all(&out)
            .with_context(|| format!("removing the old bundle {}", out.display()))?;
    }
    linked.lay_out_lib(&out.join("lib"))?;
    test_list::write(&out, &binaries)?;
    // the HIP layer's own tests build no kernels crate, so no launchers library
    if args.group.is_empty() || args.group.iter().any(|g| g != "candle-rocm-hip") {
        pack::copy_amd_launchers(&target_dir, &build_dir.join("amd-launchers"), &out.join("lib"), &linked.link.forwarder_nodes)?;
    }
    let imports = stubs::check_imports(&binaries, &linked.forwarder, &linked.link.dir)?;

    pack::write_report(&root, &out, &args.out, &linked.link.linked_against, &imports)?;
    pack::pack_within_limit(&out, pack::XZ_BUNDLE)?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `--link-only DIR`: DIR laid out as the bundle's `lib/`, the `--check-imports`
/// binaries checked, and the build environment printed.
fn link_only(dir: &Path, check: &[PathBuf], linked: &Linked) -> Result<std::process::ExitCode> {
    linked.lay_out_lib(dir)?;
    if !check.is_empty() {
        eprintln!("{}", linked.check_imports(check)?);
    }
    for (key, value) in &linked.env {
        println!("{key}={value}");
    }
    Ok(std::process::ExitCode::SUCCESS)
}
