//! The named structural rewrites, in the order they run.
//!
//! Every rule runs over all files before the next one starts, so a rule can
//! rely on tree-wide facts gathered after the rules before it (the
//! conditional folding needs to know which macros end up never defined).

mod arch_guards;
pub(crate) mod author_branches;
mod call_renames;
mod compat_overloads;
mod dependent_templates;
mod elementwise_packs;
mod fold_conditionals;
mod ggml_amd;
mod ggml_cdna4;
mod ggml_host_tiles;
mod hipify_casts;
mod host_arch;
mod includes;
mod inline_asm;
mod launch_bounds;
mod names;
mod pp_expr;
mod prelude;
mod quantized_mmq_tiles;
mod residue;
mod template_implied;
pub(crate) mod tokens;
mod toolkit_version;
mod upstream_fixes;
mod warp_sync;
mod wave_rows;

use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

use super::mapping::{COMPAT_HEADERS, GGML_HIP_ARCH_HEADER, OWN_UNITS, QUANTIZED_MMQ_TILES, QUANTIZED_MMQ_TILES_RS};
use super::{KernelContext, KernelOutput};
use crate::lexer::{self, Token};
use crate::provenance::{LineProvenance, Trace};
use crate::{TranslateError, TreeFile};

/// One file being translated.
#[derive(Debug, Clone)]
pub struct Unit {
    /// Path relative to the kernels `src/` root, as read.
    pub path: String,
    pub tokens: Vec<Token>,
}

/// What the rules know about the whole tree.
#[derive(Debug, Clone, Default)]
pub struct TreeFacts {
    /// Every input path (relative to `src/`).
    pub inputs: BTreeSet<String>,
    /// Macros defined somewhere in the tree but only inside branches that
    /// fold away on AMD: they are never defined, so `defined(X)` is false.
    pub never_defined: BTreeSet<String>,
    /// The tree's include directories (relative to its root), searched after the
    /// including file's own directory, as nvcc's `-I` ([`crate::kernels::KernelContext`]).
    pub include_dirs: Vec<String>,
    /// Names the tree declares itself (`struct X`, `class X`, `enum X`, `union X`,
    /// `#define X`): its own, whatever they look like (`__nv_fp8_e4m3_dummy`).
    pub own_names: BTreeSet<String>,
    /// Whether the tree takes its author's ROCm branches ([`author_branches::decide`]).
    pub author_rocm: author_branches::AuthorRocm,
}

/// A named rule: rewrites one file, returns how many rewrites it made.
pub struct Rule {
    pub name: &'static str,
    pub apply: fn(&mut Unit, &TreeFacts) -> Result<usize, TranslateError>,
}

/// The rules in order. `fold-conditionals` runs after tree facts are computed, `includes`
/// after it.
pub const PIPELINE: &[Rule] = &[
    Rule { name: "refused-includes", apply: includes::refuse_unguarded },
    Rule { name: "author-rocm-branches", apply: author_branches::apply },
    Rule { name: "toolkit-version", apply: toolkit_version::apply },
    Rule { name: "arch-guards", apply: arch_guards::apply },
    Rule { name: "fold-conditionals", apply: fold_conditionals::apply },
    // after the folds: an include under `#if CUDA_VERSION >= 12080` (0 on AMD) is gone by now
    // (`refused-includes`, first, refuses the NVIDIA-only ones no such test guards)
    Rule { name: "includes", apply: includes::apply },
    Rule { name: "host-arch-queries", apply: host_arch::apply },
    Rule { name: "ggml-amd-profile", apply: ggml_amd::apply },
    Rule { name: "ggml-host-tiles", apply: ggml_host_tiles::apply },
    Rule { name: "ggml-cdna4-mma", apply: ggml_cdna4::apply },
    Rule { name: "wave-rows", apply: wave_rows::apply },
    Rule { name: "elementwise-packs", apply: elementwise_packs::apply },
    Rule { name: "quantized-mmq-tiles", apply: quantized_mmq_tiles::apply },
    Rule { name: "launch-bounds", apply: launch_bounds::apply },
    Rule { name: "upstream-kernel-fixes", apply: upstream_fixes::apply },
    Rule { name: "template-implied-arguments", apply: template_implied::apply },
    Rule { name: "dependent-member-templates", apply: dependent_templates::apply },
    Rule { name: "inline-asm", apply: inline_asm::apply },
    Rule { name: "warp-sync-intrinsics", apply: warp_sync::apply },
    Rule { name: "names", apply: names::apply },
    Rule { name: "compat-overloads", apply: compat_overloads::apply },
    Rule { name: "call-renames", apply: call_renames::apply },
    Rule { name: "hipify-casts", apply: hipify_casts::apply },
    Rule { name: "residue-check", apply: residue::apply },
];

