//! Rule `author-rocm-branches`: code already written for both platforms takes its
//! author's ROCm branch.
//!
//! The switches of [`AUTHOR_ROCM_MACROS`] (vLLM's `USE_ROCM`, in the code Candle and
//! mistral.rs take from vLLM) are decided for the whole tree, as its ROCm build would:
//! defined when the tree's ROCm side is complete, that is every header its ROCm branches
//! include is a file of the tree or a header the rules know; otherwise undefined, so that
//! the CUDA branches are translated, and [`decide`] says why. The conditionals these
//! switches alone decide are folded before any other rule runs, so no rule sees the branch
//! that is not taken.

use std::collections::BTreeSet;

use super::fold_conditionals::{fold, Kept};
use super::pp_expr::Known;
use super::{TreeFacts, Unit};
use crate::kernels::include_paths::{self, include_target};
use crate::kernels::mapping::{header_row, AUTHOR_ROCM_MACROS, INCLUDES, INCLUDE_DIRECTORIES, ROCM_LIBRARY_HEADERS, STANDARD_INCLUDES};
use crate::lexer::line_views;
use crate::TranslateError;

/// The tree's decision: the switches defined and those not, and why they are not.
#[derive(Debug, Clone, Default)]
pub struct AuthorRocm {
    pub defined: BTreeSet<String>,
    pub undefined: BTreeSet<String>,
    /// Set when the switches are undefined: the header the ROCm branches name that the
    /// tree lacks (`file:line: #include "x"`).
    pub incomplete: Option<String>,
}

pub fn apply(unit: &mut Unit, facts: &TreeFacts) -> Result<usize, TranslateError> {
    let known = Known { undefined: &facts.author_rocm.undefined, defined: &facts.author_rocm.defined };
    let mut out = Vec::with_capacity(unit.tokens.len());
    let folded = fold(&unit.path, &unit.tokens, known, |kept| match kept {
        Kept::Line(line) => out.extend_from_slice(line.tokens),
        Kept::New(tokens) => out.extend(tokens),
    })?;
    unit.tokens = out;
    Ok(folded)
}

/// Whether the tree's ROCm branches are complete: with the switches defined, every
/// header a kept `#include` names is the tree's own, mapped, standard or a ROCm library's.
pub fn decide(units: &[Unit], facts: &TreeFacts) -> AuthorRocm {
    let switches: BTreeSet<String> = AUTHOR_ROCM_MACROS.iter().map(|(m, _)| m.to_string()).collect();
    let empty = BTreeSet::new();
    let known = Known { undefined: &empty, defined: &switches };
    for unit in units {
        let mut missing = None;
        // a file whose conditionals are malformed is reported by the rule itself
        let _ = fold(&unit.path, &unit.tokens, known, |kept| {
            let Kept::Line(line) = kept else { return };
            if missing.is_some() || line.directive() != Some("include") {
                return;
            }
            let Some((target, quoted)) = include_target(&line) else { return };
            let own = include_paths::resolve(&unit.path, &target, quoted, &facts.include_dirs, |p| facts.inputs.contains(p)).is_some();
            let known_header = INCLUDES.iter().any(|(from, _)| *from == target)
                || STANDARD_INCLUDES.contains(&target.as_str())
                || header_row(ROCM_LIBRARY_HEADERS, &target).is_some()
                || header_row(INCLUDE_DIRECTORIES, &target).is_some();
            if !own && !known_header && quoted {
                missing = Some(format!("{}:{}: #include \"{target}\"", unit.path, line.line()));
            }
        });
        if let Some(missing) = missing {
            return AuthorRocm { defined: BTreeSet::new(), undefined: switches, incomplete: Some(missing) };
        }
    }
    AuthorRocm { defined: switches, undefined: BTreeSet::new(), incomplete: None }
}

/// Whether any unit names a switch at all (else there is nothing to say about the choice).
pub fn names_a_switch(units: &[Unit]) -> bool {
    units.iter().any(|u| line_views(&u.tokens).any(|l| l.directive().is_some() && l.tokens.iter().any(|t| AUTHOR_ROCM_MACROS.iter().any(|(m, _)| t.is_ident(m)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer;

    fn unit(path: &str, src: &str) -> Unit {
        Unit { path: path.into(), tokens: lexer::lex(src).tokens }
    }

    fn facts_for(units: &[Unit]) -> TreeFacts {
        let mut facts = TreeFacts { inputs: units.iter().map(|u| u.path.clone()).collect(), ..Default::default() };
        facts.author_rocm = decide(units, &facts);
        facts
    }

    const COMPAT: &str = "#ifndef USE_ROCM\n#define SHFL(v, m) __shfl_xor_sync(uint32_t(-1), v, m)\n#else\n#define SHFL(v, m) __shfl_xor(v, m)\n#endif\n";

    #[test]
    fn a_complete_tree_takes_the_authors_rocm_branch() {
        let units = [unit("cuda_compat.h", COMPAT), unit("k.cu", "#include \"cuda_compat.h\"\n#if defined(USE_ROCM) && X\nint a;\n#endif\n")];
        let facts = facts_for(&units);
        assert!(facts.author_rocm.incomplete.is_none());
        let mut u = units[0].clone();
        assert_eq!(apply(&mut u, &facts).unwrap(), 1);
        assert_eq!(lexer::render(&u.tokens), "#define SHFL(v, m) __shfl_xor(v, m)\n");
        // a condition the switch does not decide alone stays
        let mut k = units[1].clone();
        apply(&mut k, &facts).unwrap();
        assert!(lexer::render(&k.tokens).contains("#if defined(USE_ROCM) && X"));
    }

    #[test]
    fn a_rocm_branch_naming_a_header_the_tree_lacks_leaves_the_cuda_branches() {
        let src = "#ifdef USE_ROCM\n#include \"quantization/fp8/amd/quant_utils.cuh\"\n#else\n#include \"quantization/fp8/nvidia/quant_utils.cuh\"\n#endif\n";
        let units = [unit("k.cu", src), unit("quantization/fp8/nvidia/quant_utils.cuh", ""), unit("cuda_compat.h", COMPAT)];
        let facts = facts_for(&units);
        assert_eq!(facts.author_rocm.incomplete.as_deref(), Some("k.cu:2: #include \"quantization/fp8/amd/quant_utils.cuh\""));
        let mut k = units[0].clone();
        apply(&mut k, &facts).unwrap();
        assert_eq!(lexer::render(&k.tokens), "#include \"quantization/fp8/nvidia/quant_utils.cuh\"\n");
        let mut c = units[2].clone();
        apply(&mut c, &facts).unwrap();
        assert_eq!(lexer::render(&c.tokens), "#define SHFL(v, m) __shfl_xor_sync(uint32_t(-1), v, m)\n");
    }

    #[test]
    fn rocm_library_headers_do_not_make_a_tree_incomplete() {
        let units = [unit("q.cu", "#ifdef USE_ROCM\n#include <hipblas/hipblas.h>\n#include \"cuda_fp16.h\"\n#endif\n")];
        assert!(facts_for(&units).author_rocm.incomplete.is_none());
        assert!(names_a_switch(&units));
    }
}
