//! `cargo xtask bench`: benchmarks that print figures and write them to
//! `bench/results/*.tsv`, from which `cargo xtask bench report` renders
//! BENCHMARKS.md and the ratio plot. Targets are printed beside the figures;
//! nothing here asserts them.
//!
//! * `regen`: full and no-op regen against PyTorch's hipify and hipify-perl (`regen`);
//! * `kernel-build`: hipcc build of the generated kernels, cold and warm (`kernel_build`);
//! * `kernel-resources`: per AMD arch and kernel, registers, scratch, LDS, spills,
//!   occupancy and native dot-product use, beside upstream's sm_90 build (`kernel_resources`);
//! * `numerics`: the numerics sections (quantized matmul error, teacher-forced logits) of `report`;
//! * `collectives`: the collectives section (all-reduce bandwidth through our RCCL layer and
//!   NCCL, tensor-parallel tokens/s) of `report`;
//! * `stamp`: the commit and sources hash a result file was measured at (`provenance`);
//! * `report`: BENCHMARKS.md and bench/ratios.png from the result files (`report`; the
//!   sections' markdown helpers in `table`).
//!
//! The GPU figures (kernel throughput, backend end to end) come from the
//! scripts under bench/kernels and bench/backend, run on the GPU machine;
//! their TSV files are read by `report` like the others.

pub mod collectives;
pub mod kernel_build;
pub mod kernel_resources;
pub mod flash_attn;
pub mod numerics;
pub mod provenance;
pub mod regen;
pub mod report;
pub mod results;
pub mod static_cost;
pub mod table;
pub mod timing;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Time a full and a no-op regen beside torch.utils.hipify and hipify-perl on the same inputs.
    Regen(regen::RegenBenchArgs),
    /// Time the hipcc build of the generated kernels (one and two arches, cold and warm).
    KernelBuild(kernel_build::KernelBuildArgs),
    /// Registers, scratch, LDS, spills, occupancy and native dot products of every kernel per AMD arch.
    KernelResources(kernel_resources::KernelResourcesArgs),
    /// Render BENCHMARKS.md and bench/ratios.png from bench/results/*.tsv.
    Report(report::ReportArgs),
    /// Record in result files the commit and the sources hash they were measured at (a result brought back from the GPU machine).
    Stamp(provenance::StampArgs),
}

pub fn run(command: BenchCommand) -> Result<ExitCode> {
    match command {
        BenchCommand::Regen(args) => regen::run(args),
        BenchCommand::KernelBuild(args) => kernel_build::run(args),
        BenchCommand::KernelResources(args) => kernel_resources::run(args),
        BenchCommand::Report(args) => report::run(args),
        BenchCommand::Stamp(args) => provenance::stamp(args),
    }
}
