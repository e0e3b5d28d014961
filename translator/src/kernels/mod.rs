//! candle-kernels CUDA (`.cu`, `.cuh`) to HIP (`.hip`, `.cuh`).
//!
//! Each file is lexed, then every rule in [`rules::PIPELINE`] runs in order;
//! the last one, `residue-check`, fails on anything CUDA-only that is left.

pub mod compile_flags;
pub mod include_paths;
pub mod mapping;
pub mod rules;
pub mod vocabulary;

use std::collections::BTreeMap;

pub use rules::FileFailure;
use crate::provenance::LineProvenance;
use crate::{TranslateError, TreeFile};

/// What the translator needs to know about the inputs besides their text.
#[derive(Debug, Clone)]
pub struct KernelContext {
    /// Shown in the first line of every generated file, e.g. `candle-kernels 0.11.1`.
    pub source_label: String,
    /// Include directories relative to the tree's root, as nvcc's `-I` (searched after
    /// the including file's own directory for a quoted name; alone for an angled one).
    pub include_dirs: Vec<String>,
}

impl KernelContext {
    /// A context with no include directories.
    pub fn new(source_label: impl Into<String>) -> Self {
        KernelContext { source_label: source_label.into(), include_dirs: Vec::new() }
    }
}

/// The translated tree and what the rules did to it.
#[derive(Debug, Clone, Default)]
pub struct KernelOutput {
    /// Output files (translated sources plus the compat headers), sorted by path.
    pub files: Vec<TreeFile>,
    /// How often each named rule rewrote something, over all files.
    pub rule_counts: BTreeMap<&'static str, usize>,
    /// Choices made for the whole tree that a reader should know (one line each).
    pub notes: Vec<String>,
    /// While [`crate::provenance::recording`]: each translated file's provenance, by output path
    /// (its source is the input [`rules::output_path`] names it after).
    pub provenance: BTreeMap<String, LineProvenance>,
}

/// Translates a tree of CUDA sources: candle-kernels' `src/` for `cargo xtask regen`, or a
/// crate's own kernels for candle-rocm-build. `inputs` holds every `.cu` and `.cuh` file
/// with its path relative to the tree's root; a `.cu` file becomes `.hip`, headers keep
/// their names, and the compat headers the translations include are added. The output's
/// `rule_counts` say what each named rule rewrote. Fails on the first construct no rule
/// covers, naming file, line and construct.
///
/// ```
/// use translator::kernels::{translate_tree, KernelContext};
/// use translator::TreeFile;
///
/// let cu = "#include <cuda_bf16.h>\n__global__ void twice(__nv_bfloat16 *x) { x[threadIdx.x] = x[threadIdx.x] * x[threadIdx.x]; }\n";
/// let inputs = [TreeFile { rel_path: "ops.cu".into(), contents: cu.as_bytes().to_vec() }];
/// let ctx = KernelContext::new("my-crate 0.1.0");
/// let out = translate_tree(&inputs, &ctx).unwrap();
/// let hip = out.files.iter().find(|f| f.rel_path == "ops.hip").unwrap();
/// let hip = String::from_utf8_lossy(&hip.contents);
/// assert!(!hip.contains("__nv_bfloat16") && !hip.contains("cuda_bf16.h"));
/// assert!(out.rule_counts.values().sum::<usize>() > 0);
///
/// // what no rule covers is an error naming file, line and construct
/// let ptx = [TreeFile { rel_path: "lead.cu".into(), contents: b"__device__ int lead(int x) {\n  int l; asm(\"bfind.u32 %0, %1;\" : \"=r\"(l) : \"r\"(x)); return l;\n}\n".to_vec() }];
/// let err = translate_tree(&ptx, &ctx).unwrap_err().to_string();
/// assert!(err.starts_with("lead.cu:2: "), "{err}");
/// ```
pub fn translate_tree(inputs: &[TreeFile], ctx: &KernelContext) -> Result<KernelOutput, TranslateError> {
    rules::run_pipeline(inputs, ctx)
}

/// For each kernel unit of `inputs` (`.cu`), the files it reaches through its includes: itself
/// and the tree's headers, in path order.
pub fn unit_reaches(inputs: &[TreeFile], include_dirs: &[String]) -> BTreeMap<String, Vec<TreeFile>> {
    let headers: Vec<TreeFile> = inputs.iter().filter(|f| include_paths::is_header(&f.rel_path)).cloned().collect();
    inputs
        .iter()
        .filter(|f| include_paths::is_kernel_unit(&f.rel_path))
        .map(|unit| (unit.rel_path.clone(), include_paths::own_headers(&[vec![unit.clone()], headers.clone()].concat(), include_dirs)))
        .collect()
}

/// For each kernel unit of [`unit_reaches`] that did not translate, the error that stops it:
/// its own, else that of the first header it reaches (in path order) that failed.
pub fn unit_failures<'a>(reaches: &BTreeMap<String, Vec<TreeFile>>, failures: &'a [FileFailure]) -> BTreeMap<String, &'a TranslateError> {
    let failed: BTreeMap<&str, &TranslateError> = failures.iter().map(|f| (f.path.as_str(), &f.error)).collect();
    let mut out = BTreeMap::new();
    for (unit, reach) in reaches {
        let first = failed.get(unit.as_str()).or_else(|| reach.iter().find_map(|f| failed.get(f.rel_path.as_str())));
        if let Some(e) = first {
            out.insert(unit.clone(), *e);
        }
    }
    out
}

/// Whether `e` refuses a construct with no AMD meaning (NVIDIA-only, or a library outside
/// CUDA), as opposed to one no rule covers yet.
pub fn is_refusal(e: &TranslateError) -> bool {
    matches!(e, TranslateError::NvidiaOnly { .. } | TranslateError::NeedsLibrary { .. })
}

/// The newest NVIDIA compute capability that lacks every NVIDIA-only construct of
/// `errors`: a CUDA build script that gates those kernels on a capability leaves them out
/// at it, as on a CUDA GPU without them (candle-rocm-build's `get_compute_cap`). `None`
/// where there is none, or where one was brought by no capability (CUTLASS, say).
pub fn capability_without<'a>(errors: impl IntoIterator<Item = &'a TranslateError>) -> Option<u32> {
    let mut oldest: Option<u32> = None;
    for e in errors {
        if let TranslateError::NvidiaOnly { since_sm, .. } = e {
            let sm = (*since_sm)?;
            oldest = Some(oldest.map_or(sm, |o| o.min(sm)));
        }
    }
    mapping::capability_before(oldest?)
}

/// As [`translate_tree`], but every file on its own: the output holds the files that
/// translated, and each file that did not has its error (the corpus report's rows).
pub fn translate_each(inputs: &[TreeFile], ctx: &KernelContext) -> Result<(KernelOutput, Vec<FileFailure>), TranslateError> {
    rules::run_pipeline_each(inputs, ctx)
}
