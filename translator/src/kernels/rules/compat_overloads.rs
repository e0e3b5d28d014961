//! Rule `compat-overloads`: upstream's own definitions of an overload that
//! the compat header provides go.
//!
//! `call-renames` sends every call of `atomicAdd` (and the other functions of
//! [`CALL_RENAMES`]) to a compat function with the overloads HIP lacks. An
//! upstream *definition* of such an overload (candle 0.9.x defines
//! `atomicAdd(__half*, __half)` for GPUs below sm_70, a guard that is true on
//! AMD) would be renamed into a second definition of the compat overload.
//! A definition listed in [`COMPAT_OVERLOADS`] is removed (the compat header
//! has it); any other is an error naming file, line and overload.

use super::tokens::{matching_close, next_significant, prev_significant};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{CALL_RENAMES, COMPAT_OVERLOADS};
use crate::lexer::{Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        let Some((start, end, name, pointee)) = definition_at(&unit.tokens, i) else {
            i += 1;
            continue;
        };
        let line = unit.tokens[i].line;
        let Some((_, _, why)) = COMPAT_OVERLOADS.iter().find(|(f, t, _)| *f == name && *t == pointee) else {
            let to = CALL_RENAMES.iter().find(|(f, _)| *f == name).map_or("", |(_, to)| *to);
            return Err(TranslateError::unsupported(
                &unit.path,
                line,
                format!("definition of {name}({pointee}*, ...)"),
                format!("upstream defines its own overload of {name}, which call-renames turns into a second definition of {to}: add a row to kernels::mapping::COMPAT_OVERLOADS if the compat header provides it, else a compat overload"),
            ));
        };
        let note = format!("// rule compat-overloads: upstream's {name}({pointee}*, ...) removed: {why}");
        unit.tokens.splice(start..=end, [Token::new(TokenKind::LineComment, note, line)]);
        count += 1;
        i = start + 1;
    }
    Ok(count)
}

/// At `i`, a function definition `SPECIFIERS NAME ( PARAMS ) { BODY }` of a
/// [`CALL_RENAMES`] function: the token range of the whole definition (from
/// its first specifier to the body's `}`), the name and the type its first
/// parameter points to.
fn definition_at(tokens: &[Token], i: usize) -> Option<(usize, usize, String, String)> {
    let t = &tokens[i];
    if t.kind != TokenKind::Ident || !CALL_RENAMES.iter().any(|(f, _)| t.text == *f) {
        return None;
    }
    let open = next_significant(tokens, i + 1).filter(|&o| tokens[o].is_punct("("))?;
    let close = matching_close(tokens, open)?;
    let body = next_significant(tokens, close + 1).filter(|&b| tokens[b].is_punct("{"))?;
    // a definition's name follows its return type (`__half atomicAdd(`), a call's never does
    let mut start = prev_significant(tokens, i).filter(|&p| tokens[p].kind == TokenKind::Ident || tokens[p].is_punct("*"))?;
    while let Some(p) = prev_significant(tokens, start).filter(|&p| tokens[p].kind == TokenKind::Ident || tokens[p].is_punct("*")) {
        start = p;
    }
    let end = matching_close(tokens, body)?;
    let pointee = tokens[open + 1..close].iter().filter(|t| !t.is_trivia() && !t.is_ident("const")).find(|t| t.kind == TokenKind::Ident)?.text.to_string();
    Some((start, end, t.text.to_string(), pointee))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    /// candle-kernels 0.9.1's compatibility.cuh after arch-guards kept its `< 700` branch.
    const STUB: &str = "// adapted from cutorch\n__device__ __half atomicAdd(__half *address, __half val) {\n   // do { ... } while (assumed != old);\n}\n\n__device__ float f(float* p) { return atomicAdd(p, 1.0f); }\n";

    #[test]
    fn an_upstream_overload_the_compat_header_has_is_removed() {
        let (out, n) = run(apply, STUB).unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            out,
            format!("// adapted from cutorch\n// rule compat-overloads: upstream's atomicAdd(__half*, ...) removed: {}\n\n__device__ float f(float* p) {{ return atomicAdd(p, 1.0f); }}\n", COMPAT_OVERLOADS[0].2)
        );
    }

    #[test]
    fn calls_and_declarations_are_left_alone() {
        let src = "__device__ void g(float* p) { if (atomicAdd(p, 1.0f)) { x(); } }\n__device__ __half atomicAdd(__half* a, __half v);\n";
        assert_eq!(run(apply, src).unwrap(), (src.to_string(), 0));
    }

    #[test]
    fn an_overload_without_a_row_is_an_error() {
        let src = "\n__device__ double atomicAdd(double* address, double val) {\n  return 0;\n}\n";
        let err = run(apply, src).unwrap_err().to_string();
        assert!(err.starts_with("t.cu:2: definition of atomicAdd(double*, ...): upstream defines its own overload of atomicAdd, which call-renames turns into a second definition of candle_atomic_add"), "{err}");
    }
}
