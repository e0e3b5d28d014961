//! Rule `upstream-repairs`: upstream code that does not compile against the
//! dependencies its own release pins is repaired before the file is twinned
//! ([`UPSTREAM_REPAIRS`], applied by [`replacements`](super::replacements)),
//! so that its CUDA original and its ROCm twin both build, and the stock
//! program a ROCm run is compared with can be built with the same repair
//! ([`repair_file`]: `cargo xtask gpu-program` applies it to its registry copy).
//!
//! Today's rows: candle-examples' `llama_multiprocess` (every release since
//! 0.9) calls cudarc's `CudaDevice`, which cudarc 0.13 replaced by contexts and
//! streams, and `.w()` on a result that already is Candle's.
//!
//! A row whose code is no longer found is an error: upstream fixed or moved
//! it, and the row must be dropped or rewritten. The kernel side's counterpart
//! is rule `upstream-kernel-fixes` (C++ tokens: a barrier upstream's kernel lacks).

use super::mapping::UPSTREAM_REPAIRS;
use super::replacements::{self, Scope, Table};
use crate::TranslateError;

const TABLE: Table = Table { rule: "upstream-repairs", path: "backend::mapping::UPSTREAM_REPAIRS", rows: UPSTREAM_REPAIRS };

/// Applies the rows for `file` of the crate that `label` names. Returns how
/// many pieces of code were replaced.
pub fn repair(label: &str, file: &str, parsed: &mut syn::File) -> Result<usize, TranslateError> {
    replacements::apply(&TABLE, label, file, parsed, Scope::Everywhere)
}

/// The files of `krate` that have repairs (paths inside the package).
pub fn repaired_files(krate: &str) -> Vec<&'static str> {
    let mut files: Vec<&'static str> = UPSTREAM_REPAIRS.iter().filter(|r| r.krate == krate).map(|r| r.file).collect();
    files.dedup();
    files
}

/// `source`, file `file` of `krate`, with its repairs and nothing else
/// (printed with `prettyplease`); `None` when it has none.
pub fn repair_file(krate: &str, file: &str, source: &str) -> Result<Option<String>, TranslateError> {
    if !replacements::has_rows(&TABLE, krate, file) {
        return Ok(None);
    }
    let mut parsed = super::mirror::parse(file, source)?;
    repair(krate, file, &mut parsed)?;
    Ok(Some(super::mirror::print(&mut parsed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: &str = "use cudarc::driver::safe::CudaDevice;\nuse cudarc::nccl::safe::{Comm, Id};\n\
        fn main() -> Result<()> {\n    if comm_file.exists() {\n        bail!(\"comm file {comm_file:?} already exists, please remove it first\")\n    }\n    let device = CudaDevice::new(rank)?;\n    let comm = Comm::from_rank(device, rank, num_shards, id);\n    Ok(())\n}\n";

    #[test]
    fn llama_multiprocess_gets_a_stream_of_candles_context() {
        let out = repair_file("candle-examples", "examples/llama_multiprocess/main.rs", MAIN).unwrap().unwrap();
        assert!(out.starts_with("use cudarc::driver::safe::CudaContext;\n"), "{out}");
        assert!(out.contains("let device = CudaContext::new(rank)?.per_thread_stream();"), "{out}");
        assert!(out.contains("if args.rank.is_none() && comm_file.exists() {"), "{out}");
    }

    /// An argument upstream renames still matches the row's hole (`rank` → `args.rank`).
    #[test]
    fn a_changed_argument_is_still_repaired() {
        let renamed = MAIN.replace("CudaDevice::new(rank)?", "CudaDevice::new(args.rank)?");
        let out = repair_file("candle-examples", "examples/llama_multiprocess/main.rs", &renamed).unwrap().unwrap();
        assert!(out.contains("let device = CudaContext::new(args.rank)?.per_thread_stream();"), "{out}");
    }

    #[test]
    fn a_repair_upstream_no_longer_needs_is_an_error() {
        let fixed = MAIN.replace("CudaDevice::new(rank)?", "ctx.default_stream()");
        let err = repair_file("candle-examples", "examples/llama_multiprocess/main.rs", &fixed).unwrap_err().to_string();
        assert!(err.starts_with("examples/llama_multiprocess/main.rs"), "{err}");
        assert!(err.contains("CudaDevice :: new ($rank) ? (0 times, expected 1)") && err.contains("rule upstream-repairs"), "{err}");
    }

    #[test]
    fn files_without_repairs_are_left_alone() {
        assert_eq!(repair_file("candle-examples", "examples/llama/main.rs", MAIN).unwrap(), None);
        assert_eq!(repaired_files("candle-examples"), ["examples/llama_multiprocess/main.rs", "examples/llama_multiprocess/model.rs"]);
    }
}