/// The rule after which tree facts are gathered.
const FACTS_BEFORE: &str = "fold-conditionals";

pub fn run_pipeline(inputs: &[TreeFile], ctx: &KernelContext) -> Result<KernelOutput, TranslateError> {
    let (output, failures) = run_pipeline_each(inputs, ctx)?;
    // the error a rule-by-rule run stops at: the earliest rule's, in file order
    match failures.into_iter().min_by(|a, b| (a.stage, &a.path).cmp(&(b.stage, &b.path))) {
        Some(failure) => Err(failure.error),
        None => Ok(output),
    }
}

/// A file that did not translate: at which step (0 lexing, then 1 + the rule's index in
/// [`PIPELINE`]) and why.
#[derive(Debug, Clone)]
pub struct FileFailure {
    pub path: String,
    pub stage: usize,
    pub error: TranslateError,
}

/// Every file through the pipeline on its own: a file a rule fails on leaves the run (its
/// error kept), the others go on. Tree facts (the input paths, the macros never defined)
/// are the whole tree's either way. The output holds the files that passed every rule.
pub fn run_pipeline_each(inputs: &[TreeFile], ctx: &KernelContext) -> Result<(KernelOutput, Vec<FileFailure>), TranslateError> {
    // Files are independent within a rule: each step runs over them on the thread
    // pool, and results are taken in file order.
    let mut failures = Vec::new();
    let mut units = Vec::new();
    for (file, lexed) in inputs.iter().zip(inputs.par_iter().map(lex_unit).collect::<Vec<_>>()) {
        match lexed {
            Ok(unit) => units.push(unit),
            Err(error) => failures.push(FileFailure { path: file.rel_path.clone(), stage: 0, error }),
        }
    }
    units.sort_by(|a, b| a.path.cmp(&b.path));
    let mut facts = TreeFacts { inputs: inputs.iter().map(|f| f.rel_path.clone()).collect(), include_dirs: ctx.include_dirs.clone(), ..Default::default() };

    facts.author_rocm = author_branches::decide(&units, &facts);
    facts.own_names = units.iter().flat_map(|u| declared_names(&u.tokens)).collect();
    let mut notes = Vec::new();
    if author_branches::names_a_switch(&units) {
        notes.push(match &facts.author_rocm.incomplete {
            None => format!("author-rocm-branches: the author's ROCm branches are taken ({} defined)", facts.author_rocm.defined.iter().cloned().collect::<Vec<_>>().join(", ")),
            Some(missing) => format!("author-rocm-branches: the CUDA branches are translated: the author's ROCm branches include a header the tree does not have ({missing})"),
        });
    }
    let mut rule_counts = BTreeMap::new();
    // while recording provenance, each unit's tokens by source line after every rule (beside `units`)
    let recording = crate::provenance::recording();
    let mut traces: Vec<Option<Trace>> = units.iter().map(|u| recording.then(|| Trace::new(traced(&u.tokens)))).collect();
    for (index, rule) in PIPELINE.iter().enumerate() {
        if rule.name == FACTS_BEFORE {
            facts.never_defined = fold_conditionals::never_defined_macros(&units);
        }
        let counts: Vec<Result<usize, TranslateError>> = units
            .par_iter_mut()
            .zip(traces.par_iter_mut())
            .map(|(unit, trace)| {
                let n = (rule.apply)(unit, &facts)?;
                if let Some(trace) = trace {
                    trace.after(rule.name, traced(&unit.tokens));
                }
                Ok(n)
            })
            .collect();
        let mut count = 0;
        let mut kept = Vec::with_capacity(units.len());
        let mut kept_traces = Vec::with_capacity(units.len());
        for ((unit, trace), result) in units.into_iter().zip(traces).zip(counts) {
            match result {
                Ok(n) => {
                    count += n;
                    kept.push(unit);
                    kept_traces.push(trace);
                }
                Err(error) => failures.push(FileFailure { path: unit.path, stage: index + 1, error }),
            }
        }
        units = kept;
        traces = kept_traces;
        rule_counts.insert(rule.name, count);
    }

    let provenance: BTreeMap<String, LineProvenance> = units
        .iter()
        .zip(traces)
        .filter_map(|(unit, trace)| Some((output_path(&unit.path), trace?.finish(crate::provenance::output_lines(traced(&unit.tokens))).after_header(prelude::HEADER_LINES))))
        .collect();
    let mut files: Vec<TreeFile> = units.par_iter().map(|unit| TreeFile { rel_path: output_path(&unit.path), contents: prelude::finish(unit, ctx).into_bytes() }).collect();
    for (name, text) in COMPAT_HEADERS.iter().copied().chain(OWN_UNITS.iter().map(|(name, text, _)| (*name, *text))) {
        files.push(TreeFile { rel_path: name.to_string(), contents: prelude::compat_header(name, text).into_bytes() });
    }
    files.push(TreeFile { rel_path: GGML_HIP_ARCH_HEADER.to_string(), contents: prelude::table_header(GGML_HIP_ARCH_HEADER, &ggml_amd::arch_header()).into_bytes() });
    // the ROCm launcher's copy of the tiles rule quantized-mmq-tiles gives the kernels
    if let Some(quantized) = inputs.iter().find(|f| f.rel_path == QUANTIZED_MMQ_TILES.file) {
        let source = std::str::from_utf8(&quantized.contents).map_err(|_| TranslateError::NotUtf8 { file: quantized.rel_path.clone(), line: 0 })?;
        match quantized_mmq_tiles::host_table(source, &ctx.source_label) {
            Ok(table) => files.push(TreeFile { rel_path: QUANTIZED_MMQ_TILES_RS.to_string(), contents: table.into_bytes() }),
            Err(error) => failures.push(FileFailure { path: quantized.rel_path.clone(), stage: PIPELINE.len() + 1, error }),
        }
    }
    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    failures.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((KernelOutput { files, rule_counts, notes, provenance }, failures))
}

