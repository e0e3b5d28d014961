//! Rule `includes`: maps CUDA headers to HIP or compat headers.
//!
//! An include that finds a file of the tree (as nvcc would: [`include_paths`]) is the
//! tree's own and passes through; `#include` of a header in [`INCLUDES`] is rewritten
//! (or dropped when the compat prelude provides it); standard headers pass through;
//! anything else is an error naming the header.

//!
//! It runs after `fold-conditionals`, so an include under a test that is false on AMD
//! (`#if CUDA_VERSION >= 12080`: the toolkit version is 0) is gone by then. Rule
//! `refused-includes` runs first of all and refuses the NVIDIA-only and foreign headers
//! that no such test guards: a unit that includes CUTLASS is refused for CUTLASS, not for
//! the architecture tests of CUTLASS-only code.

use super::{TreeFacts, Unit};
use crate::kernels::mapping::{header_row, FOREIGN_HEADERS, INCLUDES, INCLUDE_DIRECTORIES, nvidia_only_header, ROCM_LIBRARY_HEADERS, STANDARD_INCLUDES, TOOLKIT_VERSION_MACROS};
use crate::kernels::include_paths::{self, include_target};
use crate::lexer::{self, line_views, logical_lines};
use crate::TranslateError;

/// Rule `refused-includes`: the NVIDIA-only and foreign headers included outside any
/// toolkit-version or `__CUDA_ARCH__` test are refused; nothing is rewritten.
pub fn refuse_unguarded(unit: &mut Unit, facts: &TreeFacts) -> Result<usize, TranslateError> {
    // per open conditional group: whether its condition (or an earlier branch's) tests the
    // toolkit version or the architecture
    let mut groups: Vec<bool> = Vec::new();
    for line in line_views(&unit.tokens) {
        let tests_version = || line.directive_body().iter().any(|t| t.text == "__CUDA_ARCH__" || TOOLKIT_VERSION_MACROS.contains(&t.text.as_str()));
        match line.directive() {
            Some("if" | "ifdef" | "ifndef") => groups.push(tests_version()),
            Some("elif") => {
                let v = tests_version();
                if let Some(top) = groups.last_mut() {
                    *top |= v;
                }
            }
            Some("endif") => {
                groups.pop();
            }
            Some("include") if !groups.iter().any(|g| *g) => {
                if let Some((target, quoted)) = include_target(&line) {
                    if let Some(err) = refusal(unit, facts, &target, quoted, line.line()) {
                        return Err(err);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(0)
}

/// The refusal of an include that is not the tree's own: NVIDIA-only or a foreign library.
fn refusal(unit: &Unit, facts: &TreeFacts, target: &str, quoted: bool, line: u32) -> Option<TranslateError> {
    if include_paths::resolve(&unit.path, target, quoted, &facts.include_dirs, |p| facts.inputs.contains(p)).is_some() {
        return None;
    }
    let spelled = format!("#include {}", if quoted { format!("\"{target}\"") } else { format!("<{target}>") });
    if let Some(row) = nvidia_only_header(target) {
        return Some(TranslateError::nvidia_only(&unit.path, line, spelled, row.cause, row.since_sm));
    }
    header_row(FOREIGN_HEADERS, target).map(|library| TranslateError::NeedsLibrary { file: unit.path.clone(), line, construct: spelled, library: library.to_string() })
}

pub fn apply(unit: &mut Unit, facts: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut out = Vec::with_capacity(unit.tokens.len());
    for line in logical_lines(std::mem::take(&mut unit.tokens)) {
        if line.directive() != Some("include") {
            out.extend(line.tokens);
            continue;
        }
        let (target, quoted) = include_target(&line.view())
            .ok_or_else(|| TranslateError::unsupported(&unit.path, line.line(), lexer::render(&line.tokens).trim(), "unparsable #include"))?;
        if include_paths::resolve(&unit.path, &target, quoted, &facts.include_dirs, |p| facts.inputs.contains(p)).is_some() {
            out.extend(line.tokens);
            continue;
        }
        let exact = INCLUDES.iter().find(|(from, _)| *from == target).map(|(_, to)| *to);
        if let Some(replacement) = exact.or_else(|| header_row(INCLUDE_DIRECTORIES, &target).map(Some)) {
            count += 1;
            if let Some(to) = replacement {
                let spelled = if STANDARD_INCLUDES.contains(&to) { format!("<{to}>") } else { format!("\"{to}\"") };
                out.extend(super::tokens::tokens_from(&format!("#include {spelled}\n"), line.line()));
            }
            continue;
        }
        let spelled = || format!("#include {}", if quoted { format!("\"{target}\"") } else { format!("<{target}>") });
        if let Some(err) = refusal(unit, facts, &target, quoted, line.line()) {
            return Err(err);
        }
        if header_row(ROCM_LIBRARY_HEADERS, &target).is_some() {
            out.extend(line.tokens);
            continue;
        }
        if !STANDARD_INCLUDES.contains(&target.as_str()) {
            return Err(TranslateError::unsupported(
                &unit.path,
                line.line(),
                spelled(),
                "no rule maps this header to HIP (add it to kernels::mapping::INCLUDES)",
            ));
        }
        out.extend(line.tokens);
    }
    unit.tokens = out;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run_with;

    fn facts() -> TreeFacts {
        TreeFacts { inputs: ["t.cu".to_string(), "cuda_utils.cuh".to_string()].into(), ..Default::default() }
    }

    #[test]
    fn maps_cuda_headers_and_keeps_local_and_standard_ones() {
        let src = "#include \"cuda_fp16.h\"\n#include <mma.h>\n#include<stdint.h>\n#include \"cuda_utils.cuh\"\n#include <cub/cub.cuh>\n#include <cuda/std/limits>\n";
        let (out, n) = run_with(apply, src, &facts()).unwrap();
        assert_eq!(out, "#include \"candle_hip_wmma.h\"\n#include<stdint.h>\n#include \"cuda_utils.cuh\"\n#include \"candle_hip_cub.h\"\n#include <limits>\n");
        assert_eq!(n, 4);
    }

    /// Every row of the table: a header HIP has under another name is that name; one
    /// the compat prelude covers goes
    #[test]
    fn every_row_maps_as_its_table_says() {
        for (from, to) in INCLUDES {
            let (out, n) = run_with(apply, &format!("#include <{from}>\nint x;\n"), &facts()).unwrap();
            let wanted = match to {
                Some(to) => vec![format!("#include \"{to}\"\nint x;\n"), format!("#include <{to}>\nint x;\n")],
                None => vec!["int x;\n".to_string()],
            };
            assert!(wanted.contains(&out) && n == 1, "{from}: {out}");
        }
    }

    #[test]
    fn hipify_headers_are_dropped_like_the_cuda_ones() {
        let (out, _) = run_with(apply, "#include \"hip/hip_runtime.h\"\nint x;\n", &facts()).unwrap();
        assert_eq!(out, "int x;\n");
    }

    #[test]
    fn unknown_cuda_header_is_an_error_naming_it() {
        let err = run_with(apply, "\n#include <cusparse.h>\n", &facts()).unwrap_err();
        assert_eq!(err.to_string(), "t.cu:2: #include <cusparse.h>: no rule maps this header to HIP (add it to kernels::mapping::INCLUDES)");
    }

    /// What `cargo xtask corpus` reads off the tables is what the compat header does: it
    /// declares COMPAT_CUB_NAMES and takes every other name from HIPCUB_HEADER.
    #[test]
    fn the_cub_compat_header_declares_its_names_and_includes_hipcub() {
        let header = crate::kernels::mapping::COMPAT_HEADERS.iter().find(|(n, _)| *n == "candle_hip_cub.h").unwrap().1;
        for name in crate::kernels::mapping::COMPAT_CUB_NAMES {
            assert!(header.contains(&format!("class {name} {{")), "candle_hip_cub.h does not declare {name}");
        }
        assert!(header.contains(&format!("#include <{}>", crate::kernels::mapping::HIPCUB_HEADER)));
    }

    #[test]
    fn library_directories_map_to_their_compat_header() {
        let (out, n) = run_with(apply, "#include <cub/block/block_load.cuh>\n#include <thrust/iterator/counting_iterator.h>\n", &facts()).unwrap();
        assert_eq!(out, "#include \"candle_hip_cub.h\"\n#include \"candle_hip_rocthrust.h\"\n");
        assert_eq!(n, 2);
    }

    #[test]
    fn nvidia_only_and_foreign_headers_are_refused_with_their_cause() {
        let err = run_with(apply, "#include <cute/tensor.hpp>\n", &facts()).unwrap_err();
        assert!(matches!(err, TranslateError::NvidiaOnly { .. }));
        assert!(err.to_string().starts_with("t.cu:1: #include <cute/tensor.hpp>: NVIDIA-only: CuTe"), "{err}");
        let err = run_with(apply, "#include <torch/all.h>\n", &facts()).unwrap_err();
        assert_eq!(err.to_string(), "t.cu:1: #include <torch/all.h>: needs PyTorch's C++ API, which this translation does not provide");
        // a directory row holds only what is inside it
        assert!(nvidia_only_header("cutlass_like.h").is_none());
    }

    #[test]
    fn the_trees_own_headers_pass_whatever_their_extension_and_directory() {
        let facts = TreeFacts {
            inputs: ["k/t.cu".to_string(), "cuda_compat.h".to_string(), "k/moe_utils.h".to_string(), "inc/x.inl".to_string()].into(),
            include_dirs: vec!["inc".to_string()],
            ..Default::default()
        };
        let src = "#include \"../cuda_compat.h\"\n#include \"moe_utils.h\"\n#include <x.inl>\n";
        let mut unit = Unit { path: "k/t.cu".into(), tokens: lexer::lex(src).tokens };
        assert_eq!(apply(&mut unit, &facts).unwrap(), 0);
        assert_eq!(lexer::render(&unit.tokens), src);
        // not beside the includer nor in an include directory: not the tree's
        let mut unit = Unit { path: "k/t.cu".into(), tokens: lexer::lex("#include \"cuda_compat.h\"\n").tokens };
        let err = apply(&mut unit, &facts).unwrap_err().to_string();
        assert!(err.starts_with("k/t.cu:1: #include \"cuda_compat.h\": no rule"), "{err}");
    }
}
