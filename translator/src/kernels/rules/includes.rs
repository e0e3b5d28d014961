//! Rule `includes`: maps CUDA headers to HIP or compat headers.
//!
//! `#include` of a header in [`INCLUDES`] is rewritten (or dropped when the
//! compat prelude provides it); standard headers and headers of the kernel
//! tree itself pass through; anything else is an error naming the header.

use super::{TreeFacts, Unit};
use crate::kernels::mapping::{INCLUDES, STANDARD_INCLUDES};
use crate::lexer::{self, logical_lines, LogicalLine, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, facts: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut out = Vec::with_capacity(unit.tokens.len());
    for line in logical_lines(std::mem::take(&mut unit.tokens)) {
        if line.directive() != Some("include") {
            out.extend(line.tokens);
            continue;
        }
        let (target, quoted) = include_target(&line)
            .ok_or_else(|| TranslateError::unsupported(&unit.path, line.line(), lexer::render(&line.tokens).trim(), "unparsable #include"))?;
        if let Some((_, replacement)) = INCLUDES.iter().find(|(from, _)| *from == target) {
            count += 1;
            if let Some(to) = replacement {
                let spelled = if STANDARD_INCLUDES.contains(to) { format!("<{to}>") } else { format!("\"{to}\"") };
                out.extend(super::tokens::tokens_from(&format!("#include {spelled}\n"), line.line()));
            }
            continue;
        }
        let local = quoted && facts.inputs.contains(&resolve(&unit.path, &target));
        if !local && !STANDARD_INCLUDES.contains(&target.as_str()) {
            return Err(TranslateError::unsupported(
                &unit.path,
                line.line(),
                format!("#include {}", if quoted { format!("\"{target}\"") } else { format!("<{target}>") }),
                "no rule maps this header to HIP (add it to kernels::mapping::INCLUDES)",
            ));
        }
        out.extend(line.tokens);
    }
    unit.tokens = out;
    Ok(count)
}

/// The header named by an include line, and whether it was quoted.
fn include_target(line: &LogicalLine) -> Option<(String, bool)> {
    let body: Vec<_> = line.directive_body().iter().filter(|t| !t.is_trivia()).collect();
    let first = body.first()?;
    if first.kind == TokenKind::Str {
        return Some((first.text.trim_matches('"').to_string(), true));
    }
    if first.is_punct("<") {
        let end = body.iter().position(|t| t.is_punct(">"))?;
        let start = line.tokens.iter().position(|t| std::ptr::eq(t, *first))?;
        let stop = line.tokens.iter().position(|t| std::ptr::eq(t, body[end]))?;
        return Some((lexer::render(&line.tokens[start + 1..stop]).trim().to_string(), false));
    }
    None
}

/// `dir/of/file.cu` + `x.cuh` → `dir/of/x.cuh` (with `..` resolved).
fn resolve(from: &str, target: &str) -> String {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
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

    #[test]
    fn resolves_relative_paths() {
        assert_eq!(resolve("moe/a.cu", "../b.cuh"), "b.cuh");
        assert_eq!(resolve("moe/a.cu", "b.cuh"), "moe/b.cuh");
    }
}
