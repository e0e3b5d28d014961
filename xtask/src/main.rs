//! `cargo xtask`: the commands a maintainer runs after a Candle release.
//!
//! * `regen` translates the pinned Candle release into `generated/`
//!   (`regen/`: `upstream` finds the sources, `hipify` the optional first
//!   pass, `steps` the translation steps, `manifest` MANIFEST.toml and
//!   NOTICE.md, `parity` PARITY.md; `tree` the atomic write and the check).
//! * `parity` regenerates and prints `generated/PARITY.md`.
//! * `build-kernels` compiles `generated/kernels` for AMD GPUs with hipcc.
//! * `gpu-bundle` builds what the GPU run on the NVIDIA machine needs (`gpu_bundle`);
//!   `gpu-program` one of the other programs run there, from a table (`gpu_program`).
//! * `rocm-root` provisions a pinned ROCm release in a sid root (`rocm/`: `root`);
//!   `rocm-backend` builds, links and tests the generated packages there and
//!   checks their imports against the release's libraries (`rocm::backend`, `rocm::abi`).
//! * `releases` runs every Candle release from 0.9.0 (and checkouts) through
//!   regen, the kernels' build and the backend's type check (`releases`,
//!   `checkout_shape`).
//! * `port-crate` ports a Candle extension crate written for CUDA to ROCm (`port_crate`).
//! * `corpus` measures the kernel translator on corpora it was not written against (`corpus`).
//! * `bench` times regen and the kernel build and renders BENCHMARKS.md (`bench`).

mod bench;
mod build_kernels;
mod checkout_shape;
mod corpus;
mod doc_blocks;
#[cfg(test)]
mod docs_commands;
mod gpu_bundle;
mod gpu_program;
mod kernel_warnings;
mod port_crate;
mod ported_kernels;
mod quick_start;
mod regen;
mod releases;
mod review;
mod rocm;
mod test_artifacts;
mod tree;
mod workspace;

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
    /// Build one of the programs run on the GPU machine (benchmarks, the tensor-parallel program: --list) and pack
    /// it to carry there: its ROCm binaries linked as the bundle's, the stock CUDA binaries it is compared with.
    GpuProgram(gpu_program::ProgramArgs),
    /// Make (or reuse) a Debian sid root holding a pinned ROCm release (rocm-releases.toml), with a hipcc that runs in it.
    RocmRoot(rocm::root::RootArgs),
    /// Build, link and test generated candle-core and candle-nn (feature rocm) inside a ROCm release's root,
    /// and check every ROCm symbol the binaries import against that release's libraries.
    RocmBackend(rocm::backend::BackendArgs),
    /// Every Candle release from 0.9.0 through the pin (and checkouts) through regen, the kernels' AMD build and
    /// the backend's type check: one table row each.
    Releases(releases::ReleasesArgs),
    /// Port a Candle extension crate written for CUDA (kernels, extern "C" launchers, a cudaforge/bindgen_cuda
    /// build script, FFI in cuda_fwd) to its ROCm twin of the same name, and list what the rules leave out.
    PortCrate(port_crate::PortArgs),
    /// Every kernel of a CUDA crate's stock build present, per AMD arch, in its ported twin's build
    /// (--record the stock build's kernels into a fixture, --check a ported build against it).
    PortedKernels(ported_kernels::PortedKernelsArgs),
    /// Regenerate two Candle inputs in memory and pair every upstream hunk with the generated hunks it caused (review.md, summary.md).
    Review(review::ReviewArgs),
    /// The kernel translator on CUDA it was not written against (Candle's releases, mistral.rs's crates, vLLM's
    /// csrc): per kernel unit translated, refused as NVIDIA-only, needing a library, or "no rule"; --compile compiles.
    Corpus(corpus::CorpusArgs),
    /// Follow the README's quick start in a new project (cargo new, its Cargo.toml lines, its main.rs, its
    /// command) and check the program's outcome: a matmul on an AMD GPU, or the error the README shows without one.
    QuickStart(quick_start::QuickStartArgs),
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
        Command::Parity(args) => regen::run_parity(args),
        Command::BuildKernels(args) => build_kernels::run(args),
        Command::GpuBundle(args) => gpu_bundle::run(args),
        Command::GpuProgram(args) => gpu_program::run(args),
        Command::RocmRoot(args) => rocm::root::run(args),
        Command::RocmBackend(args) => rocm::backend::run(args),
        Command::Releases(args) => releases::run(args),
        Command::PortCrate(args) => port_crate::run(args),
        Command::PortedKernels(args) => ported_kernels::run(args),
        Command::Review(args) => review::run(args),
        Command::Corpus(args) => corpus::run(args),
        Command::QuickStart(args) => quick_start::run(args),
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
