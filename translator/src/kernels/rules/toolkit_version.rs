//! Rule `toolkit-version`: CUDA toolkit version macros read as 0.
//!
//! HIP defines none of [`TOOLKIT_VERSION_MACROS`], so in a preprocessor line
//! they become the literal `0` that hipcc would give them; every feature they
//! gate comes from HIP or the compat headers. In ordinary code they are an
//! error (no rule gives them a meaning there).

use super::{TreeFacts, Unit};
use crate::kernels::mapping::TOOLKIT_VERSION_MACROS;
use crate::lexer::{logical_lines, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut out = Vec::with_capacity(unit.tokens.len());
    for mut line in logical_lines(std::mem::take(&mut unit.tokens)) {
        let is_directive = line.directive().is_some();
        for t in &mut line.tokens {
            if t.kind == TokenKind::Ident && TOOLKIT_VERSION_MACROS.contains(&t.text.as_str()) {
                if !is_directive {
                    return Err(TranslateError::unsupported(&unit.path, t.line, t.text.as_str(), "CUDA toolkit version used outside a preprocessor line"));
                }
                t.text = "0".into();
                t.kind = TokenKind::Number;
                count += 1;
            }
        }
        out.extend(line.tokens);
    }
    unit.tokens = out;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn version_macros_become_zero_in_directives() {
        let (out, n) = run(apply, "#define V (__CUDACC_VER_MAJOR__ * 1000)\n#if CUDART_VERSION >= 11080\n").unwrap();
        assert_eq!(out, "#define V (0 * 1000)\n#if 0 >= 11080\n");
        assert_eq!(n, 2);
    }

    #[test]
    fn version_macro_in_code_is_an_error() {
        assert!(run(apply, "int v = CUDA_VERSION;\n").unwrap_err().to_string().starts_with("t.cu:1: CUDA_VERSION:"));
    }
}