/// The names `tokens` declare: after `struct`, `class`, `union`, `enum` (`enum class`), the
/// macros of `#define` lines, and the functions they define (`T name(...) {`, `T name(...) const {`).
fn declared_names(tokens: &[Token]) -> Vec<String> {
    const NOT_A_TYPE: &[&str] = &["if", "for", "while", "switch", "return", "catch", "else", "do", "sizeof", "decltype", "alignof", "static_assert", "defined"];
    let significant: Vec<&Token> = tokens.iter().filter(|t| !t.is_trivia()).collect();
    let mut names = Vec::new();
    for (i, t) in significant.iter().enumerate() {
        // a function definition: a type-like token, the name, its parameters, then its body
        let typed = i > 0 && {
            let p = significant[i - 1];
            (p.kind == lexer::TokenKind::Ident && !NOT_A_TYPE.contains(&p.text.as_str())) || p.is_punct("*") || p.is_punct("&") || p.is_punct(">")
        };
        if typed && t.kind == lexer::TokenKind::Ident && !NOT_A_TYPE.contains(&t.text.as_str()) && significant.get(i + 1).is_some_and(|n| n.is_punct("(")) {
            let mut depth = 0usize;
            let close = significant[i + 1..].iter().position(|n| {
                if n.is_punct("(") {
                    depth += 1;
                } else if n.is_punct(")") {
                    depth -= 1;
                }
                depth == 0
            });
            let after = close.map(|c| i + 1 + c + 1).and_then(|k| significant.get(k).map(|n| (k, n)));
            if let Some((k, n)) = after {
                if n.is_punct("{") || (n.is_ident("const") && significant.get(k + 1).is_some_and(|m| m.is_punct("{"))) {
                    names.push(t.text.to_string());
                }
            }
        }
        let keyword = t.kind == lexer::TokenKind::Ident && matches!(t.text.as_str(), "struct" | "class" | "union" | "enum" | "define");
        let mut next = significant.get(i + 1);
        if t.is_ident("enum") && next.is_some_and(|n| n.is_ident("class") || n.is_ident("struct")) {
            next = significant.get(i + 2);
        }
        if let Some(n) = next.filter(|n| keyword && n.kind == lexer::TokenKind::Ident) {
            names.push(n.text.to_string());
        }
    }
    names
}

