//! Rule `warp-sync-intrinsics`: CUDA's `*_sync` warp intrinsics to HIP.
//!
//! The mask argument is dropped (HIP's shuffles act on the active lanes; only
//! a full mask has that meaning, so any other mask is an error), and the
//! shuffle width is spelled out: CUDA's implicit width is its warp size, 32,
//! while HIP's default is the wavefront size, 64 on CDNA. A logical warp is
//! thus 32 lanes on every AMD arch, matching the `WARP_SIZE 32` index math
//! upstream, and results are identical on wave32 and wave64.

use super::tokens::{matching_paren, next_significant, split_args, text_of, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{LOGICAL_WARP_WIDTH, WARP_SYNC_INTRINSICS};
use crate::lexer::TokenKind;
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        let t = &unit.tokens[i];
        let Some(&(cuda, hip, has_width)) = WARP_SYNC_INTRINSICS.iter().find(|(c, _, _)| t.kind == TokenKind::Ident && t.text == *c) else {
            i += 1;
            continue;
        };
        let at = t.line;
        let fail = |reason: &str| TranslateError::unsupported(&unit.path, at, cuda, reason);
        let open = next_significant(&unit.tokens, i + 1).filter(|&o| unit.tokens[o].is_punct("(")).ok_or_else(|| fail("not called"))?;
        let close = matching_paren(&unit.tokens, open).ok_or_else(|| fail("unbalanced call"))?;
        let args: Vec<String> = split_args(&unit.tokens, open, close).into_iter().map(|r| text_of(&unit.tokens[r])).collect();
        let (mask, rest) = args.split_first().ok_or_else(|| fail("missing mask argument"))?;
        if !is_full_mask(mask) {
            return Err(TranslateError::unsupported(&unit.path, at, format!("{cuda}({mask}, ...)"), "partial warp masks have no HIP equivalent"));
        }
        let mut new_args = rest.to_vec();
        let expected = if has_width { 2..=3 } else { 1..=1 };
        if !expected.contains(&new_args.len()) {
            return Err(fail("unexpected number of arguments"));
        }
        if has_width && new_args.len() == 2 {
            new_args.push(LOGICAL_WARP_WIDTH.to_string());
        }
        let replacement = tokens_from(&format!("{hip}({})", new_args.join(", ")), at);
        let len = replacement.len();
        unit.tokens.splice(i..=close, replacement);
        i += len;
        count += 1;
    }
    Ok(count)
}

fn is_full_mask(mask: &str) -> bool {
    let m = mask.trim_end_matches(['u', 'U', 'l', 'L']).to_ascii_lowercase();
    m == "0xffffffff" || m == "~0" || m == "-1"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn implicit_width_becomes_explicit_32() {
        let (out, n) = run(apply, "s += __shfl_xor_sync(0xffffffff, s, offset);\n").unwrap();
        assert_eq!(out, "s += candle_shfl_xor(s, offset, 32);\n");
        assert_eq!(n, 1);
    }

    #[test]
    fn explicit_width_is_kept() {
        let (out, _) = run(apply, "x = max(x, __shfl_xor_sync(0xFFFFFFFF, x, off, width));\n").unwrap();
        assert_eq!(out, "x = max(x, candle_shfl_xor(x, off, width));\n");
    }

    #[test]
    fn broadcast_and_reductions() {
        let (out, _) = run(apply, "d = __shfl_sync(0xFFFFFFFF, d, 0); r = __reduce_add_sync(0xffffffff, x);\n").unwrap();
        assert_eq!(out, "d = candle_shfl(d, 0, 32); r = candle_reduce_add_w32(x);\n");
    }

    #[test]
    fn partial_mask_is_an_error() {
        let err = run(apply, "__shfl_xor_sync(0x0000ffff, v, 1);\n").unwrap_err();
        assert!(err.to_string().contains("partial warp masks"), "{err}");
    }

    #[test]
    fn idempotent_on_its_output() {
        let (once, _) = run(apply, "__shfl_xor_sync(0xffffffff, v, 1);\n").unwrap();
        assert_eq!(run(apply, &once).unwrap(), (once, 0));
    }
}
