//! Rule `hipify-casts`: undoes the argument casts hipify-perl inserts, so
//! that the output is byte-identical whether or not hipify-perl ran first.
//!
//! For each `(function, argument)` in [`HIPIFY_CASTS`], an argument of the
//! form `reinterpret_cast<const void*>(X)` becomes `X` (the compat function
//! takes the typed pointer, as CUDA's runtime API does).

use super::tokens::{matching_paren, next_significant, split_args, text_of, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::HIPIFY_CASTS;
use crate::lexer::TokenKind;
use crate::TranslateError;

/// The cast with all whitespace removed.
const CAST_PREFIX: &str = "reinterpret_cast<constvoid*>(";

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        let t = &unit.tokens[i];
        let Some(&(_, arg_index)) = HIPIFY_CASTS.iter().find(|(f, _)| t.kind == TokenKind::Ident && t.text == *f) else {
            i += 1;
            continue;
        };
        let Some(open) = next_significant(&unit.tokens, i + 1).filter(|&o| unit.tokens[o].is_punct("(")) else {
            i += 1;
            continue;
        };
        let Some(close) = matching_paren(&unit.tokens, open) else {
            i += 1;
            continue;
        };
        if let Some(range) = split_args(&unit.tokens, open, close).into_iter().nth(arg_index) {
            let arg = text_of(&unit.tokens[range.clone()]);
            let squeezed: String = arg.split_whitespace().collect();
            // `reinterpret_cast<const void*>(a)(b)` is not one cast: balanced inner only
            if let Some(inner) = squeezed.strip_prefix(CAST_PREFIX).and_then(|s| s.strip_suffix(')')).filter(|s| is_balanced(s)) {
                let lead = if range.start > open + 1 { " " } else { "" };
                let line = unit.tokens[range.start].line;
                unit.tokens.splice(range, tokens_from(&format!("{lead}{inner}"), line));
                count += 1;
            }
        }
        i += 1;
    }
    Ok(count)
}

fn is_balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn hipify_cast_is_removed() {
        let src = "candle_func_set_attribute(reinterpret_cast<const void*>(kernel), attr, n);\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(out, "candle_func_set_attribute(kernel, attr, n);\n");
        assert_eq!(n, 1);
    }

    #[test]
    fn plain_calls_are_untouched() {
        let src = "candle_func_set_attribute(kernel, attr, n);\n";
        assert_eq!(run(apply, src).unwrap(), (src.to_string(), 0));
    }
}