/// Tokens as the provenance trace reads them: `(source line, text)`.
fn traced(tokens: &[Token]) -> impl Iterator<Item = (u32, &str)> {
    tokens.iter().map(|t| (t.line, t.text.as_str()))
}

/// `X.cu` becomes `X.hip`; headers keep their names.
pub fn output_path(input: &str) -> String {
    match input.strip_suffix(".cu") {
        Some(stem) => format!("{stem}.hip"),
        None => input.to_string(),
    }
}

fn lex_unit(file: &TreeFile) -> Result<Unit, TranslateError> {
    let text = std::str::from_utf8(&file.contents).map_err(|e| TranslateError::NotUtf8 {
        file: file.rel_path.clone(),
        line: 1 + file.contents[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() as u32,
    })?;
    let lexed = lexer::lex(text);
    if let Some(p) = lexed.problems.first() {
        return Err(TranslateError::Lex { file: file.rel_path.clone(), line: p.line, what: p.what.to_string() });
    }
    Ok(Unit { path: file.rel_path.clone(), tokens: lexed.tokens })
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// Runs one rule on `src` (as file `t.cu`) with default facts.
    pub fn run(rule: fn(&mut Unit, &TreeFacts) -> Result<usize, TranslateError>, src: &str) -> Result<(String, usize), TranslateError> {
        run_with(rule, src, &TreeFacts::default())
    }

    pub fn run_with(
        rule: fn(&mut Unit, &TreeFacts) -> Result<usize, TranslateError>,
        src: &str,
        facts: &TreeFacts,
    ) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: "t.cu".into(), tokens: lexer::lex(src).tokens };
        let n = rule(&mut unit, facts)?;
        Ok((lexer::render(&unit.tokens), n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_names_are_types_macros_and_defined_functions() {
        let src = "struct __nv_x { int a; };\n#define FULL 1\n__forceinline__ __device__ float shfl_xor_sync(float x, int m) { return x; }\n\
                   template <class T> T* at(T* p) const { if (p) { return p; } else if (q) { } }\nvoid declared_only(int);\nint y = call(z);\n";
        let names = declared_names(&lexer::lex(src).tokens);
        // (`class T` of the template counts too: harmless, a name the tree declares)
        assert_eq!(names, ["__nv_x", "FULL", "shfl_xor_sync", "T", "at"]);
    }

    #[test]
    fn recorded_provenance_names_each_output_lines_source_and_rules() {
        crate::provenance::record(true);
        let src = "// affine\n__global__ void k(__nv_bfloat16 *x) {\n  x[0] = x[1];\n}\n";
        let inputs = [TreeFile { rel_path: "affine.cu".into(), contents: src.as_bytes().to_vec() }];
        let out = run_pipeline(&inputs, &KernelContext::new("t 1.0")).unwrap();
        let p = &out.provenance["affine.hip"];
        let hip = String::from_utf8(out.files.iter().find(|f| f.rel_path == "affine.hip").unwrap().contents.clone()).unwrap();
        let at = |needle: &str| hip.lines().position(|l| l.contains(needle)).unwrap();
        // the provenance and prelude lines are the translator's own
        assert!(p.sources[0].is_empty() && p.sources[1].is_empty(), "{:?}", p.sources);
        assert_eq!(p.sources[at("candle_bf16")], vec![2]);
        assert_eq!(p.sources[at("x[0] = x[1]")], vec![3]);
        assert_eq!(p.rules_on(at("candle_bf16") + 1..=at("candle_bf16") + 1), BTreeMap::from([("names", 1)]));
        assert!(p.rules_on(at("x[0]") + 1..=at("x[0]") + 1).is_empty());
    }
}
