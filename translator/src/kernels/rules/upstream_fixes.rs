//! Rule `upstream-kernel-fixes`: a barrier upstream's kernel is missing.
//!
//! Each row of [`UPSTREAM_BARRIERS`] names a file and a line comment of
//! upstream's that ends a loop whose shared-memory tiles are refilled at the
//! top of the next iteration without a `__syncthreads()` after the last reads
//! (a race compute-sanitizer reports, on NVIDIA as it would be on AMD). The
//! rule puts the barrier before the loop's closing brace. It changes no
//! result, only removes the hazard. If the file is there but the comment is
//! not (upstream changed the code, perhaps fixing it), the rule stops with an
//! error naming the file: the row must be checked and updated or removed.

use super::{TreeFacts, Unit};
use crate::kernels::mapping::UPSTREAM_BARRIERS;
use crate::lexer::{Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    for fix in UPSTREAM_BARRIERS.iter().filter(|f| f.file == unit.path) {
        let Some(comment_at) = unit.tokens.iter().position(|t| t.kind == TokenKind::LineComment && t.text.trim_end() == fix.loop_end_comment) else {
            return Err(TranslateError::unsupported(
                &unit.path,
                0,
                fix.loop_end_comment,
                "rule upstream-kernel-fixes: the loop end it adds a barrier to is gone (check whether upstream fixed the race; update or remove the row in UPSTREAM_BARRIERS)",
            ));
        };
        let Some(brace_at) = unit.tokens[..comment_at].iter().rposition(|t| !t.is_trivia()).filter(|&i| unit.tokens[i].is_punct("}")) else {
            return Err(TranslateError::unsupported(&unit.path, unit.tokens[comment_at].line, fix.loop_end_comment, "rule upstream-kernel-fixes: expected `}` before this comment"));
        };
        let line = unit.tokens[brace_at].line;
        // The brace's own indentation, plus one level, for the barrier's line.
        let indent = match unit.tokens[..brace_at].last() {
            Some(t) if t.kind == TokenKind::Space => t.text.to_string(),
            _ => String::new(),
        };
        let barrier = [
            Token::new(TokenKind::Space, "    ", line),
            Token::new(TokenKind::Ident, "__syncthreads", line),
            Token::new(TokenKind::Punct, "(", line),
            Token::new(TokenKind::Punct, ")", line),
            Token::new(TokenKind::Punct, ";", line),
            Token::new(TokenKind::Space, " ", line),
            Token::new(TokenKind::LineComment, format!("// rule upstream-kernel-fixes: {}", fix.why), line),
            Token::new(TokenKind::Newline, "\n", line),
            Token::new(TokenKind::Space, indent, line),
        ];
        unit.tokens.splice(brace_at..brace_at, barrier);
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn barrier_before_the_loop_end() {
        // test_support names the unit t.cu; the table row for it exists only in tests
        let src = "    for (;;) {\n        use(tile);\n    } // end k_base loop\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("        use(tile);\n        __syncthreads(); // rule upstream-kernel-fixes: "), "{out}");
        assert!(out.ends_with("\n    } // end k_base loop\n"), "{out}");
    }

    #[test]
    fn missing_loop_end_is_an_error() {
        let err = run(apply, "int x;\n").unwrap_err().to_string();
        assert!(err.starts_with("t.cu:0: // end k_base loop:"), "{err}");
    }
}
