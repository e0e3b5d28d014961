//! Rule `arch-guards`: `__CUDA_ARCH__` tests get their AMD meaning.
//!
//! In HIP device code `__CUDA_ARCH__` is undefined, so `#if __CUDA_ARCH__ >= 800`
//! silently drops the bf16 kernels and `#if __CUDA_ARCH__ < 600` brings back
//! code that clashes with HIP. Instead each comparison is replaced by the
//! value [`ARCH_GUARDS`] gives it on AMD; `defined(__CUDA_ARCH__)` and
//! `#ifdef __CUDA_ARCH__` (the device pass) become `__HIP_DEVICE_COMPILE__`;
//! a bare value in a macro body (a diagnostic argument) becomes `0`.
//! Any other use, or a threshold with no row, is an error.

use super::tokens::{next_significant, prev_significant};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::ARCH_GUARDS;
use crate::lexer::{logical_lines, Token, TokenKind};
use crate::TranslateError;

const CUDA_ARCH: &str = "__CUDA_ARCH__";
const DEVICE_PASS: &str = "__HIP_DEVICE_COMPILE__";
const COMPARISONS: &[&str] = &[">=", "<=", ">", "<", "==", "!="];

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut out = Vec::with_capacity(unit.tokens.len());
    for line in logical_lines(std::mem::take(&mut unit.tokens)) {
        let directive = line.directive().map(str::to_string);
        let mut toks = line.tokens;
        let mut i = 0;
        while i < toks.len() {
            if !toks[i].is_ident(CUDA_ARCH) {
                i += 1;
                continue;
            }
            let at = toks[i].line;
            let Some(directive) = directive.as_deref() else {
                return Err(TranslateError::unsupported(&unit.path, at, CUDA_ARCH, "used outside a preprocessor line"));
            };
            count += 1;
            if matches!(directive, "ifdef" | "ifndef") || follows_defined(&toks, i) {
                toks[i].text = DEVICE_PASS.into();
                i += 1;
                continue;
            }
            if let Some((op_at, operand_at)) = comparison_after(&toks, i) {
                let (op, operand) = (toks[op_at].text.clone(), toks[operand_at].text.clone());
                let Some(row) = ARCH_GUARDS.iter().find(|g| g.op == op && g.operand == operand) else {
                    return Err(TranslateError::unsupported(
                        &unit.path,
                        at,
                        format!("{CUDA_ARCH} {op} {operand}"),
                        "no AMD meaning for this architecture test (add a row to kernels::mapping::ARCH_GUARDS)",
                    ));
                };
                let value = Token::new(TokenKind::Number, if row.value { "1" } else { "0" }, at);
                toks.splice(i..=operand_at, [value]);
                i += 1;
                continue;
            }
            if directive == "define" {
                toks[i] = Token::new(TokenKind::Number, "0", at);
                i += 1;
                continue;
            }
            return Err(TranslateError::unsupported(&unit.path, at, CUDA_ARCH, "architecture test of a form no rule understands"));
        }
        out.extend(toks);
    }
    unit.tokens = out;
    Ok(count)
}

/// `defined __CUDA_ARCH__` or `defined ( __CUDA_ARCH__`.
fn follows_defined(toks: &[Token], i: usize) -> bool {
    match prev_significant(toks, i) {
        Some(p) if toks[p].is_ident("defined") => true,
        Some(p) if toks[p].is_punct("(") => prev_significant(toks, p).is_some_and(|q| toks[q].is_ident("defined")),
        _ => false,
    }
}

/// Positions of the operator and operand of `__CUDA_ARCH__ <op> <operand>`.
fn comparison_after(toks: &[Token], i: usize) -> Option<(usize, usize)> {
    let op = next_significant(toks, i + 1)?;
    if toks[op].kind != TokenKind::Punct || !COMPARISONS.contains(&toks[op].text.as_str()) {
        return None;
    }
    let operand = next_significant(toks, op + 1)?;
    matches!(toks[operand].kind, TokenKind::Number | TokenKind::Ident).then_some((op, operand))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn bf16_and_fp8_guards_are_true_on_amd() {
        let (out, n) = run(apply, "#if __CUDA_ARCH__ >= 800\n#elif __CUDA_ARCH__ >= 890 // fp8\n#endif\n").unwrap();
        assert_eq!(out, "#if 1\n#elif 1 // fp8\n#endif\n");
        assert_eq!(n, 2);
    }

    #[test]
    fn guards_for_features_amd_has_natively_are_false() {
        let (out, _) = run(apply, "#if __CUDA_ARCH__ < 600\n#endif\n").unwrap();
        assert_eq!(out, "#if 0\n#endif\n");
    }

    #[test]
    fn nvidia_tensor_core_guards_are_false_even_where_the_number_matches_bf16() {
        let (out, _) = run(apply, "#if __CUDA_ARCH__ >= GGML_CUDA_CC_AMPERE\n#endif\n").unwrap();
        assert_eq!(out, "#if 0\n#endif\n");
    }

    #[test]
    fn device_pass_tests_become_hip_device_compile() {
        let (out, _) = run(apply, "#ifdef __CUDA_ARCH__\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n").unwrap();
        assert_eq!(out, "#ifdef __HIP_DEVICE_COMPILE__\n#if defined(__HIP_DEVICE_COMPILE__) && 1\n");
    }

    #[test]
    fn bare_value_in_a_macro_body_is_zero() {
        let (out, _) = run(apply, "#define NO_CODE f(__LINE__, __CUDA_ARCH__)\n").unwrap();
        assert_eq!(out, "#define NO_CODE f(__LINE__, 0)\n");
    }

    #[test]
    fn unknown_threshold_is_an_error_naming_it() {
        let err = run(apply, "\n#if __CUDA_ARCH__ >= 610\n").unwrap_err();
        assert!(err.to_string().starts_with("t.cu:2: __CUDA_ARCH__ >= 610: no AMD meaning"), "{err}");
    }

    #[test]
    fn use_in_code_is_an_error() {
        assert!(run(apply, "int a = __CUDA_ARCH__;\n").is_err());
    }

    #[test]
    fn idempotent_on_its_output() {
        let (once, _) = run(apply, "#if __CUDA_ARCH__ >= 530\n#endif\n").unwrap();
        let (twice, n) = run(apply, &once).unwrap();
        assert_eq!((once, 0), (twice, n));
    }
}
