//! `cargo xtask`: the commands a maintainer runs after a Candle release.
//!
//! * `regen` translates the pinned Candle release into `generated/`
//!   (modules: `upstream` finds the sources, `hipify` the optional first
//!   pass, `steps` the translation steps, `tree` the atomic write and the
//!   check, `manifest` MANIFEST.toml and NOTICE.md, `regen` the command).
//! * `parity` regenerates and prints `generated/PARITY.md`.
//! * `build-kernels` compiles `generated/kernels` for AMD GPUs with hipcc.
//! * `gpu-bundle` builds what the GPU run on the NVIDIA machine needs (`gpu_bundle`).
//! * `rocm-root` provisions a pinned ROCm release in a sid root (`rocm_root`);
//!   `rocm-backend` builds, links and tests the generated packages there and
//!   checks their imports against the release's libraries (`rocm_backend`, `rocm_abi`).
//! * `releases` runs every Candle release from 0.9.0 (and checkouts) through
//!   regen, the kernels' build and the backend's type check (`releases`,
//!   `checkout_shape`).
//! * `bench` times regen and the kernel build and renders BENCHMARKS.md (`bench`).

mod bench;
mod build_kernels;
mod example_parity;
mod checkout_shape;
mod fingerprint;
mod gpu_bundle;
mod hipify;
mod kernel_warnings;
mod manifest;
mod parity;
mod regen;
mod releases;
mod rocm_abi;
mod rocm_backend;
mod rocm_root;
mod steps;
mod test_artifacts;
mod tree;
mod upstream;
mod workspace_manifest;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Translation allocates and frees many small strings and syntax trees: about a third of
/// regen's time went to glibc's allocator; mimalloc serves them faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "candle-rocm maintainer commands")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Translate Candle's CUDA sources into generated/ (atomically).
    Regen(regen::RegenArgs),
    /// Regenerate (as `regen`) and print generated/PARITY.md: which CUDA backend items the ROCm side has.
    Parity(regen::RegenArgs),
    /// Compile generated/kernels for AMD GPUs with hipcc and check kernel parity.
    BuildKernels(build_kernels::BuildArgs),
    /// Build the forwarding runtime and the ROCm test binaries to carry to the NVIDIA machine.
    GpuBundle(gpu_bundle::BundleArgs),
    /// Make (or reuse) a Debian sid root holding a pinned ROCm release (rocm-releases.toml), with a hipcc that runs in it.
    RocmRoot(rocm_root::RootArgs),
    /// Build, link and test generated candle-core and candle-nn (feature rocm) inside a ROCm release's root,
    /// and check every ROCm symbol the binaries import against that release's libraries.
    RocmBackend(rocm_backend::BackendArgs),
    /// Every Candle release from 0.9.0 through the pin (and checkouts) through regen, the kernels' AMD build and
    /// the backend's type check: one table row each.
    Releases(releases::ReleasesArgs),
    /// Benchmarks: regen speed, kernel build time, and BENCHMARKS.md from the result files.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version print to stdout and succeed; usage errors exit 1
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
        }
    };
    let result = match cli.command {
        Command::Regen(args) => regen::run(args),
        Command::Parity(args) => parity::run(args),
        Command::BuildKernels(args) => build_kernels::run(args),
        Command::GpuBundle(args) => gpu_bundle::run(args),
        Command::RocmRoot(args) => rocm_root::run(args),
        Command::RocmBackend(args) => rocm_backend::run(args),
        Command::Releases(args) => releases::run(args),
        Command::Bench(command) => bench::run(command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: where xtask was built (it lives one level below it),
/// or, for a binary carried to another machine (the GPU machine has no Rust
/// toolchain), the nearest directory above the current one that holds
/// upstream.toml and xtask/.
pub fn workspace_root() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask has a parent").to_path_buf();
    let is_root = |d: &std::path::Path| d.join(upstream::CONFIG).is_file() && d.join("xtask").is_dir();
    if is_root(&built) {
        return built;
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    cwd.ancestors().find(|d| is_root(d)).map(|d| d.to_path_buf()).unwrap_or(built)
}
