//! Rule `wave-rows`: Candle's row kernels reduce over the whole wavefront.
//!
//! Upstream launches softmax with one 32-thread warp per row and the norms
//! with 32 threads below 1024 columns, and reduces with 32-lane butterflies.
//! On CDNA a wavefront has 64 lanes, so half of each would idle. The rows of
//! [`WAVE_ROW_EDITS`] make the reductions span `CANDLE_ROW_WAVE` lanes (64 on
//! GFX9 in a device pass, else 32: see the compat prelude); the ROCm host code
//! launches them with the device's wavefront size (backend rule
//! `wave-launches`).
//!
//! Each row edits one token sequence inside the definitions of one function
//! and must match exactly `count` times there: anything else is an error
//! naming the file and the function (upstream changed: check the row).

use super::tokens::{matching_close, matching_paren, next_significant, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{FunctionEdit, WAVE_ROW_EDITS};
use crate::lexer::{self, Token};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    rewrite(unit, WAVE_ROW_EDITS, "wave-rows", "WAVE_ROW_EDITS")
}

/// Applies the [`FunctionEdit`] rows of `table` (named `table_name` in
/// kernels::mapping) for this file; errors name `rule` and the table.
pub(super) fn rewrite(unit: &mut Unit, rows: &[FunctionEdit], rule: &str, table_name: &str) -> Result<usize, TranslateError> {
    let mut count = 0;
    for row in rows.iter().filter(|r| r.file == unit.path) {
        let pattern: Vec<Token> = lexer::lex(row.upstream).tokens.into_iter().filter(|t| !t.is_trivia()).collect();
        let mut found = 0;
        let mut bodies = 0;
        let mut from = 0;
        while let Some((open, close)) = function_body(&unit.tokens, row.function, from) {
            bodies += 1;
            let mut i = open + 1;
            let mut end = close;
            while i < end {
                match match_at(&unit.tokens, i, &pattern) {
                    Some(last) if last < end => {
                        let replacement = tokens_from(row.rocm, unit.tokens[i].line);
                        let n = replacement.len();
                        unit.tokens.splice(i..=last, replacement);
                        end = end + n - (last + 1 - i);
                        i += n;
                        found += 1;
                    }
                    _ => i += 1,
                }
            }
            from = end + 1;
        }
        if found != row.count {
            let what = if bodies == 0 { format!("{}: no definition", row.function) } else { format!("{}: `{}` {found} times, expected {}", row.function, row.upstream, row.count) };
            return Err(TranslateError::unsupported(&unit.path, 0, what, format!("rule {rule}: upstream changed this function (check the row in kernels::mapping::{table_name})")));
        }
        count += found;
    }
    Ok(count)
}

/// From `from`: the next definition `NAME ( ... ) {`; returns the indices of
/// its body's `{` and `}`.
pub(super) fn function_body(tokens: &[Token], name: &str, from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while i < tokens.len() {
        if tokens[i].is_ident(name) {
            let open = next_significant(tokens, i + 1).filter(|&j| tokens[j].is_punct("("));
            let close = open.and_then(|j| matching_paren(tokens, j));
            let brace = close.and_then(|j| next_significant(tokens, j + 1)).filter(|&j| tokens[j].is_punct("{"));
            if let Some(brace) = brace {
                return Some((brace, matching_close(tokens, brace)?));
            }
        }
        i += 1;
    }
    None
}

/// Whether the significant tokens from `i` are `pattern`; the index of the
/// last one matched.
fn match_at(tokens: &[Token], i: usize, pattern: &[Token]) -> Option<usize> {
    let mut j = i;
    let mut last = None;
    for p in pattern {
        if last.is_some() {
            j = next_significant(tokens, j)?;
        } else if tokens.get(j)?.is_trivia() {
            return None;
        }
        let t = &tokens[j];
        if t.kind != p.kind || t.text != p.text {
            return None;
        }
        last = Some(j);
        j += 1;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[FunctionEdit] = &[
        FunctionEdit { file: "reduce.cu", function: "sum", upstream: ", mask , 32 )", rocm: ", mask, W)", count: 2, why: "t" },
        FunctionEdit { file: "reduce.cu", function: "norm", upstream: "WARP_SIZE", rocm: "W", count: 1, why: "t" },
    ];

    fn run(path: &str, src: &str) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: path.into(), tokens: lexer::lex(src).tokens };
        let n = rewrite(&mut unit, ROWS, "wave-rows", "WAVE_ROW_EDITS")?;
        Ok((lexer::render(&unit.tokens), n))
    }

    #[test]
    fn edits_inside_the_named_functions_only() {
        let src = "#define WARP_SIZE 32\nfloat sum(float x) { return f(x, mask, 32) + f(x, mask,32); }\nvoid g() { f(x, mask, 32); sum(x); }\nvoid norm() { if (n > WARP_SIZE) {} }\nint k = WARP_SIZE;\n";
        let (out, n) = run("reduce.cu", src).unwrap();
        assert_eq!(n, 3);
        assert_eq!(out, "#define WARP_SIZE 32\nfloat sum(float x) { return f(x, mask, W) + f(x, mask, W); }\nvoid g() { f(x, mask, 32); sum(x); }\nvoid norm() { if (n > W) {} }\nint k = WARP_SIZE;\n");
    }

    #[test]
    fn overloads_count_together() {
        let src = "float sum(float x) { f(x, mask, 32); }\nfloat2 sum(float2 x) { f(x, mask, 32); }\nvoid norm() { WARP_SIZE; }\n";
        assert_eq!(run("reduce.cu", src).unwrap().1, 3);
    }

    #[test]
    fn a_changed_function_is_an_error() {
        let err = run("reduce.cu", "float sum(float x) { f(x, mask, 32); }\nvoid norm() { WARP_SIZE; }\n").unwrap_err().to_string();
        assert!(err.starts_with("reduce.cu"), "{err}");
        assert!(err.contains("sum: `, mask , 32 )` 1 times, expected 2"), "{err}");
        let err = run("reduce.cu", "float sum(float x) { f(x, mask, 32); f(x, mask, 32); }\n").unwrap_err().to_string();
        assert!(err.contains("norm: no definition"), "{err}");
    }

    #[test]
    fn other_files_are_untouched() {
        let src = "float sum(float x) { f(x, mask, 32); }\n";
        assert_eq!(run("unary.cu", src).unwrap(), (src.to_string(), 0));
    }

    #[test]
    fn table_rows_lex_and_name_reduce_functions() {
        for row in WAVE_ROW_EDITS {
            let spaced: Vec<String> = lexer::lex(row.upstream).tokens.iter().filter(|t| !t.is_trivia()).map(|t| t.text.to_string()).collect();
            assert_eq!(spaced.join(" "), row.upstream, "{}", row.function);
            assert!(row.count > 0 && !row.rocm.is_empty());
        }
    }
}
