//! Rule `host-arch-queries`: host-side compute-capability predicates get the
//! value that matches the translated device code.
//!
//! ggml's launchers (MMQ) choose tile sizes and stream-k from the `cc` the
//! backend passes, read with NVIDIA meanings: `GGML_CUDA_CC_IS_NVIDIA(cc) &&
//! cc >= VOLTA` selects 128-row tiles that only the tensor-core device code
//! has. `arch-guards` removed that device code, so on AMD (whatever number a
//! device reports as its compute capability) the host must take the
//! non-NVIDIA branch: each macro of [`HOST_ARCH_QUERIES`] keeps its name and
//! parameters and gets the table's value as its body.

use super::{TreeFacts, Unit};
use crate::kernels::mapping::HOST_ARCH_QUERIES;
use crate::lexer::{logical_lines, Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut out = Vec::with_capacity(unit.tokens.len());
    for mut line in logical_lines(std::mem::take(&mut unit.tokens)) {
        if line.directive() == Some("define") {
            if let Some(query) = define_of_query(&line.tokens) {
                let at = line.line();
                let Some(body) = body_start(&line.tokens) else {
                    return Err(TranslateError::unsupported(&unit.path, at, query.macro_name, "expected a function-like macro `NAME(cc) body`"));
                };
                let newline: Vec<Token> = line.tokens.last().filter(|t| t.kind == TokenKind::Newline).cloned().into_iter().collect();
                line.tokens.truncate(body);
                line.tokens.push(Token::new(TokenKind::Space, " ", at));
                line.tokens.push(Token::new(TokenKind::Punct, "(", at));
                line.tokens.push(Token::new(TokenKind::Ident, query.value, at));
                line.tokens.push(Token::new(TokenKind::Punct, ")", at));
                line.tokens.extend(newline);
                count += 1;
            }
        }
        out.extend(line.tokens);
    }
    unit.tokens = out;
    Ok(count)
}

/// The table row of the macro this `#define` line defines, if any.
fn define_of_query(tokens: &[Token]) -> Option<&'static crate::kernels::mapping::HostArchQuery> {
    let name = tokens.iter().filter(|t| !t.is_trivia()).nth(2)?;
    HOST_ARCH_QUERIES.iter().find(|q| name.is_ident(q.macro_name))
}

/// Index just after the `)` closing the parameter list (which must follow the name directly).
fn body_start(tokens: &[Token]) -> Option<usize> {
    let name_at = tokens.iter().enumerate().filter(|(_, t)| !t.is_trivia()).nth(2)?.0;
    if !tokens.get(name_at + 1)?.is_punct("(") {
        return None;
    }
    let close = tokens[name_at + 1..].iter().position(|t| t.is_punct(")"))?;
    Some(name_at + 1 + close + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn nvidia_query_becomes_false() {
        let (out, n) = run(apply, "#define GGML_CUDA_CC_IS_NVIDIA(cc) (cc < GGML_CUDA_CC_OFFSET_MTHREADS)\nint x;\n").unwrap();
        assert_eq!(out, "#define GGML_CUDA_CC_IS_NVIDIA(cc) (false)\nint x;\n");
        assert_eq!(n, 1);
    }

    #[test]
    fn other_macros_are_kept() {
        let src = "#define GGML_CUDA_CC_IS_AMD(cc) (cc >= GGML_CUDA_CC_OFFSET_AMD)\n";
        assert_eq!(run(apply, src).unwrap(), (src.to_string(), 0));
    }

    #[test]
    fn object_like_definition_is_an_error() {
        let err = run(apply, "#define GGML_CUDA_CC_IS_NVIDIA 1\n").unwrap_err().to_string();
        assert!(err.starts_with("t.cu:1: GGML_CUDA_CC_IS_NVIDIA:"), "{err}");
    }
}
