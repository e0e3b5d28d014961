//! Rule `residue-check`: nothing CUDA-only may pass through.
//!
//! Runs last. Any identifier that only CUDA defines ([`FORBIDDEN_IDENTIFIERS`],
//! [`FORBIDDEN_PREFIXES`], runtime API names `cudaXxx`, `*_sync` intrinsics)
//! left outside comments and strings is an error naming file, line and
//! construct. `#include` lines were already checked by the `includes` rule.

use super::{TreeFacts, Unit};
use crate::kernels::mapping::{FORBIDDEN_IDENTIFIERS, FORBIDDEN_PREFIXES, HIP_RUNTIME_UNSUPPORTED};
use crate::lexer::{line_views, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, facts: &TreeFacts) -> Result<usize, TranslateError> {
    for line in line_views(&unit.tokens) {
        if line.directive() == Some("include") {
            continue;
        }
        for t in line.tokens.iter().filter(|t| t.kind == TokenKind::Ident) {
            if facts.own_names.contains(t.text.as_str()) {
                continue;
            }
            if HIP_RUNTIME_UNSUPPORTED.lines().any(|n| n == t.text) {
                return Err(TranslateError::nvidia_only(&unit.path, t.line, t.text.as_str(), "a CUDA runtime API name HIP has no counterpart for (HIPIFY's runtime API table)", None));
            }
            if is_cuda_only(&t.text) {
                return Err(TranslateError::unsupported(
                    &unit.path,
                    t.line,
                    t.text.as_str(),
                    "CUDA-only construct that no rule translates (add a mapping or rule in translator/src/kernels)",
                ));
            }
        }
    }
    Ok(0)
}

pub fn is_cuda_only(ident: &str) -> bool {
    FORBIDDEN_IDENTIFIERS.contains(&ident)
        || FORBIDDEN_PREFIXES.iter().any(|p| ident.starts_with(p))
        || ident.ends_with("_sync")
        || ident.strip_prefix("cuda").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn leftovers_are_errors_naming_line_and_construct() {
        for (src, construct) in [
            ("int a;\n__nv_half b;\n", "t.cu:2: __nv_half:"),
            ("cudaDeviceSynchronize();\n", "t.cu:1: cudaDeviceSynchronize:"),
            ("__ballot_sync(m, p);\n", "t.cu:1: __ballot_sync:"),
            ("asm(\"x\");\n", "t.cu:1: asm:"),
        ] {
            let err = run(apply, src).unwrap_err().to_string();
            assert!(err.starts_with(construct), "{err}");
        }
    }

    #[test]
    fn names_the_tree_declares_and_runtime_names_hip_lacks() {
        let facts = TreeFacts { own_names: ["__nv_fp8_e4m3_dummy".to_string(), "shfl_xor_sync".to_string()].into(), ..Default::default() };
        assert!(crate::kernels::rules::test_support::run_with(apply, "float y = math::shfl_xor_sync(x, 1);\n", &facts).is_ok());
        assert!(crate::kernels::rules::test_support::run_with(apply, "struct __nv_fp8_e4m3_dummy { int x; };\n", &facts).is_ok());
        let err = run(apply, "f(cudaFuncAttributeNonPortableClusterSizeAllowed);\n").unwrap_err();
        assert!(matches!(err, TranslateError::NvidiaOnly { .. }), "{err}");
    }

    #[test]
    fn comments_strings_and_project_names_pass() {
        let src = "// __nv_bfloat16 asm\nconst char *s = \"cudaMalloc\"; int ggml_cuda_dp4a; int cuda_utils;\n#include <cuda.h>\n";
        assert!(run(apply, src).is_ok());
    }
}
