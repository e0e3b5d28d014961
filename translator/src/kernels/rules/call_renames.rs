//! Rule `call-renames`: calls of functions whose HIP overload set differs
//! from CUDA's go to compat functions ([`CALL_RENAMES`]).
//!
//! Only calls are renamed: the identifier must be directly followed by `(`
//! and must not be a member (`x.max(`), a qualified name
//! (`std::numeric_limits<T>::max()`) or a declaration's name.

use super::tokens::{next_significant, prev_significant};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::CALL_RENAMES;
use crate::lexer::TokenKind;
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    for i in 0..unit.tokens.len() {
        let t = &unit.tokens[i];
        if t.kind != TokenKind::Ident {
            continue;
        }
        let Some(&(_, to)) = CALL_RENAMES.iter().find(|(from, _)| t.text == *from) else {
            continue;
        };
        let called = next_significant(&unit.tokens, i + 1).is_some_and(|n| unit.tokens[n].is_punct("("));
        let plain = prev_significant(&unit.tokens, i).is_none_or(|p| {
            let prev = &unit.tokens[p];
            !(prev.is_punct(".") || prev.is_punct("->") || prev.is_punct("::") || prev.kind == TokenKind::Ident && is_type_word(&prev.text))
        });
        if called && plain {
            unit.tokens[i].text = to.into();
            count += 1;
        }
    }
    Ok(count)
}

/// Words that, before a name, make it a declaration rather than a call.
fn is_type_word(word: &str) -> bool {
    matches!(word, "int" | "float" | "double" | "auto" | "void" | "unsigned" | "long" | "T" | "__forceinline__" | "inline" | "__device__")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn calls_are_renamed_members_and_qualified_names_are_not() {
        let src = "m = min(a, blockDim.x); l = std::numeric_limits<T>::max(); v.max(); atomicAdd(p, 1); int max = 3;\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(out, "m = candle_min(a, blockDim.x); l = std::numeric_limits<T>::max(); v.max(); candle_atomic_add(p, 1); int max = 3;\n");
        assert_eq!(n, 2);
    }

    #[test]
    fn declarations_are_not_calls() {
        let src = "__device__ int max(int a, int b);\n";
        assert_eq!(run(apply, src).unwrap().1, 0);
    }
}
